/* agent/builtin_attention.c — ATTENTION groups (kf.sdpa): every layout of
 * q, k, v (strides, broadcast batch dims), boolean or additive masks,
 * causal masking, an explicit scale, grouped-query attention. Three
 * lowerings, chosen by rule (choose()):
 *
 * - the tiled kernel (agent/templates/attention.cu, KF_TILED 1) for fp32
 *   accumulation with head sizes up to 128: 64 query rows x 64-key tiles
 *   per block of 256 threads, q/k/v tiles in dynamic shared memory,
 *   16-byte loads where an operand's feature stride is 1 and its offsets
 *   are multiples of 4 elements;
 * - the warp-per-query-row kernel (KF_TILED 0) for fp64 accumulation (the
 *   reference, f64 inputs) while its q row fits shared memory;
 * - GEMM-softmax-GEMM for everything else (larger heads): S = scale * q k^T
 *   as a batched cuBLASLt step into scratch, a row softmax launch over S
 *   applying the mask or causal masking (agent/templates/attn_softmax.cu),
 *   then O = P v as a second batched step into the output. Full fp32
 *   products (KFR_COMPUTE_32F) under the default policy, as PyTorch's
 *   eager matmuls; f16/bf16 operands are converted to fp32 first, as
 *   PyTorch's math attention does; fp64 accumulation multiplies in f64.
 *   The scores are chunked over the batch (and, when one batch entry is too
 *   large, over the query rows) so that at most 256 MiB of them exist at
 *   once: one GEMM/softmax/GEMM triple per chunk, operands offset into
 *   their tensors by the unit arguments' byte offsets. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"
#include "kfr_plan.h"

static void list(char *buf, size_t n, const int64_t *v, int k) {
  size_t o = 0;
  buf[0] = '\0';
  for (int i = 0; i < k && o < n; i++)
    o += (size_t)snprintf(buf + o, n - o, "%s%lldLL", i ? ", " : "", (long long)v[i]);
  if (k == 0) snprintf(buf, n, "0LL");
}

/* The tiled kernel's tile sizes and threads (fixed by its thread grid). */
enum { TILE_M = 64, TILE_N = 64, TILE_THREADS = 256 };

/* What every lowering needs to know of the sdpa op. */
typedef struct attn {
  const kf_op *op;
  const kf_value *qv, *kv, *vv, *mv, *res;
  int R, nb;           /* rank; batch dims */
  int64_t L, E, S, EV; /* queries, head size, keys, value head size */
  int64_t rows;        /* batch entries x L */
  int64_t bshape[KF_MAX_RANK];
  int gdim;            /* grouped-query head dim, or -1 */
  int64_t ratio;       /* query heads per key head */
  int mask;            /* 0 none, 1 bool, 2 additive */
  int64_t msl, mss, mbs[KF_MAX_RANK];
  double scale;
  kf_dtype acc;        /* accumulation: f32, or f64 (reference, f64 inputs) */
  int oi;              /* group output of the result */
} attn;

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

/* batch strides of q-like t over the output's batch dims (right-aligned, 0
 * where t has size 1 or lacks the dim) */
static void batch_strides(const kf_type *t, int nb, const int64_t *bshape, int64_t *out) {
  int tb = t->rank - 2; /* t's batch dims */
  for (int i = 0; i < nb; i++) {
    int j = tb - nb + i;
    out[i] = (j >= 0 && t->shape[j] != 1 && t->shape[j] == bshape[i]) ? t->strides[j] : 0;
  }
}

/* batch strides of k or v: broadcast dims 0, and under grouped-query
 * attention the head dim's stride per key head */
static void kv_strides(const kf_type *t, const attn *a, int64_t *out) {
  for (int i = 0; i < a->nb; i++) {
    int64_t n = t->shape[i];
    out[i] = n == 1 ? 0 : t->strides[i];
    if (i != a->gdim && n != a->bshape[i]) out[i] = 0;
  }
}

