// f64 arithmetic (compile with --iree-input-demote-f64-to-f32=false): on
// riscv32 +m,+f / ilp32 it calls compiler-rt's __extendsfdf2, __muldf3,
// __adddf3, __divdf3, __subdf3 and __truncdfsf2 (test_static_library.py).
func.func @mix(%a: tensor<8xf32>, %b: tensor<8xf64>) -> (tensor<8xf32>, tensor<8xf64>, tensor<8xf64>) {
  %0 = arith.extf %a : tensor<8xf32> to tensor<8xf64>
  %1 = arith.mulf %0, %b : tensor<8xf64>
  %2 = arith.addf %1, %b : tensor<8xf64>
  %3 = arith.divf %2, %0 : tensor<8xf64>
  %4 = arith.subf %3, %b : tensor<8xf64>
  %5 = arith.truncf %3 : tensor<8xf64> to tensor<8xf32>
  return %5, %4, %1 : tensor<8xf32>, tensor<8xf64>, tensor<8xf64>
}
