/* judge/module_check_worker.c — `kfuse module-check-worker MODEL DIR SM ARCH
 * PRECISION TF32`: the GPU side of kfuse compile's module check (judge/module_check.c
 * says why and starts it). A fresh process image: the compiling process
 * has run NVRTC, after which CUDA does not start in a forked child
 * (judge/worker.c).
 *
 * It finds the GPU (none: DIR/ready.json says so and it ends), builds the
 * per-op fp64 reference of MODEL for that target and precision into DIR
 * and loads it, and writes DIR/ready.json; then, for each line
 * "SPEC<TAB>RESULT" on its stdin, checks the module SPEC names and writes
 * RESULT, until its stdin ends. Files are written under a temporary name
 * and renamed.
 *
 * A check loads the compiled module (dlopen, with its own copy of the
 * runtime, unloaded after; convolutions on cuDNN's heuristics' engines,
 * kfuse_options.conv_search = 0), draws `sets` input sets (floats: set 0
 * normal, set 1 uniform in [-1, 1), set 2 uniform in [0, 1), repeating;
 * integers uniform in [int_lo, int_hi)), runs both and compares every output by
 * its relative error norm ||y - ref|| / ||ref|| (a NaN or infinity where
 * the reference has none, or the reverse, is an infinite error). On a
 * mismatch it finds the first group of the compiled module whose outputs
 * diverge from the reference's values of the same name: on the failing
 * set, the reference run once (its arena keeps every value), then a
 * bisection over the compiled module's groups, each probe a run of the
 * plan's steps up to that group (kfuse_model_debug_run) and its outputs
 * read from the arena. The result is JSON: {"gpu", "device", "sets",
 * "max_rel_err", "passed", "why", "outputs": [...], "first_bad_group":
 * {"group", "what", "value", "rel_err", "unchecked_before": the groups
 * between the last one seen to match and this one that could not be
 * compared}, "repeat_max_diff": the largest
 * difference between two runs of the module on the first set, which a
 * module without a race has 0} or {"error": "..."}. The bisection assumes
 * the error grows along the plan; a racing module can mislead it (the
 * probes are in the result). */
#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cuda.h>

#include "judge_int.h"
#include "kfuse/interp.h"
#include "kfr_driver.h"
#include "kfuse_runtime.h"

typedef struct drv {
  const kfr_driver *cu;
  CUresult (*DeviceGetCount)(int *);
  CUresult (*DeviceGet)(CUdevice *, int);
  CUresult (*DeviceGetName)(char *, int, CUdevice);
  CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*CtxPushCurrent)(CUcontext);
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*StreamCreate)(CUstream *, unsigned);
  CUresult (*StreamSynchronize)(CUstream);
  CUresult (*StreamDestroy)(CUstream);
} drv;

typedef struct mod {
  void *lib;
  kfuse_model *m;
  void (*options_init)(kfuse_options *);
  int (*create)(const kfuse_options *, kfuse_model **);
  int (*run)(kfuse_model *, void *, const void *const *, void *const *);
  int (*debug_run)(kfuse_model *, void *, const void *const *, void *const *, uint32_t);
  int (*debug_arena)(const kfuse_model *, uint64_t *, uint64_t *, uint32_t *);
  void (*destroy)(kfuse_model *);
  const char *(*error)(const kfuse_model *);
  const char *(*last_error)(void);
  CUdeviceptr *out; /* its output buffers */
  /* the reference only: its spec, outputs */
  cJSON *spec;
  int n_out;
  struct tdesc *otd;
} mod;

static char g_err[2048];

#define FAIL(...)                                        \
  do {                                                   \
    snprintf(g_err, sizeof g_err, __VA_ARGS__);          \
    goto done;                                           \
  } while (0)

/* The driver through the runtime's loader (as the judge's GPU worker
 * opens it: KFUSE_LIBCUDA names another library, the tests' fake driver);
 * it has run cuInit. */
static bool drv_load(drv *d) {
  memset(d, 0, sizeof *d);
  const kfr_driver *cu = NULL;
  if (kfr_driver_load(&cu, g_err, sizeof g_err) != KFUSE_OK || !cu) return false;
  d->cu = cu;
  d->DeviceGetCount = cu->cuDeviceGetCount;
  d->DeviceGet = cu->cuDeviceGet;
  d->DeviceGetName = cu->cuDeviceGetName;
  d->PrimaryCtxRetain = cu->cuDevicePrimaryCtxRetain;
  d->CtxPushCurrent = cu->cuCtxPushCurrent;
  d->MemAlloc = cu->cuMemAlloc;
  d->MemFree = cu->cuMemFree;
  d->MemcpyHtoD = cu->cuMemcpyHtoD;
  d->MemcpyDtoH = cu->cuMemcpyDtoH;
  d->StreamCreate = cu->cuStreamCreate;
  d->StreamSynchronize = cu->cuStreamSynchronize;
  d->StreamDestroy = cu->cuStreamDestroy;
  return true;
}

static const char *cu_str(const drv *d, CUresult r) {
  static char b[256];
  return kfr_cu_describe(d->cu, r, b, sizeof b);
}

