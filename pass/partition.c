/* pass/partition.c — cuts a graph into fusable groups (kfuse/partition.h).
 *
 * Expects: a verified graph, ideally after the compile passes (simplify,
 * dce, fold-bn, fold-scalars, sink-reshapes, dce, materialize-outputs; the
 * memory plan needs the last). Produces groups, each one kernel unit's
 * worth of ops, in an execution order, with a canonical text and BLAKE3 key
 * each. The graph is not changed.
 *
 * Ops fall in classes:
 *   free      kf.param, kf.scalar: constants every group reads directly
 *             (weights from storage, scalars by value); in no group
 *             (group_of_op -1). A scalar input's value is part of the
 *             reading group's canonical form, so units may bake it in.
 *   view      permute, expand, slice, select, as_strided, unfold, split and
 *             view-like reshape (pass_util.c): VIEW groups, no kernel; a
 *             view of a view joins its operand's group.
 *   source    kf.full, kf.arange: join the group of their first
 *             element-wise consumer (computed in-kernel there, broadcast to
 *             its iteration shape); otherwise a group of their own.
 *   ew        unary, binary, where, cast, copy.
 *   anchors   reductions and normalisations (REDUCE), cumsum and cumprod
 *             (SCAN), mm/bmm/addmm (GEMM), conv (CONV); sdpa (ATTENTION,
 *             always alone).
 *   opaque    everything else: one op per group.
 *
 * Greedy, in program order. An element-wise op joins the most recently
 * created group among its operands' groups that is compatible — an
 * ELEMENTWISE group whose iteration shape is the op's result shape, or a
 * REDUCE/SCAN/GEMM/CONV group whose anchor's first result has that shape (an
 * epilogue; a layout copy joins only an ELEMENTWISE or CONV group, whose
 * launches the element-wise emitter tiles, and no op joins a CONV group
 * when its result reaches a plain reduction through element-wise ops nothing
 * else reads: the reduction takes them as its prologue, feeds_reduction) — and
 * where joining closes no cycle between groups; after
 * joining an ELEMENTWISE group it also merges the other compatible
 * ELEMENTWISE operand groups that can merge without a cycle. A REDUCE
 * anchor absorbs the ELEMENTWISE group producing its input (a prologue;
 * values of it used elsewhere become the group's outputs) unless that
 * closes a cycle or the group holds a layout copy; a SCAN anchor only when
 * every value of that group used
 * outside it is used by the anchor alone. A plain reduction whose result
 * broadcasts back to its input row by row also takes element-wise ops over
 * the input's shape (row_broadcast: run after the row's statistics). A
 * cat takes the ELEMENTWISE groups computing its operands when their
 * values go nowhere else (absorb_cat_pieces), and a convolution's epilogue
 * that only feeds a cat stays out of the CONV group for it (feeds_cat). A
 * cycle would be a group that both feeds and consumes another: checked by
 * a depth-first search over the current group graph, whose edges are
 * recomputed from use lists (groups only ever grow or merge).
 *
 * Then horizontal fusion (option horizontal, on by default): ELEMENTWISE
 * groups over the same iteration shape and memory layout that read a
 * common tensor (siblings such as relu(x), gelu(x), x * sigmoid(x)) merge,
 * in creation order, when no path through a third group joins them, the
 * merged group stays within HFUSE_MAX_OUTPUTS outputs and HFUSE_MAX_OPS
 * ops, and — over more than HFUSE_SMALL_NUMEL elements — both or neither
 * read only vectorisable operands and both move the same smallest element
 * size (which sets the vector width). One launch then reads the shared
 * tensor once and does the work of several (the element-wise emitter
 * computes all outputs of one shape in one launch).
 *
 * With fuse off every non-view op is a group of its own (the per-op
 * lowering). Groups are then ordered topologically, ties broken by their
 * first op in program order, and given inputs (first use), outputs (used
 * outside or returned) and the canonical form. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/blake3.h>

#include "kfuse/partition.h"
#include "pass_int.h"

#define CANON_VERSION "kfuse-group-v1"

int64_t kf_group_io_bytes(const kf_group *g) {
  int64_t s = 0;
  for (int i = 0; i < g->n_inputs; i++)
    if (g->inputs[i]->type.kind == KF_TYPE_TENSOR)
      s += kf_type_numel(&g->inputs[i]->type) * (int64_t)kf_dtype_size(g->inputs[i]->type.dtype);
  for (int i = 0; i < g->n_outputs; i++)
    s += kf_type_numel(&g->outputs[i]->type) * (int64_t)kf_dtype_size(g->outputs[i]->type.dtype);
  return s;
}

const char *kf_group_kind_name(kf_group_kind k) {
  static const char *const n[] = {"view", "elementwise", "reduce", "gemm",
                                  "conv", "attention", "opaque", "scan"};
  return (k >= 0 && k <= KF_GROUP_SCAN) ? n[k] : "?";
}

void kf_partition_options_init(kf_partition_options *o) {
  memset(o, 0, sizeof *o);
  o->precision = KF_PRECISION_DEFAULT;
  o->fuse = true;
  o->horizontal = true;
}

/* ---- op classes ------------------------------------------------------------- */

typedef enum cls { C_FREE, C_VIEW, C_SOURCE, C_EW, C_REDUCE, C_SCAN, C_GEMM, C_CONV, C_ATTN, C_OPAQUE } cls;

static cls classify(const kf_op *op) {
  if (op->code == KF_OP_PARAM || op->code == KF_OP_SCALAR) return C_FREE;
  if (op->code == KF_OP_FULL || op->code == KF_OP_ARANGE) return C_SOURCE;
  if (kf_op_is_view(op)) return C_VIEW;
  switch (kf_op_info_get(op->code)->kind) {
  case KF_KIND_UNARY: case KF_KIND_BINARY: case KF_KIND_TERNARY: return C_EW;
  case KF_KIND_REDUCE: case KF_KIND_NORM: return C_REDUCE;
  case KF_KIND_SCAN: return C_SCAN;
  case KF_KIND_MATMUL: return C_GEMM;
  case KF_KIND_CONV: return C_CONV;
  case KF_KIND_ATTENTION: return C_ATTN;
  default: return C_OPAQUE;
  }
}

/* ---- working state ------------------------------------------------------------ */

enum { G_FREE = -1, G_UNSET = -2, G_PENDING = -3 };

typedef struct pgroup {
  kf_group_kind kind;
  int anchor;        /* op index, or -1 */
  int *ops, n_ops, cap;
  bool alive;
  bool has_shape;    /* shape: iteration shape (EW) or anchor result 0 */
  int rank;
  int64_t shape[KF_MAX_RANK];
  /* REDUCE groups of a plain reduction whose result broadcasts to its
   * input row by row: the input's shape, which element-wise epilogue ops
   * (a second pass over the row with its statistics) may have too */
  bool has_eshape;
  int erank;
  int64_t eshape[KF_MAX_RANK];
} pgroup;

