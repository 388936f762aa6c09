// GEMM groups: bias+relu fused into the library step, bias+gelu(tanh)
// (f32: the library step's bias, then a launch rewriting the output in
// place), an addmm with a 2-d bias, alpha and beta (bias added by the
// epilogue launch, in place), a product that is both an output and read by its epilogue, bmm
// with an expanded (batch stride 0) operand, a transposed left operand, and
// an operand with no unit stride (copied to scratch first).
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "a"}, {kf.name = "w"}, {kf.name = "bias"}, {kf.name = "ba"}, {kf.name = "bb"}, {kf.name = "c2"}, {kf.name = "r"}, {kf.name = "a2"}, {kf.name = "a3"}], function_type = (tensor<33x70xf32>, tensor<50x70xf32>, tensor<50xf32>, tensor<3x17x70xf32>, tensor<70x20xf32>, tensor<33x50xf32>, tensor<33x50xf32>, tensor<70x33xf32>, tensor<66x140xf32>) -> (tensor<33x50xf32>, tensor<33x50xf32>, tensor<33x50xf32>, tensor<33x50xf32>, tensor<3x17x20xf32>, tensor<33x50xf32>, tensor<33x50xf32>, tensor<33x50xf32>), sym_name = "gemm_paths"}> ({
  ^bb0(%a: tensor<33x70xf32>, %w: tensor<50x70xf32>, %bias: tensor<50xf32>, %ba: tensor<3x17x70xf32>, %bb: tensor<70x20xf32>, %c2: tensor<33x50xf32>, %r: tensor<33x50xf32>, %a2: tensor<70x33xf32>, %a3: tensor<66x140xf32>):
    %pw = "kf.permute"(%w) {dims = array<i64: 1, 0>} : (tensor<50x70xf32>) -> tensor<70x50xf32, #kf.strided<[1, 70]>> loc("pw")
    %m0 = "kf.addmm"(%bias, %a, %pw) {alpha = 1 : i64, beta = 1 : i64} : (tensor<50xf32>, tensor<33x70xf32>, tensor<70x50xf32, #kf.strided<[1, 70]>>) -> tensor<33x50xf32> loc("m0")
    %o0 = "kf.relu"(%m0) : (tensor<33x50xf32>) -> tensor<33x50xf32> loc("o0")
    %o1 = "kf.addmm"(%c2, %a, %pw) {alpha = 2.0 : f64, beta = 0.5 : f64} : (tensor<33x50xf32>, tensor<33x70xf32>, tensor<70x50xf32, #kf.strided<[1, 70]>>) -> tensor<33x50xf32> loc("o1")
    %m2 = "kf.mm"(%a, %pw) : (tensor<33x70xf32>, tensor<70x50xf32, #kf.strided<[1, 70]>>) -> tensor<33x50xf32> loc("m2")
    %o2 = "kf.add"(%m2, %r) : (tensor<33x50xf32>, tensor<33x50xf32>) -> tensor<33x50xf32> loc("o2")
    %rb = "kf.reshape"(%bb) : (tensor<70x20xf32>) -> tensor<1x70x20xf32> loc("rb")
    %eb = "kf.expand"(%rb) : (tensor<1x70x20xf32>) -> tensor<3x70x20xf32, #kf.strided<[0, 20, 1]>> loc("eb")
    %o3 = "kf.bmm"(%ba, %eb) : (tensor<3x17x70xf32>, tensor<3x70x20xf32, #kf.strided<[0, 20, 1]>>) -> tensor<3x17x20xf32> loc("o3")
    %m4 = "kf.addmm"(%bias, %a, %pw) {alpha = 1 : i64, beta = 1 : i64} : (tensor<50xf32>, tensor<33x70xf32>, tensor<70x50xf32, #kf.strided<[1, 70]>>) -> tensor<33x50xf32> loc("m4")
    %o4 = "kf.gelu"(%m4) {approximate = "tanh"} : (tensor<33x50xf32>) -> tensor<33x50xf32> loc("o4")
    %pa = "kf.permute"(%a2) {dims = array<i64: 1, 0>} : (tensor<70x33xf32>) -> tensor<33x70xf32, #kf.strided<[1, 33]>> loc("pa")
    %o5 = "kf.mm"(%pa, %pw) : (tensor<33x70xf32, #kf.strided<[1, 33]>>, tensor<70x50xf32, #kf.strided<[1, 70]>>) -> tensor<33x50xf32> loc("o5")
    %s0 = "kf.slice"(%a3) {dim = 0 : i64, start = 0 : i64, end = 66 : i64, step = 2 : i64} : (tensor<66x140xf32>) -> tensor<33x140xf32, #kf.strided<[280, 1]>> loc("s0")
    %s1 = "kf.slice"(%s0) {dim = 1 : i64, start = 0 : i64, end = 140 : i64, step = 2 : i64} : (tensor<33x140xf32, #kf.strided<[280, 1]>>) -> tensor<33x70xf32, #kf.strided<[280, 2]>> loc("s1")
    %o6 = "kf.mm"(%s1, %pw) : (tensor<33x70xf32, #kf.strided<[280, 2]>>, tensor<70x50xf32, #kf.strided<[1, 70]>>) -> tensor<33x50xf32> loc("o6")
    "func.return"(%o0, %o1, %o2, %m2, %o3, %o4, %o5, %o6) : (tensor<33x50xf32>, tensor<33x50xf32>, tensor<33x50xf32>, tensor<33x50xf32>, tensor<3x17x20xf32>, tensor<33x50xf32>, tensor<33x50xf32>, tensor<33x50xf32>) -> ()
  }) : () -> ()
}) : () -> ()
