// Element-wise launches tiled through shared memory (agent/templates/
// ew_tiled.cu): a convolution epilogue that writes row-major from a
// channels-last result, with a second output and an operand converted to
// channels-last, and one that also feeds a second convolution, so its
// launch writes it in both layouts (mode fused-nhwc: the layout copies
// fuse into the launches around them); operands read transposed through permutes (partial tiles:
// 33 x 70 and 45 x 37), several outputs from one tiled launch, a broadcast
// operand beside a tiled one, and f16 data.
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "y"}, {kf.name = "w"}, {kf.name = "b"}, {kf.name = "z"}, {kf.name = "v"}, {kf.name = "m"}, {kf.name = "r"}, {kf.name = "h"}, {kf.name = "w2"}], function_type = (tensor<2x8x9x10xf32>, tensor<2x12x9x10xf32>, tensor<12x8x3x3xf32>, tensor<12xf32>, tensor<3x33x70xf32>, tensor<3x70x33xf32>, tensor<45x37xf32>, tensor<45xf32>, tensor<4x20x50xf16>, tensor<12x12x3x3xf32>) -> (tensor<2x12x9x10xf32>, tensor<2x12x9x10xf32>, tensor<3x70x33xf32>, tensor<3x70x33xf32>, tensor<37x45xf32>, tensor<4x50x20xf16>, tensor<2x12x9x10xf32>), sym_name = "nhwc_tiled_paths"}> ({
  ^bb0(%x: tensor<2x8x9x10xf32>, %y: tensor<2x12x9x10xf32>, %w: tensor<12x8x3x3xf32>, %b: tensor<12xf32>, %z: tensor<3x33x70xf32>, %v: tensor<3x70x33xf32>, %m: tensor<45x37xf32>, %r: tensor<45xf32>, %h: tensor<4x20x50xf16>, %w2: tensor<12x12x3x3xf32>):
    %c = "kf.conv"(%x, %w, %b) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x8x9x10xf32>, tensor<12x8x3x3xf32>, tensor<12xf32>) -> tensor<2x12x9x10xf32> loc("c")
    %s = "kf.sigmoid"(%c) : (tensor<2x12x9x10xf32>) -> tensor<2x12x9x10xf32> loc("s")
    %c2 = "kf.conv"(%s, %w2) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 0>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x12x9x10xf32>, tensor<12x12x3x3xf32>) -> tensor<2x12x9x10xf32> loc("c2")
    %o = "kf.mul"(%s, %y) : (tensor<2x12x9x10xf32>, tensor<2x12x9x10xf32>) -> tensor<2x12x9x10xf32> loc("o")
    %p = "kf.permute"(%z) {dims = array<i64: 0, 2, 1>} : (tensor<3x33x70xf32>) -> tensor<3x70x33xf32, #kf.strided<[2310, 1, 70]>> loc("p")
    %q = "kf.add"(%p, %v) : (tensor<3x70x33xf32, #kf.strided<[2310, 1, 70]>>, tensor<3x70x33xf32>) -> tensor<3x70x33xf32> loc("q")
    %e = "kf.exp"(%p) : (tensor<3x70x33xf32, #kf.strided<[2310, 1, 70]>>) -> tensor<3x70x33xf32> loc("e")
    %mt = "kf.permute"(%m) {dims = array<i64: 1, 0>} : (tensor<45x37xf32>) -> tensor<37x45xf32, #kf.strided<[1, 37]>> loc("mt")
    %mr = "kf.sub"(%mt, %r) : (tensor<37x45xf32, #kf.strided<[1, 37]>>, tensor<45xf32>) -> tensor<37x45xf32> loc("mr")
    %ht = "kf.permute"(%h) {dims = array<i64: 0, 2, 1>} : (tensor<4x20x50xf16>) -> tensor<4x50x20xf16, #kf.strided<[1000, 1, 50]>> loc("ht")
    %hn = "kf.neg"(%ht) : (tensor<4x50x20xf16, #kf.strided<[1000, 1, 50]>>) -> tensor<4x50x20xf16> loc("hn")
    "func.return"(%o, %s, %q, %e, %mr, %hn, %c2) : (tensor<2x12x9x10xf32>, tensor<2x12x9x10xf32>, tensor<3x70x33xf32>, tensor<3x70x33xf32>, tensor<37x45xf32>, tensor<4x50x20xf16>, tensor<2x12x9x10xf32>) -> ()
  }) : () -> ()
}) : () -> ()