typedef struct part {
  const kf_graph *g;
  bool fuse;
  int n_ops;
  kf_op **ops;
  size_t nv;
  int *def;            /* value id -> op index, -1 for graph inputs */
  int *use_start;      /* value id -> first entry in use_list (CSR) */
  int *use_list;       /* consumer op indices */
  bool *is_out;        /* value id -> graph output */
  int *grp;            /* op index -> group, or G_* */
  pgroup *gs;
  int n_gs, cap_gs;
  int *mark, stamp;    /* per group, for searches */
  int *stack;
} part;

static kf_status grp_push_op(pgroup *pg, int op) {
  if (pg->n_ops == pg->cap) {
    int cap = pg->cap ? pg->cap * 2 : 8;
    int *o = realloc(pg->ops, sizeof(int) * (size_t)cap);
    if (!o) return KF_ERR_NOMEM;
    pg->ops = o;
    pg->cap = cap;
  }
  pg->ops[pg->n_ops++] = op;
  return KF_OK;
}

static void set_shape(pgroup *pg, const kf_type *t) {
  pg->has_shape = true;
  pg->rank = t->rank;
  memcpy(pg->shape, t->shape, sizeof pg->shape);
}

static bool shape_is(const pgroup *pg, const kf_type *t) {
  if (!pg->has_shape || pg->rank != t->rank) return false;
  for (int i = 0; i < t->rank; i++)
    if (pg->shape[i] != t->shape[i]) return false;
  return true;
}

/* A plain reduction (sum, mean, prod, amax, amin, var, norm) over float
 * data whose result, broadcast against its input, gives each element its
 * own row's value: right-aligned, every reduced input dim meets a size-1
 * dim (or none, leading) and every kept dim meets itself. Then an
 * element-wise op over the input's shape can read the result in the same
 * kernel, after the row's statistics (agent/builtin_reduce.c, phase 2). */
static bool row_broadcast(const kf_op *a) {
  switch (a->code) {
  case KF_OP_SUM: case KF_OP_MEAN: case KF_OP_PROD: case KF_OP_AMAX: case KF_OP_AMIN:
  case KF_OP_VAR: case KF_OP_NORM: break;
  default: return false;
  }
  const kf_value *x = a->operands[0];
  if (!x || x->type.kind != KF_TYPE_TENSOR || !kf_dtype_is_float(x->type.dtype) || x->type.rank == 0) return false;
  const kf_type *t = &x->type, *r = &a->results[0]->type;
  if (r->rank > t->rank) return false;
  bool red[KF_MAX_RANK] = {false};
  int n;
  const int64_t *d = kf_op_get_ints(a, "dims", &n);
  for (int i = 0; i < n; i++)
    if (d[i] >= 0 && d[i] < t->rank) red[d[i]] = true;
  int off = t->rank - r->rank;
  for (int i = 0; i < t->rank; i++) {
    int j = i - off;
    int64_t rs = j < 0 ? 1 : r->shape[j];
    if (red[i] ? rs != 1 : (j < 0 ? t->shape[i] != 1 : rs != t->shape[i])) return false;
  }
  /* kept dims must meet kept dims: with keepdim the ranks are equal; without
   * it only reductions over leading dims line up */
  if (r->rank != t->rank)
    for (int i = 0; i < off; i++)
      if (!red[i]) return false;
  return true;
}

/* New group holding op i. */
static kf_status new_group(part *P, kf_group_kind kind, int i, int *out) {
  if (P->n_gs == P->cap_gs) {
    int cap = P->cap_gs ? P->cap_gs * 2 : 64;
    pgroup *gs = realloc(P->gs, sizeof *gs * (size_t)cap);
    int *mark = realloc(P->mark, sizeof(int) * (size_t)cap);
    int *stack = realloc(P->stack, sizeof(int) * (size_t)cap);
    if (gs) P->gs = gs;
    if (mark) P->mark = mark;
    if (stack) P->stack = stack;
    if (!gs || !mark || !stack) return KF_ERR_NOMEM;
    for (int k = P->cap_gs; k < cap; k++) P->mark[k] = 0;
    P->cap_gs = cap;
  }
  int id = P->n_gs++;
  pgroup *pg = &P->gs[id];
  memset(pg, 0, sizeof *pg);
  pg->kind = kind;
  pg->anchor = (kind == KF_GROUP_REDUCE || kind == KF_GROUP_SCAN || kind == KF_GROUP_GEMM ||
                kind == KF_GROUP_CONV || kind == KF_GROUP_ATTENTION)
                   ? i
                   : -1;
  pg->alive = true;
  kf_status st = grp_push_op(pg, i);
  if (st) return st;
  P->grp[i] = id;
  if (kind == KF_GROUP_ELEMENTWISE || kind == KF_GROUP_REDUCE || kind == KF_GROUP_SCAN ||
      kind == KF_GROUP_GEMM || kind == KF_GROUP_CONV)
    set_shape(pg, &P->ops[i]->results[0]->type);
  if (kind == KF_GROUP_REDUCE && row_broadcast(P->ops[i])) {
    const kf_type *t = &P->ops[i]->operands[0]->type;
    pg->has_eshape = true;
    pg->erank = t->rank;
    memcpy(pg->eshape, t->shape, sizeof pg->eshape);
  }
  *out = id;
  return KF_OK;
}

static kf_status join(part *P, int gid, int i) {
  P->grp[i] = gid;
  return grp_push_op(&P->gs[gid], i);
}

/* Moves every op of group b into a. */
static kf_status merge(part *P, int a, int b) {
  pgroup *gb = &P->gs[b];
  for (int k = 0; k < gb->n_ops; k++) {
    kf_status st = join(P, a, gb->ops[k]);
    if (st) return st;
  }
  free(gb->ops);
  gb->ops = NULL;
  gb->n_ops = 0;
  gb->alive = false;
  return KF_OK;
}

static int group_of_value(const part *P, const kf_value *v) {
  int d = P->def[v->id];
  return d < 0 ? G_FREE : P->grp[d];
}

/* Is a group marked target_mark (by the caller) reachable from `from`?
 * The direct edge from -> skip_direct is ignored (a path through other
 * groups back to it still counts); groups visited are marked P->stamp. */
static bool reaches(part *P, int from, int skip_direct, int target_mark) {
  int sp = 0;
  P->stack[sp++] = from;
  while (sp) {
    int x = P->stack[--sp];
    pgroup *gx = &P->gs[x];
    for (int k = 0; k < gx->n_ops; k++) {
      const kf_op *op = P->ops[gx->ops[k]];
      for (int r = 0; r < op->n_results; r++) {
        uint32_t id = op->results[r]->id;
        for (int u = P->use_start[id]; u < P->use_start[id + 1]; u++) {
          int y = P->grp[P->use_list[u]];
          if (y < 0 || y == from || (x == from && y == skip_direct)) continue;
          if (P->mark[y] == target_mark) return true;
          if (P->mark[y] == P->stamp) continue;
          P->mark[y] = P->stamp;
          P->stack[sp++] = y;
        }
      }
    }
  }
  return false;
}