static void describe(const kf_group *g, const kf_builtin_options *o, attn *a) {
  memset(a, 0, sizeof *a);
  const kf_op *op = g->anchor;
  a->op = op;
  a->qv = op->operands[0];
  a->kv = op->operands[1];
  a->vv = op->operands[2];
  a->mv = op->n_operands > 3 ? op->operands[3] : NULL;
  a->res = op->results[0];
  const kf_type *q = &a->qv->type, *k = &a->kv->type, *v = &a->vv->type, *r = &a->res->type;
  a->R = q->rank;
  a->nb = a->R - 2;
  int R = a->R, nb = a->nb;
  a->L = q->shape[R - 2];
  a->E = q->shape[R - 1];
  a->S = k->shape[R - 2];
  a->EV = v->shape[R - 1];
  a->acc = o->fp64 || q->dtype == KF_DTYPE_F64 ? KF_DTYPE_F64 : KF_DTYPE_F32;
  a->rows = a->L;
  for (int i = 0; i < nb; i++) {
    a->bshape[i] = r->shape[i];
    a->rows *= r->shape[i];
  }
  a->gdim = -1;
  a->ratio = 1;
  if (kf_op_get_bool(op, "enable_gqa") && nb >= 1 && k->shape[R - 3] != q->shape[R - 3]) {
    a->gdim = nb - 1;
    a->ratio = q->shape[R - 3] / k->shape[R - 3];
  }
  if (a->mv) {
    const kf_type *m = &a->mv->type;
    a->mask = m->dtype == KF_DTYPE_BOOL ? 1 : 2;
    /* right-aligned to [..., L, S] */
    int mr = m->rank;
    if (mr >= 1 && m->shape[mr - 1] != 1) a->mss = m->strides[mr - 1];
    if (mr >= 2 && m->shape[mr - 2] != 1) a->msl = m->strides[mr - 2];
    for (int i = 0; i < nb; i++) {
      int j = mr - 2 - nb + i;
      a->mbs[i] = (j >= 0 && m->shape[j] != 1) ? m->strides[j] : 0;
    }
  }
  a->scale = kf_op_has_attr(op, "scale") ? kf_op_get_float(op, "scale") : 1.0 / sqrt((double)a->E);
  a->oi = kb_group_output(g, a->res);
}

/* the prelude entries of the mask both kernels share */
static void def_mask(kb_kernel *kk, const attn *a, int pm) {
  char b[512];
  list(b, sizeof b, a->mbs, a->nb);
  kb_def(kk, "KF_MBS", "%s", b);
  kb_def(kk, "KF_MSL", "%lldLL", (long long)a->msl);
  kb_def(kk, "KF_MSS", "%lldLL", (long long)a->mss);
  kb_def(kk, "KF_MASK", "%d", a->mask);
  if (pm >= 0) kb_def(kk, "KF_M", "kf_p%d", pm);
}

/* the largest element offset t reaches, + 1 */
static int64_t extent(const kf_type *t) {
  int64_t x = 1;
  for (int i = 0; i < t->rank; i++) x += (t->shape[i] - 1) * t->strides[i];
  return x;
}

/* ---- the fused kernels (agent/templates/attention.cu) ------------------------------ */

