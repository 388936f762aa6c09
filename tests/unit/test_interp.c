/* tests/unit/test_interp.c — unit tests of the CPU reference interpreter and
 * host tensors (interp/).
 *
 * Each test builds a small graph through the IR API (types from
 * kf_infer_types, checked by kf_graph_verify), runs it and compares with
 * values worked out by hand; the arithmetic is in the comments. The real
 * acceptance test is the PyTorch fixtures run by `kfuse run`; these pin
 * down the conventions one at a time (rounding, index layouts, windows) so
 * that a regression names the op. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "kfuse/interp.h"
#include "kfuse/ir.h"

/* ---- harness ---------------------------------------------------------------- */

static char last_msg[2048];
static void capture(void *user, kf_diag_level level, const char *msg) {
  (void)user;
  if (level == KF_DIAG_ERROR) snprintf(last_msg, sizeof last_msg, "%s", msg);
}

static kf_diag diag;
static kf_graph *g;

static int setup(void **state) {
  (void)state;
  g = kf_graph_create("test");
  kf_diag_init(&diag, capture, NULL);
  last_msg[0] = 0;
  return g ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  kf_graph_destroy(g);
  g = NULL;
  return 0;
}

#define NARGS(T, ...) ((int)(sizeof((T[]){__VA_ARGS__}) / sizeof(T)))
#define SHAPE(...) NARGS(int64_t, __VA_ARGS__), (const int64_t[]){__VA_ARGS__}
#define VALS(...) (const double[]){__VA_ARGS__}, NARGS(double, __VA_ARGS__)
#define ARGS(...) (kf_value *[]){__VA_ARGS__}, NARGS(kf_value *, __VA_ARGS__)

static kf_value *input(const char *name, kf_dtype dt, int rank, const int64_t *shape) {
  kf_type t;
  kf_type_init_tensor(&t, dt, rank, shape);
  return kf_graph_add_input(g, name, &t);
}

/* Append an op whose result types come from inference (decl: declared
 * types where the op needs them, else NULL). Attributes are set by the
 * caller, then typed with infer(). */
static kf_op *op_n(kf_opcode code, kf_value **args, int n, int n_results,
                   const kf_type *decl) {
  kf_type t[4];
  memset(t, 0, sizeof t);
  for (int i = 0; i < n_results; i++) {
    if (decl) t[i] = decl[i];
    else kf_type_init_tensor(&t[i], KF_DTYPE_F32, 0, NULL);
  }
  return kf_graph_append_op(g, code, NULL, args, n, t, n_results);
}

static kf_op *op(kf_opcode code, kf_value **args, int n) { return op_n(code, args, n, 1, NULL); }

static kf_value *infer(kf_op *o) {
  kf_type t[8];
  for (int i = 0; i < o->n_results; i++) t[i] = o->results[i]->type;
  kf_status st = kf_infer_types(o, t, &diag);
  if (st != KF_OK) fail_msg("inference failed: %s", last_msg);
  for (int i = 0; i < o->n_results; i++) o->results[i]->type = t[i];
  return o->results[0];
}

static kf_type ttype(kf_dtype dt, int rank, const int64_t *shape) {
  kf_type t;
  kf_type_init_tensor(&t, dt, rank, shape);
  return t;
}

static kf_value *scalar(kf_number v) {
  kf_op *o = op(KF_OP_SCALAR, NULL, 0);
  kf_op_set_number(o, "value", v);
  return infer(o);
}

static kf_tensor tensor(kf_dtype dt, int rank, const int64_t *shape, const double *v, int n) {
  kf_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = dt;
  t.rank = rank;
  memcpy(t.shape, shape, sizeof(int64_t) * (size_t)rank);
  assert_int_equal(kf_tensor_alloc(&t), KF_OK);
  assert_int_equal(kf_tensor_numel(&t), n);
  for (int i = 0; i < n; i++) kf_tensor_set(&t, i, v[i]);
  return t;
}

/* Verify the graph with the given outputs and run it. */
static kf_status run(kf_value **outs, int n_out, kf_tensor *ins, int n_in, kf_tensor *res,
                     int64_t max_elements) {
  kf_graph_set_outputs(g, outs, n_out);
  kf_status st = kf_graph_verify(g, &diag);
  if (st != KF_OK) fail_msg("verifier: %s", last_msg);
  kf_interp_options o = {.max_elements = max_elements};
  return kf_interp_run(g, ins, n_in, res, &o, &diag);
}

static void run_ok(kf_value **outs, int n_out, kf_tensor *ins, int n_in, kf_tensor *res) {
  kf_status st = run(outs, n_out, ins, n_in, res, 0);
  if (st != KF_OK) fail_msg("interpreter: %s", last_msg);
  for (int i = 0; i < n_in; i++) kf_tensor_fini(&ins[i]);
}

/* Elements of t equal want within tol; NaN matches NaN. */
static void expect_vals(kf_tensor *t, const double *want, int n, double tol) {
  if (kf_tensor_numel(t) != n) fail_msg("%lld elements, expected %d", (long long)kf_tensor_numel(t), n);
  for (int i = 0; i < n; i++) {
    double v = kf_tensor_get(t, i);
    bool ok = isnan(want[i]) ? isnan(v) : (v == want[i] || fabs(v - want[i]) <= tol);
    if (!ok) fail_msg("element %d: got %.17g, want %.17g", i, v, want[i]);
  }
  kf_tensor_fini(t);
}

static void expect_shape(const kf_tensor *t, int rank, const int64_t *shape) {
  assert_int_equal(t->rank, rank);
  for (int i = 0; i < rank; i++) assert_int_equal(t->shape[i], shape[i]);
}

static void expect_error(kf_status got, kf_status want, const char *needle) {
  assert_int_equal(got, want);
  if (!strstr(last_msg, needle)) fail_msg("message \"%s\" lacks \"%s\"", last_msg, needle);
}

/* A weight store holding one storage record, for kf.param tests. */
typedef struct test_store {
  const char *fqn;
  void *data;
  int64_t nbytes;
} test_store;

static kf_status store_get(void *impl, const char *fqn, const void **data, int64_t *nbytes,
                           kf_diag *d) {
  test_store *s = impl;
  if (strcmp(fqn, s->fqn)) {
    kf_diag_error(d, "no weight '%s'", fqn);
    return KF_ERR_INVALID;
  }
  *data = s->data;
  *nbytes = s->nbytes;
  return KF_OK;
}

static void store_destroy(void *impl) {
  test_store *s = impl;
  free(s->data);
  free(s);
}

/* Register weight fqn of type t (f32 storage given by vals) and return a
 * kf.param of it. */
static kf_value *param_f32(const char *fqn, const kf_type *t, const double *vals, int n) {
  test_store *s = calloc(1, sizeof *s);
  assert_non_null(s);
  s->fqn = fqn;
  s->nbytes = 4 * n;
  s->data = malloc((size_t)s->nbytes);
  assert_non_null(s->data);
  for (int i = 0; i < n; i++) ((float *)s->data)[i] = (float)vals[i];
  kf_graph_add_weight(g, fqn, t, s->nbytes);
  kf_weight_store ws = {s, store_get, store_destroy};
  kf_graph_take_store(g, ws);
  kf_op *o = op_n(KF_OP_PARAM, NULL, 0, 1, t);
  kf_op_set_str(o, "fqn", fqn);
  kf_op_set_str(o, "kind", "parameter");
  return infer(o);
}

/* ---- host tensors --------------------------------------------------------- */

static uint16_t bits16(const kf_tensor *t, int i) {
  uint16_t b;
  memcpy(&b, (const char *)t->data + 2 * i, 2);
  return b;
}

static void test_f16_rounding(void **state) {
  (void)state;
  /* f16 has 10 fraction bits: near 1 the spacing is 2^-10, so 1 + 2^-11 is
   * a tie that goes to the even 1.0, and 1 + 3*2^-11 goes up to 1 + 2^-9.
   * 65504 is the largest finite; 65520 is the tie above it and rounds to
   * inf. 2^-24 is the smallest subnormal; 2^-25 ties to 0; 3*2^-26 (0.75
   * of the spacing) rounds up to 2^-24. */
  kf_tensor t = tensor(KF_DTYPE_F16, SHAPE(9),
                       VALS(1 + 0x1p-11, 1 + 3 * 0x1p-11, 65519.0, 65520.0, 0x1p-24,
                            0x1p-25, 3 * 0x1p-26, -2.0, NAN));
  double want[] = {1.0, 1 + 0x1p-9, 65504.0, INFINITY, 0x1p-24, 0.0, 0x1p-24, -2.0, NAN};
  /* bit patterns: 1.0 = 0x3c00, inf = 0x7c00, 2^-24 = 0x0001, -2 = 0xc000 */
  assert_int_equal(bits16(&t, 0), 0x3c00);
  assert_int_equal(bits16(&t, 3), 0x7c00);
  assert_int_equal(bits16(&t, 4), 0x0001);
  assert_int_equal(bits16(&t, 7), 0xc000);
  expect_vals(&t, want, 9, 0);
}

static void test_bf16_and_ints(void **state) {
  (void)state;
  /* bf16 has 7 fraction bits: 1 + 2^-8 ties to 1.0; 1 + 3*2^-8 rounds to
   * 1 + 2^-6; 1.0 is 0x3f80. */
  kf_tensor b = tensor(KF_DTYPE_BF16, SHAPE(3), VALS(1 + 0x1p-8, 1 + 3 * 0x1p-8, 3.0));
  assert_int_equal(bits16(&b, 0), 0x3f80);
  expect_vals(&b, (double[]){1.0, 1 + 0x1p-6, 3.0}, 3, 0);
  /* int8: 300 wraps to 300 - 256 = 44; floats truncate toward zero. */
  kf_tensor i8 = tensor(KF_DTYPE_I8, SHAPE(4), VALS(300, -1.7, 2.9, -200));
  expect_vals(&i8, (double[]){44, -1, 2, 56}, 4, 0);
  kf_tensor bo = tensor(KF_DTYPE_BOOL, SHAPE(3), VALS(0.5, 0, -3));
  expect_vals(&bo, (double[]){1, 0, 1}, 3, 0);
}

