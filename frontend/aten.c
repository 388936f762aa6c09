/* frontend/aten.c — lowering of one ATen call onto kf ops: the machinery.
 *
 * The supported overloads are a table of PyTorch schema strings
 * (aten_ops.c), parsed once. A call is matched against its schema by
 * keyword and position, defaults fill in what the exporter left out, and
 * the row's lowering function emits kf ops through the helpers here, each
 * typed by kf_infer_types at once. Finally the results are compared with
 * the types the exporter recorded, so a lowering that disagrees with
 * PyTorch is reported at the node instead of producing a wrong graph.
 * In-place overloads (relu_, add_.Tensor, ...) are lowered through their
 * functional form; the caller rebinds the mutated tensor. */
#include <ctype.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aten_int.h"
#include "kfuse/frontend.h"

/* ---- dtype numbering ----------------------------------------------------- */

kf_dtype kf_dtype_from_export(int64_t v) {
  switch (v) {
  case 1: return KF_DTYPE_U8;
  case 2: return KF_DTYPE_I8;
  case 3: return KF_DTYPE_I16;
  case 4: return KF_DTYPE_I32;
  case 5: return KF_DTYPE_I64;
  case 6: return KF_DTYPE_F16;
  case 7: return KF_DTYPE_F32;
  case 8: return KF_DTYPE_F64;
  case 12: return KF_DTYPE_BOOL;
  case 13: return KF_DTYPE_BF16;
  default: return KF_DTYPE_INVALID;
  }
}

kf_dtype kf_dtype_from_c10(int64_t v) {
  switch (v) {
  case 0: return KF_DTYPE_U8;
  case 1: return KF_DTYPE_I8;
  case 2: return KF_DTYPE_I16;
  case 3: return KF_DTYPE_I32;
  case 4: return KF_DTYPE_I64;
  case 5: return KF_DTYPE_F16;
  case 6: return KF_DTYPE_F32;
  case 7: return KF_DTYPE_F64;
  case 11: return KF_DTYPE_BOOL;
  case 15: return KF_DTYPE_BF16;
  default: return KF_DTYPE_INVALID;
  }
}

/* ---- schema parsing -------------------------------------------------------
 * The table is static and trusted: a malformed schema string is a
 * programming error and aborts (`kfuse ops --aten` parses every row). Parsed
 * names and default lists live in static pools, so nothing is freed. */

#define MAX_ROWS 768

static at_schema schemas[MAX_ROWS];
static pthread_once_t schemas_once = PTHREAD_ONCE_INIT;
static char str_pool[96 * 1024];
static size_t str_used;
static int64_t int_pool[4096];
static size_t int_used;
static double float_pool[256];
static size_t float_used;

static const char *pool_str(const char *s, size_t n) {
  KF_ASSERT(str_used + n + 1 <= sizeof str_pool);
  char *p = str_pool + str_used;
  memcpy(p, s, n);
  p[n] = 0;
  str_used += n + 1;
  return p;
}

static void trim(const char **b, const char **e) {
  while (*b < *e && isspace((unsigned char)**b)) (*b)++;
  while (*e > *b && isspace((unsigned char)(*e)[-1])) (*e)--;
}

/* End of the top-level item starting at p (a ',' or the closing ')'). */
static const char *item_end(const char *p, const char *end) {
  int depth = 0;
  char quote = 0;
  for (; p < end; p++) {
    if (quote) {
      if (*p == quote) quote = 0;
      continue;
    }
    if (*p == '\'' || *p == '"') quote = *p;
    else if (*p == '(' || *p == '[') depth++;
    else if (*p == ')' || *p == ']') depth--;
    else if (*p == ',' && depth == 0) return p;
  }
  return end;
}

static bool word_is(const char *b, const char *e, const char *w) {
  return (size_t)(e - b) == strlen(w) && memcmp(b, w, (size_t)(e - b)) == 0;
}

static void parse_type(at_sarg *a, const char *b, const char *e) {
  /* drop alias annotations "(a)", "(a!)", "(a -> *)" */
  char buf[64];
  size_t n = 0;
  int depth = 0;
  for (const char *p = b; p < e; p++) {
    if (*p == '(') depth++;
    else if (*p == ')') depth--;
    else if (depth) {
      if (*p == '!') a->mutated = true;
    } else if (!isspace((unsigned char)*p)) {
      KF_ASSERT(n + 1 < sizeof buf);
      buf[n++] = *p;
    }
  }
  buf[n] = 0;
  const char *p = buf;
  const char *base_end = p;
  while (isalnum((unsigned char)*base_end) || *base_end == '_') base_end++;
  bool list = false, elem_opt = false, opt = false;
  const char *q = base_end;
  if (*q == '?') {
    elem_opt = true;
    q++;
  }
  if (*q == '[') {
    list = true;
    q++;
    if (isdigit((unsigned char)*q)) a->fixed = (int)strtol(q, (char **)&q, 10);
    KF_ASSERT(*q == ']');
    q++;
    if (*q == '?') {
      opt = true;
      q++;
    }
  } else if (elem_opt) {
    opt = true;
    elem_opt = false;
  }
  KF_ASSERT(*q == 0);
  a->optional = opt;
  a->elem_opt = elem_opt;
  size_t bn = (size_t)(base_end - p);
#define IS(w) (bn == strlen(w) && memcmp(p, w, bn) == 0)
  if (IS("Tensor")) a->type = list ? AT_TENSORS : AT_TENSOR;
  else if (IS("Scalar")) { KF_ASSERT(!list); a->type = AT_SCALAR; }
  else if (IS("int") || IS("SymInt")) a->type = list ? AT_INTS : AT_INT;
  else if (IS("float")) a->type = list ? AT_FLOATS : AT_FLOAT;
  else if (IS("bool")) a->type = list ? AT_BOOLS : AT_BOOL;
  else if (IS("str")) a->type = AT_STR;
  else if (IS("ScalarType")) a->type = AT_DTYPE;
  else if (IS("Layout") || IS("Device") || IS("MemoryFormat") || IS("Generator"))
    a->type = AT_OTHER;
  else KF_ASSERT(!"unknown type in an ATen schema");
#undef IS
}

