/* pass/sink_reshapes.c — moves contiguous reshapes below element-wise ops,
 * so that element-wise chains sit next to the op that produced their data.
 *
 * Why: torch.export's core IR writes a linear layer on a 3-d activation as
 * view -> addmm -> view, and the bias-free epilogue (gelu, residual add,
 * ...) then reads the reshaped [B, T, N] view of the [B*T, N] product. The
 * partitioner never fuses through a view, so the epilogue would run as a
 * separate kernel. Computing it on [B*T, N] and reshaping afterwards is the
 * same arithmetic on the same elements in the same order.
 *
 * Expects: a verified graph. Changes, in one sweep in program order:
 *  - an element-wise op (unary, binary, where, cast, copy) with result shape
 *    R, one of whose operands is a contiguous reshape, to shape R, of a
 *    contiguous value u of another shape S computed by an op (not a weight
 *    or an input), is rewritten on S: other operands of shape R must be
 *    contiguous (they are reshaped to S, or replaced by the value they were
 *    reshaped from); broadcast operands must cover only trailing dims that
 *    R and S share (bias vectors), which a row-major reshape leaves alone;
 *    scalars stay. The op's uses then read a reshape of the new result.
 *    Sinking repeats down the chain as the next op sees a reshape again;
 *  - a reshape of a contiguous reshape of a contiguous value reads that
 *    value directly, and disappears when it gives back the value's own
 *    shape (and is not a graph output).
 * Views stay views: every reshape made here is of a contiguous value, so
 * it has contiguous strides and costs nothing. Replaced values are
 * forwarded lazily (each op's operands are resolved when the sweep reaches
 * it, the graph outputs at the end), so the pass stays linear in the size
 * of the graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfuse/ir.h"
#include "pass_int.h"

static bool is_elementwise(const kf_op *op) {
  kf_op_kind k = kf_op_info_get(op->code)->kind;
  return k == KF_KIND_UNARY || k == KF_KIND_BINARY || k == KF_KIND_TERNARY;
}

static bool same_dims(int ra, const int64_t *a, int rb, const int64_t *b) {
  if (ra != rb) return false;
  for (int i = 0; i < ra; i++)
    if (a[i] != b[i]) return false;
  return true;
}

/* A contiguous reshape view of a contiguous computed value: that value. */
static kf_value *reshape_source(const kf_value *v) {
  if (!v || !v->def || v->def->code != KF_OP_RESHAPE) return NULL;
  kf_value *u = v->def->operands[0];
  if (!kf_type_is_contiguous(&v->type) || !kf_type_is_contiguous(&u->type)) return NULL;
  return u;
}

typedef struct sinker {
  kf_graph *g;
  kf_diag *diag;
  kf_namer names;
  kf_value **to; /* value id -> replacement */
  size_t cap;
} sinker;

static kf_value *resolve(const sinker *S, kf_value *v) {
  while (v && v->id < S->cap && S->to[v->id]) v = S->to[v->id];
  return v;
}

static bool forward(sinker *S, const kf_value *from, kf_value *to) {
  if (from->id >= S->cap) {
    size_t cap = S->cap ? S->cap : 64;
    while (cap <= from->id) cap *= 2;
    kf_value **t = realloc(S->to, sizeof *t * cap);
    if (!t) return false;
    memset(t + S->cap, 0, sizeof *t * (cap - S->cap));
    S->to = t;
    S->cap = cap;
  }
  S->to[from->id] = to;
  return true;
}

static bool is_output(const kf_graph *g, const kf_value *v) {
  for (int i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] == v) return true;
  return false;
}

/* A reshape of x to (rank, shape) placed before `before`. */
static kf_value *reshape_to(sinker *S, kf_value *x, int rank, const int64_t *shape,
                            const char *base, kf_op *before) {
  kf_type t;
  kf_type_init_tensor(&t, x->type.dtype, rank, shape);
  const char *name = kf_namer_fresh(&S->names, base);
  if (!name) return NULL;
  kf_op *r = kf_graph_append_op(S->g, KF_OP_RESHAPE, name, &x, 1, &t, 1);
  kf_graph_move_op(S->g, r, before);
  if (kf_infer_types(r, &t, S->diag) != KF_OK) return NULL;
  r->results[0]->type = t;
  return r->results[0];
}

