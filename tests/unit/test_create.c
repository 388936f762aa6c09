/* tests/unit/test_create.c — what create checks, run to the end on the CPU
 * with the fake CUDA driver (tests/fake/fake_cuda.c, KFUSE_LIBCUDA):
 *
 *   the weights file: missing, wrong size, no header, another module's
 *   (model id), corrupt data (hash) or header, a FIFO or a directory, a
 *   file truncated in place while create reads it; skipping the hash keeps
 *   the size and model-id binding; embedded weights need no file;
 *   each launch's arguments against its kernel's parameters
 *   (cuFuncGetParamInfo), and with "old-driver" (a driver before CUDA 12.4,
 *   FAKE_CUDA_VERSION=12030) that the check is skipped;
 *   kfuse_model_error read while another thread's runs fail;
 *   a rejected cuDNN leaves none of its sub-libraries loaded, an accepted
 *   one has them in the global scope (a copy of the fake library stands
 *   for libcudnn.so.9, tests/fake/fake_cudnn_part.c for a sub-library).
 *
 * Every failed create must also release everything it took from the
 * driver (the fake counts live allocations and handles). */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fake_cuda.h"
#include "kfr_hash.h"
#include "kfr_int.h"
#include "kfr_plan.h"
#include "kfr_plan_writer.h"
#include "kfuse_runtime.h"

#define assert_contains(s, sub)                                            \
  do {                                                                     \
    if (!strstr((s), (sub)))                                               \
      fail_msg("expected a message containing \"%s\", got \"%s\"", (sub),  \
               (s));                                                       \
  } while (0)

static int g_old_driver; /* argv[1] == "old-driver" */
static char g_dir[512];  /* scratch directory */

/* ---- the fake driver's counters ----------------------------------------------- */

static fake_stats stats(void) {
  static fake_cuda_stats_fn fn;
  if (!fn) {
    const char *lib = getenv("KFUSE_LIBCUDA");
    void *h = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!h)
      fail_msg("KFUSE_LIBCUDA must name tests/fake's library (%s)",
               lib ? dlerror() : "unset");
    *(void **)&fn = dlsym(h, "fake_cuda_stats");
    if (!fn)
      fail_msg("no fake_cuda_stats in %s", lib);
  }
  fake_stats s;
  fn(&s);
  return s;
}

/* ---- plans and weights files ---------------------------------------------------- */

/* An ELF64 header and one section header; the fake reads parameters from
 * FAKE_CUDA_PARAMS for it. */
static uint8_t fake_cubin[128];

static void make_fake_cubin(void) {
  uint8_t *b = fake_cubin;
  memset(b, 0, sizeof fake_cubin);
  memcpy(b, "\177ELF", 4);
  b[4] = 2, b[5] = 1, b[6] = 1;
  uint64_t shoff = 64, off = 0, size = 64;
  uint16_t shentsize = 64, shnum = 1;
  uint32_t type = 1;
  memcpy(b + 0x28, &shoff, 8);
  memcpy(b + 0x3a, &shentsize, 2);
  memcpy(b + 0x3c, &shnum, 2);
  memcpy(b + 64 + 4, &type, 4);
  memcpy(b + 64 + 0x18, &off, 8);
  memcpy(b + 64 + 0x20, &size, 8);
}

enum { N = 64 };

typedef struct plan {
  void *p;
  size_t n;
} plan;

/* y[N] = kernel(x[N], w, y, N): one weight buffer over all wbytes of data;
 * weights in the file "model.weights" unless embedded. The kernel's name
 * makes the model id (two names, two models). */