static kf_status fused_kernel(const kf_group *g, const kf_builtin_options *o, const attn *a, bool tiled,
                              kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_type *q = &a->qv->type, *k = &a->kv->type, *v = &a->vv->type, *r = &a->res->type;
  int R = a->R, nb = a->nb;
  int64_t L = a->L, E = a->E, EV = a->EV, rows = a->rows;
  bool fp64 = o->fp64;
  kf_dtype acc = a->acc;
  int64_t qtiles = (L + TILE_M - 1) / TILE_M;
  /* simple kernel: q rows are staged in static shared memory, 8 warps x E values */
  size_t acc_bytes = acc == KF_DTYPE_F64 ? 8 : 4;
  if (!tiled && (size_t)E * 8 * acc_bytes > 48 * 1024)
    return kb_unsupported(diag, g, a->op, "head size %lld too large for the attention kernel", (long long)E);
  int64_t qbs[KF_MAX_RANK], kbs[KF_MAX_RANK], vbs[KF_MAX_RANK];
  batch_strides(q, nb, a->bshape, qbs);
  kv_strides(k, a, kbs);
  kv_strides(v, a, vbs);

  char name[96];
  snprintf(name, sizeof name, "%s_k%d", u->name, u->n_steps);
  kb_kernel kk;
  kb_init(&kk, o, name, 1, (const int64_t[]){1});
  int pq = kb_use_param(&kk, KF_UARG_INPUT, kb_group_input(g, a->qv), q->dtype, false);
  int pk = kb_use_param(&kk, KF_UARG_INPUT, kb_group_input(g, a->kv), k->dtype, false);
  int pv = kb_use_param(&kk, KF_UARG_INPUT, kb_group_input(g, a->vv), v->dtype, false);
  int pm = a->mv ? kb_use_param(&kk, KF_UARG_INPUT, kb_group_input(g, a->mv), a->mv->type.dtype, false) : -1;
  int po = kb_use_param(&kk, KF_UARG_OUTPUT, a->oi, r->dtype, true);
  char b[512];
  kb_def_params(&kk);
  kb_def(&kk, "KF_NB", "%d", nb ? nb : 1);
  list(b, sizeof b, a->bshape, nb);
  if (nb == 0) snprintf(b, sizeof b, "1LL");
  kb_def(&kk, "KF_BSHAPE", "%s", b);
  list(b, sizeof b, qbs, nb);
  kb_def(&kk, "KF_QBS", "%s", b);
  list(b, sizeof b, kbs, nb);
  kb_def(&kk, "KF_KBS", "%s", b);
  list(b, sizeof b, vbs, nb);
  kb_def(&kk, "KF_VBS", "%s", b);
  def_mask(&kk, a, pm);
  kb_def(&kk, "KF_GQA_DIM", "%d", a->gdim);
  kb_def(&kk, "KF_GQA_RATIO", "%lldLL", (long long)a->ratio);
  kb_def(&kk, "KF_ROWS", "%lldLL", (long long)rows);
  kb_def(&kk, "KF_L", "%lldLL", (long long)L);
  kb_def(&kk, "KF_S", "%lldLL", (long long)a->S);
  kb_def(&kk, "KF_E", "%lld", (long long)E);
  kb_def(&kk, "KF_EV", "%lld", (long long)EV);
  kb_def(&kk, "KF_EPL", "%lld", (long long)((EV + 31) / 32));
  kb_def(&kk, "KF_QSL", "%lldLL", (long long)q->strides[R - 2]);
  kb_def(&kk, "KF_QSE", "%lldLL", (long long)q->strides[R - 1]);
  kb_def(&kk, "KF_KSS", "%lldLL", (long long)k->strides[R - 2]);
  kb_def(&kk, "KF_KSE", "%lldLL", (long long)k->strides[R - 1]);
  kb_def(&kk, "KF_VSS", "%lldLL", (long long)v->strides[R - 2]);
  kb_def(&kk, "KF_VSE", "%lldLL", (long long)v->strides[R - 1]);
  kb_def(&kk, "KF_CAUSAL", "%d", kf_op_get_bool(a->op, "is_causal") ? 1 : 0);
  char lit[96];
  kb_literal(kf_number_float(a->scale), acc, fp64, lit, sizeof lit);
  kb_def(&kk, "KF_SCALE", "%s", lit);
  kb_def(&kk, "KF_ACC", "%s", kb_storage_type(acc));
  kb_def(&kk, "KF_QS", "%s", kb_storage_type(q->dtype));
  kb_def(&kk, "KF_Q", "kf_p%d", pq);
  kb_def(&kk, "KF_K", "kf_p%d", pk);
  kb_def(&kk, "KF_V", "kf_p%d", pv);
  kb_def(&kk, "KF_O", "kf_p%d", po);
  /* offsets reach at most the largest operand's extent */
  int64_t ext = kf_type_numel(r);
  const kf_type *ts[4] = {q, k, v, a->mv ? &a->mv->type : NULL};
  for (int t = 0; t < 4; t++)
    if (ts[t] && extent(ts[t]) > ext) ext = extent(ts[t]);
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
  return s;
}

/* ---- GEMM-softmax-GEMM ------------------------------------------------------------- */

/* Batch dims that one strided GEMM batch cannot cover are looped over with
 * a step triple each; past this many, operands are copied contiguous (a
 * pass over each, small next to the products) so that they merge. */
#define ATTN_MAX_OUTER 64
/* More step triples than this (over 256 GiB of scores, or batch dims that
 * even contiguous operands cannot merge: broadcasts over two large dims)
 * are refused rather than made into a unit of thousands of steps. */
#define ATTN_MAX_TRIPLES 1024

/* A batch dim of the lowering: size, element strides of q, k and v along
 * it, and its stride in output batch entries (the output's batch dims
 * flattened row-major). */
typedef struct bdim {
  int64_t n, q, k, v, f;
} bdim;

