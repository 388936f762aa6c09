/* tests/unit/test_op_rows.c — every one-row op of ops.def (its KF_EW1
 * and KF_EW2 tables: an element-wise unary or binary op whose row is the
 * whole op) has every piece the row promises, so that adding one is adding
 * its row and a test (the binary rows' pieces are checked as the unary
 * ones', with two operands, their RESULT rules and ATEN overloads):
 *   - the op table: kind UNARY, one operand, one result, no attributes;
 *   - shape/dtype inference: the RESULT column (f32 and i64 operands);
 *   - the ATen lowering: aten.<name>.default, "(Tensor self) -> Tensor",
 *     lowered to this op (frontend/aten_ops.c);
 *   - the device function of agent/templates/kf_ops.cuh that the built-in
 *     kernels call by the op's name (a template over the value type);
 *   - the op's spelling in a task's model.py (agent/model_py.c): the torch
 *     column applied to the operand;
 *   - the interpreter computes it (an f32 graph of the op runs).
 * A piece missing fails here with the op's name, not at run time as
 * "unsupported". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "agent_int.h"
#include "aten_int.h"
#include "kfuse/interp.h"
#include "kfuse/ir.h"

enum { RES_SAME, RES_FLOAT, RES_BOOL };

typedef struct row {
  kf_opcode code;
  const char *name;
  int result;
  const char *torch;
} row;

static const row rows[] = {
#define KF_OP(ID, NAME, KIND, OPERANDS, RESULTS, ATTRS)
#define KF_EW1(ID, NAME, RESULT, INTERP, TORCH) {KF_OP_##ID, NAME, RES_##RESULT, TORCH},
#include "kfuse/ops.def"
#undef KF_EW1
#undef KF_OP
};
static const int n_rows = (int)(sizeof rows / sizeof rows[0]);

/* the count of rows seen by an includer that defines only KF_OP: each row
 * there is one KF_OP of kind UNARY, one operand, no attributes */
static int count_default_expansion(void) {
  int n = 0;
#define KF_OP(ID, NAME, KIND, OPERANDS, RESULTS, ATTRS) n += 0;
#define KF_EW1(ID, NAME, RESULT, INTERP, TORCH) n += 1;
#include "kfuse/ops.def"
#undef KF_EW1
#undef KF_OP
  return n;
}

static void test_table(void **state) {
  (void)state;
  assert_true(n_rows >= 40);
  assert_int_equal(count_default_expansion(), n_rows);
  for (int i = 0; i < n_rows; i++) {
    const kf_op_info *info = kf_op_info_get(rows[i].code);
    if (strcmp(info->name, rows[i].name) != 0) fail_msg("row %s: the op table names it %s", rows[i].name, info->name);
    if (info->kind != KF_KIND_UNARY || info->n_operand_slots != 1 || info->n_results != 1 || info->n_attrs != 0)
      fail_msg("row %s: not a unary op with one operand, one result and no attributes", rows[i].name);
  }
}

static kf_graph *one_op(const row *r, kf_dtype in_dt, kf_dtype *out_dt) {
  kf_graph *g = kf_graph_create("row");
  int64_t shape[1] = {5};
  kf_type t;
  kf_type_init_tensor(&t, in_dt, 1, shape);
  kf_value *x = kf_graph_add_input(g, "x", &t);
  kf_type res;
  kf_type_init_tensor(&res, KF_DTYPE_INVALID, 1, shape);
  kf_op *op = kf_graph_append_op(g, r->code, r->name, &x, 1, &res, 1);
  assert_non_null(op);
  if (kf_infer_types(op, &res, NULL) != KF_OK)
    fail_msg("row %s: no result type for a %s operand", r->name, kf_dtype_name(in_dt));
  *out_dt = res.dtype;
  kf_value *y = op->results[0];
  y->type = res;
  kf_graph_set_outputs(g, &y, 1);
  return g;
}

