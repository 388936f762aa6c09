/* frontend/torch_mlir.c — torch-mlir's `torch` dialect in generic form.
 *
 * torch-mlir's FX importer prints models as `torch.aten.*` ops over
 * `!torch.vtensor<[2,3],f32>` values, with Python-level arguments built by
 * `torch.constant.*` and `torch.prim.ListConstruct` ops and weights inlined
 * as `torch.vtensor.literal`. Parsed with unregistered dialects, those types
 * are opaque, so this file reads their text. Each ATen op becomes a
 * kf_aten_call (positional arguments, dtypes numbered as c10 does) lowered
 * by frontend/aten.c — the same table the .pt2 reader uses. Literals become
 * kf.param ops (kind "constant") whose bytes live in a small in-memory
 * weight store attached to the graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mlir-c/BuiltinAttributes.h>
#include <mlir-c/BuiltinTypes.h>
#include <mlir-c/IR.h>

#include "aten.h"
#include "mlir_int.h"

typedef enum tconst_kind {
  TC_INT,
  TC_FLOAT,
  TC_BOOL,
  TC_NONE,
  TC_STR,
  TC_LIST,
  TC_DEVICE,
} tconst_kind;

typedef struct tconst {
  const void *key; /* MlirValue.ptr */
  tconst_kind kind;
  int64_t i;
  double f;
  char *s;
  int n;
  MlirValue *items; /* TC_LIST */
} tconst;

typedef struct literal {
  char *fqn;
  void *data;
  int64_t nbytes;
} literal;

typedef struct literal_store {
  literal *items;
  int n;
} literal_store;

typedef struct torch_state {
  tconst *consts;
  int n, cap;
  literal_store *store; /* handed to the graph on first literal */
  int next_literal;
} torch_state;

static torch_state *state(mlir_conv *c) {
  if (!c->torch) c->torch = calloc(1, sizeof(torch_state));
  return c->torch;
}

/* ---- the literal weight store ------------------------------------------ */

static kf_status store_get(void *impl, const char *fqn, const void **data,
                           int64_t *nbytes, kf_diag *diag) {
  literal_store *s = impl;
  for (int i = 0; i < s->n; i++)
    if (strcmp(s->items[i].fqn, fqn) == 0) {
      *data = s->items[i].data;
      *nbytes = s->items[i].nbytes;
      return KF_OK;
    }
  kf_diag_error(diag, "weight '%s' is not among the torch.vtensor.literal values", fqn);
  return KF_ERR_ARG;
}

static void store_destroy(void *impl) {
  literal_store *s = impl;
  if (!s) return;
  for (int i = 0; i < s->n; i++) {
    free(s->items[i].fqn);
    free(s->items[i].data);
  }
  free(s->items);
  free(s);
}

/* ---- types --------------------------------------------------------------- */

static bool sref_eq(MlirStringRef s, const char *lit) {
  size_t n = strlen(lit);
  return s.length == n && memcmp(s.data, lit, n) == 0;
}

bool kf_torch_is_type(MlirType t) {
  return mlirTypeIsAOpaque(t) && sref_eq(mlirOpaqueTypeGetDialectNamespace(t), "torch");
}

static kf_dtype torch_dtype(const char *s, size_t n) {
  static const struct {
    const char *name;
    kf_dtype t;
  } tab[] = {{"f32", KF_DTYPE_F32}, {"f64", KF_DTYPE_F64},  {"f16", KF_DTYPE_F16},
             {"bf16", KF_DTYPE_BF16}, {"si64", KF_DTYPE_I64}, {"si32", KF_DTYPE_I32},
             {"si16", KF_DTYPE_I16}, {"si8", KF_DTYPE_I8},   {"ui8", KF_DTYPE_U8},
             {"i1", KF_DTYPE_BOOL},   {"i64", KF_DTYPE_I64},  {"i32", KF_DTYPE_I32}};
  for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
    if (strlen(tab[i].name) == n && memcmp(tab[i].name, s, n) == 0) return tab[i].t;
  return KF_DTYPE_INVALID;
}

