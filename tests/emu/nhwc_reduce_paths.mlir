// Reductions reading channels-last convolution results as they are
// (pass/layout.c): a max over the channels (rows contiguous in NHWC), a
// mean over the spatial dims (columns across the channels), and a sum over
// a 3-d convolution's channels (NDHWC); and an element-wise chain with a
// comparison (softplus's where(x > 20, x, log1p(exp(x))): the bool follows
// the layout); run channels-last (mode fused-nhwc) and plain.
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "w"}, {kf.name = "v"}, {kf.name = "u"}], function_type = (tensor<2x8x6x6xf32>, tensor<16x8x3x3xf32>, tensor<2x4x3x4x4xf32>, tensor<8x4x3x3x3xf32>) -> (tensor<2x1x6x6xf32>, tensor<2x16x1x1xf32>, tensor<2x1x3x4x4xf32>, tensor<2x16x6x6xf32>), sym_name = "nhwc_reduce_paths"}> ({
  ^bb0(%x: tensor<2x8x6x6xf32>, %w: tensor<16x8x3x3xf32>, %v: tensor<2x4x3x4x4xf32>, %u: tensor<8x4x3x3x3xf32>):
    %c = "kf.conv"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x8x6x6xf32>, tensor<16x8x3x3xf32>) -> tensor<2x16x6x6xf32> loc("c")
    %r = "kf.relu"(%c) : (tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xf32> loc("r")
    %mx = "kf.amax"(%r) {dims = array<i64: 1>, keepdim = true} : (tensor<2x16x6x6xf32>) -> tensor<2x1x6x6xf32> loc("mx")
    %mn = "kf.mean"(%r) {dims = array<i64: 2, 3>, keepdim = true} : (tensor<2x16x6x6xf32>) -> tensor<2x16x1x1xf32> loc("mn")
    %c3 = "kf.conv"(%v, %u) {dilation = array<i64: 1, 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0, 0>, padding = array<i64: 1, 1, 1>, stride = array<i64: 1, 1, 1>, transposed = false} : (tensor<2x4x3x4x4xf32>, tensor<8x4x3x3x3xf32>) -> tensor<2x8x3x4x4xf32> loc("c3")
    %s3 = "kf.sum"(%c3) {dims = array<i64: 1>, keepdim = true} : (tensor<2x8x3x4x4xf32>) -> tensor<2x1x3x4x4xf32> loc("s3")
    %thr = "kf.scalar"() {value = 0.5 : f64} : () -> f64 loc("thr")
    %gt = "kf.gt"(%c, %thr) : (tensor<2x16x6x6xf32>, f64) -> tensor<2x16x6x6xi1> loc("gt")
    %ex = "kf.exp"(%c) : (tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xf32> loc("ex")
    %lp = "kf.log1p"(%ex) : (tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xf32> loc("lp")
    %sp = "kf.where"(%gt, %c, %lp) : (tensor<2x16x6x6xi1>, tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xf32> loc("sp")
    "func.return"(%mx, %mn, %s3, %sp) : (tensor<2x1x6x6xf32>, tensor<2x16x1x1xf32>, tensor<2x1x3x4x4xf32>, tensor<2x16x6x6xf32>) -> ()
  }) : () -> ()
}) : () -> ()
