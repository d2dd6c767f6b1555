// ARCHES: x86_64 aarch64 riscv64 i386 riscv32
// f16 arith and linalg; not arm: iree-compile cannot link f16 code for armv7
// (undefined __aeabi_h2f / __aeabi_f2h)
// (tests/vmrt/conformance/gen_arith.py writes this file)
func.func @addf_f16() {
  %a0 = util.unfoldable_constant dense<[2.5, -2.5, 0.5, -0.0, -4.1875, 0.0927734375, -5.9375, -6.3359375, -11.0546875, -3.171875, -11.21875]> : tensor<11xf16>
  %a1 = util.unfoldable_constant dense<[6.8359375, -4.96875, 2.90625, 1.99609375, 8.7421875, -4.35546875, 2.771484375, 4.51953125, 7.62890625, 6.87109375, 5.58203125]> : tensor<11xf16>
  %r = arith.addf %a0, %a1 : tensor<11xf16>
  check.expect_almost_eq_const(%r, dense<[9.3359375, -7.46875, 3.40625, 1.99609375, 4.5546875, -4.26171875, -3.166015625, -1.81640625, -3.42578125, 3.69921875, -5.63671875]> : tensor<11xf16>) : tensor<11xf16>
  return
}
func.func @subf_f16() {
  %a0 = util.unfoldable_constant dense<[2.5, -2.5, 0.5, -0.0, -4.1875, 0.0927734375, -5.9375, -6.3359375, -11.0546875, -3.171875, -11.21875]> : tensor<11xf16>
  %a1 = util.unfoldable_constant dense<[6.8359375, -4.96875, 2.90625, 1.99609375, 8.7421875, -4.35546875, 2.771484375, 4.51953125, 7.62890625, 6.87109375, 5.58203125]> : tensor<11xf16>
  %r = arith.subf %a0, %a1 : tensor<11xf16>
  check.expect_almost_eq_const(%r, dense<[-4.3359375, 2.46875, -2.40625, -1.99609375, -12.9296875, 4.44921875, -8.7109375, -10.859375, -18.6875, -10.046875, -16.796875]> : tensor<11xf16>) : tensor<11xf16>
  return
}
func.func @mulf_f16() {
  %a0 = util.unfoldable_constant dense<[2.5, -2.5, 0.5, -0.0, -4.1875, 0.0927734375, -5.9375, -6.3359375, -11.0546875, -3.171875, -11.21875]> : tensor<11xf16>
  %a1 = util.unfoldable_constant dense<[6.8359375, -4.96875, 2.90625, 1.99609375, 8.7421875, -4.35546875, 2.771484375, 4.51953125, 7.62890625, 6.87109375, 5.58203125]> : tensor<11xf16>
  %r = arith.mulf %a0, %a1 : tensor<11xf16>
  check.expect_almost_eq_const(%r, dense<[17.09375, 12.421875, 1.453125, -0.0, -36.59375, -0.404052734375, -16.453125, -28.640625, -84.3125, -21.796875, -62.625]> : tensor<11xf16>) : tensor<11xf16>
  return
}
func.func @divf_f16() {
  %a0 = util.unfoldable_constant dense<[2.5, -2.5, 0.5, -0.0, -4.1875, 0.0927734375, -5.9375, -6.3359375, -11.0546875, -3.171875, -11.21875]> : tensor<11xf16>
  %a1 = util.unfoldable_constant dense<[6.8359375, -4.96875, 2.90625, 1.99609375, 8.7421875, -4.35546875, 2.771484375, 4.51953125, 7.62890625, 6.87109375, 5.58203125]> : tensor<11xf16>
  %r = arith.divf %a0, %a1 : tensor<11xf16>
  check.expect_almost_eq_const(%r, dense<[0.36572265625, 0.5029296875, 0.1719970703125, -0.0, -0.47900390625, -0.02130126953125, -2.142578125, -1.40234375, -1.44921875, -0.461669921875, -2.009765625]> : tensor<11xf16>) : tensor<11xf16>
  return
}
func.func @maximumf_f16() {
  %a0 = util.unfoldable_constant dense<[2.5, -2.5, 0.5, -0.0, -4.1875, 0.0927734375, -5.9375, -6.3359375, -11.0546875, -3.171875, -11.21875]> : tensor<11xf16>
  %a1 = util.unfoldable_constant dense<[6.8359375, -4.96875, 2.90625, 1.99609375, 8.7421875, -4.35546875, 2.771484375, 4.51953125, 7.62890625, 6.87109375, 5.58203125]> : tensor<11xf16>
  %r = arith.maximumf %a0, %a1 : tensor<11xf16>
  check.expect_almost_eq_const(%r, dense<[6.8359375, -2.5, 2.90625, 1.99609375, 8.7421875, 0.0927734375, 2.771484375, 4.51953125, 7.62890625, 6.87109375, 5.58203125]> : tensor<11xf16>) : tensor<11xf16>
  return
}
func.func @minimumf_f16() {
  %a0 = util.unfoldable_constant dense<[2.5, -2.5, 0.5, -0.0, -4.1875, 0.0927734375, -5.9375, -6.3359375, -11.0546875, -3.171875, -11.21875]> : tensor<11xf16>
  %a1 = util.unfoldable_constant dense<[6.8359375, -4.96875, 2.90625, 1.99609375, 8.7421875, -4.35546875, 2.771484375, 4.51953125, 7.62890625, 6.87109375, 5.58203125]> : tensor<11xf16>
  %r = arith.minimumf %a0, %a1 : tensor<11xf16>
  check.expect_almost_eq_const(%r, dense<[2.5, -4.96875, 0.5, -0.0, -4.1875, -4.35546875, -5.9375, -6.3359375, -11.0546875, -3.171875, -11.21875]> : tensor<11xf16>) : tensor<11xf16>
  return
}
func.func @negf_f16() {
  %a0 = util.unfoldable_constant dense<[2.5, -2.5, 0.5, -0.0, -4.1875, 0.0927734375, -5.9375, -6.3359375, -11.0546875, -3.171875, -11.21875]> : tensor<11xf16>
  %r = arith.negf %a0 : tensor<11xf16>
  check.expect_almost_eq_const(%r, dense<[-2.5, 2.5, -0.5, 0.0, 4.1875, -0.0927734375, 5.9375, 6.3359375, 11.0546875, 3.171875, 11.21875]> : tensor<11xf16>) : tensor<11xf16>
  return
}
func.func @absf_f16() {
  %a0 = util.unfoldable_constant dense<[2.5, -2.5, 0.5, -0.0, -4.1875, 0.0927734375, -5.9375, -6.3359375, -11.0546875, -3.171875, -11.21875]> : tensor<11xf16>
  %r = math.absf %a0 : tensor<11xf16>
  check.expect_almost_eq_const(%r, dense<[2.5, 2.5, 0.5, 0.0, 4.1875, 0.0927734375, 5.9375, 6.3359375, 11.0546875, 3.171875, 11.21875]> : tensor<11xf16>) : tensor<11xf16>
  return
}
func.func @floor_f16() {
  %a0 = util.unfoldable_constant dense<[2.5, -2.5, 0.5, -0.0, -4.1875, 0.0927734375, -5.9375, -6.3359375, -11.0546875, -3.171875, -11.21875]> : tensor<11xf16>
  %r = math.floor %a0 : tensor<11xf16>
  check.expect_almost_eq_const(%r, dense<[2.0, -3.0, 0.0, -0.0, -5.0, 0.0, -6.0, -7.0, -12.0, -4.0, -12.0]> : tensor<11xf16>) : tensor<11xf16>
  return
}
func.func @ceil_f16() {
  %a0 = util.unfoldable_constant dense<[2.5, -2.5, 0.5, -0.0, -4.1875, 0.0927734375, -5.9375, -6.3359375, -11.0546875, -3.171875, -11.21875]> : tensor<11xf16>
  %r = math.ceil %a0 : tensor<11xf16>
  check.expect_almost_eq_const(%r, dense<[3.0, -2.0, 1.0, -0.0, -4.0, 1.0, -5.0, -6.0, -11.0, -3.0, -11.0]> : tensor<11xf16>) : tensor<11xf16>
  return
}
func.func @sqrt_f16() {
  %a0 = util.unfoldable_constant dense<[2.75, 2.75, 0.75, 0.25, 4.4375, 0.3427734375, 6.1875, 6.5859375, 11.3046875, 3.421875, 11.46875]> : tensor<11xf16>
  %r = math.sqrt %a0 : tensor<11xf16>
  check.expect_almost_eq_const(%r, dense<[1.658203125, 1.658203125, 0.8662109375, 0.5, 2.107421875, 0.58544921875, 2.48828125, 2.56640625, 3.361328125, 1.849609375, 3.38671875]> : tensor<11xf16>) : tensor<11xf16>
  return
}
func.func @rsqrt_f16() {
  %a0 = util.unfoldable_constant dense<[2.75, 2.75, 0.75, 0.25, 4.4375, 0.3427734375, 6.1875, 6.5859375, 11.3046875, 3.421875, 11.46875]> : tensor<11xf16>
  %r = math.rsqrt %a0 : tensor<11xf16>
  check.expect_almost_eq_const(%r, dense<[0.60302734375, 0.60302734375, 1.154296875, 2.0, 0.474609375, 1.7080078125, 0.40185546875, 0.3896484375, 0.297607421875, 0.54052734375, 0.295166015625]> : tensor<11xf16>) : tensor<11xf16>
  return
}
func.func @copysign_f16() {
  %a0 = util.unfoldable_constant dense<[2.5, -2.5, 0.5, -0.0, -4.1875, 0.0927734375, -5.9375, -6.3359375, -11.0546875, -3.171875, -11.21875]> : tensor<11xf16>
  %a1 = util.unfoldable_constant dense<[6.8359375, -4.96875, 2.90625, 1.99609375, 8.7421875, -4.35546875, 2.771484375, 4.51953125, 7.62890625, 6.87109375, 5.58203125]> : tensor<11xf16>
  %r = math.copysign %a0, %a1 : tensor<11xf16>
  check.expect_almost_eq_const(%r, dense<[2.5, -2.5, 0.5, 0.0, 4.1875, -0.0927734375, 5.9375, 6.3359375, 11.0546875, 3.171875, 11.21875]> : tensor<11xf16>) : tensor<11xf16>
  return
}
func.func @cmpf_select_f16() {
  %a0 = util.unfoldable_constant dense<[2.5, -2.5, 0.5, -0.0, -4.1875, 0.0927734375, -5.9375, -6.3359375, -11.0546875, -3.171875, -11.21875]> : tensor<11xf16>
  %a1 = util.unfoldable_constant dense<[6.8359375, -4.96875, 2.90625, 1.99609375, 8.7421875, -4.35546875, 2.771484375, 4.51953125, 7.62890625, 6.87109375, 5.58203125]> : tensor<11xf16>
  %c = arith.cmpf olt, %a0, %a1 : tensor<11xf16>
  %d = arith.cmpf oge, %a0, %a1 : tensor<11xf16>
  %s = arith.select %c, %a0, %a1 : tensor<11xi1>, tensor<11xf16>
  %z = arith.constant dense<0.0> : tensor<11xf16>
  %r = arith.select %d, %s, %z : tensor<11xi1>, tensor<11xf16>
  check.expect_almost_eq_const(%r, dense<[0.0, -4.96875, 0.0, 0.0, 0.0, -4.35546875, 0.0, 0.0, 0.0, 0.0, 0.0]> : tensor<11xf16>) : tensor<11xf16>
  return
}
func.func @fptosi_f16_i32() {
  %a0 = util.unfoldable_constant dense<[2.5, -2.5, 0.5, -0.0, -4.1875, 0.0927734375, -5.9375, -6.3359375, -11.0546875, -3.171875, -11.21875]> : tensor<11xf16>
  %r = arith.fptosi %a0 : tensor<11xf16> to tensor<11xi32>
  check.expect_eq_const(%r, dense<[2, -2, 0, 0, -4, 0, -5, -6, -11, -3, -11]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @fptoui_f16_i32() {
  %a0 = util.unfoldable_constant dense<[2.75, 2.75, 0.75, 0.25, 4.4375, 0.3427734375, 6.1875, 6.5859375, 11.3046875, 3.421875, 11.46875]> : tensor<11xf16>
  %r = arith.fptoui %a0 : tensor<11xf16> to tensor<11xi32>
  check.expect_eq_const(%r, dense<[2, 2, 0, 0, 4, 0, 6, 6, 11, 3, 11]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @sitofp_i32_f16() {
  %a0 = util.unfoldable_constant dense<[-1518, 119, 424, 1353, -827, 1372, 917, -1583, 932, 1513, -627]> : tensor<11xi32>
  %r = arith.sitofp %a0 : tensor<11xi32> to tensor<11xf16>
  check.expect_almost_eq_const(%r, dense<[-1518.0, 119.0, 424.0, 1353.0, -827.0, 1372.0, 917.0, -1583.0, 932.0, 1513.0, -627.0]> : tensor<11xf16>) : tensor<11xf16>
  return
}
func.func @uitofp_i16_f16() {
  %a0 = util.unfoldable_constant dense<[-1518, 119, 424, 1353, -827, 1372, 917, -1583, 932, 1513, -627]> : tensor<11xi16>
  %r = arith.uitofp %a0 : tensor<11xi16> to tensor<11xf16>
  check.expect_almost_eq_const(%r, dense<[64032.0, 119.0, 424.0, 1353.0, 64704.0, 1372.0, 917.0, 63968.0, 932.0, 1513.0, 64896.0]> : tensor<11xf16>) : tensor<11xf16>
  return
}
func.func @truncf_f32_f16_bits() {
  %a0 = util.unfoldable_constant dense<[-13.591570854187012, -4.603948593139648, 8.941497802734375, 11.54049015045166, -13.103667259216309, -5.3299560546875, 10.281999588012695, 14.664129257202148, -0.027801794931292534, -0.19227953255176544, 7.633375644683838]> : tensor<11xf32>
  %h = arith.truncf %a0 : tensor<11xf32> to tensor<11xf16>
  %r = arith.bitcast %h : tensor<11xf16> to tensor<11xi16>
  check.expect_eq_const(%r, dense<[-13620, -15205, 18553, 18885, -13683, -15020, 18724, 19285, -22754, -19929, 18338]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @extf_f16_f32() {
  %a0 = util.unfoldable_constant dense<[-13.59375, -4.60546875, 8.9453125, 11.5390625, -13.1015625, -5.328125, 10.28125, 14.6640625, -0.027801513671875, -0.1922607421875, 7.6328125]> : tensor<11xf16>
  %r = arith.extf %a0 : tensor<11xf16> to tensor<11xf32>
  check.expect_eq_const(%r, dense<[-13.59375, -4.60546875, 8.9453125, 11.5390625, -13.1015625, -5.328125, 10.28125, 14.6640625, -0.027801513671875, -0.1922607421875, 7.6328125]> : tensor<11xf32>) : tensor<11xf32>
  return
}
func.func @matmul_f16() {
  %a0 = util.unfoldable_constant dense<[[-1.5, 1.5, 0.75, -0.5, -1.75, 0.75], [-0.75, 1.5, -0.75, 0.5, -1.25, 0.25], [-1.75, 1.0, -1.75, 1.0, 1.0, -0.25]]> : tensor<3x6xf16>
  %a1 = util.unfoldable_constant dense<[[1.25, 0.25, 1.5, 1.0, 1.75], [-1.75, -2.0, 0.5, 1.0, 1.0], [1.25, -0.5, 1.5, 0.0, -1.5], [-1.25, 1.25, 0.75, 1.5, 2.0], [1.25, -0.75, 0.25, -0.25, -1.0], [1.75, 2.0, 0.25, -1.25, -0.25]]> : tensor<6x5xf16>
  %init_e = tensor.empty() : tensor<3x5xf16>
  %init_z = arith.constant 0.0 : f16
  %init = linalg.fill ins(%init_z : f16) outs(%init_e : tensor<3x5xf16>) -> tensor<3x5xf16>
  %r = linalg.matmul ins(%a0, %a1 : tensor<3x6xf16>, tensor<6x5xf16>) outs(%init : tensor<3x5xf16>) -> tensor<3x5xf16>
  check.expect_almost_eq_const(%r, dense<[[-3.8125, -1.5625, -1.0, -1.25, -1.6875], [-6.25, -0.75, -1.375, 1.5, 3.5], [-6.5625, -1.5625, -3.8125, 0.8125, 1.625]]> : tensor<3x5xf16>) : tensor<3x5xf16>
  return
}
func.func @fill_f16() {
  %a0 = util.unfoldable_constant dense<[1.5]> : tensor<1xf16>
  %c0 = arith.constant 0 : index
  %v = tensor.extract %a0[%c0] : tensor<1xf16>
  %e = tensor.empty() : tensor<3x17xf16>
  %r = linalg.fill ins(%v : f16) outs(%e : tensor<3x17xf16>) -> tensor<3x17xf16>
  check.expect_eq_const(%r, dense<[[1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5], [1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5], [1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5, 1.5]]> : tensor<3x17xf16>) : tensor<3x17xf16>
  return
}
