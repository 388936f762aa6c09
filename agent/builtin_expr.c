/* agent/builtin_expr.c — kernels under construction and the element-wise
 * expression generator of the built-in policy.
 *
 * A kb_kernel collects a kernel's parameters (group inputs, outputs, scratch
 * buffers), its accesses (a parameter at strides over the loop dims) and the
 * statements of its body, then writes the #define prelude its template
 * reads. The expression generator turns kf element-wise ops into those
 * statements: one local per value, operands converted to the op's
 * computation type as PyTorch's TensorIterator does (the promoted dtype,
 * computed in opmath: float for 16-bit floats), scalars and fill values as
 * compile-time literals, group inputs as loads through their strides
 * broadcast into the loop. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"

/* ---- types ---------------------------------------------------------------- */

const char *kb_storage_type(kf_dtype t) {
  switch (t) {
  case KF_DTYPE_F32: return "float";
  case KF_DTYPE_F64: return "double";
  case KF_DTYPE_F16: return "kf::half_t";
  case KF_DTYPE_BF16: return "kf::bf16_t";
  case KF_DTYPE_I64: return "long long";
  case KF_DTYPE_I32: return "int";
  case KF_DTYPE_I16: return "short";
  case KF_DTYPE_I8: return "signed char";
  case KF_DTYPE_U8: return "unsigned char";
  case KF_DTYPE_BOOL: return "bool";
  default: break;
  }
  KF_ASSERT(!"kb_storage_type: invalid dtype");
  return "void";
}

kf_dtype kb_reg_dtype(kf_dtype t, bool fp64) {
  switch (t) {
  case KF_DTYPE_F16: case KF_DTYPE_BF16: return fp64 ? KF_DTYPE_F64 : KF_DTYPE_F32;
  case KF_DTYPE_F32: return fp64 ? KF_DTYPE_F64 : KF_DTYPE_F32;
  default: return t;
  }
}

const char *kb_reg_type(kf_dtype t, bool fp64) {
  return kb_storage_type(kb_reg_dtype(t, fp64));
}

/* ---- kernels -------------------------------------------------------------------- */

void kb_init(kb_kernel *k, const kf_builtin_options *o, const char *name, int rank,
             const int64_t *shape) {
  memset(k, 0, sizeof *k);
  snprintf(k->name, sizeof k->name, "%s", name);
  k->opt = o;
  k->rank = rank;
  for (int i = 0; i < rank; i++) k->shape[i] = shape[i];
  kf_strbuf_init(&k->body);
  kf_strbuf_init(&k->defs);
  kf_strbuf_init(&k->undefs);
}

void kb_fini(kb_kernel *k) {
  kf_strbuf_fini(&k->body);
  kf_strbuf_fini(&k->defs);
  kf_strbuf_fini(&k->undefs);
}

int kb_use_param(kb_kernel *k, kf_unit_arg_kind kind, int index, kf_dtype dt, bool written) {
  for (int i = 0; i < k->n_params; i++) {
    kb_param *p = &k->params[i];
    if (p->kind == kind && p->index == index) {
      p->written |= written;
      return i;
    }
  }
  if (k->n_params == KB_MAX_PARAMS) {
    k->overflow = true;
    return 0;
  }
  kb_param *p = &k->params[k->n_params];
  p->kind = kind;
  p->index = index;
  p->dtype = dt;
  p->written = written;
  return k->n_params++;
}

static int add_access(kb_kernel *k, kb_access *tab, int *n, int param, const int64_t *st) {
  for (int i = 0; i < *n; i++)
    if (tab[i].param == param && memcmp(tab[i].st, st, sizeof(int64_t) * (size_t)k->rank) == 0)
      return i;
  if (*n == KB_MAX_ACCESS) {
    k->overflow = true;
    return 0;
  }
  kb_access *a = &tab[*n];
  memset(a, 0, sizeof *a);
  a->param = param;
  memcpy(a->st, st, sizeof(int64_t) * (size_t)k->rank);
  return (*n)++;
}

int kb_load(kb_kernel *k, int param, const int64_t *st) {
  return add_access(k, k->loads, &k->n_loads, param, st);
}
int kb_store(kb_kernel *k, int param, const int64_t *st) {
  return add_access(k, k->stores, &k->n_stores, param, st);
}
int kb_index(kb_kernel *k, const int64_t *st) {
  return add_access(k, k->idx, &k->n_idx, -1, st);
}

void kb_emit(kb_kernel *k, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char line[8192];
  int n = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof line) {
    k->overflow = true;
    return;
  }
  kf_strbuf_append(&k->body, line, (size_t)n);
  kf_strbuf_append(&k->body, "\n", 1);
}

void kb_def(kb_kernel *k, const char *name, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char val[4096];
  int n = vsnprintf(val, sizeof val, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof val) {
    k->overflow = true;
    return;
  }
  kf_strbuf_printf(&k->defs, "#define %s %s\n", name, val);
  /* a function-like macro is undefined by its bare name */
  size_t bare = strcspn(name, "(");
  kf_strbuf_printf(&k->undefs, "#undef %.*s\n", (int)bare, name);
}

/* every access's stride row, for coalescing */
static void each_access(kb_kernel *k, void (*fn)(kb_access *, void *), void *user) {
  for (int i = 0; i < k->n_loads; i++) fn(&k->loads[i], user);
  for (int i = 0; i < k->n_stores; i++) fn(&k->stores[i], user);
  for (int i = 0; i < k->n_idx; i++) fn(&k->idx[i], user);
}

typedef struct { int a, b; int64_t sb; bool ok; } merge_q;
static void can_merge(kb_access *x, void *u) {
  merge_q *q = u;
  if (x->st[q->a] != x->st[q->b] * q->sb) q->ok = false;
}

typedef struct { const int *keep; int n; } drop_q;
static void compact(kb_access *x, void *u) {
  drop_q *q = u;
  int64_t st[KF_MAX_RANK];
  for (int i = 0; i < q->n; i++) st[i] = x->st[q->keep[i]];
  memset(x->st, 0, sizeof x->st);
  memcpy(x->st, st, sizeof(int64_t) * (size_t)q->n);
}

