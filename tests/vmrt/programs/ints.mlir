// i32/i64 integer arithmetic, comparisons, shifts and conversions.
func.func @add32(%a: i32, %b: i32) -> i32 {
  %0 = arith.addi %a, %b : i32
  return %0 : i32
}
func.func @sub32(%a: i32, %b: i32) -> i32 {
  %0 = arith.subi %a, %b : i32
  return %0 : i32
}
func.func @mul32(%a: i32, %b: i32) -> i32 {
  %0 = arith.muli %a, %b : i32
  return %0 : i32
}
func.func @divrem32(%a: i32, %b: i32) -> (i32, i32, i32, i32) {
  %0 = arith.divsi %a, %b : i32
  %1 = arith.remsi %a, %b : i32
  %2 = arith.divui %a, %b : i32
  %3 = arith.remui %a, %b : i32
  return %0, %1, %2, %3 : i32, i32, i32, i32
}
func.func @bits32(%a: i32, %b: i32) -> (i32, i32, i32, i32, i32, i32) {
  %0 = arith.andi %a, %b : i32
  %1 = arith.ori %a, %b : i32
  %2 = arith.xori %a, %b : i32
  %3 = arith.shli %a, %b : i32
  %4 = arith.shrsi %a, %b : i32
  %5 = arith.shrui %a, %b : i32
  return %0, %1, %2, %3, %4, %5 : i32, i32, i32, i32, i32, i32
}
func.func @cmp32(%a: i32, %b: i32) -> (i1, i1, i1, i1, i1, i1) {
  %0 = arith.cmpi slt, %a, %b : i32
  %1 = arith.cmpi ult, %a, %b : i32
  %2 = arith.cmpi sge, %a, %b : i32
  %3 = arith.cmpi ugt, %a, %b : i32
  %4 = arith.cmpi eq, %a, %b : i32
  %5 = arith.cmpi ne, %a, %b : i32
  return %0, %1, %2, %3, %4, %5 : i1, i1, i1, i1, i1, i1
}
func.func @minmax32(%a: i32, %b: i32) -> (i32, i32, i32, i32) {
  %0 = arith.minsi %a, %b : i32
  %1 = arith.maxsi %a, %b : i32
  %2 = arith.minui %a, %b : i32
  %3 = arith.maxui %a, %b : i32
  return %0, %1, %2, %3 : i32, i32, i32, i32
}
func.func @select32(%c: i32, %a: i32, %b: i32) -> i32 {
  %z = arith.constant 0 : i32
  %cond = arith.cmpi ne, %c, %z : i32
  %0 = arith.select %cond, %a, %b : i32
  return %0 : i32
}
func.func @misc32(%a: i32) -> (i32, i32, i32) {
  %0 = math.ctlz %a : i32
  %1 = math.absi %a : i32
  %2 = arith.trunci %a : i32 to i8
  %3 = arith.extui %2 : i8 to i32
  return %0, %1, %3 : i32, i32, i32
}
func.func @ext(%a: i32) -> (i64, i64) {
  %0 = arith.extsi %a : i32 to i64
  %1 = arith.extui %a : i32 to i64
  return %0, %1 : i64, i64
}
func.func @trunc(%a: i64) -> i32 {
  %0 = arith.trunci %a : i64 to i32
  return %0 : i32
}
func.func @arith64(%a: i64, %b: i64) -> (i64, i64, i64, i64, i64) {
  %0 = arith.addi %a, %b : i64
  %1 = arith.subi %a, %b : i64
  %2 = arith.muli %a, %b : i64
  %3 = arith.xori %a, %b : i64
  %4 = arith.maxsi %a, %b : i64
  return %0, %1, %2, %3, %4 : i64, i64, i64, i64, i64
}
func.func @divrem64(%a: i64, %b: i64) -> (i64, i64, i64, i64) {
  %0 = arith.divsi %a, %b : i64
  %1 = arith.remsi %a, %b : i64
  %2 = arith.divui %a, %b : i64
  %3 = arith.remui %a, %b : i64
  return %0, %1, %2, %3 : i64, i64, i64, i64
}
func.func @shift64(%a: i64, %b: i64) -> (i64, i64, i64, i1, i1) {
  %0 = arith.shli %a, %b : i64
  %1 = arith.shrsi %a, %b : i64
  %2 = arith.shrui %a, %b : i64
  %3 = arith.cmpi slt, %a, %b : i64
  %4 = arith.cmpi ult, %a, %b : i64
  return %0, %1, %2, %3, %4 : i64, i64, i64, i1, i1
}
