/* agent/builtin_scan.c — SCAN groups: a cumsum or cumprod (forward or
 * reverse, inclusive or exclusive) with its element-wise prologue and
 * epilogue, on agent/templates/scan.cu.
 *
 * A scan keeps its operand's shape, so prologue, anchor and epilogue share
 * one loop: x's dims, split into kept dims (lines) and the scanned dim.
 * The prologue (the ops computing x) is evaluated per element as it is
 * loaded, the template scans, and the epilogue (every other op of the
 * group) runs per element on the scanned value before the stores; values
 * of the prologue that leave the group are stored there too. So a group
 * reads each input once and writes each output once.
 *
 * Layout by rule (kb_rules_scan in agent/builtin.c): lines whose elements
 * are contiguous (the common last-dim scan) are scanned by threads along
 * the line (a row layout: a warp segment or a block per line, 16-byte
 * vectors per thread, tiles carried along long lines); lines that are
 * strided while neighbouring lines are neighbours in memory (a scan over an
 * outer dim) get a column layout, each thread walking whole lines. Too few
 * lines to fill the GPU: each line is split into chunks over several
 * blocks, stage 1 writing each chunk's total to scratch and stage 2
 * scanning every chunk from the totals before it (the input is read twice,
 * the output written once). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"

typedef struct sctx {
  const kf_partition *p;
  const kf_group *g;
  const kf_builtin_options *o;
  const kf_op *anchor;
  const kf_value *x;
  int rank; /* loop rank (x's, at least 1) */
  int64_t shape[KF_MAX_RANK];
  int dim;  /* the scanned loop dim */
  kb_frame frame;
  kf_dtype acc, rdt;
  bool *pro; /* per group op: part of the prologue */
} sctx;

/* ---- bodies --------------------------------------------------------------- */

/* KF_PRO: the prologue, then x converted as ATen's scan sees it (cast to
 * the result dtype, then the accumulate type) */
static kf_status pro_body(sctx *c, kb_kernel *k, kf_diag *diag) {
  kb_expr e;
  kf_status st = kb_expr_init(&e, k, c->p, c->g, &c->frame, diag);
  if (st) return st;
  for (int i = 0; i < c->g->n_ops && !st; i++)
    if (c->pro[i]) st = kb_expr_op(&e, c->g->ops[i]);
  const char *xv = NULL;
  if (!st) st = kb_expr_value(&e, c->x, &xv);
  if (!st) {
    char as_r[1024], as_acc[1200];
    kb_convert(&e, xv, c->x->type.dtype, c->rdt, as_r, sizeof as_r);
    kb_reg_convert(&e, as_r, c->rdt, c->acc, as_acc, sizeof as_acc);
    kb_emit(k, "KF_YIELD(%s);", as_acc);
  }
  kb_expr_fini(&e);
  return st;
}

/* KF_EPI: the prologue's values again (dead code unless an output or the
 * epilogue reads them), the scan's result from KF_SCAN, the epilogue, and
 * every group output */
static kf_status epi_body(sctx *c, kb_kernel *k, kf_diag *diag) {
  kb_expr e;
  kf_status st = kb_expr_init(&e, k, c->p, c->g, &c->frame, diag);
  if (st) return st;
  const kf_group *g = c->g;
  for (int i = 0; i < g->n_ops && !st; i++)
    if (c->pro[i]) st = kb_expr_op(&e, g->ops[i]);
  if (!st) {
    char r[256];
    kb_reg_convert(&e, "KF_SCAN", c->acc, c->rdt, r, sizeof r);
    st = kb_bind_local(&e, c->anchor->results[0], c->rdt, r);
  }
  for (int i = 0; i < g->n_ops && !st; i++) {
    const kf_op *op = g->ops[i];
    if (c->pro[i] || op == c->anchor) continue;
    if (!kb_expr_can(op)) return kb_unsupported(diag, g, op, "not element-wise (in a scan epilogue)");
    int64_t s[KF_MAX_RANK];
    if (!kb_frame_strides(&e.frame, k->rank, &op->results[0]->type, s))
      return kb_unsupported(diag, g, op, "epilogue shape does not match the scan's");
    st = kb_expr_op(&e, op);
  }
  for (int i = 0; i < g->n_outputs && !st; i++) {
    const kf_value *v = g->outputs[i];
    int64_t s[KF_MAX_RANK];
    if (v->type.kind != KF_TYPE_TENSOR || !kb_frame_strides(&e.frame, k->rank, &v->type, s) ||
        !kf_type_same_dims(&v->type, &c->x->type))
      st = kb_unsupported(diag, g, v->def, "an output of another shape than the scan's");
    else
      st = kb_expr_store(&e, v, i);
  }
  kb_expr_fini(&e);
  return st;
}

