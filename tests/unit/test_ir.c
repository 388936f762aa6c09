/* tests/unit/test_ir.c — unit tests of the IR core (ir/ir.c, infer.c,
 * verify.c, print.c, the pass pipeline) and the .kfio reader.
 *
 * Type promotion is checked against tables recorded from PyTorch
 * (promote_cases.inc, written by gen_promote_cases.py); the verifier is fed
 * graphs broken one way at a time and must name the node and the problem;
 * the printer's output must parse back to the same text. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kfuse/frontend.h"
#include "kfuse/interp.h"
#include "kfuse/ir.h"
#include "kfuse/pass.h"

#include "promote_cases.inc"

/* ---- harness --------------------------------------------------------------- */

/* Every error message of the current test, one per line. */
static kf_strbuf msgs;
static int n_errors;

static void capture(void *user, kf_diag_level level, const char *msg) {
  (void)user;
  if (level != KF_DIAG_ERROR) return;
  n_errors++;
  kf_strbuf_printf(&msgs, "%s\n", msg);
}

static kf_diag *fresh_diag(void) {
  static kf_diag d;
  kf_strbuf_fini(&msgs);
  kf_strbuf_init(&msgs);
  n_errors = 0;
  kf_diag_init(&d, capture, NULL);
  return &d;
}

static const char *messages(void) { return msgs.data ? msgs.data : ""; }

#define assert_message(sub)                                                   \
  do {                                                                        \
    if (!strstr(messages(), (sub)))                                           \
      fail_msg("expected a message containing \"%s\", got:\n%s", (sub),       \
               messages());                                                   \
  } while (0)

static kf_type tensor(kf_dtype t, int rank, ...) {
  int64_t shape[KF_MAX_RANK];
  va_list ap;
  va_start(ap, rank);
  for (int i = 0; i < rank; i++) shape[i] = va_arg(ap, int64_t);
  va_end(ap);
  kf_type ty;
  kf_type_init_tensor(&ty, t, rank, shape);
  return ty;
}

static bool type_is(const kf_type *a, kf_type b) { return kf_type_equal(a, &b); }
static bool shape_is(const kf_type *a, kf_type b) { return kf_type_same_shape(a, &b); }

/* Append an op whose result types come from shape inference. */
static kf_op *add_op(kf_graph *g, kf_opcode code, const char *name,
                     kf_value **operands, int n, int n_results) {
  kf_type rt[4];
  for (int i = 0; i < n_results; i++) rt[i] = n ? operands[0]->type : tensor(KF_DTYPE_F32, 0);
  return kf_graph_append_op(g, code, name, operands, n, rt, n_results);
}

static void infer_into(kf_op *op) {
  kf_type rt[4];
  for (int i = 0; i < op->n_results; i++) rt[i] = op->results[i]->type;
  assert_int_equal(kf_infer_types(op, rt, fresh_diag()), KF_OK);
  for (int i = 0; i < op->n_results; i++) op->results[i]->type = rt[i];
}

/* x: f32[2,3] -> relu -> exp; output exp */
static kf_graph *small_graph(void) {
  kf_graph *g = kf_graph_create("small");
  kf_type t = tensor(KF_DTYPE_F32, 2, (int64_t)2, (int64_t)3);
  kf_value *x = kf_graph_add_input(g, "x", &t);
  kf_op *r = add_op(g, KF_OP_RELU, "r", &x, 1, 1);
  kf_op *e = add_op(g, KF_OP_EXP, "e", &r->results[0], 1, 1);
  kf_graph_set_outputs(g, &e->results[0], 1);
  return g;
}

static char *print_to_string(const kf_graph *g) {
  kf_strbuf b;
  kf_strbuf_init(&b);
  assert_int_equal(kf_graph_print(g, kf_write_strbuf, &b), KF_OK);
  assert_false(b.failed);
  return b.data;
}

/* ---- dtypes and promotion ------------------------------------------------------ */

static void test_dtype_names_sizes(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof dtype_cases / sizeof dtype_cases[0]; i++) {
    kf_dtype t = dtype_cases[i].t;
    const char *n = kf_dtype_name(t);
    assert_int_equal(kf_dtype_from_name(n, strlen(n)), t);
    assert_int_equal(kf_dtype_size(t), dtype_cases[i].size);
    assert_int_equal(kf_dtype_is_float(t), dtype_cases[i].is_float);
    assert_int_equal(kf_dtype_is_int(t), dtype_cases[i].is_int);
  }
  assert_int_equal(kf_dtype_from_name("f8", 2), KF_DTYPE_INVALID);
  assert_int_equal(kf_dtype_from_name("f32x", 3), KF_DTYPE_F32); /* length-bounded */
  assert_int_equal(kf_dtype_from_name("", 0), KF_DTYPE_INVALID);
  assert_string_equal(kf_dtype_name(KF_DTYPE_U8), "ui8");
  assert_string_equal(kf_dtype_name(KF_DTYPE_BOOL), "i1");
}

static void test_promote_types(void **state) {
  (void)state;
  int bad = 0;
  for (size_t i = 0; i < sizeof promote_cases / sizeof promote_cases[0]; i++) {
    const struct promote_case *c = &promote_cases[i];
    kf_dtype got = kf_dtype_promote(c->a, c->b);
    if (got != c->want) {
      print_error("promote(%s, %s) = %s, PyTorch says %s\n", kf_dtype_name(c->a),
                  kf_dtype_name(c->b), kf_dtype_name(got), kf_dtype_name(c->want));
      bad++;
    }
  }
  assert_int_equal(bad, 0);
}

/* An operand of kind 'D' (tensor with dims), 'Z' (0-d tensor) or 'S'
 * (scalar: a kf.scalar op). */
