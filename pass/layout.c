/* pass/layout.c — channels-last activations for 2-d and 3-d convolutions.
 *
 * cuDNN's fastest Hopper convolution kernels (TF32 warpgroup implicit GEMM)
 * read and write NHWC; given NCHW tensors cuDNN either transposes them
 * around the call or picks an older NCHW kernel. On the H200 (2026-11-22,
 * scripts/sweep.py --profile) a 3x3 64-channel convolution of [32, 64, 56,
 * 56] ran 68 us on the NCHW path against 38 us in NHWC with its weights in
 * KRSC order, which is what torch.compile gets by converting the model to
 * channels-last. This pass does the same as a layout choice of the
 * compiler: intermediates keep their logical NCHW shapes and get
 * channels-last strides, so nothing above the kernels changes.
 *
 * Expects: a verified graph after the compile pipeline (it inserts its own
 * copies for outputs). Changes, in program order:
 *  - a kf.conv qualifies when it is 2-d or 3-d (forward or transposed),
 *    groups == 1 or a forward 2-d depthwise one (groups == channels), f32,
 *    f16 or bf16, its result of at least CL_MIN_NUMEL
 *    elements and every tensor under 2^31 (cuDNN's legacy API). Measured
 *    with PyTorch's cuDNN on the H200 (2026-11-25, KernelBench shapes, TF32
 *    allowed), channels-last against NCHW: a 3-channel 11x11 stride-4
 *    convolution 1.38x faster, a 3->16 3x3 one 1.51x, a 64-channel 3x3
 *    1.56x, a 1x1 1.00x, a 3-d 8->32 3x3x3 1.32x, transposed 2-d 1.55x and
 *    3-d 1.16x, a depthwise 3x3 1.66x but a grouped transposed 3-d one
 *    0.87x. Grouped convolutions other than depthwise stay NCHW. Depthwise
 *    ones stayed NCHW too while they ran cuDNN's fused conv + bias + relu:
 *    MobileNetV1 (KernelBench L3 19) ran 1.31 ms channels-last against 0.75
 *    ms with them NCHW, cuDNN's fused grouped plans not being what
 *    PyTorch's bare call measured; since depthwise convolutions run the
 *    bare call with the epilogue as our own launch (agent/builtin_conv.c),
 *    they go channels-last as torch.compile's do (its NHWC depthwise
 *    kernel: 0.75 ms against cuDNN's NCHW grouped direct kernel's 1.90 ms
 *    on KernelBench L3 21, H100, 2026-11-28). An earlier rule asked for
 *    channel counts in multiples of 8; cuDNN pads what it needs;
 *  - it goes channels-last when chained to another qualifying one
 *    through element-wise ops (chain_convs below), or alone when its
 *    result goes through element-wise ops (lone_pays: the copy back joins
 *    that epilogue launch, so only the input copy is paid);
 *  - its input becomes channels-last: the value itself when it already is,
 *    else a kf.copy declared channels-last (one per source value, shared by
 *    every use that needs it);
 *  - its weight becomes a graph-owned constant with dim 1 innermost (KRSC;
 *    for a transposed convolution's [C, K/groups, ...] weight, C R S K/g —
 *    what cuDNN reads as the filter of the forward convolution from y to x)
 *    (a kf.param of channels-last type) when it is a plain weight, else a
 *    channels-last kf.copy; its result is declared channels-last;
 *  - an element-wise op (unary, binary, where) with an operand of its own
 *    result shape that this pass made channels-last is declared
 *    channels-last; its other operands of that shape are converted like
 *    conv inputs;
 *  - a plain reduction (sum, mean, amax, ..., not a normalisation) reads a
 *    channels-last operand as it is (the row kernel follows any strides);
 *  - any other use of a value this pass made channels-last (pooling,
 *    normalisations, views, matrix products, ...) and every graph output
 *    that is one read a row-major kf.copy of it instead, so only
 *    convolutions, element-wise kernels and reductions ever see the layout.
 *    Values whose strides were NHWC already (the model's own permutes and
 *    views) keep their readers: those types were inferred from them (see
 *    laid()). A convolution takes such a value as its input directly.
 * Shape inference accepts the declared layout on element-wise and
 * convolution results (ir/infer.c); the kernels read and write through
 * the strides, and the cuDNN steps describe NHWC tensors (runtime/
 * kfr_cudnn.c). A graph without qualifying convolutions is unchanged. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfuse/ir.h"
#include "pass_int.h"

typedef struct lay {
  kf_graph *g;
  kf_diag *diag;
  int64_t min_numel; /* CL_MIN_NUMEL, or 0 (channels-last-all) */
  bool need_chain;   /* only convolutions chained to another (chain_convs) */
  /* the convolutions that go channels-last (chain_convs) */
  const kf_op **chosen;
  int n_chosen;
  kf_namer nm;
  /* value id -> its channels-last copy / its row-major copy */
  kf_value **to_cl, **to_rm;
  /* value id -> this pass declared it channels-last */
  bool *made;
  uint32_t cap;
} lay;

