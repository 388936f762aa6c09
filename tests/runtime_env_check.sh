#!/usr/bin/env bash
# tests/runtime_env_check.sh RUNTIME_DIR
# The runtime reads its environment only through secure_getenv: a module
# loaded into a set-user-ID or set-group-ID program must not let the
# unprivileged caller choose the libraries it opens (KFUSE_LIBCUDA,
# KFUSE_CUBLASLT, KFUSE_CUDNN_LIBRARY, CUDA_HOME, ...). Fails naming every
# plain getenv call in runtime/.
set -uo pipefail
dir=$1
hits=$(grep -nE '(^|[^_[:alnum:]])getenv[[:space:]]*\(' "$dir"/*.c "$dir"/*.h)
if [ -n "$hits" ]; then
  echo "runtime_env_check: the runtime must use secure_getenv, not getenv:"
  echo "$hits"
  exit 1
fi
n=$(grep -cE 'secure_getenv[[:space:]]*\(' "$dir"/*.c | awk -F: '{ s += $2 } END { print s }')
echo "runtime_env_check: ok ($n secure_getenv calls, no getenv)"