/* Fresh marks: returns the visit mark; target mark is visit + 1. */
static int fresh_marks(part *P) {
  P->stamp += 2;
  return P->stamp;
}

/* Can op i (not yet in a group) join group c? Not if a path leaves c and
 * reaches another group that feeds i. */
static bool can_join(part *P, int c, int i) {
  const kf_op *op = P->ops[i];
  fresh_marks(P);
  int tmark = P->stamp + 1;
  bool any = false;
  for (int k = 0; k < op->n_operands; k++) {
    if (!op->operands[k]) continue;
    int h = group_of_value(P, op->operands[k]);
    if (h >= 0 && h != c) {
      P->mark[h] = tmark;
      any = true;
    }
  }
  if (!any) return true;
  return !reaches(P, c, -1, tmark);
}

/* Can groups a and b merge? Not if a path from one to the other passes
 * through a third group. */
static bool can_merge(part *P, int a, int b) {
  fresh_marks(P);
  int tmark = P->stamp + 1;
  P->mark[b] = tmark;
  if (reaches(P, a, b, tmark)) return false;
  fresh_marks(P);
  tmark = P->stamp + 1;
  P->mark[a] = tmark;
  return !reaches(P, b, a, tmark);
}

/* A pending kf.full/kf.arange operand of op i that is not fused gets a
 * group of its own. */
static kf_status flush_sources(part *P, int i) {
  const kf_op *op = P->ops[i];
  for (int k = 0; k < op->n_operands; k++) {
    if (!op->operands[k]) continue;
    int d = P->def[op->operands[k]->id];
    if (d >= 0 && P->grp[d] == G_PENDING) {
      int gid;
      kf_status st = new_group(P, KF_GROUP_ELEMENTWISE, d, &gid);
      if (st) return st;
    }
  }
  return KF_OK;
}

/* Pending sources feeding op i join i's group. */
static kf_status adopt_sources(part *P, int i) {
  const kf_op *op = P->ops[i];
  for (int k = 0; k < op->n_operands; k++) {
    if (!op->operands[k]) continue;
    int d = P->def[op->operands[k]->id];
    if (d >= 0 && P->grp[d] == G_PENDING) {
      kf_status st = join(P, P->grp[i], d);
      if (st) return st;
    }
  }
  return KF_OK;
}

/* op result type t is a REDUCE group's element (input) shape */
static bool eshape_is(const pgroup *pg, const kf_type *t) {
  if (!pg->has_eshape || pg->erank != t->rank) return false;
  for (int i = 0; i < t->rank; i++)
    if (pg->eshape[i] != t->shape[i]) return false;
  return true;
}

static bool is_epilogue_kind(kf_group_kind k) {
  return k == KF_GROUP_REDUCE || k == KF_GROUP_SCAN || k == KF_GROUP_GEMM || k == KF_GROUP_CONV;
}

/* Does group h hold a layout copy (kf_op_is_layout_copy)? */
static bool has_layout_copy(const part *P, int h) {
  const pgroup *ph = &P->gs[h];
  for (int k = 0; k < ph->n_ops; k++)
    if (kf_op_is_layout_copy(P->ops[ph->ops[k]])) return true;
  return false;
}

/* Op i's result reaches a plain reduction's input through element-wise ops
 * of its shape that nothing else reads (none a graph output): a
 * convolution's epilogue the reduction takes as its prologue (one kernel
 * reading the bare convolution; pass/conv_bias.c splits the bias off)
 * rather than a launch of its own writing what the reduction reads back.
 * A value may have several readers inside that set: a hardswish reads its
 * x twice, and in a 16-bit model that x is the upcast to f32 of the
 * convolution's result (MobileNetV3's squeeze-excite). Were that cast
 * alone let into the convolution's group, the group would write the f32
 * copy for the reduction to read, in a launch of its own after cuDNN,
 * where the f32 model's convolution is one cuDNN call. */
#define FEEDS_MAX 64
static bool feeds_reduction(const part *P, int i) {
  const kf_type *t = &P->ops[i]->results[0]->type;
  int set[FEEDS_MAX], n = 0, red = -1;
  set[n++] = i;
  for (int k = 0; k < n; k++) {
    const kf_value *v = P->ops[set[k]]->results[0];
    if (P->is_out[v->id] || P->use_start[v->id + 1] == P->use_start[v->id]) return false;
    for (int e = P->use_start[v->id]; e < P->use_start[v->id + 1]; e++) {
      int c = P->use_list[e];
      const kf_op *u = P->ops[c];
      if (kf_op_info_get(u->code)->kind == KF_KIND_REDUCE) {
        /* one reduction, reading the set's last value as its input */
        if (u->operands[0] != v || (red >= 0 && red != c)) return false;
        for (int j = 1; j < u->n_operands; j++)
          if (u->operands[j] == v) return false;
        red = c;
        continue;
      }
      if (classify(u) != C_EW || u->n_results != 1 || !kf_type_same_dims(&u->results[0]->type, t))
        return false;
      bool seen = false;
      for (int j = 0; j < n && !seen; j++) seen = set[j] == c;
      if (seen) continue;
      if (n == FEEDS_MAX) return false;
      set[n++] = c;
    }
  }
  return red >= 0;
}

/* Op i's result reaches an operand of a cat through element-wise ops of
 * its shape, each value used once and none a graph output, every other
 * operand along the way is conv group c's, a graph input or a constant,
 * and not all of the ops are layout copies: a convolution's epilogue the
 * cat takes (absorb_cat_pieces, which such a chain always passes),
 * computed where the cat copies its slice, rather than a launch of its own
 * writing what the cat reads back to copy (KernelBench L3 17's SqueezeNet
 * fire: 3.6 ms of epilogue launches and a 3.2 ms cat copy, H100). */
static bool feeds_cat(const part *P, int i, int c) {
  const kf_op *op = P->ops[i];
  const kf_type *t = &op->results[0]->type;
  const kf_value *prev = NULL;
  bool computes = false; /* a chain of layout copies alone stays: the
                            convolution's unit writes its layout anyway */
  for (int steps = 0; steps < 64; steps++) {
    computes |= !kf_op_is_layout_copy(op);
    for (int k = 0; k < op->n_operands; k++) {
      const kf_value *v = op->operands[k];
      if (!v || v == prev) continue;
      int h = group_of_value(P, v);
      if (h >= 0 && (prev || h != c)) return false;
    }
    uint32_t id = op->results[0]->id;
    if (P->is_out[id] || P->use_start[id + 1] - P->use_start[id] != 1) return false;
    const kf_op *u = P->ops[P->use_list[P->use_start[id]]];
    if (u->code == KF_OP_CAT) /* absorb_cat_pieces takes only pieces of the cat's dtype and rank */
      return computes && op->results[0]->type.dtype == u->results[0]->type.dtype &&
             op->results[0]->type.rank == u->results[0]->type.rank;
    if (classify(u) != C_EW || !kf_type_same_dims(&u->results[0]->type, t)) return false;
    prev = op->results[0];
    op = u;
  }
  return false;
}

