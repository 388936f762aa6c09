/* agent/tune.c — the built-in policy's GPU search.
 *
 * Where a template has choices, `kfuse compile` on a machine with a GPU
 * builds the group's unit once per candidate (kf_builtin_options variants),
 * compiles each with NVRTC, runs it on random inputs of the group's own
 * shapes, strides and dtypes, checks its outputs against the rule's
 * candidate (relative error in norm at most 1e-5 for floating outputs,
 * equal otherwise; a candidate that fails is dropped) and keeps the fastest
 * (median of 20 timed runs of the whole unit, CUDA events, after warm-up).
 * Without a GPU the rule's unit is kept and the report says why.
 *
 * Searched now: row reductions and normalisations (KF_GROUP_REDUCE), whose
 * best register budget and block shape differ per kernel (softmax and
 * layer norm on the same rows want different ones: scripts/sweep.py,
 * H200, 2026-11-22), for groups moving at least KF_TUNE_MIN_BYTES. Units
 * with library steps (cuBLASLt, cuDNN) choose their algorithms when the
 * module is created and are not searched here. The CUDA driver comes from
 * the runtime's loader (runtime/kfr_driver.c). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"
#include "kfr_int.h"
#include "kfuse/interp.h"

#define KF_TUNE_MIN_BYTES ((int64_t)16 << 20)
#define KF_TUNE_RUNS 20
/* Inputs: random values on the host for at most this many bytes, copied
 * over the rest of a larger buffer on the device (repeating); outputs
 * compared in full up to KF_TUNE_FULL_CMP, else over KF_TUNE_CHUNKS
 * evenly spaced 1 MiB spans. Host-side work over a 6 GB tensor (KernelBench
 * L1 23) took 97 s of a compile whose candidates ran 6 ms each. */
#define KF_TUNE_FILL_BYTES ((int64_t)16 << 20)
#define KF_TUNE_FULL_CMP ((int64_t)64 << 20)
#define KF_TUNE_CHUNKS 64
#define KF_TUNE_CHUNK ((int64_t)1 << 20)

struct kf_tuner {
  const kfr_driver *cu;
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  CUevent e0, e1;
};

static bool cu_ok(const kfr_driver *cu, CUresult r, const char *call, char *why, size_t n) {
  if (r == CUDA_SUCCESS) return true;
  char d[160];
  snprintf(why, n, "%s: %s", call, kfr_cu_describe(cu, r, d, sizeof d));
  return false;
}

kf_status kf_tuner_open(const kf_target *t, kf_tuner **out, char *why, size_t n) {
  *out = NULL;
  kf_tuner *tu = calloc(1, sizeof *tu);
  if (!tu) return KF_ERR_NOMEM;
  if (kfr_driver_load(&tu->cu, why, n) != KFUSE_OK) {
    free(tu);
    return KF_ERR_UNSUPPORTED;
  }
  const kfr_driver *cu = tu->cu;
  int count = 0, major = 0, minor = 0;
  if (!cu_ok(cu, cu->cuDeviceGetCount(&count), "cuDeviceGetCount", why, n)) goto fail;
  if (count < 1) {
    snprintf(why, n, "no CUDA device");
    goto fail;
  }
  if (!cu_ok(cu, cu->cuDeviceGet(&tu->dev, 0), "cuDeviceGet", why, n) ||
      !cu_ok(cu, cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, tu->dev),
             "cuDeviceGetAttribute", why, n) ||
      !cu_ok(cu, cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, tu->dev),
             "cuDeviceGetAttribute", why, n))
    goto fail;
  if (major * 10 + minor != t->sm) {
    snprintf(why, n, "device 0 is sm_%d%d, the target sm_%d", major, minor, t->sm);
    goto fail;
  }
  if (!cu_ok(cu, cu->cuDevicePrimaryCtxRetain(&tu->ctx, tu->dev), "cuDevicePrimaryCtxRetain", why, n))
    goto fail;
  if (!cu_ok(cu, cu->cuCtxPushCurrent(tu->ctx), "cuCtxPushCurrent", why, n)) {
    cu->cuDevicePrimaryCtxRelease(tu->dev);
    goto fail;
  }
  if (!cu_ok(cu, cu->cuStreamCreate(&tu->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate", why, n) ||
      !cu_ok(cu, cu->cuEventCreate(&tu->e0, CU_EVENT_DEFAULT), "cuEventCreate", why, n) ||
      !cu_ok(cu, cu->cuEventCreate(&tu->e1, CU_EVENT_DEFAULT), "cuEventCreate", why, n)) {
    kf_tuner_close(tu);
    return KF_ERR_UNSUPPORTED;
  }
  *out = tu;
  return KF_OK;
fail:
  free(tu);
  return KF_ERR_UNSUPPORTED;
}

void kf_tuner_close(kf_tuner *tu) {
  if (!tu) return;
  const kfr_driver *cu = tu->cu;
  if (tu->e0) cu->cuEventDestroy(tu->e0);
  if (tu->e1) cu->cuEventDestroy(tu->e1);
  if (tu->stream) cu->cuStreamDestroy(tu->stream);
  if (tu->ctx) {
    CUcontext c;
    cu->cuCtxPopCurrent(&c);
    cu->cuDevicePrimaryCtxRelease(tu->dev);
  }
  free(tu);
}

/* ---- one candidate on the GPU ------------------------------------------------ */

/* Bytes from a value's first element to one past its last (strides >= 0
 * in the values the kernels see; a negative one makes it unsearchable). */
static int64_t extent_bytes(const kf_type *t) {
  int64_t hi = 0;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] == 0) return 0;
    if (t->strides[i] < 0) return -1;
    hi += (t->shape[i] - 1) * t->strides[i];
  }
  return (hi + 1) * (int64_t)kf_dtype_size(t->dtype);
}

