/* ir/infer.c — result types of every op from its operands and attributes.
 *
 * Used by the frontends (to type ops they create) and by the verifier (to
 * check declared types). Rules follow PyTorch: broadcasting, type promotion
 * with wrapped numbers and zero-dim tensors (c10's ResultTypeState), the
 * output-size formulas of convolution and pooling, and view strides. Results
 * of computing ops are contiguous; views carry the strides and storage offset
 * PyTorch would give them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfuse/ir.h"

#define FAIL(...)                                                             \
  do {                                                                        \
    fail(op, diag, __VA_ARGS__);                                              \
    return KF_ERR_INVALID;                                                    \
  } while (0)

static void fail(const kf_op *op, kf_diag *diag, const char *fmt, ...)
    KF_PRINTF(3, 4);
static void fail(const kf_op *op, kf_diag *diag, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  const char *file = op->graph && op->graph->origin ? op->graph->origin : NULL;
  kf_diag_error(diag, "%s%snode '%s' (kf.%s): %s", file ? file : "", file ? ": " : "",
                op->name, kf_opcode_name(op->code), msg);
}

static const kf_type *opt(const kf_op *op, int i) {
  return (i < op->n_operands && op->operands[i]) ? &op->operands[i]->type
                                                 : NULL;
}

static bool is_tensor(const kf_type *t) { return t && t->kind == KF_TYPE_TENSOR; }

/* ---- type promotion (c10 ResultTypeState) ------------------------------- */

typedef struct rts {
  kf_dtype dim, zero, wrapped;
} rts;

static kf_dtype promote_skip(kf_dtype a, kf_dtype b) {
  if (a == KF_DTYPE_INVALID) return b;
  if (b == KF_DTYPE_INVALID) return a;
  return kf_dtype_promote(a, b);
}

static void rts_add(rts *s, const kf_type *t) {
  if (!t) return;
  if (t->kind == KF_TYPE_SCALAR) {
    kf_dtype d = kf_dtype_is_float(t->dtype) ? KF_DTYPE_F32 : t->dtype;
    s->wrapped = promote_skip(s->wrapped, d);
  } else if (t->rank == 0) {
    s->zero = promote_skip(s->zero, t->dtype);
  } else {
    s->dim = promote_skip(s->dim, t->dtype);
  }
}

static kf_dtype combine(kf_dtype higher, kf_dtype lower) {
  if (kf_dtype_is_float(higher)) return higher;
  if (higher == KF_DTYPE_BOOL || kf_dtype_is_float(lower))
    return promote_skip(higher, lower);
  if (higher != KF_DTYPE_INVALID) return higher;
  return lower;
}

static kf_dtype rts_result(const rts *s) {
  return combine(s->dim, combine(s->zero, s->wrapped));
}

static kf_dtype result_type2(const kf_type *a, const kf_type *b) {
  rts s = {0, 0, 0};
  rts_add(&s, a);
  rts_add(&s, b);
  return rts_result(&s);
}

/* ---- shapes -------------------------------------------------------------- */

static bool broadcast(const kf_type *a, const kf_type *b, int *rank,
                      int64_t *shape) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  for (int i = 0; i < r; i++) {
    int ia = a->rank - r + i, ib = b->rank - r + i;
    int64_t da = ia >= 0 ? a->shape[ia] : 1, db = ib >= 0 ? b->shape[ib] : 1;
    if (da != db && da != 1 && db != 1) return false;
    shape[i] = da == 1 ? db : da;
  }
  *rank = r;
  return true;
}

/* Broadcast all tensor operands (scalars take no part). */
static kf_status broadcast_operands(const kf_op *op, kf_type *res,
                                    kf_diag *diag) {
  kf_type acc;
  kf_type_init_tensor(&acc, KF_DTYPE_F32, 0, NULL);
  bool any = false;
  for (int i = 0; i < op->n_operands; i++) {
    const kf_type *t = opt(op, i);
    if (!is_tensor(t)) continue;
    int r;
    int64_t sh[KF_MAX_RANK];
    if (!broadcast(&acc, t, &r, sh)) {
      char a[256], b[256];
      kf_type_str(&acc, a, sizeof a);
      kf_type_str(t, b, sizeof b);
      FAIL("operand shapes do not broadcast: %s and %s", a, b);
    }
    kf_type_init_tensor(&acc, KF_DTYPE_F32, r, sh);
    any = true;
  }
  if (!any) FAIL("needs at least one tensor operand");
  res->kind = KF_TYPE_TENSOR;
  res->rank = acc.rank;
  memcpy(res->shape, acc.shape, sizeof acc.shape);
  kf_type_set_contiguous(res);
  return KF_OK;
}

/* PyTorch's computeStride: strides of a view with a new shape, or false
 * when the old layout cannot be viewed that way. */
static bool view_strides(const kf_type *in, const int64_t *shape, int rank,
                         int64_t *out) {
  int64_t numel = kf_type_numel(in);
  if (numel == 0) return false;
  int view_d = rank - 1;
  int64_t chunk_base_stride = in->rank ? in->strides[in->rank - 1] : 1;
  int64_t tensor_numel = 1, view_numel = 1;
  for (int td = in->rank - 1; td >= 0; td--) {
    tensor_numel *= in->shape[td];
    if (td == 0 || (in->shape[td - 1] != 1 &&
                    in->strides[td - 1] != tensor_numel * chunk_base_stride)) {
      while (view_d >= 0 &&
             (view_numel < tensor_numel || shape[view_d] == 1)) {
        out[view_d] = view_numel * chunk_base_stride;
        view_numel *= shape[view_d];
        view_d--;
      }
      if (view_numel != tensor_numel) return false;
      if (td > 0) {
        chunk_base_stride = in->strides[td - 1];
        tensor_numel = 1;
        view_numel = 1;
      }
    }
  }
  return view_d == -1;
}

static int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d,
                        bool ceil_mode) {
  int64_t num = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  if (ceil_mode && (o - 1) * s >= in + p) o--;
  return o;
}

static bool dims_ok(const int64_t *dims, int n, int rank) {
  for (int i = 0; i < n; i++) {
    if (dims[i] < 0 || dims[i] >= rank) return false;
    if (i && dims[i] <= dims[i - 1]) return false;
  }
  return true;
}

