/* tests/gpu/runtime_smoke.c — the runtime (runtime/) on a real GPU.
 *
 *   runtime_smoke KERNELS.cubin SM
 *
 * KERNELS.cubin is tests/gpu/smoke_kernels.cu compiled by nvcc for sm_SM
 * (scripts/gpu_runtime_smoke.sh does both and runs this). Plans are built
 * with the plan writer, run through the public API (kfr_model_create,
 * kfuse_model_run, ...) and checked against results computed here on the
 * CPU: launches with every argument kind, weights from a file and embedded,
 * constants, dynamic shared memory over 48 KiB, GEMMs through cuBLASLt
 * (all four transpose combinations, every epilogue, batches, broadcast and
 * misaligned operands, fp64) against an fp64 reference, memset and copy
 * steps, CUDA-graph replay with new pointers on every run, two threads
 * sharing one instance, and the error paths (wrong architecture, missing
 * kernel, corrupt cubin, launch failure, bad arguments, weights files).
 *
 * Prints one PASS or FAIL line per check (UNSUPPORTED where cuBLASLt has no
 * algorithm for a GEMM epilogue: a library limit the compiler must know
 * about, not a runtime fault) and exits 1 if any check failed. Needs
 * only libc, libdl, libpthread and the CUDA headers: the driver and
 * cuBLASLt are loaded at run time, as in a module. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kfr_hash.h"
#include "kfr_int.h"
#include "kfr_plan_writer.h"

static const kfr_driver *cu;
static CUcontext ctx;
static void *cubin;
static size_t cubin_bytes;
static uint32_t sm;
static int major_cc, minor_cc;
static char tmpdir[256];
static int n_pass, n_fail, n_unsupported;

/* ---- reporting ------------------------------------------------------------- */

static int result(const char *name, int ok) {
  printf("%s %s\n", ok ? "PASS" : "FAIL", name);
  fflush(stdout);
  if (ok)
    n_pass++;
  else
    n_fail++;
  return ok;
}

