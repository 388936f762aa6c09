// Reduction layouts the fixtures do not reach: a block per row (rows over
// 4096 elements), a column reduction split over blocks (stages 1-2 with
// partial states), a whole-tensor mean split 64 ways, softmax and
// layer_norm with rows cached in registers by a block, argmax split over
// blocks (first index across chunks), a column log_softmax split over
// blocks (stage 3 rewrites elements), Welford var over an outer dim, an f16
// sum accumulated in fp32, amax over every dim, a column max along a dim
// whose indices nothing reads (reduced as amax) and a column argmin.
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "a"}, {kf.name = "cm"}, {kf.name = "v"}, {kf.name = "s"}, {kf.name = "s2"}, {kf.name = "ln"}, {kf.name = "w"}, {kf.name = "lb"}, {kf.name = "am"}, {kf.name = "hv"}], function_type = (tensor<64x8192xf32>, tensor<4096x48xf32>, tensor<262144xf32>, tensor<8x3000xf32>, tensor<3000x8xf32>, tensor<16x2048xf32>, tensor<2048xf32>, tensor<2048xf32>, tensor<4x20000xf32>, tensor<32x1000xf16>) -> (tensor<64xf32>, tensor<48xf32>, tensor<f32>, tensor<8x3000xf32>, tensor<16x2048xf32>, tensor<16x1xf32>, tensor<4xi64>, tensor<32xf16>, tensor<3000x8xf32>, tensor<48xf32>, tensor<f32>, tensor<48xf32>, tensor<48xi64>), sym_name = "reduce_paths"}> ({
  ^bb0(%a: tensor<64x8192xf32>, %cm: tensor<4096x48xf32>, %v: tensor<262144xf32>, %s: tensor<8x3000xf32>, %s2: tensor<3000x8xf32>, %ln: tensor<16x2048xf32>, %w: tensor<2048xf32>, %lb: tensor<2048xf32>, %am: tensor<4x20000xf32>, %hv: tensor<32x1000xf16>):
    %o0 = "kf.sum"(%a) {dims = array<i64: 1>, keepdim = false} : (tensor<64x8192xf32>) -> tensor<64xf32> loc("o0")
    %o1 = "kf.sum"(%cm) {dims = array<i64: 0>, keepdim = false} : (tensor<4096x48xf32>) -> tensor<48xf32> loc("o1")
    %o2 = "kf.mean"(%v) {dims = array<i64: 0>, keepdim = false} : (tensor<262144xf32>) -> tensor<f32> loc("o2")
    %o3 = "kf.softmax"(%s) {dim = 1 : i64} : (tensor<8x3000xf32>) -> tensor<8x3000xf32> loc("o3")
    %o4:3 = "kf.layer_norm"(%ln, %w, %lb) {eps = 1.0e-05 : f64, normalized_ndim = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<16x2048xf32>, tensor<2048xf32>, tensor<2048xf32>) -> (tensor<16x2048xf32>, tensor<16x1xf32>, tensor<16x1xf32>) loc("o4")
    %o6 = "kf.argmax"(%am) {dim = 1 : i64, keepdim = false} : (tensor<4x20000xf32>) -> tensor<4xi64> loc("o6")
    %o7 = "kf.sum"(%hv) {dims = array<i64: 1>, keepdim = false} : (tensor<32x1000xf16>) -> tensor<32xf16> loc("o7")
    %o8 = "kf.log_softmax"(%s2) {dim = 0 : i64} : (tensor<3000x8xf32>) -> tensor<3000x8xf32> loc("o8")
    %o9 = "kf.var"(%cm) {correction = 1 : i64, dims = array<i64: 0>, keepdim = false} : (tensor<4096x48xf32>) -> tensor<48xf32> loc("o9")
    %o10 = "kf.amax"(%a) {dims = array<i64: 0, 1>, keepdim = false} : (tensor<64x8192xf32>) -> tensor<f32> loc("o10")
    %o11:2 = "kf.max_dim"(%cm) {dim = 0 : i64, keepdim = false} : (tensor<4096x48xf32>) -> (tensor<48xf32>, tensor<48xi64>) loc("o11")
    %o12 = "kf.argmin"(%cm) {dim = 0 : i64, keepdim = false} : (tensor<4096x48xf32>) -> tensor<48xi64> loc("o12")
    "func.return"(%o0, %o1, %o2, %o3, %o4#0, %o4#2, %o6, %o7, %o8, %o9, %o10, %o11#0, %o12) : (tensor<64xf32>, tensor<48xf32>, tensor<f32>, tensor<8x3000xf32>, tensor<16x2048xf32>, tensor<16x1xf32>, tensor<4xi64>, tensor<32xf16>, tensor<3000x8xf32>, tensor<48xf32>, tensor<f32>, tensor<48xf32>, tensor<48xi64>) -> ()
  }) : () -> ()
}) : () -> ()
