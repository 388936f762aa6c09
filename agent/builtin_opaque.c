/* agent/builtin_opaque.c — OPAQUE groups: one op with a dedicated kernel.
 *
 *   reshape (a copy), cat, pad, index_select, gather, embedding, index,
 *   slice_scatter, upsample
 *       gathers on the element-wise template's generic path: one thread
 *       per output element computes the source offset from its coordinates
 *       (c[]) and loads it (KF_LDX); out-of-range indices (after wrapping
 *       negative ones, as advanced indexing does) give 0 rather than an
 *       illegal address, and set the module's index flag
 *       (kf_common.cuh), which kfuse_model_check reports: PyTorch would
 *       raise instead.
 *   max_pool, avg_pool, adaptive_avg_pool       pool.cu
 *   full, arange and other element-wise ops     the element-wise builder
 *   rnn (an LSTM or GRU layer)                  rnn.cu (builtin_rnn.c)
 * CONV, ATTENTION and SCAN groups have their own builders (builtin_conv.c,
 * builtin_attention.c, builtin_scan.c). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"

/* ---- gathers on elementwise.cu -------------------------------------------- */

typedef struct gx {
  kb_kernel k;
  int64_t extent; /* largest element offset any load or store reaches */
} gx;

static void gx_init(gx *x, const kf_builtin_options *o, const kf_unit *u, const kf_type *out) {
  char name[96];
  snprintf(name, sizeof name, "%s_k%d", u->name, u->n_steps);
  int64_t one = 1;
  if (out->rank == 0)
    kb_init(&x->k, o, name, 1, &one);
  else
    kb_init(&x->k, o, name, out->rank, out->shape);
  x->extent = kf_type_numel(out);
}

static int64_t type_extent(const kf_type *t) {
  int64_t e = 1;
  for (int i = 0; i < t->rank; i++) e += (t->shape[i] - 1) * (t->strides[i] < 0 ? -t->strides[i] : t->strides[i]);
  return e;
}

/* a load access of group input v, addressed with explicit offsets */
static int gx_input(gx *x, const kf_group *g, const kf_value *v) {
  int gi = kb_group_input(g, v);
  int prm = kb_use_param(&x->k, KF_UARG_INPUT, gi, v->type.dtype, false);
  int64_t zero[KF_MAX_RANK] = {0};
  int64_t e = type_extent(&v->type);
  if (e > x->extent) x->extent = e;
  /* distinct accesses per parameter: the stride row carries the param */
  int a = kb_load(&x->k, prm, zero);
  return a;
}

/* The launch that stores into group output `out`, iterating over `ot` (its
 * type, or a slice of it: the caller then offsets the output argument,
 * *out_arg, of the step added last). */
static kf_status gx_finish_as(gx *x, const kf_group *g, const kf_value *out, const kf_type *ot, int *out_arg,
                              kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  kb_kernel *k = &x->k;
  int oi = kb_group_output(g, out);
  *out_arg = -1;
  if (oi < 0) return KF_OK; /* the result is not used: nothing to write */
  int64_t st[KF_MAX_RANK] = {0};
  for (int i = 0; i < ot->rank; i++) st[i] = ot->strides[i];
  int prm = kb_use_param(k, KF_UARG_OUTPUT, oi, out->type.dtype, true);
  *out_arg = prm;
  (void)kb_store(k, prm, st);
  int64_t e = type_extent(ot);
  if (e > x->extent) x->extent = e;
  int64_t numel = 1;
  for (int d = 0; d < k->rank; d++) numel *= k->shape[d];
  kb_rules r = kb_rules_elementwise(k->opt, numel, 4, false);
  kb_def_params(k);
  kb_def_accesses(k, "ST", 0, k->rank);
  char buf[512];
  size_t off = 0;
  buf[0] = '\0';
  for (int d = 0; d < k->rank; d++)
    off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%lldLL", d ? ", " : "", (long long)k->shape[d]);
  kb_def(k, "KF_RANK", "%d", k->rank);
  kb_def(k, "KF_SHAPE", "%s", buf);
  kb_def(k, "KF_NUMEL", "%lldLL", (long long)numel);
  kb_def(k, "KF_BLOCK", "%d", r.block);
  kb_def(k, "KF_VEC", "1");
  kb_def(k, "KF_INDEX", "%s", x->extent < ((int64_t)1 << 31) - ((int64_t)1 << 26) ? "int" : "long long");
  for (int i = 0; i < k->n_loads; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "KF_L%d_B", i);
    kb_def(k, nm, "0");
  }
  kb_def_body(k, "KF_BODY");
  uint32_t grid[3] = {r.grid, 1, 1}, block[3] = {(uint32_t)r.block, 1, 1};
  return kb_finish(k, u, src, "elementwise.cu", grid, block, 0, diag);
}

static kf_status gx_finish(gx *x, const kf_group *g, const kf_value *out, kf_unit *u, kf_strbuf *src,
                           kf_diag *diag) {
  int arg;
  return gx_finish_as(x, g, out, &out->type, &arg, u, src, diag);
}

static const char *reg(const gx *x, kf_dtype t) { return kb_reg_type(t, x->k.opt->fp64); }

/* "c[a] * s" terms; returns the written length */
static void add_term(kf_strbuf *b, const char *coord, int64_t stride) {
  if (stride == 0) return;
  kf_strbuf_printf(b, " + (%s) * (I)%" PRId64 "LL", coord, stride);
}

static kf_status gx_emit_offset_load(gx *x, int a, const kf_strbuf *off, const char *ok,
                                     kf_dtype dt, const char *fill) {
  if (ok)
    kb_emit(&x->k, "const %s kf_v = (%s) ? KF_LDX(%d, (I)0%s) : %s;", reg(x, dt), ok, a,
            off->data ? off->data : "", fill);
  else
    kb_emit(&x->k, "const %s kf_v = KF_LDX(%d, (I)0%s);", reg(x, dt), a, off->data ? off->data : "");
  kb_emit(&x->k, "KF_ST(0, kf_v);");
  return KF_OK;
}

/* an index value loaded at `off`, wrapped, checked against size; out of
 * range it sets the module's index flag (kf::index_error) */