static int say(const char *name, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Detail of a failure, printed before its FAIL line; returns 0. */
static int say(const char *name, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf("  %s: ", name);
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  return 0;
}

static int cu_ok(const char *name, CUresult r, const char *call) {
  if (r == CUDA_SUCCESS)
    return 1;
  char why[256];
  return say(name, "%s failed: %s", call, kfr_cu_describe(cu, r, why, sizeof why));
}

/* ---- device memory, all stream-ordered ------------------------------------ */

static CUdeviceptr dalloc(const char *name, size_t n) {
  CUdeviceptr d = 0;
  if (!cu_ok(name, cu->cuMemAlloc(&d, n ? n : 1), "cuMemAlloc"))
    return 0;
  return d;
}

static void dfree(CUdeviceptr d) {
  if (d)
    (void)cu->cuMemFree(d);
}

static int h2d(const char *name, CUstream s, CUdeviceptr d, const void *h,
               size_t n) {
  return cu_ok(name, cu->cuMemcpyHtoDAsync(d, h, n, s), "cuMemcpyHtoDAsync") &&
         cu_ok(name, cu->cuStreamSynchronize(s), "cuStreamSynchronize");
}

static int d2h(const char *name, CUstream s, void *h, CUdeviceptr d,
               size_t n) {
  return cu_ok(name, cu->cuMemcpyDtoHAsync(h, d, n, s), "cuMemcpyDtoHAsync") &&
         cu_ok(name, cu->cuStreamSynchronize(s), "cuStreamSynchronize");
}

static uint64_t rng_state = 88172645463325252ull;
static uint64_t next_u64(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}
static float uniform(uint64_t *s) { /* [-1, 1) */
  return (float)((double)(next_u64(s) >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}
static void fill(float *x, size_t n, uint64_t *s) {
  for (size_t i = 0; i < n; i++)
    x[i] = uniform(s);
}

static int run_sync(const char *name, kfuse_model *m, CUstream s,
                    const void *const *in, void *const *out) {
  int rc = kfuse_model_run(m, s, in, out);
  if (rc != KFUSE_OK)
    return say(name, "kfuse_model_run returned %d: %s", rc, kfuse_model_error(m));
  return cu_ok(name, cu->cuStreamSynchronize(s), "cuStreamSynchronize after run");
}

static int create(const char *name, void *plan, size_t bytes,
                  const kfuse_options *o, kfuse_model **m) {
  int rc = kfr_model_create(plan, bytes, o, m);
  if (rc != KFUSE_OK)
    return say(name, "kfr_model_create returned %d: %s", rc, kfuse_last_error());
  return 1;
}

static int finish(const char *name, kfr_writer *w, void **plan, size_t *bytes) {
  char msg[512];
  int rc = kfr_writer_finish(w, plan, bytes, msg, sizeof msg);
  kfr_writer_destroy(w);
  if (rc != KFUSE_OK)
    return say(name, "kfr_writer_finish returned %d: %s", rc, msg);
  return 1;
}

/* ---- element-wise plan: launches, weights, constants, arena ---------------- */

enum { WEIGHT_FILE_OFFSET = 4096 };

typedef struct ew {
  size_t n;
  float *w, *k;     /* the weight and the constant */
  uint8_t *image;   /* weights file contents */
  size_t image_bytes;
  char path[512];
} ew;

static int ew_init(const char *name, ew *e, size_t n) {
  memset(e, 0, sizeof *e);
  e->n = n;
  e->image_bytes = WEIGHT_FILE_OFFSET + n * 4;
  e->image = malloc(e->image_bytes);
  e->k = malloc(n * 4);
  if (!e->image || !e->k)
    return say(name, "out of host memory");
  uint64_t s = 12345;
  for (size_t i = 0; i < e->image_bytes; i++)
    e->image[i] = (uint8_t)next_u64(&s);
  e->w = (float *)(e->image + WEIGHT_FILE_OFFSET);
  fill(e->w, n, &s);
  fill(e->k, n, &s);
  snprintf(e->path, sizeof e->path, "%s/ew.weights", tmpdir);
  return 1;
}

/* e->path: the weights file of plan (its header names the plan's model id;
 * each plan built gets its own). */
static int ew_write(const char *name, const ew *e, const void *plan) {
  kfr_weights_header h;
  kfr_weights_header_fill(plan, &h);
  FILE *f = fopen(e->path, "wb");
  if (!f)
    return say(name, "cannot write %s", e->path);
  size_t wrote = fwrite(&h, 1, sizeof h, f);
  wrote += fwrite(e->image, 1, e->image_bytes, f);
  if (fclose(f) != 0 || wrote != sizeof h + e->image_bytes)
    return say(name, "cannot write %s", e->path);
  return 1;
}

static void ew_fini(ew *e) {
  free(e->image);
  free(e->k);
}

/* c = (a + b) * 2 + 0.5 + 3 + w + k. weights: 0 file (path recorded as
 * `path`; e->path is written for the plan), 1 embedded. */
static int ew_plan(const char *name, const ew *e, int embedded,
                   const char *path, uint32_t arch, const char *kernel0,
                   uint32_t block1, void **plan, size_t *bytes) {
  kfr_writer *w = kfr_writer_create(arch);
  if (!w)
    return say(name, "kfr_writer_create failed");
  size_t n = e->n;
  kfr_writer_set_model_name(w, "smoke_elementwise");
  kfr_writer_set_arena(w, (n * 4 + 255) & ~(size_t)255);
  if (embedded)
    kfr_writer_set_weights_embedded(w, e->image, e->image_bytes);
  else
    kfr_writer_set_weights_file(w, path, e->image_bytes,
                                kfr_xxh64(e->image, e->image_bytes, 0), 0);
  kfr_tensor_desc d;
  kfr_tensor_desc_init(&d, KFUSE_DTYPE_F32, 1, (int64_t[]){(int64_t)n});
  uint32_t a = kfr_writer_input(w, 0, "a", &d);
  uint32_t b = kfr_writer_input(w, 1, "b", &d);
  uint32_t c = kfr_writer_output(w, 0, "c", &d);
  uint32_t t = kfr_writer_arena(w, 0, n * 4, "t", &d);
  uint32_t wt = kfr_writer_weight(w, WEIGHT_FILE_OFFSET, n * 4, "w", &d);
  uint32_t k = kfr_writer_const(w, e->k, n * 4, "k", &d);
  uint32_t mod = kfr_writer_module(w, cubin, cubin_bytes);
  uint32_t vadd = kfr_writer_kernel(w, mod, kernel0, 0);
  uint32_t axpb = kfr_writer_kernel(w, mod, "axpb_f32", 0);
  uint32_t grid[3] = {(uint32_t)((n + 255) / 256), 1, 1};
  uint32_t grid1[3] = {(uint32_t)((n + block1 - 1) / block1), 1, 1};
  uint32_t blk[3] = {256, 1, 1}, blk1[3] = {block1, 1, 1};
  kfr_writer_launch(w, vadd, grid, blk, 0, "s0_vadd");
  kfr_writer_arg_ptr(w, a, 0);
  kfr_writer_arg_ptr(w, b, 0);
  kfr_writer_arg_ptr(w, t, 0);
  kfr_writer_arg_i64(w, (int64_t)n);
  kfr_writer_launch(w, axpb, grid1, blk1, 0, "s1_axpb");
  kfr_writer_arg_ptr(w, t, 0);
  kfr_writer_arg_ptr(w, c, 0);
  kfr_writer_arg_f32(w, 2.0f);
  kfr_writer_arg_f64(w, 0.5);
  kfr_writer_arg_i32(w, 3);
  kfr_writer_arg_i64(w, (int64_t)n);
  kfr_writer_launch(w, vadd, grid, blk, 0, "s2_add_weight");
  kfr_writer_arg_ptr(w, c, 0);
  kfr_writer_arg_ptr(w, wt, 0);
  kfr_writer_arg_ptr(w, c, 0);
  kfr_writer_arg_i64(w, (int64_t)n);
  kfr_writer_launch(w, vadd, grid, blk, 0, "s3_add_const");
  kfr_writer_arg_ptr(w, c, 0);
  kfr_writer_arg_ptr(w, k, 0);
  kfr_writer_arg_ptr(w, c, 0);
  kfr_writer_arg_i64(w, (int64_t)n);
  return finish(name, w, plan, bytes) && (embedded || ew_write(name, e, *plan));
}

static float ew_ref(const ew *e, float a, float b, size_t i) {
  float t = a + b;
  float y = (float)((double)(t * 2.0f) + 0.5 + 3.0);
  y = y + e->w[i];
  return y + e->k[i];
}

/* One run on fresh buffers with fresh data; compares every element. */
static int ew_run_check(const char *name, const ew *e, kfuse_model *m,
                        CUstream s, uint64_t seed) {
  size_t n = e->n, nb = n * 4;
  int ok = 0;
  float *a = malloc(nb), *b = malloc(nb), *c = malloc(nb);
  CUdeviceptr da = dalloc(name, nb), db = dalloc(name, nb),
              dc = dalloc(name, nb);
  if (!a || !b || !c || !da || !db || !dc) {
    say(name, "allocation failed");
    goto done;
  }
  uint64_t st = seed;
  fill(a, n, &st);
  fill(b, n, &st);
  for (size_t i = 0; i < n; i++)
    c[i] = NAN;
  if (!h2d(name, s, da, a, nb) || !h2d(name, s, db, b, nb) ||
      !h2d(name, s, dc, c, nb))
    goto done;
  const void *in[2] = {(void *)(uintptr_t)da, (void *)(uintptr_t)db};
  void *out[1] = {(void *)(uintptr_t)dc};
  if (!run_sync(name, m, s, in, out) || !d2h(name, s, c, dc, nb))
    goto done;
  for (size_t i = 0; i < n; i++) {
    float want = ew_ref(e, a[i], b[i], i);
    if (!(fabsf(c[i] - want) <= 1e-6f * (1.0f + fabsf(want)))) {
      say(name, "element %zu is %.9g, expected %.9g", i, c[i], want);
      goto done;
    }
  }
  ok = 1;
done:
  free(a);
  free(b);
  free(c);
  dfree(da);
  dfree(db);
  dfree(dc);
  return ok;
}

static void test_launch(void) {
  const char *name = "launch: 4 kernels, every arg kind, arena, weights file, const";
  ew e;
  void *plan = NULL;
  size_t bytes;
  kfuse_model *m = NULL;
  CUstream s = NULL;
  int ok = ew_init(name, &e, 1000003) &&
           ew_plan(name, &e, 0, e.path, sm, "vadd_f32", 256, &plan, &bytes) &&
           create(name, plan, bytes, NULL, &m) &&
           cu_ok(name, cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING),
                 "cuStreamCreate") &&
           ew_run_check(name, &e, m, s, 1) && ew_run_check(name, &e, m, s, 2);
  /* the legacy default stream works too */
  ok = ok && ew_run_check(name, &e, m, NULL, 3);
  kfuse_tensor_info ti;
  if (ok) {
    ok = kfuse_model_num_inputs(m) == 2 && kfuse_model_num_outputs(m) == 1 &&
         kfuse_model_input_info(m, 1, &ti) == KFUSE_OK &&
         !strcmp(ti.name, "b") && ti.dtype == KFUSE_DTYPE_F32 && ti.rank == 1 &&
         ti.shape[0] == 1000003 && kfuse_model_output_info(m, 0, &ti) == 0 &&
         !strcmp(ti.name, "c") && kfuse_model_input_info(m, 2, &ti) == KFUSE_EARG;
    if (!ok)
      say(name, "input/output info is wrong");
  }
  result(name, ok);
  kfuse_model_destroy(m);
  m = NULL;
  free(plan);
  plan = NULL;

  name = "launch: embedded weights";
  ok = ew_plan(name, &e, 1, NULL, sm, "vadd_f32", 256, &plan, &bytes) &&
       create(name, plan, bytes, NULL, &m);
  /* the plan is not needed after create */
  if (ok) {
    memset(plan, 0xff, bytes);
    free(plan);
    plan = NULL;
  }
  ok = ok && ew_run_check(name, &e, m, s, 4);
  result(name, ok);
  kfuse_model_destroy(m);
  m = NULL;
  free(plan);
  plan = NULL;

  name = "launch: weights path from the options overrides the recorded one";
  kfuse_options o;
  kfuse_options_init(&o);
  o.weights_path = e.path;
  ok = ew_plan(name, &e, 0, "/nonexistent/ew.weights", sm, "vadd_f32", 256,
               &plan, &bytes) &&
       create(name, plan, bytes, &o, &m) && ew_run_check(name, &e, m, s, 5);
  result(name, ok);
  kfuse_model_destroy(m);
  m = NULL;
  free(plan);
  plan = NULL;

  name = "launch: a relative weights path (plan outside a module: working dir)";
  char cwd[1024];
  ok = getcwd(cwd, sizeof cwd) != NULL && chdir(tmpdir) == 0;
  if (!ok)
    say(name, "cannot change to %s", tmpdir);
  ok = ok &&
       ew_plan(name, &e, 0, "ew.weights", sm, "vadd_f32", 256, &plan, &bytes) &&
       create(name, plan, bytes, NULL, &m);
  if (chdir(cwd) != 0)
    ok = say(name, "cannot change back to %s", cwd);
  ok = ok && ew_run_check(name, &e, m, s, 6);
  result(name, ok);
  kfuse_model_destroy(m);
  m = NULL;
  free(plan);
  plan = NULL;

  name = "launch: a launch that fails (block over __launch_bounds__) is reported";
  ok = ew_plan(name, &e, 0, e.path, sm, "vadd_f32", 512, &plan, &bytes) &&
       create(name, plan, bytes, NULL, &m);
  if (ok) {
    /* the inputs may share memory (both are read); the output may not
     * (an output overlapping an input is refused before anything runs) */
    CUdeviceptr d = dalloc(name, e.n * 4), o = dalloc(name, e.n * 4);
    const void *in[2] = {(void *)(uintptr_t)d, (void *)(uintptr_t)d};
    void *out[1] = {(void *)(uintptr_t)o};
    int rc = kfuse_model_run(m, s, in, out);
    (void)cu->cuStreamSynchronize(s);
    const char *msg = kfuse_model_error(m);
    ok = d && o && rc == KFUSE_ECUDA && strstr(msg, "cuLaunchKernel") &&
         strstr(msg, "s1_axpb");
    if (!ok)
      say(name, "run returned %d: %s", rc, msg);
    /* NULL and misaligned pointers are refused before anything runs */
    in[0] = NULL;
    rc = kfuse_model_run(m, s, in, out);
    ok = ok && rc == KFUSE_EARG && strstr(kfuse_model_error(m), "input 0 (a) is NULL");
    if (rc != KFUSE_EARG)
      say(name, "NULL input: %d %s", rc, kfuse_model_error(m));
    in[0] = (void *)(uintptr_t)(d + 2);
    rc = kfuse_model_run(m, s, in, out);
    ok = ok && rc == KFUSE_EARG && strstr(kfuse_model_error(m), "not aligned");
    if (rc != KFUSE_EARG)
      say(name, "misaligned input: %d %s", rc, kfuse_model_error(m));
    ok = ok && kfuse_model_run(m, s, NULL, out) == KFUSE_EARG;
    dfree(d);
    dfree(o);
  }
  result(name, ok);
  kfuse_model_destroy(m);
  m = NULL;
  free(plan);
  plan = NULL;

  name = "create: missing kernel, corrupt cubin, bad device, weights files";
  ok = ew_plan(name, &e, 0, e.path, sm, "no_such_kernel", 256, &plan, &bytes);
  if (ok) {
    int rc = kfr_model_create(plan, bytes, NULL, &m);
    const char *msg = kfuse_last_error();
    if (rc != KFUSE_ECUDA || !strstr(msg, "cuModuleGetFunction") ||
        !strstr(msg, "no_such_kernel"))
      ok = say(name, "missing kernel: %d %s", rc, msg);
    kfuse_model_destroy(m);
    m = NULL;
    /* make the cubin claim another machine (e_machine); its header tables
     * stay valid, so the driver reads nothing outside it */
    kfr_header *h = plan;
    kfr_module *md = (kfr_module *)((uint8_t *)plan + h->off_modules);
    memset((uint8_t *)plan + md->offset + 18, 0x5a, 2);
    rc = kfr_model_create(plan, bytes, NULL, &m);
    msg = kfuse_last_error();
    if (rc == KFUSE_OK || !strstr(msg, "cuModuleLoadDataEx"))
      ok = say(name, "corrupt cubin: %d %s", rc, msg);
    kfuse_model_destroy(m);
    m = NULL;
    free(plan);
    plan = NULL;
  }
  if (ok &&
      ew_plan(name, &e, 0, e.path, sm, "vadd_f32", 256, &plan, &bytes)) {
    kfuse_options_init(&o);
    o.device = 99;
    int rc = kfr_model_create(plan, bytes, &o, &m);
    if (rc != KFUSE_EARG || !strstr(kfuse_last_error(), "device 99"))
      ok = say(name, "device 99: %d %s", rc, kfuse_last_error());
    kfuse_model_destroy(m);
    m = NULL;
    kfuse_options_init(&o);
    char missing[600];
    snprintf(missing, sizeof missing, "%s/missing.weights", tmpdir);
    o.weights_path = missing;
    rc = kfr_model_create(plan, bytes, &o, &m);
    if (rc != KFUSE_EWEIGHTS || !strstr(kfuse_last_error(), missing))
      ok = say(name, "missing weights: %d %s", rc, kfuse_last_error());
    kfuse_model_destroy(m);
    m = NULL;
    char shortp[600];
    snprintf(shortp, sizeof shortp, "%s/short.weights", tmpdir);
    FILE *f = fopen(shortp, "wb");
    if (!f || fwrite(e.image, 1, 100, f) != 100 || fclose(f) != 0) {
      ok = say(name, "cannot write %s", shortp);
    } else {
      o.weights_path = shortp;
      rc = kfr_model_create(plan, bytes, &o, &m);
      if (rc != KFUSE_EWEIGHTS || !strstr(kfuse_last_error(), "has 100 bytes"))
        ok = say(name, "short weights: %d %s", rc, kfuse_last_error());
      kfuse_model_destroy(m);
      m = NULL;
    }
  } else {
    ok = 0;
  }
  result(name, ok);
  free(plan);
  plan = NULL;

  name = "create: wrong architecture gives KFUSE_EARCH";
  ok = 1;
  uint32_t wrong[2] = {(uint32_t)(major_cc + 1) * 10,
                       (uint32_t)(major_cc * 10 + minor_cc + 1)};
  for (int i = 0; i < 2 && ok; i++) {
    if (i == 1 && minor_cc == 9)
      continue;
    if (!ew_plan(name, &e, 0, e.path, wrong[i], "vadd_f32", 256, &plan, &bytes)) {
      ok = 0;
      break;
    }
    int rc = kfr_model_create(plan, bytes, NULL, &m);
    char want[64];
    snprintf(want, sizeof want, "module built for sm_%u, device 0", wrong[i]);
    if (rc != KFUSE_EARCH || !strstr(kfuse_last_error(), want))
      ok = say(name, "sm_%u: %d %s", wrong[i], rc, kfuse_last_error());
    else
      printf("  (%s)\n", kfuse_last_error());
    kfuse_model_destroy(m);
    m = NULL;
    free(plan);
    plan = NULL;
  }
  result(name, ok);

  if (s)
    (void)cu->cuStreamDestroy(s);
  ew_fini(&e);
}

/* ---- dynamic shared memory over 48 KiB ------------------------------------- */

static void test_dynamic_smem(void) {
  const char *name = "launch: 64 KiB of dynamic shared memory";
  const int per = 16384, blocks = 8;
  size_t n = (size_t)per * blocks, nb = n * 4;
  kfr_writer *w = kfr_writer_create(sm);
  kfr_tensor_desc d;
  kfr_tensor_desc_init(&d, KFUSE_DTYPE_F32, 1, (int64_t[]){(int64_t)n});
  uint32_t x = kfr_writer_input(w, 0, "x", &d);
  uint32_t y = kfr_writer_output(w, 0, "y", &d);
  uint32_t mod = kfr_writer_module(w, cubin, cubin_bytes);
  uint32_t k = kfr_writer_kernel(w, mod, "reverse_chunks_f32", per * 4);
  kfr_writer_launch(w, k, (uint32_t[]){blocks, 1, 1}, (uint32_t[]){1024, 1, 1},
                    per * 4, "reverse");
  kfr_writer_arg_ptr(w, x, 0);
  kfr_writer_arg_ptr(w, y, 0);
  kfr_writer_arg_i32(w, per);
  void *plan = NULL;
  size_t bytes;
  kfuse_model *m = NULL;
  float *hx = malloc(nb), *hy = malloc(nb);
  CUdeviceptr dx = dalloc(name, nb), dy = dalloc(name, nb);
  int ok = hx && hy && dx && dy && finish(name, w, &plan, &bytes) &&
           create(name, plan, bytes, NULL, &m);
  if (ok) {
    fill(hx, n, &rng_state);
    const void *in[1] = {(void *)(uintptr_t)dx};
    void *out[1] = {(void *)(uintptr_t)dy};
    ok = h2d(name, NULL, dx, hx, nb) && run_sync(name, m, NULL, in, out) &&
         d2h(name, NULL, hy, dy, nb);
    for (size_t i = 0; ok && i < n; i++) {
      size_t b = i / per, j = i % per;
      if (hy[i] != hx[b * per + per - 1 - j])
        ok = say(name, "element %zu wrong", i);
    }
  }
  result(name, ok);
  kfuse_model_destroy(m);
  free(plan);
  free(hx);
  free(hy);
  dfree(dx);
  dfree(dy);
}

/* ---- memset and copy --------------------------------------------------------- */

static void test_memset_copy(void) {
  const char *name = "memset and copy steps (no arena)";
  const size_t n = 1000, nb = n * 4;
  kfr_writer *w = kfr_writer_create(sm);
  kfr_tensor_desc d;
  kfr_tensor_desc_init(&d, KFUSE_DTYPE_F32, 1, (int64_t[]){(int64_t)n});
  uint32_t x = kfr_writer_input(w, 0, "x", &d);
  uint32_t y = kfr_writer_output(w, 0, "y", &d);
  kfr_writer_copy(w, "copy_all", y, 0, x, 0, (int64_t)nb);
  kfr_writer_memset(w, "zero_middle", y, 400 * 4, 400 * 4);
  kfr_writer_copy(w, "copy_head_to_tail", y, 900 * 4, x, 0, 100 * 4);
  kfr_writer_memset(w, "zero_nothing", y, 0, 0);
  void *plan = NULL;
  size_t bytes;
  kfuse_model *m = NULL;
  float hx[1000], hy[1000];
  CUdeviceptr dx = dalloc(name, nb), dy = dalloc(name, nb);
  int ok = dx && dy && finish(name, w, &plan, &bytes) &&
           create(name, plan, bytes, NULL, &m);
  if (ok) {
    fill(hx, n, &rng_state);
    for (size_t i = 0; i < n; i++)
      hy[i] = NAN;
    const void *in[1] = {(void *)(uintptr_t)dx};
    void *out[1] = {(void *)(uintptr_t)dy};
    ok = h2d(name, NULL, dx, hx, nb) && h2d(name, NULL, dy, hy, nb) &&
         run_sync(name, m, NULL, in, out) && d2h(name, NULL, hy, dy, nb);
    for (size_t i = 0; ok && i < n; i++) {
      float want = i >= 400 && i < 800 ? 0.0f : i >= 900 ? hx[i - 900] : hx[i];
      if (hy[i] != want)
        ok = say(name, "element %zu is %g, expected %g", i, hy[i], want);
    }
  }
  result(name, ok);
  kfuse_model_destroy(m);
  free(plan);
  dfree(dx);
  dfree(dy);
}

/* ---- GEMM ------------------------------------------------------------------- */

typedef struct gcase {
  int64_t m, n, k, batch;
  int ta, tb, epi, has_c, f64, broadcast_b, misalign_a, graph;
  double alpha, beta;
} gcase;

static double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}
static double gelu_erf(double x) { return 0.5 * x * (1.0 + erf(x / sqrt(2.0))); }

static const char *epi_name(int e) {
  static const char *names[] = {"none", "bias", "relu_bias", "gelu_bias",
                                "relu", "gelu"};
  return e >= 0 && e <= 5 ? names[e] : "?";
}

static int test_gemm_case(const gcase *c) {
  char name[256];
  snprintf(name, sizeof name,
           "gemm %s m=%lld n=%lld k=%lld batch=%lld trans_a=%d trans_b=%d "
           "epilogue=%s%s%s%s%s%s",
           c->f64 ? "f64" : "f32", (long long)c->m, (long long)c->n,
           (long long)c->k, (long long)c->batch, c->ta, c->tb, epi_name(c->epi),
           c->has_c ? " +beta*C" : "", c->broadcast_b ? " B-broadcast" : "",
           c->misalign_a ? " A-misaligned" : "", c->graph ? " cuda-graph" : "",
           "");
  size_t es = c->f64 ? 8 : 4;
  int64_t ar = c->ta ? c->k : c->m, ac = c->ta ? c->m : c->k;
  int64_t br = c->tb ? c->n : c->k, bc = c->tb ? c->k : c->n;
  kfr_gemm g;
  memset(&g, 0, sizeof g);
  g.m = c->m, g.n = c->n, g.k = c->k, g.batch = c->batch;
  g.lda = ac + 3, g.ldb = bc + 1, g.ldc = c->n + 2, g.ldd = c->n;
  g.stride_a = ar * g.lda + 5;
  g.stride_b = c->broadcast_b ? 0 : br * g.ldb + 7;
  g.stride_c = c->m * g.ldc;
  g.stride_d = c->m * c->n;
  g.trans_a = (uint32_t)c->ta, g.trans_b = (uint32_t)c->tb;
  g.dtype = c->f64 ? KFUSE_DTYPE_F64 : KFUSE_DTYPE_F32;
  g.compute = KFR_COMPUTE_32F;
  g.epilogue = (uint32_t)c->epi;
  g.has_c = (uint32_t)c->has_c;
  g.alpha = c->alpha, g.beta = c->has_c ? c->beta : 0.0;
  g.workspace_bytes = 32u << 20;
  int64_t na = (c->batch - 1) * g.stride_a + ar * g.lda;
  int64_t nbb = (c->batch - 1) * g.stride_b + br * g.ldb;
  int64_t nc = (c->batch - 1) * g.stride_c + c->m * g.ldc;
  int64_t nd = c->batch * c->m * c->n;
  int bias = c->epi == KFR_EPI_BIAS || c->epi == KFR_EPI_RELU_BIAS ||
             c->epi == KFR_EPI_GELU_BIAS;
  uint32_t dt = g.dtype;

  kfr_writer *w = kfr_writer_create(sm);
  kfr_writer_set_model_name(w, "smoke_gemm");
  kfr_writer_set_arena(w, g.workspace_bytes);
  kfr_tensor_desc d;
  uint32_t in_i = 0;
  kfr_tensor_desc_init(&d, dt, 1, (int64_t[]){na});
  uint32_t ba = kfr_writer_input(w, in_i++, "A", &d);
  kfr_tensor_desc_init(&d, dt, 1, (int64_t[]){nbb});
  uint32_t bb = kfr_writer_input(w, in_i++, "B", &d);
  uint32_t bcc = UINT32_MAX, bbias = UINT32_MAX;
  if (c->has_c) {
    kfr_tensor_desc_init(&d, dt, 1, (int64_t[]){nc});
    bcc = kfr_writer_input(w, in_i++, "C", &d);
  }
  if (bias) {
    kfr_tensor_desc_init(&d, dt, 1, (int64_t[]){c->n});
    bbias = kfr_writer_input(w, in_i++, "bias", &d);
  }
  kfr_tensor_desc_init(&d, dt, 3, (int64_t[]){c->batch, c->m, c->n});
  uint32_t bd = kfr_writer_output(w, 0, "D", &d);
  uint32_t ws = kfr_writer_arena(w, 0, g.workspace_bytes, "workspace", NULL);
  kfr_writer_gemm(w, &g, "gemm");
  kfr_writer_arg_ptr(w, ba, 0);
  kfr_writer_arg_ptr(w, bb, 0);
  if (c->has_c)
    kfr_writer_arg_ptr(w, bcc, 0);
  else
    kfr_writer_arg_none(w);
  kfr_writer_arg_ptr(w, bd, 0);
  if (bias)
    kfr_writer_arg_ptr(w, bbias, 0);
  else
    kfr_writer_arg_none(w);
  kfr_writer_arg_ptr(w, ws, 0);

  void *plan = NULL;
  size_t bytes;
  kfuse_model *m = NULL;
  kfuse_options o;
  kfuse_options_init(&o);
  o.cuda_graph = c->graph;
  double *ha = malloc((size_t)na * 8), *hb = malloc((size_t)nbb * 8);
  double *hc = malloc((size_t)nc * 8), *hbias = malloc((size_t)c->n * 8);
  double *ref = malloc((size_t)nd * 8), *ref_erf = malloc((size_t)nd * 8);
  void *buf = malloc((size_t)(na + nbb + nc + c->n + nd) * es);
  CUdeviceptr da = 0, db = 0, dc = 0, dbias = 0, dd = 0;
  int ok = ha && hb && hc && hbias && ref && ref_erf && buf &&
           finish(name, w, &plan, &bytes);
  if (ok) {
    int rc = kfr_model_create(plan, bytes, &o, &m);
    if (rc == KFUSE_ELIBRARY && c->epi != KFR_EPI_NONE &&
        strstr(kfuse_last_error(), "has no algorithm")) {
      /* a library limit, not a runtime fault: the compiler must then fuse
       * this epilogue itself */
      printf("UNSUPPORTED %s: %s\n", name, kfuse_last_error());
      n_unsupported++;
      goto cleanup;
    }
    if (rc != KFUSE_OK)
      ok = say(name, "kfr_model_create returned %d: %s", rc, kfuse_last_error());
  }
  if (!ok)
    goto done;
  /* data in [-1, 1), rounded to the operand type, reference in fp64 */
  uint64_t st = 777 + (uint64_t)c->ta * 2 + (uint64_t)c->tb + (uint64_t)c->epi * 16;
  double *all[4] = {ha, hb, hc, hbias};
  int64_t cnt[4] = {na, nbb, nc, c->n};
  for (int v = 0; v < 4; v++)
    for (int64_t i = 0; i < cnt[v]; i++)
      all[v][i] = c->f64 ? (double)uniform(&st) * (1.0 + 1e-9)
                         : (double)uniform(&st);
  for (int64_t b = 0; b < c->batch; b++)
    for (int64_t i = 0; i < c->m; i++)
      for (int64_t j = 0; j < c->n; j++) {
        double acc = 0;
        for (int64_t kk = 0; kk < c->k; kk++) {
          double x = c->ta ? ha[b * g.stride_a + kk * g.lda + i]
                           : ha[b * g.stride_a + i * g.lda + kk];
          double y = c->tb ? hb[b * g.stride_b + j * g.ldb + kk]
                           : hb[b * g.stride_b + kk * g.ldb + j];
          acc += x * y;
        }
        double v = c->alpha * acc;
        if (c->has_c)
          v += c->beta * hc[b * g.stride_c + i * g.ldc + j];
        if (bias)
          v += hbias[j];
        double v_erf = v;
        switch (c->epi) {
        case KFR_EPI_RELU:
        case KFR_EPI_RELU_BIAS: v = v_erf = v > 0 ? v : 0; break;
        case KFR_EPI_GELU:
        case KFR_EPI_GELU_BIAS:
          v_erf = gelu_erf(v);
          v = gelu_tanh(v);
          break;
        default: break;
        }
        ref[(b * c->m + i) * c->n + j] = v;
        ref_erf[(b * c->m + i) * c->n + j] = v_erf;
      }
  /* device copies; A one element off its allocation when asked */
  size_t off_a = c->misalign_a ? es : 0;
  da = dalloc(name, (size_t)na * es + off_a);
  db = dalloc(name, (size_t)nbb * es);
  dc = dalloc(name, (size_t)nc * es);
  dbias = dalloc(name, (size_t)c->n * es);
  dd = dalloc(name, (size_t)nd * es);
  if (!da || !db || !dc || !dbias || !dd) {
    ok = 0;
    goto done;
  }
  CUdeviceptr dst[4] = {da + off_a, db, dc, dbias};
  for (int v = 0; v < 4 && ok; v++) {
    for (int64_t i = 0; i < cnt[v]; i++) {
      if (c->f64)
        ((double *)buf)[i] = all[v][i];
      else
        ((float *)buf)[i] = (float)all[v][i];
    }
    ok = h2d(name, NULL, dst[v], buf, (size_t)cnt[v] * es);
  }
  const void *in[4];
  int ni = 0;
  in[ni++] = (void *)(uintptr_t)(da + off_a);
  in[ni++] = (void *)(uintptr_t)db;
  if (c->has_c)
    in[ni++] = (void *)(uintptr_t)dc;
  if (bias)
    in[ni++] = (void *)(uintptr_t)dbias;
  void *out[1] = {(void *)(uintptr_t)dd};
  /* twice: the second run reuses the cached algorithm (or the graph) */
  for (int rep = 0; rep < 2 && ok; rep++) {
    ok = cu_ok(name, cu->cuMemsetD8Async(dd, 0xff, (size_t)nd * es, NULL),
               "cuMemsetD8Async") &&
         run_sync(name, m, NULL, in, out) &&
         d2h(name, NULL, buf, dd, (size_t)nd * es);
    double worst = 0, tol_abs = c->f64 ? 1e-12 : 1e-4, tol_rel = c->f64 ? 1e-12 : 1e-4;
    int64_t worst_i = -1, erf_better = 0;
    for (int64_t i = 0; ok && i < nd; i++) {
      double got = c->f64 ? ((double *)buf)[i] : (double)((float *)buf)[i];
      double err = fabs(got - ref[i]);
      double excess = err - (tol_abs + tol_rel * fabs(ref[i]));
      if (!(excess <= 0)) {
        if (worst_i < 0 || excess > worst || isnan(got))
          worst = excess, worst_i = i;
        erf_better += fabs(got - ref_erf[i]) < err;
      }
    }
    if (ok && worst_i >= 0) {
      double got = c->f64 ? ((double *)buf)[worst_i]
                          : (double)((float *)buf)[worst_i];
      ok = say(name, "run %d: element %lld is %.10g, fp64 reference %.10g "
               "(tolerance %g + %g*|ref|)%s", rep, (long long)worst_i, got,
               ref[worst_i], tol_abs, tol_rel,
               erf_better ? "; the erf form of GELU fits better" : "");
    }
  }
done:
  result(name, ok);
cleanup:
  kfuse_model_destroy(m);
  free(plan);
  free(ha);
  free(hb);
  free(hc);
  free(hbias);
  free(ref);
  free(ref_erf);
  free(buf);
  dfree(da);
  dfree(db);
  dfree(dc);
  dfree(dbias);
  dfree(dd);
  return ok;
}

static void test_gemm(void) {
  int idx = 0;
  for (int ta = 0; ta < 2; ta++)
    for (int tb = 0; tb < 2; tb++)
      for (int epi = 0; epi <= KFR_EPI_GELU; epi++, idx++) {
        gcase c = {37, 29, 300, 3, ta, tb, epi, epi == KFR_EPI_NONE, 0,
                   idx % 3 == 0, idx == 6, 0, 1.0, 0.0};
        if (c.has_c)
          c.alpha = 1.5, c.beta = 0.5;
        test_gemm_case(&c);
      }
  gcase f64 = {33, 17, 65, 2, 1, 0, KFR_EPI_NONE, 1, 1, 0, 0, 0, 1.0, 0.25};
  test_gemm_case(&f64);
  gcase f64_bias = {33, 17, 65, 2, 0, 1, KFR_EPI_BIAS, 0, 1, 0, 0, 0, 1.0, 0.0};
  test_gemm_case(&f64_bias);
  gcase single = {128, 64, 64, 1, 0, 0, KFR_EPI_NONE, 1, 0, 0, 0, 0, 1.0, -1.0};
  test_gemm_case(&single);
  gcase graph = {64, 48, 96, 2, 0, 1, KFR_EPI_RELU_BIAS, 0, 0, 0, 0, 1, 1.0, 0.0};
  test_gemm_case(&graph);
}

/* ---- CUDA graphs ------------------------------------------------------------- */

static void test_graph(void) {
  const char *name = "cuda-graph: replay with new pointers and data, 4 runs, 2 streams";
  ew e;
  void *plan = NULL;
  size_t bytes;
  kfuse_model *m = NULL;
  CUstream s = NULL;
  kfuse_options o;
  kfuse_options_init(&o);
  o.cuda_graph = 1;
  int ok = ew_init(name, &e, 300007) &&
           ew_plan(name, &e, 0, e.path, sm, "vadd_f32", 256, &plan, &bytes) &&
           create(name, plan, bytes, &o, &m) &&
           cu_ok(name, cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING),
                 "cuStreamCreate");
  /* ew_run_check allocates fresh input/output buffers every time */
  for (int i = 0; i < 4 && ok; i++)
    ok = ew_run_check(name, &e, m, i == 2 ? NULL : s, 100 + (uint64_t)i);
  result(name, ok);
  kfuse_model_destroy(m);
  free(plan);
  if (s)
    (void)cu->cuStreamDestroy(s);
  ew_fini(&e);
}

