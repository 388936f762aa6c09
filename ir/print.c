/* ir/print.c — prints a graph as MLIR generic-form text.
 *
 * The form (docs/ARCHITECTURE.md has an example):
 *   "builtin.module"() ({
 *     "func.func"() <{arg_attrs = [...], function_type = ..., sym_name = ...}> ({
 *     ^bb0(%x: tensor<2x4xf32>):
 *       %relu = "kf.relu"(%x) : (tensor<2x4xf32>) -> tensor<2x4xf32> loc("relu")
 *       "func.return"(%relu) : (tensor<2x4xf32>) -> ()
 *     }) : () -> ()
 *   }) : () -> ()
 * Op names travel as NameLoc locations and input names as the kf.name
 * argument attribute, because MLIR does not keep SSA names; the parser
 * (frontend/mlir_text.c) restores them, so print -> parse -> print is
 * byte-identical. Attributes are printed sorted by name, as MLIR does. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfuse/ir.h"

typedef struct printer {
  kf_write_fn write;
  void *user;
  int failed;
} printer;

static void out(printer *p, const char *s, size_t n) {
  if (!p->failed && n && p->write(p->user, s, n) != 0) p->failed = 1;
}

static void outs(printer *p, const char *s) { out(p, s, strlen(s)); }

static void outf(printer *p, const char *fmt, ...) KF_PRINTF(2, 3);
static void outf(printer *p, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n < 0) {
    p->failed = 1;
    return;
  }
  if (n < (int)sizeof buf) {
    out(p, buf, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1);
  if (!big) {
    p->failed = 1;
    return;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  out(p, big, (size_t)n);
  free(big);
}

static void print_type(printer *p, const kf_type *t) {
  char buf[512];
  kf_type_str(t, buf, sizeof buf);
  outs(p, buf);
}

/* MLIR float literal: needs a '.', shortest form that round-trips;
 * non-finite values in hexadecimal bit form. */
static void print_double(printer *p, double v) {
  if (!isfinite(v)) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    outf(p, "0x%016" PRIX64, bits);
    return;
  }
  char buf[64];
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  char *e = strchr(buf, 'e');
  if (!strchr(buf, '.')) {
    char tail[64] = "";
    if (e) {
      snprintf(tail, sizeof tail, "%s", e);
      *e = 0;
    }
    outf(p, "%s.0%s", buf, tail);
  } else {
    outs(p, buf);
  }
}

static void print_string(printer *p, const char *s) {
  outs(p, "\"");
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c == '"' || *c == '\\')
      outf(p, "\\%c", *c);
    else if (*c < 0x20 || *c >= 0x7f)
      outf(p, "\\%02X", *c);
    else
      out(p, (const char *)c, 1);
  }
  outs(p, "\"");
}

static void print_number(printer *p, kf_number n) {
  switch (n.kind) {
  case KF_NUM_INT: outf(p, "%" PRId64 " : i64", n.i); break;
  case KF_NUM_BOOL: outs(p, n.i ? "true" : "false"); break;
  case KF_NUM_FLOAT:
    print_double(p, n.f);
    outs(p, " : f64");
    break;
  }
}

static void print_attr(printer *p, kf_attr_kind kind, const kf_attr *a) {
  switch (kind) {
  case KF_ATTR_INT: outf(p, "%" PRId64 " : i64", a->u.i); break;
  case KF_ATTR_FLOAT:
    print_double(p, a->u.f);
    outs(p, " : f64");
    break;
  case KF_ATTR_BOOL: outs(p, a->u.b ? "true" : "false"); break;
  case KF_ATTR_INTS:
    outs(p, "array<i64");
    for (int i = 0; i < a->u.ints.n; i++)
      outf(p, "%s%" PRId64, i ? ", " : ": ", a->u.ints.v[i]);
    outs(p, ">");
    break;
  case KF_ATTR_FLOATS:
    outs(p, "array<f64");
    for (int i = 0; i < a->u.floats.n; i++) {
      outs(p, i ? ", " : ": ");
      print_double(p, a->u.floats.v[i]);
    }
    outs(p, ">");
    break;
  case KF_ATTR_STR: print_string(p, a->u.s); break;
  case KF_ATTR_DTYPE: outs(p, kf_dtype_name(a->u.t)); break;
  case KF_ATTR_NUMBER: print_number(p, a->u.num); break;
  }
}

/* SSA name of a value: inputs by their name, results by op name (with #i
 * when the op has several results). */