static bool is_cl(const kf_value *v) {
  return v && v->type.kind == KF_TYPE_TENSOR && kf_type_is_channels_last(&v->type) &&
         !kf_type_is_contiguous(&v->type);
}

/* v is channels-last because this pass made it so. A value whose strides
 * were NHWC before the pass (the model's own permute and view, maxvit_t's
 * window partition: [1, 7, 7, 512] permuted to [1, 512, 7, 7]) keeps them:
 * its readers' types were inferred from that layout, and a row-major copy
 * under a view would change the view's strides and so its declared type. */
static bool laid(const lay *l, const kf_value *v) {
  return is_cl(v) && v->id < l->cap && l->made[v->id];
}

static bool small(const kf_type *t) { return kf_type_numel(t) <= INT32_MAX; }

/* Convolutions whose result has fewer elements keep NCHW: the fixtures'
 * tiny models (a few thousand elements, launch-bound) ran 5-20% slower
 * channels-last, with the copies (H200, 2026-11-25, scripts/
 * gpu_conv_check.sh). */
#define CL_MIN_NUMEL ((int64_t)1 << 16)

static bool qualifies(const lay *l, const kf_op *op) {
  if (op->code != KF_OP_CONV || op->n_operands < 2) return false;
  const kf_value *x = op->operands[0], *w = op->operands[1], *r = op->results[0];
  if (!x || !w || x->type.kind != KF_TYPE_TENSOR || (x->type.rank != 4 && x->type.rank != 5) ||
      w->type.rank != x->type.rank || r->type.rank != x->type.rank)
    return false;
  kf_dtype dt = r->type.dtype;
  if ((dt != KF_DTYPE_F32 && dt != KF_DTYPE_F16 && dt != KF_DTYPE_BF16) || x->type.dtype != dt ||
      w->type.dtype != dt)
    return false;
  /* groups 1, or a forward 2-d depthwise convolution (groups = channels) */
  int64_t groups = kf_op_get_int(op, "groups");
  if (groups != 1 && !(groups > 1 && groups == x->type.shape[1] && x->type.rank == 4 &&
                       !kf_op_get_bool(op, "transposed")))
    return false;
  if (!small(&x->type) || !small(&w->type) || !small(&r->type)) return false;
  /* small convolutions gain nothing that pays for the layout copies */
  if (kf_type_numel(&r->type) < l->min_numel) return false;
  /* the weights' own layout must be dense (a param, a folded constant or
   * anything contiguous) */
  if (!kf_type_is_contiguous(&w->type) && !kf_type_is_channels_last(&w->type)) return false;
  return true;
}

static bool elementwise(const kf_op *op);

/* ---- which convolutions: chains ------------------------------------------------- */

/* Channels-last pays where its copies are shared by several convolutions:
 * one copy in, one out, NHWC between. A lone convolution pays both copies
 * for the same cuDNN time: on an H100 (2026-11-25, `kfuse bench` of both
 * layouts, cuDNN plans over the workspace budget timed too) no KernelBench
 * L1/L2 single convolution ran faster channels-last (L1 56, 58-61, 66, 68,
 * 70 equal within 2%, or NCHW faster: L1 59 2.13 ms against 3.83, L1 63
 * 6.69 against 13.42, L1 86 2.44 against 4.65, L2 13 8.93 against 20.05,
 * L2 21 4.22 against 4.84, L2 24 0.94 against 1.74, L2 8 2.09 against
 * 2.23), while networks of chained convolutions did (L3 10 ResNet101 1.68
 * against 4.41, L3 9 ResNet18 0.36 against 0.88, L3 8 0.50 against 0.74,
 * L3 27 RegNet 0.76 against 1.07, L3 5 AlexNet 17.8 against 20.4, L3 6
 * 7.98 against 8.79, L3 45 3.30 against 3.65; L3 20, 22 and 26 ran 5-11%
 * slower). So a qualifying convolution goes channels-last only when its
 * input comes from another one, or its result goes to another one,
 * through element-wise ops only (what stays channels-last between them). */