/* ---- two threads, one instance ---------------------------------------------- */

typedef struct worker {
  const char *name;
  const ew *e;
  kfuse_model *m;
  int id, iters, ok;
} worker;

static void *work(void *arg) {
  worker *wk = arg;
  wk->ok = 0;
  if (!cu_ok(wk->name, cu->cuCtxPushCurrent(ctx), "cuCtxPushCurrent"))
    return NULL;
  CUstream s = NULL;
  if (cu_ok(wk->name, cu->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING),
            "cuStreamCreate")) {
    wk->ok = 1;
    for (int i = 0; i < wk->iters && wk->ok; i++)
      wk->ok = ew_run_check(wk->name, wk->e, wk->m, s,
                            1000 + (uint64_t)wk->id * 100000 + (uint64_t)i);
    (void)cu->cuStreamDestroy(s);
  }
  CUcontext popped;
  (void)cu->cuCtxPopCurrent(&popped);
  return NULL;
}

static void test_threads(int graph) {
  const char *name = graph ? "threads: 2 threads x 12 runs on one instance, cuda-graph mode"
                           : "threads: 2 threads x 12 runs on one instance, own streams";
  ew e;
  void *plan = NULL;
  size_t bytes;
  kfuse_model *m = NULL;
  kfuse_options o;
  kfuse_options_init(&o);
  o.cuda_graph = graph;
  /* big enough that unordered runs would overlap on the shared arena */
  int ok = ew_init(name, &e, (size_t)1 << 23) &&
           ew_plan(name, &e, 0, e.path, sm, "vadd_f32", 256, &plan, &bytes) &&
           create(name, plan, bytes, &o, &m);
  if (ok) {
    worker wk[2];
    pthread_t th[2];
    int started = 0;
    for (int i = 0; i < 2; i++) {
      wk[i] = (worker){name, &e, m, i, 12, 0};
      if (pthread_create(&th[i], NULL, work, &wk[i]) != 0) {
        ok = say(name, "pthread_create failed");
        break;
      }
      started++;
    }
    for (int i = 0; i < started; i++) {
      pthread_join(th[i], NULL);
      ok = ok && wk[i].ok;
    }
  }
  result(name, ok);
  kfuse_model_destroy(m);
  free(plan);
  ew_fini(&e);
}