static double parse_float_lit(const char *b, const char *e) {
  char buf[64];
  size_t n = (size_t)(e - b);
  KF_ASSERT(n < sizeof buf);
  memcpy(buf, b, n);
  buf[n] = 0;
  if (strcmp(buf, "inf") == 0) return INFINITY;
  if (strcmp(buf, "-inf") == 0) return -INFINITY;
  char *end;
  double v = strtod(buf, &end);
  KF_ASSERT(*end == 0);
  return v;
}

static void parse_default(at_sarg *a, const char *b, const char *e) {
  kf_aten_arg *d = &a->def;
  a->has_default = true;
  if (word_is(b, e, "None")) {
    d->kind = KF_ARG_NONE;
  } else if (word_is(b, e, "True") || word_is(b, e, "False")) {
    d->kind = KF_ARG_BOOL;
    d->i = *b == 'T';
  } else if (*b == '\'' || *b == '"') {
    d->kind = KF_ARG_STR;
    d->s = pool_str(b + 1, (size_t)(e - b - 2));
  } else if (*b == '[') {
    /* int or float list */
    const char *p = b + 1, *end = e - 1;
    int64_t *iv = int_pool + int_used;
    int n = 0;
    while (p < end) {
      const char *ie = item_end(p, end), *ib = p;
      trim(&ib, &ie);
      if (ib < ie) {
        KF_ASSERT(int_used + (size_t)n + 1 <= sizeof int_pool / sizeof *int_pool);
        iv[n++] = (int64_t)parse_float_lit(ib, ie);
      }
      p = item_end(p, end) + 1;
    }
    int_used += (size_t)n;
    d->kind = KF_ARG_INTS;
    d->ints = iv;
    d->n = n;
  } else if (isdigit((unsigned char)*b) || *b == '-' || word_is(b, e, "inf")) {
    bool is_float = false;
    for (const char *p = b; p < e; p++)
      if (*p == '.' || *p == 'e' || *p == 'E' || *p == 'i') is_float = true;
    if (is_float) {
      d->kind = KF_ARG_FLOAT;
      d->f = parse_float_lit(b, e);
    } else {
      d->kind = KF_ARG_INT;
      d->i = (int64_t)parse_float_lit(b, e);
      d->f = (double)d->i;
    }
  } else {
    d->kind = KF_ARG_IGNORED; /* contiguous_format, long, ... */
  }
  /* int[N]=k means k repeated N times */
  if (a->type == AT_INTS && d->kind == KF_ARG_INT) {
    int n = a->fixed ? a->fixed : 1;
    KF_ASSERT(int_used + (size_t)n <= sizeof int_pool / sizeof *int_pool);
    int64_t *iv = int_pool + int_used;
    for (int i = 0; i < n; i++) iv[i] = d->i;
    int_used += (size_t)n;
    d->kind = KF_ARG_INTS;
    d->ints = iv;
    d->n = n;
  }
  if (a->type == AT_FLOATS && d->kind == KF_ARG_INTS) {
    KF_ASSERT(float_used + (size_t)d->n <= sizeof float_pool / sizeof *float_pool);
    double *fv = float_pool + float_used;
    for (int i = 0; i < d->n; i++) fv[i] = (double)d->ints[i];
    float_used += (size_t)d->n;
    d->kind = KF_ARG_FLOATS;
    d->floats = fv;
  }
}

static void parse_schema(at_schema *s, const char *text) {
  const char *open = strchr(text, '(');
  KF_ASSERT(open != NULL);
  const char *dot = memchr(text, '.', (size_t)(open - text));
  if (dot) {
    s->name = pool_str(text, (size_t)(dot - text));
    s->overload = pool_str(dot + 1, (size_t)(open - dot - 1));
  } else {
    s->name = pool_str(text, (size_t)(open - text));
    s->overload = "";
  }
  /* the matching ')' of the argument list */
  const char *p = open + 1, *close = p;
  for (int depth = 1; *close; close++) {
    if (*close == '(') depth++;
    if (*close == ')' && --depth == 0) break;
  }
  KF_ASSERT(*close == ')');
  bool kw = false;
  while (p < close) {
    const char *ie = item_end(p, close), *b = p, *e = ie;
    trim(&b, &e);
    p = ie + 1;
    if (b == e) continue;
    if (word_is(b, e, "*")) {
      kw = true;
      continue;
    }
    KF_ASSERT(s->n_args < AT_MAX_ARGS);
    at_sarg *a = &s->args[s->n_args++];
    a->kw_only = kw;
    const char *eq = NULL;
    int depth = 0;
    for (const char *q = b; q < e; q++) {
      if (*q == '(' || *q == '[') depth++;
      if (*q == ')' || *q == ']') depth--;
      if (*q == '=' && depth == 0) {
        eq = q;
        break;
      }
    }
    const char *decl_end = eq ? eq : e, *db = b;
    trim(&db, &decl_end);
    const char *name = decl_end;
    while (name > db && !isspace((unsigned char)name[-1])) name--;
    KF_ASSERT(name > db);
    a->name = pool_str(name, (size_t)(decl_end - name));
    parse_type(a, db, name);
    if (eq) {
      const char *vb = eq + 1, *ve = e;
      trim(&vb, &ve);
      parse_default(a, vb, ve);
    }
  }
  const char *arrow = strstr(close, "->");
  KF_ASSERT(arrow != NULL);
  const char *r = arrow + 2, *re = r + strlen(r);
  trim(&r, &re);
  if (*r == '(') {
    const char *q = r + 1, *qe = re - 1;
    int n = 0;
    while (q < qe) {
      const char *ie = item_end(q, qe), *b = q, *e = ie;
      trim(&b, &e);
      if (b < e) n++;
      q = ie + 1;
    }
    s->n_returns = n;
  } else {
    s->n_returns = strstr(r, "[]") ? -1 : 1;
  }
}

static void parse_all(void) {
  KF_ASSERT(kf_aten_n_rows <= MAX_ROWS);
  for (int i = 0; i < kf_aten_n_rows; i++)
    parse_schema(&schemas[i], kf_aten_rows[i].schema);
}

static const at_schema *schema_of(int row) {
  pthread_once(&schemas_once, parse_all);
  return &schemas[row];
}

