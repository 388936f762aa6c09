// An f32 depthwise convolution (groups = input channels) is strict fp32
// under the default precision policy, as eager PyTorch computes it (its
// own depthwise kernels, no TF32); a grouped one that is not depthwise,
// and every convolution under --precision tf32, may use TF32; none under
// --precision fp32 (strict fp32, PyTorch with cudnn.allow_tf32 = False).
// (agent/builtin_conv.c, cudnn_compute.)
//
// RUN: %kfuse compile %s -o %t.so -q --report %t.json
// RUN: FileCheck %s < %t.json
// RUN: %kfuse compile %s -o %t2.so -q --precision tf32 --report %t2.json
// RUN: FileCheck %s --check-prefix=TF32 < %t2.json
// RUN: %kfuse compile %s -o %t3.so -q --precision fp32 --report %t3.json
// RUN: FileCheck %s --check-prefix=FP32 < %t3.json
// RUN: FileCheck %s --check-prefix=POLICY < %t3.json

// CHECK: "ops": ["dw (kf.conv)"]
// CHECK: "library": ["cudnn conv fp32"]
// CHECK: "ops": ["grouped (kf.conv)"]
// CHECK: "library": ["cudnn conv tf32"]
// TF32: "ops": ["dw (kf.conv)"]
// TF32: "library": ["cudnn conv tf32"]
// TF32: "ops": ["grouped (kf.conv)"]
// TF32: "library": ["cudnn conv tf32"]
// FP32: "ops": ["dw (kf.conv)"]
// FP32: "library": ["cudnn conv fp32"]
// FP32: "ops": ["grouped (kf.conv)"]
// FP32: "library": ["cudnn conv fp32"]
// POLICY: "precision": "fp32"

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "wd"}, {kf.name = "wg"}], function_type = (tensor<2x8x16x16xf32>, tensor<8x1x3x3xf32>, tensor<8x4x3x3xf32>) -> (tensor<2x8x16x16xf32>, tensor<2x8x16x16xf32>), sym_name = "dw"}> ({
  ^bb0(%x: tensor<2x8x16x16xf32>, %wd: tensor<8x1x3x3xf32>, %wg: tensor<8x4x3x3xf32>):
    %dw = "kf.conv"(%x, %wd) {dilation = array<i64: 2, 2>, groups = 8 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 2, 2>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x8x16x16xf32>, tensor<8x1x3x3xf32>) -> tensor<2x8x16x16xf32> loc("dw")
    %grouped = "kf.conv"(%x, %wg) {dilation = array<i64: 1, 1>, groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x8x16x16xf32>, tensor<8x4x3x3xf32>) -> tensor<2x8x16x16xf32> loc("grouped")
    "func.return"(%dw, %grouped) : (tensor<2x8x16x16xf32>, tensor<2x8x16x16xf32>) -> ()
  }) : () -> ()
}) : () -> ()