/* ---- layout ------------------------------------------------------------------ */

typedef struct slayout {
  int nk;           /* kept dims after coalescing; the scanned dim (if any) is nk */
  int64_t lines, len;
  bool rows;
  int vec;          /* elements a vector access moves (1: none) */
  bool vld;         /* rows: every access walks the line with stride 0 or 1 */
} slayout;

static int64_t st_scan(const kb_kernel *k, const kb_access *a, const slayout *l) {
  return k->rank > l->nk ? a->st[l->nk] : 0;
}
static int64_t st_inner(const kb_access *a, const slayout *l) {
  return l->nk > 0 ? a->st[l->nk - 1] : 0;
}

static int pow2floor(int v) {
  int p = 1;
  while (p * 2 <= v) p *= 2;
  return p;
}

/* Rows or columns, and the vector width: the layout that moves more bytes
 * through contiguous accesses (a line's stride 1, or the innermost kept
 * dim's) wins; vectors of 16 bytes over the narrowest such access, up to 8
 * elements, where every access allows them. */
static void plan_layout(const sctx *c, const kb_kernel *k, slayout *l) {
  int64_t along = 0, across = 0;
  int min_row = 16, min_col = 16;
  const kb_access *tabs[2] = {k->loads, k->stores};
  int ns[2] = {k->n_loads, k->n_stores};
  for (int t = 0; t < 2; t++)
    for (int i = 0; i < ns[t]; i++) {
      const kb_access *a = &tabs[t][i];
      int b = (int)kf_dtype_size(k->params[a->param].dtype);
      if (st_scan(k, a, l) == 1) {
        along += b;
        if (b < min_row) min_row = b;
      } else if (st_inner(a, l) == 1) {
        across += b;
        if (b < min_col) min_col = b;
      }
    }
  l->rows = !(across > along && l->lines > 1 && l->len > 1);
  int want = 16 / (l->rows ? min_row : min_col);
  if (want > 8) want = 8;
  if (want < 1) want = 1;
  if (c->o->vector_width > 0) want = c->o->vector_width;
  if (c->o->fp64) want = want > 2 ? 2 : want; /* doubles in registers */
  l->vld = false;
  if (l->rows) {
    /* vectors along the line: every access walks it with stride 0 or 1;
     * whether a line's start is aligned is checked at run time, line by
     * line (lines of an odd length alternate) */
    bool ok = true;
    for (int t = 0; t < 2; t++)
      for (int i = 0; i < ns[t]; i++) {
        int64_t s = st_scan(k, &tabs[t][i], l);
        if (s != 0 && s != 1) ok = false;
      }
    l->vld = ok && want > 1 && l->len > 1;
    /* the arrangement keeps its width without vector accesses too (fewer
     * warp scans a tile) */
    l->vec = want;
  } else {
    /* vectors across lines: the innermost kept dim divides into them,
     * every access walks it with stride 1 (or 0: broadcast across lines),
     * every other stride a multiple of the width */
    int64_t inner = l->nk > 0 ? k->shape[l->nk - 1] : 1;
    int v = pow2floor(want);
    while (v > 1 && inner % v) v /= 2;
    for (int t = 0; t < 2 && v > 1; t++)
      for (int i = 0; i < ns[t]; i++) {
        const kb_access *a = &tabs[t][i];
        int64_t si = st_inner(a, l);
        if (si != 0 && si != 1) v = 1;
        if (t == 1 && si != 1) v = 1;
        for (int d = 0; d < k->rank; d++)
          if (d != l->nk - 1 && a->st[d] % (v > 1 ? v : 1)) v = 1;
      }
    l->vec = v;
  }
}

