/* kfr_run.c — running a plan: kernel launches, cuBLASLt GEMMs, cuDNN
 * convolutions (kfr_cudnn.c), memsets and copies on the caller's stream
 * (cuDNN steps on the instance's own, forked from and joined back to it:
 * run_steps), optionally through a captured CUDA graph.
 *
 * Ordering and thread safety. An instance has one arena, one set of launch
 * parameters and one graph, so runs are serialised twice: a mutex makes
 * the host side of run one thread at a time (kfr_sync.c's gate, which also
 * lets destroy wait for it), and an event recorded at the end of every
 * run, which the next run's stream waits for, keeps the GPU work of runs
 * on different streams from overlapping. Runs on one stream stay fully
 * asynchronous. A run on a stream the caller is capturing gets the same
 * order as graph nodes: an event wait node on the end event before its
 * work and an event record node after it (CU_EVENT_WAIT_EXTERNAL,
 * CU_EVENT_RECORD_EXTERNAL), so every replay waits for the instance's run
 * before it and the run after it waits for the replay; and the graph holds
 * a reference that keeps the instance's memory alive (kfr_sync.c).
 *
 * CUDA-graph mode. Inputs and outputs are bound to fixed device buffers the
 * instance owns; every run copies the caller's inputs into those and the
 * outputs back, so new pointers on every call are fine. The first run
 * executes the plan directly and then captures it once, on a stream of the
 * instance's own; later runs launch the graph on the caller's stream. A
 * graph exec is not tied to a stream, so one capture serves every stream.
 * When the capture fails (a library call that cannot be captured, say),
 * the instance says so once on stderr and runs without the graph.
 *
 * GEMM. Plans describe row-major products D = op(A) op(B); cuBLASLt is
 * column-major, and a row-major matrix is the column-major view of its
 * transpose, so the runtime computes D^T = op(B)^T op(A)^T: cuBLASLt's A is
 * the plan's B, its B the plan's A, m and n swap, and the bias (one value
 * per column of row-major D) becomes cuBLASLt's per-row bias of D^T. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfr_int.h"

static int cu_step_fail(kfuse_model *m, CUresult r, const char *call,
                        uint32_t s) {
  char why[256];
  return kfr_fail(m, r == CUDA_ERROR_OUT_OF_MEMORY ? KFUSE_ENOMEM : KFUSE_ECUDA,
                  "%s failed in step %u (%s): %s", call, s, kfr_step_name(m, s),
                  kfr_cu_describe(m->cu, r, why, sizeof why));
}

static int lt_fail(kfuse_model *m, cublasStatus_t st, const char *call,
                   uint32_t s) {
  const char *name = m->lt_api ? m->lt_api->cublasLtGetStatusName(st) : NULL;
  return kfr_fail(m, KFUSE_ELIBRARY, "%s failed in GEMM step %u (%s): %s (%d)",
                  call, s, kfr_step_name(m, s), name ? name : "?", (int)st);
}

static CUdeviceptr arg_ptr(const kfuse_model *m, const kfr_arg *a) {
  return m->base[a->buffer] + (CUdeviceptr)a->offset;
}

/* ---- GEMM ------------------------------------------------------------------ */

static cudaDataType_t lt_dtype(uint32_t dt) {
  switch (dt) {
  case KFUSE_DTYPE_F64: return CUDA_R_64F;
  case KFUSE_DTYPE_F16: return CUDA_R_16F;
  case KFUSE_DTYPE_BF16: return CUDA_R_16BF;
  default: return CUDA_R_32F;
  }
}

static cublasComputeType_t lt_compute(const kfr_gemm *g) {
  if (g->dtype == KFUSE_DTYPE_F64)
    return CUBLAS_COMPUTE_64F;
  switch (g->compute) {
  case KFR_COMPUTE_32F_TF32: return CUBLAS_COMPUTE_32F_FAST_TF32;
  case KFR_COMPUTE_32F_BF16: return CUBLAS_COMPUTE_32F_FAST_16BF;
  case KFR_COMPUTE_32F_F16: return CUBLAS_COMPUTE_32F_FAST_16F;
  default: return CUBLAS_COMPUTE_32F; /* full fp32, no TF32 */
  }
}

static cublasLtEpilogue_t lt_epilogue(uint32_t e) {
  switch (e) {
  case KFR_EPI_BIAS: return CUBLASLT_EPILOGUE_BIAS;
  case KFR_EPI_RELU_BIAS: return CUBLASLT_EPILOGUE_RELU_BIAS;
  case KFR_EPI_GELU_BIAS: return CUBLASLT_EPILOGUE_GELU_BIAS;
  case KFR_EPI_RELU: return CUBLASLT_EPILOGUE_RELU;
  case KFR_EPI_GELU: return CUBLASLT_EPILOGUE_GELU;
  default: return CUBLASLT_EPILOGUE_DEFAULT;
  }
}

/* Alignment of a device address as cuBLASLt's preferences count it. */
static uint32_t align_of(CUdeviceptr p) {
  uint32_t a = 256;
  while (a > 1 && (p % a))
    a >>= 1;
  return a;
}

