/* agent/builtin_conv.c — CONV groups on the direct-convolution template
 * (agent/templates/conv.cu): any 1-3d convolution (stride, padding,
 * dilation, groups, transposed), accumulated in fp32 (fp64 for f64 and the
 * reference), with the group's element-wise epilogue applied per output
 * element before the store. This is the correct-everywhere per-op
 * lowering; it makes no attempt at cuDNN's speed (the lead decides on a
 * cuDNN library step for the fast path). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"

static void list(char *buf, size_t n, const int64_t *v, int k) {
  size_t o = 0;
  buf[0] = '\0';
  for (int i = 0; i < k && o < n; i++)
    o += (size_t)snprintf(buf + o, n - o, "%s%lldLL", i ? ", " : "", (long long)v[i]);
}

kf_status kb_unit_conv(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                       kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_op *a = g->anchor;
  if (!a || a->code != KF_OP_CONV) return kb_unsupported(diag, g, a, "CONV group without a conv anchor");
  const kf_value *xv = a->operands[0], *wv = a->operands[1];
  const kf_value *bv = a->n_operands > 2 ? a->operands[2] : NULL;
  const kf_value *res = a->results[0];
  const kf_type *x = &xv->type, *w = &wv->type, *r = &res->type;
  if (!kf_dtype_is_float(x->dtype)) return kb_unsupported(diag, g, a, "convolution of a non-float tensor");
  if (kf_type_numel(r) == 0) return KF_OK;
  int sp = x->rank - 2;
  int ns, np, nd, nop;
  const int64_t *st = kf_op_get_ints(a, "stride", &ns);
  const int64_t *pd = kf_op_get_ints(a, "padding", &np);
  const int64_t *dl = kf_op_get_ints(a, "dilation", &nd);
  (void)kf_op_get_ints(a, "output_padding", &nop);
  bool tr = kf_op_get_bool(a, "transposed");
  int64_t groups = kf_op_get_int(a, "groups");
  int64_t IN[3] = {1, 1, 1}, K[3] = {1, 1, 1}, S[3] = {1, 1, 1}, P[3] = {0, 0, 0}, D[3] = {1, 1, 1};
  int64_t OUT[3] = {1, 1, 1}, XST[5] = {x->strides[0], x->strides[1], 0, 0, 0};
  int64_t WST[5] = {w->strides[0], w->strides[1], 0, 0, 0};
  for (int i = 0; i < sp; i++) {
    int j = 3 - sp + i;
    IN[j] = x->shape[2 + i];
    K[j] = w->shape[2 + i];
    S[j] = st[i];
    P[j] = pd[i];
    D[j] = dl[i];
    OUT[j] = r->shape[2 + i];
    XST[2 + j] = x->strides[2 + i];
    WST[2 + j] = w->strides[2 + i];
  }
  int64_t cin = x->shape[1], cout = r->shape[1];
  int64_t cing = cin / groups, cog = cout / groups;

  char name[96];
  snprintf(name, sizeof name, "%s_k%d", u->name, u->n_steps);
  kb_kernel k;
  kb_init(&k, o, name, r->rank, r->shape);
  kb_frame f;
  kb_frame_identity(&f, r->rank, r->shape);
  kb_expr e;
  kf_status s = kb_expr_init(&e, &k, p, g, &f, diag);
  if (s) {
    kb_fini(&k);
    return s;
  }
  int px = kb_use_param(&k, KF_UARG_INPUT, kb_group_input(g, xv), x->dtype, false);
  int pw = kb_use_param(&k, KF_UARG_INPUT, kb_group_input(g, wv), w->dtype, false);
  int pb = bv ? kb_use_param(&k, KF_UARG_INPUT, kb_group_input(g, bv), bv->type.dtype, false) : -1;
  if (kb_group_input(g, xv) < 0 || kb_group_input(g, wv) < 0 || (bv && kb_group_input(g, bv) < 0))
    s = kb_unsupported(diag, g, a, "convolution operand computed inside the group");
  kf_dtype acc = o->fp64 || x->dtype == KF_DTYPE_F64 ? KF_DTYPE_F64 : KF_DTYPE_F32;
  /* the epilogue */
  char expr[256];
  if (!s) {
    kb_reg_convert(&e, "KF_CONV", acc, r->dtype, expr, sizeof expr);
    s = kb_bind_local(&e, res, r->dtype, expr);
  }
  for (int i = 0; i < g->n_ops && !s; i++) {
    const kf_op *op = g->ops[i];
    if (op == a) continue;
    if (!kb_expr_can(op)) {
      s = kb_unsupported(diag, g, op, "not element-wise (in a convolution epilogue)");
      break;
    }
    s = kb_expr_op(&e, op);
  }
  for (int i = 0; i < g->n_outputs && !s; i++) s = kb_expr_store(&e, g->outputs[i], i);
  kb_expr_fini(&e);
  if (s) {
    kb_fini(&k);
    return s;
  }
  char b[256];
  kb_def_params(&k);
  kb_def_accesses(&k, "ST", 0, k.rank);
  list(b, sizeof b, r->shape, r->rank);
  kb_def(&k, "KF_RANK", "%d", r->rank);
  kb_def(&k, "KF_SHAPE", "%s", b);
  kb_def(&k, "KF_NUMEL", "%lldLL", (long long)kf_type_numel(r));
  list(b, sizeof b, XST, 5);
  kb_def(&k, "KF_XST", "%s", b);
  list(b, sizeof b, WST, 5);
  kb_def(&k, "KF_WST", "%s", b);
  list(b, sizeof b, IN, 3);
  kb_def(&k, "KF_IN", "%s", b);
  list(b, sizeof b, K, 3);
  kb_def(&k, "KF_K", "%s", b);
  list(b, sizeof b, S, 3);
  kb_def(&k, "KF_S", "%s", b);
  list(b, sizeof b, P, 3);
  kb_def(&k, "KF_P", "%s", b);
  list(b, sizeof b, D, 3);
  kb_def(&k, "KF_D", "%s", b);
  list(b, sizeof b, OUT, 3);
  kb_def(&k, "KF_OUT", "%s", b);
  kb_def(&k, "KF_CING", "%lldLL", (long long)cing);
  kb_def(&k, "KF_COG", "%lldLL", (long long)cog);
  kb_def(&k, "KF_TRANSPOSED", "%d", tr ? 1 : 0);
  kb_def(&k, "KF_ACC", "%s", kb_storage_type(acc));
  kb_def(&k, "KF_XS", "%s", kb_storage_type(x->dtype));
  kb_def(&k, "KF_WS", "%s", kb_storage_type(w->dtype));
  kb_def(&k, "KF_X", "kf_p%d", px);
  kb_def(&k, "KF_W", "kf_p%d", pw);
  kb_def(&k, "KF_HAS_BIAS", "%d", pb >= 0 ? 1 : 0);
  if (pb >= 0) {
    kb_def(&k, "KF_B", "kf_p%d", pb);
    kb_def(&k, "KF_BST", "%lldLL", (long long)bv->type.strides[0]);
  }
  int64_t ext = kb_extent(&k);
  int64_t xe = 1, we = 1;
  for (int i = 0; i < x->rank; i++) xe += (x->shape[i] - 1) * x->strides[i];
  for (int i = 0; i < w->rank; i++) we += (w->shape[i] - 1) * w->strides[i];
  if (xe > ext) ext = xe;
  if (we > ext) ext = we;
  kb_def(&k, "KF_INDEX", "%s", ext < ((int64_t)1 << 30) ? "int" : "long long");
  kb_rules rr = kb_rules_elementwise(o, kf_type_numel(r), 4, false);
  kb_def(&k, "KF_BLOCK", "%d", rr.block);
  kb_def_body(&k, "KF_BODY");
  uint32_t grid[3] = {rr.grid, 1, 1}, block[3] = {(uint32_t)rr.block, 1, 1};
  s = kb_finish(&k, u, src, "conv.cu", grid, block, 0, diag);
  kb_fini(&k);
  return s;
}
