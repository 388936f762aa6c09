// Plain reductions whose group also holds element-wise ops over the input's
// shape (pass/partition.c, row_broadcast; agent/builtin_reduce.c, phase 2):
// RMSNorm over a residual sum that is also an output (one kernel writes
// both), an L2 normalisation over odd rows (scalar path), a column sum
// dividing its columns, a long-row mean subtracted over few rows (rows split
// over blocks: stage 3 runs the epilogue), a softmax whose scaled input is
// an output too, a var-normalised row, and a sum over the last dim of a
// square tensor broadcast along the other axis (not per row: a group of its
// own), and PyTorch's logsumexp decomposition over channels (amax, a row
// value chosen by where with a 0-d fill, then exp(x - it) over the
// elements: KernelBench L2 43).
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "r"}, {kf.name = "w"}, {kf.name = "z"}, {kf.name = "c"}, {kf.name = "l"}, {kf.name = "q"}, {kf.name = "v5"}], function_type = (tensor<24x4096xf32>, tensor<24x4096xf32>, tensor<4096xf32>, tensor<10x1027xf32>, tensor<96x40xf32>, tensor<4x65536xf32>, tensor<8x8xf32>, tensor<2x16x3x5xf32>) -> (tensor<24x4096xf32>, tensor<24x4096xf32>, tensor<10x1027xf32>, tensor<96x40xf32>, tensor<4x65536xf32>, tensor<24x4096xf32>, tensor<24x4096xf32>, tensor<10x1027xf32>, tensor<8x8xf32>, tensor<2x1x3x5xf32>), sym_name = "row_epilogue_paths"}> ({
  ^bb0(%x: tensor<24x4096xf32>, %r: tensor<24x4096xf32>, %w: tensor<4096xf32>, %z: tensor<10x1027xf32>, %c: tensor<96x40xf32>, %l: tensor<4x65536xf32>, %q: tensor<8x8xf32>, %v5: tensor<2x16x3x5xf32>):
    %eps = "kf.scalar"() {value = 1.0e-06 : f64} : () -> f64 loc("eps")
    %h = "kf.add"(%x, %r) : (tensor<24x4096xf32>, tensor<24x4096xf32>) -> tensor<24x4096xf32> loc("h")
    %p = "kf.mul"(%h, %h) : (tensor<24x4096xf32>, tensor<24x4096xf32>) -> tensor<24x4096xf32> loc("p")
    %m = "kf.mean"(%p) {dims = array<i64: 1>, keepdim = true} : (tensor<24x4096xf32>) -> tensor<24x1xf32> loc("m")
    %me = "kf.add"(%m, %eps) : (tensor<24x1xf32>, f64) -> tensor<24x1xf32> loc("me")
    %s = "kf.rsqrt"(%me) : (tensor<24x1xf32>) -> tensor<24x1xf32> loc("s")
    %hs = "kf.mul"(%h, %s) : (tensor<24x4096xf32>, tensor<24x1xf32>) -> tensor<24x4096xf32> loc("hs")
    %y = "kf.mul"(%hs, %w) : (tensor<24x4096xf32>, tensor<4096xf32>) -> tensor<24x4096xf32> loc("y")
    %n = "kf.norm"(%z) {dims = array<i64: 1>, keepdim = true, ord = 2.0 : f64} : (tensor<10x1027xf32>) -> tensor<10x1xf32> loc("n")
    %zn = "kf.div"(%z, %n) : (tensor<10x1027xf32>, tensor<10x1xf32>) -> tensor<10x1027xf32> loc("zn")
    %cs = "kf.sum"(%c) {dims = array<i64: 0>, keepdim = false} : (tensor<96x40xf32>) -> tensor<40xf32> loc("cs")
    %cn = "kf.div"(%c, %cs) : (tensor<96x40xf32>, tensor<40xf32>) -> tensor<96x40xf32> loc("cn")
    %lm = "kf.mean"(%l) {dims = array<i64: 1>, keepdim = true} : (tensor<4x65536xf32>) -> tensor<4x1xf32> loc("lm")
    %lc = "kf.sub"(%l, %lm) : (tensor<4x65536xf32>, tensor<4x1xf32>) -> tensor<4x65536xf32> loc("lc")
    %half = "kf.scalar"() {value = 0.5 : f64} : () -> f64 loc("half")
    %t = "kf.mul"(%x, %half) : (tensor<24x4096xf32>, f64) -> tensor<24x4096xf32> loc("t")
    %sm = "kf.softmax"(%t) {dim = 1 : i64} : (tensor<24x4096xf32>) -> tensor<24x4096xf32> loc("sm")
    %v = "kf.var"(%z) {correction = 1 : i64, dims = array<i64: 1>, keepdim = true} : (tensor<10x1027xf32>) -> tensor<10x1xf32> loc("v")
    %zv = "kf.mul"(%z, %v) : (tensor<10x1027xf32>, tensor<10x1xf32>) -> tensor<10x1027xf32> loc("zv")
    %qs = "kf.sum"(%q) {dims = array<i64: 1>, keepdim = false} : (tensor<8x8xf32>) -> tensor<8xf32> loc("qs")
    %qa = "kf.add"(%q, %qs) : (tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32> loc("qa")
    %am = "kf.amax"(%v5) {dims = array<i64: 1>, keepdim = true} : (tensor<2x16x3x5xf32>) -> tensor<2x1x3x5xf32> loc("am")
    %ab = "kf.abs"(%am) : (tensor<2x1x3x5xf32>) -> tensor<2x1x3x5xf32> loc("ab")
    %inf = "kf.scalar"() {value = 0x7FF0000000000000 : f64} : () -> f64 loc("inf")
    %isinf = "kf.eq"(%ab, %inf) : (tensor<2x1x3x5xf32>, f64) -> tensor<2x1x3x5xi1> loc("isinf")
    %zero = "kf.full"() {value = 0.0 : f64} : () -> tensor<f32> loc("zero")
    %wh = "kf.where"(%isinf, %zero, %am) : (tensor<2x1x3x5xi1>, tensor<f32>, tensor<2x1x3x5xf32>) -> tensor<2x1x3x5xf32> loc("wh")
    %vs = "kf.sub"(%v5, %wh) : (tensor<2x16x3x5xf32>, tensor<2x1x3x5xf32>) -> tensor<2x16x3x5xf32> loc("vs")
    %ve = "kf.exp"(%vs) : (tensor<2x16x3x5xf32>) -> tensor<2x16x3x5xf32> loc("ve")
    %se = "kf.sum"(%ve) {dims = array<i64: 1>, keepdim = true} : (tensor<2x16x3x5xf32>) -> tensor<2x1x3x5xf32> loc("se")
    %lg = "kf.log"(%se) : (tensor<2x1x3x5xf32>) -> tensor<2x1x3x5xf32> loc("lg")
    %lse = "kf.add"(%lg, %wh) : (tensor<2x1x3x5xf32>, tensor<2x1x3x5xf32>) -> tensor<2x1x3x5xf32> loc("lse")
    "func.return"(%h, %y, %zn, %cn, %lc, %t, %sm, %zv, %qa, %lse) : (tensor<24x4096xf32>, tensor<24x4096xf32>, tensor<10x1027xf32>, tensor<96x40xf32>, tensor<4x65536xf32>, tensor<24x4096xf32>, tensor<24x4096xf32>, tensor<10x1027xf32>, tensor<8x8xf32>, tensor<2x1x3x5xf32>) -> ()
  }) : () -> ()
}) : () -> ()
