/* pass/pass_util.c — small helpers the passes share: which ops alias their
 * operand's storage, the storage root of a value, whole-buffer views, fresh
 * op names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfuse/interp.h"
#include "kfuse/ir.h"
#include "pass_int.h"

const kf_value *kf_pass_storage_root(const kf_value *v) {
  while (v->def && kf_op_is_view(v->def) && v->def->operands[0])
    v = v->def->operands[0];
  return v;
}

bool kf_pass_is_whole_view(const kf_value *v) {
  if (!v->def || !kf_op_is_view(v->def) || v->type.kind != KF_TYPE_TENSOR) return false;
  const kf_value *r = kf_pass_storage_root(v);
  /* both contiguous from offset 0 with as many elements: element k of v is
   * element k of r, whatever the view ops in between */
  return r->def && r->def->code != KF_OP_PARAM && kf_type_is_contiguous(&v->type) &&
         kf_type_is_contiguous(&r->type) && kf_type_numel(&v->type) == kf_type_numel(&r->type);
}

static bool name_taken(const kf_graph *g, const char *s) {
  for (int i = 0; i < g->n_inputs; i++)
    if (strcmp(g->input_names[i], s) == 0) return true;
  for (const kf_op *op = g->first; op; op = op->next)
    if (strcmp(op->name, s) == 0) return true;
  return false;
}

const char *kf_pass_unique_name(kf_graph *g, const char *base) {
  if (!name_taken(g, base)) return kf_graph_strdup(g, base);
  char buf[256];
  for (unsigned k = 1;; k++) {
    snprintf(buf, sizeof buf, "%.200s_%u", base, k);
    if (!name_taken(g, buf)) return kf_graph_strdup(g, buf);
  }
}

/* ---- kf_namer: open addressing over the graph's name strings ---------------- */

