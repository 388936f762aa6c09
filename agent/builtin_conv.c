/* agent/builtin_conv.c — CONV groups.
 *
 * Three lowerings, chosen by rule:
 *   - cuDNN (the default; not for the fp64 reference or kfuse compile
 *     --no-cudnn): one library step (runtime/kfr_plan.h, kfr_conv) for
 *     f32/f16/bf16 1-3d convolutions with dense operands, transposed ones
 *     included (cuDNN's backward data; their bias and epilogue always
 *     follow as one element-wise launch, as eager adds the bias after
 *     cuDNN too). When the group's epilogue is exactly "add the conv's
 *     own per-channel bias, then optionally add a same-shaped residual
 *     tensor, then optionally relu" and the convolution is not depthwise,
 *     cuDNN's fused y = act(conv + z + bias) computes the whole group
 *     (kf_builtin_options.conv_unfused turns that off: the judge's
 *     "unfused" candidate); otherwise the step writes the bare
 *     convolution and the bias and epilogue follow as one element-wise
 *     launch. f32 convolutions may use TF32 (PyTorch's default
 *     for cuDNN convolutions), so the report says tf32 for them;
 *   - as a GEMM per sample (one group, not transposed, not the fp64
 *     reference): W [Cout, Cin*K] @ cols [Cin*K, P] on cuBLASLt, the columns
 *     gathered by an im2col launch into scratch (skipped for 1x1 stride-1
 *     unpadded convolutions, where each sample already is [Cin, P]); bias and
 *     the group's element-wise epilogue follow as one element-wise launch;
 *   - the direct template (agent/templates/conv.cu) for everything else:
 *     any 1-3d convolution (stride, padding, dilation, groups, transposed),
 *     accumulated in fp32 (fp64 for f64 and the reference), epilogue applied
 *     per output element before the store. Correct everywhere, not fast. */
#include <stdint.h>
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
}

/* Precision of a convolution computed as a GEMM. PyTorch's default allows
 * TF32 in convolutions, and the cuDNN steps use it (cudnn_compute). A
 * convolution reaches the GEMM lowering with cuDNN enabled only when the
 * cuDNN step declined it (a result over 2^31 - 1 elements, operands cuDNN
 * cannot describe): it gets the TF32 its cuDNN step would have had (KernelBench
 * L1 87, a 1x1 convolution of 2^31 results: 275 GFLOP, 5.4 ms at the fp32
 * rate, where eager's cuDNN runs TF32). With cuDNN off (--no-cudnn, the
 * tests' GEMM path) the default policy computes in full fp32, so that
 * those results verify against fp32 references at fp32 tolerances; the
 * TF32 policy (and the 16-bit ones) select the tensor-core compute types. */
static int conv_compute(kf_dtype dt, kf_precision p, bool cudnn_declined) {
  if (dt != KF_DTYPE_F32) return KFR_COMPUTE_32F;
  switch (p) {
  case KF_PRECISION_TF32: return KFR_COMPUTE_32F_TF32;
  case KF_PRECISION_BF16: return KFR_COMPUTE_32F_BF16;
  case KF_PRECISION_FP16: return KFR_COMPUTE_32F_F16;
  case KF_PRECISION_FP32: return KFR_COMPUTE_32F;
  default: return cudnn_declined ? KFR_COMPUTE_32F_TF32 : KFR_COMPUTE_32F;
  }
}

typedef struct conv_geom {
  int64_t IN[3], K[3], S[3], P[3], D[3], OUT[3], XST[5];
  int64_t n, cin, cout, kc, pix;
} conv_geom;

/* the im2col launch: cols[n, ci * K + k, p] = x at the window position, or
 * 0 in the padding */
