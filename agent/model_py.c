/* agent/model_py.c — a task's group as a KernelBench-style PyTorch module
 * (model.py: Model, get_inputs, get_init_inputs), the form kernel models
 * were trained on. Each kf op becomes the PyTorch call whose semantics it
 * has (the IR follows ATen's ops after normalisation: docs/ARCHITECTURE.md),
 * the group's inputs are forward()'s arguments in task.json's order and
 * its outputs what forward() returns. get_inputs() draws inputs of the
 * task's shapes, dtypes and strides (a strided input is a view of a
 * larger random tensor). An op without a PyTorch spelling here makes the
 * whole file absent (the reason goes to task.json). scripts/check_model_py.py
 * runs every fixture task's model.py against the fp64 interpreter. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "agent_int.h"

static const char *tdt(kf_dtype d) {
  switch (d) {
  case KF_DTYPE_F32: return "torch.float32";
  case KF_DTYPE_F64: return "torch.float64";
  case KF_DTYPE_F16: return "torch.float16";
  case KF_DTYPE_BF16: return "torch.bfloat16";
  case KF_DTYPE_I64: return "torch.int64";
  case KF_DTYPE_I32: return "torch.int32";
  case KF_DTYPE_I16: return "torch.int16";
  case KF_DTYPE_I8: return "torch.int8";
  case KF_DTYPE_U8: return "torch.uint8";
  case KF_DTYPE_BOOL: return "torch.bool";
  default: return "None";
  }
}

static void ints(kf_strbuf *b, const int64_t *v, int n) {
  kf_strbuf_printf(b, "[");
  for (int i = 0; i < n; i++) kf_strbuf_printf(b, "%s%lld", i ? ", " : "", (long long)v[i]);
  kf_strbuf_printf(b, "]");
}

static void number(kf_strbuf *b, kf_number n) {
  if (n.kind == KF_NUM_BOOL) kf_strbuf_printf(b, "%s", n.i ? "True" : "False");
  else if (n.kind == KF_NUM_INT) kf_strbuf_printf(b, "%lld", (long long)n.i);
  else if (isnan(n.f)) kf_strbuf_printf(b, "float('nan')");
  else if (isinf(n.f)) kf_strbuf_printf(b, "float('%sinf')", n.f < 0 ? "-" : "");
  else kf_strbuf_printf(b, "%.17g", n.f);
}

static void fnum(kf_strbuf *b, double f) { number(b, kf_number_float(f)); }

/* A value's Python name: v<id> (inputs keep theirs, made safe) */
static void vname(kf_strbuf *b, const kf_value *v) {
  if (!v) kf_strbuf_printf(b, "None");
  else kf_strbuf_printf(b, "v%u", v->id);
}

/* operands from..from+n-1 of op, comma-separated */
static void operands(kf_strbuf *b, const kf_op *op, int from, int n) {
  for (int i = from; i < from + n; i++) {
    if (i > from) kf_strbuf_printf(b, ", ");
    vname(b, i < op->n_operands ? op->operands[i] : NULL);
  }
}

#define A(k) (&op->attrs[k])
#define O(k) op->operands[k]
#define R(k) op->results[k]

