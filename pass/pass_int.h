/* pass/pass_int.h — private declarations shared by the passes. */
#ifndef KFUSE_PASS_INT_H
#define KFUSE_PASS_INT_H

#include "kfuse/interp.h"
#include "kfuse/ir.h"

kf_status kf_pass_dce(kf_graph *g, kf_diag *diag);
kf_status kf_pass_simplify(kf_graph *g, kf_diag *diag);
kf_status kf_pass_materialize_outputs(kf_graph *g, kf_diag *diag);
kf_status kf_pass_fold_bn(kf_graph *g, kf_diag *diag);
kf_status kf_pass_fold_scalars(kf_graph *g, kf_diag *diag);
kf_status kf_pass_sink_reshapes(kf_graph *g, kf_diag *diag);
kf_status kf_pass_scan_forms(kf_graph *g, kf_diag *diag);
kf_status kf_pass_recurrences(kf_graph *g, kf_diag *diag);
kf_status kf_pass_channels_last(kf_graph *g, kf_diag *diag);
kf_status kf_pass_split_conv_bias(kf_graph *g, kf_diag *diag);
kf_status kf_pass_dense_conv_inputs(kf_graph *g, kf_diag *diag);
kf_status kf_pass_channels_last_all(kf_graph *g, kf_diag *diag);
kf_status kf_pass_channels_last_unchained(kf_graph *g, kf_diag *diag);
kf_status kf_pass_fold_reductions(kf_graph *g, kf_diag *diag);
kf_status kf_pass_widen_f64(kf_graph *g, kf_diag *diag);

/* The value whose storage v lives in: v itself, or the root of the chain
 * of view ops v comes from. */
const kf_value *kf_pass_storage_root(const kf_value *v);
/* True when v is a view whose elements are exactly those of its storage
 * root, in order (a reshape of a contiguous value computed by an op): the
 * root's producer can write v's memory directly. */
bool kf_pass_is_whole_view(const kf_value *v);
/* A name no input or op of g has: base itself, else base_1, base_2, ...
 * (arena string). Scans the graph: for a few names per pass. */
const char *kf_pass_unique_name(kf_graph *g, const char *base);
/* Does reduction red (a "dims" or "dim" attribute) of a rank-`rank`
 * N, C, spatial... tensor reduce over the channels alone or over every
 * spatial dim? */
bool kf_pass_reduces_channels_or_space(const kf_op *red, int rank);

/* Fresh names for passes that make many: a hash set of the graph's names,
 * built once. */
typedef struct kf_namer {
  kf_graph *g;
  const char **slots;
  size_t cap, n;
} kf_namer;
kf_status kf_namer_init(kf_namer *nm, kf_graph *g);
/* Like kf_pass_unique_name; NULL when out of memory. */
const char *kf_namer_fresh(kf_namer *nm, const char *base);
void kf_namer_fini(kf_namer *nm);

/* A constant tensor value: a fill, or elements of a weight's storage read
 * through the value's own strides and offset (views of a weight carry both
 * relative to the weight's storage record). */
typedef struct kf_pass_const {
  const kf_type *t;
  bool fill;
  double value;
  kf_tensor raw; /* the storage record as a 1-d tensor; data NULL: zeros */
} kf_pass_const;
/* Opens v as a constant. *ok false (and KF_OK) when v is not one or the
 * graph has no weight data; an error only when the store fails. */
kf_status kf_pass_const_open(kf_graph *g, const kf_value *v, kf_pass_const *c, bool *ok, kf_diag *diag);
/* Element `linear` (row-major over the value's shape). */
double kf_pass_const_get(const kf_pass_const *c, int64_t linear);
/* A graph-owned constant holding vals (numel of shape) in dtype, and a
 * kf.param for it (kind "folded", fqn from fqn_base made unique) placed
 * before `before`. */
kf_status kf_pass_new_param(kf_graph *g, const char *fqn_base, const char *name_base, kf_dtype dtype,
                            int rank, const int64_t *shape, const double *vals, kf_op *before,
                            kf_value **out, kf_diag *diag);

#endif