static bool mod_load(mod *m, const char *path) {
  /* the reference's spec and outputs stay */
  cJSON *spec = m->spec;
  int n_out = m->n_out;
  struct tdesc *otd = m->otd;
  memset(m, 0, sizeof *m);
  m->spec = spec;
  m->n_out = n_out;
  m->otd = otd;
  m->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!m->lib) {
    snprintf(g_err, sizeof g_err, "cannot load %s: %s", path, dlerror());
    return false;
  }
  struct {
    void **p;
    const char *n;
  } s[] = {{(void **)&m->options_init, "kfuse_options_init"},
           {(void **)&m->create, "kfuse_model_create"},
           {(void **)&m->run, "kfuse_model_run"},
           {(void **)&m->debug_run, "kfuse_model_debug_run"},
           {(void **)&m->debug_arena, "kfuse_model_debug_arena"},
           {(void **)&m->destroy, "kfuse_model_destroy"},
           {(void **)&m->error, "kfuse_model_error"},
           {(void **)&m->last_error, "kfuse_last_error"}};
  for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
    if (!(*s[i].p = dlsym(m->lib, s[i].n))) {
      snprintf(g_err, sizeof g_err, "%s has no %s", path, s[i].n);
      return false;
    }
  return true;
}

/* ---- values on the host ---- */

typedef struct tdesc {
  kf_dtype dtype;
  int rank;
  int64_t shape[KF_MAX_RANK], strides[KF_MAX_RANK];
  int64_t numel;
} tdesc;

static bool desc_of(const cJSON *o, tdesc *t) {
  memset(t, 0, sizeof *t);
  t->dtype = (kf_dtype)(int)cJSON_GetNumberValue(cJSON_GetObjectItem(o, "dtype"));
  const cJSON *sh = cJSON_GetObjectItem(o, "shape"), *st = cJSON_GetObjectItem(o, "strides");
  t->rank = cJSON_GetArraySize(sh);
  if (t->rank > KF_MAX_RANK) return false;
  t->numel = 1;
  for (int i = 0; i < t->rank; i++) {
    t->shape[i] = (int64_t)cJSON_GetNumberValue(cJSON_GetArrayItem(sh, i));
    t->numel *= t->shape[i];
  }
  /* row-major when no strides are given */
  int64_t s = 1;
  for (int i = t->rank - 1; i >= 0; i--) {
    t->strides[i] = st ? (int64_t)cJSON_GetNumberValue(cJSON_GetArrayItem(st, i)) : s;
    s *= t->shape[i];
  }
  return true;
}

static bool same_shape(const tdesc *a, const tdesc *b) {
  if (a->rank != b->rank || a->dtype != b->dtype) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

/* The value at device address p with t's strides, in logical order, as
 * doubles (malloc'd), or NULL (g_err says why). */
static double *read_value(const drv *d, CUdeviceptr p, const tdesc *t) {
  int64_t ext = 1;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] == 0) return calloc(1, sizeof(double));
    ext += (t->shape[i] - 1) * t->strides[i];
  }
  size_t es = kf_dtype_size(t->dtype);
  void *raw = malloc((size_t)ext * es + 1);
  double *out = malloc((size_t)(t->numel > 0 ? t->numel : 1) * sizeof *out);
  if (!raw || !out) {
    free(raw);
    free(out);
    snprintf(g_err, sizeof g_err, "out of host memory reading a value back");
    return NULL;
  }
  CUresult r = d->MemcpyDtoH(raw, p, (size_t)ext * es);
  if (r != CUDA_SUCCESS) {
    snprintf(g_err, sizeof g_err, "cuMemcpyDtoH failed: %s", cu_str(d, r));
    free(raw);
    free(out);
    return NULL;
  }
  int64_t idx[KF_MAX_RANK] = {0};
  for (int64_t e = 0; e < t->numel; e++) {
    int64_t off = 0;
    for (int k = 0; k < t->rank; k++) off += idx[k] * t->strides[k];
    out[e] = kf_elem_get(t->dtype, raw, off);
    for (int k = t->rank - 1; k >= 0; k--) {
      if (++idx[k] < t->shape[k]) break;
      idx[k] = 0;
    }
  }
  free(raw);
  return out;
}

typedef struct input {
  tdesc t;
  int64_t int_lo, int_hi; /* integers: int_lo .. int_hi - 1; int_hi 0 for floats */
  void *host;
  CUdeviceptr dev;
  size_t bytes;
} input;

static void fill(input *in, int set_k, uint64_t *s) {
  for (int64_t e = 0; e < in->t.numel; e++) {
    double v = in->int_hi > 0 ? (double)(in->int_lo + (int64_t)(kf_mc_next(s) % (uint64_t)(in->int_hi - in->int_lo)))
                              : kf_mc_draw(set_k, s);
    kf_elem_set(in->t.dtype, in->host, e, v);
  }
}

/* ---- locating values ---- */

static CUdeviceptr where(const cJSON *v, uint64_t arena, const input *ins, int n_in, const CUdeviceptr *outs,
                         int n_out) {
  const char *kind = cJSON_GetStringValue(cJSON_GetObjectItem(v, "kind"));
  int idx = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(v, "index"));
  CUdeviceptr off = (CUdeviceptr)cJSON_GetNumberValue(cJSON_GetObjectItem(v, "byte_offset"));
  if (!kind) return 0;
  if (strcmp(kind, "arena") == 0) return (CUdeviceptr)arena + off;
  if (strcmp(kind, "output") == 0 && idx >= 0 && idx < n_out) return outs[idx] + off;
  if (strcmp(kind, "input") == 0 && idx >= 0 && idx < n_in) return ins[idx].dev + off;
  return 0;
}