/* ---- main -------------------------------------------------------------------- */

static int read_file(const char *path, void **data, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return 0;
  long len = -1;
  if (fseek(f, 0, SEEK_END) == 0)
    len = ftell(f);
  if (len <= 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return 0;
  }
  *data = malloc((size_t)len);
  int ok = *data && fread(*data, 1, (size_t)len, f) == (size_t)len;
  fclose(f);
  *n = (size_t)len;
  return ok;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s KERNELS.cubin SM\n", argv[0]);
    return 2;
  }
  setvbuf(stdout, NULL, _IOLBF, 0);
  sm = (uint32_t)atoi(argv[2]);
  if (!read_file(argv[1], &cubin, &cubin_bytes)) {
    printf("FAIL setup: cannot read %s\n", argv[1]);
    return 1;
  }
  const char *t = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/kfr_smoke.XXXXXX", t && *t ? t : "/tmp");
  if (!mkdtemp(tmpdir)) {
    printf("FAIL setup: mkdtemp %s\n", tmpdir);
    return 1;
  }
  char msg[512];
  if (kfr_driver_load(&cu, msg, sizeof msg) != KFUSE_OK) {
    printf("FAIL setup: %s\n", msg);
    return 1;
  }
  CUdevice dev;
  char devname[128] = "?";
  if (!cu_ok("setup", cu->cuDeviceGet(&dev, 0), "cuDeviceGet") ||
      !cu_ok("setup", cu->cuDeviceGetAttribute(
                          &major_cc, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
                          dev), "cuDeviceGetAttribute") ||
      !cu_ok("setup", cu->cuDeviceGetAttribute(
                          &minor_cc, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
                          dev), "cuDeviceGetAttribute") ||
      !cu_ok("setup", cu->cuDeviceGetName(devname, sizeof devname, dev),
             "cuDeviceGetName") ||
      !cu_ok("setup", cu->cuDevicePrimaryCtxRetain(&ctx, dev),
             "cuDevicePrimaryCtxRetain") ||
      !cu_ok("setup", cu->cuCtxPushCurrent(ctx), "cuCtxPushCurrent")) {
    printf("FAIL setup\n");
    return 1;
  }
  printf("device 0: %s, sm_%d%d, driver CUDA %d.%d; kernels %s (%zu bytes) "
         "for sm_%u; scratch %s\n", devname, major_cc, minor_cc,
         cu->version / 1000, cu->version % 1000 / 10, argv[1], cubin_bytes, sm,
         tmpdir);

  test_launch();
  test_dynamic_smem();
  test_memset_copy();
  test_gemm();
  const kfr_cublaslt *lt;
  if (kfr_cublaslt_load(&lt, msg, sizeof msg) == KFUSE_OK)
    printf("cuBLASLt: %s (version %zu)\n", lt->path, lt->cublasLtGetVersion());
  test_graph();
  test_threads(0);
  test_threads(1);

  /* the scratch files the tests wrote */
  const char *scratch[] = {"ew.weights", "short.weights"};
  for (size_t i = 0; i < sizeof scratch / sizeof scratch[0]; i++) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tmpdir, scratch[i]);
    unlink(path);
  }
  if (rmdir(tmpdir) != 0)
    printf("note: could not remove %s\n", tmpdir);

  printf("runtime smoke: %d passed, %d failed, %d GEMM epilogues cuBLASLt "
         "does not support\n", n_pass, n_fail, n_unsupported);
  printf("%s\n", n_fail ? "FAIL" : "PASS");
  return n_fail ? 1 : 0;
}
