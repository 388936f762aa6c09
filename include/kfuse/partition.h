/* kfuse/partition.h — cutting a graph into fusable groups, and the memory
 * plan.
 *
 * Every op of the graph belongs to exactly one group, except kf.param and
 * kf.scalar ops, which belong to none (group_of_op -1): weights are read
 * from their storage and scalars by value by every group that uses them. A
 * group is what one kernel unit implements: its inputs are values defined
 * outside it (graph inputs, weights, scalars, other groups' outputs), its
 * outputs the values used outside it or returned by the graph (a result
 * nothing uses, such as unused max_pool indices, is not an output and need
 * not be written). Groups are listed in an order in which each group's
 * inputs are produced before it runs.
 *
 * The ops of an ELEMENTWISE group all have one result shape, the iteration
 * shape, except kf.full/kf.arange sources, which may have any shape that
 * broadcasts to it; the element-wise ops of an anchor group (prologue or
 * epilogue) likewise share the shape of the anchor's operand (prologue) or
 * of its first result (epilogue). pass/partition.c has the rules.
 *
 * Each group has a canonical form: its ops renumbered locally with their
 * attributes, the types (dtype, shape, strides) of its inputs and outputs,
 * and the precision policy — text that is identical for two groups exactly
 * when one kernel unit serves both. Its BLAKE3 hash is the cache key. The
 * value of a scalar input is part of the text, so a unit may compile it in.
 * (docs/ARCHITECTURE.md, "Partitioning".) */
#ifndef KFUSE_PARTITION_H
#define KFUSE_PARTITION_H

#include <stdint.h>

#include "kfuse/ir.h"
#include "kfuse/precision.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kf_group_kind {
  KF_GROUP_VIEW = 0,        /* only views of other values: no kernel, the
                               outputs alias their operands' storage */
  KF_GROUP_ELEMENTWISE = 1, /* element-wise ops over one iteration shape,
                               operands broadcast and read through strides */
  KF_GROUP_REDUCE = 2,      /* a reduction or normalisation (sum, mean,
                               amax, var, softmax, log_softmax, layer_norm,
                               ...) with element-wise prologue/epilogue */
  KF_GROUP_GEMM = 3,        /* mm / bmm / addmm with an element-wise epilogue */
  KF_GROUP_CONV = 4,        /* convolution with an element-wise epilogue */
  KF_GROUP_ATTENTION = 5,   /* sdpa */
  KF_GROUP_OPAQUE = 6,      /* one op with a dedicated kernel (pooling,
                               gather, index, cat, pad, copies, ...) */
  KF_GROUP_SCAN = 7,        /* a cumsum or cumprod with element-wise
                               prologue/epilogue */
} kf_group_kind;

KF_API const char *kf_group_kind_name(kf_group_kind k);

typedef struct kf_group {
  int id;
  kf_group_kind kind;
  int n_ops;
  kf_op **ops;          /* program order */
  kf_op *anchor;        /* the reduction/gemm/conv/attention op, or NULL */
  int n_inputs;
  kf_value **inputs;    /* defined outside the group, in first-use order */
  int n_outputs;
  kf_value **outputs;   /* used outside the group or graph outputs */
  char *canonical;      /* canonical text form (NUL-terminated) */
  uint8_t key[32];      /* BLAKE3 of canonical */
  char key_hex[65];
} kf_group;

/* bytes of the group's tensor inputs and outputs, each once: what a launch
 * of it moves at least */
KF_API int64_t kf_group_io_bytes(const kf_group *g);

typedef struct kf_partition {
  const kf_graph *graph;
  kf_precision precision;
  int n_groups;
  kf_group *groups;     /* in a valid execution order */
  int *group_of_op;     /* indexed by op position in the graph (program order) */
} kf_partition;

typedef struct kf_partition_options {
  kf_precision precision;
  bool fuse;            /* false: one group per op (the unfused per-op
                           lowering, PyTorch eager's analogue) */
  bool horizontal;      /* merge sibling element-wise groups that read a
                           common tensor (with fuse; default true) */
} kf_partition_options;

