/* interp/elementwise.c — element-wise unary, binary and ternary ops of the
 * CPU reference interpreter.
 *
 * Operands broadcast to the result shape (scalars are rank-0 values). Each
 * op is computed in double precision with the formula PyTorch documents
 * (or implements, where the documentation is silent: NaN propagation,
 * floor division, remainder signs); the driver rounds integer and bool
 * results afterwards. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "interp_int.h"

static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

static double gelu(double x, bool tanh_form) {
  if (tanh_form) {
    double k = sqrt(2.0 / M_PI);
    return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
  }
  return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
}

static double clamp(double x, bool has_lo, double lo, bool has_hi, double hi) {
  if (isnan(x)) return x;
  /* PyTorch: min(max(x, lo), hi), each propagating NaN bounds */
  if (has_lo) x = isnan(lo) ? lo : (x < lo ? lo : x);
  if (has_hi) x = isnan(hi) ? hi : (x > hi ? hi : x);
  return x;
}

static double number_attr(const kf_op *op, const char *name) {
  return kf_number_as_double(kf_op_get_number(op, name));
}

static kf_status run_unary(ki_ctx *c) {
  const kf_op *op = c->op;
  const ki_val *x = ki_arg(c, 0);
  ki_val *r = ki_res(c, 0);
  kf_dtype in_dt = ki_arg_type(c, 0)->dtype, out_dt = ki_res_type(c, 0)->dtype;
  bool in_float = kf_dtype_is_float(in_dt);
  double a0 = 0, a1 = 0, a2 = 0;
  bool h0 = false, h1 = false;
  switch (op->code) {
  case KF_OP_HARDTANH:
    a0 = number_attr(op, "min_val");
    a1 = number_attr(op, "max_val");
    h0 = h1 = true;
    break;
  case KF_OP_CLAMP:
    if ((h0 = kf_op_has_attr(op, "min"))) a0 = number_attr(op, "min");
    if ((h1 = kf_op_has_attr(op, "max"))) a1 = number_attr(op, "max");
    break;
  case KF_OP_LEAKY_RELU: a0 = number_attr(op, "negative_slope"); break;
  case KF_OP_ELU:
    a0 = number_attr(op, "alpha");
    a1 = number_attr(op, "scale");
    a2 = number_attr(op, "input_scale");
    break;
  case KF_OP_SOFTPLUS:
    a0 = number_attr(op, "beta");
    a1 = number_attr(op, "threshold");
    break;
  case KF_OP_GELU: {
    const char *m = kf_op_get_str(op, "approximate");
    if (strcmp(m, "none") && strcmp(m, "tanh"))
      return ki_fail(c, KF_ERR_UNSUPPORTED, "gelu approximate \"%s\"", m);
    h0 = strcmp(m, "tanh") == 0;
    break;
  }
  default: break;
  }
  for (int64_t i = 0; i < r->n; i++) {
    double v = x->d[i], y;
    switch (op->code) {
#define KF_OP(ID, NAME, KIND, OPERANDS, RESULTS, ATTRS)
#define KF_EW1(ID, NAME, RESULT, INTERP, TORCH) \
    case KF_OP_##ID: y = (INTERP); break;
#include "kfuse/ops.def"
#undef KF_EW1
#undef KF_OP
    case KF_OP_GELU: y = gelu(v, h0); break;
    case KF_OP_HARDTANH: case KF_OP_CLAMP: y = clamp(v, h0, a0, h1, a1); break;
    case KF_OP_LEAKY_RELU: y = v > 0 ? v : v * a0; break;
    case KF_OP_ELU: y = v > 0 ? a1 * v : a1 * a0 * expm1(v * a2); break;
    case KF_OP_SOFTPLUS: y = v * a0 > a1 ? v : log1p(exp(v * a0)) / a0; break;
    case KF_OP_BITWISE_NOT:
      y = in_dt == KF_DTYPE_BOOL ? (v == 0) : (double)~(int64_t)v;
      break;
    case KF_OP_CAST: y = ki_round_to(out_dt, v); break;
    case KF_OP_COPY: y = v; break;
    default:
      return ki_fail(c, KF_ERR_UNSUPPORTED, "unary op not supported by the interpreter");
    }
    r->d[i] = y;
  }
  return KF_OK;
}

/* Floor division of floats as PyTorch computes it (div_floor_floating):
 * exact for quotients floor(a / b) would round the wrong way. */
static double div_floor(double a, double b) {
  if (b == 0) return a / b;
  double mod = fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0 && (b < 0) != (mod < 0)) div -= 1.0;
  if (div == 0) return copysign(0.0, a / b);
  double fl = floor(div);
  if (div - fl > 0.5) fl += 1.0;
  return fl;
}

static double remainder_of(double a, double b) {
  double m = fmod(a, b);
  if (m != 0 && (b < 0) != (m < 0)) m += b;
  return m;
}