static const cJSON *ref_value(const cJSON *ref_groups, const char *name) {
  const cJSON *g;
  cJSON_ArrayForEach(g, ref_groups) {
    const cJSON *v;
    cJSON_ArrayForEach(v, cJSON_GetObjectItem(g, "values")) {
      const char *n = cJSON_GetStringValue(cJSON_GetObjectItem(v, "name"));
      if (n && strcmp(n, name) == 0) return v;
    }
  }
  return NULL;
}

typedef struct ctx {
  const drv *d;
  CUstream stream;
  mod *a;
  const mod *r;
  input *ins;
  int n_in, n_out;
  const void **in_ptrs;
  void **out_a;
  const CUdeviceptr *oa, *or_; /* the output buffers of a and r */
  const cJSON *groups, *ref_groups;
  uint64_t arena_a, arena_r;
  double bound;
  /* the worst value of the last probe */
  char worst_name[256];
  double worst;
} ctx;

/* Group gi (an item of the module's groups) after a prefix run: its
 * values' largest relative error against the reference's (< 0: none
 * comparable), or NAN on a failure (g_err). */
static double probe(ctx *c, const cJSON *grp, bool run) {
  uint32_t end = (uint32_t)cJSON_GetNumberValue(cJSON_GetObjectItem(grp, "end_step"));
  if (run) {
    int rc = c->a->debug_run(c->a->m, c->stream, c->in_ptrs, (void *const *)c->out_a, end);
    if (rc) {
      snprintf(g_err, sizeof g_err, "kfuse_model_debug_run: %s", c->a->error(c->a->m));
      return NAN;
    }
    CUresult r = c->d->StreamSynchronize(c->stream);
    if (r != CUDA_SUCCESS) {
      snprintf(g_err, sizeof g_err, "a prefix run failed on the GPU: %s", cu_str(c->d, r));
      return NAN;
    }
  }
  double worst = -1;
  const cJSON *v;
  cJSON_ArrayForEach(v, cJSON_GetObjectItem(grp, "values")) {
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(v, "name"));
    const cJSON *rv = name ? ref_value(c->ref_groups, name) : NULL;
    tdesc ta, tr;
    if (!rv || !desc_of(v, &ta) || !desc_of(rv, &tr) || !same_shape(&ta, &tr)) continue;
    CUdeviceptr pa = where(v, c->arena_a, c->ins, c->n_in, c->oa, c->n_out);
    CUdeviceptr pr = where(rv, c->arena_r, c->ins, c->n_in, c->or_, c->n_out);
    if (!pa || !pr) continue;
    double *ya = read_value(c->d, pa, &ta), *yr = ya ? read_value(c->d, pr, &tr) : NULL;
    if (!ya || !yr) {
      free(ya);
      free(yr);
      return NAN;
    }
    double e = kf_mc_rel_err(ya, yr, ta.numel);
    free(ya);
    free(yr);
    if (e > worst) {
      worst = e;
      snprintf(c->worst_name, sizeof c->worst_name, "%s", name);
    }
  }
  c->worst = worst;
  return worst;
}

static bool create(const drv *d, mod *m, const cJSON *spec, int n_out, const tdesc *otd) {
  const char *path = cJSON_GetStringValue(cJSON_GetObjectItem(spec, "path"));
  const char *w = cJSON_GetStringValue(cJSON_GetObjectItem(spec, "weights"));
  if (!path || !mod_load(m, path)) return false;
  kfuse_options o;
  m->options_init(&o);
  o.weights_path = w;
  /* cuDNN's heuristics pick each convolution's engine: the timed search
   * would choose on this machine, now, and the user's create searches
   * again on theirs, so it verifies no more of what ships; on a fresh
   * machine it is most of the check's time (ResNet-50: 15.7 of 16.6 s) */
  o.conv_search = 0;
  if (m->create(&o, &m->m)) {
    snprintf(g_err, sizeof g_err, "creating %s failed: %s", path, m->last_error());
    return false;
  }
  m->out = calloc((size_t)n_out + 1, sizeof *m->out);
  if (!m->out) return false;
  for (int i = 0; i < n_out; i++) {
    size_t bytes = (size_t)otd[i].numel * kf_dtype_size(otd[i].dtype);
    CUresult r = d->MemAlloc(&m->out[i], bytes ? bytes : 1);
    if (r != CUDA_SUCCESS) {
      snprintf(g_err, sizeof g_err, "cuMemAlloc of output %d (%zu bytes): %s", i, bytes, cu_str(d, r));
      return false;
    }
  }
  return true;
}

/* A number of o, or dflt */
static double num_or(const cJSON *o, const char *key, double dflt) {
  const cJSON *v = cJSON_GetObjectItem(o, key);
  return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : dflt;
}

/* One check's state: the module a under check, the reference r, the
 * unrounded model u (or NULL), their inputs and outputs on the GPU */
typedef struct chk {
  const drv *d;
  const mod *r, *u;
  mod a;
  input *ins;
  tdesc *otd;
  double **ya, **yr; /* the last set's outputs: the module's, the reference's */
  const void **in_ptrs;
  void **out_a, **out_r, **out_u;
  int n_in, n_out;
  CUstream stream;
  double bound; /* the first bad output's (the search's) */
  double t_create, t_runs, t_ref, t_search;
} chk;

#define ERR(...)                                \
  do {                                          \
    snprintf(g_err, sizeof g_err, __VA_ARGS__); \
    return false;                               \
  } while (0)

/* The spec's inputs (host and device buffers) and outputs, checked
 * against the reference's; the module created and a stream made. */
