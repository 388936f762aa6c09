/* pass/scan_forms.c — turns the ways PyTorch programs spell reverse and
 * exclusive scans into one scan with the reverse or exclusive flag, which
 * the scan kernel runs reading and writing each element once.
 *
 * Why: torch.export records what the program wrote. A reverse cumsum,
 * cumsum(x.flip(d), d).flip(d), is three passes over memory (the frontends
 * lower flip to an index_select of a reversed arange); an exclusive one,
 * cat([zeros, cumsum(x.narrow(d, 0, n - 1), d)], d), is a scan and a copy.
 *
 * Expects: a verified graph. Changes, in program order:
 *  - flip_d(scan_d(flip_d(x))), flip_d being index_select(., d,
 *    arange(n - 1, -1, -1)) with n the size of d, becomes scan_d(x) with
 *    reverse negated (exclusive kept);
 *  - cat_d(fill, scan_d(slice_d(x, 0, n - 1))), for a scan that is neither
 *    reverse nor exclusive, a fill one long along d holding the scan's
 *    identity (0 for cumsum, 1 for cumprod), a cat of the scan's dtype and
 *    n the size of x along d, becomes scan_d(x, exclusive); mirrored,
 *    cat_d(scan_d(slice_d(x, 1, n), reverse), fill) becomes scan_d(x,
 *    reverse, exclusive).
 * The new scan is placed before the op it replaces, whose uses (and graph
 * outputs) it takes over; the flips, slices, cats and old scans are left
 * for dce, and stay where something else still reads them. */
#include <stdio.h>

#include "kfuse/ir.h"
#include "pass_int.h"

static bool is_scan(const kf_op *op) { return op && kf_op_info_get(op->code)->kind == KF_KIND_SCAN; }

static bool num_is(kf_number n, double v) { return kf_number_as_double(n) == v; }

/* x when v is x flipped along one dim (the frontends' lowering of flip):
 * index_select(x, d, arange(n - 1, -1, -1)), n = x's size along d >= 2 */
static kf_value *flip_source(const kf_value *v, int64_t *dim) {
  const kf_op *is = v ? v->def : NULL;
  if (!is || is->code != KF_OP_INDEX_SELECT) return NULL;
  kf_value *x = is->operands[0], *idx = is->operands[1];
  if (x->type.kind != KF_TYPE_TENSOR || x->type.rank == 0) return NULL;
  int64_t d = kf_op_get_int(is, "dim");
  int64_t n = x->type.shape[d];
  const kf_op *ar = idx->def;
  if (!ar || ar->code != KF_OP_ARANGE || idx->type.rank != 1 || idx->type.shape[0] != n ||
      !kf_dtype_is_int(idx->type.dtype))
    return NULL;
  if (!num_is(kf_op_get_number(ar, "start"), (double)(n - 1)) || !num_is(kf_op_get_number(ar, "step"), -1))
    return NULL;
  *dim = d;
  return x;
}

/* x when v is slice_d(x, start, start + len) with step 1 */
static kf_value *slice_source(const kf_value *v, int64_t d, int64_t start, int64_t end) {
  const kf_op *sl = v ? v->def : NULL;
  if (!sl || sl->code != KF_OP_SLICE || kf_op_get_int(sl, "dim") != d || kf_op_get_int(sl, "step") != 1 ||
      kf_op_get_int(sl, "start") != start || kf_op_get_int(sl, "end") != end)
    return NULL;
  return sl->operands[0];
}

/* a fill one element long along d holding the identity of scan s */
static bool identity_fill(const kf_value *v, int64_t d, const kf_op *s) {
  const kf_op *f = v->def;
  if (!f || f->code != KF_OP_FULL || v->type.rank <= d || v->type.shape[d] != 1) return false;
  return num_is(kf_op_get_number(f, "value"), s->code == KF_OP_CUMPROD ? 1 : 0);
}

/* scan s's op over x with the given flags, before `at`, taking over the
 * uses of `old` (whose type it has) */
static kf_status replace(kf_graph *g, const kf_op *s, kf_value *x, bool rev, bool excl, kf_op *at,
                         kf_value *old, const char *suffix) {
  char base[200];
  snprintf(base, sizeof base, "%s_%s", s->name, suffix);
  kf_op *op = kf_graph_append_op(g, s->code, kf_pass_unique_name(g, base), &x, 1, &old->type, 1);
  kf_op_set_int(op, "dim", kf_op_get_int(s, "dim"));
  if (rev) kf_op_set_bool(op, "reverse", true);
  if (excl) kf_op_set_bool(op, "exclusive", true);
  kf_graph_move_op(g, op, at);
  kf_graph_replace_uses(g, old, op->results[0]);
  return KF_OK;
}

/* flip(scan(flip(x))) */
static kf_status reverse_form(kf_graph *g, kf_op *op) {
  int64_t d2, d1;
  kf_value *sv = flip_source(op->results[0], &d2);
  const kf_op *s = sv ? sv->def : NULL;
  if (!is_scan(s) || kf_op_get_int(s, "dim") != d2) return KF_OK;
  kf_value *x = flip_source(s->operands[0], &d1);
  if (!x || d1 != d2) return KF_OK;
  return replace(g, s, x, !kf_op_get_flag(s, "reverse"), kf_op_get_flag(s, "exclusive"), op,
                 op->results[0], kf_op_get_flag(s, "reverse") ? "fwd" : "rev");
}

/* cat(identity, scan(x[:n-1])) and cat(scan_rev(x[1:]), identity) */
static kf_status exclusive_form(kf_graph *g, kf_op *op) {
  if (op->n_operands != 2) return KF_OK;
  int64_t d = kf_op_get_int(op, "dim");
  kf_value *r = op->results[0];
  for (int k = 0; k < 2; k++) {
    kf_value *fill = op->operands[k], *sv = op->operands[1 - k];
    const kf_op *s = sv->def;
    bool rev = k == 1; /* the fill last: a reverse scan's first element */
    if (!is_scan(s) || kf_op_get_int(s, "dim") != d || kf_op_get_flag(s, "exclusive") ||
        kf_op_get_flag(s, "reverse") != rev || sv->type.dtype != r->type.dtype || !identity_fill(fill, d, s))
      continue;
    const kf_value *in = s->operands[0];
    if (in->type.rank <= d) continue;
    int64_t len = in->type.shape[d];
    kf_value *x = rev ? slice_source(in, d, 1, len + 1) : slice_source(in, d, 0, len);
    if (!x || x->type.shape[d] != len + 1) continue;
    return replace(g, s, x, rev, true, op, r, "excl");
  }
  return KF_OK;
}

kf_status kf_pass_scan_forms(kf_graph *g, kf_diag *diag) {
  (void)diag;
  kf_status st = KF_OK;
  for (kf_op *op = g->first; op && !st; op = op->next) {
    if (op->code == KF_OP_INDEX_SELECT) st = reverse_form(g, op);
    else if (op->code == KF_OP_CAT) st = exclusive_form(g, op);
  }
  return st;
}
