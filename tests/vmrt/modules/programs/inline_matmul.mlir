// A matmul with a bias (the inline HAL tests).
func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<8x3xf32>, %bias: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x3xf32>) outs(%bias : tensor<4x3xf32>) -> tensor<4x3xf32>
  return %0 : tensor<4x3xf32>
}
