/* interp/interp_int.h — internals shared by the CPU reference interpreter's
 * files (interp.c drives the graph; elementwise.c, shape.c, reduce.c and
 * nn.c compute the ops of their kinds).
 *
 * Every computed value is a contiguous row-major array of doubles with its
 * logical shape: views are materialised, bool is 0/1, integers are exact.
 * The driver allocates each op's results from their IR types (checking the
 * size limit) before calling the op's kernel, and rounds integer and bool
 * results to their dtype afterwards, so kernels only compute values. */
#ifndef KFUSE_INTERP_INT_H
#define KFUSE_INTERP_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "kfuse/interp.h"
#include "kfuse/ir.h"

/* Multiply-accumulates one op may do (conv, matmul, attention). */
#define KI_MAX_MACS 2000000000.0

typedef struct ki_val {
  bool live;
  int rank;
  int64_t shape[KF_MAX_RANK];
  int64_t n;  /* numel */
  double *d;  /* n doubles (at least one allocated) */
} ki_val;

typedef struct ki_ctx {
  const kf_graph *g;
  const kf_op *op; /* the op being run, for diagnostics */
  kf_diag *diag;
  int64_t max_elements;
  bool round_results; /* float results rounded to their dtype (options) */
  ki_val *vals; /* indexed by kf_value.id */
} ki_ctx;

/* Report "node 'x' (kf.op): <msg>" for the current op and return st. */
kf_status ki_fail(ki_ctx *c, kf_status st, const char *fmt, ...)
    KF_PRINTF(3, 4);

/* The computed value of operand slot i of the current op; NULL for an
 * absent optional operand. */
ki_val *ki_arg(ki_ctx *c, int i);
/* IR type of operand slot i (NULL when absent). */
const kf_type *ki_arg_type(ki_ctx *c, int i);
/* Result i of the current op (allocated by the driver). */
ki_val *ki_res(ki_ctx *c, int i);
const kf_type *ki_res_type(ki_ctx *c, int i);

/* Fails with KF_ERR_LIMIT when `macs` exceeds KI_MAX_MACS. */
kf_status ki_check_macs(ki_ctx *c, double macs);
/* malloc of n doubles (n may be 0) with a diagnostic on failure. */
kf_status ki_alloc(ki_ctx *c, int64_t n, double **out);

/* Row-major strides of a shape. */
void ki_strides(int rank, const int64_t *shape, int64_t *st);
/* Advance a multi-index in row-major order. */
void ki_next(int rank, const int64_t *shape, int64_t *idx);
/* Strides for reading a value of shape (rank, shape) broadcast to rank
 * out_rank (trailing alignment, size-1 dims get stride 0). */
void ki_bcast_strides(int rank, const int64_t *shape, int out_rank,
                      int64_t *st);
/* Out[i] = src[offset + sum idx_k * strides_k] over the shape of out. */
void ki_gather(double *out, int rank, const int64_t *shape, const double *src,
               int64_t offset, const int64_t *strides);

/* Round a double as a store to dtype t would (PyTorch casts: float -> int
 * truncates, integers wrap to their width, f16/bf16/f32 round to nearest
 * even, bool is x != 0). Shared with interp/tensor.c. */
double ki_round_to(kf_dtype t, double v);
/* Element i of raw data of dtype t (unaligned access is fine). */
double ki_load(kf_dtype t, const void *data, int64_t i);

/* Kernels by op kind: each computes the current op's results. */
kf_status ki_run_elementwise(ki_ctx *c);
kf_status ki_run_shape(ki_ctx *c);
kf_status ki_run_reduce(ki_ctx *c);
kf_status ki_run_nn(ki_ctx *c);
/* as_strided and param need the storage behind a value: in interp.c. */
kf_status ki_run_as_strided(ki_ctx *c);

#endif
