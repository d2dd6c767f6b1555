// iree_linalg_ext: sort, scatter, gather, top-k, scan, multi-result
// reductions.  Expected values computed with numpy.  Past vmrt failures were
// in aliased bindings (one buffer bound twice) and in-place writes into
// imported constants, so several tests sort/scatter into constants.
// Keys are "x + unfoldable 0", not an unfoldable constant itself: IREE
// 3.13 sorts/scatters an unfoldable constant in place, in the read-only
// rodata, and its own runtime crashes (SIGSEGV) on such a program when the
// module is mmapped read-only, as the harness loads it (from a writable copy
// IREE and vmrt both run it and change the constant for later calls).

// ---- sort ----
func.func @sort_1d_i32() {
  %kc = util.unfoldable_constant dense<[-4, 7, 2, 5, 9, -1, 0, 3, -5, 4, -3, 8, 6, 1, -2, 10]> : tensor<16xi32>
  %kz = util.unfoldable_constant dense<0> : tensor<16xi32>
  %k = arith.addi %kc, %kz : tensor<16xi32>
  %r = iree_linalg_ext.sort dimension(0) outs(%k : tensor<16xi32>) {
  ^bb0(%a: i32, %b: i32):
    %c = arith.cmpi slt, %a, %b : i32
    iree_linalg_ext.yield %c : i1
  } -> tensor<16xi32>
  check.expect_eq_const(%r, dense<[-5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]> : tensor<16xi32>) : tensor<16xi32>
  return
}

// a constant (imported rodata) sorted: the compiler must not sort in place
func.func @sort_1d_constant_twice() {
  %k = arith.constant dense<[3, 1, 2, 0]> : tensor<4xi32>
  %r = iree_linalg_ext.sort dimension(0) outs(%k : tensor<4xi32>) {
  ^bb0(%a: i32, %b: i32):
    %c = arith.cmpi slt, %a, %b : i32
    iree_linalg_ext.yield %c : i1
  } -> tensor<4xi32>
  %d = iree_linalg_ext.sort dimension(0) outs(%k : tensor<4xi32>) {
  ^bb0(%a: i32, %b: i32):
    %c = arith.cmpi sgt, %a, %b : i32
    iree_linalg_ext.yield %c : i1
  } -> tensor<4xi32>
  check.expect_eq_const(%r, dense<[0, 1, 2, 3]> : tensor<4xi32>) : tensor<4xi32>
  check.expect_eq_const(%d, dense<[3, 2, 1, 0]> : tensor<4xi32>) : tensor<4xi32>
  check.expect_eq_const(%k, dense<[3, 1, 2, 0]> : tensor<4xi32>) : tensor<4xi32>
  return
}