static double nan_max(double a, double b) {
  if (isnan(a) || isnan(b)) return NAN;
  return a > b ? a : b;
}

static double nan_min(double a, double b) {
  if (isnan(a) || isnan(b)) return NAN;
  return a < b ? a : b;
}

static kf_status run_binary(ki_ctx *c) {
  const kf_op *op = c->op;
  const ki_val *a = ki_arg(c, 0), *b = ki_arg(c, 1);
  ki_val *r = ki_res(c, 0);
  kf_dtype out_dt = ki_res_type(c, 0)->dtype;
  bool int_result = !kf_dtype_is_float(out_dt);
  double alpha = 1.0;
  if ((op->code == KF_OP_ADD || op->code == KF_OP_SUB) && kf_op_has_attr(op, "alpha"))
    alpha = number_attr(op, "alpha");
  int mode = 0; /* 0 true division, 1 trunc, 2 floor */
  if (op->code == KF_OP_DIV && kf_op_has_attr(op, "rounding_mode")) {
    const char *m = kf_op_get_str(op, "rounding_mode");
    mode = strcmp(m, "trunc") == 0 ? 1 : strcmp(m, "floor") == 0 ? 2 : -1;
    if (mode < 0) return ki_fail(c, KF_ERR_UNSUPPORTED, "rounding_mode \"%s\"", m);
  }
  int64_t sa[KF_MAX_RANK], sb[KF_MAX_RANK], idx[KF_MAX_RANK] = {0};
  ki_bcast_strides(a->rank, a->shape, r->rank, sa);
  ki_bcast_strides(b->rank, b->shape, r->rank, sb);
  for (int64_t i = 0; i < r->n; i++) {
    int64_t oa = 0, ob = 0;
    for (int k = 0; k < r->rank; k++) {
      oa += idx[k] * sa[k];
      ob += idx[k] * sb[k];
    }
    ki_next(r->rank, r->shape, idx);
    double x = a->d[oa], y = b->d[ob], z;
    bool int_div = int_result && (op->code == KF_OP_DIV || op->code == KF_OP_REMAINDER ||
                                  op->code == KF_OP_FMOD);
    if (int_div && y == 0)
      return ki_fail(c, KF_ERR_INVALID, "integer division by zero");
    switch (op->code) {
    case KF_OP_ADD: z = x + alpha * y; break;
    case KF_OP_SUB: z = x - alpha * y; break;
    case KF_OP_DIV:
      z = mode == 0 ? x / y : mode == 1 ? trunc(x / y) : div_floor(x, y);
      break;
    case KF_OP_REMAINDER: z = remainder_of(x, y); break;
    case KF_OP_FMOD: z = fmod(x, y); break;
    case KF_OP_POW:
      if (int_result && y < 0 && x != 1 && x != -1)
        return ki_fail(c, KF_ERR_INVALID, "integers to negative integer powers are not allowed");
      z = pow(x, y);
      break;
      /* the one-row ops of ops.def: their interp column */
#define KF_OP(ID, NAME, KIND, OPERANDS, RESULTS, ATTRS)
#define KF_EW2(ID, NAME, RESULT, INTERP, TORCH, ATEN) \
  case KF_OP_##ID: z = (INTERP); break;
#include "kfuse/ops.def"
#undef KF_EW2
#undef KF_OP
    default:
      return ki_fail(c, KF_ERR_UNSUPPORTED, "binary op not supported by the interpreter");
    }
    r->d[i] = z;
  }
  return KF_OK;
}

static kf_status run_where(ki_ctx *c) {
  const ki_val *cond = ki_arg(c, 0), *a = ki_arg(c, 1), *b = ki_arg(c, 2);
  ki_val *r = ki_res(c, 0);
  int64_t sc[KF_MAX_RANK], sa[KF_MAX_RANK], sb[KF_MAX_RANK], idx[KF_MAX_RANK] = {0};
  ki_bcast_strides(cond->rank, cond->shape, r->rank, sc);
  ki_bcast_strides(a->rank, a->shape, r->rank, sa);
  ki_bcast_strides(b->rank, b->shape, r->rank, sb);
  for (int64_t i = 0; i < r->n; i++) {
    int64_t oc = 0, oa = 0, ob = 0;
    for (int k = 0; k < r->rank; k++) {
      oc += idx[k] * sc[k];
      oa += idx[k] * sa[k];
      ob += idx[k] * sb[k];
    }
    ki_next(r->rank, r->shape, idx);
    r->d[i] = cond->d[oc] != 0 ? a->d[oa] : b->d[ob];
  }
  return KF_OK;
}

kf_status ki_run_elementwise(ki_ctx *c) {
  switch (kf_op_info_get(c->op->code)->kind) {
  case KF_KIND_UNARY: return run_unary(c);
  case KF_KIND_BINARY: return run_binary(c);
  case KF_KIND_TERNARY: return run_where(c);
  default: break;
  }
  return ki_fail(c, KF_ERR_INTERNAL, "not an element-wise op");
}