/* A column-major layout for a row-major rows x cols matrix: cols x rows. */
static cublasStatus_t make_layout(const kfr_cublaslt *lt,
                                  cublasLtMatrixLayout_t *l, cudaDataType_t t,
                                  int64_t rows, int64_t cols, int64_t ld,
                                  int64_t batch, int64_t stride) {
  cublasStatus_t st =
      lt->cublasLtMatrixLayoutCreate(l, t, (uint64_t)cols, (uint64_t)rows, ld);
  if (st != CUBLAS_STATUS_SUCCESS) {
    *l = NULL;
    return st;
  }
  if (batch > 1) {
    int32_t b = (int32_t)batch;
    if ((st = lt->cublasLtMatrixLayoutSetAttribute(
             *l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &b, sizeof b)) ||
        (st = lt->cublasLtMatrixLayoutSetAttribute(
             *l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
             sizeof stride)))
      return st;
  }
  return CUBLAS_STATUS_SUCCESS;
}

/* Elements a row-major operand of rows x cols spans (leading dim ld,
 * batches stride apart). */
static uint64_t operand_elems(int64_t rows, int64_t cols, int64_t ld,
                              int64_t batch, int64_t stride) {
  return (uint64_t)((batch - 1) * stride + (rows - 1) * ld + cols);
}

#define KFR_GEMM_CANDIDATES 8
#define KFR_GEMM_SEARCH_MAX_BYTES ((uint64_t)1 << 30)

static int gemm_verbose(void) {
  const char *v = secure_getenv("KFUSE_GEMM_VERBOSE");
  return v && *v && strcmp(v, "0") != 0;
}

/* One cuBLASLt call of the search (kfr_time3's call). */
typedef struct gemm_call {
  kfuse_model *m;
  kfr_gemm_rt *rt;
  CUdeviceptr a, b, c, d; /* cuBLASLt's A, B, C, D */
  const cublasLtMatmulAlgo_t *algo;
  void *ws;
  uint64_t ws_bytes;
  int has_c;
  CUstream stream;
} gemm_call;

static int run_gemm_call(void *ctx) {
  const gemm_call *x = ctx;
  const kfr_gemm_rt *rt = x->rt;
  return x->m->lt_api->cublasLtMatmul(x->m->lt, rt->op, &rt->alpha, (const void *)(uintptr_t)x->a, rt->la,
                                      (const void *)(uintptr_t)x->b, rt->lb, &rt->beta,
                                      (const void *)(uintptr_t)x->c, x->has_c ? rt->lc : rt->ld,
                                      (void *)(uintptr_t)x->d, rt->ld, x->algo, x->ws, (size_t)x->ws_bytes,
                                      (cudaStream_t)x->stream) != CUBLAS_STATUS_SUCCESS;
}

/* Time step s with each of cuBLASLt's candidates res[0..found) on scratch
 * operands of the step's shapes (zeros; the arena's workspace): one warm-up
 * call, then the median of three, on the instance's own stream (scratch
 * from kfr_scratch_alloc: create waits for nothing but its own work).
 * Returns the index
 * of the fastest; 0 (the heuristic's first) when the operands would take
 * more than KFR_GEMM_SEARCH_MAX_BYTES or scratch cannot be had; a candidate
 * that fails to run is skipped. */
static int time_algos(kfuse_model *m, uint32_t s,
                      const cublasLtMatmulHeuristicResult_t *res, int found) {
  const kfr_cublaslt *lt = m->lt_api;
  const kfr_driver *cu = m->cu;
  const kfr_step *stp = &m->steps[s];
  const kfr_gemm *g = &stp->gemm;
  const kfr_arg *a = &m->args[stp->first_arg];
  kfr_gemm_rt *rt = &m->gemm[s];
  uint64_t es = kfr_dtype_size(g->dtype);
  int64_t ar = g->trans_a ? g->k : g->m, ac = g->trans_a ? g->m : g->k;
  int64_t br = g->trans_b ? g->n : g->k, bc = g->trans_b ? g->k : g->n;
  int has_bias = g->epilogue == KFR_EPI_BIAS || g->epilogue == KFR_EPI_RELU_BIAS ||
                 g->epilogue == KFR_EPI_GELU_BIAS;
  /* A, B, C, D, bias */
  uint64_t nb[5] = {
      operand_elems(ar, ac, g->lda, g->batch, g->stride_a) * es,
      operand_elems(br, bc, g->ldb, g->batch, g->stride_b) * es,
      g->has_c ? operand_elems(g->m, g->n, g->ldc, g->batch, g->stride_c) * es : 0,
      operand_elems(g->m, g->n, g->ldd, g->batch, g->stride_d) * es,
      has_bias ? (uint64_t)g->n * es : 0};
  uint64_t total = 0;
  for (int i = 0; i < 5; i++) total += nb[i];
  if (total > KFR_GEMM_SEARCH_MAX_BYTES)
    return 0;
  CUdeviceptr p[5] = {0};
  CUevent ev[2] = {0};
  int best = 0, ok = 1;
  float best_ms = 0;
  for (int i = 0; i < 5 && ok; i++)
    if (nb[i] && (kfr_scratch_alloc(m, &p[i], nb[i]) != CUDA_SUCCESS ||
                  cu->cuMemsetD8Async(p[i], 0, nb[i], m->own) != CUDA_SUCCESS))
      ok = 0;
  for (int i = 0; i < 2 && ok; i++)
    if (cu->cuEventCreate(&ev[i], 0) != CUDA_SUCCESS)
      ok = 0;
  void *ws = g->workspace_bytes ? (void *)(uintptr_t)arg_ptr(m, &a[5]) : NULL;
  if (ok && has_bias) {
    const void *bias = (const void *)(uintptr_t)p[4];
    ok = lt->cublasLtMatmulDescSetAttribute(rt->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER,
                                            &bias, sizeof bias) == CUBLAS_STATUS_SUCCESS;
  }
  int timed_any = 0; /* candidate 0 may fail to run: compare with the first that ran */
  gemm_call gc = {m, rt, p[1], p[0], g->has_c ? p[2] : p[3], p[3], NULL, ws, g->workspace_bytes, g->has_c,
                  m->own};
  for (int c = 0; c < found && ok; c++) {
    float med;
    gc.algo = &res[c].algo;
    if (kfr_time3(cu, m->own, ev, run_gemm_call, &gc, &med)) {
      (void)cu->cuStreamSynchronize(m->own); /* whatever of it was queued */
      continue;
    }
    if (gemm_verbose())
      fprintf(stderr, "kfuse: GEMM step %u (%s) m=%lld n=%lld k=%lld: candidate %d %.4f ms\n", s,
              kfr_step_name(m, s), (long long)g->m, (long long)g->n, (long long)g->k, c, med);
    if (!timed_any || med < best_ms) {
      best = c;
      best_ms = med;
      timed_any = 1;
    }
  }
  for (int i = 0; i < 2; i++)
    if (ev[i]) (void)cu->cuEventDestroy(ev[i]);
  (void)cu->cuStreamSynchronize(m->own);
  for (int i = 0; i < 5; i++)
    kfr_scratch_free(m, p[i]);
  if (gemm_verbose())
    fprintf(stderr, "kfuse: GEMM step %u (%s): chose candidate %d of %d\n", s, kfr_step_name(m, s), best,
            found);
  return best;
}

