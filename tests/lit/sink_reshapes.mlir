// sink-reshapes computes element-wise ops on the shape of the value a
// contiguous reshape came from and reshapes afterwards, so an epilogue sits
// next to its matrix product: gelu and the residual add move to [8, 8]
// (the residual input is reshaped, the bias covers the shared last dim);
// the multiply by a [4, 1] tensor, which spans a dim the reshape merges,
// stays on [2, 4, 8]. A reshape of a reshape reads the first one's operand
// and vanishes when it gives back that operand's shape.
//
// RUN: %kfuse opt -p sink-reshapes,dce %s | FileCheck %s
// RUN: %kfuse opt -p sink-reshapes,dce %s | %kfuse opt - | FileCheck %s

// CHECK-LABEL: ^bb0(%x: tensor<8x8xf32>, %res: tensor<2x4x8xf32>):
// CHECK: %mm = "kf.mm"(%x, %w)
// CHECK: %g_flat = "kf.gelu"(%mm) {approximate = "none"} : (tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK: %r_in1 = "kf.reshape"(%res) : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
// CHECK: %r_flat = "kf.add"(%g_flat, %r_in1) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK: %bb_flat = "kf.add"(%r_flat, %bias) : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
// CHECK: %bb_view = "kf.reshape"(%bb_flat) : (tensor<8x8xf32>) -> tensor<2x4x8xf32>
// CHECK: %c = "kf.mul"(%bb_view, %rows) : (tensor<2x4x8xf32>, tensor<4x1xf32>) -> tensor<2x4x8xf32>
// CHECK: %mm2 = "kf.mm"(%r_flat, %w)
// CHECK: "func.return"(%c, %mm2)

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "res"}], function_type = (tensor<8x8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8x8xf32>), sym_name = "sink"}> ({
  ^bb0(%x: tensor<8x8xf32>, %res: tensor<2x4x8xf32>):
    %w = "kf.param"() {fqn = "w", kind = "parameter"} : () -> tensor<8x8xf32> loc("w")
    %bias = "kf.param"() {fqn = "bias", kind = "parameter"} : () -> tensor<8xf32> loc("bias")
    %rows = "kf.param"() {fqn = "rows", kind = "parameter"} : () -> tensor<4x1xf32> loc("rows")
    %mm = "kf.mm"(%x, %w) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> loc("mm")
    %v = "kf.reshape"(%mm) : (tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("v")
    %g = "kf.gelu"(%v) {approximate = "none"} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("g")
    %r = "kf.add"(%g, %res) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("r")
    %bb = "kf.add"(%r, %bias) : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32> loc("bb")
    %c = "kf.mul"(%bb, %rows) : (tensor<2x4x8xf32>, tensor<4x1xf32>) -> tensor<2x4x8xf32> loc("c")
    %back = "kf.reshape"(%r) : (tensor<2x4x8xf32>) -> tensor<8x8xf32> loc("back")
    %mm2 = "kf.mm"(%back, %w) : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> loc("mm2")
    "func.return"(%c, %mm2) : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> ()
  }) : () -> ()
}) : () -> ()