static plan make_plan(const uint8_t *data, uint64_t wbytes, const char *kernel,
                      int embedded) {
  make_fake_cubin();
  kfr_writer *w = kfr_writer_create(90);
  assert_non_null(w);
  kfr_writer_set_model_name(w, "create_test");
  kfr_writer_set_arena(w, 256);
  if (embedded)
    kfr_writer_set_weights_embedded(w, data, wbytes);
  else
    kfr_writer_set_weights_file(w, "model.weights", wbytes,
                                kfr_xxh64(data, (size_t)wbytes, 0), 0);
  kfr_tensor_desc d;
  kfr_tensor_desc_init(&d, KFUSE_DTYPE_F32, 1, (int64_t[]){N});
  uint32_t x = kfr_writer_input(w, 0, "x", &d);
  uint32_t y = kfr_writer_output(w, 0, "y", &d);
  uint32_t wt = kfr_writer_weight(w, 0, wbytes, "w", NULL);
  uint32_t mod = kfr_writer_module(w, fake_cubin, sizeof fake_cubin);
  uint32_t k = kfr_writer_kernel(w, mod, kernel, 0);
  kfr_writer_launch(w, k, (uint32_t[]){1, 1, 1}, (uint32_t[]){64, 1, 1}, 0,
                    "g0");
  kfr_writer_arg_ptr(w, x, 0);
  kfr_writer_arg_ptr(w, wt, 0);
  kfr_writer_arg_ptr(w, y, 0);
  kfr_writer_arg_i32(w, N);
  plan p;
  char msg[512];
  if (kfr_writer_finish(w, &p.p, &p.n, msg, sizeof msg))
    fail_msg("finish: %s", msg);
  kfr_writer_destroy(w);
  return p;
}

static void write_file(const char *path, const void *a, size_t na,
                       const void *b, size_t nb) {
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(a, 1, na, f) != na || (nb && fwrite(b, 1, nb, f) != nb) ||
      fclose(f) != 0)
    fail_msg("cannot write %s: %s", path, strerror(errno));
}

/* The weights file that belongs to plan p. */
static void write_weights(const char *path, const plan *p, const uint8_t *data,
                          uint64_t n) {
  kfr_weights_header h;
  kfr_weights_header_fill(p->p, &h);
  write_file(path, &h, sizeof h, data, (size_t)n);
}

static uint8_t *random_bytes(size_t n, uint64_t seed) {
  uint8_t *b = malloc(n);
  assert_non_null(b);
  for (size_t i = 0; i < n; i++) {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    b[i] = (uint8_t)seed;
  }
  return b;
}

static void in_dir(char *out, size_t n, const char *name) {
  snprintf(out, n, "%s/%s", g_dir, name);
}

/* create with weights_path = path (and skip_weights_hash); on failure the
 * fake's live objects must be back where they were */
static int create(const plan *p, const char *path, int skip, kfuse_model **m) {
  kfuse_options o;
  kfuse_options_init(&o);
  o.weights_path = path;
  o.skip_weights_hash = skip;
  long live = stats().live;
  *m = NULL;
  int rc = kfr_model_create(p->p, p->n, &o, m);
  if (rc) {
    assert_null(*m);
    if (stats().live != live)
      fail_msg("a failed create left %ld driver objects behind (%s)",
               stats().live - live, kfuse_last_error());
  }
  return rc;
}

static void params(const char *spec) { setenv("FAKE_CUDA_PARAMS", spec, 1); }

/* ---- the weights file ----------------------------------------------------------- */

static void test_weights_good(void **state) {
  (void)state;
  params("k=8,8,8,4");
  uint64_t n = 1000;
  uint8_t *data = random_bytes(n, 1);
  plan p = make_plan(data, n, "k", 0);
  char path[600];
  in_dir(path, sizeof path, "good.weights");
  write_weights(path, &p, data, n);
  long live = stats().live, up = stats().htod_bytes;
  kfuse_model *m;
  if (create(&p, path, 0, &m))
    fail_msg("create: %s", kfuse_last_error());
  /* the fake's device memory is host memory: the weights arrived */
  assert_true(stats().htod_bytes - up >= (long)n);
  assert_memory_equal((const void *)(uintptr_t)m->weights, data, n);
  kfuse_model_destroy(m);
  assert_int_equal(stats().live, live);
  free(data);
  free(p.p);
}