/* ---- target names ---------------------------------------------------------
 * "torch.ops.aten.add.Tensor", "aten::add.Tensor", "aten.add.Tensor",
 * "torch.aten.add.Tensor" or "add.Tensor"; ".default" or no overload for the
 * default one. */
typedef struct target {
  char name[128];
  char overload[64];
  bool inplace;
  bool aten; /* the namespace is aten (or none was given) */
  char ns[64];
} target;

static bool parse_target(const char *t, target *out) {
  memset(out, 0, sizeof *out);
  out->aten = true;
  static const char *prefixes[] = {"torch.ops.", "torch.", NULL};
  for (int i = 0; prefixes[i]; i++) {
    size_t n = strlen(prefixes[i]);
    if (strncmp(t, prefixes[i], n) == 0) {
      t += n;
      break;
    }
  }
  const char *sep = strstr(t, "::");
  size_t seplen = 2;
  const char *dot = strchr(t, '.');
  if (!sep && dot && strchr(dot + 1, '.')) {
    sep = dot; /* "ns.name.overload" */
    seplen = 1;
  } else if (!sep && dot && strncmp(t, "aten.", 5) == 0) {
    sep = dot; /* "aten.relu" */
    seplen = 1;
  }
  if (sep) {
    size_t n = (size_t)(sep - t);
    if (n >= sizeof out->ns) return false;
    memcpy(out->ns, t, n);
    out->aten = strcmp(out->ns, "aten") == 0;
    t = sep + seplen;
  }
  dot = strchr(t, '.');
  size_t nn = dot ? (size_t)(dot - t) : strlen(t);
  if (nn == 0 || nn >= sizeof out->name) return false;
  memcpy(out->name, t, nn);
  if (dot) {
    if (strlen(dot + 1) >= sizeof out->overload) return false;
    strcpy(out->overload, dot + 1);
    if (strcmp(out->overload, "default") == 0) out->overload[0] = 0;
  }
  /* relu_ is in place; __and__ and _foo are not */
  if (nn >= 2 && out->name[nn - 1] == '_' && out->name[nn - 2] != '_') {
    out->inplace = true;
    out->name[nn - 1] = 0;
  }
  return true;
}

bool kf_aten_is_inplace(const char *target_name) {
  target t;
  return parse_target(target_name, &t) && t.inplace;
}

static int find_row(const target *t, bool *name_known) {
  *name_known = false;
  for (int i = 0; i < kf_aten_n_rows; i++) {
    const at_schema *s = schema_of(i);
    if (strcmp(s->name, t->name) != 0) continue;
    *name_known = true;
    if (strcmp(s->overload, t->overload) == 0) return i;
  }
  return -1;
}

/* ---- errors -------------------------------------------------------------- */

kf_status at_err(at_ctx *c, kf_status st, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kf_diag_error(c->diag, "%s", msg); /* c->diag adds c->what */
  if (!c->st) c->st = st;
  return st;
}

/* First lines of a stack trace as a note (Python puts the model's own
 * frame first in export traces). */
static void note_source(kf_diag *diag, const char *node, const char *src) {
  if (!src || !*src) return;
  kf_strbuf b;
  kf_strbuf_init(&b);
  kf_strbuf_printf(&b, "node '%s' comes from:", node ? node : "?");
  const char *p = src;
  for (int line = 0; line < 4 && *p; line++) {
    const char *e = strchr(p, '\n');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    const char *q = p;
    while (n && (*q == ' ' || *q == '\t')) {
      q++;
      n--;
    }
    kf_strbuf_printf(&b, "\n    %.*s", (int)n, q);
    p = e ? e + 1 : p + strlen(p);
  }
  if (*p) kf_strbuf_printf(&b, "\n    ...");
  if (!b.failed && b.data) kf_diag_note(diag, "%s", b.data);
  kf_strbuf_fini(&b);
}

/* ---- matching arguments ---------------------------------------------------- */

static const char *kind_name(kf_aten_arg_kind k) {
  switch (k) {
  case KF_ARG_NONE: return "None";
  case KF_ARG_TENSOR: return "a tensor";
  case KF_ARG_TENSORS: return "a tensor list";
  case KF_ARG_INT: return "an int";
  case KF_ARG_FLOAT: return "a float";
  case KF_ARG_BOOL: return "a bool";
  case KF_ARG_INTS: return "an int list";
  case KF_ARG_FLOATS: return "a float list";
  case KF_ARG_BOOLS: return "a bool list";
  case KF_ARG_STR: return "a string";
  case KF_ARG_DTYPE: return "a dtype";
  case KF_ARG_IGNORED: return "a layout/device/memory format";
  }
  return "?";
}

static const char *type_name(at_type t) {
  switch (t) {
  case AT_TENSOR: return "Tensor";
  case AT_TENSORS: return "Tensor[]";
  case AT_SCALAR: return "Scalar";
  case AT_INT: return "int";
  case AT_INTS: return "int[]";
  case AT_FLOAT: return "float";
  case AT_FLOATS: return "float[]";
  case AT_BOOL: return "bool";
  case AT_BOOLS: return "bool[]";
  case AT_STR: return "str";
  case AT_DTYPE: return "ScalarType";
  case AT_OTHER: return "option";
  }
  return "?";
}

/* The number held by a scalar value made by kf.scalar, if that is what v is. */
static bool value_number(const kf_value *v, kf_number *out) {
  if (!v || !v->def || v->def->code != KF_OP_SCALAR) return false;
  *out = kf_op_get_number(v->def, "value");
  return true;
}

/* Check one argument against its schema type and convert it to the form
 * the accessors expect. */
