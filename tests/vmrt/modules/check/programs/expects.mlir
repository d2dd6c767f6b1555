// Test functions for the check module: every expect_* op, passing and
// failing; the failing ones go on after a failed expectation.
func.func @true_pass() {
  %one = arith.constant 1 : i32
  %zero = arith.constant 0 : i32
  %t = util.optimization_barrier %one : i32
  %f = util.optimization_barrier %zero : i32
  check.expect_true(%t) : i32
  check.expect_false(%f) : i32
  return
}
func.func @true_fail() {
  %zero = arith.constant 0 : i32
  %seven = arith.constant -7 : i32
  %f = util.optimization_barrier %zero : i32
  %s = util.optimization_barrier %seven : i32
  check.expect_true(%f) : i32
  check.expect_false(%s) : i32
  check.expect_true(%s) : i32
  return
}
func.func @all_true_pass() {
  %c = arith.constant dense<[1, 2, -3]> : tensor<3xi32>
  %a = util.optimization_barrier %c : tensor<3xi32>
  check.expect_all_true(%a) : tensor<3xi32>
  %d = arith.constant dense<[1, -128, 127]> : tensor<3xi8>
  %b = util.optimization_barrier %d : tensor<3xi8>
  check.expect_all_true(%b) : tensor<3xi8>
  return
}
func.func @all_true_fail_i32() {
  %c = arith.constant dense<[[1, 2], [0, 4]]> : tensor<2x2xi32>
  %a = util.optimization_barrier %c : tensor<2x2xi32>
  %s = arith.subi %a, %c : tensor<2x2xi32>
  check.expect_all_true(%a) : tensor<2x2xi32>
  check.expect_all_true(%s) : tensor<2x2xi32>
  return
}
func.func @all_true_fail_i8() {
  %c = arith.constant dense<[1, 65, 10, -1, 0, 9]> : tensor<6xi8>
  %a = util.optimization_barrier %c : tensor<6xi8>
  check.expect_all_true(%a) : tensor<6xi8>
  return
}
func.func @eq_pass() {
  %x = arith.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %y = arith.constant dense<[10, 20, 30, 40]> : tensor<4xi32>
  %a = util.optimization_barrier %x : tensor<4xi32>
  %b = util.optimization_barrier %y : tensor<4xi32>
  %s = arith.addi %a, %b : tensor<4xi32>
  check.expect_eq_const(%s, dense<[11, 22, 33, 44]> : tensor<4xi32>) : tensor<4xi32>
  %m = arith.muli %a, %a : tensor<4xi32>
  %e = arith.constant dense<[1, 4, 9, 16]> : tensor<4xi32>
  check.expect_eq(%m, %e) : tensor<4xi32>
  return
}
func.func @eq_fail_contents() {
  %x = arith.constant dense<[[1.5, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>
  %a = util.optimization_barrier %x : tensor<2x2xf32>
  %s = arith.addf %a, %a : tensor<2x2xf32>
  check.expect_eq_const(%s, dense<[[3.0, 4.0], [6.0, 8.5]]> : tensor<2x2xf32>) : tensor<2x2xf32>
  check.expect_eq_const(%a, dense<[[1.5, 2.0], [3.0, 4.0]]> : tensor<2x2xf32>) : tensor<2x2xf32>
  %i = arith.constant dense<5> : tensor<i8>
  %j = util.optimization_barrier %i : tensor<i8>
  check.expect_eq_const(%j, dense<6> : tensor<i8>) : tensor<i8>
  return
}
func.func @eq_fail_shape() {
  %c = arith.constant dense<[1, 2, 3]> : tensor<3xi32>
  %cc = util.optimization_barrier %c : tensor<3xi32>
  %a = tensor.cast %cc : tensor<3xi32> to tensor<?xi32>
  %n0 = arith.constant 2 : index
  %n = util.optimization_barrier %n0 : index
  %s = tensor.extract_slice %a[0] [%n] [1] : tensor<?xi32> to tensor<?xi32>
  check.expect_eq(%s, %a) : tensor<?xi32>
  %t = tensor.extract_slice %a[1] [%n] [1] : tensor<?xi32> to tensor<?xi32>
  check.expect_eq(%s, %t) : tensor<?xi32>
  return
}
func.func @almost_eq_pass() {
  %x = arith.constant dense<[1.0, 2.0, 100.0]> : tensor<3xf32>
  %a = util.optimization_barrier %x : tensor<3xf32>
  check.expect_almost_eq_const(%a, dense<[1.00005, 1.99995, 100.0]> : tensor<3xf32>) : tensor<3xf32>
  check.expect_almost_eq_const(%a, dense<[1.0, 2.0, 100.01]> : tensor<3xf32>, atol 0.0, rtol 1.001e-4) : tensor<3xf32>
  %s = arith.mulf %a, %a : tensor<3xf32>
  check.expect_almost_eq_const(%s, dense<[1.0, 4.0, 10000.5]> : tensor<3xf32>, atol 1.0, rtol 0.0) : tensor<3xf32>
  check.expect_almost_eq(%s, %s) : tensor<3xf32>
  return
}
func.func @almost_eq_fail() {
  %x = arith.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %a = util.optimization_barrier %x : tensor<3xf32>
  check.expect_almost_eq_const(%a, dense<[1.0, 2.0002, 3.5]> : tensor<3xf32>) : tensor<3xf32>
  check.expect_almost_eq_const(%a, dense<[1.0, 2.0, 3.01]> : tensor<3xf32>, atol 0.0, rtol 1.0e-3) : tensor<3xf32>
  check.expect_almost_eq_const(%a, dense<[0.99, 2.0, 3.0]> : tensor<3xf32>, atol 1.0e-3, rtol 1.0e-3) : tensor<3xf32>
  return
}
func.func @almost_eq_rtol_edge() {
  // |100 - 100.01| is 0.0100021 in f32; 1e-4 * 100.01 is 0.0100010: fails
  %x = arith.constant dense<[100.0]> : tensor<1xf32>
  %a = util.optimization_barrier %x : tensor<1xf32>
  check.expect_almost_eq_const(%a, dense<[100.01]> : tensor<1xf32>, atol 0.0, rtol 1.0e-4) : tensor<1xf32>
  check.expect_almost_eq_const(%a, dense<[100.01]> : tensor<1xf32>, atol 1.2e-6, rtol 1.0e-4) : tensor<1xf32>
  return
}
func.func @almost_eq_special() {
  %x = arith.constant dense<[0x7FC00000, 0x7F800000, 0xFF800000, 1.0]> : tensor<4xf32>
  %a = util.optimization_barrier %x : tensor<4xf32>
  check.expect_almost_eq_const(%a, dense<[0x7FC00000, 0x7F800000, 0xFF800000, 1.0]> : tensor<4xf32>) : tensor<4xf32>
  check.expect_almost_eq_const(%a, dense<[1.0, 0x7F800000, 0xFF800000, 1.0]> : tensor<4xf32>) : tensor<4xf32>
  check.expect_almost_eq_const(%a, dense<[0x7FC00000, 1.0, 0xFF800000, 1.0]> : tensor<4xf32>, atol 1.0e30, rtol 0.0) : tensor<4xf32>
  check.expect_almost_eq_const(%a, dense<[0x7FC00000, 0x7F800000, 0xFF800000, 0x7F800000]> : tensor<4xf32>, atol 1.0e30, rtol 1.0) : tensor<4xf32>
  return
}
func.func @almost_eq_f16() {
  %h = arith.constant dense<[1.0, 2.0]> : tensor<2xf16>
  %a = util.optimization_barrier %h : tensor<2xf16>
  check.expect_almost_eq_const(%a, dense<[1.0, 2.0]> : tensor<2xf16>) : tensor<2xf16>
  check.expect_almost_eq_const(%a, dense<[1.0, 2.001]> : tensor<2xf16>) : tensor<2xf16>
  return
}
func.func @error_stops() {
  %b = arith.constant dense<[true, false]> : tensor<2xi1>
  %a = util.optimization_barrier %b : tensor<2xi1>
  %zero = arith.constant 0 : i32
  %f = util.optimization_barrier %zero : i32
  check.expect_true(%f) : i32
  check.expect_all_true(%a) : tensor<2xi1>
  check.expect_false(%zero) : i32
  check.expect_true(%f) : i32
  return
}
