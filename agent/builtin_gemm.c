/* agent/builtin_gemm.c — GEMM groups (mm, bmm, addmm with an element-wise
 * epilogue): a cuBLASLt library step (runtime/kfr_plan.h, kfr_gemm), with
 * element-wise launches around it when needed.
 *
 * Operands are taken as strided views, no copies: a row-major operand with
 * unit column stride is used as is (ld = its row stride); one with unit row
 * stride is "stored transposed" (a permuted weight from linear); a batch
 * stride of 0 (an expanded operand) broadcasts. Only an operand with no
 * unit stride in either matrix dim is first copied into scratch.
 *
 * Epilogues: cuBLASLt adds the bias when it is exactly addmm's 1-d bias of
 * length n with alpha = beta = 1, and also applies relu or gelu(tanh) when
 * that is the whole rest of the group (erf-gelu is not cuBLASLt's GELU;
 * gelu only for TF32/16-bit products: for full fp32 cuBLASLt's GELU is a
 * separate kernel, slower than the element-wise launch).
 * Anything else runs as a second, element-wise launch reading the GEMM
 * result from the group output it belongs to or from scratch.
 *
 * Precision: fp32 matmul in full fp32 (KFR_COMPUTE_32F) under the default
 * policy, as PyTorch eager; TF32/BF16/FP16 policies pick the matching
 * cuBLASLt compute type. The fp64 reference converts A and B to f64 in
 * scratch, multiplies in f64 and rounds in the epilogue launch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"
#include "kfr_plan.h"

typedef struct opmap {
  bool trans, copy;
  int64_t ld, batch_stride;
} opmap;

bool kb_gemm_operand(int64_t R, int64_t C, int64_t sr, int64_t sc, bool *trans, int64_t *ld) {
  if ((sc == 1 || C == 1) && (R == 1 || sr >= (C > 1 ? C : 1))) {
    *trans = false;
    *ld = R == 1 ? (C > 1 ? C : 1) : sr;
    return true;
  }
  if ((sr == 1 || R == 1) && (C == 1 || sc >= (R > 1 ? R : 1))) {
    *trans = true;
    *ld = C == 1 ? (R > 1 ? R : 1) : sc;
    return true;
  }
  return false;
}

/* A [.., R, C] operand as cuBLASLt sees it (row-major terms). */
static opmap map_operand(const kf_type *t) {
  opmap m = {false, false, 0, 0};
  int r = t->rank;
  m.copy = !kb_gemm_operand(t->shape[r - 2], t->shape[r - 1], t->strides[r - 2], t->strides[r - 1],
                            &m.trans, &m.ld);
  if (r == 3) m.batch_stride = t->shape[0] == 1 ? 0 : t->strides[0];
  return m;
}

int kb_gemm_compute(kf_dtype dt, kf_precision p) {
  if (dt != KF_DTYPE_F32) return KFR_COMPUTE_32F;
  switch (p) {
  case KF_PRECISION_TF32: return KFR_COMPUTE_32F_TF32;
  case KF_PRECISION_BF16: return KFR_COMPUTE_32F_BF16;
  case KF_PRECISION_FP16: return KFR_COMPUTE_32F_F16;
  default: return KFR_COMPUTE_32F;
  }
}

static void contiguous(kf_type *t, kf_dtype dt, int rank, const int64_t *shape) {
  kf_type_init_tensor(t, dt, rank, shape);
}

kf_status kb_copy_to_scratch(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                             const kf_value *v, int sidx, const kf_type *t, kf_unit *u, kf_strbuf *src,
                             kf_diag *diag) {
  kb_ew_launch l;
  memset(&l, 0, sizeof l);
  l.rank = t->rank;
  memcpy(l.shape, t->shape, sizeof l.shape);
  l.n_ops = 0;
  l.ops = NULL;
  l.out_vals[0] = v;
  l.out_kind[0] = KF_UARG_SCRATCH;
  l.out_index[0] = sidx;
  l.out_type[0] = t;
  l.n_out = 1;
  return kb_ew_emit(p, g, o, &l, u, src, diag);
}

/* One matrix-product group as it is lowered: a cuBLASLt step (operands
 * as views or scratch copies, the epilogue cuBLASLt can take) and, when
 * anything is left, an element-wise launch after it. */