static void reduce_shape(const kf_type *x, const int64_t *dims, int nd,
                         bool keepdim, kf_type *r, kf_dtype dt) {
  int64_t sh[KF_MAX_RANK];
  int k = 0;
  for (int i = 0; i < x->rank; i++) {
    bool red = false;
    for (int j = 0; j < nd; j++) red |= dims[j] == i;
    if (!red)
      sh[k++] = x->shape[i];
    else if (keepdim)
      sh[k++] = 1;
  }
  kf_type_init_tensor(r, dt, k, sh);
}

static kf_dtype float_of(kf_dtype t) {
  return kf_dtype_is_float(t) ? t : KF_DTYPE_F32;
}

static kf_dtype acc_of(kf_dtype t) {
  return (t == KF_DTYPE_F16 || t == KF_DTYPE_BF16) ? KF_DTYPE_F32 : t;
}

/* ---- per kind ------------------------------------------------------------ */

static kf_status infer_source(const kf_op *op, kf_type *res, kf_diag *diag) {
  switch (op->code) {
  case KF_OP_PARAM:
    if (res[0].kind != KF_TYPE_TENSOR) FAIL("result must be a tensor");
    return KF_OK;
  case KF_OP_SCALAR: {
    kf_number v = kf_op_get_number(op, "value");
    kf_type_init_scalar(&res[0], v.kind == KF_NUM_FLOAT ? KF_DTYPE_F64
                                 : v.kind == KF_NUM_INT ? KF_DTYPE_I64
                                                        : KF_DTYPE_BOOL);
    return KF_OK;
  }
  case KF_OP_FULL:
    if (res[0].kind != KF_TYPE_TENSOR) FAIL("result must be a tensor");
    kf_type_set_contiguous(&res[0]);
    return KF_OK;
  case KF_OP_ARANGE: {
    if (res[0].kind != KF_TYPE_TENSOR || res[0].rank != 1)
      FAIL("result must be a 1-d tensor");
    double a = kf_number_as_double(kf_op_get_number(op, "start"));
    double b = kf_number_as_double(kf_op_get_number(op, "end"));
    double s = kf_number_as_double(kf_op_get_number(op, "step"));
    if (s == 0) FAIL("step must be non-zero");
    double n = (b - a) / s;
    int64_t len = n <= 0 ? 0 : (int64_t)n;
    if ((double)len < n) len++;
    if (len != res[0].shape[0])
      FAIL("result has %lld elements, arange gives %lld",
           (long long)res[0].shape[0], (long long)len);
    kf_type_set_contiguous(&res[0]);
    return KF_OK;
  }
  default: break;
  }
  FAIL("not a source op");
}

static kf_status infer_unary(const kf_op *op, kf_type *res, kf_diag *diag) {
  const kf_type *x = opt(op, 0);
  if (!is_tensor(x)) FAIL("operand must be a tensor");
  kf_dtype in = x->dtype, dt = in;
  kf_dtype declared = res[0].dtype;
  switch (op->code) {
  /* the one-row ops of ops.def: their RESULT column */
#define EW1_DT_SAME in
#define EW1_DT_FLOAT float_of(in)
#define EW1_DT_BOOL KF_DTYPE_BOOL
#define KF_OP(ID, NAME, KIND, OPERANDS, RESULTS, ATTRS)
#define KF_EW1(ID, NAME, RESULT, INTERP, TORCH) \
  case KF_OP_##ID: dt = EW1_DT_##RESULT; break;
#include "kfuse/ops.def"
#undef KF_EW1
#undef KF_OP
#undef EW1_DT_SAME
#undef EW1_DT_FLOAT
#undef EW1_DT_BOOL
  case KF_OP_COPY:
    dt = in;
    break;
  case KF_OP_HARDTANH: case KF_OP_CLAMP: {
    rts s = {0, 0, 0};
    rts_add(&s, x);
    for (int i = 0; i < 2; i++) {
      const char *nm = op->code == KF_OP_CLAMP ? (i ? "max" : "min")
                                               : (i ? "max_val" : "min_val");
      if (!kf_op_has_attr(op, nm)) continue;
      kf_number v = kf_op_get_number(op, nm);
      kf_type st;
      kf_type_init_scalar(&st, v.kind == KF_NUM_FLOAT ? KF_DTYPE_F64
                               : v.kind == KF_NUM_INT ? KF_DTYPE_I64
                                                      : KF_DTYPE_BOOL);
      rts_add(&s, &st);
    }
    dt = op->code == KF_OP_CLAMP ? rts_result(&s) : in;
    break;
  }
  case KF_OP_BITWISE_NOT:
    if (kf_dtype_is_float(in)) FAIL("bitwise_not needs an integer or bool tensor");
    dt = in;
    break;
  case KF_OP_CAST:
    if (declared == KF_DTYPE_INVALID) FAIL("cast needs a declared result dtype");
    dt = declared;
    break;
  default:
    dt = float_of(in);
    break;
  }
  kf_type_init_tensor(&res[0], dt, x->rank, x->shape);
  return KF_OK;
}

static kf_status infer_binary(const kf_op *op, kf_type *res, kf_diag *diag) {
  const kf_type *a = opt(op, 0), *b = opt(op, 1);
  if (!a || !b) FAIL("needs two operands");
  kf_status st = broadcast_operands(op, res, diag);
  if (st) return st;
  kf_dtype dt = result_type2(a, b);
  switch (kf_op_ew2_result(op->code)) {
  case KF_EW2_CMP:
  case KF_EW2_LOGICAL: dt = KF_DTYPE_BOOL; break;
  case KF_EW2_FLOAT: dt = float_of(dt); break;
  case KF_EW2_INT:
    if (kf_dtype_is_float(dt)) FAIL("bitwise ops need integer or bool operands");
    break;
  case KF_EW2_PROMOTE: break;
  case KF_EW2_NONE:
    /* the binary ops with rules of their own */
    if (op->code == KF_OP_DIV && !kf_op_has_attr(op, "rounding_mode")) {
      dt = float_of(dt);
    } else if (op->code == KF_OP_DIV) {
      const char *m = kf_op_get_str(op, "rounding_mode");
      if (strcmp(m, "trunc") && strcmp(m, "floor"))
        FAIL("rounding_mode must be \"trunc\" or \"floor\", not \"%s\"", m);
    } else if (op->code == KF_OP_SUB && dt == KF_DTYPE_BOOL) {
      FAIL("subtraction of bool tensors is not defined");
    }
    break;
  }
  res[0].dtype = dt;
  return KF_OK;
}

