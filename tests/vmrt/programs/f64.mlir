// f64 arithmetic (compiled with --iree-input-demote-f64-to-f32=false: ExtF64 ops).
func.func @f64ops(%a: f64, %b: f64) -> (f64, f64, f64, f64, i1) {
  %0 = arith.addf %a, %b : f64
  %1 = arith.mulf %a, %b : f64
  %2 = arith.divf %a, %b : f64
  %3 = math.sqrt %a : f64
  %4 = arith.cmpf olt, %a, %b : f64
  return %0, %1, %2, %3, %4 : f64, f64, f64, f64, i1
}
func.func @conv(%a: f32) -> (f64, f64) {
  %0 = arith.extf %a : f32 to f64
  %c = arith.constant 0.1 : f64
  %1 = arith.addf %0, %c : f64
  return %1, %0 : f64, f64
}