typedef struct gemm_plan {
  const kf_op *a;
  const kf_value *ops[2], *res, *bias;
  const kf_value *final_val; /* the value the step writes: the product, or
                                its fused relu/gelu */
  kf_dtype dt, gdt;          /* the result's dtype; the step's (f64 for the reference) */
  int r;
  int64_t m, n, k, batch;
  bool fp64;
  opmap mp[2];
  int sidx[2];               /* an operand's scratch copy, or -1 */
  kf_type copies[2];
  int epi;                   /* KFR_EPI_* */
  bool bias_fused, need_epi, inplace;
  kf_unit_arg_kind dkind;    /* where the step writes D */
  int dindex;
  kf_type d_type;            /* D's type when it is scratch or rewritten in place */
} gemm_plan;

/* The operands: views where cuBLASLt can read them, else contiguous copies
 * in the step's dtype into scratch (always for the fp64 reference). */
static kf_status gemm_operands(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                               gemm_plan *P, kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  for (int i = 0; i < 2; i++) {
    P->sidx[i] = -1;
    P->mp[i] = map_operand(&P->ops[i]->type);
    if (P->mp[i].copy || P->fp64 || P->ops[i]->type.dtype != P->gdt) {
      contiguous(&P->copies[i], P->gdt, P->ops[i]->type.rank, P->ops[i]->type.shape);
      P->sidx[i] = kf_unit_add_scratch(u, kf_type_numel(&P->copies[i]) * (int64_t)kf_dtype_size(P->gdt));
      if (P->sidx[i] < 0) return KF_ERR_NOMEM;
      kf_status st = kb_copy_to_scratch(p, g, o, P->ops[i], P->sidx[i], &P->copies[i], u, src, diag);
      if (st) return st;
      P->mp[i] = map_operand(&P->copies[i]);
    }
  }
  return KF_OK;
}

/* Which epilogue cuBLASLt takes: the bias of an addmm with alpha = beta =
 * 1 and a contiguous row of n, then relu or gelu(tanh) when that one op
 * consumes the product and only its result leaves the group. need_epi:
 * an element-wise launch follows. */
static void gemm_epilogue(const kf_group *g, const kf_builtin_options *o, gemm_plan *P) {
  const kf_op *a = P->a;
  const kf_value *bias = P->bias;
  int64_t n = P->n;
  P->epi = KFR_EPI_NONE;
  P->bias_fused = false;
  if (bias && !P->fp64 && bias->type.kind == KF_TYPE_TENSOR && bias->type.dtype == P->dt &&
      kf_number_as_double(kf_op_get_number(a, "beta")) == 1.0 &&
      kf_number_as_double(kf_op_get_number(a, "alpha")) == 1.0 &&
      ((bias->type.rank == 1 && bias->type.shape[0] == n && (n == 1 || bias->type.strides[0] == 1)) ||
       (bias->type.rank == 2 && bias->type.shape[0] == 1 && bias->type.shape[1] == n &&
        (n == 1 || bias->type.strides[1] == 1)))) {
    P->bias_fused = true;
    P->epi = KFR_EPI_BIAS;
  }
  const kf_op *tail = NULL;
  int n_rest = 0;
  for (int i = 0; i < g->n_ops; i++)
    if (g->ops[i] != a) {
      n_rest++;
      tail = g->ops[i];
    }
  P->final_val = P->res;
  if (P->bias_fused && n_rest == 1 && tail->n_operands == 1 && tail->operands[0] == P->res &&
      g->n_outputs == 1 && g->outputs[0] == tail->results[0]) {
    if (tail->code == KF_OP_RELU) {
      P->epi = KFR_EPI_RELU_BIAS;
      P->final_val = tail->results[0];
    } else if (tail->code == KF_OP_GELU && strcmp(kf_op_get_str(tail, "approximate"), "tanh") == 0 &&
               kb_gemm_compute(P->dt, o->precision) != KFR_COMPUTE_32F) {
      /* not for full-fp32 products: cuBLASLt runs their GELU_BIAS epilogue
       * as a kernel of its own after the GEMM (cublasLt::epilogue::impl::
       * globalKernel, 37.8 us on [4096, 4096] against 31.9 us for kfuse's
       * element-wise launch, H200, 2026-11-22), so the launch is kept */
      P->epi = KFR_EPI_GELU_BIAS;
      P->final_val = tail->results[0];
    }
  }
  P->need_epi = P->fp64 || (bias && !P->bias_fused) || P->final_val != P->res || n_rest > 0;
  if (P->final_val != P->res) P->need_epi = false;
  if (!P->need_epi && !(g->n_outputs == 1 && g->outputs[0] == P->final_val)) P->need_epi = true;
}

