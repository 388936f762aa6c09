// dce removes every op whose results never reach a graph output, including
// chains of dead ops and dead params; an op with several results stays when
// any of them is used.
//
// RUN: %kfuse opt -p dce %s | FileCheck %s
// RUN: %kfuse opt -p dce %s | %kfuse opt - | FileCheck %s
// Without the pass nothing is removed:
// RUN: %kfuse opt %s | FileCheck %s --check-prefix=KEEP

// CHECK-LABEL: ^bb0(%x: tensor<4x5xf32>):
// CHECK-NOT: "kf.param"
// CHECK-NOT: %dead
// CHECK: %live = "kf.exp"(%x)
// CHECK-NOT: %dead
// CHECK: %mx:2 = "kf.max_dim"(%live)
// CHECK-NOT: %dead
// CHECK: %out = "kf.add"(%live, %mx#0)
// CHECK-NOT: %dead
// CHECK: "func.return"(%out, %mx#1)

// KEEP: %unused_w = "kf.param"
// KEEP: %dead1 = "kf.neg"
// KEEP: %dead2 = "kf.sigmoid"(%dead1)
// KEEP: %dead3 = "kf.mul"(%dead2, %unused_w)
// KEEP: %dead_multi:2 = "kf.min_dim"

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<4x5xf32>) -> (tensor<4x5xf32>, tensor<4x1xi64>), sym_name = "dce"}> ({
  ^bb0(%x: tensor<4x5xf32>):
    %unused_w = "kf.param"() {fqn = "w", kind = "parameter"} : () -> tensor<4x5xf32> loc("unused_w")
    %dead1 = "kf.neg"(%x) : (tensor<4x5xf32>) -> tensor<4x5xf32> loc("dead1")
    %live = "kf.exp"(%x) : (tensor<4x5xf32>) -> tensor<4x5xf32> loc("live")
    %dead2 = "kf.sigmoid"(%dead1) : (tensor<4x5xf32>) -> tensor<4x5xf32> loc("dead2")
    %dead3 = "kf.mul"(%dead2, %unused_w) : (tensor<4x5xf32>, tensor<4x5xf32>) -> tensor<4x5xf32> loc("dead3")
    %mx:2 = "kf.max_dim"(%live) {dim = 1 : i64, keepdim = true} : (tensor<4x5xf32>) -> (tensor<4x1xf32>, tensor<4x1xi64>) loc("mx")
    %dead_multi:2 = "kf.min_dim"(%dead3) {dim = 0 : i64, keepdim = false} : (tensor<4x5xf32>) -> (tensor<5xf32>, tensor<5xi64>) loc("dead_multi")
    %out = "kf.add"(%live, %mx#0) : (tensor<4x5xf32>, tensor<4x1xf32>) -> tensor<4x5xf32> loc("out")
    "func.return"(%out, %mx#1) : (tensor<4x5xf32>, tensor<4x1xi64>) -> ()
  }) : () -> ()
}) : () -> ()
