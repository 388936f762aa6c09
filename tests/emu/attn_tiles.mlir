// The tiled attention kernel's edges (agent/templates/attention.cu, KF_TILED
// 1): several query and key tiles, both partial; causal with more queries
// than keys; a head size that is not a multiple of 4 and a key operand
// transposed in memory (element loads, rows first); a value head of 100
// (two 64-feature groups); broadcast batch dims; boolean and additive (-inf)
// masks that mask whole rows (zeros, as ATen's safe softmax gives); grouped-
// query attention under causal masking with a transposed value operand; a
// value head of 128, whose k and v tiles are staged once per tile
// (KF_STAGES 1) rather than double-buffered; f16 operands (8-byte vector
// loads, no cp.async).
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "q"}, {kf.name = "kt"}, {kf.name = "v"}, {kf.name = "q2"}, {kf.name = "k2"}, {kf.name = "v2"}, {kf.name = "mx"}, {kf.name = "q3"}, {kf.name = "k3"}, {kf.name = "v3t"}, {kf.name = "q4"}, {kf.name = "k4"}, {kf.name = "v4"}, {kf.name = "q5"}, {kf.name = "k5"}, {kf.name = "v5"}], function_type = (tensor<2x3x150x30xf32>, tensor<2x3x30x90xf32>, tensor<2x3x90x100xf32>, tensor<2x3x130x16xf32>, tensor<1x3x12x16xf32>, tensor<2x1x12x8xf32>, tensor<130x12xf32>, tensor<2x4x130x16xf32>, tensor<2x2x140x16xf32>, tensor<2x2x12x140xf32>, tensor<1x2x70x64xf32>, tensor<1x2x150x64xf32>, tensor<1x2x150x128xf32>, tensor<1x2x70x32xf16>, tensor<1x2x90x32xf16>, tensor<1x2x90x32xf16>) -> (tensor<2x3x150x100xf32>, tensor<2x3x130x8xf32>, tensor<2x3x130x8xf32>, tensor<2x4x130x12xf32>, tensor<1x2x70x128xf32>, tensor<1x2x70x32xf16>), sym_name = "attn_tiles"}> ({
  ^bb0(%q: tensor<2x3x150x30xf32>, %kt: tensor<2x3x30x90xf32>, %v: tensor<2x3x90x100xf32>, %q2: tensor<2x3x130x16xf32>, %k2: tensor<1x3x12x16xf32>, %v2: tensor<2x1x12x8xf32>, %mx: tensor<130x12xf32>, %q3: tensor<2x4x130x16xf32>, %k3: tensor<2x2x140x16xf32>, %v3t: tensor<2x2x12x140xf32>, %q4: tensor<1x2x70x64xf32>, %k4: tensor<1x2x150x64xf32>, %v4: tensor<1x2x150x128xf32>, %q5: tensor<1x2x70x32xf16>, %k5: tensor<1x2x90x32xf16>, %v5: tensor<1x2x90x32xf16>):
    %k = "kf.permute"(%kt) {dims = array<i64: 0, 1, 3, 2>} : (tensor<2x3x30x90xf32>) -> tensor<2x3x90x30xf32, #kf.strided<[8100, 2700, 1, 90]>> loc("k")
    %o0 = "kf.sdpa"(%q, %k, %v) {enable_gqa = false, is_causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<2x3x150x30xf32>, tensor<2x3x90x30xf32, #kf.strided<[8100, 2700, 1, 90]>>, tensor<2x3x90x100xf32>) -> tensor<2x3x150x100xf32> loc("o0")
    %th = "kf.scalar"() {value = 1.5 : f64} : () -> f64 loc("th")
    %bm = "kf.gt"(%mx, %th) : (tensor<130x12xf32>, f64) -> tensor<130x12xi1> loc("bm")
    %k2e = "kf.expand"(%k2) : (tensor<1x3x12x16xf32>) -> tensor<2x3x12x16xf32, #kf.strided<[0, 192, 16, 1]>> loc("k2e")
    %v2e = "kf.expand"(%v2) : (tensor<2x1x12x8xf32>) -> tensor<2x3x12x8xf32, #kf.strided<[96, 0, 8, 1]>> loc("v2e")
    %o1 = "kf.sdpa"(%q2, %k2e, %v2e, %bm) {enable_gqa = false, is_causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (tensor<2x3x130x16xf32>, tensor<2x3x12x16xf32, #kf.strided<[0, 192, 16, 1]>>, tensor<2x3x12x8xf32, #kf.strided<[96, 0, 8, 1]>>, tensor<130x12xi1>) -> tensor<2x3x130x8xf32> loc("o1")
    %sh = "kf.sub"(%mx, %th) : (tensor<130x12xf32>, f64) -> tensor<130x12xf32> loc("sh")
    %rl = "kf.relu"(%sh) : (tensor<130x12xf32>) -> tensor<130x12xf32> loc("rl")
    %am = "kf.log"(%rl) : (tensor<130x12xf32>) -> tensor<130x12xf32> loc("am")
    %o2 = "kf.sdpa"(%q2, %k2e, %v2e, %am) {enable_gqa = false, is_causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 1>, scale = 0.3 : f64} : (tensor<2x3x130x16xf32>, tensor<2x3x12x16xf32, #kf.strided<[0, 192, 16, 1]>>, tensor<2x3x12x8xf32, #kf.strided<[96, 0, 8, 1]>>, tensor<130x12xf32>) -> tensor<2x3x130x8xf32> loc("o2")
    %v3 = "kf.permute"(%v3t) {dims = array<i64: 0, 1, 3, 2>} : (tensor<2x2x12x140xf32>) -> tensor<2x2x140x12xf32, #kf.strided<[3360, 1680, 1, 140]>> loc("v3")
    %o3 = "kf.sdpa"(%q3, %k3, %v3) {enable_gqa = true, is_causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<2x4x130x16xf32>, tensor<2x2x140x16xf32>, tensor<2x2x140x12xf32, #kf.strided<[3360, 1680, 1, 140]>>) -> tensor<2x4x130x12xf32> loc("o3")
    %o4 = "kf.sdpa"(%q4, %k4, %v4) {enable_gqa = false, is_causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<1x2x70x64xf32>, tensor<1x2x150x64xf32>, tensor<1x2x150x128xf32>) -> tensor<1x2x70x128xf32> loc("o4")
    %o5 = "kf.sdpa"(%q5, %k5, %v5) {enable_gqa = false, is_causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<1x2x70x32xf16>, tensor<1x2x90x32xf16>, tensor<1x2x90x32xf16>) -> tensor<1x2x70x32xf16> loc("o5")
    "func.return"(%o0, %o1, %o2, %o3, %o4, %o5) : (tensor<2x3x150x100xf32>, tensor<2x3x130x8xf32>, tensor<2x3x130x8xf32>, tensor<2x4x130x12xf32>, tensor<1x2x70x128xf32>, tensor<1x2x70x32xf16>) -> ()
  }) : () -> ()
}) : () -> ()
