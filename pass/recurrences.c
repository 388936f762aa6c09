/* pass/recurrences.c — finds the LSTM and GRU layers torch.export unrolled
 * into one cell per time step and makes each one kf.rnn op, which runs the
 * layer as one kernel launch a step (agent/builtin_rnn.c) instead of a
 * GEMM, an element-wise kernel and a copy into the stacked output a step.
 *
 * Why: nn.LSTM and nn.GRU export as T copies of their cell. A 6-layer,
 * 512-step LSTM (KernelBench L3 36) became 3,078 GEMMs, 3,073 element-wise
 * launches and 2,566 copies, 2.6x slower than eager's cuDNN kernel.
 *
 * Expects: a verified graph. What it matches, per chain of addmm ops in
 * program order that share one weight W [G*H, H] (through a [1, 0]
 * permute) and one bias [G*H], G = 4 (lstm) or 3 (gru):
 *  - step k's addmm reads h_{k-1} (through reshapes): h0 for k = 0, the
 *    previous step's new hidden state after;
 *  - the step's cell is the element-wise ops between its addmm and the
 *    next one (splits of the G*H-wide values into G parts of H, reshapes,
 *    add/sub/mul/div/neg/sigmoid/tanh, scalar constants) over four kinds of
 *    leaves: the addmm's result, a size-1 slice along dim 0 of one
 *    [T, B, G*H] tensor X (the input's gate pre-activations; step k takes
 *    slice k, or T-1-k, or slice k of X flipped), h_{k-1}, and for lstm one
 *    more value, the cell state c_{k-1};
 *  - the new h (and c) are found by evaluating every candidate value of
 *    the cell on random leaf values in double precision and comparing
 *    with the lstm or gru formulas of ops.def: a cell is recognised by
 *    what it computes, not by how the decomposition spelled it;
 *  - the chain covers all T time steps, h_k feeds step k+1's addmm and
 *    c_k its cell (an lstm's last h may be absent: dce removed it when only
 *    the last c is used); no op after the chain reads an intermediate c_k;
 *    X, h0, c0 (reshaped to [B, H]), W and the bias are dense row-major
 *    (h0 and c0 may start at an offset: slices of a stacked state);
 *    T <= 4096 steps and H <= 4096 (what the step kernel's unit holds).
 * Changes: a kf.rnn op after the chain's last cell; every later use of
 * h_k reads hseq (a cat of all h_k in time order along dim 0 becomes hseq
 * itself; any other use a copy of its slice, the last gru h the state
 * result), the last c the state result. The old chain is left for dce.
 * Anything else is left as it is: a recurrence the pass does not
 * recognise still compiles step by step. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kfuse/ir.h"
#include "pass_int.h"

#define NTRIAL 8
#define MAXG 4
#define WINDOW 256 /* ops scanned after the last step's addmm */

typedef struct sval {
  int width; /* 0 constant, 1 an [B, H] value, G a [B, G*H] one */
  double x[MAXG][NTRIAL];
} sval;

typedef struct cell {
  const kf_op *A;        /* the step's addmm */
  const kf_value *hprev; /* peeled */
  const kf_value *cprev; /* lstm: the state leaf; NULL when not seen */
  const kf_value *xsrc;  /* X of the slices */
  int64_t xidx;          /* slice index */
  const kf_value *h, *c; /* the new states (c lstm only) */
  const kf_op *last;     /* the later of h's and c's definitions */
} cell;

typedef struct rctx {
  kf_graph *g;
  kf_diag *diag;
  int64_t *pos;  /* by value id: program position of its def (-1 inputs) */
  int *memo;     /* by value id: index into vals + 1, 0 unknown */
  uint32_t nv;   /* ids below this existed when the pass started */
  int *role;     /* by value id: k + 1 for h_k, -(k + 1) for c_k of the chain being rewritten */
  sval *vals;
  int n_vals, cap_vals;
  uint32_t *touched;
  int n_touched;
  /* the step being analysed */
  const cell *cur;
  cell *out;
  int G;
  int64_t B, H;
  double lg[MAXG][NTRIAL], lx[MAXG][NTRIAL], lh[NTRIAL], lc[NTRIAL];
  bool fail_step;
} rctx;

/* strip reshapes */
static const kf_value *peel(const kf_value *v) {
  while (v && v->def && v->def->code == KF_OP_RESHAPE) v = v->def->operands[0];
  return v;
}