static kf_status im2col(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                        const kf_value *xv, const conv_geom *c, int sidx, kf_unit *u, kf_strbuf *src,
                        kf_diag *diag) {
  char name[96];
  snprintf(name, sizeof name, "%s_k%d", u->name, u->n_steps);
  int64_t shape[3] = {c->n, c->kc, c->pix};
  kb_kernel k;
  kb_init(&k, o, name, 3, shape);
  int64_t zero[KF_MAX_RANK] = {0}, cst[KF_MAX_RANK] = {c->kc * c->pix, c->pix, 1};
  int px = kb_use_param(&k, KF_UARG_INPUT, kb_group_input(g, xv), xv->type.dtype, false);
  int a = kb_load(&k, px, zero);
  int pc = kb_use_param(&k, KF_UARG_SCRATCH, sidx, xv->type.dtype, true);
  (void)kb_store(&k, pc, cst);
  int64_t kk = c->K[0] * c->K[1] * c->K[2];
  kb_emit(&k, "const I kf_ci = c[1] / (I)%lldLL, kf_kr = c[1] %% (I)%lldLL;", (long long)kk, (long long)kk);
  kb_emit(&k, "const I kf_k[3] = {kf_kr / (I)%lldLL, (kf_kr / (I)%lldLL) %% (I)%lldLL, kf_kr %% (I)%lldLL};",
          (long long)(c->K[1] * c->K[2]), (long long)c->K[2], (long long)c->K[1], (long long)c->K[2]);
  kb_emit(&k, "const I kf_o[3] = {c[2] / (I)%lldLL, (c[2] / (I)%lldLL) %% (I)%lldLL, c[2] %% (I)%lldLL};",
          (long long)(c->OUT[1] * c->OUT[2]), (long long)c->OUT[2], (long long)c->OUT[1],
          (long long)c->OUT[2]);
  for (int d = 0; d < 3; d++)
    kb_emit(&k, "const I kf_i%d = kf_o[%d] * (I)%lldLL - (I)%lldLL + kf_k[%d] * (I)%lldLL;", d, d,
            (long long)c->S[d], (long long)c->P[d], d, (long long)c->D[d]);
  kb_emit(&k, "const bool kf_ok = kf_i0 >= 0 && kf_i0 < (I)%lldLL && kf_i1 >= 0 && kf_i1 < (I)%lldLL && "
              "kf_i2 >= 0 && kf_i2 < (I)%lldLL;",
          (long long)c->IN[0], (long long)c->IN[1], (long long)c->IN[2]);
  const char *rt = kb_reg_type(xv->type.dtype, o->fp64);
  kb_emit(&k, "const %s kf_v = kf_ok ? KF_LDX(%d, c[0] * (I)%lldLL + kf_ci * (I)%lldLL + kf_i0 * (I)%lldLL + "
              "kf_i1 * (I)%lldLL + kf_i2 * (I)%lldLL) : (%s)0;",
          rt, a, (long long)c->XST[0], (long long)c->XST[1], (long long)c->XST[2], (long long)c->XST[3],
          (long long)c->XST[4], rt);
  kb_emit(&k, "KF_ST(0, kf_v);");
  int64_t numel = c->n * c->kc * c->pix;
  int64_t xext = 1;
  for (int i = 0; i < xv->type.rank; i++) xext += (xv->type.shape[i] - 1) * xv->type.strides[i];
  kb_rules r = kb_rules_elementwise(o, numel, 4, false);
  kb_def_params(&k);
  kb_def_accesses(&k, "ST", 0, 3);
  kb_def(&k, "KF_RANK", "3");
  kb_def(&k, "KF_SHAPE", "%lldLL, %lldLL, %lldLL", (long long)c->n, (long long)c->kc, (long long)c->pix);
  kb_def(&k, "KF_NUMEL", "%lldLL", (long long)numel);
  kb_def(&k, "KF_BLOCK", "%d", r.block);
  kb_def(&k, "KF_VEC", "1");
  int64_t lim = ((int64_t)1 << 31) - ((int64_t)1 << 26);
  kb_def(&k, "KF_INDEX", "%s", numel < lim && xext < lim ? "int" : "long long");
  kb_def(&k, "KF_L0_B", "0");
  kb_def_body(&k, "KF_BODY");
  uint32_t grid[3] = {r.grid, 1, 1}, block[3] = {(uint32_t)r.block, 1, 1};
  kf_status st = kb_finish(&k, u, src, "elementwise.cu", grid, block, 0, diag);
  kb_fini(&k);
  (void)p;
  return st;
}

