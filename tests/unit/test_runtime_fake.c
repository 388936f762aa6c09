/* tests/unit/test_runtime_fake.c — the runtime (runtime/) against the fake
 * CUDA driver, cuBLASLt and cuDNN of tests/fake/: what it asks of the
 * driver when it creates, runs, captures and destroys an instance.
 *
 *   test_runtime_fake path/to/libkfuse_fake_cuda.so
 *
 * Each test says what it holds the runtime to. The fake executes nothing
 * on a "device" (its memory is host memory), so numerics and timing are
 * left to the GPU scripts. KFUSE_TEST_FILTER=name runs one test.
 *
 * The build has no ThreadSanitizer variant; the threads here (destroy
 * while a run is in flight) were checked with one built by hand, from the
 * repository root:
 *   cc -fsanitize=thread -g -D_GNU_SOURCE -std=c11 -fPIC -shared -isystem $CUDA/include \
 *      -Iruntime tests/fake/fake_cuda.c -o libfake_tsan.so
 *   cc -fsanitize=thread -g -D_GNU_SOURCE -std=c11 -Iruntime -Itests/fake -isystem $CUDA/include \
 *      runtime/kfr_*.c tests/unit/test_runtime_fake.c -lcmocka -ldl -lpthread -o trf_tsan
 *   ./trf_tsan ./libfake_tsan.so */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_cuda.h"
#include "kfr_hash.h"
#include "kfr_int.h"
#include "kfr_plan.h"
#include "kfr_plan_writer.h"
#include "test_plans.h"
#include "kfuse_runtime.h"

#define assert_contains(s, sub)                                                        \
  do {                                                                                 \
    if (!strstr((s), (sub))) fail_msg("expected \"%s\" in \"%s\"", (sub), (s));         \
  } while (0)

static const char *g_fake;
static fake_cuda_reset_fn f_reset;
static fake_cuda_log_fn f_log;
static fake_cuda_count_fn f_count;
static fake_cuda_mark_fn f_mark;
static fake_cuda_fail_fn f_fail;
static fake_cuda_block_launches_fn f_block;
static fake_cuda_blocked_fn f_blocked;
static fake_cuda_live_allocs_fn f_live_allocs;
static fake_cuda_is_live_fn f_is_live;
static fake_cuda_stats_fn f_stats;

static void sleep_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

/* ---- plans --------------------------------------------------------------------- */

/* The smallest image the validator takes for a cubin (never loaded: the
 * fake driver accepts anything; the parameters of its kernel, which a real
 * cubin's .nv.info would declare, come from FAKE_CUDA_PARAMS, set in
 * main). */
static uint8_t fake_cubin[128];

static void make_fake_cubin(void) {
  uint8_t *b = fake_cubin;
  memset(b, 0, sizeof fake_cubin);
  memcpy(b, "\177ELF", 4);
  b[4] = 2, b[5] = 1, b[6] = 1;
  uint64_t shoff = 64;
  uint16_t shentsize = 64, shnum = 1;
  memcpy(b + 0x28, &shoff, 8);
  memcpy(b + 0x3a, &shentsize, 2);
  memcpy(b + 0x3c, &shnum, 2);
  uint32_t type = 1;
  uint64_t off = 0, size = 64;
  memcpy(b + 64 + 4, &type, 4);
  memcpy(b + 64 + 0x18, &off, 8);
  memcpy(b + 64 + 0x20, &size, 8);
}

static const float bias_data[3] = {0.5f, -1.0f, 2.0f};
static float image[64];

/* x, y: [4, 8] f32 -> out: [4, 3] f32: launch t = mix(x, y); GEMM out =
 * relu(t @ W + bias) (W from the embedded weights); memset; copy. */
static void *gemm_plan(size_t *bytes) {
  make_fake_cubin();
  kfr_writer *w = kfr_writer_create(90);
  assert_non_null(w);
  kfr_writer_set_model_name(w, "fake_gemm");
  kfr_writer_set_arena(w, 4096);
  kfr_writer_set_weights_embedded(w, image, sizeof image);
  kfr_tensor_desc d48, d43, d3;
  kfr_tensor_desc_init(&d48, KFUSE_DTYPE_F32, 2, (int64_t[]){4, 8});
  kfr_tensor_desc_init(&d43, KFUSE_DTYPE_F32, 2, (int64_t[]){4, 3});
  kfr_tensor_desc_init(&d3, KFUSE_DTYPE_F32, 1, (int64_t[]){3});
  kfr_writer_input(w, 0, "x", &d48);
  kfr_writer_input(w, 1, "y", &d48);
  kfr_writer_output(w, 0, "out", &d43);
  uint32_t bt = kfr_writer_arena(w, 0, 128, "t", &d48);
  uint32_t bws = kfr_writer_arena(w, 1024, 1024, "gemm_ws", NULL);
  uint32_t bw = kfr_writer_weight(w, 64, 96, "fc.weight", NULL);
  uint32_t bb = kfr_writer_const(w, bias_data, sizeof bias_data, "fc.bias", &d3);
  uint32_t mod = kfr_writer_module(w, fake_cubin, sizeof fake_cubin);
  uint32_t k = kfr_writer_kernel(w, mod, "mix_f32", 0);
  kfr_writer_launch(w, k, (uint32_t[]){1, 1, 1}, (uint32_t[]){32, 1, 1}, 0, "g0_mix");
  kfr_writer_arg_ptr(w, 0, 0);
  kfr_writer_arg_ptr(w, 1, 0);
  kfr_writer_arg_ptr(w, bt, 0);
  kfr_writer_arg_i64(w, 32);
  kfr_gemm g;
  test_small_gemm(&g);
  kfr_writer_gemm(w, &g, "g1_linear");
  kfr_writer_arg_ptr(w, bt, 0);
  kfr_writer_arg_ptr(w, bw, 0);
  kfr_writer_arg_none(w);
  kfr_writer_arg_ptr(w, 2, 0);
  kfr_writer_arg_ptr(w, bb, 0);
  kfr_writer_arg_ptr(w, bws, 0);
  kfr_writer_memset(w, "zero_t", bt, 64, 64);
  void *plan = NULL;
  char msg[512];
  if (kfr_writer_finish(w, &plan, bytes, msg, sizeof msg)) fail_msg("finish: %s", msg);
  kfr_writer_destroy(w);
  return plan;
}

static float conv_w[144];
static const float conv_bias[8] = {0};

