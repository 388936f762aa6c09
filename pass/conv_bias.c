/* pass/conv_bias.c — a convolution's bias as an element-wise add where a
 * reduction reads the convolution's result (pass "split-conv-bias").
 *
 * A convolution group computes its bias either inside cuDNN (forward, with
 * nothing or only a residual add and a ReLU after) or in the element-wise
 * launch after the bare convolution (every other case: transposed
 * convolutions always). Where the result, through element-wise ops each
 * used once, is read only by a plain reduction (sum, mean, amax, ...),
 * that launch writes a tensor the size of the result for the reduction to
 * read back: torch.compile instead fuses bias and epilogue into the
 * reduction's loads (KernelBench L2 32: an epilogue launch of 1.41 ms and
 * a reduction of 0.93 against one 0.70 ms kernel; H100, 2026-11-25). This
 * pass makes the bias an explicit add of the bias viewed as [C, 1, ...]
 * (bias_to_reduction says where) so
 * that the partitioner can hand the whole epilogue to the reduction as its
 * prologue (pass/partition.c, feeds_reduction) and the convolution group
 * is the bare convolution. f32 only: for 16-bit data cuDNN adds the bias
 * before rounding to the result's dtype, the split after it.
 *
 * Expects a verified graph after fold-bn (a folded batch norm is part of
 * the bias). Exact: the same additions in the same precision. */
#include <stdio.h>
#include <string.h>

#include "kfuse/ir.h"
#include "pass_int.h"

/* The one op that uses v, or NULL (several uses, a graph output, none). */
static kf_op *sole_user(kf_graph *g, const kf_value *v) {
  if (kf_graph_count_uses(g, v) != 1) return NULL;
  for (int i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] == v) return NULL;
  for (kf_op *op = v->def ? v->def->next : g->first; op; op = op->next)
    for (int k = 0; k < op->n_operands; k++)
      if (op->operands[k] == v) return op;
  return NULL;
}

static bool is_ew(const kf_op *op) {
  kf_op_kind k = kf_op_info_get(op->code)->kind;
  return (k == KF_KIND_UNARY || k == KF_KIND_BINARY || k == KF_KIND_TERNARY) && op->n_results == 1;
}

/* Should conv's bias move into the reduction its result reaches through
 * element-wise ops of its shape, each value used once? A transposed
 * convolution's bias is a launch of its own anyway, and so is a forward
 * one's when element-wise ops follow it. A forward convolution feeding the
 * reduction directly has its bias free inside cuDNN's fused call: moved
 * only into a reduction over the channels or every spatial dim, the row
 * and column kernels measured (KernelBench L2 25, conv + min over the
 * channels: 4.53 -> 4.04 ms; H100, 2026-11-25); not into one over some
 * spatial dims, where nothing was gained to measure. */
static bool bias_to_reduction(kf_graph *g, const kf_op *conv) {
  const kf_value *v = conv->results[0];
  bool tr = kf_op_get_bool(conv, "transposed"), ew = false;
  for (int steps = 0; steps < 64; steps++) {
    kf_op *u = sole_user(g, v);
    if (!u) return false;
    if (kf_op_info_get(u->code)->kind == KF_KIND_REDUCE)
      return u->operands[0] == v && (tr || ew || kf_pass_reduces_channels_or_space(u, conv->results[0]->type.rank));
    if (!is_ew(u) || !kf_type_same_dims(&u->results[0]->type, &conv->results[0]->type)) return false;
    ew = true;
    v = u->results[0];
  }
  return false;
}

kf_status kf_pass_split_conv_bias(kf_graph *g, kf_diag *diag) {
  for (kf_op *conv = g->first; conv; conv = conv->next) {
    if (conv->code != KF_OP_CONV || conv->n_operands < 3 || !conv->operands[2]) continue;
    kf_value *y = conv->results[0], *b = conv->operands[2];
    const kf_type *t = &y->type;
    if (t->kind != KF_TYPE_TENSOR || t->dtype != KF_DTYPE_F32 || b->type.dtype != KF_DTYPE_F32 ||
        b->type.rank != 1 || t->rank < 3 || b->type.shape[0] != t->shape[1] || !bias_to_reduction(g, conv))
      continue;
    /* b viewed as [C, 1, ...] broadcasts over N and the spatial dims */
    int64_t shape[KF_MAX_RANK];
    shape[0] = t->shape[1];
    for (int i = 1; i < t->rank - 1; i++) shape[i] = 1;
    kf_type bt;
    kf_type_init_tensor(&bt, b->type.dtype, t->rank - 1, shape);
    char name[300];
    snprintf(name, sizeof name, "%.250s_bias", conv->name);
    kf_op *view = kf_graph_append_op(g, KF_OP_RESHAPE, kf_pass_unique_name(g, name), &b, 1, &bt, 1);
    kf_value *ops[2] = {y, view->results[0]};
    snprintf(name, sizeof name, "%.250s_biased", conv->name);
    kf_op *add = kf_graph_append_op(g, KF_OP_ADD, kf_pass_unique_name(g, name), ops, 2, t, 1);
    kf_graph_move_op(g, view, conv->next);
    kf_graph_move_op(g, add, view->next);
    view->source = add->source = conv->source;
    /* every use of y but the add's now reads the biased value */
    add->operands[0] = view->results[0]; /* not y while uses move */
    kf_graph_replace_uses(g, y, add->results[0]);
    add->operands[0] = y;
    conv->operands[2] = NULL;
    kf_type inf[1] = {add->results[0]->type};
    kf_status st = kf_infer_types(add, inf, diag);
    if (st == KF_OK) st = kf_infer_types(view, &bt, diag);
    if (st != KF_OK) return st;
  }
  return KF_OK;
}
