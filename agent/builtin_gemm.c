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

kf_status kb_unit_gemm(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                       kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_op *a = g->anchor;
  if (!a || kf_op_info_get(a->code)->kind != KF_KIND_MATMUL)
    return kb_unsupported(diag, g, a, "GEMM group without a matmul anchor");
  int base = a->code == KF_OP_ADDMM ? 1 : 0;
  const kf_value *va = a->operands[base], *vb = a->operands[base + 1];
  const kf_value *res = a->results[0];
  const kf_value *bias = a->code == KF_OP_ADDMM ? a->operands[0] : NULL;
  kf_dtype dt = res->type.dtype;
  if (!kf_dtype_is_float(dt))
    return kb_unsupported(diag, g, a, "matrix product of %s tensors (cuBLASLt multiplies floats)",
                          kf_dtype_name(dt));
  int r = res->type.rank;
  int64_t m = res->type.shape[r - 2], n = res->type.shape[r - 1];
  int64_t kdim = va->type.shape[va->type.rank - 1];
  int64_t batch = r == 3 ? res->type.shape[0] : 1;
  if (m == 0 || n == 0 || batch == 0) return KF_OK;
  if (kdim == 0) return kb_unsupported(diag, g, a, "empty inner dimension");
  bool fp64 = o->fp64;
  kf_dtype gdt = fp64 ? KF_DTYPE_F64 : dt;

  /* ---- operands: views, or copies into scratch */
  kf_type ta64, tb64;
  const kf_value *ops[2] = {va, vb};
  kf_type *copies[2] = {&ta64, &tb64};
  opmap mp[2];
  int sidx[2] = {-1, -1};
  kf_status st = KF_OK;
  for (int i = 0; i < 2; i++) {
    mp[i] = map_operand(&ops[i]->type);
    if (mp[i].copy || fp64 || ops[i]->type.dtype != gdt) {
      /* contiguous copy in the GEMM's dtype */
      contiguous(copies[i], gdt, ops[i]->type.rank, ops[i]->type.shape);
      sidx[i] = kf_unit_add_scratch(u, kf_type_numel(copies[i]) * (int64_t)kf_dtype_size(gdt));
      if (sidx[i] < 0) return KF_ERR_NOMEM;
      if ((st = kb_copy_to_scratch(p, g, o, ops[i], sidx[i], copies[i], u, src, diag))) return st;
      mp[i] = map_operand(copies[i]);
    }
  }

  /* ---- which epilogue cuBLASLt can take */
  int epi = KFR_EPI_NONE;
  bool bias_fused = false;
  if (bias && !fp64 && bias->type.kind == KF_TYPE_TENSOR && bias->type.dtype == dt &&
      kf_number_as_double(kf_op_get_number(a, "beta")) == 1.0 &&
      kf_number_as_double(kf_op_get_number(a, "alpha")) == 1.0 &&
      ((bias->type.rank == 1 && bias->type.shape[0] == n && (n == 1 || bias->type.strides[0] == 1)) ||
       (bias->type.rank == 2 && bias->type.shape[0] == 1 && bias->type.shape[1] == n &&
        (n == 1 || bias->type.strides[1] == 1)))) {
    bias_fused = true;
    epi = KFR_EPI_BIAS;
  }
  /* the rest of the group: relu / gelu(tanh) fused only when it is exactly
   * that one op consuming the product, with only its result leaving */
  const kf_op *tail = NULL;
  int n_rest = 0;
  for (int i = 0; i < g->n_ops; i++)
    if (g->ops[i] != a) {
      n_rest++;
      tail = g->ops[i];
    }
  const kf_value *final_val = res;
  if (bias_fused && n_rest == 1 && tail->n_operands == 1 && tail->operands[0] == res &&
      g->n_outputs == 1 && g->outputs[0] == tail->results[0]) {
    if (tail->code == KF_OP_RELU) {
      epi = KFR_EPI_RELU_BIAS;
      final_val = tail->results[0];
    } else if (tail->code == KF_OP_GELU && strcmp(kf_op_get_str(tail, "approximate"), "tanh") == 0 &&
               kb_gemm_compute(dt, o->precision) != KFR_COMPUTE_32F) {
      /* not for full-fp32 products: cuBLASLt runs their GELU_BIAS epilogue
       * as a kernel of its own after the GEMM (cublasLt::epilogue::impl::
       * globalKernel, 37.8 us on [4096, 4096] against 31.9 us for kfuse's
       * element-wise launch, H200, 2026-11-22), so the launch is kept */
      epi = KFR_EPI_GELU_BIAS;
      final_val = tail->results[0];
    }
  }
  bool need_epi = fp64 || (bias && !bias_fused) || final_val != res || n_rest > 0;
  if (final_val != res) need_epi = false;
  if (!need_epi && !(g->n_outputs == 1 && g->outputs[0] == final_val)) need_epi = true;

  /* ---- where D goes */
  kf_unit_arg_kind dkind = KF_UARG_OUTPUT;
  int dindex = -1;
  kf_type dtype_t;
  contiguous(&dtype_t, gdt, r, res->type.shape);
  bool inplace = false;
  if (!need_epi) {
    dindex = kb_group_output(g, final_val);
    if (dindex < 0) return kb_unsupported(diag, g, a, "GEMM result is not a group output");
    if (!kf_type_is_contiguous(&final_val->type))
      return kb_unsupported(diag, g, a, "non-contiguous GEMM output");
  } else {
    int oi = kb_group_output(g, res);
    const kf_value *fo = g->n_outputs == 1 ? g->outputs[0] : NULL;
    if (oi >= 0 && !fp64 && kf_type_is_contiguous(&res->type)) {
      dindex = oi;
    } else if (oi < 0 && !fp64 && fo && fo->type.kind == KF_TYPE_TENSOR && fo->type.dtype == gdt &&
               kf_type_is_contiguous(&fo->type) && kf_type_same_shape(&fo->type, &res->type)) {
      /* the group's one output holds the product and the epilogue launch
       * rewrites it in place (element-wise: each element read, then
       * written, by the same thread): no scratch of the output's size */
      dindex = kb_group_output(g, fo);
      inplace = true;
    } else {
      dkind = KF_UARG_SCRATCH;
      dindex = kf_unit_add_scratch(u, kf_type_numel(&dtype_t) * (int64_t)kf_dtype_size(gdt));
      if (dindex < 0) return KF_ERR_NOMEM;
    }
  }

  /* ---- the library step */
  kf_unit_step *s = kf_unit_add_step(u, KF_USTEP_GEMM);
  if (!s || !kf_unit_step_args(s, 6)) return KF_ERR_NOMEM;
  kf_unit_gemm *q = &s->gemm;
  q->m = m;
  q->n = n;
  q->k = kdim;
  q->batch = batch;
  q->trans_a = mp[0].trans;
  q->trans_b = mp[1].trans;
  q->lda = mp[0].ld;
  q->ldb = mp[1].ld;
  q->stride_a = batch > 1 ? mp[0].batch_stride : 0;
  q->stride_b = batch > 1 ? mp[1].batch_stride : 0;
  q->ldd = n;
  q->stride_d = batch > 1 ? m * n : 0;
  q->ldc = n;
  q->stride_c = 0;
  q->has_c = false;
  q->dtype = gdt;
  q->compute = kb_gemm_compute(dt, o->precision);
  q->epilogue = epi;
  q->alpha = a->code == KF_OP_ADDMM ? kf_number_as_double(kf_op_get_number(a, "alpha")) : 1.0;
  q->beta = 0.0;
  q->workspace_bytes = kb_rules_workspace(m, n, kdim, batch);
  int ws = kf_unit_add_scratch(u, q->workspace_bytes);
  if (ws < 0) return KF_ERR_NOMEM;
  /* operands */
  for (int i = 0; i < 2; i++) {
    if (sidx[i] >= 0) {
      s->args[i].kind = KF_UARG_SCRATCH;
      s->args[i].index = sidx[i];
    } else {
      s->args[i].kind = KF_UARG_INPUT;
      s->args[i].index = kb_group_input(g, ops[i]);
      if (s->args[i].index < 0) return kb_unsupported(diag, g, a, "operand computed inside the group");
    }
  }
  s->args[2].kind = KF_UARG_NONE;
  s->args[3].kind = dkind;
  s->args[3].index = dindex;
  if (bias_fused) {
    s->args[4].kind = KF_UARG_INPUT;
    s->args[4].index = kb_group_input(g, bias);
    if (s->args[4].index < 0) return kb_unsupported(diag, g, a, "bias computed inside the group");
  } else {
    s->args[4].kind = KF_UARG_NONE;
  }
  s->args[5].kind = KF_UARG_SCRATCH;
  s->args[5].index = ws;

  if (!need_epi) return KF_OK;

  /* ---- the epilogue launch: everything after the product */
  kb_ew_launch l;
  memset(&l, 0, sizeof l);
  l.rank = r;
  memcpy(l.shape, res->type.shape, sizeof l.shape);
  l.n_ops = g->n_ops;
  l.ops = g->ops;
  l.n_bound = 1;
  l.bound_vals[0] = res;
  l.bound_kind[0] = dkind;
  l.bound_index[0] = dindex;
  l.bound_type[0] = dkind == KF_UARG_OUTPUT && !inplace ? &res->type : &dtype_t;
  l.addmm = (bias && !bias_fused) ? a : NULL;
  /* outputs of the product's dims, any dtype: a 16-bit model's epilogue
   * casts (the upcast to f32 an RMSNorm or a softmax reads) store their own */
  for (int i = 0; i < g->n_outputs; i++) {
    const kf_value *v = g->outputs[i];
    if (v->type.kind != KF_TYPE_TENSOR || v->type.rank != r || !kf_type_same_dims(&v->type, &res->type))
      return kb_unsupported(diag, g, v->def, "GEMM epilogue output of another shape");
    /* the raw product already sits in its output unless the bias or the
     * fp64 rounding still has to be applied */
    if (v == res && dkind == KF_UARG_OUTPUT && !l.addmm) continue;
    l.out_vals[l.n_out] = v;
    l.out_kind[l.n_out] = KF_UARG_OUTPUT;
    l.out_index[l.n_out] = i;
    l.out_type[l.n_out] = &v->type;
    l.n_out++;
  }
  if (l.n_out == 0) return KF_OK;
  return kb_ew_emit(p, g, o, &l, u, src, diag);
}