static void gx_index(gx *x, int a, const char *var, const char *off, int64_t size) {
  kb_emit(&x->k, "I %s = (I)KF_LDX(%d, (I)0%s);", var, a, off);
  kb_emit(&x->k, "if (%s < 0) %s += (I)%" PRId64 "LL;", var, var, size);
  kb_emit(&x->k, "if (%s < 0 || %s >= (I)%" PRId64 "LL) kf::index_error();", var, var, size);
  kb_emit(&x->k, "kf_ok = kf_ok && %s >= 0 && %s < (I)%" PRId64 "LL;", var, var, size);
}

static kf_status op_reshape(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                            const kf_op *op, kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_value *xv = op->operands[0], *r = op->results[0];
  if (!kf_type_is_contiguous(&r->type)) return kb_unsupported(diag, g, op, "non-contiguous result");
  gx x;
  gx_init(&x, o, u, &r->type);
  int a = gx_input(&x, g, xv);
  kf_strbuf sh, st;
  kf_strbuf_init(&sh);
  kf_strbuf_init(&st);
  const kf_type *t = &xv->type;
  for (int i = 0; i < (t->rank ? t->rank : 1); i++) {
    kf_strbuf_printf(&sh, "%s%lldLL", i ? ", " : "", (long long)(t->rank ? t->shape[i] : 1));
    kf_strbuf_printf(&st, "%s%lldLL", i ? ", " : "", (long long)(t->rank ? t->strides[i] : 0));
  }
  kb_emit(&x.k, "constexpr long long kf_xs[%d] = {%s};", t->rank ? t->rank : 1, sh.data);
  kb_emit(&x.k, "constexpr long long kf_xst[%d] = {%s};", t->rank ? t->rank : 1, st.data);
  kb_emit(&x.k, "const %s kf_v = KF_LDX(%d, kf::offset_of(i, kf_xs, kf_xst));", reg(&x, t->dtype), a);
  kb_emit(&x.k, "KF_ST(0, kf_v);");
  kf_strbuf_fini(&sh);
  kf_strbuf_fini(&st);
  kf_status s = gx_finish(&x, g, r, u, src, diag);
  kb_fini(&x.k);
  (void)p;
  return s;
}

/* Inputs of a cat a launch reads at most: a launch's parameters are
 * bounded (KB_MAX_PARAMS); an LSTM's stacked time steps or a DenseNet's
 * feature maps are hundreds. */
#define CAT_PER_LAUNCH 32

/* One launch writing the slice [start, start + len) of the cat's result
 * along d from inputs [i0, i1); those marked in skip (may be NULL) are
 * left to other launches (their elements' threads do nothing). */
static kf_status cat_launch(const kf_group *g, const kf_builtin_options *o, const kf_op *op, int i0, int i1,
                            const bool *skip, int64_t start, int64_t len, kf_unit *u, kf_strbuf *src,
                            kf_diag *diag) {
  const kf_value *r = op->results[0];
  int64_t d = kf_op_get_int(op, "dim");
  kf_type st = r->type;
  st.shape[d] = len;
  gx x;
  gx_init(&x, o, u, &st);
  int64_t at = 0;
  bool first = true;
  char coord[64];
  for (int i = i0; i < i1; i++) {
    const kf_value *v = op->operands[i];
    const kf_type *t = &v->type;
    if (t->rank == 1 && t->shape[0] == 0 && r->type.rank != 1) continue; /* legacy empty */
    if (t->shape[d] == 0) continue;
    if (skip && skip[i]) {
      kb_emit(&x.k, "%sif (c[%" PRId64 "] < (I)%" PRId64 "LL) {", first ? "" : "else ", d, at + t->shape[d]);
      kb_emit(&x.k, "}");
      at += t->shape[d];
      first = false;
      continue;
    }
    int a = gx_input(&x, g, v);
    kf_strbuf off;
    kf_strbuf_init(&off);
    for (int j = 0; j < t->rank; j++) {
      if (j == d)
        snprintf(coord, sizeof coord, "c[%d] - (I)%" PRId64 "LL", j, at);
      else
        snprintf(coord, sizeof coord, "c[%d]", j);
      add_term(&off, coord, t->strides[j]);
    }
    kb_emit(&x.k, "%sif (c[%" PRId64 "] < (I)%" PRId64 "LL) {", first ? "" : "else ", d, at + t->shape[d]);
    kb_emit(&x.k, "const %s kf_v = KF_LDX(%d, (I)0%s);", reg(&x, t->dtype), a, off.data ? off.data : "");
    kb_emit(&x.k, "KF_ST(0, kf_v);");
    kb_emit(&x.k, "}");
    kf_strbuf_fini(&off);
    at += t->shape[d];
    first = false;
  }
  int arg;
  kf_status s = gx_finish_as(&x, g, r, &st, &arg, u, src, diag);
  kb_fini(&x.k);
  if (!s && arg >= 0 && start)
    u->steps[u->n_steps - 1].args[arg].i = start * r->type.strides[d] * (int64_t)kf_dtype_size(r->type.dtype);
  return s;
}

/* A cat whose every input is dense and lands in a dense slice of its dense
 * result — stacking along the first dim that is not 1, as an unrolled RNN
 * stacks its steps — is one copy step per input: no kernel to compile (an
 * LSTM's 32-way select kernels took most of its compile) and copy speed. */
