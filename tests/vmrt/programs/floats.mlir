// f32 arithmetic, math functions, comparisons and conversions.
func.func @arith(%a: f32, %b: f32) -> (f32, f32, f32, f32, f32) {
  %0 = arith.addf %a, %b : f32
  %1 = arith.subf %a, %b : f32
  %2 = arith.mulf %a, %b : f32
  %3 = arith.divf %a, %b : f32
  %4 = arith.remf %a, %b : f32
  return %0, %1, %2, %3, %4 : f32, f32, f32, f32, f32
}
func.func @unary(%a: f32) -> (f32, f32, f32, f32, f32, f32) {
  %0 = arith.negf %a : f32
  %1 = math.absf %a : f32
  %2 = math.floor %a : f32
  %3 = math.ceil %a : f32
  %4 = math.round %a : f32
  %5 = math.roundeven %a : f32
  return %0, %1, %2, %3, %4, %5 : f32, f32, f32, f32, f32, f32
}
func.func @transcend(%a: f32) -> (f32, f32, f32, f32, f32) {
  %0 = math.sqrt %a : f32
  %1 = math.exp %a : f32
  %2 = math.log %a : f32
  %3 = math.tanh %a : f32
  %4 = math.sin %a : f32
  return %0, %1, %2, %3, %4 : f32, f32, f32, f32, f32
}
func.func @cmp(%a: f32, %b: f32) -> (i1, i1, i1, i1, i1) {
  %0 = arith.cmpf olt, %a, %b : f32
  %1 = arith.cmpf oeq, %a, %b : f32
  %2 = arith.cmpf une, %a, %b : f32
  %3 = arith.cmpf ole, %a, %b : f32
  %4 = arith.cmpf ult, %a, %b : f32
  return %0, %1, %2, %3, %4 : i1, i1, i1, i1, i1
}
func.func @conv(%a: f32, %i: i32) -> (i32, i32, f32, f32) {
  %0 = arith.fptosi %a : f32 to i32
  %1 = arith.fptoui %a : f32 to i32
  %2 = arith.sitofp %i : i32 to f32
  %3 = arith.uitofp %i : i32 to f32
  return %0, %1, %2, %3 : i32, i32, f32, f32
}
func.func @minmax(%a: f32, %b: f32) -> (f32, f32) {
  %0 = arith.minimumf %a, %b : f32
  %1 = arith.maximumf %a, %b : f32
  return %0, %1 : f32, f32
}
func.func @bits(%a: f32) -> i32 {
  %0 = arith.bitcast %a : f32 to i32
  return %0 : i32
}
func.func @fma(%a: f32, %b: f32, %c: f32) -> f32 {
  %0 = math.fma %a, %b, %c : f32
  return %0 : f32
}
func.func @poly(%x: f32) -> f32 {
  %c3 = arith.constant 3.0 : f32
  %c05 = arith.constant 0.5 : f32
  %0 = arith.mulf %x, %x : f32
  %1 = arith.mulf %0, %c3 : f32
  %2 = arith.subf %1, %c05 : f32
  return %2 : f32
}
