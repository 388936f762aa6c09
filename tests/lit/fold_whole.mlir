// fold-reductions, rewrite 4: a reduction over every dim of a contiguous
// model input becomes the reduction of its 1-d view (norm without keepdim;
// sum with keepdim, reshaped back to [1, 1, 1]); a reduction over some
// dims, and one of a computed value (exp(x): it would be written to memory
// for the view), stay as they are.
//
// RUN: %kfuse opt -p fold-reductions,dce %s | FileCheck %s
// RUN: %kfuse opt -p fold-reductions,dce %s | %kfuse opt - | FileCheck %s

// CHECK-LABEL: ^bb0(
// CHECK: %flat = "kf.reshape"(%x) : (tensor<4x6x8xf32>) -> tensor<192xf32>
// CHECK-NEXT: %whole_reduce = "kf.norm"(%flat) {dims = array<i64: 0>, keepdim = false, ord = 2.0 : f64} : (tensor<192xf32>) -> tensor<f32>
// CHECK: "kf.div"(%x, %whole_reduce)
// CHECK: %[[F:.*]] = "kf.reshape"(%x) : (tensor<4x6x8xf32>) -> tensor<192xf32>
// CHECK-NEXT: %[[S:.*]] = "kf.sum"(%[[F]]) {dims = array<i64: 0>, keepdim = true} : (tensor<192xf32>) -> tensor<1xf32>
// CHECK-NEXT: "kf.reshape"(%[[S]]) : (tensor<1xf32>) -> tensor<1x1x1xf32>
// CHECK: "kf.mean"(%x) {dims = array<i64: 1, 2>, keepdim = false} : (tensor<4x6x8xf32>) -> tensor<4xf32>
// CHECK: "kf.amax"(%e) {dims = array<i64: 0, 1, 2>, keepdim = false} : (tensor<4x6x8xf32>) -> tensor<f32>

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<4x6x8xf32>) -> (tensor<4x6x8xf32>, tensor<1x1x1xf32>, tensor<4xf32>, tensor<f32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<4x6x8xf32>):
    %n = "kf.norm"(%x) {dims = array<i64: 0, 1, 2>, keepdim = false, ord = 2.0 : f64} : (tensor<4x6x8xf32>) -> tensor<f32> loc("n")
    %y = "kf.div"(%x, %n) : (tensor<4x6x8xf32>, tensor<f32>) -> tensor<4x6x8xf32> loc("y")
    %s = "kf.sum"(%x) {dims = array<i64: 0, 1, 2>, keepdim = true} : (tensor<4x6x8xf32>) -> tensor<1x1x1xf32> loc("s")
    %m = "kf.mean"(%x) {dims = array<i64: 1, 2>, keepdim = false} : (tensor<4x6x8xf32>) -> tensor<4xf32> loc("m")
    %e = "kf.exp"(%x) : (tensor<4x6x8xf32>) -> tensor<4x6x8xf32> loc("e")
    %a = "kf.amax"(%e) {dims = array<i64: 0, 1, 2>, keepdim = false} : (tensor<4x6x8xf32>) -> tensor<f32> loc("a")
    "func.return"(%y, %s, %m, %a) : (tensor<4x6x8xf32>, tensor<1x1x1xf32>, tensor<4xf32>, tensor<f32>) -> ()
  }) : () -> ()
}) : () -> ()