/* sources, element-wise ops and casts: true when op is one (its expression written to b) */
static bool py_elementwise(const kf_op *op, const char *name, kf_strbuf *b) {
  /* the one-row ops of ops.def: their torch column, on the operand */
  const char *torch_fn = NULL;
  switch (op->code) {
#define KF_OP(ID, NAME, KIND, OPERANDS, RESULTS, ATTRS)
#define KF_EW1(ID, NAME, RESULT, INTERP, TORCH) \
  case KF_OP_##ID: torch_fn = TORCH; break;
#include "kfuse/ops.def"
#undef KF_EW1
#undef KF_OP
  case KF_OP_BITWISE_NOT: torch_fn = "torch.bitwise_not"; break;
  default: break;
  }
  if (torch_fn) {
    kf_strbuf_printf(b, "%s(", torch_fn);
    vname(b, O(0));
    kf_strbuf_printf(b, ")\n");
    return true;
  }
  /* the binary one-row ops (their torch column) and the three with rules
   * of their own that torch spells by their names */
  switch (op->code) {
#define KF_OP(ID, NAME, KIND, OPERANDS, RESULTS, ATTRS)
#define KF_EW2(ID, NAME, RESULT, INTERP, TORCH, ATEN) \
  case KF_OP_##ID: torch_fn = TORCH; break;
#include "kfuse/ops.def"
#undef KF_EW2
#undef KF_OP
  case KF_OP_REMAINDER: torch_fn = "torch.remainder"; break;
  case KF_OP_FMOD: torch_fn = "torch.fmod"; break;
  case KF_OP_POW: torch_fn = "torch.pow"; break;
  default: break;
  }
  if (torch_fn) {
    /* a scalar operand is a Python number: its own value, as the IR's */
    kf_strbuf_printf(b, "%s(", torch_fn);
    operands(b, op, 0, 2);
    kf_strbuf_printf(b, ")\n");
    return true;
  }
  switch (op->code) {
  case KF_OP_SCALAR:
    number(b, A(0)->u.num);
    kf_strbuf_printf(b, "\n");
    return true;
  case KF_OP_FULL:
    kf_strbuf_printf(b, "torch.full(");
    ints(b, R(0)->type.shape, R(0)->type.rank);
    kf_strbuf_printf(b, ", ");
    number(b, A(0)->u.num);
    kf_strbuf_printf(b, ", dtype=%s)\n", tdt(R(0)->type.dtype));
    return true;
  case KF_OP_ARANGE:
    kf_strbuf_printf(b, "torch.arange(");
    number(b, A(0)->u.num);
    kf_strbuf_printf(b, ", ");
    number(b, A(1)->u.num);
    kf_strbuf_printf(b, ", ");
    number(b, A(2)->u.num);
    kf_strbuf_printf(b, ", dtype=%s)\n", tdt(R(0)->type.dtype));
    return true;
  case KF_OP_GELU:
    kf_strbuf_printf(b, "F.gelu(");
    vname(b, O(0));
    kf_strbuf_printf(b, ", approximate='%s')\n", A(0)->u.s);
    return true;
  case KF_OP_HARDTANH:
  case KF_OP_LEAKY_RELU:
  case KF_OP_SOFTPLUS:
  case KF_OP_ELU:
    kf_strbuf_printf(b, "torch.ops.aten.%s(", name);
    vname(b, O(0));
    for (int k = 0; k < kf_op_info_get(op->code)->n_attrs; k++) {
      kf_strbuf_printf(b, ", ");
      number(b, A(k)->u.num);
    }
    kf_strbuf_printf(b, ")\n");
    return true;
  case KF_OP_CLAMP:
    kf_strbuf_printf(b, "torch.clamp(");
    vname(b, O(0));
    kf_strbuf_printf(b, ", ");
    if (A(0)->present) number(b, A(0)->u.num);
    else kf_strbuf_printf(b, "None");
    kf_strbuf_printf(b, ", ");
    if (A(1)->present) number(b, A(1)->u.num);
    else kf_strbuf_printf(b, "None");
    kf_strbuf_printf(b, ")\n");
    return true;
  case KF_OP_CAST:
    vname(b, O(0));
    kf_strbuf_printf(b, ".to(%s)\n", tdt(R(0)->type.dtype));
    return true;
  case KF_OP_COPY:
    vname(b, O(0));
    kf_strbuf_printf(b, ".clone()\n");
    return true;
  case KF_OP_ADD:
  case KF_OP_SUB:
    kf_strbuf_printf(b, "torch.%s(", name);
    operands(b, op, 0, 2);
    if (A(0)->present) {
      kf_strbuf_printf(b, ", alpha=");
      number(b, A(0)->u.num);
    }
    kf_strbuf_printf(b, ")\n");
    return true;
  case KF_OP_DIV:
    kf_strbuf_printf(b, "torch.div(");
    operands(b, op, 0, 2);
    if (A(0)->present) kf_strbuf_printf(b, ", rounding_mode='%s'", A(0)->u.s);
    kf_strbuf_printf(b, ")\n");
    return true;
  case KF_OP_WHERE:
    kf_strbuf_printf(b, "torch.where(");
    operands(b, op, 0, 3);
    kf_strbuf_printf(b, ")\n");
    return true;
  default: return false;
  }
  return false; /* a case that breaks out: no spelling */
}

