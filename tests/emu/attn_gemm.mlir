// Attention on the GEMM-softmax-GEMM lowering (agent/builtin_attention.c:
// head sizes over 128 under fp32 accumulation; E = 1024 in the fp64 mode
// too, as f64 products): head sizes 136 to 1024, value heads of other
// sizes; causal masking (more keys than queries, and a scale); a boolean
// mask broadcast over batch and heads, and boolean and additive (-inf)
// masks over heads that mask whole rows (zeros); grouped-query heads under
// causal masking (their query rows stacked into one product per key head);
// k and v broadcast over different batch dims (a step triple per batch
// entry); q, k and v transposed in memory (k^T and v read as stored, q's
// batch dims looped); a rank-3 case with 13 keys (scalar softmax loads);
// 100 query rows x 60 keys, which fused-chunked splits by rows; rows of
// 5000 keys (512 threads a row, 12 values each) and, rank 2, of 32768 keys
// (1024 threads, 32 values); 9 x 9 x 10 heads of a q whose batch dims no
// stride merges, copied contiguous (past 64 step triples) so that one
// strided batch covers them. Modes: fused-chunked bounds the scores at
// 16 KiB (tests/emu/emu_check.c), so every case runs in several chunks;
// fused-reread makes the softmax read its rows twice. 16-bit operands:
// tests/emu/attn_gemm16.mlir.
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "q0"}, {kf.name = "k0"}, {kf.name = "v0"}, {kf.name = "q2"}, {kf.name = "k2"}, {kf.name = "v2"}, {kf.name = "bm2"}, {kf.name = "q3"}, {kf.name = "k3"}, {kf.name = "v3"}, {kf.name = "mx3"}, {kf.name = "q5"}, {kf.name = "k5"}, {kf.name = "v5"}, {kf.name = "k6"}, {kf.name = "v6"}, {kf.name = "qt7"}, {kf.name = "kt7"}, {kf.name = "vt7"}, {kf.name = "q10"}, {kf.name = "k10"}, {kf.name = "v10"}, {kf.name = "q11"}, {kf.name = "k11"}, {kf.name = "v11"}, {kf.name = "q12"}, {kf.name = "k12"}, {kf.name = "v12"}, {kf.name = "q13"}, {kf.name = "k13"}, {kf.name = "v13"}, {kf.name = "qt14"}, {kf.name = "k14"}, {kf.name = "v14"}], function_type = (tensor<2x3x40x192xf32>, tensor<2x3x50x192xf32>, tensor<2x3x50x160xf32>, tensor<1x2x20x1024xf32>, tensor<1x2x30x1024xf32>, tensor<1x2x30x48xf32>, tensor<20x30xi1>, tensor<2x3x30x160xf32>, tensor<2x3x12x160xf32>, tensor<2x3x12x136xf32>, tensor<2x1x30x12xf32>, tensor<2x4x25x192xf32>, tensor<2x2x35x192xf32>, tensor<2x2x35x192xf32>, tensor<1x3x50x192xf32>, tensor<2x1x50x160xf32>, tensor<2x40x3x192xf32>, tensor<2x3x192x50xf32>, tensor<2x3x160x50xf32>, tensor<3x7x200xf32>, tensor<3x13x200xf32>, tensor<3x13x130xf32>, tensor<1x2x100x136xf32>, tensor<1x2x60x136xf32>, tensor<1x2x60x136xf32>, tensor<1x1x3x136xf32>, tensor<1x1x5000x136xf32>, tensor<1x1x5000x8xf32>, tensor<2x136xf32>, tensor<32768x136xf32>, tensor<32768x4xf32>, tensor<10x9x9x2x136xf32>, tensor<9x9x10x3x136xf32>, tensor<9x9x10x3x8xf32>) -> (tensor<2x3x40x160xf32>, tensor<2x3x40x160xf32>, tensor<1x2x20x48xf32>, tensor<2x3x30x136xf32>, tensor<2x3x30x136xf32>, tensor<2x4x25x192xf32>, tensor<2x3x40x160xf32>, tensor<2x3x40x160xf32>, tensor<3x7x130xf32>, tensor<1x2x100x136xf32>, tensor<1x1x3x8xf32>, tensor<2x4xf32>, tensor<9x9x10x2x8xf32>), sym_name = "attn_gemm"}> ({
  ^bb0(%q0: tensor<2x3x40x192xf32>, %k0: tensor<2x3x50x192xf32>, %v0: tensor<2x3x50x160xf32>, %q2: tensor<1x2x20x1024xf32>, %k2: tensor<1x2x30x1024xf32>, %v2: tensor<1x2x30x48xf32>, %bm2: tensor<20x30xi1>, %q3: tensor<2x3x30x160xf32>, %k3: tensor<2x3x12x160xf32>, %v3: tensor<2x3x12x136xf32>, %mx3: tensor<2x1x30x12xf32>, %q5: tensor<2x4x25x192xf32>, %k5: tensor<2x2x35x192xf32>, %v5: tensor<2x2x35x192xf32>, %k6: tensor<1x3x50x192xf32>, %v6: tensor<2x1x50x160xf32>, %qt7: tensor<2x40x3x192xf32>, %kt7: tensor<2x3x192x50xf32>, %vt7: tensor<2x3x160x50xf32>, %q10: tensor<3x7x200xf32>, %k10: tensor<3x13x200xf32>, %v10: tensor<3x13x130xf32>, %q11: tensor<1x2x100x136xf32>, %k11: tensor<1x2x60x136xf32>, %v11: tensor<1x2x60x136xf32>, %q12: tensor<1x1x3x136xf32>, %k12: tensor<1x1x5000x136xf32>, %v12: tensor<1x1x5000x8xf32>, %q13: tensor<2x136xf32>, %k13: tensor<32768x136xf32>, %v13: tensor<32768x4xf32>, %qt14: tensor<10x9x9x2x136xf32>, %k14: tensor<9x9x10x3x136xf32>, %v14: tensor<9x9x10x3x8xf32>):
    %o0 = "kf.sdpa"(%q0, %k0, %v0) {enable_gqa = false, is_causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<2x3x40x192xf32>, tensor<2x3x50x192xf32>, tensor<2x3x50x160xf32>) -> tensor<2x3x40x160xf32> loc("o0")
    %o1 = "kf.sdpa"(%q0, %k0, %v0) {enable_gqa = false, is_causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0>, scale = 0.05 : f64} : (tensor<2x3x40x192xf32>, tensor<2x3x50x192xf32>, tensor<2x3x50x160xf32>) -> tensor<2x3x40x160xf32> loc("o1")
    %o2 = "kf.sdpa"(%q2, %k2, %v2, %bm2) {enable_gqa = false, is_causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (tensor<1x2x20x1024xf32>, tensor<1x2x30x1024xf32>, tensor<1x2x30x48xf32>, tensor<20x30xi1>) -> tensor<1x2x20x48xf32> loc("o2")
    %th = "kf.scalar"() {value = 1.5 : f64} : () -> f64 loc("th")
    %bm3 = "kf.gt"(%mx3, %th) : (tensor<2x1x30x12xf32>, f64) -> tensor<2x1x30x12xi1> loc("bm3")
    %o3 = "kf.sdpa"(%q3, %k3, %v3, %bm3) {enable_gqa = false, is_causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (tensor<2x3x30x160xf32>, tensor<2x3x12x160xf32>, tensor<2x3x12x136xf32>, tensor<2x1x30x12xi1>) -> tensor<2x3x30x136xf32> loc("o3")
    %sh3 = "kf.sub"(%mx3, %th) : (tensor<2x1x30x12xf32>, f64) -> tensor<2x1x30x12xf32> loc("sh3")
    %rl3 = "kf.relu"(%sh3) : (tensor<2x1x30x12xf32>) -> tensor<2x1x30x12xf32> loc("rl3")
    %am3 = "kf.log"(%rl3) : (tensor<2x1x30x12xf32>) -> tensor<2x1x30x12xf32> loc("am3")
    %o4 = "kf.sdpa"(%q3, %k3, %v3, %am3) {enable_gqa = false, is_causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 1>, scale = 0.3 : f64} : (tensor<2x3x30x160xf32>, tensor<2x3x12x160xf32>, tensor<2x3x12x136xf32>, tensor<2x1x30x12xf32>) -> tensor<2x3x30x136xf32> loc("o4")
    %o5 = "kf.sdpa"(%q5, %k5, %v5) {enable_gqa = true, is_causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<2x4x25x192xf32>, tensor<2x2x35x192xf32>, tensor<2x2x35x192xf32>) -> tensor<2x4x25x192xf32> loc("o5")
    %k6e = "kf.expand"(%k6) : (tensor<1x3x50x192xf32>) -> tensor<2x3x50x192xf32, #kf.strided<[0, 9600, 192, 1]>> loc("k6e")
    %v6e = "kf.expand"(%v6) : (tensor<2x1x50x160xf32>) -> tensor<2x3x50x160xf32, #kf.strided<[8000, 0, 160, 1]>> loc("v6e")
    %o6 = "kf.sdpa"(%q0, %k6e, %v6e) {enable_gqa = false, is_causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<2x3x40x192xf32>, tensor<2x3x50x192xf32, #kf.strided<[0, 9600, 192, 1]>>, tensor<2x3x50x160xf32, #kf.strided<[8000, 0, 160, 1]>>) -> tensor<2x3x40x160xf32> loc("o6")
    %q7 = "kf.permute"(%qt7) {dims = array<i64: 0, 2, 1, 3>} : (tensor<2x40x3x192xf32>) -> tensor<2x3x40x192xf32, #kf.strided<[23040, 192, 576, 1]>> loc("q7")
    %k7 = "kf.permute"(%kt7) {dims = array<i64: 0, 1, 3, 2>} : (tensor<2x3x192x50xf32>) -> tensor<2x3x50x192xf32, #kf.strided<[28800, 9600, 1, 50]>> loc("k7")
    %v7 = "kf.permute"(%vt7) {dims = array<i64: 0, 1, 3, 2>} : (tensor<2x3x160x50xf32>) -> tensor<2x3x50x160xf32, #kf.strided<[24000, 8000, 1, 50]>> loc("v7")
    %o7 = "kf.sdpa"(%q7, %k7, %v7) {enable_gqa = false, is_causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<2x3x40x192xf32, #kf.strided<[23040, 192, 576, 1]>>, tensor<2x3x50x192xf32, #kf.strided<[28800, 9600, 1, 50]>>, tensor<2x3x50x160xf32, #kf.strided<[24000, 8000, 1, 50]>>) -> tensor<2x3x40x160xf32> loc("o7")
    %o10 = "kf.sdpa"(%q10, %k10, %v10) {enable_gqa = false, is_causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<3x7x200xf32>, tensor<3x13x200xf32>, tensor<3x13x130xf32>) -> tensor<3x7x130xf32> loc("o10")
    %o11 = "kf.sdpa"(%q11, %k11, %v11) {enable_gqa = false, is_causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<1x2x100x136xf32>, tensor<1x2x60x136xf32>, tensor<1x2x60x136xf32>) -> tensor<1x2x100x136xf32> loc("o11")
    %o12 = "kf.sdpa"(%q12, %k12, %v12) {enable_gqa = false, is_causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<1x1x3x136xf32>, tensor<1x1x5000x136xf32>, tensor<1x1x5000x8xf32>) -> tensor<1x1x3x8xf32> loc("o12")
    %o13 = "kf.sdpa"(%q13, %k13, %v13) {enable_gqa = false, is_causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 0>, scale = 0.01 : f64} : (tensor<2x136xf32>, tensor<32768x136xf32>, tensor<32768x4xf32>) -> tensor<2x4xf32> loc("o13")
    %q14 = "kf.permute"(%qt14) {dims = array<i64: 2, 1, 0, 3, 4>} : (tensor<10x9x9x2x136xf32>) -> tensor<9x9x10x2x136xf32, #kf.strided<[272, 2448, 22032, 136, 1]>> loc("q14")
    %o14 = "kf.sdpa"(%q14, %k14, %v14) {enable_gqa = false, is_causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<9x9x10x2x136xf32, #kf.strided<[272, 2448, 22032, 136, 1]>>, tensor<9x9x10x3x136xf32>, tensor<9x9x10x3x8xf32>) -> tensor<9x9x10x2x8xf32> loc("o14")
    "func.return"(%o0, %o1, %o2, %o3, %o4, %o5, %o6, %o7, %o10, %o11, %o12, %o13, %o14) : (tensor<2x3x40x160xf32>, tensor<2x3x40x160xf32>, tensor<1x2x20x48xf32>, tensor<2x3x30x136xf32>, tensor<2x3x30x136xf32>, tensor<2x4x25x192xf32>, tensor<2x3x40x160xf32>, tensor<2x3x40x160xf32>, tensor<3x7x130xf32>, tensor<1x2x100x136xf32>, tensor<1x1x3x8xf32>, tensor<2x4xf32>, tensor<9x9x10x2x8xf32>) -> ()
  }) : () -> ()
}) : () -> ()
