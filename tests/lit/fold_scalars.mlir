// fold-scalars turns element-wise ops over fills and scalars into fills
// (chains fold as the sweep goes: mul -> add -> cast), computing the value
// with the op's own semantics and rounding it to the result dtype, and
// removes exact identities: x * 1 and x + (-0.0) go, x + 0.0 stays (it
// turns -0.0 into +0.0), and an identity returned by the graph stays.
//
// RUN: %kfuse opt -p fold-scalars,dce %s | FileCheck %s
// RUN: %kfuse opt -p fold-scalars,dce %s | %kfuse opt - | FileCheck %s

// CHECK-LABEL: ^bb0(%x: tensor<2x3xf32>):
// CHECK-NOT: %m =
// CHECK: %a = "kf.full"() {value = 7.0 : f64} : () -> tensor<2x3xf32>
// CHECK: %third = "kf.full"() {value = 0.333251953125 : f64} : () -> tensor<2x3xf16>
// CHECK: %xs = "kf.mul"(%x, %a)
// CHECK-NOT: %id =
// CHECK: %z = "kf.add"(%xs, %zero)
// CHECK-NOT: %nz =
// CHECK: %out = "kf.mul"(%z, %one_s)
// CHECK: "func.return"(%out, %third)

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf16>), sym_name = "fold_scalars"}> ({
  ^bb0(%x: tensor<2x3xf32>):
    %two = "kf.full"() {value = 2.0 : f64} : () -> tensor<2x3xf32> loc("two")
    %three = "kf.scalar"() {value = 3 : i64} : () -> i64 loc("three")
    %m = "kf.mul"(%two, %three) : (tensor<2x3xf32>, i64) -> tensor<2x3xf32> loc("m")
    %one = "kf.full"() {value = 1.0 : f64} : () -> tensor<3xf32> loc("one")
    %a = "kf.add"(%m, %one) : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32> loc("a")
    %ratio = "kf.div"(%one, %m) : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("ratio")
    %twice = "kf.mul"(%ratio, %two) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("twice")
    %third = "kf.cast"(%twice) : (tensor<2x3xf32>) -> tensor<2x3xf16> loc("third")
    %xs = "kf.mul"(%x, %a) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("xs")
    %one_s = "kf.scalar"() {value = 1 : i64} : () -> i64 loc("one_s")
    %id = "kf.mul"(%xs, %one_s) : (tensor<2x3xf32>, i64) -> tensor<2x3xf32> loc("id")
    %zero = "kf.scalar"() {value = 0.0 : f64} : () -> f64 loc("zero")
    %z = "kf.add"(%id, %zero) : (tensor<2x3xf32>, f64) -> tensor<2x3xf32> loc("z")
    %mzero = "kf.scalar"() {value = -0.0 : f64} : () -> f64 loc("mzero")
    %nz = "kf.add"(%z, %mzero) : (tensor<2x3xf32>, f64) -> tensor<2x3xf32> loc("nz")
    %out = "kf.mul"(%nz, %one_s) : (tensor<2x3xf32>, i64) -> tensor<2x3xf32> loc("out")
    "func.return"(%out, %third) : (tensor<2x3xf32>, tensor<2x3xf16>) -> ()
  }) : () -> ()
}) : () -> ()
