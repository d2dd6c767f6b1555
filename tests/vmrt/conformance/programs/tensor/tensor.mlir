// tensor dialect ops; expected values computed with NumPy
// (tests/vmrt/conformance/gen_tensor.py writes this file)
func.func @extract_slice_strided() {
  %a0 = util.unfoldable_constant dense<[[-2, 58, -44, -58, -65, 61, 60, 91], [49, 37, 92, -75, 61, 94, -49, -74], [-3, -49, -26, 44, -100, 40, -32, -12], [-35, 89, 53, -7, 29, -25, 50, 25]]> : tensor<4x8xi32>
  %r = tensor.extract_slice %a0[1, 2] [2, 3] [1, 2] : tensor<4x8xi32> to tensor<2x3xi32>
  check.expect_eq_const(%r, dense<[[92, 61, -49], [-26, -100, -32]]> : tensor<2x3xi32>) : tensor<2x3xi32>
  return
}
func.func @extract_slice_rank_reducing() {
  %a0 = util.unfoldable_constant dense<[[[-80, -88, -87, -46, 45, 4, 20], [-45, 18, -46, -35, -46, 2, -50], [-33, -99, 58, -22, -79, 65, -62], [-30, 25, -71, -66, -5, -48, 65], [-52, -86, 25, -57, 99, -31, 89]], [[-66, -38, 11, 41, -56, -24, 2], [43, 64, -95, -85, 91, -77, 58], [-96, 49, 42, -19, -39, 84, 37], [-47, 42, -35, -8, -72, -28, 57], [-15, -46, -98, 33, 11, -74, 17]], [[-89, 35, -55, 72, -3, 93, -24], [75, -92, -96, -100, -29, 81, -89], [61, -93, 99, -97, 24, -23, 50], [57, 61, 40, -60, 34, 20, 3], [-22, -15, 22, -44, -82, -84, -13]]]> : tensor<3x5x7xi32>
  %r = tensor.extract_slice %a0[1, 0, 2] [1, 5, 4] [1, 1, 1] : tensor<3x5x7xi32> to tensor<5x4xi32>
  check.expect_eq_const(%r, dense<[[11, 41, -56, -24], [-95, -85, 91, -77], [42, -19, -39, 84], [-35, -8, -72, -28], [-98, 33, 11, -74]]> : tensor<5x4xi32>) : tensor<5x4xi32>
  return
}
func.func @insert_slice_into_constant() {
  %a0 = util.unfoldable_constant dense<[[32, 14, -88], [39, 6, -80]]> : tensor<2x3xi32>
  %c = arith.constant dense<[[76, -64, -46, -47, 57, 54], [-56, -55, 57, -38, -22, 98], [-65, 55, -85, 4, -41, -22], [96, 40, 5, 34, 40, -7], [1, 90, 17, -31, 99, -4]]> : tensor<5x6xi32>
  %r = tensor.insert_slice %a0 into %c[1, 2] [2, 3] [1, 1] : tensor<2x3xi32> into tensor<5x6xi32>
  check.expect_eq_const(%r, dense<[[76, -64, -46, -47, 57, 54], [-56, -55, 32, 14, -88, 98], [-65, 55, 39, 6, -80, -22], [96, 40, 5, 34, 40, -7], [1, 90, 17, -31, 99, -4]]> : tensor<5x6xi32>) : tensor<5x6xi32>
  return
}
func.func @insert_slice_strided_f32() {
  %a0 = util.unfoldable_constant dense<[[92.0, -27.0, -91.0, -21.0, 50.0, 72.0], [-15.0, 67.0, -64.0, 94.0, -63.0, 97.0], [-48.0, -14.0, -63.0, -54.0, 93.0, 98.0], [6.0, 13.0, -20.0, -81.0, 18.0, -71.0], [-75.0, -7.0, 52.0, 80.0, 14.0, -71.0]]> : tensor<5x6xf32>
  %a1 = util.unfoldable_constant dense<[[32.0, 14.0, -88.0], [39.0, 6.0, -80.0]]> : tensor<2x3xf32>
  %d = arith.negf %a0 : tensor<5x6xf32>
  %r = tensor.insert_slice %a1 into %d[0, 1] [2, 3] [2, 2] : tensor<2x3xf32> into tensor<5x6xf32>
  check.expect_eq_const(%r, dense<[[-92.0, 32.0, 91.0, 14.0, -50.0, -88.0], [15.0, -67.0, 64.0, -94.0, 63.0, -97.0], [48.0, 39.0, 63.0, 6.0, -93.0, -80.0], [-6.0, -13.0, 20.0, 81.0, -18.0, 71.0], [75.0, 7.0, -52.0, -80.0, -14.0, 71.0]]> : tensor<5x6xf32>) : tensor<5x6xf32>
  return
}
func.func @insert_two_slices() {
  %a0 = util.unfoldable_constant dense<[-65, 84, -41]> : tensor<3xi16>
  %a1 = util.unfoldable_constant dense<[-64, 18, 66, 55]> : tensor<4xi16>
  %e = tensor.empty() : tensor<2x4xi16>
  %z = arith.constant 0 : i16
  %f = linalg.fill ins(%z : i16) outs(%e : tensor<2x4xi16>) -> tensor<2x4xi16>
  %t = tensor.insert_slice %a0 into %f[0, 1] [1, 3] [1, 1] : tensor<3xi16> into tensor<2x4xi16>
  %r = tensor.insert_slice %a1 into %t[1, 0] [1, 4] [1, 1] : tensor<4xi16> into tensor<2x4xi16>
  check.expect_eq_const(%r, dense<[[0, -65, 84, -41], [-64, 18, 66, 55]]> : tensor<2x4xi16>) : tensor<2x4xi16>
  return
}
func.func @tensor_insert_scalar() {
  %a0 = util.unfoldable_constant dense<[8, 74, 35, -43, 38, -80]> : tensor<6xi32>
  %one = arith.constant dense<1> : tensor<6xi32>
  %d = arith.addi %a0, %one : tensor<6xi32>
  %c2 = arith.constant 2 : index
  %v = arith.constant 777 : i32
  %r = tensor.insert %v into %d[%c2] : tensor<6xi32>
  check.expect_eq_const(%r, dense<[9, 75, 777, -42, 39, -79]> : tensor<6xi32>) : tensor<6xi32>
  return
}
func.func @concat_dim1() {
  %a0 = util.unfoldable_constant dense<[[28, 28, -69], [6, 66, -23]]> : tensor<2x3xi32>
  %a1 = util.unfoldable_constant dense<[[-9, -48, -31, -48], [48, -52, -24, 93]]> : tensor<2x4xi32>
  %r = tensor.concat dim(1) %a0, %a1 : (tensor<2x3xi32>, tensor<2x4xi32>) -> tensor<2x7xi32>
  check.expect_eq_const(%r, dense<[[28, 28, -69, -9, -48, -31, -48], [6, 66, -23, 48, -52, -24, 93]]> : tensor<2x7xi32>) : tensor<2x7xi32>
  return
}
func.func @concat_dim0_three_i8() {
  %a0 = util.unfoldable_constant dense<[[93, -87, -79]]> : tensor<1x3xi8>
  %a1 = util.unfoldable_constant dense<[[6, -96, -60], [13, -28, 95]]> : tensor<2x3xi8>
  %a2 = util.unfoldable_constant dense<[[51, -11, 79], [18, -100, -74], [64, 11, -3]]> : tensor<3x3xi8>
  %r = tensor.concat dim(0) %a0, %a1, %a2 : (tensor<1x3xi8>, tensor<2x3xi8>, tensor<3x3xi8>) -> tensor<6x3xi8>
  check.expect_eq_const(%r, dense<[[93, -87, -79], [6, -96, -60], [13, -28, 95], [51, -11, 79], [18, -100, -74], [64, 11, -3]]> : tensor<6x3xi8>) : tensor<6x3xi8>
  return
}
func.func @pad_const() {
  %a0 = util.unfoldable_constant dense<[[-91.0, -77.0, -4.0], [-47.0, 6.0, 13.0]]> : tensor<2x3xf32>
  %v = arith.constant -1.5 : f32
  %r = tensor.pad %a0 low[1, 2] high[2, 0] {
  ^bb0(%i: index, %j: index):
  tensor.yield %v : f32
  } : tensor<2x3xf32> to tensor<5x5xf32>
  check.expect_eq_const(%r, dense<[[-1.5, -1.5, -1.5, -1.5, -1.5], [-1.5, -1.5, -91.0, -77.0, -4.0], [-1.5, -1.5, -47.0, 6.0, 13.0], [-1.5, -1.5, -1.5, -1.5, -1.5], [-1.5, -1.5, -1.5, -1.5, -1.5]]> : tensor<5x5xf32>) : tensor<5x5xf32>
  return
}
func.func @pad_i64_high_only() {
  %a0 = util.unfoldable_constant dense<[[65, -48, 54, -79], [-80, 1, -57, -56], [-6, -24, 49, 2]]> : tensor<3x4xi64>
  %v = arith.constant 9 : i64
  %r = tensor.pad %a0 low[0, 0] high[1, 3] {
  ^bb0(%i: index, %j: index):
  tensor.yield %v : i64
  } : tensor<3x4xi64> to tensor<4x7xi64>
  check.expect_eq_const(%r, dense<[[65, -48, 54, -79, 9, 9, 9], [-80, 1, -57, -56, 9, 9, 9], [-6, -24, 49, 2, 9, 9, 9], [9, 9, 9, 9, 9, 9, 9]]> : tensor<4x7xi64>) : tensor<4x7xi64>
  return
}
func.func @pad_then_sum() {
  %a0 = util.unfoldable_constant dense<[[71, 49, -71, -36, 28], [-21, 68, 67, -90, -25], [-13, 10, -54, 48, -63], [42, -95, 36, 21, -12]]> : tensor<4x5xi32>
  %v = arith.constant 1 : i32
  %pd = tensor.pad %a0 low[1, 1] high[1, 1] {
  ^bb0(%i: index, %j: index):
  tensor.yield %v : i32
  } : tensor<4x5xi32> to tensor<6x7xi32>
  %e = tensor.empty() : tensor<7xi32>
  %z = arith.constant 0 : i32
  %f = linalg.fill ins(%z : i32) outs(%e : tensor<7xi32>) -> tensor<7xi32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>], iterator_types = ["reduction", "parallel"]} ins(%pd : tensor<6x7xi32>) outs(%f : tensor<7xi32>) {
  ^bb0(%x: i32, %acc: i32):
  %s = arith.addi %x, %acc : i32
  linalg.yield %s : i32
  } -> tensor<7xi32>
  check.expect_eq_const(%r, dense<[6, 81, 34, -20, -55, -70, 6]> : tensor<7xi32>) : tensor<7xi32>
  return
}
func.func @collapse_shape() {
  %a0 = util.unfoldable_constant dense<[[[-16, 59, -52, 4], [48, 67, -12, -63], [-36, 78, -45, -57]], [[-91, -80, -27, 61], [-43, -75, 53, -9], [-25, -96, -27, 49]]]> : tensor<2x3x4xi32>
  %r = tensor.collapse_shape %a0 [[0, 1], [2]] : tensor<2x3x4xi32> into tensor<6x4xi32>
  check.expect_eq_const(%r, dense<[[-16, 59, -52, 4], [48, 67, -12, -63], [-36, 78, -45, -57], [-91, -80, -27, 61], [-43, -75, 53, -9], [-25, -96, -27, 49]]> : tensor<6x4xi32>) : tensor<6x4xi32>
  return
}
func.func @expand_shape() {
  %a0 = util.unfoldable_constant dense<[26, -23, 4, -51, 13, 48, -68, -83, -17, -40, 58, 92]> : tensor<12xi32>
  %r = tensor.expand_shape %a0 [[0, 1]] output_shape [3, 4] : tensor<12xi32> into tensor<3x4xi32>
  check.expect_eq_const(%r, dense<[[26, -23, 4, -51], [13, 48, -68, -83], [-17, -40, 58, 92]]> : tensor<3x4xi32>) : tensor<3x4xi32>
  return
}
func.func @reshape_then_transpose() {
  %a0 = util.unfoldable_constant dense<[[18, 38, -28, -98, -23, 55], [-30, 65, 12, -5, -97, -3]]> : tensor<2x6xi32>
  %t = tensor.expand_shape %a0 [[0], [1, 2]] output_shape [2, 3, 2] : tensor<2x6xi32> into tensor<2x3x2xi32>
  %e = tensor.empty() : tensor<2x2x3xi32>
  %tr = linalg.transpose ins(%t : tensor<2x3x2xi32>) outs(%e : tensor<2x2x3xi32>) permutation = [2, 0, 1]
  %r = tensor.collapse_shape %tr [[0, 1, 2]] : tensor<2x2x3xi32> into tensor<12xi32>
  check.expect_eq_const(%r, dense<[18, -28, -23, -30, 12, -97, 38, -98, 55, 65, -5, -3]> : tensor<12xi32>) : tensor<12xi32>
  return
}
func.func @tensor_reshape_shape_operand() {
  %a0 = util.unfoldable_constant dense<[[22, -63, -58], [-4, -29, 36], [-62, 32, -7], [17, -62, 4]]> : tensor<4x3xi32>
  %s = arith.constant dense<[2, 6]> : tensor<2xi64>
  %r = tensor.reshape %a0(%s) : (tensor<4x3xi32>, tensor<2xi64>) -> tensor<2x6xi32>
  check.expect_eq_const(%r, dense<[[22, -63, -58, -4, -29, 36], [-62, 32, -7, 17, -62, 4]]> : tensor<2x6xi32>) : tensor<2x6xi32>
  return
}
func.func @reverse_last_dim() {
  %a0 = util.unfoldable_constant dense<[[-40, -25, -18, 82, -87, -83, -96], [-28, 74, -1, -46, 8, 36, -62], [-90, -15, 3, -19, -28, 57, 63]]> : tensor<3x7xi32>
  %e = tensor.empty() : tensor<3x7xi32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} outs(%e : tensor<3x7xi32>) {
  ^bb0(%o: i32):
  %i = linalg.index 0 : index
  %j = linalg.index 1 : index
  %c6 = arith.constant 6 : index
  %rj = arith.subi %c6, %j : index
  %v = tensor.extract %a0[%i, %rj] : tensor<3x7xi32>
  linalg.yield %v : i32
  } -> tensor<3x7xi32>
  check.expect_eq_const(%r, dense<[[-96, -83, -87, 82, -18, -25, -40], [-62, 36, 8, -46, -1, 74, -28], [63, 57, -28, -19, 3, -15, -90]]> : tensor<3x7xi32>) : tensor<3x7xi32>
  return
}
func.func @gather_rows() {
  %a0 = util.unfoldable_constant dense<[[44.0, 95.0, -79.0], [57.0, -69.0, 11.0], [-47.0, 28.0, -8.0], [38.0, 60.0, -26.0], [6.0, 87.0, -47.0]]> : tensor<5x3xf32>
  %a1 = util.unfoldable_constant dense<[4, 0, 2, 2]> : tensor<4xi32>
  %e = tensor.empty() : tensor<4x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%a1 : tensor<4xi32>) outs(%e : tensor<4x3xf32>) {
  ^bb0(%k: i32, %o: f32):
  %ki = arith.index_cast %k : i32 to index
  %j = linalg.index 1 : index
  %v = tensor.extract %a0[%ki, %j] : tensor<5x3xf32>
  linalg.yield %v : f32
  } -> tensor<4x3xf32>
  check.expect_eq_const(%r, dense<[[6.0, 87.0, -47.0], [44.0, 95.0, -79.0], [-47.0, 28.0, -8.0], [-47.0, 28.0, -8.0]]> : tensor<4x3xf32>) : tensor<4x3xf32>
  return
}
func.func @scf_loop_extract_sum() {
  %a0 = util.unfoldable_constant dense<[33, 93, -41, -28, 98, 68, 37, -83, 50]> : tensor<9xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c9 = arith.constant 9 : index
  %z = arith.constant 0 : i32
  %s = scf.for %i = %c0 to %c9 step %c1 iter_args(%acc = %z) -> (i32) {
  %v = tensor.extract %a0[%i] : tensor<9xi32>
  %sq = arith.muli %v, %v : i32
  %n = arith.addi %acc, %sq : i32
  scf.yield %n : i32
  }
  %r = tensor.from_elements %s : tensor<1xi32>
  check.expect_eq_const(%r, dense<[37189]> : tensor<1xi32>) : tensor<1xi32>
  return
}
func.func @scf_loop_prefix_sum() {
  %a0 = util.unfoldable_constant dense<[11, -14, -30, 20, -15, 42]> : tensor<6xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %z = arith.constant 0 : i32
  %e = arith.constant dense<0> : tensor<6xi32>
  %t, %s = scf.for %i = %c0 to %c6 step %c1 iter_args(%acc = %e, %run = %z) -> (tensor<6xi32>, i32) {
  %v = tensor.extract %a0[%i] : tensor<6xi32>
  %n = arith.addi %run, %v : i32
  %u = tensor.insert %n into %acc[%i] : tensor<6xi32>
  scf.yield %u, %n : tensor<6xi32>, i32
  }
  %r = util.optimization_barrier %t : tensor<6xi32>
  check.expect_eq_const(%r, dense<[11, -3, -33, -13, -28, 14]> : tensor<6xi32>) : tensor<6xi32>
  return
}
func.func @dynamic_matmul() {
  %d0 = flow.tensor.dynamic_constant dense<[[-6.0, -4.0, 5.0, 5.0, -2.0], [5.0, 6.0, 7.0, -1.0, 3.0], [-2.0, 1.0, -4.0, -7.0, 1.0]]> : tensor<3x5xf32> -> tensor<?x?xf32>
  %d1 = flow.tensor.dynamic_constant dense<[[1.0, 1.0, -8.0, 0.0], [7.0, 4.0, 0.0, -7.0], [7.0, 0.0, 1.0, 2.0], [-5.0, 6.0, 3.0, 5.0], [-5.0, 2.0, -2.0, -5.0]]> : tensor<5x4xf32> -> tensor<?x?xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %d0, %c0 : tensor<?x?xf32>
  %n = tensor.dim %d1, %c1 : tensor<?x?xf32>
  %e = tensor.empty(%m, %n) : tensor<?x?xf32>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %mm = linalg.matmul ins(%d0, %d1 : tensor<?x?xf32>, tensor<?x?xf32>) outs(%f : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = tensor.cast %mm : tensor<?x?xf32> to tensor<3x4xf32>
  check.expect_almost_eq_const(%r, dense<[[-14.0, 4.0, 72.0, 73.0], [86.0, 29.0, -42.0, -48.0], [7.0, -38.0, -11.0, -55.0]]> : tensor<3x4xf32>) : tensor<3x4xf32>
  return
}
func.func @dynamic_elementwise_and_reduce() {
  %d = flow.tensor.dynamic_constant dense<[[74, -15, 99, 58, 82, -63], [27, -23, -7, 94, 52, -23], [77, 90, 18, 74, -57, 57], [36, 52, 87, 54, 93, -12]]> : tensor<4x6xi32> -> tensor<?x?xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %d, %c0 : tensor<?x?xi32>
  %n = tensor.dim %d, %c1 : tensor<?x?xi32>
  %sq = arith.muli %d, %d : tensor<?x?xi32>
  %e = tensor.empty(%n) : tensor<?xi32>
  %z = arith.constant 0 : i32
  %f = linalg.fill ins(%z : i32) outs(%e : tensor<?xi32>) -> tensor<?xi32>
  %s = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>], iterator_types = ["reduction", "parallel"]} ins(%sq : tensor<?x?xi32>) outs(%f : tensor<?xi32>) {
  ^bb0(%v: i32, %acc: i32):
  %t = arith.addi %v, %acc : i32
  linalg.yield %t : i32
  } -> tensor<?xi32>
  %r = tensor.cast %s : tensor<?xi32> to tensor<6xi32>
  check.expect_eq_const(%r, dense<[13430, 11558, 17743, 20592, 21326, 7891]> : tensor<6xi32>) : tensor<6xi32>
  return
}
func.func @dynamic_extract_slice() {
  %a0 = util.unfoldable_constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %d = flow.tensor.dynamic_constant dense<[[28, 52, -55, -58, 90, -18, -30], [-13, -12, -23, 80, -20, 95, -33], [-43, -90, 30, 7, -93, -17, -6], [-33, -25, 49, 95, 62, 73, -100], [-31, 70, 75, 2, 59, -65, -55]]> : tensor<5x7xi32> -> tensor<?x?xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c3 = arith.constant 3 : index
  %o0i = tensor.extract %a0[%c0] : tensor<4xi32>
  %o1i = tensor.extract %a0[%c1] : tensor<4xi32>
  %s0i = tensor.extract %a0[%c2] : tensor<4xi32>
  %s1i = tensor.extract %a0[%c3] : tensor<4xi32>
  %o0 = arith.index_cast %o0i : i32 to index
  %o1 = arith.index_cast %o1i : i32 to index
  %s0 = arith.index_cast %s0i : i32 to index
  %s1 = arith.index_cast %s1i : i32 to index
  %sl = tensor.extract_slice %d[%o0, %o1] [%s0, %s1] [1, 1] : tensor<?x?xi32> to tensor<?x?xi32>
  %r = tensor.cast %sl : tensor<?x?xi32> to tensor<3x4xi32>
  check.expect_eq_const(%r, dense<[[-23, 80, -20, 95], [30, 7, -93, -17], [49, 95, 62, 73]]> : tensor<3x4xi32>) : tensor<3x4xi32>
  return
}
func.func @dynamic_collapse_and_dims() {
  %d = flow.tensor.dynamic_constant dense<[[[-25, 57, -41, 16], [-1, 0, -83, 65], [2, 9, 67, 4]], [[-47, -28, 75, 22], [-80, 52, 29, -80], [-19, -55, -75, 46]]]> : tensor<2x3x4xi32> -> tensor<?x?x?xi32>
  %cl = tensor.collapse_shape %d [[0, 1], [2]] : tensor<?x?x?xi32> into tensor<?x?xi32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %cl, %c0 : tensor<?x?xi32>
  %n = tensor.dim %cl, %c1 : tensor<?x?xi32>
  %mi = arith.index_cast %m : index to i32
  %ni = arith.index_cast %n : index to i32
  %dims = tensor.from_elements %mi, %ni : tensor<2xi32>
  %flat = tensor.cast %cl : tensor<?x?xi32> to tensor<6x4xi32>
  check.expect_eq_const(%flat, dense<[[-25, 57, -41, 16], [-1, 0, -83, 65], [2, 9, 67, 4], [-47, -28, 75, 22], [-80, 52, 29, -80], [-19, -55, -75, 46]]> : tensor<6x4xi32>) : tensor<6x4xi32>
  %r = util.optimization_barrier %dims : tensor<2xi32>
  check.expect_eq_const(%r, dense<[6, 4]> : tensor<2xi32>) : tensor<2xi32>
  return
}
