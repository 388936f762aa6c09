// Shapes too large for a memory plan (byte counts are int64_t, regions
// rounded up to 256): one error naming the value and its type, exit status
// 1 — not an overflow into a plan that says "nbytes is 0".
//
// RUN: rm -rf %t && split-file %s %t
// RUN: not %kfuse partition %t/huge.mlir 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: not %kfuse compile %t/huge.mlir -o %t/huge.so -q 2>&1 | FileCheck %s --check-prefix=HUGE
// RUN: not %kfuse partition %t/strided.mlir 2>&1 | FileCheck %s --check-prefix=STRIDED
// RUN: not %kfuse partition %t/arena.mlir --no-fuse 2>&1 | FileCheck %s --check-prefix=ARENA
// and just under the limit, a plan is made:
// RUN: %kfuse partition %t/arena.mlir | FileCheck %s --check-prefix=FITS

// HUGE: kfuse: error: {{.*}}huge.mlir: value 'x' (tensor<4611686018427387904xf32>) is too large: its elements span more than 2^62 bytes
// HUGE-NOT: nbytes
// STRIDED: kfuse: error: {{.*}}strided.mlir: value 'x' (tensor<2x3xf32, #kf.strided<[4611686018427387904, 1]>>) is too large: its elements span more than 2^62 bytes
// ARENA: kfuse: error: {{.*}}arena.mlir: value 'b' (tensor<576460752303423488xf32>) does not fit in the arena: with the values live beside it, the arena would pass 2^62 bytes
// FITS: memory plan: arena 0 B with reuse

//--- huge.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<4611686018427387904xf32>) -> (tensor<4611686018427387904xf32>), sym_name = "huge"}> ({
  ^bb0(%x: tensor<4611686018427387904xf32>):
    %a = "kf.relu"(%x) : (tensor<4611686018427387904xf32>) -> tensor<4611686018427387904xf32> loc("a")
    "func.return"(%a) : (tensor<4611686018427387904xf32>) -> ()
  }) : () -> ()
}) : () -> ()
//--- strided.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x3xf32, #kf.strided<[4611686018427387904, 1]>>) -> (tensor<2x3xf32>), sym_name = "strided"}> ({
  ^bb0(%x: tensor<2x3xf32, #kf.strided<[4611686018427387904, 1]>>):
    %a = "kf.relu"(%x) : (tensor<2x3xf32, #kf.strided<[4611686018427387904, 1]>>) -> tensor<2x3xf32> loc("a")
    "func.return"(%a) : (tensor<2x3xf32>) -> ()
  }) : () -> ()
}) : () -> ()
//--- arena.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<576460752303423488xf32>) -> (tensor<576460752303423488xf32>), sym_name = "arena"}> ({
  ^bb0(%x: tensor<576460752303423488xf32>):
    %a = "kf.relu"(%x) : (tensor<576460752303423488xf32>) -> tensor<576460752303423488xf32> loc("a")
    %b = "kf.exp"(%x) : (tensor<576460752303423488xf32>) -> tensor<576460752303423488xf32> loc("b")
    %c = "kf.add"(%a, %b) : (tensor<576460752303423488xf32>, tensor<576460752303423488xf32>) -> tensor<576460752303423488xf32> loc("c")
    "func.return"(%c) : (tensor<576460752303423488xf32>) -> ()
  }) : () -> ()
}) : () -> ()
