// Called from many threads at once by tests/vmrt/tools/test_threads.py:
// elementwise ops (static and dynamic shapes), a matmul of several
// workgroups (local-task spreads them over worker threads) and a counter in
// a mutable global (each call must see every earlier call's increment).
util.global private mutable @counter = 0 : i32
func.func @add(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = arith.addf %a, %b : tensor<8xf32>
  return %0 : tensor<8xf32>
}
func.func @mul_add(%a: tensor<?xf32>, %b: tensor<?xf32>) -> tensor<?xf32> {
  %0 = arith.mulf %a, %b : tensor<?xf32>
  %1 = arith.addf %0, %a : tensor<?xf32>
  return %1 : tensor<?xf32>
}
func.func @matmul(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %cst = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%cst : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}
func.func @bump() -> i32 {
  %c = util.global.load @counter : i32
  %one = arith.constant 1 : i32
  %n = arith.addi %c, %one : i32
  util.global.store %n, @counter : i32
  return %n : i32
}
