// materialize-outputs gives every graph output memory of its own, so that
// kernels can write outputs in place: a returned input, weight, strided
// view, duplicate, or view of an already returned value gets a kf.copy; a
// computed value and a whole view (a contiguous reshape of a computed value
// returned nowhere else) stay. Running it twice changes nothing more. (A
// scalar output, an error, cannot be written in the text form; the unit
// tests cover it.)
//
// RUN: %kfuse opt -p materialize-outputs %s | FileCheck %s
// RUN: %kfuse opt -p materialize-outputs,materialize-outputs %s | FileCheck %s

// CHECK-LABEL: ^bb0(%x: tensor<2x3xf32>):
// CHECK: %x_out0 = "kf.copy"(%x)
// CHECK-NEXT: %w_out1 = "kf.copy"(%w)
// CHECK-NEXT: %t_out3 = "kf.copy"(%t)
// CHECK-SAME: -> tensor<3x2xf32>
// CHECK-NEXT: %e_out4 = "kf.copy"(%e)
// CHECK-NEXT: %flat_out5 = "kf.copy"(%flat)
// CHECK-NOT: "kf.copy"
// CHECK: "func.return"(%x_out0, %w_out1, %e, %t_out3, %e_out4, %flat_out5, %sflat)

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<3x2xf32, #kf.strided<[1, 3]>>, tensor<2x3xf32>, tensor<6xf32>, tensor<6xf32>), sym_name = "outs"}> ({
  ^bb0(%x: tensor<2x3xf32>):
    %w = "kf.param"() {fqn = "w", kind = "parameter"} : () -> tensor<2x3xf32> loc("w")
    %e = "kf.exp"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("e")
    %t = "kf.permute"(%e) {dims = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32, #kf.strided<[1, 3]>> loc("t")
    %flat = "kf.reshape"(%e) : (tensor<2x3xf32>) -> tensor<6xf32> loc("flat")
    %s = "kf.sin"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("s")
    %sflat = "kf.reshape"(%s) : (tensor<2x3xf32>) -> tensor<6xf32> loc("sflat")
    "func.return"(%x, %w, %e, %t, %e, %flat, %sflat) : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>, tensor<3x2xf32, #kf.strided<[1, 3]>>, tensor<2x3xf32>, tensor<6xf32>, tensor<6xf32>) -> ()
  }) : () -> ()
}) : () -> ()