typedef struct { int a, b; } fold_q;
static void fold(kb_access *x, void *u) {
  fold_q *q = u;
  x->st[q->a] = x->st[q->b];
}

void kb_coalesce(kb_kernel *k, int *group) {
  int grp[KF_MAX_RANK];
  for (int i = 0; i < k->rank; i++) grp[i] = group ? group[i] : 0;
  /* drop size-1 dims */
  int keep[KF_MAX_RANK], n = 0;
  for (int i = 0; i < k->rank; i++)
    if (k->shape[i] != 1) keep[n++] = i;
  if (n == 0) {
    /* a single element: one dim of size 1, grouped like the first dim */
    int g0 = grp[0];
    drop_q q = {keep, 0};
    each_access(k, compact, &q);
    k->rank = 1;
    k->shape[0] = 1;
    if (group) group[0] = g0;
    return;
  }
  drop_q dq = {keep, n};
  each_access(k, compact, &dq);
  int64_t shape[KF_MAX_RANK];
  int g2[KF_MAX_RANK];
  for (int i = 0; i < n; i++) {
    shape[i] = k->shape[keep[i]];
    g2[i] = grp[keep[i]];
  }
  /* merge from the innermost dim outwards */
  int r = n;
  for (int i = r - 2; i >= 0; i--) {
    if (g2[i] != g2[i + 1]) continue;
    merge_q q = {i, i + 1, shape[i + 1], true};
    each_access(k, can_merge, &q);
    if (!q.ok) continue;
    /* dim i absorbs dim i+1: stride of the inner, size multiplied */
    fold_q f = {i, i + 1};
    each_access(k, fold, &f);
    shape[i] *= shape[i + 1];
    int rest[KF_MAX_RANK], m = 0;
    for (int j = 0; j < r; j++)
      if (j != i + 1) rest[m++] = j;
    drop_q d2 = {rest, m};
    each_access(k, compact, &d2);
    for (int j = i + 1; j + 1 < r; j++) {
      shape[j] = shape[j + 1];
      g2[j] = g2[j + 1];
    }
    r--;
  }
  /* dims of a lower group first (kept before reduced), order kept within */
  int perm[KF_MAX_RANK], m = 0;
  for (int gv = 0; m < r; gv++)
    for (int i = 0; i < r; i++)
      if (g2[i] == gv) perm[m++] = i;
  drop_q pq = {perm, r};
  each_access(k, compact, &pq);
  k->rank = r;
  for (int i = 0; i < r; i++) {
    k->shape[i] = shape[perm[i]];
    if (group) group[i] = g2[perm[i]];
  }
}

int64_t kb_extent(const kb_kernel *k) {
  int64_t numel = 1, hi = 0;
  for (int d = 0; d < k->rank; d++) numel *= k->shape[d];
  const kb_access *tabs[3] = {k->loads, k->stores, k->idx};
  int ns[3] = {k->n_loads, k->n_stores, k->n_idx};
  for (int t = 0; t < 3; t++)
    for (int i = 0; i < ns[t]; i++) {
      int64_t e = 0;
      for (int d = 0; d < k->rank; d++) {
        int64_t s = tabs[t][i].st[d];
        e += (k->shape[d] - 1) * (s < 0 ? -s : s);
      }
      if (e + 1 > hi) hi = e + 1;
    }
  return numel > hi ? numel : hi;
}

void kb_def_params(kb_kernel *k) {
  kf_strbuf s;
  kf_strbuf_init(&s);
  for (int i = 0; i < k->n_params; i++) {
    const kb_param *p = &k->params[i];
    kf_strbuf_printf(&s, "%s%s%s *__restrict__ kf_p%d", i ? ", " : "", p->written ? "" : "const ",
                     kb_storage_type(p->dtype), i);
  }
  kb_def(k, "KF_KERNEL", "%s", k->name);
  kb_def(k, "KF_PARAMS", "%s", s.data ? s.data : ""); /* may be empty: no arguments */
  if (s.failed) k->overflow = true;
  kf_strbuf_fini(&s);
}

static void stride_list(const kb_access *a, const int *dims, int nd, char *buf, size_t n) {
  size_t o = 0;
  buf[0] = '\0';
  for (int i = 0; i < nd && o < n; i++)
    o += (size_t)snprintf(buf + o, n - o, "%s%" PRId64 "LL", i ? ", " : "", a->st[dims[i]]);
  if (nd == 0) snprintf(buf, n, "0LL");
}

void kb_def_accesses(kb_kernel *k, const char *suffix, int d0, int d1) {
  int dims[KF_MAX_RANK], nd = 0;
  for (int d = d0; d < d1; d++) dims[nd++] = d;
  char buf[1024], name[64];
  bool fp64 = k->opt && k->opt->fp64;
  kf_strbuf list;
  kf_strbuf_init(&list);
  for (int i = 0; i < k->n_loads; i++) {
    const kb_access *a = &k->loads[i];
    const kb_param *p = &k->params[a->param];
    snprintf(name, sizeof name, "KF_L%d_S", i);
    kb_def(k, name, "%s", kb_storage_type(p->dtype));
    snprintf(name, sizeof name, "KF_L%d_R", i);
    kb_def(k, name, "%s", kb_reg_type(p->dtype, fp64));
    snprintf(name, sizeof name, "KF_L%d_P", i);
    kb_def(k, name, "kf_p%d", a->param);
    snprintf(name, sizeof name, "KF_L%d_%s", i, suffix);
    stride_list(a, dims, nd, buf, sizeof buf);
    kb_def(k, name, "%s", buf);
    kf_strbuf_printf(&list, "X(%d) ", i);
  }
  kb_def(k, "KF_LOADS(X)", "%s", list.data ? list.data : "");
  kf_strbuf_fini(&list);
  kf_strbuf_init(&list);
  for (int i = 0; i < k->n_stores; i++) {
    const kb_access *a = &k->stores[i];
    const kb_param *p = &k->params[a->param];
    snprintf(name, sizeof name, "KF_S%d_S", i);
    kb_def(k, name, "%s", kb_storage_type(p->dtype));
    snprintf(name, sizeof name, "KF_S%d_R", i);
    kb_def(k, name, "%s", kb_reg_type(p->dtype, fp64));
    snprintf(name, sizeof name, "KF_S%d_P", i);
    kb_def(k, name, "kf_p%d", a->param);
    snprintf(name, sizeof name, "KF_S%d_%s", i, suffix);
    stride_list(a, dims, nd, buf, sizeof buf);
    kb_def(k, name, "%s", buf);
    kf_strbuf_printf(&list, "X(%d) ", i);
  }
  kb_def(k, "KF_STORES(X)", "%s", list.data ? list.data : "");
  kf_strbuf_fini(&list);
  kf_strbuf_init(&list);
  for (int i = 0; i < k->n_idx; i++) {
    snprintf(name, sizeof name, "KF_I%d_%s", i, suffix);
    stride_list(&k->idx[i], dims, nd, buf, sizeof buf);
    kb_def(k, name, "%s", buf);
    kf_strbuf_printf(&list, "X(%d) ", i);
  }
  kb_def(k, "KF_IDXS(X)", "%s", list.data ? list.data : "");
  kf_strbuf_fini(&list);
}

