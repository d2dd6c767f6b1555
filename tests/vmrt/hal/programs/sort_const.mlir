func.func @sort_const() -> tensor<4xi32> {
  %c = arith.constant dense<[3, 2, 1, 4]> : tensor<4xi32>
  %s = iree_linalg_ext.sort dimension(0) outs(%c : tensor<4xi32>) {
  ^bb0(%a: i32, %b: i32):
    %p = arith.cmpi slt, %a, %b : i32
    iree_linalg_ext.yield %p : i1
  } -> tensor<4xi32>
  return %s : tensor<4xi32>
}
func.func @sort_const5() -> tensor<5xf32> {
  %c = arith.constant dense<[3.0, 2.0, 1.0, 4.0, 0.5]> : tensor<5xf32>
  %s = iree_linalg_ext.sort dimension(0) outs(%c : tensor<5xf32>) {
  ^bb0(%a: f32, %b: f32):
    %p = arith.cmpf olt, %a, %b : f32
    iree_linalg_ext.yield %p : i1
  } -> tensor<5xf32>
  return %s : tensor<5xf32>
}
