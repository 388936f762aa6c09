/* frontend/mlir_text.c — reads MLIR generic-form text into the graph IR.
 *
 * The text is parsed by MLIR itself (C API, unregistered dialects allowed,
 * func registered), so kfuse accepts exactly what MLIR accepts and reports
 * MLIR's own syntax errors with line and column. The module must hold one
 * func.func; its arguments become graph inputs (named by the kf.name
 * argument attribute, else arg<i>), its ops become kf ops ("kf.*", the form
 * kf_graph_print writes) or go through the torch-dialect reader
 * ("torch.*"), and func.return gives the outputs. Names of ops come from
 * their NameLoc, so print -> parse -> print is byte-identical. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>
#include <mlir-c/Diagnostics.h>
#include <mlir-c/Dialect/Func.h>
#include <mlir-c/IR.h>

#include "kfuse/frontend.h"
#include "mlir_int.h"

/* ---- value map ----------------------------------------------------------- */

static size_t hash_ptr(const void *p) {
  uintptr_t x = (uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (size_t)x;
}

kf_value *kf_mlir_lookup(const mlir_conv *c, MlirValue v) {
  if (!c->cap) return NULL;
  size_t i = hash_ptr(v.ptr) & (c->cap - 1);
  while (c->map[i].key) {
    if (c->map[i].key == v.ptr) return c->map[i].value;
    i = (i + 1) & (c->cap - 1);
  }
  return NULL;
}

void kf_mlir_bind(mlir_conv *c, MlirValue v, kf_value *kv) {
  if ((c->n + 1) * 2 > c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 256;
    mlir_binding *m = calloc(cap, sizeof *m);
    KF_ASSERT(m != NULL);
    for (size_t i = 0; i < c->cap; i++) {
      if (!c->map[i].key) continue;
      size_t j = hash_ptr(c->map[i].key) & (cap - 1);
      while (m[j].key) j = (j + 1) & (cap - 1);
      m[j] = c->map[i];
    }
    free(c->map);
    c->map = m;
    c->cap = cap;
  }
  size_t i = hash_ptr(v.ptr) & (c->cap - 1);
  while (c->map[i].key && c->map[i].key != v.ptr) i = (i + 1) & (c->cap - 1);
  if (!c->map[i].key) c->n++;
  c->map[i].key = v.ptr;
  c->map[i].value = kv;
}

/* ---- helpers ------------------------------------------------------------- */

static bool sref_eq(MlirStringRef s, const char *lit) {
  size_t n = strlen(lit);
  return s.length == n && memcmp(s.data, lit, n) == 0;
}

bool kf_mlir_op_name(MlirOperation op, char *buf, size_t n) {
  MlirLocation loc = mlirOperationGetLocation(op);
  if (!mlirLocationIsAName(loc)) return false;
  MlirStringRef s = mlirIdentifierStr(mlirLocationNameGetName(loc));
  size_t k = s.length < n - 1 ? s.length : n - 1;
  memcpy(buf, s.data, k);
  buf[k] = 0;
  return true;
}

typedef struct print_ctx {
  kf_strbuf *b;
} print_ctx;

static void print_cb(MlirStringRef s, void *user) {
  kf_strbuf_append(((print_ctx *)user)->b, s.data, s.length);
}

static void type_text(MlirType t, kf_strbuf *b) {
  print_ctx pc = {b};
  mlirTypePrint(t, print_cb, &pc);
}

static void attr_text(MlirAttribute a, kf_strbuf *b) {
  print_ctx pc = {b};
  mlirAttributePrint(a, print_cb, &pc);
}

/* "strided<[1, 4]>" or "strided<[1, 4], offset: 5>" (spaces optional). */
static bool parse_strided(const char *s, int rank, kf_type *out) {
  const char *p = s;
  if (strncmp(p, "strided<[", 9) != 0) return false;
  p += 9;
  for (int i = 0; i < rank; i++) {
    while (*p == ' ') p++;
    char *e;
    long long v = strtoll(p, &e, 10);
    if (e == p || v < 0) return false;
    out->strides[i] = v;
    p = e;
    while (*p == ' ') p++;
    if (i + 1 < rank && *p++ != ',') return false;
  }
  while (*p == ' ') p++;
  if (*p++ != ']') return false;
  while (*p == ' ') p++;
  out->offset = 0;
  if (*p == ',') {
    p++;
    while (*p == ' ') p++;
    if (strncmp(p, "offset:", 7) != 0) return false;
    p += 7;
    char *e;
    long long v = strtoll(p, &e, 10);
    if (e == p || v < 0) return false;
    out->offset = v;
    p = e;
    while (*p == ' ') p++;
  }
  return p[0] == '>' && p[1] == 0;
}

kf_status kf_mlir_builtin_type(mlir_conv *c, MlirType t, kf_type *out,
                               const char *what) {
  MlirType el = t;
  bool tensor = false;
  if (mlirTypeIsARankedTensor(t)) {
    tensor = true;
    el = mlirShapedTypeGetElementType(t);
  }
  kf_dtype dt = KF_DTYPE_INVALID;
  if (mlirTypeIsAF32(el)) dt = KF_DTYPE_F32;
  else if (mlirTypeIsAF64(el)) dt = KF_DTYPE_F64;
  else if (mlirTypeIsAF16(el)) dt = KF_DTYPE_F16;
  else if (mlirTypeIsABF16(el)) dt = KF_DTYPE_BF16;
  else if (mlirTypeIsAInteger(el)) {
    unsigned w = mlirIntegerTypeGetWidth(el);
    bool u = mlirIntegerTypeIsUnsigned(el);
    if (w == 1 && !u) dt = KF_DTYPE_BOOL;
    else if (w == 8 && u) dt = KF_DTYPE_U8;
    else if (!u && w == 8) dt = KF_DTYPE_I8;
    else if (!u && w == 16) dt = KF_DTYPE_I16;
    else if (!u && w == 32) dt = KF_DTYPE_I32;
    else if (!u && w == 64) dt = KF_DTYPE_I64;
  }
  if (dt == KF_DTYPE_INVALID || (!tensor && dt != KF_DTYPE_F64 &&
                                 dt != KF_DTYPE_I64 && dt != KF_DTYPE_BOOL)) {
    kf_strbuf b;
    kf_strbuf_init(&b);
    type_text(t, &b);
    kf_diag_error(c->diag, "%s: %s: unsupported type %s", c->file, what,
                  b.data ? b.data : "?");
    kf_strbuf_fini(&b);
    return KF_ERR_UNSUPPORTED;
  }
  if (!tensor) {
    kf_type_init_scalar(out, dt);
    return KF_OK;
  }
  intptr_t rank = mlirShapedTypeGetRank(t);
  if (rank > KF_MAX_RANK) {
    kf_diag_error(c->diag, "%s: %s: rank %ld exceeds the maximum %d", c->file,
                  what, (long)rank, KF_MAX_RANK);
    return KF_ERR_UNSUPPORTED;
  }
  int64_t shape[KF_MAX_RANK];
  for (intptr_t i = 0; i < rank; i++) {
    if (mlirShapedTypeIsDynamicDim(t, i)) {
      kf_diag_error(c->diag, "%s: %s: dynamic dimension %ld is not supported (static shapes only)",
                    c->file, what, (long)i);
      return KF_ERR_UNSUPPORTED;
    }
    shape[i] = mlirShapedTypeGetDimSize(t, i);
  }
  kf_type_init_tensor(out, dt, (int)rank, shape);
  MlirAttribute enc = mlirRankedTensorTypeGetEncoding(t);
  if (!mlirAttributeIsNull(enc)) {
    /* #kf.strided<[s0, s1, ...]> or #kf.strided<[...], offset: N>: MLIR's
     * own strided<> layout is not accepted as a tensor encoding. */
    bool ok = mlirAttributeIsAOpaque(enc) &&
              sref_eq(mlirOpaqueAttrGetDialectNamespace(enc), "kf");
    if (ok) {
      MlirStringRef d = mlirOpaqueAttrGetData(enc);
      char buf[512];
      ok = d.length < sizeof buf;
      if (ok) {
        memcpy(buf, d.data, d.length);
        buf[d.length] = 0;
        ok = parse_strided(buf, (int)rank, out);
      }
    }
    if (!ok) {
      kf_strbuf b;
      kf_strbuf_init(&b);
      attr_text(enc, &b);
      kf_diag_error(c->diag, "%s: %s: tensor encoding must be #kf.strided<[...]> with one "
                    "non-negative stride per dim (and optionally offset: N), got %s",
                    c->file, what, b.data ? b.data : "?");
      kf_strbuf_fini(&b);
      return KF_ERR_FORMAT;
    }
  }
  return KF_OK;
}

static kf_status convert_type(mlir_conv *c, MlirType t, kf_type *out,
                              const char *what) {
  if (kf_torch_is_type(t)) return kf_torch_type(c, t, out, what);
  return kf_mlir_builtin_type(c, t, out, what);
}

/* ---- kf ops -------------------------------------------------------------- */

static kf_status bad_attr(mlir_conv *c, const char *node, const char *op,
                          const char *attr, const char *want, MlirAttribute a) {
  kf_strbuf b;
  kf_strbuf_init(&b);
  attr_text(a, &b);
  kf_diag_error(c->diag, "%s: node '%s' (kf.%s): attribute %s must be %s, got %s",
                c->file, node, op, attr, want, b.data ? b.data : "?");
  kf_strbuf_fini(&b);
  return KF_ERR_FORMAT;
}

static bool attr_is_i64(MlirAttribute a) {
  if (!mlirAttributeIsAInteger(a) || mlirAttributeIsABool(a)) return false;
  MlirType t = mlirAttributeGetType(a);
  return mlirTypeIsAInteger(t) && mlirIntegerTypeGetWidth(t) == 64;
}

static bool attr_is_f64(MlirAttribute a) {
  return mlirAttributeIsAFloat(a) && mlirTypeIsAF64(mlirAttributeGetType(a));
}

static kf_status set_attr(mlir_conv *c, kf_op *op, const kf_attr_schema *s,
                          MlirAttribute a) {
  const char *opn = kf_opcode_name(op->code);
  switch (s->kind) {
  case KF_ATTR_INT:
    if (!attr_is_i64(a)) return bad_attr(c, op->name, opn, s->name, "an i64 integer", a);
    kf_op_set_int(op, s->name, mlirIntegerAttrGetValueInt(a));
    return KF_OK;
  case KF_ATTR_FLOAT:
    if (!attr_is_f64(a)) return bad_attr(c, op->name, opn, s->name, "an f64 float", a);
    kf_op_set_float(op, s->name, mlirFloatAttrGetValueDouble(a));
    return KF_OK;
  case KF_ATTR_BOOL:
    if (!mlirAttributeIsABool(a)) return bad_attr(c, op->name, opn, s->name, "true or false", a);
    kf_op_set_bool(op, s->name, mlirBoolAttrGetValue(a));
    return KF_OK;
  case KF_ATTR_INTS: {
    if (!mlirAttributeIsADenseI64Array(a))
      return bad_attr(c, op->name, opn, s->name, "array<i64: ...>", a);
    intptr_t n = mlirDenseArrayGetNumElements(a);
    int64_t *v = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    if (!v) return KF_ERR_NOMEM;
    for (intptr_t i = 0; i < n; i++) v[i] = mlirDenseI64ArrayGetElement(a, i);
    kf_op_set_ints(op, s->name, v, (int)n);
    free(v);
    return KF_OK;
  }
  case KF_ATTR_FLOATS: {
    if (!mlirAttributeIsADenseF64Array(a))
      return bad_attr(c, op->name, opn, s->name, "array<f64: ...>", a);
    intptr_t n = mlirDenseArrayGetNumElements(a);
    double *v = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (!v) return KF_ERR_NOMEM;
    for (intptr_t i = 0; i < n; i++) v[i] = mlirDenseF64ArrayGetElement(a, i);
    kf_op_set_floats(op, s->name, v, (int)n);
    free(v);
    return KF_OK;
  }
  case KF_ATTR_STR: {
    if (!mlirAttributeIsAString(a)) return bad_attr(c, op->name, opn, s->name, "a string", a);
    MlirStringRef sr = mlirStringAttrGetValue(a);
    if (memchr(sr.data, 0, sr.length))
      return bad_attr(c, op->name, opn, s->name, "a string without NUL bytes", a);
    kf_op_set_str(op, s->name, kf_graph_strndup(c->g, sr.data, sr.length));
    return KF_OK;
  }
  case KF_ATTR_DTYPE: {
    kf_type t;
    if (!mlirAttributeIsAType(a)) return bad_attr(c, op->name, opn, s->name, "a type", a);
    kf_status st = kf_mlir_builtin_type(c, mlirTypeAttrGetValue(a), &t, s->name);
    if (st) return st;
    kf_op_set_dtype(op, s->name, t.dtype);
    return KF_OK;
  }
  case KF_ATTR_NUMBER:
    if (mlirAttributeIsABool(a))
      kf_op_set_number(op, s->name, kf_number_bool(mlirBoolAttrGetValue(a)));
    else if (attr_is_i64(a))
      kf_op_set_number(op, s->name, kf_number_int(mlirIntegerAttrGetValueInt(a)));
    else if (attr_is_f64(a))
      kf_op_set_number(op, s->name, kf_number_float(mlirFloatAttrGetValueDouble(a)));
    else
      return bad_attr(c, op->name, opn, s->name, "an i64, f64 or bool number", a);
    return KF_OK;
  }
  return KF_ERR_INTERNAL;
}

static kf_status convert_kf_op(mlir_conv *c, MlirOperation mop, const char *opname,
                               size_t opname_len) {
  kf_opcode code = kf_opcode_from_name(opname, opname_len);
  char name[256];
  bool named = kf_mlir_op_name(mop, name, sizeof name);
  if (code == KF_OP_COUNT) {
    kf_diag_error(c->diag, "%s: %s%s%sunknown op kf.%.*s (kfuse ops lists them)", c->file,
                  named ? "node '" : "", named ? name : "", named ? "': " : "",
                  (int)opname_len, opname);
    return KF_ERR_UNSUPPORTED;
  }
  const kf_op_info *info = kf_op_info_get(code);
  const char *node = named ? name : "?";

  /* operands into slots, by operandSegmentSizes when the op has optional
   * operands */
  intptr_t nops = mlirOperationGetNumOperands(mop);
  int fixed = info->n_operand_slots;
  bool variadic = fixed && info->operands[fixed - 1].variadic;
  int slots = variadic ? fixed - 1 + (int)(nops - (fixed - 1)) : fixed;
  if (variadic && nops < fixed - 1) {
    kf_diag_error(c->diag, "%s: node '%s' (kf.%s): %ld operands, expects at least %d",
                  c->file, node, info->name, (long)nops, fixed - 1);
    return KF_ERR_FORMAT;
  }
  if (nops > 1024) {
    kf_diag_error(c->diag, "%s: node '%s' (kf.%s): %ld operands, more than the text reader takes (1024)",
                  c->file, node, info->name, (long)nops);
    return KF_ERR_UNSUPPORTED;
  }
  kf_value **ops = calloc((size_t)(slots > 0 ? slots : 1), sizeof *ops);
  if (!ops) return KF_ERR_NOMEM;
  kf_status st = KF_OK;
  MlirAttribute seg = mlirOperationGetAttributeByName(mop, mlirStringRefCreateFromCString("operandSegmentSizes"));
  int next = 0;
  if (info->has_optional_operands && !mlirAttributeIsNull(seg)) {
    if (!mlirAttributeIsADenseI32Array(seg) || mlirDenseArrayGetNumElements(seg) != fixed) {
      kf_diag_error(c->diag, "%s: node '%s' (kf.%s): operandSegmentSizes must be array<i32> with %d entries",
                    c->file, node, info->name, fixed);
      st = KF_ERR_FORMAT;
      goto done;
    }
    for (int i = 0; i < fixed; i++) {
      int32_t k = mlirDenseI32ArrayGetElement(seg, i);
      if (k < 0 || k > 1 || (k == 0 && !info->operands[i].optional) || next + k > nops) {
        kf_diag_error(c->diag, "%s: node '%s' (kf.%s): operandSegmentSizes entry %d is invalid",
                      c->file, node, info->name, i);
        st = KF_ERR_FORMAT;
        goto done;
      }
      ops[i] = k ? kf_mlir_lookup(c, mlirOperationGetOperand(mop, next++)) : NULL;
      if (k && !ops[i]) goto undefined;
    }
    if (next != nops) {
      kf_diag_error(c->diag, "%s: node '%s' (kf.%s): operandSegmentSizes does not match the %ld operands",
                    c->file, node, info->name, (long)nops);
      st = KF_ERR_FORMAT;
      goto done;
    }
  } else {
    if (!variadic && nops != fixed) {
      kf_diag_error(c->diag, "%s: node '%s' (kf.%s): %ld operands, expects %d%s", c->file,
                    node, info->name, (long)nops, fixed,
                    info->has_optional_operands ? " (or operandSegmentSizes)" : "");
      st = KF_ERR_FORMAT;
      goto done;
    }
    for (intptr_t i = 0; i < nops; i++) {
      ops[i] = kf_mlir_lookup(c, mlirOperationGetOperand(mop, i));
      if (!ops[i]) goto undefined;
    }
  }

  intptr_t nres = mlirOperationGetNumResults(mop);
  kf_type *rt = calloc((size_t)(nres ? nres : 1), sizeof *rt);
  if (!rt) {
    st = KF_ERR_NOMEM;
    goto done;
  }
  for (intptr_t i = 0; i < nres && !st; i++) {
    char what[300];
    snprintf(what, sizeof what, "node '%s' result %ld", node, (long)i);
    st = convert_type(c, mlirValueGetType(mlirOperationGetResult(mop, i)), &rt[i], what);
  }
  if (st) {
    free(rt);
    goto done;
  }
  kf_op *op = kf_graph_append_op(c->g, code, named ? name : NULL, ops, slots, rt, (int)nres);
  free(rt);
  for (intptr_t i = 0; i < nres; i++) kf_mlir_bind(c, mlirOperationGetResult(mop, i), op->results[i]);

  /* attributes: every one must be in the schema */
  intptr_t na = mlirOperationGetNumAttributes(mop);
  for (intptr_t i = 0; i < na && !st; i++) {
    MlirNamedAttribute a = mlirOperationGetAttribute(mop, i);
    MlirStringRef an = mlirIdentifierStr(a.name);
    if (sref_eq(an, "operandSegmentSizes") && info->has_optional_operands) continue;
    int idx = -1;
    for (int k = 0; k < info->n_attrs; k++)
      if (sref_eq(an, info->attrs[k].name)) idx = k;
    if (idx < 0) {
      kf_diag_error(c->diag, "%s: node '%s' (kf.%s): unknown attribute '%.*s'", c->file,
                    op->name, info->name, (int)an.length, an.data);
      st = KF_ERR_FORMAT;
      break;
    }
    st = set_attr(c, op, &info->attrs[idx], a.attribute);
  }
  if (!st && code == KF_OP_PARAM && kf_op_has_attr(op, "fqn") && op->n_results == 1) {
    /* Text carries no weight data: register the weight by its type so the
     * graph verifies; its store stays empty. */
    const char *fqn = kf_op_get_str(op, "fqn");
    const kf_weight *w = kf_graph_find_weight(c->g, fqn);
    if (!w) {
      const kf_type *t = &op->results[0]->type;
      int64_t hi = t->offset;
      for (int d = 0; d < t->rank; d++)
        if (t->shape[d] > 0) hi += (t->shape[d] - 1) * t->strides[d];
      int64_t bytes = kf_type_numel(t) ? (hi + 1) * (int64_t)kf_dtype_size(t->dtype) : 0;
      kf_graph_add_weight(c->g, fqn, t, bytes);
    }
  }
  goto done;
undefined:
  kf_diag_error(c->diag, "%s: node '%s' (kf.%s): an operand is not defined by a converted op",
                c->file, node, info->name);
  st = KF_ERR_FORMAT;
done:
  free(ops);
  return st;
}

/* ---- diagnostics --------------------------------------------------------- */

typedef struct diag_ctx {
  mlir_conv *c;
  kf_strbuf msg;
} diag_ctx;

static MlirLogicalResult on_diag(MlirDiagnostic d, void *user) {
  diag_ctx *dc = user;
  kf_strbuf_init(&dc->msg);
  print_ctx pc = {&dc->msg};
  MlirLocation loc = mlirDiagnosticGetLocation(d);
  kf_strbuf loc_text;
  kf_strbuf_init(&loc_text);
  print_ctx lc = {&loc_text};
  mlirLocationPrint(loc, print_cb, &lc);
  mlirDiagnosticPrint(d, print_cb, &pc);
  const char *lt = loc_text.data ? loc_text.data : "";
  /* loc("-":3:7) -> line 3:7 of the file we were given */
  const char *q = strstr(lt, "\":");
  char where[64] = "";
  if (q) {
    int line = 0, col = 0;
    if (sscanf(q + 2, "%d:%d", &line, &col) == 2) snprintf(where, sizeof where, ":%d:%d", line, col);
  }
  kf_diag_level lvl = mlirDiagnosticGetSeverity(d) == MlirDiagnosticError ? KF_DIAG_ERROR
                      : mlirDiagnosticGetSeverity(d) == MlirDiagnosticWarning ? KF_DIAG_WARNING
                                                                                : KF_DIAG_NOTE;
  kf_diag_report(dc->c->diag, lvl, "%s%s: %s", dc->c->file, where,
                 dc->msg.data ? dc->msg.data : "MLIR diagnostic");
  kf_strbuf_fini(&loc_text);
  kf_strbuf_fini(&dc->msg);
  return mlirLogicalResultSuccess();
}

/* ---- the function -------------------------------------------------------- */

static kf_status convert_func(mlir_conv *c, MlirOperation func) {
  MlirAttribute sym = mlirOperationGetAttributeByName(func, mlirStringRefCreateFromCString("sym_name"));
  if (!mlirAttributeIsNull(sym) && mlirAttributeIsAString(sym)) {
    MlirStringRef s = mlirStringAttrGetValue(sym);
    c->g->name = kf_graph_strndup(c->g, s.data, s.length);
  }
  MlirAttribute arg_attrs = mlirOperationGetAttributeByName(func, mlirStringRefCreateFromCString("arg_attrs"));
  if (mlirOperationGetNumRegions(func) != 1) {
    kf_diag_error(c->diag, "%s: the function must have a body", c->file);
    return KF_ERR_FORMAT;
  }
  MlirBlock body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
  if (mlirBlockIsNull(body)) {
    kf_diag_error(c->diag, "%s: the function has no body (a declaration?)", c->file);
    return KF_ERR_FORMAT;
  }
  if (!mlirBlockIsNull(mlirBlockGetNextInRegion(body))) {
    kf_diag_error(c->diag, "%s: the function has several blocks; kfuse graphs are straight-line code",
                  c->file);
    return KF_ERR_UNSUPPORTED;
  }
  intptr_t nargs = mlirBlockGetNumArguments(body);
  for (intptr_t i = 0; i < nargs; i++) {
    MlirValue a = mlirBlockGetArgument(body, i);
    char name[256];
    snprintf(name, sizeof name, "arg%ld", (long)i);
    if (!mlirAttributeIsNull(arg_attrs) && mlirAttributeIsAArray(arg_attrs) &&
        i < mlirArrayAttrGetNumElements(arg_attrs)) {
      MlirAttribute d = mlirArrayAttrGetElement(arg_attrs, i);
      if (mlirAttributeIsADictionary(d)) {
        MlirAttribute n = mlirDictionaryAttrGetElementByName(d, mlirStringRefCreateFromCString("kf.name"));
        if (!mlirAttributeIsNull(n) && mlirAttributeIsAString(n)) {
          MlirStringRef s = mlirStringAttrGetValue(n);
          size_t k = s.length < sizeof name - 1 ? s.length : sizeof name - 1;
          memcpy(name, s.data, k);
          name[k] = 0;
        }
      }
    }
    kf_type t;
    char what[300];
    snprintf(what, sizeof what, "input '%s'", name);
    kf_status st = convert_type(c, mlirValueGetType(a), &t, what);
    if (st) return st;
    if (t.kind != KF_TYPE_TENSOR) {
      kf_diag_error(c->diag, "%s: input '%s' must be a tensor", c->file, name);
      return KF_ERR_UNSUPPORTED;
    }
    kf_mlir_bind(c, a, kf_graph_add_input(c->g, name, &t));
  }
  bool returned = false;
  for (MlirOperation op = mlirBlockGetFirstOperation(body); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
    kf_status st;
    if (n.length > 3 && memcmp(n.data, "kf.", 3) == 0) {
      st = convert_kf_op(c, op, n.data + 3, n.length - 3);
    } else if (n.length > 6 && memcmp(n.data, "torch.", 6) == 0) {
      st = kf_torch_convert_op(c, op);
    } else if (sref_eq(n, "func.return")) {
      intptr_t k = mlirOperationGetNumOperands(op);
      kf_value **outs = calloc((size_t)(k ? k : 1), sizeof *outs);
      if (!outs) return KF_ERR_NOMEM;
      st = KF_OK;
      for (intptr_t i = 0; i < k; i++) {
        outs[i] = kf_mlir_lookup(c, mlirOperationGetOperand(op, i));
        if (!outs[i]) {
          kf_diag_error(c->diag, "%s: return operand %ld is not a converted value", c->file, (long)i);
          st = KF_ERR_FORMAT;
        } else if (outs[i]->type.kind != KF_TYPE_TENSOR) {
          kf_diag_error(c->diag, "%s: return operand %ld is not a tensor", c->file, (long)i);
          st = KF_ERR_UNSUPPORTED;
        }
      }
      if (!st) kf_graph_set_outputs(c->g, outs, (int)k);
      free(outs);
      returned = true;
    } else {
      kf_diag_error(c->diag, "%s: unsupported op %.*s in the function body", c->file,
                    (int)n.length, n.data);
      st = KF_ERR_UNSUPPORTED;
    }
    if (st) return st;
  }
  if (!returned) {
    kf_diag_error(c->diag, "%s: the function has no func.return", c->file);
    return KF_ERR_FORMAT;
  }
  return KF_OK;
}

kf_status kf_mlir_parse(const char *text, size_t n, const char *display_name,
                        kf_graph **out, kf_diag *diag) {
  *out = NULL;
  const char *file = display_name ? display_name : "<input>";
  MlirContext ctx = mlirContextCreateWithThreading(false);
  mlirContextSetAllowUnregisteredDialects(ctx, true);
  mlirDialectHandleRegisterDialect(mlirGetDialectHandle__func__(), ctx);
  kf_graph *g = kf_graph_create("model");
  if (!g) {
    mlirContextDestroy(ctx);
    return KF_ERR_NOMEM;
  }
  g->origin = kf_graph_strdup(g, file);
  mlir_conv c = {.g = g, .diag = diag, .file = g->origin};
  diag_ctx dc = {&c, {0}};
  MlirDiagnosticHandlerID hid = mlirContextAttachDiagnosticHandler(ctx, on_diag, &dc, NULL);
  kf_status st = KF_OK;
  MlirModule m = mlirModuleCreateParse(ctx, mlirStringRefCreate(text, n));
  if (mlirModuleIsNull(m)) {
    kf_diag_error(diag, "%s: not valid MLIR text (see the message above)", file);
    st = KF_ERR_FORMAT;
    goto done;
  }
  MlirOperation func = {NULL};
  int nfunc = 0;
  for (MlirOperation op = mlirBlockGetFirstOperation(mlirModuleGetBody(m)); !mlirOperationIsNull(op);
       op = mlirOperationGetNextInBlock(op)) {
    MlirStringRef on = mlirIdentifierStr(mlirOperationGetName(op));
    if (sref_eq(on, "func.func")) {
      func = op;
      nfunc++;
    } else {
      kf_diag_error(diag, "%s: unexpected top-level op %.*s (expected one func.func)", file,
                    (int)on.length, on.data);
      st = KF_ERR_FORMAT;
      goto done;
    }
  }
  if (nfunc != 1) {
    kf_diag_error(diag, "%s: the module must hold exactly one func.func, it holds %d", file, nfunc);
    st = KF_ERR_FORMAT;
    goto done;
  }
  st = convert_func(&c, func);
done:
  if (!mlirModuleIsNull(m)) mlirModuleDestroy(m);
  mlirContextDetachDiagnosticHandler(ctx, hid);
  kf_torch_fini(&c);
  free(c.map);
  mlirContextDestroy(ctx);
  if (st != KF_OK) {
    kf_graph_destroy(g);
    return st;
  }
  *out = g;
  return KF_OK;
}
