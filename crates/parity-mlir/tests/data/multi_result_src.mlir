// Hand-written source of multi_result.mlir: an argmax (a variadic reduce with two
// results, used as %r#0 and %r#1) feeding later ops, a hex splat, a full hex constant
// and a -inf scalar; a while loop whose regions capture values of the function body.
module @multi_result {
  func.func public @argmax_scale(%x: tensor<4x8xf32> loc("x"), %scale: tensor<4xf32> loc("scale")) -> (tensor<4xf32>, tensor<4xi32>) {
    %iota = stablehlo.iota dim = 1 : tensor<4x8xi32> loc("jit(argmax_scale)/argmax/iota")
    %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32> loc("jit(argmax_scale)/argmax/init")
    %zero = stablehlo.constant dense<0> : tensor<i32> loc("jit(argmax_scale)/argmax/init")
    %r:2 = stablehlo.reduce(%x init: %ninf), (%iota init: %zero) across dimensions = [1] : (tensor<4x8xf32>, tensor<4x8xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>)
      reducer(%a: tensor<f32> loc("jit(argmax_scale)/argmax/reduce"), %c: tensor<f32> loc("jit(argmax_scale)/argmax/reduce")) (%b: tensor<i32> loc("jit(argmax_scale)/argmax/reduce"), %d: tensor<i32> loc("jit(argmax_scale)/argmax/reduce")) {
        %gt = stablehlo.compare GT, %a, %c : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("jit(argmax_scale)/argmax/reduce")
        %v = stablehlo.select %gt, %a, %c : tensor<i1>, tensor<f32> loc("jit(argmax_scale)/argmax/reduce")
        %i = stablehlo.select %gt, %b, %d : tensor<i1>, tensor<i32> loc("jit(argmax_scale)/argmax/reduce")
        stablehlo.return %v, %i : tensor<f32>, tensor<i32> loc("jit(argmax_scale)/argmax/reduce")
      } loc("jit(argmax_scale)/argmax/reduce")
    %half = stablehlo.constant dense<"0x0000003F"> : tensor<4xf32> loc("jit(argmax_scale)/scale/half")
    %w = stablehlo.constant dense<"0x0000803F000000400000404000008040"> : tensor<4xf32> loc("jit(argmax_scale)/scale/w")
    %s = stablehlo.multiply %r#0, %scale : tensor<4xf32> loc("jit(argmax_scale)/scale/mul")
    %t = stablehlo.multiply %s, %half : tensor<4xf32> loc("jit(argmax_scale)/scale/mul")
    %u = stablehlo.add %t, %w : tensor<4xf32> loc("jit(argmax_scale)/scale/add")
    %n = stablehlo.convert %r#1 : (tensor<4xi32>) -> tensor<4xf32> loc("jit(argmax_scale)/index/convert")
    %o = stablehlo.add %u, %n : tensor<4xf32> loc("jit(argmax_scale)/out/add")
    return %o, %r#1 : tensor<4xf32>, tensor<4xi32> loc("jit(argmax_scale)")
  } loc("jit(argmax_scale)")
  func.func public @loop_capture(%x: tensor<4xf32> loc("x"), %limit: tensor<i32> loc("limit")) -> tensor<4xf32> {
    %zero = stablehlo.constant dense<0> : tensor<i32> loc("jit(loop_capture)/init")
    %one = stablehlo.constant dense<1> : tensor<i32> loc("jit(loop_capture)/init")
    %step = stablehlo.multiply %x, %x : tensor<4xf32> loc("jit(loop_capture)/step")
    %w:2 = stablehlo.while(%i = %zero, %acc = %x) : tensor<i32>, tensor<4xf32>
      cond {
        %lt = stablehlo.compare LT, %i, %limit : (tensor<i32>, tensor<i32>) -> tensor<i1> loc("jit(loop_capture)/while/cond")
        stablehlo.return %lt : tensor<i1> loc("jit(loop_capture)/while/cond")
      } do {
        %next = stablehlo.add %i, %one : tensor<i32> loc("jit(loop_capture)/while/body")
        %sum = stablehlo.add %acc, %step : tensor<4xf32> loc("jit(loop_capture)/while/body")
        stablehlo.return %next, %sum : tensor<i32>, tensor<4xf32> loc("jit(loop_capture)/while/body")
      } loc("jit(loop_capture)/while")
    %out = stablehlo.negate %w#1 : tensor<4xf32> loc("jit(loop_capture)/out")
    return %out : tensor<4xf32> loc("jit(loop_capture)")
  } loc("jit(loop_capture)")
} loc(unknown)
