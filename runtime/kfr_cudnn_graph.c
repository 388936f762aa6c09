/* kfr_cudnn_graph.c — CONV steps through cuDNN's graph (backend) API.
 *
 * Why: the legacy calls kfr_cudnn.c makes (cudnnConvolutionForward,
 * cudnnConvolutionBiasActivationForward) cost about 65 us of host time per
 * call under cuDNN 9 (H200, 2026-11-22: a conv + bias + ReLU module took
 * 0.090 ms of host time per call for 0.047 ms of GPU time, eager 0.061 ms),
 * so small convolution models were host-bound. PyTorch builds execution
 * plans once and runs them with cudnnBackendExecute; this file does the same.
 *
 * At create (kfr_conv_graph_prepare), for one step: an operation graph
 * y = relu(alpha1 conv(x, w) + bias + alpha2 z) with the pointwise parts
 * the step has (intermediates virtual, in fp32), or for a transposed step
 * the one backward-data operation y = alpha1 conv_transpose(x, w), cuDNN's heuristics (mode
 * A) for engine configurations, an execution plan for each of the first
 * KFR_GRAPH_CANDIDATES that finalises and keeps the precision policy (no
 * reduced-precision reduction; strict fp32 steps also off tensor cores);
 * with search buffers, each plan is timed (one warm-up, median of three)
 * and the fastest kept, else the first that fits the step's workspace
 * budget. A plan over the budget is timed with a
 * workspace of its own when the device has the memory
 * (kfr_conv_big_ws_limit) and wins only when at least 10% faster than the
 * fastest within the budget (KFR_GRAPH_BIG_GAIN); nothing within the
 * budget and nothing timed: the heuristics' first plan. Anything cuDNN
 * refuses leaves the step on the legacy path (the caller falls back;
 * KFUSE_CUDNN_VERBOSE=1 says why). A step with the same convolution as an
 * earlier one (kfr_conv equal: the same operation graph) runs that step's
 * plan with its own variant pack (kfr_conv_prepare_all): searched once,
 * which is most of create's time on a CNN whose blocks repeat.
 *
 * At run (kfr_conv_graph_run): a variant pack of the step's pointers,
 * rebuilt only when they change (arena pointers do not; caller inputs and
 * outputs may), and cudnnBackendExecute. Tensors are described as 16-byte
 * aligned; kfr_conv_run stages any operand that is not (kfr_cudnn.c).
 *
 * The declarations are our own (no cudnn.h is needed to build); enum
 * values as in cuDNN 9's cudnn_graph.h. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfr_int.h"

enum {
  /* cudnnBackendDescriptorType_t */
  D_POINTWISE = 0, D_CONVOLUTION = 1, D_ENGINE = 2, D_ENGINECFG = 3, D_ENGINEHEUR = 4,
  D_EXECUTION_PLAN = 5, D_OP_CONV_FWD = 10, D_OP_CONV_BWD_DATA = 12, D_OP_POINTWISE = 13, D_OPERATIONGRAPH = 15,
  D_VARIANT_PACK = 16, D_TENSOR = 17,
  /* cudnnBackendAttributeType_t */
  T_HANDLE = 0, T_DATA_TYPE = 1, T_BOOLEAN = 2, T_INT64 = 3, T_FLOAT = 4, T_VOID_PTR = 6,
  T_CONVOLUTION_MODE = 7, T_HEUR_MODE = 8, T_NUMERICAL_NOTE = 11, T_POINTWISE_MODE = 14,
  T_BACKEND_DESCRIPTOR = 15,
  /* cudnnBackendAttributeName_t */
  A_POINTWISE_MODE = 0, A_POINTWISE_MATH_PREC = 1,
  A_CONV_COMP_TYPE = 100, A_CONV_CONV_MODE = 101, A_CONV_DILATIONS = 102,
  A_CONV_FILTER_STRIDES = 103, A_CONV_POST_PADDINGS = 104, A_CONV_PRE_PADDINGS = 105,
  A_CONV_SPATIAL_DIMS = 106,
  A_ENGINEHEUR_MODE = 200, A_ENGINEHEUR_OPERATION_GRAPH = 201, A_ENGINEHEUR_RESULTS = 202,
  A_ENGINECFG_ENGINE = 300,
  A_PLAN_HANDLE = 400, A_PLAN_ENGINE_CONFIG = 401, A_PLAN_WORKSPACE_SIZE = 402,
  A_CONV_FWD_ALPHA = 700, A_CONV_FWD_BETA = 701, A_CONV_FWD_CONV_DESC = 702,
  A_CONV_FWD_W = 703, A_CONV_FWD_X = 704, A_CONV_FWD_Y = 705,
  A_CONV_BWD_DATA_ALPHA = 706, A_CONV_BWD_DATA_BETA = 707, A_CONV_BWD_DATA_CONV_DESC = 708,
  A_CONV_BWD_DATA_W = 709, A_CONV_BWD_DATA_DX = 710, A_CONV_BWD_DATA_DY = 711,
  A_PW_PW_DESCRIPTOR = 750, A_PW_XDESC = 751, A_PW_BDESC = 752, A_PW_YDESC = 753,
  A_PW_ALPHA1 = 754, A_PW_ALPHA2 = 755,
  A_OPGRAPH_HANDLE = 800, A_OPGRAPH_OPS = 801,
  A_TENSOR_BYTE_ALIGNMENT = 900, A_TENSOR_DATA_TYPE = 901, A_TENSOR_DIMENSIONS = 902,
  A_TENSOR_STRIDES = 903, A_TENSOR_UNIQUE_ID = 906, A_TENSOR_IS_VIRTUAL = 907,
  A_VARIANT_PACK_UNIQUE_IDS = 1000, A_VARIANT_PACK_DATA_POINTERS = 1001,
  A_VARIANT_PACK_WORKSPACE = 1003,
  A_ENGINE_NUMERICAL_NOTE = 1303,
  /* values */
  POINTWISE_ADD = 0, POINTWISE_RELU_FWD = 100, HEUR_MODE_A = 3,
  NOTE_TENSOR_CORE = 0, NOTE_DOWN_CONVERT_INPUTS = 1, NOTE_REDUCED_PRECISION_REDUCTION = 2,
};

