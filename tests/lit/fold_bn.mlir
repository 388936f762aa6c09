// fold-bn folds an inference batch norm into the convolution before it when
// the convolution's result has no other use: the conv reads new graph-owned
// constants (kf.param kind "folded") for its weight and bias. A batch norm
// it cannot fold that way (here the conv result is also read by the add)
// becomes a per-channel multiply-add over [C, 1, 1] constants. Text models
// carry no weight data, so the constants here are fills.
//
// RUN: %kfuse opt -p fold-bn,dce %s | FileCheck %s
// RUN: %kfuse opt -p fold-bn,dce %s | %kfuse opt - | FileCheck %s
// Without the pass both batch norms stay:
// RUN: %kfuse opt -p dce %s | FileCheck %s --check-prefix=KEEP

// CHECK-LABEL: ^bb0(%x: tensor<2x3x8x8xf32>):
// CHECK-NOT: "kf.batch_norm"
// CHECK: %conv_w_folded = "kf.param"() {fqn = "conv.bn_folded", kind = "folded"} : () -> tensor<4x3x3x3xf32>
// CHECK: %conv_b_folded = "kf.param"() {fqn = "conv.bn_folded_bias", kind = "folded"} : () -> tensor<4xf32>
// CHECK: %conv = "kf.conv"(%x, %conv_w_folded, %conv_b_folded)
// CHECK: %relu = "kf.relu"(%conv)
// CHECK: %conv2 = "kf.conv"(%x, %w)
// CHECK: %bn2_scale = "kf.param"() {fqn = "bn2.scale", kind = "folded"} : () -> tensor<4x1x1xf32>
// CHECK: %bn2_shift = "kf.param"() {fqn = "bn2.shift", kind = "folded"} : () -> tensor<4x1x1xf32>
// CHECK: %bn2_mul = "kf.mul"(%conv2, %bn2_scale)
// CHECK: %bn2_add = "kf.add"(%bn2_mul, %bn2_shift)
// CHECK: %sum = "kf.add"(%bn2_add, %conv2)
// CHECK-NOT: "kf.batch_norm"
// CHECK: "func.return"(%relu, %sum)

// KEEP: %bn = "kf.batch_norm"(%conv,
// KEEP: %bn2 = "kf.batch_norm"(%conv2,

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x3x8x8xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>), sym_name = "fold_bn"}> ({
  ^bb0(%x: tensor<2x3x8x8xf32>):
    %w = "kf.full"() {value = 0.5 : f64} : () -> tensor<4x3x3x3xf32> loc("w")
    %g = "kf.full"() {value = 2.0 : f64} : () -> tensor<4xf32> loc("g")
    %b = "kf.full"() {value = 0.25 : f64} : () -> tensor<4xf32> loc("b")
    %m = "kf.full"() {value = 0.125 : f64} : () -> tensor<4xf32> loc("m")
    %v = "kf.full"() {value = 3.0 : f64} : () -> tensor<4xf32> loc("v")
    %conv = "kf.conv"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32> loc("conv")
    %bn = "kf.batch_norm"(%conv, %g, %b, %m, %v) {eps = 1.0e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32> loc("bn")
    %relu = "kf.relu"(%bn) : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32> loc("relu")
    %conv2 = "kf.conv"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<2x4x8x8xf32> loc("conv2")
    %bn2 = "kf.batch_norm"(%conv2, %g, %b, %m, %v) {eps = 1.0e-05 : f64, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<2x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4x8x8xf32> loc("bn2")
    %sum = "kf.add"(%bn2, %conv2) : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32> loc("sum")
    "func.return"(%relu, %sum) : (tensor<2x4x8x8xf32>, tensor<2x4x8x8xf32>) -> ()
  }) : () -> ()
}) : () -> ()
