// Casts in the epilogues of 16-bit GEMMs and convolutions (pass/partition.c,
// agent/builtin_gemm.c, agent/builtin_conv.c).
//
// A bf16 linear with its residual add, upcast to f32 for an RMSNorm (the
// form transformers' Llama and Qwen2 export in bf16): the GEMM group's
// epilogue writes the bf16 sum and the f32 cast and square the norm reads.
// Its unit refused outputs of a dtype other than the product's ("GEMM
// epilogue output of another shape"), failing the compile.
//
// An f16 convolution whose result goes, upcast to f32, through a hardswish
// and back to f16 into a mean (MobileNetV3's squeeze-excite input): the
// hardswish reads the cast twice, and the cast alone joined the
// convolution's group (feeds_reduction wanted each value used once), so
// the group wrote the f32 copy for the mean to read back, in an epilogue
// launch after cuDNN, and its unit refused it like the GEMM's. The whole
// chain is now the mean's prologue, as in the f32 model: the convolution
// group is the convolution with its bias, one cuDNN call.
//
// RUN: %kfuse partition %s | FileCheck %s
// RUN: %kfuse compile %s -o %t.so -q
//
// CHECK: // group 1 gemm key
// CHECK-NEXT: //   ops: *h(kf.mm) s(kf.add) sf(kf.cast) p(kf.pow){{$}}
// CHECK-NEXT: //   inputs:
// CHECK-NEXT: //   outputs: %s %sf %p{{$}}
// CHECK: // group 3 conv key
// CHECK-NEXT: //   ops: *ce(kf.conv){{$}}
// CHECK: // group 4 reduce key
// CHECK-NEXT: //   ops: cef(kf.cast) e3(kf.add) e0(kf.clamp) e6(kf.clamp) em(kf.mul) ed(kf.div) eb(kf.cast) *se(kf.mean){{$}}
// CHECK-NEXT: //   inputs: %ce %three %six{{$}}

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "w"}, {kf.name = "r"}, {kf.name = "g"}, {kf.name = "xc"}, {kf.name = "wc"}, {kf.name = "bc"}], function_type = (tensor<16x64xbf16>, tensor<64x64xbf16>, tensor<16x64xbf16>, tensor<64xbf16>, tensor<2x8x6x6xf16>, tensor<16x8x1x1xf16>, tensor<16xf16>) -> (tensor<16x64xbf16>, tensor<16x64xbf16>, tensor<2x16x1x1xf16>), sym_name = "half_epilogue"}> ({
  ^bb0(%x: tensor<16x64xbf16>, %w: tensor<64x64xbf16>, %r: tensor<16x64xbf16>, %g: tensor<64xbf16>, %xc: tensor<2x8x6x6xf16>, %wc: tensor<16x8x1x1xf16>, %bc: tensor<16xf16>):
    %two = "kf.scalar"() {value = 2 : i64} : () -> i64 loc("two")
    %three = "kf.scalar"() {value = 3 : i64} : () -> i64 loc("three")
    %six = "kf.scalar"() {value = 6 : i64} : () -> i64 loc("six")
    %eps = "kf.scalar"() {value = 1.0e-06 : f64} : () -> f64 loc("eps")
    %pw = "kf.permute"(%w) {dims = array<i64: 1, 0>} : (tensor<64x64xbf16>) -> tensor<64x64xbf16, #kf.strided<[1, 64]>> loc("pw")
    %h = "kf.mm"(%x, %pw) : (tensor<16x64xbf16>, tensor<64x64xbf16, #kf.strided<[1, 64]>>) -> tensor<16x64xbf16> loc("h")
    %s = "kf.add"(%r, %h) : (tensor<16x64xbf16>, tensor<16x64xbf16>) -> tensor<16x64xbf16> loc("s")
    %sf = "kf.cast"(%s) : (tensor<16x64xbf16>) -> tensor<16x64xf32> loc("sf")
    %p = "kf.pow"(%sf, %two) : (tensor<16x64xf32>, i64) -> tensor<16x64xf32> loc("p")
    %m = "kf.mean"(%p) {dims = array<i64: 1>, keepdim = true} : (tensor<16x64xf32>) -> tensor<16x1xf32> loc("m")
    %a = "kf.add"(%m, %eps) : (tensor<16x1xf32>, f64) -> tensor<16x1xf32> loc("a")
    %q = "kf.rsqrt"(%a) : (tensor<16x1xf32>) -> tensor<16x1xf32> loc("q")
    %y = "kf.mul"(%sf, %q) : (tensor<16x64xf32>, tensor<16x1xf32>) -> tensor<16x64xf32> loc("y")
    %yb = "kf.cast"(%y) : (tensor<16x64xf32>) -> tensor<16x64xbf16> loc("yb")
    %n = "kf.mul"(%g, %yb) : (tensor<64xbf16>, tensor<16x64xbf16>) -> tensor<16x64xbf16> loc("n")
    %ce = "kf.conv"(%xc, %wc, %bc) {dilation = array<i64: 1, 1>, groups = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>, output_padding = array<i64: 0, 0>, padding = array<i64: 0, 0>, stride = array<i64: 1, 1>, transposed = false} : (tensor<2x8x6x6xf16>, tensor<16x8x1x1xf16>, tensor<16xf16>) -> tensor<2x16x6x6xf16> loc("ce")
    %cef = "kf.cast"(%ce) : (tensor<2x16x6x6xf16>) -> tensor<2x16x6x6xf32> loc("cef")
    %e3 = "kf.add"(%cef, %three) : (tensor<2x16x6x6xf32>, i64) -> tensor<2x16x6x6xf32> loc("e3")
    %e0 = "kf.clamp"(%e3) {min = 0 : i64} : (tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xf32> loc("e0")
    %e6 = "kf.clamp"(%e0) {max = 6 : i64} : (tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xf32> loc("e6")
    %em = "kf.mul"(%cef, %e6) : (tensor<2x16x6x6xf32>, tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xf32> loc("em")
    %ed = "kf.div"(%em, %six) : (tensor<2x16x6x6xf32>, i64) -> tensor<2x16x6x6xf32> loc("ed")
    %eb = "kf.cast"(%ed) : (tensor<2x16x6x6xf32>) -> tensor<2x16x6x6xf16> loc("eb")
    %se = "kf.mean"(%eb) {dims = array<i64: 2, 3>, keepdim = true} : (tensor<2x16x6x6xf16>) -> tensor<2x16x1x1xf16> loc("se")
    "func.return"(%s, %n, %se) : (tensor<16x64xbf16>, tensor<16x64xbf16>, tensor<2x16x1x1xf16>) -> ()
  }) : () -> ()
}) : () -> ()