/* An operand of the products: a group input as it is, or its contiguous
 * copy in scratch in the products' dtype. */
typedef struct gop {
  const kf_value *val;
  kf_type t;
  kf_unit_arg_kind kind;
  int index;
} gop;

/* The products' batch: grouped-query heads split into (key head, query
 * head in its group), size-1 dims dropped, innermost dims along which k
 * and v broadcast folded into the query rows when q's rows stack (a key
 * head's group of query heads becomes one matrix of ratio * L rows), and
 * neighbours that one stride walks merged. The largest remaining dim is
 * the GEMM's batch; the others (outer) are looped over. */
typedef struct gshape {
  bdim d[KF_MAX_RANK + 1];
  int nd;
  int64_t M;   /* rows of a GEMM batch entry: L times the folded dims */
  int64_t qrs; /* q's stride between those rows */
  int j;       /* index of the GEMM batch dim in d, -1: none (batch 1) */
  int64_t outer;
} gshape;

static void gemm_shape(const attn *a, const gop *q, const gop *k, const gop *v, bool fold, gshape *s) {
  int64_t qbs[KF_MAX_RANK], kbs[KF_MAX_RANK], vbs[KF_MAX_RANK], fl[KF_MAX_RANK];
  batch_strides(&q->t, a->nb, a->bshape, qbs);
  kv_strides(&k->t, a, kbs);
  kv_strides(&v->t, a, vbs);
  int64_t f = 1;
  for (int i = a->nb - 1; i >= 0; i--) {
    fl[i] = f;
    f *= a->bshape[i];
  }
  bdim all[KF_MAX_RANK + 1];
  int n = 0;
  for (int i = 0; i < a->nb; i++) {
    if (i == a->gdim && a->ratio > 1) {
      all[n++] = (bdim){a->bshape[i] / a->ratio, qbs[i] * a->ratio, kbs[i], vbs[i], fl[i] * a->ratio};
      all[n++] = (bdim){a->ratio, qbs[i], 0, 0, fl[i]};
    } else {
      all[n++] = (bdim){a->bshape[i], qbs[i], kbs[i], vbs[i], fl[i]};
    }
  }
  int m = 0;
  for (int i = 0; i < n; i++)
    if (all[i].n != 1) all[m++] = all[i];
  n = m;
  /* fold: the output and the scores always stack (row-major); q must */
  s->M = a->L;
  s->qrs = q->t.strides[a->R - 2];
  bool free_rows = a->L == 1; /* one query row: any stride stacks */
  while (fold && n > 0 && all[n - 1].k == 0 && all[n - 1].v == 0) {
    if (free_rows)
      s->qrs = all[n - 1].q;
    else if (all[n - 1].q != s->M * s->qrs)
      break;
    free_rows = false;
    s->M *= all[n - 1].n;
    n--;
  }
  s->nd = 0;
  for (int i = 0; i < n; i++) {
    bdim *p = s->nd ? &s->d[s->nd - 1] : NULL;
    const bdim *d = &all[i];
    if (p && p->q == d->q * d->n && p->k == d->k * d->n && p->v == d->v * d->n) {
      bdim mrg = {p->n * d->n, d->q, d->k, d->v, d->f};
      *p = mrg;
    } else {
      s->d[s->nd++] = *d;
    }
  }
  s->j = -1;
  for (int i = 0; i < s->nd; i++)
    if (s->j < 0 || s->d[i].n >= s->d[s->j].n) s->j = i;
  s->outer = 1;
  for (int i = 0; i < s->nd; i++)
    if (i != s->j) s->outer *= s->d[i].n;
}

/* cuBLASLt's view of q as the M x E operand A, of k^T as the E x S
 * operand B, of v as the S x EV operand B */
static bool map_q(const attn *a, const gop *q, const gshape *s, bool *t, int64_t *ld) {
  return kb_gemm_operand(s->M, a->E, s->qrs, q->t.strides[a->R - 1], t, ld);
}
static bool map_k(const attn *a, const gop *k, bool *t, int64_t *ld) {
  return kb_gemm_operand(a->E, a->S, k->t.strides[a->R - 1], k->t.strides[a->R - 2], t, ld);
}
static bool map_v(const attn *a, const gop *v, bool *t, int64_t *ld) {
  return kb_gemm_operand(a->S, a->EV, v->t.strides[a->R - 2], v->t.strides[a->R - 1], t, ld);
}

