/* frontend/aten_ops.c — the ATen overloads kfuse accepts and how each one
 * becomes kf ops.
 *
 * The table at the end is the single list of supported overloads (what
 * `kfuse ops --aten` prints). Schemas are PyTorch's own strings, so
 * argument names, order and defaults match what torch.export serializes
 * and torch-mlir prints; tests compare them with a real PyTorch. Each
 * lowering reads its arguments by name (defaults already filled in),
 * normalises them (dims wrapped, "all dims" spelled out, Python numbers as
 * kf.scalar operands) and emits kf ops that are typed as they are created,
 * so PyTorch's shape and dtype rules are checked at every step. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "aten_int.h"

/* ---- small helpers ------------------------------------------------------- */

/* Bound for sizes computed here from arguments (see AT_MAX_INT in aten.c). */
#define AT_LIMIT ((int64_t)1 << 50)

static bool has_arg(at_ctx *c, const char *name) {
  for (int i = 0; i < c->s->n_args; i++)
    if (strcmp(c->s->args[i].name, name) == 0) return true;
  return false;
}

static const char *argname(at_ctx *c, int i) { return c->s->args[i].name; }

static kf_value *need_tensor(at_ctx *c, const char *name) {
  kf_value *v = at_tensor(c, name);
  if (!v && !c->st) at_err(c, KF_ERR_FORMAT, "argument '%s' must be a tensor, not None", name);
  return v;
}

static int64_t numel_of(const int64_t *shape, int rank) {
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= shape[i];
  return n;
}

static void shape_str(const int64_t *s, int n, char *buf, size_t cap) {
  size_t k = 0;
  k += (size_t)snprintf(buf + k, cap - k, "[");
  for (int i = 0; i < n && k < cap; i++)
    k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? ", " : "", (long long)s[i]);
  if (k < cap) snprintf(buf + k, cap - k, "]");
}

/* The result shape of view/reshape: one -1 is inferred. */
static bool view_shape(at_ctx *c, const int64_t *sz, int n, int64_t numel, int64_t *out) {
  if (n > KF_MAX_RANK) {
    at_err(c, KF_ERR_LIMIT, "rank %d exceeds kfuse's limit of %d", n, KF_MAX_RANK);
    return false;
  }
  int infer = -1;
  int64_t prod = 1;
  for (int i = 0; i < n; i++) {
    out[i] = sz[i];
    if (sz[i] == -1) {
      if (infer >= 0) {
        at_err(c, KF_ERR_INVALID, "only one dimension can be inferred");
        return false;
      }
      infer = i;
    } else if (sz[i] < 0 || __builtin_mul_overflow(prod, sz[i], &prod)) {
      at_err(c, KF_ERR_INVALID, "invalid size %lld at dim %d", (long long)sz[i], i);
      return false;
    }
  }
  char b[200];
  if (infer >= 0) {
    if (prod == 0 || numel % prod) {
      shape_str(sz, n, b, sizeof b);
      at_err(c, KF_ERR_INVALID, "shape %s is invalid for input of size %lld", b, (long long)numel);
      return false;
    }
    out[infer] = numel / prod;
  } else if (prod != numel) {
    shape_str(sz, n, b, sizeof b);
    at_err(c, KF_ERR_INVALID, "shape %s is invalid for input of size %lld", b, (long long)numel);
    return false;
  }
  return true;
}

static bool same_dims(const kf_value *a, const kf_value *b) {
  return a->type.rank == b->type.rank &&
         memcmp(a->type.shape, b->type.shape, sizeof(int64_t) * (size_t)a->type.rank) == 0;
}

static kf_status done(at_ctx *c, kf_value *v) {
  AT_CHECK(c, v);
  at_out(c, 0, v);
  return KF_OK;
}

static bool is_number_arg(const kf_aten_arg *a) {
  return a->kind == KF_ARG_INT || a->kind == KF_ARG_FLOAT || a->kind == KF_ARG_BOOL;
}

/* ---- element-wise -------------------------------------------------------- */

static kf_status L_unary(at_ctx *c) {
  kf_value *x = need_tensor(c, argname(c, 0));
  AT_CHECK(c, x);
  return done(c, at_unary(c, (kf_opcode)c->row->k, x));
}

/* Binary ops with Tensor or Scalar operands; alpha and rounding_mode when
 * the overload has them. */
static kf_status L_binary(at_ctx *c) {
  kf_value *a = at_operand(c, argname(c, 0));
  AT_CHECK(c, a);
  kf_value *b = at_operand(c, argname(c, 1));
  AT_CHECK(c, b);
  if (a->type.kind == KF_TYPE_SCALAR && b->type.kind == KF_TYPE_SCALAR)
    return at_err(c, KF_ERR_UNSUPPORTED, "both operands are numbers, not tensors");
  kf_value *ops[2] = {a, b};
  kf_op *op = at_op(c, (kf_opcode)c->row->k, ops, 2, 1, NULL);
  if (has_arg(c, "alpha")) {
    kf_number al = at_num(c, "alpha");
    if (!at_number_is(al, 1)) kf_op_set_number(op, "alpha", al);
  }
  if (has_arg(c, "rounding_mode") && at_str(c, "rounding_mode")) {
    const char *m = at_str(c, "rounding_mode");
    if (strcmp(m, "trunc") && strcmp(m, "floor"))
      return at_err(c, KF_ERR_INVALID, "rounding_mode must be 'trunc', 'floor' or None, not '%s'", m);
    kf_op_set_str(op, "rounding_mode", m);
  }
  return done(c, at_fin(c, op));
}

/* floor_divide: div with rounding_mode floor. */
static kf_status L_floor_divide(at_ctx *c) {
  kf_value *a = at_operand(c, "self");
  AT_CHECK(c, a);
  kf_value *b = at_operand(c, "other");
  AT_CHECK(c, b);
  kf_value *ops[2] = {a, b};
  kf_op *op = at_op(c, KF_OP_DIV, ops, 2, 1, NULL);
  kf_op_set_str(op, "rounding_mode", "floor");
  return done(c, at_fin(c, op));
}

/* rsub(x, y, alpha) = y - alpha * x */
static kf_status L_rsub(at_ctx *c) {
  kf_value *x = at_operand(c, "self");
  AT_CHECK(c, x);
  kf_value *y = at_operand(c, "other");
  AT_CHECK(c, y);
  kf_value *ops[2] = {y, x};
  kf_op *op = at_op(c, KF_OP_SUB, ops, 2, 1, NULL);
  kf_number al = at_num(c, "alpha");
  if (!at_number_is(al, 1)) kf_op_set_number(op, "alpha", al);
  return done(c, at_fin(c, op));
}

static kf_status L_where(at_ctx *c) {
  kf_value *cond = need_tensor(c, "condition");
  AT_CHECK(c, cond);
  kf_value *a = at_operand(c, "self");
  AT_CHECK(c, a);
  kf_value *b = at_operand(c, "other");
  AT_CHECK(c, b);
  return done(c, at_where(c, cond, a, b));
}

/* masked_fill(x, m, v) = where(m, v, x), with v converted to x's dtype. */
static kf_status L_masked_fill(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  kf_value *m = need_tensor(c, "mask");
  AT_CHECK(c, m);
  kf_value *v;
  const kf_aten_arg *va = at_arg(c, "value");
  if (is_number_arg(va)) {
    kf_number n = at_num(c, "value");
    if (!kf_dtype_is_float(x->type.dtype)) n = at_number_of_kind(x->type.dtype, kf_number_as_double(n));
    v = at_scalar(c, n);
  } else {
    v = need_tensor(c, "value");
    AT_CHECK(c, v);
    if (v->type.rank != 0)
      return at_err(c, KF_ERR_INVALID, "value must be a 0-d tensor, has rank %d", v->type.rank);
    v = at_cast(c, v, x->type.dtype);
  }
  AT_CHECK(c, v);
  return done(c, at_where(c, m, v, x));
}

static kf_status L_clamp(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  bool has_min = has_arg(c, "min") && !at_none(c, "min");
  bool has_max = has_arg(c, "max") && !at_none(c, "max");
  if (!has_min && !has_max)
    return at_err(c, KF_ERR_INVALID, "at least one of 'min' or 'max' must not be None");
  kf_op *op = at_op(c, KF_OP_CLAMP, &x, 1, 1, NULL);
  if (has_min) kf_op_set_number(op, "min", at_num(c, "min"));
  if (has_max) kf_op_set_number(op, "max", at_num(c, "max"));
  return done(c, at_fin(c, op));
}

/* clamp.Tensor / clamp_min.Tensor / clamp_max.Tensor: maximum, minimum. */
static kf_status L_clamp_tensor(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  kf_value *lo = has_arg(c, "min") ? at_tensor(c, "min") : NULL;
  kf_value *hi = has_arg(c, "max") ? at_tensor(c, "max") : NULL;
  if (c->st) return c->st;
  if (!lo && !hi)
    return at_err(c, KF_ERR_INVALID, "at least one of 'min' or 'max' must not be None");
  if (lo) x = at_binary(c, KF_OP_MAXIMUM, x, lo);
  if (hi && x) x = at_binary(c, KF_OP_MINIMUM, x, hi);
  return done(c, x);
}

static kf_status L_hardtanh(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  kf_op *op = at_op(c, KF_OP_HARDTANH, &x, 1, 1, NULL);
  if (has_arg(c, "min_val")) {
    kf_op_set_number(op, "min_val", at_num(c, "min_val"));
    kf_op_set_number(op, "max_val", at_num(c, "max_val"));
  } else { /* relu6 */
    kf_op_set_number(op, "min_val", kf_number_int(0));
    kf_op_set_number(op, "max_val", kf_number_int(6));
  }
  return done(c, at_fin(c, op));
}

static kf_status L_leaky_relu(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  kf_op *op = at_op(c, KF_OP_LEAKY_RELU, &x, 1, 1, NULL);
  kf_op_set_number(op, "negative_slope", at_num(c, "negative_slope"));
  return done(c, at_fin(c, op));
}

enum { ELU_PLAIN, ELU_SELU, ELU_CELU };

static kf_status L_elu(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  kf_op *op = at_op(c, KF_OP_ELU, &x, 1, 1, NULL);
  switch (c->row->k) {
  case ELU_PLAIN:
    kf_op_set_number(op, "alpha", at_num(c, "alpha"));
    kf_op_set_number(op, "scale", at_num(c, "scale"));
    kf_op_set_number(op, "input_scale", at_num(c, "input_scale"));
    break;
  case ELU_SELU: /* the constants of torch.nn.SELU */
    kf_op_set_number(op, "alpha", kf_number_float(1.6732632423543772848170429916717));
    kf_op_set_number(op, "scale", kf_number_float(1.0507009873554804934193349852946));
    kf_op_set_number(op, "input_scale", kf_number_int(1));
    break;
  case ELU_CELU: {
    kf_number a = at_num(c, "alpha");
    double ad = kf_number_as_double(a);
    if (ad == 0) return at_err(c, KF_ERR_INVALID, "celu alpha must not be 0");
    kf_op_set_number(op, "alpha", a);
    kf_op_set_number(op, "scale", kf_number_int(1));
    kf_op_set_number(op, "input_scale", kf_number_float(1.0 / ad));
    break;
  }
  }
  return done(c, at_fin(c, op));
}

static kf_status L_softplus(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  kf_op *op = at_op(c, KF_OP_SOFTPLUS, &x, 1, 1, NULL);
  kf_op_set_number(op, "beta", at_num(c, "beta"));
  kf_op_set_number(op, "threshold", at_num(c, "threshold"));
  return done(c, at_fin(c, op));
}

static kf_status L_gelu(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  const char *ap = at_str(c, "approximate");
  if (!ap || (strcmp(ap, "none") && strcmp(ap, "tanh")))
    return at_err(c, KF_ERR_INVALID, "approximate must be 'none' or 'tanh', not '%s'", ap ? ap : "None");
  kf_op *op = at_op(c, KF_OP_GELU, &x, 1, 1, NULL);
  kf_op_set_str(op, "approximate", ap);
  return done(c, at_fin(c, op));
}

/* threshold(x, t, v) = x <= t ? v : x */
static kf_status L_threshold(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  kf_value *t = at_scalar(c, at_num(c, "threshold"));
  kf_value *le = at_binary(c, KF_OP_LE, x, t);
  kf_value *v = at_scalar(c, at_num(c, "value"));
  return done(c, at_where(c, le, v, x));
}

/* prelu(x, w) = x > 0 ? x : w * x, w per channel (dim 1) or one value. */
static kf_status L_prelu(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  kf_value *w = need_tensor(c, "weight");
  AT_CHECK(c, w);
  int64_t n = kf_type_numel(&w->type);
  if (w->type.rank > 1) return at_err(c, KF_ERR_INVALID, "weight must be 0-d or 1-d");
  if (n != 1) {
    if (x->type.rank < 2 || x->type.shape[1] != n)
      return at_err(c, KF_ERR_INVALID, "weight has %lld entries, input has %lld channels",
                    (long long)n, (long long)(x->type.rank >= 2 ? x->type.shape[1] : 1));
    int64_t sh[KF_MAX_RANK];
    sh[0] = n;
    for (int i = 1; i < x->type.rank - 1; i++) sh[i] = 1;
    w = at_reshape(c, w, x->type.rank - 1, sh);
  }
  kf_value *zero = at_scalar(c, kf_number_int(0));
  kf_value *pos = at_binary(c, KF_OP_GT, x, zero);
  kf_value *neg = at_binary(c, KF_OP_MUL, w, x);
  return done(c, at_where(c, pos, x, neg));
}

/* square(x) = pow(x, 2): keeps PyTorch's dtype (bool squares to int64). */
static kf_status L_square(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  return done(c, at_binary(c, KF_OP_POW, x, at_scalar(c, kf_number_int(2))));
}

static kf_status L_isfinite(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  kf_value *bad = at_binary(c, KF_OP_LOGICAL_OR, at_unary(c, KF_OP_ISNAN, x), at_unary(c, KF_OP_ISINF, x));
  return done(c, at_unary(c, KF_OP_LOGICAL_NOT, bad));
}

/* log_sigmoid(x) = -softplus(-x); softplus' threshold keeps large |x| exact
 * to within exp(-20) relative. */
static kf_status L_log_sigmoid(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  kf_value *n = at_unary(c, KF_OP_NEG, x);
  AT_CHECK(c, n);
  kf_op *op = at_op(c, KF_OP_SOFTPLUS, &n, 1, 1, NULL);
  kf_op_set_number(op, "beta", kf_number_int(1));
  kf_op_set_number(op, "threshold", kf_number_int(20));
  return done(c, at_unary(c, KF_OP_NEG, at_fin(c, op)));
}

/* hardshrink(x, l) = |x| > l ? x : 0 */
static kf_status L_hardshrink(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  kf_value *keep = at_binary(c, KF_OP_GT, at_unary(c, KF_OP_ABS, x), at_scalar(c, at_num(c, "lambd")));
  return done(c, at_where(c, keep, x, at_scalar(c, at_number_of_kind(x->type.dtype, 0))));
}

/* ---- identities, copies, casts ------------------------------------------- */

static kf_status L_identity(at_ctx *c) {
  kf_value *x = need_tensor(c, argname(c, 0));
  AT_CHECK(c, x);
  at_out(c, 0, x);
  return KF_OK;
}

static kf_status L_copy_op(at_ctx *c) {
  kf_value *x = need_tensor(c, argname(c, 0));
  AT_CHECK(c, x);
  return done(c, at_unary(c, KF_OP_COPY, x));
}

static kf_status L_dropout(at_ctx *c) {
  kf_value *x = need_tensor(c, "input");
  AT_CHECK(c, x);
  bool train = !at_none(c, "train") && at_bool(c, "train");
  if (train && at_float(c, "p") != 0)
    return at_err(c, KF_ERR_UNSUPPORTED,
                  "dropout in training mode (train=True, p=%g) is random: export the model in eval mode",
                  at_float(c, "p"));
  at_out(c, 0, x);
  return KF_OK;
}

/* _to_copy / to.*: a cast when the dtype changes, else a copy (or the value
 * itself where PyTorch returns an alias). */
enum { TO_COPY, TO_DTYPE, TO_OTHER, TO_TYPE_AS };

static kf_status L_to(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  kf_dtype dt = KF_DTYPE_INVALID;
  bool copy = c->row->k == TO_COPY;
  switch (c->row->k) {
  case TO_COPY:
  case TO_DTYPE:
    dt = at_dtype(c, "dtype");
    if (has_arg(c, "copy")) copy = at_bool(c, "copy");
    break;
  case TO_OTHER:
  case TO_TYPE_AS: {
    kf_value *o = need_tensor(c, "other");
    AT_CHECK(c, o);
    dt = o->type.dtype;
    if (has_arg(c, "copy")) copy = at_bool(c, "copy");
    break;
  }
  }
  if (dt != KF_DTYPE_INVALID && dt != x->type.dtype) return done(c, at_cast(c, x, dt));
  if (copy) return done(c, at_unary(c, KF_OP_COPY, x));
  at_out(c, 0, x);
  return KF_OK;
}

