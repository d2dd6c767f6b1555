func.func @tr_i4(%x: tensor<2x2xi4>) -> tensor<2x2xi4> {
  %e = tensor.empty() : tensor<2x2xi4>
  %r = linalg.transpose ins(%x : tensor<2x2xi4>) outs(%e : tensor<2x2xi4>) permutation = [1, 0]
  return %r : tensor<2x2xi4>
}
func.func @tr_si4(%x: tensor<2x2xsi4>) -> tensor<2x2xsi4> {
  %e = tensor.empty() : tensor<2x2xsi4>
  %r = linalg.transpose ins(%x : tensor<2x2xsi4>) outs(%e : tensor<2x2xsi4>) permutation = [1, 0]
  return %r : tensor<2x2xsi4>
}
func.func @tr_ui4(%x: tensor<2x2xui4>) -> tensor<2x2xui4> {
  %e = tensor.empty() : tensor<2x2xui4>
  %r = linalg.transpose ins(%x : tensor<2x2xui4>) outs(%e : tensor<2x2xui4>) permutation = [1, 0]
  return %r : tensor<2x2xui4>
}
func.func @tr_i2(%x: tensor<2x2xi2>) -> tensor<2x2xi2> {
  %e = tensor.empty() : tensor<2x2xi2>
  %r = linalg.transpose ins(%x : tensor<2x2xi2>) outs(%e : tensor<2x2xi2>) permutation = [1, 0]
  return %r : tensor<2x2xi2>
}
func.func @tr_bf16(%x: tensor<2x2xbf16>) -> tensor<2x2xbf16> {
  %e = tensor.empty() : tensor<2x2xbf16>
  %r = linalg.transpose ins(%x : tensor<2x2xbf16>) outs(%e : tensor<2x2xbf16>) permutation = [1, 0]
  return %r : tensor<2x2xbf16>
}
func.func @tr_f8E4M3FN(%x: tensor<2x2xf8E4M3FN>) -> tensor<2x2xf8E4M3FN> {
  %e = tensor.empty() : tensor<2x2xf8E4M3FN>
  %r = linalg.transpose ins(%x : tensor<2x2xf8E4M3FN>) outs(%e : tensor<2x2xf8E4M3FN>) permutation = [1, 0]
  return %r : tensor<2x2xf8E4M3FN>
}
func.func @tr_f8E5M2(%x: tensor<2x2xf8E5M2>) -> tensor<2x2xf8E5M2> {
  %e = tensor.empty() : tensor<2x2xf8E5M2>
  %r = linalg.transpose ins(%x : tensor<2x2xf8E5M2>) outs(%e : tensor<2x2xf8E5M2>) permutation = [1, 0]
  return %r : tensor<2x2xf8E5M2>
}
func.func @tr_f8E4M3FNUZ(%x: tensor<2x2xf8E4M3FNUZ>) -> tensor<2x2xf8E4M3FNUZ> {
  %e = tensor.empty() : tensor<2x2xf8E4M3FNUZ>
  %r = linalg.transpose ins(%x : tensor<2x2xf8E4M3FNUZ>) outs(%e : tensor<2x2xf8E4M3FNUZ>) permutation = [1, 0]
  return %r : tensor<2x2xf8E4M3FNUZ>
}
func.func @tr_f8E5M2FNUZ(%x: tensor<2x2xf8E5M2FNUZ>) -> tensor<2x2xf8E5M2FNUZ> {
  %e = tensor.empty() : tensor<2x2xf8E5M2FNUZ>
  %r = linalg.transpose ins(%x : tensor<2x2xf8E5M2FNUZ>) outs(%e : tensor<2x2xf8E5M2FNUZ>) permutation = [1, 0]
  return %r : tensor<2x2xf8E5M2FNUZ>
}
func.func @tr_complexf32(%x: tensor<2x2xcomplex<f32>>) -> tensor<2x2xcomplex<f32>> {
  %e = tensor.empty() : tensor<2x2xcomplex<f32>>
  %r = linalg.transpose ins(%x : tensor<2x2xcomplex<f32>>) outs(%e : tensor<2x2xcomplex<f32>>) permutation = [1, 0]
  return %r : tensor<2x2xcomplex<f32>>
}
func.func @tr_i1(%x: tensor<2x2xi1>) -> tensor<2x2xi1> {
  %e = tensor.empty() : tensor<2x2xi1>
  %r = linalg.transpose ins(%x : tensor<2x2xi1>) outs(%e : tensor<2x2xi1>) permutation = [1, 0]
  return %r : tensor<2x2xi1>
}
