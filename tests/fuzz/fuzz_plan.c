/* tests/fuzz/fuzz_plan.c — libFuzzer target: the runtime's plan validator
 * (runtime/kfr_validate.c), the only code that reads a module's plan before
 * trusting it. Random bytes almost never get past the magic, so each input
 * is a patch on a well-formed plan built once with the plan writer: the
 * first two bytes pick how much of the plan to keep (from 0 to all of it),
 * the rest are XORed over the plan from the start. The checked copy is
 * exactly as long as the plan claims to be given, so ASan flags any read
 * outside it. Needs no seeds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kfr_plan_writer.h"
#include "kfuse_runtime.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void *good;
static size_t good_bytes;

/* A plan with every record kind: inputs, output, arena, weight, const,
 * an ELF-looking module, a kernel, launch, GEMM, memset and copy steps. */
static void build(void) {
  static uint8_t cubin[128];
  memcpy(cubin, "\177ELF", 4);
  cubin[4] = 2, cubin[5] = 1;
  kfr_writer *w = kfr_writer_create(90);
  if (!w)
    abort();
  kfr_writer_set_model_name(w, "fuzz");
  kfr_writer_set_arena(w, 4096);
  kfr_writer_set_weights_file(w, "fuzz.weights", 1024, 0, 0);
  kfr_tensor_desc d48, d43;
  kfr_tensor_desc_init(&d48, KFUSE_DTYPE_F32, 2, (int64_t[]){4, 8});
  kfr_tensor_desc_init(&d43, KFUSE_DTYPE_F32, 2, (int64_t[]){4, 3});
  uint32_t x = kfr_writer_input(w, 0, "x", &d48);
  uint32_t out = kfr_writer_output(w, 0, "out", &d43);
  uint32_t t = kfr_writer_arena(w, 0, 128, "t", &d48);
  uint32_t ws = kfr_writer_arena(w, 1024, 1024, "ws", NULL);
  uint32_t wt = kfr_writer_weight(w, 64, 96, "w", NULL);
  static const float bias[3] = {1, 2, 3};
  uint32_t b = kfr_writer_const(w, bias, sizeof bias, "b", NULL);
  uint32_t mod = kfr_writer_module(w, cubin, sizeof cubin);
  uint32_t k = kfr_writer_kernel(w, mod, "k", 0);
  kfr_writer_launch(w, k, (uint32_t[]){1, 1, 1}, (uint32_t[]){32, 1, 1}, 0, "l");
  kfr_writer_arg_ptr(w, x, 0);
  kfr_writer_arg_ptr(w, t, 0);
  kfr_writer_arg_i32(w, 3);
  kfr_writer_arg_f64(w, 0.5);
  kfr_gemm g;
  memset(&g, 0, sizeof g);
  g.m = 4, g.n = 3, g.k = 8, g.batch = 1;
  g.lda = 8, g.ldb = 3, g.ldc = 3, g.ldd = 3;
  g.dtype = KFUSE_DTYPE_F32, g.compute = KFR_COMPUTE_32F;
  g.epilogue = KFR_EPI_BIAS, g.alpha = 1;
  g.workspace_bytes = 1024;
  kfr_writer_gemm(w, &g, "g");
  kfr_writer_arg_ptr(w, t, 0);
  kfr_writer_arg_ptr(w, wt, 0);
  kfr_writer_arg_none(w);
  kfr_writer_arg_ptr(w, out, 0);
  kfr_writer_arg_ptr(w, b, 0);
  kfr_writer_arg_ptr(w, ws, 0);
  kfr_writer_memset(w, "m", t, 0, 64);
  kfr_writer_copy(w, "c", out, 0, t, 0, 48);
  char msg[256];
  if (kfr_writer_finish(w, &good, &good_bytes, msg, sizeof msg) != KFUSE_OK)
    abort();
  kfr_writer_destroy(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (!good)
    build();
  size_t n = good_bytes;
  if (size >= 2) {
    n = ((size_t)data[0] | (size_t)data[1] << 8) % (good_bytes + 1);
    data += 2, size -= 2;
  }
  uint8_t *p = malloc(n ? n : 1);
  if (!p)
    return 0;
  memcpy(p, good, n);
  for (size_t i = 0; i < size && i < n; i++)
    p[i] ^= data[i];
  char msg[128];
  int rc = kfr_plan_check(p, n, msg, sizeof msg);
  if (rc != KFUSE_OK && rc != KFUSE_EPLAN)
    abort();
  if (strlen(msg) >= sizeof msg)
    abort();
  free(p);
  return 0;
}