static void test_infer(void **state) {
  (void)state;
  for (int i = 0; i < n_rows; i++) {
    kf_dtype f, n;
    kf_graph_destroy(one_op(&rows[i], KF_DTYPE_F32, &f));
    kf_graph_destroy(one_op(&rows[i], KF_DTYPE_I64, &n));
    kf_dtype want_f = rows[i].result == RES_BOOL ? KF_DTYPE_BOOL : KF_DTYPE_F32;
    kf_dtype want_n = rows[i].result == RES_BOOL    ? KF_DTYPE_BOOL
                      : rows[i].result == RES_SAME ? KF_DTYPE_I64
                                                   : KF_DTYPE_F32;
    if (f != want_f || n != want_n)
      fail_msg("row %s: result dtypes %s (f32 operand) and %s (i64), the RESULT column says %s and %s",
               rows[i].name, kf_dtype_name(f), kf_dtype_name(n), kf_dtype_name(want_f), kf_dtype_name(want_n));
  }
}

static void test_aten(void **state) {
  (void)state;
  for (int i = 0; i < n_rows; i++) {
    char want[128];
    snprintf(want, sizeof want, "%s(Tensor self) -> Tensor", rows[i].name);
    bool found = false;
    for (int k = 0; k < kf_aten_n_rows && !found; k++)
      found = strcmp(kf_aten_rows[k].schema, want) == 0 && kf_aten_rows[k].k == (int)rows[i].code;
    if (!found) fail_msg("row %s: no ATen lowering \"%s\" to it", rows[i].name, want);
  }
}

static void test_device_function(void **state) {
  (void)state;
  const kf_template *t = kf_template_find("kf_ops.cuh");
  assert_non_null(t);
  for (int i = 0; i < n_rows; i++) {
    char want[128];
    /* "T name(T x)", or "bool name(T x)" for a BOOL row (the parameter may be unnamed) */
    snprintf(want, sizeof want, " %s %s(T", rows[i].result == RES_BOOL ? "bool" : "T", rows[i].name);
    if (!strstr(t->text, want))
      fail_msg("row %s: agent/templates/kf_ops.cuh defines no device function \"template <class T> ...%s\"",
               rows[i].name, want);
  }
}

static void test_model_py(void **state) {
  (void)state;
  for (int i = 0; i < n_rows; i++) {
    kf_dtype dt;
    kf_graph *g = one_op(&rows[i], KF_DTYPE_F32, &dt);
    char *py = NULL, why[256] = "";
    kf_status st = kf_task_model_py(g, "row", &py, why, sizeof why);
    if (st != KF_OK || !py) fail_msg("row %s: no model.py: %s", rows[i].name, why);
    char want[160];
    snprintf(want, sizeof want, "%s(", rows[i].torch);
    if (!strstr(py, want)) fail_msg("row %s: model.py does not call %s:\n%s", rows[i].name, rows[i].torch, py);
    free(py);
    kf_graph_destroy(g);
  }
}

static void test_interp(void **state) {
  (void)state;
  for (int i = 0; i < n_rows; i++) {
    kf_dtype dt;
    kf_graph *g = one_op(&rows[i], KF_DTYPE_F32, &dt);
    kf_tensor in = {.dtype = KF_DTYPE_F32, .rank = 1, .shape = {5}};
    assert_int_equal(kf_tensor_alloc(&in), KF_OK);
    for (int k = 0; k < 5; k++) kf_tensor_set(&in, k, 0.25 * (k + 1));
    kf_tensor out;
    memset(&out, 0, sizeof out);
    kf_status st = kf_interp_run(g, &in, 1, &out, NULL, NULL);
    if (st != KF_OK) fail_msg("row %s: the interpreter does not run it (%s)", rows[i].name, kf_status_str(st));
    kf_tensor_fini(&in);
    kf_tensor_fini(&out);
    kf_graph_destroy(g);
  }
}

