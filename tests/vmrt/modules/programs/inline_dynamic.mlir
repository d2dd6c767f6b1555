// A dynamic shape: the length of the vectors is known only at run time (the inline HAL tests).
func.func @axpy(%alpha: tensor<f32>, %x: tensor<?xf32>, %y: tensor<?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %init = tensor.empty(%n) : tensor<?xf32>
  %0 = linalg.generic {indexing_maps = [affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>,
                                        affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%alpha, %x, %y : tensor<f32>, tensor<?xf32>, tensor<?xf32>) outs(%init : tensor<?xf32>) {
    ^bb0(%a: f32, %xi: f32, %yi: f32, %out: f32):
      %m = arith.mulf %a, %xi : f32
      %s = arith.addf %m, %yi : f32
      linalg.yield %s : f32
  } -> tensor<?xf32>
  return %0 : tensor<?xf32>
}
