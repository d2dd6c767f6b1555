// Multi-workgroup programs for local-task vs local-sync: a 256x256 matmul
// and an elementwise chain over 64k floats (many workgroups each).
func.func @matmul(%a: tensor<256x256xf32>, %b: tensor<256x256xf32>) -> tensor<256x256xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x256xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<256x256xf32>) -> tensor<256x256xf32>
  %r = linalg.matmul ins(%a, %b : tensor<256x256xf32>, tensor<256x256xf32>) outs(%f : tensor<256x256xf32>) -> tensor<256x256xf32>
  return %r : tensor<256x256xf32>
}
func.func @scale(%x: tensor<65536xf32>) -> tensor<65536xf32> {
  %c = arith.constant dense<1.25> : tensor<65536xf32>
  %m = arith.mulf %x, %c : tensor<65536xf32>
  %s = math.sin %m : tensor<65536xf32>
  return %s : tensor<65536xf32>
}