kf_status kf_torch_type(mlir_conv *c, MlirType t, kf_type *out, const char *what) {
  MlirStringRef d = mlirOpaqueTypeGetData(t);
  char buf[512];
  if (d.length >= sizeof buf) goto bad;
  memcpy(buf, d.data, d.length);
  buf[d.length] = 0;
  const char *p = buf;
  if (strncmp(p, "vtensor<", 8) == 0)
    p += 8;
  else if (strncmp(p, "tensor<", 7) == 0)
    p += 7;
  else
    goto bad;
  if (*p == '*') {
    kf_diag_error(c->diag, "%s: %s: unranked tensor !torch.%s (static shapes only)", c->file,
                  what, buf);
    return KF_ERR_UNSUPPORTED;
  }
  if (*p++ != '[') goto bad;
  int64_t shape[KF_MAX_RANK];
  int rank = 0;
  while (*p && *p != ']') {
    if (*p == '?') {
      kf_diag_error(c->diag, "%s: %s: dynamic dimension in !torch.%s (static shapes only)",
                    c->file, what, buf);
      return KF_ERR_UNSUPPORTED;
    }
    char *e;
    long long v = strtoll(p, &e, 10);
    if (e == p || v < 0) goto bad;
    if (rank == KF_MAX_RANK) {
      kf_diag_error(c->diag, "%s: %s: rank exceeds %d", c->file, what, KF_MAX_RANK);
      return KF_ERR_UNSUPPORTED;
    }
    shape[rank++] = v;
    p = e;
    while (*p == ' ') p++;
    if (*p == ',') p++;
    while (*p == ' ') p++;
  }
  if (*p++ != ']') goto bad;
  while (*p == ' ') p++;
  if (*p++ != ',') goto bad;
  while (*p == ' ') p++;
  const char *dt = p;
  while (*p && *p != '>' && *p != ' ') p++;
  kf_dtype dtype = torch_dtype(dt, (size_t)(p - dt));
  if (dtype == KF_DTYPE_INVALID) {
    kf_diag_error(c->diag, "%s: %s: unsupported element type '%.*s' in !torch.%s", c->file,
                  what, (int)(p - dt), dt, buf);
    return KF_ERR_UNSUPPORTED;
  }
  if (strcmp(p, ">") != 0) goto bad;
  kf_type_init_tensor(out, dtype, rank, shape);
  return KF_OK;
bad:
  kf_diag_error(c->diag, "%s: %s: unsupported torch type !torch.%.*s (expected !torch.vtensor<[d0,d1,...],dtype>)",
                c->file, what, (int)d.length, d.data);
  return KF_ERR_UNSUPPORTED;
}

/* ---- constants ----------------------------------------------------------- */

static tconst *find_const(torch_state *s, MlirValue v) {
  for (int i = 0; i < s->n; i++)
    if (s->consts[i].key == v.ptr) return &s->consts[i];
  return NULL;
}

static tconst *add_const(torch_state *s, MlirValue v, tconst_kind k) {
  if (s->n == s->cap) {
    int cap = s->cap ? s->cap * 2 : 64;
    tconst *p = realloc(s->consts, sizeof *p * (size_t)cap);
    if (!p) return NULL;
    s->consts = p;
    s->cap = cap;
  }
  tconst *t = &s->consts[s->n++];
  memset(t, 0, sizeof *t);
  t->key = v.ptr;
  t->kind = k;
  return t;
}

static kf_status const_op(mlir_conv *c, MlirOperation op, const char *kind, const char *node) {
  torch_state *s = state(c);
  if (!s) return KF_ERR_NOMEM;
  if (mlirOperationGetNumResults(op) != 1) {
    kf_diag_error(c->diag, "%s: node '%s': torch.constant.%s must have one result", c->file, node, kind);
    return KF_ERR_FORMAT;
  }
  MlirValue r = mlirOperationGetResult(op, 0);
  MlirAttribute v = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("value"));
  tconst *t;
  if (strcmp(kind, "none") == 0) return add_const(s, r, TC_NONE) ? KF_OK : KF_ERR_NOMEM;
  if (strcmp(kind, "device") == 0) return add_const(s, r, TC_DEVICE) ? KF_OK : KF_ERR_NOMEM;
  if (mlirAttributeIsNull(v)) goto bad;
  if (strcmp(kind, "int") == 0 && mlirAttributeIsAInteger(v) && !mlirAttributeIsABool(v)) {
    if (!(t = add_const(s, r, TC_INT))) return KF_ERR_NOMEM;
    t->i = mlirIntegerAttrGetValueInt(v);
  } else if (strcmp(kind, "float") == 0 && mlirAttributeIsAFloat(v)) {
    if (!(t = add_const(s, r, TC_FLOAT))) return KF_ERR_NOMEM;
    t->f = mlirFloatAttrGetValueDouble(v);
  } else if (strcmp(kind, "bool") == 0 && mlirAttributeIsABool(v)) {
    if (!(t = add_const(s, r, TC_BOOL))) return KF_ERR_NOMEM;
    t->i = mlirBoolAttrGetValue(v);
  } else if (strcmp(kind, "str") == 0 && mlirAttributeIsAString(v)) {
    MlirStringRef sr = mlirStringAttrGetValue(v);
    if (!(t = add_const(s, r, TC_STR))) return KF_ERR_NOMEM;
    t->s = malloc(sr.length + 1);
    if (!t->s) return KF_ERR_NOMEM;
    memcpy(t->s, sr.data, sr.length);
    t->s[sr.length] = 0;
  } else {
    goto bad;
  }
  return KF_OK;