static void test_weights_missing_and_wrong_size(void **state) {
  (void)state;
  params("k=8,8,8,4");
  uint64_t n = 1000;
  uint8_t *data = random_bytes(n, 2);
  plan p = make_plan(data, n, "k", 0);
  kfuse_model *m;
  char path[600], msg[1024];
  in_dir(path, sizeof path, "missing.weights");
  assert_int_equal(create(&p, path, 0, &m), KFUSE_EWEIGHTS);
  snprintf(msg, sizeof msg, "cannot open the weights file %s", path);
  assert_contains(kfuse_last_error(), msg);

  /* a random 4 KiB file: the size names the file and both sizes */
  uint8_t *junk = random_bytes(4096, 3);
  in_dir(path, sizeof path, "junk.weights");
  write_file(path, junk, 4096, NULL, 0);
  assert_int_equal(create(&p, path, 0, &m), KFUSE_EWEIGHTS);
  snprintf(msg, sizeof msg, "the weights file %s has 4096 bytes; this module's "
           "has exactly %u", path, KFR_WEIGHTS_HEADER_BYTES + 1000);
  assert_contains(kfuse_last_error(), msg);

  /* the data alone, as kfuse wrote it before plan version 6 */
  write_file(path, data, n, NULL, 0);
  assert_int_equal(create(&p, path, 0, &m), KFUSE_EWEIGHTS);
  assert_contains(kfuse_last_error(), "has 1000 bytes");

  /* the right size without a header */
  uint8_t zero[KFR_WEIGHTS_HEADER_BYTES] = {0};
  write_file(path, zero, sizeof zero, data, n);
  assert_int_equal(create(&p, path, 0, &m), KFUSE_EWEIGHTS);
  assert_contains(kfuse_last_error(), "is not a kfuse weights file");
  free(junk);
  free(data);
  free(p.p);
}

static void test_weights_other_model(void **state) {
  (void)state;
  params("k=8,8,8,4;k2=8,8,8,4");
  uint64_t n = 512;
  uint8_t *data = random_bytes(n, 4);
  plan p = make_plan(data, n, "k", 0), q = make_plan(data, n, "k2", 0);
  assert_true(((kfr_header *)p.p)->model_id != ((kfr_header *)q.p)->model_id);
  /* the same weights, but written for the other model */
  char path[600], msg[1024];
  in_dir(path, sizeof path, "other.weights");
  write_weights(path, &q, data, n);
  kfuse_model *m;
  assert_int_equal(create(&p, path, 0, &m), KFUSE_EWEIGHTS);
  snprintf(msg, sizeof msg, "the weights file %s belongs to another module "
           "(its model id is %016llx, this module's %016llx)", path,
           (unsigned long long)((kfr_header *)q.p)->model_id,
           (unsigned long long)((kfr_header *)p.p)->model_id);
  assert_contains(kfuse_last_error(), msg);
  /* skipping the hash does not skip the model id */
  assert_int_equal(create(&p, path, 1, &m), KFUSE_EWEIGHTS);
  assert_contains(kfuse_last_error(), "belongs to another module");
  free(data);
  free(p.p);
  free(q.p);
}

static void test_weights_corrupt(void **state) {
  (void)state;
  params("k=8,8,8,4");
  uint64_t n = 3000;
  uint8_t *data = random_bytes(n, 5);
  plan p = make_plan(data, n, "k", 0);
  char path[600], msg[1024];
  in_dir(path, sizeof path, "corrupt.weights");
  /* one bit of the data */
  data[1234] ^= 0x10;
  write_weights(path, &p, data, n);
  kfuse_model *m;
  long live = stats().live;
  assert_int_equal(create(&p, path, 0, &m), KFUSE_EWEIGHTS);
  snprintf(msg, sizeof msg, "the weights in %s do not match the module: their "
           "XXH64 is %016llx, the module expects %016llx", path,
           (unsigned long long)kfr_xxh64(data, n, 0),
           (unsigned long long)((kfr_header *)p.p)->weights_hash);
  assert_contains(kfuse_last_error(), msg);
  /* asked not to hash: the size and the header's model id still bind */
  if (create(&p, path, 1, &m))
    fail_msg("create without the hash: %s", kfuse_last_error());
  kfuse_model_destroy(m);
  assert_int_equal(stats().live, live);
  data[1234] ^= 0x10;

  /* the header's record of the data disagrees with the plan */
  kfr_weights_header h;
  kfr_weights_header_fill(p.p, &h);
  h.data_hash ^= 1;
  write_file(path, &h, sizeof h, data, n);
  assert_int_equal(create(&p, path, 0, &m), KFUSE_EWEIGHTS);
  assert_contains(kfuse_last_error(), "is corrupt");
  kfr_weights_header_fill(p.p, &h);
  h.version = 7;
  write_file(path, &h, sizeof h, data, n);
  assert_int_equal(create(&p, path, 0, &m), KFUSE_EWEIGHTS);
  assert_contains(kfuse_last_error(), "format version 7");
  free(data);
  free(p.p);
}