/* Pick the algorithm for the given operand alignments (A, B, C, D in the
 * plan's terms): at create time (timed) the fastest of cuBLASLt's first
 * KFR_GEMM_CANDIDATES heuristic candidates on the GPU, unless
 * KFUSE_GEMM_SEARCH=0; otherwise the heuristic's first. low: the result is
 * the fallback for less aligned runs (rt->algo_low), else the planned
 * algorithm (rt->algo). */
static int choose_algo(kfuse_model *m, uint32_t s, const uint32_t align[4], int timed, int low) {
  const kfr_cublaslt *lt = m->lt_api;
  const kfr_gemm *g = &m->steps[s].gemm;
  kfr_gemm_rt *rt = &m->gemm[s];
  cublasLtMatmulPreference_t pref = NULL;
  cublasStatus_t st = lt->cublasLtMatmulPreferenceCreate(&pref);
  if (st != CUBLAS_STATUS_SUCCESS)
    return lt_fail(m, st, "cublasLtMatmulPreferenceCreate", s);
  uint64_t ws = g->workspace_bytes;
  /* cuBLASLt's A is the plan's B and vice versa */
  uint32_t a_lt = align[1], b_lt = align[0], c_lt = align[2], d_lt = align[3];
  int rc = KFUSE_OK;
  const char *call = "cublasLtMatmulPreferenceSetAttribute";
  if ((st = lt->cublasLtMatmulPreferenceSetAttribute(
           pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws)) ||
      (st = lt->cublasLtMatmulPreferenceSetAttribute(
           pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &a_lt,
           sizeof a_lt)) ||
      (st = lt->cublasLtMatmulPreferenceSetAttribute(
           pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &b_lt,
           sizeof b_lt)) ||
      (st = lt->cublasLtMatmulPreferenceSetAttribute(
           pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &c_lt,
           sizeof c_lt)) ||
      (st = lt->cublasLtMatmulPreferenceSetAttribute(
           pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &d_lt,
           sizeof d_lt))) {
    rc = lt_fail(m, st, call, s);
    goto done;
  }
  cublasLtMatmulHeuristicResult_t cand[KFR_GEMM_CANDIDATES];
  memset(cand, 0, sizeof cand);
  int found = 0;
  const char *search = secure_getenv("KFUSE_GEMM_SEARCH");
  if (search && strcmp(search, "0") == 0)
    timed = 0;
  /* without C, cuBLASLt gets D's layout for it (and beta = 0) */
  st = lt->cublasLtMatmulAlgoGetHeuristic(m->lt, rt->op, rt->la, rt->lb,
                                          g->has_c ? rt->lc : rt->ld, rt->ld,
                                          pref, timed ? KFR_GEMM_CANDIDATES : 1,
                                          cand, &found);
  int pick = 0;
  while (pick < found && cand[pick].state != CUBLAS_STATUS_SUCCESS)
    pick++;
  if (st == CUBLAS_STATUS_SUCCESS && timed && found > 1) {
    int n = 0; /* usable candidates first */
    for (int i = 0; i < found; i++)
      if (cand[i].state == CUBLAS_STATUS_SUCCESS)
        cand[n++] = cand[i];
    found = n;
    pick = found > 1 ? time_algos(m, s, cand, found) : 0;
  }
  cublasLtMatmulHeuristicResult_t res = pick < found ? cand[pick] : cand[0];
  if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED) {
    rc = lt_fail(m, st, "cublasLtMatmulAlgoGetHeuristic", s);
    goto done;
  }
  if (st == CUBLAS_STATUS_NOT_SUPPORTED || found < 1 ||
      res.state != CUBLAS_STATUS_SUCCESS) {
    rc = kfr_fail(m, KFUSE_ELIBRARY, "cuBLASLt has no algorithm for GEMM step "
                  "%u (%s): m=%lld n=%lld k=%lld batch=%lld dtype %u compute %u "
                  "epilogue %u, workspace %llu bytes, alignments %u/%u/%u/%u",
                  s, kfr_step_name(m, s), (long long)g->m, (long long)g->n,
                  (long long)g->k, (long long)g->batch, g->dtype, g->compute,
                  g->epilogue, (unsigned long long)ws, align[0], align[1],
                  align[2], align[3]);
    goto done;
  }
  if (low) {
    rt->algo_low = res.algo;
    rt->have_low = 1;
    memcpy(rt->align_low, align, sizeof rt->align_low);
  } else {
    rt->algo = res.algo;
    rt->have_algo = 1;
    memcpy(rt->align, align, sizeof rt->align);
  }