static bool chk_setup(chk *c, const cJSON *spec) {
  const drv *d = c->d;
  CUresult cr;
  const cJSON *jin = cJSON_GetObjectItem(spec, "inputs"), *jout = cJSON_GetObjectItem(spec, "outputs");
  int n_in = c->n_in = cJSON_GetArraySize(jin);
  int n_out = c->n_out = cJSON_GetArraySize(jout);
  c->ins = calloc((size_t)n_in + 1, sizeof *c->ins);
  c->otd = calloc((size_t)n_out + 1, sizeof *c->otd);
  c->in_ptrs = calloc((size_t)n_in + 1, sizeof *c->in_ptrs);
  c->out_a = calloc((size_t)n_out + 1, sizeof *c->out_a);
  c->out_r = calloc((size_t)n_out + 1, sizeof *c->out_r);
  c->ya = calloc((size_t)n_out + 1, sizeof *c->ya);
  c->yr = calloc((size_t)n_out + 1, sizeof *c->yr);
  if (!c->ins || !c->otd || !c->in_ptrs || !c->out_a || !c->out_r || !c->ya || !c->yr) ERR("out of host memory");
  for (int i = 0; i < n_in; i++) {
    input *in = &c->ins[i];
    const cJSON *e = cJSON_GetArrayItem(jin, i);
    if (!desc_of(e, &in->t)) ERR("input %d: rank over %d", i, KF_MAX_RANK);
    const cJSON *hi = cJSON_GetObjectItem(e, "int_hi"), *lo = cJSON_GetObjectItem(e, "int_lo");
    in->int_hi = hi ? (int64_t)cJSON_GetNumberValue(hi) : 0;
    in->int_lo = lo ? (int64_t)cJSON_GetNumberValue(lo) : 0;
    if (!kf_dtype_is_float(in->t.dtype) && in->int_hi < 1) in->int_hi = 2;
    if (in->int_lo < 0 || in->int_lo >= in->int_hi) in->int_lo = 0;
    in->bytes = (size_t)in->t.numel * kf_dtype_size(in->t.dtype);
    in->host = malloc(in->bytes + 1);
    if (!in->host) ERR("out of host memory for input %d", i);
    if ((cr = d->MemAlloc(&in->dev, in->bytes ? in->bytes : 1)))
      ERR("cuMemAlloc of input %d (%zu bytes): %s", i, in->bytes, cu_str(d, cr));
    c->in_ptrs[i] = (const void *)(uintptr_t)in->dev;
  }
  for (int i = 0; i < n_out; i++)
    if (!desc_of(cJSON_GetArrayItem(jout, i), &c->otd[i])) ERR("output %d: rank over %d", i, KF_MAX_RANK);
  if (n_out != c->r->n_out) ERR("the module has %d outputs, the reference %d", n_out, c->r->n_out);
  for (int i = 0; i < n_out; i++)
    if (!same_shape(&c->otd[i], &c->r->otd[i]))
      ERR("output %d of the module is not the reference's (dtype or shape)", i);
  double tc = kf_now_s();
  if (!create(d, &c->a, cJSON_GetObjectItem(spec, "module"), n_out, c->otd)) return false;
  c->t_create = kf_now_s() - tc;
  for (int i = 0; i < n_out; i++) {
    c->out_a[i] = (void *)(uintptr_t)c->a.out[i];
    c->out_r[i] = (void *)(uintptr_t)c->r->out[i];
  }
  if (c->u && c->u->m && c->u->n_out == n_out) {
    c->out_u = calloc((size_t)n_out + 1, sizeof *c->out_u);
    if (!c->out_u) ERR("out of host memory");
    for (int i = 0; i < n_out; i++) c->out_u[i] = (void *)(uintptr_t)c->u->out[i];
  }
  if ((cr = d->StreamCreate(&c->stream, CU_STREAM_NON_BLOCKING))) ERR("cuStreamCreate: %s", cu_str(d, cr));
  return true;
}

/* Runs m on the check's inputs into outs and waits; what runs it is. */
static bool run_model(chk *c, const mod *m, void **outs, const char *what) {
  CUresult cr;
  if (m->run(m->m, c->stream, c->in_ptrs, (void *const *)outs)) ERR("running %s: %s", what, m->error(m->m));
  if ((cr = c->d->StreamSynchronize(c->stream))) ERR("%s's run failed on the GPU: %s", what, cu_str(c->d, cr));
  return true;
}

/* The module run again on the inputs of the last set: the largest
 * difference from that set's outputs (a module whose runs differ races
 * somewhere), or -1 on a failure (g_err) */
static double repeat_diff(chk *c) {
  if (!run_model(c, &c->a, c->out_a, "the module")) return -1;
  double diff = 0;
  for (int i = 0; i < c->n_out; i++) {
    double *y2 = read_value(c->d, c->a.out[i], &c->otd[i]);
    if (!y2) return -1;
    for (int64_t e = 0; e < c->otd[i].numel; e++) {
      double dd = fabs(y2[e] - c->ya[i][e]);
      if (dd > diff || (isnan(y2[e]) != isnan(c->ya[i][e]))) diff = isnan(dd) ? INFINITY : dd;
    }
    free(y2);
  }
  return diff;
}

/* The input sets: each through the module, the reference (and the
 * unrounded model), outputs compared with each output's bound; stops at
 * the first set out of bound, whose inputs stay in place for the search.
 * The figures into res; *bad_set the set (or -1). */