/* One GEMM step: D = alpha * op(A) @ op(B) over `batch` entries. */
typedef struct gemm_args {
  int64_t m, n, k, batch;
  bool ta, tb;
  int64_t lda, ldb, ldd, sa, sb, sd;
  kf_unit_arg A, B, D;
} gemm_args;

static kf_status add_gemm(kf_unit *u, const gemm_args *x, kf_dtype dt, int compute, double alpha,
                          int64_t ws_bytes, int ws) {
  kf_unit_step *s = kf_unit_add_step(u, KF_USTEP_GEMM);
  if (!s || !kf_unit_step_args(s, 6)) return KF_ERR_NOMEM;
  kf_unit_gemm *q = &s->gemm;
  q->m = x->m;
  q->n = x->n;
  q->k = x->k;
  q->batch = x->batch;
  q->trans_a = x->ta;
  q->trans_b = x->tb;
  q->lda = x->lda;
  q->ldb = x->ldb;
  q->ldc = x->ldd;
  q->ldd = x->ldd;
  q->stride_a = x->batch > 1 ? x->sa : 0;
  q->stride_b = x->batch > 1 ? x->sb : 0;
  q->stride_c = 0;
  q->stride_d = x->batch > 1 ? x->sd : 0;
  q->has_c = false;
  q->dtype = dt;
  q->compute = compute;
  q->epilogue = KFR_EPI_NONE;
  q->alpha = alpha;
  q->beta = 0.0;
  q->workspace_bytes = ws_bytes;
  s->args[0] = x->A;
  s->args[1] = x->B;
  s->args[2].kind = KF_UARG_NONE;
  s->args[3] = x->D;
  s->args[4].kind = KF_UARG_NONE;
  s->args[5].kind = KF_UARG_SCRATCH;
  s->args[5].index = ws;
  return KF_OK;
}

static kf_unit_arg ptr_arg(kf_unit_arg_kind kind, int index, int64_t byte_offset) {
  kf_unit_arg x;
  memset(&x, 0, sizeof x);
  x.kind = kind;
  x.index = index;
  x.i = byte_offset;
  return x;
}

/* Another launch of the softmax kernel of step proto, over `rows` scratch
 * rows of a chunk starting at output batch entry b0 and query row m0. */
static kf_status softmax_again(kf_unit *u, int proto, int64_t b0, int64_t m0, int64_t rows, int rpb) {
  kf_unit_step *s = kf_unit_add_step(u, KF_USTEP_LAUNCH);
  if (!s) return KF_ERR_NOMEM;
  const kf_unit_step *p = &u->steps[proto]; /* after the array may have moved */
  size_t nl = strlen(p->kernel) + 1;
  s->kernel = malloc(nl);
  if (!s->kernel || !kf_unit_step_args(s, p->n_args)) return KF_ERR_NOMEM;
  memcpy(s->kernel, p->kernel, nl);
  memcpy(s->args, p->args, sizeof *s->args * (size_t)p->n_args);
  for (int i = 0; i < 3; i++) {
    s->grid[i] = p->grid[i];
    s->block[i] = p->block[i];
  }
  s->grid[0] = (uint32_t)((rows + rpb - 1) / rpb);
  s->smem = p->smem;
  int n = s->n_args;
  s->args[n - 3].i = b0;
  s->args[n - 2].i = m0;
  s->args[n - 1].i = rows;
  return KF_OK;
}

/* Append the position arguments (I64 b0, m0, rows) to launch step s. */
static bool add_position(kf_unit_step *s, int64_t b0, int64_t m0, int64_t rows) {
  kf_unit_arg *x = realloc(s->args, sizeof *x * (size_t)(s->n_args + 3));
  if (!x) return false;
  s->args = x;
  int64_t v[3] = {b0, m0, rows};
  for (int i = 0; i < 3; i++) {
    memset(&x[s->n_args + i], 0, sizeof *x);
    x[s->n_args + i].kind = KF_UARG_I64;
    x[s->n_args + i].i = v[i];
  }
  s->n_args += 3;
  return true;
}