static kf_status infer_where(const kf_op *op, kf_type *res, kf_diag *diag) {
  const kf_type *c = opt(op, 0);
  if (!is_tensor(c) || c->dtype != KF_DTYPE_BOOL)
    FAIL("condition must be a bool tensor");
  kf_status st = broadcast_operands(op, res, diag);
  if (st) return st;
  res[0].dtype = result_type2(opt(op, 1), opt(op, 2));
  return KF_OK;
}

static kf_status infer_view(const kf_op *op, kf_type *res, kf_diag *diag) {
  const kf_type *x = opt(op, 0);
  if (!is_tensor(x)) FAIL("operand must be a tensor");
  kf_type r = *x;
  switch (op->code) {
  case KF_OP_RESHAPE: {
    if (res[0].kind != KF_TYPE_TENSOR) FAIL("result must be a tensor");
    if (kf_type_numel(&res[0]) != kf_type_numel(x))
      FAIL("reshape from %lld to %lld elements",
           (long long)kf_type_numel(x), (long long)kf_type_numel(&res[0]));
    r.rank = res[0].rank;
    memcpy(r.shape, res[0].shape, sizeof r.shape);
    if (!view_strides(x, r.shape, r.rank, r.strides)) kf_type_set_contiguous(&r);
    break;
  }
  case KF_OP_PERMUTE: {
    int n;
    const int64_t *d = kf_op_get_ints(op, "dims", &n);
    if (n != x->rank) FAIL("dims has %d entries for a rank-%d tensor", n, x->rank);
    bool seen[KF_MAX_RANK] = {0};
    for (int i = 0; i < n; i++) {
      if (d[i] < 0 || d[i] >= n || seen[d[i]]) FAIL("dims is not a permutation");
      seen[d[i]] = true;
      r.shape[i] = x->shape[d[i]];
      r.strides[i] = x->strides[d[i]];
    }
    break;
  }
  case KF_OP_EXPAND: {
    const kf_type *t = &res[0];
    if (t->kind != KF_TYPE_TENSOR || t->rank < x->rank)
      FAIL("result rank must be at least the operand's");
    r.rank = t->rank;
    for (int i = 0; i < t->rank; i++) {
      int j = x->rank - t->rank + i;
      r.shape[i] = t->shape[i];
      if (j < 0) {
        r.strides[i] = 0;
      } else if (x->shape[j] == t->shape[i]) {
        r.strides[i] = x->strides[j];
      } else if (x->shape[j] == 1) {
        r.strides[i] = 0;
      } else {
        FAIL("cannot expand size %lld to %lld at dim %d",
             (long long)x->shape[j], (long long)t->shape[i], i);
      }
    }
    break;
  }
  case KF_OP_SLICE: {
    int64_t d = kf_op_get_int(op, "dim"), s = kf_op_get_int(op, "start"),
            e = kf_op_get_int(op, "end"), st = kf_op_get_int(op, "step");
    if (d < 0 || d >= x->rank) FAIL("dim %lld out of range", (long long)d);
    if (st < 1) FAIL("step must be positive");
    if (s < 0 || e < s || e > x->shape[d])
      FAIL("slice [%lld, %lld) out of range for size %lld", (long long)s,
           (long long)e, (long long)x->shape[d]);
    r.shape[d] = (e - s + st - 1) / st;
    r.offset += s * x->strides[d];
    r.strides[d] *= st;
    break;
  }
  case KF_OP_SELECT: {
    int64_t d = kf_op_get_int(op, "dim"), i = kf_op_get_int(op, "index");
    if (d < 0 || d >= x->rank) FAIL("dim %lld out of range", (long long)d);
    if (i < 0 || i >= x->shape[d]) FAIL("index %lld out of range", (long long)i);
    r.offset += i * x->strides[d];
    for (int k = (int)d; k + 1 < x->rank; k++) {
      r.shape[k] = x->shape[k + 1];
      r.strides[k] = x->strides[k + 1];
    }
    r.rank--;
    break;
  }
  case KF_OP_AS_STRIDED: {
    int n, m;
    const int64_t *sz = kf_op_get_ints(op, "size", &n);
    const int64_t *sd = kf_op_get_ints(op, "stride", &m);
    if (n != m || n > KF_MAX_RANK) FAIL("size and stride lengths differ");
    r.rank = n;
    for (int i = 0; i < n; i++) {
      if (sz[i] < 0 || sd[i] < 0) FAIL("negative size or stride");
      r.shape[i] = sz[i];
      r.strides[i] = sd[i];
    }
    r.offset = kf_op_get_int(op, "offset");
    /* The view must stay inside the operand's elements. */
    int64_t hi = r.offset;
    for (int i = 0; i < n; i++)
      if (sz[i] > 0) hi += (sz[i] - 1) * sd[i];
    if (r.offset < 0 || (kf_type_numel(&r) > 0 && hi >= kf_type_numel(x) + x->offset))
      FAIL("as_strided view reaches outside its operand's storage");
    break;
  }
  case KF_OP_UNFOLD: {
    int64_t d = kf_op_get_int(op, "dim"), sz = kf_op_get_int(op, "size"),
            st = kf_op_get_int(op, "step");
    if (x->rank == KF_MAX_RANK) FAIL("rank too large");
    if (d < 0 || d >= (x->rank ? x->rank : 1)) FAIL("dim out of range");
    if (st < 1 || sz < 0) FAIL("bad size or step");
    int64_t len = x->rank ? x->shape[d] : 1;
    if (sz > len) FAIL("size %lld exceeds dim size %lld", (long long)sz, (long long)len);
    if (x->rank) {
      r.shape[d] = (len - sz) / st + 1;
      r.strides[d] = x->strides[d] * st;
      r.shape[r.rank] = sz;
      r.strides[r.rank] = x->strides[d];
      r.rank++;
    } else {
      r.rank = 1;
      r.shape[0] = sz;
      r.strides[0] = 1;
    }
    break;
  }
  default: FAIL("not a view op");
  }
  res[0] = r;
  return KF_OK;
}