static void test_compare(void **state) {
  (void)state;
  kf_tensor want = tensor(KF_DTYPE_F64, SHAPE(2, 3), VALS(1, 2, NAN, INFINITY, 100, 0));
  kf_tensor ok = tensor(KF_DTYPE_F32, SHAPE(2, 3), VALS(1.001, 2, NAN, INFINITY, 100.05, 0));
  /* |1.001 - 1| = 0.001 <= 0.001 + 0; |100.05 - 100| = 0.05 <= 0.001 + 0.001 * 100 */
  assert_int_equal(kf_tensor_compare(&ok, &want, 1e-3 + 1e-9, 1e-3, "ok", &diag), KF_OK);
  /* element [1, 2] is off by 0.5 (the worst); element [1, 0] is finite
   * where inf is wanted; element [0, 2] is not NaN */
  kf_tensor bad = tensor(KF_DTYPE_F64, SHAPE(2, 3), VALS(1, 2, 0, 1e308, 100, 0.5));
  expect_error(kf_tensor_compare(&bad, &want, 1e-3, 1e-3, "out", &diag), KF_ERR_MISMATCH,
               "3 of 6 elements differ");
  assert_non_null(strstr(last_msg, "out:"));
  /* with NaN and inf ranked infinitely bad, the first of them is the worst */
  assert_non_null(strstr(last_msg, "[0, 2]"));
  kf_tensor flat = tensor(KF_DTYPE_F64, SHAPE(6), VALS(1, 2, NAN, INFINITY, 100, 0));
  expect_error(kf_tensor_compare(&flat, &want, 1, 1, "s", &diag), KF_ERR_MISMATCH,
               "shape [6], expected [2, 3]");
  kf_tensor small = tensor(KF_DTYPE_F64, SHAPE(2), VALS(1, 2));
  kf_tensor off = tensor(KF_DTYPE_F64, SHAPE(2), VALS(1, 2.5));
  expect_error(kf_tensor_compare(&off, &small, 0.1, 0, "w", &diag), KF_ERR_MISMATCH,
               "worst at [1]: got 2.5, want 2");
  kf_tensor_fini(&want);
  kf_tensor_fini(&ok);
  kf_tensor_fini(&bad);
  kf_tensor_fini(&flat);
  kf_tensor_fini(&small);
  kf_tensor_fini(&off);
}

/* ---- element-wise ---------------------------------------------------------- */

static void test_broadcast_add_alpha(void **state) {
  (void)state;
  kf_value *a = input("a", KF_DTYPE_F32, SHAPE(2, 1));
  kf_value *b = input("b", KF_DTYPE_F32, SHAPE(3));
  kf_op *o = op(KF_OP_ADD, ARGS(a, b));
  kf_op_set_number(o, "alpha", kf_number_int(2));
  kf_value *r = infer(o);
  kf_tensor in[2] = {tensor(KF_DTYPE_F32, SHAPE(2, 1), VALS(10, 20)),
                     tensor(KF_DTYPE_F32, SHAPE(3), VALS(1, 2, 3))};
  kf_tensor out[1];
  run_ok(ARGS(r), in, 2, out);
  /* out[i][j] = a[i] + 2 * b[j] */
  expect_shape(&out[0], SHAPE(2, 3));
  expect_vals(&out[0], VALS(12, 14, 16, 22, 24, 26), 0);
}

static void test_integer_division(void **state) {
  (void)state;
  kf_value *a = input("a", KF_DTYPE_I64, SHAPE(4));
  kf_value *b = input("b", KF_DTYPE_I64, SHAPE(4));
  kf_op *fl = op(KF_OP_DIV, ARGS(a, b));
  kf_op_set_str(fl, "rounding_mode", "floor");
  kf_op *tr = op(KF_OP_DIV, ARGS(a, b));
  kf_op_set_str(tr, "rounding_mode", "trunc");
  kf_value *rf = infer(fl), *rt = infer(tr);
  kf_value *rem = infer(op(KF_OP_REMAINDER, ARGS(a, b)));
  kf_value *fm = infer(op(KF_OP_FMOD, ARGS(a, b)));
  kf_value *td = infer(op(KF_OP_DIV, ARGS(a, b)));
  kf_tensor in[2] = {tensor(KF_DTYPE_I64, SHAPE(4), VALS(-7, 7, 7, -7)),
                     tensor(KF_DTYPE_I64, SHAPE(4), VALS(2, -2, 2, -2))};
  kf_tensor out[5];
  run_ok(ARGS(rf, rt, rem, fm, td), in, 2, out);
  /* -7/2 = -3.5: floor -4, trunc -3; remainder takes the divisor's sign
   * (-7 = -4*2 + 1), fmod the dividend's (-7 = -3*2 - 1) */
  expect_vals(&out[0], VALS(-4, -4, 3, 3), 0);
  expect_vals(&out[1], VALS(-3, -3, 3, 3), 0);
  expect_vals(&out[2], VALS(1, -1, 1, -1), 0);
  expect_vals(&out[3], VALS(-1, 1, 1, -1), 0);
  expect_vals(&out[4], VALS(-3.5, -3.5, 3.5, 3.5), 0);
}

static void test_integer_division_by_zero(void **state) {
  (void)state;
  kf_value *a = input("a", KF_DTYPE_I32, SHAPE(2));
  kf_op *o = op(KF_OP_DIV, ARGS(a, scalar(kf_number_int(0))));
  kf_op_set_str(o, "rounding_mode", "floor");
  kf_value *r = infer(o);
  kf_tensor in[1] = {tensor(KF_DTYPE_I32, SHAPE(2), VALS(1, 2))};
  kf_tensor out[1];
  expect_error(run(ARGS(r), in, 1, out, 0), KF_ERR_INVALID, "division by zero");
  assert_non_null(strstr(last_msg, "(kf.div)"));
  kf_tensor_fini(&in[0]);
}

static void test_float_floor_division(void **state) {
  (void)state;
  kf_value *a = input("a", KF_DTYPE_F64, SHAPE(3));
  kf_op *o = op(KF_OP_DIV, ARGS(a, scalar(kf_number_float(-0.5))));
  kf_op_set_str(o, "rounding_mode", "floor");
  kf_value *r = infer(o);
  kf_value *rem = infer(op(KF_OP_REMAINDER, ARGS(a, scalar(kf_number_float(-0.5)))));
  kf_value *b = input("b", KF_DTYPE_F64, SHAPE(1));
  kf_op *o2 = op(KF_OP_DIV, ARGS(b, scalar(kf_number_float(0.1))));
  kf_op_set_str(o2, "rounding_mode", "floor");
  kf_value *r2 = infer(o2);
  kf_tensor in[2] = {tensor(KF_DTYPE_F64, SHAPE(3), VALS(1.25, -1.25, 1.0)),
                     tensor(KF_DTYPE_F64, SHAPE(1), VALS(1.0))};
  kf_tensor out[3];
  run_ok(ARGS(r, rem, r2), in, 2, out);
  /* 1.25 / -0.5 = -2.5 -> -3, remainder 1.25 - (-3)(-0.5) = -0.25;
   * -1.25 / -0.5 = 2.5 -> 2, remainder -1.25 - 2(-0.5) = -0.25;
   * 1 / -0.5 = -2 exactly, remainder -0 */
  expect_vals(&out[0], VALS(-3, 2, -2), 0);
  expect_vals(&out[1], VALS(-0.25, -0.25, 0), 0);
  /* 1 // 0.1 is 9 (as in Python and PyTorch), not floor(1 / 0.1) = 10:
   * the double 0.1 is slightly above 1/10, leaving a remainder of ~0.1 */
  expect_vals(&out[2], VALS(9), 0);
}

static void test_unary_activations(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(3));
  kf_op *ge = op(KF_OP_GELU, ARGS(x));
  kf_op_set_str(ge, "approximate", "none");
  kf_op *gt = op(KF_OP_GELU, ARGS(x));
  kf_op_set_str(gt, "approximate", "tanh");
  kf_op *sp = op(KF_OP_SOFTPLUS, ARGS(x));
  kf_op_set_number(sp, "beta", kf_number_int(2));
  kf_op_set_number(sp, "threshold", kf_number_int(4));
  kf_op *el = op(KF_OP_ELU, ARGS(x));
  kf_op_set_number(el, "alpha", kf_number_float(2.0));
  kf_op_set_number(el, "scale", kf_number_float(3.0));
  kf_op_set_number(el, "input_scale", kf_number_float(0.5));
  kf_value *r_ge = infer(ge), *r_gt = infer(gt), *r_sp = infer(sp), *r_el = infer(el);
  kf_value *r_hs = infer(op(KF_OP_HARDSIGMOID, ARGS(x)));
  kf_value *r_hw = infer(op(KF_OP_HARDSWISH, ARGS(x)));
  kf_value *r_si = infer(op(KF_OP_SILU, ARGS(x)));
  kf_value *r_sg = infer(op(KF_OP_SIGN, ARGS(x)));
  kf_tensor in[1] = {tensor(KF_DTYPE_F32, SHAPE(3), VALS(-2, 1, 3))};
  kf_tensor out[8];
  run_ok(ARGS(r_ge, r_gt, r_sp, r_el, r_hs, r_hw, r_si, r_sg), in, 1, out);
  /* gelu(x) = x * Phi(x): Phi(1) = 0.8413447460685429, Phi(-2) =
   * 0.022750131948179195, Phi(3) = 0.9986501019683699 (normal tables) */
  expect_vals(&out[0], VALS(-2 * 0.022750131948179195, 0.8413447460685429,
                            3 * 0.9986501019683699), 1e-12);
  /* the tanh form is close to, but not exactly, the erf form (values from
   * torch.nn.functional.gelu(x.double(), approximate='tanh')) */
  expect_vals(&out[1], VALS(-0.04540230591222494, 0.8411919906082768, 2.996362607918227), 1e-12);
  /* softplus beta 2, threshold 4: 2x > 4 only for x = 3 (linear);
   * log1p(exp(-4)) / 2 = 0.009074964..., log1p(exp(2)) / 2 = 1.063464... */
  expect_vals(&out[2], VALS(0.0090749639, 1.0634640055, 3.0), 1e-9);
  /* elu: x > 0 -> 3x; else 3 * 2 * (exp(0.5x) - 1) = 6 * (e^-1 - 1) */
  expect_vals(&out[3], VALS(6 * (0.36787944117144233 - 1), 3, 9), 1e-12);
  /* hardsigmoid clamp(x + 3, 0, 6) / 6 and hardswish x times that */
  expect_vals(&out[4], VALS(1.0 / 6, 4.0 / 6, 1.0), 1e-15);
  expect_vals(&out[5], VALS(-2.0 / 6, 4.0 / 6, 3.0), 1e-15);
  /* silu x * sigmoid(x): sigmoid(1) = 0.7310585786300049 */
  expect_vals(&out[6], VALS(-2 * 0.11920292202211755, 0.7310585786300049,
                            3 * 0.9525741268224334), 1e-12);
  expect_vals(&out[7], VALS(-1, 1, 1), 0);
}