static kf_status gemm_lowering(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                               const attn *a, kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_type *r = &a->res->type;
  kf_dtype G = a->acc;
  int64_t es = (int64_t)kf_dtype_size(G);
  int R = a->R;
  int64_t L = a->L, E = a->E, S = a->S, EV = a->EV;
  kf_status st = KF_OK;

  /* ---- operands: views where cuBLASLt can read them, else copies */
  gop ops[3];
  const kf_value *vals[3] = {a->qv, a->kv, a->vv};
  for (int i = 0; i < 3; i++) {
    ops[i].val = vals[i];
    ops[i].t = vals[i]->type;
    ops[i].kind = KF_UARG_INPUT;
    ops[i].index = kb_group_input(g, vals[i]);
    if (ops[i].index < 0) return kb_unsupported(diag, g, a->op, "attention operand computed inside the group");
  }
  gshape sh;
  bool tq = false, tk = false, tv = false, outer_copied = false;
  int64_t ldq = 0, ldk = 0, ldv = 0;
  for (int round = 0;; round++) {
    KF_ASSERT(round < 4);
    bool need[3];
    gemm_shape(a, &ops[0], &ops[1], &ops[2], true, &sh);
    bool qm = map_q(a, &ops[0], &sh, &tq, &ldq);
    if (!qm) { /* the rows do not stack in a layout cuBLASLt reads: unfolded */
      gemm_shape(a, &ops[0], &ops[1], &ops[2], false, &sh);
      qm = map_q(a, &ops[0], &sh, &tq, &ldq);
    }
    need[0] = !qm;
    need[1] = !map_k(a, &ops[1], &tk, &ldk);
    need[2] = !map_v(a, &ops[2], &tv, &ldv);
    for (int i = 0; i < 3; i++) need[i] |= ops[i].t.dtype != G;
    if (!need[0] && !need[1] && !need[2] && sh.outer > ATTN_MAX_OUTER && !outer_copied) {
      for (int i = 0; i < 3; i++) need[i] = ops[i].kind == KF_UARG_INPUT && !kf_type_is_contiguous(&ops[i].t);
      outer_copied = true;
    }
    if (!need[0] && !need[1] && !need[2]) break;
    for (int i = 0; i < 3; i++) {
      if (!need[i] || ops[i].kind == KF_UARG_SCRATCH) continue;
      kf_type_init_tensor(&ops[i].t, G, R, vals[i]->type.shape);
      int sidx = kf_unit_add_scratch(u, kf_type_numel(&ops[i].t) * es);
      if (sidx < 0) return KF_ERR_NOMEM;
      if ((st = kb_copy_to_scratch(p, g, o, vals[i], sidx, &ops[i].t, u, src, diag))) return st;
      ops[i].kind = KF_UARG_SCRATCH;
      ops[i].index = sidx;
    }
  }

  /* ---- chunks: cb batch entries of mc rows each under the scratch bound */
  int64_t bound = kb_rules_attn_scratch(o);
  bdim none = {1, 0, 0, 0, 0};
  const bdim *bj = sh.j >= 0 ? &sh.d[sh.j] : &none;
  int64_t nj = bj->n, M = sh.M, cb, mc, nchunks;
  int64_t entry = M * S * es;
  if (entry <= bound) {
    cb = bound / entry < nj ? bound / entry : nj;
    nchunks = (nj + cb - 1) / cb;
    cb = (nj + nchunks - 1) / nchunks;
    mc = M;
  } else {
    cb = 1;
    mc = bound / (S * es) > 1 ? bound / (S * es) : 1;
    int64_t n = (M + mc - 1) / mc;
    mc = (M + n - 1) / n;
    nchunks = nj * n;
  }
  if (sh.outer * nchunks > ATTN_MAX_TRIPLES)
    return kb_unsupported(diag, g, a->op, "attention as %lld GEMM-softmax-GEMM step triples (at most %d)",
                          (long long)(sh.outer * nchunks), ATTN_MAX_TRIPLES);
  if (mc > INT32_MAX || cb > INT32_MAX || S > INT32_MAX || E > INT32_MAX || EV > INT32_MAX)
    return kb_unsupported(diag, g, a->op, "attention sizes over 2^31 for cuBLASLt");
  int sidx = kf_unit_add_scratch(u, cb * mc * S * es);
  if (sidx < 0) return KF_ERR_NOMEM;

  /* ---- where O goes: the output, or scratch rounded into it at the end */
  kf_unit_arg_kind okind = KF_UARG_OUTPUT;
  int oindex = a->oi;
  kf_type ot;
  kf_type_init_tensor(&ot, G, R, r->shape);
  if (r->dtype != G) {
    okind = KF_UARG_SCRATCH;
    oindex = kf_unit_add_scratch(u, kf_type_numel(&ot) * es);
    if (oindex < 0) return KF_ERR_NOMEM;
  }
  int64_t wsb = kb_rules_workspace(mc, S, E, cb), wsb2 = kb_rules_workspace(mc, EV, S, cb);
  if (wsb2 > wsb) wsb = wsb2;
  int ws = kf_unit_add_scratch(u, wsb);
  if (ws < 0) return KF_ERR_NOMEM;
  int compute = kb_gemm_compute(G, o->precision);

  /* ---- the softmax kernel */
  kb_attn_rules sr = kb_rules_attn_softmax(o, S, (int)es);
  int rpb = sr.block / sr.tpr;
  char name[96];
  snprintf(name, sizeof name, "%s_softmax", u->name);
  kb_kernel kk;
  kb_init(&kk, o, name, 1, (const int64_t[]){1});
  kb_use_param(&kk, KF_UARG_SCRATCH, sidx, G, true);
  int pm = a->mv ? kb_use_param(&kk, KF_UARG_INPUT, kb_group_input(g, a->mv), a->mv->type.dtype, false) : -1;
  kb_def_params(&kk);
  char b[512];
  kb_def(&kk, "KF_ACC", "%s", kb_storage_type(G));
  kb_def(&kk, "KF_P", "kf_p0");
  kb_def(&kk, "KF_S", "%lldLL", (long long)S);
  kb_def(&kk, "KF_L", "%lldLL", (long long)L);
  kb_def(&kk, "KF_MC", "%lldLL", (long long)mc);
  kb_def(&kk, "KF_BSTEP", "%lldLL", (long long)bj->f);
  kb_def(&kk, "KF_NB", "%d", a->nb ? a->nb : 1);
  list(b, sizeof b, a->bshape, a->nb);
  if (a->nb == 0) snprintf(b, sizeof b, "1LL");
  kb_def(&kk, "KF_BSHAPE", "%s", b);
  def_mask(&kk, a, pm);
  kb_def(&kk, "KF_CAUSAL", "%d", kf_op_get_bool(a->op, "is_causal") ? 1 : 0);
  kb_def(&kk, "KF_TPR", "%d", sr.tpr);
  kb_def(&kk, "KF_BLOCK", "%d", sr.block);
  kb_def(&kk, "KF_CACHE", "%d", sr.cache);
  kb_def(&kk, "KF_VEC", "%d", sr.vec);
  int64_t ext = cb * mc * S;
  if (a->mv && extent(&a->mv->type) > ext) ext = extent(&a->mv->type);
  if (a->rows > ext) ext = a->rows;
  kb_def(&kk, "KF_INDEX", "%s", ext < ((int64_t)1 << 30) ? "int" : "long long");

  /* ---- the step triples: outer index x batch chunk x row chunk */
  int64_t oidx[KF_MAX_RANK + 1] = {0};
  int proto = -1;
  for (int64_t oc = 0; oc < sh.outer && !st; oc++) {
    int64_t qo = 0, ko = 0, vo = 0, fo = 0;
    for (int i = 0; i < sh.nd; i++) {
      if (i == sh.j) continue;
      qo += oidx[i] * sh.d[i].q;
      ko += oidx[i] * sh.d[i].k;
      vo += oidx[i] * sh.d[i].v;
      fo += oidx[i] * sh.d[i].f;
    }
    for (int i = sh.nd - 1; i >= 0; i--) { /* next outer index */
      if (i == sh.j) continue;
      if (++oidx[i] < sh.d[i].n) break;
      oidx[i] = 0;
    }
    for (int64_t c0 = 0; c0 < nj && !st; c0 += cb) {
      int64_t cn = nj - c0 < cb ? nj - c0 : cb;
      for (int64_t m0 = 0; m0 < M && !st; m0 += mc) {
        int64_t mn = M - m0 < mc ? M - m0 : mc;
        int64_t b0 = fo + c0 * bj->f;
        int64_t qoff = qo + c0 * bj->q + m0 * sh.qrs, koff = ko + c0 * bj->k, voff = vo + c0 * bj->v;
        /* S = scale * q k^T */
        gemm_args x1 = {mn, S, E, cn, tq, tk, ldq, ldk, S, bj->q, bj->k, mc * S,
                        ptr_arg(ops[0].kind, ops[0].index, qoff * es),
                        ptr_arg(ops[1].kind, ops[1].index, koff * es),
                        ptr_arg(KF_UARG_SCRATCH, sidx, 0)};
        if ((st = add_gemm(u, &x1, G, compute, a->scale, wsb, ws))) break;
        /* P = softmax(S + mask) in place */
        if (proto < 0) {
          uint32_t grid[3] = {(uint32_t)((cn * mn + rpb - 1) / rpb), 1, 1};
          uint32_t blk[3] = {(uint32_t)sr.block, 1, 1};
          if ((st = kb_finish(&kk, u, src, "attn_softmax.cu", grid, blk, 0, diag))) break;
          proto = u->n_steps - 1;
          if (!add_position(&u->steps[proto], b0, m0, cn * mn)) st = KF_ERR_NOMEM;
        } else {
          st = softmax_again(u, proto, b0, m0, cn * mn, rpb);
        }
        if (st) break;
        /* O = P v */
        gemm_args x2 = {mn, EV, S, cn, false, tv, S, ldv, EV, mc * S, bj->v, bj->f * L * EV,
                        ptr_arg(KF_UARG_SCRATCH, sidx, 0),
                        ptr_arg(ops[2].kind, ops[2].index, voff * es),
                        ptr_arg(okind, oindex, (b0 * L + m0) * EV * es)};
        st = add_gemm(u, &x2, G, compute, 1.0, wsb, ws);
      }
    }
  }
  kb_fini(&kk);
  if (st || okind == KF_UARG_OUTPUT) return st;

  /* ---- O rounded into the output's dtype */
  kb_ew_launch l;
  memset(&l, 0, sizeof l);
  l.rank = R;
  memcpy(l.shape, r->shape, sizeof l.shape);
  l.n_bound = 1;
  l.bound_vals[0] = a->res;
  l.bound_kind[0] = KF_UARG_SCRATCH;
  l.bound_index[0] = oindex;
  l.bound_type[0] = &ot;
  l.out_vals[0] = a->res;
  l.out_kind[0] = KF_UARG_OUTPUT;
  l.out_index[0] = a->oi;
  l.out_type[0] = r;
  l.n_out = 1;
  return kb_ew_emit(p, g, o, &l, u, src, diag);
}

