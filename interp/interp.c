/* interp/interp.c — the CPU reference interpreter's driver.
 *
 * Runs a graph op by op in double precision: checks the inputs, reads
 * weights from the graph's store (gathering with their strides and storage
 * offset), allocates every result from its IR type under a size limit,
 * dispatches to the kernel of the op's kind and rounds integer and bool
 * results to their dtype. Values are freed after their last use. It also
 * implements the two ops that need the storage behind a value rather than
 * its elements: kf.param and kf.as_strided. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "interp_int.h"

#define DEFAULT_MAX_ELEMENTS (16 * 1024 * 1024)

/* ---- helpers shared by the kernels ---------------------------------------- */

kf_status ki_fail(ki_ctx *c, kf_status st, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (c->op)
    kf_diag_error(c->diag, "node '%s' (kf.%s): %s", c->op->name,
                  kf_opcode_name(c->op->code), msg);
  else
    kf_diag_error(c->diag, "interpreter: %s", msg);
  return st;
}

ki_val *ki_arg(ki_ctx *c, int i) {
  if (i >= c->op->n_operands || !c->op->operands[i]) return NULL;
  return &c->vals[c->op->operands[i]->id];
}

const kf_type *ki_arg_type(ki_ctx *c, int i) {
  if (i >= c->op->n_operands || !c->op->operands[i]) return NULL;
  return &c->op->operands[i]->type;
}

ki_val *ki_res(ki_ctx *c, int i) { return &c->vals[c->op->results[i]->id]; }

const kf_type *ki_res_type(ki_ctx *c, int i) { return &c->op->results[i]->type; }

kf_status ki_check_macs(ki_ctx *c, double macs) {
  if (macs > KI_MAX_MACS)
    return ki_fail(c, KF_ERR_LIMIT,
                   "needs %.3g multiply-adds, more than the interpreter's limit of %.3g",
                   macs, KI_MAX_MACS);
  return KF_OK;
}

kf_status ki_alloc(ki_ctx *c, int64_t n, double **out) {
  *out = NULL;
  if (n < 0 || n > c->max_elements || (uint64_t)n > SIZE_MAX / sizeof(double))
    return ki_fail(c, KF_ERR_LIMIT, "needs a buffer of %" PRId64
                   " elements, more than the limit of %" PRId64, n, c->max_elements);
  *out = malloc(sizeof(double) * (size_t)(n ? n : 1));
  if (!*out) return ki_fail(c, KF_ERR_NOMEM, "out of memory");
  return KF_OK;
}

void ki_strides(int rank, const int64_t *shape, int64_t *st) {
  int64_t s = 1;
  for (int i = rank - 1; i >= 0; i--) {
    st[i] = s;
    s *= shape[i];
  }
}

void ki_next(int rank, const int64_t *shape, int64_t *idx) {
  for (int k = rank - 1; k >= 0; k--) {
    if (++idx[k] < shape[k]) return;
    idx[k] = 0;
  }
}

void ki_bcast_strides(int rank, const int64_t *shape, int out_rank,
                      int64_t *st) {
  int64_t own[KF_MAX_RANK];
  ki_strides(rank, shape, own);
  for (int i = 0; i < out_rank; i++) {
    int j = i - (out_rank - rank);
    st[i] = (j < 0 || shape[j] == 1) ? 0 : own[j];
  }
}

void ki_gather(double *out, int rank, const int64_t *shape, const double *src,
               int64_t offset, const int64_t *strides) {
  int64_t n = 1, idx[KF_MAX_RANK] = {0};
  for (int i = 0; i < rank; i++) n *= shape[i];
  for (int64_t e = 0; e < n; e++) {
    int64_t o = offset;
    for (int k = 0; k < rank; k++) o += idx[k] * strides[k];
    out[e] = src[o];
    ki_next(rank, shape, idx);
  }
}

/* ---- storage: kf.param and kf.as_strided ---------------------------------- */

/* Largest storage index a view of type t touches, plus one (0 if empty). */
static int64_t storage_extent(const kf_type *t) {
  int64_t hi = t->offset;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] == 0) return 0;
    hi += (t->shape[i] - 1) * t->strides[i];
  }
  return hi + 1;
}