static kf_status cat_as_copies(const kf_group *g, const kf_op *op, kf_unit *u, bool *done) {
  const kf_value *r = op->results[0];
  const kf_type *rt = &r->type;
  int64_t d = kf_op_get_int(op, "dim");
  *done = false;
  int oi = kb_group_output(g, r);
  if (oi < 0 || !kf_type_is_contiguous(rt)) return KF_OK;
  for (int j = 0; j < d; j++)
    if (rt->shape[j] != 1) return KF_OK;
  for (int i = 0; i < op->n_operands; i++) {
    const kf_type *t = &op->operands[i]->type;
    if (kb_group_input(g, op->operands[i]) < 0 || t->dtype != rt->dtype) return KF_OK;
    if (kf_type_numel(t) > 0 && (!kf_type_is_contiguous(t) || t->rank != rt->rank)) return KF_OK;
  }
  int64_t es = (int64_t)kf_dtype_size(rt->dtype), inner = es, at = 0;
  for (int j = (int)d + 1; j < rt->rank; j++) inner *= rt->shape[j];
  for (int i = 0; i < op->n_operands; i++) {
    const kf_value *v = op->operands[i];
    int64_t bytes = kf_type_numel(&v->type) * es;
    if (bytes == 0) continue;
    kf_unit_step *s = kf_unit_add_step(u, KF_USTEP_COPY);
    if (!s || !kf_unit_step_args(s, 3)) return KF_ERR_NOMEM;
    s->args[0].kind = KF_UARG_OUTPUT;
    s->args[0].index = oi;
    s->args[0].i = at * inner;
    s->args[1].kind = KF_UARG_INPUT;
    s->args[1].index = kb_group_input(g, v);
    s->args[2].kind = KF_UARG_I64;
    s->args[2].i = bytes;
    at += v->type.shape[d];
  }
  *done = true;
  return KF_OK;
}

/* The cat's input pieces: one launch per CAT_PER_LAUNCH non-empty inputs,
 * each over its slice; those marked in skip (may be NULL: none) are
 * computed by launches of their own (op_cat_fused), and a launch's slice
 * runs from its first to its last piece that is not skipped. */
static kf_status cat_inputs(const kf_group *g, const kf_builtin_options *o, const kf_op *op, const bool *skip,
                            kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_value *r = op->results[0];
  int64_t d = kf_op_get_int(op, "dim");
  int i0 = -1, n = 0, last = -1;
  int64_t at = 0, start = 0, end = 0;
  for (int i = 0; i < op->n_operands; i++) {
    const kf_type *t = &op->operands[i]->type;
    bool empty = (t->rank == 1 && t->shape[0] == 0 && r->type.rank != 1) || t->shape[d] == 0;
    int64_t here = at;
    if (!empty) at += t->shape[d];
    if (!empty && !(skip && skip[i])) {
      if (i0 < 0) {
        i0 = i;
        start = here;
      }
      n++;
      last = i;
      end = at;
    }
    if (n == CAT_PER_LAUNCH || (i + 1 == op->n_operands && n > 0)) {
      kf_status s = cat_launch(g, o, op, i0, last + 1, skip, start, end - start, u, src, diag);
      if (s) return s;
      i0 = -1;
      n = 0;
    }
  }
  return KF_OK;
}

static kf_status op_cat(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                        const kf_op *op, kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  (void)p;
  bool copied;
  kf_status cs = cat_as_copies(g, op, u, &copied);
  if (cs || copied) return cs;
  return cat_inputs(g, o, op, NULL, u, src, diag);
}

/* A cat whose group also holds the element-wise ops computing some of its
 * operands (pass/partition.c, absorb_cat_pieces): each such piece is one
 * element-wise launch over its own shape that computes it and stores it
 * straight into its slice of the result (the result's strides, the
 * slice's byte offset on the output argument), so it is never written
 * whole and read back; the operands that are group inputs are copied as
 * in op_cat, sharing launches (cat_inputs). */
static kf_status op_cat_fused(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                              const kf_op *op, kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_value *r = op->results[0];
  int64_t d = kf_op_get_int(op, "dim");
  int oi = kb_group_output(g, r);
  if (oi < 0) return kb_unsupported(diag, g, op, "the cat's result is not a group output");
  kf_op **ew = malloc(sizeof *ew * (size_t)g->n_ops);
  bool *computed = calloc((size_t)op->n_operands, sizeof *computed);
  if (!ew || !computed) {
    free(ew);
    free(computed);
    return KF_ERR_NOMEM;
  }
  int n_ew = 0;
  for (int i = 0; i < g->n_ops; i++)
    if (g->ops[i] != op) ew[n_ew++] = g->ops[i];
  for (int i = 0; i < op->n_operands; i++) computed[i] = kb_group_input(g, op->operands[i]) < 0;
  /* the input pieces first, sharing launches as in op_cat */
  kf_status st = cat_inputs(g, o, op, computed, u, src, diag);
  int64_t at = 0, es = (int64_t)kf_dtype_size(r->type.dtype);
  for (int i = 0; i < op->n_operands && !st; i++) {
    const kf_value *v = op->operands[i];
    const kf_type *t = &v->type;
    if (t->rank == 1 && t->shape[0] == 0 && r->type.rank != 1) continue; /* legacy empty */
    if (t->shape[d] == 0) continue;
    if (!computed[i]) {
      /* written by cat_inputs */
    } else if (t->dtype != r->type.dtype || t->rank != r->type.rank) {
      st = kb_unsupported(diag, g, v->def, "a computed cat piece of another dtype or rank than the cat");
    } else {
      kf_type slice = r->type;
      memcpy(slice.shape, t->shape, sizeof slice.shape);
      slice.offset = 0;
      kb_ew_launch l;
      memset(&l, 0, sizeof l);
      l.rank = t->rank;
      memcpy(l.shape, t->shape, sizeof l.shape);
      l.n_ops = n_ew;
      l.ops = ew;
      l.n_out = 1;
      l.out_vals[0] = v;
      l.out_kind[0] = KF_UARG_OUTPUT;
      l.out_index[0] = oi;
      l.out_type[0] = &slice;
      l.out_offset[0] = at * r->type.strides[d] * es;
      st = kb_ew_emit(p, g, o, &l, u, src, diag);
    }
    at += t->shape[d];
  }
  free(ew);
  free(computed);
  return st;
}