/* dense row-major from its first element on (a slice of a stacked state) */
static bool dense(const kf_type *t) {
  kf_type u = *t;
  u.offset = 0;
  return t->kind == KF_TYPE_TENSOR && kf_type_is_contiguous(&u);
}

static const kf_value *permuted_weight(const kf_value *v) {
  const kf_op *p = v->def;
  if (!p || p->code != KF_OP_PERMUTE) return NULL;
  int n;
  const int64_t *d = kf_op_get_ints(p, "dims", &n);
  if (n != 2 || d[0] != 1 || d[1] != 0) return NULL;
  return p->operands[0];
}

/* an addmm h W^T + b with the shapes of a recurrent step; G and H out */
static bool step_form(const kf_op *A, int *G, int64_t *H) {
  if (A->code != KF_OP_ADDMM) return false;
  if (kf_number_as_double(kf_op_get_number(A, "alpha")) != 1 || kf_number_as_double(kf_op_get_number(A, "beta")) != 1)
    return false;
  const kf_value *b = A->operands[0], *a = A->operands[1];
  const kf_value *w = permuted_weight(A->operands[2]);
  if (!w || w->type.rank != 2 || b->type.rank != 1 || a->type.rank != 2) return false;
  if (w->type.dtype != KF_DTYPE_F32 && w->type.dtype != KF_DTYPE_F64) return false;
  if (b->type.dtype != w->type.dtype || a->type.dtype != w->type.dtype) return false;
  int64_t h = w->type.shape[1], gh = w->type.shape[0];
  if (h < 1 || a->type.shape[1] != h || b->type.shape[0] != gh || (gh != 4 * h && gh != 3 * h)) return false;
  if (!dense(&w->type) || !dense(&b->type)) return false;
  *G = (int)(gh / h);
  *H = h;
  return true;
}

static double sigm(double x) { return 1.0 / (1.0 + exp(-x)); }

/* shape without leading 1s */
static bool same_core(const kf_type *a, const kf_type *b) {
  int ia = 0, ib = 0;
  while (ia < a->rank && a->shape[ia] == 1) ia++;
  while (ib < b->rank && b->shape[ib] == 1) ib++;
  if (a->rank - ia != b->rank - ib) return false;
  for (; ia < a->rank; ia++, ib++)
    if (a->shape[ia] != b->shape[ib]) return false;
  return true;
}

static sval *new_val(rctx *R, const kf_value *v) {
  if (R->n_vals == R->cap_vals) {
    int cap = R->cap_vals ? 2 * R->cap_vals : 64;
    sval *nv = realloc(R->vals, (size_t)cap * sizeof *nv);
    if (!nv) return NULL;
    R->vals = nv;
    R->cap_vals = cap;
  }
  sval *s = &R->vals[R->n_vals++];
  memset(s, 0, sizeof *s);
  R->memo[v->id] = R->n_vals;
  R->touched[R->n_touched++] = v->id;
  return s;
}

static bool is_const(const kf_value *v, double *c) {
  const kf_op *d = v->def;
  if (!d) return false;
  if (d->code == KF_OP_SCALAR || d->code == KF_OP_FULL) {
    *c = kf_number_as_double(kf_op_get_number(d, "value"));
    return true;
  }
  return false;
}

/* one time index of an [T, B, G*H] tensor (a size-1 slice or a select along
 * dim 0): records its source and index */
static bool x_slice(rctx *R, const kf_value *r) {
  const kf_op *s = r->def;
  if (!s) return false;
  bool sel = s->code == KF_OP_SELECT && kf_op_get_int(s, "dim") == 0;
  if (!sel && (s->code != KF_OP_SLICE || kf_op_get_int(s, "dim") != 0 || kf_op_get_int(s, "step") != 1 ||
               kf_op_get_int(s, "end") != kf_op_get_int(s, "start") + 1))
    return false;
  const kf_value *x = s->operands[0];
  if (x->type.rank != 3 || x->type.shape[1] != R->B || x->type.shape[2] != R->G * R->H) return false;
  int64_t i = kf_op_get_int(s, sel ? "index" : "start");
  if (R->out->xsrc && (R->out->xsrc != x || R->out->xidx != i)) {
    R->fail_step = true; /* two different input slices in one cell */
    return false;
  }
  R->out->xsrc = x;
  R->out->xidx = i;
  return true;
}

static const sval *eval(rctx *R, const kf_value *v, int depth);

