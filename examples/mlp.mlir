// A one-layer perceptron: y = x W + b (the model of docs/bare-metal.md's walk-through)
func.func @mlp(%x: tensor<1x16xf32>, %w: tensor<16x8xf32>, %b: tensor<1x8xf32>) -> tensor<1x8xf32> {
  %zero = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<1x8xf32>
  %fill = linalg.fill ins(%zero : f32) outs(%init : tensor<1x8xf32>) -> tensor<1x8xf32>
  %mm = linalg.matmul ins(%x, %w : tensor<1x16xf32>, tensor<16x8xf32>)
                     outs(%fill : tensor<1x8xf32>) -> tensor<1x8xf32>
  %y = arith.addf %mm, %b : tensor<1x8xf32>
  return %y : tensor<1x8xf32>
}
