// Bad IR text: each case gets an error naming the file, the node and the
// problem, exit status 1, and no output on stdout.
//
// RUN: rm -rf %t && split-file %s %t
// RUN: not %kfuse opt %t/syntax.mlir 2>&1 | FileCheck %s --check-prefix=SYNTAX
// RUN: not %kfuse opt %t/garbage.mlir 2>&1 | FileCheck %s --check-prefix=GARBAGE
// RUN: not %kfuse opt %t/empty.mlir 2>&1 | FileCheck %s --check-prefix=EMPTY
// RUN: not %kfuse opt %t/unknown_op.mlir 2>&1 | FileCheck %s --check-prefix=UNKNOWN-OP
// RUN: not %kfuse opt %t/unknown_attr.mlir 2>&1 | FileCheck %s --check-prefix=UNKNOWN-ATTR
// RUN: not %kfuse opt %t/attr_kind.mlir 2>&1 | FileCheck %s --check-prefix=ATTR-KIND
// RUN: not %kfuse opt %t/missing_attr.mlir 2>&1 | FileCheck %s --check-prefix=MISSING-ATTR
// RUN: not %kfuse opt %t/operands.mlir 2>&1 | FileCheck %s --check-prefix=OPERANDS
// RUN: not %kfuse opt %t/wrong_type.mlir 2>&1 | FileCheck %s --check-prefix=WRONG-TYPE
// RUN: not %kfuse opt %t/broadcast.mlir 2>&1 | FileCheck %s --check-prefix=BROADCAST
// RUN: not %kfuse opt %t/permutation.mlir 2>&1 | FileCheck %s --check-prefix=PERM
// RUN: not %kfuse opt %t/duplicate.mlir 2>&1 | FileCheck %s --check-prefix=DUP
// RUN: not %kfuse opt %t/bad_name.mlir 2>&1 | FileCheck %s --check-prefix=BAD-NAME
// RUN: not %kfuse opt %t/use_before_def.mlir 2>&1 | FileCheck %s --check-prefix=DOMINANCE
// RUN: not %kfuse opt %t/dynamic.mlir 2>&1 | FileCheck %s --check-prefix=DYNAMIC
// RUN: not %kfuse opt %t/missing.mlir 2>&1 | FileCheck %s --check-prefix=MISSING
// RUN: not %kfuse opt -p dce,nosuchpass %t/valid.mlir 2>&1 | FileCheck %s --check-prefix=PASS
// stdout stays empty on failure:
// RUN: not %kfuse opt %t/wrong_type.mlir 2>/dev/null | FileCheck %s --allow-empty --check-prefix=NOTHING
// and the valid file loads:
// RUN: %kfuse opt %t/valid.mlir | FileCheck %s --check-prefix=VALID

// SYNTAX: kfuse: error: {{.*}}syntax.mlir:5:{{[0-9]+}}: expected ')'
// GARBAGE: kfuse: error: {{.*}}garbage.mlir:1:1:
// EMPTY: kfuse: error: {{.*}}empty.mlir: {{.*}}func.func
// UNKNOWN-OP: kfuse: error: {{.*}}unknown_op.mlir: node 'a'{{.*}}unknown op kf.frobnicate
// UNKNOWN-ATTR: kfuse: error: {{.*}}unknown_attr.mlir: node 'a' (kf.relu): unknown attribute 'inplace'
// ATTR-KIND: kfuse: error: {{.*}}attr_kind.mlir: node 'a' (kf.sum): attribute dims must be
// MISSING-ATTR: kfuse: error: {{.*}}missing_attr.mlir: node 'a' (kf.sum): attribute dims is missing
// OPERANDS: kfuse: error: {{.*}}operands.mlir: node 'a' (kf.add): 1 operands, expects 2
// WRONG-TYPE: kfuse: error: {{.*}}wrong_type.mlir: node 'a' (kf.relu): result 0 is declared tensor<3x2xf32> but the op gives tensor<2x3xf32>
// BROADCAST: kfuse: error: {{.*}}broadcast.mlir: node 'a' (kf.add): {{.*}}broadcast
// PERM: kfuse: error: {{.*}}permutation.mlir: node 'a' (kf.permute): {{.*}}permutation
// DUP: kfuse: error: {{.*}}duplicate.mlir: node 'a' (kf.exp): duplicate name
// BAD-NAME: kfuse: error: {{.*}}bad_name.mlir: node 'a b' (kf.relu): name is not a valid identifier
// DOMINANCE: kfuse: error: {{.*}}use_before_def.mlir{{.*}}does not dominate
// DYNAMIC: kfuse: error: {{.*}}dynamic.mlir: node 'a'{{.*}}dynamic dimension
// MISSING: kfuse: error: {{.*}}missing.mlir: cannot open
// PASS: kfuse: error: unknown pass 'nosuchpass'
// NOTHING-NOT: {{.}}
// VALID: %a = "kf.relu"(%x)

