func.func @test_add() {
  %a = util.unfoldable_constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %r = arith.addi %a, %a : tensor<4xi32>
  check.expect_eq_const(%r, dense<[2, 4, 6, 8]> : tensor<4xi32>) : tensor<4xi32>
  return
}