static void test_round_and_cast(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F64, SHAPE(5));
  kf_value *rd = infer(op(KF_OP_ROUND, ARGS(x)));
  kf_type ti = ttype(KF_DTYPE_I32, SHAPE(5));
  kf_value *ci = infer(op_n(KF_OP_CAST, ARGS(x), 1, &ti));
  kf_type th = ttype(KF_DTYPE_F16, SHAPE(5));
  kf_value *ch = infer(op_n(KF_OP_CAST, ARGS(x), 1, &th));
  /* half then back: cast, then add 0 in f16 (kept exact) */
  kf_tensor in[1] = {tensor(KF_DTYPE_F64, SHAPE(5), VALS(0.5, 1.5, 2.5, -2.7, 1 + 0x1p-12))};
  kf_tensor out[3];
  run_ok(ARGS(rd, ci, ch), in, 1, out);
  /* round half to even: 0.5 -> 0, 1.5 -> 2, 2.5 -> 2 */
  expect_vals(&out[0], VALS(0, 2, 2, -3, 1), 0);
  /* casts to int truncate toward zero */
  expect_vals(&out[1], VALS(0, 1, 2, -2, 1), 0);
  /* casts to f16 round: -2.7 -> -2.69921875 (spacing 2^-9 in [2, 4)) */
  expect_vals(&out[2], VALS(0.5, 1.5, 2.5, -2.69921875, 1.0), 0);
}

static void test_clamp_where_compare(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(4));
  kf_op *cl = op(KF_OP_CLAMP, ARGS(x));
  kf_op_set_number(cl, "min", kf_number_float(-1));
  kf_op_set_number(cl, "max", kf_number_float(2));
  kf_value *c = infer(cl);
  kf_value *gt = infer(op(KF_OP_GT, ARGS(x, scalar(kf_number_int(0)))));
  kf_value *w = infer(op(KF_OP_WHERE, ARGS(gt, x, scalar(kf_number_float(-10)))));
  kf_value *mx = infer(op(KF_OP_MAXIMUM, ARGS(x, scalar(kf_number_int(1)))));
  kf_tensor in[1] = {tensor(KF_DTYPE_F32, SHAPE(4), VALS(-3, 0.5, 5, NAN))};
  kf_tensor out[4];
  run_ok(ARGS(c, gt, w, mx), in, 1, out);
  expect_vals(&out[0], VALS(-1, 0.5, 2, NAN), 0); /* NaN passes clamp */
  expect_vals(&out[1], VALS(0, 1, 1, 0), 0);
  expect_vals(&out[2], VALS(-10, 0.5, 5, -10), 0);
  expect_vals(&out[3], VALS(1, 1, 5, NAN), 0); /* maximum propagates NaN */
}

/* ---- sources, views and data movement ------------------------------------ */

static void test_sources(void **state) {
  (void)state;
  kf_type ta = ttype(KF_DTYPE_F32, SHAPE(4));
  kf_op *ar = op_n(KF_OP_ARANGE, NULL, 0, 1, &ta);
  kf_op_set_number(ar, "start", kf_number_float(1));
  kf_op_set_number(ar, "end", kf_number_float(2.9));
  kf_op_set_number(ar, "step", kf_number_float(0.5));
  kf_type ti = ttype(KF_DTYPE_I64, SHAPE(3));
  kf_op *ai = op_n(KF_OP_ARANGE, NULL, 0, 1, &ti);
  kf_op_set_number(ai, "start", kf_number_int(5));
  kf_op_set_number(ai, "end", kf_number_int(-1));
  kf_op_set_number(ai, "step", kf_number_int(-2));
  kf_type tf = ttype(KF_DTYPE_I32, SHAPE(2));
  kf_op *fu = op_n(KF_OP_FULL, NULL, 0, 1, &tf);
  kf_op_set_number(fu, "value", kf_number_float(-2.5));
  kf_tensor out[3];
  run_ok(ARGS(infer(ar), infer(ai), infer(fu)), NULL, 0, out);
  expect_vals(&out[0], VALS(1, 1.5, 2, 2.5), 0);  /* ceil((2.9 - 1) / 0.5) = 4 */
  expect_vals(&out[1], VALS(5, 3, 1), 0);
  expect_vals(&out[2], VALS(-2, -2), 0);  /* the fill value truncated to i32 */
}

static void test_views(void **state) {
  (void)state;
  /* x = [[0, 1, 2], [3, 4, 5]] */
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(2, 3));
  kf_op *pe = op(KF_OP_PERMUTE, ARGS(x));
  kf_op_set_ints(pe, "dims", (int64_t[]){1, 0}, 2);
  kf_value *t = infer(pe);
  kf_op *sl = op(KF_OP_SLICE, ARGS(t));
  kf_op_set_int(sl, "dim", 0);
  kf_op_set_int(sl, "start", 0);
  kf_op_set_int(sl, "end", 3);
  kf_op_set_int(sl, "step", 2);
  kf_value *s = infer(sl); /* rows 0 and 2 of x^T: [[0, 3], [2, 5]] */
  kf_op *se = op(KF_OP_SELECT, ARGS(x));
  kf_op_set_int(se, "dim", 1);
  kf_op_set_int(se, "index", 2);
  kf_value *c2 = infer(se); /* column 2: [2, 5] */
  kf_type te = ttype(KF_DTYPE_F32, SHAPE(2, 2, 2));
  kf_value *ex = infer(op_n(KF_OP_EXPAND, ARGS(s), 1, &te));
  kf_op *un = op(KF_OP_UNFOLD, ARGS(x));
  kf_op_set_int(un, "dim", 1);
  kf_op_set_int(un, "size", 2);
  kf_op_set_int(un, "step", 1);
  kf_value *u = infer(un); /* [2, 2, 2]: windows [0,1],[1,2] / [3,4],[4,5] */
  kf_op *sp = op_n(KF_OP_SPLIT, ARGS(x), 2, NULL);
  kf_op_set_int(sp, "dim", 1);
  kf_op_set_ints(sp, "sizes", (int64_t[]){1, 2}, 2);
  infer(sp);
  kf_type tr = ttype(KF_DTYPE_F32, SHAPE(3, 2));
  kf_value *rs = infer(op_n(KF_OP_RESHAPE, ARGS(t), 1, &tr));
  kf_tensor in[1] = {tensor(KF_DTYPE_F32, SHAPE(2, 3), VALS(0, 1, 2, 3, 4, 5))};
  kf_tensor out[7];
  run_ok(ARGS(s, c2, ex, u, sp->results[0], sp->results[1], rs), in, 1, out);
  expect_vals(&out[0], VALS(0, 3, 2, 5), 0);
  expect_vals(&out[1], VALS(2, 5), 0);
  expect_vals(&out[2], VALS(0, 3, 2, 5, 0, 3, 2, 5), 0);
  expect_vals(&out[3], VALS(0, 1, 1, 2, 3, 4, 4, 5), 0);
  expect_vals(&out[4], VALS(0, 3), 0);
  expect_vals(&out[5], VALS(1, 2, 4, 5), 0);
  expect_vals(&out[6], VALS(0, 3, 1, 4, 2, 5), 0); /* x^T row-major */
}

static void test_as_strided(void **state) {
  (void)state;
  /* x = 0..5 as [2, 3]; as_strided(size [2, 2], stride [1, 2], offset 1)
   * reads storage[1 + i + 2j]: [[1, 3], [2, 4]] */
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(2, 3));
  kf_op *a = op(KF_OP_AS_STRIDED, ARGS(x));
  kf_op_set_ints(a, "size", (int64_t[]){2, 2}, 2);
  kf_op_set_ints(a, "stride", (int64_t[]){1, 2}, 2);
  kf_op_set_int(a, "offset", 1);
  kf_value *r = infer(a);
  /* through a view: select row 1 (storage offset 3) then as_strided over
   * the same storage, offset 0: storage[0], storage[4] = 0, 4 */
  kf_op *se = op(KF_OP_SELECT, ARGS(x));
  kf_op_set_int(se, "dim", 0);
  kf_op_set_int(se, "index", 1);
  kf_value *row = infer(se);
  kf_op *b = op(KF_OP_AS_STRIDED, ARGS(row));
  kf_op_set_ints(b, "size", (int64_t[]){2}, 1);
  kf_op_set_ints(b, "stride", (int64_t[]){4}, 1);
  kf_op_set_int(b, "offset", 0);
  kf_value *r2 = infer(b);
  kf_tensor in[1] = {tensor(KF_DTYPE_F32, SHAPE(2, 3), VALS(0, 1, 2, 3, 4, 5))};
  kf_tensor out[2];
  run_ok(ARGS(r, r2), in, 1, out);
  expect_vals(&out[0], VALS(1, 3, 2, 4), 0);
  expect_vals(&out[1], VALS(0, 4), 0);
}

