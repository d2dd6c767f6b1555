// ARCHES: x86_64 aarch64 riscv64 i386 riscv32
// integer division on i8/i16/i32; not arm: iree-compile does not link
// __aeabi_idiv/__aeabi_idivmod for armv7-a (no hardware divide)
// (tests/vmrt/conformance/gen_arith.py writes this file)
func.func @divsi_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 74, 67, 125, -67, 41, -112, 68]> : tensor<11xi8>
  %r = arith.divsi %a0, %a1 : tensor<11xi8>
  check.expect_eq_const(%r, dense<[-42, -18, 0, 0, 0, -1, 0, -1, 1, 0, 0]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @divui_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 74, 67, 125, -67, 41, -112, 68]> : tensor<11xi8>
  %r = arith.divui %a0, %a1 : tensor<11xi8>
  check.expect_eq_const(%r, dense<[42, 0, 127, 0, 0, 1, 1, 0, 1, 0, 0]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @remsi_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 74, 67, 125, -67, 41, -112, 68]> : tensor<11xi8>
  %r = arith.remsi %a0, %a1 : tensor<11xi8>
  check.expect_eq_const(%r, dense<[-2, 1, -1, 0, 1, -60, -31, 40, 20, 54, 33]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @remui_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 74, 67, 125, -67, 41, -112, 68]> : tensor<11xi8>
  %r = arith.remui %a0, %a1 : tensor<11xi8>
  check.expect_eq_const(%r, dense<[2, 127, 1, 0, 1, 62, 100, 107, 20, 54, 33]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @ceildivsi_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 74, 67, 125, -67, 41, -112, 68]> : tensor<11xi8>
  %r = arith.ceildivsi %a0, %a1 : tensor<11xi8>
  check.expect_eq_const(%r, dense<[-42, -18, 0, 0, 1, -1, 0, -1, 2, 0, 1]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @floordivsi_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 74, 67, 125, -67, 41, -112, 68]> : tensor<11xi8>
  %r = arith.floordivsi %a0, %a1 : tensor<11xi8>
  check.expect_eq_const(%r, dense<[-43, -19, -1, 0, 0, -2, -1, -2, 1, -1, 0]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @divsi_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 24234, -8775, 30457, 8780, -23973, 9892, 14951]> : tensor<11xi16>
  %r = arith.divsi %a0, %a1 : tensor<11xi16>
  check.expect_eq_const(%r, dense<[-10922, -4681, 0, 0, 0, 3, 0, 2, 0, -2, 0]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @divui_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 24234, -8775, 30457, 8780, -23973, 9892, 14951]> : tensor<11xi16>
  %r = arith.divui %a0, %a1 : tensor<11xi16>
  check.expect_eq_const(%r, dense<[10922, 0, 32767, 0, 0, 0, 1, 2, 0, 4, 4]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @remsi_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 24234, -8775, 30457, 8780, -23973, 9892, 14951]> : tensor<11xi16>
  %r = arith.remsi %a0, %a1 : tensor<11xi16>
  check.expect_eq_const(%r, dense<[-2, 0, -1, 0, 1, -6442, -25023, 4304, 9986, -3079, -5278]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @remui_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 24234, -8775, 30457, 8780, -23973, 9892, 14951]> : tensor<11xi16>
  %r = arith.remui %a0, %a1 : tensor<11xi16>
  check.expect_eq_const(%r, dense<[2, 32767, 1, 0, 1, -32767, 10056, 4304, 9986, 3105, 454]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @ceildivsi_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 24234, -8775, 30457, 8780, -23973, 9892, 14951]> : tensor<11xi16>
  %r = arith.ceildivsi %a0, %a1 : tensor<11xi16>
  check.expect_eq_const(%r, dense<[-10922, -4681, 0, 0, 1, 4, 0, 3, 0, -2, 0]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @floordivsi_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 24234, -8775, 30457, 8780, -23973, 9892, 14951]> : tensor<11xi16>
  %r = arith.floordivsi %a0, %a1 : tensor<11xi16>
  check.expect_eq_const(%r, dense<[-10923, -4681, -1, 0, 0, 3, -1, 2, -1, -3, -1]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @divsi_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1763367792, 991277352, 1608737000, -1015461400, -2051336137, -1429834531, 1737016502]> : tensor<11xi32>
  %r = arith.divsi %a0, %a1 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[-715827882, -306783378, 0, 0, 0, -2, 0, 0, 0, 0, 0]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @divui_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1763367792, 991277352, 1608737000, -1015461400, -2051336137, -1429834531, 1737016502]> : tensor<11xi32>
  %r = arith.divui %a0, %a1 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[715827882, 0, 2147483647, 0, 0, 2, 0, 0, 0, 1, 0]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @remsi_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1763367792, 991277352, 1608737000, -1015461400, -2051336137, -1429834531, 1737016502]> : tensor<11xi32>
  %r = arith.remsi %a0, %a1 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[-2, 1, -1, 0, 1, -164928943, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @remui_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1763367792, 991277352, 1608737000, -1015461400, -2051336137, -1429834531, 1737016502]> : tensor<11xi32>
  %r = arith.remui %a0, %a1 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[2, 2147483647, 1, 0, 1, 164928945, 594612991, 267418342, 1664199102, 954297157, 1608903492]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @ceildivsi_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1763367792, 991277352, 1608737000, -1015461400, -2051336137, -1429834531, 1737016502]> : tensor<11xi32>
  %r = arith.ceildivsi %a0, %a1 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[-715827882, -306783378, 0, 0, 0, -2, 1, 0, 0, 1, 1]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @floordivsi_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1763367792, 991277352, 1608737000, -1015461400, -2051336137, -1429834531, 1737016502]> : tensor<11xi32>
  %r = arith.floordivsi %a0, %a1 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[-715827883, -306783379, -1, 0, -1, -3, 0, -1, -1, 0, 0]> : tensor<11xi32>) : tensor<11xi32>
  return
}
