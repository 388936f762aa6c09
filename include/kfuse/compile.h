/* kfuse/compile.h — compiling a graph into a module (model.so or model.o).
 *
 *   graph -> compile passes -> partition -> a kernel unit per unique group
 *   (built-in policy) -> NVRTC -> memory plan -> plan blob -> object file
 *   (LLVM C API) -> linked with the runtime into a shared module
 *
 * Works without a GPU: kernels are compiled but neither verified nor timed,
 * and the report says so; with one (and a picker), each group's candidates
 * are judged and the fastest verified kept. */
#ifndef KFUSE_COMPILE_H
#define KFUSE_COMPILE_H

#include <stdbool.h>

#include "kfuse/cache.h"
#include "kfuse/ir.h"
#include "kfuse/options.h"
#include "kfuse/partition.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Compile g (modified by the compile passes) into out_path. For KF_EMIT_SO
 * the weights go to out_path + ".weights" unless embedded; for KF_EMIT_OBJ a
 * header out_path with ".h" replacing ".o" is written too. */
KF_API kf_status kf_compile_graph(kf_graph *g, const kf_compile_options *o,
                                  const char *out_path, kf_diag *diag);

/* The model at model_path (any form kfuse reads: .pt2, MLIR text) loaded,
 * verified and compiled into out_path. When o->checker finds the module
 * does not match its reference (KF_ERR_MISMATCH), nothing is written and
 * it is compiled again with the safer lowerings in turn — without
 * channels-last, then also without fusion, then also without cuDNN — each
 * checked the same way: o is left as the one that passed, and
 * o->check_out's fallback and first_failure say so. KF_ERR_MISMATCH when
 * none passed. */
KF_API kf_status kf_compile_file(const char *model_path, kf_compile_options *o, const char *out_path,
                                 kf_diag *diag);

/* kfuse warm: the unique groups of graphs[0..n) (by cache key, over all
 * of them), sorted by key, split round-robin into n_shards shards; for
 * each group of shard `shard` (0-based) the cache is consulted and, on a
 * miss, the candidates are built, compiled and judged (every group, as
 * --judge-all), and the verified winner stored. Units given in o (by
 * group key, as kfuse compile --unit) are judged for their groups beside
 * the built-in candidates instead of a lookup, and stored when they win.
 * The graphs are changed by the compile passes. Needs o->cache; judging
 * needs o->picker and a GPU. */
typedef struct kf_warm_counts {
  int unique_groups;  /* over all graphs */
  int in_shard;       /* of them, this shard's */
  int hits;           /* already cached (locally or remotely) */
  int judged;         /* judged on the GPU */
  int stored;         /* verified and stored */
  int failed;         /* judged, none of the candidates verified */
  int not_judged;     /* nothing could be judged (info in the warnings) */
  /* the group keys (kf_group.key_hex) of this shard's groups the cache
   * missed, given units aside: malloc'd, the caller frees it */
  char (*missed)[65];
  int n_missed;
} kf_warm_counts;

KF_API kf_status kf_compile_warm(kf_graph *const *graphs, int n, const kf_compile_options *o, int shard,
                                 int n_shards, kf_warm_counts *out, kf_diag *diag);


#ifdef __cplusplus
}
#endif
#endif