static kf_status op_pad(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                        const kf_op *op, kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_value *xv = op->operands[0], *r = op->results[0];
  const kf_type *t = &xv->type;
  int n;
  const int64_t *pad = kf_op_get_ints(op, "pad", &n);
  gx x;
  gx_init(&x, o, u, &r->type);
  int a = gx_input(&x, g, xv);
  kf_strbuf off;
  kf_strbuf_init(&off);
  kb_emit(&x.k, "bool kf_ok = true;");
  char coord[64];
  for (int j = 0; j < t->rank; j++) {
    int pi = t->rank - 1 - j; /* pad pairs start at the last dim */
    int64_t before = pi < n / 2 ? pad[2 * pi] : 0;
    if (before == 0 && r->type.shape[j] == t->shape[j]) {
      snprintf(coord, sizeof coord, "c[%d]", j);
    } else {
      kb_emit(&x.k, "const I kf_s%d = c[%d] - (I)%" PRId64 "LL;", j, j, before);
      kb_emit(&x.k, "kf_ok = kf_ok && kf_s%d >= 0 && kf_s%d < (I)%" PRId64 "LL;", j, j, t->shape[j]);
      snprintf(coord, sizeof coord, "kf_s%d", j);
    }
    add_term(&off, coord, t->strides[j]);
  }
  char fill[96];
  kb_literal(kf_op_get_number(op, "value"), t->dtype, o->fp64, fill, sizeof fill);
  gx_emit_offset_load(&x, a, &off, "kf_ok", t->dtype, fill);
  kf_strbuf_fini(&off);
  kf_status s = gx_finish(&x, g, r, u, src, diag);
  kb_fini(&x.k);
  (void)p;
  return s;
}

static kf_status op_index_select(const kf_partition *p, const kf_group *g,
                                 const kf_builtin_options *o, const kf_op *op, kf_unit *u,
                                 kf_strbuf *src, kf_diag *diag) {
  const kf_value *xv = op->operands[0], *iv = op->operands[1], *r = op->results[0];
  const kf_type *t = &xv->type;
  int64_t d = kf_op_get_int(op, "dim");
  gx x;
  gx_init(&x, o, u, &r->type);
  int a = gx_input(&x, g, xv), b = gx_input(&x, g, iv);
  kb_emit(&x.k, "bool kf_ok = true;");
  char ioff[128] = "";
  if (t->rank == 0) {
    gx_index(&x, b, "kf_j", "", 1);
  } else {
    if (iv->type.rank == 1) snprintf(ioff, sizeof ioff, " + c[%" PRId64 "] * (I)%" PRId64 "LL", d, iv->type.strides[0]);
    gx_index(&x, b, "kf_j", ioff, t->shape[d]);
  }
  kf_strbuf off;
  kf_strbuf_init(&off);
  char coord[64];
  for (int j = 0; j < t->rank; j++) {
    snprintf(coord, sizeof coord, j == d ? "kf_j" : "c[%d]", j);
    add_term(&off, coord, t->strides[j]);
  }
  char zero[96];
  kb_literal(kf_number_int(0), t->dtype, o->fp64, zero, sizeof zero);
  gx_emit_offset_load(&x, a, &off, "kf_ok", t->dtype, zero);
  kf_strbuf_fini(&off);
  kf_status s = gx_finish(&x, g, r, u, src, diag);
  kb_fini(&x.k);
  (void)p;
  return s;
}

static kf_status op_gather(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                           const kf_op *op, kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_value *xv = op->operands[0], *iv = op->operands[1], *r = op->results[0];
  const kf_type *t = &xv->type;
  int64_t d = kf_op_get_int(op, "dim");
  gx x;
  gx_init(&x, o, u, &r->type);
  int a = gx_input(&x, g, xv), b = gx_input(&x, g, iv);
  kb_emit(&x.k, "bool kf_ok = true;");
  kf_strbuf ioff;
  kf_strbuf_init(&ioff);
  char coord[64];
  for (int j = 0; j < iv->type.rank; j++) {
    snprintf(coord, sizeof coord, "c[%d]", j);
    add_term(&ioff, coord, iv->type.strides[j]);
  }
  gx_index(&x, b, "kf_j", ioff.data ? ioff.data : "", t->rank ? t->shape[d] : 1);
  kf_strbuf off;
  kf_strbuf_init(&off);
  for (int j = 0; j < t->rank; j++) {
    snprintf(coord, sizeof coord, j == d ? "kf_j" : "c[%d]", j);
    add_term(&off, coord, t->strides[j]);
  }
  char zero[96];
  kb_literal(kf_number_int(0), t->dtype, o->fp64, zero, sizeof zero);
  gx_emit_offset_load(&x, a, &off, "kf_ok", t->dtype, zero);
  kf_strbuf_fini(&off);
  kf_strbuf_fini(&ioff);
  kf_status s = gx_finish(&x, g, r, u, src, diag);
  kb_fini(&x.k);
  (void)p;
  return s;
}

static kf_status op_embedding(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                              const kf_op *op, kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_value *wv = op->operands[0], *iv = op->operands[1], *r = op->results[0];
  const kf_type *w = &wv->type;
  int ir = iv->type.rank;
  gx x;
  gx_init(&x, o, u, &r->type);
  int a = gx_input(&x, g, wv), b = gx_input(&x, g, iv);
  kb_emit(&x.k, "bool kf_ok = true;");
  kf_strbuf ioff;
  kf_strbuf_init(&ioff);
  char coord[64];
  for (int j = 0; j < ir; j++) {
    snprintf(coord, sizeof coord, "c[%d]", j);
    add_term(&ioff, coord, iv->type.strides[j]);
  }
  gx_index(&x, b, "kf_j", ioff.data ? ioff.data : "", w->shape[0]);
  kf_strbuf off;
  kf_strbuf_init(&off);
  add_term(&off, "kf_j", w->strides[0]);
  snprintf(coord, sizeof coord, "c[%d]", ir);
  add_term(&off, coord, w->strides[1]);
  char zero[96];
  kb_literal(kf_number_int(0), w->dtype, o->fp64, zero, sizeof zero);
  gx_emit_offset_load(&x, a, &off, "kf_ok", w->dtype, zero);
  kf_strbuf_fini(&off);
  kf_strbuf_fini(&ioff);
  kf_status s = gx_finish(&x, g, r, u, src, diag);
  kb_fini(&x.k);
  (void)p;
  return s;
}