static kf_status infer_shape_ops(const kf_op *op, kf_type *res, kf_diag *diag) {
  const kf_type *x = opt(op, 0);
  switch (op->code) {
  case KF_OP_CAT: {
    int64_t d = kf_op_get_int(op, "dim");
    const kf_type *ref = NULL;
    kf_dtype dt = KF_DTYPE_INVALID;
    int64_t total = 0;
    for (int i = 0; i < op->n_operands; i++) {
      const kf_type *t = opt(op, i);
      if (!is_tensor(t)) FAIL("operand %d must be a tensor", i);
      dt = promote_skip(dt, t->dtype);
      if (t->rank == 1 && t->shape[0] == 0) continue; /* legacy empty */
      if (!ref) ref = t;
      if (t->rank != ref->rank) FAIL("operand %d has rank %d, expected %d", i, t->rank, ref->rank);
      if (d < 0 || d >= t->rank) FAIL("dim %lld out of range", (long long)d);
      for (int k = 0; k < t->rank; k++)
        if (k != d && t->shape[k] != ref->shape[k])
          FAIL("operand %d differs in size at dim %d", i, k);
      total += t->shape[d];
    }
    if (!ref) FAIL("needs at least one non-empty operand");
    kf_type_init_tensor(&res[0], dt, ref->rank, ref->shape);
    res[0].shape[d] = total;
    kf_type_set_contiguous(&res[0]);
    return KF_OK;
  }
  case KF_OP_SPLIT: {
    if (!is_tensor(x)) FAIL("operand must be a tensor");
    int64_t d = kf_op_get_int(op, "dim");
    int n;
    const int64_t *sz = kf_op_get_ints(op, "sizes", &n);
    if (d < 0 || d >= x->rank) FAIL("dim out of range");
    if (n != op->n_results) FAIL("%d sizes for %d results", n, op->n_results);
    int64_t off = 0;
    for (int i = 0; i < n; i++) {
      if (sz[i] < 0) FAIL("negative split size");
      res[i] = *x;
      res[i].shape[d] = sz[i];
      res[i].offset = x->offset + off * x->strides[d];
      off += sz[i];
    }
    if (off != x->shape[d])
      FAIL("sizes add up to %lld, dim has %lld", (long long)off, (long long)x->shape[d]);
    return KF_OK;
  }
  case KF_OP_PAD: {
    if (!is_tensor(x)) FAIL("operand must be a tensor");
    int n;
    const int64_t *p = kf_op_get_ints(op, "pad", &n);
    if (n % 2 || n / 2 > x->rank) FAIL("pad has %d entries for rank %d", n, x->rank);
    kf_type_init_tensor(&res[0], x->dtype, x->rank, x->shape);
    for (int i = 0; i < n / 2; i++) {
      int dd = x->rank - 1 - i;
      res[0].shape[dd] += p[2 * i] + p[2 * i + 1];
      if (res[0].shape[dd] < 0) FAIL("padding makes dim %d negative", dd);
    }
    kf_type_set_contiguous(&res[0]);
    return KF_OK;
  }
  case KF_OP_INDEX: {
    if (!is_tensor(x)) FAIL("operand must be a tensor");
    int n;
    const int64_t *dims = kf_op_get_ints(op, "dims", &n);
    int k = op->n_operands - 1;
    if (n != k || k < 1) FAIL("dims has %d entries for %d index operands", n, k);
    if (!dims_ok(dims, n, x->rank)) FAIL("dims must be increasing and in range");
    kf_type b;
    kf_type_init_tensor(&b, KF_DTYPE_I64, 0, NULL);
    for (int i = 0; i < k; i++) {
      const kf_type *t = opt(op, i + 1);
      if (!is_tensor(t) || !kf_dtype_is_int(t->dtype))
        FAIL("index operand %d must be an integer tensor", i);
      int r;
      int64_t sh[KF_MAX_RANK];
      if (!broadcast(&b, t, &r, sh)) FAIL("index shapes do not broadcast");
      kf_type_init_tensor(&b, KF_DTYPE_I64, r, sh);
    }
    bool adjacent = dims[n - 1] - dims[0] == n - 1;
    int64_t sh[KF_MAX_RANK * 2];
    int r = 0;
    if (adjacent) {
      for (int i = 0; i < dims[0]; i++) sh[r++] = x->shape[i];
      for (int i = 0; i < b.rank; i++) sh[r++] = b.shape[i];
      for (int i = (int)dims[n - 1] + 1; i < x->rank; i++) sh[r++] = x->shape[i];
    } else {
      for (int i = 0; i < b.rank; i++) sh[r++] = b.shape[i];
      for (int i = 0; i < x->rank; i++) {
        bool idx = false;
        for (int j = 0; j < n; j++) idx |= dims[j] == i;
        if (!idx) sh[r++] = x->shape[i];
      }
    }
    if (r > KF_MAX_RANK) FAIL("result rank too large");
    kf_type_init_tensor(&res[0], x->dtype, r, sh);
    return KF_OK;
  }
  case KF_OP_INDEX_SELECT: {
    const kf_type *idx = opt(op, 1);
    if (!is_tensor(x) || !is_tensor(idx) || !kf_dtype_is_int(idx->dtype))
      FAIL("needs a tensor and an integer index tensor");
    if (idx->rank > 1) FAIL("index must be 0-d or 1-d");
    int64_t d = kf_op_get_int(op, "dim");
    if (d < 0 || d >= (x->rank ? x->rank : 1)) FAIL("dim out of range");
    kf_type_init_tensor(&res[0], x->dtype, x->rank, x->shape);
    if (x->rank) res[0].shape[d] = kf_type_numel(idx);
    kf_type_set_contiguous(&res[0]);
    return KF_OK;
  }
  case KF_OP_GATHER: {
    const kf_type *idx = opt(op, 1);
    if (!is_tensor(x) || !is_tensor(idx) || !kf_dtype_is_int(idx->dtype))
      FAIL("needs a tensor and an integer index tensor");
    int64_t d = kf_op_get_int(op, "dim");
    if (idx->rank != x->rank) FAIL("index rank must equal input rank");
    if (d < 0 || d >= (x->rank ? x->rank : 1)) FAIL("dim out of range");
    for (int i = 0; i < x->rank; i++)
      if (i != d && idx->shape[i] > x->shape[i])
        FAIL("index larger than input at dim %d", i);
    kf_type_init_tensor(&res[0], x->dtype, idx->rank, idx->shape);
    return KF_OK;
  }
  case KF_OP_EMBEDDING: {
    const kf_type *idx = opt(op, 1);
    if (!is_tensor(x) || x->rank != 2) FAIL("weight must be 2-d");
    if (!is_tensor(idx) || !kf_dtype_is_int(idx->dtype)) FAIL("indices must be integers");
    if (idx->rank + 1 > KF_MAX_RANK) FAIL("rank too large");
    int64_t sh[KF_MAX_RANK];
    memcpy(sh, idx->shape, sizeof(int64_t) * (size_t)idx->rank);
    sh[idx->rank] = x->shape[1];
    kf_type_init_tensor(&res[0], x->dtype, idx->rank + 1, sh);
    return KF_OK;
  }
  case KF_OP_SLICE_SCATTER: {
    const kf_type *src = opt(op, 1);
    if (!is_tensor(x) || !is_tensor(src)) FAIL("x and src must be tensors");
    int64_t d = kf_op_get_int(op, "dim"), s = kf_op_get_int(op, "start"),
            e = kf_op_get_int(op, "end"), st = kf_op_get_int(op, "step");
    if (d < 0 || d >= x->rank) FAIL("dim %lld out of range", (long long)d);
    if (st < 1) FAIL("step must be positive");
    if (s < 0 || e < s || e > x->shape[d])
      FAIL("slice [%lld, %lld) out of range for size %lld", (long long)s, (long long)e,
           (long long)x->shape[d]);
    if (src->rank != x->rank) FAIL("src has rank %d, x %d", src->rank, x->rank);
    for (int k = 0; k < x->rank; k++) {
      int64_t want = k == d ? (e - s + st - 1) / st : x->shape[k];
      if (src->shape[k] != want)
        FAIL("src has size %lld at dim %d, the slice %lld", (long long)src->shape[k], k, (long long)want);
    }
    kf_type_init_tensor(&res[0], x->dtype, x->rank, x->shape);
    return KF_OK;
  }
  default: break;
  }
  FAIL("not a shape op");
}

