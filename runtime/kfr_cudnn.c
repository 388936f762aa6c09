/* kfr_cudnn.c — CONV steps on cuDNN: finding the library, building each
 * step's descriptors and choosing its algorithm at create time, and running
 * the step.
 *
 * cuDNN is opened with dlopen only when a plan has CONV steps, through its
 * legacy (v7-style) API, which cuDNN 9 still ships; the declarations live
 * in kfr_int.h, so no cudnn.h is needed to build. Each instance has its own
 * handle, used only under the instance's lock (like the cuBLASLt handle),
 * and bound to the run's stream at the start of every run.
 *
 * Graph API first: kfr_conv_prepare_all asks kfr_cudnn_graph.c for an
 * execution plan per step (one cudnnBackendExecute a run, a fraction of the
 * legacy calls' host time); what follows is the legacy path, taken by steps
 * without a plan (cuDNN built none, KFUSE_CUDNN_GRAPH=0).
 *
 * Caller tensors less than 16-byte aligned (the arena, weights and constants
 * are 256-byte aligned; a caller's view may not be) go through a staging
 * buffer on both paths: cuDNN's kernels assume the alignment. The fused
 * call with IMPLICIT_PRECOMP_GEMM faults with "misaligned address" when its
 * residual z sits 4 bytes off (H200, cuDNN 9; scripts/gpu_conv_check.sh),
 * and the graph plans declare 16-byte tensors.
 *
 * Which cuDNN call. A transposed step (PyTorch's conv_transpose) is
 * cudnnConvolutionBackwardData with the step's x as dy and y as dx, its
 * algorithm found or chosen like a forward one (the backward-data
 * variants of the calls below). Without bias, activation and residual a
 * forward step is cudnnConvolutionForward; otherwise it is one fused
 * cudnnConvolutionBiasActivationForward (y = act(alpha1 conv + alpha2 z +
 * bias)). cuDNN runs the fused call with an identity activation only with
 * IMPLICIT_PRECOMP_GEMM, so that is the algorithm of such steps.
 *
 * Choosing the algorithm (once per distinct parameter set of an instance,
 * at create time): cudnnFindConvolutionForwardAlgorithmEx times every
 * candidate on the GPU, on scratch copies of x and y allocated for the
 * search (zeroed; freed before create returns, like a workspace of the
 * largest step's budget) and the step's weights when they are already on
 * the device; the fastest one whose workspace fits the plan's budget wins
 * (when none fits, the first that ran: the budget bounds the search, never
 * the load), and create then allocates the workspace the chosen algorithms
 * need (the plan reserves none); for a fused step the candidates are then timed again
 * with the fused call itself (Find times the bare convolution, and the
 * fused call's speed per algorithm differs). KFUSE_CUDNN_VERBOSE=1 prints
 * the candidates and timings. kfuse_options.conv_search = 0 (or
 * KFUSE_CUDNN_FIND=0) uses cuDNN's heuristics
 * (cudnnGetConvolutionForwardAlgorithm_v7) instead: no timing, so create
 * is faster and the choice repeatable. Math: f32 steps whose compute is
 * KFR_COMPUTE_32F get CUDNN_FMA_MATH (no TF32); all others
 * CUDNN_DEFAULT_MATH (TF32 for f32, as PyTorch allows it for convolutions),
 * then the math type cuDNN reported for the winning algorithm. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfr_int.h"

/* ---- loading ------------------------------------------------------------- */

#define DNN_SONAME "libcudnn.so.9"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static kfr_cudnn g_dnn;
static int g_dnn_ready;

/* cuDNN 9's libcudnn.so.9 opens its parts (libcudnn_cnn.so.9, ...) by
 * soname; when it was found by full path outside the loader's search path,
 * its parts are opened from its directory so those lookups succeed. First
 * RTLD_LOCAL (a soname lookup finds a loaded library whatever its scope,
 * and the parts' own dependencies on each other are link-time ones), and
 * only once that libcudnn.so.9 has been accepted are they made global, as
 * cuDNN's own dlopen would; a rejected candidate's parts are closed again,
 * so they neither sit in the global scope nor answer a later candidate's
 * soname lookups. */
#define DNN_PARTS 6
static const char *const dnn_parts[DNN_PARTS] = {
    "libcudnn_graph.so.9", "libcudnn_engines_precompiled.so.9",
    "libcudnn_engines_runtime_compiled.so.9", "libcudnn_heuristic.so.9",
    "libcudnn_ops.so.9", "libcudnn_cnn.so.9"};

/* part i beside path into p; 0 if it does not fit */
static int part_path(const char *path, int i, char *p, size_t n) {
  const char *slash = strrchr(path, '/');
  return slash && snprintf(p, n, "%.*s/%s", (int)(slash - path), path,
                           dnn_parts[i]) < (int)n;
}

/* Open the parts beside path, local; handles (NULL: absent) into h. */
static void open_parts(const char *path, void *h[DNN_PARTS]) {
  for (int i = 0; i < DNN_PARTS; i++) {
    char p[1024];
    h[i] = part_path(path, i, p, sizeof p) ? dlopen(p, RTLD_NOW | RTLD_LOCAL)
                                           : NULL;
  }
}

/* The candidate was accepted: make its parts global (best effort; a part
 * that did not load locally is tried again now the others are global). */
static void promote_parts(const char *path, void *h[DNN_PARTS]) {
  for (int i = 0; i < DNN_PARTS; i++) {
    char p[1024];
    if (part_path(path, i, p, sizeof p))
      (void)dlopen(p, RTLD_NOW | RTLD_GLOBAL | (h[i] ? RTLD_NOLOAD : 0));
  }
}

static void close_parts(void *h[DNN_PARTS]) {
  for (int i = DNN_PARTS; i-- > 0;)
    if (h[i])
      dlclose(h[i]);
}

/* Try one path; on success resolve everything. Called with g_lock held. */
static int try_dnn(const char *path, char *tried, size_t tn) {
  void *parts[DNN_PARTS] = {NULL};
  int beside = strchr(path, '/') != NULL;
  if (beside)
    open_parts(path, parts);
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    kfr_lib_tried(tried, tn, path, "%s", e ? e : "?");
    close_parts(parts);
    return 0;
  }
  void *p;
