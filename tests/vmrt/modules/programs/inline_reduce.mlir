// Reductions: a row sum and a maximum over everything (the inline HAL tests).
func.func @row_sum(%a: tensor<3x5xf32>) -> tensor<3xf32> {
  %init = arith.constant dense<0.0> : tensor<3xf32>
  %0 = linalg.reduce ins(%a : tensor<3x5xf32>) outs(%init : tensor<3xf32>) dimensions = [1]
    (%in: f32, %acc: f32) {
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }
  return %0 : tensor<3xf32>
}

func.func @max_all(%a: tensor<4x6xi32>) -> tensor<i32> {
  %init = arith.constant dense<-2147483648> : tensor<i32>
  %0 = linalg.reduce ins(%a : tensor<4x6xi32>) outs(%init : tensor<i32>) dimensions = [0, 1]
    (%in: i32, %acc: i32) {
      %m = arith.maxsi %in, %acc : i32
      linalg.yield %m : i32
    }
  return %0 : tensor<i32>
}