static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "test_create: create blocked on a FIFO\n";
  (void)!write(2, msg, sizeof msg - 1);
  _exit(1);
}

static void test_weights_not_regular(void **state) {
  (void)state;
  params("k=8,8,8,4");
  uint64_t n = 256;
  uint8_t *data = random_bytes(n, 6);
  plan p = make_plan(data, n, "k", 0);
  char path[600], msg[1024];
  kfuse_model *m;
  /* a FIFO with no writer: opening it for reading would block */
  in_dir(path, sizeof path, "fifo.weights");
  unlink(path);
  assert_int_equal(mkfifo(path, 0600), 0);
  signal(SIGALRM, on_alarm);
  alarm(20);
  assert_int_equal(create(&p, path, 0, &m), KFUSE_EWEIGHTS);
  alarm(0);
  snprintf(msg, sizeof msg, "the weights file %s is a FIFO, not a regular file",
           path);
  assert_contains(kfuse_last_error(), msg);
  unlink(path);
  /* a directory */
  in_dir(path, sizeof path, "dir.weights");
  mkdir(path, 0700);
  assert_int_equal(create(&p, path, 0, &m), KFUSE_EWEIGHTS);
  assert_contains(kfuse_last_error(), "is a directory, not a regular file");
  rmdir(path);
  free(data);
  free(p.p);
}

/* The fake truncates the file at its first upload: the rest of the read
 * comes up short. With the file mapped, the same truncation is a SIGBUS. */
static void test_weights_shrink_while_read(void **state) {
  (void)state;
  params("k=8,8,8,4");
  uint64_t n = (uint64_t)9 << 20; /* more than one 8 MiB read */
  uint8_t *data = random_bytes((size_t)n, 7);
  plan p = make_plan(data, n, "k", 0);
  char path[600], spec[700], msg[1024];
  in_dir(path, sizeof path, "shrink.weights");
  write_weights(path, &p, data, n);
  snprintf(spec, sizeof spec, "%s:%u", path, KFR_WEIGHTS_HEADER_BYTES + 4096);
  setenv("FAKE_CUDA_TRUNCATE", spec, 1);
  kfuse_model *m;
  assert_int_equal(create(&p, path, 0, &m), KFUSE_EWEIGHTS);
  unsetenv("FAKE_CUDA_TRUNCATE");
  snprintf(msg, sizeof msg, "the weights file %s shrank while it was read", path);
  assert_contains(kfuse_last_error(), msg);
  free(data);
  free(p.p);
}

static void test_weights_embedded(void **state) {
  (void)state;
  params("k=8,8,8,4");
  uint64_t n = 700;
  uint8_t *data = random_bytes(n, 8);
  plan p = make_plan(data, n, "k", 1);
  kfuse_model *m;
  char path[600];
  in_dir(path, sizeof path, "never-read.weights");
  /* no file is opened: a path that does not exist is ignored */
  if (create(&p, path, 0, &m))
    fail_msg("create: %s", kfuse_last_error());
  assert_memory_equal((const void *)(uintptr_t)m->weights, data, n);
  kfuse_model_destroy(m);
  free(data);
  free(p.p);
}

/* ---- launches against their kernels ---------------------------------------------- */

