// scan-forms rewrites reverse and exclusive scans spelled as torch.export
// records them (flip is index_select of a reversed arange) into one scan:
// flip(cumsum(flip(x))) is a reverse cumsum; flipping a reverse scan gives
// a forward one, its exclusive flag kept; cat(zeros, cumsum(x[:, :n-1]))
// is an exclusive cumsum (int32 in, int64 out too). Kept: flips along
// another dim than the scan's, zeros before a cumprod (its identity is 1),
// a slice that does not start at 0. dce removes what the rewrites orphan.
//
// RUN: %kfuse opt -p scan-forms,dce %s | FileCheck %s
// RUN: %kfuse opt -p scan-forms,dce %s | %kfuse opt - | FileCheck %s

// CHECK-LABEL: ^bb0(%x: tensor<4x8xf32>, %n: tensor<6x3xi32>):
// CHECK-NEXT: %cs_rev = "kf.cumsum"(%x) {dim = 1 : i64, reverse = true} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %cp_fwd = "kf.cumprod"(%x) {dim = 1 : i64, exclusive = true} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %fe_i = "kf.arange"()
// CHECK-NEXT: %fe = "kf.index_select"(%x, %fe_i) {dim = 0 : i64}
// CHECK-NEXT: %cs0 = "kf.cumsum"(%fe) {dim = 1 : i64}
// CHECK-NEXT: %ff_i = "kf.arange"()
// CHECK-NEXT: %ff = "kf.index_select"(%cs0, %ff_i) {dim = 0 : i64}
// CHECK-NEXT: %z = "kf.full"()
// CHECK-NEXT: %cx_excl = "kf.cumsum"(%x) {dim = 1 : i64, exclusive = true} : (tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %cn_excl = "kf.cumsum"(%n) {dim = 0 : i64, exclusive = true} : (tensor<6x3xi32>) -> tensor<6x3xi64>
// CHECK-NEXT: %sp = "kf.slice"(%x)
// CHECK-NEXT: %cq = "kf.cumprod"(%sp) {dim = 1 : i64}
// CHECK-NEXT: %kp = "kf.cat"(%z, %cq)
// CHECK-NEXT: %s1 = "kf.slice"(%x)
// CHECK-NEXT: %c1 = "kf.cumsum"(%s1) {dim = 1 : i64}
// CHECK-NEXT: %k1 = "kf.cat"(%z, %c1)
// CHECK-NEXT: "func.return"(%cs_rev, %cp_fwd, %ff, %cx_excl, %cn_excl, %kp, %k1)

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "n"}], function_type = (tensor<4x8xf32>, tensor<6x3xi32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<6x3xi64>, tensor<4x8xf32>, tensor<4x8xf32>), sym_name = "scan_forms"}> ({
  ^bb0(%x: tensor<4x8xf32>, %n: tensor<6x3xi32>):
    %fa_i = "kf.arange"() {end = -1 : i64, start = 7 : i64, step = -1 : i64} : () -> tensor<8xi64> loc("fa_i")
    %fa = "kf.index_select"(%x, %fa_i) {dim = 1 : i64} : (tensor<4x8xf32>, tensor<8xi64>) -> tensor<4x8xf32> loc("fa")
    %cs = "kf.cumsum"(%fa) {dim = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("cs")
    %fb_i = "kf.arange"() {end = -1 : i64, start = 7 : i64, step = -1 : i64} : () -> tensor<8xi64> loc("fb_i")
    %fb = "kf.index_select"(%cs, %fb_i) {dim = 1 : i64} : (tensor<4x8xf32>, tensor<8xi64>) -> tensor<4x8xf32> loc("fb")
    %fc_i = "kf.arange"() {end = -1 : i64, start = 7 : i64, step = -1 : i64} : () -> tensor<8xi64> loc("fc_i")
    %fc = "kf.index_select"(%x, %fc_i) {dim = 1 : i64} : (tensor<4x8xf32>, tensor<8xi64>) -> tensor<4x8xf32> loc("fc")
    %cp = "kf.cumprod"(%fc) {dim = 1 : i64, exclusive = true, reverse = true} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("cp")
    %fd_i = "kf.arange"() {end = -1 : i64, start = 7 : i64, step = -1 : i64} : () -> tensor<8xi64> loc("fd_i")
    %fd = "kf.index_select"(%cp, %fd_i) {dim = 1 : i64} : (tensor<4x8xf32>, tensor<8xi64>) -> tensor<4x8xf32> loc("fd")
    %fe_i = "kf.arange"() {end = -1 : i64, start = 3 : i64, step = -1 : i64} : () -> tensor<4xi64> loc("fe_i")
    %fe = "kf.index_select"(%x, %fe_i) {dim = 0 : i64} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<4x8xf32> loc("fe")
    %cs0 = "kf.cumsum"(%fe) {dim = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("cs0")
    %ff_i = "kf.arange"() {end = -1 : i64, start = 3 : i64, step = -1 : i64} : () -> tensor<4xi64> loc("ff_i")
    %ff = "kf.index_select"(%cs0, %ff_i) {dim = 0 : i64} : (tensor<4x8xf32>, tensor<4xi64>) -> tensor<4x8xf32> loc("ff")
    %sl = "kf.slice"(%x) {dim = 1 : i64, end = 7 : i64, start = 0 : i64, step = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x7xf32, #kf.strided<[8, 1]>> loc("sl")
    %cx = "kf.cumsum"(%sl) {dim = 1 : i64} : (tensor<4x7xf32, #kf.strided<[8, 1]>>) -> tensor<4x7xf32> loc("cx")
    %z = "kf.full"() {value = 0 : i64} : () -> tensor<4x1xf32> loc("z")
    %ex = "kf.cat"(%z, %cx) {dim = 1 : i64} : (tensor<4x1xf32>, tensor<4x7xf32>) -> tensor<4x8xf32> loc("ex")
    %sn = "kf.slice"(%n) {dim = 0 : i64, end = 5 : i64, start = 0 : i64, step = 1 : i64} : (tensor<6x3xi32>) -> tensor<5x3xi32> loc("sn")
    %cn = "kf.cumsum"(%sn) {dim = 0 : i64} : (tensor<5x3xi32>) -> tensor<5x3xi64> loc("cn")
    %zi = "kf.full"() {value = 0 : i64} : () -> tensor<1x3xi64> loc("zi")
    %exn = "kf.cat"(%zi, %cn) {dim = 0 : i64} : (tensor<1x3xi64>, tensor<5x3xi64>) -> tensor<6x3xi64> loc("exn")
    %sp = "kf.slice"(%x) {dim = 1 : i64, end = 7 : i64, start = 0 : i64, step = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x7xf32, #kf.strided<[8, 1]>> loc("sp")
    %cq = "kf.cumprod"(%sp) {dim = 1 : i64} : (tensor<4x7xf32, #kf.strided<[8, 1]>>) -> tensor<4x7xf32> loc("cq")
    %kp = "kf.cat"(%z, %cq) {dim = 1 : i64} : (tensor<4x1xf32>, tensor<4x7xf32>) -> tensor<4x8xf32> loc("kp")
    %s1 = "kf.slice"(%x) {dim = 1 : i64, end = 8 : i64, start = 1 : i64, step = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x7xf32, #kf.strided<[8, 1], offset: 1>> loc("s1")
    %c1 = "kf.cumsum"(%s1) {dim = 1 : i64} : (tensor<4x7xf32, #kf.strided<[8, 1], offset: 1>>) -> tensor<4x7xf32> loc("c1")
    %k1 = "kf.cat"(%z, %c1) {dim = 1 : i64} : (tensor<4x1xf32>, tensor<4x7xf32>) -> tensor<4x8xf32> loc("k1")
    "func.return"(%fb, %fd, %ff, %ex, %exn, %kp, %k1) : (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<6x3xi64>, tensor<4x8xf32>, tensor<4x8xf32>) -> ()
  }) : () -> ()
}) : () -> ()

