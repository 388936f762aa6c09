// channels-last (the default layout pass) makes a convolution channels-last
// when it is chained to another qualifying one through element-wise ops:
// c1 -> relu -> c2 -> add go NHWC between one copy in and one out; c3,
// alone on its input, and c5, which reads a max pool (not element-wise) and
// feeds only the graph output, keep NCHW and need no copies (a lone
// convolution pays both copies for no cuDNN gain: pass/layout.c,
// chain_convs). A lone one whose result goes through element-wise ops goes
// NHWC (c6 -> tanh: the copy back joins the epilogue launch; lone_pays),
// unless a reduction over a spatial dim alone reads the region (c7 -> relu
// -> mean over H stays NCHW) or an element-wise op of the region reads
// another tensor of its shape (c8 + s stays NCHW). channels-last-unchained (kfuse compile --channels-last-all)
// and channels-last-all (tests: any size) apply the layout to every
// qualifying convolution (ALL).
//
// RUN: %kfuse opt -p channels-last,dce %s | FileCheck %s
// RUN: %kfuse opt -p channels-last-all,dce %s | FileCheck %s --check-prefix=ALL
// RUN: %kfuse opt -p channels-last-unchained,dce %s | FileCheck %s --check-prefix=ALL
//
// CHECK: %s_nhwc = "kf.copy"(%s)
// CHECK: %x_nhwc = "kf.copy"(%x)
// CHECK: %c1 = "kf.conv"(%x_nhwc, %w1_nhwc)
// CHECK-SAME: -> tensor<1x16x64x64xf32, #kf.strided<[65536, 1, 1024, 16]>>
// CHECK: %c2 = "kf.conv"(%r1, %w2_nhwc)
// CHECK: %a = "kf.add"(%c2, %x_nhwc)
// CHECK: %a_nchw = "kf.copy"(%a)
// CHECK: %p:2 = "kf.max_pool"(%a_nchw)
// CHECK: %c5 = "kf.conv"(%p#0, %w5)
// CHECK-SAME: -> tensor<1x16x64x64xf32> loc
// CHECK: %c3 = "kf.conv"(%s, %w3)
// CHECK-SAME: -> tensor<1x16x128x128xf32> loc
// CHECK: %c6 = "kf.conv"(%s_nhwc, %w6_nhwc)
// CHECK: %t6 = "kf.tanh"(%c6)
// CHECK: %t6_nchw = "kf.copy"(%t6)
// CHECK: %c7 = "kf.conv"(%s, %w7)
// CHECK-SAME: -> tensor<1x16x128x128xf32> loc
// CHECK: %c8 = "kf.conv"(%s, %w8)
// CHECK-SAME: -> tensor<1x16x128x128xf32> loc
// CHECK: "func.return"(%a_nchw, %c5, %c3, %t6_nchw, %m7, %a8)
//
// ALL: %c5 = "kf.conv"(%p_nhwc, %w5_nhwc)
// ALL: %c3 = "kf.conv"(%s_nhwc, %w3_nhwc)

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "s"}], function_type = (tensor<1x16x64x64xf32>, tensor<1x16x128x128xf32>) -> (tensor<1x16x64x64xf32>, tensor<1x16x64x64xf32>, tensor<1x16x128x128xf32>, tensor<1x16x128x128xf32>, tensor<1x16x1x128xf32>, tensor<1x16x128x128xf32>), sym_name = "chains"}> ({
  ^bb0(%x: tensor<1x16x64x64xf32>, %s: tensor<1x16x128x128xf32>):
    %w1 = "kf.param"() {fqn = "w1", kind = "parameter"} : () -> tensor<16x16x3x3xf32> loc("w1")
    %w2 = "kf.param"() {fqn = "w2", kind = "parameter"} : () -> tensor<16x16x3x3xf32> loc("w2")
    %w3 = "kf.param"() {fqn = "w3", kind = "parameter"} : () -> tensor<16x16x3x3xf32> loc("w3")
    %w5 = "kf.param"() {fqn = "w5", kind = "parameter"} : () -> tensor<16x16x3x3xf32> loc("w5")
    %w6 = "kf.param"() {fqn = "w6", kind = "parameter"} : () -> tensor<16x16x3x3xf32> loc("w6")
    %w7 = "kf.param"() {fqn = "w7", kind = "parameter"} : () -> tensor<16x16x3x3xf32> loc("w7")
    %w8 = "kf.param"() {fqn = "w8", kind = "parameter"} : () -> tensor<16x16x3x3xf32> loc("w8")
    %c1 = "kf.conv"(%x, %w1) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x16x64x64xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x64x64xf32> loc("c1")
    %r1 = "kf.relu"(%c1) : (tensor<1x16x64x64xf32>) -> tensor<1x16x64x64xf32> loc("r1")
    %c2 = "kf.conv"(%r1, %w2) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x16x64x64xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x64x64xf32> loc("c2")
    %a = "kf.add"(%c2, %x) : (tensor<1x16x64x64xf32>, tensor<1x16x64x64xf32>) -> tensor<1x16x64x64xf32> loc("a")
    %p:2 = "kf.max_pool"(%a) {ceil_mode = false, dilation = array<i64: 1, 1>, kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x16x64x64xf32>) -> (tensor<1x16x64x64xf32>, tensor<1x16x64x64xi64>) loc("p")
    %c5 = "kf.conv"(%p#0, %w5) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x16x64x64xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x64x64xf32> loc("c5")
    %c3 = "kf.conv"(%s, %w3) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x16x128x128xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x128x128xf32> loc("c3")
    %c6 = "kf.conv"(%s, %w6) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x16x128x128xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x128x128xf32> loc("c6")
    %t6 = "kf.tanh"(%c6) : (tensor<1x16x128x128xf32>) -> tensor<1x16x128x128xf32> loc("t6")
    %c7 = "kf.conv"(%s, %w7) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x16x128x128xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x128x128xf32> loc("c7")
    %r7 = "kf.relu"(%c7) : (tensor<1x16x128x128xf32>) -> tensor<1x16x128x128xf32> loc("r7")
    %m7 = "kf.mean"(%r7) {dims = array<i64: 2>, keepdim = true} : (tensor<1x16x128x128xf32>) -> tensor<1x16x1x128xf32> loc("m7")
    %c8 = "kf.conv"(%s, %w8) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x16x128x128xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x128x128xf32> loc("c8")
    %a8 = "kf.add"(%c8, %s) : (tensor<1x16x128x128xf32>, tensor<1x16x128x128xf32>) -> tensor<1x16x128x128xf32> loc("a8")
    "func.return"(%a, %c5, %c3, %t6, %m7, %a8) : (tensor<1x16x64x64xf32>, tensor<1x16x64x64xf32>, tensor<1x16x128x128xf32>, tensor<1x16x128x128xf32>, tensor<1x16x1x128xf32>, tensor<1x16x128x128xf32>) -> ()
  }) : () -> ()
}) : () -> ()