/* Bias and the group's element-wise epilogue as one launch, reading the
 * bare convolution (no bias) from (dkind, dindex): the group output, or a
 * contiguous scratch of layout dt_t. */
static kf_status epilogue(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                          const kf_op *a, kf_unit_arg_kind dkind, int dindex, const kf_type *dt_t,
                          kf_unit *u, kf_strbuf *src, kf_diag *diag) {
  const kf_value *bv = a->n_operands > 2 ? a->operands[2] : NULL;
  const kf_value *res = a->results[0];
  const kf_type *r = &res->type;
  kb_ew_launch l;
  memset(&l, 0, sizeof l);
  l.rank = r->rank;
  memcpy(l.shape, r->shape, sizeof l.shape);
  l.n_ops = g->n_ops;
  l.ops = g->ops;
  l.n_bound = 1;
  l.bound_vals[0] = res;
  l.bound_kind[0] = dkind;
  l.bound_index[0] = dindex;
  l.bound_type[0] = dkind == KF_UARG_OUTPUT ? r : dt_t;
  l.conv = a;
  /* any dtype: an epilogue cast (a 16-bit model's upcast) stores its own */
  for (int i = 0; i < g->n_outputs; i++) {
    const kf_value *v = g->outputs[i];
    if (!kf_type_same_dims(&v->type, r))
      return kb_unsupported(diag, g, v->def, "convolution epilogue output of another shape");
    if (v == res && dkind == KF_UARG_OUTPUT && !bv) continue; /* already final */
    l.out_vals[l.n_out] = v;
    l.out_kind[l.n_out] = KF_UARG_OUTPUT;
    l.out_index[l.n_out] = i;
    l.out_type[l.n_out] = &v->type;
    l.n_out++;
  }
  if (l.n_out == 0) return KF_OK;
  return kb_ew_emit(p, g, o, &l, u, src, diag);
}

/* ---- cuDNN ------------------------------------------------------------------ */

/* Math of a cuDNN convolution: PyTorch lets cuDNN use TF32 for f32
 * convolutions by default, and so does kfuse's default policy, except for
 * an f32 depthwise convolution (2-d or 3-d, not transposed, groups = input
 * channels > 1): eager PyTorch runs those on its own CUDA kernels in plain
 * fp32, never cuDNN's TF32 (its use_cudnn_depthwise is for 16-bit inputs),
 * and they are memory-bound, so TF32 buys nothing. --precision tf32 asks
 * for TF32 everywhere, depthwise too; --precision fp32 for none.
 * 16-bit data computes on tensor cores with fp32 accumulation. */
static int cudnn_compute(kf_dtype dt, kf_precision p, bool depthwise) {
  switch (dt) {
  case KF_DTYPE_F16: return KFR_COMPUTE_32F_F16;
  case KF_DTYPE_BF16: return KFR_COMPUTE_32F_BF16;
  default:
    if (p == KF_PRECISION_FP32 || (depthwise && p == KF_PRECISION_DEFAULT)) return KFR_COMPUTE_32F;
    return KFR_COMPUTE_32F_TF32;
  }
}

/* Workspace the runtime may give cuDNN's algorithm (it picks the fastest
 * that fits): twice the sizes of x and y together, between 64 (16 for
 * convolutions whose x and y are under 16 MiB together) and 256 MiB
 * — room for the precomputed-index implicit GEMM (TF32 tensor cores) and
 * most FFT/Winograd variants without letting one step's scratch dominate
 * the arena. x + y alone was too tight: a 3x3 convolution of
 * [32, 128, 28, 28] needs 26.3 MB for IMPLICIT_PRECOMP_GEMM against a
 * 25.7 MB budget and fell back to the fp32 SIMT implicit GEMM, 5x slower
 * (H200, 2026-11-22). The workspace is scratch: steps share it. */