typedef struct bufs {
  int n_in, n_out, n_scr;
  CUdeviceptr *in, *out, *scr;
  int64_t *out_bytes;
} bufs;

static void bufs_free(kf_tuner *tu, bufs *b) {
  for (int i = 0; i < b->n_in; i++)
    if (b->in[i]) tu->cu->cuMemFree(b->in[i]);
  for (int i = 0; i < b->n_out; i++)
    if (b->out[i]) tu->cu->cuMemFree(b->out[i]);
  for (int i = 0; i < b->n_scr; i++)
    if (b->scr[i]) tu->cu->cuMemFree(b->scr[i]);
  free(b->in);
  free(b->out);
  free(b->scr);
  free(b->out_bytes);
  memset(b, 0, sizeof *b);
}

/* Random values in [-1, 1) for floating inputs (dtype-sized), zeros
 * otherwise; a fixed seed, so every candidate sees the same inputs. */
static void fill_random(void *p, int64_t bytes, kf_dtype dt, uint64_t *seed) {
  memset(p, 0, (size_t)bytes);
  if (!kf_dtype_is_float(dt)) return;
  int64_t es = (int64_t)kf_dtype_size(dt), n = bytes / es;
  kf_tensor t = {dt, 1, {n}, p};
  for (int64_t i = 0; i < n; i++) {
    *seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
    kf_tensor_set(&t, i, (double)(*seed >> 11) / (double)(1ULL << 53) * 2.0 - 1.0);
  }
}

/* u's scratch buffers (candidates of one group may differ in them) */
static kf_status scratch_alloc(kf_tuner *tu, const kf_unit *u, bufs *b, char *why, size_t n) {
  for (int i = 0; i < b->n_scr; i++)
    if (b->scr[i]) tu->cu->cuMemFree(b->scr[i]);
  free(b->scr);
  b->n_scr = u->n_scratch;
  b->scr = calloc((size_t)b->n_scr + 1, sizeof *b->scr);
  if (!b->scr) return KF_ERR_NOMEM;
  for (int i = 0; i < b->n_scr; i++)
    if (u->scratch_bytes[i] > 0 &&
        !cu_ok(tu->cu, tu->cu->cuMemAlloc(&b->scr[i], (size_t)u->scratch_bytes[i]), "cuMemAlloc", why, n))
      return KF_ERR_UNSUPPORTED;
  return KF_OK;
}