static kf_value *make_operand(kf_graph *g, char kind, kf_dtype t, const char *name) {
  if (kind == 'S') {
    kf_type st;
    kf_type_init_scalar(&st, t);
    kf_op *op = kf_graph_append_op(g, KF_OP_SCALAR, name, NULL, 0, &st, 1);
    kf_number v = t == KF_DTYPE_F64 ? kf_number_float(2.5)
                  : t == KF_DTYPE_I64 ? kf_number_int(3)
                                      : kf_number_bool(true);
    kf_op_set_number(op, "value", v);
    return op->results[0];
  }
  kf_type ty = kind == 'D' ? tensor(t, 2, (int64_t)2, (int64_t)3) : tensor(t, 0);
  return kf_graph_add_input(g, name, &ty);
}

static void test_result_type(void **state) {
  (void)state;
  int bad = 0;
  for (size_t i = 0; i < sizeof result_cases / sizeof result_cases[0]; i++) {
    const struct result_case *c = &result_cases[i];
    kf_graph *g = kf_graph_create("promote");
    kf_value *ops[2] = {make_operand(g, c->ka, c->a, "a"), make_operand(g, c->kb, c->b, "b")};
    kf_type rt = tensor(KF_DTYPE_F32, 0);
    kf_op *mul = kf_graph_append_op(g, KF_OP_MUL, "mul", ops, 2, &rt, 1);
    kf_status st = kf_infer_types(mul, &rt, fresh_diag());
    if (st != KF_OK || rt.dtype != c->want) {
      print_error("mul(%c %s, %c %s) = %s (%s), PyTorch says %s\n", c->ka, kf_dtype_name(c->a),
                  c->kb, kf_dtype_name(c->b), st == KF_OK ? kf_dtype_name(rt.dtype) : "error",
                  messages(), kf_dtype_name(c->want));
      bad++;
    } else if (c->ka == 'D' || c->kb == 'D') {
      assert_int_equal(rt.rank, 2);
    } else {
      assert_int_equal(rt.rank, 0);
    }
    kf_graph_destroy(g);
  }
  assert_int_equal(bad, 0);
}

/* ---- types ------------------------------------------------------------------------ */

static void test_types(void **state) {
  (void)state;
  kf_type t = tensor(KF_DTYPE_F32, 3, (int64_t)2, (int64_t)3, (int64_t)4);
  assert_int_equal(t.strides[0], 12);
  assert_int_equal(t.strides[1], 4);
  assert_int_equal(t.strides[2], 1);
  assert_true(kf_type_is_contiguous(&t));
  assert_int_equal(kf_type_numel(&t), 24);
  char buf[128];
  kf_type_str(&t, buf, sizeof buf);
  assert_string_equal(buf, "tensor<2x3x4xf32>");

  /* a transpose: strided, printed with its layout */
  kf_type p = t;
  p.shape[1] = 4;
  p.shape[2] = 3;
  p.strides[1] = 1;
  p.strides[2] = 4;
  assert_false(kf_type_is_contiguous(&p));
  assert_false(type_is(&p, tensor(KF_DTYPE_F32, 3, (int64_t)2, (int64_t)4, (int64_t)3)));
  assert_true(shape_is(&p, tensor(KF_DTYPE_F32, 3, (int64_t)2, (int64_t)4, (int64_t)3)));
  kf_type_str(&p, buf, sizeof buf);
  assert_non_null(strstr(buf, "tensor<2x4x3xf32, "));
  assert_non_null(strstr(buf, "[12, 1, 4]"));

  /* strides of size-1 dims do not matter (PyTorch's contiguity) */
  kf_type one = tensor(KF_DTYPE_F16, 2, (int64_t)1, (int64_t)5);
  one.strides[0] = 999;
  assert_true(kf_type_is_contiguous(&one));
  assert_true(type_is(&one, tensor(KF_DTYPE_F16, 2, (int64_t)1, (int64_t)5)));

  /* an offset breaks contiguity */
  kf_type off = tensor(KF_DTYPE_I64, 1, (int64_t)3);
  off.offset = 2;
  assert_false(kf_type_is_contiguous(&off));

  kf_type s;
  kf_type_init_scalar(&s, KF_DTYPE_F64);
  kf_type_str(&s, buf, sizeof buf);
  assert_string_equal(buf, "f64");
  assert_false(type_is(&s, tensor(KF_DTYPE_F64, 0)));
  kf_type b0 = tensor(KF_DTYPE_BOOL, 0);
  kf_type_str(&b0, buf, sizeof buf);
  assert_string_equal(buf, "tensor<i1>");

  /* truncation keeps a terminated string */
  kf_type_str(&t, buf, 8);
  assert_int_equal(strlen(buf), 7);
}

/* ---- op table and attributes -------------------------------------------------------- */

static void test_op_table(void **state) {
  (void)state;
  for (int c = 0; c < KF_OP_COUNT; c++) {
    const kf_op_info *info = kf_op_info_get((kf_opcode)c);
    assert_int_equal(info->code, c);
    assert_int_equal(kf_opcode_from_name(info->name, strlen(info->name)), c);
    assert_string_equal(kf_opcode_name((kf_opcode)c), info->name);
    for (int a = 0; a < info->n_attrs; a++)
      assert_int_equal(kf_op_attr_index((kf_opcode)c, info->attrs[a].name), a);
  }
  assert_int_equal(kf_opcode_from_name("frobnicate", 10), KF_OP_COUNT);
  const kf_op_info *split = kf_op_info_get(KF_OP_SPLIT);
  assert_int_equal(split->n_results, -1);
  const kf_op_info *ln = kf_op_info_get(KF_OP_LAYER_NORM);
  assert_int_equal(ln->n_operand_slots, 3);
  assert_true(ln->operands[1].optional);
  assert_true(ln->has_optional_operands);
  const kf_op_info *cat = kf_op_info_get(KF_OP_CAT);
  assert_true(cat->operands[0].variadic);
  const kf_op_info *add = kf_op_info_get(KF_OP_ADD);
  assert_true(add->operands[1].allow_scalar);
  assert_true(add->attrs[kf_op_attr_index(KF_OP_ADD, "alpha")].optional);
  assert_int_equal(kf_op_attr_index(KF_OP_RELU, "alpha"), -1);
}