static bool chk_sets(chk *c, const cJSON *spec, cJSON *res, int *bad_set) {
  const drv *d = c->d;
  CUresult cr;
  int sets = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(spec, "sets"));
  double policy = cJSON_GetNumberValue(cJSON_GetObjectItem(spec, "bound"));
  c->bound = policy;
  /* an output's bound: the policy's, or factor times how far rounding to
   * the model's dtypes moves it (the reference against the unrounded
   * model u, on the same inputs; judge/module_check.c's bound_for), at
   * least the floor that holds once that is measured */
  double factor = num_or(spec, "rounding_factor", 0), rounding = -1, bound_max = 0;
  double rfloor = num_or(spec, "rounding_floor", policy);
  uint64_t seed = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(spec, "seed"));
  double worst = 0;
  int bad_out = -1;
  *bad_set = -1;
  cJSON *jo = cJSON_AddArrayToObject(res, "outputs");
  double *out_worst = calloc((size_t)c->n_out + 1, sizeof *out_worst);
  if (!out_worst) ERR("out of host memory");
  bool ok = false;
  for (int k = 0; k < sets; k++) {
    uint64_t s = seed ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(k + 1));
    for (int i = 0; i < c->n_in; i++) {
      fill(&c->ins[i], k, &s);
      if ((cr = d->MemcpyHtoD(c->ins[i].dev, c->ins[i].host, c->ins[i].bytes))) {
        snprintf(g_err, sizeof g_err, "cuMemcpyHtoD of input %d: %s", i, cu_str(d, cr));
        goto out;
      }
    }
    double tr = kf_now_s();
    if (!run_model(c, &c->a, c->out_a, "the module")) goto out;
    c->t_runs += kf_now_s() - tr;
    tr = kf_now_s();
    if (!run_model(c, c->r, c->out_r, "the reference")) goto out;
    if (c->out_u && !run_model(c, c->u, c->out_u, "the unrounded model")) goto out;
    c->t_ref += kf_now_s() - tr;
    for (int i = 0; i < c->n_out; i++) {
      free(c->ya[i]);
      free(c->yr[i]);
      c->ya[i] = read_value(d, c->a.out[i], &c->otd[i]);
      c->yr[i] = c->ya[i] ? read_value(d, c->r->out[i], &c->otd[i]) : NULL;
      if (!c->ya[i] || !c->yr[i]) goto out;
      double out_bound = policy;
      if (c->out_u) {
        double *yu = read_value(d, c->u->out[i], &c->u->otd[i]);
        if (!yu) goto out;
        double er = kf_mc_rel_err(c->yr[i], yu, c->otd[i].numel);
        free(yu);
        if (!(er <= rounding)) rounding = isfinite(er) ? er : 1e308;
        if (isfinite(er)) out_bound = factor * er > rfloor ? factor * er : rfloor;
      }
      if (out_bound > bound_max) bound_max = out_bound;
      double e = kf_mc_rel_err(c->ya[i], c->yr[i], c->otd[i].numel);
      if (e > out_worst[i]) out_worst[i] = e;
      if (e > worst) worst = e;
      if (!(e <= out_bound) && *bad_set < 0) {
        *bad_set = k;
        bad_out = i;
        c->bound = out_bound;
      }
    }
    if (k == 0) {
      /* the same inputs once more (said in the result; within the bound
       * a module whose runs differ passes) */
      double diff = repeat_diff(c);
      if (diff < 0) goto out;
      cJSON_AddNumberToObject(res, "repeat_max_diff", isfinite(diff) ? diff : 1e308);
    }
    if (*bad_set >= 0) break;
  }
  for (int i = 0; i < c->n_out; i++)
    cJSON_AddItemToArray(jo, cJSON_CreateNumber(isfinite(out_worst[i]) ? out_worst[i] : 1e308));
  cJSON_AddNumberToObject(res, "sets", *bad_set >= 0 ? *bad_set + 1 : sets);
  cJSON_AddNumberToObject(res, "max_rel_err", isfinite(worst) ? worst : 1e308);
  cJSON_AddNumberToObject(res, "bound", bound_max > 0 ? bound_max : policy);
  if (rounding >= 0) cJSON_AddNumberToObject(res, "rounding_rel_err", rounding);
  cJSON_AddBoolToObject(res, "passed", *bad_set < 0);
  if (*bad_set >= 0) {
    char w[512];
    snprintf(w, sizeof w, "output %d is %.3g from the fp64 reference on input set %d (bound %.1e)", bad_out,
             isfinite(worst) ? worst : INFINITY, *bad_set, c->bound);
    cJSON_AddStringToObject(res, "why", w);
  }
  ok = true;
out:
  free(out_worst);
  return ok;
}

/* The run step by step matched wherever it could be compared (nc groups):
 * whether the plain run's mismatch repeats on the same inputs, in words */
static void explain_no_divergence(chk *c, int nc, cJSON *res) {
  double again = 0;
  if (c->a.run(c->a.m, c->stream, c->in_ptrs, (void *const *)c->out_a) == 0 &&
      c->d->StreamSynchronize(c->stream) == CUDA_SUCCESS) {
    for (int i = 0; i < c->n_out; i++) {
      double *y = read_value(c->d, c->a.out[i], &c->otd[i]);
      if (!y) break;
      double e = kf_mc_rel_err(y, c->yr[i], c->otd[i].numel);
      free(y);
      if (!(e <= again)) again = e;
    }
  } else {
    again = NAN;
  }
  char m[600];
  if (isnan(again))
    snprintf(m, sizeof m, "the run step by step (kfuse_model_debug_run) matches the reference in every group "
             "compared; running the module again failed");
  else if (again > c->bound)
    snprintf(m, sizeof m, "the run step by step (kfuse_model_debug_run) matches the reference in every group "
             "compared (%d), and a plain run on the same inputs is again %.3g from it: the difference is in "
             "values the reference does not name, or between steps of the plain run (a race)", nc, again);
  else
    snprintf(m, sizeof m, "the mismatch did not repeat: the run step by step (kfuse_model_debug_run) matches "
             "the reference in every group compared (%d), and a second plain run on the same inputs is %.3g "
             "from it: a race in the plain run", nc, again);
  cJSON_AddStringToObject(res, "search", m);
  g_err[0] = 0;
}