static int64_t cudnn_workspace(int64_t x_bytes, int64_t y_bytes) {
  int64_t ws = 2 * (x_bytes + y_bytes);
  /* small convolutions (x + y under 16 MiB) need little: 16 MiB */
  int64_t lo = x_bytes + y_bytes >= ((int64_t)16 << 20) ? (int64_t)64 << 20 : (int64_t)16 << 20;
  if (ws < lo) ws = lo;
  if (ws > ((int64_t)256 << 20)) ws = (int64_t)256 << 20;
  return ws;
}

/* Dense in the step's layout: row-major (NCHW), or with nhwc channels-last
 * (pass/layout.c; a tensor may be both when its C or H and W are 1). */
static bool dense_any(const kf_type *t, kf_dtype dt, bool nhwc) {
  return t->kind == KF_TYPE_TENSOR && t->dtype == dt &&
         (nhwc ? kf_type_is_channels_last(t) : kf_type_is_contiguous(t)) && kf_type_numel(t) > 0;
}

/* ... and under 2^31 elements (what one cuDNN step takes) */
static bool dense_in(const kf_type *t, kf_dtype dt, bool nhwc) {
  return dense_any(t, dt, nhwc) && kf_type_numel(t) <= INT32_MAX;
}

/* One cuDNN step takes tensors of up to 2^31 - 1 elements. A convolution
 * whose input or result is larger runs as steps over chunks of its batch
 * (both layouts keep each sample's elements together). Chunks of at most
 * this many steps; more is left to the GEMM or direct lowering. */
#define KF_CONV_MAX_CHUNKS 64

static bool dense_of(const kf_type *t, kf_dtype dt) { return dense_in(t, dt, false); }

/* The group's epilogue as cuDNN's fused form, if it is exactly: conv (with
 * its own bias), then optionally add(conv, z) of a dense same-shaped group
 * input z, then optionally relu, nothing else, with only the last value
 * leaving the group. Sets *z (or NULL), *relu and *final. */
static bool fusable_epilogue(const kf_group *g, const kf_op *a, bool nhwc, const kf_value **z,
                             bool *relu, const kf_value **final) {
  const kf_value *res = a->results[0];
  const kf_type *r = &res->type;
  const kf_value *cur = res;
  *z = NULL;
  *relu = false;
  int at = 0;
  const kf_op *rest[2];
  int n_rest = 0;
  for (int i = 0; i < g->n_ops; i++) {
    if (g->ops[i] == a) continue;
    if (n_rest == 2) return false;
    rest[n_rest++] = g->ops[i];
  }
  if (at < n_rest && rest[at]->code == KF_OP_ADD && rest[at]->n_operands == 2) {
    const kf_op *op = rest[at];
    if (kf_op_has_attr(op, "alpha") && kf_number_as_double(kf_op_get_number(op, "alpha")) != 1.0)
      return false;
    const kf_value *other = op->operands[0] == cur ? op->operands[1] : op->operands[1] == cur ? op->operands[0] : NULL;
    if (!other || other == cur || kb_group_input(g, other) < 0 || !dense_in(&other->type, r->dtype, nhwc) ||
        !kf_type_same_shape(&other->type, r) || op->results[0]->type.dtype != r->dtype)
      return false;
    *z = other;
    cur = op->results[0];
    at++;
  }
  if (at < n_rest && rest[at]->code == KF_OP_RELU && rest[at]->operands[0] == cur &&
      rest[at]->results[0]->type.dtype == r->dtype) {
    *relu = true;
    cur = rest[at]->results[0];
    at++;
  }
  if (at != n_rest || g->n_outputs != 1 || g->outputs[0] != cur) return false;
  if (!dense_in(&cur->type, r->dtype, nhwc)) return false;
  *final = cur;
  return true;
}