static void test_attributes(void **state) {
  (void)state;
  kf_graph *g = kf_graph_create("attrs");
  kf_type t = tensor(KF_DTYPE_F32, 4, (int64_t)1, (int64_t)2, (int64_t)5, (int64_t)5);
  kf_value *x = kf_graph_add_input(g, "x", &t);
  kf_op *c = add_op(g, KF_OP_AVG_POOL, "pool", &x, 1, 1);
  int64_t k[2] = {3, 3}, s[2] = {2, 1}, p[2] = {1, 0};
  assert_false(kf_op_has_attr(c, "kernel"));
  kf_op_set_ints(c, "kernel", k, 2);
  k[0] = 99; /* the op keeps its own copy */
  kf_op_set_ints(c, "stride", s, 2);
  kf_op_set_ints(c, "padding", p, 2);
  kf_op_set_bool(c, "ceil_mode", true);
  kf_op_set_bool(c, "count_include_pad", false);
  assert_false(kf_op_has_attr(c, "divisor"));
  kf_op_set_int(c, "divisor", 5);
  int n;
  const int64_t *kv = kf_op_get_ints(c, "kernel", &n);
  assert_int_equal(n, 2);
  assert_int_equal(kv[0], 3);
  assert_true(kf_op_get_bool(c, "ceil_mode"));
  assert_false(kf_op_get_bool(c, "count_include_pad"));
  assert_int_equal(kf_op_get_int(c, "divisor"), 5);
  assert_true(kf_op_has_attr(c, "divisor"));

  kf_op *ln = add_op(g, KF_OP_LAYER_NORM, "ln", (kf_value *[]){x, NULL, NULL}, 3, 3);
  kf_op_set_float(ln, "eps", 1e-5);
  kf_op_set_int(ln, "normalized_ndim", 2);
  assert_true(kf_op_get_float(ln, "eps") == 1e-5);

  kf_op *ge = add_op(g, KF_OP_GELU, "gelu", &x, 1, 1);
  char approx[] = "tanh";
  kf_op_set_str(ge, "approximate", approx);
  approx[0] = 'X';
  assert_string_equal(kf_op_get_str(ge, "approximate"), "tanh");

  kf_op *ht = add_op(g, KF_OP_HARDTANH, "ht", &x, 1, 1);
  kf_op_set_number(ht, "min_val", kf_number_int(-2));
  kf_op_set_number(ht, "max_val", kf_number_float(0.5));
  assert_int_equal(kf_op_get_number(ht, "min_val").kind, KF_NUM_INT);
  assert_int_equal(kf_op_get_number(ht, "min_val").i, -2);
  assert_true(kf_number_as_double(kf_op_get_number(ht, "max_val")) == 0.5);
  assert_true(kf_number_as_double(kf_number_bool(true)) == 1.0);

  kf_op *cl = add_op(g, KF_OP_CLAMP, "cl", &x, 1, 1);
  kf_op_set_number(cl, "max", kf_number_float(1.0));
  assert_false(kf_op_has_attr(cl, "min"));
  kf_graph_destroy(g);
}

/* ---- verifier ---------------------------------------------------------------------------- */

static void test_verify_accepts(void **state) {
  (void)state;
  kf_graph *g = small_graph();
  assert_int_equal(kf_graph_verify(g, fresh_diag()), KF_OK);
  assert_int_equal(n_errors, 0);
  kf_graph_destroy(g);
}

static void test_verify_wrong_result_type(void **state) {
  (void)state;
  kf_graph *g = small_graph();
  g->first->results[0]->type = tensor(KF_DTYPE_F32, 2, (int64_t)3, (int64_t)2);
  assert_int_equal(kf_graph_verify(g, fresh_diag()), KF_ERR_INVALID);
  assert_message("node 'r' (kf.relu): result 0 is declared tensor<3x2xf32> but the op gives tensor<2x3xf32>");
  kf_graph_destroy(g);

  g = small_graph();
  g->first->results[0]->type.dtype = KF_DTYPE_F64;
  assert_int_equal(kf_graph_verify(g, fresh_diag()), KF_ERR_INVALID);
  assert_message("node 'r' (kf.relu): result 0 is declared tensor<2x3xf64>");
  kf_graph_destroy(g);
}

static void test_verify_use_before_def(void **state) {
  (void)state;
  kf_graph *g = small_graph();
  /* swap r and e in program order: e now reads r's result before r runs */
  kf_op *r = g->first, *e = r->next;
  g->first = e;
  g->last = r;
  e->prev = NULL;
  e->next = r;
  r->prev = e;
  r->next = NULL;
  assert_int_equal(kf_graph_verify(g, fresh_diag()), KF_ERR_INVALID);
  assert_message("node 'e' (kf.exp): operand 0 is used before its definition");
  kf_graph_destroy(g);
}

