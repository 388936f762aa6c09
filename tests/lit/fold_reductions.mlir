// fold-reductions: a sum over a product's columns becomes the product of
// the summed columns (here B is an input: a sum op; the subtracted vector
// and the division by 2 move past the sum, 24 x 0.25 = 6), the reductions
// over the size-1 dim that leaves fold away (amax; max_dim's indices become
// zeros; softmax (x - x) + 1), a mean over an addmm with constant weight and
// bias reads folded constants and divides by N, a sum of a sum is one sum.
//
// RUN: %kfuse opt -p fold-reductions,dce %s | FileCheck %s
// RUN: %kfuse opt -p fold-reductions,dce %s | %kfuse opt - | FileCheck %s
// RUN: %kfuse opt -p dce %s | FileCheck %s --check-prefix=KEEP

// CHECK-LABEL: ^bb0(
// CHECK: %colsum = "kf.sum"(%b) {dims = array<i64: 1>, keepdim = true} : (tensor<40x24xf32>) -> tensor<40x1xf32>
// CHECK-NEXT: %summed_mm = "kf.mm"(%x, %colsum) : (tensor<16x40xf32>, tensor<40x1xf32>) -> tensor<16x1xf32>
// CHECK: "kf.div"(%summed_mm, %two)
// CHECK: "kf.neg"
// CHECK: %summed_term = "kf.scalar"() {value = 6.0 : f64}
// CHECK: %summed_2 = "kf.sub"(%summed_1, %summed_term)
// CHECK: %unit_index = "kf.full"() {value = 0 : i64} : () -> tensor<16x1xi64>
// CHECK: %unit_softmax = "kf.sub"(%summed_2, %summed_2)
// CHECK: "kf.add"(%unit_softmax, %one)
// CHECK: "kf.param"() {fqn = "am2.colsum", kind = "folded"} : () -> tensor<40x1xf32>
// CHECK: "kf.param"() {fqn = "bias.rowsum", kind = "folded"} : () -> tensor<1xf32>
// CHECK: %summed_addmm = "kf.addmm"
// CHECK: %summed_n = "kf.scalar"() {value = 24 : i64}
// CHECK: %merged_reduce = "kf.sum"(%y) {dims = array<i64: 1, 2>, keepdim = true} : (tensor<3x5x7xf32>) -> tensor<3x1x1xf32>
// CHECK-NEXT: "kf.reshape"(%merged_reduce) : (tensor<3x1x1xf32>) -> tensor<3xf32>
// CHECK-NOT: "kf.amax"
// CHECK-NOT: "kf.max_dim"
// CHECK-NOT: "kf.softmax"
// CHECK-NOT: "kf.mean"
// KEEP: %mm = "kf.mm"(%x, %b) : (tensor<16x40xf32>, tensor<40x24xf32>) -> tensor<16x24xf32>
// KEEP: "kf.softmax"

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "b"}, {kf.name = "y"}], function_type = (tensor<16x40xf32>, tensor<40x24xf32>, tensor<3x5x7xf32>) -> (tensor<16x1xf32>, tensor<16x1xi64>, tensor<16x1xf32>, tensor<16xf32>, tensor<3xf32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<16x40xf32>, %b: tensor<40x24xf32>, %y: tensor<3x5x7xf32>):
    %mm = "kf.mm"(%x, %b) : (tensor<16x40xf32>, tensor<40x24xf32>) -> tensor<16x24xf32> loc("mm")
    %two = "kf.scalar"() {value = 2 : i64} : () -> i64 loc("two")
    %d = "kf.div"(%mm, %two) : (tensor<16x24xf32>, i64) -> tensor<16x24xf32> loc("d")
    %n = "kf.neg"(%d) : (tensor<16x24xf32>) -> tensor<16x24xf32> loc("n")
    %cv = "kf.full"() {value = 0.25 : f64} : () -> tensor<24xf32> loc("cv")
    %sb = "kf.sub"(%n, %cv) : (tensor<16x24xf32>, tensor<24xf32>) -> tensor<16x24xf32> loc("sb")
    %s = "kf.sum"(%sb) {dims = array<i64: 1>, keepdim = true} : (tensor<16x24xf32>) -> tensor<16x1xf32> loc("s")
    %am = "kf.amax"(%s) {dims = array<i64: 1>, keepdim = true} : (tensor<16x1xf32>) -> tensor<16x1xf32> loc("am")
    %mx:2 = "kf.max_dim"(%am) {dim = 1 : i64, keepdim = true} : (tensor<16x1xf32>) -> (tensor<16x1xf32>, tensor<16x1xi64>) loc("mx")
    %sm = "kf.softmax"(%mx#0) {dim = 1 : i64} : (tensor<16x1xf32>) -> tensor<16x1xf32> loc("sm")
    %w = "kf.full"() {value = 0.125 : f64} : () -> tensor<40x24xf32> loc("w")
    %bias = "kf.full"() {value = -0.5 : f64} : () -> tensor<24xf32> loc("bias")
    %am2 = "kf.addmm"(%bias, %x, %w) {alpha = 1 : i64, beta = 1 : i64} : (tensor<24xf32>, tensor<16x40xf32>, tensor<40x24xf32>) -> tensor<16x24xf32> loc("am2")
    %me = "kf.mean"(%am2) {dims = array<i64: 1>, keepdim = false} : (tensor<16x24xf32>) -> tensor<16xf32> loc("me")
    %y1 = "kf.sum"(%y) {dims = array<i64: 2>, keepdim = false} : (tensor<3x5x7xf32>) -> tensor<3x5xf32> loc("y1")
    %y2 = "kf.sum"(%y1) {dims = array<i64: 1>, keepdim = false} : (tensor<3x5xf32>) -> tensor<3xf32> loc("y2")
    "func.return"(%mx#0, %mx#1, %sm, %me, %y2) : (tensor<16x1xf32>, tensor<16x1xi64>, tensor<16x1xf32>, tensor<16xf32>, tensor<3xf32>) -> ()
  }) : () -> ()
}) : () -> ()