bad:
  kf_diag_error(c->diag, "%s: node '%s': torch.constant.%s has a missing or malformed value attribute",
                c->file, node, kind);
  return KF_ERR_FORMAT;
}

static kf_status list_op(mlir_conv *c, MlirOperation op, const char *node) {
  torch_state *s = state(c);
  if (!s) return KF_ERR_NOMEM;
  if (mlirOperationGetNumResults(op) != 1) {
    kf_diag_error(c->diag, "%s: node '%s': torch.prim.ListConstruct must have one result", c->file, node);
    return KF_ERR_FORMAT;
  }
  intptr_t n = mlirOperationGetNumOperands(op);
  tconst *t = add_const(s, mlirOperationGetResult(op, 0), TC_LIST);
  if (!t) return KF_ERR_NOMEM;
  t->items = malloc(sizeof(MlirValue) * (size_t)(n ? n : 1));
  if (!t->items) return KF_ERR_NOMEM;
  t->n = (int)n;
  for (intptr_t i = 0; i < n; i++) t->items[i] = mlirOperationGetOperand(op, i);
  return KF_OK;
}

/* ---- literals ------------------------------------------------------------ */

static kf_status literal_op(mlir_conv *c, MlirOperation op, const char *node, bool named) {
  torch_state *s = state(c);
  if (!s) return KF_ERR_NOMEM;
  if (mlirOperationGetNumResults(op) != 1) goto bad;
  MlirValue r = mlirOperationGetResult(op, 0);
  kf_type t;
  char what[300];
  snprintf(what, sizeof what, "node '%s'", node);
  kf_status st = kf_torch_type(c, mlirValueGetType(r), &t, what);
  if (st) return st;
  MlirAttribute v = mlirOperationGetAttributeByName(op, mlirStringRefCreateFromCString("value"));
  if (mlirAttributeIsNull(v)) goto bad;
  int64_t numel = kf_type_numel(&t);
  size_t es = kf_dtype_size(t.dtype);
  int64_t nbytes = numel * (int64_t)es;
  unsigned char *data = malloc((size_t)(nbytes ? nbytes : 1));
  if (!data) return KF_ERR_NOMEM;
  if (mlirAttributeIsADenseElements(v)) {
    int64_t have = mlirElementsAttrGetNumElements(v);
    if (have != numel && !mlirDenseElementsAttrIsSplat(v)) {
      free(data);
      kf_diag_error(c->diag, "%s: node '%s': literal has %lld elements, its type %lld", c->file,
                    node, (long long)have, (long long)numel);
      return KF_ERR_FORMAT;
    }
    for (int64_t i = 0; i < numel; i++) {
      intptr_t pos = mlirDenseElementsAttrIsSplat(v) ? 0 : (intptr_t)i;
      unsigned char *d = data + i * (int64_t)es;
      switch (t.dtype) {
      case KF_DTYPE_F32: {
        float x = mlirDenseElementsAttrIsSplat(v) ? mlirDenseElementsAttrGetFloatSplatValue(v)
                                                  : mlirDenseElementsAttrGetFloatValue(v, pos);
        memcpy(d, &x, 4);
        break;
      }
      case KF_DTYPE_F64: {
        double x = mlirDenseElementsAttrIsSplat(v) ? mlirDenseElementsAttrGetDoubleSplatValue(v)
                                                   : mlirDenseElementsAttrGetDoubleValue(v, pos);
        memcpy(d, &x, 8);
        break;
      }
      case KF_DTYPE_I64: {
        int64_t x = mlirDenseElementsAttrIsSplat(v) ? mlirDenseElementsAttrGetInt64SplatValue(v)
                                                    : mlirDenseElementsAttrGetInt64Value(v, pos);
        memcpy(d, &x, 8);
        break;
      }
      case KF_DTYPE_I32: {
        int32_t x = mlirDenseElementsAttrIsSplat(v) ? mlirDenseElementsAttrGetInt32SplatValue(v)
                                                    : mlirDenseElementsAttrGetInt32Value(v, pos);
        memcpy(d, &x, 4);
        break;
      }
      case KF_DTYPE_BOOL: {
        bool x = mlirDenseElementsAttrIsSplat(v) ? mlirDenseElementsAttrGetBoolSplatValue(v)
                                                 : mlirDenseElementsAttrGetBoolValue(v, pos);
        *d = x ? 1 : 0;
        break;
      }
      default:
        free(data);
        kf_diag_error(c->diag, "%s: node '%s': dense literals of %s are not supported", c->file,
                      node, kf_dtype_name(t.dtype));
        return KF_ERR_UNSUPPORTED;
      }
    }
  } else if (mlirAttributeIsADenseResourceElements(v)) {
    if (mlirElementsAttrGetNumElements(v) != numel) {
      free(data);
      kf_diag_error(c->diag, "%s: node '%s': literal has %lld elements, its type %lld", c->file,
                    node, (long long)mlirElementsAttrGetNumElements(v), (long long)numel);
      return KF_ERR_FORMAT;
    }
    for (int64_t i = 0; i < numel; i++) {
      unsigned char *d = data + i * (int64_t)es;
      switch (t.dtype) {
      case KF_DTYPE_F32: {
        float x = mlirDenseFloatResourceElementsAttrGetValue(v, (intptr_t)i);
        memcpy(d, &x, 4);
        break;
      }
      case KF_DTYPE_F64: {
        double x = mlirDenseDoubleResourceElementsAttrGetValue(v, (intptr_t)i);
        memcpy(d, &x, 8);
        break;
      }
      case KF_DTYPE_I64: {
        int64_t x = mlirDenseInt64ResourceElementsAttrGetValue(v, (intptr_t)i);
        memcpy(d, &x, 8);
        break;
      }
      case KF_DTYPE_I32: {
        int32_t x = mlirDenseInt32ResourceElementsAttrGetValue(v, (intptr_t)i);
        memcpy(d, &x, 4);
        break;
      }
      default:
        free(data);
        kf_diag_error(c->diag, "%s: node '%s': dense_resource literals of %s are not supported",
                      c->file, node, kf_dtype_name(t.dtype));
        return KF_ERR_UNSUPPORTED;
      }
    }
  } else {
    free(data);
    goto bad;
  }
  if (!s->store) {
    s->store = calloc(1, sizeof *s->store);
    if (!s->store) {
      free(data);
      return KF_ERR_NOMEM;
    }
    kf_weight_store ws = {s->store, store_get, store_destroy};
    kf_graph_take_store(c->g, ws);
  }
  char fqn[300];
  if (named)
    snprintf(fqn, sizeof fqn, "%s", node);
  else
    snprintf(fqn, sizeof fqn, "literal_%d", s->next_literal++);
  literal *items = realloc(s->store->items, sizeof *items * (size_t)(s->store->n + 1));
  if (!items) {
    free(data);
    return KF_ERR_NOMEM;
  }
  s->store->items = items;
  literal *l = &items[s->store->n];
  l->fqn = strdup(fqn);
  if (!l->fqn) {
    free(data);
    return KF_ERR_NOMEM;
  }
  l->data = data;
  l->nbytes = nbytes;
  s->store->n++;
  kf_graph_add_weight(c->g, fqn, &t, nbytes);
  kf_op *p = kf_graph_append_op(c->g, KF_OP_PARAM, named ? node : NULL, NULL, 0, &t, 1);
  kf_op_set_str(p, "fqn", fqn);
  kf_op_set_str(p, "kind", "constant");
  kf_mlir_bind(c, r, p->results[0]);
  return KF_OK;
bad:
  kf_diag_error(c->diag, "%s: node '%s': torch.vtensor.literal needs one !torch.vtensor result and a dense or dense_resource value",
                c->file, node);
  return KF_ERR_FORMAT;
}

