// The algebra of pass/fold_reductions.c, checked numerically against the
// interpreter on the graph as written: a sum over a product's columns
// through a division, a negation and a subtracted vector (a matrix-vector
// product of the summed columns, B an input: summed by a sum op), then
// reductions over the size-1 dim that leaves (amax, max_dim with its
// indices, softmax, log_softmax, mean), a mean over an addmm's columns
// whose weight and bias are constants (fills: summed at compile time), and
// a sum of a sum (one reduction over both dims).
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "b"}, {kf.name = "c"}, {kf.name = "y"}], function_type = (tensor<16x40xf32>, tensor<40x24xf32>, tensor<24xf32>, tensor<3x5x7xf32>) -> (tensor<16x1xf32>, tensor<16x1xf32>, tensor<16x1xi64>, tensor<16x1xf32>, tensor<16x1xf32>, tensor<16xf32>, tensor<3xf32>), sym_name = "fold_reduction_paths"}> ({
  ^bb0(%x: tensor<16x40xf32>, %b: tensor<40x24xf32>, %c: tensor<24xf32>, %y: tensor<3x5x7xf32>):
    %mm = "kf.mm"(%x, %b) : (tensor<16x40xf32>, tensor<40x24xf32>) -> tensor<16x24xf32> loc("mm")
    %two = "kf.scalar"() {value = 2 : i64} : () -> i64 loc("two")
    %d = "kf.div"(%mm, %two) : (tensor<16x24xf32>, i64) -> tensor<16x24xf32> loc("d")
    %n = "kf.neg"(%d) : (tensor<16x24xf32>) -> tensor<16x24xf32> loc("n")
    %cv = "kf.full"() {value = 0.25 : f64} : () -> tensor<24xf32> loc("cv")
    %sb = "kf.sub"(%n, %cv) : (tensor<16x24xf32>, tensor<24xf32>) -> tensor<16x24xf32> loc("sb")
    %s = "kf.sum"(%sb) {dims = array<i64: 1>, keepdim = true} : (tensor<16x24xf32>) -> tensor<16x1xf32> loc("s")
    %am = "kf.amax"(%s) {dims = array<i64: 1>, keepdim = true} : (tensor<16x1xf32>) -> tensor<16x1xf32> loc("am")
    %mx:2 = "kf.max_dim"(%am) {dim = 1 : i64, keepdim = true} : (tensor<16x1xf32>) -> (tensor<16x1xf32>, tensor<16x1xi64>) loc("mx")
    %sm = "kf.softmax"(%mx#0) {dim = 1 : i64} : (tensor<16x1xf32>) -> tensor<16x1xf32> loc("sm")
    %ls = "kf.log_softmax"(%s) {dim = 1 : i64} : (tensor<16x1xf32>) -> tensor<16x1xf32> loc("ls")
    %w = "kf.full"() {value = 0.125 : f64} : () -> tensor<40x24xf32> loc("w")
    %bias = "kf.full"() {value = -0.5 : f64} : () -> tensor<24xf32> loc("bias")
    %am2 = "kf.addmm"(%bias, %x, %w) {alpha = 1 : i64, beta = 1 : i64} : (tensor<24xf32>, tensor<16x40xf32>, tensor<40x24xf32>) -> tensor<16x24xf32> loc("am2")
    %three = "kf.scalar"() {value = 3.0 : f64} : () -> f64 loc("three")
    %a3 = "kf.add"(%am2, %three) : (tensor<16x24xf32>, f64) -> tensor<16x24xf32> loc("a3")
    %me = "kf.mean"(%a3) {dims = array<i64: 1>, keepdim = false} : (tensor<16x24xf32>) -> tensor<16xf32> loc("me")
    %y1 = "kf.sum"(%y) {dims = array<i64: 2>, keepdim = false} : (tensor<3x5x7xf32>) -> tensor<3x5xf32> loc("y1")
    %y2 = "kf.sum"(%y1) {dims = array<i64: 1>, keepdim = false} : (tensor<3x5xf32>) -> tensor<3xf32> loc("y2")
    "func.return"(%s, %mx#0, %mx#1, %sm, %ls, %me, %y2) : (tensor<16x1xf32>, tensor<16x1xf32>, tensor<16x1xi64>, tensor<16x1xf32>, tensor<16x1xf32>, tensor<16xf32>, tensor<3xf32>) -> ()
  }) : () -> ()
}) : () -> ()