static kf_status bufs_alloc(kf_tuner *tu, const kf_group *g, const kf_unit *u, bufs *b, char *why,
                            size_t n) {
  const kfr_driver *cu = tu->cu;
  b->n_in = g->n_inputs;
  b->n_out = g->n_outputs;
  b->in = calloc((size_t)b->n_in + 1, sizeof *b->in);
  b->out = calloc((size_t)b->n_out + 1, sizeof *b->out);
  b->out_bytes = calloc((size_t)b->n_out + 1, sizeof *b->out_bytes);
  if (!b->in || !b->out || !b->out_bytes) return KF_ERR_NOMEM;
  uint64_t seed = 0x6b667573u;
  for (int i = 0; i < b->n_in; i++) {
    const kf_type *t = &g->inputs[i]->type;
    if (t->kind != KF_TYPE_TENSOR) continue;
    int64_t bytes = extent_bytes(t);
    if (bytes < 0) {
      snprintf(why, n, "input %d has a negative stride", i);
      return KF_ERR_UNSUPPORTED;
    }
    if (bytes == 0) continue;
    int64_t es = (int64_t)kf_dtype_size(t->dtype);
    int64_t first = bytes < KF_TUNE_FILL_BYTES ? bytes : KF_TUNE_FILL_BYTES / es * es;
    void *h = malloc((size_t)first);
    if (!h) return KF_ERR_NOMEM;
    fill_random(h, first, t->dtype, &seed);
    bool ok = cu_ok(cu, cu->cuMemAlloc(&b->in[i], (size_t)bytes), "cuMemAlloc", why, n) &&
              cu_ok(cu, cu->cuMemcpyHtoD(b->in[i], h, (size_t)first), "cuMemcpyHtoD", why, n);
    free(h);
    /* the rest: the filled prefix doubled on the device */
    for (int64_t done = first; ok && done < bytes;) {
      int64_t k = bytes - done < done ? bytes - done : done;
      ok = cu_ok(cu, cu->cuMemcpyDtoDAsync(b->in[i] + (CUdeviceptr)done, b->in[i], (size_t)k, tu->stream),
                 "cuMemcpyDtoDAsync", why, n);
      done += k;
    }
    if (ok) ok = cu_ok(cu, cu->cuStreamSynchronize(tu->stream), "cuStreamSynchronize", why, n);
    if (!ok) return KF_ERR_UNSUPPORTED;
  }
  for (int i = 0; i < b->n_out; i++) {
    int64_t bytes = extent_bytes(&g->outputs[i]->type);
    if (bytes < 0) {
      snprintf(why, n, "output %d has a negative stride", i);
      return KF_ERR_UNSUPPORTED;
    }
    b->out_bytes[i] = bytes;
    if (bytes > 0 && !cu_ok(cu, cu->cuMemAlloc(&b->out[i], (size_t)bytes), "cuMemAlloc", why, n))
      return KF_ERR_UNSUPPORTED;
  }
  return scratch_alloc(tu, u, b, why, n);
}

typedef struct loaded {
  CUmodule mod;
  int n;
  CUfunction *fn;     /* per step (LAUNCH) */
  kfr_value **vals;   /* per step: its args */
  void ***params;
} loaded;

static void unload(kf_tuner *tu, loaded *l) {
  for (int s = 0; s < l->n; s++) {
    if (l->vals) free(l->vals[s]);
    if (l->params) free(l->params[s]);
  }
  free(l->vals);
  free(l->params);
  free(l->fn);
  if (l->mod) tu->cu->cuModuleUnload(l->mod);
  memset(l, 0, sizeof *l);
}

