// Reductions and normalisations with fused prologues and epilogues, as the
// partitioner groups them: a residual add before layer_norm and gelu after
// it, an RMS-style mean of squares with rsqrt after, a scaled and masked
// softmax cast to f16, an L1 distance, argmax of a difference, max_dim
// with both results and an epilogue on the values, var with keepdim, group
// norm followed by silu, batch norm on batch statistics followed by relu.
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "r"}, {kf.name = "w"}, {kf.name = "b"}, {kf.name = "m"}, {kf.name = "y"}, {kf.name = "img"}, {kf.name = "gw"}, {kf.name = "gb"}], function_type = (tensor<24x320xf32>, tensor<24x320xf32>, tensor<320xf32>, tensor<320xf32>, tensor<1x320xf32>, tensor<24x320xf32>, tensor<4x12x9x10xf32>, tensor<12xf32>, tensor<12xf32>) -> (tensor<24x320xf32>, tensor<24x1xf32>, tensor<24x320xf16>, tensor<24xf32>, tensor<24xi64>, tensor<24xf32>, tensor<24xi64>, tensor<24x1xf32>, tensor<4x12x9x10xf32>, tensor<4x12x9x10xf32>), sym_name = "fusion_paths"}> ({
  ^bb0(%x: tensor<24x320xf32>, %r: tensor<24x320xf32>, %w: tensor<320xf32>, %b: tensor<320xf32>, %m: tensor<1x320xf32>, %y: tensor<24x320xf32>, %img: tensor<4x12x9x10xf32>, %gw: tensor<12xf32>, %gb: tensor<12xf32>):
    %h = "kf.add"(%x, %r) : (tensor<24x320xf32>, tensor<24x320xf32>) -> tensor<24x320xf32> loc("h")
    %ln:3 = "kf.layer_norm"(%h, %w, %b) {eps = 1.0e-05 : f64, normalized_ndim = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<24x320xf32>, tensor<320xf32>, tensor<320xf32>) -> (tensor<24x320xf32>, tensor<24x1xf32>, tensor<24x1xf32>) loc("ln")
    %o0 = "kf.gelu"(%ln#0) {approximate = "none"} : (tensor<24x320xf32>) -> tensor<24x320xf32> loc("o0")
    %sq = "kf.mul"(%x, %x) : (tensor<24x320xf32>, tensor<24x320xf32>) -> tensor<24x320xf32> loc("sq")
    %ms = "kf.mean"(%sq) {dims = array<i64: 1>, keepdim = true} : (tensor<24x320xf32>) -> tensor<24x1xf32> loc("ms")
    %eps = "kf.scalar"() {value = 1.0e-06 : f64} : () -> f64 loc("eps")
    %mse = "kf.add"(%ms, %eps) : (tensor<24x1xf32>, f64) -> tensor<24x1xf32> loc("mse")
    %o1 = "kf.rsqrt"(%mse) : (tensor<24x1xf32>) -> tensor<24x1xf32> loc("o1")
    %sc = "kf.scalar"() {value = 0.125 : f64} : () -> f64 loc("sc")
    %xs = "kf.mul"(%x, %sc) : (tensor<24x320xf32>, f64) -> tensor<24x320xf32> loc("xs")
    %xm = "kf.add"(%xs, %m) : (tensor<24x320xf32>, tensor<1x320xf32>) -> tensor<24x320xf32> loc("xm")
    %sm = "kf.softmax"(%xm) {dim = 1 : i64} : (tensor<24x320xf32>) -> tensor<24x320xf32> loc("sm")
    %o2 = "kf.cast"(%sm) : (tensor<24x320xf32>) -> tensor<24x320xf16> loc("o2")
    %d = "kf.sub"(%x, %y) : (tensor<24x320xf32>, tensor<24x320xf32>) -> tensor<24x320xf32> loc("d")
    %ad = "kf.abs"(%d) : (tensor<24x320xf32>) -> tensor<24x320xf32> loc("ad")
    %l1 = "kf.sum"(%ad) {dims = array<i64: 1>, keepdim = false} : (tensor<24x320xf32>) -> tensor<24xf32> loc("l1")
    %o3 = "kf.sqrt"(%l1) : (tensor<24xf32>) -> tensor<24xf32> loc("o3")
    %o4 = "kf.argmax"(%d) {dim = 1 : i64, keepdim = false} : (tensor<24x320xf32>) -> tensor<24xi64> loc("o4")
    %mx:2 = "kf.max_dim"(%y) {dim = 1 : i64, keepdim = false} : (tensor<24x320xf32>) -> (tensor<24xf32>, tensor<24xi64>) loc("mx")
    %o5 = "kf.neg"(%mx#0) : (tensor<24xf32>) -> tensor<24xf32> loc("o5")
    %v = "kf.var"(%y) {correction = 0 : i64, dims = array<i64: 1>, keepdim = true} : (tensor<24x320xf32>) -> tensor<24x1xf32> loc("v")
    %o7 = "kf.add"(%v, %eps) : (tensor<24x1xf32>, f64) -> tensor<24x1xf32> loc("o7")
    %gn:3 = "kf.group_norm"(%img, %gw, %gb) {eps = 1.0e-05 : f64, groups = 3 : i64, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<4x12x9x10xf32>, tensor<12xf32>, tensor<12xf32>) -> (tensor<4x12x9x10xf32>, tensor<4x3xf32>, tensor<4x3xf32>) loc("gn")
    %o8 = "kf.silu"(%gn#0) : (tensor<4x12x9x10xf32>) -> tensor<4x12x9x10xf32> loc("o8")
    %bn = "kf.batch_norm"(%img, %gw, %gb) {eps = 1.0e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 0, 0>} : (tensor<4x12x9x10xf32>, tensor<12xf32>, tensor<12xf32>) -> tensor<4x12x9x10xf32> loc("bn")
    %o9 = "kf.relu"(%bn) : (tensor<4x12x9x10xf32>) -> tensor<4x12x9x10xf32> loc("o9")
    "func.return"(%o0, %o1, %o2, %o3, %o4, %o5, %mx#1, %o7, %o8, %o9) : (tensor<24x320xf32>, tensor<24x1xf32>, tensor<24x320xf16>, tensor<24xf32>, tensor<24xi64>, tensor<24xf32>, tensor<24xi64>, tensor<24x1xf32>, tensor<4x12x9x10xf32>, tensor<4x12x9x10xf32>) -> ()
  }) : () -> ()
}) : () -> ()