void kb_take_body(kb_kernel *k, kf_strbuf *dst) {
  kf_strbuf_fini(dst);
  *dst = k->body;
  kf_strbuf_init(&k->body);
}

void kb_def_body(kb_kernel *k, const char *macro) { kb_def_text(k, macro, k->body.data); }

void kb_def_text(kb_kernel *k, const char *macro, const char *text) {
  /* one statement per line, continued with backslashes */
  kf_strbuf s;
  kf_strbuf_init(&s);
  const char *b = text ? text : "";
  kf_strbuf_append(&s, "\\\n", 2);
  while (*b) {
    const char *nl = strchr(b, '\n');
    size_t n = nl ? (size_t)(nl - b) : strlen(b);
    kf_strbuf_append(&s, "  ", 2);
    kf_strbuf_append(&s, b, n);
    kf_strbuf_append(&s, " \\\n", 3);
    b += n + (nl ? 1 : 0);
  }
  kf_strbuf_append(&s, "  /* end */", 11);
  if (s.failed) k->overflow = true;
  kf_strbuf_printf(&k->defs, "#define %s %s\n", macro, s.data ? s.data : "");
  kf_strbuf_printf(&k->undefs, "#undef %s\n", macro);
  kf_strbuf_fini(&s);
}

kf_status kb_finish(kb_kernel *k, kf_unit *u, kf_strbuf *src, const char *tmpl,
                    const uint32_t grid[3], const uint32_t block[3], uint32_t smem,
                    kf_diag *diag) {
  if (k->overflow || k->body.failed || k->defs.failed || k->undefs.failed) {
    kf_diag_error(diag, "unit %s: kernel %s exceeds the built-in generator's limits "
                  "(%d parameters, %d accesses)", u->name, k->name, KB_MAX_PARAMS, KB_MAX_ACCESS);
    return KF_ERR_LIMIT;
  }
  for (int i = 0; i < k->n_params; i++)
    if (k->params[i].index < 0) {
      kf_diag_error(diag, "internal error: unit %s: kernel %s reads a value that is neither a group "
                    "input nor output", u->name, k->name);
      return KF_ERR_INTERNAL;
    }
  const kf_template *t = kf_template_find(tmpl);
  if (!t) {
    kf_diag_error(diag, "internal error: template %s is not embedded", tmpl);
    return KF_ERR_INTERNAL;
  }
  kf_strbuf_printf(src, "\n// ---- kernel %s (template %s)\n", k->name, tmpl);
  kf_strbuf_append(src, k->defs.data, k->defs.len);
  kf_strbuf_append(src, t->text, t->len);
  kf_strbuf_append(src, "\n", 1);
  kf_strbuf_append(src, k->undefs.data, k->undefs.len);
  kf_unit_step *s = kf_unit_add_step(u, KF_USTEP_LAUNCH);
  if (!s || !kf_unit_step_args(s, k->n_params)) return KF_ERR_NOMEM;
  size_t nl = strlen(k->name) + 1;
  s->kernel = malloc(nl);
  if (!s->kernel) return KF_ERR_NOMEM;
  memcpy(s->kernel, k->name, nl);
  for (int i = 0; i < 3; i++) {
    s->grid[i] = grid[i];
    s->block[i] = block[i];
  }
  s->smem = smem;
  for (int i = 0; i < k->n_params; i++) {
    s->args[i].kind = k->params[i].kind;
    s->args[i].index = k->params[i].index;
  }
  return src->failed ? KF_ERR_NOMEM : KF_OK;
}

/* ---- groups ------------------------------------------------------------------------ */

int kb_group_input(const kf_group *g, const kf_value *v) {
  for (int i = 0; i < g->n_inputs; i++)
    if (g->inputs[i] == v) return i;
  return -1;
}

int kb_op_index(const kf_group *g, const kf_op *op) {
  for (int i = 0; i < g->n_ops; i++)
    if (g->ops[i] == op) return i;
  return -1;
}

static void mark_prologue(const kf_group *g, const kf_op *anchor, bool *pro, const kf_value *v, int depth) {
  if (!v || !v->def || depth > 100000) return;
  int i = kb_op_index(g, v->def);
  if (i < 0 || pro[i] || v->def == anchor) return;
  pro[i] = true;
  for (int j = 0; j < v->def->n_operands; j++) mark_prologue(g, anchor, pro, v->def->operands[j], depth + 1);
}

void kb_mark_prologue(const kf_group *g, const kf_op *anchor, bool *pro, const kf_value *v) {
  mark_prologue(g, anchor, pro, v, 0);
}

int kb_group_output(const kf_group *g, const kf_value *v) {
  for (int i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] == v) return i;
  return -1;
}

static bool op_in_group(const kf_group *g, const kf_op *op) { return kb_op_index(g, op) >= 0; }

bool kb_value_escapes(const kf_partition *p, const kf_group *g, const kf_value *v) {
  (void)p;
  return kb_group_output(g, v) >= 0;
}