#define KFR_GRAPH_CANDIDATES 8
/* a plan over the step's workspace budget replaces the fastest within it
 * when it takes at most this fraction of its time */
#define KFR_GRAPH_BIG_GAIN 0.9f
#define KFR_GRAPH_ALIGN 16

/* unique ids of the step's tensors; virtual intermediates from 10 */
enum { UID_X = 1, UID_W = 2, UID_Y = 3, UID_B = 4, UID_Z = 5, UID_V = 10 };

/* descriptors made while building, destroyed together */
typedef struct gbuild {
  const kfr_cudnn *d;
  void *descs[64];
  int n;
  kfr_dnn_status st;
  const char *call; /* the call that failed */
} gbuild;

static void *gnew(gbuild *b, int type) {
  if (b->st) return NULL;
  if (b->n == (int)(sizeof b->descs / sizeof b->descs[0])) {
    b->st = -1;
    b->call = "too many descriptors";
    return NULL;
  }
  void *p = NULL;
  if ((b->st = b->d->cudnnBackendCreateDescriptor(type, &p))) {
    b->call = "cudnnBackendCreateDescriptor";
    return NULL;
  }
  b->descs[b->n++] = p;
  return p;
}

static void gset(gbuild *b, void *desc, int attr, int type, int64_t count, const void *v) {
  if (b->st || !desc) return;
  if ((b->st = b->d->cudnnBackendSetAttribute(desc, attr, type, count, v)))
    b->call = "cudnnBackendSetAttribute";
}

static void gfin(gbuild *b, void *desc) {
  if (b->st || !desc) return;
  if ((b->st = b->d->cudnnBackendFinalize(desc)))
    b->call = "cudnnBackendFinalize";
}

static void gfree(gbuild *b) {
  for (int i = b->n - 1; i >= 0; i--) (void)b->d->cudnnBackendDestroyDescriptor(b->descs[i]);
  b->n = 0;
}