static void test_as_strided_undefined_storage(void **state) {
  (void)state;
  /* an input whose layout covers storage 0, 2, 4 only: as_strided reading
   * storage 1 cannot be answered from its elements */
  kf_type t = ttype(KF_DTYPE_F32, SHAPE(3));
  t.strides[0] = 2;
  kf_value *x = kf_graph_add_input(g, "x", &t);
  kf_op *a = op(KF_OP_AS_STRIDED, ARGS(x));
  kf_op_set_ints(a, "size", (int64_t[]){2}, 1);
  kf_op_set_ints(a, "stride", (int64_t[]){1}, 1);
  kf_op_set_int(a, "offset", 0);
  kf_value *r = infer(a);
  kf_tensor in[1] = {tensor(KF_DTYPE_F32, SHAPE(3), VALS(7, 8, 9))};
  kf_tensor out[1];
  expect_error(run(ARGS(r), in, 1, out, 0), KF_ERR_UNSUPPORTED, "storage element 1");
  kf_tensor_fini(&in[0]);
}

static void test_cat_pad(void **state) {
  (void)state;
  kf_value *a = input("a", KF_DTYPE_F32, SHAPE(2, 1));
  kf_value *b = input("b", KF_DTYPE_F32, SHAPE(2, 2));
  kf_op *ca = op(KF_OP_CAT, ARGS(a, b));
  kf_op_set_int(ca, "dim", 1);
  kf_value *c = infer(ca); /* [[1, 3, 4], [2, 5, 6]] */
  kf_op *pa = op(KF_OP_PAD, ARGS(c));
  /* last dim: 1 before, crop 2 after; dim 0: crop 1 before */
  kf_op_set_ints(pa, "pad", (int64_t[]){1, -2, -1, 0}, 4);
  kf_op_set_number(pa, "value", kf_number_float(9));
  kf_value *p = infer(pa);
  kf_tensor in[2] = {tensor(KF_DTYPE_F32, SHAPE(2, 1), VALS(1, 2)),
                     tensor(KF_DTYPE_F32, SHAPE(2, 2), VALS(3, 4, 5, 6))};
  kf_tensor out[2];
  run_ok(ARGS(c, p), in, 2, out);
  expect_vals(&out[0], VALS(1, 3, 4, 2, 5, 6), 0);
  expect_shape(&out[1], SHAPE(1, 2));
  expect_vals(&out[1], VALS(9, 2), 0); /* row 1, [pad, col 0] */
}

static void test_index_broadcast(void **state) {
  (void)state;
  /* x[i][j] = 10 i + j, shape [3, 4]; i0 = [[0], [2]], i1 = [1, -1]:
   * out[a][b] = x[i0[a]][i1[b]] with -1 wrapping to 3 */
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(3, 4));
  kf_value *i0 = input("i0", KF_DTYPE_I64, SHAPE(2, 1));
  kf_value *i1 = input("i1", KF_DTYPE_I32, SHAPE(2));
  kf_op *ix = op(KF_OP_INDEX, ARGS(x, i0, i1));
  kf_op_set_ints(ix, "dims", (int64_t[]){0, 1}, 2);
  kf_value *r = infer(ix);
  kf_tensor in[3] = {tensor(KF_DTYPE_F32, SHAPE(3, 4), VALS(0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23)),
                     tensor(KF_DTYPE_I64, SHAPE(2, 1), VALS(0, 2)),
                     tensor(KF_DTYPE_I32, SHAPE(2), VALS(1, -1))};
  kf_tensor out[1];
  run_ok(ARGS(r), in, 3, out);
  expect_shape(&out[0], SHAPE(2, 2));
  expect_vals(&out[0], VALS(1, 3, 21, 23), 0);
}

static void test_index_non_adjacent(void **state) {
  (void)state;
  /* x[i][j][k] = 100 i + 10 j + k, shape [2, 3, 4]; x[a, :, c] with
   * a = [1, 0], c = [2, 0]: the index dims are not adjacent, so the
   * broadcast index dim goes first -> [2, 3], out[b][j] = x[a[b]][j][c[b]] */
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(2, 3, 4));
  kf_value *ia = input("ia", KF_DTYPE_I64, SHAPE(2));
  kf_value *ic = input("ic", KF_DTYPE_I64, SHAPE(2));
  kf_op *ix = op(KF_OP_INDEX, ARGS(x, ia, ic));
  kf_op_set_ints(ix, "dims", (int64_t[]){0, 2}, 2);
  kf_value *r = infer(ix);
  /* x[:, c] keeps its place: [2, 2, 4] */
  kf_op *iy = op(KF_OP_INDEX, ARGS(x, ic));
  kf_op_set_ints(iy, "dims", (int64_t[]){1}, 1);
  kf_value *r2 = infer(iy);
  double xv[24];
  for (int i = 0; i < 24; i++) xv[i] = 100 * (i / 12) + 10 * (i / 4 % 3) + i % 4;
  kf_tensor in[3] = {tensor(KF_DTYPE_F32, SHAPE(2, 3, 4), xv, 24),
                     tensor(KF_DTYPE_I64, SHAPE(2), VALS(1, 0)),
                     tensor(KF_DTYPE_I64, SHAPE(2), VALS(2, 0))};
  kf_tensor out[2];
  run_ok(ARGS(r, r2), in, 3, out);
  expect_shape(&out[0], SHAPE(2, 3));
  /* ic = [2, 0]: b = 0 -> x[1][j][2] = 102, 112, 122; b = 1 -> x[0][j][0] */
  expect_vals(&out[0], VALS(102, 112, 122, 0, 10, 20), 0);
  expect_shape(&out[1], SHAPE(2, 2, 4));
  /* out[i][b][k] = x[i][ic[b]][k]: rows j = 2 then j = 0 */
  expect_vals(&out[1], VALS(20, 21, 22, 23, 0, 1, 2, 3, 120, 121, 122, 123, 100, 101, 102, 103), 0);
}

static void test_index_out_of_range(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(3));
  kf_value *i = input("i", KF_DTYPE_I64, SHAPE(2));
  kf_op *ix = op(KF_OP_INDEX, ARGS(x, i));
  kf_op_set_ints(ix, "dims", (int64_t[]){0}, 1);
  kf_value *r = infer(ix);
  kf_tensor in[2] = {tensor(KF_DTYPE_F32, SHAPE(3), VALS(1, 2, 3)),
                     tensor(KF_DTYPE_I64, SHAPE(2), VALS(-3, 3))};
  kf_tensor out[1];
  /* -3 wraps to 0; 3 is out of range */
  expect_error(run(ARGS(r), in, 2, out, 0), KF_ERR_INVALID, "index 3 is out of bounds");
  kf_tensor_fini(&in[0]);
  kf_tensor_fini(&in[1]);
}

static void test_gather_select_embedding(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(2, 3));
  kf_value *gi = input("gi", KF_DTYPE_I64, SHAPE(2, 2));
  kf_value *si = input("si", KF_DTYPE_I64, SHAPE(2));
  kf_op *ga = op(KF_OP_GATHER, ARGS(x, gi));
  kf_op_set_int(ga, "dim", 1);
  kf_op *is = op(KF_OP_INDEX_SELECT, ARGS(x, si));
  kf_op_set_int(is, "dim", 1);
  kf_value *rg = infer(ga), *rs = infer(is);
  kf_tensor in[3] = {tensor(KF_DTYPE_F32, SHAPE(2, 3), VALS(0, 1, 2, 3, 4, 5)),
                     tensor(KF_DTYPE_I64, SHAPE(2, 2), VALS(2, 0, 1, 1)),
                     tensor(KF_DTYPE_I64, SHAPE(2), VALS(2, 2))};
  kf_tensor out[2];
  run_ok(ARGS(rg, rs), in, 3, out);
  /* gather dim 1: out[i][j] = x[i][gi[i][j]] */
  expect_vals(&out[0], VALS(2, 0, 4, 4), 0);
  /* index_select dim 1 with [2, 2]: column 2 twice */
  expect_vals(&out[1], VALS(2, 2, 5, 5), 0);
}

static void test_embedding_out_of_range(void **state) {
  (void)state;
  kf_value *w = input("w", KF_DTYPE_F32, SHAPE(2, 2));
  kf_value *i = input("i", KF_DTYPE_I64, SHAPE(3));
  kf_value *r = infer(op(KF_OP_EMBEDDING, ARGS(w, i)));
  kf_tensor in[2] = {tensor(KF_DTYPE_F32, SHAPE(2, 2), VALS(1, 2, 3, 4)),
                     tensor(KF_DTYPE_I64, SHAPE(3), VALS(1, 0, 2))};
  kf_tensor out[1];
  expect_error(run(ARGS(r), in, 2, out, 0), KF_ERR_INVALID, "index 2 is out of bounds");
  kf_tensor_fini(&in[0]);
  kf_tensor_fini(&in[1]);
}

static void test_embedding(void **state) {
  (void)state;
  kf_value *w = input("w", KF_DTYPE_F32, SHAPE(3, 2));
  kf_value *i = input("i", KF_DTYPE_I64, SHAPE(2, 2));
  kf_value *r = infer(op(KF_OP_EMBEDDING, ARGS(w, i)));
  kf_tensor in[2] = {tensor(KF_DTYPE_F32, SHAPE(3, 2), VALS(1, 2, 3, 4, 5, 6)),
                     tensor(KF_DTYPE_I64, SHAPE(2, 2), VALS(2, 0, 1, 2))};
  kf_tensor out[1];
  run_ok(ARGS(r), in, 2, out);
  expect_shape(&out[0], SHAPE(2, 2, 2));
  expect_vals(&out[0], VALS(5, 6, 1, 2, 3, 4, 5, 6), 0);
}

static void test_gather_negative(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(3));
  kf_value *i = input("i", KF_DTYPE_I64, SHAPE(1));
  kf_op *ga = op(KF_OP_GATHER, ARGS(x, i));
  kf_op_set_int(ga, "dim", 0);
  kf_value *r = infer(ga);
  kf_tensor in[2] = {tensor(KF_DTYPE_F32, SHAPE(3), VALS(1, 2, 3)),
                     tensor(KF_DTYPE_I64, SHAPE(1), VALS(-1))};
  kf_tensor out[1];
  /* gather does not wrap negative indices (PyTorch rejects them) */
  expect_error(run(ARGS(r), in, 2, out, 0), KF_ERR_INVALID, "index -1 is out of bounds");
  kf_tensor_fini(&in[0]);
  kf_tensor_fini(&in[1]);
}