/* copy(self, src): src broadcast into self's shape and dtype. */
static kf_status L_copy_from(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  kf_value *s = need_tensor(c, "src");
  AT_CHECK(c, s);
  kf_value *e = at_expand(c, s, x->type.rank, x->type.shape);
  e = at_cast(c, e, x->type.dtype);
  return done(c, at_unary(c, KF_OP_COPY, e));
}

static kf_status L_fill(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  if (!has_arg(c, "value")) /* zero */
    return done(c, at_full(c, x->type.dtype, x->type.rank, x->type.shape, kf_number_int(0)));
  const kf_aten_arg *va = at_arg(c, "value");
  if (is_number_arg(va))
    return done(c, at_full(c, x->type.dtype, x->type.rank, x->type.shape, at_num(c, "value")));
  kf_value *v = need_tensor(c, "value");
  AT_CHECK(c, v);
  if (v->type.rank != 0) return at_err(c, KF_ERR_INVALID, "value must be a 0-d tensor");
  v = at_cast(c, v, x->type.dtype);
  return done(c, at_unary(c, KF_OP_COPY, at_expand(c, v, x->type.rank, x->type.shape)));
}

/* ---- views --------------------------------------------------------------- */

static kf_status L_view(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int n;
  const int64_t *sz = at_ints(c, has_arg(c, "size") ? "size" : "shape", &n);
  int64_t sh[KF_MAX_RANK];
  if (!view_shape(c, sz, n, kf_type_numel(&x->type), sh)) return c->st;
  return done(c, at_reshape(c, x, n, sh));
}

static kf_status L_view_as(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  kf_value *o = need_tensor(c, "other");
  AT_CHECK(c, o);
  if (kf_type_numel(&o->type) != kf_type_numel(&x->type))
    return at_err(c, KF_ERR_INVALID, "cannot view %lld elements as %lld", (long long)kf_type_numel(&x->type),
                  (long long)kf_type_numel(&o->type));
  return done(c, at_reshape(c, x, o->type.rank, o->type.shape));
}

static kf_status L_flatten(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  const kf_type *t = &x->type;
  if (t->rank == 0) {
    int64_t one = 1;
    return done(c, at_reshape(c, x, 1, &one));
  }
  int64_t s, e;
  if (!at_wrap_dim(c, at_int(c, "start_dim"), t->rank, "start_dim", &s) ||
      !at_wrap_dim(c, at_int(c, "end_dim"), t->rank, "end_dim", &e))
    return c->st;
  if (s > e) return at_err(c, KF_ERR_INVALID, "start_dim %lld comes after end_dim %lld", (long long)s, (long long)e);
  int64_t sh[KF_MAX_RANK];
  int k = 0;
  for (int i = 0; i < s; i++) sh[k++] = t->shape[i];
  sh[k++] = numel_of(t->shape + s, (int)(e - s + 1));
  for (int i = (int)e + 1; i < t->rank; i++) sh[k++] = t->shape[i];
  return done(c, at_reshape(c, x, k, sh));
}

static kf_status L_unflatten(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  const kf_type *t = &x->type;
  int64_t d;
  if (!at_wrap_dim(c, at_int(c, "dim"), t->rank, "dim", &d)) return c->st;
  int n;
  const int64_t *sz = at_ints(c, "sizes", &n);
  if (t->rank == 0) return at_err(c, KF_ERR_INVALID, "cannot unflatten a 0-d tensor");
  if (t->rank - 1 + n > KF_MAX_RANK) return at_err(c, KF_ERR_LIMIT, "result rank exceeds %d", KF_MAX_RANK);
  int64_t mid[KF_MAX_RANK];
  if (!view_shape(c, sz, n, t->shape[d], mid)) return c->st;
  int64_t sh[KF_MAX_RANK];
  int k = 0;
  for (int i = 0; i < d; i++) sh[k++] = t->shape[i];
  for (int i = 0; i < n; i++) sh[k++] = mid[i];
  for (int i = (int)d + 1; i < t->rank; i++) sh[k++] = t->shape[i];
  return done(c, at_reshape(c, x, k, sh));
}

static kf_status L_squeeze(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  const kf_type *t = &x->type;
  bool drop[KF_MAX_RANK] = {0};
  if (!has_arg(c, "dim")) {
    for (int i = 0; i < t->rank; i++) drop[i] = t->shape[i] == 1;
  } else {
    int n;
    int64_t one;
    const int64_t *d;
    if (at_arg(c, "dim")->kind == KF_ARG_INTS) {
      d = at_ints(c, "dim", &n);
    } else {
      one = at_int(c, "dim");
      d = &one;
      n = 1;
    }
    for (int i = 0; i < n; i++) {
      int64_t w;
      if (!at_wrap_dim(c, d[i], t->rank, "dim", &w)) return c->st;
      if (t->rank && t->shape[w] == 1) drop[w] = true;
    }
  }
  int64_t sh[KF_MAX_RANK];
  int k = 0;
  for (int i = 0; i < t->rank; i++)
    if (!drop[i]) sh[k++] = t->shape[i];
  return done(c, at_reshape(c, x, k, sh));
}

static kf_status L_unsqueeze(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  const kf_type *t = &x->type;
  int64_t d;
  if (!at_wrap_dim(c, at_int(c, "dim"), t->rank + 1, "dim", &d)) return c->st;
  if (t->rank + 1 > KF_MAX_RANK) return at_err(c, KF_ERR_LIMIT, "result rank exceeds %d", KF_MAX_RANK);
  int64_t sh[KF_MAX_RANK];
  int k = 0;
  for (int i = 0; i <= t->rank; i++) {
    if (i == d) sh[k++] = 1;
    if (i < t->rank) sh[k++] = t->shape[i];
  }
  return done(c, at_reshape(c, x, k, sh));
}

static kf_status L_permute(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int n;
  const int64_t *d = at_ints(c, "dims", &n);
  if (n != x->type.rank)
    return at_err(c, KF_ERR_INVALID, "dims has %d entries for a tensor of rank %d", n, x->type.rank);
  int64_t w[KF_MAX_RANK];
  bool seen[KF_MAX_RANK] = {0};
  for (int i = 0; i < n; i++) {
    if (!at_wrap_dim(c, d[i], n, "dims", &w[i])) return c->st;
    if (n && seen[w[i]]) return at_err(c, KF_ERR_INVALID, "dims repeats dim %lld", (long long)w[i]);
    if (n) seen[w[i]] = true;
  }
  if (n == 0) {
    at_out(c, 0, x);
    return KF_OK;
  }
  return done(c, at_permute(c, x, w, n));
}

static kf_status transpose2(at_ctx *c, kf_value *x, int64_t d0, int64_t d1) {
  int r = x->type.rank;
  if (r < 2) {
    at_out(c, 0, x);
    return KF_OK;
  }
  int64_t p[KF_MAX_RANK];
  for (int i = 0; i < r; i++) p[i] = i;
  p[d0] = d1;
  p[d1] = d0;
  return done(c, at_permute(c, x, p, r));
}

static kf_status L_transpose(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int64_t d0, d1;
  if (!at_wrap_dim(c, at_int(c, "dim0"), x->type.rank, "dim0", &d0) ||
      !at_wrap_dim(c, at_int(c, "dim1"), x->type.rank, "dim1", &d1))
    return c->st;
  return transpose2(c, x, d0, d1);
}

static kf_status L_t(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  if (x->type.rank > 2) return at_err(c, KF_ERR_INVALID, "t() expects a tensor of rank <= 2, got %d", x->type.rank);
  return transpose2(c, x, 0, 1);
}

static kf_status expand_to(at_ctx *c, kf_value *x, const int64_t *sz, int n) {
  const kf_type *t = &x->type;
  if (n < t->rank)
    return at_err(c, KF_ERR_INVALID, "expand to %d dims, fewer than the tensor's %d", n, t->rank);
  if (n > KF_MAX_RANK) return at_err(c, KF_ERR_LIMIT, "rank %d exceeds %d", n, KF_MAX_RANK);
  int64_t sh[KF_MAX_RANK];
  for (int i = 0; i < n; i++) {
    int j = i - (n - t->rank);
    if (sz[i] == -1) {
      if (j < 0) return at_err(c, KF_ERR_INVALID, "expand: -1 is not allowed in a new leading dim");
      sh[i] = t->shape[j];
    } else if (sz[i] < 0) {
      return at_err(c, KF_ERR_INVALID, "expand: invalid size %lld", (long long)sz[i]);
    } else {
      sh[i] = sz[i];
    }
  }
  return done(c, at_expand(c, x, n, sh));
}

static kf_status L_expand(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int n;
  const int64_t *sz = at_ints(c, "size", &n);
  return expand_to(c, x, sz, n);
}

static kf_status L_expand_as(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  kf_value *o = need_tensor(c, "other");
  AT_CHECK(c, o);
  return expand_to(c, x, o->type.shape, o->type.rank);
}

static kf_value *slice_value(at_ctx *c, kf_value *x, int64_t d, int64_t s, int64_t e, int64_t step) {
  kf_op *op = at_op(c, KF_OP_SLICE, &x, 1, 1, NULL);
  kf_op_set_int(op, "dim", d);
  kf_op_set_int(op, "start", s);
  kf_op_set_int(op, "end", e);
  kf_op_set_int(op, "step", step);
  return at_fin(c, op);
}

static kf_status L_slice(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  const kf_type *t = &x->type;
  if (t->rank == 0) return at_err(c, KF_ERR_INVALID, "slice() cannot be applied to a 0-d tensor");
  int64_t d;
  if (!at_wrap_dim(c, at_int(c, "dim"), t->rank, "dim", &d)) return c->st;
  int64_t size = t->shape[d];
  int64_t s = at_none(c, "start") ? 0 : at_int(c, "start");
  int64_t e = at_none(c, "end") ? INT64_MAX : at_int(c, "end");
  int64_t step = at_int(c, "step");
  if (step <= 0) return at_err(c, KF_ERR_INVALID, "slice step must be positive, got %lld", (long long)step);
  if (s < 0) s += size;
  if (e < 0) e += size;
  if (s < 0) s = 0;
  if (s > size) s = size;
  if (e < s) e = s;
  if (e > size) e = size;
  if (s == 0 && e == size && step == 1) {
    at_out(c, 0, x);
    return KF_OK;
  }
  return done(c, slice_value(c, x, d, s, e, step));
}

/* slice_scatter(self, src, dim, start, end, step) and select_scatter(self,
 * src, dim, index) (row k 1: src gets the selected dim back as size 1) */
static kf_status L_slice_scatter(at_ctx *c) {
  kf_value *x = need_tensor(c, "self"), *src = need_tensor(c, "src");
  AT_CHECK(c, x);
  AT_CHECK(c, src);
  const kf_type *t = &x->type;
  if (t->rank == 0) return at_err(c, KF_ERR_INVALID, "cannot scatter into a 0-d tensor");
  int64_t d;
  if (!at_wrap_dim(c, at_int(c, "dim"), t->rank, "dim", &d)) return c->st;
  int64_t size = t->shape[d], s, e, step;
  if (c->row->k) {
    s = at_int(c, "index");
    if (s < -size || s >= size)
      return at_err(c, KF_ERR_INVALID, "index %lld is out of range for size %lld", (long long)s, (long long)size);
    if (s < 0) s += size;
    e = s + 1;
    step = 1;
    if (src->type.rank != t->rank - 1)
      return at_err(c, KF_ERR_INVALID, "src has rank %d, expected %d", src->type.rank, t->rank - 1);
    int64_t sh[KF_MAX_RANK];
    for (int k = 0, j = 0; k < t->rank; k++) sh[k] = k == d ? 1 : src->type.shape[j++];
    src = at_reshape(c, src, t->rank, sh);
    AT_CHECK(c, src);
  } else {
    s = at_none(c, "start") ? 0 : at_int(c, "start");
    e = at_none(c, "end") ? INT64_MAX : at_int(c, "end");
    step = at_int(c, "step");
    if (step <= 0) return at_err(c, KF_ERR_INVALID, "slice step must be positive, got %lld", (long long)step);
    if (s < 0) s += size;
    if (e < 0) e += size;
    if (s < 0) s = 0;
    if (s > size) s = size;
    if (e < s) e = s;
    if (e > size) e = size;
  }
  int64_t want[KF_MAX_RANK];
  memcpy(want, t->shape, sizeof(int64_t) * (size_t)t->rank);
  want[d] = (e - s + step - 1) / step;
  if (src->type.rank != t->rank || memcmp(src->type.shape, want, sizeof(int64_t) * (size_t)t->rank) != 0) {
    char a[200], b[200];
    shape_str(src->type.shape, src->type.rank, a, sizeof a);
    shape_str(want, t->rank, b, sizeof b);
    return at_err(c, KF_ERR_INVALID, "src has shape %s, the slice %s", a, b);
  }
  kf_value *ops[2] = {x, src};
  kf_op *op = at_op(c, KF_OP_SLICE_SCATTER, ops, 2, 1, NULL);
  kf_op_set_int(op, "dim", d);
  kf_op_set_int(op, "start", s);
  kf_op_set_int(op, "end", e);
  kf_op_set_int(op, "step", step);
  return done(c, at_fin(c, op));
}

static kf_status L_narrow(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  const kf_type *t = &x->type;
  if (t->rank == 0) return at_err(c, KF_ERR_INVALID, "narrow() cannot be applied to a 0-d tensor");
  int64_t d;
  if (!at_wrap_dim(c, at_int(c, "dim"), t->rank, "dim", &d)) return c->st;
  int64_t s = at_int(c, "start"), len = at_int(c, "length");
  if (s < 0) s += t->shape[d];
  if (s < 0 || len < 0 || s + len > t->shape[d])
    return at_err(c, KF_ERR_INVALID, "narrow [%lld, +%lld) is out of range for size %lld", (long long)s,
                  (long long)len, (long long)t->shape[d]);
  return done(c, slice_value(c, x, d, s, s + len, 1));
}

static kf_status L_select(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  const kf_type *t = &x->type;
  if (t->rank == 0) return at_err(c, KF_ERR_INVALID, "select() cannot be applied to a 0-d tensor");
  int64_t d;
  if (!at_wrap_dim(c, at_int(c, "dim"), t->rank, "dim", &d)) return c->st;
  int64_t i = at_int(c, "index");
  if (i < -t->shape[d] || i >= t->shape[d])
    return at_err(c, KF_ERR_INVALID, "index %lld is out of range for size %lld", (long long)i,
                  (long long)t->shape[d]);
  if (i < 0) i += t->shape[d];
  kf_op *op = at_op(c, KF_OP_SELECT, &x, 1, 1, NULL);
  kf_op_set_int(op, "dim", d);
  kf_op_set_int(op, "index", i);
  return done(c, at_fin(c, op));
}

static kf_status L_as_strided(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int n, m;
  const int64_t *sz = at_ints(c, "size", &n);
  const int64_t *st = at_ints(c, "stride", &m);
  if (n != m) return at_err(c, KF_ERR_INVALID, "size has %d entries, stride %d", n, m);
  if (n > KF_MAX_RANK) return at_err(c, KF_ERR_LIMIT, "rank %d exceeds %d", n, KF_MAX_RANK);
  kf_op *op = at_op(c, KF_OP_AS_STRIDED, &x, 1, 1, NULL);
  kf_op_set_ints(op, "size", sz, n);
  kf_op_set_ints(op, "stride", st, n);
  kf_op_set_int(op, "offset", at_none(c, "storage_offset") ? x->type.offset : at_int(c, "storage_offset"));
  return done(c, at_fin(c, op));
}

static kf_status L_unfold(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int64_t d;
  if (!at_wrap_dim(c, at_int(c, "dimension"), x->type.rank, "dimension", &d)) return c->st;
  kf_op *op = at_op(c, KF_OP_UNFOLD, &x, 1, 1, NULL);
  kf_op_set_int(op, "dim", d);
  kf_op_set_int(op, "size", at_int(c, "size"));
  kf_op_set_int(op, "step", at_int(c, "step"));
  return done(c, at_fin(c, op));
}

/* ---- joining and splitting ------------------------------------------------ */

static bool legacy_empty(const kf_value *v) {
  return v->type.rank == 1 && v->type.shape[0] == 0;
}

static kf_value *cat_values(at_ctx *c, kf_value **xs, int n, int64_t dim_arg) {
  const kf_value *ref = NULL;
  for (int i = 0; i < n; i++) {
    if (xs[i]->type.kind != KF_TYPE_TENSOR) {
      at_err(c, KF_ERR_INVALID, "entry %d of tensors is not a tensor", i);
      return NULL;
    }
    if (!ref && !legacy_empty(xs[i])) ref = xs[i];
  }
  if (n == 0) {
    at_err(c, KF_ERR_INVALID, "cat of an empty list");
    return NULL;
  }
  int64_t d = 0;
  if (!at_wrap_dim(c, dim_arg, ref ? ref->type.rank : 1, "dim", &d)) return NULL;
  if (n == 1) return at_unary(c, KF_OP_COPY, xs[0]); /* cat makes a new tensor */
  kf_op *op = at_op(c, KF_OP_CAT, xs, n, 1, NULL);
  kf_op_set_int(op, "dim", d);
  return at_fin(c, op);
}

