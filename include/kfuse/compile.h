/* kfuse/compile.h — compiling a graph into a module (model.so or model.o).
 *
 *   graph -> compile passes -> partition -> a kernel unit per unique group
 *   (built-in policy) -> NVRTC -> memory plan -> plan blob -> object file
 *   (LLVM C API) -> linked with the runtime into a shared module
 *
 * Works without a GPU: kernels are compiled but neither verified nor tuned,
 * and the report says so. */
#ifndef KFUSE_COMPILE_H
#define KFUSE_COMPILE_H

#include <stdbool.h>

#include "kfuse/agent.h"
#include "kfuse/ir.h"
#include "kfuse/partition.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kf_emit_kind {
  KF_EMIT_SO = 0,  /* shared module: entry points kfuse_model_* */
  KF_EMIT_OBJ = 1, /* object + generated header: <prefix>_create */
} kf_emit_kind;

typedef struct kf_compile_options {
  kf_precision precision;
  kf_target target;
  kf_emit_kind emit;
  const char *prefix;       /* KF_EMIT_OBJ: symbol prefix (default kfuse_<model>) */
  bool embed_weights;       /* weights inside the module instead of a sidecar */
  bool fuse;                /* false: one kernel per op (per-op lowering) */
  const char *report_path;  /* JSON report, or NULL */
  bool progress;            /* progress lines on stderr */
  bool no_cudnn;            /* convolutions as im2col + GEMM or direct
                               kernels instead of cuDNN steps */
  /* template choices forced on every group (kfuse compile --kernel-option;
   * 0 = by rule): see kf_builtin_options */
  int block_size, vector_width, row_threads, row_cache, row_occupancy;
  int attn_scratch_kib;     /* attention's score scratch bound, KiB (0: by rule) */
  bool no_tune;             /* no GPU search even with a GPU here */
  bool no_channels_last;    /* keep 2-d convolutions' activations NCHW
                               (pass/layout.c is skipped) */
  bool channels_last_all;   /* channels-last also for convolutions chained
                               to no other (pass/layout.c's chain rule off) */
  bool no_horizontal;       /* no horizontal fusion of sibling element-wise
                               groups (kf_partition_options.horizontal) */
  bool reference;           /* the verification reference: one group per op,
                               every kernel computing in fp64 (storage dtypes
                               unchanged), no cuDNN; implies !fuse */
} kf_compile_options;

KF_API void kf_compile_options_init(kf_compile_options *o);

/* Compile g (modified by the compile passes) into out_path. For KF_EMIT_SO
 * the weights go to out_path + ".weights" unless embedded; for KF_EMIT_OBJ a
 * header out_path with ".h" replacing ".o" is written too. */
KF_API kf_status kf_compile_graph(kf_graph *g, const kf_compile_options *o,
                                  const char *out_path, kf_diag *diag);

/* The passes that prepare a graph for partitioning, in order. */
KF_API const char *kf_compile_pipeline(void);
/* The same for the per-op fp64 reference (--reference): without the
 * algebraic rewrites (fold-reductions), the model as exported. */
KF_API const char *kf_compile_reference_pipeline(void);

#ifdef __cplusplus
}
#endif
#endif
