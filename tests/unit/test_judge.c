/* tests/unit/test_judge.c — the judge's parts that need no GPU
 * (judge/compare.c, judge/check.c, judge/task_read.c): the comparison of
 * outputs against the fp64 reference (tolerances by policy and dtype, NaN
 * and infinity rules, overflow of the reference past the dtype, strided
 * outputs, poisoned elements counted as unwritten), the static checks of a
 * unit against its task, and the task read back from `kfuse task`'s
 * output, or made in memory for kfuse compile's picker (the same task). tests/hacks/run.py --ci runs the whole judge on the fake driver. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "judge_int.h"
#include "kfuse/frontend.h"
#include "kfuse/compile.h"
#include "kfuse/task.h"

static kf_jvalue f32_value(int64_t rows, int64_t cols, int64_t row_stride) {
  kf_jvalue v;
  memset(&v, 0, sizeof v);
  snprintf(v.name, sizeof v.name, "y");
  v.type.kind = KF_TYPE_TENSOR;
  v.type.dtype = KF_DTYPE_F32;
  v.type.rank = 2;
  v.type.shape[0] = rows;
  v.type.shape[1] = cols;
  v.type.strides[0] = row_stride;
  v.type.strides[1] = 1;
  v.numel = rows * cols;
  v.bytes = ((rows - 1) * row_stride + cols) * 4;
  return v;
}

static void test_compare_basic(void **state) {
  (void)state;
  kf_jvalue v = f32_value(2, 3, 3);
  float got[6] = {1, 2, 3, 4, 5, 6};
  double ref[6] = {1, 2, 3, 4, 5, 6.0000001};
  kf_jcmp c;
  char why[512];
  kf_jtol tol = kf_jtol_for(KF_PRECISION_DEFAULT, KF_DTYPE_F32);
  assert_true(kf_jcompare(&v, got, ref, tol, 0xff, &c, why, sizeof why));
  ref[4] = 5.01; /* 2e-3 relative: over 1e-4 */
  assert_false(kf_jcompare(&v, got, ref, tol, 0xff, &c, why, sizeof why));
  assert_int_equal(c.bad, 1);
  assert_int_equal(c.unwritten, 0);
  assert_non_null(strstr(why, "[1, 1]"));
  /* the same error passes the bf16 policy */
  assert_true(kf_jcompare(&v, got, ref, kf_jtol_for(KF_PRECISION_BF16, KF_DTYPE_F32), 0xff, &c, why, sizeof why));
}

static void test_compare_poison_nan_inf(void **state) {
  (void)state;
  kf_jvalue v = f32_value(1, 4, 4);
  float got[4];
  memset(got, 0xff, sizeof got); /* poisoned: NaN */
  got[0] = 1;
  double ref[4] = {1, 2, NAN, 4};
  kf_jcmp c;
  char why[512];
  kf_jtol tol = kf_jtol_for(KF_PRECISION_DEFAULT, KF_DTYPE_F32);
  assert_false(kf_jcompare(&v, got, ref, tol, 0xff, &c, why, sizeof why));
  /* [1] and [3] unwritten; [2] is NaN where the reference is NaN: equal */
  assert_int_equal(c.bad, 2);
  assert_int_equal(c.unwritten, 2);
  assert_non_null(strstr(why, "never written"));
  /* f32 overflow: the reference 1e50 is inf in f32 */
  float g2[4] = {INFINITY, -INFINITY, 1, 2};
  double r2[4] = {1e50, -1e300, 1, 2};
  assert_true(kf_jcompare(&v, g2, r2, tol, 0xff, &c, why, sizeof why));
  /* an infinity where the reference is finite fails */
  g2[2] = INFINITY;
  assert_false(kf_jcompare(&v, g2, r2, tol, 0xff, &c, why, sizeof why));
}