/* x[..., idx0, ..., idxk, ...] with index tensors broadcast together */
static kf_status op_index(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                          const kf_op *op, kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_value *xv = op->operands[0], *r = op->results[0];
  const kf_type *t = &xv->type;
  int n;
  const int64_t *dims = kf_op_get_ints(op, "dims", &n);
  int ni = op->n_operands - 1;
  if (n != ni || ni < 1) return kb_unsupported(diag, g, op, "dims and index operands differ");
  /* broadcast shape of the indices */
  int nb = 0;
  int64_t bshape[KF_MAX_RANK];
  for (int k = 0; k < ni; k++) {
    const kf_type *it = &op->operands[k + 1]->type;
    if (it->rank > nb) {
      for (int j = nb - 1; j >= 0; j--) bshape[j + it->rank - nb] = bshape[j];
      for (int j = 0; j < it->rank - nb; j++) bshape[j] = 1;
      nb = it->rank;
    }
    for (int j = 0; j < it->rank; j++) {
      int bj = nb - it->rank + j;
      if (it->shape[j] != 1) bshape[bj] = it->shape[j];
    }
  }
  bool adjacent = dims[n - 1] - dims[0] == n - 1;
  int bpos = adjacent ? (int)dims[0] : 0;
  gx x;
  gx_init(&x, o, u, &r->type);
  int a = gx_input(&x, g, xv);
  kb_emit(&x.k, "bool kf_ok = true;");
  char coord[64], var[32];
  for (int k = 0; k < ni; k++) {
    const kf_value *iv = op->operands[k + 1];
    const kf_type *it = &iv->type;
    int b = gx_input(&x, g, iv);
    kf_strbuf ioff;
    kf_strbuf_init(&ioff);
    for (int j = 0; j < it->rank; j++) {
      int bj = nb - it->rank + j;
      if (it->shape[j] == 1) continue;
      snprintf(coord, sizeof coord, "c[%d]", bpos + bj);
      add_term(&ioff, coord, it->strides[j]);
    }
    snprintf(var, sizeof var, "kf_j%d", k);
    gx_index(&x, b, var, ioff.data ? ioff.data : "", t->shape[dims[k]]);
    kf_strbuf_fini(&ioff);
  }
  kf_strbuf off;
  kf_strbuf_init(&off);
  int rest = 0;
  for (int j = 0; j < t->rank; j++) {
    int k = -1;
    for (int q = 0; q < n; q++)
      if (dims[q] == j) k = q;
    if (k >= 0) {
      snprintf(coord, sizeof coord, "kf_j%d", k);
    } else {
      int pos;
      if (adjacent)
        pos = j < dims[0] ? j : j - n + nb;
      else
        pos = nb + rest;
      rest++;
      snprintf(coord, sizeof coord, "c[%d]", pos);
    }
    add_term(&off, coord, t->strides[j]);
  }
  char zero[96];
  kb_literal(kf_number_int(0), t->dtype, o->fp64, zero, sizeof zero);
  gx_emit_offset_load(&x, a, &off, "kf_ok", t->dtype, zero);
  kf_strbuf_fini(&off);
  kf_status s = gx_finish(&x, g, r, u, src, diag);
  kb_fini(&x.k);
  (void)p;
  return s;
}

/* x with src over its slice along dim: each output element reads src
 * inside the slice (start + k * step), x elsewhere */
static kf_status op_slice_scatter(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                                  const kf_op *op, kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_value *xv = op->operands[0], *sv = op->operands[1], *r = op->results[0];
  const kf_type *t = &xv->type, *st = &sv->type;
  int64_t d = kf_op_get_int(op, "dim"), start = kf_op_get_int(op, "start"), end = kf_op_get_int(op, "end"),
          step = kf_op_get_int(op, "step");
  gx x;
  gx_init(&x, o, u, &r->type);
  int a = gx_input(&x, g, xv), b = gx_input(&x, g, sv);
  kb_emit(&x.k, "const I kf_q = c[%" PRId64 "] - (I)%" PRId64 "LL;", d, start);
  kb_emit(&x.k, "if (kf_q >= 0 && kf_q < (I)%" PRId64 "LL && kf_q %% (I)%" PRId64 "LL == 0) {", end - start, step);
  kf_strbuf off;
  kf_strbuf_init(&off);
  char coord[64];
  for (int j = 0; j < st->rank; j++) {
    if (j == d) snprintf(coord, sizeof coord, "kf_q / (I)%" PRId64 "LL", step);
    else snprintf(coord, sizeof coord, "c[%d]", j);
    add_term(&off, coord, st->strides[j]);
  }
  kb_emit(&x.k, "  KF_ST(0, KF_LDX(%d, (I)0%s));", b, off.data ? off.data : "");
  kf_strbuf_fini(&off);
  kf_strbuf_init(&off);
  for (int j = 0; j < t->rank; j++) {
    snprintf(coord, sizeof coord, "c[%d]", j);
    add_term(&off, coord, t->strides[j]);
  }
  kb_emit(&x.k, "} else {");
  kb_emit(&x.k, "  KF_ST(0, KF_LDX(%d, (I)0%s));", a, off.data ? off.data : "");
  kb_emit(&x.k, "}");
  kf_strbuf_fini(&off);
  kf_status s = gx_finish(&x, g, r, u, src, diag);
  kb_fini(&x.k);
  (void)p;
  return s;
}

/* One spatial dim's taps (source indices kf_i<d>[], weights kf_w<d>[])
 * for output coordinate c[k], in the arithmetic of ATen's CPU kernels
 * (interp/nn.c, upsample_taps, is the reference): nearest in float,
 * linear and cubic in the register type. Returns the tap count. */