/* ---- kernels ------------------------------------------------------------------- */

/* Stage 0 plans (fixed NULL): when the rules split the lines it only
 * returns its layout and rules, and the caller builds stages 1 and 2 with
 * them. */
static kf_status build_kernel(sctx *c, int stage, int scratch, const slayout *fixed,
                              const kb_scan_rules *r0, kf_unit *u, kf_strbuf *src, kf_diag *diag,
                              slayout *layout_out, kb_scan_rules *rules_out) {
  char name[96];
  snprintf(name, sizeof name, "%s_k%d", u->name, u->n_steps);
  kb_kernel k;
  kb_init(&k, c->o, name, c->rank, c->shape);
  kf_strbuf pro, epi;
  kf_strbuf_init(&pro);
  kf_strbuf_init(&epi);
  kf_status st = pro_body(c, &k, diag);
  kb_take_body(&k, &pro);
  if (!st && stage != 1) st = epi_body(c, &k, diag);
  kb_take_body(&k, &epi);
  if (st) goto done;

  int grp[KF_MAX_RANK];
  for (int i = 0; i < k.rank; i++) grp[i] = i == c->dim ? 1 : 0;
  kb_coalesce(&k, grp);
  slayout l;
  memset(&l, 0, sizeof l);
  while (l.nk < k.rank && grp[l.nk] == 0) l.nk++;
  l.lines = 1;
  for (int i = 0; i < l.nk; i++) l.lines *= k.shape[i];
  l.len = k.rank > l.nk ? k.shape[l.nk] : 1;
  if (fixed) {
    /* stages 1 and 2 keep the layout planned with every access */
    l.rows = fixed->rows;
    l.vec = fixed->vec;
    l.vld = fixed->vld;
  } else {
    plan_layout(c, &k, &l);
  }
  kb_scan_rules r = r0 ? *r0 : kb_rules_scan(c->o, l.lines, l.len, l.rows, l.vec);
  if (rules_out) *rules_out = r;
  if (layout_out) *layout_out = l;
  if (stage == 0 && r.split > 1) goto done; /* the caller builds stages 1 and 2 */

  int sp = -1;
  if (stage != 0) sp = kb_use_param(&k, KF_UARG_SCRATCH, scratch, c->acc, true);
  kb_def_params(&k);
  kb_def_accesses(&k, "SK", 0, l.nk);
  kb_def_accesses(&k, "SR", l.nk, k.rank > l.nk ? l.nk + 1 : l.nk);
  char ks[256] = "1LL";
  size_t o1 = 0;
  for (int i = 0; i < l.nk; i++)
    o1 += (size_t)snprintf(ks + o1, sizeof ks - o1, "%s%lldLL", i ? ", " : "", (long long)k.shape[i]);
  if (l.nk == 0) snprintf(ks, sizeof ks, "1LL");
  kb_def(&k, "KF_KRANK", "%d", l.nk ? l.nk : 1);
  kb_def(&k, "KF_KSHAPE", "%s", ks);
  kb_def(&k, "KF_LINES", "%lldLL", (long long)l.lines);
  kb_def(&k, "KF_LEN", "%lldLL", (long long)l.len);
  kb_def(&k, "KF_ACC", "%s", kb_storage_type(c->acc));
  kb_def(&k, "KF_PROD", "%d", c->anchor->code == KF_OP_CUMPROD ? 1 : 0);
  kb_def(&k, "KF_REV", "%d", kf_op_get_flag(c->anchor, "reverse") ? 1 : 0);
  kb_def(&k, "KF_EXCL", "%d", kf_op_get_flag(c->anchor, "exclusive") ? 1 : 0);
  kb_def(&k, "KF_LAYOUT", "%d", r.rowlayout ? 1 : 0);
  kb_def(&k, "KF_BLOCK", "%d", r.block);
  kb_def(&k, "KF_TPR", "%d", r.tpr);
  kb_def(&k, "KF_VEC", "%d", l.vec);
  kb_def(&k, "KF_NV", "%d", r.nv);
  kb_def(&k, "KF_VLD", "%d", l.vld ? 1 : 0);
  kb_def(&k, "KF_STAGE", "%d", stage);
  kb_def(&k, "KF_SPLIT", "%d", r.split);
  kb_def(&k, "KF_CTILES", "%lldLL", (long long)(r.rowlayout ? r.chunk : 0));
  kb_def(&k, "KF_CHUNK", "%lldLL", (long long)(r.rowlayout ? 0 : r.chunk));
  kb_def(&k, "KF_OCC", "%d", c->o->row_occupancy);
  for (int i = 0; i < k.n_loads; i++) {
    char nm[32];
    snprintf(nm, sizeof nm, "KF_L%d_CB", i);
    kb_def(&k, nm, "%d", st_inner(&k.loads[i], &l) == 0 ? 1 : 0);
  }
  if (sp >= 0) kb_def(&k, "KF_SCRATCH", "kf_p%d", sp);
  /* rows pad lines to whole tiles; the margin covers it */
  int64_t ext = kb_extent(&k);
  int64_t lim = ((int64_t)1 << 31) - ((int64_t)1 << 26);
  bool small = ext < lim && l.lines * (int64_t)r.split < lim && l.len < lim;
  kb_def(&k, "KF_INDEX", "%s", small ? "int" : "long long");
  kb_def_text(&k, "KF_PRO", pro.data);
  kb_def_text(&k, "KF_EPI", stage == 1 ? "" : epi.data);
  uint32_t grid[3] = {r.grid, stage != 0 ? (uint32_t)r.split : 1, 1};
  uint32_t block[3] = {(uint32_t)r.block, 1, 1};
  st = kb_finish(&k, u, src, "scan.cu", grid, block, 0, diag);
done:
  kf_strbuf_fini(&pro);
  kf_strbuf_fini(&epi);
  kb_fini(&k);
  return st;
}