static kf_status convert_arg(at_ctx *c, const at_sarg *sa, const kf_aten_arg *in,
                             kf_aten_arg *out) {
  *out = *in;
  out->name = sa->name;
  if (in->kind == KF_ARG_NONE) {
    if (sa->optional || sa->type == AT_OTHER) return KF_OK;
    return at_err(c, KF_ERR_FORMAT, "argument '%s' (%s) is None", sa->name,
                  type_name(sa->type));
  }
  kf_number num;
  bool is_num = false;
  if (in->kind == KF_ARG_TENSOR && value_number(in->value, &num)) is_num = true;
  switch (sa->type) {
  case AT_TENSOR:
    if (in->kind == KF_ARG_TENSOR && in->value) return KF_OK;
    if (in->kind == KF_ARG_INT || in->kind == KF_ARG_FLOAT || in->kind == KF_ARG_BOOL)
      return KF_OK;
    break;
  case AT_TENSORS:
    if (in->kind == KF_ARG_TENSORS) {
      for (int i = 0; i < in->n; i++)
        if (!in->values[i] && !sa->elem_opt)
          return at_err(c, KF_ERR_FORMAT, "argument '%s': entry %d is None", sa->name, i);
      return KF_OK;
    }
    break;
  case AT_SCALAR:
    if (in->kind == KF_ARG_INT || in->kind == KF_ARG_FLOAT || in->kind == KF_ARG_BOOL)
      return KF_OK;
    if (is_num) {
      out->kind = num.kind == KF_NUM_FLOAT ? KF_ARG_FLOAT
                  : num.kind == KF_NUM_INT ? KF_ARG_INT : KF_ARG_BOOL;
      out->i = num.i;
      out->f = num.f;
      return KF_OK;
    }
    if (in->kind == KF_ARG_TENSOR)
      return at_err(c, KF_ERR_UNSUPPORTED,
                    "argument '%s' must be a constant number, not a computed value",
                    sa->name);
    break;
  case AT_INT:
    if (in->kind == KF_ARG_INT) return KF_OK;
    if (in->kind == KF_ARG_BOOL) {
      out->kind = KF_ARG_INT;
      return KF_OK;
    }
    if (is_num && num.kind != KF_NUM_FLOAT) {
      out->kind = KF_ARG_INT;
      out->i = num.i;
      return KF_OK;
    }
    break;
  case AT_INTS:
    if (in->kind == KF_ARG_INTS) {
      if (sa->fixed > 1 && in->n == 1) {
        int64_t *v = kf_graph_alloc(c->g, sizeof(int64_t) * (size_t)sa->fixed);
        for (int i = 0; i < sa->fixed; i++) v[i] = in->ints[0];
        out->ints = v;
        out->n = sa->fixed;
      }
      return KF_OK;
    }
    if (in->kind == KF_ARG_INT || (is_num && num.kind == KF_NUM_INT)) {
      int n = sa->fixed ? sa->fixed : 1;
      int64_t *v = kf_graph_alloc(c->g, sizeof(int64_t) * (size_t)n);
      for (int i = 0; i < n; i++) v[i] = is_num ? num.i : in->i;
      out->kind = KF_ARG_INTS;
      out->ints = v;
      out->n = n;
      return KF_OK;
    }
    break;
  case AT_FLOAT:
    if (in->kind == KF_ARG_FLOAT) return KF_OK;
    if (in->kind == KF_ARG_INT || in->kind == KF_ARG_BOOL) {
      out->kind = KF_ARG_FLOAT;
      out->f = (double)in->i;
      return KF_OK;
    }
    if (is_num) {
      out->kind = KF_ARG_FLOAT;
      out->f = kf_number_as_double(num);
      return KF_OK;
    }
    break;
  case AT_FLOATS:
    if (in->kind == KF_ARG_FLOATS) return KF_OK;
    if (in->kind == KF_ARG_INTS || in->kind == KF_ARG_FLOAT || in->kind == KF_ARG_INT) {
      int n = in->kind == KF_ARG_INTS ? in->n : 1;
      double *v = kf_graph_alloc(c->g, sizeof(double) * (size_t)(n ? n : 1));
      for (int i = 0; i < n; i++)
        v[i] = in->kind == KF_ARG_INTS ? (double)in->ints[i]
               : in->kind == KF_ARG_FLOAT ? in->f : (double)in->i;
      out->kind = KF_ARG_FLOATS;
      out->floats = v;
      out->n = n;
      return KF_OK;
    }
    break;
  case AT_BOOL:
    if (in->kind == KF_ARG_BOOL) return KF_OK;
    if (in->kind == KF_ARG_INT && (in->i == 0 || in->i == 1)) {
      out->kind = KF_ARG_BOOL;
      return KF_OK;
    }
    if (is_num && num.kind != KF_NUM_FLOAT) {
      out->kind = KF_ARG_BOOL;
      out->i = num.i != 0;
      return KF_OK;
    }
    break;
  case AT_BOOLS:
    if (in->kind == KF_ARG_BOOLS || in->kind == KF_ARG_INTS) {
      out->kind = KF_ARG_BOOLS;
      return KF_OK;
    }
    break;
  case AT_STR:
    if (in->kind == KF_ARG_STR) return KF_OK;
    break;
  case AT_DTYPE:
    if (in->kind == KF_ARG_DTYPE) {
      if (in->i <= KF_DTYPE_INVALID || in->i >= KF_DTYPE_COUNT)
        return at_err(c, KF_ERR_UNSUPPORTED, "argument '%s': unsupported dtype", sa->name);
      return KF_OK;
    }
    if (in->kind == KF_ARG_INT) {
      kf_dtype t = c->call->dtype_numbering == KF_DTYPE_NUMBERING_EXPORT
                       ? kf_dtype_from_export(in->i)
                       : kf_dtype_from_c10(in->i);
      if (t == KF_DTYPE_INVALID)
        return at_err(c, KF_ERR_UNSUPPORTED, "argument '%s': unknown or unsupported dtype %lld",
                      sa->name, (long long)in->i);
      out->kind = KF_ARG_DTYPE;
      out->i = t;
      return KF_OK;
    }
    break;
  case AT_OTHER:
    return KF_OK;
  }
  return at_err(c, KF_ERR_FORMAT, "argument '%s' expects %s, got %s", sa->name,
                type_name(sa->type), kind_name(in->kind));
}

/* Integer arguments are sizes, strides, paddings and the like: keep them
 * far from int64 overflow. Slice bounds and a few others are clamped or
 * range-checked by their lowering and may be anything (sys.maxsize). */
#define AT_MAX_INT ((int64_t)1 << 50)