static const sval *eval_op(rctx *R, const kf_value *r, int depth) {
  const kf_op *op = r->def;
  int G = R->G;
  if (op->code == KF_OP_SPLIT) {
    int n;
    const int64_t *sz = kf_op_get_ints(op, "sizes", &n);
    const kf_value *src = op->operands[0];
    if (n != G || kf_op_get_int(op, "dim") != src->type.rank - 1) return NULL;
    for (int i = 0; i < n; i++)
      if (sz[i] != R->H) return NULL;
    const sval *s = eval(R, src, depth + 1);
    if (!s || s->width != G) return NULL;
    sval tmp;
    memset(&tmp, 0, sizeof tmp);
    tmp.width = 1;
    memcpy(tmp.x[0], s->x[r->index], sizeof tmp.x[0]);
    sval *o = new_val(R, r);
    if (!o) return NULL;
    *o = tmp;
    return o;
  }
  kf_op_kind kind = kf_op_info_get(op->code)->kind;
  if (kind != KF_KIND_UNARY && kind != KF_KIND_BINARY) return NULL;
  if (R->pos[r->id] <= R->pos[R->cur->A->results[0]->id]) return NULL; /* before the step */
  const sval *a[2] = {NULL, NULL};
  double k[2] = {0, 0};
  int width = 0;
  if (op->n_operands > 2) return NULL;
  for (int i = 0; i < op->n_operands; i++) {
    const kf_value *o = op->operands[i];
    if (is_const(o, &k[i])) continue;
    if (o->type.kind != KF_TYPE_TENSOR || !same_core(&o->type, &r->type)) return NULL;
    if (!(a[i] = eval(R, o, depth + 1))) return NULL;
    if (a[i]->width && width && a[i]->width != width) return NULL;
    if (a[i]->width) width = a[i]->width;
  }
  double alpha = 1;
  if ((op->code == KF_OP_ADD || op->code == KF_OP_SUB) && kf_op_has_attr(op, "alpha"))
    alpha = kf_number_as_double(kf_op_get_number(op, "alpha"));
  if (op->code == KF_OP_DIV && kf_op_has_attr(op, "rounding_mode")) return NULL;
  sval res;
  memset(&res, 0, sizeof res);
  res.width = width;
  for (int s = 0; s < (width ? width : 1); s++)
    for (int t = 0; t < NTRIAL; t++) {
      double x = a[0] ? a[0]->x[a[0]->width ? s : 0][t] : k[0];
      double y = op->n_operands > 1 ? (a[1] ? a[1]->x[a[1]->width ? s : 0][t] : k[1]) : 0;
      double z;
      switch (op->code) {
      case KF_OP_ADD: z = x + alpha * y; break;
      case KF_OP_SUB: z = x - alpha * y; break;
      case KF_OP_MUL: z = x * y; break;
      case KF_OP_DIV: z = x / y; break;
      case KF_OP_NEG: z = -x; break;
      case KF_OP_SIGMOID: z = sigm(x); break;
      case KF_OP_TANH: z = tanh(x); break;
      case KF_OP_EXP: z = exp(x); break;
      case KF_OP_RECIPROCAL: z = 1 / x; break;
      default: return NULL;
      }
      res.x[s][t] = z;
    }
  sval *o = new_val(R, r);
  if (!o) return NULL;
  *o = res;
  return o;
}

static const sval *eval(rctx *R, const kf_value *v, int depth) {
  if (depth > 64 || R->fail_step) return NULL;
  const kf_value *r = peel(v);
  if (r->id >= R->nv) return NULL; /* made by this pass */
  if (R->memo[r->id]) return &R->vals[R->memo[r->id] - 1];
  const cell *c = R->cur;
  sval *o;
  if (r == peel(c->A->results[0])) {
    if (!(o = new_val(R, r))) return NULL;
    o->width = R->G;
    memcpy(o->x, R->lg, sizeof R->lg);
    return o;
  }
  if (r == c->hprev) {
    if (!(o = new_val(R, r))) return NULL;
    o->width = 1;
    memcpy(o->x[0], R->lh, sizeof R->lh);
    return o;
  }
  if (x_slice(R, r)) {
    if (!(o = new_val(R, r))) return NULL;
    o->width = R->G;
    memcpy(o->x, R->lx, sizeof R->lx);
    return o;
  }
  if (R->fail_step) return NULL;
  /* a split may come before the step's addmm (of the input's slice) */
  if (r->def && (r->def->code == KF_OP_SPLIT || R->pos[r->id] > R->pos[c->A->results[0]->id]))
    return eval_op(R, r, depth);
  /* defined before the step: the cell state, one value of [B, H] */
  if (R->G != 4 || kf_type_numel(&r->type) != R->B * R->H || r->type.kind != KF_TYPE_TENSOR) return NULL;
  if (R->out->cprev && R->out->cprev != r) return NULL;
  R->out->cprev = r;
  if (!(o = new_val(R, r))) return NULL;
  o->width = 1;
  memcpy(o->x[0], R->lc, sizeof R->lc);
  return o;
}

