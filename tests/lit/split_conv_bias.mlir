// split-conv-bias (pass/conv_bias.c): a convolution's bias becomes an add
// of the bias viewed as [C, 1, 1] where the result reaches a plain
// reduction through element-wise ops used once (y, t: forward and
// transposed); not where a value of the chain is also used elsewhere (z:
// its relu is a graph output), nor for a convolution without a reduction
// after it (q), nor for a forward one feeding a reduction over H alone
// directly (e: its bias stays inside cuDNN).
//
// RUN: %kfuse opt -p split-conv-bias,dce %s | FileCheck %s
//
// CHECK: %y = "kf.conv"(%x, %w) {
// CHECK: %y_bias = "kf.reshape"(%b) : (tensor<12xf32>) -> tensor<12x1x1xf32>
// CHECK: %y_biased = "kf.add"(%y, %y_bias)
// CHECK: %s = "kf.mul"(%y_biased, %two)
// CHECK: %t = "kf.conv"(%v, %u) {
// CHECK: %t_biased = "kf.add"(%t, %t_bias)
// CHECK: %g = "kf.gelu"(%t_biased)
// CHECK: %z = "kf.conv"(%x, %w, %b)
// CHECK: %q = "kf.conv"(%x, %w, %b)
// CHECK: %e = "kf.conv"(%x, %w, %b)
// CHECK-NOT: _biased

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "w"}, {kf.name = "b"}, {kf.name = "v"}, {kf.name = "u"}, {kf.name = "c"}], function_type = (tensor<2x6x9x10xf32>, tensor<12x6x3x3xf32>, tensor<12xf32>, tensor<2x5x7x6xf32>, tensor<5x7x3x3xf32>, tensor<7xf32>) -> (tensor<2x1x9x10xf32>, tensor<2x7x1x1xf32>, tensor<2x12x1x1xf32>, tensor<2x12x9x10xf32>, tensor<2x12x9x10xf32>, tensor<2x12x10xf32>), sym_name = "split_conv_bias"}> ({
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
    %q = "kf.conv"(%x, %w, %b) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x6x9x10xf32>, tensor<12x6x3x3xf32>, tensor<12xf32>) -> tensor<2x12x9x10xf32> loc("q")
    %qs = "kf.sigmoid"(%q) : (tensor<2x12x9x10xf32>) -> tensor<2x12x9x10xf32> loc("qs")
    %e = "kf.conv"(%x, %w, %b) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x6x9x10xf32>, tensor<12x6x3x3xf32>, tensor<12xf32>) -> tensor<2x12x9x10xf32> loc("e")
    %em = "kf.amax"(%e) {dims = array<i64: 2>, keepdim = false} : (tensor<2x12x9x10xf32>) -> tensor<2x12x10xf32> loc("em")
    "func.return"(%mn, %m, %sm, %r, %qs, %em) : (tensor<2x1x9x10xf32>, tensor<2x7x1x1xf32>, tensor<2x12x1x1xf32>, tensor<2x12x9x10xf32>, tensor<2x12x9x10xf32>, tensor<2x12x10xf32>) -> ()
  }) : () -> ()
}) : () -> ()