/* Raw bytes of weight `fqn`, checked to hold `elems` elements of dtype. */
static kf_status weight_bytes(ki_ctx *c, const kf_weight *w, int64_t elems,
                              const void **data, int64_t *nbytes) {
  const kf_graph *g = c->g;
  if (!g->store.impl || !g->store.get)
    return ki_fail(c, KF_ERR_UNSUPPORTED, "weight '%s' has no data", w->fqn);
  kf_status st = g->store.get(g->store.impl, w->fqn, data, nbytes, c->diag);
  if (st != KF_OK) return ki_fail(c, st, "cannot read weight '%s'", w->fqn);
  /* An empty record stands for a fake tensor: zeros (see the .pt2 format). */
  if (*nbytes == 0) {
    *data = NULL;
    return KF_OK;
  }
  int64_t need = elems * (int64_t)kf_dtype_size(w->type.dtype);
  if (!*data || *nbytes < need)
    return ki_fail(c, KF_ERR_FORMAT, "weight '%s' has %" PRId64
                   " bytes of storage, its type needs %" PRId64, w->fqn, *nbytes, need);
  return KF_OK;
}

static const kf_weight *param_weight(ki_ctx *c, const kf_op *op) {
  const char *fqn = kf_op_get_str(op, "fqn");
  const kf_weight *w = kf_graph_find_weight(c->g, fqn);
  if (!w) ki_fail(c, KF_ERR_INVALID, "weight '%s' is not declared by the graph", fqn);
  return w;
}

static kf_status run_param(ki_ctx *c) {
  const kf_weight *w = param_weight(c, c->op);
  if (!w) return KF_ERR_INVALID;
  const kf_type *t = &w->type;
  ki_val *r = ki_res(c, 0);
  if (r->n != kf_type_numel(t))
    return ki_fail(c, KF_ERR_INVALID, "weight '%s' has %" PRId64 " elements, the result %" PRId64,
                   w->fqn, kf_type_numel(t), r->n);
  if (r->n == 0) return KF_OK;
  for (int i = 0; i < t->rank; i++)
    if (t->strides[i] < 0)
      return ki_fail(c, KF_ERR_UNSUPPORTED, "weight '%s' has a negative stride", w->fqn);
  if (t->offset < 0)
    return ki_fail(c, KF_ERR_FORMAT, "weight '%s' has a negative storage offset", w->fqn);
  const void *data;
  int64_t nbytes;
  kf_status st = weight_bytes(c, w, storage_extent(t), &data, &nbytes);
  if (st) return st;
  int64_t idx[KF_MAX_RANK] = {0};
  for (int64_t e = 0; e < r->n; e++) {
    int64_t o = t->offset;
    for (int k = 0; k < t->rank; k++) o += idx[k] * t->strides[k];
    r->d[e] = data ? ki_load(t->dtype, data, o) : 0.0;
    ki_next(t->rank, t->shape, idx);
  }
  return KF_OK;
}

/* The value whose storage `v` views: walk up through view ops. */
static const kf_value *storage_root(const kf_value *v) {
  while (v->def && kf_op_is_view(v->def) && v->def->operands[0])
    v = v->def->operands[0];
  return v;
}

/* PyTorch defines as_strided on the operand's storage, which elements do
 * not determine in general. We rebuild the storage from the root of the
 * operand's view chain: a weight's raw storage, or the root value
 * scattered through its own strides; reading a storage element nothing
 * defines is an error rather than a guess. */