typedef struct chains {
  int *parent; /* union-find over the qualifying convolutions */
  int *rep;    /* value id -> a convolution reaching it, or -1 */
} chains;

static int find(int *p, int i) {
  while (p[i] != i) i = p[i] = p[p[i]];
  return i;
}

static void unite(int *p, int a, int b) {
  a = find(p, a);
  b = find(p, b);
  if (a != b) p[a] = b;
}

/* A lone convolution that pays channels-last on its own: its result goes
 * through element-wise ops (an epilogue launch runs after cuDNN in either
 * layout, and the row-major copy back joins that launch, tiled through
 * shared memory: agent/templates/ew_tiled.cu), so channels-last costs one
 * copy of its input and buys cuDNN's NHWC kernels. A transposed
 * convolution with a bias has that launch already (the bias follows
 * cuDNN's backward data). Not for 1x1 convolutions (no cuDNN gain
 * measured), nor where an element-wise op of the region reads another
 * tensor of its shape, nor where a reduction other than over the channels
 * or over every spatial dim reads the region (L2 13 and 24's reductions over depth
 * ran 2x slower on channels-last data). H100, 2026-11-25, torch.profiler
 * of KernelBench L2 1, 2, 5, 32, 67: the NCHW cuDNN paths ran 1.4-2.2x the
 * NHWC kernels' time, transposes included. */
static bool lone_pays(const lay *l, const kf_op *conv) {
  const kf_value *w = conv->operands[1];
  bool spatial = false;
  for (int d = 2; d < w->type.rank; d++) spatial |= w->type.shape[d] != 1;
  if (!spatial) return false;
  bool tr = kf_op_get_bool(conv, "transposed");
  bool epi = tr && conv->n_operands > 2 && conv->operands[2];
  bool *in = calloc((size_t)l->g->next_value_id + 1, sizeof *in);
  if (!in) return false;
  in[conv->results[0]->id] = true;
  bool ok = true;
  int rank = conv->results[0]->type.rank;
  for (const kf_op *op = conv->next; op && ok; op = op->next) {
    bool reads = false;
    for (int i = 0; i < op->n_operands; i++)
      if (op->operands[i] && in[op->operands[i]->id]) reads = true;
    if (!reads) continue;
    if (elementwise(op) && kf_type_same_dims(&op->results[0]->type, &conv->results[0]->type)) {
      /* an operand of the result's shape from outside the region would
       * need a channels-last copy of its own: a pass over a tensor the
       * size of the result (L2 26's added input, L2 92's residual sum
       * with a group norm's result: 2.52 -> 3.31 ms) */
      for (int i = 0; i < op->n_operands && ok; i++) {
        const kf_value *v = op->operands[i];
        if (v && !in[v->id] && v->type.kind == KF_TYPE_TENSOR &&
            kf_type_same_dims(&v->type, &conv->results[0]->type))
          ok = false;
      }
      in[op->results[0]->id] = true;
      epi = true;
      continue;
    }
    if (kf_op_info_get(op->code)->kind != KF_KIND_REDUCE) continue; /* reads a copy */
    ok = kf_pass_reduces_channels_or_space(op, rank);
  }
  free(in);
  return ok && epi;
}

