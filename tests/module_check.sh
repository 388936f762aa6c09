#!/usr/bin/env bash
# tests/module_check.sh KFUSE MODEL OUTDIR [obj]
# CI has no GPU, so this checks what a compiled module is, not what it
# computes (scripts/gpu_test.sh does that on the GPU machine):
#   so:  `kfuse compile` succeeds; the module exports exactly the module API
#        and binds its own symbols (DF_SYMBOLIC); it needs nothing beyond
#        libc at load time; the weights sidecar exists
#        and the report says the kernels were not verified here; the
#        whole-module check (the CPU emulation here) passed without a
#        fallback, or the report says why it did not run; with
#        KFUSE_CREATE_CHECK and KFUSE_LIBCUDA (tests/fake), the module is
#        created and run once on the fake CUDA driver, cuBLASLt and cuDNN.
#   obj: `--emit obj` writes an object and a header; a C program using the
#        header compiles and links against libkfuse_runtime.a.
set -euo pipefail
k=$1 model=$2 dir=$3 mode=${4:-so}
mkdir -p "$dir"
fail() { echo "module_check: $*" >&2; exit 1; }
if [ "$mode" = so ]; then
  # compiled as on a machine without a GPU (the fake driver is for the
  # create and run below; the module check's worker would take it for a GPU)
  env -u KFUSE_LIBCUDA "$k" compile "$model" -o "$dir/m.so" -q --report "$dir/r.json"
  want="kfuse_last_error kfuse_model_check kfuse_model_create kfuse_model_debug_arena kfuse_model_debug_run kfuse_model_destroy kfuse_model_error kfuse_model_input_info kfuse_model_num_inputs kfuse_model_num_outputs kfuse_model_output_info kfuse_model_run kfuse_options_init"
  got=$(nm -D --defined-only "$dir/m.so" | awk 'NF == 3 { print $3 }' | sort | tr '\n' ' ' | sed 's/ $//')
  [ "$got" = "$want" ] || fail "exports are '$got', expected '$want'"
  # its own references bind to its own copy of the runtime, never to
  # another module's (docs/DEPLOY.md, "Symbols")
  readelf -d "$dir/m.so" | grep -q '(FLAGS).*SYMBOLIC' || fail "the module is not linked -Bsymbolic (no DF_SYMBOLIC)"
  needed=$(readelf -d "$dir/m.so" | awk '/NEEDED/ { print $5 }' | tr -d '[]' | sort | tr '\n' ' ')
  for n in $needed; do
    case $n in libc.so.6|ld-linux-x86-64.so.2|libdl.so.2|libpthread.so.0) ;;
      *) fail "the module needs $n at load time";;
    esac
  done
  [ -s "$dir/m.so.weights" ] || [ "$(python3 -c "import json;print(json.load(open('$dir/r.json'))['weights_bytes'])")" = 0 ] \
    || fail "no weights sidecar"
  grep -q '"verified":[[:space:]]*false' "$dir/r.json" || fail "the report must say the kernels were not verified"
  # the whole-module check: here (no GPU) the CPU emulation against the
  # fp64 interpreter, which must have run and passed without a fallback;
  # only a model over the emulation's size limit may go unchecked
  mc=$(python3 -c "
import json, sys
m = json.load(open(sys.argv[1]))['module_check']
if m.get('checked'):
    cpu = 'CPU' in m.get('device', '')
    print('ok' if cpu and m.get('passed') and not m.get('fallback') else 'FAILED on %r: %s (fallback %r)' % (m.get('device'), m.get('first_failure') or m.get('failure'), m.get('fallback')))
else:
    print('ok' if 'KFUSE_MODULE_CHECK_CPU_LIMIT' in m.get('why', '') else 'not checked: %s' % m.get('why'))" "$dir/r.json")
  [ "$mc" = ok ] || fail "module check: $mc"
  # create and run once on the fake CUDA driver, cuBLASLt and cuDNN
  # (tests/fake, one library): the weights file checks out, every launch's
  # arguments match the parameters its cubin declares, GEMM and CONV steps
  # are prepared (searches included) and run, and the run launches every
  # kernel step of the plan
  if [ -n "${KFUSE_CREATE_CHECK:-}" ]; then
    launches=$(python3 -c "import json;print(json.load(open('$dir/r.json'))['steps_per_run']['launches'])")
    out=$(KFUSE_CUBLASLT="$KFUSE_LIBCUDA" KFUSE_CUDNN_LIBRARY="$KFUSE_LIBCUDA" \
      "$KFUSE_CREATE_CHECK" "$dir/m.so" --expect-ok 2>&1) || fail "create on the fake driver: $out"
    case $out in *" launches=$launches:"*) ;; *) fail "the run did not launch the plan's $launches kernels: $out";; esac
    if [ "$launches" != 0 ]; then
      case $out in *"param_queries=0 "*) fail "no launch was checked against its kernel: $out";; esac
    fi
  fi
else
  "$k" compile "$model" -o "$dir/m.o" --emit obj --prefix mymodel -q
  [ -s "$dir/m.h" ] || fail "no header next to the object"
  cat > "$dir/main.c" <<'C'
#include "m.h"
#include <stdio.h>
int main(void) {
  kfuse_options o;
  kfuse_options_init(&o);
  kfuse_model *m = NULL;
  int rc = mymodel_create(&o, &m); /* fails cleanly without a GPU */
  if (rc == 0) kfuse_model_destroy(m);
  else printf("create: %d %s\n", rc, kfuse_last_error());
  return 0;
}
C
  rt="$(dirname "$k")/libkfuse_runtime.a"
  # KFUSE_TEST_LDFLAGS: the sanitizer runtimes when the tree is built with them
  # shellcheck disable=SC2086
  cc -std=c11 -Wall -Werror -I"$dir" "$dir/main.c" "$dir/m.o" "$rt" -ldl -lpthread ${KFUSE_TEST_LDFLAGS:-} -o "$dir/main"
  "$dir/main"
fi
echo "module_check: ok ($mode)"
