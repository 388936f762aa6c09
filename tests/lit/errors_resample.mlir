// kf.slice_scatter and kf.upsample with bad shapes or attributes: the
// verifier names the node and the problem.
//
// RUN: rm -rf %t && split-file %s %t
// RUN: not %kfuse opt %t/src_shape.mlir 2>&1 | FileCheck %s --check-prefix=SRC
// RUN: not %kfuse opt %t/slice_range.mlir 2>&1 | FileCheck %s --check-prefix=RANGE
// RUN: not %kfuse opt %t/mode.mlir 2>&1 | FileCheck %s --check-prefix=MODE
// RUN: not %kfuse opt %t/align.mlir 2>&1 | FileCheck %s --check-prefix=ALIGN
// RUN: not %kfuse opt %t/int_linear.mlir 2>&1 | FileCheck %s --check-prefix=INT
// RUN: not %kfuse opt %t/rank.mlir 2>&1 | FileCheck %s --check-prefix=RANK

// SRC: node 's' (kf.slice_scatter): src has size 3 at dim 1, the slice 2
// RANGE: node 's' (kf.slice_scatter): slice [2, 9) out of range for size 6
// MODE: node 'u' (kf.upsample): mode 'area' is none of nearest, nearest-exact, linear, cubic
// ALIGN: node 'u' (kf.upsample): align_corners needs mode linear or cubic
// INT: node 'u' (kf.upsample): mode 'linear' needs a floating-point input
// RANK: node 'u' (kf.upsample): input rank 3 for 2 spatial sizes

//--- src_shape.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "y"}], function_type = (tensor<2x6xf32>, tensor<2x3xf32>) -> (tensor<2x6xf32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<2x6xf32>, %y: tensor<2x3xf32>):
    %s = "kf.slice_scatter"(%x, %y) {dim = 1 : i64, end = 5 : i64, start = 1 : i64, step = 2 : i64} : (tensor<2x6xf32>, tensor<2x3xf32>) -> tensor<2x6xf32> loc("s")
    "func.return"(%s) : (tensor<2x6xf32>) -> ()
  }) : () -> ()
}) : () -> ()
//--- slice_range.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "y"}], function_type = (tensor<2x6xf32>, tensor<2x7xf32>) -> (tensor<2x6xf32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<2x6xf32>, %y: tensor<2x7xf32>):
    %s = "kf.slice_scatter"(%x, %y) {dim = 1 : i64, end = 9 : i64, start = 2 : i64, step = 1 : i64} : (tensor<2x6xf32>, tensor<2x7xf32>) -> tensor<2x6xf32> loc("s")
    "func.return"(%s) : (tensor<2x6xf32>) -> ()
  }) : () -> ()
}) : () -> ()
//--- mode.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<1x2x3x4xf32>) -> (tensor<1x2x6x8xf32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<1x2x3x4xf32>):
    %u = "kf.upsample"(%x) {align_corners = false, mode = "area", scales = array<f64: 0.0, 0.0>, size = array<i64: 6, 8>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x6x8xf32> loc("u")
    "func.return"(%u) : (tensor<1x2x6x8xf32>) -> ()
  }) : () -> ()
}) : () -> ()
//--- align.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<1x2x3x4xf32>) -> (tensor<1x2x6x8xf32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<1x2x3x4xf32>):
    %u = "kf.upsample"(%x) {align_corners = true, mode = "nearest", scales = array<f64: 0.0, 0.0>, size = array<i64: 6, 8>} : (tensor<1x2x3x4xf32>) -> tensor<1x2x6x8xf32> loc("u")
    "func.return"(%u) : (tensor<1x2x6x8xf32>) -> ()
  }) : () -> ()
}) : () -> ()
//--- int_linear.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<1x2x3x4xi64>) -> (tensor<1x2x6x8xi64>), sym_name = "m"}> ({
  ^bb0(%x: tensor<1x2x3x4xi64>):
    %u = "kf.upsample"(%x) {align_corners = false, mode = "linear", scales = array<f64: 0.0, 0.0>, size = array<i64: 6, 8>} : (tensor<1x2x3x4xi64>) -> tensor<1x2x6x8xi64> loc("u")
    "func.return"(%u) : (tensor<1x2x6x8xi64>) -> ()
  }) : () -> ()
}) : () -> ()
//--- rank.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x3x4xf32>) -> (tensor<2x6x8xf32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<2x3x4xf32>):
    %u = "kf.upsample"(%x) {align_corners = false, mode = "linear", scales = array<f64: 0.0, 0.0>, size = array<i64: 6, 8>} : (tensor<2x3x4xf32>) -> tensor<2x6x8xf32> loc("u")
    "func.return"(%u) : (tensor<2x6x8xf32>) -> ()
  }) : () -> ()
}) : () -> ()
