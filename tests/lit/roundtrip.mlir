// The textual IR round-trips: print(parse(text)) == text for every attribute
// kind, optional and variadic operands, multi-result ops, scalars, strided
// views and non-finite numbers; upstream mlir-opt reads it as generic MLIR.
//
// RUN: %kfuse opt %s -o %t.1.mlir
// RUN: %kfuse opt %t.1.mlir -o %t.2.mlir
// RUN: diff %t.1.mlir %t.2.mlir
// RUN: mlir-opt --allow-unregistered-dialect %t.1.mlir -o /dev/null
// RUN: FileCheck %s < %t.1.mlir

// CHECK: "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "idx"}, {kf.name = "mask"}], function_type = (tensor<2x3xf32>, tensor<4xi64>, tensor<2x3xi1>) -> (
// CHECK-SAME: sym_name = "roundtrip"}>
// CHECK: ^bb0(%x: tensor<2x3xf32>, %idx: tensor<4xi64>, %mask: tensor<2x3xi1>):
// CHECK-NEXT: %w = "kf.param"() {fqn = "layer.weight", kind = "parameter"} : () -> tensor<5x3xf32> loc("w")
// CHECK-NEXT: %half = "kf.scalar"() {value = 0.5 : f64} : () -> f64 loc("half")
// CHECK-NEXT: %two = "kf.scalar"() {value = 2 : i64} : () -> i64 loc("two")
// CHECK-NEXT: %yes = "kf.scalar"() {value = true} : () -> i1 loc("yes")
// CHECK-NEXT: %ninf = "kf.full"() {value = 0xFFF0000000000000 : f64} : () -> tensor<2x3xf32> loc("ninf")
// CHECK-NEXT: %add = "kf.add"(%x, %half) {alpha = 2 : i64} : (tensor<2x3xf32>, f64) -> tensor<2x3xf32> loc("add")
// CHECK-NEXT: %div = "kf.div"(%add, %two) {rounding_mode = "floor"} : (tensor<2x3xf32>, i64) -> tensor<2x3xf32> loc("div")
// CHECK-NEXT: %t = "kf.permute"(%x) {dims = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32, #kf.strided<[1, 3]>> loc("t")
// CHECK-NEXT: %col = "kf.slice"(%x) {dim = 1 : i64, end = 3 : i64, start = 1 : i64, step = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x2xf32, #kf.strided<[3, 1], offset: 1>> loc("col")
// CHECK-NEXT: %mm = "kf.mm"(%x, %t) : (tensor<2x3xf32>, tensor<3x2xf32, #kf.strided<[1, 3]>>) -> tensor<2x2xf32> loc("mm")
// CHECK: %lin = "kf.addmm"(%b, %x, %wt) {alpha = 1.0 : f64, beta = 1 : i64} : (tensor<5xf32>, tensor<2x3xf32>, tensor<3x5xf32, #kf.strided<[1, 3]>>) -> tensor<2x5xf32> loc("lin")
// CHECK: %sp:2 = "kf.split"(%lin) {dim = 1 : i64, sizes = array<i64: 2, 3>}
// CHECK: %mx:2 = "kf.max_dim"(%x) {dim = 1 : i64, keepdim = true}
// CHECK: %ln:3 = "kf.layer_norm"(%x, %lnw) {eps = 1.0e-05 : f64, normalized_ndim = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>}
// CHECK: %cat = "kf.cat"(%x, %x, %add) {dim = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<6x3xf32> loc("cat")
// CHECK: %g = "kf.index"(%cat, %idx) {dims = array<i64: 0>}
// CHECK: %hard = "kf.hardtanh"(%x) {max_val = 1.0 : f64, min_val = -1 : i64}
// CHECK: %sel = "kf.where"(%mask, %x, %ninf)
// CHECK: %any = "kf.any"(%mask) {dims = array<i64: 0, 1>, keepdim = false} : (tensor<2x3xi1>) -> tensor<i1> loc("any")
// CHECK: %h = "kf.cast"(%sel) : (tensor<2x3xf32>) -> tensor<2x3xf16> loc("h")
// CHECK: "func.return"(%div, %mm, %sp#1, %mx#1, %ln#0, %g, %hard, %h, %any, %col)

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "idx"}, {kf.name = "mask"}], function_type = (tensor<2x3xf32>, tensor<4xi64>, tensor<2x3xi1>) -> (tensor<2x3xf32>, tensor<2x2xf32>, tensor<2x3xf32, #kf.strided<[5, 1], offset: 2>>, tensor<2x1xi64>, tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>, tensor<2x3xf16>, tensor<i1>, tensor<2x2xf32, #kf.strided<[3, 1], offset: 1>>), sym_name = "roundtrip"}> ({
  ^bb0(%x: tensor<2x3xf32>, %idx: tensor<4xi64>, %mask: tensor<2x3xi1>):
    %w = "kf.param"() {fqn = "layer.weight", kind = "parameter"} : () -> tensor<5x3xf32> loc("w")
    %half = "kf.scalar"() {value = 0.5 : f64} : () -> f64 loc("half")
    %two = "kf.scalar"() {value = 2 : i64} : () -> i64 loc("two")
    %yes = "kf.scalar"() {value = true} : () -> i1 loc("yes")
    %ninf = "kf.full"() {value = 0xFFF0000000000000 : f64} : () -> tensor<2x3xf32> loc("ninf")
    %add = "kf.add"(%x, %half) {alpha = 2 : i64} : (tensor<2x3xf32>, f64) -> tensor<2x3xf32> loc("add")
    %div = "kf.div"(%add, %two) {rounding_mode = "floor"} : (tensor<2x3xf32>, i64) -> tensor<2x3xf32> loc("div")
    %t = "kf.permute"(%x) {dims = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32, #kf.strided<[1, 3]>> loc("t")
    %col = "kf.slice"(%x) {dim = 1 : i64, end = 3 : i64, start = 1 : i64, step = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x2xf32, #kf.strided<[3, 1], offset: 1>> loc("col")
    %mm = "kf.mm"(%x, %t) : (tensor<2x3xf32>, tensor<3x2xf32, #kf.strided<[1, 3]>>) -> tensor<2x2xf32> loc("mm")
    %b = "kf.param"() {fqn = "layer.bias", kind = "parameter"} : () -> tensor<5xf32> loc("b")
    %wt = "kf.permute"(%w) {dims = array<i64: 1, 0>} : (tensor<5x3xf32>) -> tensor<3x5xf32, #kf.strided<[1, 3]>> loc("wt")
    %lin = "kf.addmm"(%b, %x, %wt) {alpha = 1.0 : f64, beta = 1 : i64} : (tensor<5xf32>, tensor<2x3xf32>, tensor<3x5xf32, #kf.strided<[1, 3]>>) -> tensor<2x5xf32> loc("lin")
    %sp:2 = "kf.split"(%lin) {dim = 1 : i64, sizes = array<i64: 2, 3>} : (tensor<2x5xf32>) -> (tensor<2x2xf32, #kf.strided<[5, 1]>>, tensor<2x3xf32, #kf.strided<[5, 1], offset: 2>>) loc("sp")
    %mx:2 = "kf.max_dim"(%x) {dim = 1 : i64, keepdim = true} : (tensor<2x3xf32>) -> (tensor<2x1xf32>, tensor<2x1xi64>) loc("mx")
    %lnw = "kf.full"() {value = 1.5 : f64} : () -> tensor<3xf32> loc("lnw")
    %ln:3 = "kf.layer_norm"(%x, %lnw) {eps = 1.0e-05 : f64, normalized_ndim = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>} : (tensor<2x3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x1xf32>, tensor<2x1xf32>) loc("ln")
    %cat = "kf.cat"(%x, %x, %add) {dim = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<6x3xf32> loc("cat")
    %g = "kf.index"(%cat, %idx) {dims = array<i64: 0>} : (tensor<6x3xf32>, tensor<4xi64>) -> tensor<4x3xf32> loc("g")
    %hard = "kf.hardtanh"(%x) {max_val = 1.0 : f64, min_val = -1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("hard")
    %sel = "kf.where"(%mask, %x, %ninf) : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> loc("sel")
    %any = "kf.any"(%mask) {dims = array<i64: 0, 1>, keepdim = false} : (tensor<2x3xi1>) -> tensor<i1> loc("any")
    %h = "kf.cast"(%sel) : (tensor<2x3xf32>) -> tensor<2x3xf16> loc("h")
    "func.return"(%div, %mm, %sp#1, %mx#1, %ln#0, %g, %hard, %h, %any, %col) : (tensor<2x3xf32>, tensor<2x2xf32>, tensor<2x3xf32, #kf.strided<[5, 1], offset: 2>>, tensor<2x1xi64>, tensor<2x3xf32>, tensor<4x3xf32>, tensor<2x3xf32>, tensor<2x3xf16>, tensor<i1>, tensor<2x2xf32, #kf.strided<[3, 1], offset: 1>>) -> ()
  }) : () -> ()
}) : () -> ()