static void reset_memo(rctx *R) {
  for (int i = 0; i < R->n_touched; i++) R->memo[R->touched[i]] = 0;
  R->n_touched = 0;
  R->n_vals = 0;
}

static bool close_to(const double *a, const double *b) {
  for (int t = 0; t < NTRIAL; t++)
    if (!(fabs(a[t] - b[t]) <= 1e-9 * (1 + fabs(b[t])))) return false;
  return true;
}

/* Analyse the step of addmm A (ops up to `end`, exclusive, or WINDOW ops):
 * fills c->h (and c->c) when the cell computes the lstm or gru formulas. */
static bool analyse(rctx *R, const kf_op *A, const kf_op *end, cell *c) {
  memset(c, 0, sizeof *c);
  c->A = A;
  c->hprev = peel(A->operands[1]);
  R->cur = c;
  R->out = c;
  int G = R->G;
  double eh[NTRIAL], ec[NTRIAL];
  for (int t = 0; t < NTRIAL; t++) {
    double pre[MAXG];
    for (int s = 0; s < G; s++) pre[s] = R->lx[s][t] + R->lg[s][t];
    if (G == 4) {
      ec[t] = sigm(pre[1]) * R->lc[t] + sigm(pre[0]) * tanh(pre[2]);
      eh[t] = sigm(pre[3]) * tanh(ec[t]);
    } else {
      double r = sigm(pre[0]), z = sigm(pre[1]);
      double n = tanh(R->lx[2][t] + r * R->lg[2][t]);
      eh[t] = (1 - z) * n + z * R->lh[t];
    }
  }
  int scanned = 0;
  for (const kf_op *op = A->next; op && op != end && scanned < WINDOW; op = op->next, scanned++) {
    kf_op_kind kind = kf_op_info_get(op->code)->kind;
    if ((kind != KF_KIND_UNARY && kind != KF_KIND_BINARY) || op->n_results != 1) continue;
    const kf_value *v = op->results[0];
    if (v->type.kind != KF_TYPE_TENSOR || kf_type_numel(&v->type) != R->B * R->H) continue;
    if (c->h && (G == 3 || c->c)) break;
    const sval *s = eval(R, v, 0);
    /* Leaf bindings (the input slice, the cell state) are never undone:
     * memoised values depend on them. A candidate reading a second input
     * slice ends the scan (what was found before it did not read it). */
    if (R->fail_step) break;
    if (!s || s->width != 1) continue;
    if (!c->h && close_to(s->x[0], eh)) {
      c->h = v;
      if (!c->last || R->pos[v->id] > R->pos[c->last->results[0]->id]) c->last = op;
    } else if (G == 4 && !c->c && close_to(s->x[0], ec)) {
      c->c = v;
      if (!c->last || R->pos[v->id] > R->pos[c->last->results[0]->id]) c->last = op;
    }
  }
  reset_memo(R);
  R->fail_step = false;
  /* an lstm's last h may be missing: dead code when only c is used */
  return c->xsrc && (G == 3 ? c->h != NULL : c->c && c->cprev);
}

/* x when v is x flipped along dim 0 (index_select with a reversed arange) */
static const kf_value *flip0(const kf_value *v) {
  const kf_op *is = v->def;
  if (!is || is->code != KF_OP_INDEX_SELECT || kf_op_get_int(is, "dim") != 0) return NULL;
  const kf_value *x = is->operands[0], *idx = is->operands[1];
  const kf_op *ar = idx->def;
  int64_t n = x->type.shape[0];
  if (!ar || ar->code != KF_OP_ARANGE || idx->type.rank != 1 || idx->type.shape[0] != n) return NULL;
  if (kf_number_as_double(kf_op_get_number(ar, "start")) != (double)(n - 1) ||
      kf_number_as_double(kf_op_get_number(ar, "step")) != -1)
    return NULL;
  return x;
}