static bool int_unbounded(const char *name) {
  static const char *names[] = {"start",    "end",  "split_size", "chunks",    "diagonal",
                                "index",    "dim",  "dim0",       "dim1",      "start_dim",
                                "end_dim",  "dimension", "padding_idx", "min", "max", NULL};
  for (int i = 0; names[i]; i++)
    if (strcmp(names[i], name) == 0) return true;
  return false;
}

static kf_status check_range(at_ctx *c, const at_sarg *sa, const kf_aten_arg *a) {
  if (int_unbounded(sa->name)) return KF_OK;
  if (a->kind == KF_ARG_INT && (a->i > AT_MAX_INT || a->i < -AT_MAX_INT))
    return at_err(c, KF_ERR_LIMIT, "argument '%s' = %lld is out of range", sa->name, (long long)a->i);
  if (a->kind == KF_ARG_INTS)
    for (int i = 0; i < a->n; i++)
      if (a->ints[i] > AT_MAX_INT || a->ints[i] < -AT_MAX_INT)
        return at_err(c, KF_ERR_LIMIT, "argument '%s'[%d] = %lld is out of range", sa->name, i,
                      (long long)a->ints[i]);
  return KF_OK;
}

/* inplace: the node is the in-place form of the schema's op (relu_ for
 * relu), whose first argument is named self where the functional one may
 * name it otherwise (dropout_(self) for dropout(input)). */
static kf_status match_args(at_ctx *c, bool inplace) {
  const at_schema *s = c->s;
  bool given[AT_MAX_ARGS] = {0};
  int pos = 0;
  for (int j = 0; j < c->call->n_args; j++) {
    const kf_aten_arg *in = &c->call->args[j];
    int idx = -1;
    if (in->name) {
      for (int i = 0; i < s->n_args; i++)
        if (strcmp(s->args[i].name, in->name) == 0) idx = i;
      if (idx < 0 && inplace && j == 0 && strcmp(in->name, "self") == 0 && s->n_args > 0) idx = 0;
      if (idx < 0)
        return at_err(c, KF_ERR_FORMAT, "unknown argument '%s'", in->name);
    } else {
      while (pos < s->n_args && given[pos]) pos++;
      /* torch-mlir passes keyword-only arguments positionally too */
      if (pos >= s->n_args || (s->args[pos].kw_only && !c->call->kwargs_positional))
        return at_err(c, KF_ERR_FORMAT, "too many positional arguments (%d)", j + 1);
      idx = pos++;
    }
    if (given[idx])
      return at_err(c, KF_ERR_FORMAT, "argument '%s' given twice", s->args[idx].name);
    given[idx] = true;
    kf_status st = convert_arg(c, &s->args[idx], in, &c->a[idx]);
    if (st == KF_OK) st = check_range(c, &s->args[idx], &c->a[idx]);
    if (st) return st;
  }
  for (int i = 0; i < s->n_args; i++) {
    if (given[i]) continue;
    if (!s->args[i].has_default)
      return at_err(c, KF_ERR_FORMAT, "missing argument '%s'", s->args[i].name);
    c->a[i] = s->args[i].def;
    c->a[i].name = s->args[i].name;
  }
  return KF_OK;
}

/* ---- accessors ------------------------------------------------------------- */

const kf_aten_arg *at_arg(at_ctx *c, const char *name) {
  for (int i = 0; i < c->s->n_args; i++)
    if (strcmp(c->s->args[i].name, name) == 0) return &c->a[i];
  char msg[160];
  snprintf(msg, sizeof msg, "lowering of %s.%s reads unknown argument '%s'", c->s->name,
           c->s->overload, name);
  kf_panic(__FILE__, __LINE__, msg);
}

bool at_none(at_ctx *c, const char *name) { return at_arg(c, name)->kind == KF_ARG_NONE; }

int64_t at_int(at_ctx *c, const char *name) {
  const kf_aten_arg *a = at_arg(c, name);
  KF_ASSERT(a->kind == KF_ARG_INT || a->kind == KF_ARG_BOOL);
  return a->i;
}

double at_float(at_ctx *c, const char *name) {
  const kf_aten_arg *a = at_arg(c, name);
  KF_ASSERT(a->kind == KF_ARG_FLOAT || a->kind == KF_ARG_INT);
  return a->kind == KF_ARG_FLOAT ? a->f : (double)a->i;
}

bool at_bool(at_ctx *c, const char *name) {
  const kf_aten_arg *a = at_arg(c, name);
  KF_ASSERT(a->kind == KF_ARG_BOOL || a->kind == KF_ARG_INT);
  return a->i != 0;
}

const char *at_str(at_ctx *c, const char *name) {
  const kf_aten_arg *a = at_arg(c, name);
  return a->kind == KF_ARG_STR ? a->s : NULL;
}

kf_dtype at_dtype(at_ctx *c, const char *name) {
  const kf_aten_arg *a = at_arg(c, name);
  return a->kind == KF_ARG_DTYPE ? (kf_dtype)a->i : KF_DTYPE_INVALID;
}

kf_number at_num(at_ctx *c, const char *name) {
  const kf_aten_arg *a = at_arg(c, name);
  switch (a->kind) {
  case KF_ARG_INT: return kf_number_int(a->i);
  case KF_ARG_BOOL: return kf_number_bool(a->i != 0);
  case KF_ARG_FLOAT: return kf_number_float(a->f);
  default: break;
  }
  KF_ASSERT(!"Scalar argument without a number");
  return kf_number_int(0);
}

const int64_t *at_ints(at_ctx *c, const char *name, int *n) {
  const kf_aten_arg *a = at_arg(c, name);
  if (a->kind != KF_ARG_INTS) {
    *n = 0;
    return NULL;
  }
  *n = a->n;
  return a->ints;
}

const double *at_floats(at_ctx *c, const char *name, int *n) {
  const kf_aten_arg *a = at_arg(c, name);
  if (a->kind != KF_ARG_FLOATS) {
    *n = 0;
    return NULL;
  }
  *n = a->n;
  return a->floats;
}

kf_value **at_tensors(at_ctx *c, const char *name, int *n) {
  const kf_aten_arg *a = at_arg(c, name);
  if (a->kind != KF_ARG_TENSORS) {
    *n = 0;
    return NULL;
  }
  *n = a->n;
  return a->values;
}

