// kfuse partition: fusion groups and the memory plan. A linear layer in
// core-IR form (view -> addmm -> view) gets its element-wise epilogue once
// sink-reshapes has moved the reshape below it; a softmax takes the
// element-wise op after it as its epilogue. Views are groups
// without kernels; weights and scalars are in no group. Two structurally
// identical blocks on different weights and inputs get one key. With
// --no-fuse every op is its own group.
//
// RUN: %kfuse partition %s | FileCheck %s
// RUN: %kfuse partition %s --no-fuse | FileCheck %s --check-prefix=UNFUSED
// RUN: %kfuse partition %s --canonical | FileCheck %s --check-prefix=CANON
// RUN: %kfuse partition %s --precision tf32 | FileCheck %s --check-prefix=TF32
// RUN: not %kfuse partition %s --precision fp8 2>&1 | FileCheck %s --check-prefix=BADPREC

// CHECK: // partition of 'partition': 9 groups (precision default): 4 view 1 reduce 3 gemm 1 opaque
// CHECK-NEXT: // group 0 view key
// CHECK-NEXT: //   ops: wt1(kf.permute)
// CHECK-NEXT: //   inputs: %w1
// CHECK-NEXT: //   outputs: %wt1
// CHECK: // group 3 gemm key
// CHECK-NEXT: //   ops: *mm1(kf.addmm) g1_flat(kf.gelu) r1_flat(kf.add) e_flat(kf.exp)
// CHECK-NEXT: //   inputs: %b1 %xf %wt1 %r1_in1
// CHECK-NEXT: //   outputs: %e_flat
// CHECK: // group 5 reduce key
// CHECK-NEXT: //   ops: *sm(kf.softmax) out(kf.mul)
// CHECK-NEXT: //   inputs: %e_view %half
// CHECK-NEXT: //   outputs: %out
// CHECK: // group 6 gemm key [[KEY:[0-9a-f]+]]
// CHECK-NEXT: //   ops: *p1(kf.addmm) q1(kf.relu)
// CHECK: // group 7 gemm key [[KEY]]
// CHECK-NEXT: //   ops: *p2(kf.addmm) q2(kf.relu)
// CHECK: // group 8 opaque key
// CHECK-NEXT: //   ops: cat(kf.cat)
// CHECK: // 5 groups with kernels (4 distinct keys)
// CHECK: // memory plan: arena 512 B with reuse (768 B without), 3 regions; 2 outputs written in place

// UNFUSED: // partition of 'partition': 15 groups (precision default): 4 view 6 elementwise 1 reduce 3 gemm 1 opaque
// UNFUSED: //   ops: *mm1(kf.addmm)
// UNFUSED-NEXT: //   inputs: %b1 %xf %wt1
// UNFUSED: //   ops: g1_flat(kf.gelu)
// UNFUSED: // memory plan: arena 768 B with reuse (2.25 KiB without), 9 regions; 2 outputs written in place

// CANON: // canonical form of group 6 (key [[KEY:[0-9a-f]+]]):
// CANON-NEXT: //   kfuse-group-v1
// CANON-NEXT: //   kind gemm
// CANON-NEXT: //   precision default
// CANON-NEXT: //   anchor %0
// CANON-NEXT: //   in %i0: f32[8] strides [1] offset 0
// CANON-NEXT: //   in %i1: f32[8,8] strides [8,1] offset 0
// CANON-NEXT: //   in %i2: f32[8,8] strides [8,1] offset 0
// CANON-NEXT: //   %0 = kf.addmm(%i0, %i1, %i2) {beta=i64 1, alpha=i64 1} -> f32[8,8] strides [8,1] offset 0
// CANON-NEXT: //   %1 = kf.relu(%0) -> f32[8,8] strides [8,1] offset 0
// CANON-NEXT: //   out %1
// CANON: // canonical form of group 7 (key [[KEY]]):

// TF32: // partition of 'partition': 9 groups (precision tf32)
// TF32: // group 6 gemm key [[KEY:[0-9a-f]+]]
// TF32: // group 7 gemm key [[KEY]]

// BADPREC: kfuse: error: partition: --precision takes default, tf32, bf16, fp16 or fp32, not 'fp8'

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "y"}, {kf.name = "z"}], function_type = (tensor<2x4x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> (tensor<2x4x8xf32>, tensor<16x8xf32>), sym_name = "partition"}> ({
  ^bb0(%x: tensor<2x4x8xf32>, %y: tensor<8x8xf32>, %z: tensor<8x8xf32>):
    %w1 = "kf.param"() {fqn = "l1.weight", kind = "parameter"} : () -> tensor<8x8xf32> loc("w1")
    %b1 = "kf.param"() {fqn = "l1.bias", kind = "parameter"} : () -> tensor<8xf32> loc("b1")
    %wt1 = "kf.permute"(%w1) {dims = array<i64: 1, 0>} : (tensor<8x8xf32>) -> tensor<8x8xf32, #kf.strided<[1, 8]>> loc("wt1")
    %xf = "kf.reshape"(%x) : (tensor<2x4x8xf32>) -> tensor<8x8xf32> loc("xf")
    %mm1 = "kf.addmm"(%b1, %xf, %wt1) {alpha = 1 : i64, beta = 1 : i64} : (tensor<8xf32>, tensor<8x8xf32>, tensor<8x8xf32, #kf.strided<[1, 8]>>) -> tensor<8x8xf32> loc("mm1")
    %mv1 = "kf.reshape"(%mm1) : (tensor<8x8xf32>) -> tensor<2x4x8xf32> loc("mv1")
    %g1 = "kf.gelu"(%mv1) {approximate = "tanh"} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("g1")
    %r1 = "kf.add"(%g1, %x) : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("r1")
    %e = "kf.exp"(%r1) : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("e")
    %sm = "kf.softmax"(%e) {dim = 2 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32> loc("sm")
    %half = "kf.scalar"() {value = 0.5 : f64} : () -> f64 loc("half")
    %out = "kf.mul"(%sm, %half) : (tensor<2x4x8xf32>, f64) -> tensor<2x4x8xf32> loc("out")
    %w2 = "kf.param"() {fqn = "a.weight", kind = "parameter"} : () -> tensor<8x8xf32> loc("w2")
    %b2 = "kf.param"() {fqn = "a.bias", kind = "parameter"} : () -> tensor<8xf32> loc("b2")
    %p1 = "kf.addmm"(%b2, %y, %w2) {alpha = 1 : i64, beta = 1 : i64} : (tensor<8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> loc("p1")
    %q1 = "kf.relu"(%p1) : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("q1")
    %w3 = "kf.param"() {fqn = "b.weight", kind = "parameter"} : () -> tensor<8x8xf32> loc("w3")
    %b3 = "kf.param"() {fqn = "b.bias", kind = "parameter"} : () -> tensor<8xf32> loc("b3")
    %p2 = "kf.addmm"(%b3, %z, %w3) {alpha = 1 : i64, beta = 1 : i64} : (tensor<8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32> loc("p2")
    %q2 = "kf.relu"(%p2) : (tensor<8x8xf32>) -> tensor<8x8xf32> loc("q2")
    %cat = "kf.cat"(%q1, %q2) {dim = 0 : i64} : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<16x8xf32> loc("cat")
    "func.return"(%out, %cat) : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> ()
  }) : () -> ()
}) : () -> ()
