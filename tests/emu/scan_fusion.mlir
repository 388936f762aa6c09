// Scans with fused element-wise prologues and epilogues (one SCAN group
// each, pass/partition.c): KernelBench's masked cumsum (x * bool mask), a
// decayed cumulative sum (cumsum(x * w) / w with w = exp(-|w| / 8) over the
// line, then a residual add and relu), an arange computed in the kernel in
// a reverse exclusive scan stored as is and cast to f16, an int64 cumsum of a comparison
// stored both bare and scaled, a cumprod over an outer dim (columns) times
// its input, and one long line split over blocks with sqrt after it.
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "m"}, {kf.name = "w"}, {kf.name = "r"}, {kf.name = "c"}, {kf.name = "lg"}], function_type = (tensor<16x4096xf32>, tensor<16x4096xi1>, tensor<4096xf32>, tensor<16x4096xf32>, tensor<300x40xf32>, tensor<1x60000xf32>) -> (tensor<16x4096xf32>, tensor<16x4096xf32>, tensor<16x4096xf32>, tensor<16x4096xf16>, tensor<16x4096xi64>, tensor<16x4096xf32>, tensor<300x40xf32>, tensor<1x60000xf32>), sym_name = "scan_fusion"}> ({
  ^bb0(%x: tensor<16x4096xf32>, %m: tensor<16x4096xi1>, %w: tensor<4096xf32>, %r: tensor<16x4096xf32>, %c: tensor<300x40xf32>, %lg: tensor<1x60000xf32>):
    %xm = "kf.mul"(%x, %m) : (tensor<16x4096xf32>, tensor<16x4096xi1>) -> tensor<16x4096xf32> loc("xm")
    %o_mask = "kf.cumsum"(%xm) {dim = 1 : i64} : (tensor<16x4096xf32>) -> tensor<16x4096xf32> loc("o_mask")
    %aw = "kf.abs"(%w) : (tensor<4096xf32>) -> tensor<4096xf32> loc("aw")
    %k = "kf.scalar"() {value = -1.250000e-01 : f64} : () -> f64 loc("k")
    %ws = "kf.mul"(%aw, %k) : (tensor<4096xf32>, f64) -> tensor<4096xf32> loc("ws")
    %ew = "kf.exp"(%ws) : (tensor<4096xf32>) -> tensor<4096xf32> loc("ew")
    %xw = "kf.mul"(%x, %ew) : (tensor<16x4096xf32>, tensor<4096xf32>) -> tensor<16x4096xf32> loc("xw")
    %cw = "kf.cumsum"(%xw) {dim = 1 : i64} : (tensor<16x4096xf32>) -> tensor<16x4096xf32> loc("cw")
    %dq = "kf.div"(%cw, %ew) : (tensor<16x4096xf32>, tensor<4096xf32>) -> tensor<16x4096xf32> loc("dq")
    %ad = "kf.add"(%dq, %r) : (tensor<16x4096xf32>, tensor<16x4096xf32>) -> tensor<16x4096xf32> loc("ad")
    %o_decay = "kf.relu"(%ad) : (tensor<16x4096xf32>) -> tensor<16x4096xf32> loc("o_decay")
    %ar = "kf.arange"() {end = 4.000000e+00 : f64, start = 0.000000e+00 : f64, step = 9.765625e-04 : f64} : () -> tensor<4096xf32> loc("ar")
    %xa = "kf.add"(%r, %ar) : (tensor<16x4096xf32>, tensor<4096xf32>) -> tensor<16x4096xf32> loc("xa")
    %ca = "kf.cumsum"(%xa) {dim = 1 : i64, exclusive = true, reverse = true} : (tensor<16x4096xf32>) -> tensor<16x4096xf32> loc("ca")
    %o_ar16 = "kf.cast"(%ca) : (tensor<16x4096xf32>) -> tensor<16x4096xf16> loc("o_ar16")
    %z = "kf.scalar"() {value = 0.000000e+00 : f64} : () -> f64 loc("z")
    %gt = "kf.gt"(%x, %z) : (tensor<16x4096xf32>, f64) -> tensor<16x4096xi1> loc("gt")
    %ci = "kf.cumsum"(%gt) {dim = 1 : i64} : (tensor<16x4096xi1>) -> tensor<16x4096xi64> loc("ci")
    %h = "kf.scalar"() {value = 5.000000e-01 : f64} : () -> f64 loc("h")
    %o_half = "kf.mul"(%ci, %h) : (tensor<16x4096xi64>, f64) -> tensor<16x4096xf32> loc("o_half")
    %k64 = "kf.scalar"() {value = 1.562500e-02 : f64} : () -> f64 loc("k64")
    %one = "kf.scalar"() {value = 1.000000e+00 : f64} : () -> f64 loc("one")
    %cd = "kf.mul"(%c, %k64) : (tensor<300x40xf32>, f64) -> tensor<300x40xf32> loc("cd")
    %c1 = "kf.add"(%cd, %one) : (tensor<300x40xf32>, f64) -> tensor<300x40xf32> loc("c1")
    %cp = "kf.cumprod"(%c1) {dim = 0 : i64} : (tensor<300x40xf32>) -> tensor<300x40xf32> loc("cp")
    %o_colp = "kf.mul"(%cp, %c) : (tensor<300x40xf32>, tensor<300x40xf32>) -> tensor<300x40xf32> loc("o_colp")
    %la = "kf.abs"(%lg) : (tensor<1x60000xf32>) -> tensor<1x60000xf32> loc("la")
    %lc = "kf.cumsum"(%la) {dim = 1 : i64} : (tensor<1x60000xf32>) -> tensor<1x60000xf32> loc("lc")
    %lq = "kf.sqrt"(%lc) : (tensor<1x60000xf32>) -> tensor<1x60000xf32> loc("lq")
    "func.return"(%o_mask, %o_decay, %ca, %o_ar16, %ci, %o_half, %o_colp, %lq) : (tensor<16x4096xf32>, tensor<16x4096xf32>, tensor<16x4096xf32>, tensor<16x4096xf16>, tensor<16x4096xi64>, tensor<16x4096xf32>, tensor<300x40xf32>, tensor<1x60000xf32>) -> ()
  }) : () -> ()
}) : () -> ()