static kf_status L_cat(at_ctx *c) {
  int n;
  kf_value **xs = at_tensors(c, "tensors", &n);
  return done(c, cat_values(c, xs, n, at_int(c, "dim")));
}

static kf_status L_stack(at_ctx *c) {
  int n;
  kf_value **xs = at_tensors(c, "tensors", &n);
  if (n == 0) return at_err(c, KF_ERR_INVALID, "stack of an empty list");
  const kf_type *t0 = &xs[0]->type;
  int64_t d;
  if (!at_wrap_dim(c, at_int(c, "dim"), t0->rank + 1, "dim", &d)) return c->st;
  if (t0->rank + 1 > KF_MAX_RANK) return at_err(c, KF_ERR_LIMIT, "result rank exceeds %d", KF_MAX_RANK);
  kf_value **us = kf_graph_alloc(c->g, sizeof(kf_value *) * (size_t)n);
  for (int i = 0; i < n; i++) {
    const kf_type *t = &xs[i]->type;
    if (t->kind != KF_TYPE_TENSOR || t->rank != t0->rank ||
        memcmp(t->shape, t0->shape, sizeof(int64_t) * (size_t)t0->rank) != 0)
      return at_err(c, KF_ERR_INVALID, "stack expects tensors of equal shape; entry %d differs", i);
    int64_t sh[KF_MAX_RANK];
    int k = 0;
    for (int j = 0; j <= t->rank; j++) {
      if (j == d) sh[k++] = 1;
      if (j < t->rank) sh[k++] = t->shape[j];
    }
    us[i] = at_reshape(c, xs[i], k, sh);
    AT_CHECK(c, us[i]);
  }
  if (n == 1) return done(c, us[0]);
  kf_op *op = at_op(c, KF_OP_CAT, us, n, 1, NULL);
  kf_op_set_int(op, "dim", d);
  return done(c, at_fin(c, op));
}

static kf_status emit_split(at_ctx *c, kf_value *x, int64_t d, const int64_t *sizes, int n,
                            bool drop_dim) {
  if (c->n_outs && n != c->n_outs)
    return at_err(c, KF_ERR_INVALID, "the node lists %d results, the split gives %d", c->n_outs, n);
  if (n == 0) return at_err(c, KF_ERR_INVALID, "split into no pieces");
  kf_op *op = at_op(c, KF_OP_SPLIT, &x, 1, n, NULL);
  kf_op_set_int(op, "dim", d);
  kf_op_set_ints(op, "sizes", sizes, n);
  AT_CHECK(c, at_fin(c, op));
  for (int i = 0; i < n; i++) {
    kf_value *v = op->results[i];
    if (drop_dim) {
      int64_t sh[KF_MAX_RANK];
      int k = 0;
      for (int j = 0; j < x->type.rank; j++)
        if (j != d) sh[k++] = x->type.shape[j];
      v = at_reshape(c, v, k, sh);
      AT_CHECK(c, v);
    }
    at_out(c, i, v);
  }
  return KF_OK;
}

enum { SPLIT_SIZE, SPLIT_SIZES, SPLIT_CHUNK, SPLIT_UNBIND };

static kf_status L_split(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  const kf_type *t = &x->type;
  if (t->rank == 0) return at_err(c, KF_ERR_INVALID, "cannot split a 0-d tensor");
  int64_t d;
  if (!at_wrap_dim(c, at_int(c, "dim"), t->rank, "dim", &d)) return c->st;
  int64_t len = t->shape[d];
  int n = 0;
  int64_t *sizes = NULL;
  if (c->row->k == SPLIT_SIZES) {
    const int64_t *sz = at_ints(c, has_arg(c, "split_sizes") ? "split_sizes" : "split_size", &n);
    return emit_split(c, x, d, sz, n, false);
  }
  int64_t piece;
  if (c->row->k == SPLIT_UNBIND) {
    piece = 1;
  } else if (c->row->k == SPLIT_CHUNK) {
    int64_t chunks = at_int(c, "chunks");
    if (chunks <= 0) return at_err(c, KF_ERR_INVALID, "chunks must be positive, got %lld", (long long)chunks);
    piece = (len + chunks - 1) / chunks;
  } else {
    piece = at_int(c, "split_size");
    if (piece < 0 || (piece == 0 && len != 0))
      return at_err(c, KF_ERR_INVALID, "split_size must be positive, got %lld", (long long)piece);
  }
  if (c->row->k == SPLIT_UNBIND && len == 0) return at_err(c, KF_ERR_INVALID, "unbind of an empty dim");
  int64_t count = piece == 0 ? 1 : (len + piece - 1) / piece;
  if (count == 0) count = 1; /* an empty dim splits into one empty piece */
  if (count > 65536) return at_err(c, KF_ERR_LIMIT, "split into %lld pieces", (long long)count);
  n = (int)count;
  sizes = kf_graph_alloc(c->g, sizeof(int64_t) * (size_t)n);
  for (int i = 0; i < n; i++) {
    int64_t rest = len - (int64_t)i * piece;
    sizes[i] = rest < piece ? rest : piece;
  }
  return emit_split(c, x, d, sizes, n, c->row->k == SPLIT_UNBIND);
}

static kf_status L_constant_pad(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int n;
  const int64_t *p = at_ints(c, "pad", &n);
  if (n % 2 || n / 2 > x->type.rank)
    return at_err(c, KF_ERR_INVALID, "pad has %d entries for a tensor of rank %d", n, x->type.rank);
  kf_number v;
  if (has_arg(c, "mode")) {
    const char *mode = at_str(c, "mode");
    if (!mode || strcmp(mode, "constant"))
      return at_err(c, KF_ERR_UNSUPPORTED, "pad mode '%s' is not supported (only 'constant')",
                    mode ? mode : "None");
    v = at_none(c, "value") ? kf_number_int(0) : kf_number_float(at_float(c, "value"));
  } else {
    v = at_num(c, "value");
  }
  bool all_zero = true;
  for (int i = 0; i < n; i++) all_zero &= p[i] == 0;
  if (all_zero) return done(c, at_unary(c, KF_OP_COPY, x));
  kf_op *op = at_op(c, KF_OP_PAD, &x, 1, 1, NULL);
  kf_op_set_ints(op, "pad", p, n);
  kf_op_set_number(op, "value", v);
  return done(c, at_fin(c, op));
}

static kf_status L_index(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int n;
  kf_value **idx = at_tensors(c, "indices", &n);
  if (n > x->type.rank)
    return at_err(c, KF_ERR_INVALID, "%d indices for a tensor of rank %d", n, x->type.rank);
  kf_value *ops[KF_MAX_RANK + 1];
  int64_t dims[KF_MAX_RANK];
  int k = 0;
  ops[0] = x;
  for (int i = 0; i < n; i++) {
    if (!idx[i]) continue;
    kf_dtype dt = idx[i]->type.dtype;
    if (dt == KF_DTYPE_BOOL || dt == KF_DTYPE_U8)
      return at_err(c, KF_ERR_UNSUPPORTED,
                    "indexing with a boolean mask gives a data-dependent shape; not supported");
    ops[1 + k] = idx[i];
    dims[k++] = i;
  }
  if (k == 0) {
    at_out(c, 0, x);
    return KF_OK;
  }
  kf_op *op = at_op(c, KF_OP_INDEX, ops, k + 1, 1, NULL);
  kf_op_set_ints(op, "dims", dims, k);
  return done(c, at_fin(c, op));
}

static kf_status L_index_select(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  kf_value *i = need_tensor(c, "index");
  AT_CHECK(c, i);
  int64_t d;
  if (!at_wrap_dim(c, at_int(c, "dim"), x->type.rank, "dim", &d)) return c->st;
  return done(c, at_index_select(c, x, d, i));
}

static kf_status L_gather(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  kf_value *i = need_tensor(c, "index");
  AT_CHECK(c, i);
  int64_t d;
  if (!at_wrap_dim(c, at_int(c, "dim"), x->type.rank, "dim", &d)) return c->st;
  kf_value *ops[2] = {x, i};
  kf_op *op = at_op(c, KF_OP_GATHER, ops, 2, 1, NULL);
  kf_op_set_int(op, "dim", d);
  return done(c, at_fin(c, op));
}

static kf_status L_embedding(at_ctx *c) {
  kf_value *w = need_tensor(c, "weight");
  AT_CHECK(c, w);
  kf_value *i = need_tensor(c, "indices");
  AT_CHECK(c, i);
  kf_value *ops[2] = {w, i};
  return done(c, at_fin(c, at_op(c, KF_OP_EMBEDDING, ops, 2, 1, NULL)));
}

/* repeat: view as [1, s0, 1, s1, ...], expand to [r0, s0, r1, s1, ...] and
 * merge each pair. */
static kf_status L_repeat(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int n;
  const int64_t *r = at_ints(c, "repeats", &n);
  const kf_type *t = &x->type;
  if (n < t->rank)
    return at_err(c, KF_ERR_INVALID, "repeats has %d entries, fewer than the tensor's %d dims", n, t->rank);
  if (2 * n > KF_MAX_RANK) return at_err(c, KF_ERR_LIMIT, "repeat over %d dims exceeds kfuse's rank limit", n);
  int64_t s[KF_MAX_RANK], a[KF_MAX_RANK], e[KF_MAX_RANK], out[KF_MAX_RANK];
  for (int i = 0; i < n; i++) {
    int j = i - (n - t->rank);
    s[i] = j >= 0 ? t->shape[j] : 1;
    if (r[i] < 0) return at_err(c, KF_ERR_INVALID, "negative repeat count %lld", (long long)r[i]);
    a[2 * i] = 1;
    a[2 * i + 1] = s[i];
    e[2 * i] = r[i];
    e[2 * i + 1] = s[i];
    if (__builtin_mul_overflow(r[i], s[i], &out[i]) || out[i] > AT_LIMIT)
      return at_err(c, KF_ERR_LIMIT, "repeat makes a dim of more than 2^50 elements");
  }
  kf_value *v = at_reshape(c, x, 2 * n, a);
  v = at_expand(c, v, 2 * n, e);
  return done(c, at_reshape(c, v, n, out));
}

/* repeat_interleave with an int count: each element r times in a row along
 * dim (the flattened tensor when dim is None): view as [.., s, 1, ..],
 * expand to [.., s, r, ..] and merge the pair (GPT-J's and CodeGen's
 * rotary embedding, grouped-query attention's key/value heads). */
static kf_status L_repeat_interleave(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int64_t r = at_int(c, "repeats");
  if (r < 0) return at_err(c, KF_ERR_INVALID, "negative repeat count %lld", (long long)r);
  if (at_none(c, "dim")) { /* flattened */
    int64_t numel = 1;
    for (int i = 0; i < x->type.rank; i++) numel *= x->type.shape[i];
    x = at_reshape(c, x, 1, &numel);
    AT_CHECK(c, x);
  }
  const kf_type *t = &x->type;
  int64_t d = 0;
  if (!at_none(c, "dim") && !at_wrap_dim(c, at_int(c, "dim"), t->rank, "dim", &d)) return c->st;
  if (t->rank + 1 > KF_MAX_RANK) return at_err(c, KF_ERR_LIMIT, "repeat_interleave of a %d-d tensor exceeds kfuse's rank limit", t->rank);
  int64_t a[KF_MAX_RANK], e[KF_MAX_RANK], out[KF_MAX_RANK];
  for (int i = 0, j = 0; i < t->rank; i++) {
    a[j] = e[j] = out[i] = t->shape[i];
    j++;
    if (i == d) {
      a[j] = 1;
      e[j++] = r;
      if (__builtin_mul_overflow(r, t->shape[i], &out[i]) || out[i] > AT_LIMIT)
        return at_err(c, KF_ERR_LIMIT, "repeat_interleave makes a dim of more than 2^50 elements");
    }
  }
  if (!at_none(c, "output_size") && at_int(c, "output_size") != out[d])
    return at_err(c, KF_ERR_INVALID, "output_size %lld, but the result has %lld along dim %lld",
                  (long long)at_int(c, "output_size"), (long long)out[d], (long long)d);
  kf_value *v = at_reshape(c, x, t->rank + 1, a);
  v = at_expand(c, v, t->rank + 1, e);
  return done(c, at_reshape(c, v, t->rank, out));
}

static kf_status L_flip(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int n, nd;
  const int64_t *d = at_ints(c, "dims", &n);
  int64_t dims[KF_MAX_RANK];
  if (!at_dims(c, d, n, x->type.rank, false, "dims", dims, &nd)) return c->st;
  kf_value *v = x;
  for (int i = 0; i < nd; i++) {
    int64_t len = x->type.shape[dims[i]];
    if (len <= 1) continue;
    kf_value *idx = at_arange(c, kf_number_int(len - 1), kf_number_int(-1), kf_number_int(-1), KF_DTYPE_I64);
    v = at_index_select(c, v, dims[i], idx);
    AT_CHECK(c, v);
  }
  if (v == x) v = at_unary(c, KF_OP_COPY, x);
  return done(c, v);
}

/* roll: per (shift, dim), the last `shift` elements first: a cat of two
 * slices (what torch.export's core decomposition spells with an
 * index_select of a shifted arange); no dims: over the flattened tensor. */
static kf_status L_roll(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  const kf_type *t = &x->type;
  int ns, nd;
  const int64_t *shifts = at_ints(c, "shifts", &ns);
  const int64_t *dims = at_ints(c, "dims", &nd);
  bool flat = nd == 0;
  if (flat ? ns != 1 : ns != nd)
    return at_err(c, KF_ERR_INVALID, "shifts has %d entries for %d dims", ns, flat ? 1 : nd);
  kf_value *v = x;
  int64_t n = kf_type_numel(t);
  if (flat) v = at_reshape(c, x, 1, &n);
  AT_CHECK(c, v);
  for (int i = 0; i < ns; i++) {
    int64_t d = 0;
    if (!flat && !at_wrap_dim(c, dims[i], t->rank, "dims", &d)) return c->st;
    int64_t len = v->type.shape[d];
    if (len == 0) continue;
    int64_t s = ((shifts[i] % len) + len) % len;
    if (s == 0) continue;
    kf_value *parts[2] = {slice_value(c, v, d, len - s, len, 1), slice_value(c, v, d, 0, len - s, 1)};
    AT_CHECK(c, parts[0]);
    AT_CHECK(c, parts[1]);
    v = cat_values(c, parts, 2, d);
    AT_CHECK(c, v);
  }
  if (flat) v = at_reshape(c, v, t->rank, t->shape);
  AT_CHECK(c, v);
  if (v == x) v = at_unary(c, KF_OP_COPY, x);
  return done(c, v);
}

/* diff: prepend and append joined along dim, then n times the slice from 1
 * minus the slice to -1 (bool: their inequality, torch's logical_xor);
 * transformers' causal-mask helpers use it on position ids. */
static kf_status L_diff(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  const kf_type *t = &x->type;
  if (t->rank == 0) return at_err(c, KF_ERR_INVALID, "diff expects input to be at least one-dimensional");
  int64_t n = at_int(c, "n"), d;
  if (n < 0) return at_err(c, KF_ERR_INVALID, "order must be non-negative but got %lld", (long long)n);
  if (!at_wrap_dim(c, at_int(c, "dim"), t->rank, "dim", &d)) return c->st;
  kf_value *parts[3];
  int np = 0;
  const char *names[3] = {"prepend", NULL, "append"};
  for (int i = 0; i < 3; i++) {
    kf_value *p = names[i] ? at_tensor(c, names[i]) : x;
    if (c->st) return c->st;
    if (!p) continue;
    if (p->type.rank != t->rank || p->type.dtype != t->dtype)
      return at_err(c, KF_ERR_UNSUPPORTED, "%s must have the input's rank and dtype", names[i]);
    for (int k = 0; k < t->rank; k++)
      if (k != d && p->type.shape[k] != t->shape[k])
        return at_err(c, KF_ERR_INVALID, "%s's shape differs from the input's outside dim", names[i]);
    parts[np++] = p;
  }
  kf_value *v = np > 1 ? cat_values(c, parts, np, d) : x;
  AT_CHECK(c, v);
  bool is_bool = t->dtype == KF_DTYPE_BOOL;
  for (int64_t i = 0; i < n; i++) {
    int64_t len = v->type.shape[d];
    if (len == 0) break;
    kf_value *hi = slice_value(c, v, d, 1, len, 1), *lo = slice_value(c, v, d, 0, len - 1, 1);
    AT_CHECK(c, hi);
    AT_CHECK(c, lo);
    v = at_binary(c, is_bool ? KF_OP_NE : KF_OP_SUB, hi, lo);
    AT_CHECK(c, v);
  }
  if (v == x) v = at_unary(c, KF_OP_COPY, x);
  return done(c, v);
}

