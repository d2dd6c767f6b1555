// Globals loaded from parameter files: scope "model" (a matmul's weights and
// bias, an f16 vector), scope "quant" (i8 and i64), the empty scope (s).
util.global private @w = #flow.parameter.named<"model"::"w"> : tensor<4x3xf32>
util.global private @b = #flow.parameter.named<"model"::"b"> : tensor<3xf32>
util.global private @h = #flow.parameter.named<"model"::"h"> : tensor<5xf16>
util.global private @q = #flow.parameter.named<"quant"::"q"> : tensor<6xi8>
util.global private @n = #flow.parameter.named<"quant"::"n"> : tensor<2xi64>
util.global private @s = #flow.parameter.named<"s"> : tensor<8xf32>

func.func @main(%x: tensor<2x4xf32>) -> (tensor<2x3xf32>, tensor<5xf16>, tensor<6xi8>,
                                         tensor<2xi64>, tensor<8xf32>) {
  %w = util.global.load @w : tensor<4x3xf32>
  %b = util.global.load @b : tensor<3xf32>
  %h = util.global.load @h : tensor<5xf16>
  %q = util.global.load @q : tensor<6xi8>
  %n = util.global.load @n : tensor<2xi64>
  %s = util.global.load @s : tensor<8xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x3xf32>) -> tensor<2x3xf32>
  %m = linalg.matmul ins(%x, %w : tensor<2x4xf32>, tensor<4x3xf32>)
                     outs(%z : tensor<2x3xf32>) -> tensor<2x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                                        affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%m, %b : tensor<2x3xf32>, tensor<3xf32>) outs(%e : tensor<2x3xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %t = arith.addf %a, %c : f32
    linalg.yield %t : f32
  } -> tensor<2x3xf32>
  %q2 = arith.addi %q, %q : tensor<6xi8>
  %n2 = arith.muli %n, %n : tensor<2xi64>
  %s2 = arith.addf %s, %s : tensor<8xf32>
  return %r, %h, %q2, %n2, %s2 : tensor<2x3xf32>, tensor<5xf16>, tensor<6xi8>, tensor<2xi64>,
                                 tensor<8xf32>
}