/* The cuDNN lowering; *taken = false when it does not apply. */
static kf_status conv_cudnn(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                            const kf_op *a, kf_unit *u, kf_strbuf *src, kf_diag *diag, bool *taken) {
  *taken = false;
  if (o->fp64 || o->no_cudnn) return KF_OK;
  bool tr = kf_op_get_bool(a, "transposed");
  const kf_value *xv = a->operands[0], *wv = a->operands[1];
  const kf_value *bv = a->n_operands > 2 ? a->operands[2] : NULL;
  const kf_value *res = a->results[0];
  const kf_type *x = &xv->type, *w = &wv->type, *r = &res->type;
  kf_dtype dt = r->dtype;
  if (dt != KF_DTYPE_F32 && dt != KF_DTYPE_F16 && dt != KF_DTYPE_BF16) return KF_OK;
  int sp = x->rank - 2;
  if (sp < 1 || sp > 3 || w->rank != x->rank || r->rank != x->rank) return KF_OK;
  /* channels-last (NHWC, NDHWC) when pass/layout.c chose it: x, w (dim 1
   * innermost) and the result all channels-last; any other mix is not a
   * cuDNN step */
  bool nhwc = (sp == 2 || sp == 3) && ((kf_type_is_channels_last(x) && !kf_type_is_contiguous(x)) ||
                                       (kf_type_is_channels_last(r) && !kf_type_is_contiguous(r)));
  if (!dense_any(x, dt, nhwc) || !dense_in(w, dt, nhwc) || (nhwc && !dense_any(r, dt, true)) ||
      r->rank < 3 || kf_type_numel(r) < 1 || x->shape[0] != r->shape[0])
    return KF_OK;
  /* the batch in chunks of up to 2^31 - 1 elements of x and of the result */
  int64_t x_ps = kf_type_numel(x) / x->shape[0], r_ps = kf_type_numel(r) / r->shape[0];
  if (x_ps > INT32_MAX || r_ps > INT32_MAX) return KF_OK;
  int64_t chunk = INT32_MAX / (x_ps > r_ps ? x_ps : r_ps);
  if (o->conv_batch > 0 && chunk > o->conv_batch) chunk = o->conv_batch;
  if (chunk > x->shape[0]) chunk = x->shape[0];
  if ((x->shape[0] + chunk - 1) / chunk > KF_CONV_MAX_CHUNKS) return KF_OK;
  if (bv && (bv->type.rank != 1 || !dense_of(&bv->type, dt))) return KF_OK;
  if (kb_group_input(g, xv) < 0 || kb_group_input(g, wv) < 0 || (bv && kb_group_input(g, bv) < 0))
    return KF_OK;
  int ns, np, nd;
  const int64_t *st = kf_op_get_ints(a, "stride", &ns);
  const int64_t *pd = kf_op_get_ints(a, "padding", &np);
  const int64_t *dl = kf_op_get_ints(a, "dilation", &nd);
  int64_t groups = kf_op_get_int(a, "groups");
  if (ns != sp || np != sp || nd != sp || groups < 1) return KF_OK;
  kf_unit_conv c;
  memset(&c, 0, sizeof c);
  c.nd = sp;
  c.layout = nhwc ? KFR_CONV_NHWC : KFR_CONV_NCHW;
  c.dtype = dt;
  c.n = x->shape[0];
  c.c = x->shape[1];
  c.k = r->shape[1];
  c.groups = groups;
  c.transposed = tr;
  c.compute = cudnn_compute(dt, o->precision, !tr && (sp == 2 || sp == 3) && groups > 1 && groups == c.c);
  /* forward w [k, c/g, ...]; transposed w [c, k/g, ...] */
  if (!tr && (w->shape[0] != c.k || w->shape[1] * groups != c.c || c.k % groups)) return KF_OK;
  if (tr && (w->shape[0] != c.c || w->shape[1] * groups != c.k || c.c % groups)) return KF_OK;
  for (int d = 0; d < 3; d++) {
    c.in[d] = c.filter[d] = c.out[d] = c.stride[d] = c.dilation[d] = 1;
    c.pad[d] = 0;
  }
  for (int d = 0; d < sp; d++) {
    c.in[d] = x->shape[2 + d];
    c.filter[d] = w->shape[2 + d];
    c.out[d] = r->shape[2 + d];
    c.pad[d] = pd[d];
    c.stride[d] = st[d];
    c.dilation[d] = dl[d];
    /* cuDNN's geometry: out from in, or for a transposed convolution (its
     * backward data) in from out — an output_padding of stride or more,
     * which PyTorch allows below the dilation, breaks that */
    int64_t src = tr ? c.out[d] : c.in[d], dst = tr ? c.in[d] : c.out[d];
    int64_t span = src + 2 * c.pad[d] - c.dilation[d] * (c.filter[d] - 1);
    if (c.stride[d] < 1 || c.dilation[d] < 1 || c.pad[d] < 0 || c.pad[d] > INT32_MAX || span < 1 ||
        (span - 1) / c.stride[d] + 1 != dst)
      return KF_OK; /* not cuDNN's geometry (the direct template decides) */
  }
  int64_t es = (int64_t)kf_dtype_size(dt);
  c.alpha1 = 1.0;
  const kf_value *z = NULL, *final = NULL;
  bool relu = false;
  /* depthwise convolutions are never fused: cuDNN's fused engines for
   * them took 1.5-2.5x its bare convolution plus our epilogue launch in
   * each of MobileNetV1's seven (judged, KernelBench L3 19, H200,
   * 2026-11-27); other convolutions are fused by rule, the bare one being
   * the judge's "unfused" candidate */
  bool depthwise = groups > 1 && groups == c.c;
  bool fused = !o->conv_unfused && !depthwise && !tr && bv && fusable_epilogue(g, a, nhwc, &z, &relu, &final);
  *taken = true;
  if (fused) {
    c.has_bias = true;
    c.activation = relu ? KFR_ACT_RELU : KFR_ACT_NONE;
    if (z) {
      c.has_z = true;
      c.alpha2 = 1.0;
    }
  }
  /* where the bare convolution goes when bias and epilogue follow in one
   * launch: the result's output, else a scratch buffer */
  bool epi = !fused && (bv || g->n_ops > 1 || !(g->n_outputs == 1 && g->outputs[0] == res));
  kf_unit_arg_kind dkind = KF_UARG_OUTPUT;
  int dindex = fused ? 0 : kb_group_output(g, res);
  if (!fused && (dindex < 0 || !dense_any(r, dt, nhwc))) {
    dkind = KF_UARG_SCRATCH;
    dindex = kf_unit_add_scratch(u, kf_type_numel(r) * es);
    if (dindex < 0) return KF_ERR_NOMEM;
  }
  /* a step for each chunk of the batch (one for all but huge tensors);
   * workspace_bytes is the budget of the runtime's algorithm search, which
   * allocates what the chosen algorithms need (no arena scratch) */
  for (int64_t b0 = 0; b0 < x->shape[0]; b0 += chunk) {
    int64_t nb = x->shape[0] - b0 < chunk ? x->shape[0] - b0 : chunk;
    kf_unit_step *q = kf_unit_add_step(u, KF_USTEP_CONV);
    if (!q || !kf_unit_step_args(q, 6)) return KF_ERR_NOMEM;
    q->args[0] = (kf_unit_arg){.kind = KF_UARG_INPUT, .index = kb_group_input(g, xv), .i = b0 * x_ps * es};
    q->args[1] = (kf_unit_arg){.kind = KF_UARG_INPUT, .index = kb_group_input(g, wv)};
    q->args[2] = (kf_unit_arg){.kind = dkind, .index = dindex, .i = b0 * r_ps * es};
    q->args[3].kind = KF_UARG_NONE;
    q->args[4].kind = KF_UARG_NONE;
    q->args[5].kind = KF_UARG_NONE;
    if (fused) q->args[3] = (kf_unit_arg){.kind = KF_UARG_INPUT, .index = kb_group_input(g, bv)};
    if (fused && z)
      q->args[4] = (kf_unit_arg){.kind = KF_UARG_INPUT, .index = kb_group_input(g, z), .i = b0 * r_ps * es};
    q->conv = c;
    q->conv.n = nb;
    q->conv.workspace_bytes = cudnn_workspace(nb * x_ps * es, nb * r_ps * es);
  }
  if (!epi) return KF_OK;
  kf_type dt_t;
  kf_type_init_tensor(&dt_t, dt, r->rank, r->shape);
  if (nhwc) kf_type_set_channels_last(&dt_t);
  return epilogue(p, g, o, a, dkind, dindex, &dt_t, u, src, diag);
}

