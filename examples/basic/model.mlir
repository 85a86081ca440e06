// parity's small example subject: a six-stage chain over a [batch=2, time=8,
// channels=16] activation, hand-written in StableHLO so every stage is its own
// exported entry point.
//
//   layer_norm -> strided_conv -> scores -> masked_softmax -> attend -> proj_bf16
//
// Time steps marked True in the input mask (tensor<2x8xi1>, True = padded) are
// padding; only batch item 1 has any. The conv subsamples time by 2, so the
// softmax stage reads every second mask entry itself.
//
// Compile: iree-compile --iree-input-type=stablehlo
//            --iree-hal-target-backends=llvm-cpu model.mlir -o model.vmfb
// Oracle and f64 truth: make_oracle.py (MLX / numpy) in this directory.

module @basic {
  // LayerNorm over the channel axis, eps 1e-5, biased variance (divide by N).
  func.func public @layer_norm(%x: tensor<2x8x16xf32>, %gamma: tensor<16xf32>, %beta: tensor<16xf32>) -> tensor<2x8x16xf32> {
    %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %n = stablehlo.constant dense<1.600000e+01> : tensor<2x8xf32>
    %eps = stablehlo.constant dense<9.99999974E-6> : tensor<2x8xf32>
    %sum = stablehlo.reduce(%x init: %zero) applies stablehlo.add across dimensions = [2] : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8xf32>
    %mean = stablehlo.divide %sum, %n : tensor<2x8xf32>
    %mean_b = stablehlo.broadcast_in_dim %mean, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x16xf32>
    %xc = stablehlo.subtract %x, %mean_b : tensor<2x8x16xf32>
    %sq = stablehlo.multiply %xc, %xc : tensor<2x8x16xf32>
    %sqsum = stablehlo.reduce(%sq init: %zero) applies stablehlo.add across dimensions = [2] : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8xf32>
    %var = stablehlo.divide %sqsum, %n : tensor<2x8xf32>
    %var_eps = stablehlo.add %var, %eps : tensor<2x8xf32>
    %rstd = stablehlo.rsqrt %var_eps : tensor<2x8xf32>
    %rstd_b = stablehlo.broadcast_in_dim %rstd, dims = [0, 1] : (tensor<2x8xf32>) -> tensor<2x8x16xf32>
    %norm = stablehlo.multiply %xc, %rstd_b : tensor<2x8x16xf32>
    %gamma_b = stablehlo.broadcast_in_dim %gamma, dims = [2] : (tensor<16xf32>) -> tensor<2x8x16xf32>
    %beta_b = stablehlo.broadcast_in_dim %beta, dims = [2] : (tensor<16xf32>) -> tensor<2x8x16xf32>
    %scaled = stablehlo.multiply %norm, %gamma_b : tensor<2x8x16xf32>
    %out = stablehlo.add %scaled, %beta_b : tensor<2x8x16xf32>
    return %out : tensor<2x8x16xf32>
  }

  // 1-D convolution over time: kernel 3, stride 2, padding 1 on each side, so
  // 8 time steps become 4. The weight uses MLX's conv1d layout
  // [out_channels, kernel, in_channels].
  func.func public @strided_conv(%x: tensor<2x8x16xf32>, %w: tensor<16x3x16xf32>) -> tensor<2x4x16xf32> {
    %y = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[o, 0, i]->[b, 0, f], window = {stride = [2], pad = [[1, 1]], lhs_dilate = [1], rhs_dilate = [1]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x8x16xf32>, tensor<16x3x16xf32>) -> tensor<2x4x16xf32>
    return %y : tensor<2x4x16xf32>
  }

  // Scaled dot-product scores: (h wq)(h wk)^T / sqrt(16), weights [in, out].
  func.func public @scores(%h: tensor<2x4x16xf32>, %wq: tensor<16x16xf32>, %wk: tensor<16x16xf32>) -> tensor<2x4x4xf32> {
    %q = stablehlo.dot_general %h, %wq, contracting_dims = [2] x [0] : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
    %k = stablehlo.dot_general %h, %wk, contracting_dims = [2] x [0] : (tensor<2x4x16xf32>, tensor<16x16xf32>) -> tensor<2x4x16xf32>
    %s = stablehlo.dot_general %q, %k, batching_dims = [0] x [0], contracting_dims = [2] x [2] : (tensor<2x4x16xf32>, tensor<2x4x16xf32>) -> tensor<2x4x4xf32>
    %scale = stablehlo.constant dense<2.500000e-01> : tensor<2x4x4xf32>
    %out = stablehlo.multiply %s, %scale : tensor<2x4x4xf32>
    return %out : tensor<2x4x4xf32>
  }

  // Softmax over keys with padded keys filled with -1e9, padded query rows
  // zeroed; second result is the argmax key per query (lowest index on ties),
  // -1 for padded query rows. The mask is the full-rate input mask; the conv
  // halved time, so keep every second entry.
  func.func public @masked_softmax(%scores: tensor<2x4x4xf32>, %mask: tensor<2x8xi1>) -> (tensor<2x4x4xf32>, tensor<2x4xi32>) {
    %mask_sub = stablehlo.slice %mask [0:2, 0:8:2] : (tensor<2x8xi1>) -> tensor<2x4xi1>
    %key_pad = stablehlo.broadcast_in_dim %mask_sub, dims = [0, 2] : (tensor<2x4xi1>) -> tensor<2x4x4xi1>
    %query_pad = stablehlo.broadcast_in_dim %mask_sub, dims = [0, 1] : (tensor<2x4xi1>) -> tensor<2x4x4xi1>
    %fill = stablehlo.constant dense<-1.000000e+09> : tensor<2x4x4xf32>
    %masked = stablehlo.select %key_pad, %fill, %scores : tensor<2x4x4xi1>, tensor<2x4x4xf32>
    %neg_inf = stablehlo.constant dense<0xFF800000> : tensor<f32>
    %zero = stablehlo.constant dense<0.000000e+00> : tensor<f32>
    %row_max = stablehlo.reduce(%masked init: %neg_inf) applies stablehlo.maximum across dimensions = [2] : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    %row_max_b = stablehlo.broadcast_in_dim %row_max, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<2x4x4xf32>
    %shifted = stablehlo.subtract %masked, %row_max_b : tensor<2x4x4xf32>
    %e = stablehlo.exponential %shifted : tensor<2x4x4xf32>
    %row_sum = stablehlo.reduce(%e init: %zero) applies stablehlo.add across dimensions = [2] : (tensor<2x4x4xf32>, tensor<f32>) -> tensor<2x4xf32>
    %row_sum_b = stablehlo.broadcast_in_dim %row_sum, dims = [0, 1] : (tensor<2x4xf32>) -> tensor<2x4x4xf32>
    %p = stablehlo.divide %e, %row_sum_b : tensor<2x4x4xf32>
    %zeros = stablehlo.constant dense<0.000000e+00> : tensor<2x4x4xf32>
    %probs = stablehlo.select %query_pad, %zeros, %p : tensor<2x4x4xi1>, tensor<2x4x4xf32>

    %idx = stablehlo.iota dim = 2 : tensor<2x4x4xi32>
    %big = stablehlo.constant dense<2147483647> : tensor<i32>
    %best:2 = stablehlo.reduce(%masked init: %neg_inf), (%idx init: %big) across dimensions = [2] : (tensor<2x4x4xf32>, tensor<2x4x4xi32>, tensor<f32>, tensor<i32>) -> (tensor<2x4xf32>, tensor<2x4xi32>)
     reducer(%av: tensor<f32>, %bv: tensor<f32>) (%ai: tensor<i32>, %bi: tensor<i32>) {
      %a_gt = stablehlo.compare GT, %av, %bv, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %eq = stablehlo.compare EQ, %av, %bv, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
      %a_lower = stablehlo.compare LT, %ai, %bi, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      %tie_a = stablehlo.and %eq, %a_lower : tensor<i1>
      %take_a = stablehlo.or %a_gt, %tie_a : tensor<i1>
      %v = stablehlo.select %take_a, %av, %bv : tensor<i1>, tensor<f32>
      %i = stablehlo.select %take_a, %ai, %bi : tensor<i1>, tensor<i32>
      stablehlo.return %v, %i : tensor<f32>, tensor<i32>
    }
    %minus_one = stablehlo.constant dense<-1> : tensor<2x4xi32>
    %argmax = stablehlo.select %mask_sub, %minus_one, %best#1 : tensor<2x4xi1>, tensor<2x4xi32>
    return %probs, %argmax : tensor<2x4x4xf32>, tensor<2x4xi32>
  }

  // Attention-weighted sum of the conv features, accumulated in f32 and
  // stored as bf16 (the storage dtype of the projection that follows).
  func.func public @attend(%probs: tensor<2x4x4xf32>, %v: tensor<2x4x16xf32>) -> tensor<2x4x16xbf16> {
    %ctx = stablehlo.dot_general %probs, %v, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<2x4x4xf32>, tensor<2x4x16xf32>) -> tensor<2x4x16xf32>
    %out = stablehlo.convert %ctx : (tensor<2x4x16xf32>) -> tensor<2x4x16xbf16>
    return %out : tensor<2x4x16xbf16>
  }

  // bf16 projection with f32 accumulation: widen, dot, add the bias, round
  // back to bf16 once. (The MLX oracle rounds to bf16 after the matmul and
  // again after the bias add, so a few elements differ by 1 bf16 ULP: both
  // are valid bf16 results, which is what the ULP criteria are for.)
  func.func public @proj_bf16(%x: tensor<2x4x16xbf16>, %w: tensor<16x8xbf16>, %b: tensor<8xbf16>) -> tensor<2x4x8xbf16> {
    %xf = stablehlo.convert %x : (tensor<2x4x16xbf16>) -> tensor<2x4x16xf32>
    %wf = stablehlo.convert %w : (tensor<16x8xbf16>) -> tensor<16x8xf32>
    %bf = stablehlo.convert %b : (tensor<8xbf16>) -> tensor<8xf32>
    %y = stablehlo.dot_general %xf, %wf, contracting_dims = [2] x [0] : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
    %bias = stablehlo.broadcast_in_dim %bf, dims = [2] : (tensor<8xf32>) -> tensor<2x4x8xf32>
    %yb = stablehlo.add %y, %bias : tensor<2x4x8xf32>
    %out = stablehlo.convert %yb : (tensor<2x4x8xf32>) -> tensor<2x4x8xbf16>
    return %out : tensor<2x4x8xbf16>
  }
}