static kf_number arg_number(const kf_aten_arg *a) {
  return a->kind == KF_ARG_FLOAT ? kf_number_float(a->f)
         : a->kind == KF_ARG_BOOL ? kf_number_bool(a->i != 0)
                                  : kf_number_int(a->i);
}

kf_value *at_operand(at_ctx *c, const char *name) {
  const kf_aten_arg *a = at_arg(c, name);
  if (a->kind == KF_ARG_NONE) return NULL;
  if (a->kind == KF_ARG_TENSOR) return a->value;
  return at_scalar(c, arg_number(a));
}

kf_value *at_tensor(at_ctx *c, const char *name) {
  const kf_aten_arg *a = at_arg(c, name);
  if (a->kind == KF_ARG_NONE) return NULL;
  kf_number n;
  if (a->kind == KF_ARG_TENSOR) {
    if (a->value->type.kind == KF_TYPE_TENSOR) return a->value;
    if (!value_number(a->value, &n)) {
      at_err(c, KF_ERR_UNSUPPORTED, "argument '%s' must be a tensor", name);
      return NULL;
    }
  } else {
    n = arg_number(a);
  }
  kf_dtype t = n.kind == KF_NUM_FLOAT ? KF_DTYPE_F32
               : n.kind == KF_NUM_INT ? KF_DTYPE_I64 : KF_DTYPE_BOOL;
  return at_full(c, t, 0, NULL, n);
}

/* ---- emitting ---------------------------------------------------------------- */

kf_op *at_op(at_ctx *c, kf_opcode code, kf_value **operands, int n,
             int n_results, const kf_type *declared) {
  KF_ASSERT(n_results >= 0 && n_results <= 4096);
  kf_type tmp[4];
  kf_type *types = n_results <= 4 ? tmp : kf_graph_alloc(c->g, sizeof(kf_type) * (size_t)n_results);
  for (int i = 0; i < n_results; i++) {
    if (declared)
      types[i] = declared[i];
    else
      memset(&types[i], 0, sizeof types[i]);
  }
  char name[300];
  snprintf(name, sizeof name, "%s.%d", c->call->node ? c->call->node : "aten", c->seq++);
  return kf_graph_append_op(c->g, code, name, operands, n, types, n_results);
}

kf_value *at_fin(at_ctx *c, kf_op *op) {
  kf_type tmp[4];
  kf_type *res = op->n_results <= 4 ? tmp
                                    : kf_graph_alloc(c->g, sizeof(kf_type) * (size_t)op->n_results);
  for (int i = 0; i < op->n_results; i++) res[i] = op->results[i]->type;
  kf_status st = kf_infer_types(op, res, c->diag);
  if (st != KF_OK) {
    if (!c->st) c->st = st;
    return NULL;
  }
  for (int i = 0; i < op->n_results; i++)
    if (res[i].kind == KF_TYPE_TENSOR && kf_type_numel(&res[i]) > AT_MAX_INT) {
      at_err(c, KF_ERR_LIMIT, "kf.%s would make a result of more than 2^50 elements",
             kf_opcode_name(op->code));
      return NULL;
    }
  for (int i = 0; i < op->n_results; i++) op->results[i]->type = res[i];
  return op->n_results ? op->results[0] : NULL;
}

kf_value *at_scalar(at_ctx *c, kf_number v) {
  kf_op *op = at_op(c, KF_OP_SCALAR, NULL, 0, 1, NULL);
  kf_op_set_number(op, "value", v);
  return at_fin(c, op);
}

kf_value *at_unary(at_ctx *c, kf_opcode code, kf_value *x) {
  if (!x) return NULL;
  return at_fin(c, at_op(c, code, &x, 1, 1, NULL));
}

kf_value *at_binary(at_ctx *c, kf_opcode code, kf_value *a, kf_value *b) {
  if (!a || !b) return NULL;
  kf_value *ops[2] = {a, b};
  return at_fin(c, at_op(c, code, ops, 2, 1, NULL));
}

kf_value *at_where(at_ctx *c, kf_value *cond, kf_value *a, kf_value *b) {
  if (!cond || !a || !b) return NULL;
  kf_value *ops[3] = {cond, a, b};
  return at_fin(c, at_op(c, KF_OP_WHERE, ops, 3, 1, NULL));
}

static bool same_shape(const kf_type *t, int rank, const int64_t *shape) {
  if (t->rank != rank) return false;
  for (int i = 0; i < rank; i++)
    if (t->shape[i] != shape[i]) return false;
  return true;
}

/* Ranks, sizes and element counts a declared result type may have. */
static bool shape_ok(at_ctx *c, int rank, const int64_t *shape) {
  if (rank > KF_MAX_RANK) {
    at_err(c, KF_ERR_LIMIT, "rank %d exceeds kfuse's limit of %d", rank, KF_MAX_RANK);
    return false;
  }
  int64_t n = 1;
  for (int i = 0; i < rank; i++) {
    if (shape[i] < 0) {
      at_err(c, KF_ERR_INVALID, "negative size %lld", (long long)shape[i]);
      return false;
    }
    if (__builtin_mul_overflow(n, shape[i], &n) || n > AT_MAX_INT) {
      at_err(c, KF_ERR_LIMIT, "a result of more than 2^50 elements");
      return false;
    }
  }
  return true;
}

kf_value *at_reshape(at_ctx *c, kf_value *x, int rank, const int64_t *shape) {
  if (!x) return NULL;
  if (!shape_ok(c, rank, shape)) return NULL;
  if (same_shape(&x->type, rank, shape)) return x;
  kf_type t;
  kf_type_init_tensor(&t, x->type.dtype, rank, shape);
  return at_fin(c, at_op(c, KF_OP_RESHAPE, &x, 1, 1, &t));
}

kf_value *at_permute(at_ctx *c, kf_value *x, const int64_t *dims, int n) {
  if (!x) return NULL;
  bool id = n == x->type.rank;
  for (int i = 0; i < n && id; i++) id = dims[i] == i;
  if (id) return x;
  kf_op *op = at_op(c, KF_OP_PERMUTE, &x, 1, 1, NULL);
  kf_op_set_ints(op, "dims", dims, n);
  return at_fin(c, op);
}

