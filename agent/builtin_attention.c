/* agent/builtin_attention.c — ATTENTION groups (kf.sdpa) on agent/
 * templates/attention.cu: every layout of q, k, v (strides, broadcast batch
 * dims), boolean or additive masks, causal masking, an explicit scale,
 * grouped-query attention.
 *
 * With fp32 accumulation and head sizes up to 128 the tiled kernel runs:
 * 64 query rows x 64-key tiles per block of 256 threads, q/k/v tiles in
 * dynamic shared memory, 16-byte loads where an operand's feature stride is
 * 1 and its offsets are multiples of 4 elements. Otherwise (the fp64
 * reference, f64 inputs, larger heads) the warp-per-query-row kernel. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"

static void list(char *buf, size_t n, const int64_t *v, int k) {
  size_t o = 0;
  buf[0] = '\0';
  for (int i = 0; i < k && o < n; i++)
    o += (size_t)snprintf(buf + o, n - o, "%s%lldLL", i ? ", " : "", (long long)v[i]);
  if (k == 0) snprintf(buf, n, "0LL");
}

/* The tiled kernel's tile sizes and threads (fixed by its thread grid). */
enum { TILE_M = 64, TILE_N = 64, TILE_THREADS = 256 };

/* 16-byte (4-element) loads along t's last dim: stride 1, the row stride
 * and every batch stride a multiple of 4 (the base pointer's alignment is
 * checked by the kernel at run time) */
static bool vec4(const kf_type *t, int64_t n, const int64_t *bs, int nb) {
  int R = t->rank;
  if (n % 4 || t->strides[R - 1] != 1 || t->strides[R - 2] % 4) return false;
  for (int i = 0; i < nb; i++)
    if (bs[i] % 4) return false;
  return true;
}

/* element loads walk rows first when the row stride is the smaller one */
static int rows_first(const kf_type *t) {
  int64_t rs = t->strides[t->rank - 2], cs = t->strides[t->rank - 1];
  return llabs(rs) < llabs(cs) ? 1 : 0;
}

/* batch strides of t over the output's batch dims (right-aligned, 0 where
 * t has size 1 or lacks the dim) */
static void batch_strides(const kf_type *t, int nb, const int64_t *bshape, int64_t *out) {
  int tb = t->rank - 2; /* t's batch dims */
  for (int i = 0; i < nb; i++) {
    int j = tb - nb + i;
    out[i] = (j >= 0 && t->shape[j] != 1 && t->shape[j] == bshape[i]) ? t->strides[j] : 0;
  }
}

