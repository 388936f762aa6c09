// Reductions that take a convolution's epilogue as their prologue
// (pass/conv_bias.c splits the bias off, pass/partition.c's
// feeds_reduction keeps the epilogue out of the convolution's group): a
// forward convolution with bias, a scale and a min over the channels; a
// transposed one with bias, GELU and a mean over every spatial dim; a
// convolution whose epilogue value is also a graph output (stays the
// convolution's epilogue); run channels-last (mode fused-nhwc) and plain.
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "w"}, {kf.name = "b"}, {kf.name = "v"}, {kf.name = "u"}, {kf.name = "c"}], function_type = (tensor<2x6x9x10xf32>, tensor<12x6x3x3xf32>, tensor<12xf32>, tensor<2x5x7x6xf32>, tensor<5x7x3x3xf32>, tensor<7xf32>) -> (tensor<2x1x9x10xf32>, tensor<2x7x1x1xf32>, tensor<2x12x1x1xf32>, tensor<2x12x9x10xf32>), sym_name = "nhwc_conv_reduce"}> ({
  ^bb0(%x: tensor<2x6x9x10xf32>, %w: tensor<12x6x3x3xf32>, %b: tensor<12xf32>, %v: tensor<2x5x7x6xf32>, %u: tensor<5x7x3x3xf32>, %c: tensor<7xf32>):
    %y = "kf.conv"(%x, %w, %b) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x6x9x10xf32>, tensor<12x6x3x3xf32>, tensor<12xf32>) -> tensor<2x12x9x10xf32> loc("y")
    %two = "kf.scalar"() {value = 2.5 : f64} : () -> f64 loc("two")
    %s = "kf.mul"(%y, %two) : (tensor<2x12x9x10xf32>, f64) -> tensor<2x12x9x10xf32> loc("s")
    %mn = "kf.amin"(%s) {dims = array<i64: 1>, keepdim = true} : (tensor<2x12x9x10xf32>) -> tensor<2x1x9x10xf32> loc("mn")
    %t = "kf.conv"(%v, %u, %c) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 1, 1>, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, transposed = true} : (tensor<2x5x7x6xf32>, tensor<5x7x3x3xf32>, tensor<7xf32>) -> tensor<2x7x14x12xf32> loc("t")
    %g = "kf.gelu"(%t) {approximate = "none"} : (tensor<2x7x14x12xf32>) -> tensor<2x7x14x12xf32> loc("g")
    %m = "kf.mean"(%g) {dims = array<i64: 2, 3>, keepdim = true} : (tensor<2x7x14x12xf32>) -> tensor<2x7x1x1xf32> loc("m")
    %z = "kf.conv"(%x, %w, %b) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x6x9x10xf32>, tensor<12x6x3x3xf32>, tensor<12xf32>) -> tensor<2x12x9x10xf32> loc("z")
    %r = "kf.relu"(%z) : (tensor<2x12x9x10xf32>) -> tensor<2x12x9x10xf32> loc("r")
    %sm = "kf.sum"(%r) {dims = array<i64: 2, 3>, keepdim = true} : (tensor<2x12x9x10xf32>) -> tensor<2x12x1x1xf32> loc("sm")
    "func.return"(%mn, %m, %sm, %r) : (tensor<2x1x9x10xf32>, tensor<2x7x1x1xf32>, tensor<2x12x1x1xf32>, tensor<2x12x9x10xf32>) -> ()
  }) : () -> ()
}) : () -> ()