static kf_status chain_convs(lay *l) {
  int n = 0;
  for (kf_op *op = l->g->first; op; op = op->next)
    if (qualifies(l, op)) n++;
  if (n == 0) return KF_OK;
  const kf_op **convs = malloc((size_t)n * sizeof *convs);
  int *parent = malloc((size_t)n * sizeof *parent), *size = calloc((size_t)n, sizeof *size);
  int *rep = malloc(((size_t)l->g->next_value_id + 1) * sizeof *rep);
  if (!convs || !parent || !size || !rep) {
    free(convs);
    free(parent);
    free(size);
    free(rep);
    return KF_ERR_NOMEM;
  }
  for (uint32_t i = 0; i <= l->g->next_value_id; i++) rep[i] = -1;
  int k = 0;
  for (kf_op *op = l->g->first; op; op = op->next) {
    if (qualifies(l, op)) {
      convs[k] = op;
      parent[k] = k;
      int r = rep[op->operands[0]->id];
      if (r >= 0) unite(parent, k, r);
      rep[op->results[0]->id] = k++;
      continue;
    }
    if (!elementwise(op)) continue;
    const kf_type *t = &op->results[0]->type;
    int r = -1;
    for (int i = 0; i < op->n_operands; i++) {
      const kf_value *v = op->operands[i];
      if (!v || v->type.kind != KF_TYPE_TENSOR || !kf_type_same_dims(&v->type, t) || rep[v->id] < 0) continue;
      if (r < 0) r = rep[v->id];
      else unite(parent, r, rep[v->id]);
    }
    rep[op->results[0]->id] = r;
  }
  /* a chain with a depthwise convolution needs three: its copies in and
   * out are paid for by the NHWC kernels of a network (MobileNet blocks:
   * pointwise, depthwise, pointwise), not by a depthwise-separable pair on
   * a large tensor (KernelBench L1 86: 1 GB in, 2 GB out, the pair 2.1 ms
   * NCHW) */
  bool *dw = calloc((size_t)n, sizeof *dw);
  if (!dw) {
    free(convs);
    free(parent);
    free(size);
    free(rep);
    return KF_ERR_NOMEM;
  }
  for (int i = 0; i < n; i++) {
    size[find(parent, i)]++;
    if (kf_op_get_int(convs[i], "groups") > 1) dw[find(parent, i)] = true;
  }
  l->n_chosen = 0;
  for (int i = 0; i < n; i++) {
    int root = find(parent, i);
    if (!l->need_chain || size[root] >= (dw[root] ? 3 : 2) || lone_pays(l, convs[i]))
      convs[l->n_chosen++] = convs[i];
  }
  free(dw);
  l->chosen = convs;
  free(parent);
  free(size);
  free(rep);
  return KF_OK;
}

static bool chosen(const lay *l, const kf_op *op) {
  for (int i = 0; i < l->n_chosen; i++)
    if (l->chosen[i] == op) return true;
  return false;
}

static bool elementwise(const kf_op *op) {
  const kf_op_info *info = kf_op_info_get(op->code);
  return (info->kind == KF_KIND_UNARY || info->kind == KF_KIND_BINARY ||
          info->kind == KF_KIND_TERNARY) &&
         op->n_results == 1 && op->results[0]->type.kind == KF_TYPE_TENSOR &&
         (op->results[0]->type.rank == 4 || op->results[0]->type.rank == 5);
}

static kf_status grow(lay *l) {
  uint32_t need = l->g->next_value_id + 1;
  if (need <= l->cap) return KF_OK;
  uint32_t cap = l->cap ? l->cap : 64;
  while (cap < need) cap *= 2;
  kf_value **a = realloc(l->to_cl, cap * sizeof *a), **b;
  if (!a) return KF_ERR_NOMEM;
  l->to_cl = a;
  b = realloc(l->to_rm, cap * sizeof *b);
  if (!b) return KF_ERR_NOMEM;
  l->to_rm = b;
  bool *m = realloc(l->made, cap * sizeof *m);
  if (!m) return KF_ERR_NOMEM;
  l->made = m;
  memset(l->to_cl + l->cap, 0, (cap - l->cap) * sizeof *a);
  memset(l->to_rm + l->cap, 0, (cap - l->cap) * sizeof *b);
  memset(l->made + l->cap, 0, (cap - l->cap) * sizeof *m);
  l->cap = cap;
  return KF_OK;
}

/* A kf.copy of v in the given layout (one per value and layout), placed
 * right after v's definition, or first for a graph input, so every later
 * use may take it. */
