// `kfuse info` on IR text: the partition-ready IR (default pipeline) and the
// summary of what the model needs: inputs, outputs, op counts, weights and
// activation memory.
//
// RUN: %kfuse info %s | FileCheck %s
// RUN: %kfuse info --no-ir %s | FileCheck %s --check-prefix=NOIR
// RUN: %kfuse info -p dce %s | FileCheck %s --check-prefix=DCEONLY

// CHECK: "func.func"
// CHECK-NOT: "kf.neg"
// CHECK-NOT: "kf.reshape"(%x) {{.*}} -> tensor<4x8xf32>
// CHECK: %w = "kf.param"() {fqn = "enc.weight", kind = "parameter"}
// CHECK: %e = "kf.exp"(%x)
// CHECK: %y = "kf.add"(%e, %w)
// CHECK: %flat = "kf.reshape"(%y){{.*}} -> tensor<32xf32>
// CHECK: %s = "kf.sum"(%flat)
// CHECK: // model 'info' from {{.*}}info.mlir
// CHECK-NEXT: // inputs:
// CHECK-NEXT: //   x {{ *}}tensor<4x8xf32>
// CHECK-NEXT: // outputs:
// CHECK-NEXT: //   #0 {{ *}}tensor<f32>
// CHECK-NEXT: //   #1 {{ *}}tensor<4x8xf32>
// CHECK-NEXT: // ops: 5 after pipeline 'simplify,dce' (8 before)
// CHECK-DAG: //   exp {{ *}}1
// CHECK-DAG: //   add {{ *}}1
// CHECK-DAG: //   reshape {{ *}}1
// CHECK-DAG: //   sum {{ *}}1
// CHECK: // weights: 2 tensors, 160 B stored (1 referenced after the pipeline)
// exp and add (128 B each) and sum (4 B); reshape is a view of add.
// CHECK-NEXT: // activations: 260 B materialised in all, 260 B peak live

// NOIR-NOT: "func.func"
// NOIR: // ops: 5 after pipeline

// DCEONLY: %same = "kf.reshape"
// DCEONLY: // ops: 6 after pipeline 'dce' (8 before)

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<4x8xf32>) -> (tensor<f32>, tensor<4x8xf32>), sym_name = "info"}> ({
  ^bb0(%x: tensor<4x8xf32>):
    %w = "kf.param"() {fqn = "enc.weight", kind = "parameter"} : () -> tensor<4x8xf32> loc("w")
    %unused = "kf.param"() {fqn = "enc.bias", kind = "buffer"} : () -> tensor<8xf32> loc("unused")
    %dead = "kf.neg"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("dead")
    %same = "kf.reshape"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("same")
    %e = "kf.exp"(%same) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("e")
    %y = "kf.add"(%e, %w) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("y")
    %flat = "kf.reshape"(%y) : (tensor<4x8xf32>) -> tensor<32xf32> loc("flat")
    %s = "kf.sum"(%flat) {dims = array<i64: 0>, keepdim = false} : (tensor<32xf32>) -> tensor<f32> loc("s")
    "func.return"(%s, %e) : (tensor<f32>, tensor<4x8xf32>) -> ()
  }) : () -> ()
}) : () -> ()