static void *tensor(gbuild *b, int64_t uid, int dtype, int nb, const int *dim, const int *str, bool virt) {
  int64_t d64[5], s64[5], align = KFR_GRAPH_ALIGN;
  for (int i = 0; i < nb; i++) {
    d64[i] = dim[i];
    s64[i] = str[i];
  }
  void *t = gnew(b, D_TENSOR);
  gset(b, t, A_TENSOR_DATA_TYPE, T_DATA_TYPE, 1, &dtype);
  gset(b, t, A_TENSOR_DIMENSIONS, T_INT64, nb, d64);
  gset(b, t, A_TENSOR_STRIDES, T_INT64, nb, s64);
  gset(b, t, A_TENSOR_UNIQUE_ID, T_INT64, 1, &uid);
  gset(b, t, A_TENSOR_BYTE_ALIGNMENT, T_INT64, 1, &align);
  if (virt) gset(b, t, A_TENSOR_IS_VIRTUAL, T_BOOLEAN, 1, &virt);
  gfin(b, t);
  return t;
}

/* a pointwise op y = mode(x[, alpha2 * bb]) */
static void *pointwise(gbuild *b, int mode, void *x, void *bb, void *y, float alpha2) {
  int prec = KFR_DNN_DATA_FLOAT;
  void *pw = gnew(b, D_POINTWISE);
  gset(b, pw, A_POINTWISE_MODE, T_POINTWISE_MODE, 1, &mode);
  gset(b, pw, A_POINTWISE_MATH_PREC, T_DATA_TYPE, 1, &prec);
  gfin(b, pw);
  void *op = gnew(b, D_OP_POINTWISE);
  gset(b, op, A_PW_PW_DESCRIPTOR, T_BACKEND_DESCRIPTOR, 1, &pw);
  gset(b, op, A_PW_XDESC, T_BACKEND_DESCRIPTOR, 1, &x);
  if (bb) {
    gset(b, op, A_PW_BDESC, T_BACKEND_DESCRIPTOR, 1, &bb);
    gset(b, op, A_PW_ALPHA2, T_FLOAT, 1, &alpha2);
  }
  gset(b, op, A_PW_YDESC, T_BACKEND_DESCRIPTOR, 1, &y);
  gfin(b, op);
  return op;
}

/* Whether engine config cfg keeps the precision policy for a step: never
 * a reduced-precision reduction (half precision accumulated in half: the
 * policy accumulates in fp32) and never down-converted inputs (fp32 data
 * read as fp16 or bf16: eager PyTorch drops those engines whatever its
 * TF32 setting), and for a strict fp32 step also no tensor cores (TF32).
 * While they were allowed, deeplabv3_mobilenet_v3_large's fused
 * convolution plans took it 4 times as far from the fp64 model as eager
 * (1.6e-2 against 4.0e-3; the same module on cuDNN's legacy calls 3.3e-3,
 * unfused 4.3e-3; H200, 2026-11-29); down-converting engines are the
 * likely cause, not yet confirmed on a GPU with this filter. A
 * strict step whose notes cannot be read is refused; any other step is
 * refused only for a note it has, so that every choice a create can make
 * — the timed search's or the heuristics' — computes in the same
 * precision, and the module check, which creates with the heuristics'
 * (kfuse_options.conv_search = 0), sees the accuracy a user's timed create
 * gets. */
static bool policy_ok(const kfr_cudnn *d, void *cfg, bool strict) {
  void *eng = NULL;
  if (d->cudnnBackendCreateDescriptor(D_ENGINE, &eng)) return !strict;
  int64_t n = 0;
  bool read = !d->cudnnBackendGetAttribute(cfg, A_ENGINECFG_ENGINE, T_BACKEND_DESCRIPTOR, 1, &n, &eng);
  int notes[16];
  n = 0;
  if (read) read = !d->cudnnBackendGetAttribute(eng, A_ENGINE_NUMERICAL_NOTE, T_NUMERICAL_NOTE, 16, &n, notes);
  bool ok = read || !strict;
  for (int64_t i = 0; read && ok && i < n && i < 16; i++)
    if (notes[i] == NOTE_REDUCED_PRECISION_REDUCTION || notes[i] == NOTE_DOWN_CONVERT_INPUTS ||
        (strict && notes[i] == NOTE_TENSOR_CORE))
      ok = false;
  (void)d->cudnnBackendDestroyDescriptor(eng);
  return ok;
}

