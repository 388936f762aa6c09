// Data movement beyond the fixtures: advanced indexing over non-adjacent
// dims (the broadcast index dims go first), a large embedding, cat of a
// transposed and a contiguous tensor, pad that crops one side and pads the
// other, a reshape that must copy (transposed operand), cumsum along long
// rows and along an outer dim, and max/avg pooling with padding, dilation
// and ceil_mode, with windows unrolled whole (up to 64 elements) and along
// their innermost dim (9x9).
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "i0"}, {kf.name = "i2"}, {kf.name = "emb"}, {kf.name = "tok"}, {kf.name = "ct"}, {kf.name = "c2"}, {kf.name = "p"}, {kf.name = "cs"}, {kf.name = "cs2"}, {kf.name = "img"}], function_type = (tensor<6x7x8xf32>, tensor<5x1xi64>, tensor<3xi64>, tensor<1000x96xf32>, tensor<4x50xi32>, tensor<5x12xf32>, tensor<9x5xf32>, tensor<10x12xf32>, tensor<3x5000xf32>, tensor<500x4xi32>, tensor<2x3x17x19xf32>) -> (tensor<5x3x7xf32>, tensor<4x50x96xf32>, tensor<21x5xf32>, tensor<11x12xf32>, tensor<5x9xf32>, tensor<3x5000xf32>, tensor<500x4xi64>, tensor<2x3x8x10xf32>, tensor<2x3x8x10xi64>, tensor<2x3x6x7xf32>, tensor<2x3x9x4xf32>, tensor<2x3x9x4xi64>, tensor<2x3x5x5xf32>), sym_name = "gather_paths"}> ({
  ^bb0(%x: tensor<6x7x8xf32>, %i0: tensor<5x1xi64>, %i2: tensor<3xi64>, %emb: tensor<1000x96xf32>, %tok: tensor<4x50xi32>, %ct: tensor<5x12xf32>, %c2: tensor<9x5xf32>, %p: tensor<10x12xf32>, %cs: tensor<3x5000xf32>, %cs2: tensor<500x4xi32>, %img: tensor<2x3x17x19xf32>):
    %o0 = "kf.index"(%x, %i0, %i2) {dims = array<i64: 0, 2>} : (tensor<6x7x8xf32>, tensor<5x1xi64>, tensor<3xi64>) -> tensor<5x3x7xf32> loc("o0")
    %o1 = "kf.embedding"(%emb, %tok) : (tensor<1000x96xf32>, tensor<4x50xi32>) -> tensor<4x50x96xf32> loc("o1")
    %t = "kf.permute"(%ct) {dims = array<i64: 1, 0>} : (tensor<5x12xf32>) -> tensor<12x5xf32, #kf.strided<[1, 12]>> loc("t")
    %o2 = "kf.cat"(%t, %c2) {dim = 0 : i64} : (tensor<12x5xf32, #kf.strided<[1, 12]>>, tensor<9x5xf32>) -> tensor<21x5xf32> loc("o2")
    %o3 = "kf.pad"(%p) {pad = array<i64: -1, 1, 2, -1>, value = 0.5 : f64} : (tensor<10x12xf32>) -> tensor<11x12xf32> loc("o3")
    %t2 = "kf.permute"(%c2) {dims = array<i64: 1, 0>} : (tensor<9x5xf32>) -> tensor<5x9xf32, #kf.strided<[1, 5]>> loc("t2")
    %r = "kf.reshape"(%t2) : (tensor<5x9xf32, #kf.strided<[1, 5]>>) -> tensor<45xf32> loc("r")
    %r2 = "kf.slice"(%r) {dim = 0 : i64, start = 0 : i64, end = 45 : i64, step = 1 : i64} : (tensor<45xf32>) -> tensor<45xf32> loc("r2")
    %o5 = "kf.cumsum"(%cs) {dim = 1 : i64} : (tensor<3x5000xf32>) -> tensor<3x5000xf32> loc("o5")
    %o6 = "kf.cumsum"(%cs2) {dim = 0 : i64} : (tensor<500x4xi32>) -> tensor<500x4xi64> loc("o6")
    %mp:2 = "kf.max_pool"(%img) {ceil_mode = true, dilation = array<i64: 2, 1>, kernel = array<i64: 3, 3>, padding = array<i64: 1, 1>, stride = array<i64: 2, 2>} : (tensor<2x3x17x19xf32>) -> (tensor<2x3x8x10xf32>, tensor<2x3x8x10xi64>) loc("mp")
    %o9 = "kf.avg_pool"(%img) {ceil_mode = false, count_include_pad = false, kernel = array<i64: 4, 3>, padding = array<i64: 2, 1>, stride = array<i64: 3, 3>} : (tensor<2x3x17x19xf32>) -> tensor<2x3x6x7xf32> loc("o9")
    %mq:2 = "kf.max_pool"(%img) {ceil_mode = false, dilation = array<i64: 1, 2>, kernel = array<i64: 9, 9>, padding = array<i64: 4, 4>, stride = array<i64: 2, 3>} : (tensor<2x3x17x19xf32>) -> (tensor<2x3x9x4xf32>, tensor<2x3x9x4xi64>) loc("mq")
    %o10 = "kf.avg_pool"(%img) {ceil_mode = false, count_include_pad = true, kernel = array<i64: 9, 9>, padding = array<i64: 4, 4>, stride = array<i64: 4, 4>} : (tensor<2x3x17x19xf32>) -> tensor<2x3x5x5xf32> loc("o10")
    %rr = "kf.reshape"(%r2) : (tensor<45xf32>) -> tensor<5x9xf32> loc("rr")
    %o4 = "kf.slice"(%rr) {dim = 1 : i64, start = 0 : i64, end = 9 : i64, step = 1 : i64} : (tensor<5x9xf32>) -> tensor<5x9xf32> loc("o4")
    "func.return"(%o0, %o1, %o2, %o3, %o4, %o5, %o6, %mp#0, %mp#1, %o9, %mq#0, %mq#1, %o10) : (tensor<5x3x7xf32>, tensor<4x50x96xf32>, tensor<21x5xf32>, tensor<11x12xf32>, tensor<5x9xf32>, tensor<3x5000xf32>, tensor<500x4xi64>, tensor<2x3x8x10xf32>, tensor<2x3x8x10xi64>, tensor<2x3x6x7xf32>, tensor<2x3x9x4xf32>, tensor<2x3x9x4xi64>, tensor<2x3x5x5xf32>) -> ()
  }) : () -> ()
}) : () -> ()