static kf_status infer_reduce(const kf_op *op, kf_type *res, kf_diag *diag) {
  const kf_type *x = opt(op, 0);
  if (!is_tensor(x)) FAIL("operand must be a tensor");
  kf_dtype declared = res[0].dtype;
  if (kf_op_info_get(op->code)->kind == KF_KIND_SCAN) {
    int64_t d = kf_op_get_int(op, "dim");
    if (d < 0 || d >= (x->rank ? x->rank : 1)) FAIL("dim out of range");
    kf_dtype dt = kf_dtype_is_float(x->dtype) ? x->dtype : KF_DTYPE_I64;
    if (declared != KF_DTYPE_INVALID) dt = declared;
    kf_type_init_tensor(&res[0], dt, x->rank, x->shape);
    return KF_OK;
  }
  if (op->code == KF_OP_MAX_DIM || op->code == KF_OP_MIN_DIM ||
      op->code == KF_OP_ARGMAX || op->code == KF_OP_ARGMIN) {
    bool keep = kf_op_get_bool(op, "keepdim");
    bool arg = op->code == KF_OP_ARGMAX || op->code == KF_OP_ARGMIN;
    if (!kf_op_has_attr(op, "dim")) {
      if (!arg) FAIL("dim is required");
      int64_t ones[KF_MAX_RANK];
      for (int i = 0; i < x->rank; i++) ones[i] = 1;
      if (kf_type_numel(x) == 0) FAIL("reduction of an empty tensor");
      kf_type_init_tensor(&res[0], KF_DTYPE_I64, keep ? x->rank : 0, ones);
      return KF_OK;
    }
    int64_t d = kf_op_get_int(op, "dim");
    if (d < 0 || d >= (x->rank ? x->rank : 1)) FAIL("dim out of range");
    if (x->rank && x->shape[d] == 0) FAIL("reduction over an empty dim");
    int nd = x->rank ? 1 : 0;
    if (arg) {
      reduce_shape(x, &d, nd, keep, &res[0], KF_DTYPE_I64);
    } else {
      reduce_shape(x, &d, nd, keep, &res[0], x->dtype);
      reduce_shape(x, &d, nd, keep, &res[1], KF_DTYPE_I64);
    }
    return KF_OK;
  }
  int nd;
  const int64_t *dims = kf_op_get_ints(op, "dims", &nd);
  if (!dims_ok(dims, nd, x->rank)) FAIL("dims must be increasing and in range");
  bool keep = kf_op_get_bool(op, "keepdim");
  kf_dtype dt = x->dtype;
  switch (op->code) {
  case KF_OP_SUM: case KF_OP_PROD:
    dt = kf_dtype_is_float(x->dtype) ? x->dtype : KF_DTYPE_I64;
    if (declared != KF_DTYPE_INVALID) dt = declared;
    break;
  case KF_OP_MEAN:
    if (!kf_dtype_is_float(x->dtype) && !kf_dtype_is_float(declared))
      FAIL("mean needs a floating-point tensor");
    if (declared != KF_DTYPE_INVALID) dt = declared;
    break;
  case KF_OP_ANY: case KF_OP_ALL: dt = KF_DTYPE_BOOL; break;
  case KF_OP_VAR: case KF_OP_NORM:
    if (!kf_dtype_is_float(x->dtype)) FAIL("needs a floating-point tensor");
    break;
  case KF_OP_AMAX: case KF_OP_AMIN:
    for (int i = 0; i < nd; i++)
      if (x->shape[dims[i]] == 0) FAIL("reduction over an empty dim");
    break;
  default: break;
  }
  reduce_shape(x, dims, nd, keep, &res[0], dt);
  return KF_OK;
}

