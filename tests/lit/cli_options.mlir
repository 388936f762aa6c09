// Every subcommand's options: --help prints that subcommand's usage and
// exits 0; an unknown option is named with its subcommand; an option
// missing its value says so; numbers are parsed whole and strictly (no
// nan, inf, junk, trailing characters, overflow or negative counts: a NaN
// tolerance passed every comparison, `bench --iters 1e9` ran once). Usage
// errors exit 2.
//
// RUN: %kfuse info --help | FileCheck %s --check-prefix=HELP-INFO
// RUN: %kfuse opt --help | FileCheck %s --check-prefix=HELP-OPT
// RUN: %kfuse run --help | FileCheck %s --check-prefix=HELP-EXEC
// RUN: %kfuse partition --help | FileCheck %s --check-prefix=HELP-PART
// RUN: %kfuse compile --help | FileCheck %s --check-prefix=HELP-COMPILE
// RUN: %kfuse compile %s -o %t.so --help | FileCheck %s --check-prefix=HELP-COMPILE
// RUN: %kfuse bench --help | FileCheck %s --check-prefix=HELP-BENCH
// RUN: %kfuse ops --help | FileCheck %s --check-prefix=HELP-OPS
// RUN: %kfuse version --help | FileCheck %s --check-prefix=HELP-VERSION
// RUN: %kfuse help compile | FileCheck %s --check-prefix=HELP-COMPILE
//
// RUN: not %kfuse info %s --bogus 2>&1 | FileCheck %s --check-prefix=UNK-INFO
// RUN: not %kfuse opt %s --bogus 2>&1 | FileCheck %s --check-prefix=UNK-OPT
// RUN: not %kfuse run %s --io x.kfio --bogus 2>&1 | FileCheck %s --check-prefix=UNK-EXEC
// RUN: not %kfuse partition %s --bogus 2>&1 | FileCheck %s --check-prefix=UNK-PART
// RUN: not %kfuse compile %s -o %t.so --bogus 2>&1 | FileCheck %s --check-prefix=UNK-COMPILE
// RUN: not %kfuse bench m.so --bogus 2>&1 | FileCheck %s --check-prefix=UNK-BENCH
// RUN: not %kfuse ops --bogus 2>&1 | FileCheck %s --check-prefix=UNK-OPS
// RUN: not %kfuse version extra 2>&1 | FileCheck %s --check-prefix=VERSION-ARG
//
// RUN: not %kfuse compile %s -o 2>&1 | FileCheck %s --check-prefix=NEEDS-O
// RUN: not %kfuse compile %s --report 2>&1 | FileCheck %s --check-prefix=NEEDS-REPORT
// RUN: not %kfuse opt %s -p 2>&1 | FileCheck %s --check-prefix=NEEDS-P
// RUN: not %kfuse run %s --io 2>&1 | FileCheck %s --check-prefix=NEEDS-IO
// RUN: not %kfuse partition %s --precision 2>&1 | FileCheck %s --check-prefix=NEEDS-PREC
// RUN: not %kfuse bench m.so --iters 2>&1 | FileCheck %s --check-prefix=NEEDS-ITERS
// RUN: not %kfuse compile %s 2>&1 | FileCheck %s --check-prefix=NO-O
//
// RUN: not %kfuse run %s --io x.kfio --atol nan 2>&1 | FileCheck %s --check-prefix=ATOL-NAN
// RUN: not %kfuse run %s --io x.kfio --atol inf 2>&1 | FileCheck %s --check-prefix=ATOL-INF
// RUN: not %kfuse run %s --io x.kfio --atol 1e999 2>&1 | FileCheck %s --check-prefix=ATOL-BIG
// RUN: not %kfuse run %s --io x.kfio --atol 0.1x 2>&1 | FileCheck %s --check-prefix=ATOL-JUNK
// RUN: not %kfuse run %s --io x.kfio --atol '' 2>&1 | FileCheck %s --check-prefix=ATOL-EMPTY
// RUN: not %kfuse run %s --io x.kfio --rtol -1 2>&1 | FileCheck %s --check-prefix=RTOL-NEG
// RUN: not %kfuse run m.so --io x.kfio --rtol nan 2>&1 | FileCheck %s --check-prefix=RTOL-NAN
// RUN: not %kfuse bench m.so --iters 1e9 2>&1 | FileCheck %s --check-prefix=ITERS-EXP
// RUN: not %kfuse bench m.so --iters 0 2>&1 | FileCheck %s --check-prefix=ITERS-0
// RUN: not %kfuse bench m.so --iters 99999999999999999999 2>&1 | FileCheck %s --check-prefix=ITERS-BIG
// RUN: not %kfuse bench m.so --iters 12x 2>&1 | FileCheck %s --check-prefix=ITERS-JUNK
// RUN: not %kfuse bench m.so --warmup -1 2>&1 | FileCheck %s --check-prefix=WARMUP-NEG
//
// Usage errors exit 2, not 1:
// RUN: sh -c '%kfuse bench m.so --iters 1e9 2>/dev/null; test $? -eq 2'
// RUN: sh -c '%kfuse compile %s -o 2>/dev/null; test $? -eq 2'
// RUN: sh -c '%kfuse info %s --bogus 2>/dev/null; test $? -eq 2'
// RUN: sh -c '%kfuse run %s --io x.kfio --atol nan 2>/dev/null; test $? -eq 2'