kf_status kb_unsupported(kf_diag *diag, const kf_group *g, const kf_op *op, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (op)
    kf_diag_error(diag, "group %d (%s): node '%s' (kf.%s): %s", g->id, kf_group_kind_name(g->kind),
                  op->name, kf_opcode_name(op->code), msg);
  else
    kf_diag_error(diag, "group %d (%s): %s", g->id, kf_group_kind_name(g->kind), msg);
  return KF_ERR_UNSUPPORTED;
}

/* ---- promotion ------------------------------------------------------------------------ */

/* c10's ResultTypeState: dimensioned tensors, zero-dim tensors and wrapped
 * numbers are three tiers; a lower tier only raises the category. */
typedef struct { kf_dtype dim, zero, wrapped; } rts;

static kf_dtype promote_skip(kf_dtype a, kf_dtype b) {
  if (a == KF_DTYPE_INVALID) return b;
  if (b == KF_DTYPE_INVALID) return a;
  return kf_dtype_promote(a, b);
}

static void rts_add(rts *s, const kf_type *t) {
  if (t->kind == KF_TYPE_SCALAR)
    s->wrapped = promote_skip(s->wrapped, kf_dtype_is_float(t->dtype) ? KF_DTYPE_F32 : t->dtype);
  else if (t->rank == 0)
    s->zero = promote_skip(s->zero, t->dtype);
  else
    s->dim = promote_skip(s->dim, t->dtype);
}

static kf_dtype combine(kf_dtype higher, kf_dtype lower) {
  if (kf_dtype_is_float(higher)) return higher;
  if (higher == KF_DTYPE_BOOL || kf_dtype_is_float(lower)) return promote_skip(higher, lower);
  if (higher != KF_DTYPE_INVALID) return higher;
  return lower;
}

kf_dtype kb_result_type(const kf_type *a, const kf_type *b) {
  rts s = {KF_DTYPE_INVALID, KF_DTYPE_INVALID, KF_DTYPE_INVALID};
  rts_add(&s, a);
  if (b) rts_add(&s, b);
  return combine(s.dim, combine(s.zero, s.wrapped));
}

static kf_dtype float_of(kf_dtype t) { return kf_dtype_is_float(t) ? t : KF_DTYPE_F32; }

/* ---- literals and conversions ------------------------------------------------------------ */

static void float_literal(double v, const char *rt, char *buf, size_t n) {
  bool f = strcmp(rt, "float") == 0;
  if (isnan(v))
    snprintf(buf, n, "kf::nan_<%s>()", rt);
  else if (isinf(v))
    snprintf(buf, n, "%s%s", v < 0 ? "-" : "", f ? "kf::inf_f()" : "kf::inf_d()");
  else
    snprintf(buf, n, "((%s)%a)", rt, v); /* hex: exact; the cast rounds once */
}

static void int_literal(int64_t v, const char *rt, char *buf, size_t n) {
  if (v == INT64_MIN)
    snprintf(buf, n, "((%s)(-9223372036854775807LL - 1))", rt);
  else
    snprintf(buf, n, "((%s)%" PRId64 "LL)", rt, v);
}

void kb_literal(kf_number v, kf_dtype t, bool fp64, char *buf, size_t n) {
  kf_dtype r = kb_reg_dtype(t, fp64);
  const char *rt = kb_storage_type(r);
  if (r == KF_DTYPE_BOOL) {
    bool b = v.kind == KF_NUM_FLOAT ? v.f != 0 : v.i != 0;
    snprintf(buf, n, "%s", b ? "true" : "false");
  } else if (kf_dtype_is_float(r)) {
    double d = v.kind == KF_NUM_FLOAT ? v.f : (double)v.i;
    /* a tensor of a 16-bit float dtype holds the rounded value */
    if ((t == KF_DTYPE_F16 || t == KF_DTYPE_BF16 || (t == KF_DTYPE_F32 && fp64)) && isfinite(d)) {
      char inner[96];
      float_literal(d, rt, inner, sizeof inner);
      snprintf(buf, n, "kf::round_as<%s>(%s)", kb_storage_type(t), inner);
    } else {
      float_literal(d, rt, buf, n);
    }
  } else {
    if (v.kind == KF_NUM_FLOAT) {
      /* a float value in an integer type: truncated like a cast */
      char inner[96];
      float_literal(v.f, "double", inner, sizeof inner);
      snprintf(buf, n, "kf::cvt<%s>(%s)", rt, inner);
    } else {
      int_literal(v.i, rt, buf, n);
    }
  }
}

/* a wrapped number's literal in the computation type (no rounding to a
 * 16-bit float: ATen keeps scalars in opmath) */
static void scalar_literal(kf_number v, kf_dtype ct, bool fp64, char *buf, size_t n) {
  kf_dtype r = kb_reg_dtype(ct, fp64);
  kb_literal(v, r, fp64, buf, n);
}

void kb_convert(const kb_expr *e, const char *x, kf_dtype from, kf_dtype to, char *buf, size_t n) {
  const char *rf = kb_reg_type(from, e->fp64), *rt = kb_reg_type(to, e->fp64);
  /* a value converted to a dtype narrower than its register (a 16-bit
   * float, or f32 in the fp64 reference) takes that dtype's rounding */
  bool narrow = from != to && (to == KF_DTYPE_F16 || to == KF_DTYPE_BF16 ||
                               (to == KF_DTYPE_F32 && e->fp64));
  if (strcmp(rf, rt) == 0) {
    if (narrow)
      snprintf(buf, n, "kf::round_as<%s>(%s)", kb_storage_type(to), x);
    else
      snprintf(buf, n, "%s", x);
  } else if (narrow) {
    snprintf(buf, n, "kf::round_as<%s>(kf::cvt<%s>(%s))", kb_storage_type(to), rt, x);
  } else {
    snprintf(buf, n, "kf::cvt<%s>(%s)", rt, x);
  }
}

/* Register-level conversion only: an op's result stays unrounded in its
 * register (as in any fused kernel), only its C type changes. */
void kb_reg_convert(const kb_expr *e, const char *x, kf_dtype from, kf_dtype to, char *buf,
                    size_t n) {
  const char *rf = kb_reg_type(from, e->fp64), *rt = kb_reg_type(to, e->fp64);
  if (strcmp(rf, rt) == 0)
    snprintf(buf, n, "%s", x);
  else
    snprintf(buf, n, "kf::cvt<%s>(%s)", rt, x);
}