/* [group, error, value] of a probe, for whoever reads the result */
static void add_probe(cJSON *trace, const cJSON *grp, double e, const char *value) {
  cJSON *t = cJSON_CreateArray();
  cJSON_AddItemToArray(t, cJSON_CreateNumber(cJSON_GetNumberValue(cJSON_GetObjectItem(grp, "group"))));
  cJSON_AddItemToArray(t, cJSON_CreateNumber(isfinite(e) ? e : 1e308));
  cJSON_AddItemToArray(t, cJSON_CreateString(value));
  cJSON_AddItemToArray(trace, t);
}

/* The first group whose values diverge, by bisection over the groups
 * with a value the reference also names (the reference keeps every
 * value), on the inputs of the failing set; into res. */
static void chk_search(chk *c, const cJSON *spec, cJSON *res) {
  ctx x;
  memset(&x, 0, sizeof x);
  x.d = c->d;
  x.stream = c->stream;
  x.a = &c->a;
  x.r = c->r;
  x.ins = c->ins;
  x.n_in = c->n_in;
  x.n_out = c->n_out;
  x.in_ptrs = c->in_ptrs;
  x.out_a = c->out_a;
  x.oa = c->a.out;
  x.or_ = c->r->out;
  x.groups = cJSON_GetObjectItem(cJSON_GetObjectItem(spec, "module"), "groups");
  x.ref_groups = cJSON_GetObjectItem(c->r->spec, "groups");
  x.bound = c->bound;
  uint64_t bytes;
  uint32_t steps;
  if (c->a.debug_arena(c->a.m, &x.arena_a, &bytes, &steps) || c->r->debug_arena(c->r->m, &x.arena_r, &bytes, &steps)) {
    snprintf(g_err, sizeof g_err, "kfuse_model_debug_arena failed");
    return;
  }
  int ng = cJSON_GetArraySize(x.groups);
  /* the groups with a value to compare */
  int *cand = calloc((size_t)ng + 1, sizeof *cand), nc = 0;
  if (!cand) {
    snprintf(g_err, sizeof g_err, "out of host memory");
    return;
  }
  for (int gi = 0; gi < ng; gi++) {
    const cJSON *grp = cJSON_GetArrayItem(x.groups, gi), *v;
    bool any = false;
    cJSON_ArrayForEach(v, cJSON_GetObjectItem(grp, "values")) {
      const char *n = cJSON_GetStringValue(cJSON_GetObjectItem(v, "name"));
      const cJSON *rv = n ? ref_value(x.ref_groups, n) : NULL;
      tdesc ta, tr;
      if (rv && desc_of(v, &ta) && desc_of(rv, &tr) && same_shape(&ta, &tr)) any = true;
    }
    if (any) cand[nc++] = gi;
  }
  /* bisection: lo is known good (or -1), hi known bad */
  int lo = -1, hi = nc - 1;
  double e_hi = nc ? probe(&x, cJSON_GetArrayItem(x.groups, cand[hi]), true) : -1;
  if (isnan(e_hi)) goto out;
  cJSON_AddNumberToObject(res, "groups_compared", nc);
  if (nc == 0 || !(e_hi > c->bound)) {
    explain_no_divergence(c, nc, res);
    goto out;
  }
  char hi_name[256];
  snprintf(hi_name, sizeof hi_name, "%s", x.worst_name);
  int probes = 1;
  cJSON *trace = cJSON_AddArrayToObject(res, "probes");
  add_probe(trace, cJSON_GetArrayItem(x.groups, cand[hi]), e_hi, x.worst_name);
  while (hi - lo > 1) {
    int mid = lo + (hi - lo) / 2;
    double e = probe(&x, cJSON_GetArrayItem(x.groups, cand[mid]), true);
    probes++;
    add_probe(trace, cJSON_GetArrayItem(x.groups, cand[mid]), e, x.worst_name);
    if (isnan(e)) goto out;
    if (e > c->bound) {
      hi = mid;
      e_hi = e;
      snprintf(hi_name, sizeof hi_name, "%s", x.worst_name);
    } else {
      lo = mid;
    }
  }
  const cJSON *bg = cJSON_GetArrayItem(x.groups, cand[hi]);
  cJSON *fb = cJSON_AddObjectToObject(res, "first_bad_group");
  cJSON_AddNumberToObject(fb, "group", cJSON_GetNumberValue(cJSON_GetObjectItem(bg, "group")));
  cJSON_AddStringToObject(fb, "what", cJSON_GetStringValue(cJSON_GetObjectItem(bg, "what")));
  cJSON_AddStringToObject(fb, "value", hi_name);
  cJSON_AddNumberToObject(fb, "rel_err", isfinite(e_hi) ? e_hi : 1e308);
  cJSON_AddNumberToObject(fb, "probes", probes);
  /* the groups between the last one seen to match and this one whose
   * outputs the reference names none of (a rewritten or fused value): the
   * defect may be in one of them */
  cJSON *unc = cJSON_AddArrayToObject(fb, "unchecked_before");
  for (int j = lo >= 0 ? cand[lo] + 1 : 0; unc && j < cand[hi]; j++) {
    const cJSON *w = cJSON_GetObjectItem(cJSON_GetArrayItem(x.groups, j), "what");
    if (cJSON_IsString(w)) cJSON_AddItemToArray(unc, cJSON_CreateString(w->valuestring));
  }
out:
  free(cand);
}