static kf_status infer_norm(const kf_op *op, kf_type *res, kf_diag *diag) {
  const kf_type *x = opt(op, 0);
  if (!is_tensor(x) || !kf_dtype_is_float(x->dtype))
    FAIL("input must be a floating-point tensor");
  for (int i = 1; i < op->n_operands; i++) {
    const kf_type *t = opt(op, i);
    if (t && (!is_tensor(t) || !kf_dtype_is_float(t->dtype)))
      FAIL("operand %s must be a floating-point tensor",
           kf_op_info_get(op->code)->operands[i].name);
  }
  kf_type_init_tensor(&res[0], x->dtype, x->rank, x->shape);
  switch (op->code) {
  case KF_OP_SOFTMAX: case KF_OP_LOG_SOFTMAX: {
    int64_t d = kf_op_get_int(op, "dim");
    if (d < 0 || d >= (x->rank ? x->rank : 1)) FAIL("dim out of range");
    return KF_OK;
  }
  case KF_OP_LAYER_NORM: {
    int64_t n = kf_op_get_int(op, "normalized_ndim");
    if (n < 1 || n > x->rank) FAIL("normalized_ndim %lld for rank %d", (long long)n, x->rank);
    for (int i = 1; i <= 2; i++) {
      const kf_type *t = opt(op, i);
      if (!t) continue;
      if (t->rank != n) FAIL("weight/bias must have rank %lld", (long long)n);
      for (int k = 0; k < n; k++)
        if (t->shape[k] != x->shape[x->rank - n + k])
          FAIL("weight/bias shape does not match the normalized shape");
    }
    int64_t sh[KF_MAX_RANK];
    for (int i = 0; i < x->rank; i++) sh[i] = i < x->rank - n ? x->shape[i] : 1;
    kf_type_init_tensor(&res[1], acc_of(x->dtype), x->rank, sh);
    res[2] = res[1];
    return KF_OK;
  }
  case KF_OP_GROUP_NORM: {
    int64_t g = kf_op_get_int(op, "groups");
    if (x->rank < 2) FAIL("input must have a batch and a channel dim");
    if (g < 1 || x->shape[1] % g) FAIL("%lld channels do not split into %lld groups",
                                       (long long)x->shape[1], (long long)g);
    for (int i = 1; i <= 2; i++) {
      const kf_type *t = opt(op, i);
      if (t && (t->rank != 1 || t->shape[0] != x->shape[1]))
        FAIL("weight/bias must have shape [C]");
    }
    int64_t sh[2] = {x->shape[0], g};
    kf_type_init_tensor(&res[1], acc_of(x->dtype), 2, sh);
    res[2] = res[1];
    return KF_OK;
  }
  case KF_OP_BATCH_NORM: {
    if (x->rank < 2) FAIL("input must have a batch and a channel dim");
    for (int i = 1; i <= 4; i++) {
      const kf_type *t = opt(op, i);
      if (t && (t->rank != 1 || t->shape[0] != x->shape[1]))
        FAIL("per-channel operands must have shape [C]");
    }
    if ((opt(op, 3) == NULL) != (opt(op, 4) == NULL))
      FAIL("running mean and var must both be present or both absent");
    return KF_OK;
  }
  default: break;
  }
  FAIL("not a normalisation op");
}

static kf_status infer_matmul(const kf_op *op, kf_type *res, kf_diag *diag) {
  int base = op->code == KF_OP_ADDMM ? 1 : 0;
  const kf_type *a = opt(op, base), *b = opt(op, base + 1);
  if (!is_tensor(a) || !is_tensor(b)) FAIL("operands must be tensors");
  if (a->dtype != b->dtype) FAIL("operand dtypes differ (%s, %s)",
                                 kf_dtype_name(a->dtype), kf_dtype_name(b->dtype));
  int want = op->code == KF_OP_BMM ? 3 : 2;
  if (a->rank != want || b->rank != want) FAIL("operands must be %d-d", want);
  int64_t sh[3];
  if (want == 3) {
    if (a->shape[0] != b->shape[0]) FAIL("batch sizes differ");
    sh[0] = a->shape[0];
  }
  if (a->shape[want - 1] != b->shape[want - 2])
    FAIL("inner dimensions differ (%lld vs %lld)",
         (long long)a->shape[want - 1], (long long)b->shape[want - 2]);
  sh[want - 2] = a->shape[want - 2];
  sh[want - 1] = b->shape[want - 1];
  kf_type_init_tensor(&res[0], a->dtype, want, sh);
  if (op->code == KF_OP_ADDMM) {
    const kf_type *c = opt(op, 0);
    int r;
    int64_t bs[KF_MAX_RANK];
    if (!is_tensor(c) || !broadcast(c, &res[0], &r, bs) || r != 2 ||
        bs[0] != sh[0] || bs[1] != sh[1])
      FAIL("bias does not broadcast to the product's shape");
  }
  return KF_OK;
}

static kf_status infer_conv(const kf_op *op, kf_type *res, kf_diag *diag) {
  const kf_type *x = opt(op, 0), *w = opt(op, 1), *bias = opt(op, 2);
  if (!is_tensor(x) || !is_tensor(w)) FAIL("input and weight must be tensors");
  int ns, n1, n2, n3;
  const int64_t *st = kf_op_get_ints(op, "stride", &ns);
  const int64_t *pd = kf_op_get_ints(op, "padding", &n1);
  const int64_t *dl = kf_op_get_ints(op, "dilation", &n2);
  const int64_t *op_ = kf_op_get_ints(op, "output_padding", &n3);
  bool tr = kf_op_get_bool(op, "transposed");
  int64_t g = kf_op_get_int(op, "groups");
  int sp = x->rank - 2;
  if (sp < 1 || sp > 3) FAIL("input must be [N, C, spatial...] with 1-3 spatial dims");
  if (w->rank != x->rank) FAIL("weight rank %d does not match input rank %d", w->rank, x->rank);
  if (ns != sp || n1 != sp || n2 != sp || (tr && n3 != sp))
    FAIL("stride/padding/dilation need %d entries", sp);
  if (g < 1) FAIL("groups must be positive");
  int64_t cin = x->shape[1], cout;
  if (!tr) {
    if (w->shape[1] * g != cin) FAIL("weight expects %lld input channels, input has %lld",
                                     (long long)(w->shape[1] * g), (long long)cin);
    if (w->shape[0] % g) FAIL("output channels not divisible by groups");
    cout = w->shape[0];
  } else {
    if (w->shape[0] != cin) FAIL("transposed weight expects %lld input channels, input has %lld",
                                 (long long)w->shape[0], (long long)cin);
    if (cin % g) FAIL("input channels not divisible by groups");
    cout = w->shape[1] * g;
  }
  if (bias && (!is_tensor(bias) || bias->rank != 1 || bias->shape[0] != cout))
    FAIL("bias must have shape [%lld]", (long long)cout);
  int64_t sh[KF_MAX_RANK];
  sh[0] = x->shape[0];
  sh[1] = cout;
  for (int i = 0; i < sp; i++) {
    int64_t in = x->shape[2 + i], k = w->shape[2 + i];
    if (st[i] < 1 || dl[i] < 1 || pd[i] < 0) FAIL("bad stride, dilation or padding");
    int64_t o = tr ? (in - 1) * st[i] - 2 * pd[i] + dl[i] * (k - 1) + op_[i] + 1
                   : (in + 2 * pd[i] - dl[i] * (k - 1) - 1) / st[i] + 1;
    if (!tr && in + 2 * pd[i] < dl[i] * (k - 1) + 1)
      FAIL("kernel larger than padded input at spatial dim %d", i);
    if (o < 1) FAIL("output size %lld at spatial dim %d", (long long)o, i);
    sh[2 + i] = o;
  }
  kf_type_init_tensor(&res[0], x->dtype, x->rank, sh);
  return KF_OK;
}