kf_status ki_run_as_strided(ki_ctx *c) {
  const kf_value *root = storage_root(c->op->operands[0]);
  const kf_type *rt = &root->type;
  ki_val *r = ki_res(c, 0);
  const kf_type *t = ki_res_type(c, 0);
  if (r->n == 0) return KF_OK;
  int64_t need = storage_extent(t);
  double *stor = NULL;
  unsigned char *known = NULL;
  kf_status st = KF_OK;
  int64_t size = 0;
  if (root->def && root->def->code == KF_OP_PARAM) {
    const kf_weight *w = param_weight(c, root->def);
    if (!w) return KF_ERR_INVALID;
    const void *data;
    int64_t nbytes;
    st = weight_bytes(c, w, storage_extent(&w->type), &data, &nbytes);
    if (st) return st;
    size = nbytes / (int64_t)kf_dtype_size(w->type.dtype);
    if (need > size && nbytes > 0)
      return ki_fail(c, KF_ERR_INVALID, "as_strided reads element %" PRId64
                     " of weight '%s', whose storage has %" PRId64, need - 1, w->fqn, size);
    size = need;
    if ((st = ki_alloc(c, size, &stor))) return st;
    for (int64_t i = 0; i < size; i++)
      stor[i] = data ? ki_load(w->type.dtype, data, i) : 0.0;
  } else {
    const ki_val *rv = &c->vals[root->id];
    KF_ASSERT(rv->live);
    for (int i = 0; i < rt->rank; i++)
      if (rt->strides[i] < 0)
        return ki_fail(c, KF_ERR_UNSUPPORTED, "as_strided of a view with negative strides");
    size = storage_extent(rt);
    if (size < need) size = need;
    if ((st = ki_alloc(c, size, &stor))) return st;
    known = calloc((size_t)size, 1);
    if (!known) {
      free(stor);
      return ki_fail(c, KF_ERR_NOMEM, "out of memory");
    }
    int64_t idx[KF_MAX_RANK] = {0};
    for (int64_t e = 0; e < rv->n; e++) {
      int64_t o = rt->offset;
      for (int k = 0; k < rt->rank; k++) o += idx[k] * rt->strides[k];
      stor[o] = rv->d[e];
      known[o] = 1;
      ki_next(rt->rank, rt->shape, idx);
    }
  }
  int64_t idx[KF_MAX_RANK] = {0};
  for (int64_t e = 0; e < r->n; e++) {
    int64_t o = t->offset;
    for (int k = 0; k < t->rank; k++) o += idx[k] * t->strides[k];
    if (known && !known[o]) {
      st = ki_fail(c, KF_ERR_UNSUPPORTED,
                   "as_strided reads storage element %" PRId64 " that its operand's "
                   "view chain does not define (storage root '%%%u')", o, root->id);
      break;
    }
    r->d[e] = stor[o];
    ki_next(t->rank, t->shape, idx);
  }
  free(stor);
  free(known);
  return st;
}

/* ---- the driver ------------------------------------------------------------ */

/* Constants are stored in their tensor's dtype, as PyTorch holds them
 * (0.1 in an f32 tensor is 0.100000001...): the reference computes from
 * exactly the values the model has, like it does for inputs and weights. */
static kf_status run_source(ki_ctx *c) {
  ki_val *r = ki_res(c, 0);
  kf_dtype dt = ki_res_type(c, 0)->dtype;
  switch (c->op->code) {
  case KF_OP_PARAM:
    return run_param(c);
  case KF_OP_SCALAR: case KF_OP_FULL: {
    double v = kf_number_as_double(kf_op_get_number(c->op, "value"));
    if (c->op->code == KF_OP_FULL) v = ki_round_to(dt, v);
    for (int64_t i = 0; i < r->n; i++) r->d[i] = v;
    return KF_OK;
  }
  case KF_OP_ARANGE: {
    double a = kf_number_as_double(kf_op_get_number(c->op, "start"));
    double s = kf_number_as_double(kf_op_get_number(c->op, "step"));
    for (int64_t i = 0; i < r->n; i++) r->d[i] = ki_round_to(dt, a + (double)i * s);
    return KF_OK;
  }
  default: break;
  }
  return ki_fail(c, KF_ERR_INTERNAL, "not a source op");
}

static kf_status alloc_result(ki_ctx *c, int i) {
  const kf_type *t = ki_res_type(c, i);
  ki_val *v = ki_res(c, i);
  if (t->kind == KF_TYPE_SCALAR) {
    v->rank = 0;
  } else {
    v->rank = t->rank;
    memcpy(v->shape, t->shape, sizeof v->shape);
  }
  int64_t n = 1;
  bool empty = false;
  for (int k = 0; k < v->rank; k++) {
    if (v->shape[k] < 0)
      return ki_fail(c, KF_ERR_INVALID, "result %d has a negative size", i);
    empty |= v->shape[k] == 0;
  }
  for (int k = 0; k < v->rank && !empty; k++) {
    if (n > c->max_elements / v->shape[k])
      return ki_fail(c, KF_ERR_LIMIT, "result %d has more than %" PRId64
                     " elements, the interpreter's limit", i, c->max_elements);
    n *= v->shape[k];
  }
  v->n = empty ? 0 : n;
  kf_status st = ki_alloc(c, n, &v->d);
  if (st) return st;
  v->live = true;
  return KF_OK;
}

