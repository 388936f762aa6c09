// A cat piece PyTorch's cat promotes (an f16 sigmoid into an f32 cat) is
// not taken by the cat (pass/partition.c, absorb_cat_pieces): the cat's
// unit stores each computed piece as the cat's elements, so it would have
// had to refuse the group. The f32 piece is taken, and the module builds.
//
// RUN: %kfuse partition %s | FileCheck %s
// RUN: %kfuse compile %s -o %t.so -q
//
// CHECK: group {{[0-9]+}} elementwise
// CHECK-NEXT: ops: s(kf.sigmoid){{$}}
// CHECK: group {{[0-9]+}} opaque
// CHECK-NEXT: ops: t(kf.tanh) k(kf.cat){{$}}

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "h"}], function_type = (tensor<4x8xf32>, tensor<4x8xf16>) -> (tensor<12x8xf32>), sym_name = "cat_pieces_dtype"}> ({
  ^bb0(%x: tensor<4x8xf32>, %h: tensor<4x8xf16>):
    %s = "kf.sigmoid"(%h) : (tensor<4x8xf16>) -> tensor<4x8xf16> loc("s")
    %t = "kf.tanh"(%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("t")
    %k = "kf.cat"(%x, %s, %t) {dim = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf16>, tensor<4x8xf32>) -> tensor<12x8xf32> loc("k")
    "func.return"(%k) : (tensor<12x8xf32>) -> ()
  }) : () -> ()
}) : () -> ()