/* ---- the binary rows (KF_EW2) ---- */

typedef struct row2 {
  kf_opcode code;
  const char *name;
  kf_ew2_result result;
  const char *torch;
  bool scalar_overload; /* ATEN TS: .Tensor and .Scalar; T: the one */
} row2;

#define EW2_ATEN_TS true
#define EW2_ATEN_T false
static const row2 rows2[] = {
#define KF_OP(ID, NAME, KIND, OPERANDS, RESULTS, ATTRS)
#define KF_EW2(ID, NAME, RESULT, INTERP, TORCH, ATEN) {KF_OP_##ID, NAME, KF_EW2_##RESULT, TORCH, EW2_ATEN_##ATEN},
#include "kfuse/ops.def"
#undef KF_EW2
#undef KF_OP
};
static const int n_rows2 = (int)(sizeof rows2 / sizeof rows2[0]);

static int count_default_expansion2(void) {
  int n = 0;
#define KF_OP(ID, NAME, KIND, OPERANDS, RESULTS, ATTRS) n += 0;
#define KF_EW2(ID, NAME, RESULT, INTERP, TORCH, ATEN) n += 1;
#include "kfuse/ops.def"
#undef KF_EW2
#undef KF_OP
  return n;
}

static void ignore(void *user, kf_diag_level level, const char *msg) {
  (void)user;
  (void)level;
  (void)msg;
}

static kf_graph *two_op(const row2 *r, kf_dtype in_dt, kf_dtype *out_dt, kf_status *st) {
  kf_graph *g = kf_graph_create("row2");
  int64_t shape[1] = {5};
  kf_type t;
  kf_type_init_tensor(&t, in_dt, 1, shape);
  kf_value *xy[2] = {kf_graph_add_input(g, "x", &t), kf_graph_add_input(g, "y", &t)};
  kf_type res;
  kf_type_init_tensor(&res, KF_DTYPE_INVALID, 1, shape);
  kf_op *op = kf_graph_append_op(g, r->code, r->name, xy, 2, &res, 1);
  assert_non_null(op);
  kf_diag quiet; /* the INT rows refuse f32 operands: expected, not printed */
  kf_diag_init(&quiet, ignore, NULL);
  *st = kf_infer_types(op, &res, &quiet);
  *out_dt = res.dtype;
  kf_value *y = op->results[0];
  y->type = res;
  kf_graph_set_outputs(g, &y, 1);
  return g;
}

