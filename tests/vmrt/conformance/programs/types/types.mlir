// bf16, i1 masks and i4; expected values from NumPy / ml_dtypes
// (tests/vmrt/conformance/gen_arith.py writes this file)
func.func @addf_bf16() {
  %a0 = util.unfoldable_constant dense<[-4.125, -3.84375, 11.375, -17.125, 17.25, -4.34375, -13.125, -0.9296875, 4.0625, 5.28125, 21.0]> : tensor<11xbf16>
  %a1 = util.unfoldable_constant dense<[-9.875, -23.625, -7.125, 13.0625, -8.375, -7.15625, -10.8125, -14.75, 2.765625, -5.96875, 9.5625]> : tensor<11xbf16>
  %s = arith.addf %a0, %a1 : tensor<11xbf16>
  %r = arith.extf %s : tensor<11xbf16> to tensor<11xf32>
  check.expect_almost_eq_const(%r, dense<[-14.0, -27.46875, 4.25, -4.0625, 8.875, -11.5, -23.9375, -15.6796875, 6.828125, -0.6875, 30.5625]> : tensor<11xf32>, atol 0.51) : tensor<11xf32>
  return
}
func.func @mulf_bf16() {
  %a0 = util.unfoldable_constant dense<[-4.125, -3.84375, 11.375, -17.125, 17.25, -4.34375, -13.125, -0.9296875, 4.0625, 5.28125, 21.0]> : tensor<11xbf16>
  %a1 = util.unfoldable_constant dense<[-9.875, -23.625, -7.125, 13.0625, -8.375, -7.15625, -10.8125, -14.75, 2.765625, -5.96875, 9.5625]> : tensor<11xbf16>
  %s = arith.mulf %a0, %a1 : tensor<11xbf16>
  %r = arith.extf %s : tensor<11xbf16> to tensor<11xf32>
  check.expect_almost_eq_const(%r, dense<[40.734375, 90.80859375, -81.046875, -223.6953125, -144.46875, 31.0849609375, 141.9140625, 13.712890625, 11.2353515625, -31.5224609375, 200.8125]> : tensor<11xf32>, atol 0.51) : tensor<11xf32>
  return
}
func.func @subf_bf16() {
  %a0 = util.unfoldable_constant dense<[-4.125, -3.84375, 11.375, -17.125, 17.25, -4.34375, -13.125, -0.9296875, 4.0625, 5.28125, 21.0]> : tensor<11xbf16>
  %a1 = util.unfoldable_constant dense<[-9.875, -23.625, -7.125, 13.0625, -8.375, -7.15625, -10.8125, -14.75, 2.765625, -5.96875, 9.5625]> : tensor<11xbf16>
  %s = arith.subf %a0, %a1 : tensor<11xbf16>
  %r = arith.extf %s : tensor<11xbf16> to tensor<11xf32>
  check.expect_almost_eq_const(%r, dense<[5.75, 19.78125, 18.5, -30.1875, 25.625, 2.8125, -2.3125, 13.8203125, 1.296875, 11.25, 11.4375]> : tensor<11xf32>, atol 0.51) : tensor<11xf32>
  return
}
func.func @truncf_f32_bf16_bits() {
  %a0 = util.unfoldable_constant dense<[5.7574872970581055, -3.458366632461548, -3.2393386363983154, 5.545969009399414, 8.447754859924316, -26.72450065612793, -0.6387468576431274, -7.506826400756836, 10.131049156188965, -11.044514656066895, 1.7176990509033203]> : tensor<11xf32>
  %h = arith.truncf %a0 : tensor<11xf32> to tensor<11xbf16>
  %r = arith.bitcast %h : tensor<11xbf16> to tensor<11xi16>
  check.expect_eq_const(%r, dense<[16568, -16291, -16305, 16561, 16647, -15914, -16604, -16144, 16674, -16079, 16348]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @matmul_bf16_f32() {
  %a0 = util.unfoldable_constant dense<[[1.5, -0.5, -1.0, 2.0, -0.5, -1.25, 1.5, 1.0], [1.75, -1.75, 0.0, 0.0, 0.0, 0.5, -2.0, 0.75], [0.5, 1.0, -1.25, -0.75, -0.25, -1.75, 0.0, -1.75]]> : tensor<3x8xbf16>
  %a1 = util.unfoldable_constant dense<[[1.5, -1.25, -1.0, -1.0, -2.0], [2.0, -0.5, 0.0, -0.75, 0.5], [0.25, -1.75, -1.0, -0.5, -1.75], [-1.75, -0.5, -0.5, -2.0, -0.5], [0.25, 1.25, -1.25, -2.0, -1.5], [0.75, -1.75, 1.5, -1.75, -1.5], [0.0, 0.5, -1.0, 1.25, -1.25], [1.5, 1.25, 0.5, -0.75, 0.0]]> : tensor<8x5xbf16>
  %e = tensor.empty() : tensor<3x5xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<3x5xf32>) -> tensor<3x5xf32>
  %r = linalg.matmul ins(%a0, %a1 : tensor<3x8xbf16>, tensor<8x5xbf16>) outs(%f : tensor<3x5xf32>) -> tensor<3x5xf32>
  check.expect_almost_eq_const(%r, dense<[[-2.0625, 2.6875, -3.75, -0.3125, -1.75], [0.625, -2.25, 1.375, -4.375, -2.625], [-0.25, 2.0, -2.0625, 5.75, 5.0625]]> : tensor<3x5xf32>) : tensor<3x5xf32>
  return
}
func.func @i1_mask_logic() {
  %a0 = util.unfoldable_constant dense<[-2.8834190368652344, 6.262887477874756, -2.7023532390594482, 5.515451908111572, -1.9162330627441406, 8.811102867126465, 4.265431880950928, -6.330267906188965, 11.750750541687012, -10.082378387451172, -3.976654052734375]> : tensor<11xf32>
  %a1 = util.unfoldable_constant dense<[2.1594979763031006, 6.23288631439209, 11.685320854187012, -11.359010696411133, -8.9839448928833, 2.4119091033935547, -7.145254135131836, -2.6870338916778564, 1.9792290925979614, -5.40033483505249, 9.012982368469238]> : tensor<11xf32>
  %z = arith.constant dense<0.0> : tensor<11xf32>
  %p = arith.cmpf ogt, %a0, %z : tensor<11xf32>
  %q = arith.cmpf ogt, %a1, %z : tensor<11xf32>
  %x = arith.xori %p, %q : tensor<11xi1>
  %o = arith.ori %p, %q : tensor<11xi1>
  %r = arith.andi %x, %o : tensor<11xi1>
  check.expect_eq_const(%r, dense<[true, false, true, true, false, false, true, false, false, false, true]> : tensor<11xi1>) : tensor<11xi1>
  return
}
func.func @i1_mask_input_select_count() {
  %a0 = util.unfoldable_constant dense<[false, true, false, true, false, true, true, false, true, false, false]> : tensor<11xi1>
  %a1 = util.unfoldable_constant dense<[-2.8834190368652344, 6.262887477874756, -2.7023532390594482, 5.515451908111572, -1.9162330627441406, 8.811102867126465, 4.265431880950928, -6.330267906188965, 11.750750541687012, -10.082378387451172, -3.976654052734375]> : tensor<11xf32>
  %z = arith.constant dense<0.0> : tensor<11xf32>
  %s = arith.select %a0, %a1, %z : tensor<11xi1>, tensor<11xf32>
  %c = arith.extui %a0 : tensor<11xi1> to tensor<11xi32>
  %fc = arith.sitofp %c : tensor<11xi32> to tensor<11xf32>
  %r = arith.addf %s, %fc : tensor<11xf32>
  check.expect_almost_eq_const(%r, dense<[0.0, 7.262887477874756, 0.0, 6.515451908111572, 0.0, 9.811102867126465, 5.265431880950928, 0.0, 12.750750541687012, 0.0, 0.0]> : tensor<11xf32>) : tensor<11xf32>
  return
}
func.func @i1_2d_not() {
  %a0 = util.unfoldable_constant dense<[[true, true, true, true, true, true, false, true, true, true, false, true, false, false, false, true, false], [false, true, false, false, true, false, false, false, true, true, false, true, true, true, true, true, true], [true, false, true, true, true, false, true, false, false, false, false, true, true, false, false, false, false]]> : tensor<3x17xi1>
  %t = arith.constant dense<true> : tensor<3x17xi1>
  %r = arith.xori %a0, %t : tensor<3x17xi1>
  check.expect_eq_const(%r, dense<[[false, false, false, false, false, false, true, false, false, false, true, false, true, true, true, false, true], [true, false, true, true, false, true, true, true, false, false, true, false, false, false, false, false, false], [false, true, false, false, false, true, false, true, true, true, true, false, false, true, true, true, true]]> : tensor<3x17xi1>) : tensor<3x17xi1>
  return
}
func.func @i4_extsi() {
  %a0 = util.unfoldable_constant dense<[-6, -3, 0, -3, -7, 3, -6, 5, 5, 1, -4, 7, 0, 1, 2, -2]> : tensor<16xi4>
  %r = arith.extsi %a0 : tensor<16xi4> to tensor<16xi32>
  check.expect_eq_const(%r, dense<[-6, -3, 0, -3, -7, 3, -6, 5, 5, 1, -4, 7, 0, 1, 2, -2]> : tensor<16xi32>) : tensor<16xi32>
  return
}
func.func @i4_extui() {
  %a0 = util.unfoldable_constant dense<[-6, -3, 0, -3, -7, 3, -6, 5, 5, 1, -4, 7, 0, 1, 2, -2]> : tensor<16xi4>
  %r = arith.extui %a0 : tensor<16xi4> to tensor<16xi32>
  check.expect_eq_const(%r, dense<[10, 13, 0, 13, 9, 3, 10, 5, 5, 1, 12, 7, 0, 1, 2, 14]> : tensor<16xi32>) : tensor<16xi32>
  return
}
func.func @i4_trunci_extsi() {
  %a0 = util.unfoldable_constant dense<[8, 23, 67, 49, 36, -98, -64, -58, 73, 41, 39, 87, 44, 50, -6, 48]> : tensor<16xi32>
  %t = arith.trunci %a0 : tensor<16xi32> to tensor<16xi4>
  %r = arith.extsi %t : tensor<16xi4> to tensor<16xi32>
  check.expect_eq_const(%r, dense<[-8, 7, 3, 1, 4, -2, 0, 6, -7, -7, 7, 7, -4, 2, -6, 0]> : tensor<16xi32>) : tensor<16xi32>
  return
}
func.func @i4_dequant_matvec() {
  %a0 = util.unfoldable_constant dense<[[-3, -2, 5, -7, -4, -7, -4, 5], [4, 3, -3, -1, -6, 7, 0, 1], [-5, 5, -6, 4, -3, -1, -3, -6], [-3, 6, 1, -5, -6, -5, 2, 2]]> : tensor<4x8xi4>
  %a1 = util.unfoldable_constant dense<[0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75]> : tensor<8xf32>
  %w = arith.sitofp %a0 : tensor<4x8xi4> to tensor<4x8xf32>
  %e = tensor.empty() : tensor<4xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r = linalg.matvec ins(%w, %a1 : tensor<4x8xf32>, tensor<8xf32>) outs(%f : tensor<4xf32>) -> tensor<4xf32>
  check.expect_almost_eq_const(%r, dense<[-13.25, 3.0, -18.0, -7.5]> : tensor<4xf32>) : tensor<4xf32>
  return
}
