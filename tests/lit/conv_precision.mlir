// The math of convolutions under the default precision policy: PyTorch
// lets convolutions use TF32, and so does kfuse whichever way it lowers
// them. %big (a 1x1 convolution with 2^31 result elements, over the 2^31 - 1
// one cuDNN step takes: KernelBench L1 87) runs as two cuDNN steps over
// chunks of its batch (15 and 1 samples); %huge, whose every sample has
// 2^31 result elements, cannot be chunked and goes to the GEMM lowering,
// in TF32 like the cuDNN step it would have been; %small is a cuDNN step.
// With cuDNN off, the GEMM lowering computes in full fp32 (the tests' GEMM
// path, verified against fp32 references at fp32 tolerances). The weights
// are inputs: a text graph carries no weight data.
//
// RUN: %kfuse compile %s -o %t.so -q --report %t.json
// RUN: FileCheck %s < %t.json
// RUN: %kfuse compile %s -o %t2.so -q --no-cudnn --report %t2.json
// RUN: FileCheck %s --check-prefix=NOCUDNN < %t2.json

// CHECK: "ops": ["big (kf.conv)"]
// CHECK: "library": ["cudnn conv tf32", "cudnn conv tf32"]
// CHECK: "ops": ["small (kf.conv)"]
// CHECK: "library": ["cudnn conv tf32"]
// CHECK: "ops": ["huge (kf.conv)"]
// CHECK: "library": ["cublaslt gemm tf32"]
// NOCUDNN: "ops": ["big (kf.conv)"]
// NOCUDNN: "library": ["cublaslt gemm fp32"]
// NOCUDNN: "ops": ["huge (kf.conv)"]
// NOCUDNN: "library": ["cublaslt gemm fp32"]

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "y"}, {kf.name = "w"}, {kf.name = "w2"}, {kf.name = "h"}, {kf.name = "w3"}], function_type = (tensor<16x64x1024x1024xf32>, tensor<2x8x6x6xf32>, tensor<128x64x1x1xf32>, tensor<8x8x3x3xf32>, tensor<1x8x1024x1024xf32>, tensor<2048x8x1x1xf32>) -> (tensor<16x128x1024x1024xf32>, tensor<2x8x6x6xf32>, tensor<1x2048x1024x1024xf32>), sym_name = "convs"}> ({
  ^bb0(%x: tensor<16x64x1024x1024xf32>, %y: tensor<2x8x6x6xf32>, %w: tensor<128x64x1x1xf32>, %w2: tensor<8x8x3x3xf32>, %h: tensor<1x8x1024x1024xf32>, %w3: tensor<2048x8x1x1xf32>):
    %big = "kf.conv"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, transposed = false} : (tensor<16x64x1024x1024xf32>, tensor<128x64x1x1xf32>) -> tensor<16x128x1024x1024xf32> loc("big")
    %small = "kf.conv"(%y, %w2) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<2x8x6x6xf32> loc("small")
    %huge = "kf.conv"(%h, %w3) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, transposed = false} : (tensor<1x8x1024x1024xf32>, tensor<2048x8x1x1xf32>) -> tensor<1x2048x1024x1024xf32> loc("huge")
    "func.return"(%big, %small, %huge) : (tensor<16x128x1024x1024xf32>, tensor<2x8x6x6xf32>, tensor<1x2048x1024x1024xf32>) -> ()
  }) : () -> ()
}) : () -> ()