// HELP-INFO: usage: kfuse info MODEL [-p PIPELINE] [--no-ir]
// HELP-INFO-NEXT: load MODEL
// HELP-OPT: usage: kfuse opt FILE
// HELP-EXEC: usage: kfuse run MODEL --io FILE.kfio
// HELP-EXEC: usage: kfuse run MODULE.so --io FILE.kfio
// HELP-PART: usage: kfuse partition MODEL
// HELP-COMPILE: usage: kfuse compile MODEL -o OUT.so
// HELP-COMPILE: --kernel-option forces
// HELP-BENCH: usage: kfuse bench MODULE.so [--iters N] [--warmup N] [--graph]
// HELP-OPS: usage: kfuse ops [--aten]
// HELP-VERSION: usage: kfuse version

// UNK-INFO: kfuse: error: info: unknown option '--bogus'
// UNK-INFO-NEXT: usage: kfuse info MODEL
// UNK-OPT: kfuse: error: opt: unknown option '--bogus'
// UNK-EXEC: kfuse: error: run: unknown option '--bogus'
// UNK-PART: kfuse: error: partition: unknown option '--bogus'
// UNK-COMPILE: kfuse: error: compile: unknown option '--bogus'
// UNK-COMPILE-NEXT: usage: kfuse compile MODEL -o OUT.so
// UNK-BENCH: kfuse: error: bench: unknown option '--bogus'
// UNK-OPS: kfuse: error: ops: unknown option '--bogus'
// VERSION-ARG: kfuse: error: version: takes no argument ('extra')

// NEEDS-O: kfuse: error: compile: option -o needs a value
// NEEDS-REPORT: kfuse: error: compile: option --report needs a value
// NEEDS-P: kfuse: error: opt: option -p needs a value
// NEEDS-IO: kfuse: error: run: option --io needs a value
// NEEDS-PREC: kfuse: error: partition: option --precision needs a value
// NEEDS-ITERS: kfuse: error: bench: option --iters needs a value
// NO-O: kfuse: error: compile: -o OUT.so is required

// ATOL-NAN: kfuse: error: run: --atol 'nan': expected a finite number, at least 0
// ATOL-INF: kfuse: error: run: --atol 'inf': expected a finite number, at least 0
// ATOL-BIG: kfuse: error: run: --atol '1e999': expected a finite number, at least 0
// ATOL-JUNK: kfuse: error: run: --atol '0.1x': expected a finite number, at least 0
// ATOL-EMPTY: kfuse: error: run: --atol '': expected a finite number, at least 0
// RTOL-NEG: kfuse: error: run: --rtol '-1': expected a finite number, at least 0
// RTOL-NAN: kfuse: error: run: --rtol 'nan': expected a finite number, at least 0
// ITERS-EXP: kfuse: error: bench: --iters '1e9': expected a whole number from 1 to 1000000
// ITERS-0: kfuse: error: bench: --iters '0': expected a whole number from 1 to 1000000
// ITERS-BIG: kfuse: error: bench: --iters '99999999999999999999': expected a whole number from 1 to 1000000
// ITERS-JUNK: kfuse: error: bench: --iters '12x': expected a whole number from 1 to 1000000
// WARMUP-NEG: kfuse: error: bench: --warmup '-1': expected a whole number from 0 to 1000000

"builtin.module"() ({
  "func.func"() <{arg_attrs = [{kf.name = "x"}], function_type = (tensor<2xf32>) -> (tensor<2xf32>), sym_name = "cli"}> ({
  ^bb0(%x: tensor<2xf32>):
    %a = "kf.relu"(%x) : (tensor<2xf32>) -> tensor<2xf32> loc("a")
    "func.return"(%a) : (tensor<2xf32>) -> ()
  }) : () -> ()
}) : () -> ()
