/* examples/cmake/main.c — a C program that links a model compiled by kfuse
 * (examples/resnet_block.pt2) and runs it once on deterministic input.
 *
 * Built by examples/cmake/CMakeLists.txt (kfuse_add_model: an object
 * module, <prefix>_create in resnet_block.h) or examples/make/Makefile (a
 * shared module, kfuse_model_create; -DKFUSE_SHARED_MODULE). It creates
 * the model, copies an input to the GPU, runs the model, prints a checksum
 * of the output and the run time, and destroys the model. Without a GPU,
 * create fails with the runtime's message and the program exits with 1.
 *
 * The runtime loads the CUDA driver itself; this program needs it only for
 * device memory, and opens it the same way (dlopen + cuGetProcAddress), so
 * it builds without the CUDA toolkit. KFUSE_LIBCUDA=path picks the driver
 * library, as for the runtime (docs/DEPLOY.md). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef KFUSE_SHARED_MODULE
#include "kfuse_runtime.h"
/* a shared module (kfuse compile -o resnet_block.so) exports this */
int kfuse_model_create(const kfuse_options *opts, kfuse_model **out);
#define MODEL_CREATE kfuse_model_create
#else
#include "resnet_block.h" /* written by kfuse compile --emit obj --prefix resnet_block */
#define MODEL_CREATE resnet_block_create
#endif

/* the few driver calls used here, typed without cuda.h */
typedef int cu_result;
typedef unsigned long long cu_ptr;
static struct {
  cu_result (*device_get)(int *, int);
  cu_result (*ctx_retain)(void **, int);
  cu_result (*ctx_release)(int);
  cu_result (*ctx_push)(void *);
  cu_result (*ctx_pop)(void **);
  cu_result (*ctx_sync)(void);
  cu_result (*alloc)(cu_ptr *, size_t);
  cu_result (*free_)(cu_ptr);
  cu_result (*htod)(cu_ptr, const void *, size_t);
  cu_result (*dtoh)(void *, cu_ptr, size_t);
} cu;

static int load_driver(void) {
  const char *lib = getenv("KFUSE_LIBCUDA");
  void *h = dlopen(lib && *lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return -1;
  cu_result (*getproc)(const char *, void **, int, uint64_t, int *);
  *(void **)&getproc = dlsym(h, "cuGetProcAddress_v2");
  if (!getproc)
    return -1;
  struct {
    const char *name;
    void **fn;
  } want[] = {
      {"cuDeviceGet", (void **)&cu.device_get},
      {"cuDevicePrimaryCtxRetain", (void **)&cu.ctx_retain},
      {"cuDevicePrimaryCtxRelease", (void **)&cu.ctx_release},
      {"cuCtxPushCurrent", (void **)&cu.ctx_push},
      {"cuCtxPopCurrent", (void **)&cu.ctx_pop},
      {"cuCtxSynchronize", (void **)&cu.ctx_sync},
      {"cuMemAlloc", (void **)&cu.alloc},
      {"cuMemFree", (void **)&cu.free_},
      {"cuMemcpyHtoD", (void **)&cu.htod},
      {"cuMemcpyDtoH", (void **)&cu.dtoh},
  };
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    int found = 0;
    if (getproc(want[i].name, want[i].fn, 12000, 0, &found) != 0 || !*want[i].fn)
      return -1;
  }
  return 0;
}

static size_t elements(const kfuse_tensor_info *t) {
  size_t n = 1;
  for (int r = 0; r < t->rank; r++)
    n *= (size_t)t->shape[r];
  return n;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(void) {
  int status = 1;
  kfuse_options o;
  kfuse_options_init(&o);
  kfuse_model *m = NULL;
  void *ctx = NULL;
  int pushed = 0;
  cu_ptr din = 0, dout = 0;
  float *in = NULL, *out = NULL;

  int rc = MODEL_CREATE(&o, &m);
  if (rc != KFUSE_OK) {
    fprintf(stderr, "resnet_block: cannot create the model (error %d): %s\n", rc, kfuse_last_error());
    return 1;
  }
  kfuse_tensor_info ti, to;
  if (kfuse_model_num_inputs(m) != 1 || kfuse_model_num_outputs(m) != 1 ||
      kfuse_model_input_info(m, 0, &ti) || kfuse_model_output_info(m, 0, &to) ||
      ti.dtype != KFUSE_DTYPE_F32 || to.dtype != KFUSE_DTYPE_F32) {
    fprintf(stderr, "resnet_block: expected one float32 input and output\n");
    goto done;
  }
  size_t ni = elements(&ti), no = elements(&to);
  in = malloc(ni * sizeof *in);
  out = calloc(no, sizeof *out);
  if (!in || !out) {
    fprintf(stderr, "resnet_block: out of memory\n");
    goto done;
  }
  for (size_t i = 0; i < ni; i++) /* deterministic input in [-1, 1) */
    in[i] = (float)((int)((i * 2654435761u) % 2001u) - 1000) / 1000.0f;

  int dev = 0;
  if (load_driver() != 0 || cu.device_get(&dev, o.device) || cu.ctx_retain(&ctx, dev) ||
      cu.ctx_push(ctx)) {
    fprintf(stderr, "resnet_block: cannot use the CUDA driver for the input buffers\n");
    goto done;
  }
  pushed = 1;
  if (cu.alloc(&din, ni * sizeof *in) || cu.alloc(&dout, no * sizeof *out) ||
      cu.htod(din, in, ni * sizeof *in)) {
    fprintf(stderr, "resnet_block: cannot allocate or fill device memory\n");
    goto done;
  }
  const void *inputs[1] = {(const void *)(uintptr_t)din};
  void *outputs[1] = {(void *)(uintptr_t)dout};
  /* the first run warms up (cuBLASLt/cuDNN workspaces); the second is timed */
  double t = 0;
  for (int k = 0; k < 2; k++) {
    t = now_s();
    rc = kfuse_model_run(m, NULL, inputs, outputs);
    if (rc == KFUSE_OK && cu.ctx_sync())
      rc = KFUSE_ECUDA;
    t = now_s() - t;
    if (rc != KFUSE_OK) {
      fprintf(stderr, "resnet_block: run failed (error %d): %s\n", rc, kfuse_model_error(m));
      goto done;
    }
  }
  if (cu.dtoh(out, dout, no * sizeof *out)) {
    fprintf(stderr, "resnet_block: cannot copy the output back\n");
    goto done;
  }
  double sum = 0, asum = 0;
  for (size_t i = 0; i < no; i++) {
    sum += out[i];
    asum += out[i] < 0 ? -out[i] : out[i];
  }
  printf("resnet_block: output %s [", to.name ? to.name : "0");
  for (int r = 0; r < to.rank; r++)
    printf("%s%lld", r ? "x" : "", (long long)to.shape[r]);
  printf("] sum %.6f abs-sum %.6f, run %.3f ms\n", sum, asum, t * 1e3);
  status = 0;

done:
  if (din)
    cu.free_(din);
  if (dout)
    cu.free_(dout);
  if (pushed)
    cu.ctx_pop(&ctx);
  kfuse_model_destroy(m); /* before the context is released */
  if (ctx)
    cu.ctx_release(dev);
  free(in);
  free(out);
  return status;
}