/* views, layout, concatenation, padding and indexing: true when op is one (its expression written to b) */
static bool py_shape(const kf_op *op, const char *name, kf_strbuf *b) {
  switch (op->code) {
  case KF_OP_RESHAPE:
  case KF_OP_EXPAND:
    vname(b, O(0));
    kf_strbuf_printf(b, ".%s(", op->code == KF_OP_RESHAPE ? "reshape" : "expand");
    ints(b, R(0)->type.shape, R(0)->type.rank);
    kf_strbuf_printf(b, ")\n");
    return true;
  case KF_OP_PERMUTE:
    vname(b, O(0));
    kf_strbuf_printf(b, ".permute(");
    ints(b, A(0)->u.ints.v, A(0)->u.ints.n);
    kf_strbuf_printf(b, ")\n");
    return true;
  case KF_OP_SLICE:
    kf_strbuf_printf(b, "torch.ops.aten.slice(");
    vname(b, O(0));
    kf_strbuf_printf(b, ", %lld, %lld, %lld, %lld)\n", (long long)A(0)->u.i, (long long)A(1)->u.i,
                     (long long)A(2)->u.i, (long long)A(3)->u.i);
    return true;
  case KF_OP_SELECT:
    vname(b, O(0));
    kf_strbuf_printf(b, ".select(%lld, %lld)\n", (long long)A(0)->u.i, (long long)A(1)->u.i);
    return true;
  case KF_OP_UNFOLD:
    vname(b, O(0));
    kf_strbuf_printf(b, ".unfold(%lld, %lld, %lld)\n", (long long)A(0)->u.i, (long long)A(1)->u.i,
                     (long long)A(2)->u.i);
    return true;
  case KF_OP_CAT:
    kf_strbuf_printf(b, "torch.cat([");
    for (int i = 0; i < op->n_operands; i++) {
      if (i) kf_strbuf_printf(b, ", ");
      vname(b, O(i));
    }
    kf_strbuf_printf(b, "], %lld)\n", (long long)A(0)->u.i);
    return true;
  case KF_OP_SPLIT:
    kf_strbuf_printf(b, "torch.split(");
    vname(b, O(0));
    kf_strbuf_printf(b, ", ");
    ints(b, A(1)->u.ints.v, A(1)->u.ints.n);
    kf_strbuf_printf(b, ", %lld)%s\n", (long long)A(0)->u.i, op->n_results == 1 ? "[0]" : "");
    return true;
  case KF_OP_PAD:
    kf_strbuf_printf(b, "F.pad(");
    vname(b, O(0));
    kf_strbuf_printf(b, ", ");
    ints(b, A(0)->u.ints.v, A(0)->u.ints.n);
    kf_strbuf_printf(b, ", value=");
    number(b, A(1)->u.num);
    kf_strbuf_printf(b, ")\n");
    return true;
  case KF_OP_INDEX_SELECT:
  case KF_OP_GATHER:
    kf_strbuf_printf(b, "torch.%s(", name);
    vname(b, O(0));
    kf_strbuf_printf(b, ", %lld, ", (long long)A(0)->u.i);
    vname(b, O(1));
    kf_strbuf_printf(b, ")\n");
    return true;
  case KF_OP_EMBEDDING:
    kf_strbuf_printf(b, "F.embedding(");
    vname(b, O(1));
    kf_strbuf_printf(b, ", ");
    vname(b, O(0));
    kf_strbuf_printf(b, ")\n");
    return true;
  case KF_OP_INDEX: {
    /* x[..., idx, ...]: None for the dims not indexed */
    int rank = O(0)->type.rank, k = 0;
    kf_strbuf_printf(b, "torch.ops.aten.index(");
    vname(b, O(0));
    kf_strbuf_printf(b, ", [");
    int last = A(0)->u.ints.n ? (int)A(0)->u.ints.v[A(0)->u.ints.n - 1] : -1;
    for (int d = 0; d <= last && d < rank; d++) {
      if (d) kf_strbuf_printf(b, ", ");
      if (k < A(0)->u.ints.n && A(0)->u.ints.v[k] == d) vname(b, O(1 + k++));
      else kf_strbuf_printf(b, "None");
    }
    kf_strbuf_printf(b, "])\n");
    return true;
  }
  default: return false;
  }
  return false; /* a case that breaks out: no spelling */
}

