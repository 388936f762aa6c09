// Horizontal fusion (pass/partition.c): sibling element-wise groups that
// read a common tensor run as one launch. Siblings of %x over an odd shape
// (not a multiple of the vector width) writing f32, f16, bf16, i32 and bool
// outputs, one through a broadcast bias and one through a scalar; siblings
// of a transposed (strided) input %xt; nine siblings of %y, more than one
// group holds (8 outputs), so two launches; and a sibling of %x that
// depends on another sibling through a reduction, which must stay apart.
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "b"}, {kf.name = "xt"}, {kf.name = "y"}], function_type = (tensor<67x515xf32>, tensor<515xf32>, tensor<515x67xf32>, tensor<4099xf32>) -> (tensor<67x515xf32>, tensor<67x515xf16>, tensor<67x515xbf16>, tensor<67x515xi32>, tensor<67x515xi1>, tensor<67x515xf32>, tensor<67x515xf32>, tensor<67x515xf32>, tensor<67x515xf32>, tensor<4099xf32>, tensor<4099xf32>, tensor<4099xf32>, tensor<4099xf32>, tensor<4099xf32>, tensor<4099xf32>, tensor<4099xf32>, tensor<4099xf32>, tensor<4099xf32>), sym_name = "hfuse_paths"}> ({
  ^bb0(%x: tensor<67x515xf32>, %b: tensor<515xf32>, %xt: tensor<515x67xf32>, %y: tensor<4099xf32>):
    %s0 = "kf.add"(%x, %b) : (tensor<67x515xf32>, tensor<515xf32>) -> tensor<67x515xf32> loc("s0")
    %s1a = "kf.exp"(%x) : (tensor<67x515xf32>) -> tensor<67x515xf32> loc("s1a")
    %s1 = "kf.cast"(%s1a) : (tensor<67x515xf32>) -> tensor<67x515xf16> loc("s1")
    %s2a = "kf.tanh"(%x) : (tensor<67x515xf32>) -> tensor<67x515xf32> loc("s2a")
    %s2 = "kf.cast"(%s2a) : (tensor<67x515xf32>) -> tensor<67x515xbf16> loc("s2")
    %k = "kf.scalar"() {value = 3.0 : f64} : () -> f64 loc("k")
    %s3a = "kf.mul"(%x, %k) : (tensor<67x515xf32>, f64) -> tensor<67x515xf32> loc("s3a")
    %s3 = "kf.cast"(%s3a) : (tensor<67x515xf32>) -> tensor<67x515xi32> loc("s3")
    %z = "kf.scalar"() {value = 0.0 : f64} : () -> f64 loc("z")
    %s4 = "kf.gt"(%x, %z) : (tensor<67x515xf32>, f64) -> tensor<67x515xi1> loc("s4")
    %red = "kf.sum"(%s0) {dims = array<i64: 1>, keepdim = true} : (tensor<67x515xf32>) -> tensor<67x1xf32> loc("red")
    %s5 = "kf.sub"(%x, %red) {alpha = 1 : i64} : (tensor<67x515xf32>, tensor<67x1xf32>) -> tensor<67x515xf32> loc("s5")
    %t = "kf.permute"(%xt) {dims = array<i64: 1, 0>} : (tensor<515x67xf32>) -> tensor<67x515xf32, #kf.strided<[1, 67]>> loc("t")
    %t0 = "kf.sin"(%t) : (tensor<67x515xf32, #kf.strided<[1, 67]>>) -> tensor<67x515xf32> loc("t0")
    %t1 = "kf.cos"(%t) : (tensor<67x515xf32, #kf.strided<[1, 67]>>) -> tensor<67x515xf32> loc("t1")
    %t2 = "kf.neg"(%t) : (tensor<67x515xf32, #kf.strided<[1, 67]>>) -> tensor<67x515xf32> loc("t2")
    %y0 = "kf.relu"(%y) : (tensor<4099xf32>) -> tensor<4099xf32> loc("y0")
    %y1 = "kf.exp"(%y) : (tensor<4099xf32>) -> tensor<4099xf32> loc("y1")
    %y2 = "kf.sin"(%y) : (tensor<4099xf32>) -> tensor<4099xf32> loc("y2")
    %y3 = "kf.cos"(%y) : (tensor<4099xf32>) -> tensor<4099xf32> loc("y3")
    %y4 = "kf.tanh"(%y) : (tensor<4099xf32>) -> tensor<4099xf32> loc("y4")
    %y5 = "kf.neg"(%y) : (tensor<4099xf32>) -> tensor<4099xf32> loc("y5")
    %y6 = "kf.abs"(%y) : (tensor<4099xf32>) -> tensor<4099xf32> loc("y6")
    %y7 = "kf.sigmoid"(%y) : (tensor<4099xf32>) -> tensor<4099xf32> loc("y7")
    %y8 = "kf.silu"(%y) : (tensor<4099xf32>) -> tensor<4099xf32> loc("y8")
    "func.return"(%s0, %s1, %s2, %s3, %s4, %s5, %t0, %t1, %t2, %y0, %y1, %y2, %y3, %y4, %y5, %y6, %y7, %y8) : (tensor<67x515xf32>, tensor<67x515xf16>, tensor<67x515xbf16>, tensor<67x515xi32>, tensor<67x515xi1>, tensor<67x515xf32>, tensor<67x515xf32>, tensor<67x515xf32>, tensor<67x515xf32>, tensor<4099xf32>, tensor<4099xf32>, tensor<4099xf32>, tensor<4099xf32>, tensor<4099xf32>, tensor<4099xf32>, tensor<4099xf32>, tensor<4099xf32>, tensor<4099xf32>) -> ()
  }) : () -> ()
}) : () -> ()