static kf_op *mk(rctx *R, kf_opcode code, const char *base, kf_value **ops, int n, const kf_type *decl, int nres,
                 kf_op *before) {
  kf_op *op = kf_graph_append_op(R->g, code, kf_pass_unique_name(R->g, base), ops, n, decl, nres);
  kf_graph_move_op(R->g, op, before);
  return op;
}

static kf_status typed(rctx *R, kf_op *op) {
  kf_type t[2];
  for (int i = 0; i < op->n_results && i < 2; i++) t[i] = op->results[i]->type;
  kf_status st = kf_infer_types(op, t, R->diag);
  if (st) return st;
  for (int i = 0; i < op->n_results && i < 2; i++) op->results[i]->type = t[i];
  return KF_OK;
}

/* a view or copy of `from` with exactly the type of `like` */
static kf_status as_type_of(rctx *R, kf_value *from, const kf_value *like, bool copy, kf_op *before, kf_value **out) {
  kf_value *v = from;
  kf_status st;
  if (!kf_type_same_shape(&v->type, &like->type)) {
    kf_type t;
    kf_type_init_tensor(&t, like->type.dtype, like->type.rank, like->type.shape);
    kf_op *r = mk(R, KF_OP_RESHAPE, "rnn_view", &v, 1, &t, 1, before);
    if ((st = typed(R, r))) return st;
    v = r->results[0];
  }
  if (copy || !kf_type_equal(&v->type, &like->type)) {
    kf_type t = like->type;
    kf_op *cp = mk(R, KF_OP_COPY, "rnn_copy", &v, 1, &t, 1, before);
    if ((st = typed(R, cp))) return st;
    v = cp->results[0];
  }
  *out = v;
  return KF_OK;
}

/* replace uses of `from` in ops after `after` and in graph outputs */
static void replace_after(kf_graph *g, const kf_op *after, const kf_value *from, kf_value *to) {
  for (kf_op *op = after->next; op; op = op->next)
    for (int i = 0; i < op->n_operands; i++)
      if (op->operands[i] == from && op != to->def) op->operands[i] = to;
  for (int i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] == from) g->outputs[i] = to;
}

/* which of the chain's h_k (used[k]) and c_k (cused[k]) ops after `after`
 * or graph outputs read */
static void uses_after(rctx *R, const kf_op *after, const cell *cs, int n, bool *used, bool *cused) {
  for (int k = 0; k < n; k++) {
    if (cs[k].h) R->role[cs[k].h->id] = k + 1;
    if (cs[k].c) R->role[cs[k].c->id] = -(k + 1);
    used[k] = cused[k] = false;
  }
  const kf_graph *g = R->g;
  for (const kf_op *op = after->next; op; op = op->next)
    for (int i = 0; i < op->n_operands; i++) {
      const kf_value *v = op->operands[i];
      int r = v && v->id < R->nv ? R->role[v->id] : 0;
      if (r > 0) used[r - 1] = true;
      else if (r < 0) cused[-r - 1] = true;
    }
  for (int i = 0; i < g->n_outputs; i++) {
    const kf_value *v = g->outputs[i];
    int r = v->id < R->nv ? R->role[v->id] : 0;
    if (r > 0) used[r - 1] = true;
    else if (r < 0) cused[-r - 1] = true;
  }
  for (int k = 0; k < n; k++) {
    if (cs[k].h) R->role[cs[k].h->id] = 0;
    if (cs[k].c) R->role[cs[k].c->id] = 0;
  }
}

/* Rewrite the chain cells[0..n) (validated) as one kf.rnn placed after its
 * last cell. used/cused: scratch, n each. */