static void chk_fini(chk *c) {
  const drv *d = c->d;
  if (c->a.m) c->a.destroy(c->a.m);
  for (int i = 0; c->a.out && i < c->n_out; i++)
    if (c->a.out[i]) d->MemFree(c->a.out[i]);
  if (c->stream) d->StreamDestroy(c->stream);
  /* unloaded: a fallback compile's module has the same temporary name */
  if (c->a.lib) dlclose(c->a.lib);
  for (int i = 0; c->ins && i < c->n_in; i++) {
    free(c->ins[i].host);
    if (c->ins[i].dev) d->MemFree(c->ins[i].dev);
  }
  free(c->ins);
  free(c->otd);
  for (int i = 0; c->ya && i < c->n_out; i++) free(c->ya[i]);
  for (int i = 0; c->yr && i < c->n_out; i++) free(c->yr[i]);
  free(c->ya);
  free(c->yr);
  free(c->a.out);
  free(c->in_ptrs);
  free(c->out_a);
  free(c->out_r);
  free(c->out_u);
}

/* One check: the module SPEC names against the loaded reference r (and
 * the unrounded model u, when it was built: the outputs' bounds); the
 * result into res. */
static void check_one(const drv *d, const mod *r, const mod *u, const cJSON *spec, cJSON *res) {
  chk c;
  memset(&c, 0, sizeof c);
  c.d = d;
  c.r = r;
  c.u = u;
  g_err[0] = 0;
  int bad_set = -1;
  if (chk_setup(&c, spec) && chk_sets(&c, spec, res, &bad_set) && bad_set >= 0) {
    c.t_search = kf_now_s();
    chk_search(&c, spec, res);
    c.t_search = kf_now_s() - c.t_search;
  }
  cJSON *tm = cJSON_AddObjectToObject(res, "seconds");
  cJSON_AddNumberToObject(tm, "create", c.t_create);
  cJSON_AddNumberToObject(tm, "runs", c.t_runs);
  cJSON_AddNumberToObject(tm, "reference_runs", c.t_ref);
  cJSON_AddNumberToObject(tm, "search", c.t_search);
  if (g_err[0]) cJSON_AddStringToObject(res, "error", g_err);
  chk_fini(&c);
}

/* path written whole: under a temporary name, then renamed */
static int write_json(const char *path, const cJSON *r) {
  char tmp[4400];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  char *t = cJSON_Print(r);
  FILE *f = t ? fopen(tmp, "w") : NULL;
  int rc = f && fputs(t, f) >= 0 ? 0 : 1;
  if (f && fclose(f)) rc = 1;
  free(t);
  if (!rc && rename(tmp, path)) rc = 1;
  if (rc) fprintf(stderr, "module-check-worker: cannot write %s\n", path);
  return rc;
}

static bool parse_int(const char *s, long lo, long hi, long *v) {
  char *end = NULL;
  errno = 0;
  *v = strtol(s, &end, 10);
  return s[0] && end && !*end && !errno && *v >= lo && *v <= hi;
}