static void free_val(ki_val *v) {
  free(v->d);
  v->d = NULL;
  v->live = false;
}

static kf_status run_op(ki_ctx *c) {
  const kf_op *op = c->op;
  for (int i = 0; i < op->n_operands; i++) {
    const kf_value *v = op->operands[i];
    if (v && (v->id >= c->g->next_value_id || !c->vals[v->id].live))
      return ki_fail(c, KF_ERR_INVALID, "operand %d is not defined before its use", i);
  }
  for (int i = 0; i < op->n_results; i++) {
    kf_status st = alloc_result(c, i);
    if (st) return st;
  }
  kf_status st;
  switch (kf_op_info_get(op->code)->kind) {
  case KF_KIND_SOURCE: st = run_source(c); break;
  case KF_KIND_UNARY: case KF_KIND_BINARY: case KF_KIND_TERNARY:
    st = ki_run_elementwise(c);
    break;
  case KF_KIND_VIEW: case KF_KIND_SHAPE:
    st = op->code == KF_OP_AS_STRIDED ? ki_run_as_strided(c) : ki_run_shape(c);
    break;
  case KF_KIND_REDUCE: case KF_KIND_SCAN: case KF_KIND_NORM:
    st = ki_run_reduce(c);
    break;
  case KF_KIND_MATMUL: case KF_KIND_CONV: case KF_KIND_POOL: case KF_KIND_ATTENTION:
  case KF_KIND_RECURRENT:
    st = ki_run_nn(c);
    break;
  default:
    st = ki_fail(c, KF_ERR_UNSUPPORTED, "op kind not supported by the interpreter");
  }
  if (st) return st;
  /* Integer and bool results hold exact integers; float results stay in
   * double precision (kf.cast rounds explicitly), unless the options ask
   * for them rounded as eager stores them. */
  for (int i = 0; i < op->n_results; i++) {
    kf_dtype dt = ki_res_type(c, i)->dtype;
    if (kf_dtype_is_float(dt) && !c->round_results) continue;
    ki_val *v = ki_res(c, i);
    for (int64_t e = 0; e < v->n; e++) v->d[e] = ki_round_to(dt, v->d[e]);
  }
  return KF_OK;
}

static kf_status check_inputs(ki_ctx *c, const kf_tensor *inputs, int n_inputs) {
  const kf_graph *g = c->g;
  if (n_inputs != g->n_inputs)
    return ki_fail(c, KF_ERR_ARG, "graph has %d inputs, %d given", g->n_inputs, n_inputs);
  for (int i = 0; i < g->n_inputs; i++) {
    const kf_type *t = &g->inputs[i]->type;
    const kf_tensor *x = &inputs[i];
    const char *name = g->input_names && g->input_names[i] ? g->input_names[i] : "?";
    bool scalar = t->kind == KF_TYPE_SCALAR;
    bool ok = kf_dtype_size(x->dtype) > 0 &&
              (scalar ? x->rank == 0 : x->rank == t->rank && x->dtype == t->dtype);
    for (int k = 0; ok && !scalar && k < t->rank; k++) ok = x->shape[k] == t->shape[k];
    if (!ok) {
      char want[256], got[256];
      kf_type_str(t, want, sizeof want);
      if (x->rank >= 0 && x->rank <= KF_MAX_RANK) {
        kf_type tt;
        kf_type_init_tensor(&tt, x->dtype, x->rank, x->shape);
        kf_type_str(&tt, got, sizeof got);
      } else {
        snprintf(got, sizeof got, "a tensor of rank %d", x->rank);
      }
      return ki_fail(c, KF_ERR_ARG, "input %d ('%s') is %s, the graph expects %s", i,
                     name, got, want);
    }
    if (!x->data && kf_tensor_numel(x) > 0)
      return ki_fail(c, KF_ERR_ARG, "input %d ('%s') has no data", i, name);
    if (kf_tensor_numel(x) > c->max_elements)
      return ki_fail(c, KF_ERR_LIMIT, "input %d ('%s') has %" PRId64 " elements, more than "
                     "the interpreter's limit of %" PRId64, i, name, kf_tensor_numel(x),
                     c->max_elements);
  }
  return KF_OK;
}