static kf_status place_elementwise(part *P, int i) {
  const kf_op *op = P->ops[i];
  const kf_type *rt = &op->results[0]->type;
  /* a layout change joins only launches the element-wise emitter builds
   * (it tiles them through shared memory): not a row kernel's epilogue,
   * whose stores it would stride */
  bool layout = kf_op_is_layout_copy(op);
  int cands[KF_MAX_OPERAND_SLOTS * 2], nc = 0;
  for (int k = 0; k < op->n_operands && P->fuse; k++) {
    if (!op->operands[k]) continue;
    int h = group_of_value(P, op->operands[k]);
    if (h < 0) continue;
    const pgroup *ph = &P->gs[h];
    bool ok = (ph->kind == KF_GROUP_ELEMENTWISE ||
               (is_epilogue_kind(ph->kind) && (!layout || ph->kind == KF_GROUP_CONV))) &&
              (shape_is(ph, rt) || eshape_is(ph, rt));
    if (ok && ph->kind == KF_GROUP_CONV && (feeds_reduction(P, i) || feeds_cat(P, i, h))) ok = false;
    for (int j = 0; j < nc && ok; j++) ok = cands[j] != h;
    if (ok && nc < (int)(sizeof cands / sizeof cands[0])) cands[nc++] = h;
  }
  /* most recently created first */
  for (int a = 1; a < nc; a++)
    for (int b = a; b > 0 && cands[b] > cands[b - 1]; b--) {
      int t = cands[b];
      cands[b] = cands[b - 1];
      cands[b - 1] = t;
    }
  int chosen = -1;
  for (int k = 0; k < nc && chosen < 0; k++)
    if (can_join(P, cands[k], i)) chosen = cands[k];
  kf_status st;
  if (chosen < 0) {
    if ((st = new_group(P, KF_GROUP_ELEMENTWISE, i, &chosen))) return st;
  } else {
    if ((st = join(P, chosen, i))) return st;
    if (P->gs[chosen].kind == KF_GROUP_ELEMENTWISE)
      for (int k = 0; k < nc; k++) {
        int h = cands[k];
        if (h == chosen || !P->gs[h].alive || P->gs[h].kind != KF_GROUP_ELEMENTWISE) continue;
        if (can_merge(P, chosen, h) && (st = merge(P, chosen, h))) return st;
      }
  }
  return adopt_sources(P, i);
}

/* The element-wise group feeding reduce or scan anchor i's input: its
 * prologue.
 * Its values may be used outside it too (the group then writes them, as
 * x + residual feeds both an RMSNorm and the residual stream): merging is
 * refused only where it would close a cycle — a path from the prologue
 * group through a third group back to the anchor. A scan's kernel does
 * not write prologue values: its prologue must be used by it alone. */
static int prologue_of(part *P, int i) {
  const kf_value *x = P->ops[i]->operands[0];
  if (!x) return -1;
  int h = group_of_value(P, x);
  /* a layout change stays in an element-wise launch (tiled), out of the
   * row kernel's loads */
  if (h < 0 || P->gs[h].kind != KF_GROUP_ELEMENTWISE || has_layout_copy(P, h)) return -1;
  if (classify(P->ops[i]) == C_SCAN) {
    const pgroup *ph = &P->gs[h];
    for (int k = 0; k < ph->n_ops; k++) {
      const kf_op *op = P->ops[ph->ops[k]];
      for (int r = 0; r < op->n_results; r++) {
        uint32_t id = op->results[r]->id;
        if (P->is_out[id]) return -1;
        for (int u = P->use_start[id]; u < P->use_start[id + 1]; u++) {
          int c = P->use_list[u];
          if (c != i && P->grp[c] != h) return -1;
        }
      }
    }
  }
  /* the anchor's other operand groups (weights, bias of a norm) must not
   * be reachable from h through a third group */
  fresh_marks(P);
  int tmark = P->stamp + 1;
  bool any = false;
  const kf_op *a = P->ops[i];
  for (int k = 0; k < a->n_operands; k++) {
    if (!a->operands[k]) continue;
    int o = group_of_value(P, a->operands[k]);
    if (o >= 0 && o != h) {
      P->mark[o] = tmark;
      any = true;
    }
  }
  if (any && reaches(P, h, -1, tmark)) return -1;
  return h;
}

/* Cat op i, just given group gid, takes the ELEMENTWISE groups computing
 * its operands (an epilogue feeds_cat kept out of its convolution's
 * group, or any element-wise chain): the cat's unit computes each such
 * piece where it writes the slice (agent/builtin_opaque.c), so the piece is
 * never written and read back (a layout copy among them is tiled there as
 * in any element-wise launch). Only a group over the piece's shape, of the
 * cat's dtype and rank, whose every value is used inside it or by this cat
 * alone and none a graph output, and whose merging closes no cycle. */
static kf_status absorb_cat_pieces(part *P, int gid, int i) {
  const kf_op *cat = P->ops[i];
  for (int k = 0; k < cat->n_operands; k++) {
    const kf_value *v = cat->operands[k];
    if (!v || v->type.kind != KF_TYPE_TENSOR) continue;
    int h = group_of_value(P, v);
    if (h < 0 || h == gid || !P->gs[h].alive || P->gs[h].kind != KF_GROUP_ELEMENTWISE) continue;
    const pgroup *ph = &P->gs[h];
    /* the piece is stored as the cat's elements: a piece PyTorch's cat
     * promotes (f16 into an f32 cat) stays a group of its own */
    if (!shape_is(ph, &v->type) || v->type.dtype != cat->results[0]->type.dtype ||
        v->type.rank != cat->results[0]->type.rank)
      continue;
    bool ok = true;
    for (int q = 0; q < ph->n_ops && ok; q++) {
      const kf_op *op = P->ops[ph->ops[q]];
      for (int r = 0; r < op->n_results && ok; r++) {
        uint32_t id = op->results[r]->id;
        if (P->is_out[id]) ok = false;
        for (int u = P->use_start[id]; u < P->use_start[id + 1] && ok; u++) {
          int c = P->use_list[u];
          if (c != i && P->grp[c] != h) ok = false;
        }
      }
    }
    if (!ok || !can_merge(P, gid, h)) continue;
    kf_status st = merge(P, gid, h);
    if (st) return st;
  }
  return KF_OK;
}