/* ---- reductions and normalisations --------------------------------------- */

static void test_reductions(void **state) {
  (void)state;
  /* x = [[1, 2, 3, 4], [4, -1, 4, 0]] */
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(2, 4));
  kf_op *su = op(KF_OP_SUM, ARGS(x));
  kf_op_set_ints(su, "dims", (int64_t[]){1}, 1);
  kf_op_set_bool(su, "keepdim", true);
  kf_op *va = op(KF_OP_VAR, ARGS(x));
  kf_op_set_ints(va, "dims", (int64_t[]){1}, 1);
  kf_op_set_bool(va, "keepdim", false);
  kf_op_set_number(va, "correction", kf_number_int(1));
  kf_op *am = op(KF_OP_ARGMAX, ARGS(x));
  kf_op_set_int(am, "dim", 1);
  kf_op_set_bool(am, "keepdim", false);
  kf_op *af = op(KF_OP_ARGMIN, ARGS(x));
  kf_op_set_bool(af, "keepdim", false);
  kf_op *mx = op_n(KF_OP_MAX_DIM, ARGS(x), 2, NULL);
  kf_op_set_int(mx, "dim", 0);
  kf_op_set_bool(mx, "keepdim", true);
  kf_op *cs = op(KF_OP_CUMSUM, ARGS(x));
  kf_op_set_int(cs, "dim", 1);
  kf_op *me = op(KF_OP_MEAN, ARGS(x));
  kf_op_set_ints(me, "dims", (int64_t[]){0, 1}, 2);
  kf_op_set_bool(me, "keepdim", false);
  kf_value *rsu = infer(su), *rva = infer(va), *ram = infer(am), *raf = infer(af);
  infer(mx);
  kf_value *rcs = infer(cs), *rme = infer(me);
  kf_tensor in[1] = {tensor(KF_DTYPE_F32, SHAPE(2, 4), VALS(1, 2, 3, 4, 4, -1, 4, 0))};
  kf_tensor out[8];
  run_ok(ARGS(rsu, rva, ram, raf, mx->results[0], mx->results[1], rcs, rme), in, 1, out);
  expect_shape(&out[0], SHAPE(2, 1));
  expect_vals(&out[0], VALS(10, 7), 0);
  /* row 0: mean 2.5, squares 2.25 + .25 + .25 + 2.25 = 5, / 3;
   * row 1: mean 1.75, 5.0625 + 7.5625 + 5.0625 + 3.0625 = 20.75, / 3 */
  expect_vals(&out[1], VALS(5.0 / 3, 20.75 / 3), 1e-12);
  /* argmax of [4, -1, 4, 0] is the first 4 */
  expect_vals(&out[2], VALS(3, 0), 0);
  /* argmin over everything: -1 at flat index 5 */
  expect_shape(&out[3], 0, NULL);
  expect_vals(&out[3], VALS(5), 0);
  expect_shape(&out[4], SHAPE(1, 4));
  expect_vals(&out[4], VALS(4, 2, 4, 4), 0);
  expect_vals(&out[5], VALS(1, 0, 1, 0), 0); /* rows of the maxima 4 2 4 4 */
  expect_vals(&out[6], VALS(1, 3, 6, 10, 4, 3, 7, 7), 0);
  expect_vals(&out[7], VALS(17.0 / 8), 0);
}

/* scans: cumprod, reverse and exclusive forms, along a non-last dim, and an
 * integer input accumulated into int64 */
static void test_scans(void **state) {
  (void)state;
  /* x = [[1, 2, 3, 4], [4, -1, 4, 0]] */
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(2, 4));
  kf_op *cp = op(KF_OP_CUMPROD, ARGS(x));
  kf_op_set_int(cp, "dim", 1);
  kf_op *rv = op(KF_OP_CUMSUM, ARGS(x));
  kf_op_set_int(rv, "dim", 1);
  kf_op_set_bool(rv, "reverse", true);
  kf_op *ex = op(KF_OP_CUMSUM, ARGS(x));
  kf_op_set_int(ex, "dim", 1);
  kf_op_set_bool(ex, "exclusive", true);
  kf_op *rep = op(KF_OP_CUMPROD, ARGS(x));
  kf_op_set_int(rep, "dim", 1);
  kf_op_set_bool(rep, "reverse", true);
  kf_op_set_bool(rep, "exclusive", true);
  kf_op *c0 = op(KF_OP_CUMSUM, ARGS(x));
  kf_op_set_int(c0, "dim", 0);
  kf_op_set_bool(c0, "reverse", false); /* present and false: the plain scan */
  kf_value *n = input("n", KF_DTYPE_I32, SHAPE(3));
  kf_type undeclared; /* no dtype argument: inference picks int64 */
  memset(&undeclared, 0, sizeof undeclared);
  kf_op *ci = op_n(KF_OP_CUMPROD, ARGS(n), 1, &undeclared);
  kf_op_set_int(ci, "dim", 0);
  kf_value *rcp = infer(cp), *rrv = infer(rv), *rex = infer(ex), *rrep = infer(rep), *rc0 = infer(c0);
  kf_value *rci = infer(ci);
  assert_int_equal(rci->type.dtype, KF_DTYPE_I64);
  kf_tensor in[2] = {tensor(KF_DTYPE_F32, SHAPE(2, 4), VALS(1, 2, 3, 4, 4, -1, 4, 0)),
                     tensor(KF_DTYPE_I32, SHAPE(3), VALS(100000, 100000, 3))};
  kf_tensor out[6];
  run_ok(ARGS(rcp, rrv, rex, rrep, rc0, rci), in, 2, out);
  expect_vals(&out[0], VALS(1, 2, 6, 24, 4, -4, -16, 0), 0);
  expect_vals(&out[1], VALS(10, 9, 7, 4, 7, 3, 4, 0), 0);
  expect_vals(&out[2], VALS(0, 1, 3, 6, 0, 4, 3, 7), 0);
  expect_vals(&out[3], VALS(24, 12, 4, 1, 0, 0, 0, 1), 0);
  expect_vals(&out[4], VALS(1, 2, 3, 4, 5, 1, 7, 4), 0);
  expect_vals(&out[5], VALS(100000, 1e10, 3e10), 0); /* past int32 */
}

static void test_norms(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F64, SHAPE(3));
  double ords[] = {2, 1, INFINITY, -INFINITY, 0, 3};
  kf_value *r[6];
  for (int i = 0; i < 6; i++) {
    kf_op *o = op(KF_OP_NORM, ARGS(x));
    kf_op_set_ints(o, "dims", (int64_t[]){0}, 1);
    kf_op_set_bool(o, "keepdim", false);
    kf_op_set_number(o, "ord", kf_number_float(ords[i]));
    r[i] = infer(o);
  }
  kf_tensor in[1] = {tensor(KF_DTYPE_F64, SHAPE(3), VALS(3, -4, 0))};
  kf_tensor out[6];
  run_ok(r, 6, in, 1, out);
  expect_vals(&out[0], VALS(5), 1e-15);  /* sqrt(9 + 16) */
  expect_vals(&out[1], VALS(7), 0);
  expect_vals(&out[2], VALS(4), 0);
  expect_vals(&out[3], VALS(0), 0);
  expect_vals(&out[4], VALS(2), 0);      /* non-zero count */
  expect_vals(&out[5], VALS(cbrt(91)), 1e-12); /* (27 + 64)^(1/3) */
}

static void test_max_dim_nan(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(4));
  kf_op *mx = op_n(KF_OP_MAX_DIM, ARGS(x), 2, NULL);
  kf_op_set_int(mx, "dim", 0);
  kf_op_set_bool(mx, "keepdim", false);
  kf_op *am = op(KF_OP_AMAX, ARGS(x));
  kf_op_set_ints(am, "dims", (int64_t[]){0}, 1);
  kf_op_set_bool(am, "keepdim", false);
  infer(mx);
  kf_value *ra = infer(am);
  kf_tensor in[1] = {tensor(KF_DTYPE_F32, SHAPE(4), VALS(1, NAN, 3, NAN))};
  kf_tensor out[3];
  run_ok(ARGS(mx->results[0], mx->results[1], ra), in, 1, out);
  /* NaN is the maximum, at its first occurrence */
  expect_vals(&out[0], VALS(NAN), 0);
  expect_vals(&out[1], VALS(1), 0);
  expect_vals(&out[2], VALS(NAN), 0);
}

static void test_softmax(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(2, 2));
  kf_op *sm = op(KF_OP_SOFTMAX, ARGS(x));
  kf_op_set_int(sm, "dim", 1);
  kf_op *ls = op(KF_OP_LOG_SOFTMAX, ARGS(x));
  kf_op_set_int(ls, "dim", 0);
  kf_value *r = infer(sm), *rl = infer(ls);
  kf_tensor in[1] = {tensor(KF_DTYPE_F32, SHAPE(2, 2), VALS(0, 1.0986122886681098, 5, 5))};
  kf_tensor out[2];
  run_ok(ARGS(r, rl), in, 1, out);
  /* softmax([0, ln 3]) = [1, 3] / 4 (ln 3 rounded to f32: 1e-7 slack);
   * softmax([5, 5]) = [0.5, 0.5] */
  expect_vals(&out[0], VALS(0.25, 0.75, 0.5, 0.5), 1e-7);
  /* log_softmax down the columns: [a, b] -> [a - b - log1p(e^(a-b)) ...]:
   * column 0 = [0, 5]: [-5 - log1p(e^-5), -log1p(e^-5)]; column 1 =
   * [ln 3, 5] with d = 5 - ln 3: [-d - log1p(e^-d), -log1p(e^-d)] */
  double l = log1p(exp(-5.0)), d = 5 - 1.0986122886681098, ld = log1p(exp(-d));
  expect_vals(&out[1], VALS(-5 - l, -d - ld, -l, -ld), 1e-7);
}

