// 16-bit models' GEMM and convolution epilogues holding casts, the forms
// transformers' Llama and Qwen2 in bf16 and torchvision's MobileNetV3 in
// f16 export (PyTorch's own upcasts to f32 around RMSNorm, SiLU and
// hardswish are kf.cast ops; half types accumulate in fp32):
//  - bf16 linear + residual add, upcast to f32 for an RMSNorm: the GEMM
//    group writes the bf16 sum (%s) and the f32 cast and square the norm's
//    row kernel reads; the norm casts back to bf16 (%yb);
//  - bf16 gate/up linears, silu in f32 between two casts, times the up
//    projection, each in its GEMM's epilogue (%mu);
//  - a bf16 linear whose bias the library step adds, upcast to f32 for a
//    row normalisation (%dnb: Qwen2's biased projections, logits.float());
//  - an RMSNorm of a bf16 input alone, whose bf16 results are another dtype
//    than the f32 row the reduction reads (%n2);
//  - f16 convolutions: hardswish in f32 cast back to f16 (%hb); the f32
//    hardswish read by a normalisation over the channels (%wnb), so the
//    convolution group writes f32; MobileNetV3's squeeze-excite form, conv
//    -> cast -> hardswish -> cast -> mean, whose epilogue the mean takes
//    as its prologue (%se).
// The GEMM and convolution groups writing a dtype other than their
// product's were refused ("epilogue output of another shape"), and the
// norms' bf16 results were never stored. Operands go through abs: the
// reference is the fp64 interpreter, which rounds no intermediate to
// bf16, and positive sums keep each output within the 1% a few bf16
// roundings allow.
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "wo"}, {kf.name = "r"}, {kf.name = "g1"}, {kf.name = "wg"}, {kf.name = "wu"}, {kf.name = "wq"}, {kf.name = "bq"}, {kf.name = "x2"}, {kf.name = "x3"}, {kf.name = "xc"}, {kf.name = "wc"}, {kf.name = "bc"}, {kf.name = "wc2"}, {kf.name = "bc2"}, {kf.name = "wc3"}, {kf.name = "bc3"}], function_type = (tensor<24x48xbf16>, tensor<40x48xbf16>, tensor<24x40xbf16>, tensor<40xbf16>, tensor<64x40xbf16>, tensor<64x40xbf16>, tensor<40x40xbf16>, tensor<40xbf16>, tensor<24x40xbf16>, tensor<24x40xbf16>, tensor<2x8x10x10xf16>, tensor<16x8x3x3xf16>, tensor<16xf16>, tensor<12x8x1x1xf16>, tensor<12xf16>, tensor<20x8x3x3xf16>, tensor<20xf16>) -> (tensor<24x40xbf16>, tensor<24x40xbf16>, tensor<24x64xbf16>, tensor<24x40xbf16>, tensor<24x40xbf16>, tensor<2x16x10x10xf16>, tensor<2x12x10x10xf16>, tensor<2x20x1x1xf16>), sym_name = "half_epilogue_paths"}> ({
  ^bb0(%x: tensor<24x48xbf16>, %wo: tensor<40x48xbf16>, %r: tensor<24x40xbf16>, %g1: tensor<40xbf16>, %wg: tensor<64x40xbf16>, %wu: tensor<64x40xbf16>, %wq: tensor<40x40xbf16>, %bq: tensor<40xbf16>, %x2: tensor<24x40xbf16>, %x3: tensor<24x40xbf16>, %xc: tensor<2x8x10x10xf16>, %wc: tensor<16x8x3x3xf16>, %bc: tensor<16xf16>, %wc2: tensor<12x8x1x1xf16>, %bc2: tensor<12xf16>, %wc3: tensor<20x8x3x3xf16>, %bc3: tensor<20xf16>):
    %two = "kf.scalar"() {value = 2 : i64} : () -> i64 loc("two")
    %three = "kf.scalar"() {value = 3 : i64} : () -> i64 loc("three")
    %six = "kf.scalar"() {value = 6 : i64} : () -> i64 loc("six")
    %eps = "kf.scalar"() {value = 1.0e-06 : f64} : () -> f64 loc("eps")
    %x_a = "kf.abs"(%x) : (tensor<24x48xbf16>) -> tensor<24x48xbf16> loc("x_a")
    %wo_a = "kf.abs"(%wo) : (tensor<40x48xbf16>) -> tensor<40x48xbf16> loc("wo_a")
    %r_a = "kf.abs"(%r) : (tensor<24x40xbf16>) -> tensor<24x40xbf16> loc("r_a")
    %wg_a = "kf.abs"(%wg) : (tensor<64x40xbf16>) -> tensor<64x40xbf16> loc("wg_a")
    %wu_a = "kf.abs"(%wu) : (tensor<64x40xbf16>) -> tensor<64x40xbf16> loc("wu_a")
    %wq_a = "kf.abs"(%wq) : (tensor<40x40xbf16>) -> tensor<40x40xbf16> loc("wq_a")
    %bq_a = "kf.abs"(%bq) : (tensor<40xbf16>) -> tensor<40xbf16> loc("bq_a")
    %x3_a = "kf.abs"(%x3) : (tensor<24x40xbf16>) -> tensor<24x40xbf16> loc("x3_a")
    %xc_a = "kf.abs"(%xc) : (tensor<2x8x10x10xf16>) -> tensor<2x8x10x10xf16> loc("xc_a")
    %wc_a = "kf.abs"(%wc) : (tensor<16x8x3x3xf16>) -> tensor<16x8x3x3xf16> loc("wc_a")
    %bc_a = "kf.abs"(%bc) : (tensor<16xf16>) -> tensor<16xf16> loc("bc_a")
    %wc2_a = "kf.abs"(%wc2) : (tensor<12x8x1x1xf16>) -> tensor<12x8x1x1xf16> loc("wc2_a")
    %bc2_a = "kf.abs"(%bc2) : (tensor<12xf16>) -> tensor<12xf16> loc("bc2_a")
    %wc3_a = "kf.abs"(%wc3) : (tensor<20x8x3x3xf16>) -> tensor<20x8x3x3xf16> loc("wc3_a")
    %bc3_a = "kf.abs"(%bc3) : (tensor<20xf16>) -> tensor<20xf16> loc("bc3_a")
    %pw = "kf.permute"(%wo_a) {dims = array<i64: 1, 0>} : (tensor<40x48xbf16>) -> tensor<48x40xbf16, #kf.strided<[1, 48]>> loc("pw")
    %h = "kf.mm"(%x_a, %pw) : (tensor<24x48xbf16>, tensor<48x40xbf16, #kf.strided<[1, 48]>>) -> tensor<24x40xbf16> loc("h")
    %s = "kf.add"(%r_a, %h) : (tensor<24x40xbf16>, tensor<24x40xbf16>) -> tensor<24x40xbf16> loc("s")
    %sf = "kf.cast"(%s) : (tensor<24x40xbf16>) -> tensor<24x40xf32> loc("sf")
    %p = "kf.pow"(%sf, %two) : (tensor<24x40xf32>, i64) -> tensor<24x40xf32> loc("p")
    %m = "kf.mean"(%p) {dims = array<i64: 1>, keepdim = true} : (tensor<24x40xf32>) -> tensor<24x1xf32> loc("m")
    %a = "kf.add"(%m, %eps) : (tensor<24x1xf32>, f64) -> tensor<24x1xf32> loc("a")
    %q = "kf.rsqrt"(%a) : (tensor<24x1xf32>) -> tensor<24x1xf32> loc("q")
    %y = "kf.mul"(%sf, %q) : (tensor<24x40xf32>, tensor<24x1xf32>) -> tensor<24x40xf32> loc("y")
    %yb = "kf.cast"(%y) : (tensor<24x40xf32>) -> tensor<24x40xbf16> loc("yb")
    %pg = "kf.permute"(%wg_a) {dims = array<i64: 1, 0>} : (tensor<64x40xbf16>) -> tensor<40x64xbf16, #kf.strided<[1, 40]>> loc("pg")
    %gg = "kf.mm"(%x3_a, %pg) : (tensor<24x40xbf16>, tensor<40x64xbf16, #kf.strided<[1, 40]>>) -> tensor<24x64xbf16> loc("gg")
    %gf = "kf.cast"(%gg) : (tensor<24x64xbf16>) -> tensor<24x64xf32> loc("gf")
    %sg = "kf.sigmoid"(%gf) : (tensor<24x64xf32>) -> tensor<24x64xf32> loc("sg")
    %si = "kf.mul"(%gf, %sg) : (tensor<24x64xf32>, tensor<24x64xf32>) -> tensor<24x64xf32> loc("si")
    %sb = "kf.cast"(%si) : (tensor<24x64xf32>) -> tensor<24x64xbf16> loc("sb")
    %pu = "kf.permute"(%wu_a) {dims = array<i64: 1, 0>} : (tensor<64x40xbf16>) -> tensor<40x64xbf16, #kf.strided<[1, 40]>> loc("pu")
    %uu = "kf.mm"(%x3_a, %pu) : (tensor<24x40xbf16>, tensor<40x64xbf16, #kf.strided<[1, 40]>>) -> tensor<24x64xbf16> loc("uu")
    %mu = "kf.mul"(%sb, %uu) : (tensor<24x64xbf16>, tensor<24x64xbf16>) -> tensor<24x64xbf16> loc("mu")
    %pq = "kf.permute"(%wq_a) {dims = array<i64: 1, 0>} : (tensor<40x40xbf16>) -> tensor<40x40xbf16, #kf.strided<[1, 40]>> loc("pq")
    %c = "kf.addmm"(%bq_a, %x3_a, %pq) {alpha = 1 : i64, beta = 1 : i64} : (tensor<40xbf16>, tensor<24x40xbf16>, tensor<40x40xbf16, #kf.strided<[1, 40]>>) -> tensor<24x40xbf16> loc("c")
    %cf = "kf.cast"(%c) : (tensor<24x40xbf16>) -> tensor<24x40xf32> loc("cf")
    %mc = "kf.mean"(%cf) {dims = array<i64: 1>, keepdim = true} : (tensor<24x40xf32>) -> tensor<24x1xf32> loc("mc")
    %dn = "kf.div"(%cf, %mc) : (tensor<24x40xf32>, tensor<24x1xf32>) -> tensor<24x40xf32> loc("dn")
    %dnb = "kf.cast"(%dn) : (tensor<24x40xf32>) -> tensor<24x40xbf16> loc("dnb")
    %x2f = "kf.cast"(%x2) : (tensor<24x40xbf16>) -> tensor<24x40xf32> loc("x2f")
    %p2 = "kf.pow"(%x2f, %two) : (tensor<24x40xf32>, i64) -> tensor<24x40xf32> loc("p2")
    %m2 = "kf.mean"(%p2) {dims = array<i64: 1>, keepdim = true} : (tensor<24x40xf32>) -> tensor<24x1xf32> loc("m2")
    %a2 = "kf.add"(%m2, %eps) : (tensor<24x1xf32>, f64) -> tensor<24x1xf32> loc("a2")
    %q2 = "kf.rsqrt"(%a2) : (tensor<24x1xf32>) -> tensor<24x1xf32> loc("q2")
    %y2 = "kf.mul"(%x2f, %q2) : (tensor<24x40xf32>, tensor<24x1xf32>) -> tensor<24x40xf32> loc("y2")
    %y2b = "kf.cast"(%y2) : (tensor<24x40xf32>) -> tensor<24x40xbf16> loc("y2b")
    %n2 = "kf.mul"(%g1, %y2b) : (tensor<40xbf16>, tensor<24x40xbf16>) -> tensor<24x40xbf16> loc("n2")
    %cv = "kf.conv"(%xc_a, %wc_a, %bc_a) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x8x10x10xf16>, tensor<16x8x3x3xf16>, tensor<16xf16>) -> tensor<2x16x10x10xf16> loc("cv")
    %cvf = "kf.cast"(%cv) : (tensor<2x16x10x10xf16>) -> tensor<2x16x10x10xf32> loc("cvf")
    %h3 = "kf.add"(%cvf, %three) : (tensor<2x16x10x10xf32>, i64) -> tensor<2x16x10x10xf32> loc("h3")
    %h0 = "kf.clamp"(%h3) {min = 0 : i64} : (tensor<2x16x10x10xf32>) -> tensor<2x16x10x10xf32> loc("h0")
    %h6 = "kf.clamp"(%h0) {max = 6 : i64} : (tensor<2x16x10x10xf32>) -> tensor<2x16x10x10xf32> loc("h6")
    %hm = "kf.mul"(%cvf, %h6) : (tensor<2x16x10x10xf32>, tensor<2x16x10x10xf32>) -> tensor<2x16x10x10xf32> loc("hm")
    %hd = "kf.div"(%hm, %six) : (tensor<2x16x10x10xf32>, i64) -> tensor<2x16x10x10xf32> loc("hd")
    %hb = "kf.cast"(%hd) : (tensor<2x16x10x10xf32>) -> tensor<2x16x10x10xf16> loc("hb")
    %cw = "kf.conv"(%xc_a, %wc2_a, %bc2_a) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0, 0>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x8x10x10xf16>, tensor<12x8x1x1xf16>, tensor<12xf16>) -> tensor<2x12x10x10xf16> loc("cw")
    %cwf = "kf.cast"(%cw) : (tensor<2x12x10x10xf16>) -> tensor<2x12x10x10xf32> loc("cwf")
    %w3 = "kf.add"(%cwf, %three) : (tensor<2x12x10x10xf32>, i64) -> tensor<2x12x10x10xf32> loc("w3")
    %w0 = "kf.clamp"(%w3) {min = 0 : i64} : (tensor<2x12x10x10xf32>) -> tensor<2x12x10x10xf32> loc("w0")
    %w6 = "kf.clamp"(%w0) {max = 6 : i64} : (tensor<2x12x10x10xf32>) -> tensor<2x12x10x10xf32> loc("w6")
    %wm = "kf.mul"(%cwf, %w6) : (tensor<2x12x10x10xf32>, tensor<2x12x10x10xf32>) -> tensor<2x12x10x10xf32> loc("wm")
    %wd = "kf.div"(%wm, %six) : (tensor<2x12x10x10xf32>, i64) -> tensor<2x12x10x10xf32> loc("wd")
    %wmean = "kf.mean"(%wd) {dims = array<i64: 1>, keepdim = true} : (tensor<2x12x10x10xf32>) -> tensor<2x1x10x10xf32> loc("wmean")
    %wn = "kf.div"(%wd, %wmean) : (tensor<2x12x10x10xf32>, tensor<2x1x10x10xf32>) -> tensor<2x12x10x10xf32> loc("wn")
    %wnb = "kf.cast"(%wn) : (tensor<2x12x10x10xf32>) -> tensor<2x12x10x10xf16> loc("wnb")
    %ce = "kf.conv"(%xc_a, %wc3_a, %bc3_a) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0, 0>, padding = array<i64: 1, 1>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x8x10x10xf16>, tensor<20x8x3x3xf16>, tensor<20xf16>) -> tensor<2x20x10x10xf16> loc("ce")
    %cef = "kf.cast"(%ce) : (tensor<2x20x10x10xf16>) -> tensor<2x20x10x10xf32> loc("cef")
    %e3 = "kf.add"(%cef, %three) : (tensor<2x20x10x10xf32>, i64) -> tensor<2x20x10x10xf32> loc("e3")
    %e0 = "kf.clamp"(%e3) {min = 0 : i64} : (tensor<2x20x10x10xf32>) -> tensor<2x20x10x10xf32> loc("e0")
    %e6 = "kf.clamp"(%e0) {max = 6 : i64} : (tensor<2x20x10x10xf32>) -> tensor<2x20x10x10xf32> loc("e6")
    %em = "kf.mul"(%cef, %e6) : (tensor<2x20x10x10xf32>, tensor<2x20x10x10xf32>) -> tensor<2x20x10x10xf32> loc("em")
    %ed = "kf.div"(%em, %six) : (tensor<2x20x10x10xf32>, i64) -> tensor<2x20x10x10xf32> loc("ed")
    %eb = "kf.cast"(%ed) : (tensor<2x20x10x10xf32>) -> tensor<2x20x10x10xf16> loc("eb")
    %se = "kf.mean"(%eb) {dims = array<i64: 2, 3>, keepdim = true} : (tensor<2x20x10x10xf16>) -> tensor<2x20x1x1xf16> loc("se")
    "func.return"(%s, %yb, %mu, %dnb, %n2, %hb, %wnb, %se) : (tensor<24x40xbf16>, tensor<24x40xbf16>, tensor<24x64xbf16>, tensor<24x40xbf16>, tensor<24x40xbf16>, tensor<2x16x10x10xf16>, tensor<2x12x10x10xf16>, tensor<2x20x1x1xf16>) -> ()
  }) : () -> ()
}) : () -> ()