kf_status kb_unit_attention(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                            kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_op *a = g->anchor;
  if (!a || a->code != KF_OP_SDPA) return kb_unsupported(diag, g, a, "ATTENTION group without sdpa");
  if (g->n_ops != 1) return kb_unsupported(diag, g, a, "attention with fused ops");
  const kf_value *qv = a->operands[0], *kv = a->operands[1], *vv = a->operands[2];
  const kf_value *mv = a->n_operands > 3 ? a->operands[3] : NULL;
  const kf_value *res = a->results[0];
  const kf_type *q = &qv->type, *k = &kv->type, *v = &vv->type, *r = &res->type;
  int oi = kb_group_output(g, res);
  if (oi < 0 || kf_type_numel(r) == 0) return KF_OK;
  if (!kf_type_is_contiguous(r)) return kb_unsupported(diag, g, a, "non-contiguous result");
  int R = q->rank, nb = R - 2;
  int64_t L = q->shape[R - 2], E = q->shape[R - 1], S = k->shape[R - 2], EV = v->shape[R - 1];
  bool fp64 = o->fp64;
  kf_dtype acc = fp64 || q->dtype == KF_DTYPE_F64 ? KF_DTYPE_F64 : KF_DTYPE_F32;
  int64_t rows = L;
  for (int i = 0; i < nb; i++) rows *= r->shape[i];
  int64_t qtiles = (L + TILE_M - 1) / TILE_M;
  bool tiled = acc == KF_DTYPE_F32 && E <= 128 && EV <= 128 && rows / L * qtiles <= INT32_MAX;
  /* simple kernel: q rows are staged in static shared memory, 8 warps x E values */
  size_t acc_bytes = acc == KF_DTYPE_F64 ? 8 : 4;
  if (!tiled && (size_t)E * 8 * acc_bytes > 48 * 1024)
    return kb_unsupported(diag, g, a, "head size %lld too large for the attention kernel", (long long)E);
  int64_t bshape[KF_MAX_RANK], qbs[KF_MAX_RANK], kbs[KF_MAX_RANK], vbs[KF_MAX_RANK], mbs[KF_MAX_RANK];
  for (int i = 0; i < nb; i++) bshape[i] = r->shape[i];
  batch_strides(q, nb, bshape, qbs);
  bool gqa = kf_op_get_bool(a, "enable_gqa");
  int gdim = -1;
  int64_t ratio = 1;
  if (gqa && nb >= 1 && k->shape[R - 3] != q->shape[R - 3]) {
    gdim = nb - 1;
    ratio = q->shape[R - 3] / k->shape[R - 3];
  }
  /* k and v: broadcast batch dims, and the head dim divided under gqa */
  for (int i = 0; i < nb; i++) {
    int64_t ks = k->shape[i], vs = v->shape[i];
    kbs[i] = (ks == 1) ? 0 : k->strides[i];
    vbs[i] = (vs == 1) ? 0 : v->strides[i];
    if (i != gdim && ks != bshape[i]) kbs[i] = 0;
    if (i != gdim && vs != bshape[i]) vbs[i] = 0;
  }
  int mask = 0;
  int64_t msl = 0, mss = 0;
  if (mv) {
    const kf_type *m = &mv->type;
    mask = m->dtype == KF_DTYPE_BOOL ? 1 : 2;
    /* right-aligned to [..., L, S] */
    int mr = m->rank;
    if (mr >= 1 && m->shape[mr - 1] != 1) mss = m->strides[mr - 1];
    if (mr >= 2 && m->shape[mr - 2] != 1) msl = m->strides[mr - 2];
    for (int i = 0; i < nb; i++) {
      int j = mr - 2 - nb + i;
      mbs[i] = (j >= 0 && m->shape[j] != 1) ? m->strides[j] : 0;
    }
  } else {
    for (int i = 0; i < nb; i++) mbs[i] = 0;
  }
  double scale = kf_op_has_attr(a, "scale") ? kf_op_get_float(a, "scale") : 1.0 / sqrt((double)E);

  char name[96];
  snprintf(name, sizeof name, "%s_k%d", u->name, u->n_steps);
  kb_kernel kk;
  kb_init(&kk, o, name, 1, (const int64_t[]){1});
  int pq = kb_use_param(&kk, KF_UARG_INPUT, kb_group_input(g, qv), q->dtype, false);
  int pk = kb_use_param(&kk, KF_UARG_INPUT, kb_group_input(g, kv), k->dtype, false);
  int pv = kb_use_param(&kk, KF_UARG_INPUT, kb_group_input(g, vv), v->dtype, false);
  int pm = mv ? kb_use_param(&kk, KF_UARG_INPUT, kb_group_input(g, mv), mv->type.dtype, false) : -1;
  int po = kb_use_param(&kk, KF_UARG_OUTPUT, oi, r->dtype, true);
  char b[512];
  kb_def_params(&kk);
  kb_def(&kk, "KF_NB", "%d", nb ? nb : 1);
  list(b, sizeof b, bshape, nb);
  if (nb == 0) snprintf(b, sizeof b, "1LL");
  kb_def(&kk, "KF_BSHAPE", "%s", b);
  list(b, sizeof b, qbs, nb);
  kb_def(&kk, "KF_QBS", "%s", b);
  list(b, sizeof b, kbs, nb);
  kb_def(&kk, "KF_KBS", "%s", b);
  list(b, sizeof b, vbs, nb);
  kb_def(&kk, "KF_VBS", "%s", b);
  list(b, sizeof b, mbs, nb);
  kb_def(&kk, "KF_MBS", "%s", b);
  kb_def(&kk, "KF_GQA_DIM", "%d", gdim);
  kb_def(&kk, "KF_GQA_RATIO", "%lldLL", (long long)ratio);
  kb_def(&kk, "KF_ROWS", "%lldLL", (long long)rows);
  kb_def(&kk, "KF_L", "%lldLL", (long long)L);
  kb_def(&kk, "KF_S", "%lldLL", (long long)S);
  kb_def(&kk, "KF_E", "%lld", (long long)E);
  kb_def(&kk, "KF_EV", "%lld", (long long)EV);
  kb_def(&kk, "KF_EPL", "%lld", (long long)((EV + 31) / 32));
  kb_def(&kk, "KF_QSL", "%lldLL", (long long)q->strides[R - 2]);
  kb_def(&kk, "KF_QSE", "%lldLL", (long long)q->strides[R - 1]);
  kb_def(&kk, "KF_KSS", "%lldLL", (long long)k->strides[R - 2]);
  kb_def(&kk, "KF_KSE", "%lldLL", (long long)k->strides[R - 1]);
  kb_def(&kk, "KF_VSS", "%lldLL", (long long)v->strides[R - 2]);
  kb_def(&kk, "KF_VSE", "%lldLL", (long long)v->strides[R - 1]);
  kb_def(&kk, "KF_MSL", "%lldLL", (long long)msl);
  kb_def(&kk, "KF_MSS", "%lldLL", (long long)mss);
  kb_def(&kk, "KF_MASK", "%d", mask);
  kb_def(&kk, "KF_CAUSAL", "%d", kf_op_get_bool(a, "is_causal") ? 1 : 0);
  char lit[96];
  kb_literal(kf_number_float(scale), acc, fp64, lit, sizeof lit);
  kb_def(&kk, "KF_SCALE", "%s", lit);
  kb_def(&kk, "KF_ACC", "%s", kb_storage_type(acc));
  kb_def(&kk, "KF_QS", "%s", kb_storage_type(q->dtype));
  kb_def(&kk, "KF_Q", "kf_p%d", pq);
  kb_def(&kk, "KF_K", "kf_p%d", pk);
  kb_def(&kk, "KF_V", "kf_p%d", pv);
  if (pm >= 0) kb_def(&kk, "KF_M", "kf_p%d", pm);
  kb_def(&kk, "KF_O", "kf_p%d", po);
  /* offsets reach at most the largest operand's extent */
  int64_t ext = kf_type_numel(r);
  const kf_type *ts[4] = {q, k, v, mv ? &mv->type : NULL};
  for (int t = 0; t < 4; t++) {
    if (!ts[t]) continue;
    int64_t x = 1;
    for (int i = 0; i < ts[t]->rank; i++) x += (ts[t]->shape[i] - 1) * ts[t]->strides[i];
    if (x > ext) ext = x;
  }
  kb_def(&kk, "KF_INDEX", "%s", ext < ((int64_t)1 << 30) && rows < ((int64_t)1 << 30) ? "int" : "long long");
  uint32_t grid[3] = {1, 1, 1}, blk[3] = {1, 1, 1}, smem = 0;
  kb_def(&kk, "KF_TILED", "%d", tiled ? 1 : 0);
  if (tiled) {
    /* q and k tiles: E padded to 4, pitch + 4; v: 64-feature groups; p: pitch
     * + 4. The k and v tiles are double-buffered unless that costs a block
     * per SM (sm_90: 227 KiB of shared memory per SM, 1 KiB reserved per
     * block; the registers allow 2 blocks of 256 threads). */
    int64_t ep = (E + 3) / 4 * 4, evt = (EV + 63) / 64;
    int64_t fixed = (TILE_M * (ep + 4) + TILE_M * (TILE_N + 4)) * 4;
    int64_t stage = (TILE_N * (ep + 4) + TILE_N * 64 * evt) * 4;
    int64_t per_sm1 = 232448 / (fixed + stage + 1024), per_sm2 = 232448 / (fixed + 2 * stage + 1024);
    int stages = per_sm2 >= 2 || per_sm2 == per_sm1 ? 2 : 1;
    smem = (uint32_t)(fixed + stages * stage);
    bool kvec = vec4(k, E, kbs, nb), vvec = vec4(v, EV, vbs, nb);
    kb_def(&kk, "KF_BM", "%d", TILE_M);
    kb_def(&kk, "KF_BN", "%d", TILE_N);
    kb_def(&kk, "KF_EVT", "%lld", (long long)evt);
    kb_def(&kk, "KF_SMEM", "%u", smem);
    kb_def(&kk, "KF_QVEC", "%d", vec4(q, E, qbs, nb) ? 1 : 0);
    kb_def(&kk, "KF_KVEC", "%d", kvec ? 1 : 0);
    kb_def(&kk, "KF_VVEC", "%d", vvec ? 1 : 0);
    kb_def(&kk, "KF_STAGES", "%d", stages);
    /* cp.async copies 16 bytes unconverted: fp32 k and v only */
    kb_def(&kk, "KF_ASYNC", "%d", kvec && vvec && q->dtype == KF_DTYPE_F32 ? 1 : 0);
    kb_def(&kk, "KF_QRF", "%d", rows_first(q));
    kb_def(&kk, "KF_KRF", "%d", rows_first(k));
    kb_def(&kk, "KF_VRF", "%d", rows_first(v));
    kb_def(&kk, "KF_BLOCK", "%d", TILE_THREADS);
    grid[0] = (uint32_t)(rows / L * qtiles);
    blk[0] = TILE_THREADS;
  } else {
    int block = 256;
    kb_def(&kk, "KF_BLOCK", "%d", block);
    int64_t blocks = (rows + block / 32 - 1) / (block / 32);
    if (blocks > 132 * 8) blocks = 132 * 8;
    grid[0] = (uint32_t)(blocks < 1 ? 1 : blocks);
    blk[0] = (uint32_t)block;
  }
  kf_status s = kb_finish(&kk, u, src, "attention.cu", grid, blk, smem, diag);
  kb_fini(&kk);
  (void)p;
  return s;
}
