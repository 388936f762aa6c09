// channels-last takes forward 2-d depthwise convolutions (groups equal to
// the input channels) like ungrouped ones: a MobileNet block, pointwise ->
// relu -> depthwise -> relu -> pointwise, goes NHWC between one copy in and
// one copy out (1x1 and depthwise weights are already in KRSC order: no
// weight copies). A grouped
// convolution that is not depthwise (g: groups 2 of 16 channels) keeps
// NCHW, reading a row-major copy of the channels-last relu.
//
// RUN: %kfuse opt -p channels-last-all,dce %s | FileCheck %s
//
// CHECK: %x_nhwc = "kf.copy"(%x)
// CHECK: %pw1 = "kf.conv"(%x_nhwc, %w1)
// CHECK-SAME: -> tensor<1x16x32x32xf32, #kf.strided<[16384, 1, 512, 16]>>
// CHECK: %r1 = "kf.relu"(%pw1)
// CHECK: %r1_nchw = "kf.copy"(%r1)
// CHECK: %dw = "kf.conv"(%r1, %wd)
// CHECK-SAME: groups = 16
// CHECK-SAME: -> tensor<1x16x32x32xf32, #kf.strided<[16384, 1, 512, 16]>>
// CHECK: %r2 = "kf.relu"(%dw)
// CHECK: %pw2 = "kf.conv"(%r2, %w2)
// CHECK: %pw2_nchw = "kf.copy"(%pw2)
// CHECK: %g = "kf.conv"(%r1_nchw, %wg)
// CHECK-SAME: -> tensor<1x16x32x32xf32>
// CHECK: "func.return"(%pw2_nchw, %g)

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<1x16x32x32xf32>) -> (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>), sym_name = "mb"}> ({
  ^bb0(%x: tensor<1x16x32x32xf32>):
    %w1 = "kf.param"() {fqn = "w1", kind = "parameter"} : () -> tensor<16x16x1x1xf32> loc("w1")
    %wd = "kf.param"() {fqn = "wd", kind = "parameter"} : () -> tensor<16x1x3x3xf32> loc("wd")
    %w2 = "kf.param"() {fqn = "w2", kind = "parameter"} : () -> tensor<16x16x1x1xf32> loc("w2")
    %wg = "kf.param"() {fqn = "wg", kind = "parameter"} : () -> tensor<16x8x3x3xf32> loc("wg")
    %pw1 = "kf.conv"(%x, %w1) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x16x32x32xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x32x32xf32> loc("pw1")
    %r1 = "kf.relu"(%pw1) : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("r1")
    %dw = "kf.conv"(%r1, %wd) {dilation = array<i64: 1, 1>, groups = 16 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x16x32x32xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x32x32xf32> loc("dw")
    %r2 = "kf.relu"(%dw) : (tensor<1x16x32x32xf32>) -> tensor<1x16x32x32xf32> loc("r2")
    %pw2 = "kf.conv"(%r2, %w2) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x16x32x32xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x32x32xf32> loc("pw2")
    %g = "kf.conv"(%r1, %wg) {dilation = array<i64: 1, 1>, groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x16x32x32xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x32x32xf32> loc("g")
    "func.return"(%pw2, %g) : (tensor<1x16x32x32xf32>, tensor<1x16x32x32xf32>) -> ()
  }) : () -> ()
}) : () -> ()