/* ---- the policy ---------------------------------------------------------------------- */

typedef enum attn_path { PATH_TILED, PATH_ROWS, PATH_GEMM } attn_path;

/* The tiled kernel where it fits (fp32 accumulation, heads up to 128, a
 * grid under 2^31 blocks); the warp-per-row kernel for fp64 accumulation
 * while 8 warps' q rows fit 48 KiB of shared memory (E <= 768: the
 * reference stays the exact kernel it was); GEMM-softmax-GEMM for the
 * rest. Without keys or features nothing is multiplied: the kernels. */
static attn_path choose(const attn *a) {
  int64_t qtiles = (a->L + TILE_M - 1) / TILE_M;
  bool tiled_fits = a->E <= 128 && a->EV <= 128 && a->rows / a->L * qtiles <= INT32_MAX;
  bool rows_fit = (size_t)a->E * 8 * (a->acc == KF_DTYPE_F64 ? 8 : 4) <= 48 * 1024;
  if (a->acc == KF_DTYPE_F32 && tiled_fits) return PATH_TILED;
  if (a->S == 0 || a->E == 0) return PATH_ROWS;
  if (a->acc == KF_DTYPE_F64 && rows_fit) return PATH_ROWS;
  return PATH_GEMM;
}

kf_status kb_unit_attention(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                            kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_op *op = g->anchor;
  if (!op || op->code != KF_OP_SDPA) return kb_unsupported(diag, g, op, "ATTENTION group without sdpa");
  if (g->n_ops != 1) return kb_unsupported(diag, g, op, "attention with fused ops");
  attn a;
  describe(g, o, &a);
  if (a.oi < 0 || kf_type_numel(&a.res->type) == 0) return KF_OK;
  if (!kf_type_is_contiguous(&a.res->type)) return kb_unsupported(diag, g, op, "non-contiguous result");
  attn_path path = choose(&a);
  if (path == PATH_GEMM) return gemm_lowering(p, g, o, &a, u, src, diag);
  return fused_kernel(g, o, &a, path == PATH_TILED, u, src, diag);
}