/* ---- ATen ops ------------------------------------------------------------ */

/* Turn one operand into an argument. Lists are classified by their items. */
static kf_status to_arg(mlir_conv *c, torch_state *s, MlirValue v, kf_aten_arg *a,
                        const char *node, int index, void **owned, int *n_owned) {
  memset(a, 0, sizeof *a);
  kf_value *kv = kf_mlir_lookup(c, v);
  if (kv) {
    a->kind = KF_ARG_TENSOR;
    a->value = kv;
    return KF_OK;
  }
  tconst *t = s ? find_const(s, v) : NULL;
  if (!t) {
    kf_diag_error(c->diag, "%s: node '%s': argument %d is not a tensor, a torch.constant or a list "
                  "(values computed by unsupported ops cannot be used)", c->file, node, index);
    return KF_ERR_UNSUPPORTED;
  }
  switch (t->kind) {
  case TC_INT: a->kind = KF_ARG_INT; a->i = t->i; return KF_OK;
  case TC_FLOAT: a->kind = KF_ARG_FLOAT; a->f = t->f; return KF_OK;
  case TC_BOOL: a->kind = KF_ARG_BOOL; a->i = t->i; return KF_OK;
  case TC_NONE: a->kind = KF_ARG_NONE; return KF_OK;
  case TC_STR: a->kind = KF_ARG_STR; a->s = t->s; return KF_OK;
  case TC_DEVICE: a->kind = KF_ARG_IGNORED; return KF_OK;
  case TC_LIST: break;
  }
  /* classify the list */
  int nt = 0, ni = 0, nf = 0, nb = 0, nn = 0;
  for (int i = 0; i < t->n; i++) {
    if (kf_mlir_lookup(c, t->items[i])) {
      nt++;
      continue;
    }
    tconst *e = find_const(s, t->items[i]);
    if (!e) {
      kf_diag_error(c->diag, "%s: node '%s': argument %d: list item %d is not a constant or tensor",
                    c->file, node, index, i);
      return KF_ERR_UNSUPPORTED;
    }
    ni += e->kind == TC_INT;
    nf += e->kind == TC_FLOAT;
    nb += e->kind == TC_BOOL;
    nn += e->kind == TC_NONE;
  }
  void *mem = NULL;
  if (nt + nn == t->n && nt > 0) {
    kf_value **vals = calloc((size_t)t->n + 1, sizeof *vals);
    if (!vals) return KF_ERR_NOMEM;
    for (int i = 0; i < t->n; i++) vals[i] = kf_mlir_lookup(c, t->items[i]);
    a->kind = KF_ARG_TENSORS;
    a->values = vals;
    mem = vals;
  } else if (ni == t->n) {
    int64_t *v2 = calloc((size_t)t->n + 1, sizeof *v2);
    if (!v2) return KF_ERR_NOMEM;
    for (int i = 0; i < t->n; i++) v2[i] = find_const(s, t->items[i])->i;
    a->kind = KF_ARG_INTS;
    a->ints = v2;
    mem = v2;
  } else if (nf + ni == t->n) {
    double *v2 = calloc((size_t)t->n + 1, sizeof *v2);
    if (!v2) return KF_ERR_NOMEM;
    for (int i = 0; i < t->n; i++) {
      tconst *e = find_const(s, t->items[i]);
      v2[i] = e->kind == TC_FLOAT ? e->f : (double)e->i;
    }
    a->kind = KF_ARG_FLOATS;
    a->floats = v2;
    mem = v2;
  } else if (nb == t->n) {
    int64_t *v2 = calloc((size_t)t->n + 1, sizeof *v2);
    if (!v2) return KF_ERR_NOMEM;
    for (int i = 0; i < t->n; i++) v2[i] = find_const(s, t->items[i])->i;
    a->kind = KF_ARG_BOOLS;
    a->ints = v2;
    mem = v2;
  } else {
    kf_diag_error(c->diag, "%s: node '%s': argument %d is a list mixing kinds of items", c->file,
                  node, index);
    return KF_ERR_UNSUPPORTED;
  }
  a->n = t->n;
  owned[(*n_owned)++] = mem;
  return KF_OK;
}

