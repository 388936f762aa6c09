// channels-last gives 2-d convolutions with channels multiples of 8 NHWC
// activations: the graph input is copied once (%x_nhwc, shared by conv c1
// and the residual add), the weights are copied to KRSC (no weight data in
// a text graph, so a kf.copy rather than a new constant), relu and add
// follow the layout, the max pool reads a row-major copy, and the graph
// outputs are row-major copies. conv c3 (4 input channels) keeps NCHW.
// Strides are not part of the textual form: the copies show the layout.
//
// RUN: %kfuse opt -p channels-last %s | FileCheck %s
// RUN: %kfuse opt -p channels-last,dce %s | FileCheck %s --check-prefix=ONCE

// CHECK-LABEL: ^bb0(%x: tensor<2x8x6x6xf32>, %s: tensor<2x4x6x6xf32>):
// CHECK: %x_nhwc = "kf.copy"(%x)
// CHECK: %w1_nhwc = "kf.copy"(%w1)
// CHECK: %c1 = "kf.conv"(%x_nhwc, %w1_nhwc, %b1)
// CHECK: %r1 = "kf.relu"(%c1)
// CHECK: %c2 = "kf.conv"(%r1, %w2_nhwc, %b2)
// CHECK: %a = "kf.add"(%c2, %x_nhwc)
// CHECK: %r2 = "kf.relu"(%a)
// CHECK: %r2_nchw = "kf.copy"(%r2)
// CHECK: %p:2 = "kf.max_pool"(%r2_nchw)
// CHECK: %c3 = "kf.conv"(%s, %w3, %b3)
// CHECK: "func.return"(%r2_nchw, %p#0, %c3)
// ONCE-COUNT-4: "kf.copy"
// ONCE-NOT: "kf.copy"

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "s"}], function_type = (tensor<2x8x6x6xf32>, tensor<2x4x6x6xf32>) -> (tensor<2x8x6x6xf32>, tensor<2x8x3x3xf32>, tensor<2x8x6x6xf32>), sym_name = "cl"}> ({
  ^bb0(%x: tensor<2x8x6x6xf32>, %s: tensor<2x4x6x6xf32>):
    %w1 = "kf.param"() {fqn = "w1", kind = "parameter"} : () -> tensor<8x8x3x3xf32> loc("w1")
    %b1 = "kf.param"() {fqn = "b1", kind = "parameter"} : () -> tensor<8xf32> loc("b1")
    %w2 = "kf.param"() {fqn = "w2", kind = "parameter"} : () -> tensor<8x8x3x3xf32> loc("w2")
    %b2 = "kf.param"() {fqn = "b2", kind = "parameter"} : () -> tensor<8xf32> loc("b2")
    %w3 = "kf.param"() {fqn = "w3", kind = "parameter"} : () -> tensor<8x4x3x3xf32> loc("w3")
    %b3 = "kf.param"() {fqn = "b3", kind = "parameter"} : () -> tensor<8xf32> loc("b3")
    %c1 = "kf.conv"(%x, %w1, %b1) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x8x6x6xf32>, tensor<8x8x3x3xf32>, tensor<8xf32>) -> tensor<2x8x6x6xf32> loc("c1")
    %r1 = "kf.relu"(%c1) : (tensor<2x8x6x6xf32>) -> tensor<2x8x6x6xf32> loc("r1")
    %c2 = "kf.conv"(%r1, %w2, %b2) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x8x6x6xf32>, tensor<8x8x3x3xf32>, tensor<8xf32>) -> tensor<2x8x6x6xf32> loc("c2")
    %a = "kf.add"(%c2, %x) : (tensor<2x8x6x6xf32>, tensor<2x8x6x6xf32>) -> tensor<2x8x6x6xf32> loc("a")
    %r2 = "kf.relu"(%a) : (tensor<2x8x6x6xf32>) -> tensor<2x8x6x6xf32> loc("r2")
    %p:2 = "kf.max_pool"(%r2) {ceil_mode = false, dilation = array<i64: 1, 1>, kernel = array<i64: 2, 2>, padding = array<i64: 0, 0>, stride = array<i64: 2, 2>} : (tensor<2x8x6x6xf32>) -> (tensor<2x8x3x3xf32>, tensor<2x8x3x3xi64>) loc("p")
    %c3 = "kf.conv"(%s, %w3, %b3) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x4x6x6xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) -> tensor<2x8x6x6xf32> loc("c3")
    "func.return"(%r2, %p#0, %c3) : (tensor<2x8x6x6xf32>, tensor<2x8x3x3xf32>, tensor<2x8x6x6xf32>) -> ()
  }) : () -> ()
}) : () -> ()