static void *variant_pack(const kfr_cudnn *d, const int64_t *uids, void *const *ptrs, int n, void *ws) {
  void *vp = NULL;
  if (d->cudnnBackendCreateDescriptor(D_VARIANT_PACK, &vp)) return NULL;
  if (d->cudnnBackendSetAttribute(vp, A_VARIANT_PACK_UNIQUE_IDS, T_INT64, n, uids) ||
      d->cudnnBackendSetAttribute(vp, A_VARIANT_PACK_DATA_POINTERS, T_VOID_PTR, n, ptrs) ||
      d->cudnnBackendSetAttribute(vp, A_VARIANT_PACK_WORKSPACE, T_VOID_PTR, 1, &ws) ||
      d->cudnnBackendFinalize(vp)) {
    (void)d->cudnnBackendDestroyDescriptor(vp);
    return NULL;
  }
  return vp;
}

/* One execution of a plan (kfr_time3's call). */
typedef struct plan_call {
  kfuse_model *m;
  void *plan, *vp;
} plan_call;

static int run_plan(void *ctx) {
  const plan_call *x = ctx;
  return x->m->dnn_api->cudnnBackendExecute(x->m->dnn, x->plan, x->vp) != 0;
}

/* Median of three timed executions of plan (after one warm-up) on the
 * instance's own stream, in ms; < 0 when it failed to run. */
static float time_plan(kfuse_model *m, void *plan, void *vp) {
  const kfr_driver *cu = m->cu;
  CUevent ev[2] = {0};
  if (cu->cuEventCreate(&ev[0], 0) != CUDA_SUCCESS) return -1;
  if (cu->cuEventCreate(&ev[1], 0) != CUDA_SUCCESS) {
    (void)cu->cuEventDestroy(ev[0]);
    return -1;
  }
  plan_call pc = {m, plan, vp};
  float ms = -1;
  /* the events' stream */
  if (m->dnn_api->cudnnSetStream(m->dnn, m->own) || kfr_time3(cu, m->own, ev, run_plan, &pc, &ms) ||
      cu->cuStreamSynchronize(m->own) != CUDA_SUCCESS)
    ms = -1;
  (void)cu->cuEventDestroy(ev[0]);
  (void)cu->cuEventDestroy(ev[1]);
  return ms;
}