static kf_status aten_op(mlir_conv *c, MlirOperation op, MlirStringRef name, const char *node,
                         bool named) {
  torch_state *s = state(c);
  if (!s) return KF_ERR_NOMEM;
  intptr_t nargs = mlirOperationGetNumOperands(op), nres = mlirOperationGetNumResults(op);
  kf_aten_arg *args = calloc((size_t)nargs + 1, sizeof *args);
  void **owned = calloc((size_t)nargs + 1, sizeof *owned);
  kf_type *types = calloc((size_t)nres + 1, sizeof *types);
  bool *known = calloc((size_t)nres + 1, sizeof *known);
  kf_value **outs = calloc((size_t)nres + 1, sizeof *outs);
  char *target = malloc(name.length + 1);
  int n_owned = 0;
  kf_status st = KF_OK;
  if (!args || !owned || !types || !known || !outs || !target) {
    st = KF_ERR_NOMEM;
    goto done;
  }
  /* "torch.aten.add.Tensor" -> "add.Tensor" */
  memcpy(target, name.data + 11, name.length - 11);
  target[name.length - 11] = 0;
  for (intptr_t i = 0; i < nargs && !st; i++)
    st = to_arg(c, s, mlirOperationGetOperand(op, i), &args[i], node, (int)i, owned, &n_owned);
  for (intptr_t i = 0; i < nres && !st; i++) {
    MlirType t = mlirValueGetType(mlirOperationGetResult(op, i));
    if (!kf_torch_is_type(t)) continue;
    MlirStringRef d = mlirOpaqueTypeGetData(t);
    if (d.length < 7 || (memcmp(d.data, "vtensor", 7) && memcmp(d.data, "tensor", 6))) continue;
    char what[300];
    snprintf(what, sizeof what, "node '%s' result %ld", node, (long)i);
    st = kf_torch_type(c, t, &types[i], what);
    known[i] = st == KF_OK;
  }
  if (st) goto done;
  kf_aten_call call = {
      .target = target,
      .node = named ? node : NULL,
      .source = NULL,
      .file = c->file,
      .n_args = (int)nargs,
      .args = args,
      .n_outs = (int)nres,
      .out_types = types,
      .out_known = known,
      .dtype_numbering = KF_DTYPE_NUMBERING_C10,
      .kwargs_positional = true,
  };
  st = kf_aten_lower(c->g, &call, outs, c->diag);
  if (st) goto done;
  for (intptr_t i = 0; i < nres; i++)
    if (outs[i]) kf_mlir_bind(c, mlirOperationGetResult(op, i), outs[i]);
done:
  for (int i = 0; i < n_owned; i++) free(owned[i]);
  free(owned);
  free(args);
  free(types);
  free(known);
  free(outs);
  free(target);
  return st;
}

