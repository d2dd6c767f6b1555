// A matmul and a small MLP layer (matmul + bias + relu, dynamic batch).
func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x3xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<4x3xf32>) -> tensor<4x3xf32>
  %r = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x3xf32>) outs(%f : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %r : tensor<4x3xf32>
}
func.func @mlp(%a: tensor<?x16xf32>, %w: tensor<16x32xf32>, %bias: tensor<32xf32>) -> tensor<?x32xf32> {
  %c0 = arith.constant 0 : index
  %cst = arith.constant 0.0 : f32
  %m = tensor.dim %a, %c0 : tensor<?x16xf32>
  %e = tensor.empty(%m) : tensor<?x32xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<?x32xf32>) -> tensor<?x32xf32>
  %r = linalg.matmul ins(%a, %w : tensor<?x16xf32>, tensor<16x32xf32>) outs(%f : tensor<?x32xf32>) -> tensor<?x32xf32>
  %o = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]} ins(%r, %bias : tensor<?x32xf32>, tensor<32xf32>) outs(%e : tensor<?x32xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    %z = arith.maximumf %s, %cst : f32
    linalg.yield %z : f32
  } -> tensor<?x32xf32>
  return %o : tensor<?x32xf32>
}
// Several dependent dispatches in one command buffer: two matmuls and an add.
func.func @chain(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x8xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<8x8xf32>) -> tensor<8x8xf32>
  %m1 = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %m2 = linalg.matmul ins(%m1, %a : tensor<8x8xf32>, tensor<8x8xf32>) outs(%f : tensor<8x8xf32>) -> tensor<8x8xf32>
  %s = arith.addf %m2, %b : tensor<8x8xf32>
  return %s : tensor<8x8xf32>
}