static kf_status copy_of(lay *l, kf_value *v, bool cl, kf_value **out) {
  kf_status st = grow(l);
  if (st) return st;
  kf_value *have = cl ? l->to_cl[v->id] : l->to_rm[v->id];
  if (have) {
    *out = have;
    return KF_OK;
  }
  kf_type t = v->type;
  if (cl) kf_type_set_channels_last(&t);
  else kf_type_set_contiguous(&t);
  char base[200];
  snprintf(base, sizeof base, "%.180s_%s", v->def ? v->def->name : l->g->input_names[v->index],
           cl ? "nhwc" : "nchw");
  const char *name = kf_namer_fresh(&l->nm, base);
  if (!name) return KF_ERR_NOMEM;
  kf_op *cp = kf_graph_append_op(l->g, KF_OP_COPY, name, &v, 1, &t, 1);
  if (!v->def) kf_graph_move_op(l->g, cp, l->g->first);
  else if (v->def->next != cp) kf_graph_move_op(l->g, cp, v->def->next);
  kf_type inf = t;
  if ((st = kf_infer_types(cp, &inf, l->diag)) != KF_OK) return st;
  if (!kf_type_equal(&inf, &t)) {
    kf_diag_error(l->diag, "channels-last: the copy '%s' does not keep its layout", name);
    return KF_ERR_INVALID;
  }
  if ((st = grow(l)) != KF_OK) return st;
  (cl ? l->to_cl : l->to_rm)[v->id] = cp->results[0];
  if (cl) l->made[cp->results[0]->id] = true;
  *out = cp->results[0];
  return KF_OK;
}

/* The conv weight w in KRSC order: a new graph-owned constant when w is a
 * plain contiguous weight with data, else a channels-last copy. */
static kf_status weight_krsc(lay *l, kf_op *conv, kf_value *w, kf_value **out) {
  if (is_cl(w) || kf_type_is_channels_last(&w->type)) {
    *out = w;
    return KF_OK;
  }
  kf_status st = grow(l);
  if (st) return st;
  if (l->to_cl[w->id]) {
    *out = l->to_cl[w->id];
    return KF_OK;
  }
  const kf_op *d = w->def;
  if (d && d->code == KF_OP_PARAM && kf_type_is_contiguous(&w->type) && l->g->store.get) {
    const char *fqn = kf_op_get_str(d, "fqn");
    const void *data = NULL;
    int64_t nbytes = 0;
    if ((st = l->g->store.get(l->g->store.impl, fqn, &data, &nbytes, l->diag)) != KF_OK) return st;
    int64_t es = (int64_t)kf_dtype_size(w->type.dtype), n = kf_type_numel(&w->type);
    if (data && nbytes >= n * es) {
      /* [K, C, spatial...] row-major into its channels-last strides */
      kf_type t = w->type;
      kf_type_set_channels_last(&t);
      unsigned char *dst = malloc((size_t)(n > 0 ? n * es : 1));
      if (!dst) return KF_ERR_NOMEM;
      const unsigned char *src = data;
      int64_t idx[KF_MAX_RANK] = {0};
      /* TEST ONLY (KFUSE_TEST_BREAK_LAYOUT=1): a deliberately wrong layout
       * rewrite, the filter's two spatial dims exchanged where they are
       * equal: the graph stays valid and each group verifies against its
       * own (equally wrong) weights, so only the whole-module check against
       * the reference can catch it (tests/gpu, docs/ARCHITECTURE.md) */
      const char *brk = getenv("KFUSE_TEST_BREAK_LAYOUT");
      bool swap = brk && strcmp(brk, "1") == 0 && t.rank == 4 && t.shape[2] == t.shape[3] && t.shape[2] > 1;
      for (int64_t from = 0; from < n; from++) {
        int64_t to = 0;
        for (int d = 0; d < t.rank; d++) to += idx[swap && d >= 2 ? 5 - d : d] * t.strides[d];
        memcpy(dst + to * es, src + from * es, (size_t)es);
        for (int d = t.rank - 1; d >= 0; d--) {
          if (++idx[d] < t.shape[d]) break;
          idx[d] = 0;
        }
      }
      char fqn2[300], base[260];
      snprintf(base, sizeof base, "%.240s.channels_last", fqn);
      snprintf(fqn2, sizeof fqn2, "%s", base);
      for (unsigned i = 1; kf_graph_find_weight(l->g, fqn2); i++)
        snprintf(fqn2, sizeof fqn2, "%s_%u", base, i);
      if ((st = kf_graph_add_constant(l->g, fqn2, &t, dst, n * es, l->diag)) != KF_OK) return st;
      const char *name = kf_namer_fresh(&l->nm, base);
      if (!name) return KF_ERR_NOMEM;
      kf_op *p = kf_graph_append_op(l->g, KF_OP_PARAM, name, NULL, 0, &t, 1);
      kf_op_set_str(p, "fqn", fqn2);
      kf_op_set_str(p, "kind", "folded");
      kf_graph_move_op(l->g, p, conv);
      if ((st = grow(l)) != KF_OK) return st;
      l->to_cl[w->id] = p->results[0];
      l->made[p->results[0]->id] = true;
      *out = p->results[0];
      return KF_OK;
    }
  }
  return copy_of(l, w, true, out);
}