static void print_value_ref(printer *p, const kf_graph *g, const kf_value *v) {
  if (!v->def) {
    outf(p, "%%%s", g->input_names[v->index]);
  } else if (v->def->n_results == 1) {
    outf(p, "%%%s", v->def->name);
  } else {
    outf(p, "%%%s#%d", v->def->name, v->index);
  }
}

static int cmp_attr_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void print_op(printer *p, const kf_graph *g, const kf_op *op) {
  const kf_op_info *info = kf_op_info_get(op->code);
  outs(p, "    ");
  if (op->n_results == 1)
    outf(p, "%%%s = ", op->name);
  else if (op->n_results > 1)
    outf(p, "%%%s:%d = ", op->name, op->n_results);
  outf(p, "\"kf.%s\"(", info->name);
  int k = 0;
  for (int i = 0; i < op->n_operands; i++) {
    if (!op->operands[i]) continue;
    if (k++) outs(p, ", ");
    print_value_ref(p, g, op->operands[i]);
  }
  outs(p, ")");

  /* attributes sorted by name, operandSegmentSizes among them */
  const char *names[KF_MAX_ATTRS + 1];
  int n = 0;
  for (int i = 0; i < info->n_attrs; i++)
    if (op->attrs[i].present) names[n++] = info->attrs[i].name;
  if (info->has_optional_operands) names[n++] = "operandSegmentSizes";
  qsort(names, (size_t)n, sizeof names[0], cmp_attr_name);
  if (n) {
    outs(p, " {");
    for (int j = 0; j < n; j++) {
      if (j) outs(p, ", ");
      outf(p, "%s = ", names[j]);
      if (strcmp(names[j], "operandSegmentSizes") == 0) {
        outs(p, "array<i32");
        for (int i = 0; i < op->n_operands; i++)
          outf(p, "%s%d", i ? ", " : ": ", op->operands[i] ? 1 : 0);
        outs(p, ">");
        continue;
      }
      int ai = kf_op_attr_index(op->code, names[j]);
      print_attr(p, info->attrs[ai].kind, &op->attrs[ai]);
    }
    outs(p, "}");
  }

  outs(p, " : (");
  k = 0;
  for (int i = 0; i < op->n_operands; i++) {
    if (!op->operands[i]) continue;
    if (k++) outs(p, ", ");
    print_type(p, &op->operands[i]->type);
  }
  outs(p, ") -> ");
  if (op->n_results == 1) {
    print_type(p, &op->results[0]->type);
  } else {
    outs(p, "(");
    for (int i = 0; i < op->n_results; i++) {
      if (i) outs(p, ", ");
      print_type(p, &op->results[i]->type);
    }
    outs(p, ")");
  }
  outs(p, " loc(");
  print_string(p, op->name);
  outs(p, ")\n");
}

static void print_results_type(printer *p, const kf_graph *g) {
  outs(p, "(");
  for (int i = 0; i < g->n_outputs; i++) {
    if (i) outs(p, ", ");
    print_type(p, &g->outputs[i]->type);
  }
  outs(p, ")");
}

kf_status kf_graph_print(const kf_graph *g, kf_write_fn write, void *user) {
  printer pr = {write, user, 0};
  printer *p = &pr;
  outs(p, "\"builtin.module\"() ({\n  \"func.func\"() <{");
  if (g->n_inputs) {
    outs(p, "arg_attrs = [");
    for (int i = 0; i < g->n_inputs; i++) {
      if (i) outs(p, ", ");
      outs(p, "{kf.name = ");
      print_string(p, g->input_names[i]);
      outs(p, "}");
    }
    outs(p, "], ");
  }
  outs(p, "function_type = (");
  for (int i = 0; i < g->n_inputs; i++) {
    if (i) outs(p, ", ");
    print_type(p, &g->inputs[i]->type);
  }
  outs(p, ") -> ");
  print_results_type(p, g);
  outs(p, ", sym_name = ");
  print_string(p, g->name);
  outs(p, "}> ({\n  ^bb0(");
  for (int i = 0; i < g->n_inputs; i++) {
    if (i) outs(p, ", ");
    outf(p, "%%%s: ", g->input_names[i]);
    print_type(p, &g->inputs[i]->type);
  }
  outs(p, "):\n");
  for (const kf_op *op = g->first; op; op = op->next) print_op(p, g, op);
  outs(p, "    \"func.return\"(");
  for (int i = 0; i < g->n_outputs; i++) {
    if (i) outs(p, ", ");
    print_value_ref(p, g, g->outputs[i]);
  }
  outs(p, ") : ");
  print_results_type(p, g);
  outs(p, " -> ()\n  }) : () -> ()\n}) : () -> ()\n");
  return pr.failed ? KF_ERR_IO : KF_OK;
}