kf_status kf_interp_run(const kf_graph *g, const kf_tensor *inputs,
                        int n_inputs, kf_tensor *outputs,
                        const kf_interp_options *opts, kf_diag *diag) {
  ki_ctx c;
  memset(&c, 0, sizeof c);
  c.g = g;
  c.diag = diag;
  c.max_elements = opts && opts->max_elements > 0 ? opts->max_elements : DEFAULT_MAX_ELEMENTS;
  c.round_results = opts && opts->round_results;
  for (int i = 0; i < g->n_outputs; i++) memset(&outputs[i], 0, sizeof outputs[i]);
  int n_ops = kf_graph_count_ops(g);
  uint32_t nv = g->next_value_id;
  kf_status st = check_inputs(&c, inputs, n_inputs);
  if (st) return st;
  c.vals = calloc(nv ? nv : 1, sizeof *c.vals);
  /* last_use[id]: index of the last op reading the value; n_ops for graph
   * outputs (never freed); -1 when unused. */
  int *last_use = malloc(sizeof(int) * (nv ? nv : 1));
  if (!c.vals || !last_use) {
    st = ki_fail(&c, KF_ERR_NOMEM, "out of memory");
    goto done;
  }
  for (uint32_t i = 0; i < nv; i++) last_use[i] = -1;
  {
    int k = 0;
    for (const kf_op *op = g->first; op; op = op->next, k++) {
      for (int i = 0; i < op->n_operands; i++)
        if (op->operands[i] && op->operands[i]->id < nv) last_use[op->operands[i]->id] = k;
      if (op->code == KF_OP_AS_STRIDED && op->operands[0])
        last_use[storage_root(op->operands[0])->id] = k;
    }
  }
  for (int i = 0; i < g->n_outputs; i++) last_use[g->outputs[i]->id] = n_ops;

  for (int i = 0; i < g->n_inputs; i++) {
    ki_val *v = &c.vals[g->inputs[i]->id];
    const kf_tensor *x = &inputs[i];
    v->rank = x->rank;
    memcpy(v->shape, x->shape, sizeof v->shape);
    v->n = kf_tensor_numel(x);
    if ((st = ki_alloc(&c, v->n, &v->d))) goto done;
    v->live = true;
    for (int64_t e = 0; e < v->n; e++) v->d[e] = kf_tensor_get(x, e);
  }

  int k = 0;
  for (const kf_op *op = g->first; op; op = op->next, k++) {
    c.op = op;
    if ((st = run_op(&c))) goto done;
    if (opts && opts->on_value)
      for (int i = 0; i < op->n_results; i++) {
        const ki_val *r = &c.vals[op->results[i]->id];
        if (r->live) opts->on_value(opts->user, op, i, r->rank, r->shape, r->d, r->n);
      }
    for (int i = 0; i < op->n_operands; i++) {
      const kf_value *v = op->operands[i];
      if (v && last_use[v->id] == k && c.vals[v->id].live) free_val(&c.vals[v->id]);
    }
    if (op->code == KF_OP_AS_STRIDED) {
      const kf_value *root = storage_root(op->operands[0]);
      if (last_use[root->id] == k && c.vals[root->id].live) free_val(&c.vals[root->id]);
    }
    for (int i = 0; i < op->n_results; i++)
      if (last_use[op->results[i]->id] < 0) free_val(&c.vals[op->results[i]->id]);
  }
  c.op = NULL;

  for (int i = 0; i < g->n_outputs; i++) {
    const ki_val *v = &c.vals[g->outputs[i]->id];
    if (!v->live) {
      st = ki_fail(&c, KF_ERR_INVALID, "output %d is never computed", i);
      goto done;
    }
    kf_tensor *o = &outputs[i];
    o->dtype = KF_DTYPE_F64;
    o->rank = v->rank;
    memcpy(o->shape, v->shape, sizeof o->shape);
    if ((st = kf_tensor_alloc(o)) != KF_OK) {
      st = ki_fail(&c, st, "cannot allocate output %d", i);
      goto done;
    }
    memcpy(o->data, v->d, sizeof(double) * (size_t)v->n);
  }

done:
  if (st != KF_OK)
    for (int i = 0; i < g->n_outputs; i++) kf_tensor_fini(&outputs[i]);
  if (c.vals)
    for (uint32_t i = 0; i < nv; i++) free(c.vals[i].d);
  free(c.vals);
  free(last_use);
  return st;
}
