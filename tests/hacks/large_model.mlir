// tests/hacks/large_model.mlir: sum(exp(x)) over rows of a 4096 x 1024 f32 input: past the CPU reference's size (judge.c), so the judge takes the GPU reference (tests/hacks/run.py --ci)
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<4096x1024xf32>) -> (tensor<4096xf32>), sym_name = "model"}> ({
  ^bb0(%x: tensor<4096x1024xf32>):
    %e = "kf.exp"(%x) : (tensor<4096x1024xf32>) -> tensor<4096x1024xf32> loc("e")
    %s = "kf.sum"(%e) {dims = array<i64: 1>, keepdim = false} : (tensor<4096x1024xf32>) -> tensor<4096xf32> loc("s")
    "func.return"(%s) : (tensor<4096xf32>) -> ()
  }) : () -> ()
}) : () -> ()