static kf_status infer_pool(const kf_op *op, kf_type *res, kf_diag *diag) {
  const kf_type *x = opt(op, 0);
  if (!is_tensor(x)) FAIL("operand must be a tensor");
  if (op->code == KF_OP_UPSAMPLE) {
    int n, ns;
    const int64_t *size = kf_op_get_ints(op, "size", &n);
    const double *sc = kf_op_get_floats(op, "scales", &ns);
    const char *mode = kf_op_get_str(op, "mode");
    bool interp = strcmp(mode, "linear") == 0 || strcmp(mode, "cubic") == 0;
    if (!interp && strcmp(mode, "nearest") != 0 && strcmp(mode, "nearest-exact") != 0)
      FAIL("mode '%s' is none of nearest, nearest-exact, linear, cubic", mode);
    if (interp && !kf_dtype_is_float(x->dtype)) FAIL("mode '%s' needs a floating-point input", mode);
    if (!interp && kf_op_get_bool(op, "align_corners")) FAIL("align_corners needs mode linear or cubic");
    if (n < 1 || n > 3 || x->rank != n + 2) FAIL("input rank %d for %d spatial sizes", x->rank, n);
    if (ns != n) FAIL("scales has %d entries for %d spatial dims", ns, n);
    int64_t sh[KF_MAX_RANK];
    memcpy(sh, x->shape, sizeof(int64_t) * (size_t)x->rank);
    for (int i = 0; i < n; i++) {
      if (size[i] < 1 || x->shape[2 + i] < 1) FAIL("spatial sizes must be positive");
      if (!(sc[i] >= 0) || sc[i] > 1e18) FAIL("scale %g out of range", sc[i]);
      sh[2 + i] = size[i];
    }
    kf_type_init_tensor(&res[0], x->dtype, x->rank, sh);
    return KF_OK;
  }
  if (op->code == KF_OP_ADAPTIVE_AVG_POOL) {
    const kf_type *t = &res[0];
    if (t->kind != KF_TYPE_TENSOR || t->rank != x->rank || x->rank < 2)
      FAIL("result must have the input's rank");
    int sp = x->rank - 2;
    /* the trailing `sp` dims are pooled; unbatched inputs keep one less
     * leading dim, which the rank check above already admits */
    int64_t want[KF_MAX_RANK]; /* t is res[0], which init clears */
    memcpy(want, t->shape, sizeof want);
    kf_type_init_tensor(&res[0], x->dtype, x->rank, want);
    for (int i = 0; i < x->rank - sp; i++)
      if (res[0].shape[i] != x->shape[i]) FAIL("leading dims must be kept");
    for (int i = x->rank - sp; i < x->rank; i++)
      if (res[0].shape[i] < 1) FAIL("output size must be positive");
    return KF_OK;
  }
  int nk, ns, np;
  const int64_t *k = kf_op_get_ints(op, "kernel", &nk);
  const int64_t *s = kf_op_get_ints(op, "stride", &ns);
  const int64_t *p = kf_op_get_ints(op, "padding", &np);
  bool cm = kf_op_get_bool(op, "ceil_mode");
  int64_t dl1[3] = {1, 1, 1};
  const int64_t *d = dl1;
  if (op->code == KF_OP_MAX_POOL) {
    int nd;
    d = kf_op_get_ints(op, "dilation", &nd);
    if (nd != nk) FAIL("dilation needs %d entries", nk);
  }
  if (nk < 1 || nk > 3 || ns != nk || np != nk) FAIL("kernel/stride/padding lengths differ");
  if (x->rank != nk + 1 && x->rank != nk + 2) FAIL("input rank %d for a %dd pool", x->rank, nk);
  int64_t sh[KF_MAX_RANK];
  memcpy(sh, x->shape, sizeof(int64_t) * (size_t)x->rank);
  for (int i = 0; i < nk; i++) {
    if (k[i] < 1 || s[i] < 1 || d[i] < 1) FAIL("bad kernel, stride or dilation");
    if (p[i] < 0 || p[i] * 2 > k[i]) FAIL("padding must be at most half the kernel");
    int64_t o = pool_out(x->shape[x->rank - nk + i], k[i], s[i], p[i], d[i], cm);
    if (o < 1) FAIL("output size %lld at spatial dim %d", (long long)o, i);
    sh[x->rank - nk + i] = o;
  }
  kf_type_init_tensor(&res[0], x->dtype, x->rank, sh);
  if (op->code == KF_OP_MAX_POOL) kf_type_init_tensor(&res[1], KF_DTYPE_I64, x->rank, sh);
  return KF_OK;
}

