// Element types other than f32/i32 (i8, i64, f16) and a large tensor whose
// printout is elided (--output_max_element_count).
func.func @i8add(%a: tensor<16xi8>, %b: tensor<16xi8>) -> tensor<16xi8> {
  %0 = arith.addi %a, %b : tensor<16xi8>
  return %0 : tensor<16xi8>
}
func.func @i64mul(%a: tensor<3xi64>, %b: tensor<3xi64>) -> tensor<3xi64> {
  %0 = arith.muli %a, %b : tensor<3xi64>
  return %0 : tensor<3xi64>
}
func.func @f16add(%a: tensor<5xf16>, %b: tensor<5xf16>) -> tensor<5xf16> {
  %0 = arith.addf %a, %b : tensor<5xf16>
  return %0 : tensor<5xf16>
}
func.func @big(%a: tensor<300x200xf32>) -> tensor<300x200xf32> {
  %0 = math.exp %a : tensor<300x200xf32>
  return %0 : tensor<300x200xf32>
}
func.func @i1pass(%a: tensor<4xi1>) -> tensor<4xi1> {
  return %a : tensor<4xi1>
}
func.func @i1cmp(%a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi1> {
  %0 = arith.cmpi slt, %a, %b : tensor<4xi32>
  return %0 : tensor<4xi1>
}