int kfr_conv_graph_prepare(kfuse_model *m, uint32_t s, CUdeviceptr sx, CUdeviceptr sw, CUdeviceptr sy,
                           CUdeviceptr sb, CUdeviceptr wsp) {
  const kfr_cudnn *d = m->dnn_api;
  const kfr_conv *c = &m->steps[s].conv;
  kfr_conv_rt *rt = &m->conv[s];
  if (!d->cudnnBackendCreateDescriptor || !d->cudnnBackendExecute) return 1;
  const char *env = secure_getenv("KFUSE_CUDNN_GRAPH");
  if (env && strcmp(env, "0") == 0) return 1;
  gbuild b;
  memset(&b, 0, sizeof b);
  b.d = d;
  int dt = c->dtype == KFUSE_DTYPE_F16 ? KFR_DNN_DATA_HALF
           : c->dtype == KFUSE_DTYPE_BF16 ? KFR_DNN_DATA_BFLOAT16 : KFR_DNN_DATA_FLOAT;
  int nhwc = c->layout == KFR_CONV_NHWC;
  int dim[5], str[5], nb;
  nb = kfr_conv_dims(c->nd, c->n, c->c, c->in, nhwc, dim, str);
  void *tx = tensor(&b, UID_X, dt, nb, dim, str, false);
  if (c->transposed) /* the filter of the forward convolution from y to x */
    kfr_conv_dims(c->nd, c->c, c->k / c->groups, c->filter, nhwc, dim, str);
  else
    kfr_conv_dims(c->nd, c->k, c->c / c->groups, c->filter, nhwc, dim, str);
  void *tw = tensor(&b, UID_W, dt, nb, dim, str, false);
  int ydim[5], ystr[5];
  kfr_conv_dims(c->nd, c->n, c->k, c->out, nhwc, ydim, ystr);
  void *ty = tensor(&b, UID_Y, dt, nb, ydim, ystr, false);
  int sp = nb - 2;
  int64_t pad[3], stride[3], dil[3];
  for (int i = 0; i < sp; i++) {
    int j = c->nd == 1 ? i - 1 : i;
    pad[i] = j < 0 ? 0 : c->pad[j];
    stride[i] = j < 0 ? 1 : c->stride[j];
    dil[i] = j < 0 ? 1 : c->dilation[j];
  }
  int comp = KFR_DNN_DATA_FLOAT, mode = KFR_DNN_CROSS_CORRELATION;
  int64_t nsp = sp;
  void *cd = gnew(&b, D_CONVOLUTION);
  gset(&b, cd, A_CONV_COMP_TYPE, T_DATA_TYPE, 1, &comp);
  gset(&b, cd, A_CONV_CONV_MODE, T_CONVOLUTION_MODE, 1, &mode);
  gset(&b, cd, A_CONV_SPATIAL_DIMS, T_INT64, 1, &nsp);
  gset(&b, cd, A_CONV_DILATIONS, T_INT64, sp, dil);
  gset(&b, cd, A_CONV_FILTER_STRIDES, T_INT64, sp, stride);
  gset(&b, cd, A_CONV_PRE_PADDINGS, T_INT64, sp, pad);
  gset(&b, cd, A_CONV_POST_PADDINGS, T_INT64, sp, pad);
  gfin(&b, cd);
  /* conv -> [+ bias] -> [+ alpha2 z] -> [relu]: the last writes y */
  int n_pw = (c->has_bias ? 1 : 0) + (c->has_z ? 1 : 0) + (c->activation == KFR_ACT_RELU ? 1 : 0);
  int64_t vuid = UID_V;
  void *cur = n_pw ? tensor(&b, vuid++, KFR_DNN_DATA_FLOAT, nb, ydim, ystr, true) : ty;
  float alpha = (float)c->alpha1, beta = 0.0f;
  /* forward: x -> y; transposed (backward data): dy (the step's x) -> dx
   * (its y). Attributes: input, filter, output, descriptor, alpha, beta */
  static const int fwd[6] = {A_CONV_FWD_X, A_CONV_FWD_W, A_CONV_FWD_Y, A_CONV_FWD_CONV_DESC, A_CONV_FWD_ALPHA,
                             A_CONV_FWD_BETA};
  static const int bwd[6] = {A_CONV_BWD_DATA_DY, A_CONV_BWD_DATA_W, A_CONV_BWD_DATA_DX,
                             A_CONV_BWD_DATA_CONV_DESC, A_CONV_BWD_DATA_ALPHA, A_CONV_BWD_DATA_BETA};
  const int *at = c->transposed ? bwd : fwd;
  void *conv = gnew(&b, c->transposed ? D_OP_CONV_BWD_DATA : D_OP_CONV_FWD);
  gset(&b, conv, at[0], T_BACKEND_DESCRIPTOR, 1, &tx);
  gset(&b, conv, at[1], T_BACKEND_DESCRIPTOR, 1, &tw);
  gset(&b, conv, at[2], T_BACKEND_DESCRIPTOR, 1, &cur);
  gset(&b, conv, at[3], T_BACKEND_DESCRIPTOR, 1, &cd);
  gset(&b, conv, at[4], T_FLOAT, 1, &alpha);
  gset(&b, conv, at[5], T_FLOAT, 1, &beta);
  gfin(&b, conv);
  void *ops[4] = {conv};
  int n_ops = 1, left = n_pw;
  if (c->has_bias) {
    int64_t one[3] = {1, 1, 1};
    int bdim[5], bstr[5];
    kfr_conv_dims(c->nd, 1, c->k, one, 0, bdim, bstr);
    void *tb = tensor(&b, UID_B, dt, nb, bdim, bstr, false);
    void *out = --left ? tensor(&b, vuid++, KFR_DNN_DATA_FLOAT, nb, ydim, ystr, true) : ty;
    ops[n_ops++] = pointwise(&b, POINTWISE_ADD, cur, tb, out, 1.0f);
    cur = out;
  }
  if (c->has_z) {
    void *tz = tensor(&b, UID_Z, dt, nb, ydim, ystr, false);
    void *out = --left ? tensor(&b, vuid++, KFR_DNN_DATA_FLOAT, nb, ydim, ystr, true) : ty;
    ops[n_ops++] = pointwise(&b, POINTWISE_ADD, cur, tz, out, (float)c->alpha2);
    cur = out;
  }
  if (c->activation == KFR_ACT_RELU) {
    ops[n_ops++] = pointwise(&b, POINTWISE_RELU_FWD, cur, NULL, ty, 0.0f);
  }
  void *graph = gnew(&b, D_OPERATIONGRAPH);
  gset(&b, graph, A_OPGRAPH_HANDLE, T_HANDLE, 1, &m->dnn);
  gset(&b, graph, A_OPGRAPH_OPS, T_BACKEND_DESCRIPTOR, n_ops, ops);
  gfin(&b, graph);
  int heur_mode = HEUR_MODE_A;
  void *heur = gnew(&b, D_ENGINEHEUR);
  gset(&b, heur, A_ENGINEHEUR_OPERATION_GRAPH, T_BACKEND_DESCRIPTOR, 1, &graph);
  gset(&b, heur, A_ENGINEHEUR_MODE, T_HEUR_MODE, 1, &heur_mode);
  gfin(&b, heur);
  void *cfgs[KFR_GRAPH_CANDIDATES];
  for (int i = 0; i < KFR_GRAPH_CANDIDATES; i++) cfgs[i] = gnew(&b, D_ENGINECFG);
  int64_t n_cfg = 0;
  if (!b.st && (b.st = d->cudnnBackendGetAttribute(heur, A_ENGINEHEUR_RESULTS, T_BACKEND_DESCRIPTOR,
                                                   KFR_GRAPH_CANDIDATES, &n_cfg, cfgs)))
    b.call = "cudnnBackendGetAttribute (heuristics' results)";
  if (b.st) {
    if (kfr_cudnn_verbose())
      fprintf(stderr, "kfuse: cuDNN step %u (%s): graph API not used: %s failed (%d)\n", s, kfr_step_name(m, s),
              b.call, b.st);
    gfree(&b);
    return 1;
  }
  /* the candidates that finalise and fit, timed when there are buffers */
  void *best = NULL;
  int64_t best_ws = 0;
  float best_ms = 0;
  int tried = 0;
  void *over = NULL; /* the heuristics' first plan over the budget */
  int64_t over_ws = 0;
  /* candidates over the plan's budget are timed too, each with a workspace
   * of its own, when the device has the memory (big_limit) */
  void *big = NULL;
  int64_t big_ws = 0;
  float big_ms = 0;
  uint64_t big_limit = sx ? kfr_conv_big_ws_limit(m) : 0;
  void *xptr = (void *)(uintptr_t)sx, *wptr = (void *)(uintptr_t)sw, *yptr = (void *)(uintptr_t)sy;
  for (int64_t i = 0; i < n_cfg && i < KFR_GRAPH_CANDIDATES; i++) {
    if (!policy_ok(d, cfgs[i], kfr_conv_strict_fp32(c))) continue;
    void *plan = NULL;
    if (d->cudnnBackendCreateDescriptor(D_EXECUTION_PLAN, &plan)) continue;
    int64_t ws = 0, cnt = 0;
    if (d->cudnnBackendSetAttribute(plan, A_PLAN_HANDLE, T_HANDLE, 1, &m->dnn) ||
        d->cudnnBackendSetAttribute(plan, A_PLAN_ENGINE_CONFIG, T_BACKEND_DESCRIPTOR, 1, &cfgs[i]) ||
        d->cudnnBackendFinalize(plan) ||
        d->cudnnBackendGetAttribute(plan, A_PLAN_WORKSPACE_SIZE, T_INT64, 1, &cnt, &ws) || ws < 0) {
      (void)d->cudnnBackendDestroyDescriptor(plan);
      continue;
    }
    CUdeviceptr own_ws = 0; /* an over-budget candidate's own workspace, for timing */
    if ((uint64_t)ws > c->workspace_bytes) {
      if (!sx || (uint64_t)ws > big_limit || kfr_scratch_alloc(m, &own_ws, (size_t)ws) != CUDA_SUCCESS) {
        /* kept (untimed) only in case nothing fits */
        if (!over) {
          over = plan;
          over_ws = ws;
        } else {
          (void)d->cudnnBackendDestroyDescriptor(plan);
        }
        continue;
      }
    }
    tried++;
    float ms = 0;
    if (sx) {
      /* search buffers: x, y (z reads y, as the legacy search does), the
       * step's weights and bias where the caller found them (sw, sb) */
      int64_t uids[5] = {UID_X, UID_W, UID_Y, 0, 0};
      void *ptrs[5] = {xptr, wptr, yptr, NULL, NULL};
      int n = 3;
      if (c->has_bias) {
        uids[n] = UID_B;
        ptrs[n++] = (void *)(uintptr_t)sb;
      }
      if (c->has_z) {
        uids[n] = UID_Z;
        ptrs[n++] = yptr;
      }
      void *vp = variant_pack(d, uids, ptrs, n, (void *)(uintptr_t)(own_ws ? own_ws : wsp));
      ms = vp ? time_plan(m, plan, vp) : -1;
      if (vp) (void)d->cudnnBackendDestroyDescriptor(vp);
      kfr_scratch_free(m, own_ws);
      if (kfr_cudnn_verbose())
        fprintf(stderr, "kfuse: cuDNN step %u (%s): graph engine config %lld: workspace %lld%s, %.4f ms\n", s,
                kfr_step_name(m, s), (long long)i, (long long)ws, own_ws ? " (over the budget)" : "", ms);
      if (ms < 0) {
        (void)d->cudnnBackendDestroyDescriptor(plan);
        continue;
      }
      if (own_ws) {
        /* the fastest over the budget, weighed against the rest below */
        if (!big || ms < big_ms) {
          if (big) (void)d->cudnnBackendDestroyDescriptor(big);
          big = plan;
          big_ws = ws;
          big_ms = ms;
        } else {
          (void)d->cudnnBackendDestroyDescriptor(plan);
        }
        continue;
      }
    }
    if (!best || (sx && ms < best_ms)) {
      if (best) (void)d->cudnnBackendDestroyDescriptor(best);
      best = plan;
      best_ws = ws;
      best_ms = ms;
      if (!sx) break; /* heuristics only: the first that finalises */
    } else {
      (void)d->cudnnBackendDestroyDescriptor(plan);
    }
  }
  if (big && (!best || big_ms < KFR_GRAPH_BIG_GAIN * best_ms)) {
    /* over the budget, and worth its memory: at least 10% faster */
    if (kfr_cudnn_verbose())
      fprintf(stderr, "kfuse: cuDNN step %u (%s): the fastest plan needs %lld bytes of workspace, over the "
              "%llu-byte budget: %.4f ms against %.4f ms within it\n", s, kfr_step_name(m, s), (long long)big_ws,
              (unsigned long long)c->workspace_bytes, big_ms, best ? best_ms : -1.0f);
    if (best) (void)d->cudnnBackendDestroyDescriptor(best);
    best = big;
    best_ws = big_ws;
    best_ms = big_ms;
    big = NULL;
  }
  if (big) (void)d->cudnnBackendDestroyDescriptor(big);
  if (!best && over) {
    /* nothing within the budget: the heuristics' first plan, at the
     * workspace it needs (the budget bounds the search, never the load) */
    best = over;
    best_ws = over_ws;
    over = NULL;
    if (kfr_cudnn_verbose())
      fprintf(stderr, "kfuse: cuDNN step %u (%s): no engine config within the %llu-byte budget; the heuristics' "
              "first, needing %lld bytes\n", s, kfr_step_name(m, s), (unsigned long long)c->workspace_bytes,
              (long long)over_ws);
  }
  if (over) (void)d->cudnnBackendDestroyDescriptor(over);
  if (!best) {
    gfree(&b);
    if (kfr_cudnn_verbose())
      fprintf(stderr, "kfuse: cuDNN step %u (%s): graph API not used: none of %lld engine configs "
              "finalised within the %llu-byte workspace (%d tried)\n", s, kfr_step_name(m, s), (long long)n_cfg,
              (unsigned long long)c->workspace_bytes, tried);
    return 1;
  }
  /* the plan's engine config, engine and operation graph stay alive with
   * it (cuDNN's frontend keeps them too) until kfr_conv_graph_release */
  rt->descs = malloc((size_t)b.n * sizeof *rt->descs);
  if (!rt->descs) {
    (void)d->cudnnBackendDestroyDescriptor(best);
    gfree(&b);
    return 1;
  }
  memcpy(rt->descs, b.descs, (size_t)b.n * sizeof *rt->descs);
  rt->n_descs = b.n;
  rt->plan = best;
  rt->ws_bytes = (uint64_t)best_ws;
  if (kfr_cudnn_verbose())
    fprintf(stderr, "kfuse: cuDNN step %u (%s): graph API plan, workspace %lld bytes%s\n", s, kfr_step_name(m, s),
            (long long)best_ws, sx ? " (fastest timed)" : " (heuristics' first)");
  return KFUSE_OK;
}

