/* tests/fake/create_check.c — create (and run once) a compiled module on the
 * fake CUDA driver (tests/fake/fake_cuda.c, named by KFUSE_LIBCUDA).
 *
 *   create_check MODULE.so [--expect-ok]
 *
 * Create reads the module's weights file and checks it against the plan,
 * and checks every launch's arguments against the parameters the kernel's
 * cubin declares, as a GPU's driver would report them. Steps that need
 * cuBLASLt or cuDNN are prepared only when KFUSE_CUBLASLT and
 * KFUSE_CUDNN_LIBRARY name the fake library too (module_check.sh does);
 * otherwise create may end there with KFUSE_ELIBRARY, after those checks.
 * Prints one line:
 *
 *   create_check: rc=R param_queries=Q launches=L: MESSAGE
 *
 * Exit status 0 when create succeeded (and one run did), or failed with
 * KFUSE_ELIBRARY and --expect-ok is not given; 1 otherwise. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fake_cuda.h"
#include "kfuse_runtime.h"

/* bytes of a contiguous tensor */
static size_t tensor_bytes(const kfuse_tensor_info *t) {
  static const size_t es[] = {0, 4, 8, 2, 2, 8, 4, 2, 1, 1, 1}; /* KFUSE_DTYPE_* */
  size_t n = t->dtype > 0 && t->dtype <= 10 ? es[t->dtype] : 8;
  for (int r = 0; r < t->rank && r < 8; r++)
    n *= (size_t)t->shape[r];
  return n;
}

#define SYM(h, var, name)                                                    \
  do {                                                                       \
    *(void **)&(var) = dlsym((h), (name));                                   \
    if (!(var)) {                                                            \
      fprintf(stderr, "create_check: no %s in %s\n", (name), argv[1]);       \
      return 1;                                                              \
    }                                                                        \
  } while (0)

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: create_check MODULE.so [--expect-ok]\n");
    return 2;
  }
  int expect_ok = argc > 2 && strcmp(argv[2], "--expect-ok") == 0;
  const char *fake = getenv("KFUSE_LIBCUDA");
  void *fh = fake ? dlopen(fake, RTLD_NOW | RTLD_LOCAL) : NULL;
  fake_cuda_stats_fn stats = NULL;
  if (fh)
    *(void **)&stats = dlsym(fh, "fake_cuda_stats");
  if (!stats) {
    fprintf(stderr, "create_check: KFUSE_LIBCUDA must name the fake driver\n");
    return 1;
  }
  char path[4096];
  snprintf(path, sizeof path, "%s%s", strchr(argv[1], '/') ? "" : "./", argv[1]);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "create_check: %s\n", dlerror());
    return 1;
  }
  int (*create)(const kfuse_options *, kfuse_model **);
  int (*run)(kfuse_model *, void *, const void *const *, void *const *);
  void (*destroy)(kfuse_model *);
  int (*num_in)(const kfuse_model *), (*num_out)(const kfuse_model *);
  int (*in_info)(const kfuse_model *, int, kfuse_tensor_info *);
  int (*out_info)(const kfuse_model *, int, kfuse_tensor_info *);
  const char *(*err)(const kfuse_model *);
  const char *(*last)(void);
  void (*init)(kfuse_options *);
  SYM(h, create, "kfuse_model_create");
  SYM(h, run, "kfuse_model_run");
  SYM(h, destroy, "kfuse_model_destroy");
  SYM(h, num_in, "kfuse_model_num_inputs");
  SYM(h, num_out, "kfuse_model_num_outputs");
  SYM(h, in_info, "kfuse_model_input_info");
  SYM(h, out_info, "kfuse_model_output_info");
  SYM(h, err, "kfuse_model_error");
  SYM(h, last, "kfuse_last_error");
  SYM(h, init, "kfuse_options_init");

  kfuse_options o;
  init(&o);
  kfuse_model *m = NULL;
  int rc = create(&o, &m);
  char msg[1024];
  snprintf(msg, sizeof msg, "%s", rc ? last() : "");
  if (rc == 0) {
    /* the fake's device memory is host memory: each tensor gets its real
     * size (the fake performs the run's copies, and run refuses outputs
     * overlapping inputs); kernels are not executed */
    int ni = num_in(m), no = num_out(m);
    void **io = calloc((size_t)(ni + no + 1), sizeof *io);
    rc = io ? KFUSE_OK : KFUSE_ENOMEM;
    for (int i = 0; io && i < ni + no && !rc; i++) {
      kfuse_tensor_info t;
      if ((rc = i < ni ? in_info(m, i, &t) : out_info(m, i - ni, &t)) != 0)
        break;
      size_t n = tensor_bytes(&t);
      if (!(io[i] = calloc(1, n ? n : 1)))
        rc = KFUSE_ENOMEM;
    }
    if (!rc)
      rc = run(m, NULL, (const void *const *)io, io + ni);
    if (rc)
      snprintf(msg, sizeof msg, "run: %s", err(m));
    for (int i = 0; io && i < ni + no; i++)
      free(io[i]);
    free(io);
    destroy(m);
  }
  fake_stats s;
  stats(&s);
  printf("create_check: rc=%d param_queries=%ld launches=%ld: %s\n", rc,
         s.param_queries, s.launches, msg);
  return rc == 0 || (rc == KFUSE_ELIBRARY && !expect_ok) ? 0 : 1;
}