kf_status kb_unit_scan(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                       kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_op *a = g->anchor;
  if (!a || kf_op_info_get(a->code)->kind != KF_KIND_SCAN)
    return kb_unsupported(diag, g, a, "a scan group without a scan anchor");
  sctx c;
  memset(&c, 0, sizeof c);
  c.p = p;
  c.g = g;
  c.o = o;
  c.anchor = a;
  c.x = a->operands[0];
  if (!c.x || c.x->type.kind != KF_TYPE_TENSOR) return kb_unsupported(diag, g, a, "input is not a tensor");
  const kf_type *t = &c.x->type;
  c.rank = t->rank ? t->rank : 1;
  for (int i = 0; i < c.rank; i++) c.shape[i] = t->rank ? t->shape[i] : 1;
  c.dim = t->rank ? (int)kf_op_get_int(a, "dim") : 0;
  kb_frame_identity(&c.frame, c.rank, c.shape); /* a 0-d x broadcasts into [1] */
  c.rdt = a->results[0]->type.dtype;
  c.acc = kf_dtype_is_float(c.rdt) ? (o->fp64 || c.rdt == KF_DTYPE_F64 ? KF_DTYPE_F64 : KF_DTYPE_F32)
                                   : KF_DTYPE_I64;
  if (kf_type_numel(t) == 0) return KF_OK;
  c.pro = calloc((size_t)g->n_ops + 1, sizeof *c.pro);
  if (!c.pro) return KF_ERR_NOMEM;
  kb_mark_prologue(c.g, c.anchor, c.pro, c.x);
  kb_scan_rules r;
  slayout l;
  kf_status st = build_kernel(&c, 0, -1, NULL, NULL, u, src, diag, &l, &r);
  if (!st && r.split > 1) {
    int sidx = kf_unit_add_scratch(u, l.lines * (int64_t)r.split * (int64_t)kf_dtype_size(c.acc));
    if (sidx < 0) st = KF_ERR_NOMEM;
    if (!st) st = build_kernel(&c, 1, sidx, &l, &r, u, src, diag, NULL, NULL);
    if (!st) st = build_kernel(&c, 2, sidx, &l, &r, u, src, diag, NULL, NULL);
  }
  free(c.pro);
  return st;
}