static void test_verify_foreign_value(void **state) {
  (void)state;
  kf_graph *other = small_graph();
  kf_graph *g = kf_graph_create("g");
  kf_type t = tensor(KF_DTYPE_F32, 2, (int64_t)2, (int64_t)3);
  kf_graph_add_input(g, "x", &t);
  /* a value of another graph: same type, but never defined here */
  kf_op *e = add_op(g, KF_OP_EXP, "e", &other->first->results[0], 1, 1);
  kf_graph_set_outputs(g, &e->results[0], 1);
  assert_int_equal(kf_graph_verify(g, fresh_diag()), KF_ERR_INVALID);
  assert_message("node 'e' (kf.exp): operand 0");
  kf_graph_destroy(g);
  kf_graph_destroy(other);
}

static void test_verify_duplicate_names(void **state) {
  (void)state;
  kf_graph *g = small_graph();
  g->first->next->name = "r";
  assert_int_equal(kf_graph_verify(g, fresh_diag()), KF_ERR_INVALID);
  assert_message("node 'r' (kf.exp): duplicate name");
  kf_graph_destroy(g);

  /* an op may not reuse an input's name either */
  g = small_graph();
  g->first->name = "x";
  assert_int_equal(kf_graph_verify(g, fresh_diag()), KF_ERR_INVALID);
  assert_message("node 'x' (kf.relu): duplicate name");
  kf_graph_destroy(g);

  g = small_graph();
  g->first->name = "not valid";
  assert_int_equal(kf_graph_verify(g, fresh_diag()), KF_ERR_INVALID);
  assert_message("node 'not valid' (kf.relu): name is not a valid identifier");
  kf_graph_destroy(g);
}

static void test_verify_missing_attribute(void **state) {
  (void)state;
  kf_graph *g = kf_graph_create("g");
  kf_type t = tensor(KF_DTYPE_F32, 2, (int64_t)2, (int64_t)3);
  kf_value *x = kf_graph_add_input(g, "x", &t);
  kf_op *s = add_op(g, KF_OP_SUM, "s", &x, 1, 1);
  kf_op_set_bool(s, "keepdim", false); /* dims left out */
  kf_graph_set_outputs(g, &s->results[0], 1);
  assert_int_equal(kf_graph_verify(g, fresh_diag()), KF_ERR_INVALID);
  assert_message("node 's' (kf.sum): attribute dims is missing");
  kf_graph_destroy(g);
}

static void test_verify_missing_operand(void **state) {
  (void)state;
  kf_graph *g = kf_graph_create("g");
  kf_type t = tensor(KF_DTYPE_F32, 1, (int64_t)4);
  kf_value *x = kf_graph_add_input(g, "x", &t);
  kf_op *a = add_op(g, KF_OP_ADD, "a", (kf_value *[]){x, NULL}, 2, 1);
  kf_graph_set_outputs(g, &a->results[0], 1);
  assert_int_equal(kf_graph_verify(g, fresh_diag()), KF_ERR_INVALID);
  assert_message("node 'a' (kf.add): operand b is missing");
  kf_graph_destroy(g);
}

static void test_verify_params_and_outputs(void **state) {
  (void)state;
  kf_graph *g = kf_graph_create("g");
  kf_type t = tensor(KF_DTYPE_F32, 1, (int64_t)4);
  kf_graph_add_input(g, "x", &t);
  kf_op *p = kf_graph_append_op(g, KF_OP_PARAM, "p", NULL, 0, &t, 1);
  kf_op_set_str(p, "fqn", "lin.weight");
  kf_op_set_str(p, "kind", "parameter");
  kf_graph_set_outputs(g, &p->results[0], 1);
  assert_int_equal(kf_graph_verify(g, fresh_diag()), KF_ERR_INVALID);
  assert_message("node 'p' (kf.param): weight 'lin.weight' is not in the graph's weight table");

  kf_type wt = tensor(KF_DTYPE_F32, 1, (int64_t)5);
  kf_graph_add_weight(g, "lin.weight", &wt, 20);
  assert_int_equal(kf_graph_verify(g, fresh_diag()), KF_ERR_INVALID);
  assert_message("node 'p' (kf.param): type differs from weight 'lin.weight'");
  kf_graph_destroy(g);

  /* an output whose op was removed from the graph */
  g = small_graph();
  kf_graph_remove_op(g, g->last);
  assert_int_equal(kf_graph_verify(g, fresh_diag()), KF_ERR_INVALID);
  assert_message("graph output 0 is not defined");
  kf_graph_destroy(g);

  /* inputs must be tensors */
  g = kf_graph_create("g");
  kf_type s;
  kf_type_init_scalar(&s, KF_DTYPE_F64);
  kf_value *in = kf_graph_add_input(g, "s", &s);
  kf_graph_set_outputs(g, &in, 1);
  assert_int_equal(kf_graph_verify(g, fresh_diag()), KF_ERR_INVALID);
  assert_message("graph input 's' must be a tensor");
  kf_graph_destroy(g);
}

static void test_verify_reports_every_problem(void **state) {
  (void)state;
  kf_graph *g = small_graph();
  g->first->results[0]->type = tensor(KF_DTYPE_F32, 1, (int64_t)6);
  g->first->next->name = "r";
  assert_int_equal(kf_graph_verify(g, fresh_diag()), KF_ERR_INVALID);
  assert_true(n_errors >= 2);
  assert_message("result 0 is declared tensor<6xf32>");
  assert_message("duplicate name");
  kf_graph_destroy(g);
}

