// Scan kernels (agent/templates/scan.cu) over the shapes and forms the
// fixtures do not reach: rows of 1, 31, 32, 33, 1000 and 4096+7 elements
// (two tiles, rows not 16-byte aligned), reverse, exclusive and both,
// cumprod (of 1 + x / 100, so products stay finite), f16 and bf16
// accumulated in f32, int32 and bool into int64, an int64 exclusive
// cumprod, scans over an outer dim (columns: vectors of lines, a width
// that divides no vector, a middle dim, reverse exclusive), one line of
// 100000 elements split over blocks (forward and reverse), a transposed
// operand (scalar loads), a rank-1 tensor and a 3-d last-dim scan.
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "a1"}, {kf.name = "a31"}, {kf.name = "a32"}, {kf.name = "a33"}, {kf.name = "a1000"}, {kf.name = "a4103"}, {kf.name = "cp"}, {kf.name = "h"}, {kf.name = "bf"}, {kf.name = "i"}, {kf.name = "il"}, {kf.name = "b"}, {kf.name = "c1"}, {kf.name = "c2"}, {kf.name = "c3"}, {kf.name = "c4"}, {kf.name = "lg"}, {kf.name = "t"}, {kf.name = "r1"}, {kf.name = "d3"}], function_type = (tensor<4x1xf32>, tensor<5x31xf32>, tensor<3x32xf32>, tensor<3x33xf32>, tensor<6x1000xf32>, tensor<5x4103xf32>, tensor<4x1000xf32>, tensor<4x1000xf16>, tensor<3x4103xbf16>, tensor<4x1000xi32>, tensor<3x20xi64>, tensor<4x300xi1>, tensor<1000x64xf32>, tensor<33x7xf32>, tensor<4x50x8xf32>, tensor<300x16xf32>, tensor<1x100000xf32>, tensor<100x64xf32>, tensor<7xf32>, tensor<2x3x500xf32>) -> (tensor<4x1xf32>, tensor<5x31xf32>, tensor<3x32xf32>, tensor<3x33xf32>, tensor<6x1000xf32>, tensor<6x1000xf32>, tensor<6x1000xf32>, tensor<5x4103xf32>, tensor<5x4103xf32>, tensor<4x1000xf32>, tensor<4x1000xf32>, tensor<4x1000xf16>, tensor<3x4103xbf16>, tensor<4x1000xi64>, tensor<3x20xi64>, tensor<4x300xi64>, tensor<1000x64xf32>, tensor<33x7xf32>, tensor<4x50x8xf32>, tensor<300x16xf32>, tensor<1x100000xf32>, tensor<1x100000xf32>, tensor<64x100xf32>, tensor<7xf32>, tensor<2x3x500xf32>), sym_name = "scan_paths"}> ({
  ^bb0(%a1: tensor<4x1xf32>, %a31: tensor<5x31xf32>, %a32: tensor<3x32xf32>, %a33: tensor<3x33xf32>, %a1000: tensor<6x1000xf32>, %a4103: tensor<5x4103xf32>, %cp: tensor<4x1000xf32>, %h: tensor<4x1000xf16>, %bf: tensor<3x4103xbf16>, %i: tensor<4x1000xi32>, %il: tensor<3x20xi64>, %b: tensor<4x300xi1>, %c1: tensor<1000x64xf32>, %c2: tensor<33x7xf32>, %c3: tensor<4x50x8xf32>, %c4: tensor<300x16xf32>, %lg: tensor<1x100000xf32>, %t: tensor<100x64xf32>, %r1: tensor<7xf32>, %d3: tensor<2x3x500xf32>):
    %o_a1 = "kf.cumsum"(%a1) {dim = 1 : i64} : (tensor<4x1xf32>) -> tensor<4x1xf32> loc("o_a1")
    %o_a31 = "kf.cumsum"(%a31) {dim = 1 : i64} : (tensor<5x31xf32>) -> tensor<5x31xf32> loc("o_a31")
    %o_a32 = "kf.cumsum"(%a32) {dim = 1 : i64} : (tensor<3x32xf32>) -> tensor<3x32xf32> loc("o_a32")
    %o_a33 = "kf.cumsum"(%a33) {dim = 1 : i64} : (tensor<3x33xf32>) -> tensor<3x33xf32> loc("o_a33")
    %o_fwd = "kf.cumsum"(%a1000) {dim = 1 : i64} : (tensor<6x1000xf32>) -> tensor<6x1000xf32> loc("o_fwd")
    %o_rev = "kf.cumsum"(%a1000) {dim = 1 : i64, reverse = true} : (tensor<6x1000xf32>) -> tensor<6x1000xf32> loc("o_rev")
    %o_exc = "kf.cumsum"(%a1000) {dim = 1 : i64, exclusive = true} : (tensor<6x1000xf32>) -> tensor<6x1000xf32> loc("o_exc")
    %o_4103 = "kf.cumsum"(%a4103) {dim = 1 : i64} : (tensor<5x4103xf32>) -> tensor<5x4103xf32> loc("o_4103")
    %o_4103r = "kf.cumsum"(%a4103) {dim = 1 : i64, exclusive = true, reverse = true} : (tensor<5x4103xf32>) -> tensor<5x4103xf32> loc("o_4103r")
    %cps = "kf.scalar"() {value = 1.0e-02 : f64} : () -> f64 loc("cps")
    %cpm = "kf.mul"(%cp, %cps) : (tensor<4x1000xf32>, f64) -> tensor<4x1000xf32> loc("cpm")
    %one = "kf.scalar"() {value = 1.0 : f64} : () -> f64 loc("one")
    %cpa = "kf.add"(%cpm, %one) : (tensor<4x1000xf32>, f64) -> tensor<4x1000xf32> loc("cpa")
    %o_cprod = "kf.cumprod"(%cpa) {dim = 1 : i64} : (tensor<4x1000xf32>) -> tensor<4x1000xf32> loc("o_cprod")
    %o_cprodre = "kf.cumprod"(%cpa) {dim = 1 : i64, exclusive = true, reverse = true} : (tensor<4x1000xf32>) -> tensor<4x1000xf32> loc("o_cprodre")
    %o_f16 = "kf.cumsum"(%h) {dim = 1 : i64} : (tensor<4x1000xf16>) -> tensor<4x1000xf16> loc("o_f16")
    %o_bf16 = "kf.cumsum"(%bf) {dim = 1 : i64, reverse = true} : (tensor<3x4103xbf16>) -> tensor<3x4103xbf16> loc("o_bf16")
    %o_i32 = "kf.cumsum"(%i) {dim = 1 : i64} : (tensor<4x1000xi32>) -> tensor<4x1000xi64> loc("o_i32")
    %o_i64p = "kf.cumprod"(%il) {dim = 1 : i64, exclusive = true} : (tensor<3x20xi64>) -> tensor<3x20xi64> loc("o_i64p")
    %o_bool = "kf.cumsum"(%b) {dim = 1 : i64} : (tensor<4x300xi1>) -> tensor<4x300xi64> loc("o_bool")
    %o_col = "kf.cumsum"(%c1) {dim = 0 : i64} : (tensor<1000x64xf32>) -> tensor<1000x64xf32> loc("o_col")
    %o_col7 = "kf.cumsum"(%c2) {dim = 0 : i64} : (tensor<33x7xf32>) -> tensor<33x7xf32> loc("o_col7")
    %o_mid = "kf.cumsum"(%c3) {dim = 1 : i64} : (tensor<4x50x8xf32>) -> tensor<4x50x8xf32> loc("o_mid")
    %o_colre = "kf.cumsum"(%c4) {dim = 0 : i64, exclusive = true, reverse = true} : (tensor<300x16xf32>) -> tensor<300x16xf32> loc("o_colre")
    %lga = "kf.abs"(%lg) : (tensor<1x100000xf32>) -> tensor<1x100000xf32> loc("lga")
    %o_long = "kf.cumsum"(%lga) {dim = 1 : i64} : (tensor<1x100000xf32>) -> tensor<1x100000xf32> loc("o_long")
    %o_longr = "kf.cumsum"(%lga) {dim = 1 : i64, reverse = true} : (tensor<1x100000xf32>) -> tensor<1x100000xf32> loc("o_longr")
    %tp = "kf.permute"(%t) {dims = array<i64: 1, 0>} : (tensor<100x64xf32>) -> tensor<64x100xf32, #kf.strided<[1, 64]>> loc("tp")
    %o_tr = "kf.cumsum"(%tp) {dim = 1 : i64} : (tensor<64x100xf32, #kf.strided<[1, 64]>>) -> tensor<64x100xf32> loc("o_tr")
    %o_r1 = "kf.cumsum"(%r1) {dim = 0 : i64} : (tensor<7xf32>) -> tensor<7xf32> loc("o_r1")
    %o_d3 = "kf.cumsum"(%d3) {dim = 2 : i64} : (tensor<2x3x500xf32>) -> tensor<2x3x500xf32> loc("o_d3")
    "func.return"(%o_a1, %o_a31, %o_a32, %o_a33, %o_fwd, %o_rev, %o_exc, %o_4103, %o_4103r, %o_cprod, %o_cprodre, %o_f16, %o_bf16, %o_i32, %o_i64p, %o_bool, %o_col, %o_col7, %o_mid, %o_colre, %o_long, %o_longr, %o_tr, %o_r1, %o_d3) : (tensor<4x1xf32>, tensor<5x31xf32>, tensor<3x32xf32>, tensor<3x33xf32>, tensor<6x1000xf32>, tensor<6x1000xf32>, tensor<6x1000xf32>, tensor<5x4103xf32>, tensor<5x4103xf32>, tensor<4x1000xf32>, tensor<4x1000xf32>, tensor<4x1000xf16>, tensor<3x4103xbf16>, tensor<4x1000xi64>, tensor<3x20xi64>, tensor<4x300xi64>, tensor<1000x64xf32>, tensor<33x7xf32>, tensor<4x50x8xf32>, tensor<300x16xf32>, tensor<1x100000xf32>, tensor<1x100000xf32>, tensor<64x100xf32>, tensor<7xf32>, tensor<2x3x500xf32>) -> ()
  }) : () -> ()
}) : () -> ()

