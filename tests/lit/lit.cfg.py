# tests/lit/lit.cfg.py — lit configuration for kfuse's IR tests.
#
# Tests are MLIR generic-form files (kfuse IR, what `kfuse opt` prints) with
# RUN lines; FileCheck, not and split-file come from LLVM 22's tools
# (llvm-22-tools). tests/CMakeLists.txt runs each file as one ctest:
#   lit -v --param kfuse=build/kfuse --param llvm_bin=/usr/lib/llvm-22/bin
#          --param exec_root=build/tests/lit/NAME tests/lit/NAME.mlir
# Substitutions: %kfuse (the tool), %fixtures (tests/fixtures).
import os

import lit.formats

config.name = "kfuse"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir"]
config.test_source_root = os.path.dirname(os.path.abspath(__file__))

params = lit_config.params
kfuse = params.get("kfuse")
if not kfuse or not os.access(kfuse, os.X_OK):
    lit_config.fatal("pass --param kfuse=PATH to the built kfuse tool")
llvm_bin = params.get("llvm_bin", "/usr/lib/llvm-22/bin")
for tool in ("FileCheck", "not", "split-file", "mlir-opt"):
    if not os.access(os.path.join(llvm_bin, tool), os.X_OK):
        lit_config.fatal(f"{tool} not found in {llvm_bin} (Debian: llvm-22-tools)")
config.test_exec_root = params.get(
    "exec_root", os.path.join(os.path.dirname(os.path.abspath(kfuse)), "tests", "lit"))

# Pin the LLVM 22 tools: an older FileCheck on PATH would accept other syntax.
for tool in ("FileCheck", "split-file", "mlir-opt", "not"):
    config.substitutions.append(
        (r"(?<![\w/.%-])" + tool + r"(?![\w.-])", os.path.join(llvm_bin, tool)))
config.substitutions.append(("%kfuse", kfuse))
config.substitutions.append(
    ("%fixtures", params.get("fixtures", os.path.join(config.test_source_root, "..", "fixtures"))))
config.environment["PATH"] = os.pathsep.join([llvm_bin, os.environ.get("PATH", "")])
# Sanitizer builds: keep their settings, and fail on leaks.
for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
