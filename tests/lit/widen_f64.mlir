// widen-f64 (pass/widen.c): every float value in fp64, for the module
// check's unrounded model. The bf16 input x and weight w keep their dtype
// and are cast up once (every use reads the cast); the permute of the
// weight gets the strides of the cast's row-major result; the matmul, the
// float-to-float casts and the output become fp64; the integer input i
// stays integer; i / 2 (a float made from integers alone) stays as type
// promotion gives it.
//
// RUN: %kfuse opt -p widen-f64 %s | FileCheck %s
//
// CHECK: %x_f64 = "kf.cast"(%x) : (tensor<4x6xbf16>) -> tensor<4x6xf64>
// CHECK: %w = "kf.param"() {{.*}} -> tensor<8x6xbf16>
// CHECK-NEXT: %w_f64 = "kf.cast"(%w) : (tensor<8x6xbf16>) -> tensor<8x6xf64>
// CHECK-NEXT: %wt = "kf.permute"(%w_f64) {{.*}} -> tensor<6x8xf64, #kf.strided<[1, 6]>>
// CHECK-NEXT: %y = "kf.mm"(%x_f64, %wt) {{.*}} -> tensor<4x8xf64>
// CHECK-NEXT: %yf = "kf.cast"(%y) : (tensor<4x8xf64>) -> tensor<4x8xf64>
// CHECK: %h = "kf.div"(%i, %two) : (tensor<4x8xi64>, i64) -> tensor<4x8xf32>
// CHECK-NEXT: %z = "kf.add"(%yf, %h) : (tensor<4x8xf64>, tensor<4x8xf32>) -> tensor<4x8xf64>
// CHECK-NEXT: "func.return"(%z, %i)

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "i"}], function_type = (tensor<4x6xbf16>, tensor<4x8xi64>) -> (tensor<4x8xf32>, tensor<4x8xi64>), sym_name = "widen"}> ({
  ^bb0(%x: tensor<4x6xbf16>, %i: tensor<4x8xi64>):
    %w = "kf.param"() {fqn = "w", kind = "parameter"} : () -> tensor<8x6xbf16> loc("w")
    %wt = "kf.permute"(%w) {dims = array<i64: 1, 0>} : (tensor<8x6xbf16>) -> tensor<6x8xbf16, #kf.strided<[1, 6]>> loc("wt")
    %y = "kf.mm"(%x, %wt) : (tensor<4x6xbf16>, tensor<6x8xbf16, #kf.strided<[1, 6]>>) -> tensor<4x8xbf16> loc("y")
    %yf = "kf.cast"(%y) : (tensor<4x8xbf16>) -> tensor<4x8xf32> loc("yf")
    %two = "kf.scalar"() {value = 2 : i64} : () -> i64 loc("two")
    %h = "kf.div"(%i, %two) : (tensor<4x8xi64>, i64) -> tensor<4x8xf32> loc("h")
    %z = "kf.add"(%yf, %h) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("z")
    "func.return"(%z, %i) : (tensor<4x8xf32>, tensor<4x8xi64>) -> ()
  }) : () -> ()
}) : () -> ()