static void test_layer_group_batch_norm(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(1, 2, 3));
  kf_type tw = ttype(KF_DTYPE_F32, SHAPE(3));
  kf_value *w = param_f32("ln.weight", &tw, VALS(1, 2, 3));
  kf_op *ln = op_n(KF_OP_LAYER_NORM, ARGS(x, w, NULL), 3, NULL);
  kf_op_set_int(ln, "normalized_ndim", 1);
  kf_op_set_float(ln, "eps", 0.0);
  infer(ln);
  kf_op *gn = op_n(KF_OP_GROUP_NORM, ARGS(x, NULL, NULL), 3, NULL);
  kf_op_set_int(gn, "groups", 1);
  kf_op_set_float(gn, "eps", 0.0);
  infer(gn);
  kf_op *bn = op(KF_OP_BATCH_NORM, ARGS(x, NULL, NULL, NULL, NULL));
  kf_op_set_float(bn, "eps", 0.0);
  kf_value *rb = infer(bn);
  /* x rows [1, 2, 3] and [5, 5, 8] */
  kf_tensor in[1] = {tensor(KF_DTYPE_F32, SHAPE(1, 2, 3), VALS(1, 2, 3, 5, 5, 8))};
  kf_tensor out[6];
  run_ok(ARGS(ln->results[0], ln->results[1], ln->results[2], gn->results[0], gn->results[2], rb),
         in, 1, out);
  /* row [1, 2, 3]: mean 2, biased var 2/3, rstd sqrt(1.5); row [5, 5, 8]:
   * mean 6, var (1 + 1 + 4) / 3 = 2, rstd 1/sqrt(2); then times w */
  double a = sqrt(1.5), b = 1 / sqrt(2.0);
  expect_vals(&out[0], VALS(-a, 0, 3 * a, -1 * b, -2 * b, 3 * 2 * b), 1e-12);
  expect_shape(&out[1], SHAPE(1, 2, 1));
  expect_vals(&out[1], VALS(2, 6), 1e-12);
  expect_vals(&out[2], VALS(a, b), 1e-12);
  /* one group of all six: mean 4, squares 9 4 1 1 1 16 = 32 / 6 */
  double r = 1 / sqrt(32.0 / 6);
  expect_vals(&out[3], VALS(-3 * r, -2 * r, -r, r, r, 4 * r), 1e-12);
  expect_vals(&out[4], VALS(r), 1e-12);
  /* batch norm without running stats: per channel over N and L, i.e.
   * the same as the layer norm rows here (N = 1), without the weight */
  expect_vals(&out[5], VALS(-a, 0, a, -b, -b, 2 * b), 1e-12);
}

static void test_group_norm_affine(void **state) {
  (void)state;
  /* x [1, 4, 2], 2 groups of 2 channels, per-channel weight and bias */
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(1, 4, 2));
  kf_value *w = input("w", KF_DTYPE_F32, SHAPE(4));
  kf_value *b = input("b", KF_DTYPE_F32, SHAPE(4));
  kf_op *gn = op_n(KF_OP_GROUP_NORM, ARGS(x, w, b), 3, NULL);
  kf_op_set_int(gn, "groups", 2);
  kf_op_set_float(gn, "eps", 0.0);
  infer(gn);
  kf_tensor in[3] = {tensor(KF_DTYPE_F32, SHAPE(1, 4, 2), VALS(1, 3, 5, 7, 0, 0, 2, -2)),
                     tensor(KF_DTYPE_F32, SHAPE(4), VALS(1, 2, 3, 4)),
                     tensor(KF_DTYPE_F32, SHAPE(4), VALS(0, 10, 0, 0))};
  kf_tensor out[2];
  run_ok(ARGS(gn->results[0], gn->results[1]), in, 3, out);
  /* group 0 = [1, 3, 5, 7]: mean 4, var (9 + 1 + 1 + 9) / 4 = 5 ->
   * [-3, -1 | 1, 3] / sqrt 5, channel 1 times 2 plus 10;
   * group 1 = [0, 0, 2, -2]: mean 0, var 2 -> [0, 0 | 2, -2] / sqrt 2,
   * channel 3 times 4 */
  double a = 1 / sqrt(5.0), c = 1 / sqrt(2.0);
  expect_vals(&out[0], VALS(-3 * a, -a, 2 * a + 10, 6 * a + 10, 0, 0, 8 * c, -8 * c), 1e-12);
  expect_shape(&out[1], SHAPE(1, 2));
  expect_vals(&out[1], VALS(4, 0), 1e-12);
}

static void test_batch_norm_running(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(2, 2));
  kf_value *m = input("m", KF_DTYPE_F32, SHAPE(2));
  kf_value *v = input("v", KF_DTYPE_F32, SHAPE(2));
  kf_value *b = input("b", KF_DTYPE_F32, SHAPE(2));
  kf_op *bn = op(KF_OP_BATCH_NORM, ARGS(x, NULL, b, m, v));
  kf_op_set_float(bn, "eps", 0.5);
  kf_value *r = infer(bn);
  kf_tensor in[4] = {tensor(KF_DTYPE_F32, SHAPE(2, 2), VALS(1, 2, 3, 4)),
                     tensor(KF_DTYPE_F32, SHAPE(2), VALS(1, -2)),
                     tensor(KF_DTYPE_F32, SHAPE(2), VALS(3.5, 1.5)),
                     tensor(KF_DTYPE_F32, SHAPE(2), VALS(10, 20))};
  kf_tensor out[1];
  run_ok(ARGS(r), in, 4, out);
  /* channel 0: (x - 1) / sqrt(4) + 10; channel 1: (x + 2) / sqrt(2) + 20 */
  expect_vals(&out[0], VALS(10, 20 + 4 / sqrt(2.0), 11, 20 + 6 / sqrt(2.0)), 1e-12);
}

/* ---- matmul, conv, pool, attention --------------------------------------- */

static void test_matmul(void **state) {
  (void)state;
  kf_value *a = input("a", KF_DTYPE_F32, SHAPE(2, 2));
  kf_value *b = input("b", KF_DTYPE_F32, SHAPE(2, 1));
  kf_value *c = input("c", KF_DTYPE_F32, SHAPE(1));
  kf_value *mm = infer(op(KF_OP_MM, ARGS(a, b)));
  kf_op *ad = op(KF_OP_ADDMM, ARGS(c, a, b));
  kf_op_set_number(ad, "beta", kf_number_int(0));
  kf_op_set_number(ad, "alpha", kf_number_int(2));
  kf_value *r = infer(ad);
  kf_tensor in[3] = {tensor(KF_DTYPE_F32, SHAPE(2, 2), VALS(1, 2, 3, 4)),
                     tensor(KF_DTYPE_F32, SHAPE(2, 1), VALS(5, 6)),
                     tensor(KF_DTYPE_F32, SHAPE(1), VALS(NAN))};
  kf_tensor out[2];
  run_ok(ARGS(mm, r), in, 3, out);
  expect_vals(&out[0], VALS(17, 39), 0); /* 5 + 12, 15 + 24 */
  expect_vals(&out[1], VALS(34, 78), 0); /* beta = 0 drops the NaN bias */
}

static void test_conv2d(void **state) {
  (void)state;
  /* x = [[1,2,3],[4,5,6],[7,8,9]], w = [[1,2],[3,4]] (a weight), bias 0.5:
   * out[0][0] = 1*1 + 2*2 + 4*3 + 5*4 = 37, then 47, 67, 77 */
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(1, 1, 3, 3));
  kf_type tw = ttype(KF_DTYPE_F32, SHAPE(1, 1, 2, 2));
  kf_value *w = param_f32("conv.weight", &tw, VALS(1, 2, 3, 4));
  kf_value *bias = input("bias", KF_DTYPE_F32, SHAPE(1));
  kf_op *cv = op(KF_OP_CONV, ARGS(x, w, bias));
  kf_op_set_ints(cv, "stride", (int64_t[]){1, 1}, 2);
  kf_op_set_ints(cv, "padding", (int64_t[]){0, 0}, 2);
  kf_op_set_ints(cv, "dilation", (int64_t[]){1, 1}, 2);
  kf_op_set_bool(cv, "transposed", false);
  kf_op_set_ints(cv, "output_padding", (int64_t[]){0, 0}, 2);
  kf_op_set_int(cv, "groups", 1);
  kf_value *r = infer(cv);
  /* stride 2, padding 1 with a 2x2 kernel of ones: windows
   * {x00}, {x01, x02}, {x10, x20}, {x11, x12, x21, x22} = 1, 5, 11, 28 */
  kf_op *fo = op_n(KF_OP_FULL, NULL, 0, 1, &tw);
  kf_op_set_number(fo, "value", kf_number_int(1));
  kf_value *ones = infer(fo);
  kf_op *cs = op(KF_OP_CONV, ARGS(x, ones, NULL));
  kf_op_set_ints(cs, "stride", (int64_t[]){2, 2}, 2);
  kf_op_set_ints(cs, "padding", (int64_t[]){1, 1}, 2);
  kf_op_set_ints(cs, "dilation", (int64_t[]){1, 1}, 2);
  kf_op_set_bool(cs, "transposed", false);
  kf_op_set_ints(cs, "output_padding", (int64_t[]){0, 0}, 2);
  kf_op_set_int(cs, "groups", 1);
  kf_value *r2 = infer(cs);
  kf_tensor in[2] = {tensor(KF_DTYPE_F32, SHAPE(1, 1, 3, 3), VALS(1, 2, 3, 4, 5, 6, 7, 8, 9)),
                     tensor(KF_DTYPE_F32, SHAPE(1), VALS(0.5))};
  kf_tensor out[2];
  run_ok(ARGS(r, r2), in, 2, out);
  expect_shape(&out[0], SHAPE(1, 1, 2, 2));
  expect_vals(&out[0], VALS(37.5, 47.5, 67.5, 77.5), 0);
  expect_vals(&out[1], VALS(1, 5, 11, 28), 0);
}

