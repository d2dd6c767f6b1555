// chain.mlir with the operands of the middle matmul swapped: m @ transpose(m).
func.func @chain(%a: tensor<16x32xf32>, %b: tensor<32x16xf32>) -> tensor<16xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
  %m = linalg.matmul ins(%a, %b : tensor<16x32xf32>, tensor<32x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
  %t = tensor.empty() : tensor<16x16xf32>
  %tr = linalg.transpose ins(%m : tensor<16x16xf32>) outs(%t : tensor<16x16xf32>) permutation = [1, 0]
  %m2 = linalg.matmul ins(%m, %tr : tensor<16x16xf32>, tensor<16x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
  %e1 = tensor.empty() : tensor<16xf32>
  %f1 = linalg.fill ins(%z : f32) outs(%e1 : tensor<16xf32>) -> tensor<16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                       iterator_types = ["parallel", "reduction"]}
       ins(%m2 : tensor<16x16xf32>) outs(%f1 : tensor<16xf32>) {
    ^bb0(%x: f32, %acc: f32):
      %s = arith.maximumf %x, %acc : f32
      linalg.yield %s : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}