static kf_status infer_sdpa(const kf_op *op, kf_type *res, kf_diag *diag) {
  const kf_type *q = opt(op, 0), *k = opt(op, 1), *v = opt(op, 2), *m = opt(op, 3);
  if (!is_tensor(q) || !is_tensor(k) || !is_tensor(v)) FAIL("q, k, v must be tensors");
  if (!kf_dtype_is_float(q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype)
    FAIL("q, k, v must share a floating-point dtype");
  if (q->rank < 2 || k->rank != q->rank || v->rank != q->rank) FAIL("q, k, v must share a rank >= 2");
  int r = q->rank;
  if (q->shape[r - 1] != k->shape[r - 1]) FAIL("q and k head sizes differ");
  if (k->shape[r - 2] != v->shape[r - 2]) FAIL("k and v sequence lengths differ");
  bool gqa = kf_op_get_bool(op, "enable_gqa");
  int64_t sh[KF_MAX_RANK];
  for (int i = 0; i < r - 2; i++) {
    int64_t a = q->shape[i], b = k->shape[i], c = v->shape[i];
    if (gqa && i == r - 3) {
      if (b != c || b == 0 || a % b) FAIL("query heads must be a multiple of key heads");
      sh[i] = a;
      continue;
    }
    if ((a != b && b != 1 && a != 1) || (b != c)) FAIL("batch dims of q, k, v differ");
    sh[i] = a > b ? a : b;
  }
  sh[r - 2] = q->shape[r - 2];
  sh[r - 1] = v->shape[r - 1];
  if (m) {
    if (!is_tensor(m)) FAIL("mask must be a tensor");
    kf_type s;
    int64_t ss[KF_MAX_RANK];
    memcpy(ss, sh, sizeof ss);
    ss[r - 1] = k->shape[r - 2];
    kf_type_init_tensor(&s, q->dtype, r, ss);
    int rr;
    int64_t bs[KF_MAX_RANK];
    if (!broadcast(m, &s, &rr, bs) || rr != r) FAIL("mask does not broadcast to [..., L, S]");
    for (int i = 0; i < r; i++)
      if (bs[i] != ss[i]) FAIL("mask does not broadcast to [..., L, S]");
    if (m->dtype != KF_DTYPE_BOOL && !kf_dtype_is_float(m->dtype)) FAIL("mask must be bool or float");
  }
  if (kf_op_get_bool(op, "is_causal") && m) FAIL("is_causal and an explicit mask are exclusive");
  kf_type_init_tensor(&res[0], q->dtype, r, sh);
  return KF_OK;
}

static kf_status infer_kind(const kf_op *op, const kf_op_info *info, kf_type *results,
                            kf_diag *diag);

kf_status kf_infer_types(const kf_op *op, kf_type *results, kf_diag *diag) {
  const kf_op_info *info = kf_op_info_get(op->code);
  /* Schema-level checks that every kind relies on. */
  int fixed = info->n_operand_slots;
  bool variadic = fixed && info->operands[fixed - 1].variadic;
  if (variadic ? op->n_operands < fixed - 1 : op->n_operands != fixed)
    FAIL("has %d operands, expects %s%d", op->n_operands, variadic ? "at least " : "",
         variadic ? fixed - 1 : fixed);
  for (int i = 0; i < op->n_operands; i++) {
    const kf_operand_schema *s = &info->operands[i < fixed ? i : fixed - 1];
    const kf_value *v = op->operands[i];
    if (!v && !s->optional) FAIL("operand %s is missing", s->name);
    if (v && v->type.kind == KF_TYPE_SCALAR && !s->allow_scalar)
      FAIL("operand %s must be a tensor, not a scalar", s->name);
  }
  for (int i = 0; i < info->n_attrs; i++)
    if (!info->attrs[i].optional && !op->attrs[i].present)
      FAIL("attribute %s is missing", info->attrs[i].name);
  if (info->n_results >= 0 && op->n_results != info->n_results)
    FAIL("has %d results, expects %d", op->n_results, info->n_results);

  /* A computed result's dense layout is the declared type's choice where
   * it is channels-last (pass/layout.c): element-wise ops and convolutions
   * write any dense layout; everything else is row-major. */
  bool cl = op->n_results == 1 && kf_type_is_channels_last(&results[0]) &&
            !kf_type_is_contiguous(&results[0]) &&
            (info->kind == KF_KIND_UNARY || info->kind == KF_KIND_BINARY ||
             info->kind == KF_KIND_TERNARY || info->kind == KF_KIND_CONV);
  kf_type declared;
  memset(&declared, 0, sizeof declared);
  if (cl) declared = results[0];
  kf_status st = infer_kind(op, info, results, diag);
  if (st == KF_OK && cl && kf_type_is_contiguous(&results[0]) &&
      kf_type_same_shape(&results[0], &declared) && results[0].dtype == declared.dtype)
    kf_type_set_channels_last(&results[0]);
  return st;
}

/* kf.rnn: xg [T, B, G*H], h0 [B, H], c0 [B, H] (lstm), w [G*H, H], b [G*H] */
static kf_status infer_rnn(const kf_op *op, kf_type *res, kf_diag *diag) {
  const char *mode = kf_op_get_str(op, "mode");
  bool lstm = strcmp(mode, "lstm") == 0;
  if (!lstm && strcmp(mode, "gru") != 0) FAIL("mode '%s' is neither lstm nor gru", mode);
  const kf_type *xg = opt(op, 0), *h0 = opt(op, 1), *c0 = opt(op, 2), *w = opt(op, 3), *b = opt(op, 4);
  if (!is_tensor(xg) || !is_tensor(h0) || !is_tensor(w) || !is_tensor(b) || (c0 && !is_tensor(c0)))
    FAIL("operands must be tensors");
  if (lstm != (c0 != NULL)) FAIL("c0 must be given for lstm and only for lstm");
  if (!kf_dtype_is_float(xg->dtype)) FAIL("xg must be a floating-point tensor");
  if (h0->dtype != xg->dtype || w->dtype != xg->dtype || b->dtype != xg->dtype || (c0 && c0->dtype != xg->dtype))
    FAIL("operand dtypes differ");
  if (xg->rank != 3 || h0->rank != 2 || w->rank != 2 || b->rank != 1 || (c0 && c0->rank != 2))
    FAIL("operand ranks must be xg 3, h0 2, c0 2, w 2, b 1");
  int64_t G = lstm ? 4 : 3, T = xg->shape[0], B = xg->shape[1], H = h0->shape[1];
  if (T < 1 || B < 1 || H < 1) FAIL("empty recurrence");
  if (h0->shape[0] != B || xg->shape[2] != G * H) FAIL("xg must be [T, B, %lld * H] for h0 [B, H]", (long long)G);
  if (c0 && (c0->shape[0] != B || c0->shape[1] != H)) FAIL("c0 must have h0's shape");
  if (w->shape[0] != G * H || w->shape[1] != H || b->shape[0] != G * H) FAIL("w must be [G*H, H], b [G*H]");
  int64_t sh[3] = {T, B, H};
  kf_type_init_tensor(&res[0], xg->dtype, 3, sh);
  kf_type_init_tensor(&res[1], xg->dtype, 2, sh + 1);
  return KF_OK;
}

static kf_status infer_kind(const kf_op *op, const kf_op_info *info, kf_type *results,
                            kf_diag *diag) {
  switch (info->kind) {
  case KF_KIND_SOURCE: return infer_source(op, results, diag);
  case KF_KIND_UNARY: return infer_unary(op, results, diag);
  case KF_KIND_BINARY: return infer_binary(op, results, diag);
  case KF_KIND_TERNARY: return infer_where(op, results, diag);
  case KF_KIND_VIEW: return infer_view(op, results, diag);
  case KF_KIND_SHAPE: return infer_shape_ops(op, results, diag);
  case KF_KIND_REDUCE: case KF_KIND_SCAN: return infer_reduce(op, results, diag);
  case KF_KIND_NORM: return infer_norm(op, results, diag);
  case KF_KIND_MATMUL: return infer_matmul(op, results, diag);
  case KF_KIND_CONV: return infer_conv(op, results, diag);
  case KF_KIND_POOL: return infer_pool(op, results, diag);
  case KF_KIND_ATTENTION: return infer_sdpa(op, results, diag);
  case KF_KIND_RECURRENT: return infer_rnn(op, results, diag);
  }
  FAIL("unknown op kind");
}