static bool aligned(const void *p) { return ((uintptr_t)p % KFR_GRAPH_ALIGN) == 0; }

int kfr_conv_graph_run(kfuse_model *m, uint32_t s, void *x, void *w, void *y, void *b, void *z, void *ws) {
  const kfr_cudnn *d = m->dnn_api;
  const kfr_conv *c = &m->steps[s].conv;
  kfr_conv_rt *rt = &m->conv[s];
  if (!aligned(x) || !aligned(w) || !aligned(y) || (c->has_z && !aligned(z)) || (c->has_bias && !aligned(b)))
    return kfr_fail(m, KFUSE_ECUDA, "CONV step %u (%s): internal error: a pointer less than %d-byte aligned reached "
                    "the graph plan", s, kfr_step_name(m, s), KFR_GRAPH_ALIGN);
  void *ptrs[5] = {x, w, y, b, z};
  if (!rt->vpack || memcmp(ptrs, rt->vp_ptrs, sizeof ptrs) != 0 || ws != rt->vp_ws) {
    int64_t uids[5] = {UID_X, UID_W, UID_Y, 0, 0};
    void *p[5] = {x, w, y, NULL, NULL};
    int n = 3;
    if (c->has_bias) {
      uids[n] = UID_B;
      p[n++] = b;
    }
    if (c->has_z) {
      uids[n] = UID_Z;
      p[n++] = z;
    }
    void *vp = variant_pack(d, uids, p, n, ws);
    if (!vp)
      return kfr_fail(m, KFUSE_ELIBRARY, "CONV step %u (%s): cuDNN refused the variant pack of its plan", s,
                      kfr_step_name(m, s));
    if (rt->vpack) (void)d->cudnnBackendDestroyDescriptor(rt->vpack);
    rt->vpack = vp;
    memcpy(rt->vp_ptrs, ptrs, sizeof ptrs);
    rt->vp_ws = ws;
  }
  kfr_dnn_status st = d->cudnnBackendExecute(m->dnn, rt->plan, rt->vpack);
  if (st)
    return kfr_fail(m, KFUSE_ELIBRARY, "cudnnBackendExecute failed in CONV step %u (%s): %s (%d)", s,
                    kfr_step_name(m, s), d->cudnnGetErrorString(st), st);
  return KFUSE_OK;
}

void kfr_conv_graph_release(kfuse_model *m, uint32_t s) {
  const kfr_cudnn *d = m->dnn_api;
  kfr_conv_rt *rt = &m->conv[s];
  if (!d) return;
  if (rt->vpack) (void)d->cudnnBackendDestroyDescriptor(rt->vpack);
  if (rt->plan && !rt->plan_of) (void)d->cudnnBackendDestroyDescriptor(rt->plan);
  for (int i = rt->n_descs - 1; i >= 0; i--) (void)d->cudnnBackendDestroyDescriptor(rt->descs[i]);
  free(rt->descs);
  rt->descs = NULL;
  rt->n_descs = 0;
  rt->vpack = NULL;
  rt->plan = NULL;
  rt->plan_of = 0;
}
