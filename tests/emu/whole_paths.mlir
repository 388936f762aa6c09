// Whole-tensor reductions of a model input (pass/fold_reductions.c, rewrite
// 4: the reduction of the 1-d view), checked numerically against the
// interpreter on the graph as written: x / ||x|| (norm), a sum with
// keepdim, an unbiased variance, an amax, all over every dim of x.
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<6x40x33xf32>) -> (tensor<6x40x33xf32>, tensor<1x1x1xf32>, tensor<f32>, tensor<f32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<6x40x33xf32>):
    %n = "kf.norm"(%x) {dims = array<i64: 0, 1, 2>, keepdim = false, ord = 2.0 : f64} : (tensor<6x40x33xf32>) -> tensor<f32> loc("n")
    %y = "kf.div"(%x, %n) : (tensor<6x40x33xf32>, tensor<f32>) -> tensor<6x40x33xf32> loc("y")
    %s = "kf.sum"(%x) {dims = array<i64: 0, 1, 2>, keepdim = true} : (tensor<6x40x33xf32>) -> tensor<1x1x1xf32> loc("s")
    %v = "kf.var"(%x) {dims = array<i64: 0, 1, 2>, keepdim = false, correction = 1 : i64} : (tensor<6x40x33xf32>) -> tensor<f32> loc("v")
    %a = "kf.amax"(%x) {dims = array<i64: 0, 1, 2>, keepdim = false} : (tensor<6x40x33xf32>) -> tensor<f32> loc("a")
    "func.return"(%y, %s, %v, %a) : (tensor<6x40x33xf32>, tensor<1x1x1xf32>, tensor<f32>, tensor<f32>) -> ()
  }) : () -> ()
}) : () -> ()
