// Attention's GEMM-softmax-GEMM lowering on 16-bit operands, apart from
// tests/emu/attn_gemm.mlir so that its fp32 outputs keep fp32 tolerances in
// the fp64 mode: f16 under causal masking, bf16 with one key head for four
// query heads, bf16 with a boolean mask. q, k and v are converted to fp32
// and the products run in fp32 (as PyTorch's math attention upcasts), the
// result rounded back to the 16-bit dtype.
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "q8"}, {kf.name = "k8"}, {kf.name = "v8"}, {kf.name = "q9"}, {kf.name = "k9"}, {kf.name = "v9"}, {kf.name = "q10"}, {kf.name = "k10"}, {kf.name = "v10"}, {kf.name = "bm10"}], function_type = (tensor<1x2x24x192xf16>, tensor<1x2x33x192xf16>, tensor<1x2x33x192xf16>, tensor<1x4x16x256xbf16>, tensor<1x1x20x256xbf16>, tensor<1x1x20x256xbf16>, tensor<2x3x20x160xbf16>, tensor<2x3x30x160xbf16>, tensor<2x3x30x160xbf16>, tensor<20x30xi1>) -> (tensor<1x2x24x192xf16>, tensor<1x4x16x256xbf16>, tensor<2x3x20x160xbf16>), sym_name = "attn_gemm16"}> ({
  ^bb0(%q8: tensor<1x2x24x192xf16>, %k8: tensor<1x2x33x192xf16>, %v8: tensor<1x2x33x192xf16>, %q9: tensor<1x4x16x256xbf16>, %k9: tensor<1x1x20x256xbf16>, %v9: tensor<1x1x20x256xbf16>, %q10: tensor<2x3x20x160xbf16>, %k10: tensor<2x3x30x160xbf16>, %v10: tensor<2x3x30x160xbf16>, %bm10: tensor<20x30xi1>):
    %o8 = "kf.sdpa"(%q8, %k8, %v8) {enable_gqa = false, is_causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<1x2x24x192xf16>, tensor<1x2x33x192xf16>, tensor<1x2x33x192xf16>) -> tensor<1x2x24x192xf16> loc("o8")
    %o9 = "kf.sdpa"(%q9, %k9, %v9) {enable_gqa = true, is_causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<1x4x16x256xbf16>, tensor<1x1x20x256xbf16>, tensor<1x1x20x256xbf16>) -> tensor<1x4x16x256xbf16> loc("o9")
    %o10 = "kf.sdpa"(%q10, %k10, %v10, %bm10) {enable_gqa = false, is_causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (tensor<2x3x20x160xbf16>, tensor<2x3x30x160xbf16>, tensor<2x3x30x160xbf16>, tensor<20x30xi1>) -> tensor<2x3x20x160xbf16> loc("o10")
    "func.return"(%o8, %o9, %o10) : (tensor<1x2x24x192xf16>, tensor<1x4x16x256xbf16>, tensor<2x3x20x160xbf16>) -> ()
  }) : () -> ()
}) : () -> ()