static kf_status place(part *P, int i) {
  const kf_op *op = P->ops[i];
  kf_status st = KF_OK;
  int gid;
  cls c = classify(op);
  if (c != C_EW && c != C_SOURCE && c != C_FREE && (st = flush_sources(P, i))) return st;
  switch (c) {
  case C_FREE:
    P->grp[i] = G_FREE;
    return KF_OK;
  case C_SOURCE:
    if (P->fuse) {
      P->grp[i] = G_PENDING;
      return KF_OK;
    }
    return new_group(P, KF_GROUP_ELEMENTWISE, i, &gid);
  case C_VIEW: {
    int h = op->operands[0] ? group_of_value(P, op->operands[0]) : -1;
    if (h >= 0 && P->gs[h].kind == KF_GROUP_VIEW) return join(P, h, i);
    return new_group(P, KF_GROUP_VIEW, i, &gid);
  }
  case C_EW:
    if (!P->fuse) {
      if ((st = flush_sources(P, i))) return st;
      return new_group(P, KF_GROUP_ELEMENTWISE, i, &gid);
    }
    return place_elementwise(P, i);
  case C_REDUCE: case C_SCAN: {
    int pro = P->fuse ? prologue_of(P, i) : -1;
    if ((st = new_group(P, c == C_SCAN ? KF_GROUP_SCAN : KF_GROUP_REDUCE, i, &gid))) return st;
    if (pro >= 0) st = merge(P, gid, pro);
    return st;
  }
  case C_GEMM: return new_group(P, KF_GROUP_GEMM, i, &gid);
  case C_CONV: return new_group(P, KF_GROUP_CONV, i, &gid);
  case C_ATTN: return new_group(P, KF_GROUP_ATTENTION, i, &gid);
  case C_OPAQUE:
    if ((st = new_group(P, KF_GROUP_OPAQUE, i, &gid))) return st;
    if (P->fuse && op->code == KF_OP_CAT) st = absorb_cat_pieces(P, gid, i);
    return st;
  }
  return KF_ERR_INTERNAL;
}

/* ---- horizontal fusion ---------------------------------------------------------- */

enum { HFUSE_MAX_OUTPUTS = 8, HFUSE_MAX_OPS = 64 };
/* Iteration spaces up to this many elements are launch-bound (1 MiB of f32
 * moves in about a quarter of a launch's cost on Hopper): their groups
 * merge whatever their accesses, since a launch saved outweighs vectors
 * lost. */
#define HFUSE_SMALL_NUMEL ((int64_t)1 << 18)

/* Every op result of group a has the iteration shape's layout of t (the
 * strides the launch's loop order is taken from). */
static bool same_layout(const part *P, int a, const kf_type *t) {
  const pgroup *pa = &P->gs[a];
  for (int k = 0; k < pa->n_ops; k++) {
    const kf_type *r = &P->ops[pa->ops[k]]->results[0]->type;
    if (r->rank != t->rank) return false;
    for (int d = 0; d < t->rank; d++)
      if (r->shape[d] != t->shape[d] || (t->shape[d] > 1 && r->strides[d] != t->strides[d]))
        return false;
  }
  return true;
}

/* How group a's launch accesses memory, as the element-wise emitter sees it
 * (agent/builtin_ew.c, agent/builtin.c kb_rules_elementwise). *plain: every
 * tensor it reads from outside moves with stride 0 or 1 along its last dim
 * from a 16-byte aligned start, which 16-byte vector accesses need.
 * *min_bytes: the smallest element size it moves with unit stride (those
 * operands, and its values used outside it); the vector width is 16 bytes
 * over it. A plain group only merges with a plain group of the same
 * min_bytes: one transposed or oddly offset operand would turn its
 * sibling's launch scalar, and a smaller element size would widen its
 * sibling's vectors past what the last dim may divide. */
static void access_profile(const part *P, int a, bool *plain, size_t *min_bytes) {
  const pgroup *pa = &P->gs[a];
  *plain = true;
  *min_bytes = 16;
  for (int k = 0; k < pa->n_ops; k++) {
    const kf_op *op = P->ops[pa->ops[k]];
    for (int s = 0; s < op->n_operands; s++) {
      const kf_value *v = op->operands[s];
      if (!v || v->type.kind != KF_TYPE_TENSOR || group_of_value(P, v) == a) continue;
      const kf_type *t = &v->type;
      size_t b = kf_dtype_size(t->dtype);
      bool along = t->rank > 0 && t->shape[t->rank - 1] > 1;
      if (along && t->strides[t->rank - 1] > 1) *plain = false;
      if ((t->offset * (int64_t)b) % 16 != 0) *plain = false;
      if (along && t->strides[t->rank - 1] == 1 && b < *min_bytes) *min_bytes = b;
    }
    for (int r = 0; r < op->n_results; r++) {
      const kf_value *v = op->results[r];
      bool out = P->is_out[v->id];
      for (int u = P->use_start[v->id]; u < P->use_start[v->id + 1] && !out; u++)
        out = P->grp[P->use_list[u]] != a;
      size_t b = kf_dtype_size(v->type.dtype);
      if (out && v->type.kind == KF_TYPE_TENSOR && b < *min_bytes) *min_bytes = b;
    }
  }
}

/* Values of groups a and b that would be outputs of their union: graph
 * outputs and values used by any other group. */
static int union_outputs(const part *P, int a, int b) {
  int n = 0;
  for (int w = 0; w < 2; w++) {
    int x = w ? b : a;
    const pgroup *px = &P->gs[x];
    for (int k = 0; k < px->n_ops; k++) {
      const kf_op *op = P->ops[px->ops[k]];
      for (int r = 0; r < op->n_results; r++) {
        uint32_t id = op->results[r]->id;
        bool out = P->is_out[id];
        for (int u = P->use_start[id]; u < P->use_start[id + 1] && !out; u++) {
          int y = P->grp[P->use_list[u]];
          out = y != a && y != b;
        }
        n += out;
      }
    }
  }
  return n;
}

/* Merges sibling ELEMENTWISE groups (see the file comment). */
static kf_status fuse_horizontally(part *P) {
  for (int a = 0; a < P->n_gs; a++) {
    pgroup *pa = &P->gs[a];
    if (!pa->alive || pa->kind != KF_GROUP_ELEMENTWISE || !pa->has_shape) continue;
    const kf_type *lay = &P->ops[pa->ops[0]]->results[0]->type;
    if (!same_layout(P, a, lay)) continue;
    int64_t numel = 1;
    for (int d = 0; d < pa->rank; d++) numel *= pa->shape[d];
    bool small = numel <= HFUSE_SMALL_NUMEL;
    bool plain;
    size_t mb;
    access_profile(P, a, &plain, &mb);
    /* the tensors a reads from outside: graph inputs, weights, other groups' values */
    for (int k = 0; k < pa->n_ops; k++) {
      const kf_op *op = P->ops[pa->ops[k]];
      for (int s = 0; s < op->n_operands; s++) {
        const kf_value *v = op->operands[s];
        if (!v || v->type.kind != KF_TYPE_TENSOR || group_of_value(P, v) == a) continue;
        for (int u = P->use_start[v->id]; u < P->use_start[v->id + 1]; u++) {
          int b = P->grp[P->use_list[u]];
          if (b <= a || !P->gs[b].alive || P->gs[b].kind != KF_GROUP_ELEMENTWISE) continue;
          const pgroup *pb = &P->gs[b];
          if (!pb->has_shape || pb->rank != pa->rank ||
              memcmp(pb->shape, pa->shape, sizeof(int64_t) * (size_t)pa->rank) != 0)
            continue;
          if (pa->n_ops + pb->n_ops > HFUSE_MAX_OPS || !same_layout(P, b, lay)) continue;
          if (!small) {
            bool plain_b;
            size_t mb_b;
            access_profile(P, b, &plain_b, &mb_b);
            if (plain_b != plain || (plain && mb_b != mb)) continue;
          }
          if (union_outputs(P, a, b) > HFUSE_MAX_OUTPUTS || !can_merge(P, a, b)) continue;
          kf_status st = merge(P, a, b);
          if (st) return st;
          pa = &P->gs[a];
        }
      }
    }
  }
  return KF_OK;
}