/* Tries to rewrite element-wise op o on the shape of a reshaped operand. */
static kf_status sink(sinker *S, kf_op *o) {
  kf_graph *g = S->g;
  const kf_type *rt = &o->results[0]->type;
  if (rt->kind != KF_TYPE_TENSOR || o->n_operands > KF_MAX_OPERAND_SLOTS) return KF_OK;
  const kf_value *u = NULL;
  for (int i = 0; i < o->n_operands && !u; i++) {
    kf_value *a = o->operands[i];
    const kf_value *s = reshape_source(a);
    if (s && s->def && s->def->code != KF_OP_PARAM && !kf_op_is_view(s->def) &&
        same_dims(a->type.rank, a->type.shape, rt->rank, rt->shape) &&
        !same_dims(s->type.rank, s->type.shape, rt->rank, rt->shape))
      u = s;
  }
  /* zero-dim tensors promote differently from dim ones: keep ranks >= 1 */
  if (!u || u->type.rank == 0 || rt->rank == 0) return KF_OK;
  int sr = u->type.rank;
  const int64_t *ss = u->type.shape;
  /* every operand must map onto S */
  kf_value *ops[KF_MAX_OPERAND_SLOTS] = {0};
  bool need_view[KF_MAX_OPERAND_SLOTS] = {0};
  for (int i = 0; i < o->n_operands; i++) {
    kf_value *b = o->operands[i];
    ops[i] = b;
    if (!b || b->type.kind != KF_TYPE_TENSOR) continue;
    if (same_dims(b->type.rank, b->type.shape, rt->rank, rt->shape)) {
      kf_value *src = reshape_source(b);
      if (src && same_dims(src->type.rank, src->type.shape, sr, ss)) {
        ops[i] = src;
      } else if (kf_type_is_contiguous(&b->type)) {
        need_view[i] = true;
      } else {
        return KF_OK;
      }
      continue;
    }
    /* broadcast operand: its non-unit extent must lie in trailing dims R and S share */
    int k = b->type.rank;
    int lead = 0;
    while (lead < k && b->type.shape[lead] == 1) lead++;
    int span = k - lead;
    if (span > rt->rank || span > sr) return KF_OK;
    for (int d = 1; d <= span; d++)
      if (rt->shape[rt->rank - d] != ss[sr - d]) return KF_OK;
    if (k > sr) return KF_OK; /* would change the result's rank */
  }
  char base[256];
  for (int i = 0; i < o->n_operands; i++)
    if (need_view[i]) {
      snprintf(base, sizeof base, "%.200s_in%d", o->name, i);
      if (!(ops[i] = reshape_to(S, o->operands[i], sr, ss, base, o))) goto fail;
    }
  kf_type t;
  kf_type_init_tensor(&t, rt->dtype, sr, ss);
  snprintf(base, sizeof base, "%.200s_flat", o->name);
  const char *name = kf_namer_fresh(&S->names, base);
  if (!name) goto fail;
  kf_op *n = kf_graph_append_op(g, o->code, name, ops, o->n_operands, &t, 1);
  memcpy(n->attrs, o->attrs, sizeof n->attrs); /* arena data of the same graph */
  n->source = o->source;
  kf_graph_move_op(g, n, o);
  kf_type inf = t;
  if (kf_infer_types(n, &inf, S->diag) != KF_OK || !kf_type_equal(&inf, &t)) goto fail;
  snprintf(base, sizeof base, "%.200s_view", o->name);
  kf_value *r = reshape_to(S, n->results[0], rt->rank, rt->shape, base, o);
  if (!r || !kf_type_equal(&r->type, rt) || !forward(S, o->results[0], r)) goto fail;
  kf_graph_remove_op(g, o);
  return KF_OK;
fail:
  kf_diag_error(S->diag, "internal error: sink-reshapes: cannot rewrite node '%s' (kf.%s)", o->name,
                kf_opcode_name(o->code));
  return KF_ERR_INTERNAL;
}

kf_status kf_pass_sink_reshapes(kf_graph *g, kf_diag *diag) {
  sinker S = {g, diag, {0}, NULL, 0};
  kf_status st = kf_namer_init(&S.names, g);
  for (kf_op *op = g->first, *next; op && st == KF_OK; op = next) {
    next = op->next;
    for (int i = 0; i < op->n_operands; i++) op->operands[i] = resolve(&S, op->operands[i]);
    if (op->code == KF_OP_RESHAPE) {
      kf_value *x = reshape_source(op->operands[0]);
      if (!x || !kf_type_is_contiguous(&op->results[0]->type)) continue;
      op->operands[0] = x;
      if (kf_type_equal(&x->type, &op->results[0]->type) && !is_output(g, op->results[0])) {
        if (!forward(&S, op->results[0], x)) st = KF_ERR_NOMEM;
        kf_graph_remove_op(g, op);
      }
      continue;
    }
    if (is_elementwise(op) && op->n_results == 1) st = sink(&S, op);
  }
  for (int i = 0; i < g->n_outputs; i++) g->outputs[i] = resolve(&S, g->outputs[i]);
  if (st == KF_ERR_NOMEM) kf_diag_error(diag, "sink-reshapes: out of memory");
  kf_namer_fini(&S.names);
  free(S.to);
  return st;
}
