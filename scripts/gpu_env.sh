# scripts/gpu_env.sh — sourced by the GPU scripts (run from the repository
# root on the GPU machine); defines:
#   kfuse_bin WORK  the portable kfuse's absolute path: dist/kfuse-portable
#                   when it is there, else the tarball scripts/portable.sh
#                   makes, extracted into WORK; non-zero when neither is
#   cudnn_dir       the directory of cuDNN 9 (libcudnn.so.9*): the
#                   nvidia-cudnn pip package PyTorch depends on, else
#                   torch's own lib directory; prints nothing when neither
#                   has it (modules with convolutions load it at create)
kfuse_bin() {
  local k=dist/kfuse-portable/bin/kfuse
  if [ ! -x "$k" ]; then
    tar -C "$1" -xJf dist/kfuse-portable-x86_64.tar.xz || return 1
    k="$1/kfuse-portable/bin/kfuse"
  fi
  echo "$(cd "$(dirname "$k")" && pwd)/$(basename "$k")"
}

cudnn_dir() {
  python3 - <<'PY' 2>/dev/null
import glob, os
try:
    import nvidia.cudnn as c
    for p in list(getattr(c, "__path__", [])):
        if glob.glob(os.path.join(p, "lib", "libcudnn.so.9*")):
            print(os.path.join(p, "lib")); raise SystemExit
except ImportError:
    pass
import torch
d = os.path.join(os.path.dirname(torch.__file__), "lib")
if glob.glob(os.path.join(d, "libcudnn.so.9*")):
    print(d)
PY
}