static int upsample_taps(gx *x, const char *mode, bool align, double scale, int64_t in, int64_t out, int k,
                         int d) {
  kb_kernel *kk = &x->k;
  if (strncmp(mode, "nearest", 7) == 0) {
    bool exact = mode[7] == '-';
    float s = scale > 0 ? (float)(1.0 / scale) : (float)in / (float)out;
    kb_emit(kk, "I kf_i%d[1];", d);
    if (!exact && out == in) {
      kb_emit(kk, "kf_i%d[0] = c[%d];", d, k);
      return 1;
    }
    if (!exact && out == 2 * in) {
      kb_emit(kk, "kf_i%d[0] = c[%d] >> 1;", d, k);
      return 1;
    }
    if (exact)
      kb_emit(kk, "kf_i%d[0] = (I)floorf((float)(((double)c[%d] + 0.5) * (double)(float)(%.17g)));", d, k,
              (double)s);
    else
      kb_emit(kk, "kf_i%d[0] = (I)floorf((float)c[%d] * (float)(%.17g));", d, k, (double)s);
    kb_emit(kk, "if (kf_i%d[0] > (I)%" PRId64 "LL) kf_i%d[0] = (I)%" PRId64 "LL;", d, in - 1, d, in - 1);
    return 1;
  }
  const char *R = x->k.opt->fp64 ? "double" : "float";
  bool cubic = strcmp(mode, "cubic") == 0;
  int nt = cubic ? 4 : 2;
  kb_emit(kk, "I kf_i%d[%d];", d, nt);
  kb_emit(kk, "%s kf_w%d[%d];", R, d, nt);
  if (!cubic && out == in && !align) {
    kb_emit(kk, "kf_i%d[0] = kf_i%d[1] = c[%d];", d, d, k);
    kb_emit(kk, "kf_w%d[0] = (%s)1;", d, R);
    kb_emit(kk, "kf_w%d[1] = (%s)0;", d, R);
    return nt;
  }
  double sc = align ? (out > 1 ? (double)(in - 1) / (double)(out - 1) : 0.0)
                    : (scale > 0 ? 1.0 / scale : (double)in / (double)out);
  kb_emit(kk, "{");
  if (align)
    kb_emit(kk, "%s kf_s = (%s)(%.17g) * (%s)c[%d];", R, R, sc, R, k);
  else
    kb_emit(kk, "%s kf_s = (%s)(%.17g) * ((%s)c[%d] + (%s)0.5) - (%s)0.5;", R, R, sc, R, k, R, R);
  if (!cubic) {
    kb_emit(kk, "if (kf_s < (%s)0) kf_s = (%s)0;", R, R);
    kb_emit(kk, "const I kf_j = (I)kf_s;");
    kb_emit(kk, "%s kf_l = kf_s - (%s)kf_j;", R, R);
    kb_emit(kk, "kf_l = kf_l < (%s)0 ? (%s)0 : kf_l > (%s)1 ? (%s)1 : kf_l;", R, R, R, R);
    kb_emit(kk, "kf_i%d[0] = kf_j;", d);
    kb_emit(kk, "kf_i%d[1] = kf_j < (I)%" PRId64 "LL ? kf_j + 1 : kf_j;", d, in - 1);
    kb_emit(kk, "kf_w%d[0] = (%s)1 - kf_l;", d, R);
    kb_emit(kk, "kf_w%d[1] = kf_l;", d);
  } else {
    /* Keys' cubic convolution, A = -0.75 (get_cubic_upsample_coefficients) */
    kb_emit(kk, "I kf_j = (I)kf::floor_(kf_s);");
    kb_emit(kk, "if (kf_j > (I)%" PRId64 "LL) kf_j = (I)%" PRId64 "LL;", in - 1, in - 1);
    kb_emit(kk, "%s kf_t = kf_s - (%s)kf_j;", R, R);
    kb_emit(kk, "kf_t = kf_t < (%s)0 ? (%s)0 : kf_t > (%s)1 ? (%s)1 : kf_t;", R, R, R, R);
    kb_emit(kk, "const %s kf_a = (%s)-0.75, kf_x1 = kf_t + (%s)1, kf_x2 = (%s)1 - kf_t, kf_x3 = kf_x2 + (%s)1;",
            R, R, R, R, R);
    kb_emit(kk, "kf_w%d[0] = ((kf_a * kf_x1 - (%s)5 * kf_a) * kf_x1 + (%s)8 * kf_a) * kf_x1 - (%s)4 * kf_a;", d,
            R, R, R);
    kb_emit(kk, "kf_w%d[1] = ((kf_a + (%s)2) * kf_t - (kf_a + (%s)3)) * kf_t * kf_t + (%s)1;", d, R, R, R);
    kb_emit(kk, "kf_w%d[2] = ((kf_a + (%s)2) * kf_x2 - (kf_a + (%s)3)) * kf_x2 * kf_x2 + (%s)1;", d, R, R, R);
    kb_emit(kk, "kf_w%d[3] = ((kf_a * kf_x3 - (%s)5 * kf_a) * kf_x3 + (%s)8 * kf_a) * kf_x3 - (%s)4 * kf_a;", d,
            R, R, R);
    kb_emit(kk, "for (int kf_u = 0; kf_u < 4; kf_u++) {");
    kb_emit(kk, "  const I kf_v = kf_j - 1 + kf_u;");
    kb_emit(kk, "  kf_i%d[kf_u] = kf_v < 0 ? (I)0 : kf_v > (I)%" PRId64 "LL ? (I)%" PRId64 "LL : kf_v;", d,
            in - 1, in - 1);
    kb_emit(kk, "}");
  }
  kb_emit(kk, "}");
  return nt;
}

/* kf.upsample: each output element sums its taps' products of weights
 * (none for nearest: one load, any dtype) */
