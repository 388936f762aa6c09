// A cat takes the element-wise ops computing its pieces (pass/partition.c,
// absorb_cat_pieces): the ReLU epilogues of the two expand convolutions
// (SqueezeNet's fire module, KernelBench L3 17) stay out of their CONV
// groups and are computed by the cat's unit where it writes each slice;
// of the second cat, %g (a plain element-wise piece) is taken, the piece
// %t, also returned, and the input %x are not, nor %e, which an op outside
// the cat reads too. A residual add of a value computed elsewhere (%a3)
// stays the convolution's epilogue: taking it would need the other value's
// group too.
//
// RUN: %kfuse partition %s | FileCheck %s
// RUN: %kfuse partition %s --no-fuse | FileCheck %s --check-prefix=UNFUSED
//
// CHECK: group {{[0-9]+}} conv
// CHECK-NEXT: ops: *c1(kf.conv){{$}}
// CHECK: group {{[0-9]+}} conv
// CHECK-NEXT: ops: *c2(kf.conv){{$}}
// CHECK: group {{[0-9]+}} opaque
// CHECK-NEXT: ops: r1(kf.relu) r2(kf.relu) k(kf.cat){{$}}
// CHECK-NEXT: inputs: %c1 %c2
// CHECK: group {{[0-9]+}} opaque
// CHECK-NEXT: ops: g(kf.sigmoid) k2(kf.cat){{$}}
// CHECK-NEXT: inputs: %x %t %e{{$}}
// CHECK: group {{[0-9]+}} conv
// CHECK-NEXT: ops: *c3(kf.conv) a3(kf.add){{$}}
// CHECK: group {{[0-9]+}} opaque
// CHECK-NEXT: ops: k3(kf.cat){{$}}
// UNFUSED: ops: k(kf.cat){{$}}

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x4x6x6xf32>) -> (tensor<2x8x6x6xf32>, tensor<2x16x6x6xf32>, tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>, tensor<2x8x6x6xf32>), sym_name = "fire"}> ({
  ^bb0(%x: tensor<2x4x6x6xf32>):
    %w1 = "kf.param"() {fqn = "w1", kind = "parameter"} : () -> tensor<5x4x1x1xf32> loc("w1")
    %w2 = "kf.param"() {fqn = "w2", kind = "parameter"} : () -> tensor<3x4x3x3xf32> loc("w2")
    %c1 = "kf.conv"(%x, %w1) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x4x6x6xf32>, tensor<5x4x1x1xf32>) -> tensor<2x5x6x6xf32> loc("c1")
    %r1 = "kf.relu"(%c1) : (tensor<2x5x6x6xf32>) -> tensor<2x5x6x6xf32> loc("r1")
    %c2 = "kf.conv"(%x, %w2) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x4x6x6xf32>, tensor<3x4x3x3xf32>) -> tensor<2x3x6x6xf32> loc("c2")
    %r2 = "kf.relu"(%c2) : (tensor<2x3x6x6xf32>) -> tensor<2x3x6x6xf32> loc("r2")
    %k = "kf.cat"(%r1, %r2) {dim = 1 : i64} : (tensor<2x5x6x6xf32>, tensor<2x3x6x6xf32>) -> tensor<2x8x6x6xf32> loc("k")
    %t = "kf.tanh"(%x) : (tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32> loc("t")
    %e = "kf.exp"(%x) : (tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32> loc("e")
    %g = "kf.sigmoid"(%x) : (tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32> loc("g")
    %k2 = "kf.cat"(%t, %x, %e, %g) {dim = 1 : i64} : (tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>) -> tensor<2x16x6x6xf32> loc("k2")
    %n = "kf.neg"(%e) : (tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32> loc("n")
    %w3 = "kf.param"() {fqn = "w3", kind = "parameter"} : () -> tensor<4x4x1x1xf32> loc("w3")
    %c3 = "kf.conv"(%x, %w3) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x4x6x6xf32>, tensor<4x4x1x1xf32>) -> tensor<2x4x6x6xf32> loc("c3")
    %a3 = "kf.add"(%c3, %t) : (tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32> loc("a3")
    %k3 = "kf.cat"(%a3, %x) {dim = 1 : i64} : (tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>) -> tensor<2x8x6x6xf32> loc("k3")
    "func.return"(%k, %k2, %t, %n, %k3) : (tensor<2x8x6x6xf32>, tensor<2x16x6x6xf32>, tensor<2x4x6x6xf32>, tensor<2x4x6x6xf32>, tensor<2x8x6x6xf32>) -> ()
  }) : () -> ()
}) : () -> ()
