// Fills and copies inside command buffers (command_buffer.fill_buffer with a
// direct buffer and with a binding-table slot, copy_buffer), a dispatch and a
// fill in one submission.
func.func @pad(%a: tensor<4xf32>) -> tensor<10xf32> {
  %cst = arith.constant 9.0 : f32
  %0 = tensor.pad %a low[3] high[3] { ^bb0(%i: index): tensor.yield %cst : f32 } : tensor<4xf32> to tensor<10xf32>
  return %0 : tensor<10xf32>
}
func.func @two(%a: tensor<4xf32>, %n: index) -> (tensor<4xf32>, tensor<?xi32>) {
  %0 = arith.addf %a, %a : tensor<4xf32>
  %c = arith.constant 3 : i32
  %e = tensor.empty(%n) : tensor<?xi32>
  %f = linalg.fill ins(%c : i32) outs(%e : tensor<?xi32>) -> tensor<?xi32>
  return %0, %f : tensor<4xf32>, tensor<?xi32>
}
func.func @upd(%a: tensor<4xi32>) -> tensor<8xi32> {
  %c = arith.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %0 = tensor.concat dim(0) %a, %c : (tensor<4xi32>, tensor<4xi32>) -> tensor<8xi32>
  return %0 : tensor<8xi32>
}