/* ---- canonical form ----------------------------------------------------------- */

static void canon_type(kf_strbuf *b, const kf_type *t) {
  if (t->kind == KF_TYPE_SCALAR) {
    kf_strbuf_printf(b, "scalar %s", kf_dtype_name(t->dtype));
    return;
  }
  kf_strbuf_printf(b, "%s[", kf_dtype_name(t->dtype));
  for (int i = 0; i < t->rank; i++)
    kf_strbuf_printf(b, "%s%" PRId64, i ? "," : "", t->shape[i]);
  kf_strbuf_printf(b, "] strides [");
  for (int i = 0; i < t->rank; i++)
    kf_strbuf_printf(b, "%s%" PRId64, i ? "," : "", t->strides[i]);
  kf_strbuf_printf(b, "] offset %" PRId64, t->offset);
}

/* Doubles in C99 hex form: exact and locale-free. */
static void canon_number(kf_strbuf *b, kf_number n) {
  switch (n.kind) {
  case KF_NUM_INT: kf_strbuf_printf(b, "i64 %" PRId64, n.i); break;
  case KF_NUM_BOOL: kf_strbuf_printf(b, "bool %s", n.i ? "true" : "false"); break;
  case KF_NUM_FLOAT: kf_strbuf_printf(b, "f64 %a", n.f); break;
  }
}

static void canon_attrs(kf_strbuf *b, const kf_op *op) {
  const kf_op_info *info = kf_op_info_get(op->code);
  bool first = true;
  for (int i = 0; i < info->n_attrs; i++) {
    const kf_attr *a = &op->attrs[i];
    if (!a->present) continue;
    kf_strbuf_printf(b, "%s%s=", first ? " {" : ", ", info->attrs[i].name);
    first = false;
    switch (info->attrs[i].kind) {
    case KF_ATTR_INT: kf_strbuf_printf(b, "%" PRId64, a->u.i); break;
    case KF_ATTR_FLOAT: kf_strbuf_printf(b, "%a", a->u.f); break;
    case KF_ATTR_BOOL: kf_strbuf_printf(b, "%s", a->u.b ? "true" : "false"); break;
    case KF_ATTR_INTS:
      kf_strbuf_printf(b, "[");
      for (int k = 0; k < a->u.ints.n; k++)
        kf_strbuf_printf(b, "%s%" PRId64, k ? "," : "", a->u.ints.v[k]);
      kf_strbuf_printf(b, "]");
      break;
    case KF_ATTR_FLOATS:
      kf_strbuf_printf(b, "[");
      for (int k = 0; k < a->u.floats.n; k++)
        kf_strbuf_printf(b, "%s%a", k ? "," : "", a->u.floats.v[k]);
      kf_strbuf_printf(b, "]");
      break;
    case KF_ATTR_STR:
      kf_strbuf_printf(b, "\"");
      for (const unsigned char *c = (const unsigned char *)a->u.s; *c; c++) {
        if (*c < 0x20 || *c >= 0x7f || *c == '"' || *c == '\\')
          kf_strbuf_printf(b, "\\%02X", *c);
        else
          kf_strbuf_printf(b, "%c", *c);
      }
      kf_strbuf_printf(b, "\"");
      break;
    case KF_ATTR_DTYPE: kf_strbuf_printf(b, "%s", kf_dtype_name(a->u.t)); break;
    case KF_ATTR_NUMBER: canon_number(b, a->u.num); break;
    }
  }
  if (!first) kf_strbuf_printf(b, "}");
}

/* Local name of value v inside group grp: %iN for inputs, %N or %N#r for
 * results of the group's N-th op. */
static void canon_ref(kf_strbuf *b, const kf_group *grp, const kf_value *v) {
  for (int k = 0; k < grp->n_inputs; k++)
    if (grp->inputs[k] == v) {
      kf_strbuf_printf(b, "%%i%d", k);
      return;
    }
  for (int k = 0; k < grp->n_ops; k++)
    if (grp->ops[k] == v->def) {
      if (v->def->n_results == 1)
        kf_strbuf_printf(b, "%%%d", k);
      else
        kf_strbuf_printf(b, "%%%d#%d", k, v->index);
      return;
    }
  KF_ASSERT(!"value is neither an input nor a result of the group");
}

static kf_status canonicalize(kf_group *grp, kf_precision prec) {
  kf_strbuf b;
  kf_strbuf_init(&b);
  kf_strbuf_printf(&b, "%s\nkind %s\nprecision %s\n", CANON_VERSION, kf_group_kind_name(grp->kind),
                   kf_precision_name(prec));
  for (int k = 0; k < grp->n_ops; k++)
    if (grp->ops[k] == grp->anchor) kf_strbuf_printf(&b, "anchor %%%d\n", k);
  for (int k = 0; k < grp->n_inputs; k++) {
    const kf_value *v = grp->inputs[k];
    kf_strbuf_printf(&b, "in %%i%d: ", k);
    canon_type(&b, &v->type);
    /* a scalar is always a kf.scalar's result: its value is part of the
     * group (units may compile it in) */
    if (v->type.kind == KF_TYPE_SCALAR && v->def && v->def->code == KF_OP_SCALAR) {
      kf_strbuf_printf(&b, " = ");
      canon_number(&b, kf_op_get_number(v->def, "value"));
    }
    kf_strbuf_printf(&b, "\n");
  }
  for (int k = 0; k < grp->n_ops; k++) {
    const kf_op *op = grp->ops[k];
    if (op->n_results == 1)
      kf_strbuf_printf(&b, "%%%d = ", k);
    else
      kf_strbuf_printf(&b, "%%%d:%d = ", k, op->n_results);
    kf_strbuf_printf(&b, "kf.%s(", kf_opcode_name(op->code));
    for (int s = 0; s < op->n_operands; s++) {
      if (s) kf_strbuf_printf(&b, ", ");
      if (op->operands[s])
        canon_ref(&b, grp, op->operands[s]);
      else
        kf_strbuf_printf(&b, "none");
    }
    kf_strbuf_printf(&b, ")");
    canon_attrs(&b, op);
    for (int r = 0; r < op->n_results; r++) {
      kf_strbuf_printf(&b, r ? ", " : " -> ");
      canon_type(&b, &op->results[r]->type);
    }
    kf_strbuf_printf(&b, "\n");
  }
  for (int k = 0; k < grp->n_outputs; k++) {
    kf_strbuf_printf(&b, "out ");
    canon_ref(&b, grp, grp->outputs[k]);
    kf_strbuf_printf(&b, "\n");
  }
  if (b.failed || !b.data) {
    kf_strbuf_fini(&b);
    return KF_ERR_NOMEM;
  }
  grp->canonical = b.data; /* taken: freed by kf_partition_destroy */
  llvm_blake3_hasher h;
  llvm_blake3_hasher_init(&h);
  llvm_blake3_hasher_update(&h, b.data, b.len);
  llvm_blake3_hasher_finalize(&h, grp->key, sizeof grp->key);
  for (int i = 0; i < 32; i++) snprintf(grp->key_hex + 2 * i, 3, "%02x", grp->key[i]);
  return KF_OK;
}