//--- syntax.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x3xf32>) -> (tensor<2x3xf32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<2x3xf32>):
    %a = "kf.relu"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("a")
    "func.return"(%a) : (tensor<2x3xf32> -> ()
  }) : () -> ()
}) : () -> ()

//--- garbage.mlir
hello world

//--- empty.mlir

//--- unknown_op.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x3xf32>) -> (tensor<2x3xf32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<2x3xf32>):
    %a = "kf.frobnicate"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("a")
    "func.return"(%a) : (tensor<2x3xf32>) -> ()
  }) : () -> ()
}) : () -> ()

//--- unknown_attr.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x3xf32>) -> (tensor<2x3xf32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<2x3xf32>):
    %a = "kf.relu"(%x) {inplace = true} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("a")
    "func.return"(%a) : (tensor<2x3xf32>) -> ()
  }) : () -> ()
}) : () -> ()

//--- attr_kind.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x3xf32>) -> (tensor<2x3xf32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<2x3xf32>):
    %a = "kf.sum"(%x) {dims = 1 : i64, keepdim = false} : (tensor<2x3xf32>) -> tensor<2xf32> loc("a")
    %b = "kf.expand"(%a) : (tensor<2xf32>) -> tensor<2x3xf32> loc("b")
    "func.return"(%x) : (tensor<2x3xf32>) -> ()
  }) : () -> ()
}) : () -> ()

//--- missing_attr.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x3xf32>) -> (tensor<2x3xf32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<2x3xf32>):
    %a = "kf.sum"(%x) {keepdim = false} : (tensor<2x3xf32>) -> tensor<f32> loc("a")
    %b = "kf.expand"(%a) : (tensor<f32>) -> tensor<2x3xf32> loc("b")
    "func.return"(%b) : (tensor<2x3xf32>) -> ()
  }) : () -> ()
}) : () -> ()

//--- operands.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x3xf32>) -> (tensor<2x3xf32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<2x3xf32>):
    %a = "kf.add"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("a")
    "func.return"(%a) : (tensor<2x3xf32>) -> ()
  }) : () -> ()
}) : () -> ()

//--- wrong_type.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x3xf32>) -> (tensor<2x3xf32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<2x3xf32>):
    %a = "kf.relu"(%x) : (tensor<2x3xf32>) -> tensor<3x2xf32> loc("a")
    %b = "kf.reshape"(%a) : (tensor<3x2xf32>) -> tensor<2x3xf32> loc("b")
    "func.return"(%b) : (tensor<2x3xf32>) -> ()
  }) : () -> ()
}) : () -> ()

//--- broadcast.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x3xf32>) -> (tensor<2x3xf32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<2x3xf32>):
    %y = "kf.full"() {value = 1 : i64} : () -> tensor<4xf32> loc("y")
    %a = "kf.add"(%x, %y) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32> loc("a")
    "func.return"(%a) : (tensor<2x3xf32>) -> ()
  }) : () -> ()
}) : () -> ()

//--- permutation.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x3xf32>) -> (tensor<2x3xf32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<2x3xf32>):
    %a = "kf.permute"(%x) {dims = array<i64: 0, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("a")
    "func.return"(%a) : (tensor<2x3xf32>) -> ()
  }) : () -> ()
}) : () -> ()

//--- duplicate.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x3xf32>) -> (tensor<2x3xf32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<2x3xf32>):
    %a = "kf.relu"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("a")
    %b = "kf.exp"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("a")
    "func.return"(%b) : (tensor<2x3xf32>) -> ()
  }) : () -> ()
}) : () -> ()

//--- bad_name.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x3xf32>) -> (tensor<2x3xf32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<2x3xf32>):
    %a = "kf.relu"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("a b")
    "func.return"(%a) : (tensor<2x3xf32>) -> ()
  }) : () -> ()
}) : () -> ()

//--- use_before_def.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x3xf32>) -> (tensor<2x3xf32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<2x3xf32>):
    %b = "kf.exp"(%a) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("b")
    %a = "kf.relu"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("a")
    "func.return"(%b) : (tensor<2x3xf32>) -> ()
  }) : () -> ()
}) : () -> ()

//--- dynamic.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x3xf32>) -> (tensor<2x3xf32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<2x3xf32>):
    %a = "kf.relu"(%x) : (tensor<2x3xf32>) -> tensor<?x3xf32> loc("a")
    "func.return"(%x) : (tensor<2x3xf32>) -> ()
  }) : () -> ()
}) : () -> ()

//--- valid.mlir
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2x3xf32>) -> (tensor<2x3xf32>), sym_name = "m"}> ({
  ^bb0(%x: tensor<2x3xf32>):
    %a = "kf.relu"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc("a")
    "func.return"(%a) : (tensor<2x3xf32>) -> ()
  }) : () -> ()
}) : () -> ()