done:
  (void)lt->cublasLtMatmulPreferenceDestroy(pref);
  return rc;
}

/* The alignment a caller pointer is assumed to have at create time; runs
 * with less alignment take the fallback algorithm (kfr_gemm_pick). */
static uint32_t planned_align(const kfuse_model *m, const kfr_arg *a) {
  uint32_t k = m->buffers[a->buffer].kind;
  if (k == KFR_BUF_INPUT || k == KFR_BUF_OUTPUT)
    return align_of((CUdeviceptr)a->offset); /* base assumed 256-aligned */
  return align_of(arg_ptr(m, a));
}

int kfr_gemm_prepare(kfuse_model *m, uint32_t s) {
  int rc;
  if (!m->lt_api) {
    if ((rc = kfr_cublaslt_load(&m->lt_api, m->err, sizeof m->err)))
      return rc;
    cublasStatus_t st = m->lt_api->cublasLtCreate(&m->lt);
    if (st != CUBLAS_STATUS_SUCCESS) {
      m->lt = NULL;
      return kfr_fail(m, KFUSE_ELIBRARY, "cublasLtCreate failed (%s): %s (%d)",
                      m->lt_api->path,
                      m->lt_api->cublasLtGetStatusName(st), (int)st);
    }
  }
  const kfr_cublaslt *lt = m->lt_api;
  const kfr_step *stp = &m->steps[s];
  const kfr_gemm *g = &stp->gemm;
  const kfr_arg *a = &m->args[stp->first_arg];
  kfr_gemm_rt *rt = &m->gemm[s];
  cudaDataType_t t = lt_dtype(g->dtype);
  int f64 = g->dtype == KFUSE_DTYPE_F64;
  cublasStatus_t st = lt->cublasLtMatmulDescCreate(&rt->op, lt_compute(g),
                                                   f64 ? CUDA_R_64F : CUDA_R_32F);
  if (st != CUBLAS_STATUS_SUCCESS) {
    rt->op = NULL;
    return lt_fail(m, st, "cublasLtMatmulDescCreate", s);
  }
  int32_t ta = g->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N; /* cuBLASLt's A = B */
  int32_t tb = g->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  uint32_t epi = lt_epilogue(g->epilogue);
  if ((st = lt->cublasLtMatmulDescSetAttribute(rt->op, CUBLASLT_MATMUL_DESC_TRANSA,
                                               &ta, sizeof ta)) ||
      (st = lt->cublasLtMatmulDescSetAttribute(rt->op, CUBLASLT_MATMUL_DESC_TRANSB,
                                               &tb, sizeof tb)) ||
      (st = lt->cublasLtMatmulDescSetAttribute(
           rt->op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi)))
    return lt_fail(m, st, "cublasLtMatmulDescSetAttribute", s);
  /* stored shapes of the row-major operands */
  int64_t ar = g->trans_a ? g->k : g->m, ac = g->trans_a ? g->m : g->k;
  int64_t br = g->trans_b ? g->n : g->k, bc = g->trans_b ? g->k : g->n;
  if ((st = make_layout(lt, &rt->la, t, br, bc, g->ldb, g->batch, g->stride_b)) ||
      (st = make_layout(lt, &rt->lb, t, ar, ac, g->lda, g->batch, g->stride_a)) ||
      (st = make_layout(lt, &rt->ld, t, g->m, g->n, g->ldd, g->batch,
                        g->stride_d)))
    return lt_fail(m, st, "cublasLtMatrixLayoutCreate", s);
  if (g->has_c &&
      (st = make_layout(lt, &rt->lc, t, g->m, g->n, g->ldc, g->batch,
                        g->stride_c)))
    return lt_fail(m, st, "cublasLtMatrixLayoutCreate", s);
  if (f64) {
    rt->alpha.d = g->alpha;
    rt->beta.d = g->has_c ? g->beta : 0.0;
  } else {
    rt->alpha.f = (float)g->alpha;
    rt->beta.f = g->has_c ? (float)g->beta : 0.0f;
  }
  uint32_t align[4] = {planned_align(m, &a[0]), planned_align(m, &a[1]),
                       g->has_c ? planned_align(m, &a[2]) : 256,
                       planned_align(m, &a[3])};
  if (!g->has_c)
    align[2] = align[3];
  return choose_algo(m, s, align, 1, 0);
}