static void test_infer_errors(void **state) {
  (void)state;
  kf_graph *g = kf_graph_create("g");
  kf_type a = tensor(KF_DTYPE_F32, 2, (int64_t)2, (int64_t)3);
  kf_type b = tensor(KF_DTYPE_F32, 1, (int64_t)4);
  kf_value *ops[2] = {kf_graph_add_input(g, "a", &a), kf_graph_add_input(g, "b", &b)};
  kf_op *add = add_op(g, KF_OP_ADD, "add", ops, 2, 1);
  kf_type rt = a;
  assert_int_equal(kf_infer_types(add, &rt, fresh_diag()), KF_ERR_INVALID);
  assert_message("node 'add' (kf.add)");
  assert_message("broadcast");

  /* broadcasting that works: [2,3] + [3] -> [2,3]; [4,1] * [1,5] -> [4,5] */
  kf_type c = tensor(KF_DTYPE_F32, 1, (int64_t)3);
  kf_value *ops2[2] = {ops[0], kf_graph_add_input(g, "c", &c)};
  kf_op *ok = add_op(g, KF_OP_ADD, "ok", ops2, 2, 1);
  assert_int_equal(kf_infer_types(ok, &rt, fresh_diag()), KF_OK);
  assert_true(kf_type_equal(&rt, &a));
  kf_type d = tensor(KF_DTYPE_I32, 2, (int64_t)4, (int64_t)1);
  kf_type e = tensor(KF_DTYPE_I64, 2, (int64_t)1, (int64_t)5);
  kf_value *ops3[2] = {kf_graph_add_input(g, "d", &d), kf_graph_add_input(g, "e", &e)};
  kf_op *mul = add_op(g, KF_OP_MUL, "mul", ops3, 2, 1);
  assert_int_equal(kf_infer_types(mul, &rt, fresh_diag()), KF_OK);
  assert_true(type_is(&rt, tensor(KF_DTYPE_I64, 2, (int64_t)4, (int64_t)5)));
  kf_graph_destroy(g);
}

/* ---- printing and parsing ------------------------------------------------------------- */

static void test_print_exact(void **state) {
  (void)state;
  kf_graph *g = small_graph();
  char *text = print_to_string(g);
  const char *want =
      "\"builtin.module\"() ({\n"
      "  \"func.func\"() <{arg_attrs = [{kf.name = \"x\"}], function_type = "
      "(tensor<2x3xf32>) -> (tensor<2x3xf32>), sym_name = \"small\"}> ({\n"
      "  ^bb0(%x: tensor<2x3xf32>):\n"
      "    %r = \"kf.relu\"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc(\"r\")\n"
      "    %e = \"kf.exp\"(%r) : (tensor<2x3xf32>) -> tensor<2x3xf32> loc(\"e\")\n"
      "    \"func.return\"(%e) : (tensor<2x3xf32>) -> ()\n"
      "  }) : () -> ()\n"
      "}) : () -> ()\n";
  assert_string_equal(text, want);
  free(text);
  kf_graph_destroy(g);
}

static int failing_writer(void *user, const char *data, size_t n) {
  int *calls = user;
  (void)data;
  (void)n;
  return ++*calls >= 3 ? -1 : 0;
}

static void test_print_write_failure(void **state) {
  (void)state;
  kf_graph *g = small_graph();
  int calls = 0;
  assert_int_equal(kf_graph_print(g, failing_writer, &calls), KF_ERR_IO);
  kf_graph_destroy(g);
}

/* A graph with every attribute kind, scalars, optional and variadic
 * operands, multi-result ops and awkward floats. */
static kf_graph *rich_graph(void) {
  kf_graph *g = kf_graph_create("rich");
  kf_type t = tensor(KF_DTYPE_F32, 2, (int64_t)2, (int64_t)3);
  kf_value *x = kf_graph_add_input(g, "x", &t);
  kf_type it = tensor(KF_DTYPE_I64, 1, (int64_t)4);
  kf_value *idx = kf_graph_add_input(g, "idx", &it);
  kf_type sc;
  kf_type_init_scalar(&sc, KF_DTYPE_F64);
  kf_op *s = kf_graph_append_op(g, KF_OP_SCALAR, "third", NULL, 0, &sc, 1);
  kf_op_set_number(s, "value", kf_number_float(1.0 / 3.0));
  kf_op *f = kf_graph_append_op(g, KF_OP_FULL, "inf", NULL, 0, &t, 1);
  kf_op_set_number(f, "value", kf_number_float(-INFINITY));
  kf_op *f2 = kf_graph_append_op(g, KF_OP_FULL, "tiny", NULL, 0, &t, 1);
  kf_op_set_number(f2, "value", kf_number_float(5e-324));
  kf_op *add = add_op(g, KF_OP_ADD, "add", (kf_value *[]){x, s->results[0]}, 2, 1);
  kf_op_set_number(add, "alpha", kf_number_int(-3));
  infer_into(add);
  kf_op *div = add_op(g, KF_OP_DIV, "div", (kf_value *[]){add->results[0], f2->results[0]}, 2, 1);
  kf_op_set_str(div, "rounding_mode", "trunc");
  infer_into(div);
  kf_op *sp = add_op(g, KF_OP_SPLIT, "sp", &x, 1, 2);
  kf_op_set_int(sp, "dim", 1);
  kf_op_set_ints(sp, "sizes", (int64_t[]){1, 2}, 2);
  infer_into(sp);
  kf_op *ln = add_op(g, KF_OP_LAYER_NORM, "ln", (kf_value *[]){x, NULL, NULL}, 3, 3);
  kf_op_set_int(ln, "normalized_ndim", 1);
  kf_op_set_float(ln, "eps", 1e-12);
  infer_into(ln);
  kf_op *cat = add_op(g, KF_OP_CAT, "cat", (kf_value *[]){x, div->results[0], f->results[0]}, 3, 1);
  kf_op_set_int(cat, "dim", 0);
  infer_into(cat);
  kf_op *ix = add_op(g, KF_OP_INDEX, "ix", (kf_value *[]){cat->results[0], idx}, 2, 1);
  kf_op_set_ints(ix, "dims", (int64_t[]){0}, 1);
  infer_into(ix);
  kf_op *cast = add_op(g, KF_OP_CAST, "h", &sp->results[1], 1, 1);
  cast->results[0]->type = tensor(KF_DTYPE_BF16, 2, (int64_t)2, (int64_t)2);
  kf_op *el = add_op(g, KF_OP_ELU, "elu", &x, 1, 1);
  kf_op_set_number(el, "alpha", kf_number_float(1.6732632423543772));
  kf_op_set_number(el, "scale", kf_number_float(1.0507009873554805));
  kf_op_set_number(el, "input_scale", kf_number_bool(true));
  kf_value *outs[5] = {ix->results[0], ln->results[2], cast->results[0], el->results[0],
                       sp->results[0]};
  kf_graph_set_outputs(g, outs, 5);
  return g;
}

