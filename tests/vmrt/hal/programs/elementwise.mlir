// Elementwise programs: static and dynamic shapes, two results, an inlined
// constant.  Their command buffers are memoized (reused, with binding tables).
func.func @add(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = arith.addf %a, %b : tensor<8xf32>
  return %0 : tensor<8xf32>
}
func.func @mul_add(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %0 = arith.mulf %a, %b : tensor<?xf32>
  %1 = arith.addf %0, %a : tensor<?xf32>
  return %1 : tensor<?xf32>
}
func.func @iops(%a: tensor<4x4xi32>, %b: tensor<4x4xi32>) -> (tensor<4x4xi32>, tensor<4x4xi32>) {
  %0 = arith.muli %a, %b : tensor<4x4xi32>
  %1 = arith.subi %a, %b : tensor<4x4xi32>
  return %0, %1 : tensor<4x4xi32>, tensor<4x4xi32>
}
func.func @with_const(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = arith.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %0 = arith.mulf %a, %c : tensor<4xf32>
  return %0 : tensor<4xf32>
}