int kfr_gemm_pick(const uint32_t planned[4], int have_low, const uint32_t low[4], const uint32_t run[4],
                  uint32_t need[4]) {
  int fits = 1, fits_low = have_low;
  for (int i = 0; i < 4; i++) {
    fits &= run[i] >= planned[i];
    fits_low &= have_low && run[i] >= low[i];
  }
  if (fits)
    return 0;
  if (fits_low)
    return 1;
  for (int i = 0; i < 4; i++) {
    uint32_t cur = have_low ? low[i] : planned[i];
    need[i] = run[i] < cur ? run[i] : cur;
  }
  return 2;
}

void kfr_gemm_release(kfuse_model *m, uint32_t s) {
  const kfr_cublaslt *lt = m->lt_api;
  kfr_gemm_rt *rt = &m->gemm[s];
  if (!lt)
    return;
  /* best effort, as in destroy */
  if (rt->la)
    (void)lt->cublasLtMatrixLayoutDestroy(rt->la);
  if (rt->lb)
    (void)lt->cublasLtMatrixLayoutDestroy(rt->lb);
  if (rt->lc)
    (void)lt->cublasLtMatrixLayoutDestroy(rt->lc);
  if (rt->ld)
    (void)lt->cublasLtMatrixLayoutDestroy(rt->ld);
  if (rt->op)
    (void)lt->cublasLtMatmulDescDestroy(rt->op);
  memset(rt, 0, sizeof *rt);
}