static void test_params(void **state) {
  (void)state;
  uint64_t n = 256;
  uint8_t *data = random_bytes(n, 9);
  plan p = make_plan(data, n, "k", 0);
  char path[600];
  in_dir(path, sizeof path, "params.weights");
  write_weights(path, &p, data, n);
  static const struct {
    const char *spec, *msg;
  } bad[] = {
      {"k=8,8,8", "plan: step 0 (g0): kernel 'k' takes 3 parameters, the plan "
                  "passes 4 arguments"},
      {"k=8,8,8,4,8", "plan: step 0 (g0): kernel 'k' takes more than the 4 "
                      "arguments the plan passes"},
      {"k=8,8,8,8", "plan: step 0 (g0): kernel 'k' parameter 3 is 8 bytes, the "
                    "plan passes an I32 argument (4 bytes)"},
      {"k=4,8,8,4", "plan: step 0 (g0): kernel 'k' parameter 0 is 4 bytes, the "
                    "plan passes a pointer argument (8 bytes)"},
  };
  kfuse_model *m;
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    params(bad[i].spec);
    long q = stats().param_queries;
    int rc = create(&p, path, 0, &m);
    if (g_old_driver) { /* no cuFuncGetParamInfo: nothing to check with */
      if (rc)
        fail_msg("old driver, %s: %s", bad[i].spec, kfuse_last_error());
      assert_int_equal(stats().param_queries, q);
      kfuse_model_destroy(m);
    } else {
      assert_int_equal(rc, KFUSE_EPLAN);
      assert_contains(kfuse_last_error(), bad[i].msg);
    }
  }
  params("k=8,8,8,4");
  long q = stats().param_queries;
  if (create(&p, path, 0, &m))
    fail_msg("create: %s", kfuse_last_error());
  assert_true(g_old_driver ? stats().param_queries == q
                           : stats().param_queries == q + 5);
  kfuse_model_destroy(m);
  free(data);
  free(p.p);
}

/* ---- the instance's error text across threads ------------------------------------ */

static const char *const g_msgs[2] = {
    "run: the input array is NULL, the model has 1 inputs",
    "run: the output array is NULL, the model has 1 outputs"};

typedef struct race {
  kfuse_model *m;
  volatile int stop;
  long torn, reads;
} race;

static void *failing_runs(void *arg) {
  race *r = arg;
  const void *in[1] = {(void *)(uintptr_t)256};
  void *out[1] = {(void *)(uintptr_t)512};
  for (int i = 0; i < 200000 && !r->stop; i++)
    (void)kfuse_model_run(r->m, NULL, i % 2 ? NULL : in, i % 2 ? out : NULL);
  r->stop = 1;
  return NULL;
}

static void test_error_read_while_running(void **state) {
  (void)state;
  params("k=8,8,8,4");
  uint64_t n = 256;
  uint8_t *data = random_bytes(n, 10);
  plan p = make_plan(data, n, "k", 1);
  race r = {0};
  if (create(&p, NULL, 0, &r.m))
    fail_msg("create: %s", kfuse_last_error());
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, failing_runs, &r), 0);
  char copy[1024];
  while (!r.stop) {
    snprintf(copy, sizeof copy, "%s", kfuse_model_error(r.m));
    r.reads++;
    if (copy[0] && strcmp(copy, g_msgs[0]) && strcmp(copy, g_msgs[1]) &&
        r.torn++ == 0)
      print_message("torn read: \"%s\"\n", copy);
  }
  pthread_join(t, NULL);
  assert_true(r.reads > 0);
  if (r.torn)
    fail_msg("%ld of %ld reads of kfuse_model_error saw a message being "
             "written", r.torn, r.reads);
  snprintf(copy, sizeof copy, "%s", kfuse_model_error(r.m));
  assert_true(!strcmp(copy, g_msgs[0]) || !strcmp(copy, g_msgs[1]));
  kfuse_model_destroy(r.m);
  free(data);
  free(p.p);
}

/* ---- loading cuDNN ------------------------------------------------------------ */

static void copy_file(const char *from, const char *to) {
  FILE *a = fopen(from, "rb"), *b = fopen(to, "wb");
  char buf[65536];
  size_t k;
  if (!a || !b)
    fail_msg("cannot copy %s to %s", from, to);
  while ((k = fread(buf, 1, sizeof buf, a)) > 0)
    if (fwrite(buf, 1, k, b) != k)
      fail_msg("cannot write %s", to);
  fclose(a);
  if (fclose(b) != 0)
    fail_msg("cannot write %s", to);
}