/* y [2, 8, 3, 3] = relu(conv(x [2, 4, 6, 6], w [8, 2, 3, 3]; stride 2,
 * padding 1, groups 2) + z + bias): one fused cuDNN step. */
static void *conv_plan(size_t *bytes) {
  kfr_writer *w = kfr_writer_create(90);
  assert_non_null(w);
  kfr_writer_set_model_name(w, "fake_conv");
  kfr_writer_set_arena(w, 8192);
  kfr_writer_set_weights_embedded(w, conv_w, sizeof conv_w);
  kfr_tensor_desc dx, dy, db;
  kfr_tensor_desc_init(&dx, KFUSE_DTYPE_F32, 4, (int64_t[]){2, 4, 6, 6});
  kfr_tensor_desc_init(&dy, KFUSE_DTYPE_F32, 4, (int64_t[]){2, 8, 3, 3});
  kfr_tensor_desc_init(&db, KFUSE_DTYPE_F32, 1, (int64_t[]){8});
  uint32_t bx = kfr_writer_input(w, 0, "x", &dx);
  uint32_t by = kfr_writer_output(w, 0, "y", &dy);
  uint32_t bw = kfr_writer_weight(w, 0, sizeof conv_w, "conv.weight", NULL);
  uint32_t bb = kfr_writer_const(w, conv_bias, sizeof conv_bias, "conv.bias", &db);
  uint32_t bz = kfr_writer_arena(w, 0, 576, "z", &dy);
  kfr_conv c;
  test_grouped_conv(&c);
  kfr_writer_conv(w, &c, "g0_conv");
  kfr_writer_arg_ptr(w, bx, 0);
  kfr_writer_arg_ptr(w, bw, 0);
  kfr_writer_arg_ptr(w, by, 0);
  kfr_writer_arg_ptr(w, bb, 0);
  kfr_writer_arg_ptr(w, bz, 0);
  kfr_writer_arg_none(w);
  void *plan = NULL;
  char msg[512];
  if (kfr_writer_finish(w, &plan, bytes, msg, sizeof msg)) fail_msg("finish: %s", msg);
  kfr_writer_destroy(w);
  return plan;
}

/* x [2, 4, 6, 6] -> y [2, 8, 3, 3]: z = mix(x, x, z, 64) (a launch), two
 * consecutive fused cuDNN steps t = conv(x) + z, y = conv(x) + t, then
 * z = mix(y, y, z, 64) (a launch after them). */
static void *launch_conv_plan(size_t *bytes) {
  make_fake_cubin();
  kfr_writer *w = kfr_writer_create(90);
  assert_non_null(w);
  kfr_writer_set_model_name(w, "fake_launch_conv");
  kfr_writer_set_arena(w, 8192);
  kfr_writer_set_weights_embedded(w, conv_w, sizeof conv_w);
  kfr_tensor_desc dx, dy, db;
  kfr_tensor_desc_init(&dx, KFUSE_DTYPE_F32, 4, (int64_t[]){2, 4, 6, 6});
  kfr_tensor_desc_init(&dy, KFUSE_DTYPE_F32, 4, (int64_t[]){2, 8, 3, 3});
  kfr_tensor_desc_init(&db, KFUSE_DTYPE_F32, 1, (int64_t[]){8});
  uint32_t bx = kfr_writer_input(w, 0, "x", &dx);
  uint32_t by = kfr_writer_output(w, 0, "y", &dy);
  uint32_t bw = kfr_writer_weight(w, 0, sizeof conv_w, "conv.weight", NULL);
  uint32_t bb = kfr_writer_const(w, conv_bias, sizeof conv_bias, "conv.bias", &db);
  uint32_t bz = kfr_writer_arena(w, 0, 576, "z", &dy);
  uint32_t bt = kfr_writer_arena(w, 1024, 576, "t", &dy);
  uint32_t mod = kfr_writer_module(w, fake_cubin, sizeof fake_cubin);
  uint32_t k = kfr_writer_kernel(w, mod, "mix_f32", 0);
  kfr_writer_launch(w, k, (uint32_t[]){1, 1, 1}, (uint32_t[]){32, 1, 1}, 0, "g0_mix");
  kfr_writer_arg_ptr(w, bx, 0);
  kfr_writer_arg_ptr(w, bx, 0);
  kfr_writer_arg_ptr(w, bz, 0);
  kfr_writer_arg_i64(w, 64);
  for (int i = 0; i < 2; i++) {
    kfr_conv c;
    test_grouped_conv(&c);
    kfr_writer_conv(w, &c, i ? "g2_conv" : "g1_conv");
    kfr_writer_arg_ptr(w, bx, 0);
    kfr_writer_arg_ptr(w, bw, 0);
    kfr_writer_arg_ptr(w, i ? by : bt, 0);
    kfr_writer_arg_ptr(w, bb, 0);
    kfr_writer_arg_ptr(w, i ? bt : bz, 0);
    kfr_writer_arg_none(w);
  }
  kfr_writer_launch(w, k, (uint32_t[]){1, 1, 1}, (uint32_t[]){32, 1, 1}, 0, "g3_mix");
  kfr_writer_arg_ptr(w, by, 0);
  kfr_writer_arg_ptr(w, by, 0);
  kfr_writer_arg_ptr(w, bz, 0);
  kfr_writer_arg_i64(w, 64);
  void *plan = NULL;
  char msg[512];
  if (kfr_writer_finish(w, &plan, bytes, msg, sizeof msg)) fail_msg("finish: %s", msg);
  kfr_writer_destroy(w);
  return plan;
}

/* y [64] = mix_f32(x [64], w, y, 64), w from a weights file of wbytes (so
 * more than one of create's 8 MiB reads when wbytes is larger). */
static void *file_weights_plan(const uint8_t *data, uint64_t wbytes, size_t *bytes) {
  make_fake_cubin();
  kfr_writer *w = kfr_writer_create(90);
  assert_non_null(w);
  kfr_writer_set_model_name(w, "fake_file_weights");
  kfr_writer_set_arena(w, 256);
  kfr_writer_set_weights_file(w, "model.weights", wbytes, kfr_xxh64(data, (size_t)wbytes, 0), 0);
  kfr_tensor_desc d;
  kfr_tensor_desc_init(&d, KFUSE_DTYPE_F32, 1, (int64_t[]){64});
  uint32_t x = kfr_writer_input(w, 0, "x", &d);
  uint32_t y = kfr_writer_output(w, 0, "y", &d);
  uint32_t wt = kfr_writer_weight(w, 0, wbytes, "w", NULL);
  uint32_t bb = kfr_writer_const(w, bias_data, sizeof bias_data, "b", NULL);
  uint32_t mod = kfr_writer_module(w, fake_cubin, sizeof fake_cubin);
  uint32_t k = kfr_writer_kernel(w, mod, "mix_f32", 0);
  kfr_writer_launch(w, k, (uint32_t[]){1, 1, 1}, (uint32_t[]){64, 1, 1}, 0, "g0_mix");
  kfr_writer_arg_ptr(w, x, 0);
  kfr_writer_arg_ptr(w, wt, 0);
  kfr_writer_arg_ptr(w, y, 0);
  kfr_writer_arg_ptr(w, bb, 0);
  void *plan = NULL;
  char msg[512];
  if (kfr_writer_finish(w, &plan, bytes, msg, sizeof msg)) fail_msg("finish: %s", msg);
  kfr_writer_destroy(w);
  return plan;
}