static void test_conv_transposed_groups_dilation(void **state) {
  (void)state;
  /* transposed, stride 2, 2x2 kernel of ones: each input spreads into its
   * own 2x2 block: [[1,1,2,2],[1,1,2,2],[3,3,4,4],[3,3,4,4]]; with stride 1
   * the blocks overlap: [[1,3,2],[4,10,6],[3,7,4]] */
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(1, 1, 2, 2));
  kf_type tw = ttype(KF_DTYPE_F32, SHAPE(1, 1, 2, 2));
  kf_op *fo = op_n(KF_OP_FULL, NULL, 0, 1, &tw);
  kf_op_set_number(fo, "value", kf_number_float(1.0));
  kf_value *ones = infer(fo);
  kf_value *rt[2];
  for (int s = 1; s <= 2; s++) {
    kf_op *cv = op(KF_OP_CONV, ARGS(x, ones, NULL));
    kf_op_set_ints(cv, "stride", (int64_t[]){s, s}, 2);
    kf_op_set_ints(cv, "padding", (int64_t[]){0, 0}, 2);
    kf_op_set_ints(cv, "dilation", (int64_t[]){1, 1}, 2);
    kf_op_set_bool(cv, "transposed", true);
    kf_op_set_ints(cv, "output_padding", (int64_t[]){0, 0}, 2);
    kf_op_set_int(cv, "groups", 1);
    rt[s - 1] = infer(cv);
  }
  /* conv1d, 2 groups of one channel, kernel [1, 10] dilated by 2:
   * out[c][i] = w[c][0] x[c][i] + w[c][1] x[c][i + 2] */
  kf_value *y = input("y", KF_DTYPE_F32, SHAPE(1, 2, 5));
  kf_value *w1 = input("w1", KF_DTYPE_F32, SHAPE(2, 1, 2));
  kf_op *c1 = op(KF_OP_CONV, ARGS(y, w1, NULL));
  kf_op_set_ints(c1, "stride", (int64_t[]){1}, 1);
  kf_op_set_ints(c1, "padding", (int64_t[]){0}, 1);
  kf_op_set_ints(c1, "dilation", (int64_t[]){2}, 1);
  kf_op_set_bool(c1, "transposed", false);
  kf_op_set_ints(c1, "output_padding", (int64_t[]){0}, 1);
  kf_op_set_int(c1, "groups", 2);
  kf_value *r1 = infer(c1);
  kf_tensor in[3] = {tensor(KF_DTYPE_F32, SHAPE(1, 1, 2, 2), VALS(1, 2, 3, 4)),
                     tensor(KF_DTYPE_F32, SHAPE(1, 2, 5), VALS(1, 2, 3, 4, 5, 0, 0, 1, 0, 0)),
                     tensor(KF_DTYPE_F32, SHAPE(2, 1, 2), VALS(1, 10, 2, -1))};
  kf_tensor out[3];
  run_ok(ARGS(rt[1], rt[0], r1), in, 3, out);
  expect_shape(&out[0], SHAPE(1, 1, 4, 4));
  expect_vals(&out[0], VALS(1, 1, 2, 2, 1, 1, 2, 2, 3, 3, 4, 4, 3, 3, 4, 4), 0);
  expect_vals(&out[1], VALS(1, 3, 2, 4, 10, 6, 3, 7, 4), 0);
  /* channel 0: 1 + 30, 2 + 40, 3 + 50; channel 1 (x = [0,0,1,0,0]):
   * 2*0 - 1, 2*0 - 0, 2*1 - 0 */
  expect_vals(&out[2], VALS(31, 42, 53, -1, 0, 2), 0);
}

static kf_op *max_pool(kf_value *x, int nk, const int64_t *k, const int64_t *s,
                       const int64_t *p, bool ceil_mode) {
  kf_op *o = op_n(KF_OP_MAX_POOL, ARGS(x), 2, NULL);
  kf_op_set_ints(o, "kernel", k, nk);
  kf_op_set_ints(o, "stride", s, nk);
  kf_op_set_ints(o, "padding", p, nk);
  kf_op_set_ints(o, "dilation", (int64_t[]){1, 1, 1}, nk);
  kf_op_set_bool(o, "ceil_mode", ceil_mode);
  infer(o);
  return o;
}

static void test_max_pool(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(1, 1, 4, 4));
  kf_op *m2 = max_pool(x, 2, (int64_t[]){2, 2}, (int64_t[]){2, 2}, (int64_t[]){0, 0}, false);
  kf_value *y = input("y", KF_DTYPE_F32, SHAPE(1, 3));
  kf_op *mp = max_pool(y, 1, (int64_t[]){2}, (int64_t[]){2}, (int64_t[]){1}, false);
  kf_value *z = input("z", KF_DTYPE_F32, SHAPE(1, 5));
  kf_op *mc = max_pool(z, 1, (int64_t[]){2}, (int64_t[]){2}, (int64_t[]){0}, true);
  kf_value *u = input("u", KF_DTYPE_F32, SHAPE(1, 5));
  kf_op *mn = max_pool(u, 1, (int64_t[]){3}, (int64_t[]){2}, (int64_t[]){0}, false);
  kf_tensor in[4] = {
      tensor(KF_DTYPE_F32, SHAPE(1, 1, 4, 4), VALS(1, 5, 2, 0, 3, 4, 8, 6, 9, 1, 0, 2, 7, 3, 4, 11)),
      tensor(KF_DTYPE_F32, SHAPE(1, 3), VALS(-3, -1, -2)),
      tensor(KF_DTYPE_F32, SHAPE(1, 5), VALS(1, 2, 3, 4, 5)),
      tensor(KF_DTYPE_F32, SHAPE(1, 5), VALS(1, NAN, 2, NAN, 7))};
  kf_tensor out[8];
  run_ok(ARGS(m2->results[0], m2->results[1], mp->results[0], mp->results[1], mc->results[0],
              mc->results[1], mn->results[0], mn->results[1]),
         in, 4, out);
  /* 2x2 windows: max 5 at (0,1) -> flat 1; 8 at (1,2) -> 6; 9 at (2,0) ->
   * 8; 11 at (3,3) -> 15 */
  expect_vals(&out[0], VALS(5, 8, 9, 11), 0);
  expect_vals(&out[1], VALS(1, 6, 8, 15), 0);
  /* padding counts as -inf, not 0: windows [pad, -3] and [-1, -2] */
  expect_vals(&out[2], VALS(-3, -1), 0);
  expect_vals(&out[3], VALS(0, 1), 0);
  /* ceil_mode adds a window [5] that hangs over the end */
  expect_vals(&out[4], VALS(2, 4, 5), 0);
  expect_vals(&out[5], VALS(1, 3, 4), 0);
  /* NaN wins a window, and ATen's CPU kernel keeps the last NaN it sees:
   * windows [1, nan, 2] and [2, nan, 7] -> nan at 1 and at 3
   * (F.max_pool1d_with_indices gives the same) */
  expect_vals(&out[6], VALS(NAN, NAN), 0);
  expect_vals(&out[7], VALS(1, 3), 0);
}

static kf_value *avg_pool(kf_value *x, int64_t k, int64_t s, int64_t p, bool ceil_mode,
                          bool cip, int64_t divisor) {
  kf_op *o = op(KF_OP_AVG_POOL, ARGS(x));
  kf_op_set_ints(o, "kernel", &k, 1);
  kf_op_set_ints(o, "stride", &s, 1);
  kf_op_set_ints(o, "padding", &p, 1);
  kf_op_set_bool(o, "ceil_mode", ceil_mode);
  kf_op_set_bool(o, "count_include_pad", cip);
  if (divisor) kf_op_set_int(o, "divisor", divisor);
  return infer(o);
}

static void test_avg_pool(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(1, 5));
  kf_value *a = avg_pool(x, 2, 2, 1, false, true, 0);
  kf_value *b = avg_pool(x, 2, 2, 1, false, false, 0);
  kf_value *c = avg_pool(x, 2, 2, 0, true, true, 0);
  kf_value *d = avg_pool(x, 2, 2, 0, true, true, 4);
  kf_type t3 = ttype(KF_DTYPE_F32, SHAPE(1, 1, 5)), ta = ttype(KF_DTYPE_F32, SHAPE(1, 1, 3));
  kf_value *x3 = infer(op_n(KF_OP_RESHAPE, ARGS(x), 1, &t3));
  kf_value *e = infer(op_n(KF_OP_ADAPTIVE_AVG_POOL, ARGS(x3), 1, &ta));
  kf_tensor in[1] = {tensor(KF_DTYPE_F32, SHAPE(1, 5), VALS(1, 2, 3, 4, 5))};
  kf_tensor out[5];
  run_ok(ARGS(a, b, c, d, e), in, 1, out);
  /* padding 1: windows [pad, 1], [2, 3], [4, 5] */
  expect_vals(&out[0], VALS(0.5, 2.5, 4.5), 0); /* the pad counts */
  expect_vals(&out[1], VALS(1, 2.5, 4.5), 0);   /* it does not */
  /* ceil_mode: the last window holds only 5, and (clipped to the input
   * without padding) counts 1 element */
  expect_vals(&out[2], VALS(1.5, 3.5, 5), 0);
  expect_vals(&out[3], VALS(0.75, 1.75, 1.25), 0); /* divisor 4 */
  /* adaptive 5 -> 3: windows [0, 2), [1, 4), [3, 5) */
  expect_vals(&out[4], VALS(1.5, 3, 4.5), 1e-15);
}

static kf_value *sdpa(kf_value *q, kf_value *k, kf_value *v, kf_value *m, bool causal,
                      double scale, bool gqa) {
  kf_op *o = op(KF_OP_SDPA, ARGS(q, k, v, m));
  kf_op_set_bool(o, "is_causal", causal);
  if (scale > 0) kf_op_set_float(o, "scale", scale);
  kf_op_set_bool(o, "enable_gqa", gqa);
  return infer(o);
}