static void test_print_parse_roundtrip(void **state) {
  (void)state;
  kf_graph *g = rich_graph();
  assert_int_equal(kf_graph_verify(g, fresh_diag()), KF_OK);
  char *a = print_to_string(g);
  assert_non_null(strstr(a, "0xFFF0000000000000"));  /* -inf as bits */
  assert_non_null(strstr(a, "value = 0.3333333333333333 : f64"));
  assert_non_null(strstr(a, "operandSegmentSizes = array<i32: 1, 0, 0>"));
  assert_non_null(strstr(a, "%sp:2 = \"kf.split\""));
  assert_non_null(strstr(a, "\"func.return\"(%ix, %ln#2, %h, %elu, %sp#0)"));
  kf_graph *g2 = NULL;
  assert_int_equal(kf_mlir_parse(a, strlen(a), "rich.mlir", &g2, fresh_diag()), KF_OK);
  assert_int_equal(kf_graph_verify(g2, fresh_diag()), KF_OK);
  char *b = print_to_string(g2);
  assert_string_equal(a, b);
  /* the parsed numbers are the same doubles */
  for (kf_op *op = g2->first; op; op = op->next) {
    if (strcmp(op->name, "third") == 0)
      assert_true(kf_op_get_number(op, "value").f == 1.0 / 3.0);
    if (strcmp(op->name, "tiny") == 0)
      assert_true(kf_op_get_number(op, "value").f == 5e-324);
    if (strcmp(op->name, "inf") == 0)
      assert_true(isinf(kf_op_get_number(op, "value").f));
  }
  free(a);
  free(b);
  kf_graph_destroy(g);
  kf_graph_destroy(g2);
}

/* ---- passes --------------------------------------------------------------------------------- */

static void test_passes(void **state) {
  (void)state;
  kf_graph *g = small_graph();
  kf_value *x = g->inputs[0];
  add_op(g, KF_OP_NEG, "dead", &x, 1, 1);
  kf_op *same = add_op(g, KF_OP_RESHAPE, "same", &g->first->results[0], 1, 1);
  kf_op *e2 = add_op(g, KF_OP_EXP, "e2", &same->results[0], 1, 1);
  kf_value *outs[2] = {g->outputs[0], e2->results[0]};
  kf_graph_set_outputs(g, outs, 2);
  assert_int_equal(kf_graph_verify(g, fresh_diag()), KF_OK);
  assert_int_equal(kf_graph_count_ops(g), 5);
  assert_int_equal(kf_graph_count_uses(g, same->results[0]), 1);
  assert_int_equal(kf_pass_run_pipeline(g, "dce", true, fresh_diag()), KF_OK);
  assert_int_equal(kf_graph_count_ops(g), 4);
  assert_int_equal(kf_pass_run_pipeline(g, kf_pass_default_pipeline(), true, fresh_diag()), KF_OK);
  assert_int_equal(kf_graph_count_ops(g), 3); /* the identity reshape is gone */
  assert_ptr_equal(e2->operands[0], g->first->results[0]);
  assert_int_equal(kf_pass_run_pipeline(g, "dce,bogus", true, fresh_diag()), KF_ERR_ARG);
  assert_message("unknown pass 'bogus'");
  assert_null(kf_pass_find("bogus"));
  assert_non_null(kf_pass_find("dce"));
  int n;
  const kf_pass_info *list = kf_pass_list(&n);
  assert_true(n >= 2);
  for (int i = 0; i < n; i++) assert_ptr_equal(kf_pass_find(list[i].name), &list[i]);
  kf_graph_destroy(g);
}

/* ---- .kfio ---------------------------------------------------------------------------------- */

static char tmpdir[256];

static const char *tmp_path(const char *name) {
  static char buf[512];
  snprintf(buf, sizeof buf, "%s/%s", tmpdir, name);
  return buf;
}

/* Write a .kfio file: header text, then the data section at the next
 * 64-byte boundary. */
static void write_kfio(const char *path, const char *header, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  uint64_t h = strlen(header);
  unsigned char len[8];
  for (int i = 0; i < 8; i++) len[i] = (unsigned char)(h >> (8 * i));
  fwrite("KFIO0001", 1, 8, f);
  fwrite(len, 1, 8, f);
  fwrite(header, 1, h, f);
  size_t start = (16 + h + 63) / 64 * 64;
  for (size_t i = 16 + h; i < start; i++) fputc(0, f);
  if (n) fwrite(data, 1, n, f);
  assert_int_equal(fclose(f), 0);
}