static void test_binary_rows(void **state) {
  (void)state;
  assert_true(n_rows2 >= 16);
  assert_int_equal(count_default_expansion2(), n_rows2);
  const kf_template *t = kf_template_find("kf_ops.cuh");
  assert_non_null(t);
  for (int i = 0; i < n_rows2; i++) {
    const row2 *r = &rows2[i];
    /* the op table: binary, two operands, one result, no attributes */
    const kf_op_info *info = kf_op_info_get(r->code);
    if (strcmp(info->name, r->name) != 0) fail_msg("row %s: the op table names it %s", r->name, info->name);
    if (info->kind != KF_KIND_BINARY || info->n_operand_slots != 2 || info->n_results != 1 || info->n_attrs != 0)
      fail_msg("row %s: not a binary op with two operands, one result and no attributes", r->name);
    if (kf_op_ew2_result(r->code) != r->result) fail_msg("row %s: kf_op_ew2_result disagrees", r->name);
    /* inference: f32 and i64 operand pairs against the RESULT column */
    kf_dtype f, n;
    kf_status sf, sn;
    kf_graph_destroy(two_op(r, KF_DTYPE_F32, &f, &sf));
    kf_graph_destroy(two_op(r, KF_DTYPE_I64, &n, &sn));
    bool boolean = r->result == KF_EW2_CMP || r->result == KF_EW2_LOGICAL;
    if (r->result == KF_EW2_INT) {
      if (sf == KF_OK) fail_msg("row %s: INT, yet f32 operands are accepted", r->name);
    } else if (sf != KF_OK || f != (boolean ? KF_DTYPE_BOOL : KF_DTYPE_F32)) {
      fail_msg("row %s: f32 operands give %s", r->name, sf ? "an error" : kf_dtype_name(f));
    }
    kf_dtype want_n = boolean ? KF_DTYPE_BOOL : r->result == KF_EW2_FLOAT ? KF_DTYPE_F32 : KF_DTYPE_I64;
    if (sn != KF_OK || n != want_n)
      fail_msg("row %s: i64 operands give %s, the RESULT column says %s", r->name, sn ? "an error" : kf_dtype_name(n),
               kf_dtype_name(want_n));
    /* the ATen lowering: its overloads, lowered to this op */
    char want[2][160];
    int n_want = r->scalar_overload ? 2 : 1;
    if (r->scalar_overload) {
      snprintf(want[0], sizeof want[0], "%s.Tensor(Tensor self, Tensor other) -> Tensor", r->name);
      snprintf(want[1], sizeof want[1], "%s.Scalar(Tensor self, Scalar other) -> Tensor", r->name);
    } else {
      snprintf(want[0], sizeof want[0], "%s(Tensor self, Tensor other) -> Tensor", r->name);
    }
    for (int w = 0; w < n_want; w++) {
      bool found = false;
      for (int k = 0; k < kf_aten_n_rows && !found; k++)
        found = strcmp(kf_aten_rows[k].schema, want[w]) == 0 && kf_aten_rows[k].k == (int)r->code;
      if (!found) fail_msg("row %s: no ATen lowering \"%s\" to it", r->name, want[w]);
    }
    /* the device function, "T name(T a, T b)" or "bool name(T a, T b)" */
    char fn[128];
    snprintf(fn, sizeof fn, " %s %s(T", boolean ? "bool" : "T", r->name);
    if (!strstr(t->text, fn))
      fail_msg("row %s: agent/templates/kf_ops.cuh defines no device function \"template <class T> ...%s\"", r->name,
               fn);
    /* model.py and the interpreter, on operands it takes */
    kf_dtype in_dt = r->result == KF_EW2_INT ? KF_DTYPE_I64 : KF_DTYPE_F32, dt;
    kf_status st;
    kf_graph *g = two_op(r, in_dt, &dt, &st);
    assert_int_equal(st, KF_OK);
    char *py = NULL, why[256] = "";
    if (kf_task_model_py(g, "row", &py, why, sizeof why) != KF_OK || !py)
      fail_msg("row %s: no model.py: %s", r->name, why);
    char call[160];
    snprintf(call, sizeof call, "%s(", r->torch);
    if (!strstr(py, call)) fail_msg("row %s: model.py does not call %s:\n%s", r->name, r->torch, py);
    free(py);
    kf_tensor in[2];
    for (int k = 0; k < 2; k++) {
      in[k] = (kf_tensor){.dtype = in_dt, .rank = 1, .shape = {5}};
      assert_int_equal(kf_tensor_alloc(&in[k]), KF_OK);
      for (int e = 0; e < 5; e++) kf_tensor_set(&in[k], e, k ? 3 - e : e + 1);
    }
    kf_tensor out;
    memset(&out, 0, sizeof out);
    st = kf_interp_run(g, in, 2, &out, NULL, NULL);
    if (st != KF_OK) fail_msg("row %s: the interpreter does not run it (%s)", r->name, kf_status_str(st));
    kf_tensor_fini(&in[0]);
    kf_tensor_fini(&in[1]);
    kf_tensor_fini(&out);
    kf_graph_destroy(g);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_table),     cmocka_unit_test(test_infer),        cmocka_unit_test(test_aten),
      cmocka_unit_test(test_device_function), cmocka_unit_test(test_model_py), cmocka_unit_test(test_interp),
      cmocka_unit_test(test_binary_rows),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
