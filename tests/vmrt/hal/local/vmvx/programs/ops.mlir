// Op families for the vmvx target: elementwise (int, float), broadcast,
// reduction, transpose, matmul (f32, i8 -> i32, dynamic), conv, dynamic
// shapes and a function with no dispatch at all.
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @mul_i32(%a: tensor<4x8xi32>, %b: tensor<4x8xi32>) -> tensor<4x8xi32> {
  %0 = arith.muli %a, %b : tensor<4x8xi32>
  return %0 : tensor<4x8xi32>
}
func.func @matmul(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %r = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%f : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %r : tensor<8x4xf32>
}
func.func @imatmul(%a: tensor<5x7xi8>, %b: tensor<7x3xi8>, %c: tensor<5x3xi32>) -> tensor<5x3xi32> {
  %r = linalg.matmul ins(%a, %b : tensor<5x7xi8>, tensor<7x3xi8>) outs(%c : tensor<5x3xi32>) -> tensor<5x3xi32>
  return %r : tensor<5x3xi32>
}
func.func @dmatmul(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %n = tensor.dim %b, %c1 : tensor<?x?xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%m, %n) : tensor<?x?xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%f : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
func.func @reduce(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%a : tensor<4x8xf32>) outs(%f : tensor<4xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
func.func @transpose(%a: tensor<3x5xi16>) -> tensor<5x3xi16> {
  %e = tensor.empty() : tensor<5x3xi16>
  %r = linalg.transpose ins(%a : tensor<3x5xi16>) outs(%e : tensor<5x3xi16>) permutation = [1, 0]
  return %r : tensor<5x3xi16>
}
func.func @bcast(%a: tensor<3xf32>, %b: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %e = tensor.empty() : tensor<2x3xf32>
  %r = linalg.broadcast ins(%a : tensor<3xf32>) outs(%e : tensor<2x3xf32>) dimensions = [0]
  %s = arith.addf %r, %b : tensor<2x3xf32>
  return %s : tensor<2x3xf32>
}
func.func @dyn(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %0 = arith.addf %a, %b : tensor<?xf32>
  %1 = math.exp %0 : tensor<?xf32>
  return %1 : tensor<?xf32>
}
func.func @conv(%a: tensor<1x6x6x2xf32>, %w: tensor<3x3x2x4xf32>) -> tensor<1x4x4x4xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x4x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %r = linalg.conv_2d_nhwc_hwcf {dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>} ins(%a, %w : tensor<1x6x6x2xf32>, tensor<3x3x2x4xf32>) outs(%f : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %r : tensor<1x4x4x4xf32>
}
func.func @scalar(%a: i32) -> i32 {
  %c = arith.constant 3 : i32
  %r = arith.addi %a, %c : i32
  return %r : i32
}