/* A cuDNN found by full path gets its sub-libraries opened from its
 * directory; one that is then rejected (here: version 8.9) must leave none
 * of them loaded, one that is accepted has them in the global scope. */
static void test_cudnn_parts(void **state) {
  (void)state;
  const char *lib = getenv("FAKE_CUDNN_LIB"), *part = getenv("FAKE_CUDNN_PART");
  if (!lib || !part)
    fail_msg("FAKE_CUDNN_LIB and FAKE_CUDNN_PART must name tests/fake's library and sub-library stand-in");
  char bad[600], good[600], p[700], gp[700];
  in_dir(bad, sizeof bad, "cudnn_old");
  in_dir(good, sizeof good, "cudnn_new");
  mkdir(bad, 0700);
  mkdir(good, 0700);
  snprintf(p, sizeof p, "%s/libcudnn.so.9", bad);
  copy_file(lib, p);
  snprintf(p, sizeof p, "%s/libcudnn_graph.so.9", bad);
  copy_file(part, p);
  snprintf(p, sizeof p, "%s/libcudnn.so.9", good);
  copy_file(lib, p);
  snprintf(gp, sizeof gp, "%s/libcudnn_graph.so.9", good);
  copy_file(part, gp);

  const kfr_cudnn *dnn = NULL;
  char msg[2048];
  snprintf(p, sizeof p, "%s/libcudnn.so.9", bad);
  setenv("KFUSE_CUDNN_LIBRARY", p, 1);
  setenv("FAKE_CUDNN_VERSION", "8900", 1);
  assert_int_equal(kfr_cudnn_load(&dnn, msg, sizeof msg), KFUSE_ELIBRARY);
  assert_contains(msg, "cuDNN 8900; 9.0 or newer needed");
  snprintf(p, sizeof p, "%s/libcudnn_graph.so.9", bad);
  void *h = dlopen(p, RTLD_NOW | RTLD_NOLOAD);
  if (h)
    fail_msg("the rejected cuDNN's %s is still loaded", p);
  assert_null(dlsym(RTLD_DEFAULT, "fake_cudnn_part_marker"));

  snprintf(p, sizeof p, "%s/libcudnn.so.9", good);
  setenv("KFUSE_CUDNN_LIBRARY", p, 1);
  setenv("FAKE_CUDNN_VERSION", "90100", 1);
  if (kfr_cudnn_load(&dnn, msg, sizeof msg))
    fail_msg("the accepted cuDNN: %s", msg);
  assert_string_equal(dnn->path, p);
  assert_true(dnn->version == 90100);
  h = dlopen(gp, RTLD_NOW | RTLD_NOLOAD);
  assert_non_null(h);
  dlclose(h);
  assert_non_null(dlsym(RTLD_DEFAULT, "fake_cudnn_part_marker"));
  unsetenv("KFUSE_CUDNN_LIBRARY");
  unsetenv("FAKE_CUDNN_VERSION");
}

static int setup(void **state) {
  (void)state;
  const char *tmp = getenv("TMPDIR");
  snprintf(g_dir, sizeof g_dir, "%s/kfuse_create_XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(g_dir))
    return -1;
  (void)stats(); /* fails early when KFUSE_LIBCUDA is not the fake */
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

int main(int argc, char **argv) {
  g_old_driver = argc > 1 && strcmp(argv[1], "old-driver") == 0;
  if (g_old_driver) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_params)};
    return cmocka_run_group_tests_name("test_create (old driver)", tests, setup,
                                       teardown);
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_weights_good),
      cmocka_unit_test(test_weights_missing_and_wrong_size),
      cmocka_unit_test(test_weights_other_model),
      cmocka_unit_test(test_weights_corrupt),
      cmocka_unit_test(test_weights_not_regular),
      cmocka_unit_test(test_weights_shrink_while_read),
      cmocka_unit_test(test_weights_embedded),
      cmocka_unit_test(test_params),
      cmocka_unit_test(test_error_read_while_running),
      cmocka_unit_test(test_cudnn_parts),
  };
  return cmocka_run_group_tests_name("test_create", tests, setup, teardown);
}
