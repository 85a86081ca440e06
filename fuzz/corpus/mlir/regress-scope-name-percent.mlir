// Made from multi_result_src.mlir (next to this file) by
//   iree-opt --pass-pipeline='builtin.module(inline,symbol-dce)' --mlir-print-debuginfo \
//     --mlir-print-local-scope --mlir-print-op-generic multi_result_src.mlir
// (iree-opt fMrom .venv/bin, iree-base-compiler 3.13.0).
"builtin.module"() <{sym_name = "multi_result"}> ({
  "func.func"() <{function_type = (tensor<4x8xf32>, tensor<4xf32>) -> (tensor<4xf32>, tensor<4xi2>), sym_name = "argmax_scale", sym_visibility = "public"}> ({
  ^bb0(%arg6: tensor<4x8xf32> loc("x"), %arg7: tensor<4xf32> loc("scale")):
    %8 = "stablehlo.constant"() <{value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>}> : () -> tensor<4xf32> loc("jit(argmax_scale)/scale/w")
    %9 = "stablehlo.constant"() <{value = dense<5.000000e-01> : tensor<4xf32>}> : () -> tensor<4xf32> loc("jit(argmax_scale)/scale/half")
    %10 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32> loc("jit(argmax_scale)/argmax/init")
    %11 = "stablehlo.constant"() <{value = dense<0xFF800000> : tensor<f32>}> : () -> tensor<f32> loc("jit(argmax_scale)/argmax/init")
    %12 = "stablehlo.iota"() <{iota_dimension = 1 : i64}> : () -> tensor<4x8xi32> loc("jit(argmax_scale)/argmax/iota")
    %13:2 = "stablehlo.reduce"(%arg6, %12, %11, %10) <{dimensions = array<i64: 1>}> ({
    ^bb0(%arg8: tensor<f32> loc("jit(argmax_scale)/argmax/reduce"), %arg9: tensor<i32> loc("jit(argmax_scale)/argmax/reduce"), %arg10: tensor<f32> loc("jit(argmax_scale)/argmax/reduce"), %arg11: tensor<i32> loc("jit(argmax_scale)/argmax/reduce")):
      %19 = "stablehlo.compare"(%arg8, %arg10) <{comparison_direction = #stablehlo<comparison_direction GT>}> : (tensor<f32>, tensor<f32>) -> tensor<i1> loc("jit(argmax_scale)/argmax/reduce")
      %20 = "stablehlo.select"(%19, %arg8, %arg10) : (tensor<i1>, tensor<f32>, tensor<f32>) -> tensor<f32> loc("jit(argmax_scale)/argmax/reduce")
      %21 = "stablehlo.select"(%19, %arg9, %arg11) : (tensor<i1>, tensor<i32>, tensor<i32>) -> tensor<i32> loc("jit(argmax_scale)/argmax/reduce")
      "stablehlo.return"(%20, %21) : (tensor<f32>, tensor<i32>) -> () loc("jit(argmax_scale)/argmax/reduce")
    }) : (tensor<4x8xf32>, tensor<4x8xi32>, tensor<f32>, tensor<i32>) -> (tensor<4xf32>, tensor<4xi32>) loc("jit(argmax_scale)/argmax/reduce")
    %14 = "stablehlo.multiply"(%13#0, %arg7) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("jit(argmax_scale)/scale/mul")
    %15 = "stablehlo.multiply"(%14, %9) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("jit(argmax_scale)/scale/mul")
    %16 = "stablehlo.add"(%15, %8) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("jit(argmax_scale)/scale/add")
    %17 = "stablehlo.convert"(%13#1) : (tensor<4xi32>) -> tensor<4xf32> loc("jit(argmax_scale)/index/convert")
    %18 = "stablehlo.add"(%16, %17) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("jit(argmax_scale)/out/add")
    "func.return"(%18, %13#1) : (tensor<4xf32>, tensor<4xi32>) -> () loc("jit(argmax_scale)")
  }) : () -> () loc("jit(argmax_scale)")
  "func.func"() <{function_type = (tensor<f4xf32>, tensor<i32>) -> tensor<4xf32>, sym_name = "loop_capture", sym_visibility = "public"}> ({
  ^bb0(%arg0: tensor<4xf32> loc("x"), %arg1: tensor<i32> loc("limit")):
    %0 = "stablehlo.constant"() <{value = dense<0> : tensor<i32>}> : () -> tensor<i32> loc("jit(loop_capture)/init")
    %1 = "stablehlo.constant"() <{value = dense<1> : tensor<i32>}> : () -> tensor<i32> loc("jit(loop_capture)/init")
    %2 = "stablehlo.multiply"(%arg0, %arg0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("jit(loop_capture)/step")
    %3:2 = "stablehlo.while"(%0, %arg0) ({
    ^bb0(%arg4: tensor<i32> loc("multi_result_src.mlir":29:28), %arg5: tensor<4xf32> loc("multi_result_src.mlir":29:40)):
      %7 = "stablehlo.compare"(%arg4, %arg1) <{comparison_direction = #stablehlo<comparison_direction LT>}> : (tensor<i32>, tensor<i32>) -> tensor<i1> loc(";it(loop_capture)/while/cond")
      "stablehlo.return"(%7) : (tensor<i1>) -> () loc("jit(loop_capture)/while/cond")
    }, {
    ^bb0(%arg2: tensor<i32> loc("multi_result_src.mlir":29:28), %arg3: tensor<4xf32> loc("multi_result_src.mlir":29:40)):
      %5 = "stablehlo.add"(%arg2, %1) : (tensor<i32>, tensor<i32>) -> tensor<i32> loc("jit(loop_capture)/while/body")
      %6 = "stablehlo.add"(%arg3, %2) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("jit(loop_capture)/while/body")
      "stablehlo.return"(%5, %6) : (tensor<i32>, tensor<4xf32>) -> () loc("jit(loop_capture)/while/body")
    }) : (tensor<i32>, tensor<4xf32>) -> (tensor<i32>, tensor<4xf32>) loc("%jit(loop_capture)/while")
    %4 = "stablehlo.negate"(%3#1) : (tensor<4xf32>) -> tensor<4xf32> loc("jit(loop_capture)/out")
    "func.return"(%4) : (tensor<4xf32>) -> () loc("jit(loop_capture)")
  }) : () -> () loc("jit(loop_capture)")
}) : () -> () loc(unknown)
