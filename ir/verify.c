/* ir/verify.c — the IR verifier.
 *
 * Checks, and reports every violation it finds (not just the first):
 * values are defined before use and belong to this graph; op and input names
 * are unique and valid MLIR identifiers; every op satisfies its schema and
 * its declared result types equal the inferred ones (ir/infer.c); graph
 * outputs are defined; weights referenced by kf.param exist with the same
 * type. Runs after every pass in debug and test builds. */
#include <stdlib.h>
#include <string.h>

#include "kfuse/ir.h"

static bool valid_ident(const char *s) {
  if (!*s) return false;
  for (const char *c = s; *c; c++) {
    bool ok = (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
              (*c >= '0' && *c <= '9') || *c == '_' || *c == '$' ||
              *c == '.' || *c == '-';
    if (!ok) return false;
  }
  /* a leading digit is allowed only for all-digit names */
  if (*s >= '0' && *s <= '9') {
    for (const char *c = s; *c; c++)
      if (*c < '0' || *c > '9') return false;
  }
  return true;
}

typedef struct name_set {
  const char **slots;
  size_t cap, n;
} name_set;

static size_t hash_str(const char *s) {
  size_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

/* Returns false if already present; aborts on allocation failure. */
static bool name_set_add(name_set *set, const char *s) {
  if (set->n * 2 >= set->cap) {
    size_t cap = set->cap ? set->cap * 2 : 64;
    const char **slots = calloc(cap, sizeof *slots);
    KF_ASSERT(slots != NULL);
    for (size_t i = 0; i < set->cap; i++) {
      if (!set->slots[i]) continue;
      size_t j = hash_str(set->slots[i]) & (cap - 1);
      while (slots[j]) j = (j + 1) & (cap - 1);
      slots[j] = set->slots[i];
    }
    free(set->slots);
    set->slots = slots;
    set->cap = cap;
  }
  size_t j = hash_str(s) & (set->cap - 1);
  while (set->slots[j]) {
    if (strcmp(set->slots[j], s) == 0) return false;
    j = (j + 1) & (set->cap - 1);
  }
  set->slots[j] = s;
  set->n++;
  return true;
}

kf_status kf_graph_verify(const kf_graph *g, kf_diag *diag) {
  int errors = 0;
  size_t nv = g->next_value_id ? g->next_value_id : 1;
  unsigned char *defined = calloc(nv, 1);
  name_set names = {0};
  KF_ASSERT(defined != NULL);

  /* every message starts with the file the graph came from, when known */
  const char *file = g->origin ? g->origin : "";
  const char *sep = g->origin ? ": " : "";
#define ERR(fmt, ...)                                                         \
  do {                                                                        \
    kf_diag_error(diag, "%s%s" fmt, file, sep, __VA_ARGS__);                  \
    errors++;                                                                 \
  } while (0)

  for (int i = 0; i < g->n_inputs; i++) {
    const kf_value *v = g->inputs[i];
    if (v->id >= nv || v->def || v->index != i) {
      ERR("graph input %d is malformed", i);
      continue;
    }
    defined[v->id] = 1;
    if (!valid_ident(g->input_names[i]))
      ERR("graph input %d: name '%s' is not a valid identifier", i, g->input_names[i]);
    else if (!name_set_add(&names, g->input_names[i]))
      ERR("graph input %d: duplicate name '%s'", i, g->input_names[i]);
    if (v->type.kind != KF_TYPE_TENSOR)
      ERR("graph input '%s' must be a tensor", g->input_names[i]);
  }

  for (const kf_op *op = g->first; op; op = op->next) {
    if (op->graph != g) ERR("node '%s' belongs to another graph", op->name);
    if (!valid_ident(op->name))
      ERR("node '%s' (kf.%s): name is not a valid identifier", op->name,
          kf_opcode_name(op->code));
    else if (!name_set_add(&names, op->name))
      ERR("node '%s' (kf.%s): duplicate name", op->name, kf_opcode_name(op->code));
    bool operands_ok = true;
    for (int i = 0; i < op->n_operands; i++) {
      const kf_value *v = op->operands[i];
      if (v && (v->id >= nv || !defined[v->id])) {
        ERR("node '%s' (kf.%s): operand %d is used before its definition or "
            "comes from another graph", op->name, kf_opcode_name(op->code), i);
        operands_ok = false;
      }
    }
    if (operands_ok) {
      kf_type *inferred = malloc(sizeof(kf_type) * (size_t)(op->n_results + 1));
      KF_ASSERT(inferred != NULL);
      {
        for (int i = 0; i < op->n_results; i++) inferred[i] = op->results[i]->type;
        if (kf_infer_types(op, inferred, diag) != KF_OK) {
          errors++;
        } else {
          for (int i = 0; i < op->n_results; i++) {
            if (kf_type_equal(&inferred[i], &op->results[i]->type)) continue;
            char a[256], b[256];
            kf_type_str(&op->results[i]->type, a, sizeof a);
            kf_type_str(&inferred[i], b, sizeof b);
            ERR("node '%s' (kf.%s): result %d is declared %s but the op gives %s",
                op->name, kf_opcode_name(op->code), i, a, b);
          }
        }
      }
      free(inferred);
    }
    if (op->code == KF_OP_PARAM) {
      const char *fqn = kf_op_get_str(op, "fqn");
      const kf_weight *w = kf_graph_find_weight(g, fqn);
      if (!w)
        ERR("node '%s' (kf.param): weight '%s' is not in the graph's weight table",
            op->name, fqn);
      else if (!kf_type_equal(&w->type, &op->results[0]->type))
        ERR("node '%s' (kf.param): type differs from weight '%s'", op->name, fqn);
    }
    for (int i = 0; i < op->n_results; i++) {
      const kf_value *v = op->results[i];
      if (v->id >= nv || v->def != op || v->index != i)
        ERR("node '%s': result %d is malformed", op->name, i);
      else
        defined[v->id] = 1;
    }
  }
  for (int i = 0; i < g->n_outputs; i++) {
    const kf_value *v = g->outputs[i];
    if (!v || v->id >= nv || !defined[v->id])
      ERR("graph output %d is not defined in the graph", i);
  }
#undef ERR
  free(defined);
  free(names.slots);
  return errors ? KF_ERR_INVALID : KF_OK;
}