/* ---- expressions ------------------------------------------------------------------------------ */

void kb_frame_identity(kb_frame *f, int rank, const int64_t *shape) {
  memset(f, 0, sizeof *f);
  f->split_dim = -1;
  f->rank = rank;
  for (int i = 0; i < rank; i++) {
    f->shape[i] = shape[i];
    f->loop_dim[i] = i;
  }
}

bool kb_frame_strides(const kb_frame *f, int loop_rank, const kf_type *t, int64_t *st) {
  for (int i = 0; i < KF_MAX_RANK; i++) st[i] = 0;
  (void)loop_rank;
  if (t->kind == KF_TYPE_SCALAR) return true;
  if (t->rank > f->rank) return false;
  for (int j = 0; j < t->rank; j++) {
    int fd = f->rank - t->rank + j;
    if (t->shape[j] == f->shape[fd]) {
      if (t->shape[j] == 1 || f->loop_dim[fd] < 0) continue;
      if (fd == f->split_dim) {
        st[f->loop_dim[fd]] += t->strides[j] * f->split_inner;
        st[f->loop_dim[fd] + 1] += t->strides[j];
      } else {
        st[f->loop_dim[fd]] += t->strides[j];
      }
    } else if (t->shape[j] != 1) {
      return false;
    }
  }
  return true;
}

kf_status kb_expr_init(kb_expr *e, kb_kernel *k, const kf_partition *p, const kf_group *g,
                       const kb_frame *f, kf_diag *diag) {
  memset(e, 0, sizeof *e);
  e->k = k;
  e->p = p;
  e->g = g;
  e->fp64 = k->opt && k->opt->fp64;
  e->frame = *f;
  e->diag = diag;
  e->n_ids = p->graph->next_value_id;
  e->name = calloc((size_t)e->n_ids + 1, sizeof *e->name);
  e->dtype = calloc((size_t)e->n_ids + 1, sizeof *e->dtype);
  if (!e->name || !e->dtype) {
    kb_expr_fini(e);
    return KF_ERR_NOMEM;
  }
  return KF_OK;
}

void kb_expr_fini(kb_expr *e) {
  if (e->name)
    for (uint32_t i = 0; i < e->n_ids; i++) free(e->name[i]);
  free(e->name);
  free(e->dtype);
  e->name = NULL;
  e->dtype = NULL;
}

kf_status kb_expr_bind(kb_expr *e, const kf_value *v, const char *cexpr) {
  if (v->id >= e->n_ids) return KF_ERR_INTERNAL;
  size_t n = strlen(cexpr) + 1;
  char *s = malloc(n);
  if (!s) return KF_ERR_NOMEM;
  memcpy(s, cexpr, n);
  free(e->name[v->id]);
  e->name[v->id] = s;
  e->dtype[v->id] = v->type.dtype;
  return KF_OK;
}

/* A fresh local holding `expr` in dtype t's register type. */
kf_status kb_bind_local(kb_expr *e, const kf_value *v, kf_dtype t, const char *expr) {
  char nm[32];
  snprintf(nm, sizeof nm, "t%d", e->k->n_tmp++);
  kb_emit(e->k, "const %s %s = %s;", kb_reg_type(t, e->fp64), nm, expr);
  return kb_expr_bind(e, v, nm);
}

void kb_frame_channel_strides(const kb_frame *f, int dim, const kf_type *t, int64_t *st) {
  for (int i = 0; i < KF_MAX_RANK; i++) st[i] = 0;
  if (t->rank != 1 || dim >= f->rank || f->loop_dim[dim] < 0 || t->shape[0] == 1) return;
  if (dim == f->split_dim) {
    st[f->loop_dim[dim]] = t->strides[0] * f->split_inner;
    st[f->loop_dim[dim] + 1] = t->strides[0];
  } else {
    st[f->loop_dim[dim]] = t->strides[0];
  }
}

kf_status kb_expr_load(kb_expr *e, const kf_value *v, const int64_t *st, char *out, size_t n);

/* Load v (a group input) with strides from the frame, or with explicit
 * strides st when non-NULL. */
static kf_status load_value(kb_expr *e, const kf_value *v, const int64_t *st, char *out, size_t n) {
  int gi = kb_group_input(e->g, v);
  int go = gi < 0 ? kb_group_output(e->g, v) : -1;
  if (gi < 0 && go < 0) {
    kf_diag_error(e->diag, "internal error: group %d: value %%%u is neither computed nor an input",
                  e->g->id, v->id);
    return KF_ERR_INTERNAL;
  }
  int64_t s[KF_MAX_RANK];
  if (st) {
    memcpy(s, st, sizeof s);
  } else if (!kb_frame_strides(&e->frame, e->k->rank, &v->type, s)) {
    kf_diag_error(e->diag, "internal error: group %d: value %%%u does not broadcast to the loop",
                  e->g->id, v->id);
    return KF_ERR_INTERNAL;
  }
  int prm = gi >= 0 ? kb_use_param(e->k, KF_UARG_INPUT, gi, v->type.dtype, false)
                    : kb_use_param(e->k, KF_UARG_OUTPUT, go, v->type.dtype, false);
  int a = kb_load(e->k, prm, s);
  char nm[32];
  snprintf(nm, sizeof nm, "v%d", e->k->n_tmp++);
  kb_emit(e->k, "const %s %s = KF_LD(%d);", kb_reg_type(v->type.dtype, e->fp64), nm, a);
  snprintf(out, n, "%s", nm);
  return KF_OK;
}

kf_status kb_expr_load(kb_expr *e, const kf_value *v, const int64_t *st, char *out, size_t n) {
  return load_value(e, v, st, out, n);
}