/* ---- building the result ---------------------------------------------------------- */

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Fills g's inputs and outputs from its ops (program order). */
static kf_status fill_io(const part *P, kf_group *grp, int gid) {
  int cap_in = 0, cap_out = 0;
  for (int k = 0; k < grp->n_ops; k++) {
    cap_in += grp->ops[k]->n_operands;
    cap_out += grp->ops[k]->n_results;
  }
  grp->inputs = calloc((size_t)cap_in + 1, sizeof *grp->inputs);
  grp->outputs = calloc((size_t)cap_out + 1, sizeof *grp->outputs);
  if (!grp->inputs || !grp->outputs) return KF_ERR_NOMEM;
  for (int k = 0; k < grp->n_ops; k++) {
    const kf_op *op = grp->ops[k];
    for (int s = 0; s < op->n_operands; s++) {
      kf_value *v = op->operands[s];
      if (!v) continue;
      int d = P->def[v->id];
      if (d >= 0 && P->grp[d] == gid) continue;
      bool seen = false;
      for (int j = 0; j < grp->n_inputs && !seen; j++) seen = grp->inputs[j] == v;
      if (!seen) grp->inputs[grp->n_inputs++] = v;
    }
  }
  for (int k = 0; k < grp->n_ops; k++) {
    const kf_op *op = grp->ops[k];
    for (int r = 0; r < op->n_results; r++) {
      kf_value *v = op->results[r];
      bool out = P->is_out[v->id];
      for (int u = P->use_start[v->id]; u < P->use_start[v->id + 1] && !out; u++)
        out = P->grp[P->use_list[u]] != gid;
      if (out) grp->outputs[grp->n_outputs++] = v;
    }
  }
  return KF_OK;
}

