// A test function for `vmrt test --static_library` (test_static_library.py).
func.func @squares() {
  %a = util.unfoldable_constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %b = arith.mulf %a, %a : tensor<4xf32>
  check.expect_almost_eq_const(%b, dense<[1.0, 4.0, 9.0, 16.0]> : tensor<4xf32>) : tensor<4xf32>
  return
}
