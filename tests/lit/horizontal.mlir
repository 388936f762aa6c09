// Horizontal fusion end to end: three siblings of %x (and a chain on one of
// them) are one group and one launch a run; --no-horizontal keeps three.
//
// RUN: %kfuse partition %s | FileCheck %s --check-prefix=PART
// RUN: %kfuse partition %s --no-horizontal | FileCheck %s --check-prefix=APART
// RUN: %kfuse compile %s -o %t.so -q --report %t.json
// RUN: FileCheck %s --check-prefix=REPORT < %t.json
// RUN: %kfuse compile %s -o %t2.so -q --no-horizontal --report %t2.json
// RUN: FileCheck %s --check-prefix=REPORT3 < %t2.json

// PART: partition of 'siblings': 1 groups (precision default): 1 elementwise
// PART: ops: a(kf.relu) b(kf.tanh) c(kf.sigmoid) d(kf.mul)
// APART: partition of 'siblings': 3 groups
// REPORT: "steps_per_run":
// REPORT-NEXT: "launches":{{[[:space:]]*}}1,
// REPORT3: "steps_per_run":
// REPORT3-NEXT: "launches":{{[[:space:]]*}}3,
"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<4x1000xf32>) -> (tensor<4x1000xf32>, tensor<4x1000xf32>, tensor<4x1000xf32>), sym_name = "siblings"}> ({
  ^bb0(%x: tensor<4x1000xf32>):
    %a = "kf.relu"(%x) : (tensor<4x1000xf32>) -> tensor<4x1000xf32> loc("a")
    %b = "kf.tanh"(%x) : (tensor<4x1000xf32>) -> tensor<4x1000xf32> loc("b")
    %c = "kf.sigmoid"(%x) : (tensor<4x1000xf32>) -> tensor<4x1000xf32> loc("c")
    %d = "kf.mul"(%c, %x) : (tensor<4x1000xf32>, tensor<4x1000xf32>) -> tensor<4x1000xf32> loc("d")
    "func.return"(%a, %b, %d) : (tensor<4x1000xf32>, tensor<4x1000xf32>, tensor<4x1000xf32>) -> ()
  }) : () -> ()
}) : () -> ()
