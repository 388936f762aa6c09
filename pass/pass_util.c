/* pass/pass_util.c — small helpers the passes share: which ops alias their
 * operand's storage, the storage root of a value, whole-buffer views, fresh
 * op names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfuse/ir.h"
#include "pass_int.h"

bool kf_pass_is_view_op(const kf_op *op) {
  switch (op->code) {
  case KF_OP_PERMUTE: case KF_OP_EXPAND: case KF_OP_SLICE: case KF_OP_SELECT:
  case KF_OP_AS_STRIDED: case KF_OP_UNFOLD: case KF_OP_SPLIT:
    return true;
  case KF_OP_RESHAPE: {
    /* infer.c gives a reshape the operand's layout when PyTorch's
     * computeStride allows it, else a fresh contiguous one: a view keeps
     * the operand's storage offset and element order, so a contiguous
     * result of a non-contiguous operand can only be a copy. */
    const kf_type *r = &op->results[0]->type, *x = &op->operands[0]->type;
    return !kf_type_is_contiguous(r) || kf_type_is_contiguous(x);
  }
  default:
    return false;
  }
}

const kf_value *kf_pass_storage_root(const kf_value *v) {
  while (v->def && kf_pass_is_view_op(v->def) && v->def->operands[0])
    v = v->def->operands[0];
  return v;
}

bool kf_pass_is_whole_view(const kf_value *v) {
  if (!v->def || !kf_pass_is_view_op(v->def) || v->type.kind != KF_TYPE_TENSOR) return false;
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

const char *kf_namer_fresh(kf_namer *nm, const char *base) {
  char buf[256];
  snprintf(buf, sizeof buf, "%.200s", base);
  for (unsigned k = 1; namer_has(nm, buf); k++) snprintf(buf, sizeof buf, "%.200s_%u", base, k);
  const char *s = kf_graph_strdup(nm->g, buf);
  return namer_add(nm, s) ? s : NULL;
}

void kf_namer_fini(kf_namer *nm) {
  free(nm->slots);
  nm->slots = NULL;
  nm->cap = nm->n = 0;
}
