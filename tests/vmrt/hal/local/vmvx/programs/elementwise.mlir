// Every elementwise vmvx microkernel family: f32 and i32 binary/unary ops.
func.func @fops(%a: tensor<3x5xf32>, %b: tensor<3x5xf32>) -> (tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>) {
  %0 = arith.subf %a, %b : tensor<3x5xf32>
  %1 = arith.divf %a, %b : tensor<3x5xf32>
  %2 = math.absf %0 : tensor<3x5xf32>
  %3 = math.ceil %1 : tensor<3x5xf32>
  %4 = math.floor %1 : tensor<3x5xf32>
  %5 = math.log %2 : tensor<3x5xf32>
  %6 = math.rsqrt %2 : tensor<3x5xf32>
  %7 = arith.negf %a : tensor<3x5xf32>
  return %0, %3, %5, %6, %7 : tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>, tensor<3x5xf32>
}
func.func @iops(%a: tensor<3x5xi32>, %b: tensor<3x5xi32>) -> (tensor<3x5xi32>, tensor<3x5xi32>, tensor<3x5xi32>, tensor<3x5xi32>, tensor<3x5xi32>, tensor<3x5xi32>) {
  %0 = arith.subi %a, %b : tensor<3x5xi32>
  %1 = arith.andi %a, %b : tensor<3x5xi32>
  %2 = arith.ori %a, %b : tensor<3x5xi32>
  %3 = arith.xori %a, %b : tensor<3x5xi32>
  %4 = arith.divsi %a, %b : tensor<3x5xi32>
  %5 = arith.divui %a, %b : tensor<3x5xi32>
  return %0, %1, %2, %3, %4, %5 : tensor<3x5xi32>, tensor<3x5xi32>, tensor<3x5xi32>, tensor<3x5xi32>, tensor<3x5xi32>, tensor<3x5xi32>
}
func.func @shifts(%a: tensor<6xi32>, %b: tensor<6xi32>) -> (tensor<6xi32>, tensor<6xi32>, tensor<6xi32>, tensor<6xi32>) {
  %0 = arith.shli %a, %b : tensor<6xi32>
  %1 = arith.shrsi %a, %b : tensor<6xi32>
  %2 = arith.shrui %a, %b : tensor<6xi32>
  %3 = math.ctlz %a : tensor<6xi32>
  return %0, %1, %2, %3 : tensor<6xi32>, tensor<6xi32>, tensor<6xi32>, tensor<6xi32>
}
func.func @copy64(%a: tensor<2x3xi64>) -> tensor<3x2xi64> {
  %e = tensor.empty() : tensor<3x2xi64>
  %r = linalg.transpose ins(%a : tensor<2x3xi64>) outs(%e : tensor<3x2xi64>) permutation = [1, 0]
  return %r : tensor<3x2xi64>
}
func.func @copy8(%a: tensor<4x3xi8>) -> tensor<3x4xi8> {
  %e = tensor.empty() : tensor<3x4xi8>
  %r = linalg.transpose ins(%a : tensor<4x3xi8>) outs(%e : tensor<3x4xi8>) permutation = [1, 0]
  return %r : tensor<3x4xi8>
}