static kfuse_model *create_with(void *plan, size_t n, int cuda_graph) {
  kfuse_options o;
  kfuse_options_init(&o);
  o.cuda_graph = cuda_graph;
  kfuse_model *m = NULL;
  int rc = kfr_model_create(plan, n, &o, &m);
  if (rc) fail_msg("create: %d %s", rc, kfuse_last_error());
  return m;
}

static kfuse_model *create_gemm(int cuda_graph) {
  size_t n;
  void *p = gemm_plan(&n);
  kfuse_model *m = create_with(p, n, cuda_graph);
  free(p);
  return m;
}

/* caller tensors: host memory stands in for device memory in the fake */
typedef struct io {
  _Alignas(256) float x[32];
  _Alignas(256) float y[32];
  _Alignas(256) float out[16]; /* 12 used; room for a misaligned view */
  const void *in[2];
  void *outs[1];
} io;

static void io_init(io *t) {
  memset(t, 0, sizeof *t);
  t->in[0] = t->x;
  t->in[1] = t->y;
  t->outs[0] = t->out;
}

static const kfr_driver *driver(void) {
  const kfr_driver *cu = NULL;
  char msg[256];
  if (kfr_driver_load(&cu, msg, sizeof msg)) fail_msg("driver: %s", msg);
  return cu;
}

static CUstream new_stream(void) {
  CUstream s = NULL;
  assert_int_equal(driver()->cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  return s;
}

/* The text of the log after the last "-- mark" line. */
static const char *since(const char *mark) {
  const char *log = f_log();
  char m[128];
  snprintf(m, sizeof m, "-- %s\n", mark);
  const char *p = NULL, *q = log;
  while ((q = strstr(q, m))) p = q++;
  if (!p) fail_msg("mark %s not in the log", mark);
  return p + strlen(m);
}

/* Lines of text containing needle. */
static int lines_with(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if (memmem(p, len, needle, strlen(needle))) n++;
    p += len + (nl ? 1 : 0);
  }
  return n;
}

/* The value after "key=" on the last line of text containing needle. */
static unsigned long long last_value(const char *text, const char *needle, const char *key) {
  unsigned long long v = 0;
  int found = 0;
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if (memmem(p, len, needle, strlen(needle))) {
      const char *k = memmem(p, len, key, strlen(key));
      if (k) {
        v = strtoull(k + strlen(key), NULL, 10);
        found = 1;
      }
    }
    p += len + (nl ? 1 : 0);
  }
  if (!found) fail_msg("no line with %s and %s", needle, key);
  return v;
}

/* ---- create synchronises only its own work (issue 13, finding 7) ------------------------------ */

/* The first line of text containing needle (static), or NULL. */
static const char *line_with(const char *text, const char *needle) {
  static char line[512];
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if (memmem(p, len, needle, strlen(needle))) {
      snprintf(line, sizeof line, "%.*s", (int)len, p);
      return line;
    }
    p += len + (nl ? 1 : 0);
  }
  return NULL;
}

static void expect_private(const char *what, const char *log) {
  static const char *const bad[][2] = {
      {"cuCtxSynchronize", "synchronised the whole context"},
      {"s=null", "used the legacy default stream"},
      {"cuMemcpyHtoD n=", "copied with the synchronous cuMemcpyHtoD"},
      {"cuMemFree p=", "freed with cuMemFree, which waits for the device"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const char *l = line_with(log, bad[i][0]);
    if (l) fail_msg("%s %s: %s", what, bad[i][1], l);
  }
}

/* Every asynchronous upload is waited for on its own stream before the
 * next one starts: create's weights upload reuses one host buffer per
 * chunk, and a chunk refilled while its copy is queued would upload the
 * next chunk's bytes. */
static void expect_uploads_waited(const char *log) {
  char pending[16] = "";
  for (const char *p = log; *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)len, p);
    const char *sv = strstr(line, " s=");
    if (strncmp(line, "cuMemcpyHtoDAsync ", 18) == 0 && sv) {
      if (pending[0]) fail_msg("an upload was queued before the one on %s was waited for: %s", pending, line);
      snprintf(pending, sizeof pending, "%.*s", (int)strcspn(sv + 3, " "), sv + 3);
    } else if (strncmp(line, "cuStreamSynchronize ", 20) == 0 && sv && pending[0] &&
               strncmp(sv + 3, pending, strlen(pending)) == 0) {
      pending[0] = 0;
    }
    p += len + (nl ? 1 : 0);
  }
  if (pending[0]) fail_msg("the last upload, on %s, was never waited for", pending);
}

