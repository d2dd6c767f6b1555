// Every expectation holds.
func.func @sums() {
  %x = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %a = util.optimization_barrier %x : tensor<2xf32>
  %s = arith.addf %a, %a : tensor<2xf32>
  check.expect_almost_eq_const(%s, dense<[2.0, 4.00001]> : tensor<2xf32>) : tensor<2xf32>
  return
}
func.func @truths() {
  %one = arith.constant 1 : i32
  %t = util.optimization_barrier %one : i32
  check.expect_true(%t) : i32
  return
}
