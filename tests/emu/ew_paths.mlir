// Element-wise paths the fixtures do not reach: 16-byte vector accesses
// with a broadcast bias (inner-dim vectors), f16/bf16 loads, stores and
// casts, a transposed (strided) operand, a sliced operand at an odd offset
// (not vectorisable), a 1-d slice at offset 1 (vector width chosen, the
// run-time alignment check falls back to the generic path), and an
// int-to-float promotion.
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "b"}, {kf.name = "h"}, {kf.name = "bb"}, {kf.name = "c"}, {kf.name = "xt"}, {kf.name = "n"}, {kf.name = "lin"}], function_type = (tensor<256x384xf32>, tensor<384xf32>, tensor<256x384xf16>, tensor<256x384xbf16>, tensor<256x1xf32>, tensor<384x256xf32>, tensor<256x384xi32>, tensor<1001xf32>) -> (tensor<256x384xf32>, tensor<256x384xf16>, tensor<256x384xbf16>, tensor<256x384xf32>, tensor<255x383xf32>, tensor<256x384xf32>, tensor<1000xf32>), sym_name = "ew_paths"}> ({
  ^bb0(%x: tensor<256x384xf32>, %b: tensor<384xf32>, %h: tensor<256x384xf16>, %bb: tensor<256x384xbf16>, %c: tensor<256x1xf32>, %xt: tensor<384x256xf32>, %n: tensor<256x384xi32>, %lin: tensor<1001xf32>):
    %a0 = "kf.add"(%x, %b) : (tensor<256x384xf32>, tensor<384xf32>) -> tensor<256x384xf32> loc("a0")
    %a1 = "kf.relu"(%a0) : (tensor<256x384xf32>) -> tensor<256x384xf32> loc("a1")
    %a2 = "kf.mul"(%a1, %c) : (tensor<256x384xf32>, tensor<256x1xf32>) -> tensor<256x384xf32> loc("a2")
    %a3 = "kf.sigmoid"(%h) : (tensor<256x384xf16>) -> tensor<256x384xf16> loc("a3")
    %o0 = "kf.add"(%a2, %a3) : (tensor<256x384xf32>, tensor<256x384xf16>) -> tensor<256x384xf32> loc("o0")
    %o1 = "kf.cast"(%o0) : (tensor<256x384xf32>) -> tensor<256x384xf16> loc("o1")
    %s = "kf.scalar"() {value = 2.5 : f64} : () -> f64 loc("s")
    %b1 = "kf.mul"(%bb, %s) : (tensor<256x384xbf16>, f64) -> tensor<256x384xbf16> loc("b1")
    %o2 = "kf.gelu"(%b1) {approximate = "tanh"} : (tensor<256x384xbf16>) -> tensor<256x384xbf16> loc("o2")
    %t = "kf.permute"(%xt) {dims = array<i64: 1, 0>} : (tensor<384x256xf32>) -> tensor<256x384xf32, #kf.strided<[1, 256]>> loc("t")
    %t1 = "kf.exp"(%t) : (tensor<256x384xf32, #kf.strided<[1, 256]>>) -> tensor<256x384xf32> loc("t1")
    %half = "kf.scalar"() {value = 0.5 : f64} : () -> f64 loc("half")
    %o3 = "kf.mul"(%t1, %half) : (tensor<256x384xf32>, f64) -> tensor<256x384xf32> loc("o3")
    %sl0 = "kf.slice"(%x) {dim = 0 : i64, start = 1 : i64, end = 256 : i64, step = 1 : i64} : (tensor<256x384xf32>) -> tensor<255x384xf32, #kf.strided<[384, 1], offset: 384>> loc("sl0")
    %sl1 = "kf.slice"(%sl0) {dim = 1 : i64, start = 1 : i64, end = 384 : i64, step = 1 : i64} : (tensor<255x384xf32, #kf.strided<[384, 1], offset: 384>>) -> tensor<255x383xf32, #kf.strided<[384, 1], offset: 385>> loc("sl1")
    %two = "kf.scalar"() {value = 2 : i64} : () -> i64 loc("two")
    %o4 = "kf.mul"(%sl1, %two) : (tensor<255x383xf32, #kf.strided<[384, 1], offset: 385>>, i64) -> tensor<255x383xf32> loc("o4")
    %nd = "kf.div"(%n, %two) : (tensor<256x384xi32>, i64) -> tensor<256x384xf32> loc("nd")
    %o5 = "kf.sub"(%nd, %x) {alpha = 3 : i64} : (tensor<256x384xf32>, tensor<256x384xf32>) -> tensor<256x384xf32> loc("o5")
    %ls = "kf.slice"(%lin) {dim = 0 : i64, start = 1 : i64, end = 1001 : i64, step = 1 : i64} : (tensor<1001xf32>) -> tensor<1000xf32, #kf.strided<[1], offset: 1>> loc("ls")
    %o6 = "kf.tanh"(%ls) : (tensor<1000xf32, #kf.strided<[1], offset: 1>>) -> tensor<1000xf32> loc("o6")
    "func.return"(%o0, %o1, %o2, %o3, %o4, %o5, %o6) : (tensor<256x384xf32>, tensor<256x384xf16>, tensor<256x384xbf16>, tensor<256x384xf32>, tensor<255x383xf32>, tensor<256x384xf32>, tensor<1000xf32>) -> ()
  }) : () -> ()
}) : () -> ()