static void test_sdpa(void **state) {
  (void)state;
  /* q rows [1, 0], [0, 0]; keys [1, 0], [0, 1]; values [1], [5].
   * Scale ln 3: row 0 scores [ln 3, 0] -> weights [3/4, 1/4] -> 2;
   * row 1 scores [0, 0] -> 3. */
  kf_value *q = input("q", KF_DTYPE_F64, SHAPE(1, 2, 2));
  kf_value *k = input("k", KF_DTYPE_F64, SHAPE(1, 2, 2));
  kf_value *v = input("v", KF_DTYPE_F64, SHAPE(1, 2, 1));
  kf_value *m = input("m", KF_DTYPE_BOOL, SHAPE(2, 2));
  kf_value *plain = sdpa(q, k, v, NULL, false, log(3.0), false);
  /* causal: row 0 sees key 0 only -> 1 */
  kf_value *causal = sdpa(q, k, v, NULL, true, log(3.0), false);
  /* mask row 0 keeps key 1 only -> 5; row 1 keeps nothing -> zeros */
  kf_value *masked = sdpa(q, k, v, m, false, log(3.0), false);
  /* default scale 1/sqrt(2): row 0 weights e^{1/sqrt2} : 1 */
  kf_value *dflt = sdpa(q, k, v, NULL, false, 0, false);
  kf_tensor in[4] = {tensor(KF_DTYPE_F64, SHAPE(1, 2, 2), VALS(1, 0, 0, 0)),
                     tensor(KF_DTYPE_F64, SHAPE(1, 2, 2), VALS(1, 0, 0, 1)),
                     tensor(KF_DTYPE_F64, SHAPE(1, 2, 1), VALS(1, 5)),
                     tensor(KF_DTYPE_BOOL, SHAPE(2, 2), VALS(0, 1, 0, 0))};
  kf_tensor out[4];
  run_ok(ARGS(plain, causal, masked, dflt), in, 4, out);
  expect_vals(&out[0], VALS(2, 3), 1e-12);
  expect_vals(&out[1], VALS(1, 3), 1e-12);
  expect_vals(&out[2], VALS(5, 0), 1e-12);
  double e = exp(1 / sqrt(2.0));
  expect_vals(&out[3], VALS((e + 5) / (e + 1), 3), 1e-12);
}

static void test_sdpa_gqa(void **state) {
  (void)state;
  /* 2 query heads share 1 key/value head; values differ per key so each
   * head's answer is the mean of v (q = 0 -> uniform weights), and an
   * additive float mask of [0, ln 3] turns that into 1/4, 3/4 weights */
  kf_value *q = input("q", KF_DTYPE_F32, SHAPE(2, 1, 1));
  kf_value *k = input("k", KF_DTYPE_F32, SHAPE(1, 2, 1));
  kf_value *v = input("v", KF_DTYPE_F32, SHAPE(1, 2, 1));
  kf_value *m = input("m", KF_DTYPE_F32, SHAPE(1, 2));
  kf_value *r = sdpa(q, k, v, NULL, false, 0, true);
  kf_value *rm = sdpa(q, k, v, m, false, 0, true);
  kf_tensor in[4] = {tensor(KF_DTYPE_F32, SHAPE(2, 1, 1), VALS(0, 0)),
                     tensor(KF_DTYPE_F32, SHAPE(1, 2, 1), VALS(1, 2)),
                     tensor(KF_DTYPE_F32, SHAPE(1, 2, 1), VALS(4, 8)),
                     tensor(KF_DTYPE_F32, SHAPE(1, 2), VALS(0, 1.0986122886681098))};
  kf_tensor out[2];
  run_ok(ARGS(r, rm), in, 4, out);
  expect_shape(&out[0], SHAPE(2, 1, 1));
  expect_vals(&out[0], VALS(6, 6), 1e-12);
  expect_vals(&out[1], VALS(7, 7), 1e-6);
}

static void test_sdpa_gqa_groups(void **state) {
  (void)state;
  /* 4 query heads over 2 key/value heads: heads 0, 1 read kv head 0 and
   * heads 2, 3 read kv head 1 (repeat_interleave, not tiling). With q = 0
   * the weights are uniform: kv head 0 values [4, 8] -> 6, head 1 [10, 20]
   * -> 15. */
  kf_value *q = input("q", KF_DTYPE_F32, SHAPE(4, 1, 1));
  kf_value *k = input("k", KF_DTYPE_F32, SHAPE(2, 2, 1));
  kf_value *v = input("v", KF_DTYPE_F32, SHAPE(2, 2, 1));
  kf_value *r = sdpa(q, k, v, NULL, false, 0, true);
  kf_tensor in[3] = {tensor(KF_DTYPE_F32, SHAPE(4, 1, 1), VALS(0, 0, 0, 0)),
                     tensor(KF_DTYPE_F32, SHAPE(2, 2, 1), VALS(1, 2, 3, 4)),
                     tensor(KF_DTYPE_F32, SHAPE(2, 2, 1), VALS(4, 8, 10, 20))};
  kf_tensor out[1];
  run_ok(ARGS(r), in, 3, out);
  expect_vals(&out[0], VALS(6, 6, 15, 15), 1e-12);
}

/* ---- limits and errors ----------------------------------------------------- */

static void test_limit(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(4));
  kf_type big = ttype(KF_DTYPE_F32, SHAPE(4, 4));
  kf_value *e = infer(op_n(KF_OP_EXPAND, ARGS(x), 1, &big));
  kf_tensor in[1] = {tensor(KF_DTYPE_F32, SHAPE(4), VALS(1, 2, 3, 4))};
  kf_tensor out[1];
  expect_error(run(ARGS(e), in, 1, out, 8), KF_ERR_LIMIT, "(kf.expand)");
  assert_non_null(strstr(last_msg, "limit"));
  kf_tensor_fini(&in[0]);
}

static void test_conv_mac_limit(void **state) {
  (void)state;
  /* 1 x 64 x 256 x 256 input, 64 x 64 x 3 x 3 kernel: 64*256*256*64*9
   * = 2.4e9 multiply-adds, over the limit before any work is done */
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(1, 64, 256, 256));
  kf_type tw = ttype(KF_DTYPE_F32, SHAPE(64, 64, 3, 3));
  kf_op *fw = op_n(KF_OP_FULL, NULL, 0, 1, &tw);
  kf_op_set_number(fw, "value", kf_number_int(0));
  kf_op *cv = op(KF_OP_CONV, ARGS(x, infer(fw), NULL));
  kf_op_set_ints(cv, "stride", (int64_t[]){1, 1}, 2);
  kf_op_set_ints(cv, "padding", (int64_t[]){1, 1}, 2);
  kf_op_set_ints(cv, "dilation", (int64_t[]){1, 1}, 2);
  kf_op_set_bool(cv, "transposed", false);
  kf_op_set_ints(cv, "output_padding", (int64_t[]){0, 0}, 2);
  kf_op_set_int(cv, "groups", 1);
  kf_value *r = infer(cv);
  kf_tensor in[1];
  memset(in, 0, sizeof in);
  in[0].dtype = KF_DTYPE_F32;
  in[0].rank = 4;
  memcpy(in[0].shape, (int64_t[]){1, 64, 256, 256}, 4 * sizeof(int64_t));
  assert_int_equal(kf_tensor_alloc(&in[0]), KF_OK);
  kf_tensor out[1];
  expect_error(run(ARGS(r), in, 1, out, 0), KF_ERR_LIMIT, "multiply-adds");
  kf_tensor_fini(&in[0]);
}

static void test_param_without_store(void **state) {
  (void)state;
  kf_type t = ttype(KF_DTYPE_F32, SHAPE(2));
  kf_graph_add_weight(g, "fc.bias", &t, 8);
  kf_op *o = op_n(KF_OP_PARAM, NULL, 0, 1, &t);
  kf_op_set_str(o, "fqn", "fc.bias");
  kf_op_set_str(o, "kind", "parameter");
  kf_value *r = infer(o);
  kf_tensor out[1];
  expect_error(run(ARGS(r), NULL, 0, out, 0), KF_ERR_UNSUPPORTED, "weight 'fc.bias' has no data");
}

static void test_strided_param(void **state) {
  (void)state;
  /* a weight that is the transpose of its storage [[1, 2, 3], [4, 5, 6]]
   * with storage offset 0: shape [3, 2], strides [1, 3] */
  kf_type t = ttype(KF_DTYPE_F32, SHAPE(3, 2));
  t.strides[0] = 1;
  t.strides[1] = 3;
  kf_value *w = param_f32("w", &t, VALS(1, 2, 3, 4, 5, 6));
  kf_value *c = infer(op(KF_OP_COPY, ARGS(w)));
  kf_tensor out[1];
  run_ok(ARGS(c), NULL, 0, out);
  expect_vals(&out[0], VALS(1, 4, 2, 5, 3, 6), 0);
}

static void test_input_mismatch(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(2));
  kf_value *r = infer(op(KF_OP_NEG, ARGS(x)));
  kf_tensor in[1] = {tensor(KF_DTYPE_F32, SHAPE(3), VALS(1, 2, 3))};
  kf_tensor out[1];
  expect_error(run(ARGS(r), in, 1, out, 0), KF_ERR_ARG, "input 0 ('x')");
  kf_tensor_fini(&in[0]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)
      T(test_f16_rounding),
      T(test_bf16_and_ints),
      T(test_compare),
      T(test_broadcast_add_alpha),
      T(test_integer_division),
      T(test_integer_division_by_zero),
      T(test_float_floor_division),
      T(test_unary_activations),
      T(test_round_and_cast),
      T(test_clamp_where_compare),
      T(test_sources),
      T(test_views),
      T(test_as_strided),
      T(test_as_strided_undefined_storage),
      T(test_cat_pad),
      T(test_index_broadcast),
      T(test_index_non_adjacent),
      T(test_index_out_of_range),
      T(test_gather_select_embedding),
      T(test_embedding),
      T(test_embedding_out_of_range),
      T(test_gather_negative),
      T(test_reductions),
      T(test_scans),
      T(test_norms),
      T(test_max_dim_nan),
      T(test_softmax),
      T(test_layer_group_batch_norm),
      T(test_group_norm_affine),
      T(test_batch_norm_running),
      T(test_matmul),
      T(test_conv2d),
      T(test_conv_transposed_groups_dilation),
      T(test_max_pool),
      T(test_avg_pool),
      T(test_sdpa),
      T(test_sdpa_gqa),
      T(test_sdpa_gqa_groups),
      T(test_limit),
      T(test_conv_mac_limit),
      T(test_param_without_store),
      T(test_strided_param),
      T(test_input_mismatch),
#undef T
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