static void test_create_private_stream(void **state) {
  (void)state;
  size_t n;
  f_reset();
  f_mark("gemm");
  void *p = gemm_plan(&n);
  kfuse_model *m = create_with(p, n, 0);
  free(p);
  const char *log = since("gemm");
  /* the timed search ran (three candidates, each warmed up and timed 3x) */
  assert_true(lines_with(log, "cublasLtMatmul algo=") >= 12);
  expect_private("creating a model with a GEMM step", log);
  kfuse_model_destroy(m);

  f_mark("conv");
  p = conv_plan(&n);
  m = create_with(p, n, 0);
  free(p);
  log = since("conv");
  assert_true(lines_with(log, "cudnnFindConvolutionForwardAlgorithmEx") >= 1);
  assert_true(lines_with(log, "cudnnConvolutionBiasActivationForward") >= 4);
  expect_private("creating a model with a CONV step", log);
  kfuse_model_destroy(m);

  /* conv_search = 0 (the module check's create): cuDNN's heuristics, no
   * timed search */
  f_mark("conv-heuristics");
  p = conv_plan(&n);
  kfuse_options co;
  kfuse_options_init(&co);
  assert_int_equal(co.conv_search, 1);
  co.conv_search = 0;
  m = NULL;
  if (kfr_model_create(p, n, &co, &m)) fail_msg("create: %s", kfuse_last_error());
  free(p);
  log = since("conv-heuristics");
  assert_int_equal(lines_with(log, "cudnnFindConvolutionForwardAlgorithmEx"), 0);
  assert_true(lines_with(log, "cudnnGetConvolutionForwardAlgorithm_v7") >= 1);
  kfuse_model_destroy(m);

  /* weights read from their file (runtime/kfr_weights.c), 9 MiB + 1 KiB:
   * two of its 8 MiB reads */
  uint64_t wn = ((uint64_t)9 << 20) + 1024;
  uint8_t *data = malloc((size_t)wn);
  assert_non_null(data);
  for (uint64_t i = 0; i < wn; i++) data[i] = (uint8_t)(i * 2654435761u >> 13);
  p = file_weights_plan(data, wn, &n);
  const char *tmp = getenv("TMPDIR");
  char dir[512], path[600];
  snprintf(dir, sizeof dir, "%s/kfuse_fake_XXXXXX", tmp && *tmp ? tmp : "/tmp");
  assert_non_null(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/model.weights", dir);
  kfr_weights_header wh;
  kfr_weights_header_fill(p, &wh);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(&wh, 1, sizeof wh, f), sizeof wh);
  assert_int_equal(fwrite(data, 1, (size_t)wn, f), (size_t)wn);
  assert_int_equal(fclose(f), 0);
  kfuse_options o;
  kfuse_options_init(&o);
  o.weights_path = path;
  f_mark("file");
  m = NULL;
  if (kfr_model_create(p, n, &o, &m)) fail_msg("create: %s", kfuse_last_error());
  free(p);
  log = since("file");
  expect_private("creating a model with a weights file", log);
  assert_true(lines_with(log, "cuMemcpyHtoDAsync n=8388608 ") >= 1);
  expect_uploads_waited(log);
  assert_memory_equal((const void *)(uintptr_t)m->weights, data, (size_t)wn);
  kfuse_model_destroy(m);
  unlink(path);
  rmdir(dir);
  free(data);
}

/* ---- cuDNN steps on the stream their plans were timed on ------------------------------ */

/* The index of the first line of text at or after line from that contains
 * needle, or -1; lines counted from 0. */
static int line_index(const char *text, const char *needle, int from) {
  int i = 0;
  for (const char *p = text; *p; i++) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if (i >= from && memmem(p, len, needle, strlen(needle))) return i;
    p += len + (nl ? 1 : 0);
  }
  return -1;
}

/* A run's cuDNN steps go to the instance's own stream (where create timed
 * their plans; engines timed there raced with the work around them on the
 * caller's stream: ResNet-50 on an H200, kfr_run.c), each with its own fork
 * (an event recorded on the caller's stream that the own stream waits for)
 * and join (the reverse), consecutive steps too. */
static void test_conv_on_own_stream(void **state) {
  (void)state;
  size_t n;
  void *p = launch_conv_plan(&n);
  f_reset();
  f_mark("create");
  kfuse_model *m = create_with(p, n, 0);
  free(p);
  /* the stream create searched on */
  char own[16] = "";
  const char *set = line_with(since("create"), "cudnnSetStream s=");
  assert_non_null(set);
  snprintf(own, sizeof own, "%.*s", (int)strcspn(strstr(set, "s=") + 2, " \n"), strstr(set, "s=") + 2);
  CUstream s = new_stream();
  _Alignas(256) float x[2 * 4 * 6 * 6], y[2 * 8 * 3 * 3];
  memset(x, 0, sizeof x);
  const void *in[1] = {x};
  void *out[1] = {y};
  for (int run = 0; run < 2; run++) {
    f_mark("run");
    assert_int_equal(kfuse_model_run(m, s, in, out), KFUSE_OK);
    const char *log = since("run");
    char caller[16], want[96];
    const char *l0 = line_with(log, "cuLaunchKernel mix_f32");
    assert_non_null(l0);
    snprintf(caller, sizeof caller, "%.*s", (int)strcspn(strstr(l0, "s=") + 2, " \n"), strstr(l0, "s=") + 2);
    assert_string_not_equal(caller, own);
    int launch0 = line_index(log, "cuLaunchKernel mix_f32", 0);
    snprintf(want, sizeof want, "cuEventRecord e=");
    int fork = line_index(log, want, launch0);
    int wait_own = line_index(log, "cuStreamWaitEvent", fork);
    snprintf(want, sizeof want, "cudnnConvolutionBiasActivationForward s=%s", own);
    int conv1 = line_index(log, want, wait_own), conv2 = line_index(log, want, conv1 + 1);
    int launch1 = line_index(log, "cuLaunchKernel mix_f32", launch0 + 1);
    assert_true(fork > launch0 && wait_own > fork && conv1 > wait_own && conv2 > conv1 && launch1 > conv2);
    /* the fork: recorded on the caller's stream, waited for by the own one */
    const char *fl = line_with(log + 0, "cuEventRecord e=");
    snprintf(want, sizeof want, "s=%s ", caller);
    assert_non_null(strstr(fl, want));
    snprintf(want, sizeof want, "cuStreamWaitEvent s=%s ", own);
    assert_int_equal(line_index(log, want, 0), wait_own);
    /* a fork and a join for each step: the join recorded on the own
     * stream and waited for by the caller's before the next step */
    assert_int_equal(lines_with(log, "cuStreamWaitEvent"), 5); /* the last run's event, 2 forks, 2 joins */
    snprintf(want, sizeof want, "cuEventRecord e=");
    int join1 = line_index(log, want, conv1), join2 = line_index(log, want, conv2);
    assert_true(join1 > conv1 && join1 < conv2 && join2 > conv2 && join2 < launch1);
    snprintf(want, sizeof want, "cuStreamWaitEvent s=%s ", caller);
    int wait1 = line_index(log, want, join1), wait2 = line_index(log, want, join2);
    assert_true(wait1 > join1 && wait1 < conv2 && wait2 > join2 && wait2 < launch1);
    snprintf(want, sizeof want, "cuStreamWaitEvent s=%s ", own);
    int fork2 = line_index(log, want, wait1);
    assert_true(fork2 > wait1 && fork2 < conv2);
    assert_int_equal(lines_with(log, "cudnnSetStream s="), lines_with(log, "cudnnConvolutionBiasActivationForward"));
    snprintf(want, sizeof want, "cudnnSetStream s=%s", own);
    assert_int_equal(lines_with(log, want), 2);
  }
  kfuse_model_destroy(m);
  assert_int_equal(driver()->cuStreamDestroy(s), CUDA_SUCCESS);
}