static void test_compare_strided_and_scale(void **state) {
  (void)state;
  /* rows 5 floats apart: the elements between them are not compared */
  kf_jvalue v = f32_value(2, 2, 5);
  float got[7] = {1, 2, 99, 99, 99, 3, 4};
  double ref[4] = {1, 2, 3, 4};
  kf_jcmp c;
  char why[512];
  kf_jtol tol = kf_jtol_for(KF_PRECISION_DEFAULT, KF_DTYPE_F32);
  assert_true(kf_jcompare(&v, got, ref, tol, 0xff, &c, why, sizeof why));
  /* a near-zero reference element among large ones: held to atol x RMS */
  kf_jvalue w = f32_value(1, 2, 2);
  float g3[2] = {1000, 0.01f};
  double r3[2] = {1000, 0};
  assert_true(kf_jcompare(&w, g3, r3, tol, 0xff, &c, why, sizeof why));
  g3[1] = 1.0f; /* 1 > 1e-4 x RMS(707) */
  assert_false(kf_jcompare(&w, g3, r3, tol, 0xff, &c, why, sizeof why));
}

/* An output of several parts (compared on threads): the same verdict, the
 * first bad element in logical order, the counts summed, and the RMS of
 * the whole reference (a part of large values sets the absolute term of
 * a part of small ones) */
static void test_compare_parts(void **state) {
  (void)state;
  const int64_t rows = 4096, cols = 1024; /* 4M elements: four parts */
  kf_jvalue v = f32_value(rows, cols, cols);
  float *got = malloc(sizeof *got * (size_t)(rows * cols));
  double *ref = malloc(sizeof *ref * (size_t)(rows * cols));
  assert_non_null(got);
  assert_non_null(ref);
  for (int64_t i = 0; i < rows * cols; i++) {
    ref[i] = i < rows * cols / 2 ? 1e-3 * (double)(i % 7) : 100.0 + (double)(i % 5);
    got[i] = (float)ref[i];
  }
  kf_jcmp c;
  char why[512];
  kf_jtol tol = kf_jtol_for(KF_PRECISION_DEFAULT, KF_DTYPE_F32);
  assert_true(kf_jcompare(&v, got, ref, tol, 0xff, &c, why, sizeof why));
  /* 1e-3 off in the small half: within 1e-4 x RMS (about 72) */
  got[5] = (float)(ref[5] + 1e-3);
  assert_true(kf_jcompare(&v, got, ref, tol, 0xff, &c, why, sizeof why));
  /* bad elements in the fourth part and the second; one unwritten */
  got[3 * rows * cols / 4 + 10] = 1e6f;
  memset(&got[rows * cols / 4 + 3], 0xff, sizeof *got);
  assert_false(kf_jcompare(&v, got, ref, tol, 0xff, &c, why, sizeof why));
  assert_int_equal(c.bad, 2);
  assert_int_equal(c.unwritten, 1);
  int64_t first = rows * cols / 4 + 3;
  char at[64];
  snprintf(at, sizeof at, "[%lld, %lld]", (long long)(first / cols), (long long)(first % cols));
  assert_non_null(strstr(why, at));
  assert_true(c.max_abs > 9e5);
  free(got);
  free(ref);
}

static void test_tolerances(void **state) {
  (void)state;
  kf_jtol d = kf_jtol_for(KF_PRECISION_DEFAULT, KF_DTYPE_F32);
  assert_true(d.atol == 1e-4 && d.norm == 1e-4);
  assert_true(kf_jtol_for(KF_PRECISION_DEFAULT, KF_DTYPE_F16).rtol == 2e-3);
  assert_true(kf_jtol_for(KF_PRECISION_DEFAULT, KF_DTYPE_BF16).rtol == 1.6e-2);
  assert_true(kf_jtol_for(KF_PRECISION_TF32, KF_DTYPE_F32).rtol == 5e-3);
  assert_true(kf_jtol_for(KF_PRECISION_TF32, KF_DTYPE_F32).norm == 2e-3);
}

/* a task from the hack suite's model, read back */
static char g_dir[256];

static int make_task(void **state) {
  (void)state;
  const char *fx = getenv("KFUSE_HACKS_MODEL");
  if (!fx) return -1;
  snprintf(g_dir, sizeof g_dir, "/tmp/kfuse_test_judge_%d", (int)getpid());
  kf_diag d;
  kf_diag_init(&d, NULL, NULL);
  kf_load_options lo;
  kf_load_options_init(&lo);
  kf_graph *g = NULL;
  if (kf_model_load(fx, &lo, &g, &d)) return -1;
  kf_compile_options o;
  kf_compile_options_init(&o);
  kf_status st = kf_task_write(g, &o, 0, g_dir, &d);
  kf_graph_destroy(g);
  return st ? -1 : 0;
}

