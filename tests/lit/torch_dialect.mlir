// torch-mlir's torch dialect in generic form goes through the same ATen
// lowering as .pt2 archives: constants and lists become arguments, literals
// become kf.param constants with data, and the result is verified kf IR.
//
// RUN: %kfuse opt %s | FileCheck %s
// RUN: %kfuse opt %s -o %t.mlir
// RUN: %kfuse opt %t.mlir | diff %t.mlir -
// RUN: %kfuse info %s --no-ir | FileCheck %s --check-prefix=INFO

// CHECK: "func.func"() <{arg_attrs = [{kf.name = "arg0"}], function_type = (tensor<2x4xf32>) -> (tensor<2x3xf32>), sym_name = "forward"}>
// CHECK: %w = "kf.param"() {fqn = "w", kind = "constant"} : () -> tensor<3x4xf32> loc("w")
// CHECK: %b = "kf.param"() {fqn = "b", kind = "constant"} : () -> tensor<3xf32> loc("b")
// CHECK: "kf.permute"(%w) {dims = array<i64: 1, 0>}
// CHECK: "kf.addmm"(%b, %arg0,
// CHECK: "kf.relu"
// CHECK: "kf.add"(%relu, %linear) :
// CHECK: "kf.softmax"({{.*}}) {dim = 1 : i64}
// CHECK: "func.return"
// INFO: weights: 2 tensors, 60 B stored

"builtin.module"() ({
  "func.func"() <{function_type = (!torch.vtensor<[2,4],f32>) -> !torch.vtensor<[2,3],f32>, sym_name = "forward"}> ({
  ^bb0(%arg0: !torch.vtensor<[2,4],f32>):
    %w = "torch.vtensor.literal"() {value = dense<[[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.5]]> : tensor<3x4xf32>} : () -> !torch.vtensor<[3,4],f32> loc("w")
    %b = "torch.vtensor.literal"() {value = dense<0.25> : tensor<3xf32>} : () -> !torch.vtensor<[3],f32> loc("b")
    %0 = "torch.aten.linear"(%arg0, %w, %b) : (!torch.vtensor<[2,4],f32>, !torch.vtensor<[3,4],f32>, !torch.vtensor<[3],f32>) -> !torch.vtensor<[2,3],f32> loc("linear")
    %1 = "torch.aten.relu"(%0) : (!torch.vtensor<[2,3],f32>) -> !torch.vtensor<[2,3],f32> loc("relu")
    %int1 = "torch.constant.int"() {value = 1 : i64} : () -> !torch.int
    %2 = "torch.aten.add.Tensor"(%1, %0, %int1) : (!torch.vtensor<[2,3],f32>, !torch.vtensor<[2,3],f32>, !torch.int) -> !torch.vtensor<[2,3],f32> loc("add")
    %none = "torch.constant.none"() : () -> !torch.none
    %false = "torch.constant.bool"() {value = false} : () -> !torch.bool
    %3 = "torch.aten._softmax"(%2, %int1, %false) : (!torch.vtensor<[2,3],f32>, !torch.int, !torch.bool) -> !torch.vtensor<[2,3],f32> loc("softmax")
    "func.return"(%3) : (!torch.vtensor<[2,3],f32>) -> ()
  }) : () -> ()
}) : () -> ()
