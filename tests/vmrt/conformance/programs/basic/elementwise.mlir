func.func @add_f32() {
  %a = util.unfoldable_constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %b = util.unfoldable_constant dense<[0.5, 0.25, -1.0, 8.0]> : tensor<4xf32>
  %r = arith.addf %a, %b : tensor<4xf32>
  check.expect_almost_eq_const(%r, dense<[1.5, 2.25, 2.0, 12.0]> : tensor<4xf32>) : tensor<4xf32>
  return
}
func.func @mul_i32() {
  %a = util.unfoldable_constant dense<[1, -2, 3, 40000]> : tensor<4xi32>
  %r = arith.muli %a, %a : tensor<4xi32>
  check.expect_eq_const(%r, dense<[1, 4, 9, 1600000000]> : tensor<4xi32>) : tensor<4xi32>
  return
}