KF_API void kf_partition_options_init(kf_partition_options *o);

/* Partition a verified graph. The graph must outlive the partition. */
KF_API kf_status kf_partition_graph(const kf_graph *g,
                                    const kf_partition_options *opts,
                                    kf_partition **out, kf_diag *diag);
KF_API void kf_partition_destroy(kf_partition *p);

/* Print groups (kind, ops, inputs, outputs, key) as comment lines. */
KF_API kf_status kf_partition_print(const kf_partition *p, kf_write_fn write,
                                    void *user);

/* ---- memory plan ---------------------------------------------------------- */

typedef enum kf_storage_kind {
  KF_STORAGE_NONE = 0,   /* scalars: no storage */
  KF_STORAGE_INPUT = 1,  /* a graph input (caller's pointer) */
  KF_STORAGE_OUTPUT = 2, /* written straight into a graph output */
  KF_STORAGE_WEIGHT = 3, /* a model weight */
  KF_STORAGE_ARENA = 4,  /* an intermediate in the arena */
} kf_storage_kind;

/* Where a value lives: a base region plus the value's own element offset
 * and strides (its kf_type). Views share their base's storage. */
typedef struct kf_storage {
  kf_storage_kind kind;
  int index;            /* input/output number, weight index */
  int64_t offset;       /* ARENA: byte offset of the region in the arena */
  int64_t nbytes;       /* bytes of the region (ARENA/OUTPUT) */
  const kf_value *base; /* the value that owns the region */
} kf_storage;

typedef struct kf_memplan {
  int64_t arena_bytes;     /* with liveness-based reuse; includes the scratch */
  int64_t naive_bytes;     /* every intermediate in its own region, plus the
                              scratch */
  int64_t scratch_offset;  /* start of the per-step scratch area */
  int64_t scratch_bytes;
  kf_storage *storage;     /* indexed by value id */
} kf_memplan;

/* Assign storage to every value of a partitioned graph: group outputs that
 * are graph outputs are written in place; views alias; other group outputs
 * get arena regions (256-byte aligned) reused once their last reader ran;
 * scratch_bytes of per-group scratch (GEMM workspaces) is reserved after
 * them. Values inside a group and scalars get KF_STORAGE_NONE. The graph's
 * outputs must be as the materialize-outputs pass leaves them (computed,
 * contiguous, distinct; a graph output that is a whole reshape of a
 * computed value makes that value OUTPUT storage): KF_ERR_INVALID
 * otherwise. */
KF_API kf_status kf_memplan_build(const kf_partition *p, int64_t scratch_bytes,
                                  kf_memplan **out, kf_diag *diag);
/* The same, but a graph output may also be dense in another order (offset
 * 0, its extent exactly its elements: a channels-last result): the judge's
 * one-group plans (judge/plan.c), whose outputs are the group's as the
 * compiled module lays them out. Modules keep contiguous outputs (their
 * callers' contract). */
KF_API kf_status kf_memplan_build_dense(const kf_partition *p, int64_t scratch_bytes,
                                        kf_memplan **out, kf_diag *diag);
/* The same with no reuse: every group output keeps its own region, so all
 * of them can be read after a run (the module check's reference). */
KF_API kf_status kf_memplan_build_keep(const kf_partition *p, int64_t scratch_bytes,
                                       kf_memplan **out, kf_diag *diag);
/* KF_ERR_LIMIT, naming the value and its type, when some value of the graph
 * spans more bytes than the memory plan can count (2^62); kf_memplan_build
 * checks this first, the compile driver also before building kernels. */
KF_API kf_status kf_memplan_check_sizes(const kf_partition *p, kf_diag *diag);
KF_API void kf_memplan_destroy(kf_memplan *m);

#ifdef __cplusplus
}
#endif
#endif