kf_value *at_expand(at_ctx *c, kf_value *x, int rank, const int64_t *shape) {
  if (!x) return NULL;
  if (same_shape(&x->type, rank, shape)) return x;
  if (!shape_ok(c, rank, shape)) return NULL;
  kf_type t;
  kf_type_init_tensor(&t, x->type.dtype, rank, shape);
  return at_fin(c, at_op(c, KF_OP_EXPAND, &x, 1, 1, &t));
}

kf_value *at_cast(at_ctx *c, kf_value *x, kf_dtype dt) {
  if (!x) return NULL;
  if (x->type.dtype == dt || dt == KF_DTYPE_INVALID) return x;
  kf_type t = x->type;
  t.dtype = dt;
  return at_fin(c, at_op(c, KF_OP_CAST, &x, 1, 1, &t));
}

kf_value *at_full(at_ctx *c, kf_dtype dt, int rank, const int64_t *shape,
                  kf_number v) {
  if (!shape_ok(c, rank, shape)) return NULL;
  kf_type t;
  kf_type_init_tensor(&t, dt, rank, shape);
  kf_op *op = at_op(c, KF_OP_FULL, NULL, 0, 1, &t);
  kf_op_set_number(op, "value", v);
  return at_fin(c, op);
}

kf_value *at_arange(at_ctx *c, kf_number start, kf_number end, kf_number step,
                    kf_dtype dt) {
  double a = kf_number_as_double(start), b = kf_number_as_double(end),
         s = kf_number_as_double(step);
  if (s == 0 || !isfinite(a) || !isfinite(b) || !isfinite(s)) {
    at_err(c, KF_ERR_INVALID, "arange needs finite bounds and a non-zero step");
    return NULL;
  }
  double n = ceil((b - a) / s);
  if ((b - a) / s > (double)AT_MAX_INT) {
    at_err(c, KF_ERR_LIMIT, "arange is too long");
    return NULL;
  }
  int64_t len = n > 0 ? (int64_t)n : 0;
  kf_type t;
  kf_type_init_tensor(&t, dt, 1, &len);
  kf_op *op = at_op(c, KF_OP_ARANGE, NULL, 0, 1, &t);
  kf_op_set_number(op, "start", start);
  kf_op_set_number(op, "end", end);
  kf_op_set_number(op, "step", step);
  return at_fin(c, op);
}

kf_value *at_reduce(at_ctx *c, kf_opcode code, kf_value *x, const int64_t *dims,
                    int nd, bool keepdim, kf_dtype declared) {
  if (!x) return NULL;
  kf_type t;
  memset(&t, 0, sizeof t);
  t.dtype = declared;
  kf_op *op = at_op(c, code, &x, 1, 1, &t);
  kf_op_set_ints(op, "dims", dims, nd);
  kf_op_set_bool(op, "keepdim", keepdim);
  return op ? at_fin(c, op) : NULL;
}

kf_value *at_index_select(at_ctx *c, kf_value *x, int64_t dim, kf_value *idx) {
  if (!x || !idx) return NULL;
  kf_value *ops[2] = {x, idx};
  kf_op *op = at_op(c, KF_OP_INDEX_SELECT, ops, 2, 1, NULL);
  kf_op_set_int(op, "dim", dim);
  return at_fin(c, op);
}

bool at_wrap_dim(at_ctx *c, int64_t d, int rank, const char *what, int64_t *out) {
  int64_t r = rank > 0 ? rank : 1;
  if (d < -r || d >= r) {
    at_err(c, KF_ERR_INVALID, "%s %lld is out of range for a tensor of rank %d", what,
           (long long)d, rank);
    return false;
  }
  *out = d < 0 ? d + r : d;
  return true;
}

bool at_dims(at_ctx *c, const int64_t *d, int n, int rank, bool all_if_empty,
             const char *what, int64_t *out, int *nd) {
  if ((!d || n == 0) && all_if_empty) {
    for (int i = 0; i < rank; i++) out[i] = i;
    *nd = rank;
    return true;
  }
  if (n > KF_MAX_RANK) {
    at_err(c, KF_ERR_INVALID, "%s has %d entries", what, n);
    return false;
  }
  int k = 0;
  for (int i = 0; i < n; i++) {
    int64_t w;
    if (!at_wrap_dim(c, d[i], rank, what, &w)) return false;
    if (rank == 0) continue; /* dim 0 / -1 of a 0-d tensor reduces nothing */
    int j = k;
    while (j > 0 && out[j - 1] > w) {
      out[j] = out[j - 1];
      j--;
    }
    if (j > 0 && out[j - 1] == w) {
      at_err(c, KF_ERR_INVALID, "%s: dim %lld appears more than once", what, (long long)w);
      return false;
    }
    out[j] = w;
    k++;
  }
  *nd = k;
  return true;
}

void at_out(at_ctx *c, int i, kf_value *v) {
  if (i >= 0 && i < c->n_outs) c->outs[i] = v;
}

kf_number at_number_of_kind(kf_dtype t, double v) {
  if (kf_dtype_is_float(t)) return kf_number_float(v);
  if (t == KF_DTYPE_BOOL) return kf_number_bool(v != 0);
  return kf_number_int((int64_t)v);
}

bool at_number_is(kf_number n, double v) { return kf_number_as_double(n) == v; }

/* ---- the entry point ----------------------------------------------------------- */

typedef struct prefixer {
  kf_diag *inner;
  const char *prefix;
} prefixer;

static void prefixed(void *user, kf_diag_level level, const char *msg) {
  prefixer *p = user;
  kf_diag_report(p->inner, level, "%s: %s", p->prefix, msg);
}

static void type_plain(const kf_type *t, char *buf, size_t n) {
  kf_type u = *t;
  if (u.kind == KF_TYPE_TENSOR) kf_type_set_contiguous(&u);
  kf_type_str(&u, buf, n);
}

/* In-place overloads: the functional result goes back into self's dtype
 * and must keep its shape (PyTorch's in-place rules). */
