// Denormal f32 inputs, results and intermediates (|x| < 2^-126): IREE flushes
// them to zero inside dispatches on x86 (MXCSR FTZ|DAZ), aarch64 (FPCR FZ) and
// arm (FPSCR FZ); RISC-V keeps them.  65536 elements: several workgroups, so
// local-task spreads them over its workers.
func.func @mul(%a: tensor<65536xf32>, %b: tensor<65536xf32>) -> tensor<65536xf32> {
  %r = arith.mulf %a, %b : tensor<65536xf32>
  return %r : tensor<65536xf32>
}
func.func @add(%a: tensor<65536xf32>, %b: tensor<65536xf32>) -> tensor<65536xf32> {
  %r = arith.addf %a, %b : tensor<65536xf32>
  return %r : tensor<65536xf32>
}
func.func @rescale(%a: tensor<65536xf32>, %b: tensor<65536xf32>, %c: tensor<65536xf32>)
    -> tensor<65536xf32> {
  %t = arith.mulf %a, %b : tensor<65536xf32>
  %r = arith.mulf %t, %c : tensor<65536xf32>
  return %r : tensor<65536xf32>
}