/* reductions, scans, softmax and the norms: true when op is one (its expression written to b) */
static bool py_reduce(const kf_op *op, const char *name, kf_strbuf *b) {
  switch (op->code) {
  case KF_OP_SUM:
  case KF_OP_MEAN:
  case KF_OP_AMAX:
  case KF_OP_AMIN:
  case KF_OP_ANY:
  case KF_OP_ALL:
    kf_strbuf_printf(b, "torch.%s(", name);
    vname(b, O(0));
    kf_strbuf_printf(b, ", ");
    ints(b, A(0)->u.ints.v, A(0)->u.ints.n);
    kf_strbuf_printf(b, ", keepdim=%s)\n", A(1)->u.b ? "True" : "False");
    return true;
  case KF_OP_PROD:
    kf_strbuf_printf(b, "_prod(");
    vname(b, O(0));
    kf_strbuf_printf(b, ", ");
    ints(b, A(0)->u.ints.v, A(0)->u.ints.n);
    kf_strbuf_printf(b, ", %s)\n", A(1)->u.b ? "True" : "False");
    return true;
  case KF_OP_VAR:
    kf_strbuf_printf(b, "torch.var(");
    vname(b, O(0));
    kf_strbuf_printf(b, ", ");
    ints(b, A(0)->u.ints.v, A(0)->u.ints.n);
    kf_strbuf_printf(b, ", correction=");
    number(b, A(2)->u.num);
    kf_strbuf_printf(b, ", keepdim=%s)\n", A(1)->u.b ? "True" : "False");
    return true;
  case KF_OP_NORM:
    kf_strbuf_printf(b, "torch.linalg.vector_norm(");
    vname(b, O(0));
    kf_strbuf_printf(b, ", ");
    number(b, A(2)->u.num);
    kf_strbuf_printf(b, ", ");
    ints(b, A(0)->u.ints.v, A(0)->u.ints.n);
    kf_strbuf_printf(b, ", keepdim=%s)\n", A(1)->u.b ? "True" : "False");
    return true;
  case KF_OP_MAX_DIM:
  case KF_OP_MIN_DIM:
    kf_strbuf_printf(b, "tuple(torch.%s(", op->code == KF_OP_MAX_DIM ? "max" : "min");
    vname(b, O(0));
    kf_strbuf_printf(b, ", %lld, keepdim=%s))%s\n", (long long)A(0)->u.i, A(1)->u.b ? "True" : "False",
                     op->n_results == 1 ? "[0]" : "");
    return true;
  case KF_OP_ARGMAX:
  case KF_OP_ARGMIN:
    kf_strbuf_printf(b, "torch.%s(", name);
    vname(b, O(0));
    if (A(0)->present) kf_strbuf_printf(b, ", %lld", (long long)A(0)->u.i);
    else kf_strbuf_printf(b, ", None");
    kf_strbuf_printf(b, ", keepdim=%s)\n", A(1)->u.b ? "True" : "False");
    return true;
  case KF_OP_CUMSUM:
  case KF_OP_CUMPROD:
    kf_strbuf_printf(b, "_scan(torch.%s, ", name);
    vname(b, O(0));
    kf_strbuf_printf(b, ", %lld, %s, %s)\n", (long long)A(0)->u.i, A(1)->present && A(1)->u.b ? "True" : "False",
                     A(2)->present && A(2)->u.b ? "True" : "False");
    return true;
  case KF_OP_SOFTMAX:
  case KF_OP_LOG_SOFTMAX:
    kf_strbuf_printf(b, "torch.%s(", name);
    vname(b, O(0));
    kf_strbuf_printf(b, ", %lld)\n", (long long)A(0)->u.i);
    return true;
  case KF_OP_LAYER_NORM: {
    int r = O(0)->type.rank, k = (int)A(0)->u.i;
    kf_strbuf_printf(b, "torch.ops.aten.native_layer_norm(");
    vname(b, O(0));
    kf_strbuf_printf(b, ", ");
    ints(b, O(0)->type.shape + (r - k), k);
    kf_strbuf_printf(b, ", ");
    operands(b, op, 1, 2);
    kf_strbuf_printf(b, ", ");
    fnum(b, A(1)->u.f);
    kf_strbuf_printf(b, ")\n");
    return true;
  }
  case KF_OP_GROUP_NORM: {
    const kf_type *x = &O(0)->type;
    int64_t hw = 1;
    for (int d = 2; d < x->rank; d++) hw *= x->shape[d];
    kf_strbuf_printf(b, "torch.ops.aten.native_group_norm(");
    operands(b, op, 0, 3);
    kf_strbuf_printf(b, ", %lld, %lld, %lld, %lld, ", (long long)x->shape[0], (long long)x->shape[1], (long long)hw,
                     (long long)A(0)->u.i);
    fnum(b, A(1)->u.f);
    kf_strbuf_printf(b, ")\n");
    return true;
  }
  case KF_OP_BATCH_NORM:
    kf_strbuf_printf(b, "F.batch_norm(");
    vname(b, O(0));
    kf_strbuf_printf(b, ", ");
    vname(b, O(3));
    kf_strbuf_printf(b, ", ");
    vname(b, O(4));
    kf_strbuf_printf(b, ", ");
    vname(b, O(1));
    kf_strbuf_printf(b, ", ");
    vname(b, O(2));
    /* no running statistics: the batch's own (PyTorch's training mode) */
    kf_strbuf_printf(b, ", %s, 0.0, ", O(3) ? "False" : "True");
    fnum(b, A(0)->u.f);
    kf_strbuf_printf(b, ")\n");
    return true;
  default: return false;
  }
  return false; /* a case that breaks out: no spelling */
}