static kf_status finish_inplace(at_ctx *c) {
  const kf_aten_arg *self = &c->a[0];
  if (self->kind != KF_ARG_TENSOR || !self->value || c->n_outs < 1 || !c->outs[0])
    return KF_OK;
  kf_value *x = self->value, *r = c->outs[0];
  if (x->type.kind != KF_TYPE_TENSOR || r->type.kind != KF_TYPE_TENSOR) return KF_OK;
  if (!same_shape(&r->type, x->type.rank, x->type.shape)) {
    char a[128], b[128];
    type_plain(&x->type, a, sizeof a);
    type_plain(&r->type, b, sizeof b);
    return at_err(c, KF_ERR_INVALID, "in-place result %s does not fit the mutated tensor %s", b, a);
  }
  if (r->type.dtype != x->type.dtype) {
    if (kf_dtype_is_float(r->type.dtype) && !kf_dtype_is_float(x->type.dtype))
      return at_err(c, KF_ERR_INVALID, "in-place result of dtype %s cannot be stored into a %s tensor",
                    kf_dtype_name(r->type.dtype), kf_dtype_name(x->type.dtype));
    kf_value *v = at_cast(c, r, x->type.dtype);
    AT_CHECK(c, v);
    c->outs[0] = v;
  }
  return KF_OK;
}

static kf_status check_outputs(at_ctx *c) {
  const kf_aten_call *call = c->call;
  if (!call->out_types) return KF_OK;
  for (int i = 0; i < c->n_outs; i++) {
    kf_value *v = c->outs[i];
    if (!v || (call->out_known && !call->out_known[i])) continue;
    const kf_type *want = &call->out_types[i];
    const kf_type *got = &v->type;
    bool ok = want->kind == got->kind && want->dtype == got->dtype &&
              (want->kind == KF_TYPE_SCALAR || same_shape(got, want->rank, want->shape));
    if (ok) continue;
    char a[256], b[256];
    type_plain(want, a, sizeof a);
    type_plain(got, b, sizeof b);
    return at_err(c, KF_ERR_INVALID, "result %d is %s in the archive but %s by kfuse's rules",
                  i, a, b);
  }
  return KF_OK;
}

kf_status kf_aten_lower(kf_graph *g, const kf_aten_call *call, kf_value **outs,
                        kf_diag *diag) {
  for (int i = 0; i < call->n_outs; i++) outs[i] = NULL;
  at_ctx c;
  memset(&c, 0, sizeof c);
  c.g = g;
  c.call = call;
  c.outs = outs;
  c.n_outs = call->n_outs;
  const char *file = call->file ? call->file : "<model>";
  const char *node = call->node ? call->node : "?";
  target t;
  bool ok_target = parse_target(call->target ? call->target : "", &t);
  char disp[320];
  if (ok_target)
    snprintf(disp, sizeof disp, "%s.%s%s.%s", t.ns[0] ? t.ns : "aten", t.name,
             t.inplace ? "_" : "", t.overload[0] ? t.overload : "default");
  else
    snprintf(disp, sizeof disp, "%s", call->target ? call->target : "(no target)");
  snprintf(c.what, sizeof c.what, "%s: node '%s' (%s)", file, node, disp);
  prefixer pf = {diag, c.what};
  kf_diag wrapped;
  kf_diag_init(&wrapped, prefixed, &pf);
  c.diag = &wrapped;

  bool name_known = false;
  int row = (ok_target && t.aten) ? find_row(&t, &name_known) : -1;
  if (row < 0) {
    if (name_known) {
      kf_strbuf b;
      kf_strbuf_init(&b);
      for (int i = 0; i < kf_aten_n_rows; i++) {
        const at_schema *s = schema_of(i);
        if (strcmp(s->name, t.name) == 0)
          kf_strbuf_printf(&b, "%s%s.%s", b.len ? ", " : "", s->name,
                           s->overload[0] ? s->overload : "default");
      }
      kf_diag_error(diag, "%s: node '%s': unsupported overload %s (supported: %s)", file, node,
                    disp, b.data ? b.data : "");
      kf_strbuf_fini(&b);
    } else {
      kf_diag_error(diag, "%s: node '%s': unsupported op %s (kfuse ops --aten lists the supported ones)",
                    file, node, disp);
    }
    note_source(diag, node, call->source);
    return KF_ERR_UNSUPPORTED;
  }
  c.row = &kf_aten_rows[row];
  c.s = schema_of(row);
  kf_op *mark = g->last;
  kf_status st = match_args(&c, t.inplace);
  if (st == KF_OK) {
    st = c.row->fn(&c);
    if (st == KF_OK && c.st) st = c.st;
  }
  if (st == KF_OK && t.inplace) st = finish_inplace(&c);
  /* Name the op that makes result 0 after the node, and record where every
   * new op came from. */
  kf_op *first = mark ? mark->next : g->first;
  if (st == KF_OK) {
    const char *src = call->source ? kf_graph_strdup(g, call->source) : NULL;
    for (kf_op *op = first; op; op = op->next) op->source = src;
    kf_value *r0 = c.n_outs ? outs[0] : NULL;
    if (r0 && r0->def && call->node) {
      bool created = false;
      for (kf_op *op = first; op && !created; op = op->next) created = op == r0->def;
      if (created) r0->def->name = kf_graph_strdup(g, call->node);
    }
    st = check_outputs(&c);
  }
  if (st != KF_OK) {
    if (wrapped.n_errors == 0) at_err(&c, st, "lowering failed: %s", kf_status_str(st));
    note_source(diag, node, call->source);
  }
  return st;
}

/* ---- listing ------------------------------------------------------------------ */

void kf_aten_list(kf_aten_visit_fn fn, void *user) {
  for (int i = 0; i < kf_aten_n_rows; i++) {
    const at_row *r = &kf_aten_rows[i];
    (void)schema_of(i); /* a row that does not parse aborts here, in tests */
    char buf[96];
    const char *desc = r->desc;
    if (!desc) {
      snprintf(buf, sizeof buf, "kf.%s", kf_opcode_name((kf_opcode)r->k));
      desc = buf;
    }
    fn(user, r->schema, desc);
  }
  fn(user, "<op>_(Tensor(a!) self, ...) -> Tensor(a!)",
     "in-place forms of the ops above: lowered functionally (result cast back to self's "
     "dtype); the frontend rebinds the mutated tensor");
}
