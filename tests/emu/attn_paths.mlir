// Attention beyond the fixture's sizes: many blocks of 32 keys (online
// rescaling), head sizes over 32 (EV split over lanes), a transposed query
// (strides from a permute), grouped-query heads, causal masking with more
// keys than queries, a boolean mask broadcast over batch and heads, an
// additive mask broadcast over heads, and a convolution with a fused
// residual epilogue.
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "qt"}, {kf.name = "k"}, {kf.name = "v"}, {kf.name = "k2"}, {kf.name = "v2"}, {kf.name = "bm"}, {kf.name = "am"}, {kf.name = "x"}, {kf.name = "cw"}, {kf.name = "cb"}, {kf.name = "res"}], function_type = (tensor<2x70x4x64xf32>, tensor<2x4x100x64xf32>, tensor<2x4x100x40xf32>, tensor<2x2x100x64xf32>, tensor<2x2x100x40xf32>, tensor<70x100xi1>, tensor<2x1x70x100xf32>, tensor<2x8x13x11xf32>, tensor<12x4x3x3xf32>, tensor<12xf32>, tensor<2x12x7x5xf32>) -> (tensor<2x4x70x40xf32>, tensor<2x4x70x40xf32>, tensor<2x4x70x40xf32>, tensor<2x4x70x40xf32>, tensor<2x12x7x5xf32>), sym_name = "attn_paths"}> ({
  ^bb0(%qt: tensor<2x70x4x64xf32>, %k: tensor<2x4x100x64xf32>, %v: tensor<2x4x100x40xf32>, %k2: tensor<2x2x100x64xf32>, %v2: tensor<2x2x100x40xf32>, %bm: tensor<70x100xi1>, %am: tensor<2x1x70x100xf32>, %x: tensor<2x8x13x11xf32>, %cw: tensor<12x4x3x3xf32>, %cb: tensor<12xf32>, %res: tensor<2x12x7x5xf32>):
    %q = "kf.permute"(%qt) {dims = array<i64: 0, 2, 1, 3>} : (tensor<2x70x4x64xf32>) -> tensor<2x4x70x64xf32, #kf.strided<[17920, 64, 256, 1]>> loc("q")
    %o0 = "kf.sdpa"(%q, %k, %v) {enable_gqa = false, is_causal = true, operandSegmentSizes = array<i32: 1, 1, 1, 0>} : (tensor<2x4x70x64xf32, #kf.strided<[17920, 64, 256, 1]>>, tensor<2x4x100x64xf32>, tensor<2x4x100x40xf32>) -> tensor<2x4x70x40xf32> loc("o0")
    %o1 = "kf.sdpa"(%q, %k2, %v2) {enable_gqa = true, is_causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 0>, scale = 0.2 : f64} : (tensor<2x4x70x64xf32, #kf.strided<[17920, 64, 256, 1]>>, tensor<2x2x100x64xf32>, tensor<2x2x100x40xf32>) -> tensor<2x4x70x40xf32> loc("o1")
    %o2 = "kf.sdpa"(%q, %k, %v, %bm) {enable_gqa = false, is_causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (tensor<2x4x70x64xf32, #kf.strided<[17920, 64, 256, 1]>>, tensor<2x4x100x64xf32>, tensor<2x4x100x40xf32>, tensor<70x100xi1>) -> tensor<2x4x70x40xf32> loc("o2")
    %o3 = "kf.sdpa"(%q, %k, %v, %am) {enable_gqa = false, is_causal = false, operandSegmentSizes = array<i32: 1, 1, 1, 1>} : (tensor<2x4x70x64xf32, #kf.strided<[17920, 64, 256, 1]>>, tensor<2x4x100x64xf32>, tensor<2x4x100x40xf32>, tensor<2x1x70x100xf32>) -> tensor<2x4x70x40xf32> loc("o3")
    %c = "kf.conv"(%x, %cw, %cb) {dilation = array<i64: 1, 2>, groups = 2 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>, transposed = false} : (tensor<2x8x13x11xf32>, tensor<12x4x3x3xf32>, tensor<12xf32>) -> tensor<2x12x7x5xf32> loc("c")
    %c1 = "kf.add"(%c, %res) : (tensor<2x12x7x5xf32>, tensor<2x12x7x5xf32>) -> tensor<2x12x7x5xf32> loc("c1")
    %o4 = "kf.relu"(%c1) : (tensor<2x12x7x5xf32>) -> tensor<2x12x7x5xf32> loc("o4")
    "func.return"(%o0, %o1, %o2, %o3, %o4) : (tensor<2x4x70x40xf32>, tensor<2x4x70x40xf32>, tensor<2x4x70x40xf32>, tensor<2x4x70x40xf32>, tensor<2x12x7x5xf32>) -> ()
  }) : () -> ()
}) : () -> ()