#define KFR_DNN_RESOLVE(ret, name, params)                                    \
  p = dlsym(h, #name);                                                        \
  if (!p) {                                                                   \
    kfr_lib_tried(tried, tn, path, "no %s", #name);                           \
    dlclose(h);                                                               \
    close_parts(parts);                                                       \
    memset(&g_dnn, 0, sizeof g_dnn);                                          \
    return 0;                                                                 \
  }                                                                           \
  memcpy(&g_dnn.name, &p, sizeof p);
  KFR_DNN_FUNCS(KFR_DNN_RESOLVE)
#undef KFR_DNN_RESOLVE
  /* the graph API: optional (the legacy calls serve without it) */
#define KFR_DNN_RESOLVE_OPT(ret, name, params)                                \
  p = dlsym(h, #name);                                                        \
  memcpy(&g_dnn.name, &p, sizeof p);
  KFR_DNN_GRAPH_FUNCS(KFR_DNN_RESOLVE_OPT)
#undef KFR_DNN_RESOLVE_OPT
  g_dnn.version = g_dnn.cudnnGetVersion();
  if (g_dnn.version < 90000) {
    kfr_lib_tried(tried, tn, path, "cuDNN %zu; 9.0 or newer needed",
                  g_dnn.version);
    dlclose(h);
    close_parts(parts);
    memset(&g_dnn, 0, sizeof g_dnn);
    return 0;
  }
  snprintf(g_dnn.path, sizeof g_dnn.path, "%s", path);
  if (beside)
    promote_parts(path, parts);
  return 1; /* h and the parts stay open for the life of the process */
}

static int load_dnn(char *msg, size_t n) {
  char tried[2048] = "";
  const char *env = secure_getenv("KFUSE_CUDNN_LIBRARY");
  if (env && *env) {
    if (try_dnn(env, tried, sizeof tried))
      return KFUSE_OK;
    snprintf(msg, n, "cannot load cuDNN from KFUSE_CUDNN_LIBRARY: %s", tried);
    return KFUSE_ELIBRARY;
  }
  if (kfr_lib_search(DNN_SONAME, "cudnn", try_dnn, tried, sizeof tried))
    return KFUSE_OK;
  snprintf(msg, n, "cannot load cuDNN 9 (" DNN_SONAME ") for the model's "
           "convolution steps; tried %s; install cuDNN 9 (e.g. pip install "
           "nvidia-cudnn-cu13) and put its lib directory on LD_LIBRARY_PATH, "
           "or set KFUSE_CUDNN_LIBRARY to the full path of " DNN_SONAME, tried);
  return KFUSE_ELIBRARY;
}

int kfr_cudnn_load(const kfr_cudnn **out, char *msg, size_t n) {
  int rc = KFUSE_OK;
  pthread_mutex_lock(&g_lock);
  if (!g_dnn_ready) {
    rc = load_dnn(msg, n);
    g_dnn_ready = rc == KFUSE_OK;
  }
  pthread_mutex_unlock(&g_lock);
  *out = rc == KFUSE_OK ? &g_dnn : NULL;
  return rc;
}

/* ---- steps --------------------------------------------------------------- */

static int dnn_fail(kfuse_model *m, kfr_dnn_status st, const char *call,
                    uint32_t s) {
  const char *why = m->dnn_api ? m->dnn_api->cudnnGetErrorString(st) : NULL;
  return kfr_fail(m, KFUSE_ELIBRARY, "%s failed in CONV step %u (%s): %s (%d)",
                  call, s, kfr_step_name(m, s), why ? why : "?", st);
}

static int dnn_dtype(uint32_t dt) {
  switch (dt) {
  case KFUSE_DTYPE_F16: return KFR_DNN_DATA_HALF;
  case KFUSE_DTYPE_BF16: return KFR_DNN_DATA_BFLOAT16;
  default: return KFR_DNN_DATA_FLOAT;
  }
}

static int strict_fp32(const kfr_conv *c) { return kfr_conv_strict_fp32(c); }

int kfr_conv_dims(uint32_t nd, int64_t a, int64_t b, const int64_t *sp, int nhwc, int *dim, int *str) {
  int nb = nd == 3 ? 5 : 4;
  dim[0] = (int)a;
  dim[1] = (int)b;
  if (nd == 1) {
    dim[2] = 1;
    dim[3] = (int)sp[0];
  } else {
    for (int i = 2; i < nb; i++)
      dim[i] = (int)sp[i - 2];
  }
  str[nb - 1] = 1;
  for (int i = nb - 2; i >= 0; i--)
    str[i] = str[i + 1] * dim[i + 1];
  if (nhwc) { /* NHWC / NDHWC memory order of [n, c, spatial...] */
    int s = 1;
    str[1] = 1;
    s = dim[1];
    for (int i = nb - 1; i >= 2; i--) {
      str[i] = s;
      s *= dim[i];
    }
    str[0] = s;
  }
  return nb;
}

/* Build step s's descriptors. */
static int describe(kfuse_model *m, uint32_t s) {
  const kfr_cudnn *d = m->dnn_api;
  const kfr_conv *c = &m->steps[s].conv;
  kfr_conv_rt *rt = &m->conv[s];
  int nb = c->nd == 3 ? 5 : 4, sp = nb - 2;
  int dt = dnn_dtype(c->dtype);
  int dim[5], str[5];
  kfr_dnn_status st;
  const char *call = "cudnnCreate*Descriptor";
  if ((st = d->cudnnCreateTensorDescriptor(&rt->xd)) ||
      (st = d->cudnnCreateTensorDescriptor(&rt->yd)) ||
      (st = d->cudnnCreateTensorDescriptor(&rt->bd)) ||
      (st = d->cudnnCreateFilterDescriptor(&rt->wd)) ||
      (st = d->cudnnCreateConvolutionDescriptor(&rt->cd)) ||
      (st = d->cudnnCreateActivationDescriptor(&rt->ad)))
    return dnn_fail(m, st, call, s);
  call = "cudnnSetTensorNdDescriptor";
  int nhwc = c->layout == KFR_CONV_NHWC;
  kfr_conv_dims(c->nd, c->n, c->c, c->in, nhwc, dim, str);
  if ((st = d->cudnnSetTensorNdDescriptor(rt->xd, dt, nb, dim, str)))
    return dnn_fail(m, st, call, s);
  kfr_conv_dims(c->nd, c->n, c->k, c->out, nhwc, dim, str);
  if ((st = d->cudnnSetTensorNdDescriptor(rt->yd, dt, nb, dim, str)))
    return dnn_fail(m, st, call, s);
  int64_t ones[3] = {1, 1, 1};
  kfr_conv_dims(c->nd, 1, c->k, ones, 0, dim, str);
  if ((st = d->cudnnSetTensorNdDescriptor(rt->bd, dt, nb, dim, str)))
    return dnn_fail(m, st, call, s);
  /* forward: [k, c/g, filter...]; transposed: [c, k/g, filter...], the
   * filter of the forward convolution from y to x */
  if (c->transposed)
    kfr_conv_dims(c->nd, c->c, c->k / c->groups, c->filter, 0, dim, str);
  else
    kfr_conv_dims(c->nd, c->k, c->c / c->groups, c->filter, 0, dim, str);
  /* the filter's dims stay [k, c, r, s]; the format names its memory order */
  if ((st = d->cudnnSetFilterNdDescriptor(rt->wd, dt, nhwc ? KFR_DNN_TENSOR_NHWC : KFR_DNN_TENSOR_NCHW, nb,
                                          dim)))
    return dnn_fail(m, st, "cudnnSetFilterNdDescriptor", s);
  int pad[3], stride[3], dil[3];
  for (int i = 0; i < sp; i++) {
    /* 1-d: the added height dim first, unpadded */
    int j = c->nd == 1 ? i - 1 : i;
    pad[i] = j < 0 ? 0 : (int)c->pad[j];
    stride[i] = j < 0 ? 1 : (int)c->stride[j];
    dil[i] = j < 0 ? 1 : (int)c->dilation[j];
  }
  /* fp32 accumulation for every data type */
  if ((st = d->cudnnSetConvolutionNdDescriptor(rt->cd, sp, pad, stride, dil,
                                               KFR_DNN_CROSS_CORRELATION,
                                               KFR_DNN_DATA_FLOAT)))
    return dnn_fail(m, st, "cudnnSetConvolutionNdDescriptor", s);
  if ((st = d->cudnnSetConvolutionGroupCount(rt->cd, (int)c->groups)))
    return dnn_fail(m, st, "cudnnSetConvolutionGroupCount", s);
  if ((st = d->cudnnSetConvolutionMathType(
           rt->cd, strict_fp32(c) ? KFR_DNN_FMA_MATH : KFR_DNN_DEFAULT_MATH)))
    return dnn_fail(m, st, "cudnnSetConvolutionMathType", s);
  if ((st = d->cudnnSetActivationDescriptor(
           rt->ad, c->activation == KFR_ACT_RELU ? KFR_DNN_ACTIVATION_RELU
                                                 : KFR_DNN_ACTIVATION_IDENTITY,
           KFR_DNN_PROPAGATE_NAN, 0.0)))
    return dnn_fail(m, st, "cudnnSetActivationDescriptor", s);
  /* cuDNN's idea of the output must be the plan's (for a transposed step,
   * the forward convolution of y must give x's shape) */
  int got[5];
  if ((st = d->cudnnGetConvolutionNdForwardOutputDim(rt->cd, c->transposed ? rt->yd : rt->xd, rt->wd, nb,
                                                     got)))
    return dnn_fail(m, st, "cudnnGetConvolutionNdForwardOutputDim", s);
  if (c->transposed)
    kfr_conv_dims(c->nd, c->n, c->c, c->in, 0, dim, str);
  else
    kfr_conv_dims(c->nd, c->n, c->k, c->out, 0, dim, str);
  for (int i = 0; i < nb; i++)
    if (got[i] != dim[i])
      return kfr_fail(m, KFUSE_EPLAN, "CONV step %u (%s): cuDNN computes %s "
                      "dim %d as %d, the plan says %d", s, kfr_step_name(m, s),
                      c->transposed ? "the transposed input" : "output", i, got[i], dim[i]);
  rt->math = strict_fp32(c) ? KFR_DNN_FMA_MATH : KFR_DNN_DEFAULT_MATH;
  rt->fused = c->has_bias || c->has_z || c->activation != KFR_ACT_NONE;
  rt->alpha1.f = (float)c->alpha1;
  rt->alpha2.f = c->has_z ? (float)c->alpha2 : 0.0f;
  rt->zero.f = 0.0f;
  return KFUSE_OK;
}

static uint64_t conv_bytes(const kfr_conv *c, int which) {
  uint64_t e = (uint64_t)kfr_dtype_size(c->dtype);
  const int64_t *sp = which == 0 ? c->in : which == 1 ? c->filter : c->out;
  uint64_t v = which == 0 ? (uint64_t)(c->n * c->c)
               : which == 1 ? (uint64_t)(c->k * (c->c / c->groups))
                            : (uint64_t)(c->n * c->k);
  return v * (uint64_t)(sp[0] * sp[1] * sp[2]) * e;
}

static CUdeviceptr ptr_of(const kfuse_model *m, const kfr_arg *a) {
  return m->base[a->buffer] + (CUdeviceptr)a->offset;
}

/* Scratch for the timed search, shared by every step. */
typedef struct search_buf {
  CUdeviceptr x, w, y, ws; /* ws: the largest step's workspace budget */
  uint64_t xb, wb, yb, wsb;
} search_buf;

static int search_alloc(kfuse_model *m, search_buf *b) {
  const kfr_driver *cu = m->cu;
  for (uint32_t s = 0; s < m->h.n_steps; s++) {
    if (m->steps[s].kind != KFR_STEP_CONV)
      continue;
    const kfr_conv *c = &m->steps[s].conv;
    if (conv_bytes(c, 0) > b->xb) b->xb = conv_bytes(c, 0);
    if (conv_bytes(c, 1) > b->wb) b->wb = conv_bytes(c, 1);
    if (conv_bytes(c, 2) > b->yb) b->yb = conv_bytes(c, 2);
    if (c->workspace_bytes > b->wsb) b->wsb = c->workspace_bytes;
  }
  CUdeviceptr *p[4] = {&b->x, &b->w, &b->y, &b->ws};
  uint64_t nb[4] = {b->xb, b->wb, b->yb, b->wsb};
  for (int i = 0; i < 4; i++) {
    if (!nb[i])
      continue;
    CUresult r = kfr_scratch_alloc(m, p[i], nb[i]);
    if (r != CUDA_SUCCESS) {
      char why[256];
      return kfr_fail(m, r == CUDA_ERROR_OUT_OF_MEMORY ? KFUSE_ENOMEM
                                                       : KFUSE_ECUDA,
                      "allocating %llu bytes for the cuDNN algorithm "
                      "search failed (KFUSE_CUDNN_FIND=0 searches without): %s",
                      (unsigned long long)nb[i],
                      kfr_cu_describe(cu, r, why, sizeof why));
    }
    if ((r = cu->cuMemsetD8Async(*p[i], 0, nb[i], m->own)) != CUDA_SUCCESS) {
      char why[256];
      return kfr_fail(m, KFUSE_ECUDA, "cuMemsetD8Async failed (cuDNN search "
                      "buffers): %s", kfr_cu_describe(cu, r, why, sizeof why));
    }
  }
  return KFUSE_OK;
}

static void search_free(kfuse_model *m, search_buf *b) {
  kfr_scratch_free(m, b->x);
  kfr_scratch_free(m, b->w);
  kfr_scratch_free(m, b->y);
  kfr_scratch_free(m, b->ws);
}

int kfr_cudnn_verbose(void) {
  const char *v = secure_getenv("KFUSE_CUDNN_VERBOSE");
  return v && *v && strcmp(v, "0") != 0;
}

/* How much workspace a graph plan over its step's budget may have for
 * its timing and, if it wins, for the model's life: a quarter of the
 * device memory free now, at most 16 GiB. The plan's budget (the compiler's
 * choice, 256 MiB by default) kept out the fastest plans of large
 * convolutions: on an H100 (2026-11-25) KernelBench L1 56's 5x7
 * convolution ran 2.59 ms with a plan needing 269 MB of workspace against
 * 54.5 ms for the only plan within 256 MiB. */
uint64_t kfr_conv_big_ws_limit(kfuse_model *m) {
  size_t free_b = 0, total = 0;
  if (m->cu->cuMemGetInfo(&free_b, &total) != CUDA_SUCCESS)
    return 0;
  uint64_t lim = (uint64_t)free_b / 4, cap = (uint64_t)16 << 30;
  return lim < cap ? lim : cap;
}

/* One fused convolution call of the search (kfr_time3's call); y is also
 * z, as the step does without a residual. */
typedef struct fused_call {
  kfuse_model *m;
  kfr_conv_rt *rt;
  const void *x, *w, *b;
  void *y, *ws;
  size_t ws_bytes;
  int algo;
} fused_call;

static int run_fused_call(void *ctx) {
  const fused_call *f = ctx;
  const kfr_conv_rt *rt = f->rt;
  return f->m->dnn_api->cudnnConvolutionBiasActivationForward(
             f->m->dnn, &rt->alpha1, rt->xd, f->x, rt->wd, f->w, rt->cd, f->algo, f->ws, f->ws_bytes, &rt->alpha2,
             rt->yd, f->y, rt->bd, f->b, rt->ad, rt->yd, f->y) != 0;
}

/* Time step s's fused call (cudnnConvolutionBiasActivationForward) with
 * each candidate of perf[0..found) that ran in Find and fits the workspace:
 * one warm-up call, then the median of three timed calls, on the search
 * buffers (x, y; z is y, as the step does without a residual; weights and
 * bias from the arena when they are there already). Returns the index of
 * the fastest, found when none could be timed (the caller falls back to
 * Find's order), or -1 with m->err set on a CUDA error. */
static int time_fused(kfuse_model *m, uint32_t s, search_buf *sb, kfr_dnn_perf *perf, int found) {
  const kfr_cudnn *d = m->dnn_api;
  const kfr_driver *cu = m->cu;
  const kfr_step *stp = &m->steps[s];
  const kfr_conv *c = &stp->conv;
  const kfr_arg *a = &m->args[stp->first_arg];
  kfr_conv_rt *rt = &m->conv[s];
  uint32_t wk = m->buffers[a[1].buffer].kind, bk = m->buffers[a[3].buffer].kind;
  const void *x = (const void *)(uintptr_t)sb->x;
  const void *w = (const void *)(uintptr_t)(wk == KFR_BUF_INPUT || wk == KFR_BUF_OUTPUT ? sb->w : ptr_of(m, &a[1]));
  /* a bias that is a graph input: any readable memory of its size times the same */
  const void *b = (const void *)(uintptr_t)(bk == KFR_BUF_INPUT || bk == KFR_BUF_OUTPUT ? sb->y : ptr_of(m, &a[3]));
  void *y = (void *)(uintptr_t)sb->y;
  void *ws = (void *)(uintptr_t)sb->ws;
  CUevent ev[2] = {0};
  for (int i = 0; i < 2; i++) {
    CUresult r = cu->cuEventCreate(&ev[i], 0);
    if (r != CUDA_SUCCESS) {
      char why[256];
      for (int j = 0; j < i; j++) (void)cu->cuEventDestroy(ev[j]);
      kfr_fail(m, KFUSE_ECUDA, "cuEventCreate failed (timing cuDNN's fused convolution): %s",
               kfr_cu_describe(cu, r, why, sizeof why));
      return -1;
    }
  }
  int best = found;
  float best_ms = 0;
  int rc = 0;
  fused_call fc = {m, rt, x, w, b, y, ws, (size_t)c->workspace_bytes, 0};
  kfr_dnn_status st = d->cudnnSetStream(m->dnn, m->own);
  for (int i = 0; i < found && !st && !rc; i++) {
    if (perf[i].status != 0 || perf[i].memory > c->workspace_bytes)
      continue;
    if (strict_fp32(c) && perf[i].math_type == KFR_DNN_TENSOR_OP_MATH)
      continue;
    if (!strict_fp32(c) && (st = d->cudnnSetConvolutionMathType(rt->cd, perf[i].math_type)))
      break;
    fc.algo = perf[i].algo;
    float med;
    int tr = kfr_time3(cu, m->own, ev, run_fused_call, &fc, &med);
    if (tr == 1)
      continue; /* this algorithm does not take the fused call: not a candidate */
    if (tr < 0) {
      rc = 1;
      break;
    }
    if (kfr_cudnn_verbose())
      fprintf(stderr, "kfuse: cuDNN step %u (%s): fused call, algo %d math %d: %.4f ms\n", s, kfr_step_name(m, s),
              perf[i].algo, perf[i].math_type, med);
    if (best == found || med < best_ms) {
      best = i;
      best_ms = med;
    }
  }
  for (int i = 0; i < 2; i++) (void)cu->cuEventDestroy(ev[i]);
  if (st) {
    dnn_fail(m, st, "cudnnSetConvolutionMathType (timing the fused convolution)", s);
    return -1;
  }
  if (rc) {
    kfr_fail(m, KFUSE_ECUDA, "CONV step %u (%s): CUDA events failed while timing cuDNN's fused call", s,
             kfr_step_name(m, s));
    return -1;
  }
  return best;
}

/* Pick step s's algorithm: the first (fastest, or heuristically best)
 * candidate that ran and fits the workspace budget; for fused steps with
 * the timed search, the one whose fused call is fastest. */
static int choose(kfuse_model *m, uint32_t s, search_buf *sb) {
  const kfr_cudnn *d = m->dnn_api;
  const kfr_step *stp = &m->steps[s];
  const kfr_conv *c = &stp->conv;
  const kfr_arg *a = &m->args[stp->first_arg];
  kfr_conv_rt *rt = &m->conv[s];
  kfr_dnn_status st;
  if (rt->fused && c->activation == KFR_ACT_NONE) {
    /* cuDNN's fused call with identity: only IMPLICIT_PRECOMP_GEMM */
    size_t need = 0;
    rt->algo = KFR_DNN_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
    if ((st = d->cudnnGetConvolutionForwardWorkspaceSize(
             m->dnn, rt->xd, rt->wd, rt->cd, rt->yd, rt->algo, &need)))
      return dnn_fail(m, st, "cudnnGetConvolutionForwardWorkspaceSize", s);
    /* the only algorithm there is: it gets the workspace it needs (the
     * plan's budget bounds a search, and create allocates what the chosen
     * algorithms need; cuMemAlloc's failure is the error if it cannot) */
    if (need > c->workspace_bytes && kfr_cudnn_verbose())
      fprintf(stderr, "kfuse: cuDNN step %u (%s): IMPLICIT_PRECOMP_GEMM needs %zu bytes of workspace, over the "
              "%llu-byte search budget\n", s, kfr_step_name(m, s), need, (unsigned long long)c->workspace_bytes);
    rt->ws_bytes = need;
    return KFUSE_OK;
  }
  kfr_dnn_perf perf[KFR_DNN_FWD_ALGO_COUNT];
  memset(perf, 0, sizeof perf);
  int found = 0;
  const char *call;
  if (c->transposed && sb) {
    call = "cudnnFindConvolutionBackwardDataAlgorithmEx";
    uint32_t wk = m->buffers[a[1].buffer].kind;
    CUdeviceptr w = wk == KFR_BUF_INPUT || wk == KFR_BUF_OUTPUT ? sb->w : ptr_of(m, &a[1]);
    st = d->cudnnFindConvolutionBackwardDataAlgorithmEx(
        m->dnn, rt->wd, (const void *)(uintptr_t)w, rt->xd, (const void *)(uintptr_t)sb->x, rt->cd, rt->yd,
        (void *)(uintptr_t)sb->y, KFR_DNN_BWD_DATA_ALGO_COUNT, &found, perf, (void *)(uintptr_t)sb->ws,
        (size_t)c->workspace_bytes);
  } else if (c->transposed) {
    call = "cudnnGetConvolutionBackwardDataAlgorithm_v7";
    st = d->cudnnGetConvolutionBackwardDataAlgorithm_v7(m->dnn, rt->wd, rt->xd, rt->cd, rt->yd,
                                                        KFR_DNN_BWD_DATA_ALGO_COUNT, &found, perf);
  } else if (sb) {
    call = "cudnnFindConvolutionForwardAlgorithmEx";
    uint32_t wk = m->buffers[a[1].buffer].kind;
    CUdeviceptr w = wk == KFR_BUF_INPUT || wk == KFR_BUF_OUTPUT ? sb->w
                                                                : ptr_of(m, &a[1]);
    void *ws = (void *)(uintptr_t)sb->ws;
    st = d->cudnnFindConvolutionForwardAlgorithmEx(
        m->dnn, rt->xd, (const void *)(uintptr_t)sb->x, rt->wd,
        (const void *)(uintptr_t)w, rt->cd, rt->yd, (void *)(uintptr_t)sb->y,
        KFR_DNN_FWD_ALGO_COUNT, &found, perf, ws, (size_t)c->workspace_bytes);
  } else {
    call = "cudnnGetConvolutionForwardAlgorithm_v7";
    st = d->cudnnGetConvolutionForwardAlgorithm_v7(
        m->dnn, rt->xd, rt->wd, rt->cd, rt->yd, KFR_DNN_FWD_ALGO_COUNT, &found,
        perf);
  }
  if (st)
    return dnn_fail(m, st, call, s);
  if (kfr_cudnn_verbose()) {
    fprintf(stderr, "kfuse: cuDNN step %u (%s): n=%lld c=%lld k=%lld groups=%lld, %s, workspace budget %llu:\n",
            s, kfr_step_name(m, s), (long long)c->n, (long long)c->c, (long long)c->k, (long long)c->groups, call,
            (unsigned long long)c->workspace_bytes);
    for (int i = 0; i < found; i++)
      fprintf(stderr, "kfuse:   algo %d status %d time %.4f ms memory %zu math %d\n", perf[i].algo,
              (int)perf[i].status, perf[i].time, perf[i].memory, perf[i].math_type);
  }
  if (sb && rt->fused) {
    /* Find timed the bare convolution; the fused call is what runs, and
     * its speed per algorithm differs (some fuse bias and activation into
     * the kernel, others add passes), so time that call itself */
    int best = time_fused(m, s, sb, perf, found);
    if (best < 0)
      return KFUSE_ELIBRARY; /* m->err says why */
    if (best < found) {
      rt->algo = perf[best].algo;
      rt->math = perf[best].math_type;
      rt->ws_bytes = perf[best].memory;
      if ((st = d->cudnnSetConvolutionMathType(rt->cd, rt->math)))
        return dnn_fail(m, st, "cudnnSetConvolutionMathType", s);
      return KFUSE_OK;
    }
  }
  /* the first candidate within the budget; failing that, the first at any
   * size (the heuristics' list: create allocates what it needs, and a
   * module never fails to load for want of a budget it set itself) */
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < found; i++) {
      if (perf[i].status != 0 || (pass == 0 && perf[i].memory > c->workspace_bytes))
        continue;
      if (strict_fp32(c) && perf[i].math_type == KFR_DNN_TENSOR_OP_MATH)
        continue;
      rt->algo = perf[i].algo;
      rt->ws_bytes = perf[i].memory;
      if (!strict_fp32(c)) {
        rt->math = perf[i].math_type;
        if ((st = d->cudnnSetConvolutionMathType(rt->cd, rt->math)))
          return dnn_fail(m, st, "cudnnSetConvolutionMathType", s);
      }
      return KFUSE_OK;
    }
  return kfr_fail(m, KFUSE_ELIBRARY, "CONV step %u (%s): cuDNN %zu offers no "
                  "%s algorithm (%d candidates, none ran%s; n=%lld c=%lld k=%lld "
                  "groups=%lld nd=%u dtype %u)", s, kfr_step_name(m, s), d->version,
                  c->transposed ? "backward-data" : "forward", found,
                  strict_fp32(c) ? " without tensor cores" : "",
                  (long long)c->n, (long long)c->c, (long long)c->k,
                  (long long)c->groups, c->nd, c->dtype);
}

/* Step s on the graph API (kfr_cudnn_graph.c), timed on the search
 * buffers when there are any: KFUSE_OK, or not (the legacy calls). */
static int graph_prepare(kfuse_model *m, uint32_t s, search_buf *sb) {
  const kfr_step *stp = &m->steps[s];
  const kfr_conv *c = &stp->conv;
  const kfr_arg *a = &m->args[stp->first_arg];
  CUdeviceptr x = 0, w = 0, y = 0, b = 0;
  if (sb) {
    uint32_t wk = m->buffers[a[1].buffer].kind;
    x = sb->x;
    y = sb->y;
    w = wk == KFR_BUF_INPUT || wk == KFR_BUF_OUTPUT ? sb->w : ptr_of(m, &a[1]);
    if (c->has_bias) {
      uint32_t bk = m->buffers[a[3].buffer].kind;
      b = bk == KFR_BUF_INPUT || bk == KFR_BUF_OUTPUT ? sb->y : ptr_of(m, &a[3]);
    }
  }
  return kfr_conv_graph_prepare(m, s, x, w, y, b, sb ? sb->ws : 0);
}

/* The workspace the chosen algorithms and plans need (the largest step's;
 * steps run one at a time), allocated once the search buffers are freed:
 * the plan's workspace_bytes is only the search's budget. */
static int alloc_workspace(kfuse_model *m) {
  uint64_t need = 0;
  for (uint32_t s = 0; s < m->h.n_steps; s++)
    if (m->steps[s].kind == KFR_STEP_CONV && m->conv[s].ws_bytes > need)
      need = m->conv[s].ws_bytes;
  if (!need)
    return KFUSE_OK;
  CUresult r = m->cu->cuMemAlloc(&m->conv_ws, need);
  if (r != CUDA_SUCCESS) {
    char why[256];
    m->conv_ws = 0;
    return kfr_fail(m, r == CUDA_ERROR_OUT_OF_MEMORY ? KFUSE_ENOMEM : KFUSE_ECUDA,
                    "cuMemAlloc failed (%llu bytes of cuDNN workspace for the chosen algorithms): %s",
                    (unsigned long long)need, kfr_cu_describe(m->cu, r, why, sizeof why));
  }
  if (kfr_cudnn_verbose())
    fprintf(stderr, "kfuse: cuDNN workspace for the chosen algorithms: %llu bytes\n", (unsigned long long)need);
  return KFUSE_OK;
}

/* An earlier CONV step with the same parameters, or s itself. */
static uint32_t twin(const kfuse_model *m, uint32_t s) {
  for (uint32_t t = 0; t < s; t++)
    if (m->steps[t].kind == KFR_STEP_CONV &&
        memcmp(&m->steps[t].conv, &m->steps[s].conv, sizeof(kfr_conv)) == 0)
      return t;
  return s;
}

int kfr_conv_prepare_all(kfuse_model *m) {
  int any = 0, rc;
  for (uint32_t s = 0; s < m->h.n_steps && !any; s++)
    any = m->steps[s].kind == KFR_STEP_CONV;
  if (!any)
    return KFUSE_OK;
  if ((rc = kfr_cudnn_load(&m->dnn_api, m->err, sizeof m->err)))
    return rc;
  kfr_dnn_status st = m->dnn_api->cudnnCreate(&m->dnn);
  if (st) {
    m->dnn = NULL;
    return kfr_fail(m, KFUSE_ELIBRARY, "cudnnCreate failed (%s): %s (%d)",
                    m->dnn_api->path, m->dnn_api->cudnnGetErrorString(st), st);
  }
  /* the searches (cudnnFind*) run on the handle's stream: the instance's
   * own, never the legacy one; every run sets the caller's */
  if ((st = m->dnn_api->cudnnSetStream(m->dnn, m->own)))
    return kfr_fail(m, KFUSE_ELIBRARY, "cudnnSetStream failed (%s): %s (%d)", m->dnn_api->path,
                    m->dnn_api->cudnnGetErrorString(st), st);
  const char *find = secure_getenv("KFUSE_CUDNN_FIND");
  int timed = m->conv_search && !(find && strcmp(find, "0") == 0);
  search_buf sb;
  memset(&sb, 0, sizeof sb);
  if (timed && (rc = search_alloc(m, &sb)))
    goto done;
  for (uint32_t s = 0; s < m->h.n_steps; s++) {
    if (m->steps[s].kind != KFR_STEP_CONV)
      continue;
    if ((rc = describe(m, s)))
      goto done;
    uint32_t t = twin(m, s);
    if (t != s && m->conv[t].plan) {
      /* the same convolution as an earlier step that runs a graph plan:
       * the same operation graph, so the same plan (searched once; the
       * pointers are each step's own variant pack) */
      m->conv[s].plan = m->conv[t].plan;
      m->conv[s].plan_of = t + 1;
      m->conv[s].ws_bytes = m->conv[t].ws_bytes;
      if (kfr_cudnn_verbose())
        fprintf(stderr, "kfuse: cuDNN step %u (%s): the graph plan of step %u (the same convolution)\n", s,
                kfr_step_name(m, s), t);
      continue;
    }
    if (graph_prepare(m, s, timed ? &sb : NULL) == KFUSE_OK)
      continue;
    if (t != s && !m->conv[t].legacy)
      t = s; /* the twin runs a graph plan: choose here */
    if (t != s) {
      m->conv[s].algo = m->conv[t].algo;
      m->conv[s].math = m->conv[t].math;
      m->conv[s].ws_bytes = m->conv[t].ws_bytes;
      m->conv[s].legacy = 1;
      if ((st = m->dnn_api->cudnnSetConvolutionMathType(m->conv[s].cd,
                                                        m->conv[s].math))) {
        rc = dnn_fail(m, st, "cudnnSetConvolutionMathType", s);
        goto done;
      }
      continue;
    }
    if ((rc = choose(m, s, timed ? &sb : NULL)))
      goto done;
    m->conv[s].legacy = 1;
    if (kfr_cudnn_verbose())
      fprintf(stderr, "kfuse: cuDNN step %u (%s): algo %d, math %d, %s\n", s, kfr_step_name(m, s), m->conv[s].algo,
              m->conv[s].math, m->conv[s].fused ? "fused bias/activation call" : "cudnnConvolutionForward");
  }
done:
  if (timed) {
    /* the search ran on the instance's stream: finish before freeing */
    (void)m->cu->cuStreamSynchronize(m->own);
    search_free(m, &sb);
  }
  return rc ? rc : alloc_workspace(m);
}

void kfr_conv_release_all(kfuse_model *m) {
  const kfr_cudnn *d = m->dnn_api;
  if (!d)
    return;
  for (uint32_t s = 0; m->conv && s < m->h.n_steps; s++) {
    kfr_conv_rt *rt = &m->conv[s];
    if (m->steps[s].kind != KFR_STEP_CONV)
      continue;
    kfr_conv_graph_release(m, s);
    /* best effort, as in destroy */
    if (rt->xd) (void)d->cudnnDestroyTensorDescriptor(rt->xd);
    if (rt->yd) (void)d->cudnnDestroyTensorDescriptor(rt->yd);
    if (rt->bd) (void)d->cudnnDestroyTensorDescriptor(rt->bd);
    if (rt->wd) (void)d->cudnnDestroyFilterDescriptor(rt->wd);
    if (rt->cd) (void)d->cudnnDestroyConvolutionDescriptor(rt->cd);
    if (rt->ad) (void)d->cudnnDestroyActivationDescriptor(rt->ad);
    memset(rt, 0, sizeof *rt);
  }
  if (m->dnn)
    (void)d->cudnnDestroy(m->dnn);
  m->dnn = NULL;
  if (m->conv_stage)
    (void)m->cu->cuMemFree(m->conv_stage);
  m->conv_stage = 0;
  if (m->conv_ws)
    (void)m->cu->cuMemFree(m->conv_ws);
  m->conv_ws = 0;
}

/* ---- caller tensors less than 16-byte aligned ----------------------------- */

#define KFR_CONV_ALIGN 16
static uint64_t round256(uint64_t v) { return (v + 255) & ~(uint64_t)255; }

/* Bytes of x, w, y, bias and z of step s, in that order. */
static void operand_bytes(const kfr_conv *c, uint64_t nb[5]) {
  nb[0] = conv_bytes(c, 0);
  nb[1] = conv_bytes(c, 1);
  nb[2] = conv_bytes(c, 2);
  nb[3] = c->has_bias ? (uint64_t)c->k * (uint64_t)kfr_dtype_size(c->dtype) : 0;
  nb[4] = c->has_z ? nb[2] : 0;
}

/* Move step s's operands p[] (x, w, y, bias, z; 0 where absent) that are
 * less than 16-byte aligned into the staging buffer: inputs copied in on
 * the stream, y pointed at staging with the caller's y returned in *y_back
 * (the caller copies the result out). The buffer holds the largest CONV
 * step and is allocated at the first run that needs it (so not while a
 * stream is captured: a capture of such a run fails with cuMemAlloc's
 * error). */
static int stage_operands(kfuse_model *m, uint32_t s, CUstream stream, CUdeviceptr p[5], CUdeviceptr *y_back) {
  const kfr_driver *cu = m->cu;
  uint64_t nb[5];
  char why[256];
  CUresult r;
  if (!m->conv_stage) {
    uint64_t need = 0;
    for (uint32_t t = 0; t < m->h.n_steps; t++) {
      if (m->steps[t].kind != KFR_STEP_CONV)
        continue;
      operand_bytes(&m->steps[t].conv, nb);
      uint64_t sum = 0;
      for (int i = 0; i < 5; i++)
        sum += round256(nb[i]);
      if (sum > need)
        need = sum;
    }
    if ((r = cu->cuMemAlloc(&m->conv_stage, need)) != CUDA_SUCCESS) {
      m->conv_stage = 0;
      return kfr_fail(m, r == CUDA_ERROR_OUT_OF_MEMORY ? KFUSE_ENOMEM : KFUSE_ECUDA,
                      "CONV step %u (%s): a tensor is not %d-byte aligned and its staging buffer could not be "
                      "allocated (cuMemAlloc of %llu bytes): %s",
                      s, kfr_step_name(m, s), KFR_CONV_ALIGN, (unsigned long long)need,
                      kfr_cu_describe(cu, r, why, sizeof why));
    }
  }
  operand_bytes(&m->steps[s].conv, nb);
  CUdeviceptr at = m->conv_stage;
  *y_back = 0;
  for (int i = 0; i < 5; i++) {
    CUdeviceptr here = at;
    at += round256(nb[i]);
    if (!nb[i] || p[i] % KFR_CONV_ALIGN == 0)
      continue;
    if (i == 2) { /* the output: written to staging, copied out after */
      *y_back = p[2];
      p[2] = here;
      continue;
    }
    if ((r = cu->cuMemcpyDtoDAsync(here, p[i], nb[i], stream)) != CUDA_SUCCESS)
      return kfr_fail(m, KFUSE_ECUDA, "CONV step %u (%s): cuMemcpyDtoDAsync failed staging an unaligned operand: %s",
                      s, kfr_step_name(m, s), kfr_cu_describe(cu, r, why, sizeof why));
    p[i] = here;
  }
  if (kfr_cudnn_verbose())
    fprintf(stderr, "kfuse: cuDNN step %u (%s): a tensor is not %d-byte aligned: staged\n", s, kfr_step_name(m, s),
            KFR_CONV_ALIGN);
  return KFUSE_OK;
}

/* The step's cuDNN call on aligned pointers p[] (x, w, y, bias, z). */
static int conv_call(kfuse_model *m, uint32_t s, const CUdeviceptr p[5], void *ws) {
  const kfr_cudnn *d = m->dnn_api;
  const kfr_conv *c = &m->steps[s].conv;
  kfr_conv_rt *rt = &m->conv[s];
  void *x = (void *)(uintptr_t)p[0], *w = (void *)(uintptr_t)p[1], *y = (void *)(uintptr_t)p[2];
  void *b = (void *)(uintptr_t)p[3], *z = (void *)(uintptr_t)p[4];
  if (rt->plan)
    return kfr_conv_graph_run(m, s, x, w, y, b, z, ws);
  kfr_dnn_status st;
  if (c->transposed) {
    st = d->cudnnConvolutionBackwardData(m->dnn, &rt->alpha1, rt->wd, w, rt->xd, x, rt->cd, rt->algo, ws,
                                         (size_t)rt->ws_bytes, &rt->zero, rt->yd, y);
    return st ? dnn_fail(m, st, "cudnnConvolutionBackwardData", s) : KFUSE_OK;
  }
  if (!rt->fused) {
    st = d->cudnnConvolutionForward(m->dnn, &rt->alpha1, rt->xd, x, rt->wd, w, rt->cd, rt->algo, ws,
                                    (size_t)rt->ws_bytes, &rt->zero, rt->yd, y);
    return st ? dnn_fail(m, st, "cudnnConvolutionForward", s) : KFUSE_OK;
  }
  /* without z, alpha2 is 0 and cuDNN does not read it: y stands in */
  st = d->cudnnConvolutionBiasActivationForward(m->dnn, &rt->alpha1, rt->xd, x, rt->wd, w, rt->cd, rt->algo, ws,
                                                (size_t)rt->ws_bytes, &rt->alpha2, rt->yd, c->has_z ? z : y,
                                                rt->bd, b, rt->ad, rt->yd, y);
  return st ? dnn_fail(m, st, "cudnnConvolutionBiasActivationForward", s) : KFUSE_OK;
}

int kfr_conv_run(kfuse_model *m, uint32_t s, CUstream stream) {
  const kfr_step *stp = &m->steps[s];
  const kfr_conv *c = &stp->conv;
  const kfr_arg *a = &m->args[stp->first_arg];
  kfr_dnn_status st = m->dnn_api->cudnnSetStream(m->dnn, stream);
  if (st)
    return dnn_fail(m, st, "cudnnSetStream", s);
  CUdeviceptr p[5] = {ptr_of(m, &a[0]), ptr_of(m, &a[1]), ptr_of(m, &a[2]), c->has_bias ? ptr_of(m, &a[3]) : 0,
                      c->has_z ? ptr_of(m, &a[4]) : 0};
  void *ws = m->conv[s].ws_bytes ? (void *)(uintptr_t)m->conv_ws : NULL;
  CUdeviceptr y_back = 0;
  int rc;
  for (int i = 0; i < 5; i++)
    if (p[i] % KFR_CONV_ALIGN) {
      if ((rc = stage_operands(m, s, stream, p, &y_back)))
        return rc;
      break;
    }
  if ((rc = conv_call(m, s, p, ws)))
    return rc;
  if (y_back) {
    CUresult r = m->cu->cuMemcpyDtoDAsync(y_back, p[2], conv_bytes(c, 2), stream);
    if (r != CUDA_SUCCESS) {
      char why[256];
      return kfr_fail(m, KFUSE_ECUDA, "CONV step %u (%s): cuMemcpyDtoDAsync failed copying the output out of "
                      "staging: %s", s, kfr_step_name(m, s), kfr_cu_describe(m->cu, r, why, sizeof why));
    }
  }
  return KFUSE_OK;
}
