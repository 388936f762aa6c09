/* agent/builtin_ew.c — element-wise launches (agent/templates/elementwise.cu).
 *
 * kb_ew_emit builds one launch computing chosen values of a group over one
 * iteration shape; it serves element-wise groups, epilogues that run as a
 * second launch after a library step, and data movement that is an
 * element-wise copy (materialised views, pieces of cat). Only the ops the
 * requested values depend on are emitted. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"

/* ops among l->ops needed to compute the requested values */
static void mark(const kb_ew_launch *l, const kf_value *v, bool *need, int depth) {
  if (!v->def || depth > 100000) return;
  for (int i = 0; i < l->n_bound; i++)
    if (l->bound_vals[i] == v) return;
  for (int i = 0; i < l->n_ops; i++) {
    if (l->ops[i] != v->def) continue;
    if (need[i]) return;
    need[i] = true;
    for (int j = 0; j < v->def->n_operands; j++)
      if (v->def->operands[j]) mark(l, v->def->operands[j], need, depth + 1);
    return;
  }
}

/* The launch's loop order: the dims of the first output by decreasing
 * stride (size-1 dims outermost, ties in their order), so the innermost
 * loop dim is the one contiguous in memory. Row-major outputs keep the
 * identity; channels-last ones (pass/layout.c) loop N, H, W, C, so their
 * accesses move along C with stride 1 and can be vectorised — looping in
 * NCHW order over NHWC tensors strode 64 floats per thread and took 149
 * us for a 25.7 MB ReLU (H200, 2026-11-22). */
static void memory_order(const kb_ew_launch *l, int *perm) {
  for (int i = 0; i < l->rank; i++) perm[i] = i;
  if (l->n_out == 0 || l->out_type[0]->rank != l->rank) return;
  const kf_type *t = l->out_type[0];
  for (int i = 1; i < l->rank; i++) /* insertion sort: stable, rank <= 8 */
    for (int j = i; j > 0; j--) {
      int a = perm[j - 1], b = perm[j];
      bool a1 = t->shape[a] == 1, b1 = t->shape[b] == 1;
      bool swap = !a1 && (b1 || t->strides[b] > t->strides[a]);
      if (!swap) break;
      perm[j - 1] = b;
      perm[j] = a;
    }
}

/* ---- tiled launches (agent/templates/ew_tiled.cu) -------------------------- */

/* Shared memory a tiled launch may use (static, under the 48 KiB limit). */
#define TILE_SMEM_MAX (40 << 10)

typedef struct kb_tiling {
  int da, dt;   /* the innermost loop dim; the dim the tiled accesses walk */
  int ta, tt;   /* tile extents along them (powers of two) */
  int block;
  bool lt[KB_MAX_ACCESS], stt[KB_MAX_ACCESS]; /* tiled loads, stores */
  int64_t nta, ntt, blocks;
} kb_tiling;