/* The GEMM lowering; *taken = false when the rule says direct. */
static kf_status conv_gemm(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                           const kf_op *a, kf_unit *u, kf_strbuf *src, kf_diag *diag, bool *taken) {
  *taken = false;
  const kf_value *xv = a->operands[0], *wv = a->operands[1];
  const kf_value *bv = a->n_operands > 2 ? a->operands[2] : NULL;
  const kf_value *res = a->results[0];
  const kf_type *x = &xv->type, *w = &wv->type, *r = &res->type;
  if (o->fp64 || kf_op_get_bool(a, "transposed") || kf_op_get_int(a, "groups") != 1) return KF_OK;
  if (x->dtype != w->dtype || x->dtype == KF_DTYPE_F64 || !kf_type_is_contiguous(w) ||
      !kf_type_is_contiguous(r))
    return KF_OK;
  if (kb_group_input(g, xv) < 0 || kb_group_input(g, wv) < 0 || (bv && kb_group_input(g, bv) < 0))
    return KF_OK;
  conv_geom c;
  memset(&c, 0, sizeof c);
  int sp = x->rank - 2, n;
  const int64_t *st = kf_op_get_ints(a, "stride", &n);
  const int64_t *pd = kf_op_get_ints(a, "padding", &n);
  const int64_t *dl = kf_op_get_ints(a, "dilation", &n);
  for (int d = 0; d < 3; d++) {
    c.IN[d] = c.K[d] = c.S[d] = c.D[d] = c.OUT[d] = 1;
    c.P[d] = 0;
  }
  c.XST[0] = x->strides[0];
  c.XST[1] = x->strides[1];
  for (int i = 0; i < sp; i++) {
    int j = 3 - sp + i;
    c.IN[j] = x->shape[2 + i];
    c.K[j] = w->shape[2 + i];
    c.S[j] = st[i];
    c.P[j] = pd[i];
    c.D[j] = dl[i];
    c.OUT[j] = r->shape[2 + i];
    c.XST[2 + j] = x->strides[2 + i];
  }
  c.n = x->shape[0];
  c.cin = x->shape[1];
  c.cout = r->shape[1];
  c.kc = c.cin * c.K[0] * c.K[1] * c.K[2];
  c.pix = c.OUT[0] * c.OUT[1] * c.OUT[2];
  int64_t es = (int64_t)kf_dtype_size(x->dtype);
  /* 1x1, stride 1, unpadded, each sample's channels rows of contiguous pixels */
  bool direct_b = c.K[0] * c.K[1] * c.K[2] == 1 && c.S[0] * c.S[1] * c.S[2] == 1 &&
                  c.P[0] + c.P[1] + c.P[2] == 0 && (c.IN[2] == 1 || c.XST[4] == 1) &&
                  (c.IN[1] == 1 || c.XST[3] == c.IN[2]) && (c.IN[0] == 1 || c.XST[2] == c.IN[1] * c.IN[2]) &&
                  (c.cin == 1 || c.XST[1] >= c.pix);
  int64_t col_bytes = direct_b ? 0 : c.n * c.kc * c.pix * es;
  if (col_bytes > ((int64_t)1 << 30)) return KF_OK; /* too large a scratch: direct */
  *taken = true;
  kf_status s;
  int col = -1;
  if (!direct_b) {
    col = kf_unit_add_scratch(u, col_bytes);
    if (col < 0) return KF_ERR_NOMEM;
    if ((s = im2col(p, g, o, xv, &c, col, u, src, diag))) return s;
  }
  /* where the product goes: the result's own output when nothing follows */
  bool epi = bv || g->n_ops > 1 || !(g->n_outputs == 1 && g->outputs[0] == res);
  kf_unit_arg_kind dkind = KF_UARG_OUTPUT;
  int dindex = kb_group_output(g, res);
  kf_type dt_t;
  kf_type_init_tensor(&dt_t, r->dtype, r->rank, r->shape);
  if (dindex < 0) {
    dkind = KF_UARG_SCRATCH;
    dindex = kf_unit_add_scratch(u, kf_type_numel(r) * es);
    if (dindex < 0) return KF_ERR_NOMEM;
  }
  kf_unit_step *q = kf_unit_add_step(u, KF_USTEP_GEMM);
  if (!q || !kf_unit_step_args(q, 6)) return KF_ERR_NOMEM;
  q->gemm.m = c.cout;
  q->gemm.n = c.pix;
  q->gemm.k = c.kc;
  q->gemm.batch = c.n;
  q->gemm.trans_a = false;
  q->gemm.lda = c.kc;
  q->gemm.stride_a = 0;
  q->gemm.trans_b = false;
  q->gemm.ldb = direct_b ? (c.cin == 1 ? c.pix : c.XST[1]) : c.pix;
  q->gemm.stride_b = c.n > 1 ? (direct_b ? c.XST[0] : c.kc * c.pix) : 0;
  q->gemm.ldd = c.pix;
  q->gemm.stride_d = c.n > 1 ? c.cout * c.pix : 0;
  q->gemm.ldc = c.pix;
  q->gemm.dtype = r->dtype;
  q->gemm.compute = conv_compute(r->dtype, o->precision, !o->no_cudnn && !o->fp64);
  q->gemm.epilogue = KFR_EPI_NONE;
  q->gemm.alpha = 1.0;
  q->gemm.beta = 0.0;
  q->gemm.workspace_bytes = kb_rules_workspace(c.cout, c.pix, c.kc, c.n);
  int ws = kf_unit_add_scratch(u, q->gemm.workspace_bytes);
  if (ws < 0) return KF_ERR_NOMEM;
  q->args[0].kind = KF_UARG_INPUT;
  q->args[0].index = kb_group_input(g, wv);
  if (direct_b) {
    q->args[1].kind = KF_UARG_INPUT;
    q->args[1].index = kb_group_input(g, xv);
  } else {
    q->args[1].kind = KF_UARG_SCRATCH;
    q->args[1].index = col;
  }
  q->args[2].kind = KF_UARG_NONE;
  q->args[3].kind = dkind;
  q->args[3].index = dindex;
  q->args[4].kind = KF_UARG_NONE;
  q->args[5].kind = KF_UARG_SCRATCH;
  q->args[5].index = ws;
  if (!epi) return KF_OK;
  return epilogue(p, g, o, a, dkind, dindex, &dt_t, u, src, diag);
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
  bool taken = false;
  kf_status gs = conv_cudnn(p, g, o, a, u, src, diag, &taken);
  if (gs || taken) return gs;
  gs = conv_gemm(p, g, o, a, u, src, diag, &taken);
  if (gs || taken) return gs;
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
  /* the module check's reference: operands rounded where the module's
   * cuDNN convolution computes in TF32 (cudnn_compute) */
  bool dw = !tr && (sp == 2 || sp == 3) && groups > 1 && groups == cin;
  bool tf32 = o->fp64 && o->tf32_conv_operands && x->dtype == KF_DTYPE_F32 && w->dtype == KF_DTYPE_F32 &&
              cudnn_compute(KF_DTYPE_F32, o->precision, dw) == KFR_COMPUTE_32F_TF32;
  kb_def(&k, "KF_TF32_OPERANDS", "%d", tf32 ? 1 : 0);
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