static int run_gemm(kfuse_model *m, uint32_t s, CUstream stream) {
  const kfr_cublaslt *lt = m->lt_api;
  const kfr_step *stp = &m->steps[s];
  const kfr_gemm *g = &stp->gemm;
  const kfr_arg *a = &m->args[stp->first_arg];
  kfr_gemm_rt *rt = &m->gemm[s];
  CUdeviceptr pa = arg_ptr(m, &a[0]), pb = arg_ptr(m, &a[1]);
  CUdeviceptr pd = arg_ptr(m, &a[3]);
  CUdeviceptr pc = g->has_c ? arg_ptr(m, &a[2]) : pd;
  uint32_t align[4] = {align_of(pa), align_of(pb), align_of(pc), align_of(pd)}, need[4];
  /* less aligned than planned: an algorithm that allows it, kept beside
   * the timed one, which the next aligned run takes again */
  int which = kfr_gemm_pick(rt->align, rt->have_low, rt->align_low, align, need);
  if (which == 2) {
    int rc = choose_algo(m, s, need, 0, 1);
    if (rc)
      return rc;
    which = 1;
  }
  const cublasLtMatmulAlgo_t *algo = which ? &rt->algo_low : &rt->algo;
  cublasStatus_t st;
  if (g->epilogue == KFR_EPI_BIAS || g->epilogue == KFR_EPI_RELU_BIAS ||
      g->epilogue == KFR_EPI_GELU_BIAS) {
    const void *bias = (const void *)(uintptr_t)arg_ptr(m, &a[4]);
    st = lt->cublasLtMatmulDescSetAttribute(
        rt->op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
    if (st != CUBLAS_STATUS_SUCCESS)
      return lt_fail(m, st, "cublasLtMatmulDescSetAttribute(BIAS_POINTER)", s);
  }
  void *ws = NULL;
  if (g->workspace_bytes)
    ws = (void *)(uintptr_t)arg_ptr(m, &a[5]);
  st = lt->cublasLtMatmul(m->lt, rt->op, &rt->alpha,
                          (const void *)(uintptr_t)pb, rt->la,
                          (const void *)(uintptr_t)pa, rt->lb, &rt->beta,
                          (const void *)(uintptr_t)pc,
                          g->has_c ? rt->lc : rt->ld, (void *)(uintptr_t)pd,
                          rt->ld, algo, ws, g->workspace_bytes,
                          (cudaStream_t)stream);
  if (st != CUBLAS_STATUS_SUCCESS)
    return lt_fail(m, st, "cublasLtMatmul", s);
  return KFUSE_OK;
}

/* ---- the plan ------------------------------------------------------------ */

/* cuDNN steps run on m->own, not on the run's stream, each forked from the
 * run's stream and joined back to it by events. Their graph plans are
 * built and timed on m->own at create (kfr_cudnn_graph.c), and executing
 * them after a cudnnSetStream to the caller's stream raced with the work
 * around them: on an H200 (2026-11-28, cuDNN 9 from PyTorch 2.11's
 * wheels) torchvision's ResNet-50 at batch 32 and r3d_18 came out 0.21 and
 * 0.12 from the fp64 model, two runs of one instance differing by up to
 * 18, on the legacy stream and on a stream of the caller's alike. With the
 * legacy calls (KFUSE_CUDNN_GRAPH=0) or a device synchronisation after
 * each step: 5e-4 and 3e-4, bitwise repeatable; and so with every step
 * executed on m->own between an event recorded on the run's stream and one
 * the run's stream waits for (measured through a diagnostic switch, on
 * both kinds of caller stream). One fork and one join shared by
 * consecutive cuDNN steps was NOT enough: ResNet-50 stayed 0.20 off and
 * two runs differed by 22 (consecutive executions on one stream raced
 * too; the heuristics' first plans raced as well, less often). So every
 * step gets its own. What all of this fits, though it is not confirmed: a
 * cuDNN kernel that starts before the kernel just before it on its stream
 * has finished (Hopper's programmatic dependent launch) and reads its
 * input early; a stream operation between the two (the event wait of the
 * fork) rules that overlap out. Under a capture m->own joins the capture through the
 * same events. The whole-module check (judge/module_check.c) is what
 * found this; it compiles again with NCHW convolutions when it sees it. */
typedef struct dnn_side {
  kfuse_model *m;
  CUstream run; /* the run's stream */
  int on;       /* m->own forked from it and not yet joined */
} dnn_side;

static int dnn_fork(dnn_side *d, uint32_t s) {
  const kfr_driver *cu = d->m->cu;
  CUresult r;
  if (d->on)
    return KFUSE_OK;
  if ((r = cu->cuEventRecord(d->m->dnn_fork, d->run)) != CUDA_SUCCESS)
    return cu_step_fail(d->m, r, "cuEventRecord (before a cuDNN step)", s);
  if ((r = cu->cuStreamWaitEvent(d->m->own, d->m->dnn_fork, 0)) != CUDA_SUCCESS)
    return cu_step_fail(d->m, r, "cuStreamWaitEvent (before a cuDNN step)", s);
  d->on = 1;
  return KFUSE_OK;
}

/* also after a failure: work queued on m->own must be ordered before the
 * run's end, and a capture must end with m->own joined */
static int dnn_join(dnn_side *d, uint32_t s) {
  const kfr_driver *cu = d->m->cu;
  CUresult r;
  if (!d->on)
    return KFUSE_OK;
  d->on = 0;
  if ((r = cu->cuEventRecord(d->m->dnn_join, d->m->own)) != CUDA_SUCCESS)
    return cu_step_fail(d->m, r, "cuEventRecord (after a cuDNN step)", s);
  if ((r = cu->cuStreamWaitEvent(d->run, d->m->dnn_join, 0)) != CUDA_SUCCESS)
    return cu_step_fail(d->m, r, "cuStreamWaitEvent (after a cuDNN step)", s);
  return KFUSE_OK;
}

static int run_one(kfuse_model *m, uint32_t s, CUstream stream, dnn_side *dnn) {
  const kfr_driver *cu = m->cu;
  const kfr_step *st = &m->steps[s];
  const kfr_arg *a = &m->args[st->first_arg];
  CUresult r;
  int rc;
  if (st->kind == KFR_STEP_CONV) {
    if ((rc = dnn_fork(dnn, s)))
      return rc;
    rc = kfr_conv_run(m, s, m->own);
    int jr = dnn_join(dnn, s);
    return rc ? rc : jr;
  }
  if ((rc = dnn_join(dnn, s)))
    return rc;
  switch (st->kind) {
  case KFR_STEP_LAUNCH:
    for (uint32_t i = 0; i < st->n_args; i++)
      if (a[i].kind == KFR_ARG_PTR)
        m->vals[st->first_arg + i].ptr = arg_ptr(m, &a[i]);
    r = cu->cuLaunchKernel(m->funcs[st->kernel], st->grid[0], st->grid[1],
                           st->grid[2], st->block[0], st->block[1],
                           st->block[2], st->smem, stream,
                           st->n_args ? &m->params[st->first_arg] : NULL,
                           NULL);
    if (r != CUDA_SUCCESS)
      return cu_step_fail(m, r, "cuLaunchKernel", s);
    break;
  case KFR_STEP_GEMM:
    return run_gemm(m, s, stream);
  case KFR_STEP_MEMSET:
    if (a[1].offset == 0)
      break;
    r = cu->cuMemsetD8Async(arg_ptr(m, &a[0]), 0, (size_t)a[1].offset,
                            stream);
    if (r != CUDA_SUCCESS)
      return cu_step_fail(m, r, "cuMemsetD8Async", s);
    break;
  case KFR_STEP_COPY:
    if (a[2].offset == 0)
      break;
    r = cu->cuMemcpyDtoDAsync(arg_ptr(m, &a[0]), arg_ptr(m, &a[1]),
                              (size_t)a[2].offset, stream);
    if (r != CUDA_SUCCESS)
      return cu_step_fail(m, r, "cuMemcpyDtoDAsync", s);
    break;
  default:
    break; /* the validator admits no other kind */
  }
  return KFUSE_OK;
}

/* Steps [0, n) of the plan (n clipped to the plan's). */
static int run_prefix(kfuse_model *m, CUstream stream, uint32_t n) {
  dnn_side dnn = {m, stream, 0};
  int rc = KFUSE_OK;
  uint32_t s = 0;
  if (n > m->h.n_steps)
    n = m->h.n_steps;
  for (; s < n && rc == KFUSE_OK; s++)
    rc = run_one(m, s, stream, &dnn);
  int jr = dnn_join(&dnn, s ? s - 1 : 0);
  return rc ? rc : jr;
}

static int run_steps(kfuse_model *m, CUstream stream) { return run_prefix(m, stream, UINT32_MAX); }

static void bind_io(kfuse_model *m, const CUdeviceptr *in,
                    const CUdeviceptr *out) {
  for (uint32_t i = 0; i < m->h.n_inputs; i++)
    m->base[m->input_buf[i]] = in[i];
  for (uint32_t i = 0; i < m->h.n_outputs; i++)
    m->base[m->output_buf[i]] = out[i];
}

static int cu_fail_run(kfuse_model *m, CUresult r, const char *call,
                       const char *what) {
  char why[256];
  return kfr_fail(m, r == CUDA_ERROR_OUT_OF_MEMORY ? KFUSE_ENOMEM : KFUSE_ECUDA,
                  "%s failed (%s): %s", call, what,
                  kfr_cu_describe(m->cu, r, why, sizeof why));
}

/* Record the plan, bound to the fixed buffers, on the capture stream. */
static int capture(kfuse_model *m) {
  const kfr_driver *cu = m->cu;
  CUresult r = cu->cuStreamBeginCapture(m->cap,
                                        CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
  if (r != CUDA_SUCCESS)
    return cu_fail_run(m, r, "cuStreamBeginCapture", "CUDA-graph capture");
  int rc = run_steps(m, m->cap);
  CUgraph g = NULL;
  r = cu->cuStreamEndCapture(m->cap, &g);
  if (rc == KFUSE_OK && r != CUDA_SUCCESS)
    rc = cu_fail_run(m, r, "cuStreamEndCapture", "CUDA-graph capture");
  if (rc == KFUSE_OK) {
    r = cu->cuGraphInstantiateWithFlags(&m->exec, g, 0);
    if (r != CUDA_SUCCESS) {
      m->exec = NULL;
      rc = cu_fail_run(m, r, "cuGraphInstantiateWithFlags", "CUDA graph");
    }
  }
  if (g)
    (void)cu->cuGraphDestroy(g); /* the exec keeps what it needs */
  return rc;
}

/* CUDA-graph mode off for good after a failed capture: said once, on
 * stderr (as the runtime's other notices), and the instance keeps working
 * with plain launches. */
static void graph_off(kfuse_model *m) {
  fprintf(stderr, "kfuse: CUDA-graph mode is off for this model instance: %s; its runs use plain launches "
          "from now on\n", m->err);
  m->use_graph = 0;
  m->err[0] = 0;
}

/* The first run executes the plan directly on the fixed buffers (so
 * libraries finish their lazy set-up, such as module loading, outside any
 * capture) and then records the graph; later runs replay it. A capture or
 * instantiation that fails turns graph mode off (graph_off): this run's
 * work is already queued, later runs launch the plan as without it. */
static int run_graph(kfuse_model *m, CUstream stream, const void *const *inputs,
                     void *const *outputs) {
  const kfr_driver *cu = m->cu;
  CUresult r;
  for (uint32_t i = 0; i < m->h.n_inputs; i++) {
    uint64_t n = m->buffers[m->input_buf[i]].nbytes;
    if (n && (r = cu->cuMemcpyDtoDAsync(m->gin[i], (CUdeviceptr)(uintptr_t)inputs[i],
                                        n, stream)) != CUDA_SUCCESS)
      return cu_fail_run(m, r, "cuMemcpyDtoDAsync", "copying an input in");
  }
  int rc;
  bind_io(m, m->gin, m->gout);
  if (m->exec) {
    if ((r = cu->cuGraphLaunch(m->exec, stream)) != CUDA_SUCCESS)
      return cu_fail_run(m, r, "cuGraphLaunch", "replaying the plan");
  } else {
    if ((rc = run_steps(m, stream)))
      return rc;
    if (capture(m) != KFUSE_OK)
      graph_off(m);
  }
  for (uint32_t i = 0; i < m->h.n_outputs; i++) {
    uint64_t n = m->buffers[m->output_buf[i]].nbytes;
    if (n && (r = cu->cuMemcpyDtoDAsync((CUdeviceptr)(uintptr_t)outputs[i],
                                        m->gout[i], n, stream)) != CUDA_SUCCESS)
      return cu_fail_run(m, r, "cuMemcpyDtoDAsync", "copying an output out");
  }
  return KFUSE_OK;
}

static int check_io(kfuse_model *m, const void *const *inputs,
                    void *const *outputs) {
  if (m->h.n_inputs && !inputs)
    return kfr_fail(m, KFUSE_EARG, "run: the input array is NULL, the model "
                    "has %u inputs", m->h.n_inputs);
  if (m->h.n_outputs && !outputs)
    return kfr_fail(m, KFUSE_EARG, "run: the output array is NULL, the model "
                    "has %u outputs", m->h.n_outputs);
  for (int io = 0; io < 2; io++) {
    uint32_t n = io ? m->h.n_outputs : m->h.n_inputs;
    for (uint32_t i = 0; i < n; i++) {
      const kfr_buffer *b = &m->buffers[io ? m->output_buf[i] : m->input_buf[i]];
      uintptr_t p = io ? (uintptr_t)outputs[i] : (uintptr_t)inputs[i];
      uint32_t es = kfr_dtype_size(b->desc.dtype);
      if (!p && b->nbytes)
        return kfr_fail(m, KFUSE_EARG, "run: %s %u (%s) is NULL",
                        io ? "output" : "input", i, m->strings + b->name);
      if (p % es)
        return kfr_fail(m, KFUSE_EARG, "run: %s %u (%s) at %p is not aligned "
                        "to its %u-byte elements", io ? "output" : "input", i,
                        m->strings + b->name, (void *)p, es);
    }
  }
  /* outputs are written while inputs (and other outputs) are still read:
   * an output may share no byte with an input or another output */
  for (uint32_t o = 0; o < m->h.n_outputs; o++) {
    const kfr_buffer *bo = &m->buffers[m->output_buf[o]];
    uintptr_t p = (uintptr_t)outputs[o];
    if (!bo->nbytes)
      continue;
    for (int io = 0; io < 2; io++) {
      uint32_t n = io ? o : m->h.n_inputs;
      for (uint32_t i = 0; i < n; i++) {
        const kfr_buffer *b = &m->buffers[io ? m->output_buf[i] : m->input_buf[i]];
        uintptr_t q = io ? (uintptr_t)outputs[i] : (uintptr_t)inputs[i];
        if (b->nbytes && p < q + b->nbytes && q < p + bo->nbytes)
          return kfr_fail(m, KFUSE_EARG, "run: output %u (%s) at %p overlaps %s %u (%s) at %p; outputs may not "
                          "share memory with inputs or other outputs", o, m->strings + bo->name, (void *)p,
                          io ? "output" : "input", i, m->strings + b->name, (void *)q);
      }
    }
  }
  return KFUSE_OK;
}

/* kfuse_model_run, or with debug_steps < UINT32_MAX only the plan's first
 * debug_steps steps, never through a graph and never captured
 * (kfuse_model_debug_run). */
static int run_model(kfuse_model *m, void *stream, const void *const *inputs, void *const *outputs,
                     uint32_t debug_steps) {
  if (!m)
    return KFUSE_EARG;
  int rc = kfr_enter(m);
  if (rc)
    return rc; /* being destroyed */
  const kfr_driver *cu = m->cu;
  CUstream s = (CUstream)stream;
  if ((rc = check_io(m, inputs, outputs)))
    goto unlock;
  CUresult r = cu->cuCtxPushCurrent(m->ctx);
  if (r != CUDA_SUCCESS) {
    rc = cu_fail_run(m, r, "cuCtxPushCurrent", "device context");
    goto unlock;
  }
  CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
  if ((r = cu->cuStreamIsCapturing(s, &cs)) != CUDA_SUCCESS) {
    rc = cu_fail_run(m, r, "cuStreamIsCapturing", "the caller's stream");
    goto pop;
  }
  /* ordered after the previous run, whichever stream it was on; in a
   * capture as an event wait node (replays wait for the run before their
   * launch), and the graph holds the instance alive (kfr_capture_hold) */
  int captured = cs != CU_STREAM_CAPTURE_STATUS_NONE;
  if (captured && debug_steps != UINT32_MAX) {
    rc = kfr_fail(m, KFUSE_EARG, "kfuse_model_debug_run: the stream is being captured");
    goto pop;
  }
  if (captured && (rc = kfr_capture_hold(m, s)))
    goto pop;
  if ((r = cu->cuStreamWaitEvent(s, m->done, captured ? CU_EVENT_WAIT_EXTERNAL : 0)) != CUDA_SUCCESS) {
    rc = cu_fail_run(m, r, "cuStreamWaitEvent", "ordering after the last run");
    goto pop;
  }
  if (m->use_graph && !captured && debug_steps == UINT32_MAX) {
    rc = run_graph(m, s, inputs, outputs);
  } else {
    for (uint32_t i = 0; i < m->h.n_inputs; i++)
      m->base[m->input_buf[i]] = (CUdeviceptr)(uintptr_t)inputs[i];
    for (uint32_t i = 0; i < m->h.n_outputs; i++)
      m->base[m->output_buf[i]] = (CUdeviceptr)(uintptr_t)outputs[i];
    rc = run_prefix(m, s, debug_steps);
  }
  /* record even after a failure: work already queued must still be ordered
   * before the next run (in a capture: an event record node) */
  r = captured ? cu->cuEventRecordWithFlags(m->done, s, CU_EVENT_RECORD_EXTERNAL) : cu->cuEventRecord(m->done, s);
  if (r != CUDA_SUCCESS && rc == KFUSE_OK)
    rc = cu_fail_run(m, r, captured ? "cuEventRecordWithFlags" : "cuEventRecord", "marking the end of the run");
pop:;
  CUcontext popped;
  r = cu->cuCtxPopCurrent(&popped);
  if (r != CUDA_SUCCESS && rc == KFUSE_OK)
    rc = cu_fail_run(m, r, "cuCtxPopCurrent", "device context");
unlock:
  if (rc == KFUSE_OK)
    m->err[0] = 0;
  kfr_leave(m);
  return rc;
}

int kfuse_model_run(kfuse_model *m, void *stream, const void *const *inputs,
                    void *const *outputs) {
  return run_model(m, stream, inputs, outputs, UINT32_MAX);
}

int kfuse_model_debug_run(kfuse_model *m, void *stream, const void *const *inputs,
                          void *const *outputs, uint32_t n_steps) {
  if (m && n_steps == UINT32_MAX)
    n_steps = UINT32_MAX - 1; /* all of them, still without the graph */
  return run_model(m, stream, inputs, outputs, n_steps);
}

int kfuse_model_debug_arena(const kfuse_model *m, uint64_t *device_ptr, uint64_t *bytes, uint32_t *n_steps) {
  if (!m || !device_ptr || !bytes || !n_steps)
    return KFUSE_EARG;
  *device_ptr = (uint64_t)m->arena;
  *bytes = m->h.arena_bytes;
  *n_steps = m->h.n_steps;
  return KFUSE_OK;
}