static int remove_task(void **state) {
  (void)state;
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void test_task_and_checks(void **state) {
  (void)state;
  kf_diag d;
  kf_diag_init(&d, NULL, NULL);
  kf_jtask t;
  assert_int_equal(kf_jtask_read(g_dir, &t, &d), KF_OK);
  assert_int_equal(t.n_in, 1);
  assert_int_equal(t.n_out, 1);
  assert_int_equal(t.in[0].bytes, 2048 * 1024 * 4);
  assert_int_equal(t.floor_bytes, 2 * 2048 * 1024 * 4);
  char bdir[300];
  snprintf(bdir, sizeof bdir, "%s/builtin", g_dir);
  kf_unit *u = NULL;
  assert_int_equal(kf_unit_read_dir(bdir, &u, &d), KF_OK);
  kf_judge_options o;
  kf_judge_options_init(&o);
  kf_strbuf why;
  kf_strbuf_init(&why);
  assert_true(kf_junit_check(&t, u, &o, &why));
  /* an oversized block, an input that does not exist, a memset of an input */
  u->steps[0].block[0] = 2048;
  u->steps[0].args[0].index = 3;
  assert_false(kf_junit_check(&t, u, &o, &why));
  assert_non_null(strstr(why.data, "block (2048, 1, 1)"));
  assert_non_null(strstr(why.data, "input 3, which does not exist"));
  u->steps[0].block[0] = 256;
  u->steps[0].args[0].index = 0;
  u->steps[0].args[0].i = 2048 * 1024 * 4; /* one past the end */
  kf_strbuf_fini(&why);
  kf_strbuf_init(&why);
  assert_false(kf_junit_check(&t, u, &o, &why));
  assert_non_null(strstr(why.data, "points 8388608 bytes into input 0"));
  kf_strbuf_fini(&why);
  kf_unit_destroy(u);
  kf_jtask_fini(&t);
  /* a task.json that disagrees with group.mlir is refused */
  char p[300];
  snprintf(p, sizeof p, "%s/task.json", g_dir);
  FILE *f = fopen(p, "r+");
  assert_non_null(f);
  char buf[8192];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = 0;
  char *s = strstr(buf, "2048, 1024");
  assert_non_null(s);
  s[0] = '4'; /* 4048 rows */
  rewind(f);
  fwrite(buf, 1, n, f);
  fclose(f);
  assert_int_not_equal(kf_jtask_read(g_dir, &t, &d), KF_OK);
}

/* The task kfuse compile's picker judges against, made in memory from the
 * group (kf_jtask_from_group), equals the one written to disk and read back
 * (kf_task_write_group, kf_jtask_read): the same graph (printed), values,
 * precision, target, key, kind and floor, for every kernel group of
 * fixtures with convolutions, attention, scatters, bf16 and scalars. */
static char *printed(const kf_graph *g) {
  kf_strbuf b;
  kf_strbuf_init(&b);
  assert_int_equal(kf_graph_print(g, kf_write_strbuf, &b), KF_OK);
  /* the function's name: group_<id> in both */
  return b.data;
}

static void same_value(const kf_jvalue *a, const kf_jvalue *b) {
  assert_string_equal(a->name, b->name);
  assert_int_equal(a->type.dtype, b->type.dtype);
  assert_int_equal(a->type.rank, b->type.rank);
  for (int d = 0; d < a->type.rank; d++) {
    assert_int_equal(a->type.shape[d], b->type.shape[d]);
    if (a->type.shape[d] > 1) assert_int_equal(a->type.strides[d], b->type.strides[d]);
  }
  assert_int_equal(a->type.offset, b->type.offset);
  assert_int_equal(a->numel, b->numel);
  assert_int_equal(a->bytes, b->bytes);
}

static void test_task_in_memory(void **state) {
  (void)state;
  const char *fx = getenv("KFUSE_FIXTURES");
  assert_non_null(fx);
  static const char *names[] = {"tv_bottleneck.default", "swin_block.core", "llama_layer_bf16.default",
                                "attention.default", "scatters.core", "special_values.default"};
  int compared = 0;
  for (size_t m = 0; m < sizeof names / sizeof *names; m++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.pt2", fx, names[m]);
    kf_diag d;
    kf_diag_init(&d, NULL, NULL);
    kf_load_options lo;
    kf_load_options_init(&lo);
    kf_graph *g = NULL;
    assert_int_equal(kf_model_load(path, &lo, &g, &d), KF_OK);
    kf_compile_options o;
    kf_compile_options_init(&o);
    kf_partition *p = NULL;
    assert_int_equal(kf_task_partition(g, &o, &p, &d), KF_OK);
    for (int i = 0; i < p->n_groups; i++) {
      const kf_group *grp = &p->groups[i];
      if (grp->kind == KF_GROUP_VIEW) continue;
      char dir[300];
      snprintf(dir, sizeof dir, "/tmp/kfuse_test_judge_mem_%d_%zu_%d", (int)getpid(), m, i);
      assert_int_equal(kf_task_write_group(g, p, grp, &o, dir, &d), KF_OK);
      kf_jtask a, b;
      kf_status sa = kf_jtask_read(dir, &a, &d), sb = kf_jtask_from_group(g, grp, &o, &b, &d);
      char cmd[400];
      snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
      assert_int_equal(system(cmd), 0);
      assert_int_equal(sa, sb); /* both refuse a task with a scalar output alike */
      if (sa) continue;
      char *ta = printed(a.graph), *tb = printed(b.graph);
      if (strcmp(ta, tb) != 0) fail_msg("%s group %d: the graphs differ:\n%s\n----\n%s", names[m], grp->id, ta, tb);
      free(ta);
      free(tb);
      assert_int_equal(a.n_in, b.n_in);
      assert_int_equal(a.n_out, b.n_out);
      for (int k = 0; k < a.n_in; k++) same_value(&a.in[k], &b.in[k]);
      for (int k = 0; k < a.n_out; k++) same_value(&a.out[k], &b.out[k]);
      assert_int_equal(a.precision, b.precision);
      assert_int_equal(a.has_conv, b.has_conv);
      assert_int_equal(a.target.sm, b.target.sm);
      assert_int_equal(a.target.arch_specific, b.target.arch_specific);
      assert_int_equal(a.group, b.group);
      assert_string_equal(a.key, b.key);
      assert_string_equal(a.kind, b.kind);
      assert_int_equal(a.floor_bytes, b.floor_bytes);
      assert_true(a.floor_flops == b.floor_flops);
      assert_true(a.eager_ms < 0 && b.eager_ms < 0 && a.compile_ms < 0 && b.compile_ms < 0);
      kf_jtask_fini(&a);
      kf_jtask_fini(&b);
      compared++;
    }
    kf_partition_destroy(p);
    kf_graph_destroy(g);
  }
  assert_true(compared > 20);
}

/* The workers run a unit's code: they start without the secrets of the
 * process that judges (API keys, the serve token), with what CUDA, the
 * loader and kfuse need */
static void test_worker_env(void **state) {
  (void)state;
  setenv("OPENAI_API_KEY", "sk-test-secret", 1);
  setenv("KFUSE_SERVE_TOKEN", "tok-secret", 1);
  setenv("KFUSE_CACHE_REMOTE_BEARER", "bearer-secret", 1);
  setenv("AWS_SECRET_ACCESS_KEY", "aws-secret", 1);
  setenv("KFUSE_LIBCUDA", "/x/libcuda.so.1", 1);
  setenv("CUDA_VISIBLE_DEVICES", "1", 1);
  setenv("ASAN_OPTIONS", "detect_leaks=0", 1);
  char **env = kf_jworker_env();
  assert_non_null(env);
  bool cuda = false, libcuda = false, path = getenv("PATH") == NULL, asan = false;
  for (char **e = env; *e; e++) {
    assert_null(strstr(*e, "secret"));
    cuda |= strcmp(*e, "CUDA_VISIBLE_DEVICES=1") == 0;
    libcuda |= strcmp(*e, "KFUSE_LIBCUDA=/x/libcuda.so.1") == 0;
    path |= strncmp(*e, "PATH=", 5) == 0;
    asan |= strcmp(*e, "ASAN_OPTIONS=detect_leaks=0") == 0;
  }
  assert_true(cuda && libcuda && path && asan);
  free(env);
  unsetenv("OPENAI_API_KEY");
  unsetenv("KFUSE_SERVE_TOKEN");
  unsetenv("KFUSE_CACHE_REMOTE_BEARER");
  unsetenv("AWS_SECRET_ACCESS_KEY");
  unsetenv("KFUSE_LIBCUDA");
  unsetenv("CUDA_VISIBLE_DEVICES");
  unsetenv("ASAN_OPTIONS");
}

/* task.json's numbers are doubles: each must be a whole number in range
 * where the judge makes an integer of it, and a time finite */
static void edit_task(const char *dir, const char *text_from, const char *text_to) {
  char p[512];
  snprintf(p, sizeof p, "%s/task.json", dir);
  FILE *f = fopen(p, "r");
  assert_non_null(f);
  static char buf[1 << 20];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *at = strstr(buf, text_from);
  assert_non_null(at);
  char out[1 << 20];
  snprintf(out, sizeof out, "%.*s%s%s", (int)(at - buf), buf, text_to, at + strlen(text_from));
  f = fopen(p, "w");
  assert_non_null(f);
  fputs(out, f);
  fclose(f);
}

static void test_task_ranges(void **state) {
  (void)state;
  kf_diag d;
  kf_diag_init(&d, NULL, NULL);
  char copy[600], cmd[2048];
  snprintf(copy, sizeof copy, "%s_ranges", g_dir);
  static const struct {
    const char *from, *to;
    bool ok;
  } cases[] = {
      {"\"bytes\":\t", "\"bytes\":\t1e300, \"was\":\t", false}, /* floor bytes past int64 */
      {"\"bytes\":\t", "\"bytes\":\t2.5, \"was\":\t", false},   /* not whole */
      {"\"offset\":\t0", "\"offset\":\t1e300", false},          /* a value's offset */
      {"\"group\":\t0", "\"group\":\t1e12", false},             /* past int */
      {"\"eager_ms\":\tnull", "\"eager_ms\":\t1e999", true},    /* infinity: no baseline */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", copy, g_dir, copy);
    assert_int_equal(system(cmd), 0);
    edit_task(copy, cases[i].from, cases[i].to);
    kf_jtask t;
    kf_status st = kf_jtask_read(copy, &t, &d);
    assert_int_equal(st == KF_OK, cases[i].ok);
    if (st == KF_OK) {
      assert_true(t.eager_ms < 0);
      kf_jtask_fini(&t);
    }
  }
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", copy);
  assert_int_equal(system(cmd), 0);
}

/* The eager analogue of the hacks' task (y = x * sigmoid(x)): one op a
 * group, so two built-in units (sigmoid, then mul), each compiled and
 * checked against its own group's task as the judge builds it; and the
 * analogue's time, which needs a GPU: without one, -1 and why */
static void test_eager_analogue(void **state) {
  (void)state;
  kf_diag d;
  kf_diag_init(&d, NULL, NULL);
  kf_jtask t;
  assert_int_equal(kf_jtask_read(g_dir, &t, &d), KF_OK);
  kf_partition *p = NULL;
  kf_unit **us = NULL;
  const kf_group **gs = NULL;
  int n = 0;
  char why[400] = "";
  assert_int_equal(kf_jeager_units(&t, &p, &us, &gs, &n, why, sizeof why), KF_OK);
  assert_int_equal(n, 2);
  kf_judge_options o;
  kf_judge_options_init(&o);
  for (int i = 0; i < n; i++) {
    assert_non_null(us[i]->cubin);
    assert_int_equal(gs[i]->n_ops, 1);
    kf_compile_options co;
    kf_compile_options_init(&co);
    kf_jtask gt;
    assert_int_equal(kf_jtask_from_group(t.graph, gs[i], &co, &gt, &d), KF_OK);
    kf_strbuf cw;
    kf_strbuf_init(&cw);
    assert_true(kf_junit_check(&gt, us[i], &o, &cw));
    kf_strbuf_fini(&cw);
    kf_jtask_fini(&gt);
    kf_unit_destroy(us[i]);
  }
  free(us);
  free(gs);
  kf_partition_destroy(p);
  if (!getenv("KFUSE_LIBCUDA")) { /* no GPU here (CI): the time is not made up */
    setenv("KFUSE_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
    double ms = 0;
    int k = 0;
    o.timeout_s = 30;
    assert_int_equal(kf_jeager_ms(&t, &o, &ms, &k, why, sizeof why, &d), KF_OK);
    assert_true(ms < 0 && k == 0 && why[0]);
    unsetenv("KFUSE_LIBCUDA");
  }
  kf_jtask_fini(&t);
}

/* compute-sanitizer is found by $KFUSE_COMPUTE_SANITIZER (an absolute
 * path to an executable), else under $CUDA_HOME, ..., else on $PATH */
static void test_sanitizer_find(void **state) {
  (void)state;
  char dir[] = "/tmp/kfuse-san-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char tool[64], buf[4096];
  snprintf(tool, sizeof tool, "%s/compute-sanitizer", dir);
  FILE *f = fopen(tool, "w");
  assert_non_null(f);
  fputs("#!/bin/sh\nexit 0\n", f);
  fclose(f);
  const char *old_path = getenv("PATH"), *old_home = getenv("CUDA_HOME");
  char *keep_path = old_path ? strdup(old_path) : NULL, *keep_home = old_home ? strdup(old_home) : NULL;
  setenv("KFUSE_COMPUTE_SANITIZER", tool, 1);
  assert_false(kf_jsanitizer_find(buf, sizeof buf)); /* not executable yet */
  assert_int_equal(chmod(tool, 0755), 0);
  assert_true(kf_jsanitizer_find(buf, sizeof buf));
  assert_string_equal(buf, tool);
  setenv("KFUSE_COMPUTE_SANITIZER", "compute-sanitizer", 1); /* relative: refused */
  assert_false(kf_jsanitizer_find(buf, sizeof buf));
  unsetenv("KFUSE_COMPUTE_SANITIZER");
  setenv("CUDA_HOME", "/nonexistent-cuda", 1);
  char path[256];
  snprintf(path, sizeof path, "/nonexistent-bin:%s", dir);
  setenv("PATH", path, 1);
  assert_true(kf_jsanitizer_find(buf, sizeof buf));
  /* a machine with the toolkit finds /usr/local/cuda's before $PATH's */
  assert_true(strcmp(buf, tool) == 0 || strcmp(buf, "/usr/local/cuda/bin/compute-sanitizer") == 0);
  if (keep_path) setenv("PATH", keep_path, 1);
  else unsetenv("PATH");
  if (keep_home) setenv("CUDA_HOME", keep_home, 1);
  else unsetenv("CUDA_HOME");
  free(keep_path);
  free(keep_home);
  unlink(tool);
  rmdir(dir);
}

/* The CPU emulation compiles unit sources with the host compiler: a
 * source that includes a host file is refused before it runs */
static void test_emu_refuses_includes(void **state) {
  (void)state;
  kf_unit u;
  memset(&u, 0, sizeof u);
  u.name = "inc";
  u.source = "#include \"/etc/hostname\"\nextern \"C\" __global__ void k() {}\n";
  kf_unit *us[1] = {&u};
  char dir[] = "/tmp/kfuse-emu-inc-XXXXXX";
  assert_non_null(mkdtemp(dir));
  kf_strbuf log = {0};
  kf_diag d;
  kf_diag_init(&d, kf_diag_to_strbuf, &log);
  kf_emu *e = NULL;
  assert_int_equal(kf_emu_build(us, 1, dir, &e, &d), KF_ERR_INVALID);
  assert_null(e);
  assert_non_null(log.data);
  assert_non_null(strstr(log.data, "refused before compiling"));
  kf_strbuf_fini(&log);
  assert_int_equal(rmdir(dir), 0); /* nothing was written */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_compare_basic),
      cmocka_unit_test(test_compare_poison_nan_inf),
      cmocka_unit_test(test_compare_strided_and_scale),
      cmocka_unit_test(test_compare_parts),
      cmocka_unit_test(test_tolerances),
      cmocka_unit_test_setup_teardown(test_task_and_checks, make_task, remove_task),
      cmocka_unit_test_setup_teardown(test_eager_analogue, make_task, remove_task),
      cmocka_unit_test_setup_teardown(test_task_ranges, make_task, remove_task),
      cmocka_unit_test(test_task_in_memory),
      cmocka_unit_test(test_worker_env),
      cmocka_unit_test(test_sanitizer_find),
      cmocka_unit_test(test_emu_refuses_includes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
