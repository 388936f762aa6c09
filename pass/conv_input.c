/* pass/conv_input.c — a convolution reads a strided view of its input
 * through a row-major copy (pass "dense-conv-inputs").
 *
 * cuDNN takes dense operands in row-major or, for 2-d and 3-d, in
 * channels-last order (agent/builtin_conv.c); any other view of the input
 * (a permute: transformers' wav2vec2 hands its positional convolution
 * hidden states [B, T, C] transposed to [B, C, T]) left the convolution to
 * the direct template, whose grouped 128-wide 1-d convolution was most of
 * a run four times slower than eager (H200, 2026-11-28). A copy into
 * row-major order costs one pass over the input and makes the library's
 * lowering possible; the judge still weighs it against the direct
 * template on the dense copy.
 *
 * Runs after channels-last, on what the compile will lower with cuDNN
 * (driver/compile.c: not with --no-cudnn, not for the fp64 reference, whose
 * kernels read any strides). Exact: a copy. */
#include <stdio.h>

#include "kfuse/ir.h"
#include "pass_int.h"

/* What cuDNN takes as it is: contiguous, or channels-last for 2-d and 3-d */
static bool dense_for_cudnn(const kf_type *t) {
  if (kf_type_is_contiguous(t)) return true;
  return (t->rank == 4 || t->rank == 5) && kf_type_is_channels_last(t);
}

kf_status kf_pass_dense_conv_inputs(kf_graph *g, kf_diag *diag) {
  for (kf_op *conv = g->first; conv; conv = conv->next) {
    if (conv->code != KF_OP_CONV || conv->n_operands < 1 || !conv->operands[0]) continue;
    kf_value *x = conv->operands[0];
    if (x->type.kind != KF_TYPE_TENSOR || dense_for_cudnn(&x->type)) continue;
    kf_type t = x->type;
    kf_type_set_contiguous(&t);
    char name[300];
    snprintf(name, sizeof name, "%.250s_dense", x->def ? x->def->name : g->input_names[x->index]);
    kf_op *cp = kf_graph_append_op(g, KF_OP_COPY, kf_pass_unique_name(g, name), &x, 1, &t, 1);
    if (!cp) return KF_ERR_NOMEM;
    kf_graph_move_op(g, cp, conv);
    cp->source = conv->source;
    kf_type inf = t;
    kf_status st = kf_infer_types(cp, &inf, diag);
    if (st != KF_OK) return st;
    if (!kf_type_equal(&inf, &t)) {
      kf_diag_error(diag, "dense-conv-inputs: the copy '%s' is not row-major", cp->name);
      return KF_ERR_INVALID;
    }
    conv->operands[0] = cp->results[0];
  }
  return KF_OK;
}