static void test_kfio_read(void **state) {
  (void)state;
  /* one f32[2,2] at 0, one bool[3] at 64, one empty i64[0,4] at 128, one
   * 0-d f64 at 128 */
  unsigned char data[136];
  memset(data, 0, sizeof data);
  float fv[4] = {1.5f, -2.0f, 0.25f, 3.0e30f};
  memcpy(data, fv, sizeof fv);
  data[64] = 1;
  data[66] = 1;
  double dv = -7.125;
  memcpy(data + 128, &dv, 8);
  const char *hdr =
      "{\"format\":\"kfio\",\"version\":1,\"model\":\"m\",\"torch_version\":\"2.11\","
      "\"atol\":1e-5,\"rtol\":0.001,\"extra\":{\"ignored\":true},"
      "\"inputs\":[{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[2,2],\"offset\":0,\"nbytes\":16},"
      "{\"name\":\"m\",\"dtype\":\"i1\",\"shape\":[3],\"offset\":64,\"nbytes\":3}],"
      "\"outputs\":[{\"name\":\"e\",\"dtype\":\"i64\",\"shape\":[0,4],\"offset\":128,\"nbytes\":0},"
      "{\"name\":\"s\",\"dtype\":\"f64\",\"shape\":[],\"offset\":128,\"nbytes\":8}]}";
  write_kfio(tmp_path("good.kfio"), hdr, data, sizeof data);
  kf_io_file f;
  assert_int_equal(kf_io_read(tmp_path("good.kfio"), &f, fresh_diag()), KF_OK);
  assert_int_equal(f.n_inputs, 2);
  assert_int_equal(f.n_outputs, 2);
  assert_true(f.atol == 1e-5 && f.rtol == 0.001);
  assert_string_equal(f.inputs[0].name, "x");
  assert_int_equal(f.inputs[0].t.dtype, KF_DTYPE_F32);
  assert_int_equal(f.inputs[0].t.rank, 2);
  assert_true(kf_tensor_get(&f.inputs[0].t, 1) == -2.0);
  assert_true(kf_tensor_get(&f.inputs[0].t, 3) == (double)3.0e30f);
  assert_int_equal(f.inputs[1].t.dtype, KF_DTYPE_BOOL);
  assert_true(kf_tensor_get(&f.inputs[1].t, 0) == 1 && kf_tensor_get(&f.inputs[1].t, 1) == 0);
  assert_int_equal(kf_tensor_numel(&f.outputs[0].t), 0);
  assert_int_equal(f.outputs[1].t.rank, 0);
  assert_true(kf_tensor_get(&f.outputs[1].t, 0) == -7.125);
  assert_non_null(strstr(f.meta_json, "\"torch_version\":\"2.11\""));
  kf_io_fini(&f);
  kf_io_fini(&f); /* idempotent */
}

static void expect_kfio_error(const char *name, const char *hdr, size_t data_n,
                              kf_status want, const char *sub) {
  unsigned char data[256] = {0};
  write_kfio(tmp_path(name), hdr, data, data_n);
  kf_io_file f;
  memset(&f, 0x5a, sizeof f);
  assert_int_equal(kf_io_read(tmp_path(name), &f, fresh_diag()), want);
  assert_int_equal(n_errors, 1);
  assert_message(name);
  assert_message(sub);
  assert_null(f.inputs); /* nothing to free on failure */
  assert_null(f.meta_json);
}

#define HDR(ins) \
  "{\"format\":\"kfio\",\"version\":1,\"atol\":0,\"rtol\":0,\"inputs\":[" ins "],\"outputs\":[]}"

