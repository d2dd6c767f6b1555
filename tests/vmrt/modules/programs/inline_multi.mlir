// Several functions, one calling the others, and a constant tensor (the inline HAL tests).
util.func private @scale(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = arith.mulf %a, %c : tensor<4xf32>
  util.return %0 : tensor<4xf32>
}

func.func @scaled(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = util.call @scale(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

func.func @negate(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.negf %a : tensor<4xf32>
  return %0 : tensor<4xf32>
}

func.func @pipeline(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = util.call @scale(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = arith.subf %0, %b : tensor<4xf32>
  %2 = call @negate(%1) : (tensor<4xf32>) -> tensor<4xf32>
  return %1, %2 : tensor<4xf32>, tensor<4xf32>
}