kf_status kb_expr_value(kb_expr *e, const kf_value *v, const char **out) {
  *out = NULL;
  if (v->id < e->n_ids && e->name[v->id]) {
    *out = e->name[v->id];
    return KF_OK;
  }
  kf_status st;
  if (v->def && (v->def->code == KF_OP_SCALAR ||
                 ((v->def->code == KF_OP_FULL || v->def->code == KF_OP_ARANGE) &&
                  op_in_group(e->g, v->def)))) {
    if ((st = kb_expr_op(e, v->def))) return st;
  } else if (v->type.kind == KF_TYPE_SCALAR) {
    return kb_unsupported(e->diag, e->g, v->def,
                          "a scalar operand that is not a compile-time constant");
  } else {
    char nm[32];
    if ((st = load_value(e, v, NULL, nm, sizeof nm))) return st;
    if ((st = kb_expr_bind(e, v, nm))) return st;
  }
  if (!e->name[v->id]) return KF_ERR_INTERNAL;
  *out = e->name[v->id];
  return KF_OK;
}

bool kb_is_elementwise(const kf_op *op) {
  switch (kf_op_info_get(op->code)->kind) {
  case KF_KIND_UNARY: case KF_KIND_BINARY: case KF_KIND_TERNARY: return true;
  case KF_KIND_SOURCE: return op->code != KF_OP_PARAM;
  default: return false;
  }
}

/* operand i converted to dtype ct, as a C expression in buf */
static kf_status operand(kb_expr *e, const kf_op *op, int i, kf_dtype ct, char *buf, size_t n) {
  const kf_value *v = op->operands[i];
  const char *x;
  kf_status st = kb_expr_value(e, v, &x);
  if (st) return st;
  if (v->type.kind == KF_TYPE_SCALAR) {
    /* a wrapped number: its literal straight in the computation type */
    if (v->def && v->def->code == KF_OP_SCALAR) {
      scalar_literal(kf_op_get_number(v->def, "value"), ct, e->fp64, buf, n);
      return KF_OK;
    }
    kb_convert(e, x, kb_reg_dtype(v->type.dtype, e->fp64), kb_reg_dtype(ct, e->fp64), buf, n);
    return KF_OK;
  }
  kb_convert(e, x, v->type.dtype, ct, buf, n);
  return KF_OK;
}

static bool is_scalar_const(const kf_value *v) {
  return v->type.kind == KF_TYPE_SCALAR && v->def && v->def->code == KF_OP_SCALAR;
}

/* The device function of agent/templates/kf_ops.cuh computing a unary op:
 * the one-row ops of ops.def name theirs, bitwise_not is its own. */
static const char *unary_fn(kf_opcode c) {
  switch (c) {
#define KF_OP(ID, NAME, KIND, OPERANDS, RESULTS, ATTRS)
#define KF_EW1(ID, NAME, RESULT, INTERP, TORCH) \
  case KF_OP_##ID: return NAME;
#include "kfuse/ops.def"
#undef KF_EW1
#undef KF_OP
  case KF_OP_BITWISE_NOT: return "bitwise_not";
  default: return NULL;
  }
}

static const char *binary_fn(kf_opcode c) {
  switch (c) {
  case KF_OP_ADD: return "add";
  case KF_OP_SUB: return "sub";
  case KF_OP_REMAINDER: return "remainder";
  case KF_OP_FMOD: return "fmod";
  case KF_OP_POW: return "pow";
    /* the one-row ops of ops.def: the device function of their name */
#define KF_OP(ID, NAME, KIND, OPERANDS, RESULTS, ATTRS)
#define KF_EW2(ID, NAME, RESULT, INTERP, TORCH, ATEN) \
  case KF_OP_##ID: return NAME;
#include "kfuse/ops.def"
#undef KF_EW2
#undef KF_OP
  default: return NULL;
  }
}

static bool is_compare(kf_opcode c) { return kf_op_ew2_result(c) == KF_EW2_CMP; }
static bool is_logical(kf_opcode c) { return kf_op_ew2_result(c) == KF_EW2_LOGICAL; }

static double num_attr(const kf_op *op, const char *name) {
  return kf_number_as_double(kf_op_get_number(op, name));
}

static kf_status emit_source(kb_expr *e, const kf_op *op) {
  const kf_value *r = op->results[0];
  char lit[160];
  switch (op->code) {
  case KF_OP_SCALAR: {
    kf_number v = kf_op_get_number(op, "value");
    kb_literal(v, r->type.dtype, e->fp64, lit, sizeof lit);
    return kb_expr_bind(e, r, lit);
  }
  case KF_OP_FULL: {
    kf_number v = kf_op_get_number(op, "value");
    kb_literal(v, r->type.dtype, e->fp64, lit, sizeof lit);
    return kb_bind_local(e, r, r->type.dtype, lit);
  }
  case KF_OP_ARANGE: {
    /* start + i * step in the accumulate type (float for 16-bit floats,
     * int64 for integers), then rounded to the dtype */
    int64_t st[KF_MAX_RANK];
    kf_type lin = r->type;
    lin.strides[0] = 1;
    if (!kb_frame_strides(&e->frame, e->k->rank, &lin, st))
      return kb_unsupported(e->diag, e->g, op, "arange does not broadcast to the group's shape");
    int ix = kb_index(e->k, st);
    kf_dtype dt = r->type.dtype;
    kf_dtype acc = kf_dtype_is_float(dt) ? kb_reg_dtype(dt, e->fp64) : KF_DTYPE_I64;
    char a[96], s[96], expr[400];
    kb_literal(kf_op_get_number(op, "start"), acc, e->fp64, a, sizeof a);
    kb_literal(kf_op_get_number(op, "step"), acc, e->fp64, s, sizeof s);
    char raw[300];
    snprintf(raw, sizeof raw, "(%s + (%s)KF_IX(%d) * %s)", a, kb_storage_type(acc), ix, s);
    kb_convert(e, raw, acc, dt, expr, sizeof expr);
    return kb_bind_local(e, r, dt, expr);
  }
  default: break;
  }
  return kb_unsupported(e->diag, e->g, op, "not an element-wise source");
}

