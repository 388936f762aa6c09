// The command line: op listings, pass listing, version, usage errors.
//
// RUN: %kfuse ops | FileCheck %s --check-prefix=OPS
// RUN: %kfuse ops --aten | FileCheck %s --check-prefix=ATEN
// RUN: %kfuse opt --list-passes | FileCheck %s --check-prefix=PASSES
// RUN: %kfuse version | FileCheck %s --check-prefix=VERSION
// RUN: not %kfuse 2>&1 | FileCheck %s --check-prefix=USAGE
// RUN: not %kfuse frobnicate 2>&1 | FileCheck %s --check-prefix=UNKNOWN
// RUN: not %kfuse run %s 2>&1 | FileCheck %s --check-prefix=NO-IO
// RUN: not %kfuse info %s extra.mlir 2>&1 | FileCheck %s --check-prefix=TWO
// RUN: not %kfuse run %s --io %t.missing.kfio 2>&1 | FileCheck %s --check-prefix=NOIO
// RUN: not %kfuse compile %s -o %t.so --kernel-option tpr=3 2>&1 | FileCheck %s --check-prefix=KOPT
// RUN: not %kfuse compile %s -o %t.so --kernel-option occ=x 2>&1 | FileCheck %s --check-prefix=KOCC
// RUN: not %kfuse compile %s -o %t.so --kernel-option foo=1 2>&1 | FileCheck %s --check-prefix=KKEY
// RUN: not %kfuse compile %s -o %t.so --kernel-option attn_scratch=0 2>&1 | FileCheck %s --check-prefix=KATT

// OPS-DAG: kf.relu
// OPS-DAG: kf.conv {{.*}}(x, weight, bias?) {stride:I padding:I dilation:I transposed:b output_padding:I groups:i}
// OPS-DAG: kf.sdpa {{.*}}(q, k, v, mask?)
// OPS-DAG: kf.cat {{.*}}(xs...)
// ATEN: -> kf.
// PASSES: dce
// PASSES: simplify
// PASSES: default {{.*}}
// PASSES: compile {{.*}}materialize-outputs
// PASSES: reference {{.*}}
// VERSION: kfuse {{[0-9]+\.[0-9]+\.[0-9]+}}
// USAGE: usage: kfuse <command>
// UNKNOWN: kfuse: error: unknown command 'frobnicate'
// NO-IO: kfuse: error: run: --io FILE.kfio is required
// NO-IO-NEXT: usage: kfuse run MODEL --io FILE.kfio
// TWO: kfuse: error: info: more than one model given ({{.*}}cli.mlir', 'extra.mlir')
// TWO-NEXT: usage: kfuse info MODEL
// NOIO: kfuse: error: {{.*}}missing.kfio: cannot open
// KOPT: kfuse: error: --kernel-option tpr=3: tpr takes a power of two from 1 to 1024
// KOCC: kfuse: error: --kernel-option occ=x: occ takes an integer from 32 to 2048
// KKEY: kfuse: error: --kernel-option 'foo=1': expected block=N, vec=N, tpr=N, cache=N, occ=N, attn_scratch=N, ctpr=N, cblock=N, unroll=N, tilea=N, tilet=N or rsplit=N
// KATT: kfuse: error: --kernel-option attn_scratch=0: attn_scratch takes an integer from 1 to 16777216

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2xf32>) -> (tensor<2xf32>), sym_name = "cli"}> ({
  ^bb0(%x: tensor<2xf32>):
    %a = "kf.relu"(%x) : (tensor<2xf32>) -> tensor<2xf32> loc("a")
    "func.return"(%a) : (tensor<2xf32>) -> ()
  }) : () -> ()
}) : () -> ()
