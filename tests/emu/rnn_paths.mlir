// The recurrence kernel (agent/templates/rnn.cu, kf.rnn from
// pass/recurrences.c) on shapes the rnn fixture does not reach: an lstm
// whose batch of 40 takes two passes of the 32 rows staged at a time, an
// odd hidden size (33: a partial block of units), a reverse gru, a
// one-step layer, a state read from an offset slice of a stacked one, and a
// hidden size of 1000 (8 units a block: gate rows read from memory, not
// registers; W scaled by 1/100 so that the gates do not saturate).
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "xg"}, {kf.name = "h0"}, {kf.name = "c0"}, {kf.name = "w"}, {kf.name = "b"}, {kf.name = "xr"}, {kf.name = "hr"}, {kf.name = "wr"}, {kf.name = "br"}, {kf.name = "x1"}, {kf.name = "hs"}, {kf.name = "cs"}, {kf.name = "w1"}, {kf.name = "b1"}, {kf.name = "xk"}, {kf.name = "hk"}, {kf.name = "ck"}, {kf.name = "wk"}, {kf.name = "bk"}], function_type = (tensor<5x40x132xf32>, tensor<40x33xf32>, tensor<40x33xf32>, tensor<132x33xf32>, tensor<132xf32>, tensor<6x3x60xf32>, tensor<3x20xf32>, tensor<60x20xf32>, tensor<60xf32>, tensor<1x2x16xf32>, tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<16x4xf32>, tensor<16xf32>, tensor<2x3x4000xf32>, tensor<3x1000xf32>, tensor<3x1000xf32>, tensor<4000x1000xf32>, tensor<4000xf32>) -> (tensor<5x40x33xf32>, tensor<40x33xf32>, tensor<6x3x20xf32>, tensor<3x20xf32>, tensor<1x2x4xf32>, tensor<2x4xf32>, tensor<2x3x1000xf32>, tensor<3x1000xf32>), sym_name = "rnn_paths"}> ({
  ^bb0(%xg: tensor<5x40x132xf32>, %h0: tensor<40x33xf32>, %c0: tensor<40x33xf32>, %w: tensor<132x33xf32>, %b: tensor<132xf32>, %xr: tensor<6x3x60xf32>, %hr: tensor<3x20xf32>, %wr: tensor<60x20xf32>, %br: tensor<60xf32>, %x1: tensor<1x2x16xf32>, %hs: tensor<3x2x4xf32>, %cs: tensor<3x2x4xf32>, %w1: tensor<16x4xf32>, %b1: tensor<16xf32>, %xk: tensor<2x3x4000xf32>, %hk: tensor<3x1000xf32>, %ck: tensor<3x1000xf32>, %wk: tensor<4000x1000xf32>, %bk: tensor<4000xf32>):
    %l:2 = "kf.rnn"(%xg, %h0, %c0, %w, %b) {mode = "lstm", operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<5x40x132xf32>, tensor<40x33xf32>, tensor<40x33xf32>, tensor<132x33xf32>, tensor<132xf32>) -> (tensor<5x40x33xf32>, tensor<40x33xf32>) loc("l")
    %g:2 = "kf.rnn"(%xr, %hr, %wr, %br) {mode = "gru", reverse = true, operandSegmentSizes = array<i32: 1, 1, 0, 1, 1>} : (tensor<6x3x60xf32>, tensor<3x20xf32>, tensor<60x20xf32>, tensor<60xf32>) -> (tensor<6x3x20xf32>, tensor<3x20xf32>) loc("g")
    %hsl = "kf.select"(%hs) {dim = 0 : i64, index = 2 : i64} : (tensor<3x2x4xf32>) -> tensor<2x4xf32, #kf.strided<[4, 1], offset: 16>> loc("hsl")
    %csl = "kf.select"(%cs) {dim = 0 : i64, index = 1 : i64} : (tensor<3x2x4xf32>) -> tensor<2x4xf32, #kf.strided<[4, 1], offset: 8>> loc("csl")
    %o:2 = "kf.rnn"(%x1, %hsl, %csl, %w1, %b1) {mode = "lstm", reverse = true, operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<1x2x16xf32>, tensor<2x4xf32, #kf.strided<[4, 1], offset: 16>>, tensor<2x4xf32, #kf.strided<[4, 1], offset: 8>>, tensor<16x4xf32>, tensor<16xf32>) -> (tensor<1x2x4xf32>, tensor<2x4xf32>) loc("o")
    %sk = "kf.scalar"() {value = 1.0e-02 : f64} : () -> f64 loc("sk")
    %wks = "kf.mul"(%wk, %sk) : (tensor<4000x1000xf32>, f64) -> tensor<4000x1000xf32> loc("wks")
    %k:2 = "kf.rnn"(%xk, %hk, %ck, %wks, %bk) {mode = "lstm", operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<2x3x4000xf32>, tensor<3x1000xf32>, tensor<3x1000xf32>, tensor<4000x1000xf32>, tensor<4000xf32>) -> (tensor<2x3x1000xf32>, tensor<3x1000xf32>) loc("k")
    "func.return"(%l#0, %l#1, %g#0, %g#1, %o#0, %o#1, %k#0, %k#1) : (tensor<5x40x33xf32>, tensor<40x33xf32>, tensor<6x3x20xf32>, tensor<3x20xf32>, tensor<1x2x4xf32>, tensor<2x4xf32>, tensor<2x3x1000xf32>, tensor<3x1000xf32>) -> ()
  }) : () -> ()
}) : () -> ()