// f32 keys descending, an i32 "values" operand carried along (argsort)
func.func @sort_1d_f32_with_values() {
  %kc = util.unfoldable_constant dense<[0.294, 0.028, 0.547, -0.736, -0.163, -0.482, 0.599, 0.040]> : tensor<8xf32>
  %kz = util.unfoldable_constant dense<0.0> : tensor<8xf32>
  %k = arith.addf %kc, %kz : tensor<8xf32>
  %vc = util.unfoldable_constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi32>
  %vz = util.unfoldable_constant dense<0> : tensor<8xi32>
  %v = arith.addi %vc, %vz : tensor<8xi32>
  %r:2 = iree_linalg_ext.sort dimension(0) outs(%k, %v : tensor<8xf32>, tensor<8xi32>) {
  ^bb0(%a: f32, %b: f32, %ia: i32, %ib: i32):
    %c = arith.cmpf ogt, %a, %b : f32
    iree_linalg_ext.yield %c : i1
  } -> tensor<8xf32>, tensor<8xi32>
  check.expect_almost_eq_const(%r#0, dense<[0.599, 0.547, 0.294, 0.040, 0.028, -0.163, -0.482, -0.736]> : tensor<8xf32>) : tensor<8xf32>
  check.expect_eq_const(%r#1, dense<[6, 2, 0, 7, 1, 4, 5, 3]> : tensor<8xi32>) : tensor<8xi32>
  return
}

// constant keys and constant values sorted together (both in rodata)
func.func @sort_1d_constant_with_values() {
  %k = arith.constant dense<[0.5, -1.0, 2.0, 0.25]> : tensor<4xf32>
  %v = arith.constant dense<[10, 11, 12, 13]> : tensor<4xi32>
  %r:2 = iree_linalg_ext.sort dimension(0) outs(%k, %v : tensor<4xf32>, tensor<4xi32>) {
  ^bb0(%a: f32, %b: f32, %ia: i32, %ib: i32):
    %c = arith.cmpf olt, %a, %b : f32
    iree_linalg_ext.yield %c : i1
  } -> tensor<4xf32>, tensor<4xi32>
  check.expect_almost_eq_const(%r#0, dense<[-1.0, 0.25, 0.5, 2.0]> : tensor<4xf32>) : tensor<4xf32>
  check.expect_eq_const(%r#1, dense<[11, 13, 10, 12]> : tensor<4xi32>) : tensor<4xi32>
  check.expect_eq_const(%v, dense<[10, 11, 12, 13]> : tensor<4xi32>) : tensor<4xi32>
  return
}

func.func @sort_2d_i32_dim0() {
  %kc = util.unfoldable_constant dense<[[6, 0, 9, 7], [1, 3, 11, 8], [4, 10, 5, 2]]> : tensor<3x4xi32>
  %kz = util.unfoldable_constant dense<0> : tensor<3x4xi32>
  %k = arith.addi %kc, %kz : tensor<3x4xi32>
  %r = iree_linalg_ext.sort dimension(0) outs(%k : tensor<3x4xi32>) {
  ^bb0(%a: i32, %b: i32):
    %c = arith.cmpi slt, %a, %b : i32
    iree_linalg_ext.yield %c : i1
  } -> tensor<3x4xi32>
  check.expect_eq_const(%r, dense<[[1, 0, 5, 2], [4, 3, 9, 7], [6, 10, 11, 8]]> : tensor<3x4xi32>) : tensor<3x4xi32>
  return
}

func.func @sort_2d_i32_dim1() {
  %kc = util.unfoldable_constant dense<[[6, 0, 9, 7], [1, 3, 11, 8], [4, 10, 5, 2]]> : tensor<3x4xi32>
  %kz = util.unfoldable_constant dense<0> : tensor<3x4xi32>
  %k = arith.addi %kc, %kz : tensor<3x4xi32>
  %r = iree_linalg_ext.sort dimension(1) outs(%k : tensor<3x4xi32>) {
  ^bb0(%a: i32, %b: i32):
    %c = arith.cmpi slt, %a, %b : i32
    iree_linalg_ext.yield %c : i1
  } -> tensor<3x4xi32>
  check.expect_eq_const(%r, dense<[[0, 6, 7, 9], [1, 3, 8, 11], [2, 4, 5, 10]]> : tensor<3x4xi32>) : tensor<3x4xi32>
  return
}

func.func @sort_2d_f32_dim0() {
  %kc = util.unfoldable_constant dense<[[1.01, -2.71, -1.89, -0.17], [-0.42, 0.21, 0.22, 2.12], [-1.11, -0.38, 2.04, 0.65]]> : tensor<3x4xf32>
  %kz = util.unfoldable_constant dense<0.0> : tensor<3x4xf32>
  %k = arith.addf %kc, %kz : tensor<3x4xf32>
  %r = iree_linalg_ext.sort dimension(0) outs(%k : tensor<3x4xf32>) {
  ^bb0(%a: f32, %b: f32):
    %c = arith.cmpf olt, %a, %b : f32
    iree_linalg_ext.yield %c : i1
  } -> tensor<3x4xf32>
  check.expect_almost_eq_const(%r, dense<[[-1.11, -2.71, -1.89, -0.17], [-0.42, -0.38, 0.22, 0.65], [1.01, 0.21, 2.04, 2.12]]> : tensor<3x4xf32>) : tensor<3x4xf32>
  return
}

func.func @sort_2d_f32_dim1_with_values() {
  %kc = util.unfoldable_constant dense<[[1.01, -2.71, -1.89, -0.17], [-0.42, 0.21, 0.22, 2.12], [-1.11, -0.38, 2.04, 0.65]]> : tensor<3x4xf32>
  %kz = util.unfoldable_constant dense<0.0> : tensor<3x4xf32>
  %k = arith.addf %kc, %kz : tensor<3x4xf32>
  %vc = util.unfoldable_constant dense<[[0, 1, 2, 3], [0, 1, 2, 3], [0, 1, 2, 3]]> : tensor<3x4xi32>
  %vz = util.unfoldable_constant dense<0> : tensor<3x4xi32>
  %v = arith.addi %vc, %vz : tensor<3x4xi32>
  %r:2 = iree_linalg_ext.sort dimension(1) outs(%k, %v : tensor<3x4xf32>, tensor<3x4xi32>) {
  ^bb0(%a: f32, %b: f32, %ia: i32, %ib: i32):
    %c = arith.cmpf olt, %a, %b : f32
    iree_linalg_ext.yield %c : i1
  } -> tensor<3x4xf32>, tensor<3x4xi32>
  check.expect_almost_eq_const(%r#0, dense<[[-2.71, -1.89, -0.17, 1.01], [-0.42, 0.21, 0.22, 2.12], [-1.11, -0.38, 0.65, 2.04]]> : tensor<3x4xf32>) : tensor<3x4xf32>
  check.expect_eq_const(%r#1, dense<[[1, 2, 3, 0], [0, 1, 2, 3], [0, 1, 3, 2]]> : tensor<3x4xi32>) : tensor<3x4xi32>
  return
}

// ---- scatter ----
func.func @scatter_unique_replace() {
  %orig = util.unfoldable_constant dense<0> : tensor<8xi32>
  %upd = util.unfoldable_constant dense<[10, 20, 30]> : tensor<3xi32>
  %idx = util.unfoldable_constant dense<[[1], [5], [3]]> : tensor<3x1xi32>
  %r = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%upd, %idx : tensor<3xi32>, tensor<3x1xi32>) outs(%orig : tensor<8xi32>) {
  ^bb0(%u: i32, %o: i32):
    iree_linalg_ext.yield %u : i32
  } -> tensor<8xi32>
  check.expect_eq_const(%r, dense<[0, 10, 0, 30, 0, 20, 0, 0]> : tensor<8xi32>) : tensor<8xi32>
  return
}

func.func @scatter_nonunique_add() {
  %orig = util.unfoldable_constant dense<[1.0, 1.0, 1.0, 1.0]> : tensor<4xf32>
  %upd = util.unfoldable_constant dense<[1.0, 2.0, 3.0, 0.5]> : tensor<4xf32>
  %idx = util.unfoldable_constant dense<[[1], [1], [2], [1]]> : tensor<4x1xi32>
  %r = iree_linalg_ext.scatter dimension_map = [0] unique_indices(false)
      ins(%upd, %idx : tensor<4xf32>, tensor<4x1xi32>) outs(%orig : tensor<4xf32>) {
  ^bb0(%u: f32, %o: f32):
    %s = arith.addf %u, %o : f32
    iree_linalg_ext.yield %s : f32
  } -> tensor<4xf32>
  check.expect_almost_eq_const(%r, dense<[1.0, 4.5, 4.0, 1.0]> : tensor<4xf32>) : tensor<4xf32>
  return
}

// rows scattered with a mask-like combiner: a zero update keeps the original
func.func @scatter_rows_masked() {
  %origc = util.unfoldable_constant dense<[[1, 2, 3], [4, 5, 6], [7, 8, 9], [10, 11, 12]]> : tensor<4x3xi32>
  %origz = util.unfoldable_constant dense<0> : tensor<4x3xi32>
  %orig = arith.addi %origc, %origz : tensor<4x3xi32>
  %upd = util.unfoldable_constant dense<[[0, -1, 0], [-2, 0, -3]]> : tensor<2x3xi32>
  %idx = util.unfoldable_constant dense<[[2], [0]]> : tensor<2x1xi32>
  %r = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%upd, %idx : tensor<2x3xi32>, tensor<2x1xi32>) outs(%orig : tensor<4x3xi32>) {
  ^bb0(%u: i32, %o: i32):
    %z = arith.constant 0 : i32
    %m = arith.cmpi ne, %u, %z : i32
    %s = arith.select %m, %u, %o : i32
    iree_linalg_ext.yield %s : i32
  } -> tensor<4x3xi32>
  check.expect_eq_const(%r, dense<[[-2, 2, -3], [4, 5, 6], [7, -1, 9], [10, 11, 12]]> : tensor<4x3xi32>) : tensor<4x3xi32>
  return
}

// scatter into a constant (imported rodata), then read the constant again
func.func @scatter_into_constant() {
  %orig = arith.constant dense<[5, 5, 5, 5, 5]> : tensor<5xi32>
  %upd = util.unfoldable_constant dense<[7, 9]> : tensor<2xi32>
  %idx = util.unfoldable_constant dense<[[4], [0]]> : tensor<2x1xi32>
  %r = iree_linalg_ext.scatter dimension_map = [0] unique_indices(true)
      ins(%upd, %idx : tensor<2xi32>, tensor<2x1xi32>) outs(%orig : tensor<5xi32>) {
  ^bb0(%u: i32, %o: i32):
    iree_linalg_ext.yield %u : i32
  } -> tensor<5xi32>
  check.expect_eq_const(%r, dense<[9, 5, 5, 5, 7]> : tensor<5xi32>) : tensor<5xi32>
  check.expect_eq_const(%orig, dense<[5, 5, 5, 5, 5]> : tensor<5xi32>) : tensor<5xi32>
  return
}

// 2-D indices into a 2-D tensor, point updates
func.func @scatter_2d_points() {
  %orig = util.unfoldable_constant dense<0.0> : tensor<3x3xf32>
  %upd = util.unfoldable_constant dense<[1.5, -2.5, 3.5]> : tensor<3xf32>
  %idx = util.unfoldable_constant dense<[[0, 2], [2, 1], [1, 1]]> : tensor<3x2xi32>
  %r = iree_linalg_ext.scatter dimension_map = [0, 1] unique_indices(true)
      ins(%upd, %idx : tensor<3xf32>, tensor<3x2xi32>) outs(%orig : tensor<3x3xf32>) {
  ^bb0(%u: f32, %o: f32):
    iree_linalg_ext.yield %u : f32
  } -> tensor<3x3xf32>
  check.expect_almost_eq_const(%r, dense<[[0.0, 0.0, 1.5], [0.0, 3.5, 0.0], [0.0, -2.5, 0.0]]> : tensor<3x3xf32>) : tensor<3x3xf32>
  return
}

// ---- gather ----
func.func @gather_rows() {
  %src = util.unfoldable_constant dense<[[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]> : tensor<3x2xf32>
  %idx = util.unfoldable_constant dense<[[2], [0], [2], [1]]> : tensor<4x1xi32>
  %e = tensor.empty() : tensor<4x2xf32>
  %r = iree_linalg_ext.gather dimension_map = [0] ins(%src, %idx : tensor<3x2xf32>, tensor<4x1xi32>) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
  check.expect_almost_eq_const(%r, dense<[[5.0, 6.0], [1.0, 2.0], [5.0, 6.0], [3.0, 4.0]]> : tensor<4x2xf32>) : tensor<4x2xf32>
  return
}

// gather as linalg.generic + tensor.extract (what frontends usually produce)
func.func @gather_extract_i32() {
  %src = util.unfoldable_constant dense<[100, 101, 102, 103, 104, 105, 106]> : tensor<7xi32>
  %idx = util.unfoldable_constant dense<[6, 0, 3, 3, 1]> : tensor<5xi32>
  %e = tensor.empty() : tensor<5xi32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]} ins(%idx : tensor<5xi32>) outs(%e : tensor<5xi32>) {
  ^bb0(%i: i32, %o: i32):
    %ii = arith.index_cast %i : i32 to index
    %v = tensor.extract %src[%ii] : tensor<7xi32>
    linalg.yield %v : i32
  } -> tensor<5xi32>
  check.expect_eq_const(%r, dense<[106, 100, 103, 103, 101]> : tensor<5xi32>) : tensor<5xi32>
  return
}

// ---- top-k ----
func.func @topk_1d_f32() {
  %v = util.unfoldable_constant dense<[0.294, 0.028, 0.547, -0.736, -0.163, -0.482, 0.599, 0.040]> : tensor<8xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %z = arith.constant 0 : i32
  %e0 = tensor.empty() : tensor<3xf32>
  %e1 = tensor.empty() : tensor<3xi32>
  %o0 = linalg.fill ins(%ninf : f32) outs(%e0 : tensor<3xf32>) -> tensor<3xf32>
  %o1 = linalg.fill ins(%z : i32) outs(%e1 : tensor<3xi32>) -> tensor<3xi32>
  %r:2 = iree_linalg_ext.topk dimension(0) ins(%v : tensor<8xf32>) outs(%o0, %o1 : tensor<3xf32>, tensor<3xi32>) {
  ^bb0(%a: f32, %b: f32):
    %c = arith.cmpf ogt, %a, %b : f32
    iree_linalg_ext.yield %c : i1
  } -> tensor<3xf32>, tensor<3xi32>
  check.expect_almost_eq_const(%r#0, dense<[0.599, 0.547, 0.294]> : tensor<3xf32>) : tensor<3xf32>
  check.expect_eq_const(%r#1, dense<[6, 2, 0]> : tensor<3xi32>) : tensor<3xi32>
  return
}

// 2-D, smallest k along dim 1, explicit input indices
func.func @topk_2d_i32_min_with_indices() {
  %v = util.unfoldable_constant dense<[[6, 0, 9, 7, 12], [1, 3, 11, 8, -4], [4, 10, 5, 2, 13]]> : tensor<3x5xi32>
  %i = util.unfoldable_constant dense<[[50, 51, 52, 53, 54], [60, 61, 62, 63, 64], [70, 71, 72, 73, 74]]> : tensor<3x5xi32>
  %big = arith.constant 2147483647 : i32
  %z = arith.constant 0 : i32
  %e0 = tensor.empty() : tensor<3x2xi32>
  %o0 = linalg.fill ins(%big : i32) outs(%e0 : tensor<3x2xi32>) -> tensor<3x2xi32>
  %o1 = linalg.fill ins(%z : i32) outs(%e0 : tensor<3x2xi32>) -> tensor<3x2xi32>
  %r:2 = iree_linalg_ext.topk dimension(1) ins(%v, %i : tensor<3x5xi32>, tensor<3x5xi32>) outs(%o0, %o1 : tensor<3x2xi32>, tensor<3x2xi32>) {
  ^bb0(%a: i32, %b: i32):
    %c = arith.cmpi slt, %a, %b : i32
    iree_linalg_ext.yield %c : i1
  } -> tensor<3x2xi32>, tensor<3x2xi32>
  check.expect_eq_const(%r#0, dense<[[0, 6], [-4, 1], [2, 4]]> : tensor<3x2xi32>) : tensor<3x2xi32>
  check.expect_eq_const(%r#1, dense<[[51, 50], [64, 60], [73, 70]]> : tensor<3x2xi32>) : tensor<3x2xi32>
  return
}

// ---- scan ----
func.func @scan_cumsum_f32() {
  %x = util.unfoldable_constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, -6.5]> : tensor<6xf32>
  %zf = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6xf32>
  %ea = tensor.empty() : tensor<f32>
  %acc = linalg.fill ins(%zf : f32) outs(%ea : tensor<f32>) -> tensor<f32>
  %r:2 = iree_linalg_ext.scan dimension(0) inclusive(true) ins(%x : tensor<6xf32>) outs(%e, %acc : tensor<6xf32>, tensor<f32>) {
  ^bb0(%a: f32, %b: f32):
    %s = arith.addf %a, %b : f32
    iree_linalg_ext.yield %s : f32
  } -> tensor<6xf32>, tensor<f32>
  check.expect_almost_eq_const(%r#0, dense<[1.0, 3.0, 6.0, 10.0, 15.0, 8.5]> : tensor<6xf32>) : tensor<6xf32>
  check.expect_almost_eq_const(%r#1, dense<8.5> : tensor<f32>) : tensor<f32>
  return
}

func.func @scan_exclusive_2d_i32_dim1() {
  %x = util.unfoldable_constant dense<[[1, 2, 3, 4], [5, 6, 7, 8]]> : tensor<2x4xi32>
  %z = arith.constant 0 : i32
  %e = tensor.empty() : tensor<2x4xi32>
  %ea = tensor.empty() : tensor<2xi32>
  %acc = linalg.fill ins(%z : i32) outs(%ea : tensor<2xi32>) -> tensor<2xi32>
  %r:2 = iree_linalg_ext.scan dimension(1) inclusive(false) ins(%x : tensor<2x4xi32>) outs(%e, %acc : tensor<2x4xi32>, tensor<2xi32>) {
  ^bb0(%a: i32, %b: i32):
    %s = arith.addi %a, %b : i32
    iree_linalg_ext.yield %s : i32
  } -> tensor<2x4xi32>, tensor<2xi32>
  check.expect_eq_const(%r#0, dense<[[0, 1, 3, 6], [0, 5, 11, 18]]> : tensor<2x4xi32>) : tensor<2x4xi32>
  return
}

// ---- multi-result reductions ----
// arg-max along dim 1 (value and index in one linalg.generic)
func.func @argmax_2d_f32() {
  %x = util.unfoldable_constant dense<[[1.01, -2.71, -1.89, -0.17, 0.5], [-0.42, 0.21, 0.22, 2.12, 1.0], [-1.11, -0.38, 2.04, 0.65, 2.0]]> : tensor<3x5xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %z = arith.constant 0 : i32
  %e0 = tensor.empty() : tensor<3xf32>
  %e1 = tensor.empty() : tensor<3xi32>
  %o0 = linalg.fill ins(%ninf : f32) outs(%e0 : tensor<3xf32>) -> tensor<3xf32>
  %o1 = linalg.fill ins(%z : i32) outs(%e1 : tensor<3xi32>) -> tensor<3xi32>
  %r:2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>],
                         iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x5xf32>) outs(%o0, %o1 : tensor<3xf32>, tensor<3xi32>) {
  ^bb0(%v: f32, %m: f32, %mi: i32):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i32
    %gt = arith.cmpf ogt, %v, %m : f32
    %nm = arith.select %gt, %v, %m : f32
    %ni = arith.select %gt, %ji, %mi : i32
    linalg.yield %nm, %ni : f32, i32
  } -> (tensor<3xf32>, tensor<3xi32>)
  check.expect_almost_eq_const(%r#0, dense<[1.01, 2.12, 2.04]> : tensor<3xf32>) : tensor<3xf32>
  check.expect_eq_const(%r#1, dense<[0, 3, 2]> : tensor<3xi32>) : tensor<3xi32>
  return
}

// sum and min-with-index along dim 0 of an i32 matrix (three results)
func.func @sum_and_argmin_dim0_i32() {
  %x = util.unfoldable_constant dense<[[6, 0, 9, 7], [1, 3, 11, 8], [4, -10, 5, 2]]> : tensor<3x4xi32>
  %z = arith.constant 0 : i32
  %big = arith.constant 2147483647 : i32
  %e = tensor.empty() : tensor<4xi32>
  %s0 = linalg.fill ins(%z : i32) outs(%e : tensor<4xi32>) -> tensor<4xi32>
  %m0 = linalg.fill ins(%big : i32) outs(%e : tensor<4xi32>) -> tensor<4xi32>
  %r:3 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0)>],
                         iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<3x4xi32>) outs(%s0, %m0, %s0 : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {
  ^bb0(%v: i32, %s: i32, %m: i32, %mi: i32):
    %j = linalg.index 1 : index
    %ji = arith.index_cast %j : index to i32
    %ns = arith.addi %s, %v : i32
    %lt = arith.cmpi slt, %v, %m : i32
    %nm = arith.select %lt, %v, %m : i32
    %ni = arith.select %lt, %ji, %mi : i32
    linalg.yield %ns, %nm, %ni : i32, i32, i32
  } -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>)
  check.expect_eq_const(%r#0, dense<[11, -7, 25, 17]> : tensor<4xi32>) : tensor<4xi32>
  check.expect_eq_const(%r#1, dense<[1, -10, 5, 2]> : tensor<4xi32>) : tensor<4xi32>
  check.expect_eq_const(%r#2, dense<[1, 2, 2, 2]> : tensor<4xi32>) : tensor<4xi32>
  return
}

// ---- aliasing and constants written in place ----
// one tensor as both operands of a dispatch (a matmul of a matrix with itself)
func.func @same_operand_twice() {
  %a = util.unfoldable_constant dense<[[1, 2], [3, -4]]> : tensor<2x2xi32>
  %z = arith.constant 0 : i32
  %e = tensor.empty() : tensor<2x2xi32>
  %f = linalg.fill ins(%z : i32) outs(%e : tensor<2x2xi32>) -> tensor<2x2xi32>
  %m = linalg.matmul ins(%a, %a : tensor<2x2xi32>, tensor<2x2xi32>) outs(%f : tensor<2x2xi32>) -> tensor<2x2xi32>
  %s = arith.subi %m, %a : tensor<2x2xi32>
  check.expect_eq_const(%m, dense<[[7, -6], [-9, 22]]> : tensor<2x2xi32>) : tensor<2x2xi32>
  check.expect_eq_const(%s, dense<[[6, -8], [-12, 26]]> : tensor<2x2xi32>) : tensor<2x2xi32>
  return
}

// a slice inserted into a constant; the constant itself is still intact
func.func @insert_slice_into_constant() {
  %c = arith.constant dense<[[1, 1, 1, 1], [2, 2, 2, 2], [3, 3, 3, 3]]> : tensor<3x4xi32>
  %u = util.unfoldable_constant dense<[[-5, -6], [-7, -8]]> : tensor<2x2xi32>
  %r = tensor.insert_slice %u into %c[1, 2] [2, 2] [1, 1] : tensor<2x2xi32> into tensor<3x4xi32>
  %d = arith.addi %c, %c : tensor<3x4xi32>
  check.expect_eq_const(%r, dense<[[1, 1, 1, 1], [2, 2, -5, -6], [3, 3, -7, -8]]> : tensor<3x4xi32>) : tensor<3x4xi32>
  check.expect_eq_const(%d, dense<[[2, 2, 2, 2], [4, 4, 4, 4], [6, 6, 6, 6]]> : tensor<3x4xi32>) : tensor<3x4xi32>
  return
}

// a loop-carried tensor that starts as a constant, updated in every iteration
func.func @loop_updates_constant_init() {
  %init = arith.constant dense<[10, 20, 30, 40, 50]> : tensor<5xi32>
  %n = util.unfoldable_constant 4 : index
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %r = scf.for %i = %c0 to %n step %c1 iter_args(%t = %init) -> (tensor<5xi32>) {
    %j = arith.addi %i, %c1 : index
    %a = tensor.extract %t[%i] : tensor<5xi32>
    %b = tensor.extract %t[%j] : tensor<5xi32>
    %s = arith.addi %a, %b : i32
    %u = tensor.insert %s into %t[%j] : tensor<5xi32>
    scf.yield %u : tensor<5xi32>
  }
  check.expect_eq_const(%r, dense<[10, 30, 60, 100, 150]> : tensor<5xi32>) : tensor<5xi32>
  check.expect_eq_const(%init, dense<[10, 20, 30, 40, 50]> : tensor<5xi32>) : tensor<5xi32>
  return
}

// two results of one dispatch, then each used by a further dispatch
func.func @two_results_then_combined() {
  %x = util.unfoldable_constant dense<[1.0, -2.0, 3.0, -4.0, 5.0, -6.0]> : tensor<6xf32>
  %e = tensor.empty() : tensor<6xf32>
  %r:2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                         iterator_types = ["parallel"]} ins(%x : tensor<6xf32>) outs(%e, %e : tensor<6xf32>, tensor<6xf32>) {
  ^bb0(%v: f32, %o0: f32, %o1: f32):
    %z = arith.constant 0.0 : f32
    %p = arith.maximumf %v, %z : f32
    %q = arith.minimumf %v, %z : f32
    linalg.yield %p, %q : f32, f32
  } -> (tensor<6xf32>, tensor<6xf32>)
  %s = arith.subf %r#0, %r#1 : tensor<6xf32>
  check.expect_almost_eq_const(%r#0, dense<[1.0, 0.0, 3.0, 0.0, 5.0, 0.0]> : tensor<6xf32>) : tensor<6xf32>
  check.expect_almost_eq_const(%r#1, dense<[0.0, -2.0, 0.0, -4.0, 0.0, -6.0]> : tensor<6xf32>) : tensor<6xf32>
  check.expect_almost_eq_const(%s, dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>) : tensor<6xf32>
  return
}
