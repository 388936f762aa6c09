/* driver/plan_int.h — private: turning a partitioned, planned graph and its
 * kernel units into the binary plan a module carries (runtime/kfr_plan.h),
 * and the header written next to object modules. */
#ifndef KFUSE_PLAN_INT_H
#define KFUSE_PLAN_INT_H

#include <stddef.h>

#include "kfuse/agent.h"
#include "kfuse/compile.h"
#include "kfuse/partition.h"

typedef struct kf_plan_input {
  const kf_graph *graph;
  const kf_partition *partition;
  const kf_memplan *memplan;
  kf_unit *const *units;        /* per group (NULL for view groups); compiled */
  kf_target target;
  const int64_t *weight_offset; /* per graph weight: byte offset in the weights
                                   file or embedded region, -1 when unused */
  int64_t weights_bytes;
  uint64_t weights_hash;        /* XXH64 of the weights file's data */
  const char *weights_path;     /* recorded sidecar path, NULL when embedded */
  bool weights_beside_module;   /* a shared module: <module file>.weights */
  bool embed_weights;
} kf_plan_input;

/* Serialise the plan; *blob is malloc'd. */
kf_status kf_plan_build(const kf_plan_input *in, void **blob, size_t *blob_bytes,
                        kf_diag *diag);

/* The header's path for an object module's path: ".o" becomes ".h"
 * (else ".h" is appended); malloc'd, NULL when out of memory. */
char *kf_header_path(const char *obj_path);

/* Write the C header for an object module obj_path (named in its text):
 * the runtime API plus <prefix>_create, to path (named `shown` in
 * messages). */
kf_status kf_write_header(const char *path, const char *shown, const char *obj_path,
                          const char *prefix, const kf_graph *g, kf_diag *diag);

#endif
