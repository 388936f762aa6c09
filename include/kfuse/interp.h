/* kfuse/interp.h — host tensors, the CPU reference interpreter and the
 * fixture I/O format.
 *
 * The interpreter runs any verified graph on the CPU in double precision
 * with naive, obviously correct loops. It is the ground truth CI can check
 * without a GPU, and the reference later stages are compared against. It is
 * meant for small shapes: it refuses graphs whose values exceed a size
 * limit instead of running for hours. */
#ifndef KFUSE_INTERP_H
#define KFUSE_INTERP_H

#include <stdbool.h>
#include <stdint.h>

#include "kfuse/ir.h"
#include "kfuse/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A contiguous host tensor. data holds numel * kf_dtype_size(dtype) bytes
 * (bool as one byte, f16/bf16 as their 16-bit patterns). */
typedef struct kf_tensor {
  kf_dtype dtype;
  int rank;
  int64_t shape[KF_MAX_RANK];
  void *data;
} kf_tensor;

KF_API int64_t kf_tensor_numel(const kf_tensor *t);
/* Allocate zeroed data for t (dtype/rank/shape set by the caller). */
KF_API kf_status kf_tensor_alloc(kf_tensor *t);
/* Free t->data; accepts a tensor with NULL data. */
KF_API void kf_tensor_fini(kf_tensor *t);
/* Element i as a double (any dtype). */
KF_API double kf_tensor_get(const kf_tensor *t, int64_t i);
/* Store v into element i, converting to the tensor's dtype as PyTorch's
 * cast would (float -> int truncates, f16/bf16 round to nearest even). */
KF_API void kf_tensor_set(kf_tensor *t, int64_t i, double v);
/* The same on raw memory: element i of an array of dtype dt at data (a
 * module's buffers, read through their own strides). */
KF_API double kf_elem_get(kf_dtype dt, const void *data, int64_t i);
KF_API void kf_elem_set(kf_dtype dt, void *data, int64_t i, double v);

typedef struct kf_interp_options {
  int64_t max_elements; /* per value; 0 = default (16M) */
  /* Called with each op's results as soon as they are computed (NULL: not
   * called): result r of op, its logical shape and its numel doubles in
   * row-major order, valid only during the call (the module check's
   * reference keeps the values it will compare by name). */
  void (*on_value)(void *user, const kf_op *op, int r, int rank, const int64_t *shape, const double *data,
                   int64_t numel);
  void *user;
  /* Float results rounded to their dtype after every op, as eager stores
   * them (default: kept in double precision; only kf.cast rounds): the
   * module check's measure of how far rounding moves a model's answer. */
  bool round_results;
} kf_interp_options;

/* Run g on the CPU. inputs: g->n_inputs tensors matching the input types
 * (dtype and shape). outputs: g->n_outputs tensors filled on success, in
 * F64 (bool and integer results are exact), owned by the caller
 * (kf_tensor_fini). Weights come from g's weight store. */
KF_API kf_status kf_interp_run(const kf_graph *g, const kf_tensor *inputs,
                               int n_inputs, kf_tensor *outputs,
                               const kf_interp_options *opts, kf_diag *diag);

/* ---- fixture I/O files (.kfio; docs/FORMATS.md) ------------------------- */

typedef struct kf_io_entry {
  char *name;
  kf_tensor t;
} kf_io_entry;

typedef struct kf_io_file {
  int n_inputs;
  kf_io_entry *inputs;
  int n_outputs;
  kf_io_entry *outputs;
  double atol, rtol; /* tolerances recorded with the fixture */
  char *meta_json;   /* the whole header, for tools */
} kf_io_file;

/* Read a .kfio file. On failure nothing needs freeing. */
KF_API kf_status kf_io_read(const char *path, kf_io_file *out, kf_diag *diag);
KF_API void kf_io_fini(kf_io_file *f);

/* Compare got (any dtype) with want element-wise: |got - want| <= atol +
 * rtol * |want|, NaN equal only to NaN, shapes equal. On mismatch reports
 * the worst element and returns KF_ERR_MISMATCH. */
KF_API kf_status kf_tensor_compare(const kf_tensor *got, const kf_tensor *want,
                                   double atol, double rtol, const char *what,
                                   kf_diag *diag);

#ifdef __cplusplus
}
#endif
#endif
