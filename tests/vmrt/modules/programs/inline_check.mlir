// Test functions with check ops, for `vmrt test` (the inline HAL tests).  The
// inline execution models of iree-compile 3.13 cannot lower check ops on
// tensors nor pass a non-splat constant to a dispatch, so the tests make
// their data in a dispatch (an iota), then check scalars taken out of the
// tensors the dispatches computed.
util.func private @iota(%n: index) -> tensor<?xi32> {
  %init = tensor.empty(%n) : tensor<?xi32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
      outs(%init : tensor<?xi32>) {
    ^bb0(%out: i32):
      %i = linalg.index 0 : index
      %v = arith.index_cast %i : index to i32
      linalg.yield %v : i32
  } -> tensor<?xi32>
  util.return %0 : tensor<?xi32>
}

func.func @square_ok() {
  %n0 = arith.constant 6 : index
  %n = util.optimization_barrier %n0 : index
  %a = util.call @iota(%n) : (index) -> tensor<?xi32>
  %0 = arith.muli %a, %a : tensor<?xi32>
  %c5 = arith.constant 5 : index
  %x = tensor.extract %0[%c5] : tensor<?xi32>
  %want = arith.constant 25 : i32
  %eq = arith.cmpi eq, %x, %want : i32
  %t = arith.extui %eq : i1 to i32
  check.expect_true(%t) : i32
  return
}

func.func @sum_ok() {
  %n0 = arith.constant 5 : index
  %n = util.optimization_barrier %n0 : index
  %a = util.call @iota(%n) : (index) -> tensor<?xi32>
  %init = arith.constant dense<0> : tensor<i32>
  %0 = linalg.reduce ins(%a : tensor<?xi32>) outs(%init : tensor<i32>) dimensions = [0]
    (%in: i32, %acc: i32) {
      %s = arith.addi %in, %acc : i32
      linalg.yield %s : i32
    }
  %x = tensor.extract %0[] : tensor<i32>
  %want = arith.constant 10 : i32
  %ne = arith.cmpi ne, %x, %want : i32
  %f = arith.extui %ne : i1 to i32
  check.expect_false(%f) : i32
  return
}

func.func @double_wrong() {
  %n0 = arith.constant 4 : index
  %n = util.optimization_barrier %n0 : index
  %a = util.call @iota(%n) : (index) -> tensor<?xi32>
  %0 = arith.addi %a, %a : tensor<?xi32>
  %c3 = arith.constant 3 : index
  %x = tensor.extract %0[%c3] : tensor<?xi32>
  %want = arith.constant 7 : i32
  %eq = arith.cmpi eq, %x, %want : i32
  %t = arith.extui %eq : i1 to i32
  check.expect_true(%t) : i32
  return
}