/* Where D goes: the group's output when nothing follows; with an epilogue
 * launch, the product's own output, the group's one output rewritten in
 * place, or scratch. */
static kf_status gemm_destination(const kf_group *g, gemm_plan *P, kf_unit *u, kf_diag *diag) {
  P->dkind = KF_UARG_OUTPUT;
  P->dindex = -1;
  P->inplace = false;
  contiguous(&P->d_type, P->gdt, P->r, P->res->type.shape);
  if (!P->need_epi) {
    P->dindex = kb_group_output(g, P->final_val);
    if (P->dindex < 0) return kb_unsupported(diag, g, P->a, "GEMM result is not a group output");
    if (!kf_type_is_contiguous(&P->final_val->type))
      return kb_unsupported(diag, g, P->a, "non-contiguous GEMM output");
    return KF_OK;
  }
  int oi = kb_group_output(g, P->res);
  const kf_value *fo = g->n_outputs == 1 ? g->outputs[0] : NULL;
  if (oi >= 0 && !P->fp64 && kf_type_is_contiguous(&P->res->type)) {
    P->dindex = oi;
  } else if (oi < 0 && !P->fp64 && fo && fo->type.kind == KF_TYPE_TENSOR && fo->type.dtype == P->gdt &&
             kf_type_is_contiguous(&fo->type) && kf_type_same_shape(&fo->type, &P->res->type)) {
    /* the group's one output holds the product and the epilogue launch
     * rewrites it in place (element-wise: each element read, then
     * written, by the same thread): no scratch of the output's size */
    P->dindex = kb_group_output(g, fo);
    P->inplace = true;
  } else {
    P->dkind = KF_UARG_SCRATCH;
    P->dindex = kf_unit_add_scratch(u, kf_type_numel(&P->d_type) * (int64_t)kf_dtype_size(P->gdt));
    if (P->dindex < 0) return KF_ERR_NOMEM;
  }
  return KF_OK;
}

/* The cuBLASLt step: A, B, (C), D, bias, workspace. */
static kf_status gemm_step(const kf_group *g, const kf_builtin_options *o, const gemm_plan *P, kf_unit *u,
                           kf_diag *diag) {
  const kf_op *a = P->a;
  kf_unit_step *s = kf_unit_add_step(u, KF_USTEP_GEMM);
  if (!s || !kf_unit_step_args(s, 6)) return KF_ERR_NOMEM;
  kf_unit_gemm *q = &s->gemm;
  q->m = P->m;
  q->n = P->n;
  q->k = P->k;
  q->batch = P->batch;
  q->trans_a = P->mp[0].trans;
  q->trans_b = P->mp[1].trans;
  q->lda = P->mp[0].ld;
  q->ldb = P->mp[1].ld;
  q->stride_a = P->batch > 1 ? P->mp[0].batch_stride : 0;
  q->stride_b = P->batch > 1 ? P->mp[1].batch_stride : 0;
  q->ldd = P->n;
  q->stride_d = P->batch > 1 ? P->m * P->n : 0;
  q->ldc = P->n;
  q->stride_c = 0;
  q->has_c = false;
  q->dtype = P->gdt;
  q->compute = kb_gemm_compute(P->dt, o->precision);
  q->epilogue = P->epi;
  q->alpha = a->code == KF_OP_ADDMM ? kf_number_as_double(kf_op_get_number(a, "alpha")) : 1.0;
  q->beta = 0.0;
  q->workspace_bytes = kb_rules_workspace(P->m, P->n, P->k, P->batch);
  int ws = kf_unit_add_scratch(u, q->workspace_bytes);
  if (ws < 0) return KF_ERR_NOMEM;
  for (int i = 0; i < 2; i++) {
    if (P->sidx[i] >= 0) {
      s->args[i].kind = KF_UARG_SCRATCH;
      s->args[i].index = P->sidx[i];
    } else {
      s->args[i].kind = KF_UARG_INPUT;
      s->args[i].index = kb_group_input(g, P->ops[i]);
      if (s->args[i].index < 0) return kb_unsupported(diag, g, a, "operand computed inside the group");
    }
  }
  s->args[2].kind = KF_UARG_NONE;
  s->args[3].kind = P->dkind;
  s->args[3].index = P->dindex;
  if (P->bias_fused) {
    s->args[4].kind = KF_UARG_INPUT;
    s->args[4].index = kb_group_input(g, P->bias);
    if (s->args[4].index < 0) return kb_unsupported(diag, g, a, "bias computed inside the group");
  } else {
    s->args[4].kind = KF_UARG_NONE;
  }
  s->args[5].kind = KF_UARG_SCRATCH;
  s->args[5].index = ws;
  return KF_OK;
}

