// recurrences turns an LSTM or GRU layer unrolled one cell per time step
// (two steps here, as `kfuse opt -p simplify,dce` prints torch.export's
// nn.GRU(8, 16) and nn.LSTM(8, 16)) into one kf.rnn op, and leaves alone a
// cell that computes something else (the GRU with h - n turned into n - h)
// and a layer whose first cell state is read after the chain (kf.rnn has
// no result for it). Numerics: tests/fixtures/rnn*.pt2 and
// tests/emu/rnn_paths.mlir.
//
// RUN: split-file %s %t
// RUN: %kfuse opt -p recurrences,dce %t/gru.mlir | FileCheck %s --check-prefix=GRU
// RUN: %kfuse opt -p recurrences,dce %t/gru.mlir | %kfuse opt - | FileCheck %s --check-prefix=GRU
// RUN: %kfuse opt -p recurrences,dce %t/lstm.mlir | FileCheck %s --check-prefix=LSTM
// RUN: %kfuse opt -p recurrences,dce %t/wrong.mlir | FileCheck %s --check-prefix=WRONG
// RUN: %kfuse opt -p recurrences,dce %t/lstm_c.mlir | FileCheck %s --check-prefix=KEEP
// kf.rnn's own checks (ir/infer.c), on hand-written ops:
// RUN: not %kfuse opt %t/bad_mode.mlir 2>&1 | FileCheck %s --check-prefix=BAD-MODE
// RUN: not %kfuse opt %t/bad_c0.mlir 2>&1 | FileCheck %s --check-prefix=BAD-C0
// RUN: not %kfuse opt %t/bad_xg.mlir 2>&1 | FileCheck %s --check-prefix=BAD-XG

// GRU: %gru:2 = "kf.rnn"(%add, %view_3, %p_rnn_weight_hh_l0, %p_rnn_bias_hh_l0) {mode = "gru"
// GRU-NOT: kf.addmm
// GRU: %permute_4 = "kf.permute"(%gru#0)
// LSTM: %rnn_c0 = "kf.reshape"(%c0)
// LSTM-NEXT: %lstm:2 = "kf.rnn"(%add, %view_3, %rnn_c0, %p_rnn_weight_hh_l0, %p_rnn_bias_hh_l0) {mode = "lstm"
// LSTM-NEXT: %rnn_h = "kf.slice"(%lstm#0) {dim = 0 : i64, end = 2 : i64, start = 1 : i64, step = 1 : i64}
// LSTM-NEXT: %rnn_copy = "kf.copy"(%rnn_h)
// LSTM-NOT: kf.addmm
// WRONG-NOT: kf.rnn
// WRONG-COUNT-2: kf.addmm
// KEEP-NOT: kf.rnn
// KEEP-COUNT-2: kf.addmm
// BAD-MODE: node 'r' (kf.rnn): mode 'rnn' is neither lstm nor gru
// BAD-C0: node 'r' (kf.rnn): c0 must be given for lstm and only for lstm
// BAD-XG: node 'r' (kf.rnn): xg must be [T, B, 3 * H] for h0 [B, H]