/* ---- launches against their kernels' parameters (finding 9) ---------------------------- */

static fake_stats stats(void) {
  fake_stats st;
  f_stats(&st);
  return st;
}

/* Create asks the driver for each launch's parameters (kfr_params.c) and
 * refuses a plan that disagrees with its kernel, freeing what it took. */
static void test_params_checked(void **state) {
  (void)state;
  size_t n;
  void *p = gemm_plan(&n);
  f_reset();
  long q = stats().param_queries, live = stats().live;
  kfuse_model *m = create_with(p, n, 0);
  /* mix_f32's four parameters, and the fifth that is not there */
  assert_int_equal(stats().param_queries - q, 5);
  assert_int_equal(lines_with(f_log(), "cuFuncGetParamInfo mix_f32 4"), 1);
  kfuse_model_destroy(m);
  assert_int_equal(stats().live, live);

  setenv("FAKE_CUDA_PARAMS", "mix_f32=8,8,8,4", 1); /* n as an int32 */
  kfuse_options o;
  kfuse_options_init(&o);
  m = NULL;
  int rc = kfr_model_create(p, n, &o, &m);
  setenv("FAKE_CUDA_PARAMS", "mix_f32=8,8,8,8", 1);
  assert_int_equal(rc, KFUSE_EPLAN);
  assert_null(m);
  assert_contains(kfuse_last_error(), "step 0 (g0_mix): kernel 'mix_f32' parameter 3 is 4 bytes, the plan passes "
                                      "an I64 argument (8 bytes)");
  if (stats().live != live)
    fail_msg("the refused create left %ld allocations or handles behind", stats().live - live);
  free(p);
}

/* mix_f32 launched twice; the second launch passes n_second arguments. */
static void *twice_plan(int n_second, size_t *bytes) {
  make_fake_cubin();
  kfr_writer *w = kfr_writer_create(90);
  assert_non_null(w);
  kfr_writer_set_model_name(w, "fake_twice");
  kfr_writer_set_arena(w, 4096);
  kfr_tensor_desc d48;
  kfr_tensor_desc_init(&d48, KFUSE_DTYPE_F32, 2, (int64_t[]){4, 8});
  kfr_writer_input(w, 0, "x", &d48);
  kfr_writer_input(w, 1, "y", &d48);
  kfr_writer_output(w, 0, "out", &d48);
  uint32_t bt = kfr_writer_arena(w, 0, 128, "t", &d48);
  uint32_t k = kfr_writer_kernel(w, kfr_writer_module(w, fake_cubin, sizeof fake_cubin), "mix_f32", 0);
  kfr_writer_launch(w, k, (uint32_t[]){1, 1, 1}, (uint32_t[]){32, 1, 1}, 0, "g0_mix");
  kfr_writer_arg_ptr(w, 0, 0);
  kfr_writer_arg_ptr(w, 1, 0);
  kfr_writer_arg_ptr(w, bt, 0);
  kfr_writer_arg_i64(w, 32);
  kfr_writer_launch(w, k, (uint32_t[]){1, 1, 1}, (uint32_t[]){32, 1, 1}, 0, "g1_mix");
  kfr_writer_arg_ptr(w, bt, 0);
  kfr_writer_arg_ptr(w, 1, 0);
  kfr_writer_arg_ptr(w, 2, 0);
  if (n_second > 3)
    kfr_writer_arg_i64(w, 32);
  void *plan = NULL;
  char msg[512];
  if (kfr_writer_finish(w, &plan, bytes, msg, sizeof msg)) fail_msg("finish: %s", msg);
  kfr_writer_destroy(w);
  return plan;
}

/* The probe past a kernel's last parameter (a failed call that
 * compute-sanitizer lists) is made once per kernel, and a later launch of
 * the kernel with another argument count is still refused. */
static void test_params_probe_once(void **state) {
  (void)state;
  size_t n;
  void *p = twice_plan(4, &n);
  f_reset();
  long q = stats().param_queries;
  kfuse_model *m = create_with(p, n, 0);
  assert_int_equal(stats().param_queries - q, 4 + 1 + 4);
  assert_int_equal(lines_with(f_log(), "cuFuncGetParamInfo mix_f32 4"), 1);
  kfuse_model_destroy(m);
  free(p);
  p = twice_plan(3, &n);
  m = NULL;
  kfuse_options o;
  kfuse_options_init(&o);
  int rc = kfr_model_create(p, n, &o, &m);
  assert_int_equal(rc, KFUSE_EPLAN);
  assert_null(m);
  assert_contains(kfuse_last_error(), "step 1 (g1_mix): kernel 'mix_f32' takes 4 parameters, the plan passes 3 arguments");
  free(p);
}

/* ---- CUDA-graph mode survives a failed capture (finding 6) ---------------------------- */

/* Runs f with stderr going to a file; returns what was written (static). */
static const char *with_stderr(void (*f)(void *), void *arg) {
  static char buf[8192];
  char path[] = "/tmp/kfuse_fake_stderr_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  fflush(stderr);
  int keep = dup(2);
  dup2(fd, 2);
  f(arg);
  fflush(stderr);
  dup2(keep, 2);
  close(keep);
  lseek(fd, 0, SEEK_SET);
  ssize_t k = read(fd, buf, sizeof buf - 1);
  buf[k > 0 ? k : 0] = 0;
  close(fd);
  unlink(path);
  return buf;
}

typedef struct graph_runs {
  kfuse_model *m;
  CUstream s;
  int rc[3];
} graph_runs;

static void three_runs(void *arg) {
  graph_runs *g = arg;
  io t;
  io_init(&t);
  for (int i = 0; i < 3; i++) g->rc[i] = kfuse_model_run(g->m, g->s, t.in, t.outs);
}

