// dense-conv-inputs (pass/conv_input.c): a convolution whose input is a
// strided view that is neither row-major nor channels-last (y: a 1-d
// convolution over a transposed [B, T, C] tensor, as transformers'
// wav2vec2 feeds its positional convolution) reads it through a row-major
// copy placed right before it; a row-major input (z) is left alone. The
// other use of the view (s) keeps reading the view.
//
// RUN: %kfuse opt -p dense-conv-inputs %s | FileCheck %s
//
// CHECK: %p = "kf.permute"(%h)
// CHECK: %p_dense = "kf.copy"(%p) : (tensor<2x6x9xf32, #kf.strided<[54, 1, 6]>>) -> tensor<2x6x9xf32>
// CHECK: %y = "kf.conv"(%p_dense, %w, %b)
// CHECK: %z = "kf.conv"(%x, %w, %b)
// CHECK: %s = "kf.sum"(%p)
// CHECK-NOT: _dense

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "h"}, {kf.name = "x"}, {kf.name = "w"}, {kf.name = "b"}], function_type = (tensor<2x9x6xf32>, tensor<2x6x9xf32>, tensor<6x3x4xf32>, tensor<6xf32>) -> (tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<2x1x9xf32>), sym_name = "dense_conv_inputs"}> ({
  ^bb0(%h: tensor<2x9x6xf32>, %x: tensor<2x6x9xf32>, %w: tensor<6x3x4xf32>, %b: tensor<6xf32>):
    %p = "kf.permute"(%h) {dims = array<i64: 0, 2, 1>} : (tensor<2x9x6xf32>) -> tensor<2x6x9xf32, #kf.strided<[54, 1, 6]>> loc("p")
    %y = "kf.conv"(%p, %w, %b) {dilation = array<i64: 1>, groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0>, padding = array<i64: 1>, stride = array<i64: 1>, transposed = false} : (tensor<2x6x9xf32, #kf.strided<[54, 1, 6]>>, tensor<6x3x4xf32>, tensor<6xf32>) -> tensor<2x6x8xf32> loc("y")
    %z = "kf.conv"(%x, %w, %b) {dilation = array<i64: 1>, groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0>, padding = array<i64: 1>, stride = array<i64: 1>, transposed = false} : (tensor<2x6x9xf32>, tensor<6x3x4xf32>, tensor<6xf32>) -> tensor<2x6x8xf32> loc("z")
    %s = "kf.sum"(%p) {dims = array<i64: 1>, keepdim = true} : (tensor<2x6x9xf32, #kf.strided<[54, 1, 6]>>) -> tensor<2x1x9xf32> loc("s")
    "func.return"(%y, %z, %s) : (tensor<2x6x8xf32>, tensor<2x6x8xf32>, tensor<2x1x9xf32>) -> ()
  }) : () -> ()
}) : () -> ()
