// channels-last leaves alone values whose strides were NHWC before it ran:
// the model's own permute of [1, 64, 64, 16] to [1, 16, 64, 64] (%yp, as
// maxvit_t's window partition makes them) keeps its readers. The view %v
// of it keeps reading it as it is (a row-major copy under a view changed
// the view's strides, and the IR was invalid after the pass: "view_494
// (kf.reshape): result 0 is declared ... but the op gives ..."), the
// element-wise %e over it stays row-major (only what the pass laid out
// propagates), and the convolution c1 takes it as its channels-last input
// without a copy. c1 -> relu -> c2 is a chain: NHWC between, one copy out.
//
// RUN: %kfuse opt -p channels-last,dce %s | FileCheck %s
//
// CHECK-NOT: %yp_nhwc
// CHECK: %yp = "kf.permute"(%y)
// CHECK: %v = "kf.reshape"(%yp)
// CHECK-SAME: -> tensor<1x16x64x1x64x1xf32, #kf.strided<[65536, 1, 1024, 1024, 16, 16]>>
// CHECK: %vc = "kf.copy"(%v)
// CHECK: %e = "kf.neg"(%yp)
// CHECK-SAME: -> tensor<1x16x64x64xf32> loc
// CHECK: %c1 = "kf.conv"(%yp, %w1_nhwc)
// CHECK-SAME: -> tensor<1x16x64x64xf32, #kf.strided<[65536, 1, 1024, 16]>>
// CHECK: %r1 = "kf.relu"(%c1)
// CHECK: %c2 = "kf.conv"(%r1, %w2_nhwc)
// CHECK: %c2_nchw = "kf.copy"(%c2)
// CHECK: "func.return"(%vc, %e, %c2_nchw)

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "y"}], function_type = (tensor<1x64x64x16xf32>) -> (tensor<1x16x64x1x64x1xf32>, tensor<1x16x64x64xf32>, tensor<1x16x64x64xf32>), sym_name = "views"}> ({
  ^bb0(%y: tensor<1x64x64x16xf32>):
    %w1 = "kf.param"() {fqn = "w1", kind = "parameter"} : () -> tensor<16x16x3x3xf32> loc("w1")
    %w2 = "kf.param"() {fqn = "w2", kind = "parameter"} : () -> tensor<16x16x3x3xf32> loc("w2")
    %yp = "kf.permute"(%y) {dims = array<i64: 0, 3, 1, 2>} : (tensor<1x64x64x16xf32>) -> tensor<1x16x64x64xf32, #kf.strided<[65536, 1, 1024, 16]>> loc("yp")
    %v = "kf.reshape"(%yp) : (tensor<1x16x64x64xf32, #kf.strided<[65536, 1, 1024, 16]>>) -> tensor<1x16x64x1x64x1xf32, #kf.strided<[65536, 1, 1024, 1024, 16, 16]>> loc("v")
    %vc = "kf.copy"(%v) : (tensor<1x16x64x1x64x1xf32, #kf.strided<[65536, 1, 1024, 1024, 16, 16]>>) -> tensor<1x16x64x1x64x1xf32> loc("vc")
    %e = "kf.neg"(%yp) : (tensor<1x16x64x64xf32, #kf.strided<[65536, 1, 1024, 16]>>) -> tensor<1x16x64x64xf32> loc("e")
    %c1 = "kf.conv"(%yp, %w1) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x16x64x64xf32, #kf.strided<[65536, 1, 1024, 16]>>, tensor<16x16x3x3xf32>) -> tensor<1x16x64x64xf32> loc("c1")
    %r1 = "kf.relu"(%c1) : (tensor<1x16x64x64xf32>) -> tensor<1x16x64x64xf32> loc("r1")
    %c2 = "kf.conv"(%r1, %w2) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x16x64x64xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x64x64xf32> loc("c2")
    "func.return"(%vc, %e, %c2) : (tensor<1x16x64x1x64x1xf32>, tensor<1x16x64x64xf32>, tensor<1x16x64x64xf32>) -> ()
  }) : () -> ()
}) : () -> ()
