// A module whose weights live outside it, as IREE deployments keep them:
// util.globals initialised from parameters of scope "model", read at run
// time from the files `subject.parameters` names (tests/parameters.rs).
module @params {
  util.global private @w = #flow.parameter.named<"model"::"w"> : tensor<4x3xf32>
  util.global private @b = #flow.parameter.named<"model"::"b"> : tensor<3xf32>
  util.global private @s = #flow.parameter.named<"model"::"s"> : tensor<3xf32>

  // y = x @ w + b
  func.func @affine(%x: tensor<2x4xf32>) -> tensor<2x3xf32> {
    %w = util.global.load @w : tensor<4x3xf32>
    %b = util.global.load @b : tensor<3xf32>
    %xw = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<2x4xf32>, tensor<4x3xf32>) -> tensor<2x3xf32>
    %bb = stablehlo.broadcast_in_dim %b, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
    %y = stablehlo.add %xw, %bb : tensor<2x3xf32>
    return %y : tensor<2x3xf32>
  }

  // z = y * s
  func.func @scale(%y: tensor<2x3xf32>) -> tensor<2x3xf32> {
    %s = util.global.load @s : tensor<3xf32>
    %sb = stablehlo.broadcast_in_dim %s, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
    %z = stablehlo.multiply %y, %sb : tensor<2x3xf32>
    return %z : tensor<2x3xf32>
  }
}