static kf_status op_upsample(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                             const kf_op *op, kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_value *xv = op->operands[0], *r = op->results[0];
  const kf_type *t = &xv->type;
  const char *mode = kf_op_get_str(op, "mode");
  bool align = kf_op_get_bool(op, "align_corners");
  int ns;
  const double *scales = kf_op_get_floats(op, "scales", &ns);
  int sp = t->rank - 2;
  if (sp < 1 || sp > 3 || ns != sp) return kb_unsupported(diag, g, op, "rank %d", t->rank);
  gx x;
  gx_init(&x, o, u, &r->type);
  int a = gx_input(&x, g, xv);
  int nt[3];
  for (int d = 0; d < sp; d++)
    nt[d] = upsample_taps(&x, mode, align, scales[d], t->shape[2 + d], r->type.shape[2 + d], 2 + d, d);
  kf_strbuf off;
  kf_strbuf_init(&off);
  char coord[64];
  for (int j = 0; j < t->rank; j++) {
    if (j < 2) snprintf(coord, sizeof coord, "c[%d]", j);
    else if (nt[j - 2] == 1) snprintf(coord, sizeof coord, "kf_i%d[0]", j - 2);
    else snprintf(coord, sizeof coord, "kf_i%d[kf_t%d]", j - 2, j - 2);
    add_term(&off, coord, t->strides[j]);
  }
  if (strncmp(mode, "nearest", 7) == 0) {
    gx_emit_offset_load(&x, a, &off, NULL, t->dtype, NULL);
  } else {
    const char *R = reg(&x, t->dtype);
    kb_emit(&x.k, "%s kf_acc = (%s)0;", R, R);
    kf_strbuf w;
    kf_strbuf_init(&w);
    for (int d = 0; d < sp; d++) {
      kb_emit(&x.k, "for (int kf_t%d = 0; kf_t%d < %d; kf_t%d++)", d, d, nt[d], d);
      kf_strbuf_printf(&w, "%skf_w%d[kf_t%d]", d ? " * " : "", d, d);
    }
    kb_emit(&x.k, "  kf_acc += %s * KF_LDX(%d, (I)0%s);", w.data, a, off.data ? off.data : "");
    kb_emit(&x.k, "KF_ST(0, kf_acc);");
    kf_strbuf_fini(&w);
  }
  kf_strbuf_fini(&off);
  kf_status s = gx_finish(&x, g, r, u, src, diag);
  kb_fini(&x.k);
  (void)p;
  return s;
}

/* ---- pools (pool.cu) --------------------------------------------------------- */

static void list3(char *buf, size_t n, const int64_t *v) {
  snprintf(buf, n, "%lldLL, %lldLL, %lldLL", (long long)v[0], (long long)v[1], (long long)v[2]);
}

static kf_status op_pool(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                         const kf_op *op, kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_value *xv = op->operands[0], *r = op->results[0];
  const kf_type *t = &xv->type, *rt = &r->type;
  if (!kf_dtype_is_float(t->dtype)) return kb_unsupported(diag, g, op, "pooling of a non-float tensor");
  int nk;
  int mode = op->code == KF_OP_MAX_POOL ? 0 : op->code == KF_OP_AVG_POOL ? 1 : 2;
  int64_t K[3] = {1, 1, 1}, S[3] = {1, 1, 1}, P[3] = {0, 0, 0}, D[3] = {1, 1, 1};
  if (mode < 2) {
    int n1, n2, n3;
    const int64_t *k = kf_op_get_ints(op, "kernel", &nk);
    const int64_t *s = kf_op_get_ints(op, "stride", &n1);
    const int64_t *pd = kf_op_get_ints(op, "padding", &n2);
    const int64_t *dl = mode == 0 ? kf_op_get_ints(op, "dilation", &n3) : NULL;
    for (int i = 0; i < nk; i++) {
      K[3 - nk + i] = k[i];
      S[3 - nk + i] = s[i];
      P[3 - nk + i] = pd[i];
      if (dl) D[3 - nk + i] = dl[i];
    }
  } else {
    /* adaptive: the dims whose size changes must be the last three */
    nk = 0;
    for (int i = 0; i < t->rank && !nk; i++)
      if (t->shape[i] != rt->shape[i]) nk = t->rank - i;
    if (nk > 3) return kb_unsupported(diag, g, op, "adaptive pooling over more than 3 dims");
    if (nk == 0) nk = 1;
  }
  if (nk > t->rank) return kb_unsupported(diag, g, op, "rank too small for the pool");
  int lr = t->rank - nk;
  int64_t IN[3] = {1, 1, 1}, IST[3] = {0, 0, 0}, OUT[3] = {1, 1, 1};
  for (int i = 0; i < nk; i++) {
    IN[3 - nk + i] = t->shape[lr + i];
    IST[3 - nk + i] = t->strides[lr + i];
    OUT[3 - nk + i] = rt->shape[lr + i];
  }
  char name[96];
  snprintf(name, sizeof name, "%s_k%d", u->name, u->n_steps);
  kb_kernel k;
  kb_init(&k, o, name, 1, (const int64_t[]){1});
  int px = kb_use_param(&k, KF_UARG_INPUT, kb_group_input(g, xv), t->dtype, false);
  int oy = kb_group_output(g, r);
  int oi = mode == 0 ? kb_group_output(g, op->results[1]) : -1;
  if (oy < 0 && oi < 0) {
    kb_fini(&k);
    return KF_OK;
  }
  /* values are needed even when only the indices leave the group: write
   * them to scratch */
  int py;
  if (oy >= 0) {
    py = kb_use_param(&k, KF_UARG_OUTPUT, oy, rt->dtype, true);
  } else {
    int sidx = kf_unit_add_scratch(u, kf_type_numel(rt) * (int64_t)kf_dtype_size(rt->dtype));
    if (sidx < 0) {
      kb_fini(&k);
      return KF_ERR_NOMEM;
    }
    py = kb_use_param(&k, KF_UARG_SCRATCH, sidx, rt->dtype, true);
  }
  int pi = oi >= 0 ? kb_use_param(&k, KF_UARG_OUTPUT, oi, KF_DTYPE_I64, true) : -1;
  int64_t planes = 1;
  char ls[256] = "", lst[256] = "", b[128];
  size_t o1 = 0, o2 = 0;
  for (int i = 0; i < lr; i++) {
    planes *= t->shape[i];
    o1 += (size_t)snprintf(ls + o1, sizeof ls - o1, "%s%lldLL", i ? ", " : "", (long long)t->shape[i]);
    o2 += (size_t)snprintf(lst + o2, sizeof lst - o2, "%s%lldLL", i ? ", " : "", (long long)t->strides[i]);
  }
  if (lr == 0) {
    snprintf(ls, sizeof ls, "1LL");
    snprintf(lst, sizeof lst, "0LL");
  }
  kb_def_params(&k);
  kb_def(&k, "KF_MODE", "%d", mode);
  kb_def(&k, "KF_LRANK", "%d", lr ? lr : 1);
  kb_def(&k, "KF_LSHAPE", "%s", ls);
  kb_def(&k, "KF_LST", "%s", lst);
  kb_def(&k, "KF_PLANES", "%lldLL", (long long)planes);
  list3(b, sizeof b, IN);
  kb_def(&k, "KF_IN", "%s", b);
  list3(b, sizeof b, IST);
  kb_def(&k, "KF_IST", "%s", b);
  list3(b, sizeof b, OUT);
  kb_def(&k, "KF_OUT", "%s", b);
  list3(b, sizeof b, K);
  kb_def(&k, "KF_K", "%s", b);
  list3(b, sizeof b, S);
  kb_def(&k, "KF_S", "%s", b);
  list3(b, sizeof b, P);
  kb_def(&k, "KF_P", "%s", b);
  list3(b, sizeof b, D);
  kb_def(&k, "KF_D", "%s", b);
  /* windows of up to 64 elements unrolled, larger ones along their
   * innermost dim (pool.cu): 1-d max pool over 8 of [64, 192, 65536] 5.77
   * -> 4.05 ms, 2-d over 4x4 of [32, 64, 512, 512] 8.64 -> 5.04 ms; 3-d
   * over 3x3x3 of [16, 32, 128, 128, 128] 2.30 ms against eager's 3.92
   * (KernelBench L1 41, 42, 43, H100, 2026-11-25) */
  int smallk = mode == 2 ? 0 : K[0] * K[1] * K[2] <= 64 ? 1 : K[2] <= 64 ? 2 : 0;
  kb_def(&k, "KF_SMALLK", "%d", smallk);
  kb_def(&k, "KF_CIP", "%d", mode == 1 && kf_op_get_bool(op, "count_include_pad") ? 1 : 0);
  kb_def(&k, "KF_DIV", "%lldLL", mode == 1 && kf_op_has_attr(op, "divisor") ? (long long)kf_op_get_int(op, "divisor") : 0LL);
  kb_def(&k, "KF_XS", "%s", kb_storage_type(t->dtype));
  kb_def(&k, "KF_ACC", "%s", kb_reg_type(t->dtype == KF_DTYPE_F64 ? KF_DTYPE_F64 : KF_DTYPE_F32, o->fp64));
  kb_def(&k, "KF_X", "kf_p%d", px);
  kb_def(&k, "KF_Y", "kf_p%d", py);
  kb_def(&k, "KF_HAS_IDX", "%d", pi >= 0 ? 1 : 0);
  if (pi >= 0) kb_def(&k, "KF_YI", "kf_p%d", pi);
  int64_t total = kf_type_numel(rt);
  int64_t ext = type_extent(t);
  kb_def(&k, "KF_INDEX", "%s", (total < ((int64_t)1 << 30) && ext < ((int64_t)1 << 30)) ? "int" : "long long");
  kb_rules rr = kb_rules_elementwise(o, total, 4, false);
  kb_def(&k, "KF_BLOCK", "%d", rr.block);
  uint32_t grid[3] = {rr.grid, 1, 1}, block[3] = {(uint32_t)rr.block, 1, 1};
  kf_status st = kb_finish(&k, u, src, "pool.cu", grid, block, 0, diag);
  kb_fini(&k);
  (void)p;
  return st;
}