static size_t hash_name(const char *s) {
  size_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static bool namer_has(const kf_namer *nm, const char *s) {
  for (size_t j = hash_name(s) & (nm->cap - 1); nm->slots[j]; j = (j + 1) & (nm->cap - 1))
    if (strcmp(nm->slots[j], s) == 0) return true;
  return false;
}

static bool namer_add(kf_namer *nm, const char *s) {
  if ((nm->n + 1) * 2 > nm->cap) {
    size_t cap = nm->cap ? nm->cap * 2 : 256;
    const char **slots = calloc(cap, sizeof *slots);
    if (!slots) return false;
    for (size_t i = 0; i < nm->cap; i++) {
      if (!nm->slots[i]) continue;
      size_t j = hash_name(nm->slots[i]) & (cap - 1);
      while (slots[j]) j = (j + 1) & (cap - 1);
      slots[j] = nm->slots[i];
    }
    free(nm->slots);
    nm->slots = slots;
    nm->cap = cap;
  }
  size_t j = hash_name(s) & (nm->cap - 1);
  while (nm->slots[j]) j = (j + 1) & (nm->cap - 1);
  nm->slots[j] = s;
  nm->n++;
  return true;
}

kf_status kf_namer_init(kf_namer *nm, kf_graph *g) {
  memset(nm, 0, sizeof *nm);
  nm->g = g;
  for (int i = 0; i < g->n_inputs; i++)
    if (!namer_add(nm, g->input_names[i])) goto nomem;
  for (const kf_op *op = g->first; op; op = op->next)
    if (!namer_add(nm, op->name)) goto nomem;
  if (!nm->cap && !namer_add(nm, "")) goto nomem; /* empty graph: still a table */
  return KF_OK;
nomem:
  kf_namer_fini(nm);
  return KF_ERR_NOMEM;
}

/* base as a valid node name (ir/verify.c): characters outside
 * [A-Za-z0-9_$.-] become '_', and one that starts with a digit gets a
 * leading '_' (a weight of an nn.Sequential child is "0.weight"; names made
 * from it were refused after the pass; an all-digit name is valid, but not
 * with the "_N" that keeps names unique). */
static void ident_of(char *dst, size_t n, const char *base) {
  size_t o = 0;
  if (*base >= '0' && *base <= '9' && o + 1 < n) dst[o++] = '_';
  for (const char *c = base; *c && o + 1 < n && o < 200; c++) {
    bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '_' ||
              *c == '$' || *c == '.' || *c == '-';
    dst[o++] = ok ? *c : '_';
  }
  if (o == 0 && n > 1) dst[o++] = '_';
  dst[o] = '\0';
}

const char *kf_namer_fresh(kf_namer *nm, const char *base) {
  char id[208], buf[256];
  ident_of(id, sizeof id, base);
  snprintf(buf, sizeof buf, "%s", id);
  for (unsigned k = 1; namer_has(nm, buf); k++) snprintf(buf, sizeof buf, "%s_%u", id, k);
  const char *s = kf_graph_strdup(nm->g, buf);
  return namer_add(nm, s) ? s : NULL;
}

void kf_namer_fini(kf_namer *nm) {
  free(nm->slots);
  nm->slots = NULL;
  nm->cap = nm->n = 0;
}

/* ---- constants (fold-bn, fold-reductions) ----------------------------------- */

kf_status kf_pass_const_open(kf_graph *g, const kf_value *v, kf_pass_const *c, bool *ok, kf_diag *diag) {
  *ok = false;
  memset(c, 0, sizeof *c);
  if (!v || v->type.kind != KF_TYPE_TENSOR) return KF_OK;
  const kf_value *root = kf_pass_storage_root(v);
  if (!root->def) return KF_OK;
  c->t = &v->type;
  if (root->def->code == KF_OP_FULL) {
    c->fill = true;
    c->value = kf_number_as_double(kf_op_get_number(root->def, "value"));
    /* the tensor holds the value rounded to its dtype */
    kf_tensor one = {root->type.dtype, 0, {0}, &(double){0}};
    kf_tensor_set(&one, 0, c->value);
    c->value = kf_tensor_get(&one, 0);
    *ok = true;
    return KF_OK;
  }
  if (root->def->code != KF_OP_PARAM || !g->store.get) return KF_OK;
  const char *fqn = kf_op_get_str(root->def, "fqn");
  const void *data = NULL;
  int64_t nbytes = 0;
  kf_status st = g->store.get(g->store.impl, fqn, &data, &nbytes, diag);
  if (st != KF_OK) return st;
  int64_t es = (int64_t)kf_dtype_size(v->type.dtype), hi = v->type.offset;
  for (int i = 0; i < v->type.rank; i++) {
    if (v->type.strides[i] < 0) return KF_OK;
    if (v->type.shape[i] > 0) hi += (v->type.shape[i] - 1) * v->type.strides[i];
  }
  if (nbytes > 0 && (!data || (hi + 1) * es > nbytes)) {
    kf_diag_error(diag, "weight '%s' has %lld bytes of storage, its type needs %lld", fqn,
                  (long long)nbytes, (long long)((hi + 1) * es));
    return KF_ERR_FORMAT;
  }
  c->raw.dtype = v->type.dtype;
  c->raw.rank = 1;
  c->raw.shape[0] = nbytes / es;
  c->raw.data = nbytes > 0 ? (void *)data : NULL;
  *ok = true;
  return KF_OK;
}

double kf_pass_const_get(const kf_pass_const *c, int64_t linear) {
  if (c->fill) return c->value;
  if (!c->raw.data) return 0.0; /* an empty record: a fake tensor of zeros */
  int64_t off = c->t->offset;
  for (int i = c->t->rank - 1; i >= 0; i--) {
    int64_t n = c->t->shape[i];
    off += (linear % n) * c->t->strides[i];
    linear /= n;
  }
  return kf_tensor_get(&c->raw, off);
}

kf_status kf_pass_new_param(kf_graph *g, const char *fqn_base, const char *name_base,
                           kf_dtype dtype, int rank, const int64_t *shape, const double *vals,
                           kf_op *before, kf_value **out, kf_diag *diag) {
  kf_type t;
  kf_type_init_tensor(&t, dtype, rank, shape);
  int64_t n = kf_type_numel(&t);
  int64_t nbytes = n * (int64_t)kf_dtype_size(dtype);
  kf_tensor tt = {dtype, 1, {n}, malloc((size_t)(nbytes ? nbytes : 1))};
  if (!tt.data) return KF_ERR_NOMEM;
  for (int64_t i = 0; i < n; i++) kf_tensor_set(&tt, i, vals[i]);
  char fqn[300];
  snprintf(fqn, sizeof fqn, "%.250s", fqn_base);
  for (unsigned k = 1; kf_graph_find_weight(g, fqn); k++)
    snprintf(fqn, sizeof fqn, "%.250s_%u", fqn_base, k);
  kf_status st = kf_graph_add_constant(g, fqn, &t, tt.data, nbytes, diag);
  if (st != KF_OK) return st;
  kf_op *p = kf_graph_append_op(g, KF_OP_PARAM, kf_pass_unique_name(g, name_base), NULL, 0, &t, 1);
  kf_op_set_str(p, "fqn", fqn);
  kf_op_set_str(p, "kind", "folded");
  kf_graph_move_op(g, p, before);
  *out = p->results[0];
  return KF_OK;
}

bool kf_pass_reduces_channels_or_space(const kf_op *red, int rank) {
  int nd = 0;
  int64_t one;
  const int64_t *dims = NULL;
  if (kf_op_has_attr(red, "dims")) {
    dims = kf_op_get_ints(red, "dims", &nd);
  } else if (kf_op_has_attr(red, "dim")) { /* min_dim, argmax, ... */
    one = kf_op_get_int(red, "dim");
    dims = &one;
    nd = 1;
  }
  if (!dims || nd < 1) return false;
  if (nd == 1 && (dims[0] < 0 ? dims[0] + rank : dims[0]) == 1) return true;
  if (nd != rank - 2) return false;
  for (int i = 0; i < nd; i++)
    if ((dims[i] < 0 ? dims[i] + rank : dims[i]) < 2) return false;
  return true;
}