/* tril/triu: keep where (col - row) <= / >= diagonal, else zero. */
static kf_status L_tri(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  const kf_type *t = &x->type;
  if (t->rank < 2) return at_err(c, KF_ERR_INVALID, "needs a tensor of rank >= 2, got %d", t->rank);
  int64_t rows = t->shape[t->rank - 2], cols = t->shape[t->rank - 1];
  kf_value *r = at_arange(c, kf_number_int(0), kf_number_int(rows), kf_number_int(1), KF_DTYPE_I64);
  kf_value *k = at_arange(c, kf_number_int(0), kf_number_int(cols), kf_number_int(1), KF_DTYPE_I64);
  int64_t rs[2] = {rows, 1}, ks[2] = {1, cols};
  r = at_reshape(c, r, 2, rs);
  k = at_reshape(c, k, 2, ks);
  kf_value *diff = at_binary(c, KF_OP_SUB, k, r);
  kf_value *diag = at_scalar(c, kf_number_int(at_int(c, "diagonal")));
  kf_value *keep = at_binary(c, c->row->k, diff, diag);
  kf_value *zero = at_scalar(c, at_number_of_kind(t->dtype, 0));
  return done(c, at_where(c, keep, x, zero));
}

/* ---- factories ------------------------------------------------------------ */

static kf_dtype dtype_or(at_ctx *c, kf_dtype dflt) {
  kf_dtype t = has_arg(c, "dtype") ? at_dtype(c, "dtype") : KF_DTYPE_INVALID;
  return t != KF_DTYPE_INVALID ? t : dflt;
}

static kf_dtype dtype_of_number(kf_number n) {
  return n.kind == KF_NUM_FLOAT ? KF_DTYPE_F32 : n.kind == KF_NUM_INT ? KF_DTYPE_I64 : KF_DTYPE_BOOL;
}

enum { FILL_ZERO, FILL_ONE, FILL_VALUE };

static kf_number fill_number(at_ctx *c) {
  switch (c->row->k) {
  case FILL_ZERO: return kf_number_int(0);
  case FILL_ONE: return kf_number_int(1);
  default: return at_num(c, has_arg(c, "fill_value") ? "fill_value" : "s");
  }
}

/* full, zeros, ones, empty, empty_strided, scalar_tensor */
static kf_status L_full(at_ctx *c) {
  kf_number v = fill_number(c);
  int n = 0;
  const int64_t *sz = has_arg(c, "size") ? at_ints(c, "size", &n) : NULL;
  kf_dtype dflt = c->row->k == FILL_VALUE && has_arg(c, "fill_value") ? dtype_of_number(v) : KF_DTYPE_F32;
  if (n > KF_MAX_RANK) return at_err(c, KF_ERR_LIMIT, "rank %d exceeds %d", n, KF_MAX_RANK);
  return done(c, at_full(c, dtype_or(c, dflt), n, sz, v));
}

/* *_like and new_*: dtype (and shape, for *_like) from self. */
static kf_status L_full_like(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  kf_number v = fill_number(c);
  int n = x->type.rank;
  const int64_t *sz = x->type.shape;
  if (has_arg(c, "size")) sz = at_ints(c, "size", &n);
  if (n > KF_MAX_RANK) return at_err(c, KF_ERR_LIMIT, "rank %d exceeds %d", n, KF_MAX_RANK);
  return done(c, at_full(c, dtype_or(c, x->type.dtype), n, sz, v));
}

static kf_status L_arange(at_ctx *c) {
  kf_number start = has_arg(c, "start") ? at_num(c, "start") : kf_number_int(0);
  kf_number end = at_num(c, "end");
  kf_number step = has_arg(c, "step") ? at_num(c, "step") : kf_number_int(1);
  bool any_float = start.kind == KF_NUM_FLOAT || end.kind == KF_NUM_FLOAT || step.kind == KF_NUM_FLOAT;
  kf_dtype dt = dtype_or(c, any_float ? KF_DTYPE_F32 : KF_DTYPE_I64);
  double s = kf_number_as_double(step), a = kf_number_as_double(start), b = kf_number_as_double(end);
  if (s == 0) return at_err(c, KF_ERR_INVALID, "arange step must be non-zero");
  if ((s > 0 && b < a) || (s < 0 && b > a))
    return at_err(c, KF_ERR_INVALID, "arange bounds are inconsistent with the step sign");
  return done(c, at_arange(c, start, end, step, dt));
}

/* ---- reductions ----------------------------------------------------------- */

/* The dim argument of a reduction: int, int list or None (all dims). */
static bool reduce_dims(at_ctx *c, kf_value *x, const char *name, int64_t *dims, int *nd) {
  if (!has_arg(c, name) || at_none(c, name))
    return at_dims(c, NULL, 0, x->type.rank, true, name, dims, nd);
  const kf_aten_arg *a = at_arg(c, name);
  if (a->kind == KF_ARG_INTS) return at_dims(c, a->ints, a->n, x->type.rank, true, name, dims, nd);
  int64_t one = at_int(c, name);
  return at_dims(c, &one, 1, x->type.rank, false, name, dims, nd);
}

static bool keepdim_of(at_ctx *c) { return has_arg(c, "keepdim") && at_bool(c, "keepdim"); }

/* sum, mean, prod, amax, amin, any, all (and max/min over everything). */
static kf_status L_reduce(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int64_t dims[KF_MAX_RANK];
  int nd;
  if (!reduce_dims(c, x, "dim", dims, &nd)) return c->st;
  kf_dtype dt = has_arg(c, "dtype") ? at_dtype(c, "dtype") : KF_DTYPE_INVALID;
  kf_opcode code = (kf_opcode)c->row->k;
  if ((code == KF_OP_AMAX || code == KF_OP_AMIN) && kf_type_numel(&x->type) == 0)
    return at_err(c, KF_ERR_INVALID, "max/min of an empty tensor");
  return done(c, at_reduce(c, code, x, dims, nd, keepdim_of(c), dt));
}

static kf_status L_max_dim(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int64_t d;
  if (!at_wrap_dim(c, at_int(c, "dim"), x->type.rank, "dim", &d)) return c->st;
  kf_op *op = at_op(c, (kf_opcode)c->row->k, &x, 1, 2, NULL);
  kf_op_set_int(op, "dim", d);
  kf_op_set_bool(op, "keepdim", at_bool(c, "keepdim"));
  AT_CHECK(c, at_fin(c, op));
  at_out(c, 0, op->results[0]);
  at_out(c, 1, op->results[1]);
  return KF_OK;
}

static kf_status L_argmax(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  kf_op *op = at_op(c, (kf_opcode)c->row->k, &x, 1, 1, NULL);
  if (!at_none(c, "dim")) {
    int64_t d;
    if (!at_wrap_dim(c, at_int(c, "dim"), x->type.rank, "dim", &d)) return c->st;
    kf_op_set_int(op, "dim", d);
  }
  kf_op_set_bool(op, "keepdim", at_bool(c, "keepdim"));
  return done(c, at_fin(c, op));
}

/* var/std/var_mean in their three spellings of the correction. */
enum { VAR_VAR = 1, VAR_STD = 2, VAR_MEAN = 4 };

static kf_status L_var(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int64_t dims[KF_MAX_RANK];
  int nd;
  if (!reduce_dims(c, x, "dim", dims, &nd)) return c->st;
  kf_number corr = kf_number_int(1);
  if (has_arg(c, "correction")) {
    if (!at_none(c, "correction")) corr = at_num(c, "correction");
  } else if (has_arg(c, "unbiased")) {
    corr = kf_number_int(at_bool(c, "unbiased") ? 1 : 0);
  }
  bool keep = keepdim_of(c);
  kf_type t;
  memset(&t, 0, sizeof t);
  kf_op *op = at_op(c, KF_OP_VAR, &x, 1, 1, &t);
  kf_op_set_ints(op, "dims", dims, nd);
  kf_op_set_bool(op, "keepdim", keep);
  kf_op_set_number(op, "correction", corr);
  kf_value *v = at_fin(c, op);
  AT_CHECK(c, v);
  if (c->row->k & VAR_STD) v = at_unary(c, KF_OP_SQRT, v);
  AT_CHECK(c, v);
  at_out(c, 0, v);
  if (c->row->k & VAR_MEAN) {
    kf_value *m = at_reduce(c, KF_OP_MEAN, x, dims, nd, keep, KF_DTYPE_INVALID);
    AT_CHECK(c, m);
    at_out(c, 1, m);
  }
  return KF_OK;
}

static kf_status L_norm(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int64_t dims[KF_MAX_RANK];
  int nd;
  if (!reduce_dims(c, x, "dim", dims, &nd)) return c->st;
  const char *pname = has_arg(c, "ord") ? "ord" : "p";
  kf_number ord = at_none(c, pname) ? kf_number_int(2) : at_num(c, pname);
  kf_dtype dt = has_arg(c, "dtype") ? at_dtype(c, "dtype") : KF_DTYPE_INVALID;
  if (dt != KF_DTYPE_INVALID) x = at_cast(c, x, dt);
  AT_CHECK(c, x);
  kf_op *op = at_op(c, KF_OP_NORM, &x, 1, 1, NULL);
  kf_op_set_ints(op, "dims", dims, nd);
  kf_op_set_bool(op, "keepdim", keepdim_of(c));
  kf_op_set_number(op, "ord", ord);
  return done(c, at_fin(c, op));
}

/* cumsum, cumprod (row k) */
static kf_status L_scan(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int64_t d;
  if (!at_wrap_dim(c, at_int(c, "dim"), x->type.rank, "dim", &d)) return c->st;
  kf_type t;
  memset(&t, 0, sizeof t);
  t.dtype = at_dtype(c, "dtype");
  kf_op *op = at_op(c, (kf_opcode)c->row->k, &x, 1, 1, &t);
  kf_op_set_int(op, "dim", d);
  return done(c, at_fin(c, op));
}

/* ---- normalisations ---------------------------------------------------------- */

static kf_status L_softmax(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int64_t d;
  if (!at_wrap_dim(c, at_int(c, "dim"), x->type.rank, "dim", &d)) return c->st;
  if (has_arg(c, "half_to_float")) {
    if (at_bool(c, "half_to_float")) {
      if (x->type.dtype != KF_DTYPE_F16 && x->type.dtype != KF_DTYPE_BF16)
        return at_err(c, KF_ERR_INVALID, "half_to_float needs a half-precision input");
      x = at_cast(c, x, KF_DTYPE_F32);
    }
  } else {
    x = at_cast(c, x, at_dtype(c, "dtype"));
  }
  AT_CHECK(c, x);
  kf_op *op = at_op(c, (kf_opcode)c->row->k, &x, 1, 1, NULL);
  kf_op_set_int(op, "dim", d);
  return done(c, at_fin(c, op));
}

/* The statistics results of native_layer_norm/native_group_norm: PyTorch's
 * CPU kernels keep them in the input's dtype for f16/bf16 inputs, CUDA's in
 * f32; the archive says which, so follow it with a cast. */
static kf_value *stats_dtype(at_ctx *c, int i, kf_value *v) {
  const kf_aten_call *call = c->call;
  if (!v || i >= call->n_outs || !call->out_types || (call->out_known && !call->out_known[i])) return v;
  kf_dtype want = call->out_types[i].dtype;
  if (!kf_dtype_is_float(want) || want == v->type.dtype) return v;
  return at_cast(c, v, want);
}

static kf_status L_layer_norm(at_ctx *c) {
  kf_value *x = need_tensor(c, "input");
  AT_CHECK(c, x);
  int n;
  const int64_t *ns = at_ints(c, "normalized_shape", &n);
  const kf_type *t = &x->type;
  if (n < 1 || n > t->rank)
    return at_err(c, KF_ERR_INVALID, "normalized_shape has %d dims for an input of rank %d", n, t->rank);
  for (int i = 0; i < n; i++)
    if (ns[i] != t->shape[t->rank - n + i]) {
      char a[200], b[200];
      shape_str(ns, n, a, sizeof a);
      shape_str(t->shape, t->rank, b, sizeof b);
      return at_err(c, KF_ERR_INVALID, "normalized_shape %s does not end the input shape %s", a, b);
    }
  kf_value *ops[3] = {x, at_tensor(c, "weight"), at_tensor(c, "bias")};
  if (c->st) return c->st;
  kf_op *op = at_op(c, KF_OP_LAYER_NORM, ops, 3, 3, NULL);
  kf_op_set_int(op, "normalized_ndim", n);
  kf_op_set_float(op, "eps", at_float(c, "eps"));
  AT_CHECK(c, at_fin(c, op));
  at_out(c, 0, op->results[0]);
  for (int i = 1; i < 3 && i < c->n_outs; i++) {
    kf_value *v = stats_dtype(c, i, op->results[i]);
    AT_CHECK(c, v);
    at_out(c, i, v);
  }
  return KF_OK;
}

static kf_status L_group_norm(at_ctx *c) {
  kf_value *x = need_tensor(c, "input");
  AT_CHECK(c, x);
  const kf_type *t = &x->type;
  int64_t groups = has_arg(c, "group") ? at_int(c, "group") : at_int(c, "num_groups");
  if (has_arg(c, "N")) {
    int64_t hw = t->rank >= 2 ? numel_of(t->shape + 2, t->rank - 2) : 0;
    if (t->rank < 2 || at_int(c, "N") != t->shape[0] || at_int(c, "C") != t->shape[1] || at_int(c, "HxW") != hw)
      return at_err(c, KF_ERR_INVALID, "N, C, HxW (%lld, %lld, %lld) do not match the input",
                    (long long)at_int(c, "N"), (long long)at_int(c, "C"), (long long)at_int(c, "HxW"));
  }
  kf_value *ops[3] = {x, at_tensor(c, "weight"), at_tensor(c, "bias")};
  if (c->st) return c->st;
  kf_op *op = at_op(c, KF_OP_GROUP_NORM, ops, 3, 3, NULL);
  kf_op_set_int(op, "groups", groups);
  kf_op_set_float(op, "eps", at_float(c, "eps"));
  AT_CHECK(c, at_fin(c, op));
  at_out(c, 0, op->results[0]);
  for (int i = 1; i < 3 && i < c->n_outs; i++) {
    kf_value *v = stats_dtype(c, i, op->results[i]);
    AT_CHECK(c, v);
    at_out(c, i, v);
  }
  return KF_OK;
}

/* Every batch-norm spelling: running statistics are used unless the call
 * trains or has none. The saved mean/rstd results are not produced. */
static kf_status L_batch_norm(at_ctx *c) {
  kf_value *x = need_tensor(c, "input");
  AT_CHECK(c, x);
  bool training = has_arg(c, "training") && at_bool(c, "training");
  kf_value *mean = has_arg(c, "running_mean") ? at_tensor(c, "running_mean") : NULL;
  kf_value *var = has_arg(c, "running_var") ? at_tensor(c, "running_var") : NULL;
  if (c->st) return c->st;
  if (training || !mean || !var) mean = var = NULL;
  kf_value *ops[5] = {x, at_tensor(c, "weight"), at_tensor(c, "bias"), mean, var};
  if (c->st) return c->st;
  kf_op *op = at_op(c, KF_OP_BATCH_NORM, ops, 5, 1, NULL);
  kf_op_set_float(op, "eps", at_float(c, "eps"));
  return done(c, at_fin(c, op));
}

/* instance_norm: group_norm with one group per channel, or batch_norm over
 * the running statistics when use_input_stats is false. */
static kf_status L_instance_norm(at_ctx *c) {
  kf_value *x = need_tensor(c, "input");
  AT_CHECK(c, x);
  if (x->type.rank < 3) return at_err(c, KF_ERR_INVALID, "input must be [N, C, spatial...], has rank %d", x->type.rank);
  kf_value *w = at_tensor(c, "weight"), *b = at_tensor(c, "bias");
  if (c->st) return c->st;
  if (!at_bool(c, "use_input_stats")) {
    kf_value *mean = at_tensor(c, "running_mean"), *var = at_tensor(c, "running_var");
    if (c->st) return c->st;
    if (!mean || !var) return at_err(c, KF_ERR_INVALID, "use_input_stats=False needs running statistics");
    kf_value *ops[5] = {x, w, b, mean, var};
    kf_op *op = at_op(c, KF_OP_BATCH_NORM, ops, 5, 1, NULL);
    kf_op_set_float(op, "eps", at_float(c, "eps"));
    return done(c, at_fin(c, op));
  }
  kf_value *ops[3] = {x, w, b};
  kf_op *op = at_op(c, KF_OP_GROUP_NORM, ops, 3, 3, NULL);
  kf_op_set_int(op, "groups", x->type.shape[1]);
  kf_op_set_float(op, "eps", at_float(c, "eps"));
  return done(c, at_fin(c, op));
}

/* glu(x, dim) = a * sigmoid(b), a and b the halves of x along dim. */
static kf_status L_glu(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int64_t d;
  if (!at_wrap_dim(c, at_int(c, "dim"), x->type.rank, "dim", &d)) return c->st;
  if (x->type.rank == 0 || x->type.shape[d] % 2)
    return at_err(c, KF_ERR_INVALID, "glu needs an even size along dim %lld", (long long)d);
  int64_t half = x->type.shape[d] / 2, sizes[2] = {half, half};
  kf_op *op = at_op(c, KF_OP_SPLIT, &x, 1, 2, NULL);
  kf_op_set_int(op, "dim", d);
  kf_op_set_ints(op, "sizes", sizes, 2);
  AT_CHECK(c, at_fin(c, op));
  return done(c, at_binary(c, KF_OP_MUL, op->results[0], at_unary(c, KF_OP_SIGMOID, op->results[1])));
}