static kf_status load(kf_tuner *tu, const kf_unit *u, const bufs *b, loaded *l, char *why, size_t n) {
  const kfr_driver *cu = tu->cu;
  l->n = u->n_steps;
  l->fn = calloc((size_t)l->n + 1, sizeof *l->fn);
  l->vals = calloc((size_t)l->n + 1, sizeof *l->vals);
  l->params = calloc((size_t)l->n + 1, sizeof *l->params);
  if (!l->fn || !l->vals || !l->params) return KF_ERR_NOMEM;
  if (!u->cubin || !cu_ok(cu, cu->cuModuleLoadDataEx(&l->mod, u->cubin, 0, NULL, NULL), "cuModuleLoadDataEx",
                          why, n))
    return KF_ERR_UNSUPPORTED;
  for (int s = 0; s < u->n_steps; s++) {
    const kf_unit_step *st = &u->steps[s];
    if (st->kind != KF_USTEP_LAUNCH && st->kind != KF_USTEP_MEMSET) {
      snprintf(why, n, "a library step");
      return KF_ERR_UNSUPPORTED;
    }
    l->vals[s] = calloc((size_t)st->n_args + 1, sizeof **l->vals);
    l->params[s] = calloc((size_t)st->n_args + 1, sizeof **l->params);
    if (!l->vals[s] || !l->params[s]) return KF_ERR_NOMEM;
    for (int i = 0; i < st->n_args; i++) {
      const kf_unit_arg *a = &st->args[i];
      kfr_value *v = &l->vals[s][i];
      switch (a->kind) {
      case KF_UARG_INPUT: v->ptr = a->index < b->n_in ? b->in[a->index] + (CUdeviceptr)a->i : 0; break;
      case KF_UARG_OUTPUT: v->ptr = a->index < b->n_out ? b->out[a->index] + (CUdeviceptr)a->i : 0; break;
      case KF_UARG_SCRATCH: v->ptr = a->index < b->n_scr ? b->scr[a->index] + (CUdeviceptr)a->i : 0; break;
      case KF_UARG_I64: v->i64 = a->i; break;
      case KF_UARG_I32: v->i32 = (int32_t)a->i; break;
      case KF_UARG_F32: v->f32 = (float)a->f; break;
      case KF_UARG_F64: v->f64 = a->f; break;
      case KF_UARG_NONE: v->ptr = 0; break;
      }
      l->params[s][i] = v;
    }
    if (st->kind == KF_USTEP_LAUNCH) {
      if (!cu_ok(cu, cu->cuModuleGetFunction(&l->fn[s], l->mod, st->kernel), "cuModuleGetFunction", why, n))
        return KF_ERR_UNSUPPORTED;
      if (st->smem > 48 * 1024 &&
          !cu_ok(cu, cu->cuFuncSetAttribute(l->fn[s], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                            (int)st->smem),
                 "cuFuncSetAttribute", why, n))
        return KF_ERR_UNSUPPORTED;
    }
  }
  return KF_OK;
}

