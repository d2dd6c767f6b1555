// stablehlo rng_bit_generator and loops (stablehlo.while / scf.while carrying
// several tensors, permuted between iterations).  Expected values computed
// with numpy, except the random bits: those are IREE's own (iree-run-module on
// x86_64).  Operands updated in place are "x + unfoldable 0" (IREE 3.13 writes
// an unfoldable constant in place, in read-only rodata).
func.func @rng_three_fry() {
  %sc = util.unfoldable_constant dense<[12345, 678]> : tensor<2xi64>
  %sz = util.unfoldable_constant dense<0> : tensor<2xi64>
  %s = stablehlo.add %sc, %sz : tensor<2xi64>
  %su = stablehlo.bitcast_convert %s : (tensor<2xi64>) -> tensor<2xui64>
  %ns, %b = stablehlo.rng_bit_generator %su, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4x3xui32>)
  %a = stablehlo.bitcast_convert %ns : (tensor<2xui64>) -> tensor<2xi64>
  %c = stablehlo.bitcast_convert %b : (tensor<4x3xui32>) -> tensor<4x3xi32>
  check.expect_eq_const(%a, dense<[12345, 684]> : tensor<2xi64>) : tensor<2xi64>
  check.expect_eq_const(%c, dense<[[1194812792, 22297115, -914256063], [1232543658, 1863636269, -1067497762], [837369219, 1116434278, -1581713402], [1102409574, -938993640, -2097416402]]> : tensor<4x3xi32>) : tensor<4x3xi32>
  return
}
func.func @rng_philox_state3() {
  %sc = util.unfoldable_constant dense<[-1, 42, 7]> : tensor<3xi64>
  %sz = util.unfoldable_constant dense<0> : tensor<3xi64>
  %s = stablehlo.add %sc, %sz : tensor<3xi64>
  %su = stablehlo.bitcast_convert %s : (tensor<3xi64>) -> tensor<3xui64>
  %ns, %b = stablehlo.rng_bit_generator %su, algorithm = PHILOX : (tensor<3xui64>) -> (tensor<3xui64>, tensor<7xui32>)
  %a = stablehlo.bitcast_convert %ns : (tensor<3xui64>) -> tensor<3xi64>
  %c = stablehlo.bitcast_convert %b : (tensor<7xui32>) -> tensor<7xi32>
  check.expect_eq_const(%a, dense<[-1, 44, 7]> : tensor<3xi64>) : tensor<3xi64>
  check.expect_eq_const(%c, dense<[1199140709, 233589863, -1520022982, 1976882280, -2055684856, -1440355036, 1981894651]> : tensor<7xi32>) : tensor<7xi32>
  return
}
func.func @rng_philox_u64() {
  %sc = util.unfoldable_constant dense<[3, 5]> : tensor<2xi64>
  %sz = util.unfoldable_constant dense<0> : tensor<2xi64>
  %s = stablehlo.add %sc, %sz : tensor<2xi64>
  %su = stablehlo.bitcast_convert %s : (tensor<2xi64>) -> tensor<2xui64>
  %ns, %b = stablehlo.rng_bit_generator %su, algorithm = PHILOX : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2x3xui64>)
  %a = stablehlo.bitcast_convert %ns : (tensor<2xui64>) -> tensor<2xi64>
  %c = stablehlo.bitcast_convert %b : (tensor<2x3xui64>) -> tensor<2x3xi64>
  check.expect_eq_const(%a, dense<[3, 8]> : tensor<2xi64>) : tensor<2xi64>
  check.expect_eq_const(%c, dense<[[4779387745772766108, 8107851958298453240, 965454035261773598], [3936405443612513081, 2547730475843439433, -8215971423209979867]]> : tensor<2x3xi64>) : tensor<2x3xi64>
  return
}
func.func @rng_three_fry_chained_equals_wide() {
  %sc = util.unfoldable_constant dense<[9, 1]> : tensor<2xi64>
  %sz = util.unfoldable_constant dense<0> : tensor<2xi64>
  %s = stablehlo.add %sc, %sz : tensor<2xi64>
  %su = stablehlo.bitcast_convert %s : (tensor<2xi64>) -> tensor<2xui64>
  %s1, %b1 = stablehlo.rng_bit_generator %su, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<6xui32>)
  %s2, %b2 = stablehlo.rng_bit_generator %su, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<6xui32>)
  %c1 = stablehlo.bitcast_convert %b1 : (tensor<6xui32>) -> tensor<6xi32>
  %c2 = stablehlo.bitcast_convert %b2 : (tensor<6xui32>) -> tensor<6xi32>
  check.expect_eq(%c1, %c2) : tensor<6xi32>
  return
}
func.func @while_matvec_three_carried() {
  %m = util.unfoldable_constant dense<[[1, 1, 0], [0, 1, 2], [1, 0, 1]]> : tensor<3x3xi32>
  %v0 = util.unfoldable_constant dense<[1, -2, 3]> : tensor<3xi32>
  %z = stablehlo.constant dense<0> : tensor<3xi32>
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %n = util.unfoldable_constant dense<5> : tensor<i32>
  %r:3 = stablehlo.while(%i = %i0, %v = %v0, %s = %z) : tensor<i32>, tensor<3xi32>, tensor<3xi32>
   cond {
    %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %nv = stablehlo.dot_general %m, %v, contracting_dims = [1] x [0] : (tensor<3x3xi32>, tensor<3xi32>) -> tensor<3xi32>
    %ns = stablehlo.add %s, %nv : tensor<3xi32>
    %ni = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %ni, %nv, %ns : tensor<i32>, tensor<3xi32>, tensor<3xi32>
  }
  check.expect_eq_const(%r#1, dense<[63, 72, 54]> : tensor<3xi32>) : tensor<3xi32>
  check.expect_eq_const(%r#2, dense<[113, 136, 88]> : tensor<3xi32>) : tensor<3xi32>
  return
}
func.func @while_rotate_carried() {
  %a0 = util.unfoldable_constant dense<[1.0, 0.5]> : tensor<2xf32>
  %b0 = util.unfoldable_constant dense<[2.0, -1.0]> : tensor<2xf32>
  %c0 = util.unfoldable_constant dense<[0.25, 4.0]> : tensor<2xf32>
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %n = util.unfoldable_constant dense<7> : tensor<i32>
  %r:4 = stablehlo.while(%i = %i0, %a = %a0, %b = %b0, %c = %c0) : tensor<i32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
   cond {
    %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %s = stablehlo.add %a, %b : tensor<2xf32>
    %ni = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %ni, %b, %c, %s : tensor<i32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>
  }
  check.expect_almost_eq_const(%r#1, dense<[5.5, 6.5]> : tensor<2xf32>) : tensor<2xf32>
  check.expect_almost_eq_const(%r#2, dense<[8.5, 6.0]> : tensor<2xf32>) : tensor<2xf32>
  check.expect_almost_eq_const(%r#3, dense<[10.75, 9.0]> : tensor<2xf32>) : tensor<2xf32>
  return
}
func.func @while_scan_dynamic_update_slice() {
  %st0 = util.unfoldable_constant dense<[1, 2, 3]> : tensor<3xi32>
  %o0 = stablehlo.constant dense<0> : tensor<6x3xi32>
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %two = stablehlo.constant dense<2> : tensor<3xi32>
  %n = util.unfoldable_constant dense<6> : tensor<i32>
  %r:3 = stablehlo.while(%i = %i0, %st = %st0, %o = %o0) : tensor<i32>, tensor<3xi32>, tensor<6x3xi32>
   cond {
    %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %row = stablehlo.reshape %st : (tensor<3xi32>) -> tensor<1x3xi32>
    %zc = stablehlo.constant dense<0> : tensor<i32>
    %no = stablehlo.dynamic_update_slice %o, %row, %i, %zc : (tensor<6x3xi32>, tensor<1x3xi32>, tensor<i32>, tensor<i32>) -> tensor<6x3xi32>
    %m = stablehlo.multiply %st, %two : tensor<3xi32>
    %ib = stablehlo.broadcast_in_dim %i, dims = [] : (tensor<i32>) -> tensor<3xi32>
    %ns = stablehlo.add %m, %ib : tensor<3xi32>
    %ni = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %ni, %ns, %no : tensor<i32>, tensor<3xi32>, tensor<6x3xi32>
  }
  check.expect_eq_const(%r#1, dense<[121, 185, 249]> : tensor<3xi32>) : tensor<3xi32>
  check.expect_eq_const(%r#2, dense<[[1, 2, 3], [2, 4, 6], [5, 9, 13], [12, 20, 28], [27, 43, 59], [58, 90, 122]]> : tensor<6x3xi32>) : tensor<6x3xi32>
  return
}
func.func @while_data_dependent() {
  %x0 = util.unfoldable_constant dense<[1, 2, -1, 4]> : tensor<4xi32>
  %k0 = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %three = stablehlo.constant dense<3> : tensor<4xi32>
  %lim = stablehlo.constant dense<1000> : tensor<i32>
  %zero = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%k = %k0, %x = %x0) : tensor<i32>, tensor<4xi32>
   cond {
    %s = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [0] : (tensor<4xi32>, tensor<i32>) -> tensor<i32>
    %p = stablehlo.compare LE, %s, %lim : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %nx = stablehlo.multiply %x, %three : tensor<4xi32>
    %nk = stablehlo.add %k, %one : tensor<i32>
    stablehlo.return %nk, %nx : tensor<i32>, tensor<4xi32>
  }
  check.expect_eq_const(%r#0, dense<5> : tensor<i32>) : tensor<i32>
  check.expect_eq_const(%r#1, dense<[243, 486, -243, 972]> : tensor<4xi32>) : tensor<4xi32>
  return
}
func.func @while_lstm_hard_gates() {
  %w = util.unfoldable_constant dense<[[0.019999999552965164, 0.6800000071525574, 0.6100000143051147, -0.25999999046325684, -0.15000000596046448, -0.25999999046325684, 0.2800000011920929, -0.029999999329447746, 0.3700000047683716, -0.9200000166893005, 0.7799999713897705, -0.05000000074505806, 0.3400000035762787, -0.07000000029802322, -0.1899999976158142, 0.23000000417232513], [0.4099999964237213, -0.10000000149011612, -0.07999999821186066, 0.3400000035762787, -0.4399999976158142, -0.7599999904632568, 0.20000000298023224, -0.3400000035762787, -0.9599999785423279, -0.4099999964237213, -0.23000000417232513, -0.6000000238418579, -0.75, 0.019999999552965164, 0.44999998807907104, -0.11999999731779099], [-0.3700000047683716, 0.1899999976158142, 0.36000001430511475, -0.15000000596046448, 0.27000001072883606, 0.5199999809265137, -0.10000000149011612, -0.4099999964237213, 0.17000000178813934, 0.11999999731779099, 0.550000011920929, -0.6399999856948853, -0.33000001311302185, -0.41999998688697815, -0.8700000047683716, 0.05999999865889549], [0.25999999046325684, -0.3700000047683716, 0.6899999976158142, 0.4099999964237213, 0.3100000023841858, 0.20000000298023224, 0.47999998927116394, -0.6700000166893005, 0.3100000023841858, 0.30000001192092896, -0.8799999952316284, 0.17000000178813934, -0.12999999523162842, 0.38999998569488525, -0.2199999988079071, -0.009999999776482582], [0.17000000178813934, -0.4399999976158142, 0.30000001192092896, -0.05000000074505806, 0.25, -0.25999999046325684, 0.5400000214576721, 0.30000001192092896, -0.09000000357627869, 0.3199999928474426, 0.6299999952316284, 0.8999999761581421, -0.7900000214576721, 0.4399999976158142, 0.23000000417232513, -0.05000000074505806], [-0.5, 0.6299999952316284, -0.6299999952316284, 0.2800000011920929, 0.6499999761581421, -0.800000011920929, -0.15000000596046448, -0.6499999761581421, 0.11999999731779099, 0.7599999904632568, 1.0099999904632568, -0.8899999856948853, -0.28999999165534973, 0.3499999940395355, 0.7900000214576721, 0.20999999344348907], [-0.3700000047683716, 0.15000000596046448, -0.009999999776482582, -0.10000000149011612, -0.3700000047683716, 0.1899999976158142, 0.15000000596046448, -0.05000000074505806, -0.10999999940395355, -0.6399999856948853, -0.23999999463558197, 0.6000000238418579, -0.10000000149011612, -0.7200000286102295, 0.6700000166893005, 0.27000001072883606]]> : tensor<7x16xf32>
  %bias = util.unfoldable_constant dense<[0.20999999344348907, 0.009999999776482582, -0.05000000074505806, -0.14000000059604645, 0.12999999523162842, 0.25999999046325684, -0.07999999821186066, -0.05999999865889549, 0.05999999865889549, -0.07999999821186066, -0.029999999329447746, -0.029999999329447746, 0.019999999552965164, 0.10999999940395355, 0.0, 0.09000000357627869]> : tensor<16xf32>
  %xs = util.unfoldable_constant dense<[[-0.41999998688697815, 0.33000001311302185, -2.140000104904175], [-1.4500000476837158, 0.800000011920929, -0.5899999737739563], [0.5799999833106995, 0.5400000214576721, 1.3200000524520874], [0.8100000023841858, 1.0199999809265137, -0.10999999940395355], [-0.699999988079071, -0.7300000190734863, -0.49000000953674316]]> : tensor<5x3xf32>
  %h0 = stablehlo.constant dense<0.0> : tensor<1x4xf32>
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %n = util.unfoldable_constant dense<5> : tensor<i32>
  %r:3 = stablehlo.while(%i = %i0, %h = %h0, %c = %h0) : tensor<i32>, tensor<1x4xf32>, tensor<1x4xf32>
   cond {
    %p = stablehlo.compare LT, %i, %n : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  } do {
    %zc = stablehlo.constant dense<0> : tensor<i32>
    %x = stablehlo.dynamic_slice %xs, %i, %zc, sizes = [1, 3] : (tensor<5x3xf32>, tensor<i32>, tensor<i32>) -> tensor<1x3xf32>
    %xh = stablehlo.concatenate %x, %h, dim = 1 : (tensor<1x3xf32>, tensor<1x4xf32>) -> tensor<1x7xf32>
    %zm = stablehlo.dot_general %xh, %w, contracting_dims = [1] x [0] : (tensor<1x7xf32>, tensor<7x16xf32>) -> tensor<1x16xf32>
    %bb = stablehlo.broadcast_in_dim %bias, dims = [1] : (tensor<16xf32>) -> tensor<1x16xf32>
    %z = stablehlo.add %zm, %bb : tensor<1x16xf32>
    %k02 = stablehlo.constant dense<0.2> : tensor<1x4xf32>
    %k05 = stablehlo.constant dense<0.5> : tensor<1x4xf32>
    %k0 = stablehlo.constant dense<0.0> : tensor<1x4xf32>
    %k1 = stablehlo.constant dense<1.0> : tensor<1x4xf32>
    %km1 = stablehlo.constant dense<-1.0> : tensor<1x4xf32>
    %zi = stablehlo.slice %z [0:1, 0:4] : (tensor<1x16xf32>) -> tensor<1x4xf32>
    %zf = stablehlo.slice %z [0:1, 4:8] : (tensor<1x16xf32>) -> tensor<1x4xf32>
    %zg = stablehlo.slice %z [0:1, 8:12] : (tensor<1x16xf32>) -> tensor<1x4xf32>
    %zo = stablehlo.slice %z [0:1, 12:16] : (tensor<1x16xf32>) -> tensor<1x4xf32>
    %im = stablehlo.multiply %zi, %k02 : tensor<1x4xf32>
    %ia = stablehlo.add %im, %k05 : tensor<1x4xf32>
    %is = stablehlo.clamp %k0, %ia, %k1 : tensor<1x4xf32>
    %fm = stablehlo.multiply %zf, %k02 : tensor<1x4xf32>
    %fa = stablehlo.add %fm, %k05 : tensor<1x4xf32>
    %fs = stablehlo.clamp %k0, %fa, %k1 : tensor<1x4xf32>
    %om = stablehlo.multiply %zo, %k02 : tensor<1x4xf32>
    %oa = stablehlo.add %om, %k05 : tensor<1x4xf32>
    %os = stablehlo.clamp %k0, %oa, %k1 : tensor<1x4xf32>
    %gs = stablehlo.clamp %km1, %zg, %k1 : tensor<1x4xf32>
    %fc = stablehlo.multiply %fs, %c : tensor<1x4xf32>
    %ig = stablehlo.multiply %is, %gs : tensor<1x4xf32>
    %nc = stablehlo.add %fc, %ig : tensor<1x4xf32>
    %tc = stablehlo.clamp %km1, %nc, %k1 : tensor<1x4xf32>
    %nh = stablehlo.multiply %os, %tc : tensor<1x4xf32>
    %ni = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %ni, %nh, %nc : tensor<i32>, tensor<1x4xf32>, tensor<1x4xf32>
  }
  check.expect_almost_eq_const(%r#1, dense<[[-0.09981644153594971, -0.00014307013771031052, 0.03951996564865112, -0.1778130680322647]]> : tensor<1x4xf32>) : tensor<1x4xf32>
  check.expect_almost_eq_const(%r#2, dense<[[-0.1512874811887741, -0.0002484917640686035, 0.0724162682890892, -0.3566072881221771]]> : tensor<1x4xf32>) : tensor<1x4xf32>
  return
}
func.func @scf_while_swap() {
  %a0 = util.unfoldable_constant dense<[1, 2]> : tensor<2xi32>
  %b0 = util.unfoldable_constant dense<[10, 20]> : tensor<2xi32>
  %n = util.unfoldable_constant 5 : i32
  %c0 = arith.constant 0 : i32
  %c1 = arith.constant 1 : i32
  %r:3 = scf.while (%i = %c0, %a = %a0, %b = %b0) : (i32, tensor<2xi32>, tensor<2xi32>) -> (i32, tensor<2xi32>, tensor<2xi32>) {
    %p = arith.cmpi slt, %i, %n : i32
    scf.condition(%p) %i, %a, %b : i32, tensor<2xi32>, tensor<2xi32>
  } do {
  ^bb0(%i: i32, %a: tensor<2xi32>, %b: tensor<2xi32>):
    %s = arith.addi %a, %b : tensor<2xi32>
    %ni = arith.addi %i, %c1 : i32
    scf.yield %ni, %s, %a : i32, tensor<2xi32>, tensor<2xi32>
  }
  check.expect_eq_const(%r#1, dense<[58, 116]> : tensor<2xi32>) : tensor<2xi32>
  check.expect_eq_const(%r#2, dense<[35, 70]> : tensor<2xi32>) : tensor<2xi32>
  return
}
