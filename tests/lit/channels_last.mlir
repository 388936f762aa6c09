// channels-last gives 2-d and 3-d convolutions channels-last activations
// (NHWC, NDHWC): the graph input is copied once (%x_nhwc, shared by conv c1
// and the residual add), the weights are copied with dim 1 innermost (no
// weight data in a text graph, so a kf.copy rather than a new constant),
// relu and add follow the layout, the max pool reads a row-major copy, and
// the graph outputs are row-major copies. Convolutions of any channel
// count qualify (c3: 4 input channels), transposed ones with groups 1 (t1,
// 2-d) and 3-d ones (c4); a grouped one (t2) keeps NCHW. A plain
// reduction (mean) reads a channels-last value as it is, and so does a
// comparison (its bool result follows the layout).
//
// The graph is small: channels-last-all applies the layout whatever the
// size; channels-last itself leaves convolutions of fewer than 2^16 result
// elements alone (the copies would cost more than cuDNN saves).
//
// RUN: %kfuse opt -p channels-last-all %s | FileCheck %s
// RUN: %kfuse opt -p channels-last-all,dce %s | FileCheck %s --check-prefix=ONCE
// RUN: %kfuse opt -p channels-last,dce %s | FileCheck %s --check-prefix=SMALL

// CHECK-LABEL: ^bb0(%x: tensor<2x8x6x6xf32>, %s: tensor<2x4x6x6xf32>, %v: tensor<2x4x3x4x4xf32>):
// CHECK: %v_nhwc = "kf.copy"(%v) : (tensor<2x4x3x4x4xf32>) -> tensor<2x4x3x4x4xf32, #kf.strided<[192, 1, 64, 16, 4]>>
// CHECK: %s_nhwc = "kf.copy"(%s)
// CHECK: %x_nhwc = "kf.copy"(%x)
// CHECK: %w1_nhwc = "kf.copy"(%w1)
// CHECK: %c1 = "kf.conv"(%x_nhwc, %w1_nhwc, %b1)
// CHECK: %r1 = "kf.relu"(%c1)
// CHECK: %mr = "kf.mean"(%r1)
// CHECK: %gt = "kf.gt"(%r1, %half)
// CHECK: %c2 = "kf.conv"(%r1, %w2_nhwc, %b2)
// CHECK: %a = "kf.add"(%c2, %x_nhwc)
// CHECK: %r2 = "kf.relu"(%a)
// CHECK: %r2_nchw = "kf.copy"(%r2)
// CHECK: %p:2 = "kf.max_pool"(%r2_nchw)
// CHECK: %c3 = "kf.conv"(%s_nhwc, %w3_nhwc, %b3)
// CHECK: %c3_nchw = "kf.copy"(%c3)
// CHECK: %wt_nhwc = "kf.copy"(%wt) : (tensor<4x8x3x3xf32>) -> tensor<4x8x3x3xf32, #kf.strided<[72, 1, 24, 8]>>
// CHECK: %t1 = "kf.conv"(%s_nhwc, %wt_nhwc)
// CHECK: %w4_nhwc = "kf.copy"(%w4) : (tensor<8x4x3x3x3xf32>) -> tensor<8x4x3x3x3xf32, #kf.strided<[108, 1, 36, 12, 4]>>
// CHECK: %c4 = "kf.conv"(%v_nhwc, %w4_nhwc)
// CHECK-SAME: -> tensor<2x8x3x4x4xf32, #kf.strided<[384, 1, 128, 32, 8]>>
// CHECK: %t2 = "kf.conv"(%v, %w5)
// CHECK: "func.return"(%r2_nchw, %p#0, %c3_nchw, %t1_nchw, %c4_nchw, %t2, %mr, %gt_nchw)
// ONCE-COUNT-13: "kf.copy"
// ONCE-NOT: "kf.copy"
// SMALL-NOT: "kf.copy"

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "s"}, {kf.name = "v"}], function_type = (tensor<2x8x6x6xf32>, tensor<2x4x6x6xf32>, tensor<2x4x3x4x4xf32>) -> (tensor<2x8x6x6xf32>, tensor<2x8x3x3xf32>, tensor<2x8x6x6xf32>, tensor<2x8x12x12xf32>, tensor<2x8x3x4x4xf32>, tensor<2x4x4x5x5xf32>, tensor<2x8x1x1xf32>, tensor<2x8x6x6xi1>), sym_name = "cl"}> ({
  ^bb0(%x: tensor<2x8x6x6xf32>, %s: tensor<2x4x6x6xf32>, %v: tensor<2x4x3x4x4xf32>):
    %w1 = "kf.param"() {fqn = "w1", kind = "parameter"} : () -> tensor<8x8x3x3xf32> loc("w1")
    %b1 = "kf.param"() {fqn = "b1", kind = "parameter"} : () -> tensor<8xf32> loc("b1")
    %w2 = "kf.param"() {fqn = "w2", kind = "parameter"} : () -> tensor<8x8x3x3xf32> loc("w2")
    %b2 = "kf.param"() {fqn = "b2", kind = "parameter"} : () -> tensor<8xf32> loc("b2")
    %w3 = "kf.param"() {fqn = "w3", kind = "parameter"} : () -> tensor<8x4x3x3xf32> loc("w3")
    %b3 = "kf.param"() {fqn = "b3", kind = "parameter"} : () -> tensor<8xf32> loc("b3")
    %c1 = "kf.conv"(%x, %w1, %b1) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x8x6x6xf32>, tensor<8x8x3x3xf32>, tensor<8xf32>) -> tensor<2x8x6x6xf32> loc("c1")
    %r1 = "kf.relu"(%c1) : (tensor<2x8x6x6xf32>) -> tensor<2x8x6x6xf32> loc("r1")
    %mr = "kf.mean"(%r1) {dims = array<i64: 2, 3>, keepdim = true} : (tensor<2x8x6x6xf32>) -> tensor<2x8x1x1xf32> loc("mr")
    %half = "kf.scalar"() {value = 0.5 : f64} : () -> f64 loc("half")
    %gt = "kf.gt"(%r1, %half) : (tensor<2x8x6x6xf32>, f64) -> tensor<2x8x6x6xi1> loc("gt")
    %c2 = "kf.conv"(%r1, %w2, %b2) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x8x6x6xf32>, tensor<8x8x3x3xf32>, tensor<8xf32>) -> tensor<2x8x6x6xf32> loc("c2")
    %a = "kf.add"(%c2, %x) : (tensor<2x8x6x6xf32>, tensor<2x8x6x6xf32>) -> tensor<2x8x6x6xf32> loc("a")
    %r2 = "kf.relu"(%a) : (tensor<2x8x6x6xf32>) -> tensor<2x8x6x6xf32> loc("r2")
    %p:2 = "kf.max_pool"(%r2) {ceil_mode = false, dilation = array<i64: 1, 1>, kernel = array<i64: 2, 2>, padding = array<i64: 0, 0>, stride = array<i64: 2, 2>} : (tensor<2x8x6x6xf32>) -> (tensor<2x8x3x3xf32>, tensor<2x8x3x3xi64>) loc("p")
    %c3 = "kf.conv"(%s, %w3, %b3) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x4x6x6xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) -> tensor<2x8x6x6xf32> loc("c3")
    %wt = "kf.param"() {fqn = "wt", kind = "parameter"} : () -> tensor<4x8x3x3xf32> loc("wt")
    %t1 = "kf.conv"(%s, %wt) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 1, 1>, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, transposed = true} : (tensor<2x4x6x6xf32>, tensor<4x8x3x3xf32>) -> tensor<2x8x12x12xf32> loc("t1")
    %w4 = "kf.param"() {fqn = "w4", kind = "parameter"} : () -> tensor<8x4x3x3x3xf32> loc("w4")
    %c4 = "kf.conv"(%v, %w4) {dilation = array<i64: 1, 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0, 0>, padding = array<i64: 1, 1, 1>, stride = array<i64: 1, 1, 1>, transposed = false} : (tensor<2x4x3x4x4xf32>, tensor<8x4x3x3x3xf32>) -> tensor<2x8x3x4x4xf32> loc("c4")
    %w5 = "kf.param"() {fqn = "w5", kind = "parameter"} : () -> tensor<4x2x2x2x2xf32> loc("w5")
    %t2 = "kf.conv"(%v, %w5) {dilation = array<i64: 1, 1, 1>, groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0, 0>, padding = array<i64: 0, 0, 0>, stride = array<i64: 1, 1, 1>, transposed = true} : (tensor<2x4x3x4x4xf32>, tensor<4x2x2x2x2xf32>) -> tensor<2x4x4x5x5xf32> loc("t2")
    "func.return"(%r2, %p#0, %c3, %t1, %c4, %t2, %mr, %gt) : (tensor<2x8x6x6xf32>, tensor<2x8x3x3xf32>, tensor<2x8x6x6xf32>, tensor<2x8x12x12xf32>, tensor<2x8x3x4x4xf32>, tensor<2x4x4x5x5xf32>, tensor<2x8x1x1xf32>, tensor<2x8x6x6xi1>) -> ()
  }) : () -> ()
}) : () -> ()