static kf_status rewrite(rctx *R, cell *cs, int n, const kf_value *X, bool rev, bool *used, bool *cused) {
  kf_graph *g = R->g;
  bool lstm = R->G == 4;
  kf_op *P = (kf_op *)cs[n - 1].last;
  uses_after(R, P, cs, n, used, cused);
  for (int k = 0; k + 1 < n; k++)
    if (cused[k]) return KF_OK; /* an intermediate cell state is read later */
  kf_op *before = P->next;
  kf_status st;
  kf_value *h0 = cs[0].A->operands[1];
  kf_value *c0 = NULL;
  if (lstm) {
    kf_value *cp = (kf_value *)cs[0].cprev;
    kf_type t;
    int64_t sh[2] = {R->B, R->H};
    kf_type_init_tensor(&t, h0->type.dtype, 2, sh);
    if (!dense(&cp->type) || cp->type.dtype != h0->type.dtype) return KF_OK;
    if (kf_type_same_shape(&cp->type, &t)) c0 = cp;
    else {
      kf_op *r = mk(R, KF_OP_RESHAPE, "rnn_c0", &cp, 1, &t, 1, before);
      if ((st = typed(R, r))) return st;
      c0 = r->results[0];
    }
  }
  kf_value *ops[5] = {(kf_value *)X, h0, c0, (kf_value *)permuted_weight(cs[0].A->operands[2]),
                      cs[0].A->operands[0]};
  kf_type rt[2];
  int64_t sh[3] = {n, R->B, R->H};
  kf_type_init_tensor(&rt[0], X->type.dtype, 3, sh);
  kf_type_init_tensor(&rt[1], X->type.dtype, 2, sh + 1);
  kf_op *rnn = mk(R, KF_OP_RNN, lstm ? "lstm" : "gru", ops, 5, rt, 2, before);
  kf_op_set_str(rnn, "mode", lstm ? "lstm" : "gru");
  if (rev) kf_op_set_bool(rnn, "reverse", true);
  if ((st = typed(R, rnn))) return st;
  kf_value *hseq = rnn->results[0], *state = rnn->results[1];
  /* a cat of every h in time order along dim 0 is hseq */
  for (kf_op *op = rnn->next, *nx; op; op = nx) {
    nx = op->next;
    if (op->code != KF_OP_CAT || op->n_operands != n || kf_op_get_int(op, "dim") != 0) continue;
    bool all = true;
    for (int t = 0; t < n && all; t++) all = op->operands[t] == cs[rev ? n - 1 - t : t].h;
    if (!all || kf_type_numel(&op->results[0]->type) != kf_type_numel(&hseq->type)) continue;
    kf_value *v;
    if ((st = as_type_of(R, hseq, op->results[0], false, op, &v))) return st;
    kf_graph_replace_uses(g, op->results[0], v);
    if (before == op) before = op->next;
    kf_graph_remove_op(g, op);
  }
  /* what else reads an h or the last c */
  uses_after(R, rnn, cs, n, used, cused);
  for (int k = 0; k < n; k++) {
    const kf_value *h = cs[k].h;
    if (!used[k]) continue;
    kf_value *v;
    if (!lstm && k == n - 1) {
      if ((st = as_type_of(R, state, h, false, before, &v))) return st;
    } else {
      int64_t t = rev ? n - 1 - k : k;
      kf_type ts = hseq->type;
      ts.shape[0] = 1;
      kf_op *s = mk(R, KF_OP_SLICE, "rnn_h", &hseq, 1, &ts, 1, before);
      kf_op_set_int(s, "dim", 0);
      kf_op_set_int(s, "start", t);
      kf_op_set_int(s, "end", t + 1);
      kf_op_set_int(s, "step", 1);
      if ((st = typed(R, s))) return st;
      if ((st = as_type_of(R, s->results[0], h, true, before, &v))) return st;
    }
    replace_after(g, v->def, h, v);
  }
  if (lstm && cused[n - 1]) {
    kf_value *v;
    if ((st = as_type_of(R, state, cs[n - 1].c, false, before, &v))) return st;
    replace_after(g, v->def, cs[n - 1].c, v);
  }
  return KF_OK;
}

/* Validate the chain cs[0..n) and rewrite it when it is a whole layer. */
static kf_status try_chain(rctx *R, cell *cs, int n) {
  /* a unit holds at most 4096 steps (agent/unit_io.c); the step kernel
   * stages batch rows of h in 40 KiB of shared memory */
  if (n < 2 || n > 4096 || R->H > 4096) return KF_OK;
  const kf_value *xs = cs[0].xsrc;
  int64_t T = xs->type.shape[0];
  if (T != n) return KF_OK;
  bool fwd = true, bwd = true;
  for (int k = 0; k < n; k++) {
    if (cs[k].xsrc != xs) return KF_OK;
    fwd &= cs[k].xidx == k;
    bwd &= cs[k].xidx == n - 1 - k;
  }
  if (!fwd && !bwd) return KF_OK;
  const kf_value *X = xs;
  bool rev = bwd && !fwd;
  const kf_value *f = flip0(xs);
  if (f) {
    X = f;
    rev = !rev;
  }
  if (!dense(&X->type) || !dense(&cs[0].A->operands[1]->type) || X->type.dtype != cs[0].A->operands[1]->type.dtype)
    return KF_OK;
  bool *used = calloc((size_t)n, sizeof *used), *cused = calloc((size_t)n, sizeof *cused);
  kf_status st = KF_ERR_NOMEM;
  if (used && cused) st = rewrite(R, cs, n, X, rev, used, cused);
  else kf_diag_error(R->diag, "recurrences: out of memory");
  free(used);
  free(cused);
  return st;
}