/* matrix products, convolution, pooling, attention, scatter, resampling
 * and recurrences: true when op is one (its expression written to b) */
static bool py_nn(const kf_op *op, const char *name, kf_strbuf *b) {
  switch (op->code) {
  case KF_OP_MM:
  case KF_OP_BMM:
    kf_strbuf_printf(b, "torch.%s(", name);
    operands(b, op, 0, 2);
    kf_strbuf_printf(b, ")\n");
    return true;
  case KF_OP_ADDMM:
    kf_strbuf_printf(b, "torch.addmm(");
    operands(b, op, 0, 3);
    kf_strbuf_printf(b, ", beta=");
    number(b, A(0)->u.num);
    kf_strbuf_printf(b, ", alpha=");
    number(b, A(1)->u.num);
    kf_strbuf_printf(b, ")\n");
    return true;
  case KF_OP_CONV:
    kf_strbuf_printf(b, "torch.ops.aten.convolution(");
    operands(b, op, 0, 3);
    for (int k = 0; k < 3; k++) {
      kf_strbuf_printf(b, ", ");
      ints(b, A(k)->u.ints.v, A(k)->u.ints.n);
    }
    kf_strbuf_printf(b, ", %s, ", A(3)->u.b ? "True" : "False");
    ints(b, A(4)->u.ints.v, A(4)->u.ints.n);
    kf_strbuf_printf(b, ", %lld)\n", (long long)A(5)->u.i);
    return true;
  case KF_OP_MAX_POOL: {
    int nd = A(0)->u.ints.n;
    kf_strbuf_printf(b, "tuple(torch.ops.aten.max_pool%dd_with_indices(", nd);
    vname(b, O(0));
    for (int k = 0; k < 4; k++) {
      kf_strbuf_printf(b, ", ");
      ints(b, A(k)->u.ints.v, A(k)->u.ints.n);
    }
    kf_strbuf_printf(b, ", %s))%s\n", A(4)->u.b ? "True" : "False", op->n_results == 1 ? "[0]" : "");
    return true;
  }
  case KF_OP_AVG_POOL: {
    int nd = A(0)->u.ints.n;
    kf_strbuf_printf(b, "torch.ops.aten.avg_pool%dd(", nd);
    vname(b, O(0));
    for (int k = 0; k < 3; k++) {
      kf_strbuf_printf(b, ", ");
      ints(b, A(k)->u.ints.v, A(k)->u.ints.n);
    }
    kf_strbuf_printf(b, ", %s, %s", A(3)->u.b ? "True" : "False", A(4)->u.b ? "True" : "False");
    if (nd > 1) {
      if (A(5)->present) kf_strbuf_printf(b, ", %lld", (long long)A(5)->u.i);
      else kf_strbuf_printf(b, ", None");
    }
    kf_strbuf_printf(b, ")\n");
    return true;
  }
  case KF_OP_ADAPTIVE_AVG_POOL: {
    const kf_type *y = &R(0)->type;
    kf_strbuf_printf(b, "F.adaptive_avg_pool%dd(", y->rank - 2);
    vname(b, O(0));
    kf_strbuf_printf(b, ", ");
    ints(b, y->shape + 2, y->rank - 2);
    kf_strbuf_printf(b, ")\n");
    return true;
  }
  case KF_OP_SDPA:
    kf_strbuf_printf(b, "F.scaled_dot_product_attention(");
    operands(b, op, 0, 3);
    kf_strbuf_printf(b, ", attn_mask=");
    vname(b, op->n_operands > 3 ? O(3) : NULL);
    kf_strbuf_printf(b, ", is_causal=%s", A(0)->u.b ? "True" : "False");
    if (A(1)->present) {
      kf_strbuf_printf(b, ", scale=");
      fnum(b, A(1)->u.f);
    }
    kf_strbuf_printf(b, ", enable_gqa=%s)\n", A(2)->u.b ? "True" : "False");
    return true;
  case KF_OP_SLICE_SCATTER:
    kf_strbuf_printf(b, "torch.ops.aten.slice_scatter(");
    vname(b, O(0));
    kf_strbuf_printf(b, ", ");
    vname(b, O(1));
    kf_strbuf_printf(b, ".to(%s), %lld, %lld, %lld, %lld)\n", tdt(R(0)->type.dtype), (long long)A(0)->u.i,
                     (long long)A(1)->u.i, (long long)A(2)->u.i, (long long)A(3)->u.i);
    return true;
  case KF_OP_UPSAMPLE: {
    /* ATen's own overloads: output sizes, align_corners (linear, cubic),
     * one optional scale per spatial dim (0: None) */
    int sp = A(0)->u.ints.n;
    const char *mode = A(2)->u.s;
    static const char *const nearest[3] = {"upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d"};
    static const char *const exact[3] = {"_upsample_nearest_exact1d", "_upsample_nearest_exact2d",
                                         "_upsample_nearest_exact3d"};
    static const char *const linear[3] = {"upsample_linear1d", "upsample_bilinear2d", "upsample_trilinear3d"};
    if (sp < 1 || sp > 3) break;
    const char *fn = NULL;
    bool align = false;
    if (!strcmp(mode, "nearest")) fn = nearest[sp - 1];
    else if (!strcmp(mode, "nearest-exact")) fn = exact[sp - 1];
    else if (!strcmp(mode, "linear")) fn = linear[sp - 1], align = true;
    else if (!strcmp(mode, "cubic") && sp == 2) fn = "upsample_bicubic2d", align = true;
    if (!fn) break;
    kf_strbuf_printf(b, "torch.ops.aten.%s(", fn);
    vname(b, O(0));
    kf_strbuf_printf(b, ", ");
    ints(b, A(0)->u.ints.v, sp);
    if (align) kf_strbuf_printf(b, ", %s", A(3)->u.b ? "True" : "False");
    for (int i = 0; i < sp; i++) {
      kf_strbuf_printf(b, ", ");
      if (A(1)->u.floats.v[i] > 0) fnum(b, A(1)->u.floats.v[i]);
      else kf_strbuf_printf(b, "None");
    }
    kf_strbuf_printf(b, ")\n");
    return true;
  }
  case KF_OP_RNN:
    kf_strbuf_printf(b, "_rnn(");
    vname(b, O(0));
    kf_strbuf_printf(b, ", ");
    vname(b, O(1));
    kf_strbuf_printf(b, ", ");
    if (O(2)) vname(b, O(2));
    else kf_strbuf_printf(b, "None");
    kf_strbuf_printf(b, ", ");
    vname(b, O(3));
    kf_strbuf_printf(b, ", ");
    vname(b, O(4));
    kf_strbuf_printf(b, ", %s)\n", kf_op_get_flag(op, "reverse") ? "True" : "False");
    return true;
  default: return false;
  }
  return false; /* a case that breaks out: no spelling */
}