//--- gru.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "h0"}], function_type = (tensor<2x2x8xf32>, tensor<1x2x16xf32>) -> (tensor<2x2x16xf32, #kf.strided<[16, 32, 1]>>), sym_name = "model"}> ({
  ^bb0(%x: tensor<2x2x8xf32>, %h0: tensor<1x2x16xf32>):
    %p_rnn_weight_ih_l0 = "kf.param"() {fqn = "rnn.weight_ih_l0", kind = "parameter"} : () -> tensor<48x8xf32> loc("p_rnn_weight_ih_l0")
    %p_rnn_weight_hh_l0 = "kf.param"() {fqn = "rnn.weight_hh_l0", kind = "parameter"} : () -> tensor<48x16xf32> loc("p_rnn_weight_hh_l0")
    %p_rnn_bias_ih_l0 = "kf.param"() {fqn = "rnn.bias_ih_l0", kind = "parameter"} : () -> tensor<48xf32> loc("p_rnn_bias_ih_l0")
    %p_rnn_bias_hh_l0 = "kf.param"() {fqn = "rnn.bias_hh_l0", kind = "parameter"} : () -> tensor<48xf32> loc("p_rnn_bias_hh_l0")
    %squeeze = "kf.reshape"(%h0) : (tensor<1x2x16xf32>) -> tensor<2x16xf32> loc("squeeze")
    %permute = "kf.permute"(%x) {dims = array<i64: 1, 0, 2>} : (tensor<2x2x8xf32>) -> tensor<2x2x8xf32, #kf.strided<[8, 16, 1]>> loc("permute")
    %permute_1 = "kf.permute"(%p_rnn_weight_ih_l0) {dims = array<i64: 1, 0>} : (tensor<48x8xf32>) -> tensor<8x48xf32, #kf.strided<[1, 8]>> loc("permute_1")
    %expand_1 = "kf.expand"(%permute_1) : (tensor<8x48xf32, #kf.strided<[1, 8]>>) -> tensor<2x8x48xf32, #kf.strided<[0, 1, 8]>> loc("expand_1")
    %bmm = "kf.bmm"(%permute, %expand_1) : (tensor<2x2x8xf32, #kf.strided<[8, 16, 1]>>, tensor<2x8x48xf32, #kf.strided<[0, 1, 8]>>) -> tensor<2x2x48xf32> loc("bmm")
    %add = "kf.add"(%bmm, %p_rnn_bias_ih_l0) : (tensor<2x2x48xf32>, tensor<48xf32>) -> tensor<2x2x48xf32> loc("add")
    %unsqueeze = "kf.reshape"(%squeeze) : (tensor<2x16xf32>) -> tensor<1x2x16xf32> loc("unsqueeze")
    %slice_2 = "kf.slice"(%add) {dim = 0 : i64, end = 1 : i64, start = 0 : i64, step = 1 : i64} : (tensor<2x2x48xf32>) -> tensor<1x2x48xf32> loc("slice_2")
    %slice_3 = "kf.slice"(%add) {dim = 0 : i64, end = 2 : i64, start = 1 : i64, step = 1 : i64} : (tensor<2x2x48xf32>) -> tensor<1x2x48xf32, #kf.strided<[96, 48, 1], offset: 96>> loc("slice_3")
    %squeeze_1 = "kf.reshape"(%slice_2) : (tensor<1x2x48xf32>) -> tensor<2x48xf32> loc("squeeze_1")
    %squeeze_2 = "kf.reshape"(%slice_3) : (tensor<1x2x48xf32, #kf.strided<[96, 48, 1], offset: 96>>) -> tensor<2x48xf32, #kf.strided<[48, 1], offset: 96>> loc("squeeze_2")
    %split_with_sizes:3 = "kf.split"(%squeeze_1) {dim = 1 : i64, sizes = array<i64: 16, 16, 16>} : (tensor<2x48xf32>) -> (tensor<2x16xf32, #kf.strided<[48, 1]>>, tensor<2x16xf32, #kf.strided<[48, 1], offset: 16>>, tensor<2x16xf32, #kf.strided<[48, 1], offset: 32>>) loc("split_with_sizes")
    %view_3 = "kf.reshape"(%unsqueeze) : (tensor<1x2x16xf32>) -> tensor<2x16xf32> loc("view_3")
    %permute_2 = "kf.permute"(%p_rnn_weight_hh_l0) {dims = array<i64: 1, 0>} : (tensor<48x16xf32>) -> tensor<16x48xf32, #kf.strided<[1, 16]>> loc("permute_2")
    %addmm = "kf.addmm"(%p_rnn_bias_hh_l0, %view_3, %permute_2) {alpha = 1 : i64, beta = 1 : i64} : (tensor<48xf32>, tensor<2x16xf32>, tensor<16x48xf32, #kf.strided<[1, 16]>>) -> tensor<2x48xf32> loc("addmm")
    %view_4 = "kf.reshape"(%addmm) : (tensor<2x48xf32>) -> tensor<1x2x48xf32> loc("view_4")
    %split_with_sizes_1:3 = "kf.split"(%view_4) {dim = 2 : i64, sizes = array<i64: 16, 16, 16>} : (tensor<1x2x48xf32>) -> (tensor<1x2x16xf32, #kf.strided<[96, 48, 1]>>, tensor<1x2x16xf32, #kf.strided<[96, 48, 1], offset: 16>>, tensor<1x2x16xf32, #kf.strided<[96, 48, 1], offset: 32>>) loc("split_with_sizes_1")
    %add_1 = "kf.add"(%split_with_sizes_1#0, %split_with_sizes#0) : (tensor<1x2x16xf32, #kf.strided<[96, 48, 1]>>, tensor<2x16xf32, #kf.strided<[48, 1]>>) -> tensor<1x2x16xf32> loc("add_1")
    %sigmoid = "kf.sigmoid"(%add_1) : (tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("sigmoid")
    %add_2 = "kf.add"(%split_with_sizes_1#1, %split_with_sizes#1) : (tensor<1x2x16xf32, #kf.strided<[96, 48, 1], offset: 16>>, tensor<2x16xf32, #kf.strided<[48, 1], offset: 16>>) -> tensor<1x2x16xf32> loc("add_2")
    %sigmoid_1 = "kf.sigmoid"(%add_2) : (tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("sigmoid_1")
    %mul = "kf.mul"(%split_with_sizes_1#2, %sigmoid) : (tensor<1x2x16xf32, #kf.strided<[96, 48, 1], offset: 32>>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("mul")
    %add_3 = "kf.add"(%split_with_sizes#2, %mul) : (tensor<2x16xf32, #kf.strided<[48, 1], offset: 32>>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("add_3")
    %tanh = "kf.tanh"(%add_3) : (tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("tanh")
    %sub = "kf.sub"(%unsqueeze, %tanh) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("sub")
    %mul_1 = "kf.mul"(%sub, %sigmoid_1) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("mul_1")
    %add_4 = "kf.add"(%mul_1, %tanh) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("add_4")
    %split_with_sizes_2:3 = "kf.split"(%squeeze_2) {dim = 1 : i64, sizes = array<i64: 16, 16, 16>} : (tensor<2x48xf32, #kf.strided<[48, 1], offset: 96>>) -> (tensor<2x16xf32, #kf.strided<[48, 1], offset: 96>>, tensor<2x16xf32, #kf.strided<[48, 1], offset: 112>>, tensor<2x16xf32, #kf.strided<[48, 1], offset: 128>>) loc("split_with_sizes_2")
    %view_5 = "kf.reshape"(%add_4) : (tensor<1x2x16xf32>) -> tensor<2x16xf32> loc("view_5")
    %permute_3 = "kf.permute"(%p_rnn_weight_hh_l0) {dims = array<i64: 1, 0>} : (tensor<48x16xf32>) -> tensor<16x48xf32, #kf.strided<[1, 16]>> loc("permute_3")
    %addmm_1 = "kf.addmm"(%p_rnn_bias_hh_l0, %view_5, %permute_3) {alpha = 1 : i64, beta = 1 : i64} : (tensor<48xf32>, tensor<2x16xf32>, tensor<16x48xf32, #kf.strided<[1, 16]>>) -> tensor<2x48xf32> loc("addmm_1")
    %view_6 = "kf.reshape"(%addmm_1) : (tensor<2x48xf32>) -> tensor<1x2x48xf32> loc("view_6")
    %split_with_sizes_3:3 = "kf.split"(%view_6) {dim = 2 : i64, sizes = array<i64: 16, 16, 16>} : (tensor<1x2x48xf32>) -> (tensor<1x2x16xf32, #kf.strided<[96, 48, 1]>>, tensor<1x2x16xf32, #kf.strided<[96, 48, 1], offset: 16>>, tensor<1x2x16xf32, #kf.strided<[96, 48, 1], offset: 32>>) loc("split_with_sizes_3")
    %add_5 = "kf.add"(%split_with_sizes_3#0, %split_with_sizes_2#0) : (tensor<1x2x16xf32, #kf.strided<[96, 48, 1]>>, tensor<2x16xf32, #kf.strided<[48, 1], offset: 96>>) -> tensor<1x2x16xf32> loc("add_5")
    %sigmoid_2 = "kf.sigmoid"(%add_5) : (tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("sigmoid_2")
    %add_6 = "kf.add"(%split_with_sizes_3#1, %split_with_sizes_2#1) : (tensor<1x2x16xf32, #kf.strided<[96, 48, 1], offset: 16>>, tensor<2x16xf32, #kf.strided<[48, 1], offset: 112>>) -> tensor<1x2x16xf32> loc("add_6")
    %sigmoid_3 = "kf.sigmoid"(%add_6) : (tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("sigmoid_3")
    %mul_2 = "kf.mul"(%split_with_sizes_3#2, %sigmoid_2) : (tensor<1x2x16xf32, #kf.strided<[96, 48, 1], offset: 32>>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("mul_2")
    %add_7 = "kf.add"(%split_with_sizes_2#2, %mul_2) : (tensor<2x16xf32, #kf.strided<[48, 1], offset: 128>>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("add_7")
    %tanh_1 = "kf.tanh"(%add_7) : (tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("tanh_1")
    %sub_1 = "kf.sub"(%add_4, %tanh_1) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("sub_1")
    %mul_3 = "kf.mul"(%sub_1, %sigmoid_3) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("mul_3")
    %add_8 = "kf.add"(%mul_3, %tanh_1) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("add_8")
    %cat = "kf.cat"(%add_4, %add_8) {dim = 0 : i64} : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<2x2x16xf32> loc("cat")
    %permute_4 = "kf.permute"(%cat) {dims = array<i64: 1, 0, 2>} : (tensor<2x2x16xf32>) -> tensor<2x2x16xf32, #kf.strided<[16, 32, 1]>> loc("permute_4")
    "func.return"(%permute_4) : (tensor<2x2x16xf32, #kf.strided<[16, 32, 1]>>) -> ()
  }) : () -> ()
}) : () -> ()
//--- lstm.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "h0"}, {kf.name = "c0"}], function_type = (tensor<2x2x8xf32>, tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> (tensor<1x2x16xf32>), sym_name = "model"}> ({
  ^bb0(%x: tensor<2x2x8xf32>, %h0: tensor<1x2x16xf32>, %c0: tensor<1x2x16xf32>):
    %p_rnn_weight_ih_l0 = "kf.param"() {fqn = "rnn.weight_ih_l0", kind = "parameter"} : () -> tensor<64x8xf32> loc("p_rnn_weight_ih_l0")
    %p_rnn_weight_hh_l0 = "kf.param"() {fqn = "rnn.weight_hh_l0", kind = "parameter"} : () -> tensor<64x16xf32> loc("p_rnn_weight_hh_l0")
    %p_rnn_bias_ih_l0 = "kf.param"() {fqn = "rnn.bias_ih_l0", kind = "parameter"} : () -> tensor<64xf32> loc("p_rnn_bias_ih_l0")
    %p_rnn_bias_hh_l0 = "kf.param"() {fqn = "rnn.bias_hh_l0", kind = "parameter"} : () -> tensor<64xf32> loc("p_rnn_bias_hh_l0")
    %squeeze = "kf.reshape"(%h0) : (tensor<1x2x16xf32>) -> tensor<2x16xf32> loc("squeeze")
    %squeeze_1 = "kf.reshape"(%c0) : (tensor<1x2x16xf32>) -> tensor<2x16xf32> loc("squeeze_1")
    %permute = "kf.permute"(%x) {dims = array<i64: 1, 0, 2>} : (tensor<2x2x8xf32>) -> tensor<2x2x8xf32, #kf.strided<[8, 16, 1]>> loc("permute")
    %unsqueeze = "kf.reshape"(%squeeze) : (tensor<2x16xf32>) -> tensor<1x2x16xf32> loc("unsqueeze")
    %unsqueeze_1 = "kf.reshape"(%squeeze_1) : (tensor<2x16xf32>) -> tensor<1x2x16xf32> loc("unsqueeze_1")
    %permute_1 = "kf.permute"(%p_rnn_weight_ih_l0) {dims = array<i64: 1, 0>} : (tensor<64x8xf32>) -> tensor<8x64xf32, #kf.strided<[1, 8]>> loc("permute_1")
    %expand_1 = "kf.expand"(%permute_1) : (tensor<8x64xf32, #kf.strided<[1, 8]>>) -> tensor<2x8x64xf32, #kf.strided<[0, 1, 8]>> loc("expand_1")
    %bmm = "kf.bmm"(%permute, %expand_1) : (tensor<2x2x8xf32, #kf.strided<[8, 16, 1]>>, tensor<2x8x64xf32, #kf.strided<[0, 1, 8]>>) -> tensor<2x2x64xf32> loc("bmm")
    %add = "kf.add"(%bmm, %p_rnn_bias_ih_l0) : (tensor<2x2x64xf32>, tensor<64xf32>) -> tensor<2x2x64xf32> loc("add")
    %slice_3 = "kf.slice"(%add) {dim = 0 : i64, end = 1 : i64, start = 0 : i64, step = 1 : i64} : (tensor<2x2x64xf32>) -> tensor<1x2x64xf32> loc("slice_3")
    %slice_4 = "kf.slice"(%add) {dim = 0 : i64, end = 2 : i64, start = 1 : i64, step = 1 : i64} : (tensor<2x2x64xf32>) -> tensor<1x2x64xf32, #kf.strided<[128, 64, 1], offset: 128>> loc("slice_4")
    %squeeze_2 = "kf.reshape"(%slice_3) : (tensor<1x2x64xf32>) -> tensor<2x64xf32> loc("squeeze_2")
    %squeeze_3 = "kf.reshape"(%slice_4) : (tensor<1x2x64xf32, #kf.strided<[128, 64, 1], offset: 128>>) -> tensor<2x64xf32, #kf.strided<[64, 1], offset: 128>> loc("squeeze_3")
    %view_3 = "kf.reshape"(%unsqueeze) : (tensor<1x2x16xf32>) -> tensor<2x16xf32> loc("view_3")
    %permute_2 = "kf.permute"(%p_rnn_weight_hh_l0) {dims = array<i64: 1, 0>} : (tensor<64x16xf32>) -> tensor<16x64xf32, #kf.strided<[1, 16]>> loc("permute_2")
    %addmm = "kf.addmm"(%p_rnn_bias_hh_l0, %view_3, %permute_2) {alpha = 1 : i64, beta = 1 : i64} : (tensor<64xf32>, tensor<2x16xf32>, tensor<16x64xf32, #kf.strided<[1, 16]>>) -> tensor<2x64xf32> loc("addmm")
    %view_4 = "kf.reshape"(%addmm) : (tensor<2x64xf32>) -> tensor<1x2x64xf32> loc("view_4")
    %add_1 = "kf.add"(%view_4, %squeeze_2) : (tensor<1x2x64xf32>, tensor<2x64xf32>) -> tensor<1x2x64xf32> loc("add_1")
    %split_with_sizes:4 = "kf.split"(%add_1) {dim = 2 : i64, sizes = array<i64: 16, 16, 16, 16>} : (tensor<1x2x64xf32>) -> (tensor<1x2x16xf32, #kf.strided<[128, 64, 1]>>, tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 16>>, tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 32>>, tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 48>>) loc("split_with_sizes")
    %sigmoid = "kf.sigmoid"(%split_with_sizes#0) : (tensor<1x2x16xf32, #kf.strided<[128, 64, 1]>>) -> tensor<1x2x16xf32> loc("sigmoid")
    %sigmoid_1 = "kf.sigmoid"(%split_with_sizes#1) : (tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 16>>) -> tensor<1x2x16xf32> loc("sigmoid_1")
    %tanh = "kf.tanh"(%split_with_sizes#2) : (tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 32>>) -> tensor<1x2x16xf32> loc("tanh")
    %sigmoid_2 = "kf.sigmoid"(%split_with_sizes#3) : (tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 48>>) -> tensor<1x2x16xf32> loc("sigmoid_2")
    %mul = "kf.mul"(%sigmoid_1, %unsqueeze_1) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("mul")
    %mul_1 = "kf.mul"(%sigmoid, %tanh) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("mul_1")
    %add_2 = "kf.add"(%mul, %mul_1) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("add_2")
    %tanh_1 = "kf.tanh"(%add_2) : (tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("tanh_1")
    %mul_2 = "kf.mul"(%sigmoid_2, %tanh_1) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("mul_2")
    %view_5 = "kf.reshape"(%mul_2) : (tensor<1x2x16xf32>) -> tensor<2x16xf32> loc("view_5")
    %permute_3 = "kf.permute"(%p_rnn_weight_hh_l0) {dims = array<i64: 1, 0>} : (tensor<64x16xf32>) -> tensor<16x64xf32, #kf.strided<[1, 16]>> loc("permute_3")
    %addmm_1 = "kf.addmm"(%p_rnn_bias_hh_l0, %view_5, %permute_3) {alpha = 1 : i64, beta = 1 : i64} : (tensor<64xf32>, tensor<2x16xf32>, tensor<16x64xf32, #kf.strided<[1, 16]>>) -> tensor<2x64xf32> loc("addmm_1")
    %view_6 = "kf.reshape"(%addmm_1) : (tensor<2x64xf32>) -> tensor<1x2x64xf32> loc("view_6")
    %add_3 = "kf.add"(%view_6, %squeeze_3) : (tensor<1x2x64xf32>, tensor<2x64xf32, #kf.strided<[64, 1], offset: 128>>) -> tensor<1x2x64xf32> loc("add_3")
    %split_with_sizes_1:4 = "kf.split"(%add_3) {dim = 2 : i64, sizes = array<i64: 16, 16, 16, 16>} : (tensor<1x2x64xf32>) -> (tensor<1x2x16xf32, #kf.strided<[128, 64, 1]>>, tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 16>>, tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 32>>, tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 48>>) loc("split_with_sizes_1")
    %sigmoid_3 = "kf.sigmoid"(%split_with_sizes_1#0) : (tensor<1x2x16xf32, #kf.strided<[128, 64, 1]>>) -> tensor<1x2x16xf32> loc("sigmoid_3")
    %sigmoid_4 = "kf.sigmoid"(%split_with_sizes_1#1) : (tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 16>>) -> tensor<1x2x16xf32> loc("sigmoid_4")
    %tanh_2 = "kf.tanh"(%split_with_sizes_1#2) : (tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 32>>) -> tensor<1x2x16xf32> loc("tanh_2")
    %sigmoid_5 = "kf.sigmoid"(%split_with_sizes_1#3) : (tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 48>>) -> tensor<1x2x16xf32> loc("sigmoid_5")
    %mul_3 = "kf.mul"(%sigmoid_4, %add_2) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("mul_3")
    %mul_4 = "kf.mul"(%sigmoid_3, %tanh_2) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("mul_4")
    %add_4 = "kf.add"(%mul_3, %mul_4) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("add_4")
    %tanh_3 = "kf.tanh"(%add_4) : (tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("tanh_3")
    %mul_5 = "kf.mul"(%sigmoid_5, %tanh_3) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("mul_5")
    %squeeze_4 = "kf.reshape"(%mul_5) : (tensor<1x2x16xf32>) -> tensor<2x16xf32> loc("squeeze_4")
    %view_7 = "kf.reshape"(%squeeze_4) : (tensor<2x16xf32>) -> tensor<1x2x16xf32> loc("view_7")
    "func.return"(%view_7) : (tensor<1x2x16xf32>) -> ()
  }) : () -> ()
}) : () -> ()
//--- wrong.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "h0"}], function_type = (tensor<2x2x8xf32>, tensor<1x2x16xf32>) -> (tensor<2x2x16xf32, #kf.strided<[16, 32, 1]>>), sym_name = "model"}> ({
  ^bb0(%x: tensor<2x2x8xf32>, %h0: tensor<1x2x16xf32>):
    %p_rnn_weight_ih_l0 = "kf.param"() {fqn = "rnn.weight_ih_l0", kind = "parameter"} : () -> tensor<48x8xf32> loc("p_rnn_weight_ih_l0")
    %p_rnn_weight_hh_l0 = "kf.param"() {fqn = "rnn.weight_hh_l0", kind = "parameter"} : () -> tensor<48x16xf32> loc("p_rnn_weight_hh_l0")
    %p_rnn_bias_ih_l0 = "kf.param"() {fqn = "rnn.bias_ih_l0", kind = "parameter"} : () -> tensor<48xf32> loc("p_rnn_bias_ih_l0")
    %p_rnn_bias_hh_l0 = "kf.param"() {fqn = "rnn.bias_hh_l0", kind = "parameter"} : () -> tensor<48xf32> loc("p_rnn_bias_hh_l0")
    %squeeze = "kf.reshape"(%h0) : (tensor<1x2x16xf32>) -> tensor<2x16xf32> loc("squeeze")
    %permute = "kf.permute"(%x) {dims = array<i64: 1, 0, 2>} : (tensor<2x2x8xf32>) -> tensor<2x2x8xf32, #kf.strided<[8, 16, 1]>> loc("permute")
    %permute_1 = "kf.permute"(%p_rnn_weight_ih_l0) {dims = array<i64: 1, 0>} : (tensor<48x8xf32>) -> tensor<8x48xf32, #kf.strided<[1, 8]>> loc("permute_1")
    %expand_1 = "kf.expand"(%permute_1) : (tensor<8x48xf32, #kf.strided<[1, 8]>>) -> tensor<2x8x48xf32, #kf.strided<[0, 1, 8]>> loc("expand_1")
    %bmm = "kf.bmm"(%permute, %expand_1) : (tensor<2x2x8xf32, #kf.strided<[8, 16, 1]>>, tensor<2x8x48xf32, #kf.strided<[0, 1, 8]>>) -> tensor<2x2x48xf32> loc("bmm")
    %add = "kf.add"(%bmm, %p_rnn_bias_ih_l0) : (tensor<2x2x48xf32>, tensor<48xf32>) -> tensor<2x2x48xf32> loc("add")
    %unsqueeze = "kf.reshape"(%squeeze) : (tensor<2x16xf32>) -> tensor<1x2x16xf32> loc("unsqueeze")
    %slice_2 = "kf.slice"(%add) {dim = 0 : i64, end = 1 : i64, start = 0 : i64, step = 1 : i64} : (tensor<2x2x48xf32>) -> tensor<1x2x48xf32> loc("slice_2")
    %slice_3 = "kf.slice"(%add) {dim = 0 : i64, end = 2 : i64, start = 1 : i64, step = 1 : i64} : (tensor<2x2x48xf32>) -> tensor<1x2x48xf32, #kf.strided<[96, 48, 1], offset: 96>> loc("slice_3")
    %squeeze_1 = "kf.reshape"(%slice_2) : (tensor<1x2x48xf32>) -> tensor<2x48xf32> loc("squeeze_1")
    %squeeze_2 = "kf.reshape"(%slice_3) : (tensor<1x2x48xf32, #kf.strided<[96, 48, 1], offset: 96>>) -> tensor<2x48xf32, #kf.strided<[48, 1], offset: 96>> loc("squeeze_2")
    %split_with_sizes:3 = "kf.split"(%squeeze_1) {dim = 1 : i64, sizes = array<i64: 16, 16, 16>} : (tensor<2x48xf32>) -> (tensor<2x16xf32, #kf.strided<[48, 1]>>, tensor<2x16xf32, #kf.strided<[48, 1], offset: 16>>, tensor<2x16xf32, #kf.strided<[48, 1], offset: 32>>) loc("split_with_sizes")
    %view_3 = "kf.reshape"(%unsqueeze) : (tensor<1x2x16xf32>) -> tensor<2x16xf32> loc("view_3")
    %permute_2 = "kf.permute"(%p_rnn_weight_hh_l0) {dims = array<i64: 1, 0>} : (tensor<48x16xf32>) -> tensor<16x48xf32, #kf.strided<[1, 16]>> loc("permute_2")
    %addmm = "kf.addmm"(%p_rnn_bias_hh_l0, %view_3, %permute_2) {alpha = 1 : i64, beta = 1 : i64} : (tensor<48xf32>, tensor<2x16xf32>, tensor<16x48xf32, #kf.strided<[1, 16]>>) -> tensor<2x48xf32> loc("addmm")
    %view_4 = "kf.reshape"(%addmm) : (tensor<2x48xf32>) -> tensor<1x2x48xf32> loc("view_4")
    %split_with_sizes_1:3 = "kf.split"(%view_4) {dim = 2 : i64, sizes = array<i64: 16, 16, 16>} : (tensor<1x2x48xf32>) -> (tensor<1x2x16xf32, #kf.strided<[96, 48, 1]>>, tensor<1x2x16xf32, #kf.strided<[96, 48, 1], offset: 16>>, tensor<1x2x16xf32, #kf.strided<[96, 48, 1], offset: 32>>) loc("split_with_sizes_1")
    %add_1 = "kf.add"(%split_with_sizes_1#0, %split_with_sizes#0) : (tensor<1x2x16xf32, #kf.strided<[96, 48, 1]>>, tensor<2x16xf32, #kf.strided<[48, 1]>>) -> tensor<1x2x16xf32> loc("add_1")
    %sigmoid = "kf.sigmoid"(%add_1) : (tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("sigmoid")
    %add_2 = "kf.add"(%split_with_sizes_1#1, %split_with_sizes#1) : (tensor<1x2x16xf32, #kf.strided<[96, 48, 1], offset: 16>>, tensor<2x16xf32, #kf.strided<[48, 1], offset: 16>>) -> tensor<1x2x16xf32> loc("add_2")
    %sigmoid_1 = "kf.sigmoid"(%add_2) : (tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("sigmoid_1")
    %mul = "kf.mul"(%split_with_sizes_1#2, %sigmoid) : (tensor<1x2x16xf32, #kf.strided<[96, 48, 1], offset: 32>>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("mul")
    %add_3 = "kf.add"(%split_with_sizes#2, %mul) : (tensor<2x16xf32, #kf.strided<[48, 1], offset: 32>>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("add_3")
    %tanh = "kf.tanh"(%add_3) : (tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("tanh")
    %sub = "kf.sub"(%tanh, %unsqueeze) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("sub")
    %mul_1 = "kf.mul"(%sub, %sigmoid_1) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("mul_1")
    %add_4 = "kf.add"(%mul_1, %tanh) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("add_4")
    %split_with_sizes_2:3 = "kf.split"(%squeeze_2) {dim = 1 : i64, sizes = array<i64: 16, 16, 16>} : (tensor<2x48xf32, #kf.strided<[48, 1], offset: 96>>) -> (tensor<2x16xf32, #kf.strided<[48, 1], offset: 96>>, tensor<2x16xf32, #kf.strided<[48, 1], offset: 112>>, tensor<2x16xf32, #kf.strided<[48, 1], offset: 128>>) loc("split_with_sizes_2")
    %view_5 = "kf.reshape"(%add_4) : (tensor<1x2x16xf32>) -> tensor<2x16xf32> loc("view_5")
    %permute_3 = "kf.permute"(%p_rnn_weight_hh_l0) {dims = array<i64: 1, 0>} : (tensor<48x16xf32>) -> tensor<16x48xf32, #kf.strided<[1, 16]>> loc("permute_3")
    %addmm_1 = "kf.addmm"(%p_rnn_bias_hh_l0, %view_5, %permute_3) {alpha = 1 : i64, beta = 1 : i64} : (tensor<48xf32>, tensor<2x16xf32>, tensor<16x48xf32, #kf.strided<[1, 16]>>) -> tensor<2x48xf32> loc("addmm_1")
    %view_6 = "kf.reshape"(%addmm_1) : (tensor<2x48xf32>) -> tensor<1x2x48xf32> loc("view_6")
    %split_with_sizes_3:3 = "kf.split"(%view_6) {dim = 2 : i64, sizes = array<i64: 16, 16, 16>} : (tensor<1x2x48xf32>) -> (tensor<1x2x16xf32, #kf.strided<[96, 48, 1]>>, tensor<1x2x16xf32, #kf.strided<[96, 48, 1], offset: 16>>, tensor<1x2x16xf32, #kf.strided<[96, 48, 1], offset: 32>>) loc("split_with_sizes_3")
    %add_5 = "kf.add"(%split_with_sizes_3#0, %split_with_sizes_2#0) : (tensor<1x2x16xf32, #kf.strided<[96, 48, 1]>>, tensor<2x16xf32, #kf.strided<[48, 1], offset: 96>>) -> tensor<1x2x16xf32> loc("add_5")
    %sigmoid_2 = "kf.sigmoid"(%add_5) : (tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("sigmoid_2")
    %add_6 = "kf.add"(%split_with_sizes_3#1, %split_with_sizes_2#1) : (tensor<1x2x16xf32, #kf.strided<[96, 48, 1], offset: 16>>, tensor<2x16xf32, #kf.strided<[48, 1], offset: 112>>) -> tensor<1x2x16xf32> loc("add_6")
    %sigmoid_3 = "kf.sigmoid"(%add_6) : (tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("sigmoid_3")
    %mul_2 = "kf.mul"(%split_with_sizes_3#2, %sigmoid_2) : (tensor<1x2x16xf32, #kf.strided<[96, 48, 1], offset: 32>>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("mul_2")
    %add_7 = "kf.add"(%split_with_sizes_2#2, %mul_2) : (tensor<2x16xf32, #kf.strided<[48, 1], offset: 128>>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("add_7")
    %tanh_1 = "kf.tanh"(%add_7) : (tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("tanh_1")
    %sub_1 = "kf.sub"(%add_4, %tanh_1) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("sub_1")
    %mul_3 = "kf.mul"(%sub_1, %sigmoid_3) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("mul_3")
    %add_8 = "kf.add"(%mul_3, %tanh_1) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("add_8")
    %cat = "kf.cat"(%add_4, %add_8) {dim = 0 : i64} : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<2x2x16xf32> loc("cat")
    %permute_4 = "kf.permute"(%cat) {dims = array<i64: 1, 0, 2>} : (tensor<2x2x16xf32>) -> tensor<2x2x16xf32, #kf.strided<[16, 32, 1]>> loc("permute_4")
    "func.return"(%permute_4) : (tensor<2x2x16xf32, #kf.strided<[16, 32, 1]>>) -> ()
  }) : () -> ()
}) : () -> ()
//--- lstm_c.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}, {kf.name = "h0"}, {kf.name = "c0"}], function_type = (tensor<2x2x8xf32>, tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> (tensor<1x2x16xf32>, tensor<1x2x16xf32>), sym_name = "model"}> ({
  ^bb0(%x: tensor<2x2x8xf32>, %h0: tensor<1x2x16xf32>, %c0: tensor<1x2x16xf32>):
    %p_rnn_weight_ih_l0 = "kf.param"() {fqn = "rnn.weight_ih_l0", kind = "parameter"} : () -> tensor<64x8xf32> loc("p_rnn_weight_ih_l0")
    %p_rnn_weight_hh_l0 = "kf.param"() {fqn = "rnn.weight_hh_l0", kind = "parameter"} : () -> tensor<64x16xf32> loc("p_rnn_weight_hh_l0")
    %p_rnn_bias_ih_l0 = "kf.param"() {fqn = "rnn.bias_ih_l0", kind = "parameter"} : () -> tensor<64xf32> loc("p_rnn_bias_ih_l0")
    %p_rnn_bias_hh_l0 = "kf.param"() {fqn = "rnn.bias_hh_l0", kind = "parameter"} : () -> tensor<64xf32> loc("p_rnn_bias_hh_l0")
    %squeeze = "kf.reshape"(%h0) : (tensor<1x2x16xf32>) -> tensor<2x16xf32> loc("squeeze")
    %squeeze_1 = "kf.reshape"(%c0) : (tensor<1x2x16xf32>) -> tensor<2x16xf32> loc("squeeze_1")
    %permute = "kf.permute"(%x) {dims = array<i64: 1, 0, 2>} : (tensor<2x2x8xf32>) -> tensor<2x2x8xf32, #kf.strided<[8, 16, 1]>> loc("permute")
    %unsqueeze = "kf.reshape"(%squeeze) : (tensor<2x16xf32>) -> tensor<1x2x16xf32> loc("unsqueeze")
    %unsqueeze_1 = "kf.reshape"(%squeeze_1) : (tensor<2x16xf32>) -> tensor<1x2x16xf32> loc("unsqueeze_1")
    %permute_1 = "kf.permute"(%p_rnn_weight_ih_l0) {dims = array<i64: 1, 0>} : (tensor<64x8xf32>) -> tensor<8x64xf32, #kf.strided<[1, 8]>> loc("permute_1")
    %expand_1 = "kf.expand"(%permute_1) : (tensor<8x64xf32, #kf.strided<[1, 8]>>) -> tensor<2x8x64xf32, #kf.strided<[0, 1, 8]>> loc("expand_1")
    %bmm = "kf.bmm"(%permute, %expand_1) : (tensor<2x2x8xf32, #kf.strided<[8, 16, 1]>>, tensor<2x8x64xf32, #kf.strided<[0, 1, 8]>>) -> tensor<2x2x64xf32> loc("bmm")
    %add = "kf.add"(%bmm, %p_rnn_bias_ih_l0) : (tensor<2x2x64xf32>, tensor<64xf32>) -> tensor<2x2x64xf32> loc("add")
    %slice_3 = "kf.slice"(%add) {dim = 0 : i64, end = 1 : i64, start = 0 : i64, step = 1 : i64} : (tensor<2x2x64xf32>) -> tensor<1x2x64xf32> loc("slice_3")
    %slice_4 = "kf.slice"(%add) {dim = 0 : i64, end = 2 : i64, start = 1 : i64, step = 1 : i64} : (tensor<2x2x64xf32>) -> tensor<1x2x64xf32, #kf.strided<[128, 64, 1], offset: 128>> loc("slice_4")
    %squeeze_2 = "kf.reshape"(%slice_3) : (tensor<1x2x64xf32>) -> tensor<2x64xf32> loc("squeeze_2")
    %squeeze_3 = "kf.reshape"(%slice_4) : (tensor<1x2x64xf32, #kf.strided<[128, 64, 1], offset: 128>>) -> tensor<2x64xf32, #kf.strided<[64, 1], offset: 128>> loc("squeeze_3")
    %view_3 = "kf.reshape"(%unsqueeze) : (tensor<1x2x16xf32>) -> tensor<2x16xf32> loc("view_3")
    %permute_2 = "kf.permute"(%p_rnn_weight_hh_l0) {dims = array<i64: 1, 0>} : (tensor<64x16xf32>) -> tensor<16x64xf32, #kf.strided<[1, 16]>> loc("permute_2")
    %addmm = "kf.addmm"(%p_rnn_bias_hh_l0, %view_3, %permute_2) {alpha = 1 : i64, beta = 1 : i64} : (tensor<64xf32>, tensor<2x16xf32>, tensor<16x64xf32, #kf.strided<[1, 16]>>) -> tensor<2x64xf32> loc("addmm")
    %view_4 = "kf.reshape"(%addmm) : (tensor<2x64xf32>) -> tensor<1x2x64xf32> loc("view_4")
    %add_1 = "kf.add"(%view_4, %squeeze_2) : (tensor<1x2x64xf32>, tensor<2x64xf32>) -> tensor<1x2x64xf32> loc("add_1")
    %split_with_sizes:4 = "kf.split"(%add_1) {dim = 2 : i64, sizes = array<i64: 16, 16, 16, 16>} : (tensor<1x2x64xf32>) -> (tensor<1x2x16xf32, #kf.strided<[128, 64, 1]>>, tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 16>>, tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 32>>, tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 48>>) loc("split_with_sizes")
    %sigmoid = "kf.sigmoid"(%split_with_sizes#0) : (tensor<1x2x16xf32, #kf.strided<[128, 64, 1]>>) -> tensor<1x2x16xf32> loc("sigmoid")
    %sigmoid_1 = "kf.sigmoid"(%split_with_sizes#1) : (tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 16>>) -> tensor<1x2x16xf32> loc("sigmoid_1")
    %tanh = "kf.tanh"(%split_with_sizes#2) : (tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 32>>) -> tensor<1x2x16xf32> loc("tanh")
    %sigmoid_2 = "kf.sigmoid"(%split_with_sizes#3) : (tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 48>>) -> tensor<1x2x16xf32> loc("sigmoid_2")
    %mul = "kf.mul"(%sigmoid_1, %unsqueeze_1) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("mul")
    %mul_1 = "kf.mul"(%sigmoid, %tanh) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("mul_1")
    %add_2 = "kf.add"(%mul, %mul_1) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("add_2")
    %tanh_1 = "kf.tanh"(%add_2) : (tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("tanh_1")
    %mul_2 = "kf.mul"(%sigmoid_2, %tanh_1) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("mul_2")
    %view_5 = "kf.reshape"(%mul_2) : (tensor<1x2x16xf32>) -> tensor<2x16xf32> loc("view_5")
    %permute_3 = "kf.permute"(%p_rnn_weight_hh_l0) {dims = array<i64: 1, 0>} : (tensor<64x16xf32>) -> tensor<16x64xf32, #kf.strided<[1, 16]>> loc("permute_3")
    %addmm_1 = "kf.addmm"(%p_rnn_bias_hh_l0, %view_5, %permute_3) {alpha = 1 : i64, beta = 1 : i64} : (tensor<64xf32>, tensor<2x16xf32>, tensor<16x64xf32, #kf.strided<[1, 16]>>) -> tensor<2x64xf32> loc("addmm_1")
    %view_6 = "kf.reshape"(%addmm_1) : (tensor<2x64xf32>) -> tensor<1x2x64xf32> loc("view_6")
    %add_3 = "kf.add"(%view_6, %squeeze_3) : (tensor<1x2x64xf32>, tensor<2x64xf32, #kf.strided<[64, 1], offset: 128>>) -> tensor<1x2x64xf32> loc("add_3")
    %split_with_sizes_1:4 = "kf.split"(%add_3) {dim = 2 : i64, sizes = array<i64: 16, 16, 16, 16>} : (tensor<1x2x64xf32>) -> (tensor<1x2x16xf32, #kf.strided<[128, 64, 1]>>, tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 16>>, tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 32>>, tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 48>>) loc("split_with_sizes_1")
    %sigmoid_3 = "kf.sigmoid"(%split_with_sizes_1#0) : (tensor<1x2x16xf32, #kf.strided<[128, 64, 1]>>) -> tensor<1x2x16xf32> loc("sigmoid_3")
    %sigmoid_4 = "kf.sigmoid"(%split_with_sizes_1#1) : (tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 16>>) -> tensor<1x2x16xf32> loc("sigmoid_4")
    %tanh_2 = "kf.tanh"(%split_with_sizes_1#2) : (tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 32>>) -> tensor<1x2x16xf32> loc("tanh_2")
    %sigmoid_5 = "kf.sigmoid"(%split_with_sizes_1#3) : (tensor<1x2x16xf32, #kf.strided<[128, 64, 1], offset: 48>>) -> tensor<1x2x16xf32> loc("sigmoid_5")
    %mul_3 = "kf.mul"(%sigmoid_4, %add_2) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("mul_3")
    %mul_4 = "kf.mul"(%sigmoid_3, %tanh_2) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("mul_4")
    %add_4 = "kf.add"(%mul_3, %mul_4) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("add_4")
    %tanh_3 = "kf.tanh"(%add_4) : (tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("tanh_3")
    %mul_5 = "kf.mul"(%sigmoid_5, %tanh_3) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> tensor<1x2x16xf32> loc("mul_5")
    %squeeze_4 = "kf.reshape"(%mul_5) : (tensor<1x2x16xf32>) -> tensor<2x16xf32> loc("squeeze_4")
    %view_7 = "kf.reshape"(%squeeze_4) : (tensor<2x16xf32>) -> tensor<1x2x16xf32> loc("view_7")
    "func.return"(%view_7, %add_2) : (tensor<1x2x16xf32>, tensor<1x2x16xf32>) -> ()
  }) : () -> ()
}) : () -> ()
//--- bad_mode.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "xg"}, {kf.name = "h0"}, {kf.name = "w"}, {kf.name = "b"}], function_type = (tensor<3x2x12xf32>, tensor<2x4xf32>, tensor<12x4xf32>, tensor<12xf32>) -> (tensor<3x2x4xf32>), sym_name = "m"}> ({
  ^bb0(%xg: tensor<3x2x12xf32>, %h0: tensor<2x4xf32>, %w: tensor<12x4xf32>, %b: tensor<12xf32>):
    %r:2 = "kf.rnn"(%xg, %h0, %w, %b) {mode = "rnn", operandSegmentSizes = array<i32: 1, 1, 0, 1, 1>} : (tensor<3x2x12xf32>, tensor<2x4xf32>, tensor<12x4xf32>, tensor<12xf32>) -> (tensor<3x2x4xf32>, tensor<2x4xf32>) loc("r")
    "func.return"(%r#0) : (tensor<3x2x4xf32>) -> ()
  }) : () -> ()
}) : () -> ()
//--- bad_c0.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "xg"}, {kf.name = "h0"}, {kf.name = "w"}, {kf.name = "b"}], function_type = (tensor<3x2x12xf32>, tensor<2x4xf32>, tensor<12x4xf32>, tensor<12xf32>) -> (tensor<3x2x4xf32>), sym_name = "m"}> ({
  ^bb0(%xg: tensor<3x2x12xf32>, %h0: tensor<2x4xf32>, %w: tensor<12x4xf32>, %b: tensor<12xf32>):
    %r:2 = "kf.rnn"(%xg, %h0, %h0, %w, %b) {mode = "gru", operandSegmentSizes = array<i32: 1, 1, 1, 1, 1>} : (tensor<3x2x12xf32>, tensor<2x4xf32>, tensor<2x4xf32>, tensor<12x4xf32>, tensor<12xf32>) -> (tensor<3x2x4xf32>, tensor<2x4xf32>) loc("r")
    "func.return"(%r#0) : (tensor<3x2x4xf32>) -> ()
  }) : () -> ()
}) : () -> ()
//--- bad_xg.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "xg"}, {kf.name = "h0"}, {kf.name = "w"}, {kf.name = "b"}], function_type = (tensor<3x2x10xf32>, tensor<2x4xf32>, tensor<12x4xf32>, tensor<12xf32>) -> (tensor<3x2x4xf32>), sym_name = "m"}> ({
  ^bb0(%xg: tensor<3x2x10xf32>, %h0: tensor<2x4xf32>, %w: tensor<12x4xf32>, %b: tensor<12xf32>):
    %r:2 = "kf.rnn"(%xg, %h0, %w, %b) {mode = "gru", operandSegmentSizes = array<i32: 1, 1, 0, 1, 1>} : (tensor<3x2x10xf32>, tensor<2x4xf32>, tensor<12x4xf32>, tensor<12xf32>) -> (tensor<3x2x4xf32>, tensor<2x4xf32>) loc("r")
    "func.return"(%r#0) : (tensor<3x2x4xf32>) -> ()
  }) : () -> ()
}) : () -> ()