/* upsample_nearest{1,2,3}d: one index_select per spatial dim. The source
 * index is floor(o * in / out), or floor(o / s) for a given scale s (exact
 * in integers for integral scales; PyTorch computes it in f32, which can
 * differ from this at exact boundaries for non-integral scales). */
/* The row's k: spatial dims | one of these (kf.upsample's mode). */
enum { UP_NEAREST = 0, UP_EXACT = 4, UP_LINEAR = 8, UP_CUBIC = 12 };

/* upsample_*: output sizes given, or scale factors (.vec) that give
 * floor(in * scale) and set the source coordinates as ATen passes them to
 * its kernels; the .default overloads' scales_* likewise. */
static kf_status L_upsample(at_ctx *c) {
  int sp = c->row->k & 3, mode = c->row->k & ~3;
  kf_value *x = need_tensor(c, has_arg(c, "input") ? "input" : "self");
  AT_CHECK(c, x);
  const kf_type *t = &x->type;
  if (t->rank != sp + 2) return at_err(c, KF_ERR_INVALID, "input must have rank %d, has %d", sp + 2, t->rank);
  int64_t out[3];
  double scale[3] = {0, 0, 0};
  int n;
  const int64_t *os = at_ints(c, "output_size", &n);
  if (has_arg(c, "scale_factors")) { /* .vec */
    int nf;
    const double *sf = at_floats(c, "scale_factors", &nf);
    if ((os != NULL) == (sf != NULL))
      return at_err(c, KF_ERR_INVALID, "exactly one of output_size and scale_factors must be given");
    if (sf && nf != sp) return at_err(c, KF_ERR_INVALID, "scale_factors has %d entries, expected %d", nf, sp);
    for (int i = 0; sf && i < sp; i++) {
      if (!(sf[i] > 0) || (double)t->shape[2 + i] * sf[i] > (double)AT_LIMIT)
        return at_err(c, KF_ERR_INVALID, "scale factor %g is out of range", sf[i]);
      scale[i] = sf[i];
      out[i] = (int64_t)((double)t->shape[2 + i] * sf[i]);
    }
  } else {
    static const char *names[3][3] = {{"scales"}, {"scales_h", "scales_w"}, {"scales_d", "scales_h", "scales_w"}};
    for (int i = 0; i < sp; i++)
      if (!at_none(c, names[sp - 1][i])) scale[i] = at_float(c, names[sp - 1][i]);
  }
  if (os) {
    if (n != sp) return at_err(c, KF_ERR_INVALID, "output_size has %d entries, expected %d", n, sp);
    memcpy(out, os, sizeof(int64_t) * (size_t)sp);
  }
  for (int i = 0; i < sp; i++) {
    if (out[i] < 1 || t->shape[2 + i] < 1)
      return at_err(c, KF_ERR_INVALID, "input and output sizes must be positive, got %lld -> %lld",
                    (long long)t->shape[2 + i], (long long)out[i]);
    if (scale[i] != scale[i] || scale[i] >= (double)AT_LIMIT)
      return at_err(c, KF_ERR_INVALID, "scale %g is out of range", scale[i]);
    if (scale[i] < 0) scale[i] = 0; /* ATen: a scale <= 0 counts as none */
  }
  bool align = has_arg(c, "align_corners") && at_bool(c, "align_corners");
  static const char *modes[4] = {"nearest", "nearest-exact", "linear", "cubic"};
  int64_t sh[KF_MAX_RANK];
  memcpy(sh, t->shape, sizeof(int64_t) * (size_t)t->rank);
  memcpy(sh + 2, out, sizeof(int64_t) * (size_t)sp);
  kf_type decl;
  kf_type_init_tensor(&decl, t->dtype, t->rank, sh);
  kf_op *op = at_op(c, KF_OP_UPSAMPLE, &x, 1, 1, &decl);
  kf_op_set_ints(op, "size", out, sp);
  kf_op_set_floats(op, "scales", scale, sp);
  kf_op_set_str(op, "mode", modes[mode / 4]);
  kf_op_set_bool(op, "align_corners", align);
  return done(c, at_fin(c, op));
}

/* ---- matrix products ------------------------------------------------------------ */

static kf_value *mm2(at_ctx *c, kf_value *a, kf_value *b) {
  kf_value *ops[2] = {a, b};
  return at_fin(c, at_op(c, KF_OP_MM, ops, 2, 1, NULL));
}

static kf_value *bmm3(at_ctx *c, kf_value *a, kf_value *b) {
  kf_value *ops[2] = {a, b};
  return at_fin(c, at_op(c, KF_OP_BMM, ops, 2, 1, NULL));
}

static kf_value *addmm3(at_ctx *c, kf_value *bias, kf_value *a, kf_value *b, kf_number beta,
                        kf_number alpha) {
  kf_value *ops[3] = {bias, a, b};
  kf_op *op = at_op(c, KF_OP_ADDMM, ops, 3, 1, NULL);
  kf_op_set_number(op, "beta", beta);
  kf_op_set_number(op, "alpha", alpha);
  return at_fin(c, op);
}

/* torch.matmul on any ranks, through mm or bmm. */
static kf_value *matmul(at_ctx *c, kf_value *a, kf_value *b) {
  const kf_type *ta = &a->type, *tb = &b->type;
  int ra = ta->rank, rb = tb->rank;
  if (ra == 0 || rb == 0) {
    at_err(c, KF_ERR_INVALID, "both arguments to matmul need at least one dim");
    return NULL;
  }
  int64_t k = ta->shape[ra - 1];
  int64_t kb = tb->shape[rb == 1 ? 0 : rb - 2];
  if (k != kb) {
    at_err(c, KF_ERR_INVALID, "matmul: inner dimensions differ (%lld and %lld)", (long long)k, (long long)kb);
    return NULL;
  }
  int64_t sh[KF_MAX_RANK];
  if (rb <= 2 && ra <= 2) {
    int64_t s1[2] = {1, k}, s2[2] = {k, 1};
    kf_value *a2 = ra == 1 ? at_reshape(c, a, 2, s1) : a;
    kf_value *b2 = rb == 1 ? at_reshape(c, b, 2, s2) : b;
    kf_value *p = mm2(c, a2, b2);
    if (!p) return NULL;
    int r = 0;
    if (ra == 2) sh[r++] = ta->shape[0];
    if (rb == 2) sh[r++] = tb->shape[1];
    return at_reshape(c, p, r, sh);
  }
  if (rb <= 2) { /* fold a's batch dims into rows */
    int64_t rows = numel_of(ta->shape, ra - 1);
    int64_t s1[2] = {rows, k}, s2[2] = {k, 1};
    kf_value *p = mm2(c, at_reshape(c, a, 2, s1), rb == 1 ? at_reshape(c, b, 2, s2) : b);
    if (!p) return NULL;
    int r = 0;
    for (int i = 0; i < ra - 1; i++) sh[r++] = ta->shape[i];
    if (rb == 2) sh[r++] = tb->shape[1];
    return at_reshape(c, p, r, sh);
  }
  /* batched: broadcast the batch dims, then bmm */
  int64_t as[KF_MAX_RANK], bs[KF_MAX_RANK];
  int na = ra == 1 ? 2 : ra, nb = rb == 1 ? 2 : rb;
  if (ra == 1) {
    as[0] = 1;
    as[1] = k;
  } else {
    memcpy(as, ta->shape, sizeof(int64_t) * (size_t)ra);
  }
  if (rb == 1) {
    bs[0] = k;
    bs[1] = 1;
  } else {
    memcpy(bs, tb->shape, sizeof(int64_t) * (size_t)rb);
  }
  int ba = na - 2, bb = nb - 2, nbatch = ba > bb ? ba : bb;
  int64_t batch[KF_MAX_RANK];
  for (int i = 0; i < nbatch; i++) {
    int ia = i - (nbatch - ba), ib = i - (nbatch - bb);
    int64_t da = ia >= 0 ? as[ia] : 1, db = ib >= 0 ? bs[ib] : 1;
    if (da != db && da != 1 && db != 1) {
      at_err(c, KF_ERR_INVALID, "matmul: batch dims do not broadcast (%lld and %lld)", (long long)da,
             (long long)db);
      return NULL;
    }
    batch[i] = da == 1 ? db : da;
  }
  int64_t n = as[na - 2], m = bs[nb - 1], B = numel_of(batch, nbatch);
  int64_t ea[KF_MAX_RANK], eb[KF_MAX_RANK];
  memcpy(ea, batch, sizeof(int64_t) * (size_t)nbatch);
  memcpy(eb, batch, sizeof(int64_t) * (size_t)nbatch);
  ea[nbatch] = n;
  ea[nbatch + 1] = k;
  eb[nbatch] = k;
  eb[nbatch + 1] = m;
  kf_value *a3 = at_reshape(c, a, na, as);
  kf_value *b3 = at_reshape(c, b, nb, bs);
  a3 = at_expand(c, a3, nbatch + 2, ea);
  b3 = at_expand(c, b3, nbatch + 2, eb);
  int64_t fa[3] = {B, n, k}, fb[3] = {B, k, m};
  a3 = at_reshape(c, a3, 3, fa);
  b3 = at_reshape(c, b3, 3, fb);
  if (!a3 || !b3) return NULL;
  kf_value *p = bmm3(c, a3, b3);
  if (!p) return NULL;
  int r = 0;
  for (int i = 0; i < nbatch; i++) sh[r++] = batch[i];
  if (ra != 1) sh[r++] = n;
  if (rb != 1) sh[r++] = m;
  return at_reshape(c, p, r, sh);
}

static kf_status L_mm(at_ctx *c) {
  kf_value *a = need_tensor(c, "self");
  AT_CHECK(c, a);
  kf_value *b = need_tensor(c, argname(c, 1));
  AT_CHECK(c, b);
  if (c->row->k == KF_OP_MM) return done(c, mm2(c, a, b));
  if (c->row->k == KF_OP_BMM) return done(c, bmm3(c, a, b));
  return done(c, matmul(c, a, b)); /* matmul, mv, dot */
}

static kf_status L_addmm(at_ctx *c) {
  kf_value *bias = need_tensor(c, "self");
  AT_CHECK(c, bias);
  kf_value *a = need_tensor(c, "mat1");
  AT_CHECK(c, a);
  kf_value *b = need_tensor(c, "mat2");
  AT_CHECK(c, b);
  return done(c, addmm3(c, bias, a, b, at_num(c, "beta"), at_num(c, "alpha")));
}

/* baddbmm = beta * self + alpha * bmm(batch1, batch2) */
static kf_status L_baddbmm(at_ctx *c) {
  kf_value *s = need_tensor(c, "self");
  AT_CHECK(c, s);
  kf_value *a = need_tensor(c, "batch1");
  AT_CHECK(c, a);
  kf_value *b = need_tensor(c, "batch2");
  AT_CHECK(c, b);
  kf_number beta = at_num(c, "beta"), alpha = at_num(c, "alpha");
  kf_value *p = bmm3(c, a, b);
  AT_CHECK(c, p);
  if (!at_number_is(alpha, 1)) p = at_binary(c, KF_OP_MUL, p, at_scalar(c, alpha));
  AT_CHECK(c, p);
  if (at_number_is(beta, 0)) return done(c, p);
  kf_value *ops[2] = {p, s};
  kf_op *op = at_op(c, KF_OP_ADD, ops, 2, 1, NULL);
  if (!at_number_is(beta, 1)) kf_op_set_number(op, "alpha", beta);
  kf_value *r = at_fin(c, op);
  AT_CHECK(c, r);
  if (!same_dims(r, p)) return at_err(c, KF_ERR_INVALID, "self does not broadcast to the product's shape");
  return done(c, r);
}

/* linear(x, w, b) = x @ w^T + b, as permute + addmm (mm without bias), with
 * the leading dims of x folded into rows. */
static kf_status L_linear(at_ctx *c) {
  kf_value *x = need_tensor(c, "input");
  AT_CHECK(c, x);
  kf_value *w = need_tensor(c, "weight");
  AT_CHECK(c, w);
  kf_value *b = at_tensor(c, "bias");
  if (c->st) return c->st;
  const kf_type *tx = &x->type;
  if (w->type.rank != 2) return at_err(c, KF_ERR_UNSUPPORTED, "weight must be 2-d, has rank %d", w->type.rank);
  if (tx->rank < 1) return at_err(c, KF_ERR_INVALID, "input must have at least one dim");
  int64_t k = tx->shape[tx->rank - 1], out = w->type.shape[0];
  if (w->type.shape[1] != k)
    return at_err(c, KF_ERR_INVALID, "input has %lld features, weight expects %lld", (long long)k,
                  (long long)w->type.shape[1]);
  int64_t perm[2] = {1, 0};
  kf_value *wt = at_permute(c, w, perm, 2);
  int64_t rows = numel_of(tx->shape, tx->rank - 1);
  int64_t s2[2] = {rows, k};
  kf_value *x2 = at_reshape(c, x, 2, s2);
  kf_value *y = b ? addmm3(c, b, x2, wt, kf_number_int(1), kf_number_int(1)) : mm2(c, x2, wt);
  AT_CHECK(c, y);
  int64_t sh[KF_MAX_RANK];
  for (int i = 0; i < tx->rank - 1; i++) sh[i] = tx->shape[i];
  sh[tx->rank - 1] = out;
  return done(c, at_reshape(c, y, tx->rank, sh));
}

/* ---- convolution and pooling ------------------------------------------------------ */

/* An int list of one entry stands for all `sp` spatial dims. */
static bool spatial(at_ctx *c, const char *name, int sp, int64_t *out) {
  int n;
  const int64_t *v = at_ints(c, name, &n);
  if (n == 1) {
    for (int i = 0; i < sp; i++) out[i] = v[0];
    return true;
  }
  if (n != sp) {
    at_err(c, KF_ERR_INVALID, "%s has %d entries, expected %d", name, n, sp);
    return false;
  }
  memcpy(out, v, sizeof(int64_t) * (size_t)sp);
  return true;
}

/* Unbatched inputs ([C, spatial...]) get a batch dim of 1 and lose it again. */
static kf_value *batchify(at_ctx *c, kf_value *x, int want_rank, bool *added) {
  *added = false;
  if (x->type.rank == want_rank) return x;
  if (x->type.rank != want_rank - 1) {
    at_err(c, KF_ERR_INVALID, "input has rank %d, expected %d (or %d unbatched)", x->type.rank, want_rank,
           want_rank - 1);
    return NULL;
  }
  int64_t sh[KF_MAX_RANK];
  sh[0] = 1;
  memcpy(sh + 1, x->type.shape, sizeof(int64_t) * (size_t)x->type.rank);
  *added = true;
  return at_reshape(c, x, want_rank, sh);
}

static kf_value *unbatchify(at_ctx *c, kf_value *y, bool added) {
  if (!y || !added) return y;
  return at_reshape(c, y, y->type.rank - 1, y->type.shape + 1);
}

enum { CONV_GENERIC, CONV_N, CONV_N_PADSTR, CONV_T };

static kf_status L_conv(at_ctx *c) {
  kf_value *x = need_tensor(c, "input");
  AT_CHECK(c, x);
  kf_value *w = need_tensor(c, "weight");
  AT_CHECK(c, w);
  kf_value *b = at_tensor(c, "bias");
  if (c->st) return c->st;
  int sp = w->type.rank - 2;
  if (sp < 1 || sp > 3) return at_err(c, KF_ERR_UNSUPPORTED, "weight of rank %d: only 1-3 spatial dims", w->type.rank);
  bool added;
  x = batchify(c, x, sp + 2, &added);
  AT_CHECK(c, x);
  int64_t stride[3], pad[3] = {0, 0, 0}, dil[3], opad[3] = {0, 0, 0};
  bool transposed = c->row->k == CONV_T;
  int64_t groups = at_int(c, "groups");
  if (!spatial(c, "stride", sp, stride) || !spatial(c, "dilation", sp, dil)) return c->st;
  if (c->row->k == CONV_GENERIC) transposed = at_bool(c, "transposed");
  if (c->row->k != CONV_N_PADSTR && !spatial(c, "padding", sp, pad)) return c->st;
  if ((c->row->k == CONV_GENERIC || transposed) && !spatial(c, "output_padding", sp, opad)) return c->st;
  if (c->row->k == CONV_N_PADSTR) {
    const char *mode = at_str(c, "padding");
    if (mode && strcmp(mode, "same") == 0) {
      int64_t extra[6] = {0};
      bool asym = false;
      for (int i = 0; i < sp; i++) {
        if (stride[i] != 1) return at_err(c, KF_ERR_INVALID, "padding='same' needs stride 1");
        int64_t total = dil[i] * (w->type.shape[2 + i] - 1);
        pad[i] = total / 2;
        /* pad's pairs run from the last dim backwards */
        extra[2 * (sp - 1 - i) + 1] = total - 2 * pad[i];
        asym |= total % 2 != 0;
      }
      if (asym) {
        kf_op *op = at_op(c, KF_OP_PAD, &x, 1, 1, NULL);
        kf_op_set_ints(op, "pad", extra, 2 * sp);
        kf_op_set_number(op, "value", kf_number_int(0));
        x = at_fin(c, op);
        AT_CHECK(c, x);
      }
    } else if (!mode || strcmp(mode, "valid")) {
      return at_err(c, KF_ERR_INVALID, "padding must be 'valid' or 'same', not '%s'", mode ? mode : "None");
    }
  }
  for (int i = 0; i < sp; i++) { /* keep the output-size formula in range */
    int64_t a, e;
    if (__builtin_mul_overflow(dil[i], w->type.shape[2 + i], &a) ||
        __builtin_mul_overflow(stride[i], x->type.shape[2 + i], &e) || a > AT_LIMIT || e > AT_LIMIT)
      return at_err(c, KF_ERR_LIMIT, "convolution parameters out of range at spatial dim %d", i);
  }
  kf_value *ops[3] = {x, w, b};
  kf_op *op = at_op(c, KF_OP_CONV, ops, 3, 1, NULL);
  kf_op_set_ints(op, "stride", stride, sp);
  kf_op_set_ints(op, "padding", pad, sp);
  kf_op_set_ints(op, "dilation", dil, sp);
  kf_op_set_bool(op, "transposed", transposed);
  kf_op_set_ints(op, "output_padding", opad, sp);
  kf_op_set_int(op, "groups", groups);
  return done(c, unbatchify(c, at_fin(c, op), added));
}