static bool run_once(kf_tuner *tu, const kf_unit *u, const loaded *l, char *why, size_t n) {
  const kfr_driver *cu = tu->cu;
  for (int s = 0; s < u->n_steps; s++) {
    const kf_unit_step *st = &u->steps[s];
    if (st->kind == KF_USTEP_MEMSET) {
      if (!cu_ok(cu, cu->cuMemsetD8Async(l->vals[s][0].ptr, 0, (size_t)st->args[1].i, tu->stream),
                 "cuMemsetD8Async", why, n))
        return false;
      continue;
    }
    if (!cu_ok(cu, cu->cuLaunchKernel(l->fn[s], st->grid[0], st->grid[1], st->grid[2], st->block[0],
                                      st->block[1], st->block[2], st->smem, tu->stream,
                                      st->n_args ? l->params[s] : NULL, NULL),
               "cuLaunchKernel", why, n))
      return false;
  }
  return true;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The spans of an output of `bytes` compared between candidates: all of
 * it, or KF_TUNE_CHUNKS evenly spaced chunks of whole elements. */
static int cmp_spans(int64_t bytes, int64_t es, int64_t *off, int64_t *len) {
  if (bytes <= KF_TUNE_FULL_CMP) {
    off[0] = 0;
    len[0] = bytes;
    return 1;
  }
  int64_t chunk = KF_TUNE_CHUNK / es * es;
  int64_t step = (bytes - chunk) / (KF_TUNE_CHUNKS - 1) / es * es;
  for (int k = 0; k < KF_TUNE_CHUNKS; k++) {
    off[k] = (int64_t)k * step;
    len[k] = chunk;
  }
  return KF_TUNE_CHUNKS;
}

/* Median ms of the unit over KF_TUNE_RUNS, and its outputs (host copies of
 * the compared spans, cmp_spans). */
static kf_status time_unit(kf_tuner *tu, const kf_group *g, const kf_unit *u, const bufs *b, double *ms,
                           void **outs, char *why, size_t n) {
  const kfr_driver *cu = tu->cu;
  loaded l;
  memset(&l, 0, sizeof l);
  kf_status st = load(tu, u, b, &l, why, n);
  double t[KF_TUNE_RUNS];
  for (int i = 0; i < 3 && !st; i++)
    if (!run_once(tu, u, &l, why, n)) st = KF_ERR_UNSUPPORTED;
  for (int i = 0; i < KF_TUNE_RUNS && !st; i++) {
    float f = 0;
    if (!cu_ok(cu, cu->cuEventRecord(tu->e0, tu->stream), "cuEventRecord", why, n) ||
        !run_once(tu, u, &l, why, n) ||
        !cu_ok(cu, cu->cuEventRecord(tu->e1, tu->stream), "cuEventRecord", why, n) ||
        !cu_ok(cu, cu->cuEventSynchronize(tu->e1), "cuEventSynchronize", why, n) ||
        !cu_ok(cu, cu->cuEventElapsedTime(&f, tu->e0, tu->e1), "cuEventElapsedTime", why, n))
      st = KF_ERR_UNSUPPORTED;
    t[i] = f;
  }
  if (!st) {
    qsort(t, KF_TUNE_RUNS, sizeof t[0], cmp_double);
    *ms = t[KF_TUNE_RUNS / 2];
    for (int i = 0; i < g->n_outputs && !st; i++) {
      int64_t off[KF_TUNE_CHUNKS], len[KF_TUNE_CHUNKS], total = 0;
      int ns = cmp_spans(b->out_bytes[i], (int64_t)kf_dtype_size(g->outputs[i]->type.dtype), off, len);
      for (int k = 0; k < ns; k++) total += len[k];
      outs[i] = malloc((size_t)(total ? total : 1));
      if (!outs[i]) st = KF_ERR_NOMEM;
      int64_t at = 0;
      for (int k = 0; k < ns && !st; k++) {
        if (len[k] && !cu_ok(cu, cu->cuMemcpyDtoH((char *)outs[i] + at, b->out[i] + (CUdeviceptr)off[k], (size_t)len[k]),
                             "cuMemcpyDtoH", why, n))
          st = KF_ERR_UNSUPPORTED;
        at += len[k];
      }
    }
  }
  unload(tu, &l);
  return st;
}

/* Candidate outputs against the rule's over the copied spans, in memory
 * order (elements no launch writes, between strided rows, hold the same
 * bytes for both: the output buffers are shared): relative error in norm
 * (floats), or equal. */
static bool same_outputs(const kf_group *g, const bufs *b, void **a, void **c) {
  for (int i = 0; i < g->n_outputs; i++) {
    const kf_type *t = &g->outputs[i]->type;
    int64_t es = (int64_t)kf_dtype_size(t->dtype);
    int64_t off[KF_TUNE_CHUNKS], len[KF_TUNE_CHUNKS], total = 0;
    int ns = cmp_spans(b->out_bytes[i], es, off, len);
    for (int k = 0; k < ns; k++) total += len[k];
    int64_t n = total / es;
    double num = 0, den = 0;
    kf_tensor ta = {t->dtype, 1, {n}, a[i]}, tb = {t->dtype, 1, {n}, c[i]};
    for (int64_t k = 0; k < n; k++) {
      double x = kf_tensor_get(&ta, k), y = kf_tensor_get(&tb, k);
      if (!kf_dtype_is_float(t->dtype)) {
        if (x != y) return false;
        continue;
      }
      if (isnan(x) != isnan(y)) return false;
      if (isnan(x)) continue;
      if (isinf(x) || isinf(y)) {
        if (x != y) return false;
        continue;
      }
      num += (x - y) * (x - y);
      den += y * y;
    }
    if (num > 1e-10 * (den > 1e-30 ? den : 1e-30)) return false;
  }
  return true;
}

/* ---- the search --------------------------------------------------------------- */

static int64_t group_bytes(const kf_group *g) {
  int64_t s = 0;
  for (int i = 0; i < g->n_inputs; i++)
    if (g->inputs[i]->type.kind == KF_TYPE_TENSOR) s += kf_type_numel(&g->inputs[i]->type) *
                                                        (int64_t)kf_dtype_size(g->inputs[i]->type.dtype);
  for (int i = 0; i < g->n_outputs; i++)
    s += kf_type_numel(&g->outputs[i]->type) * (int64_t)kf_dtype_size(g->outputs[i]->type.dtype);
  return s;
}

static void quiet_fn(void *user, kf_diag_level level, const char *msg) {
  (void)user;
  (void)level;
  (void)msg;
}

bool kf_tune_wanted(const kf_group *g) {
  return g->kind == KF_GROUP_REDUCE && group_bytes(g) >= KF_TUNE_MIN_BYTES;
}

kf_status kf_tune_group(kf_tuner *tu, const kf_partition *p, const kf_group *g, const kf_builtin_options *base,
                        kf_unit **io_unit, kf_tune_result *res, kf_diag *diag) {
  memset(res, 0, sizeof *res);
  /* the rule's unit (*io_unit, compiled) first, then the variants */
  static const struct {
    const char *label;
    int occ, block;
  } cands[] = {{"occ=1536", 1536, 0}, {"occ=1280", 1280, 0}, {"occ=1024", 1024, 0}, {"block=512", 0, 512}};
  kf_unit *best = *io_unit;
  bufs b;
  memset(&b, 0, sizeof b);
  void **ref = calloc((size_t)g->n_outputs + 1, sizeof *ref), **got = calloc((size_t)g->n_outputs + 1, sizeof *got);
  kf_status st = ref && got ? KF_OK : KF_ERR_NOMEM;
  char why[256] = "";
  if (!st) st = bufs_alloc(tu, g, best, &b, why, sizeof why);
  double best_ms = 0;
  if (!st) st = time_unit(tu, g, best, &b, &best_ms, ref, why, sizeof why);
  if (st) {
    snprintf(res->note, sizeof res->note, "not searched: %s", why[0] ? why : "out of memory");
    goto done;
  }
  snprintf(res->label[0], sizeof res->label[0], "rule");
  res->ms[0] = best_ms;
  res->ok[0] = true;
  res->n = 1;
  for (size_t c = 0; c < sizeof cands / sizeof cands[0] && res->n < KF_TUNE_MAX; c++) {
    kf_builtin_options o = *base;
    if (cands[c].occ) o.row_occupancy = cands[c].occ;
    if (cands[c].block) o.block_size = cands[c].block;
    kf_unit *u = NULL;
    kf_diag quiet;
    kf_diag_init(&quiet, quiet_fn, NULL);
    kf_status cs = kf_builtin_unit(p, g, &o, &u, &quiet);
    if (!cs && u->source && (*io_unit)->source && strcmp(u->source, (*io_unit)->source) == 0)
      cs = KF_ERR_UNSUPPORTED;
    if (!cs) cs = kf_unit_compile(u, &base->target, &quiet);
    int k = res->n++;
    snprintf(res->label[k], sizeof res->label[k], "%s", cands[c].label);
    if (cs) { /* the same kernel as the rule's, or not buildable */
      res->n--;
      kf_unit_destroy(u);
      continue;
    }
    double ms = 0;
    why[0] = 0;
    /* the same inputs and output buffers; scratch sizes may differ */
    cs = scratch_alloc(tu, u, &b, why, sizeof why);
    if (!cs) cs = time_unit(tu, g, u, &b, &ms, got, why, sizeof why);
    res->ms[k] = ms;
    res->ok[k] = !cs && same_outputs(g, &b, ref, got);
    for (int i = 0; i < g->n_outputs; i++) {
      free(got[i]);
      got[i] = NULL;
    }
    if (res->ok[k] && ms < best_ms) {
      if (best != *io_unit) kf_unit_destroy(best);
      best = u;
      best_ms = ms;
      res->chosen = k;
    } else {
      kf_unit_destroy(u);
    }
  }
  res->searched = true;
  if (best != *io_unit) {
    kf_unit_destroy(*io_unit);
    *io_unit = best;
  }
done:
  (void)diag;
  bufs_free(tu, &b);
  for (int i = 0; ref && i < g->n_outputs; i++) free(ref[i]);
  for (int i = 0; got && i < g->n_outputs; i++) free(got[i]);
  free(ref);
  free(got);
  return st == KF_ERR_NOMEM ? st : KF_OK;
}