/* Min-heap of ready groups keyed by their first op. */
static void heap_push(int *h, int *n, const int *key, int x) {
  int i = (*n)++;
  while (i > 0 && key[h[(i - 1) / 2]] > key[x]) {
    h[i] = h[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h[i] = x;
}

static int heap_pop(int *h, int *n, const int *key) {
  int top = h[0], x = h[--*n], i = 0;
  for (;;) {
    int c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && key[h[c + 1]] < key[h[c]]) c++;
    if (key[h[c]] >= key[x]) break;
    h[i] = h[c];
    i = c;
  }
  if (*n) h[i] = x;
  return top;
}

/* Topological order of the live groups (Kahn), ties by first op. */
static kf_status order_groups(part *P, int *order, int n_live, kf_diag *diag) {
  int ng = P->n_gs;
  int *indeg = calloc((size_t)ng + 1, sizeof *indeg);
  int *first = calloc((size_t)ng + 1, sizeof *first);
  int *ready = malloc(sizeof(int) * ((size_t)ng + 1));
  int n_ready = 0;
  kf_status st = KF_OK;
  if (!indeg || !first || !ready) {
    st = KF_ERR_NOMEM;
    goto out;
  }
  /* edges counted once per (producer group, consumer group) pair via marks */
  for (int c = 0; c < ng; c++) {
    if (!P->gs[c].alive) continue;
    first[c] = P->gs[c].ops[0];
    int m = fresh_marks(P);
    for (int k = 0; k < P->gs[c].n_ops; k++) {
      const kf_op *op = P->ops[P->gs[c].ops[k]];
      for (int s = 0; s < op->n_operands; s++) {
        if (!op->operands[s]) continue;
        int h = group_of_value(P, op->operands[s]);
        if (h < 0 || h == c || P->mark[h] == m) continue;
        P->mark[h] = m;
        indeg[c]++;
      }
    }
  }
  for (int c = 0; c < ng; c++)
    if (P->gs[c].alive && indeg[c] == 0) heap_push(ready, &n_ready, first, c);
  for (int n = 0; n < n_live; n++) {
    if (n_ready == 0) {
      kf_diag_error(diag, "internal error: the partition of '%s' has a cycle between groups",
                    P->g->name);
      st = KF_ERR_INTERNAL;
      goto out;
    }
    int best = heap_pop(ready, &n_ready, first);
    order[n] = best;
    int m = fresh_marks(P);
    pgroup *pb = &P->gs[best];
    for (int k = 0; k < pb->n_ops; k++) {
      const kf_op *op = P->ops[pb->ops[k]];
      for (int r = 0; r < op->n_results; r++) {
        uint32_t id = op->results[r]->id;
        for (int u = P->use_start[id]; u < P->use_start[id + 1]; u++) {
          int y = P->grp[P->use_list[u]];
          if (y < 0 || y == best || P->mark[y] == m) continue;
          P->mark[y] = m;
          if (--indeg[y] == 0) heap_push(ready, &n_ready, first, y);
        }
      }
    }
  }
out:
  free(indeg);
  free(first);
  free(ready);
  return st;
}

static void part_fini(part *P) {
  for (int i = 0; i < P->n_gs; i++) free(P->gs[i].ops);
  free(P->gs);
  free(P->mark);
  free(P->stack);
  free(P->ops);
  free(P->def);
  free(P->use_start);
  free(P->use_list);
  free(P->is_out);
  free(P->grp);
}

static kf_status part_init(part *P, const kf_graph *g, bool fuse) {
  memset(P, 0, sizeof *P);
  P->g = g;
  P->fuse = fuse;
  P->n_ops = kf_graph_count_ops(g);
  P->nv = g->next_value_id ? g->next_value_id : 1;
  P->ops = calloc((size_t)P->n_ops + 1, sizeof *P->ops);
  P->def = malloc(sizeof(int) * P->nv);
  P->use_start = calloc(P->nv + 1, sizeof(int));
  P->is_out = calloc(P->nv, sizeof(bool));
  P->grp = malloc(sizeof(int) * ((size_t)P->n_ops + 1));
  if (!P->ops || !P->def || !P->use_start || !P->is_out || !P->grp) return KF_ERR_NOMEM;
  for (size_t v = 0; v < P->nv; v++) P->def[v] = -1;
  int n = 0, n_uses = 0;
  for (kf_op *op = g->first; op; op = op->next, n++) {
    P->ops[n] = op;
    P->grp[n] = G_UNSET;
    for (int r = 0; r < op->n_results; r++) P->def[op->results[r]->id] = n;
    for (int s = 0; s < op->n_operands; s++)
      if (op->operands[s]) {
        P->use_start[op->operands[s]->id + 1]++;
        n_uses++;
      }
  }
  for (size_t v = 0; v < P->nv; v++) P->use_start[v + 1] += P->use_start[v];
  P->use_list = malloc(sizeof(int) * (size_t)(n_uses + 1));
  int *fill = malloc(sizeof(int) * P->nv);
  if (!P->use_list || !fill) {
    free(fill);
    return KF_ERR_NOMEM;
  }
  memcpy(fill, P->use_start, sizeof(int) * P->nv);
  n = 0;
  for (kf_op *op = g->first; op; op = op->next, n++)
    for (int s = 0; s < op->n_operands; s++)
      if (op->operands[s]) P->use_list[fill[op->operands[s]->id]++] = n;
  free(fill);
  for (int i = 0; i < g->n_outputs; i++) P->is_out[g->outputs[i]->id] = true;
  return KF_OK;
}

kf_status kf_partition_graph(const kf_graph *g, const kf_partition_options *opts,
                             kf_partition **out, kf_diag *diag) {
  kf_partition_options dflt;
  if (!opts) {
    kf_partition_options_init(&dflt);
    opts = &dflt;
  }
  *out = NULL;
  if (opts->precision < KF_PRECISION_DEFAULT || opts->precision > KF_PRECISION_LAST) {
    kf_diag_error(diag, "partition: unknown precision policy %d", (int)opts->precision);
    return KF_ERR_ARG;
  }
  part P;
  kf_partition *p = NULL;
  int *order = NULL;
  kf_status st = part_init(&P, g, opts->fuse);
  for (int i = 0; i < P.n_ops && st == KF_OK; i++) st = place(&P, i);
  /* sources no element-wise op adopted */
  for (int i = 0; i < P.n_ops && st == KF_OK; i++)
    if (P.grp[i] == G_PENDING) {
      int gid;
      st = new_group(&P, KF_GROUP_ELEMENTWISE, i, &gid);
    }
  if (st == KF_OK && opts->fuse && opts->horizontal) st = fuse_horizontally(&P);
  if (st) goto fail;
  int n_live = 0;
  for (int c = 0; c < P.n_gs; c++)
    if (P.gs[c].alive) {
      qsort(P.gs[c].ops, (size_t)P.gs[c].n_ops, sizeof(int), cmp_int);
      n_live++;
    }
  order = malloc(sizeof(int) * ((size_t)n_live + 1));
  p = calloc(1, sizeof *p);
  if (!order || !p) goto nomem;
  p->graph = g;
  p->precision = opts->precision;
  p->groups = calloc((size_t)n_live + 1, sizeof *p->groups);
  p->group_of_op = malloc(sizeof(int) * ((size_t)P.n_ops + 1));
  if (!p->groups || !p->group_of_op) goto nomem;
  if ((st = order_groups(&P, order, n_live, diag))) goto fail;
  p->n_groups = n_live;
  int *final_id = P.mark; /* reuse: internal group -> position */
  for (int n = 0; n < n_live; n++) final_id[order[n]] = n;
  for (int i = 0; i < P.n_ops; i++) p->group_of_op[i] = P.grp[i] >= 0 ? final_id[P.grp[i]] : -1;
  for (int n = 0; n < n_live && st == KF_OK; n++) {
    const pgroup *pg = &P.gs[order[n]];
    kf_group *grp = &p->groups[n];
    grp->id = n;
    grp->kind = pg->kind;
    grp->n_ops = pg->n_ops;
    grp->ops = calloc((size_t)pg->n_ops + 1, sizeof *grp->ops);
    if (!grp->ops) goto nomem;
    for (int k = 0; k < pg->n_ops; k++) grp->ops[k] = P.ops[pg->ops[k]];
    grp->anchor = pg->anchor >= 0 ? P.ops[pg->anchor] : NULL;
    if ((st = fill_io(&P, grp, order[n]))) goto fail;
    st = canonicalize(grp, opts->precision);
  }
  if (st) goto fail;
  part_fini(&P);
  free(order);
  *out = p;
  return KF_OK;
nomem:
  st = KF_ERR_NOMEM;
fail:
  if (st == KF_ERR_NOMEM) kf_diag_error(diag, "partition of '%s': out of memory", g->name);
  part_fini(&P);
  free(order);
  kf_partition_destroy(p);
  return st;
}

void kf_partition_destroy(kf_partition *p) {
  if (!p) return;
  for (int i = 0; i < p->n_groups; i++) {
    free(p->groups[i].ops);
    free(p->groups[i].inputs);
    free(p->groups[i].outputs);
    free(p->groups[i].canonical);
  }
  free(p->groups);
  free(p->group_of_op);
  free(p);
}

/* ---- printing -------------------------------------------------------------------------- */

static void print_ref(kf_strbuf *b, const kf_graph *g, const kf_value *v) {
  if (!v->def)
    kf_strbuf_printf(b, "%%%s", g->input_names[v->index]);
  else if (v->def->n_results == 1)
    kf_strbuf_printf(b, "%%%s", v->def->name);
  else
    kf_strbuf_printf(b, "%%%s#%d", v->def->name, v->index);
}

kf_status kf_partition_print(const kf_partition *p, kf_write_fn write, void *user) {
  const kf_graph *g = p->graph;
  kf_strbuf b;
  kf_strbuf_init(&b);
  int counts[KF_GROUP_SCAN + 1] = {0};
  for (int i = 0; i < p->n_groups; i++) counts[p->groups[i].kind]++;
  kf_strbuf_printf(&b, "// partition of '%s': %d groups (precision %s):", g->name, p->n_groups,
                   kf_precision_name(p->precision));
  for (int k = 0; k <= KF_GROUP_SCAN; k++)
    if (counts[k]) kf_strbuf_printf(&b, " %d %s", counts[k], kf_group_kind_name((kf_group_kind)k));
  kf_strbuf_printf(&b, "\n");
  for (int i = 0; i < p->n_groups; i++) {
    const kf_group *grp = &p->groups[i];
    kf_strbuf_printf(&b, "// group %d %s key %.16s\n//   ops:", grp->id,
                     kf_group_kind_name(grp->kind), grp->key_hex);
    for (int k = 0; k < grp->n_ops; k++)
      kf_strbuf_printf(&b, " %s%s(kf.%s)", grp->ops[k] == grp->anchor ? "*" : "",
                       grp->ops[k]->name, kf_opcode_name(grp->ops[k]->code));
    kf_strbuf_printf(&b, "\n//   inputs:");
    for (int k = 0; k < grp->n_inputs; k++) {
      kf_strbuf_printf(&b, " ");
      print_ref(&b, g, grp->inputs[k]);
    }
    kf_strbuf_printf(&b, "\n//   outputs:");
    for (int k = 0; k < grp->n_outputs; k++) {
      kf_strbuf_printf(&b, " ");
      print_ref(&b, g, grp->outputs[k]);
    }
    kf_strbuf_printf(&b, "\n");
  }
  kf_status st = KF_OK;
  if (b.failed)
    st = KF_ERR_NOMEM;
  else if (b.len && write(user, b.data, b.len) != 0)
    st = KF_ERR_IO;
  kf_strbuf_fini(&b);
  return st;
}