/* The epilogue launch: everything after the product, reading D. */
static kf_status gemm_epilogue_launch(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                                      const gemm_plan *P, kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_value *res = P->res;
  kb_ew_launch l;
  memset(&l, 0, sizeof l);
  l.rank = P->r;
  memcpy(l.shape, res->type.shape, sizeof l.shape);
  l.n_ops = g->n_ops;
  l.ops = g->ops;
  l.n_bound = 1;
  l.bound_vals[0] = res;
  l.bound_kind[0] = P->dkind;
  l.bound_index[0] = P->dindex;
  l.bound_type[0] = P->dkind == KF_UARG_OUTPUT && !P->inplace ? &res->type : &P->d_type;
  l.addmm = (P->bias && !P->bias_fused) ? P->a : NULL;
  /* outputs of the product's dims, any dtype: a 16-bit model's epilogue
   * casts (the upcast to f32 an RMSNorm or a softmax reads) store their own */
  for (int i = 0; i < g->n_outputs; i++) {
    const kf_value *v = g->outputs[i];
    if (v->type.kind != KF_TYPE_TENSOR || v->type.rank != P->r || !kf_type_same_dims(&v->type, &res->type))
      return kb_unsupported(diag, g, v->def, "GEMM epilogue output of another shape");
    /* the raw product already sits in its output unless the bias or the
     * fp64 rounding still has to be applied */
    if (v == res && P->dkind == KF_UARG_OUTPUT && !l.addmm) continue;
    l.out_vals[l.n_out] = v;
    l.out_kind[l.n_out] = KF_UARG_OUTPUT;
    l.out_index[l.n_out] = i;
    l.out_type[l.n_out] = &v->type;
    l.n_out++;
  }
  if (l.n_out == 0) return KF_OK;
  return kb_ew_emit(p, g, o, &l, u, src, diag);
}

kf_status kb_unit_gemm(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                       kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_op *a = g->anchor;
  if (!a || kf_op_info_get(a->code)->kind != KF_KIND_MATMUL)
    return kb_unsupported(diag, g, a, "GEMM group without a matmul anchor");
  gemm_plan P;
  memset(&P, 0, sizeof P);
  P.a = a;
  int base = a->code == KF_OP_ADDMM ? 1 : 0;
  P.ops[0] = a->operands[base];
  P.ops[1] = a->operands[base + 1];
  P.res = a->results[0];
  P.bias = a->code == KF_OP_ADDMM ? a->operands[0] : NULL;
  P.dt = P.res->type.dtype;
  if (!kf_dtype_is_float(P.dt))
    return kb_unsupported(diag, g, a, "matrix product of %s tensors (cuBLASLt multiplies floats)",
                          kf_dtype_name(P.dt));
  P.r = P.res->type.rank;
  P.m = P.res->type.shape[P.r - 2];
  P.n = P.res->type.shape[P.r - 1];
  P.k = P.ops[0]->type.shape[P.ops[0]->type.rank - 1];
  P.batch = P.r == 3 ? P.res->type.shape[0] : 1;
  if (P.m == 0 || P.n == 0 || P.batch == 0) return KF_OK;
  if (P.k == 0) return kb_unsupported(diag, g, a, "empty inner dimension");
  P.fp64 = o->fp64;
  P.gdt = P.fp64 ? KF_DTYPE_F64 : P.dt;
  kf_status st = gemm_operands(p, g, o, &P, u, src, diag);
  if (st) return st;
  gemm_epilogue(g, o, &P);
  if ((st = gemm_destination(g, &P, u, diag))) return st;
  if ((st = gemm_step(g, o, &P, u, diag))) return st;
  if (!P.need_epi) return KF_OK;
  return gemm_epilogue_launch(p, g, o, &P, u, src, diag);
}
