// torch dialect: list arguments (ListConstruct of torch.constant.int), views
// and reductions, and a result type that contradicts the op is an error.
//
// RUN: %kfuse opt %s | FileCheck %s
// RUN: sed -e 's/\[6\],f32/[5],f32/g' %s > %t.bad.mlir
// RUN: not %kfuse opt %t.bad.mlir 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: sed -e 's/\[2,3,4\],f32/[2,?,4],f32/g' %s > %t.dyn.mlir
// RUN: not %kfuse opt %t.dyn.mlir 2>&1 | FileCheck %s --check-prefix=DYN
// RUN: sed -e 's/torch.aten.sum.dim_IntList/torch.aten.frobnicate/' %s > %t.op.mlir
// RUN: not %kfuse opt %t.op.mlir 2>&1 | FileCheck %s --check-prefix=OP

// CHECK: "kf.reshape"(%arg0) : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK: "kf.sum"({{.*}}) {dims = array<i64: 1>, keepdim = false} : (tensor<6x4xf32>) -> tensor<6xf32>
// BAD: error: {{.*}}node 'sum'{{.*}}
// DYN: error: {{.*}}dynamic dimension
// OP: error: {{.*}}frobnicate

"builtin.module"() ({
  "func.func"() <{function_type = (!torch.vtensor<[2,3,4],f32>) -> !torch.vtensor<[6],f32>, sym_name = "forward"}> ({
  ^bb0(%arg0: !torch.vtensor<[2,3,4],f32>):
    %int6 = "torch.constant.int"() {value = 6 : i64} : () -> !torch.int
    %int4 = "torch.constant.int"() {value = 4 : i64} : () -> !torch.int
    %intm1 = "torch.constant.int"() {value = -1 : i64} : () -> !torch.int
    %shape = "torch.prim.ListConstruct"(%int6, %int4) : (!torch.int, !torch.int) -> !torch.list<int>
    %0 = "torch.aten.view"(%arg0, %shape) : (!torch.vtensor<[2,3,4],f32>, !torch.list<int>) -> !torch.vtensor<[6,4],f32> loc("view")
    %dims = "torch.prim.ListConstruct"(%intm1) : (!torch.int) -> !torch.list<int>
    %false = "torch.constant.bool"() {value = false} : () -> !torch.bool
    %none = "torch.constant.none"() : () -> !torch.none
    %1 = "torch.aten.sum.dim_IntList"(%0, %dims, %false, %none) : (!torch.vtensor<[6,4],f32>, !torch.list<int>, !torch.bool, !torch.none) -> !torch.vtensor<[6],f32> loc("sum")
    "func.return"(%1) : (!torch.vtensor<[6],f32>) -> ()
  }) : () -> ()
}) : () -> ()