static void graph_fallback_case(const char *failing) {
  f_reset();
  kfuse_model *m = create_gemm(1);
  graph_runs g = {m, new_stream(), {-1, -1, -1}};
  f_reset();
  f_fail(failing, 0, -1, CUDA_ERROR_UNKNOWN);
  f_mark("runs");
  const char *err = with_stderr(three_runs, &g);
  const char *log = since("runs");
  for (int i = 0; i < 3; i++)
    if (g.rc[i]) fail_msg("%s failing: run %d returned %d (%s)", failing, i, g.rc[i], kfuse_model_error(m));
  /* the first run's plain launch, then plain launches: no graph replays,
   * no second capture */
  int launches = 0;
  for (const char *l = log; (l = strstr(l, "cuLaunchKernel mix_f32")); l++)
    launches += strncmp(strchr(l, '\n') - 4, " cap", 4) != 0; /* the capture's is not a launch */
  assert_int_equal(launches, 3);
  assert_int_equal(lines_with(log, "cuGraphLaunch"), 0);
  assert_int_equal(lines_with(log, "cuStreamBeginCapture s="), 1);
  /* said once */
  assert_int_equal(lines_with(err, "CUDA-graph mode"), 1);
  assert_contains(err, failing);
  f_reset();
  kfuse_model_destroy(m);
  assert_int_equal(driver()->cuStreamDestroy(g.s), CUDA_SUCCESS);
}

static void test_graph_capture_fails(void **state) {
  (void)state;
  graph_fallback_case("cuStreamEndCapture");
  graph_fallback_case("cuGraphInstantiateWithFlags");
  graph_fallback_case("cuStreamBeginCapture");
}

static void test_graph_replays(void **state) {
  (void)state;
  kfuse_model *m = create_gemm(1);
  CUstream s = new_stream();
  io t;
  io_init(&t);
  f_reset();
  f_mark("runs");
  for (int i = 0; i < 3; i++) assert_int_equal(kfuse_model_run(m, s, t.in, t.outs), KFUSE_OK);
  const char *log = since("runs");
  assert_int_equal(lines_with(log, "cuStreamBeginCapture"), 1);
  assert_int_equal(lines_with(log, "cuGraphLaunch"), 2);
  kfuse_model_destroy(m);
  assert_int_equal(driver()->cuStreamDestroy(s), CUDA_SUCCESS);
}

/* ---- runs captured into the caller's graph (finding 5) ------------------------------ */

/* the id of the event the runs of m are ordered by: the one its eager runs record */
static int done_event(const char *log) {
  return (int)last_value(log, "cuEventRecord e=", "cuEventRecord e=e");
}