kf_status kf_torch_convert_op(mlir_conv *c, MlirOperation op) {
  MlirStringRef n = mlirIdentifierStr(mlirOperationGetName(op));
  char node[256];
  bool named = kf_mlir_op_name(op, node, sizeof node);
  if (!named) {
    torch_state *s = state(c);
    if (!s) return KF_ERR_NOMEM;
    snprintf(node, sizeof node, "%.*s", (int)n.length, n.data);
  }
  if (n.length > 15 && memcmp(n.data, "torch.constant.", 15) == 0) {
    char kind[32];
    size_t k = n.length - 15 < sizeof kind - 1 ? n.length - 15 : sizeof kind - 1;
    memcpy(kind, n.data + 15, k);
    kind[k] = 0;
    if (!strcmp(kind, "int") || !strcmp(kind, "float") || !strcmp(kind, "bool") ||
        !strcmp(kind, "str") || !strcmp(kind, "none") || !strcmp(kind, "device"))
      return const_op(c, op, kind, node);
  } else if (sref_eq(n, "torch.prim.ListConstruct")) {
    return list_op(c, op, node);
  } else if (sref_eq(n, "torch.vtensor.literal")) {
    return literal_op(c, op, node, named);
  } else if (n.length > 11 && memcmp(n.data, "torch.aten.", 11) == 0) {
    return aten_op(c, op, n, node, named);
  }
  kf_diag_error(c->diag, "%s: %s%s%sunsupported torch dialect op %.*s", c->file,
                named ? "node '" : "", named ? node : "", named ? "': " : "", (int)n.length, n.data);
  return KF_ERR_UNSUPPORTED;
}

void kf_torch_fini(mlir_conv *c) {
  torch_state *s = c->torch;
  if (!s) return;
  for (int i = 0; i < s->n; i++) {
    free(s->consts[i].s);
    free(s->consts[i].items);
  }
  free(s->consts);
  free(s); /* the literal store belongs to the graph now */
  c->torch = NULL;
}
