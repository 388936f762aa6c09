/* kfuse/plan.h — a partitioned, planned graph and its compiled kernel
 * units serialised into the binary plan a module carries
 * (runtime/kfr_plan.h), through the runtime's own plan writer, so a plan
 * the runtime would refuse never leaves the compiler (agent/plan.c). The
 * compile driver builds a model's plan, the judge a one-unit plan for a
 * unit with library steps. */
#ifndef KFUSE_PLAN_H
#define KFUSE_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "kfuse/agent.h"
#include "kfuse/ir.h"
#include "kfuse/partition.h"

#ifdef __cplusplus
extern "C" {
#endif

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
KF_API kf_status kf_plan_build(const kf_plan_input *in, void **blob, size_t *blob_bytes, kf_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