static kf_status emit_unary(kb_expr *e, const kf_op *op) {
  const kf_value *x = op->operands[0], *r = op->results[0];
  kf_dtype dx = x->type.dtype, rd = r->type.dtype;
  char a[512], expr[1024], l0[96], l1[96], l2[96];
  kf_status st;
  switch (op->code) {
  case KF_OP_CAST: {
    const char *xv;
    if ((st = kb_expr_value(e, x, &xv))) return st;
    kb_convert(e, xv, dx, rd, expr, sizeof expr);
    return kb_bind_local(e, r, rd, expr);
  }
  case KF_OP_COPY: {
    const char *xv;
    if ((st = kb_expr_value(e, x, &xv))) return st;
    return kb_expr_bind(e, r, xv);
  }
  case KF_OP_LOGICAL_NOT: case KF_OP_ISNAN: case KF_OP_ISINF: case KF_OP_BITWISE_NOT:
    if ((st = operand(e, op, 0, dx, a, sizeof a))) return st;
    snprintf(expr, sizeof expr, "kf::%s(%s)", unary_fn(op->code), a);
    return kb_bind_local(e, r, rd, expr);
  case KF_OP_GELU: {
    const char *m = kf_op_get_str(op, "approximate");
    if (strcmp(m, "none") && strcmp(m, "tanh"))
      return kb_unsupported(e->diag, e->g, op, "gelu approximate=\"%s\"", m);
    if ((st = operand(e, op, 0, rd, a, sizeof a))) return st;
    snprintf(expr, sizeof expr, "kf::gelu_%s(%s)", strcmp(m, "tanh") ? "erf" : "tanh", a);
    return kb_bind_local(e, r, rd, expr);
  }
  case KF_OP_HARDTANH:
    if ((st = operand(e, op, 0, rd, a, sizeof a))) return st;
    scalar_literal(kf_op_get_number(op, "min_val"), rd, e->fp64, l0, sizeof l0);
    scalar_literal(kf_op_get_number(op, "max_val"), rd, e->fp64, l1, sizeof l1);
    snprintf(expr, sizeof expr, "kf::hardtanh(%s, %s, %s)", a, l0, l1);
    return kb_bind_local(e, r, rd, expr);
  case KF_OP_CLAMP: {
    bool lo = kf_op_has_attr(op, "min"), hi = kf_op_has_attr(op, "max");
    if ((st = operand(e, op, 0, rd, a, sizeof a))) return st;
    if (lo) scalar_literal(kf_op_get_number(op, "min"), rd, e->fp64, l0, sizeof l0);
    if (hi) scalar_literal(kf_op_get_number(op, "max"), rd, e->fp64, l1, sizeof l1);
    if (lo && hi)
      snprintf(expr, sizeof expr, "kf::clamp(%s, %s, %s)", a, l0, l1);
    else if (lo)
      snprintf(expr, sizeof expr, "kf::clamp_min(%s, %s)", a, l0);
    else if (hi)
      snprintf(expr, sizeof expr, "kf::clamp_max(%s, %s)", a, l1);
    else
      snprintf(expr, sizeof expr, "%s", a);
    return kb_bind_local(e, r, rd, expr);
  }
  case KF_OP_LEAKY_RELU:
    if ((st = operand(e, op, 0, rd, a, sizeof a))) return st;
    scalar_literal(kf_op_get_number(op, "negative_slope"), rd, e->fp64, l0, sizeof l0);
    snprintf(expr, sizeof expr, "kf::leaky_relu(%s, %s)", a, l0);
    return kb_bind_local(e, r, rd, expr);
  case KF_OP_ELU:
    if ((st = operand(e, op, 0, rd, a, sizeof a))) return st;
    scalar_literal(kf_op_get_number(op, "alpha"), rd, e->fp64, l0, sizeof l0);
    scalar_literal(kf_op_get_number(op, "scale"), rd, e->fp64, l1, sizeof l1);
    scalar_literal(kf_op_get_number(op, "input_scale"), rd, e->fp64, l2, sizeof l2);
    snprintf(expr, sizeof expr, "kf::elu(%s, %s, %s, %s)", a, l0, l1, l2);
    return kb_bind_local(e, r, rd, expr);
  case KF_OP_SOFTPLUS:
    if ((st = operand(e, op, 0, rd, a, sizeof a))) return st;
    scalar_literal(kf_op_get_number(op, "beta"), rd, e->fp64, l0, sizeof l0);
    scalar_literal(kf_op_get_number(op, "threshold"), rd, e->fp64, l1, sizeof l1);
    snprintf(expr, sizeof expr, "kf::softplus(%s, %s, %s)", a, l0, l1);
    return kb_bind_local(e, r, rd, expr);
  default: break;
  }
  const char *fn = unary_fn(op->code);
  if (!fn) return kb_unsupported(e->diag, e->g, op, "no device function for this op");
  /* computed in the result dtype: integers promote to float for math */
  if ((st = operand(e, op, 0, rd, a, sizeof a))) return st;
  snprintf(expr, sizeof expr, "kf::%s(%s)", fn, a);
  return kb_bind_local(e, r, rd, expr);
}

static kf_status emit_binary(kb_expr *e, const kf_op *op) {
  const kf_value *va = op->operands[0], *vb = op->operands[1], *r = op->results[0];
  kf_dtype rd = r->type.dtype;
  kf_dtype ct = kb_result_type(&va->type, &vb->type);
  if (is_logical(op->code)) ct = KF_DTYPE_BOOL;
  else if (op->code == KF_OP_DIV && !kf_op_has_attr(op, "rounding_mode")) ct = float_of(ct);
  else if (kf_op_ew2_result(op->code) == KF_EW2_FLOAT) ct = float_of(ct);
  else if (!is_compare(op->code)) ct = rd;
  char a[512], b[512], expr[1200], lit[96];
  kf_status st;
  if ((st = operand(e, op, 0, ct, a, sizeof a))) return st;
  if ((st = operand(e, op, 1, ct, b, sizeof b))) return st;
  kf_dtype res_ct = (is_compare(op->code) || is_logical(op->code)) ? KF_DTYPE_BOOL : ct;
  switch (op->code) {
  case KF_OP_ADD: case KF_OP_SUB:
    if (kf_op_has_attr(op, "alpha") && num_attr(op, "alpha") != 1.0) {
      scalar_literal(kf_op_get_number(op, "alpha"), ct, e->fp64, lit, sizeof lit);
      snprintf(expr, sizeof expr, "kf::%s(%s, %s, %s)", binary_fn(op->code), a, b, lit);
    } else {
      snprintf(expr, sizeof expr, "kf::%s(%s, %s)", binary_fn(op->code), a, b);
    }
    break;
  case KF_OP_DIV: {
    const char *fn = "div";
    if (kf_op_has_attr(op, "rounding_mode")) {
      const char *m = kf_op_get_str(op, "rounding_mode");
      if (strcmp(m, "trunc") == 0) fn = "div_trunc";
      else if (strcmp(m, "floor") == 0) fn = "div_floor";
      else return kb_unsupported(e->diag, e->g, op, "rounding_mode \"%s\"", m);
    }
    snprintf(expr, sizeof expr, "kf::%s(%s, %s)", fn, a, b);
    break;
  }
  case KF_OP_POW:
    if (kf_dtype_is_float(ct) && is_scalar_const(vb))
      snprintf(expr, sizeof expr, "kf::pow_scalar(%s, %s)", a, b);
    else
      snprintf(expr, sizeof expr, "kf::pow(%s, %s)", a, b);
    break;
  default: {
    const char *fn = binary_fn(op->code);
    if (!fn) return kb_unsupported(e->diag, e->g, op, "no device function for this op");
    snprintf(expr, sizeof expr, "kf::%s(%s, %s)", fn, a, b);
  }
  }
  char conv[1400];
  kb_reg_convert(e, expr, res_ct, rd, conv, sizeof conv);
  return kb_bind_local(e, r, rd, conv);
}