static kf_status run(lay *l) {
  kf_status st = chain_convs(l);
  if (st || l->n_chosen == 0) return st;
  /* the copies made here go right after their operand's definition (or
   * first), which the walk has passed: it never meets them */
  for (kf_op *op = l->g->first; op && !st; op = op->next) {
    if (chosen(l, op)) {
      kf_value *x = op->operands[0], *w = op->operands[1];
      if (!is_cl(x) && (st = copy_of(l, x, true, &x)) != KF_OK) break;
      if ((st = weight_krsc(l, op, w, &w)) != KF_OK) break;
      op->operands[0] = x;
      op->operands[1] = w;
      kf_type_set_channels_last(&op->results[0]->type);
      if ((st = grow(l)) == KF_OK) l->made[op->results[0]->id] = true;
      continue;
    }
    const kf_type *r = elementwise(op) ? &op->results[0]->type : NULL;
    bool propagate = false;
    for (int i = 0; r && i < op->n_operands; i++)
      /* sizes, not dtypes: a comparison's bool result follows its float
       * operand's layout (KernelBench L2 87's softplus, x > 20 in a where,
       * read its operand through a row-major copy and mixed layouts in one
       * launch: 4x slower) */
      if (laid(l, op->operands[i]) && kf_type_same_dims(&op->operands[i]->type, r)) propagate = true;
    if (propagate) {
      for (int i = 0; i < op->n_operands && !st; i++) {
        kf_value *v = op->operands[i];
        if (!v || v->type.kind != KF_TYPE_TENSOR || is_cl(v) || !kf_type_same_dims(&v->type, r) ||
            kf_type_is_channels_last(&v->type))
          continue;
        if ((st = copy_of(l, v, true, &v)) == KF_OK) op->operands[i] = v;
      }
      kf_type_set_channels_last(&op->results[0]->type);
      if (!st && (st = grow(l)) == KF_OK) l->made[op->results[0]->id] = true;
      continue;
    }
    /* a plain reduction reads any strides: the row kernel picks its layout
     * from the input's (a channel reduction of NHWC data walks contiguous
     * rows, a spatial one coalesces across channels) */
    if (kf_op_info_get(op->code)->kind == KF_KIND_REDUCE) continue;
    /* everything else reads row-major what this pass laid out */
    for (int i = 0; i < op->n_operands && !st; i++) {
      kf_value *v = op->operands[i];
      if (!laid(l, v)) continue;
      if ((st = copy_of(l, v, false, &v)) == KF_OK) op->operands[i] = v;
    }
  }
  for (int i = 0; i < l->g->n_outputs && !st; i++) {
    kf_value *v = l->g->outputs[i];
    if (!laid(l, v)) continue;
    if ((st = copy_of(l, v, false, &v)) == KF_OK) l->g->outputs[i] = v;
  }
  return st;
}

static kf_status channels_last(kf_graph *g, int64_t min_numel, bool need_chain, kf_diag *diag) {
  lay l;
  memset(&l, 0, sizeof l);
  l.g = g;
  l.diag = diag;
  l.min_numel = min_numel;
  l.need_chain = need_chain;
  kf_status st = kf_namer_init(&l.nm, g);
  if (st == KF_OK) st = run(&l);
  kf_namer_fini(&l.nm);
  free(l.chosen);
  free(l.to_cl);
  free(l.to_rm);
  free(l.made);
  return st;
}

kf_status kf_pass_channels_last(kf_graph *g, kf_diag *diag) { return channels_last(g, CL_MIN_NUMEL, true, diag); }

/* Lone convolutions too (kfuse compile --channels-last-all). */
kf_status kf_pass_channels_last_unchained(kf_graph *g, kf_diag *diag) {
  return channels_last(g, CL_MIN_NUMEL, false, diag);
}

/* Every qualifying convolution whatever its size, chained or alone: tests
 * run the layout's kernels on small graphs with it. */
kf_status kf_pass_channels_last_all(kf_graph *g, kf_diag *diag) { return channels_last(g, 0, false, diag); }
