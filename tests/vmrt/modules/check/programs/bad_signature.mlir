// An export that takes an argument cannot be a test function.
func.func @ok() {
  %one = arith.constant 1 : i32
  %t = util.optimization_barrier %one : i32
  check.expect_true(%t) : i32
  return
}
func.func @takes_arg(%x: i32) -> i32 {
  check.expect_true(%x) : i32
  return %x : i32
}