static int64_t p2ceil(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

/* A launch whose accesses cannot all walk the innermost loop dim (stride 0
 * or 1 there) is tiled when every one that cannot walks a common other dim
 * with stride 1: a layout change fused with the element-wise ops around
 * it, or an operand read transposed. Without a tiling each element's
 * offsets come from its coordinates and one side of the copy is strided —
 * a channels-last <-> NCHW pass over 1 GB took 2.2 ms in cuDNN's own
 * transposes where a coalesced one takes 0.7 (H100, 2026-11-25). */
static bool tile_plan(const kb_kernel *k, const kf_builtin_options *o, kb_tiling *t) {
  memset(t, 0, sizeof *t);
  int R = k->rank;
  if (R < 2 || k->n_idx > 0) return false;
  if (strstr(k->body.data ? k->body.data : "", "KF_LDX")) return false;
  t->da = R - 1;
  t->dt = -1;
  int n_tiled = 0, regb = 0;
  for (int i = 0; i < k->n_loads + k->n_stores; i++) {
    bool is_load = i < k->n_loads;
    const kb_access *a = is_load ? &k->loads[i] : &k->stores[i - k->n_loads];
    int64_t s = a->st[t->da];
    if (s == 0 || s == 1) continue;
    int d = -1;
    for (int j = 0; j < R - 1; j++)
      if (a->st[j] == 1) d = j;
    if (d < 0 || (t->dt >= 0 && d != t->dt)) return false;
    t->dt = d;
    if (is_load)
      t->lt[i] = true;
    else
      t->stt[i - k->n_loads] = true;
    n_tiled++;
    int b = (int)kf_dtype_size(kb_reg_dtype(k->params[a->param].dtype, o && o->fp64));
    if (b > regb) regb = b;
  }
  if (t->dt < 0) return false;
  int64_t sa = k->shape[t->da], sd = k->shape[t->dt];
  /* 32 x 32 at most to start with, then grown (the smaller side first)
   * to 2048 elements: 8 per thread of 256 */
  int64_t ta = p2ceil(sa) < 32 ? p2ceil(sa) : 32, tt = p2ceil(sd) < 32 ? p2ceil(sd) : 32;
  while (ta * tt < 2048) {
    bool ga = ta < sa, gt = tt < sd;
    if (ga && (!gt || ta <= tt))
      ta *= 2;
    else if (gt)
      tt *= 2;
    else
      break;
  }
  if (o && o->tile_a > 0) ta = o->tile_a;
  if (o && o->tile_t > 0) tt = o->tile_t;
  while (ta * tt > 256 && (int64_t)n_tiled * ta * (tt + 1) * regb > TILE_SMEM_MAX) {
    if (ta >= tt)
      ta /= 2;
    else
      tt /= 2;
  }
  if ((int64_t)n_tiled * ta * (tt + 1) * regb > TILE_SMEM_MAX) return false;
  t->ta = (int)ta;
  t->tt = (int)tt;
  t->block = ta * tt < 256 ? (int)(ta * tt) : 256;
  if (t->block < 32) t->block = 32; /* a warp; the extra threads idle */
  t->nta = (sa + ta - 1) / ta;
  t->ntt = (sd + tt - 1) / tt;
  int64_t outer = 1;
  for (int d = 0; d < R; d++)
    if (d != t->da && d != t->dt) outer *= k->shape[d];
  if (t->nta > INT32_MAX / t->ntt || t->nta * t->ntt > INT32_MAX / outer) return false;
  t->blocks = t->nta * t->ntt * outer;
  return true;
}

static kf_status emit_tiled(kb_kernel *k, const kb_tiling *t, kf_unit *u, kf_strbuf *src,
                            kf_diag *diag) {
  int R = k->rank;
  kb_def_params(k);
  kb_def_accesses(k, "ST", 0, R);
  char buf[512], nm[32];
  size_t off = 0;
  buf[0] = '\0';
  for (int d = 0; d < R; d++)
    off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%lldLL", d ? ", " : "", (long long)k->shape[d]);
  kb_def(k, "KF_RANK", "%d", R);
  kb_def(k, "KF_SHAPE", "%s", buf);
  kb_def(k, "KF_DA", "%d", t->da);
  kb_def(k, "KF_DT", "%d", t->dt);
  kb_def(k, "KF_TA", "%d", t->ta);
  kb_def(k, "KF_TT", "%d", t->tt);
  kb_def(k, "KF_NTA", "%lldLL", (long long)t->nta);
  kb_def(k, "KF_NTT", "%lldLL", (long long)t->ntt);
  /* the block's threads divide its tile (both powers of two), or a warp
   * covers a smaller tile (the template's loop then runs once, guarded) */
  int block = t->block;
  kb_def(k, "KF_BLOCK", "%d", block);
  kb_def(k, "KF_INDEX", "%s", kb_extent(k) < ((int64_t)1 << 31) - ((int64_t)1 << 26) ? "int" : "long long");
  for (int i = 0; i < k->n_loads; i++) {
    snprintf(nm, sizeof nm, "KF_L%d_T", i);
    kb_def(k, nm, "%d", t->lt[i] ? 1 : 0);
  }
  for (int i = 0; i < k->n_stores; i++) {
    snprintf(nm, sizeof nm, "KF_S%d_T", i);
    kb_def(k, nm, "%d", t->stt[i] ? 1 : 0);
  }
  kb_def_body(k, "KF_BODY");
  uint32_t grid[3] = {(uint32_t)t->blocks, 1, 1}, blk[3] = {(uint32_t)block, 1, 1};
  return kb_finish(k, u, src, "ew_tiled.cu", grid, blk, 0, diag);
}

/* The launches kb_ew_emit added (steps first..) write each output at its
 * out_offset from the argument's start. */
static void apply_out_offsets(const kb_ew_launch *l, kf_unit *u, int first) {
  for (int i = 0; i < l->n_out; i++) {
    if (!l->out_offset[i]) continue;
    for (int s = first; s < u->n_steps; s++)
      for (int a = 0; a < u->steps[s].n_args; a++) {
        kf_unit_arg *arg = &u->steps[s].args[a];
        if (arg->kind == l->out_kind[i] && arg->index == l->out_index[i]) arg->i += l->out_offset[i];
      }
  }
}

static kf_status emit_launch(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                             const kb_ew_launch *l, kf_unit *u, kf_strbuf *src, kf_diag *diag);

kf_status kb_ew_emit(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                     const kb_ew_launch *l, kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  int first = u->n_steps;
  kf_status st = emit_launch(p, g, o, l, u, src, diag);
  if (!st) apply_out_offsets(l, u, first);
  return st;
}

static kf_status emit_launch(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                             const kb_ew_launch *l, kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  char name[96];
  snprintf(name, sizeof name, "%s_k%d", u->name, u->n_steps);
  int perm[KF_MAX_RANK];
  memory_order(l, perm);
  int64_t loop_shape[KF_MAX_RANK];
  for (int i = 0; i < l->rank; i++) loop_shape[i] = l->shape[perm[i]];
  kb_kernel k;
  kb_init(&k, o, name, l->rank ? l->rank : 1, l->rank ? loop_shape : (const int64_t[]){1});
  kb_frame f;
  kb_frame_identity(&f, l->rank, l->shape);
  for (int i = 0; i < l->rank; i++) f.loop_dim[perm[i]] = i;
  kb_expr e;
  bool *need = calloc((size_t)l->n_ops + 1, sizeof *need);
  kf_status st = need ? kb_expr_init(&e, &k, p, g, &f, diag) : KF_ERR_NOMEM;
  if (st) {
    free(need);
    kb_fini(&k);
    return st;
  }
  for (int i = 0; i < l->n_out; i++) mark(l, l->out_vals[i], need, 0);

  /* values read from buffers the unit already wrote (a GEMM result) */
  for (int i = 0; i < l->n_bound && !st; i++) {
    int64_t s[KF_MAX_RANK];
    if (!kb_frame_strides(&f, k.rank, l->bound_type[i], s)) {
      st = kb_unsupported(diag, g, l->bound_vals[i]->def, "intermediate does not broadcast to the epilogue");
      break;
    }
    int prm = kb_use_param(&k, l->bound_kind[i], l->bound_index[i], l->bound_type[i]->dtype, false);
    int a = kb_load(&k, prm, s);
    char nm[32];
    snprintf(nm, sizeof nm, "b%d", i);
    kb_emit(&k, "const %s %s = KF_LD(%d);", kb_reg_type(l->bound_type[i]->dtype, o->fp64), nm, a);
    if (i == 0 && l->addmm) {
      /* beta * bias + (alpha * a @ b), in the result's dtype */
      const kf_value *r = l->addmm->results[0], *bias = l->addmm->operands[0];
      const char *bv;
      if ((st = kb_expr_value(&e, bias, &bv))) break;
      char raw[128], bc[600], beta[96], expr[1000];
      kb_reg_convert(&e, nm, l->bound_type[i]->dtype, r->type.dtype, raw, sizeof raw);
      kb_convert(&e, bv, bias->type.dtype, r->type.dtype, bc, sizeof bc);
      kf_number bn = kf_op_get_number(l->addmm, "beta");
      if (kf_number_as_double(bn) == 1.0) {
        snprintf(expr, sizeof expr, "kf::add(%s, %s)", raw, bc);
      } else {
        kb_literal(bn, kb_reg_dtype(r->type.dtype, o->fp64), o->fp64, beta, sizeof beta);
        snprintf(expr, sizeof expr, "kf::add(%s, %s, %s)", raw, bc, beta);
      }
      st = kb_bind_local(&e, r, r->type.dtype, expr);
    } else if (i == 0 && l->conv && l->conv->n_operands > 2 && l->conv->operands[2]) {
      /* the convolution's bias, per output channel */
      const kf_value *r = l->conv->results[0], *bias = l->conv->operands[2];
      int64_t bs[KF_MAX_RANK];
      kb_frame_channel_strides(&f, 1, &bias->type, bs);
      char bn[32], raw[128], bc[600], expr[1000];
      if ((st = kb_expr_load(&e, bias, bs, bn, sizeof bn))) break;
      kb_reg_convert(&e, nm, l->bound_type[i]->dtype, r->type.dtype, raw, sizeof raw);
      kb_convert(&e, bn, bias->type.dtype, r->type.dtype, bc, sizeof bc);
      snprintf(expr, sizeof expr, "kf::add(%s, %s)", raw, bc);
      st = kb_bind_local(&e, r, r->type.dtype, expr);
    } else {
      st = kb_expr_bind(&e, l->bound_vals[i], nm);
    }
  }
  for (int i = 0; i < l->n_ops && !st; i++) {
    if (!need[i]) continue;
    if (!kb_expr_can(l->ops[i])) {
      st = kb_unsupported(diag, g, l->ops[i], "not an element-wise op (in an element-wise launch)");
      break;
    }
    st = kb_expr_op(&e, l->ops[i]);
  }
  for (int i = 0; i < l->n_out && !st; i++) {
    const char *x;
    if ((st = kb_expr_value(&e, l->out_vals[i], &x))) break;
    int64_t s[KF_MAX_RANK];
    if (!kb_frame_strides(&f, k.rank, l->out_type[i], s)) {
      st = kb_unsupported(diag, g, l->out_vals[i]->def, "output shape differs from the launch's");
      break;
    }
    int prm = kb_use_param(&k, l->out_kind[i], l->out_index[i], l->out_type[i]->dtype, true);
    int a = kb_store(&k, prm, s);
    kb_emit(&k, "KF_ST(%d, %s);", a, x);
  }
  kb_expr_fini(&e);
  free(need);
  if (st) {
    kb_fini(&k);
    return st;
  }

  kb_coalesce(&k, NULL);
  int R = k.rank;
  int64_t numel = 1;
  for (int d = 0; d < R; d++) numel *= k.shape[d];

  /* vector path: every access moves along the innermost dim with stride 1
   * (or 0: a value broadcast along it), stores never broadcast, group
   * starts stay aligned (outer strides multiples of the width) */
  int min_bytes = 16;
  bool can_vec = k.n_idx == 0 && numel > 1;
  /* a vector store needs its slice to start on a vector boundary */
  for (int i = 0; i < l->n_out; i++)
    if (l->out_offset[i] % 16) can_vec = false;
  for (int i = 0; i < k.n_loads + k.n_stores && can_vec; i++) {
    const kb_access *a = i < k.n_loads ? &k.loads[i] : &k.stores[i - k.n_loads];
    int64_t in = a->st[R - 1];
    if (in != 0 && in != 1) can_vec = false;
    if (i >= k.n_loads && in != 1) can_vec = false;
    if (in == 1) {
      int b = (int)kf_dtype_size(k.params[a->param].dtype);
      if (b < min_bytes) min_bytes = b;
    }
  }
  kb_rules r = kb_rules_elementwise(o, numel, min_bytes, can_vec);
  if (r.vec > 1) {
    if (R > 1 && k.shape[R - 1] % r.vec) r.vec = 1;
    for (int i = 0; i < k.n_loads + k.n_stores && r.vec > 1; i++) {
      const kb_access *a = i < k.n_loads ? &k.loads[i] : &k.stores[i - k.n_loads];
      if (a->st[R - 1] != 1) continue;
      for (int d = 0; d < R - 1; d++)
        if (a->st[d] % r.vec) r.vec = 1;
    }
    if (r.vec == 1) r = kb_rules_elementwise(o, numel, min_bytes, false);
  }

  kb_tiling tl;
  if (r.vec == 1 && tile_plan(&k, o, &tl)) {
    st = emit_tiled(&k, &tl, u, src, diag);
    kb_fini(&k);
    return st;
  }

  kb_def_params(&k);
  kb_def_accesses(&k, "ST", 0, R);
  char buf[512], nm[32];
  size_t off = 0;
  buf[0] = '\0';
  for (int d = 0; d < R; d++)
    off += (size_t)snprintf(buf + off, sizeof buf - off, "%s%lldLL", d ? ", " : "", (long long)k.shape[d]);
  kb_def(&k, "KF_RANK", "%d", R);
  kb_def(&k, "KF_SHAPE", "%s", buf);
  kb_def(&k, "KF_NUMEL", "%lldLL", (long long)numel);
  kb_def(&k, "KF_BLOCK", "%d", r.block);
  kb_def(&k, "KF_VEC", "%d", r.vec);
  kb_def(&k, "KF_INDEX", "%s", kb_extent(&k) < ((int64_t)1 << 31) - ((int64_t)1 << 26) ? "int" : "long long");
  for (int i = 0; i < k.n_loads; i++) {
    snprintf(nm, sizeof nm, "KF_L%d_B", i);
    kb_def(&k, nm, "%d", k.loads[i].st[R - 1] == 0 ? 1 : 0);
  }
  kb_def_body(&k, "KF_BODY");
  uint32_t grid[3] = {r.grid, 1, 1}, block[3] = {(uint32_t)r.block, 1, 1};
  st = kb_finish(&k, u, src, "elementwise.cu", grid, block, 0, diag);
  kb_fini(&k);
  return st;
}

static bool same_shape(const kf_type *a, int rank, const int64_t *shape) {
  if (a->rank != rank) return false;
  for (int i = 0; i < rank; i++)
    if (a->shape[i] != shape[i]) return false;
  return true;
}

kf_status kb_unit_elementwise(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                              kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  if (g->n_outputs == 0) return KF_OK; /* nothing observable */
  if (g->n_outputs > KB_MAX_ACCESS)
    return kb_unsupported(diag, g, NULL, "more than %d outputs", KB_MAX_ACCESS);
  for (int i = 0; i < g->n_ops; i++)
    if (!kb_is_elementwise(g->ops[i]))
      return kb_unsupported(diag, g, g->ops[i], "not an element-wise op");
  /* one launch per distinct output shape (usually one): an output smaller
   * than the others (broadcast) gets its own launch over its own shape */
  bool *done = calloc((size_t)g->n_outputs, sizeof *done);
  if (!done) return KF_ERR_NOMEM;
  kf_status st = KF_OK;
  for (int i = 0; i < g->n_outputs && !st; i++) {
    if (done[i]) continue;
    const kf_type *t = &g->outputs[i]->type;
    if (t->kind != KF_TYPE_TENSOR) {
      st = kb_unsupported(diag, g, g->outputs[i]->def, "a scalar group output");
      break;
    }
    kb_ew_launch l;
    memset(&l, 0, sizeof l);
    l.rank = t->rank;
    memcpy(l.shape, t->shape, sizeof l.shape);
    l.n_ops = g->n_ops;
    l.ops = g->ops;
    for (int j = i; j < g->n_outputs; j++) {
      if (done[j] || !same_shape(&g->outputs[j]->type, t->rank, t->shape)) continue;
      done[j] = true;
      l.out_vals[l.n_out] = g->outputs[j];
      l.out_kind[l.n_out] = KF_UARG_OUTPUT;
      l.out_index[l.n_out] = j;
      l.out_type[l.n_out] = &g->outputs[j]->type;
      l.n_out++;
    }
    int64_t numel = 1;
    for (int d = 0; d < l.rank; d++) numel *= l.shape[d];
    if (numel == 0) continue;
    st = kb_ew_emit(p, g, o, &l, u, src, diag);
  }
  free(done);
  return st;
}
