// simplify removes identity views, casts and copies and rewires their uses;
// it keeps every op that changes shape, layout or dtype, and a copy of a
// graph input (which materialises it).
//
// RUN: %kfuse opt -p simplify %s | FileCheck %s
// RUN: %kfuse opt -p simplify,dce %s | FileCheck %s
// RUN: %kfuse opt -p simplify %s | %kfuse opt - -p simplify | FileCheck %s

// CHECK-LABEL: ^bb0(%x: tensor<2x3xf32>):
// CHECK-NOT: %same_shape =
// CHECK-NOT: %same_perm =
// CHECK-NOT: %full_slice =
// CHECK-NOT: %same_cast =
// CHECK-NOT: %same_expand =
// CHECK: %e = "kf.exp"(%x)
// CHECK-NOT: %copy_of_e =
// CHECK: %copy_of_x = "kf.copy"(%x)
// CHECK: %flat = "kf.reshape"(%x){{.*}} -> tensor<6xf32>
// CHECK: %tr = "kf.permute"(%x) {dims = array<i64: 1, 0>}
// CHECK: %part = "kf.slice"(%x) {dim = 1 : i64, end = 2 : i64, start = 0 : i64, step = 1 : i64}
// CHECK: %half = "kf.cast"(%x){{.*}} -> tensor<2x3xf16>
// CHECK: %big = "kf.expand"(%x){{.*}} -> tensor<4x2x3xf32, #kf.strided<[0, 3, 1]>>
// CHECK: %sum = "kf.add"(%x, %e)
// CHECK: %sum2 = "kf.add"(%sum, %e)
// CHECK: "func.return"(%sum2, %copy_of_x, %flat, %tr, %part, %half, %big)

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<6xf32>, tensor<3x2xf32, #kf.strided<[1, 3]>>, tensor<2x2xf32, #kf.strided<[3, 1]>>, tensor<2x3xf16>, tensor<4x2x3xf32, #kf.strided<[0, 3, 1]>>), sym_name = "simplify"}> ({
  ^bb0(%x: tensor<2x3xf32>):
    %same_shape = "kf.reshape"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("same_shape")
    %same_perm = "kf.permute"(%same_shape) {dims = array<i64: 0, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("same_perm")
    %full_slice = "kf.slice"(%same_perm) {dim = 1 : i64, end = 3 : i64, start = 0 : i64, step = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("full_slice")
    %same_cast = "kf.cast"(%full_slice) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("same_cast")
    %same_expand = "kf.expand"(%same_cast) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("same_expand")
    %e = "kf.exp"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("e")
    %copy_of_e = "kf.copy"(%e) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("copy_of_e")
    %copy_of_x = "kf.copy"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("copy_of_x")
    %flat = "kf.reshape"(%x) : (tensor<2x3xf32>) -> tensor<6xf32> loc("flat")
    %tr = "kf.permute"(%x) {dims = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32, #kf.strided<[1, 3]>> loc("tr")
    %part = "kf.slice"(%x) {dim = 1 : i64, end = 2 : i64, start = 0 : i64, step = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x2xf32, #kf.strided<[3, 1]>> loc("part")
    %half = "kf.cast"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf16> loc("half")
    %big = "kf.expand"(%x) : (tensor<2x3xf32>) -> tensor<4x2x3xf32, #kf.strided<[0, 3, 1]>> loc("big")
    %sum = "kf.add"(%same_expand, %copy_of_e) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("sum")
    %sum2 = "kf.add"(%sum, %copy_of_e) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("sum2")
    "func.return"(%sum2, %copy_of_x, %flat, %tr, %part, %half, %big) : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<6xf32>, tensor<3x2xf32, #kf.strided<[1, 3]>>, tensor<2x2xf32, #kf.strided<[3, 1]>>, tensor<2x3xf16>, tensor<4x2x3xf32, #kf.strided<[0, 3, 1]>>) -> ()
  }) : () -> ()
}) : () -> ()
