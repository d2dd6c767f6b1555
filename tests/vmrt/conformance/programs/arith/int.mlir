// integer arith on i8/i16/i32/i64; expected values computed in Python
// (tests/vmrt/conformance/gen_arith.py writes this file)
func.func @addi_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 74, 67, 125, -67, 41, -112, 68]> : tensor<11xi8>
  %r = arith.addi %a0, %a1 : tensor<11xi8>
  check.expect_eq_const(%r, dense<[-125, 120, 1, 5, 75, -60, 94, 40, 102, -58, 101]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @subi_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 74, 67, 125, -67, 41, -112, 68]> : tensor<11xi8>
  %r = arith.subi %a0, %a1 : tensor<11xi8>
  check.expect_eq_const(%r, dense<[125, -122, -3, -5, -73, 62, 100, -82, 20, -90, -35]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @muli_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 74, 67, 125, -67, 41, -112, 68]> : tensor<11xi8>
  %r = arith.muli %a0, %a1 : tensor<11xi8>
  check.expect_eq_const(%r, dense<[-128, -121, -2, 0, 74, -61, -35, -1, -59, 96, -60]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @minsi_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 74, 67, 125, -67, 41, -112, 68]> : tensor<11xi8>
  %r = arith.minsi %a0, %a1 : tensor<11xi8>
  check.expect_eq_const(%r, dense<[-128, -7, -1, 0, 1, -127, -31, -67, 41, -112, 33]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @maxsi_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 74, 67, 125, -67, 41, -112, 68]> : tensor<11xi8>
  %r = arith.maxsi %a0, %a1 : tensor<11xi8>
  check.expect_eq_const(%r, dense<[3, 127, 2, 5, 74, 67, 125, 107, 61, 54, 68]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @minui_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 74, 67, 125, -67, 41, -112, 68]> : tensor<11xi8>
  %r = arith.minui %a0, %a1 : tensor<11xi8>
  check.expect_eq_const(%r, dense<[3, 127, 2, 0, 1, 67, 125, 107, 41, 54, 33]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @maxui_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 74, 67, 125, -67, 41, -112, 68]> : tensor<11xi8>
  %r = arith.maxui %a0, %a1 : tensor<11xi8>
  check.expect_eq_const(%r, dense<[-128, -7, -1, 5, 74, -127, -31, -67, 61, -112, 68]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @andi_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 74, 67, 125, -67, 41, -112, 68]> : tensor<11xi8>
  %r = arith.andi %a0, %a1 : tensor<11xi8>
  check.expect_eq_const(%r, dense<[0, 121, 2, 0, 0, 1, 97, 41, 41, 16, 0]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @ori_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 74, 67, 125, -67, 41, -112, 68]> : tensor<11xi8>
  %r = arith.ori %a0, %a1 : tensor<11xi8>
  check.expect_eq_const(%r, dense<[-125, -1, -1, 5, 75, -61, -3, -1, 61, -74, 101]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @xori_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 74, 67, 125, -67, 41, -112, 68]> : tensor<11xi8>
  %r = arith.xori %a0, %a1 : tensor<11xi8>
  check.expect_eq_const(%r, dense<[-125, -122, -3, 5, 75, -62, -100, -42, 20, -90, 101]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @shli_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[0, 7, 1, 7, 5, 1, 5, 6, 7, 0, 5]> : tensor<11xi8>
  %r = arith.shli %a0, %a1 : tensor<11xi8>
  check.expect_eq_const(%r, dense<[-128, -128, -2, 0, 32, 2, 32, -64, -128, 54, 32]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @shrsi_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[0, 7, 1, 7, 5, 1, 5, 6, 7, 0, 5]> : tensor<11xi8>
  %r = arith.shrsi %a0, %a1 : tensor<11xi8>
  check.expect_eq_const(%r, dense<[-128, 0, -1, 0, 0, -64, -1, 1, 0, 54, 1]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @shrui_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[0, 7, 1, 7, 5, 1, 5, 6, 7, 0, 5]> : tensor<11xi8>
  %r = arith.shrui %a0, %a1 : tensor<11xi8>
  check.expect_eq_const(%r, dense<[-128, 0, 127, 0, 0, 64, 7, 1, 0, 54, 1]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @cmpi_slt_select_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 74, 67, 125, -67, 41, -112, 68]> : tensor<11xi8>
  %c = arith.cmpi slt, %a0, %a1 : tensor<11xi8>
  %two = arith.addi %a1, %a1 : tensor<11xi8>
  %r = arith.select %c, %a0, %two : tensor<11xi1>, tensor<11xi8>
  check.expect_eq_const(%r, dense<[-128, -14, -1, 0, 1, -127, -31, 122, 82, 32, 33]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @cmpi_uge_i8() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 74, 67, 125, -67, 41, -112, 68]> : tensor<11xi8>
  %c = arith.cmpi uge, %a0, %a1 : tensor<11xi8>
  %r = arith.extui %c : tensor<11xi1> to tensor<11xi32>
  check.expect_eq_const(%r, dense<[1, 0, 1, 0, 0, 1, 1, 0, 1, 0, 0]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @extsi_i8_i64() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %r = arith.extsi %a0 : tensor<11xi8> to tensor<11xi64>
  check.expect_eq_const(%r, dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi64>) : tensor<11xi64>
  return
}
func.func @extui_i8_i64() {
  %a0 = util.unfoldable_constant dense<[-128, 127, -1, 0, 1, -127, -31, 107, 61, 54, 33]> : tensor<11xi8>
  %r = arith.extui %a0 : tensor<11xi8> to tensor<11xi64>
  check.expect_eq_const(%r, dense<[128, 127, 255, 0, 1, 129, 225, 107, 61, 54, 33]> : tensor<11xi64>) : tensor<11xi64>
  return
}
func.func @trunci_i64_i8() {
  %a0 = util.unfoldable_constant dense<[-4165091782392746416, 968700547185884006, -1509215039396922530, 2623527367650344422, -1525961842777855391, -168170960878282074, 3951247153587131942, 321447405616134383, -3354659755481165918, -1678647113854249919, 1521215347397832851]> : tensor<11xi64>
  %r = arith.trunci %a0 : tensor<11xi64> to tensor<11xi8>
  check.expect_eq_const(%r, dense<[80, 102, 94, -26, 97, -90, 38, -17, -94, 65, -109]> : tensor<11xi8>) : tensor<11xi8>
  return
}
func.func @addi_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 24234, -8775, 30457, 8780, -23973, 9892, 14951]> : tensor<11xi16>
  %r = arith.addi %a0, %a1 : tensor<11xi16>
  check.expect_eq_const(%r, dense<[-32765, 32760, 1, 5, 24235, 23994, 5434, 30644, -13987, -12971, 9673]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @subi_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 24234, -8775, 30457, 8780, -23973, 9892, 14951]> : tensor<11xi16>
  %r = arith.subi %a0, %a1 : tensor<11xi16>
  check.expect_eq_const(%r, dense<[32765, -32762, -3, -5, -24233, -23992, 10056, 13084, -31577, -32755, -20229]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @muli_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 24234, -8775, 30457, 8780, -23973, 9892, 14951]> : tensor<11xi16>
  %r = arith.muli %a0, %a1 : tensor<11xi16>
  check.expect_eq_const(%r, dense<[-32768, -32761, -2, 0, 24234, 23993, -7367, 10976, 8630, 3940, -6034]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @minsi_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 24234, -8775, 30457, 8780, -23973, 9892, 14951]> : tensor<11xi16>
  %r = arith.minsi %a0, %a1 : tensor<11xi16>
  check.expect_eq_const(%r, dense<[-32768, -7, -1, 0, 1, -32767, -25023, 8780, -23973, -22863, -5278]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @maxsi_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 24234, -8775, 30457, 8780, -23973, 9892, 14951]> : tensor<11xi16>
  %r = arith.maxsi %a0, %a1 : tensor<11xi16>
  check.expect_eq_const(%r, dense<[3, 32767, 2, 5, 24234, -8775, 30457, 21864, 9986, 9892, 14951]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @minui_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 24234, -8775, 30457, 8780, -23973, 9892, 14951]> : tensor<11xi16>
  %r = arith.minui %a0, %a1 : tensor<11xi16>
  check.expect_eq_const(%r, dense<[3, 32767, 2, 0, 1, -32767, 30457, 8780, 9986, 9892, 14951]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @maxui_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 24234, -8775, 30457, 8780, -23973, 9892, 14951]> : tensor<11xi16>
  %r = arith.maxui %a0, %a1 : tensor<11xi16>
  check.expect_eq_const(%r, dense<[-32768, -7, -1, 5, 24234, -8775, -25023, 21864, -23973, -22863, -5278]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @andi_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 24234, -8775, 30457, 8780, -23973, 9892, 14951]> : tensor<11xi16>
  %r = arith.andi %a0, %a1 : tensor<11xi16>
  check.expect_eq_const(%r, dense<[0, 32761, 2, 0, 0, -32767, 5697, 72, 8706, 9888, 10850]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @ori_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 24234, -8775, 30457, 8780, -23973, 9892, 14951]> : tensor<11xi16>
  %r = arith.ori %a0, %a1 : tensor<11xi16>
  check.expect_eq_const(%r, dense<[-32765, -1, -1, 5, 24235, -8775, -263, 30572, -22693, -22859, -1177]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @xori_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 24234, -8775, 30457, 8780, -23973, 9892, 14951]> : tensor<11xi16>
  %r = arith.xori %a0, %a1 : tensor<11xi16>
  check.expect_eq_const(%r, dense<[-32765, -32762, -3, 5, 24235, 23992, -5960, 30500, -31399, -32747, -12027]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @shli_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[0, 15, 1, 9, 6, 13, 10, 2, 6, 15, 11]> : tensor<11xi16>
  %r = arith.shli %a0, %a1 : tensor<11xi16>
  check.expect_eq_const(%r, dense<[-32768, -32768, -2, 0, 64, 8192, 1024, 21920, -16256, -32768, 4096]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @shrsi_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[0, 15, 1, 9, 6, 13, 10, 2, 6, 15, 11]> : tensor<11xi16>
  %r = arith.shrsi %a0, %a1 : tensor<11xi16>
  check.expect_eq_const(%r, dense<[-32768, 0, -1, 0, 0, -4, -25, 5466, 156, -1, -3]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @shrui_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[0, 15, 1, 9, 6, 13, 10, 2, 6, 15, 11]> : tensor<11xi16>
  %r = arith.shrui %a0, %a1 : tensor<11xi16>
  check.expect_eq_const(%r, dense<[-32768, 0, 32767, 0, 0, 4, 39, 5466, 156, 1, 29]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @cmpi_slt_select_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 24234, -8775, 30457, 8780, -23973, 9892, 14951]> : tensor<11xi16>
  %c = arith.cmpi slt, %a0, %a1 : tensor<11xi16>
  %two = arith.addi %a1, %a1 : tensor<11xi16>
  %r = arith.select %c, %a0, %two : tensor<11xi1>, tensor<11xi16>
  check.expect_eq_const(%r, dense<[-32768, -14, -1, 0, 1, -32767, -25023, 17560, 17590, -22863, -5278]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @cmpi_uge_i16() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, 24234, -8775, 30457, 8780, -23973, 9892, 14951]> : tensor<11xi16>
  %c = arith.cmpi uge, %a0, %a1 : tensor<11xi16>
  %r = arith.extui %c : tensor<11xi1> to tensor<11xi32>
  check.expect_eq_const(%r, dense<[1, 0, 1, 0, 0, 0, 1, 1, 0, 1, 1]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @extsi_i16_i64() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %r = arith.extsi %a0 : tensor<11xi16> to tensor<11xi64>
  check.expect_eq_const(%r, dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi64>) : tensor<11xi64>
  return
}
func.func @extui_i16_i64() {
  %a0 = util.unfoldable_constant dense<[-32768, 32767, -1, 0, 1, -32767, -25023, 21864, 9986, -22863, -5278]> : tensor<11xi16>
  %r = arith.extui %a0 : tensor<11xi16> to tensor<11xi64>
  check.expect_eq_const(%r, dense<[32768, 32767, 65535, 0, 1, 32769, 40513, 21864, 9986, 42673, 60258]> : tensor<11xi64>) : tensor<11xi64>
  return
}
func.func @trunci_i64_i16() {
  %a0 = util.unfoldable_constant dense<[-645184728214920666, 2539474495434821557, 3163181177975462757, 3037765082967439223, 2152740592387515658, 2695640547533600863, 1451660851126849862, 1083801799583951946, -883753929911485728, 3719341885135145840, 2292755710669187294]> : tensor<11xi64>
  %r = arith.trunci %a0 : tensor<11xi64> to tensor<11xi16>
  check.expect_eq_const(%r, dense<[8742, -28747, -9371, -2185, 25866, 14431, -11962, 27722, 15072, 19312, 26846]> : tensor<11xi16>) : tensor<11xi16>
  return
}
func.func @addi_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1763367792, 991277352, 1608737000, -1015461400, -2051336137, -1429834531, 1737016502]> : tensor<11xi32>
  %r = arith.addi %a0, %a1 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[-2147483645, 2147483640, 1, 5, -1763367791, -1156206295, -2091617305, -748043058, -387137035, -1905371905, -949047302]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @subi_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1763367792, 991277352, 1608737000, -1015461400, -2051336137, -1429834531, 1737016502]> : tensor<11xi32>
  %r = arith.subi %a0, %a1 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[2147483645, -2147483642, -3, -5, 1763367793, 1156206297, -1014124009, 1282879742, -579432057, 954297157, -128113010]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @muli_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1763367792, 991277352, 1608737000, -1015461400, -2051336137, -1429834531, 1737016502]> : tensor<11xi32>
  %r = arith.muli %a0, %a1 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[-2147483648, -2147483641, -2, 0, -1763367792, 991277352, -21637352, 1303443056, -1419819054, -2016942758, -1917496744]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @minsi_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1763367792, 991277352, 1608737000, -1015461400, -2051336137, -1429834531, 1737016502]> : tensor<11xi32>
  %r = arith.minsi %a0, %a1 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[-2147483648, -7, -1, 0, -1763367792, -2147483647, 594612991, -1015461400, -2051336137, -1429834531, 1608903492]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @maxsi_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1763367792, 991277352, 1608737000, -1015461400, -2051336137, -1429834531, 1737016502]> : tensor<11xi32>
  %r = arith.maxsi %a0, %a1 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[3, 2147483647, 2, 5, 1, 991277352, 1608737000, 267418342, 1664199102, -475537374, 1737016502]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @minui_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1763367792, 991277352, 1608737000, -1015461400, -2051336137, -1429834531, 1737016502]> : tensor<11xi32>
  %r = arith.minui %a0, %a1 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[3, 2147483647, 2, 0, 1, 991277352, 594612991, 267418342, 1664199102, -1429834531, 1608903492]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @maxui_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1763367792, 991277352, 1608737000, -1015461400, -2051336137, -1429834531, 1737016502]> : tensor<11xi32>
  %r = arith.maxui %a0, %a1 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[-2147483648, -7, -1, 5, -1763367792, -2147483647, 1608737000, -1015461400, -2051336137, -475537374, 1737016502]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @andi_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1763367792, 991277352, 1608737000, -1015461400, -2051336137, -1429834531, 1737016502]> : tensor<11xi32>
  %r = arith.andi %a0, %a1 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[0, 2147483641, 2, 0, 0, 0, 56688872, 57690336, 19990582, -1568251904, 1199620100]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @ori_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1763367792, 991277352, 1608737000, -1015461400, -2051336137, -1429834531, 1737016502]> : tensor<11xi32>
  %r = arith.ori %a0, %a1 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[-2147483645, -1, -1, 5, -1763367791, -1156206295, 2146661119, -805733394, -407127617, -337120001, 2146299894]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @xori_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1763367792, 991277352, 1608737000, -1015461400, -2051336137, -1429834531, 1737016502]> : tensor<11xi32>
  %r = arith.xori %a0, %a1 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[-2147483645, -2147483642, -3, 5, -1763367791, -1156206295, 2089972247, -863423730, -427118199, 1231131903, 946679794]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @shli_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[0, 31, 1, 15, 8, 8, 11, 6, 25, 19, 14]> : tensor<11xi32>
  %r = arith.shli %a0, %a1 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[-2147483648, -2147483648, -2, 0, 256, 256, -2003306496, -65095296, 2080374784, 17825792, 2060517376]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @shrsi_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[0, 31, 1, 15, 8, 8, 11, 6, 25, 19, 14]> : tensor<11xi32>
  %r = arith.shrsi %a0, %a1 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[-2147483648, 0, -1, 0, 0, -8388608, 290338, 4178411, 49, -908, 98199]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @shrui_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[0, 31, 1, 15, 8, 8, 11, 6, 25, 19, 14]> : tensor<11xi32>
  %r = arith.shrui %a0, %a1 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[-2147483648, 0, 2147483647, 0, 0, 8388608, 290338, 4178411, 49, 7284, 98199]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @cmpi_slt_select_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1763367792, 991277352, 1608737000, -1015461400, -2051336137, -1429834531, 1737016502]> : tensor<11xi32>
  %c = arith.cmpi slt, %a0, %a1 : tensor<11xi32>
  %two = arith.addi %a1, %a1 : tensor<11xi32>
  %r = arith.select %c, %a0, %two : tensor<11xi1>, tensor<11xi32>
  check.expect_eq_const(%r, dense<[-2147483648, -14, -1, 0, 768231712, -2147483647, 594612991, -2030922800, 192295022, 1435298234, 1608903492]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @cmpi_uge_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1763367792, 991277352, 1608737000, -1015461400, -2051336137, -1429834531, 1737016502]> : tensor<11xi32>
  %c = arith.cmpi uge, %a0, %a1 : tensor<11xi32>
  %r = arith.extui %c : tensor<11xi1> to tensor<11xi32>
  check.expect_eq_const(%r, dense<[1, 0, 1, 0, 0, 1, 0, 0, 0, 1, 0]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @extsi_i32_i64() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %r = arith.extsi %a0 : tensor<11xi32> to tensor<11xi64>
  check.expect_eq_const(%r, dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi64>) : tensor<11xi64>
  return
}
func.func @extui_i32_i64() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 2147483647, -1, 0, 1, -2147483647, 594612991, 267418342, 1664199102, -475537374, 1608903492]> : tensor<11xi32>
  %r = arith.extui %a0 : tensor<11xi32> to tensor<11xi64>
  check.expect_eq_const(%r, dense<[2147483648, 2147483647, 4294967295, 0, 1, 2147483649, 594612991, 267418342, 1664199102, 3819429922, 1608903492]> : tensor<11xi64>) : tensor<11xi64>
  return
}
func.func @trunci_i64_i32() {
  %a0 = util.unfoldable_constant dense<[-2629174211749411604, 2431952143669177028, -47628021085879407, 2109821152122534429, 3836251070941505051, 3699069471533441553, -894559058458258221, -1885585239477129923, 722952822365718210, -3470139186443816191, 2983983112644347897]> : tensor<11xi64>
  %r = arith.trunci %a0 : tensor<11xi64> to tensor<11xi32>
  check.expect_eq_const(%r, dense<[984300, -232346940, 835863441, -673285603, 279848475, -96591343, -1577265965, 121564477, -159807806, -1495633151, -991016967]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @addi_i64() {
  %a0 = util.unfoldable_constant dense<[-9223372036854775808, 9223372036854775807, -1, 0, 1, -9223372036854775807, 7795356259945166055, 6169022685882720024, -2676279817087891060, 3815872662477236429, -1181685403477666671]> : tensor<11xi64>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1017727932072713531, 2081512241093559279, -8711201177538905070, 2489335135603513676, -4818878864717922683, 3495172950880494187, 7641945409120693826]> : tensor<11xi64>
  %r = arith.addi %a0, %a1 : tensor<11xi64>
  check.expect_eq_const(%r, dense<[-9223372036854775805, 9223372036854775800, 1, 5, -1017727932072713530, -7141859795761216528, -915844917593739015, 8658357821486233700, -7495158681805813743, 7311045613357730616, 6460260005643027155]> : tensor<11xi64>) : tensor<11xi64>
  return
}
func.func @subi_i64() {
  %a0 = util.unfoldable_constant dense<[-9223372036854775808, 9223372036854775807, -1, 0, 1, -9223372036854775807, 7795356259945166055, 6169022685882720024, -2676279817087891060, 3815872662477236429, -1181685403477666671]> : tensor<11xi64>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1017727932072713531, 2081512241093559279, -8711201177538905070, 2489335135603513676, -4818878864717922683, 3495172950880494187, 7641945409120693826]> : tensor<11xi64>
  %r = arith.subi %a0, %a1 : tensor<11xi64>
  check.expect_eq_const(%r, dense<[9223372036854775805, -9223372036854775802, -3, -5, 1017727932072713532, 7141859795761216530, -1940186636225480491, 3679687550279206348, 2142599047630031623, 320699711596742242, -8823630812598360497]> : tensor<11xi64>) : tensor<11xi64>
  return
}
func.func @muli_i64() {
  %a0 = util.unfoldable_constant dense<[-9223372036854775808, 9223372036854775807, -1, 0, 1, -9223372036854775807, 7795356259945166055, 6169022685882720024, -2676279817087891060, 3815872662477236429, -1181685403477666671]> : tensor<11xi64>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1017727932072713531, 2081512241093559279, -8711201177538905070, 2489335135603513676, -4818878864717922683, 3495172950880494187, 7641945409120693826]> : tensor<11xi64>
  %r = arith.muli %a0, %a1 : tensor<11xi64>
  check.expect_eq_const(%r, dense<[-9223372036854775808, -9223372036854775801, -2, 0, -1017727932072713531, -7141859795761216529, 1560912251569953854, 6827101394582803232, -866431129013740100, 4100738978756954031, -8202741011561440414]> : tensor<11xi64>) : tensor<11xi64>
  return
}
func.func @minsi_i64() {
  %a0 = util.unfoldable_constant dense<[-9223372036854775808, 9223372036854775807, -1, 0, 1, -9223372036854775807, 7795356259945166055, 6169022685882720024, -2676279817087891060, 3815872662477236429, -1181685403477666671]> : tensor<11xi64>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1017727932072713531, 2081512241093559279, -8711201177538905070, 2489335135603513676, -4818878864717922683, 3495172950880494187, 7641945409120693826]> : tensor<11xi64>
  %r = arith.minsi %a0, %a1 : tensor<11xi64>
  check.expect_eq_const(%r, dense<[-9223372036854775808, -7, -1, 0, -1017727932072713531, -9223372036854775807, -8711201177538905070, 2489335135603513676, -4818878864717922683, 3495172950880494187, -1181685403477666671]> : tensor<11xi64>) : tensor<11xi64>
  return
}
func.func @maxsi_i64() {
  %a0 = util.unfoldable_constant dense<[-9223372036854775808, 9223372036854775807, -1, 0, 1, -9223372036854775807, 7795356259945166055, 6169022685882720024, -2676279817087891060, 3815872662477236429, -1181685403477666671]> : tensor<11xi64>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1017727932072713531, 2081512241093559279, -8711201177538905070, 2489335135603513676, -4818878864717922683, 3495172950880494187, 7641945409120693826]> : tensor<11xi64>
  %r = arith.maxsi %a0, %a1 : tensor<11xi64>
  check.expect_eq_const(%r, dense<[3, 9223372036854775807, 2, 5, 1, 2081512241093559279, 7795356259945166055, 6169022685882720024, -2676279817087891060, 3815872662477236429, 7641945409120693826]> : tensor<11xi64>) : tensor<11xi64>
  return
}
func.func @minui_i64() {
  %a0 = util.unfoldable_constant dense<[-9223372036854775808, 9223372036854775807, -1, 0, 1, -9223372036854775807, 7795356259945166055, 6169022685882720024, -2676279817087891060, 3815872662477236429, -1181685403477666671]> : tensor<11xi64>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1017727932072713531, 2081512241093559279, -8711201177538905070, 2489335135603513676, -4818878864717922683, 3495172950880494187, 7641945409120693826]> : tensor<11xi64>
  %r = arith.minui %a0, %a1 : tensor<11xi64>
  check.expect_eq_const(%r, dense<[3, 9223372036854775807, 2, 0, 1, 2081512241093559279, 7795356259945166055, 2489335135603513676, -4818878864717922683, 3495172950880494187, 7641945409120693826]> : tensor<11xi64>) : tensor<11xi64>
  return
}
func.func @maxui_i64() {
  %a0 = util.unfoldable_constant dense<[-9223372036854775808, 9223372036854775807, -1, 0, 1, -9223372036854775807, 7795356259945166055, 6169022685882720024, -2676279817087891060, 3815872662477236429, -1181685403477666671]> : tensor<11xi64>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1017727932072713531, 2081512241093559279, -8711201177538905070, 2489335135603513676, -4818878864717922683, 3495172950880494187, 7641945409120693826]> : tensor<11xi64>
  %r = arith.maxui %a0, %a1 : tensor<11xi64>
  check.expect_eq_const(%r, dense<[-9223372036854775808, -7, -1, 5, -1017727932072713531, -9223372036854775807, -8711201177538905070, 6169022685882720024, -2676279817087891060, 3815872662477236429, -1181685403477666671]> : tensor<11xi64>) : tensor<11xi64>
  return
}
func.func @andi_i64() {
  %a0 = util.unfoldable_constant dense<[-9223372036854775808, 9223372036854775807, -1, 0, 1, -9223372036854775807, 7795356259945166055, 6169022685882720024, -2676279817087891060, 3815872662477236429, -1181685403477666671]> : tensor<11xi64>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1017727932072713531, 2081512241093559279, -8711201177538905070, 2489335135603513676, -4818878864717922683, 3495172950880494187, 7641945409120693826]> : tensor<11xi64>
  %r = arith.andi %a0, %a1 : tensor<11xi64>
  check.expect_eq_const(%r, dense<[0, 9223372036854775801, 2, 0, 1, 1, 291194824881878018, 38497272027781384, -7486142410489493372, 3494812277700304969, 7640783654449316864]> : tensor<11xi64>) : tensor<11xi64>
  return
}
func.func @ori_i64() {
  %a0 = util.unfoldable_constant dense<[-9223372036854775808, 9223372036854775807, -1, 0, 1, -9223372036854775807, 7795356259945166055, 6169022685882720024, -2676279817087891060, 3815872662477236429, -1181685403477666671]> : tensor<11xi64>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1017727932072713531, 2081512241093559279, -8711201177538905070, 2489335135603513676, -4818878864717922683, 3495172950880494187, 7641945409120693826]> : tensor<11xi64>
  %r = arith.ori %a0, %a1 : tensor<11xi64>
  check.expect_eq_const(%r, dense<[-9223372036854775805, -1, -1, 5, -1017727932072713531, -7141859795761216529, -1207039742475617033, 8619860549458452316, -9016271316320371, 3816233335657425647, -1180523648806289709]> : tensor<11xi64>) : tensor<11xi64>
  return
}
func.func @xori_i64() {
  %a0 = util.unfoldable_constant dense<[-9223372036854775808, 9223372036854775807, -1, 0, 1, -9223372036854775807, 7795356259945166055, 6169022685882720024, -2676279817087891060, 3815872662477236429, -1181685403477666671]> : tensor<11xi64>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1017727932072713531, 2081512241093559279, -8711201177538905070, 2489335135603513676, -4818878864717922683, 3495172950880494187, 7641945409120693826]> : tensor<11xi64>
  %r = arith.xori %a0, %a1 : tensor<11xi64>
  check.expect_eq_const(%r, dense<[-9223372036854775805, -9223372036854775802, -3, 5, -1017727932072713532, -7141859795761216530, -1498234567357495051, 8581363277430670932, 7477126139173173001, 321421057957120678, -8821307303255606573]> : tensor<11xi64>) : tensor<11xi64>
  return
}
func.func @shli_i64() {
  %a0 = util.unfoldable_constant dense<[-9223372036854775808, 9223372036854775807, -1, 0, 1, -9223372036854775807, 7795356259945166055, 6169022685882720024, -2676279817087891060, 3815872662477236429, -1181685403477666671]> : tensor<11xi64>
  %a1 = util.unfoldable_constant dense<[0, 63, 1, 54, 55, 0, 42, 29, 56, 16, 28]> : tensor<11xi64>
  %r = arith.shli %a0, %a1 : tensor<11xi64>
  check.expect_eq_const(%r, dense<[-9223372036854775808, -9223372036854775808, -2, 0, 36028797018963968, -9223372036854775807, -7434427036044623872, 6155211103270862848, -8358680908399640576, -5478599172224647168, 3357206237098803200]> : tensor<11xi64>) : tensor<11xi64>
  return
}
func.func @shrsi_i64() {
  %a0 = util.unfoldable_constant dense<[-9223372036854775808, 9223372036854775807, -1, 0, 1, -9223372036854775807, 7795356259945166055, 6169022685882720024, -2676279817087891060, 3815872662477236429, -1181685403477666671]> : tensor<11xi64>
  %a1 = util.unfoldable_constant dense<[0, 63, 1, 54, 55, 0, 42, 29, 56, 16, 28]> : tensor<11xi64>
  %r = arith.shrsi %a0, %a1 : tensor<11xi64>
  check.expect_eq_const(%r, dense<[-9223372036854775808, 0, -1, 0, 0, -9223372036854775807, 1772458, 11490700181, -38, 58225596046100, -4402121170]> : tensor<11xi64>) : tensor<11xi64>
  return
}
func.func @shrui_i64() {
  %a0 = util.unfoldable_constant dense<[-9223372036854775808, 9223372036854775807, -1, 0, 1, -9223372036854775807, 7795356259945166055, 6169022685882720024, -2676279817087891060, 3815872662477236429, -1181685403477666671]> : tensor<11xi64>
  %a1 = util.unfoldable_constant dense<[0, 63, 1, 54, 55, 0, 42, 29, 56, 16, 28]> : tensor<11xi64>
  %r = arith.shrui %a0, %a1 : tensor<11xi64>
  check.expect_eq_const(%r, dense<[-9223372036854775808, 0, 9223372036854775807, 0, 0, -9223372036854775807, 1772458, 11490700181, 218, 58225596046100, 64317355566]> : tensor<11xi64>) : tensor<11xi64>
  return
}
func.func @cmpi_slt_select_i64() {
  %a0 = util.unfoldable_constant dense<[-9223372036854775808, 9223372036854775807, -1, 0, 1, -9223372036854775807, 7795356259945166055, 6169022685882720024, -2676279817087891060, 3815872662477236429, -1181685403477666671]> : tensor<11xi64>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1017727932072713531, 2081512241093559279, -8711201177538905070, 2489335135603513676, -4818878864717922683, 3495172950880494187, 7641945409120693826]> : tensor<11xi64>
  %c = arith.cmpi slt, %a0, %a1 : tensor<11xi64>
  %two = arith.addi %a1, %a1 : tensor<11xi64>
  %r = arith.select %c, %a0, %two : tensor<11xi1>, tensor<11xi64>
  check.expect_eq_const(%r, dense<[-9223372036854775808, -14, -1, 0, -2035455864145427062, -9223372036854775807, 1024341718631741476, 4978670271207027352, 8808986344273706250, 6990345901760988374, -1181685403477666671]> : tensor<11xi64>) : tensor<11xi64>
  return
}
func.func @cmpi_uge_i64() {
  %a0 = util.unfoldable_constant dense<[-9223372036854775808, 9223372036854775807, -1, 0, 1, -9223372036854775807, 7795356259945166055, 6169022685882720024, -2676279817087891060, 3815872662477236429, -1181685403477666671]> : tensor<11xi64>
  %a1 = util.unfoldable_constant dense<[3, -7, 2, 5, -1017727932072713531, 2081512241093559279, -8711201177538905070, 2489335135603513676, -4818878864717922683, 3495172950880494187, 7641945409120693826]> : tensor<11xi64>
  %c = arith.cmpi uge, %a0, %a1 : tensor<11xi64>
  %r = arith.extui %c : tensor<11xi1> to tensor<11xi32>
  check.expect_eq_const(%r, dense<[1, 0, 1, 0, 0, 1, 0, 1, 1, 1, 1]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @absi_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, -1720348443, -1016698890, 1723650170, -72372160, 1038876665, -1979887266, 11728090, -72558062, -1159277051, 495939185]> : tensor<11xi32>
  %r = math.absi %a0 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[-2147483648, 1720348443, 1016698890, 1723650170, 72372160, 1038876665, 1979887266, 11728090, 72558062, 1159277051, 495939185]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @ctpop_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, -1720348443, -1016698890, 1723650170, -72372160, 1038876665, -1979887266, 11728090, -72558062, -1159277051, 495939185]> : tensor<11xi32>
  %r = math.ctpop %a0 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[1, 16, 19, 17, 17, 25, 18, 14, 18, 17, 18]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @ctlz_i32() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 0, -1016698890, 1723650170, -72372160, 1038876665, -1979887266, 11728090, -72558062, -1159277051, 495939185]> : tensor<11xi32>
  %r = math.ctlz %a0 : tensor<11xi32>
  check.expect_eq_const(%r, dense<[0, 32, 0, 1, 0, 2, 0, 8, 0, 0, 3]> : tensor<11xi32>) : tensor<11xi32>
  return
}
func.func @cttz_i64() {
  %a0 = util.unfoldable_constant dense<[-2147483648, 0, -1016698890, 1723650170, -72372160, 1038876665, -1979887266, 11728090, -72558062, -1159277051, 495939185]> : tensor<11xi64>
  %r = math.cttz %a0 : tensor<11xi64>
  check.expect_eq_const(%r, dense<[31, 64, 1, 1, 6, 0, 1, 1, 1, 0, 0]> : tensor<11xi64>) : tensor<11xi64>
  return
}