/* k: number of spatial dims; +8 when the indices are a result too. */
static kf_status L_max_pool(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int sp = c->row->k & 7;
  bool with_idx = c->row->k & 8;
  int64_t k[3], s[3], p[3], d[3];
  int ns;
  at_ints(c, "stride", &ns);
  if (!spatial(c, "kernel_size", sp, k) || !spatial(c, "padding", sp, p) || !spatial(c, "dilation", sp, d))
    return c->st;
  if (ns == 0)
    memcpy(s, k, sizeof s);
  else if (!spatial(c, "stride", sp, s))
    return c->st;
  for (int i = 0; i < sp; i++) {
    int64_t a;
    if (__builtin_mul_overflow(d[i], k[i], &a) || a > AT_LIMIT)
      return at_err(c, KF_ERR_LIMIT, "pooling parameters out of range at spatial dim %d", i);
  }
  kf_op *op = at_op(c, KF_OP_MAX_POOL, &x, 1, 2, NULL);
  kf_op_set_ints(op, "kernel", k, sp);
  kf_op_set_ints(op, "stride", s, sp);
  kf_op_set_ints(op, "padding", p, sp);
  kf_op_set_ints(op, "dilation", d, sp);
  kf_op_set_bool(op, "ceil_mode", at_bool(c, "ceil_mode"));
  AT_CHECK(c, at_fin(c, op));
  at_out(c, 0, op->results[0]);
  if (with_idx) at_out(c, 1, op->results[1]);
  return KF_OK;
}

static kf_status L_avg_pool(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int sp = c->row->k;
  int64_t k[3], s[3], p[3];
  int ns;
  at_ints(c, "stride", &ns);
  if (!spatial(c, "kernel_size", sp, k) || !spatial(c, "padding", sp, p)) return c->st;
  if (ns == 0)
    memcpy(s, k, sizeof s);
  else if (!spatial(c, "stride", sp, s))
    return c->st;
  kf_op *op = at_op(c, KF_OP_AVG_POOL, &x, 1, 1, NULL);
  kf_op_set_ints(op, "kernel", k, sp);
  kf_op_set_ints(op, "stride", s, sp);
  kf_op_set_ints(op, "padding", p, sp);
  kf_op_set_bool(op, "ceil_mode", at_bool(c, "ceil_mode"));
  kf_op_set_bool(op, "count_include_pad", at_bool(c, "count_include_pad"));
  if (has_arg(c, "divisor_override") && !at_none(c, "divisor_override")) {
    int64_t dv = at_int(c, "divisor_override");
    if (dv == 0) return at_err(c, KF_ERR_INVALID, "divisor_override must be non-zero");
    kf_op_set_int(op, "divisor", dv);
  }
  return done(c, at_fin(c, op));
}

static kf_status L_adaptive_avg_pool(at_ctx *c) {
  kf_value *x = need_tensor(c, "self");
  AT_CHECK(c, x);
  int sp = c->row->k;
  int64_t o[3];
  if (!spatial(c, "output_size", sp, o)) return c->st;
  bool added;
  x = batchify(c, x, sp + 2, &added);
  AT_CHECK(c, x);
  for (int i = 0; i < sp; i++)
    if (o[i] < 1) return at_err(c, KF_ERR_INVALID, "output_size must be positive, got %lld", (long long)o[i]);
  kf_type t;
  kf_type_init_tensor(&t, x->type.dtype, x->type.rank, x->type.shape);
  for (int i = 0; i < sp; i++) t.shape[2 + i] = o[i];
  kf_type_set_contiguous(&t);
  kf_value *y = at_fin(c, at_op(c, KF_OP_ADAPTIVE_AVG_POOL, &x, 1, 1, &t));
  return done(c, unbatchify(c, y, added));
}

/* ---- attention ------------------------------------------------------------------ */

static kf_status L_sdpa(at_ctx *c) {
  kf_value *q = need_tensor(c, "query");
  AT_CHECK(c, q);
  kf_value *k = need_tensor(c, "key");
  AT_CHECK(c, k);
  kf_value *v = need_tensor(c, "value");
  AT_CHECK(c, v);
  kf_value *m = at_tensor(c, "attn_mask");
  if (c->st) return c->st;
  double p = at_float(c, "dropout_p");
  if (p != 0)
    return at_err(c, KF_ERR_UNSUPPORTED, "dropout_p must be 0 (got %g): attention dropout is random", p);
  kf_value *ops[4] = {q, k, v, m};
  kf_op *op = at_op(c, KF_OP_SDPA, ops, 4, 1, NULL);
  kf_op_set_bool(op, "is_causal", at_bool(c, "is_causal"));
  if (!at_none(c, "scale")) kf_op_set_float(op, "scale", at_float(c, "scale"));
  kf_op_set_bool(op, "enable_gqa", has_arg(c, "enable_gqa") && at_bool(c, "enable_gqa"));
  return done(c, at_fin(c, op));
}

/* ---- checks that emit nothing --------------------------------------------------- */

static kf_status L_noop(at_ctx *c) { return KF_OK; }

static kf_status L_assert_metadata(at_ctx *c) {
  kf_value *x = need_tensor(c, "a");
  AT_CHECK(c, x);
  int n;
  const int64_t *sz = at_ints(c, "size", &n);
  if (sz) {
    bool ok = n == x->type.rank;
    for (int i = 0; ok && i < n; i++) ok = sz[i] == x->type.shape[i];
    if (!ok) {
      char a[200], b[200];
      shape_str(sz, n, a, sizeof a);
      shape_str(x->type.shape, x->type.rank, b, sizeof b);
      return at_err(c, KF_ERR_INVALID, "the exporter asserts shape %s, kfuse has %s", a, b);
    }
  }
  kf_dtype dt = at_dtype(c, "dtype");
  if (dt != KF_DTYPE_INVALID && dt != x->type.dtype)
    return at_err(c, KF_ERR_INVALID, "the exporter asserts dtype %s, kfuse has %s", kf_dtype_name(dt),
                  kf_dtype_name(x->type.dtype));
  return KF_OK;
}

/* ---- the table ------------------------------------------------------------------
 * Schemas as PyTorch prints them (torch.ops.aten.<op>.<overload>._schema).
 * k: the kf opcode, or the variant the lowering function documents. */

#define UN(sig, OP) {sig "(Tensor self) -> Tensor", L_unary, KF_OP_##OP, NULL}
#define BIN_T(name, OP) {name ".Tensor(Tensor self, Tensor other) -> Tensor", L_binary, KF_OP_##OP, NULL}
#define BIN_S(name, OP) {name ".Scalar(Tensor self, Scalar other) -> Tensor", L_binary, KF_OP_##OP, NULL}
/* a KF_EW2 row's ATEN column: TS, the .Tensor and .Scalar overloads; T, the one */
#define EW2_TS(name, OP) BIN_T(name, OP), BIN_S(name, OP)
#define EW2_T(name, OP) {name "(Tensor self, Tensor other) -> Tensor", L_binary, KF_OP_##OP, NULL}

