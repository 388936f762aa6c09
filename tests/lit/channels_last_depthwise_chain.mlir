// channels-last (the default layout pass, chains only) takes a chain with a
// depthwise convolution only when it has three convolutions or more: the
// MobileNet block on x (pointwise -> relu -> depthwise -> relu ->
// pointwise) goes NHWC between one copy in and one out, while the
// depthwise-separable pair on y (depthwise -> pointwise, KernelBench L1
// 86's form, where the copies cost more than the NHWC kernels save) keeps
// NCHW and needs no copies.
//
// RUN: %kfuse opt -p channels-last,dce %s | FileCheck %s
//
// CHECK: %x_nhwc = "kf.copy"(%x)
// CHECK: %pw1 = "kf.conv"(%x_nhwc, %w1)
// CHECK: %dw = "kf.conv"(%r1, %wd)
// CHECK-SAME: -> tensor<1x16x64x64xf32, #kf.strided<[65536, 1, 1024, 16]>>
// CHECK: %pw2 = "kf.conv"(%r2, %w2)
// CHECK: %pw2_nchw = "kf.copy"(%pw2)
// CHECK: %d2 = "kf.conv"(%y, %wd2)
// CHECK-SAME: -> tensor<1x16x64x64xf32>
// CHECK: %p3 = "kf.conv"(%d2, %w3)
// CHECK-SAME: -> tensor<1x32x64x64xf32>
// CHECK: "func.return"(%pw2_nchw, %p3)
// CHECK-NOT: "kf.copy"

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "y"}], function_type = (tensor<1x16x64x64xf32>, tensor<1x16x64x64xf32>) -> (tensor<1x16x64x64xf32>, tensor<1x32x64x64xf32>), sym_name = "dwc"}> ({
  ^bb0(%x: tensor<1x16x64x64xf32>, %y: tensor<1x16x64x64xf32>):
    %w1 = "kf.param"() {fqn = "w1", kind = "parameter"} : () -> tensor<16x16x1x1xf32> loc("w1")
    %wd = "kf.param"() {fqn = "wd", kind = "parameter"} : () -> tensor<16x1x3x3xf32> loc("wd")
    %w2 = "kf.param"() {fqn = "w2", kind = "parameter"} : () -> tensor<16x16x1x1xf32> loc("w2")
    %wd2 = "kf.param"() {fqn = "wd2", kind = "parameter"} : () -> tensor<16x1x3x3xf32> loc("wd2")
    %w3 = "kf.param"() {fqn = "w3", kind = "parameter"} : () -> tensor<32x16x1x1xf32> loc("w3")
    %pw1 = "kf.conv"(%x, %w1) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x16x64x64xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x64x64xf32> loc("pw1")
    %r1 = "kf.relu"(%pw1) : (tensor<1x16x64x64xf32>) -> tensor<1x16x64x64xf32> loc("r1")
    %dw = "kf.conv"(%r1, %wd) {dilation = array<i64: 1, 1>, groups = 16 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x16x64x64xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x64x64xf32> loc("dw")
    %r2 = "kf.relu"(%dw) : (tensor<1x16x64x64xf32>) -> tensor<1x16x64x64xf32> loc("r2")
    %pw2 = "kf.conv"(%r2, %w2) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x16x64x64xf32>, tensor<16x16x1x1xf32>) -> tensor<1x16x64x64xf32> loc("pw2")
    %d2 = "kf.conv"(%y, %wd2) {dilation = array<i64: 1, 1>, groups = 16 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x16x64x64xf32>, tensor<16x1x3x3xf32>) -> tensor<1x16x64x64xf32> loc("d2")
    %p3 = "kf.conv"(%d2, %w3) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x16x64x64xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x64x64xf32> loc("p3")
    "func.return"(%pw2, %p3) : (tensor<1x16x64x64xf32>, tensor<1x32x64x64xf32>) -> ()
  }) : () -> ()
}) : () -> ()
