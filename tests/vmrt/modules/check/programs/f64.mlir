// f64 comparisons (compiled with --iree-input-demote-f64-to-f32=false).
func.func @f64_pass() {
  %d = arith.constant dense<[1.0, 2.0]> : tensor<2xf64>
  %a = util.optimization_barrier %d : tensor<2xf64>
  check.expect_almost_eq_const(%a, dense<[1.0, 2.00001]> : tensor<2xf64>) : tensor<2xf64>
  return
}
func.func @f64_fail() {
  %d = arith.constant dense<[1.0, 2.0]> : tensor<2xf64>
  %a = util.optimization_barrier %d : tensor<2xf64>
  check.expect_almost_eq_const(%a, dense<[1.0, 2.001]> : tensor<2xf64>) : tensor<2xf64>
  check.expect_eq_const(%a, dense<[1.0, 2.0000000000000004]> : tensor<2xf64>) : tensor<2xf64>
  return
}
