// Elementwise ops over f32 and i32 tensors (the inline HAL tests).
func.func @add(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xf32>
  return %0 : tensor<4xf32>
}

func.func @fma_relu(%a: tensor<2x8xf32>, %b: tensor<2x8xf32>, %c: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %zero = arith.constant dense<0.0> : tensor<2x8xf32>
  %0 = arith.mulf %a, %b : tensor<2x8xf32>
  %1 = arith.addf %0, %c : tensor<2x8xf32>
  %2 = arith.maximumf %1, %zero : tensor<2x8xf32>
  return %2 : tensor<2x8xf32>
}

func.func @int_ops(%a: tensor<6xi32>, %b: tensor<6xi32>) -> (tensor<6xi32>, tensor<6xi32>) {
  %0 = arith.muli %a, %b : tensor<6xi32>
  %1 = arith.cmpi sgt, %a, %b : tensor<6xi32>
  %2 = arith.select %1, %a, %b : tensor<6xi1>, tensor<6xi32>
  return %0, %2 : tensor<6xi32>, tensor<6xi32>
}