static void test_captured_run_ordered(void **state) {
  (void)state;
  const kfr_driver *cu = driver();
  kfuse_model *m = create_gemm(0);
  CUstream s1 = new_stream(), s2 = new_stream();
  io t;
  io_init(&t);
  f_reset();
  f_mark("eager");
  assert_int_equal(kfuse_model_run(m, s1, t.in, t.outs), KFUSE_OK);
  int ev = done_event(since("eager"));
  f_mark("capture");
  assert_int_equal(cu->cuStreamBeginCapture(s2, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  assert_int_equal(kfuse_model_run(m, s2, t.in, t.outs), KFUSE_OK);
  CUgraph g = NULL;
  assert_int_equal(cu->cuStreamEndCapture(s2, &g), CUDA_SUCCESS);
  const char *log = since("capture");
  char want[128];
  /* the graph waits for the instance's previous run and marks its own end */
  int s2id = (int)last_value(log, "cuLaunchKernel mix_f32", "s=s");
  snprintf(want, sizeof want, "cuStreamWaitEvent s=s%d e=e%d flags=1 cap", s2id, ev);
  if (!lines_with(log, want)) fail_msg("no event wait node (%s) in:\n%s", want, log);
  snprintf(want, sizeof want, "cuEventRecordWithFlags e=e%d s=s%d flags=1 cap", ev, s2id);
  if (!lines_with(log, want)) fail_msg("no event record node (%s) in:\n%s", want, log);
  /* and an eager run after it waits on that event as usual */
  f_mark("eager2");
  assert_int_equal(kfuse_model_run(m, s1, t.in, t.outs), KFUSE_OK);
  snprintf(want, sizeof want, "e=e%d flags=0", ev);
  assert_true(lines_with(since("eager2"), "cuStreamWaitEvent") == 1);
  assert_true(lines_with(since("eager2"), want) == 1);
  assert_int_equal(cu->cuGraphDestroy(g), CUDA_SUCCESS);
  kfuse_model_destroy(m);
  cu->cuStreamDestroy(s1);
  cu->cuStreamDestroy(s2);
}

/* A graph that captured a run keeps the instance's memory: destroy leaves
 * it to the graph, and the next create or destroy releases it once the
 * graph and its execs are gone. */
static void test_capture_outlives_destroy(void **state) {
  (void)state;
  const kfr_driver *cu = driver();
  f_reset();
  kfuse_model *m = create_gemm(0);
  CUstream s = new_stream();
  io t;
  io_init(&t);
  unsigned long long arena = m->arena, weights = m->weights;
  assert_true(f_is_live(arena) && f_is_live(weights));
  assert_int_equal(cu->cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
  assert_int_equal(kfuse_model_run(m, s, t.in, t.outs), KFUSE_OK);
  CUgraph g = NULL;
  CUgraphExec x = NULL;
  assert_int_equal(cu->cuStreamEndCapture(s, &g), CUDA_SUCCESS);
  assert_int_equal(cu->cuGraphInstantiateWithFlags(&x, g, 0), CUDA_SUCCESS);
  assert_int_equal(cu->cuGraphDestroy(g), CUDA_SUCCESS); /* the exec still holds the run */
  kfuse_model_destroy(m);
  if (!f_is_live(arena) || !f_is_live(weights))
    fail_msg("destroy freed the memory of a run a live graph exec replays");
  assert_int_equal(cu->cuGraphLaunch(x, s), CUDA_SUCCESS);
  assert_int_equal(cu->cuGraphExecDestroy(x), CUDA_SUCCESS);
  /* released at the next create or destroy */
  char freed[64];
  snprintf(freed, sizeof freed, "cuMemFree p=%p", (void *)(uintptr_t)arena);
  assert_int_equal(f_count(freed), 0);
  kfuse_model *other = create_gemm(0);
  assert_int_equal(f_count(freed), 1);
  snprintf(freed, sizeof freed, "cuMemFree p=%p", (void *)(uintptr_t)weights);
  assert_int_equal(f_count(freed), 1);
  kfuse_model_destroy(other);
  cu->cuStreamDestroy(s);
}

/* a destroyed graph, or a capture that failed, holds nothing */
static void test_capture_gone_before_destroy(void **state) {
  (void)state;
  f_reset();
  const kfr_driver *cu = driver();
  CUstream s = new_stream();
  io t;
  io_init(&t);
  for (int fail_end = 0; fail_end < 2; fail_end++) {
    kfuse_model *m = create_gemm(0);
    unsigned long long arena = m->arena;
    assert_int_equal(cu->cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    assert_int_equal(kfuse_model_run(m, s, t.in, t.outs), KFUSE_OK);
    CUgraph g = NULL;
    if (fail_end) {
      f_fail("cuStreamEndCapture", 0, 1, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
      assert_int_not_equal(cu->cuStreamEndCapture(s, &g), CUDA_SUCCESS);
    } else {
      assert_int_equal(cu->cuStreamEndCapture(s, &g), CUDA_SUCCESS);
      assert_int_equal(cu->cuGraphDestroy(g), CUDA_SUCCESS);
    }
    kfuse_model_destroy(m);
    assert_false(f_is_live(arena));
    f_reset();
  }
  cu->cuStreamDestroy(s);
}

/* ---- destroy while a run is in flight on another thread (finding 5) ------------------- */

typedef struct runner {
  kfuse_model *m;
  CUstream s;
  int rc;
  volatile int done;
} runner;

static void *run_thread(void *arg) {
  runner *r = arg;
  io t;
  io_init(&t);
  r->rc = kfuse_model_run(r->m, r->s, t.in, t.outs);
  __atomic_store_n(&r->done, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

static void *destroy_thread(void *arg) {
  runner *r = arg;
  kfuse_model_destroy(r->m);
  __atomic_store_n(&r->done, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

static void test_destroy_waits_for_run(void **state) {
  (void)state;
  kfuse_model *m = create_gemm(0);
  CUstream s = new_stream();
  f_reset();
  f_block(1);
  runner a = {m, s, -1, 0}, c = {m, s, -1, 0}, d = {m, NULL, 0, 0};
  pthread_t ta, tc, td;
  assert_int_equal(pthread_create(&ta, NULL, run_thread, &a), 0);
  for (int i = 0; i < 2000 && f_blocked() < 1; i++) sleep_ms(1);
  assert_int_equal(f_blocked(), 1); /* a is inside its run */
  assert_int_equal(pthread_create(&tc, NULL, run_thread, &c), 0);
  sleep_ms(50); /* c queues behind a */
  assert_int_equal(pthread_create(&td, NULL, destroy_thread, &d), 0);
  sleep_ms(200);
  int destroyed_early = __atomic_load_n(&d.done, __ATOMIC_SEQ_CST);
  f_block(0);
  /* a destroy that freed the mutex under the queued run leaves it stuck */
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 10;
  if (pthread_timedjoin_np(ta, NULL, &until) || pthread_timedjoin_np(tc, NULL, &until) ||
      pthread_timedjoin_np(td, NULL, &until))
    fail_msg("a run or the destroy never returned (destroy freed a mutex in use?)");
  if (destroyed_early) fail_msg("destroy returned while a run was in flight on another thread");
  assert_int_equal(a.rc, KFUSE_OK);
  /* the run queued behind the destroy is turned away, not run on freed memory */
  assert_int_equal(c.rc, KFUSE_ECLOSED);
  driver()->cuStreamDestroy(s);
}

/* kfuse_model_error on another thread is a call like any other: destroy
 * waits for it too (it takes the instance's lock, which destroy frees). */
typedef struct reader {
  kfuse_model *m;
  char msg[256];
  volatile int done;
} reader;

static void *error_thread(void *arg) {
  reader *r = arg;
  snprintf(r->msg, sizeof r->msg, "%s", kfuse_model_error(r->m));
  __atomic_store_n(&r->done, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

static void test_destroy_waits_for_error_reader(void **state) {
  (void)state;
  kfuse_model *m = create_gemm(0);
  CUstream s = new_stream();
  f_reset();
  f_block(1);
  runner a = {m, s, -1, 0}, d = {m, NULL, 0, 0};
  reader e = {m, "", 0};
  pthread_t ta, te, td;
  assert_int_equal(pthread_create(&ta, NULL, run_thread, &a), 0);
  for (int i = 0; i < 2000 && f_blocked() < 1; i++) sleep_ms(1);
  assert_int_equal(f_blocked(), 1); /* a holds the instance */
  assert_int_equal(pthread_create(&te, NULL, error_thread, &e), 0);
  /* e waits for the lock as a counted call, so destroy will wait for it */
  int callers = 0;
  for (int i = 0; i < 2000 && (callers = atomic_load(&m->callers)) < 2; i++) sleep_ms(1);
  if (callers != 2) {
    f_block(0);
    pthread_join(ta, NULL);
    pthread_join(te, NULL);
    fail_msg("kfuse_model_error waiting for the instance is not counted as a call (%d inside): destroy could "
             "free the lock under it", callers);
  }
  assert_int_equal(pthread_create(&td, NULL, destroy_thread, &d), 0);
  sleep_ms(100);
  int destroyed_early = __atomic_load_n(&d.done, __ATOMIC_SEQ_CST);
  f_block(0);
  struct timespec until;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += 10;
  if (pthread_timedjoin_np(ta, NULL, &until) || pthread_timedjoin_np(te, NULL, &until) ||
      pthread_timedjoin_np(td, NULL, &until))
    fail_msg("a run, the error read or the destroy never returned");
  if (destroyed_early) fail_msg("destroy returned while calls were inside the instance");
  assert_int_equal(a.rc, KFUSE_OK);
  assert_true(e.done);
  assert_string_equal(e.msg, ""); /* the run before it succeeded */
  driver()->cuStreamDestroy(s);
}

/* ---- a misaligned run does not downgrade the GEMM for good (finding 8) ---------------- */

static void test_gemm_realigns(void **state) {
  (void)state;
  kfuse_model *m = create_gemm(0);
  CUstream s = new_stream();
  io t;
  io_init(&t);
  f_reset();
  f_mark("aligned");
  assert_int_equal(kfuse_model_run(m, s, t.in, t.outs), KFUSE_OK);
  unsigned long long timed = last_value(since("aligned"), "cublasLtMatmul", "algo=");
  assert_int_equal(timed % 1000, 2); /* the fake's fastest candidate */
  void *off[1] = {(char *)t.out + 4};
  f_mark("misaligned");
  assert_int_equal(kfuse_model_run(m, s, t.in, off), KFUSE_OK);
  unsigned long long low = last_value(since("misaligned"), "cublasLtMatmul", "algo=");
  assert_int_equal(low, 4000); /* the heuristic's first for 4-byte alignment */
  f_mark("again");
  assert_int_equal(kfuse_model_run(m, s, t.in, t.outs), KFUSE_OK);
  unsigned long long again = last_value(since("again"), "cublasLtMatmul", "algo=");
  if (again != timed) fail_msg("aligned run after a misaligned one uses algo %llu, not the timed %llu", again, timed);
  /* a second misaligned run reuses the fallback without asking cuBLASLt again */
  f_mark("misaligned2");
  assert_int_equal(kfuse_model_run(m, s, t.in, off), KFUSE_OK);
  assert_int_equal(last_value(since("misaligned2"), "cublasLtMatmul", "algo="), 4000);
  assert_int_equal(lines_with(since("misaligned2"), "cublasLtMatmulAlgoGetHeuristic"), 0);
  kfuse_model_destroy(m);
  driver()->cuStreamDestroy(s);
}

/* ---- out-of-range indices reported by kfuse_model_check (finding 11) ------------------- */

static void test_index_check(void **state) {
  (void)state;
  kfuse_model *m = create_gemm(0);
  CUstream s = new_stream();
  io t;
  io_init(&t);
  f_reset();
  f_mark("check");
  assert_int_equal(kfuse_model_run(m, s, t.in, t.outs), KFUSE_OK);
  assert_int_equal(kfuse_model_check(m), KFUSE_OK);
  const char *log = since("check");
  /* it waits on the instance's own stream for the instance's end event only */
  assert_int_equal(lines_with(log, "cuCtxSynchronize"), 0);
  assert_int_equal(lines_with(log, "s=null"), 0);
  assert_int_equal(lines_with(log, "cuMemcpyDtoHAsync n=4"), 1);
  /* the flag word of the module (host memory in the fake) set by a kernel */
  assert_true(m->index_flag && m->index_flag[0]);
  *(volatile unsigned *)(uintptr_t)m->index_flag[0] = 1;
  assert_int_equal(kfuse_model_check(m), KFUSE_EINDEX);
  assert_contains(kfuse_model_error(m), "out of range in step 0 (g0_mix)");
  assert_contains(kfuse_model_error(m), "IndexError");
  assert_int_equal(*(volatile unsigned *)(uintptr_t)m->index_flag[0], 0); /* cleared */
  assert_int_equal(kfuse_model_check(m), KFUSE_OK);
  assert_string_equal(kfuse_model_error(m), "");
  /* a run that failed on the GPU shows up as the stream's error */
  f_fail("cuStreamSynchronize", 0, 1, CUDA_ERROR_ILLEGAL_ADDRESS);
  assert_int_equal(kfuse_model_check(m), KFUSE_ECUDA);
  assert_contains(kfuse_model_error(m), "checking the model's runs: cuStreamSynchronize failed");
  assert_int_equal(kfuse_model_check(NULL), KFUSE_EARG);
  f_reset();
  kfuse_model_destroy(m);
  driver()->cuStreamDestroy(s);
}

/* ---- aliased outputs (finding 11) ------------------------------------------------------ */

static void test_aliasing_refused(void **state) {
  (void)state;
  kfuse_model *m = create_gemm(0);
  io t;
  io_init(&t);
  void *same[1] = {t.x};
  assert_int_equal(kfuse_model_run(m, NULL, t.in, same), KFUSE_EARG);
  assert_contains(kfuse_model_error(m), "output 0 (out)");
  assert_contains(kfuse_model_error(m), "overlaps input 0 (x)");
  void *inside[1] = {(char *)t.y + 64}; /* y is 128 bytes */
  assert_int_equal(kfuse_model_run(m, NULL, t.in, inside), KFUSE_EARG);
  assert_contains(kfuse_model_error(m), "overlaps input 1 (y)");
  /* inputs may share memory: they are only read */
  const void *twice[2] = {t.x, t.x};
  assert_int_equal(kfuse_model_run(m, NULL, twice, t.outs), KFUSE_OK);
  assert_int_equal(kfuse_model_run(m, NULL, t.in, t.outs), KFUSE_OK);
  kfuse_model_destroy(m);
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: test_runtime_fake path/to/libkfuse_fake_cuda.so\n");
    return 2;
  }
  g_fake = argv[1];
  setenv("KFUSE_LIBCUDA", g_fake, 1);
  setenv("KFUSE_CUBLASLT", g_fake, 1);
  setenv("KFUSE_CUDNN_LIBRARY", g_fake, 1);
  setenv("KFUSE_CUDNN_GRAPH", "0", 1);
  /* mix_f32(x, y, t, n): three pointers and an int64, as gemm_plan passes */
  setenv("FAKE_CUDA_PARAMS", "mix_f32=8,8,8,8", 1);
  void *h = dlopen(g_fake, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "cannot open %s: %s\n", g_fake, dlerror());
    return 2;
  }
#define SYM(var, name)                                                  \
  if (!(*(void **)&var = dlsym(h, name))) {                             \
    fprintf(stderr, "%s has no %s\n", g_fake, name);                    \
    return 2;                                                           \
  }
  SYM(f_reset, "fake_cuda_reset");
  SYM(f_log, "fake_cuda_log");
  SYM(f_count, "fake_cuda_count");
  SYM(f_mark, "fake_cuda_mark");
  SYM(f_fail, "fake_cuda_fail");
  SYM(f_block, "fake_cuda_block_launches");
  SYM(f_blocked, "fake_cuda_blocked");
  SYM(f_live_allocs, "fake_cuda_live_allocs");
  SYM(f_is_live, "fake_cuda_is_live");
  SYM(f_stats, "fake_cuda_stats");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_create_private_stream),
      cmocka_unit_test(test_conv_on_own_stream),
      cmocka_unit_test(test_params_checked),
      cmocka_unit_test(test_params_probe_once),
      cmocka_unit_test(test_graph_replays),
      cmocka_unit_test(test_graph_capture_fails),
      cmocka_unit_test(test_captured_run_ordered),
      cmocka_unit_test(test_capture_outlives_destroy),
      cmocka_unit_test(test_capture_gone_before_destroy),
      cmocka_unit_test(test_destroy_waits_for_run),
      cmocka_unit_test(test_destroy_waits_for_error_reader),
      cmocka_unit_test(test_gemm_realigns),
      cmocka_unit_test(test_index_check),
      cmocka_unit_test(test_aliasing_refused),
  };
  const char *only = getenv("KFUSE_TEST_FILTER"); /* one test, e.g. test_gemm_realigns */
  if (only && *only) cmocka_set_test_filter(only);
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  dlclose(h);
  return rc;
}