int kf_judge_module_check_main(int argc, char **argv, kf_compile_fn compile) {
  long sm = 0, arch = 0, prec = 0, tf32 = 0;
  if (argc != 8 || !parse_int(argv[4], 1, 1000, &sm) || !parse_int(argv[5], 0, 1, &arch) ||
      !parse_int(argv[6], 0, KF_PRECISION_LAST, &prec) || !parse_int(argv[7], 0, 1, &tf32)) {
    fprintf(stderr, "usage: kfuse module-check-worker MODEL DIR SM ARCH PRECISION TF32 (started by kfuse "
                    "compile's module check; TF32 1: the reference rounds fp32 convolutions' operands to "
                    "TF32; the checks come as lines SPEC<TAB>RESULT on stdin)\n");
    return 2;
  }
  const char *model = argv[2], *dir = argv[3];
  char ready[4300], refso[4300];
  snprintf(ready, sizeof ready, "%s/ready.json", dir);
  snprintf(refso, sizeof refso, "%s/reference.so", dir);
  double t0 = kf_now_s();
  cJSON *rdy = cJSON_CreateObject();
  drv d;
  mod r, u;
  memset(&r, 0, sizeof r);
  memset(&u, 0, sizeof u);
  char *line = NULL;
  size_t cap = 0;
  int rc = 1;
  g_err[0] = 0;
  if (!rdy) return 1;

  /* the GPU */
  if (!drv_load(&d)) {
    cJSON_AddBoolToObject(rdy, "gpu", false);
    cJSON_AddStringToObject(rdy, "why", g_err);
    rc = write_json(ready, rdy);
    goto out;
  }
  int count = 0;
  CUresult cr = d.DeviceGetCount(&count);
  if (cr != CUDA_SUCCESS || count < 1) {
    cJSON_AddBoolToObject(rdy, "gpu", false);
    cJSON_AddStringToObject(rdy, "why", cr != CUDA_SUCCESS ? cu_str(&d, cr) : "no CUDA device");
    rc = write_json(ready, rdy);
    goto out;
  }
  CUdevice dev;
  CUcontext cx;
  char name[96] = "";
  cJSON_AddBoolToObject(rdy, "gpu", true);
  if ((cr = d.DeviceGet(&dev, 0)) || (cr = d.DeviceGetName(name, sizeof name, dev)) ||
      (cr = d.PrimaryCtxRetain(&cx, dev)) || (cr = d.CtxPushCurrent(cx))) {
    snprintf(g_err, sizeof g_err, "opening the GPU: %s", cu_str(&d, cr));
    cJSON_AddStringToObject(rdy, "error", g_err);
    rc = write_json(ready, rdy);
    goto out;
  }
  cJSON_AddStringToObject(rdy, "device", name);

  /* the reference, built and loaded */
  kf_target tg = {.sm = (int)sm, .arch_specific = arch != 0};
  {
    char why[700];
    r.spec = kf_mc_build_reference(compile, model, tg, (kf_precision)prec, tf32 != 0, refso, false, why,
                                    sizeof why);
    if (!r.spec) {
      cJSON_AddStringToObject(rdy, "error", why);
      rc = write_json(ready, rdy);
      goto out;
    }
    const cJSON *jo = cJSON_GetObjectItem(r.spec, "outputs");
    r.n_out = cJSON_GetArraySize(jo);
    r.otd = calloc((size_t)r.n_out + 1, sizeof *r.otd);
    bool ok = r.otd != NULL;
    for (int i = 0; ok && i < r.n_out; i++) ok = desc_of(cJSON_GetArrayItem(jo, i), &r.otd[i]);
    if (!ok || !create(&d, &r, r.spec, r.n_out, r.otd)) {
      char e[2300];
      snprintf(e, sizeof e, "the reference module could not be loaded: %s", g_err[0] ? g_err : "out of host memory");
      cJSON_AddStringToObject(rdy, "error", e);
      rc = write_json(ready, rdy);
      goto out;
    }
  }
  /* the model with no rounding, for the outputs' bounds (check_one);
   * without it the checks hold to the policy's bounds, and ready.json
   * says why */
  {
    char why[700], uso[4300];
    snprintf(uso, sizeof uso, "%s/unrounded.so", dir);
    u.spec = kf_mc_build_reference(compile, model, tg, (kf_precision)prec, false, uso, true, why, sizeof why);
    const cJSON *jo = cJSON_GetObjectItem(u.spec, "outputs");
    u.n_out = cJSON_GetArraySize(jo);
    u.otd = u.spec ? calloc((size_t)u.n_out + 1, sizeof *u.otd) : NULL;
    bool ok = u.otd != NULL;
    for (int i = 0; ok && i < u.n_out; i++) ok = desc_of(cJSON_GetArrayItem(jo, i), &u.otd[i]);
    for (int i = 0; ok && i < u.n_out && i < r.n_out; i++) ok = u.otd[i].numel == r.otd[i].numel;
    g_err[0] = 0;
    if (!u.spec) {
      cJSON_AddStringToObject(rdy, "unrounded", why);
    } else if (!ok || u.n_out != r.n_out || !create(&d, &u, u.spec, u.n_out, u.otd)) {
      snprintf(why, sizeof why, "the unrounded model could not be loaded: %.600s",
               g_err[0] ? g_err : "its outputs are not the reference's");
      cJSON_AddStringToObject(rdy, "unrounded", why);
      if (u.m) u.destroy(u.m);
      u.m = NULL;
    }
    g_err[0] = 0;
  }
  cJSON_AddNumberToObject(rdy, "reference_s", kf_now_s() - t0);
  if (write_json(ready, rdy)) goto out;

  /* the checks, one a line */
  rc = 0;
  for (;;) {
    ssize_t n = getline(&line, &cap, stdin);
    if (n <= 0) break; /* the compile is over */
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
    char *tab = strchr(line, '\t');
    if (!tab) {
      fprintf(stderr, "module-check-worker: a line without SPEC<TAB>RESULT\n");
      rc = 1;
      break;
    }
    *tab = 0;
    const char *spec_path = line, *res_path = tab + 1;
    cJSON *res = cJSON_CreateObject(), *spec = NULL;
    FILE *f = fopen(spec_path, "rb");
    char *text = NULL;
    if (f) {
      fseek(f, 0, SEEK_END);
      long sz = ftell(f);
      fseek(f, 0, SEEK_SET);
      text = sz >= 0 ? malloc((size_t)sz + 1) : NULL;
      if (text) text[fread(text, 1, (size_t)sz, f)] = 0;
      fclose(f);
    }
    spec = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!res) {
      rc = 1;
      break;
    }
    cJSON_AddBoolToObject(res, "gpu", true);
    cJSON_AddStringToObject(res, "device", name);
    if (!spec)
      cJSON_AddStringToObject(res, "error", "cannot read the check's spec");
    else
      check_one(&d, &r, &u, spec, res);
    cJSON_Delete(spec);
    int wr = write_json(res_path, res);
    cJSON_Delete(res);
    if (wr) {
      rc = 1;
      break;
    }
  }
out:
  free(line);
  if (r.m) r.destroy(r.m);
  free(r.out);
  free(r.otd);
  cJSON_Delete(r.spec);
  if (u.m) u.destroy(u.m);
  free(u.out);
  free(u.otd);
  cJSON_Delete(u.spec);
  cJSON_Delete(rdy);
  return rc;
}
