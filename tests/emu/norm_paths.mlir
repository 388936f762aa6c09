// Row normalisations at the benchmark's row length (4096), where a block
// keeps the whole row in registers and loads it 16 bytes at a time: layer
// norm + GELU + residual, softmax of a scaled input, log_softmax, and a
// layer norm and a softmax whose rows start unaligned for vector access
// (odd length: the scalar path over the registers).
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "w"}, {kf.name = "b"}, {kf.name = "y"}, {kf.name = "z"}], function_type = (tensor<24x4096xf32>, tensor<4096xf32>, tensor<4096xf32>, tensor<12x1024xf32>, tensor<10x1027xf32>) -> (tensor<24x4096xf32>, tensor<24x4096xf32>, tensor<12x1024xf32>, tensor<10x1027xf32>, tensor<10x1027xf32>), sym_name = "norm_paths"}> ({
  ^bb0(%x: tensor<24x4096xf32>, %w: tensor<4096xf32>, %b: tensor<4096xf32>, %y: tensor<12x1024xf32>, %z: tensor<10x1027xf32>):
    %ln:3 = "kf.layer_norm"(%x, %w, %b) {eps = 1.0e-05 : f64, normalized_ndim = 1 : i64, operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<24x4096xf32>, tensor<4096xf32>, tensor<4096xf32>) -> (tensor<24x4096xf32>, tensor<24x1xf32>, tensor<24x1xf32>) loc("ln")
    %g = "kf.gelu"(%ln#0) {approximate = "none"} : (tensor<24x4096xf32>) -> tensor<24x4096xf32> loc("g")
    %r = "kf.add"(%g, %x) : (tensor<24x4096xf32>, tensor<24x4096xf32>) -> tensor<24x4096xf32> loc("r")
    %eighth = "kf.scalar"() {value = 0.125 : f64} : () -> f64 loc("eighth")
    %xs = "kf.mul"(%x, %eighth) : (tensor<24x4096xf32>, f64) -> tensor<24x4096xf32> loc("xs")
    %sm = "kf.softmax"(%xs) {dim = 1 : i64} : (tensor<24x4096xf32>) -> tensor<24x4096xf32> loc("sm")
    %ls = "kf.log_softmax"(%y) {dim = 1 : i64} : (tensor<12x1024xf32>) -> tensor<12x1024xf32> loc("ls")
    %zn:3 = "kf.layer_norm"(%z) {eps = 1.0e-05 : f64, normalized_ndim = 1 : i64, operandSegmentSizes = array<i32: 1, 0, 0>} : (tensor<10x1027xf32>) -> (tensor<10x1027xf32>, tensor<10x1xf32>, tensor<10x1xf32>) loc("zn")
    %zs = "kf.softmax"(%z) {dim = 1 : i64} : (tensor<10x1027xf32>) -> tensor<10x1027xf32> loc("zs")
    "func.return"(%r, %sm, %ls, %zn#0, %zs) : (tensor<24x4096xf32>, tensor<24x4096xf32>, tensor<12x1024xf32>, tensor<10x1027xf32>, tensor<10x1027xf32>) -> ()
  }) : () -> ()
}) : () -> ()