static void test_kfio_errors(void **state) {
  (void)state;
  expect_kfio_error("syntax.kfio", "{\"format\":\"kfio\",", 0, KF_ERR_FORMAT,
                    "header: malformed JSON at byte");
  expect_kfio_error("array.kfio", "[1,2]", 0, KF_ERR_FORMAT, "expected a JSON object");
  expect_kfio_error("format.kfio", "{\"format\":\"npz\",\"version\":1}", 0, KF_ERR_FORMAT,
                    "\"format\"");
  expect_kfio_error("version.kfio",
                    "{\"format\":\"kfio\",\"version\":2,\"atol\":0,\"rtol\":0,\"inputs\":[],"
                    "\"outputs\":[]}",
                    0, KF_ERR_VERSION, "version 2");
  expect_kfio_error("atol.kfio",
                    "{\"format\":\"kfio\",\"version\":1,\"atol\":-1,\"rtol\":0,\"inputs\":[],"
                    "\"outputs\":[]}",
                    0, KF_ERR_FORMAT, "\"atol\"");
  expect_kfio_error("outputs.kfio",
                    "{\"format\":\"kfio\",\"version\":1,\"atol\":0,\"rtol\":0,\"inputs\":[]}", 0,
                    KF_ERR_FORMAT, "\"outputs\" is missing");
  expect_kfio_error("dtype.kfio",
                    HDR("{\"name\":\"x\",\"dtype\":\"c64\",\"shape\":[2],\"offset\":0,\"nbytes\":16}"),
                    16, KF_ERR_FORMAT, "inputs[0] ('x').dtype: unknown dtype 'c64'");
  expect_kfio_error("nbytes.kfio",
                    HDR("{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[2,3],\"offset\":0,\"nbytes\":20}"),
                    32, KF_ERR_FORMAT, "inputs[0] ('x').nbytes: 20 does not match");
  expect_kfio_error("offset.kfio",
                    HDR("{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[2],\"offset\":60,\"nbytes\":8}"),
                    64, KF_ERR_FORMAT, "inputs[0] ('x').offset");
  expect_kfio_error("shape.kfio",
                    HDR("{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[-2],\"offset\":0,\"nbytes\":8}"),
                    64, KF_ERR_FORMAT, "inputs[0] ('x').shape[0]");
  expect_kfio_error("overflow.kfio",
                    HDR("{\"name\":\"x\",\"dtype\":\"f64\",\"shape\":[4294967296,4294967296,"
                        "4294967296],\"offset\":0,\"nbytes\":8}"),
                    64, KF_ERR_FORMAT, "inputs[0] ('x').nbytes");
  expect_kfio_error("rank.kfio",
                    HDR("{\"name\":\"x\",\"dtype\":\"f32\",\"shape\":[1,1,1,1,1,1,1,1,1],"
                        "\"offset\":0,\"nbytes\":4}"),
                    64, KF_ERR_LIMIT, "rank 9");
  expect_kfio_error("bool.kfio",
                    HDR("{\"name\":\"m\",\"dtype\":\"i1\",\"shape\":[2],\"offset\":0,\"nbytes\":2},"
                        "{\"name\":\"n\",\"dtype\":\"i1\",\"shape\":[1],\"offset\":2,\"nbytes\":1}"),
                    0, KF_ERR_FORMAT, "inputs[0] ('m').offset");
  expect_kfio_error("name.kfio", HDR("{\"dtype\":\"f32\",\"shape\":[],\"offset\":0,\"nbytes\":4}"),
                    64, KF_ERR_FORMAT, "inputs[0].name");

  /* a bool byte that is neither 0 nor 1 */
  unsigned char two[4] = {1, 2, 0, 0};
  write_kfio(tmp_path("boolval.kfio"),
             HDR("{\"name\":\"m\",\"dtype\":\"i1\",\"shape\":[2],\"offset\":0,\"nbytes\":2}"), two,
             sizeof two);
  kf_io_file f;
  assert_int_equal(kf_io_read(tmp_path("boolval.kfio"), &f, fresh_diag()), KF_ERR_FORMAT);
  assert_message("bool element 1 is 2");

  /* prefix problems: magic, short file, header past the end */
  FILE *fp = fopen(tmp_path("magic.kfio"), "wb");
  fputs("KFIO0002........{}", fp);
  fclose(fp);
  assert_int_equal(kf_io_read(tmp_path("magic.kfio"), &f, fresh_diag()), KF_ERR_FORMAT);
  assert_message("bad magic");
  fp = fopen(tmp_path("short.kfio"), "wb");
  fputs("KFIO0001\x05", fp);
  fclose(fp);
  assert_int_equal(kf_io_read(tmp_path("short.kfio"), &f, fresh_diag()), KF_ERR_FORMAT);
  assert_message("header length");
  fp = fopen(tmp_path("hlen.kfio"), "wb");
  fwrite("KFIO0001\xff\xff\xff\xff\xff\xff\xff\x7f{}", 1, 18, fp);
  fclose(fp);
  assert_int_equal(kf_io_read(tmp_path("hlen.kfio"), &f, fresh_diag()), KF_ERR_FORMAT);
  assert_message("run past the end of the file");
  assert_int_equal(kf_io_read(tmp_path("does-not-exist.kfio"), &f, fresh_diag()), KF_ERR_IO);
  assert_message("cannot open");
}

/* Every recorded fixture reads, and agrees with the model it belongs to in
 * the numbers a reader can check without the model. */
static void test_kfio_fixtures(void **state) {
  (void)state;
  const char *dir = getenv("KFUSE_FIXTURES");
  if (!dir) skip();
  char path[1024];
  snprintf(path, sizeof path, "%s/mlp.kfio", dir);
  kf_io_file f;
  assert_int_equal(kf_io_read(path, &f, fresh_diag()), KF_OK);
  assert_int_equal(f.n_inputs, 1);
  assert_int_equal(f.n_outputs, 1);
  assert_int_equal(f.inputs[0].t.rank, 2);
  assert_int_equal(f.inputs[0].t.shape[0], 4);
  assert_int_equal(f.inputs[0].t.shape[1], 16);
  /* log_softmax rows: logsumexp of each row is 0 */
  const kf_tensor *o = &f.outputs[0].t;
  assert_int_equal(o->shape[1], 10);
  for (int r = 0; r < 4; r++) {
    double s = 0;
    for (int c = 0; c < 10; c++) s += exp(kf_tensor_get(o, r * 10 + c));
    assert_true(fabs(s - 1) < 1e-5);
  }
  kf_io_fini(&f);
}

static int setup_tmp(void **state) {
  (void)state;
  snprintf(tmpdir, sizeof tmpdir, "/tmp/kfuse_test_ir_XXXXXX");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_tmp(void **state) {
  (void)state;
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  kf_strbuf_fini(&msgs);
  return system(cmd) == 0 ? 0 : -1;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dtype_names_sizes),
      cmocka_unit_test(test_promote_types),
      cmocka_unit_test(test_result_type),
      cmocka_unit_test(test_types),
      cmocka_unit_test(test_op_table),
      cmocka_unit_test(test_attributes),
      cmocka_unit_test(test_verify_accepts),
      cmocka_unit_test(test_verify_wrong_result_type),
      cmocka_unit_test(test_verify_use_before_def),
      cmocka_unit_test(test_verify_foreign_value),
      cmocka_unit_test(test_verify_duplicate_names),
      cmocka_unit_test(test_verify_missing_attribute),
      cmocka_unit_test(test_verify_missing_operand),
      cmocka_unit_test(test_verify_params_and_outputs),
      cmocka_unit_test(test_verify_reports_every_problem),
      cmocka_unit_test(test_infer_errors),
      cmocka_unit_test(test_print_exact),
      cmocka_unit_test(test_print_write_failure),
      cmocka_unit_test(test_print_parse_roundtrip),
      cmocka_unit_test(test_passes),
      cmocka_unit_test(test_kfio_read),
      cmocka_unit_test(test_kfio_errors),
      cmocka_unit_test(test_kfio_fixtures),
  };
  return cmocka_run_group_tests(tests, setup_tmp, teardown_tmp);
}