const at_row kf_aten_rows[] = {
    /* element-wise unary: every one-row op of ops.def under its own name */
#define KF_OP(ID, NAME, KIND, OPERANDS, RESULTS, ATTRS)
#define KF_EW1(ID, NAME, RESULT, INTERP, TORCH) UN(NAME, ID),
#include "kfuse/ops.def"
#undef KF_EW1
#undef KF_OP
    UN("sgn", SIGN), UN("bitwise_not", BITWISE_NOT),
    {"isfinite(Tensor self) -> Tensor", L_isfinite, 0, "kf.logical_not(kf.logical_or(kf.isnan, kf.isinf))"},
    {"positive(Tensor(a) self) -> Tensor(a)", L_identity, 0, "the operand itself"},
    {"square(Tensor self) -> Tensor", L_square, 0, "kf.pow(x, 2)"},
    {"relu6(Tensor self) -> Tensor", L_hardtanh, 0, "kf.hardtanh(0, 6)"},
    {"gelu(Tensor self, *, str approximate=\"none\") -> Tensor", L_gelu, KF_OP_GELU, NULL},
    {"hardtanh(Tensor self, Scalar min_val=-1, Scalar max_val=1) -> Tensor", L_hardtanh, KF_OP_HARDTANH, NULL},
    {"leaky_relu(Tensor self, Scalar negative_slope=0.01) -> Tensor", L_leaky_relu, KF_OP_LEAKY_RELU, NULL},
    {"elu(Tensor self, Scalar alpha=1, Scalar scale=1, Scalar input_scale=1) -> Tensor", L_elu, ELU_PLAIN,
     "kf.elu"},
    {"selu(Tensor self) -> Tensor", L_elu, ELU_SELU, "kf.elu with SELU's alpha and scale"},
    {"celu(Tensor self, Scalar alpha=1.) -> Tensor", L_elu, ELU_CELU, "kf.elu(alpha, 1, 1/alpha)"},
    {"softplus(Tensor self, Scalar beta=1, Scalar threshold=20) -> Tensor", L_softplus, KF_OP_SOFTPLUS, NULL},
    {"clamp(Tensor self, Scalar? min=None, Scalar? max=None) -> Tensor", L_clamp, KF_OP_CLAMP, NULL},
    {"clamp.Tensor(Tensor self, Tensor? min=None, Tensor? max=None) -> Tensor", L_clamp_tensor, 0,
     "kf.maximum / kf.minimum"},
    {"clamp_min(Tensor self, Scalar min) -> Tensor", L_clamp, KF_OP_CLAMP, NULL},
    {"clamp_min.Tensor(Tensor self, Tensor min) -> Tensor", L_clamp_tensor, 0, "kf.maximum"},
    {"clamp_max(Tensor self, Scalar max) -> Tensor", L_clamp, KF_OP_CLAMP, NULL},
    {"clamp_max.Tensor(Tensor self, Tensor max) -> Tensor", L_clamp_tensor, 0, "kf.minimum"},
    {"threshold(Tensor self, Scalar threshold, Scalar value) -> Tensor", L_threshold, 0,
     "kf.where(kf.le(x, threshold), value, x)"},
    {"log_sigmoid(Tensor self) -> Tensor", L_log_sigmoid, 0, "kf.neg(kf.softplus(kf.neg(x)))"},
    {"hardshrink(Tensor self, Scalar lambd=0.5) -> Tensor", L_hardshrink, 0, "kf.where(|x| > lambd, x, 0)"},
    {"prelu(Tensor self, Tensor weight) -> Tensor", L_prelu, 0, "kf.where(kf.gt(x, 0), x, kf.mul(w, x))"},

    /* element-wise binary: every one-row op of ops.def under its own name */
#define KF_OP(ID, NAME, KIND, OPERANDS, RESULTS, ATTRS)
#define KF_EW2(ID, NAME, RESULT, INTERP, TORCH, ATEN) EW2_##ATEN(NAME, ID),
#include "kfuse/ops.def"
#undef KF_EW2
#undef KF_OP
    {"add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", L_binary, KF_OP_ADD, NULL},
    {"add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", L_binary, KF_OP_ADD, NULL},
    {"sub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", L_binary, KF_OP_SUB, NULL},
    {"sub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", L_binary, KF_OP_SUB, NULL},
    {"rsub.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", L_rsub, 0, "kf.sub(other, self)"},
    {"rsub.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor", L_rsub, 0, "kf.sub(other, self)"},
    BIN_T("div", DIV), BIN_S("div", DIV),
    {"div.Tensor_mode(Tensor self, Tensor other, *, str? rounding_mode) -> Tensor", L_binary, KF_OP_DIV, NULL},
    {"div.Scalar_mode(Tensor self, Scalar other, *, str? rounding_mode) -> Tensor", L_binary, KF_OP_DIV, NULL},
    {"floor_divide(Tensor self, Tensor other) -> Tensor", L_floor_divide, 0, "kf.div {rounding_mode = floor}"},
    {"floor_divide.Scalar(Tensor self, Scalar other) -> Tensor", L_floor_divide, 0,
     "kf.div {rounding_mode = floor}"},
    BIN_T("remainder", REMAINDER), BIN_S("remainder", REMAINDER),
    {"remainder.Scalar_Tensor(Scalar self, Tensor other) -> Tensor", L_binary, KF_OP_REMAINDER, NULL},
    BIN_T("fmod", FMOD), BIN_S("fmod", FMOD),
    {"pow.Tensor_Tensor(Tensor self, Tensor exponent) -> Tensor", L_binary, KF_OP_POW, NULL},
    {"pow.Tensor_Scalar(Tensor self, Scalar exponent) -> Tensor", L_binary, KF_OP_POW, NULL},
    {"pow.Scalar(Scalar self, Tensor exponent) -> Tensor", L_binary, KF_OP_POW, NULL},
    {"max.other(Tensor self, Tensor other) -> Tensor", L_binary, KF_OP_MAXIMUM, NULL},
    {"min.other(Tensor self, Tensor other) -> Tensor", L_binary, KF_OP_MINIMUM, NULL},
    {"bitwise_and.Scalar_Tensor(Scalar self, Tensor other) -> Tensor", L_binary, KF_OP_BITWISE_AND, NULL},
    {"bitwise_or.Scalar_Tensor(Scalar self, Tensor other) -> Tensor", L_binary, KF_OP_BITWISE_OR, NULL},
    {"bitwise_xor.Scalar_Tensor(Scalar self, Tensor other) -> Tensor", L_binary, KF_OP_BITWISE_XOR, NULL},
    BIN_T("__and__", BITWISE_AND), BIN_S("__and__", BITWISE_AND), BIN_T("__or__", BITWISE_OR),
    BIN_S("__or__", BITWISE_OR), BIN_T("__xor__", BITWISE_XOR), BIN_S("__xor__", BITWISE_XOR),
    {"where.self(Tensor condition, Tensor self, Tensor other) -> Tensor", L_where, KF_OP_WHERE, NULL},
    {"where.ScalarOther(Tensor condition, Tensor self, Scalar other) -> Tensor", L_where, KF_OP_WHERE, NULL},
    {"where.ScalarSelf(Tensor condition, Scalar self, Tensor other) -> Tensor", L_where, KF_OP_WHERE, NULL},
    {"where.Scalar(Tensor condition, Scalar self, Scalar other) -> Tensor", L_where, KF_OP_WHERE, NULL},
    {"masked_fill.Scalar(Tensor self, Tensor mask, Scalar value) -> Tensor", L_masked_fill, 0,
     "kf.where(mask, value, self)"},
    {"masked_fill.Tensor(Tensor self, Tensor mask, Tensor value) -> Tensor", L_masked_fill, 0,
     "kf.where(mask, value, self)"},

    /* identities, copies, casts */
    {"alias(Tensor(a) self) -> Tensor(a)", L_identity, 0, "the operand itself"},
    {"detach(Tensor(a) self) -> Tensor(a)", L_identity, 0, "the operand itself"},
    {"lift_fresh_copy(Tensor self) -> Tensor", L_identity, 0, "the operand itself"},
    {"dropout(Tensor input, float p, bool train) -> Tensor", L_dropout, 0,
     "the operand itself (train=False only)"},
    {"feature_dropout(Tensor input, float p, bool train) -> Tensor", L_dropout, 0,
     "the operand itself (train=False only)"},
    {"clone(Tensor self, *, MemoryFormat? memory_format=None) -> Tensor", L_copy_op, KF_OP_COPY, NULL},
    {"contiguous(Tensor(a) self, *, MemoryFormat memory_format=0) -> Tensor(a)", L_copy_op, KF_OP_COPY, NULL},
    {"alias_copy(Tensor self) -> Tensor", L_copy_op, KF_OP_COPY, NULL},
    {"_to_copy(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
     "bool? pin_memory=None, bool non_blocking=False, MemoryFormat? memory_format=None) -> Tensor",
     L_to, TO_COPY, "kf.cast (new dtype) or kf.copy"},
    {"to.dtype(Tensor(a) self, ScalarType dtype, bool non_blocking=False, bool copy=False, "
     "MemoryFormat? memory_format=None) -> Tensor(a)", L_to, TO_DTYPE, "kf.cast, or the operand itself"},
    {"to.dtype_layout(Tensor(a) self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
     "bool? pin_memory=None, bool non_blocking=False, bool copy=False, MemoryFormat? memory_format=None) "
     "-> Tensor(a)", L_to, TO_DTYPE, "kf.cast, or the operand itself"},
    {"to.device(Tensor(a) self, Device device, ScalarType dtype, bool non_blocking=False, bool copy=False, "
     "MemoryFormat? memory_format=None) -> Tensor(a)", L_to, TO_DTYPE, "kf.cast, or the operand itself"},
    {"to.other(Tensor(a) self, Tensor other, bool non_blocking=False, bool copy=False, "
     "MemoryFormat? memory_format=None) -> Tensor(a)", L_to, TO_OTHER, "kf.cast, or the operand itself"},
    {"type_as(Tensor self, Tensor other) -> Tensor", L_to, TO_TYPE_AS, "kf.cast, or the operand itself"},
    {"copy(Tensor self, Tensor src, bool non_blocking=False) -> Tensor", L_copy_from, 0,
     "kf.copy(kf.cast(kf.expand(src)))"},
    {"fill.Scalar(Tensor self, Scalar value) -> Tensor", L_fill, 0, "kf.full"},
    {"fill.Tensor(Tensor self, Tensor value) -> Tensor", L_fill, 0, "kf.copy(kf.expand(value))"},
    {"zero(Tensor self) -> Tensor", L_fill, 0, "kf.full"},

    /* views */
    {"view(Tensor(a) self, SymInt[] size) -> Tensor(a)", L_view, 0, "kf.reshape"},
    {"_unsafe_view(Tensor self, SymInt[] size) -> Tensor", L_view, 0, "kf.reshape"},
    {"view_copy(Tensor self, SymInt[] size) -> Tensor", L_view, 0, "kf.reshape"},
    {"reshape(Tensor(a) self, SymInt[] shape) -> Tensor(a)", L_view, 0, "kf.reshape"},
    {"view_as(Tensor(a) self, Tensor other) -> Tensor(a)", L_view_as, 0, "kf.reshape"},
    {"reshape_as(Tensor(a) self, Tensor other) -> Tensor(a)", L_view_as, 0, "kf.reshape"},
    {"flatten.using_ints(Tensor(a) self, int start_dim=0, int end_dim=-1) -> Tensor(a)", L_flatten, 0,
     "kf.reshape"},
    {"unflatten.int(Tensor(a) self, int dim, SymInt[] sizes) -> Tensor(a)", L_unflatten, 0, "kf.reshape"},
    {"squeeze(Tensor(a) self) -> Tensor(a)", L_squeeze, 0, "kf.reshape"},
    {"squeeze.dim(Tensor(a) self, int dim) -> Tensor(a)", L_squeeze, 0, "kf.reshape"},
    {"squeeze.dims(Tensor(a) self, int[] dim) -> Tensor(a)", L_squeeze, 0, "kf.reshape"},
    {"squeeze_copy.dims(Tensor self, int[] dim) -> Tensor", L_squeeze, 0, "kf.reshape"},
    {"unsqueeze(Tensor(a) self, int dim) -> Tensor(a)", L_unsqueeze, 0, "kf.reshape"},
    {"unsqueeze_copy(Tensor self, int dim) -> Tensor", L_unsqueeze, 0, "kf.reshape"},
    {"permute(Tensor(a) self, int[] dims) -> Tensor(a)", L_permute, KF_OP_PERMUTE, NULL},
    {"permute_copy(Tensor self, int[] dims) -> Tensor", L_permute, KF_OP_PERMUTE, NULL},
    {"transpose.int(Tensor(a) self, int dim0, int dim1) -> Tensor(a)", L_transpose, 0, "kf.permute"},
    {"transpose_copy.int(Tensor self, int dim0, int dim1) -> Tensor", L_transpose, 0, "kf.permute"},
    {"t(Tensor(a) self) -> Tensor(a)", L_t, 0, "kf.permute"},
    {"t_copy(Tensor self) -> Tensor", L_t, 0, "kf.permute"},
    {"expand(Tensor(a) self, SymInt[] size, *, bool implicit=False) -> Tensor(a)", L_expand, KF_OP_EXPAND, NULL},
    {"expand_copy(Tensor self, SymInt[] size, *, bool implicit=False) -> Tensor", L_expand, KF_OP_EXPAND, NULL},
    {"expand_as(Tensor(a) self, Tensor other) -> Tensor(a)", L_expand_as, KF_OP_EXPAND, NULL},
    {"slice.Tensor(Tensor(a) self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) "
     "-> Tensor(a)", L_slice, KF_OP_SLICE, NULL},
    {"slice_copy.Tensor(Tensor self, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) "
     "-> Tensor", L_slice, KF_OP_SLICE, NULL},
    {"narrow(Tensor(a) self, int dim, SymInt start, SymInt length) -> Tensor(a)", L_narrow, 0, "kf.slice"},
    {"select.int(Tensor(a) self, int dim, SymInt index) -> Tensor(a)", L_select, KF_OP_SELECT, NULL},
    {"select_copy.int(Tensor self, int dim, SymInt index) -> Tensor", L_select, KF_OP_SELECT, NULL},
    {"as_strided(Tensor(a) self, SymInt[] size, SymInt[] stride, SymInt? storage_offset=None) -> Tensor(a)",
     L_as_strided, KF_OP_AS_STRIDED, NULL},
    {"unfold(Tensor(a) self, int dimension, int size, int step) -> Tensor(a)", L_unfold, KF_OP_UNFOLD, NULL},
    {"slice_scatter(Tensor self, Tensor src, int dim=0, SymInt? start=None, SymInt? end=None, SymInt step=1) "
     "-> Tensor", L_slice_scatter, 0, "kf.slice_scatter"},
    {"select_scatter(Tensor self, Tensor src, int dim, SymInt index) -> Tensor", L_slice_scatter, 1,
     "kf.reshape + kf.slice_scatter"},

    /* joining, splitting, padding, indexing */
    {"cat(Tensor[] tensors, int dim=0) -> Tensor", L_cat, KF_OP_CAT, NULL},
    {"stack(Tensor[] tensors, int dim=0) -> Tensor", L_stack, 0, "kf.reshape + kf.cat"},
    {"split.Tensor(Tensor(a -> *) self, SymInt split_size, int dim=0) -> Tensor(a)[]", L_split, SPLIT_SIZE,
     "kf.split"},
    {"split.sizes(Tensor(a -> *) self, SymInt[] split_size, int dim=0) -> Tensor(a)[]", L_split, SPLIT_SIZES,
     "kf.split"},
    {"split(Tensor(a -> *) self, int[] split_sizes, int dim=0) -> Tensor(a)[]", L_split, SPLIT_SIZES, "kf.split"},
    {"split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]", L_split,
     SPLIT_SIZES, "kf.split"},
    {"split_with_sizes_copy(Tensor self, SymInt[] split_sizes, int dim=0) -> Tensor[]", L_split, SPLIT_SIZES,
     "kf.split"},
    {"chunk(Tensor(a -> *) self, int chunks, int dim=0) -> Tensor(a)[]", L_split, SPLIT_CHUNK, "kf.split"},
    {"unbind.int(Tensor(a -> *) self, int dim=0) -> Tensor(a)[]", L_split, SPLIT_UNBIND,
     "kf.split + kf.reshape"},
    {"unbind_copy.int(Tensor self, int dim=0) -> Tensor[]", L_split, SPLIT_UNBIND, "kf.split + kf.reshape"},
    {"constant_pad_nd(Tensor self, SymInt[] pad, Scalar value=0) -> Tensor", L_constant_pad, KF_OP_PAD, NULL},
    {"pad(Tensor self, SymInt[] pad, str mode=\"constant\", float? value=None) -> Tensor", L_constant_pad, 0,
     "kf.pad (mode 'constant' only)"},
    {"index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", L_index, KF_OP_INDEX, NULL},
    {"_unsafe_index.Tensor(Tensor self, Tensor?[] indices) -> Tensor", L_index, KF_OP_INDEX, NULL},
    {"index_select(Tensor self, int dim, Tensor index) -> Tensor", L_index_select, KF_OP_INDEX_SELECT, NULL},
    {"gather(Tensor self, int dim, Tensor index, *, bool sparse_grad=False) -> Tensor", L_gather, KF_OP_GATHER,
     NULL},
    {"embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, "
     "bool sparse=False) -> Tensor", L_embedding, KF_OP_EMBEDDING, NULL},
    {"repeat(Tensor self, SymInt[] repeats) -> Tensor", L_repeat, 0, "kf.reshape + kf.expand + kf.reshape"},
    {"repeat_interleave.self_int(Tensor self, SymInt repeats, int? dim=None, *, SymInt? output_size=None) -> Tensor",
     L_repeat_interleave, 0, "kf.reshape + kf.expand + kf.reshape"},
    {"flip(Tensor self, int[] dims) -> Tensor", L_flip, 0, "kf.index_select with a reversed kf.arange"},
    {"roll(Tensor self, SymInt[1] shifts, int[1] dims=[]) -> Tensor", L_roll, 0, "kf.cat of two kf.slice per dim"},
    {"diff(Tensor self, int n=1, int dim=-1, Tensor? prepend=None, Tensor? append=None) -> Tensor", L_diff, 0,
     "kf.cat, then kf.sub (bool: kf.ne) of two kf.slice per order"},
    {"tril(Tensor self, SymInt diagonal=0) -> Tensor", L_tri, KF_OP_LE, "kf.where over a kf.arange mask"},
    {"triu(Tensor self, SymInt diagonal=0) -> Tensor", L_tri, KF_OP_GE, "kf.where over a kf.arange mask"},

    /* factories */
    {"scalar_tensor(Scalar s, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
     "bool? pin_memory=None) -> Tensor", L_full, FILL_VALUE, "kf.full (0-d)"},
    {"full(SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, "
     "Device? device=None, bool? pin_memory=None) -> Tensor", L_full, FILL_VALUE, "kf.full"},
    {"zeros(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
     "bool? pin_memory=None) -> Tensor", L_full, FILL_ZERO, "kf.full"},
    {"ones(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
     "bool? pin_memory=None) -> Tensor", L_full, FILL_ONE, "kf.full"},
    {"empty.memory_format(SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
     "bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", L_full, FILL_ZERO,
     "kf.full (zeros)"},
    {"empty_strided(SymInt[] size, SymInt[] stride, *, ScalarType? dtype=None, Layout? layout=None, "
     "Device? device=None, bool? pin_memory=None) -> Tensor", L_full, FILL_ZERO, "kf.full (zeros)"},
    {"full_like(Tensor self, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, "
     "Device? device=None, bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", L_full_like,
     FILL_VALUE, "kf.full"},
    {"zeros_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
     "bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", L_full_like, FILL_ZERO, "kf.full"},
    {"ones_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
     "bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", L_full_like, FILL_ONE, "kf.full"},
    {"empty_like(Tensor self, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
     "bool? pin_memory=None, MemoryFormat? memory_format=None) -> Tensor", L_full_like, FILL_ZERO,
     "kf.full (zeros)"},
    {"new_zeros(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
     "Device? device=None, bool? pin_memory=None) -> Tensor", L_full_like, FILL_ZERO, "kf.full"},
    {"new_ones(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
     "Device? device=None, bool? pin_memory=None) -> Tensor", L_full_like, FILL_ONE, "kf.full"},
    {"new_empty(Tensor self, SymInt[] size, *, ScalarType? dtype=None, Layout? layout=None, "
     "Device? device=None, bool? pin_memory=None) -> Tensor", L_full_like, FILL_ZERO, "kf.full (zeros)"},
    {"new_full(Tensor self, SymInt[] size, Scalar fill_value, *, ScalarType? dtype=None, Layout? layout=None, "
     "Device? device=None, bool? pin_memory=None) -> Tensor", L_full_like, FILL_VALUE, "kf.full"},
    {"arange(Scalar end, *, ScalarType? dtype=None, Layout? layout=None, Device? device=None, "
     "bool? pin_memory=None) -> Tensor", L_arange, KF_OP_ARANGE, NULL},
    {"arange.start(Scalar start, Scalar end, *, ScalarType? dtype=None, Layout? layout=None, "
     "Device? device=None, bool? pin_memory=None) -> Tensor", L_arange, KF_OP_ARANGE, NULL},
    {"arange.start_step(Scalar start, Scalar end, Scalar step=1, *, ScalarType? dtype=None, "
     "Layout? layout=None, Device? device=None, bool? pin_memory=None) -> Tensor", L_arange, KF_OP_ARANGE, NULL},

    /* reductions */
    {"sum(Tensor self, *, ScalarType? dtype=None) -> Tensor", L_reduce, KF_OP_SUM, NULL},
    {"sum.dim_IntList(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor",
     L_reduce, KF_OP_SUM, NULL},
    {"mean(Tensor self, *, ScalarType? dtype=None) -> Tensor", L_reduce, KF_OP_MEAN, NULL},
    {"mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", L_reduce,
     KF_OP_MEAN, NULL},
    {"prod(Tensor self, *, ScalarType? dtype=None) -> Tensor", L_reduce, KF_OP_PROD, NULL},
    {"prod.dim_int(Tensor self, int dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor", L_reduce,
     KF_OP_PROD, NULL},
    {"amax(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", L_reduce, KF_OP_AMAX, NULL},
    {"amin(Tensor self, int[1] dim=[], bool keepdim=False) -> Tensor", L_reduce, KF_OP_AMIN, NULL},
    {"max(Tensor self) -> Tensor", L_reduce, KF_OP_AMAX, "kf.amax over every dim"},
    {"min(Tensor self) -> Tensor", L_reduce, KF_OP_AMIN, "kf.amin over every dim"},
    {"max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", L_max_dim,
     KF_OP_MAX_DIM, NULL},
    {"min.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)", L_max_dim,
     KF_OP_MIN_DIM, NULL},
    {"argmax(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", L_argmax, KF_OP_ARGMAX, NULL},
    {"argmin(Tensor self, int? dim=None, bool keepdim=False) -> Tensor", L_argmax, KF_OP_ARGMIN, NULL},
    {"any(Tensor self) -> Tensor", L_reduce, KF_OP_ANY, NULL},
    {"any.dim(Tensor self, int dim, bool keepdim=False) -> Tensor", L_reduce, KF_OP_ANY, NULL},
    {"any.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor", L_reduce, KF_OP_ANY, NULL},
    {"all(Tensor self) -> Tensor", L_reduce, KF_OP_ALL, NULL},
    {"all.dim(Tensor self, int dim, bool keepdim=False) -> Tensor", L_reduce, KF_OP_ALL, NULL},
    {"all.dims(Tensor self, int[]? dim=None, bool keepdim=False) -> Tensor", L_reduce, KF_OP_ALL, NULL},
    {"var(Tensor self, bool unbiased=True) -> Tensor", L_var, VAR_VAR, "kf.var"},
    {"var.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor", L_var, VAR_VAR,
     "kf.var"},
    {"var.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor",
     L_var, VAR_VAR, "kf.var"},
    {"std(Tensor self, bool unbiased=True) -> Tensor", L_var, VAR_STD, "kf.sqrt(kf.var)"},
    {"std.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> Tensor", L_var, VAR_STD,
     "kf.sqrt(kf.var)"},
    {"std.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) -> Tensor",
     L_var, VAR_STD, "kf.sqrt(kf.var)"},
    {"var_mean(Tensor self, bool unbiased=True) -> (Tensor, Tensor)", L_var, VAR_VAR | VAR_MEAN,
     "kf.var, kf.mean"},
    {"var_mean.dim(Tensor self, int[1]? dim, bool unbiased=True, bool keepdim=False) -> (Tensor, Tensor)", L_var,
     VAR_VAR | VAR_MEAN, "kf.var, kf.mean"},
    {"var_mean.correction(Tensor self, int[1]? dim=None, *, Scalar? correction=None, bool keepdim=False) "
     "-> (Tensor, Tensor)", L_var, VAR_VAR | VAR_MEAN, "kf.var, kf.mean"},
    {"linalg_vector_norm(Tensor self, Scalar ord=2, int[1]? dim=None, bool keepdim=False, *, "
     "ScalarType? dtype=None) -> Tensor", L_norm, KF_OP_NORM, NULL},
    {"norm.Scalar(Tensor self, Scalar p=2) -> Tensor", L_norm, KF_OP_NORM, NULL},
    {"norm.ScalarOpt_dim(Tensor self, Scalar? p, int[1] dim, bool keepdim=False) -> Tensor", L_norm, KF_OP_NORM,
     NULL},
    {"cumsum(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", L_scan, KF_OP_CUMSUM, NULL},
    {"cumprod(Tensor self, int dim, *, ScalarType? dtype=None) -> Tensor", L_scan, KF_OP_CUMPROD, NULL},

    /* normalisations */
    {"_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", L_softmax, KF_OP_SOFTMAX, NULL},
    {"softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", L_softmax, KF_OP_SOFTMAX, NULL},
    {"_log_softmax(Tensor self, int dim, bool half_to_float) -> Tensor", L_softmax, KF_OP_LOG_SOFTMAX, NULL},
    {"log_softmax.int(Tensor self, int dim, ScalarType? dtype=None) -> Tensor", L_softmax, KF_OP_LOG_SOFTMAX,
     NULL},
    {"native_layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight, Tensor? bias, float eps) "
     "-> (Tensor, Tensor, Tensor)", L_layer_norm, KF_OP_LAYER_NORM, NULL},
    {"layer_norm(Tensor input, SymInt[] normalized_shape, Tensor? weight=None, Tensor? bias=None, "
     "float eps=1.0000000000000001e-05, bool cudnn_enable=True) -> Tensor", L_layer_norm, KF_OP_LAYER_NORM,
     "kf.layer_norm (result 0)"},
    {"native_group_norm(Tensor input, Tensor? weight, Tensor? bias, SymInt N, SymInt C, SymInt HxW, int group, "
     "float eps) -> (Tensor, Tensor, Tensor)", L_group_norm, KF_OP_GROUP_NORM, NULL},
    {"group_norm(Tensor input, int num_groups, Tensor? weight=None, Tensor? bias=None, "
     "float eps=1.0000000000000001e-05, bool cudnn_enabled=True) -> Tensor", L_group_norm, KF_OP_GROUP_NORM,
     "kf.group_norm (result 0)"},
    {"_native_batch_norm_legit_no_training(Tensor input, Tensor? weight, Tensor? bias, Tensor running_mean, "
     "Tensor running_var, float momentum, float eps) -> (Tensor, Tensor, Tensor)", L_batch_norm,
     KF_OP_BATCH_NORM, "kf.batch_norm (result 0 only)"},
    {"_native_batch_norm_legit(Tensor input, Tensor? weight, Tensor? bias, Tensor(a!) running_mean, "
     "Tensor(b!) running_var, bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)",
     L_batch_norm, KF_OP_BATCH_NORM, "kf.batch_norm (result 0 only)"},
    {"_native_batch_norm_legit.no_stats(Tensor input, Tensor? weight, Tensor? bias, bool training, "
     "float momentum, float eps) -> (Tensor, Tensor, Tensor)", L_batch_norm, KF_OP_BATCH_NORM,
     "kf.batch_norm without statistics (result 0 only)"},
    {"native_batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, "
     "bool training, float momentum, float eps) -> (Tensor, Tensor, Tensor)", L_batch_norm, KF_OP_BATCH_NORM,
     "kf.batch_norm (result 0 only)"},
    {"batch_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, "
     "bool training, float momentum, float eps, bool cudnn_enabled) -> Tensor", L_batch_norm, KF_OP_BATCH_NORM,
     NULL},

    {"instance_norm(Tensor input, Tensor? weight, Tensor? bias, Tensor? running_mean, Tensor? running_var, "
     "bool use_input_stats, float momentum, float eps, bool cudnn_enabled) -> Tensor", L_instance_norm, 0,
     "kf.group_norm (groups = C), or kf.batch_norm without use_input_stats"},
    {"glu(Tensor self, int dim=-1) -> Tensor", L_glu, 0, "kf.split + kf.sigmoid + kf.mul"},

    /* matrix products */
    {"mm(Tensor self, Tensor mat2) -> Tensor", L_mm, KF_OP_MM, NULL},
    {"bmm(Tensor self, Tensor mat2) -> Tensor", L_mm, KF_OP_BMM, NULL},
    {"addmm(Tensor self, Tensor mat1, Tensor mat2, *, Scalar beta=1, Scalar alpha=1) -> Tensor", L_addmm,
     KF_OP_ADDMM, NULL},
    {"matmul(Tensor self, Tensor other) -> Tensor", L_mm, 0, "kf.mm or kf.bmm with reshapes and expands"},
    {"mv(Tensor self, Tensor vec) -> Tensor", L_mm, 0, "kf.mm with reshapes"},
    {"dot(Tensor self, Tensor tensor) -> Tensor", L_mm, 0, "kf.mm with reshapes"},
    {"linear(Tensor input, Tensor weight, Tensor? bias=None) -> Tensor", L_linear, 0,
     "kf.permute + kf.addmm (kf.mm without bias), reshapes for N-d input"},
    {"baddbmm(Tensor self, Tensor batch1, Tensor batch2, *, Scalar beta=1, Scalar alpha=1) -> Tensor",
     L_baddbmm, 0, "kf.bmm, kf.mul, kf.add"},

    /* convolution, pooling */
    {"convolution(Tensor input, Tensor weight, Tensor? bias, SymInt[] stride, SymInt[] padding, "
     "SymInt[] dilation, bool transposed, SymInt[] output_padding, SymInt groups) -> Tensor", L_conv,
     CONV_GENERIC, "kf.conv"},
    {"conv1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], SymInt[1] padding=[0], "
     "SymInt[1] dilation=[1], SymInt groups=1) -> Tensor", L_conv, CONV_N, "kf.conv"},
    {"conv2d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], "
     "SymInt[2] padding=[0, 0], SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor", L_conv, CONV_N,
     "kf.conv"},
    {"conv3d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], "
     "SymInt[3] padding=[0, 0, 0], SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor", L_conv, CONV_N,
     "kf.conv"},
    {"conv1d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], "
     "str padding=\"valid\", SymInt[1] dilation=[1], SymInt groups=1) -> Tensor", L_conv, CONV_N_PADSTR,
     "kf.conv (kf.pad first for uneven 'same')"},
    {"conv2d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], "
     "str padding=\"valid\", SymInt[2] dilation=[1, 1], SymInt groups=1) -> Tensor", L_conv, CONV_N_PADSTR,
     "kf.conv (kf.pad first for uneven 'same')"},
    {"conv3d.padding(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], "
     "str padding=\"valid\", SymInt[3] dilation=[1, 1, 1], SymInt groups=1) -> Tensor", L_conv, CONV_N_PADSTR,
     "kf.conv (kf.pad first for uneven 'same')"},
    {"conv_transpose1d(Tensor input, Tensor weight, Tensor? bias=None, SymInt[1] stride=[1], "
     "SymInt[1] padding=[0], SymInt[1] output_padding=[0], SymInt groups=1, SymInt[1] dilation=[1]) -> Tensor",
     L_conv, CONV_T, "kf.conv {transposed}"},
    {"conv_transpose2d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[2] stride=[1, 1], "
     "SymInt[2] padding=[0, 0], SymInt[2] output_padding=[0, 0], SymInt groups=1, SymInt[2] dilation=[1, 1]) "
     "-> Tensor", L_conv, CONV_T, "kf.conv {transposed}"},
    {"conv_transpose3d.input(Tensor input, Tensor weight, Tensor? bias=None, SymInt[3] stride=[1, 1, 1], "
     "SymInt[3] padding=[0, 0, 0], SymInt[3] output_padding=[0, 0, 0], SymInt groups=1, "
     "SymInt[3] dilation=[1, 1, 1]) -> Tensor", L_conv, CONV_T, "kf.conv {transposed}"},
    {"max_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], int[1] dilation=[1], "
     "bool ceil_mode=False) -> Tensor", L_max_pool, 1, "kf.max_pool (result 0)"},
    {"max_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, int[2] dilation=1, "
     "bool ceil_mode=False) -> Tensor", L_max_pool, 2, "kf.max_pool (result 0)"},
    {"max_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, int[3] dilation=1, "
     "bool ceil_mode=False) -> Tensor", L_max_pool, 3, "kf.max_pool (result 0)"},
    {"max_pool1d_with_indices(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], "
     "int[1] dilation=[1], bool ceil_mode=False) -> (Tensor, Tensor)", L_max_pool, 1 | 8, "kf.max_pool"},
    {"max_pool2d_with_indices(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, "
     "int[2] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)", L_max_pool, 2 | 8, "kf.max_pool"},
    {"max_pool3d_with_indices(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, "
     "int[3] dilation=1, bool ceil_mode=False) -> (Tensor, Tensor)", L_max_pool, 3 | 8, "kf.max_pool"},
    {"avg_pool1d(Tensor self, int[1] kernel_size, int[1] stride=[], int[1] padding=[0], bool ceil_mode=False, "
     "bool count_include_pad=True) -> Tensor", L_avg_pool, 1, "kf.avg_pool"},
    {"avg_pool2d(Tensor self, int[2] kernel_size, int[2] stride=[], int[2] padding=0, bool ceil_mode=False, "
     "bool count_include_pad=True, int? divisor_override=None) -> Tensor", L_avg_pool, 2, "kf.avg_pool"},
    {"avg_pool3d(Tensor self, int[3] kernel_size, int[3] stride=[], int[3] padding=0, bool ceil_mode=False, "
     "bool count_include_pad=True, int? divisor_override=None) -> Tensor", L_avg_pool, 3, "kf.avg_pool"},
    {"adaptive_avg_pool1d(Tensor self, int[1] output_size) -> Tensor", L_adaptive_avg_pool, 1,
     "kf.adaptive_avg_pool"},
    {"adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor", L_adaptive_avg_pool, 2,
     "kf.adaptive_avg_pool"},
    {"adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor", L_adaptive_avg_pool, 3,
     "kf.adaptive_avg_pool"},
    {"_adaptive_avg_pool2d(Tensor self, SymInt[2] output_size) -> Tensor", L_adaptive_avg_pool, 2,
     "kf.adaptive_avg_pool"},
    {"_adaptive_avg_pool3d(Tensor self, SymInt[3] output_size) -> Tensor", L_adaptive_avg_pool, 3,
     "kf.adaptive_avg_pool"},

    {"upsample_nearest1d(Tensor self, SymInt[1] output_size, float? scales=None) -> Tensor", L_upsample,
     1 | UP_NEAREST, "kf.upsample {mode = nearest}"},
    {"upsample_nearest1d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor", L_upsample,
     1 | UP_NEAREST, "kf.upsample {mode = nearest}"},
    {"upsample_nearest2d(Tensor self, SymInt[2] output_size, float? scales_h=None, float? scales_w=None) "
     "-> Tensor", L_upsample, 2 | UP_NEAREST, "kf.upsample {mode = nearest}"},
    {"upsample_nearest2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor", L_upsample,
     2 | UP_NEAREST, "kf.upsample {mode = nearest}"},
    {"upsample_nearest3d(Tensor self, SymInt[3] output_size, float? scales_d=None, float? scales_h=None, "
     "float? scales_w=None) -> Tensor", L_upsample, 3 | UP_NEAREST, "kf.upsample {mode = nearest}"},
    {"upsample_nearest3d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor", L_upsample,
     3 | UP_NEAREST, "kf.upsample {mode = nearest}"},
    {"_upsample_nearest_exact1d(Tensor self, SymInt[1] output_size, float? scales=None) -> Tensor", L_upsample,
     1 | UP_EXACT, "kf.upsample {mode = nearest-exact}"},
    {"_upsample_nearest_exact1d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor",
     L_upsample, 1 | UP_EXACT, "kf.upsample {mode = nearest-exact}"},
    {"_upsample_nearest_exact2d(Tensor self, SymInt[2] output_size, float? scales_h=None, "
     "float? scales_w=None) -> Tensor", L_upsample, 2 | UP_EXACT, "kf.upsample {mode = nearest-exact}"},
    {"_upsample_nearest_exact2d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor",
     L_upsample, 2 | UP_EXACT, "kf.upsample {mode = nearest-exact}"},
    {"_upsample_nearest_exact3d(Tensor self, SymInt[3] output_size, float? scales_d=None, "
     "float? scales_h=None, float? scales_w=None) -> Tensor", L_upsample, 3 | UP_EXACT,
     "kf.upsample {mode = nearest-exact}"},
    {"_upsample_nearest_exact3d.vec(Tensor input, SymInt[]? output_size, float[]? scale_factors) -> Tensor",
     L_upsample, 3 | UP_EXACT, "kf.upsample {mode = nearest-exact}"},
    {"upsample_linear1d(Tensor self, SymInt[1] output_size, bool align_corners, float? scales=None) -> Tensor",
     L_upsample, 1 | UP_LINEAR, "kf.upsample {mode = linear}"},
    {"upsample_linear1d.vec(Tensor input, SymInt[]? output_size, bool align_corners, float[]? scale_factors) "
     "-> Tensor", L_upsample, 1 | UP_LINEAR, "kf.upsample {mode = linear}"},
    {"upsample_bilinear2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, "
     "float? scales_w=None) -> Tensor", L_upsample, 2 | UP_LINEAR, "kf.upsample {mode = linear}"},
    {"upsample_bilinear2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, "
     "float[]? scale_factors) -> Tensor", L_upsample, 2 | UP_LINEAR, "kf.upsample {mode = linear}"},
    {"upsample_trilinear3d(Tensor self, SymInt[3] output_size, bool align_corners, float? scales_d=None, "
     "float? scales_h=None, float? scales_w=None) -> Tensor", L_upsample, 3 | UP_LINEAR,
     "kf.upsample {mode = linear}"},
    {"upsample_trilinear3d.vec(Tensor input, SymInt[]? output_size, bool align_corners, "
     "float[]? scale_factors) -> Tensor", L_upsample, 3 | UP_LINEAR, "kf.upsample {mode = linear}"},
    {"upsample_bicubic2d(Tensor self, SymInt[2] output_size, bool align_corners, float? scales_h=None, "
     "float? scales_w=None) -> Tensor", L_upsample, 2 | UP_CUBIC, "kf.upsample {mode = cubic}"},
    {"upsample_bicubic2d.vec(Tensor input, SymInt[]? output_size, bool align_corners, "
     "float[]? scale_factors) -> Tensor", L_upsample, 2 | UP_CUBIC, "kf.upsample {mode = cubic}"},

    /* attention */
    {"scaled_dot_product_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask=None, "
     "float dropout_p=0., bool is_causal=False, *, float? scale=None, bool enable_gqa=False) -> Tensor",
     L_sdpa, KF_OP_SDPA, "kf.sdpa (dropout_p must be 0)"},
    {"_scaled_dot_product_flash_attention_for_cpu(Tensor query, Tensor key, Tensor value, "
     "float dropout_p=0., bool is_causal=False, *, Tensor? attn_mask=None, float? scale=None) "
     "-> (Tensor output, Tensor logsumexp)", L_sdpa, KF_OP_SDPA, "kf.sdpa (result 0 only)"},

    /* recurrent layers (default IR), unrolled over time */
    {"lstm.input(Tensor input, Tensor[] hx, Tensor[] params, bool has_biases, int num_layers, float dropout, "
     "bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor, Tensor)", at_lower_rnn, AT_CELL_LSTM,
     "unrolled: kf.addmm, kf.split, kf.sigmoid, kf.tanh, kf.mul, kf.add, kf.cat per step"},
    {"gru.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, "
     "bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)", at_lower_rnn, AT_CELL_GRU,
     "unrolled: kf.addmm, kf.split, kf.sigmoid, kf.tanh, kf.mul, kf.add, kf.cat per step"},
    {"rnn_tanh.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, "
     "bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)", at_lower_rnn, AT_CELL_TANH,
     "unrolled: kf.addmm, kf.tanh, kf.cat per step"},
    {"rnn_relu.input(Tensor input, Tensor hx, Tensor[] params, bool has_biases, int num_layers, float dropout, "
     "bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)", at_lower_rnn, AT_CELL_RELU,
     "unrolled: kf.addmm, kf.relu, kf.cat per step"},
    {"lstm_cell(Tensor input, Tensor[] hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) "
     "-> (Tensor, Tensor)", at_lower_rnn_cell, AT_CELL_LSTM, "one LSTM step"},
    {"gru_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) "
     "-> Tensor", at_lower_rnn_cell, AT_CELL_GRU, "one GRU step"},
    {"rnn_tanh_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) "
     "-> Tensor", at_lower_rnn_cell, AT_CELL_TANH, "one RNN step"},
    {"rnn_relu_cell(Tensor input, Tensor hx, Tensor w_ih, Tensor w_hh, Tensor? b_ih=None, Tensor? b_hh=None) "
     "-> Tensor", at_lower_rnn_cell, AT_CELL_RELU, "one RNN step"},

    /* checks recorded by the exporter: nothing to compute */
    {"_assert_tensor_metadata(Tensor a, SymInt[]? size=None, SymInt[]? stride=None, ScalarType? dtype=None, "
     "*, Device? device=None, Layout? layout=None) -> ()", L_assert_metadata, 0,
     "checked against kfuse's types, then dropped"},
    {"_assert_scalar(Scalar self, str assert_msg) -> ()", L_noop, 0, "dropped"},
    {"sym_constrain_range_for_size(Scalar size, *, int? min=None, int? max=None) -> ()", L_noop, 0, "dropped"},
    {"_assert_async(Tensor self) -> ()", L_noop, 0, "dropped"},
    {"_assert_async.msg(Tensor self, str assert_msg) -> ()", L_noop, 0, "dropped"},
};

const int kf_aten_n_rows = (int)(sizeof kf_aten_rows / sizeof kf_aten_rows[0]);