kf_status kf_pass_recurrences(kf_graph *g, kf_diag *diag) {
  rctx R;
  memset(&R, 0, sizeof R);
  R.g = g;
  R.diag = diag;
  size_t nv = g->next_value_id + 1;
  R.nv = (uint32_t)nv;
  R.pos = calloc(nv, sizeof *R.pos);
  R.role = calloc(nv, sizeof *R.role);
  R.memo = calloc(nv, sizeof *R.memo);
  R.touched = calloc(nv, sizeof *R.touched);
  int n_ops = kf_graph_count_ops(g);
  const kf_op **steps = calloc((size_t)n_ops + 1, sizeof *steps);
  bool *done = calloc((size_t)n_ops + 1, sizeof *done);
  cell *cs = calloc((size_t)n_ops + 1, sizeof *cs);
  kf_status st = KF_OK;
  if (!R.pos || !R.role || !R.memo || !R.touched || !steps || !done || !cs) {
    kf_diag_error(diag, "recurrences: out of memory");
    st = KF_ERR_NOMEM;
    goto out;
  }
  for (size_t i = 0; i < nv; i++) R.pos[i] = -1;
  int64_t p = 0, n_steps = 0;
  for (kf_op *op = g->first; op; op = op->next, p++) {
    for (int i = 0; i < op->n_results; i++) R.pos[op->results[i]->id] = p;
    int G;
    int64_t H;
    if (step_form(op, &G, &H)) steps[n_steps++] = op;
  }
  /* leaf values, the same for every step: a fixed-seed generator */
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < MAXG * NTRIAL * 2 + 2 * NTRIAL; i++) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    double u = (double)(s >> 11) / 9007199254740992.0; /* [0, 1) */
    int k = i;
    if (k < MAXG * NTRIAL) R.lg[k / NTRIAL][k % NTRIAL] = 6 * u - 3;
    else if ((k -= MAXG * NTRIAL) < MAXG * NTRIAL) R.lx[k / NTRIAL][k % NTRIAL] = 6 * u - 3;
    else if ((k -= MAXG * NTRIAL) < NTRIAL) R.lh[k] = 4 * u - 2;
    else R.lc[k - NTRIAL] = 4 * u - 2;
  }
  for (int64_t i = 0; i < n_steps && !st; i++) {
    if (done[i]) continue;
    const kf_op *A = steps[i];
    int G;
    int64_t H;
    step_form(A, &G, &H);
    const kf_value *w = permuted_weight(A->operands[2]), *b = A->operands[0];
    R.G = G;
    R.H = H;
    R.B = A->operands[1]->type.shape[0];
    /* the later steps of the same weights, in program order */
    int n = 0;
    int64_t j = i;
    while (j < n_steps) {
      const kf_op *next = NULL;
      int64_t jn = j + 1;
      for (; jn < n_steps; jn++)
        if (!done[jn] && permuted_weight(steps[jn]->operands[2]) == w && steps[jn]->operands[0] == b &&
            steps[jn]->operands[1]->type.shape[0] == R.B) {
          next = steps[jn];
          break;
        }
      if (!analyse(&R, steps[j], next, &cs[n])) break;
      /* an lstm cell must read the previous one's c */
      if (n > 0 && G == 4 && cs[n].cprev != cs[n - 1].c) break;
      done[j] = true;
      n++;
      if (!next || !cs[n - 1].h || peel(next->operands[1]) != cs[n - 1].h) break;
      j = jn;
    }
    if (n >= 2) st = try_chain(&R, cs, n);
  }
out:
  free(R.pos);
  free(R.memo);
  free(R.role);
  free(R.touched);
  free(R.vals);
  free(steps);
  free(done);
  free(cs);
  return st;
}