/* one op, as "vR = expr" lines; false with the reason when no spelling */
static bool op_py(const kf_op *op, kf_strbuf *b, char *why, size_t n) {
  const char *name = kf_op_info_get(op->code)->name;
  kf_strbuf_printf(b, "        ");
  for (int i = 0; i < op->n_results; i++) {
    if (i) kf_strbuf_printf(b, ", ");
    vname(b, R(i));
  }
  kf_strbuf_printf(b, " = ");
  if (py_elementwise(op, name, b) || py_shape(op, name, b) || py_reduce(op, name, b) || py_nn(op, name, b))
    return true;
  snprintf(why, n, "op %s (kf.%s) has no PyTorch spelling in model.py yet", op->name, name);
  return false;
}

kf_status kf_task_model_py(const kf_graph *g, const char *title, char **out, char *why, size_t n) {
  *out = NULL;
  kf_strbuf b;
  kf_strbuf_init(&b);
  kf_strbuf_printf(&b,
                   "# model.py — %s, written by `kfuse task` (agent/model_py.c) from group.mlir:\n"
                   "# a KernelBench-style module (Model, get_inputs, get_init_inputs). forward()'s\n"
                   "# arguments are task.json's inputs in order, its results the outputs.\n"
                   "import torch\n"
                   "import torch.nn.functional as F\n\n\n"
                   "def _prod(x, dims, keepdim):\n"
                   "    for d in sorted((d %% max(x.dim(), 1) for d in dims), reverse=True):\n"
                   "        x = torch.prod(x, d, keepdim=keepdim)\n"
                   "    return x\n\n\n"
                   "def _scan(f, x, dim, reverse, exclusive):\n"
                   "    if reverse:\n"
                   "        x = x.flip(dim)\n"
                   "    y = f(x, dim)\n"
                   "    if exclusive:\n"
                   "        one = torch.ones_like(x.narrow(dim, 0, 1)) if f is torch.cumprod else "
                   "torch.zeros_like(x.narrow(dim, 0, 1))\n"
                   "        y = torch.cat([one, y.narrow(dim, 0, x.shape[dim] - 1)], dim)\n"
                   "    return y.flip(dim) if reverse else y\n\n\n"
                   "def _rnn(xg, h, c, w, b, reverse):\n"
                   "    # kf.rnn: an LSTM (c given) or GRU layer over xg's time indices\n"
                   "    H = h.shape[1]\n"
                   "    out = torch.empty(xg.shape[0], h.shape[0], H, dtype=xg.dtype, device=xg.device)\n"
                   "    for t in (range(xg.shape[0] - 1, -1, -1) if reverse else range(xg.shape[0])):\n"
                   "        g, gh = xg[t], h @ w.t() + b\n"
                   "        if c is not None:\n"
                   "            i, f, gg, o = (g + gh).split(H, 1)\n"
                   "            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(gg)\n"
                   "            h = torch.sigmoid(o) * torch.tanh(c)\n"
                   "        else:\n"
                   "            r = torch.sigmoid(g[:, :H] + gh[:, :H])\n"
                   "            z = torch.sigmoid(g[:, H:2 * H] + gh[:, H:2 * H])\n"
                   "            n = torch.tanh(g[:, 2 * H:] + r * gh[:, 2 * H:])\n"
                   "            h = (1 - z) * n + z * h\n"
                   "        out[t] = h\n"
                   "    return out, (c if c is not None else h)\n\n\n"
                   "class Model(torch.nn.Module):\n"
                   "    def __init__(self):\n"
                   "        super().__init__()\n\n"
                   "    def forward(self",
                   title);
  for (int i = 0; i < g->n_inputs; i++) {
    kf_strbuf_printf(&b, ", ");
    vname(&b, g->inputs[i]);
  }
  kf_strbuf_printf(&b, "):\n");
  for (int i = 0; i < g->n_inputs; i++)
    kf_strbuf_printf(&b, "        # v%u: %s\n", g->inputs[i]->id, g->input_names[i] ? g->input_names[i] : "");
  bool ok = true;
  for (const kf_op *op = g->first; op && ok; op = op->next) ok = op_py(op, &b, why, n);
  if (ok) {
    kf_strbuf_printf(&b, "        return ");
    if (g->n_outputs != 1) kf_strbuf_printf(&b, "(");
    for (int i = 0; i < g->n_outputs; i++) {
      if (i) kf_strbuf_printf(&b, ", ");
      vname(&b, g->outputs[i]);
    }
    kf_strbuf_printf(&b, "%s\n\n\n", g->n_outputs != 1 ? ")" : "");
    kf_strbuf_printf(&b, "def get_inputs():\n    return [\n");
    for (int i = 0; i < g->n_inputs; i++) {
      const kf_type *t = &g->inputs[i]->type;
      int64_t hi = t->offset + 1;
      bool empty = false;
      for (int d = 0; d < t->rank; d++) {
        if (!t->shape[d]) empty = true;
        hi += (t->shape[d] - 1) * t->strides[d];
      }
      const char *draw = kf_dtype_is_float(t->dtype) ? "torch.randn(%lld, dtype=%s)"
                         : t->dtype == KF_DTYPE_BOOL ? "torch.randint(0, 2, (%lld,), dtype=%s)"
                                                     : "torch.randint(1, 3, (%lld,), dtype=%s)";
      kf_strbuf_printf(&b, "        ");
      kf_strbuf_printf(&b, draw, (long long)(empty ? 0 : hi), tdt(t->dtype));
      kf_strbuf_printf(&b, ".as_strided(");
      ints(&b, t->shape, t->rank);
      kf_strbuf_printf(&b, ", ");
      ints(&b, t->strides, t->rank);
      kf_strbuf_printf(&b, ", %lld),\n", (long long)(empty ? 0 : t->offset));
    }
    kf_strbuf_printf(&b, "    ]\n\n\ndef get_init_inputs():\n    return []\n");
  }
  if (!ok || b.failed) {
    if (b.failed) snprintf(why, n, "out of memory");
    kf_strbuf_fini(&b);
    return ok ? KF_ERR_NOMEM : KF_ERR_UNSUPPORTED;
  }
  *out = b.data;
  return KF_OK;
}