static kf_status emit_where(kb_expr *e, const kf_op *op) {
  const kf_value *r = op->results[0];
  kf_dtype rd = r->type.dtype;
  char c[512], a[512], b[512], expr[1600];
  kf_status st;
  if ((st = operand(e, op, 0, KF_DTYPE_BOOL, c, sizeof c))) return st;
  if ((st = operand(e, op, 1, rd, a, sizeof a))) return st;
  if ((st = operand(e, op, 2, rd, b, sizeof b))) return st;
  snprintf(expr, sizeof expr, "kf::where(%s, %s, %s)", c, a, b);
  return kb_bind_local(e, r, rd, expr);
}

bool kb_expr_can(const kf_op *op) {
  if (kb_is_elementwise(op)) return true;
  return op->code == KF_OP_BATCH_NORM && op->n_operands >= 5 && op->operands[3] && op->operands[4];
}

/* batch_norm with running statistics: per-channel affine (dim 1) */
static kf_status emit_bn_infer(kb_expr *e, const kf_op *op) {
  const kf_value *x = op->operands[0], *r = op->results[0];
  kf_dtype acc = kb_reg_dtype(kf_dtype_is_float(x->type.dtype) ? x->type.dtype : KF_DTYPE_F32, e->fp64);
  if (acc == KF_DTYPE_F16 || acc == KF_DTYPE_BF16) acc = KF_DTYPE_F32;
  char xs[512], ch[4][512], eps[96], expr[3000];
  const char *xv;
  kf_status st = kb_expr_value(e, x, &xv);
  if (st) return st;
  kb_convert(e, xv, kb_reg_dtype(x->type.dtype, e->fp64), acc, xs, sizeof xs);
  /* weight, bias, mean, var: operands 1..4 (weight/bias optional) */
  for (int i = 0; i < 4; i++) {
    const kf_value *v = op->operands[i + 1];
    if (!v) {
      snprintf(ch[i], sizeof ch[i], "%s", i == 0 ? "1" : "0");
      char lit[96];
      kb_literal(kf_number_int(i == 0 ? 1 : 0), acc, e->fp64, lit, sizeof lit);
      snprintf(ch[i], sizeof ch[i], "%s", lit);
      continue;
    }
    if (v->type.kind != KF_TYPE_TENSOR || v->type.rank != 1)
      return kb_unsupported(e->diag, e->g, op, "per-channel operand is not 1-d");
    int64_t s[KF_MAX_RANK];
    kb_frame_channel_strides(&e->frame, 1, &v->type, s);
    char nm[32];
    if ((st = load_value(e, v, s, nm, sizeof nm))) return st;
    kb_convert(e, nm, kb_reg_dtype(v->type.dtype, e->fp64), acc, ch[i], sizeof ch[i]);
  }
  kb_literal(kf_number_float(kf_op_get_float(op, "eps")), acc, e->fp64, eps, sizeof eps);
  snprintf(expr, sizeof expr, "kf::batch_norm_infer(%s, %s, %s, %s, %s, %s)", xs, ch[2], ch[3],
           ch[0], ch[1], eps);
  char conv[3200];
  kb_reg_convert(e, expr, acc, r->type.dtype, conv, sizeof conv);
  return kb_bind_local(e, r, r->type.dtype, conv);
}

kf_status kb_expr_op(kb_expr *e, const kf_op *op) {
  for (int i = 0; i < op->n_results; i++)
    if (op->results[i]->id < e->n_ids && e->name[op->results[i]->id]) return KF_OK;
  if (op->code == KF_OP_BATCH_NORM && kb_expr_can(op)) return emit_bn_infer(e, op);
  switch (kf_op_info_get(op->code)->kind) {
  case KF_KIND_SOURCE: return emit_source(e, op);
  case KF_KIND_UNARY: return emit_unary(e, op);
  case KF_KIND_BINARY: return emit_binary(e, op);
  case KF_KIND_TERNARY: return emit_where(e, op);
  default: break;
  }
  return kb_unsupported(e->diag, e->g, op, "not an element-wise op");
}

kf_status kb_expr_store(kb_expr *e, const kf_value *v, int out_index) {
  const char *x;
  kf_status st = kb_expr_value(e, v, &x);
  if (st) return st;
  int64_t s[KF_MAX_RANK];
  if (!kb_frame_strides(&e->frame, e->k->rank, &v->type, s)) {
    kf_diag_error(e->diag, "internal error: group %d: output %%%u does not match the loop",
                  e->g->id, v->id);
    return KF_ERR_INTERNAL;
  }
  int prm = kb_use_param(e->k, KF_UARG_OUTPUT, out_index, v->type.dtype, true);
  int a = kb_store(e->k, prm, s);
  kb_emit(e->k, "KF_ST(%d, %s);", a, x);
  return KF_OK;
}