/* ---- dispatch ------------------------------------------------------------------- */

kf_status kb_unit_opaque(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                         kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  bool all_ew = g->n_ops > 0;
  for (int i = 0; i < g->n_ops; i++) all_ew &= kb_expr_can(g->ops[i]);
  if (all_ew) return kb_unit_elementwise(p, g, o, u, src, diag);
  if (g->n_ops > 1) {
    /* a cat with the element-wise ops computing its pieces */
    const kf_op *cat = NULL;
    int n_other = 0;
    for (int i = 0; i < g->n_ops; i++) {
      if (g->ops[i]->code == KF_OP_CAT && !cat) cat = g->ops[i];
      else if (!kb_expr_can(g->ops[i])) n_other++;
    }
    if (cat && n_other == 0) {
      for (int i = 0; i < cat->n_results; i++)
        if (kf_type_numel(&cat->results[i]->type) == 0) return KF_OK;
      return op_cat_fused(p, g, o, cat, u, src, diag);
    }
  }
  if (g->n_ops != 1) return kb_unsupported(diag, g, NULL, "an opaque group of %d ops", g->n_ops);
  const kf_op *op = g->ops[0];
  for (int i = 0; i < op->n_operands; i++) {
    const kf_value *v = op->operands[i];
    if (v && v->type.kind == KF_TYPE_TENSOR && kb_group_input(g, v) < 0)
      return kb_unsupported(diag, g, op, "operand %d is not a group input", i);
  }
  for (int i = 0; i < op->n_results; i++)
    if (kf_type_numel(&op->results[i]->type) == 0) return KF_OK;
  switch (op->code) {
  case KF_OP_RESHAPE: return op_reshape(p, g, o, op, u, src, diag);
  case KF_OP_CAT: return op_cat(p, g, o, op, u, src, diag);
  case KF_OP_PAD: return op_pad(p, g, o, op, u, src, diag);
  case KF_OP_INDEX_SELECT: return op_index_select(p, g, o, op, u, src, diag);
  case KF_OP_GATHER: return op_gather(p, g, o, op, u, src, diag);
  case KF_OP_EMBEDDING: return op_embedding(p, g, o, op, u, src, diag);
  case KF_OP_INDEX: return op_index(p, g, o, op, u, src, diag);
  case KF_OP_SLICE_SCATTER: return op_slice_scatter(p, g, o, op, u, src, diag);
  case KF_OP_UPSAMPLE: return op_upsample(p, g, o, op, u, src, diag);
  case KF_OP_MAX_POOL: case KF_OP_AVG_POOL: case KF_OP_ADAPTIVE_AVG_POOL:
    return op_pool(p, g, o, op, u, src, diag);
  case KF_OP_RNN: return kb_unit_rnn(g, o, op, u, src, diag);
  default: break;
  }
  return kb_unsupported(diag, g, op, "no built-in kernel for this op");
}
