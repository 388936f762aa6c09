/* kfuse/options.h — what a compile is asked to do (kf_compile_options),
 * and the two hooks through which the layers above the compile driver
 * take part in it: the picker (which of a group's candidate units goes
 * into the module, judged on a GPU) and the module checker (the finished
 * module against the fp64 reference). The judge implements both
 * (judge/pick.c, judge/module_check.c), the driver calls them
 * (driver/compile.c, driver/units.c), the kfuse command wires them in; so
 * the types live below all three, beside the units they carry
 * (include/kfuse/agent.h). kf_compile_options_init and the stages
 * below are agent/compile_stages.c's. */
#ifndef KFUSE_OPTIONS_H
#define KFUSE_OPTIONS_H

#include <stdbool.h>

#include "kfuse/agent.h"
#include "kfuse/ir.h"
#include "kfuse/partition.h"
#include "kfuse/precision.h"

#ifdef __cplusplus
extern "C" {
#endif

struct kf_cache;        /* include/kfuse/cache.h */
struct kf_cache_remote;

typedef enum kf_emit_kind {
  KF_EMIT_SO = 0,  /* shared module: entry points kfuse_model_* */
  KF_EMIT_OBJ = 1, /* object + generated header: <prefix>_create */
} kf_emit_kind;

/* ---- choosing among a group's candidates on a GPU ----
 * kfuse compile builds, beside each group's rule unit, the built-in
 * policy's variants (kf_builtin_variants) and hands them to a picker, which
 * judges them (verification and timing in a worker process: judge/pick.c,
 * wired by the kfuse command, above this layer); the fastest verified one
 * goes into the module. */

struct kf_compile_options;

typedef struct kf_pick_cand {
  char label[32];  /* "rule", "occ=1024", "no-cudnn" */
  kf_unit *unit;   /* compiled, numbering its inputs as the group does */
  /* the picker's verdict */
  bool judged;     /* it reached the GPU */
  bool correct;    /* verified (and not under the roofline floor) */
  int reward;      /* the judge's milestone: -1, 1, 2, 3 */
  double ms;       /* median GPU time, when timed */
  char why[512];   /* why not correct */
  double verify_s, time_s; /* the judge's wall time verifying it, timing it */
} kf_pick_cand;

typedef struct kf_pick_info {
  bool judged;     /* false: nothing could be (why says: no GPU, ...) */
  bool no_gpu;     /* and never will be in this compile: stop asking */
  char why[512];
  char device[96];
  double floor_ms; /* the group's roofline floor on that device */
  int workers;     /* worker processes the judge started */
  double seconds;
  double sets_s, worker_s, open_s, refs_s; /* kf_judge_batch's */
} kf_pick_info;

typedef struct kf_picker {
  /* judges c[0..n) (c[0] is the rule's unit) for group grp of p, a
   * partition of g; KF_OK whenever it looked at them (info says whether
   * they were judged), an error only for no memory */
  kf_status (*judge)(void *user, const kf_graph *g, const kf_partition *p, const kf_group *grp,
                     const struct kf_compile_options *o, kf_pick_cand *c, int n, kf_pick_info *info,
                     kf_diag *diag);
  void *user;
  bool all_groups; /* judge groups without choices too (verification) */
} kf_picker;

/* ---- checking the finished module as a whole ----
 * Every group passing the judge does not make a module right: layout,
 * fusion and library bugs live between groups. After linking, before any
 * file is renamed into place, kf_compile_graph hands the module to a
 * checker (judge/module_check.c, wired by the kfuse command: the module run
 * on fresh inputs against the per-op fp64 reference module); a failed
 * check leaves nothing written and returns KF_ERR_MISMATCH. */

typedef struct kf_module_built {
  const char *module_path;  /* the linked module (KF_EMIT_SO), temporary name */
  const char *weights_path; /* its weights file (temporary name), NULL when embedded */
  const kf_graph *graph;    /* after the compile passes */
  const kf_partition *partition;
  const kf_memplan *memplan;
  kf_unit *const *units;    /* per group, NULL for view groups */
  const uint32_t *end_step; /* per group: plan steps [0, end_step) compute it
                               and every group before it */
} kf_module_built;

typedef struct kf_module_check {
  bool checked;         /* false: not checked, why says why */
  bool passed;
  char why[1024];       /* not checked, or what failed */
  char device[96];
  char reference[96];   /* what it was compared with */
  int sets;             /* input sets compared */
  double max_rel_err;   /* the worst output's relative error norm */
  double bound;         /* what it was held to: the largest of the outputs'
                           bounds (the policy's, or more where the model's
                           own rounding moves it further) */
  double policy_bound;  /* the precision policy's bound */
  double rounding_err;  /* how far rounding every value to its dtype moves
                           the answer (the reference against the model
                           with no rounding; the worst output), -1 not
                           measured */
  double seconds;       /* the check's wall time in the compile */
  double reference_s;   /* finding the GPU, building and loading the reference
                           module: alongside the compile when started ahead */
  double wait_s;        /* of seconds: waiting for the reference */
  double create_s;      /* of seconds: loading the compiled module */
  double run_s;         /* of seconds: its runs */
  double ref_run_s;     /* of seconds: the reference's runs */
  double search_s;      /* of seconds: finding the first diverging group */
  int bad_group;        /* on failure: the first group whose outputs
                           diverge from the reference's, or -1 */
  double bad_rel_err;
  double repeat_diff;   /* largest difference between two runs of the module
                           on the same inputs (0 unless something races) */
  char bad_what[1024];  /* its ops and what was done to them */
  char fallback[256];   /* set by the caller: the module was compiled again
                           this way after the first one failed its check */
  char first_failure[1024];
} kf_module_check;

typedef struct kf_module_checker {
  /* KF_OK with out->passed (or !out->checked); KF_ERR_MISMATCH when the
   * module is wrong; another error when the check itself failed */
  kf_status (*check)(void *user, const kf_module_built *b, const struct kf_compile_options *o,
                     kf_module_check *out, kf_diag *diag);
  void *user;
} kf_module_checker;

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
  int col_threads, col_block, row_unroll;
  int tile_a, tile_t;       /* tiled element-wise launches' tile extents */
  int row_split;            /* blocks a row of a row layout at least (0: by rule) */
  int attn_scratch_kib;     /* attention's score scratch bound, KiB (0: by rule) */
  bool no_tune;             /* no GPU search even with a GPU here */
  double judge_seconds;     /* judging stops taking new groups once it has
                               spent this many seconds (the groups moving
                               the most bytes go first; the rest keep the
                               rule's unit, unverified); 0: no limit.
                               kf_compile_options_init: 30 */
  const kf_picker *picker;  /* judges candidates on a GPU; NULL: choices by
                               rule, nothing verified at compile time */
  /* units given for groups (kfuse compile --unit KEY=DIR): the group whose
   * canonical key is key_hex gets the unit in dir (written for its task:
   * inputs numbered as task.json's) once the picker has verified it; an
   * error when no group has the key, or the unit cannot be verified here */
  int n_given;
  const char *const *given_keys;
  const char *const *given_dirs;
  bool no_channels_last;    /* keep 2-d convolutions' activations NCHW
                               (pass/layout.c is skipped) */
  bool channels_last_all;   /* channels-last also for convolutions chained
                               to no other (pass/layout.c's chain rule off) */
  bool no_horizontal;       /* no horizontal fusion of sibling element-wise
                               groups (kf_partition_options.horizontal) */
  bool reference;           /* the verification reference: one group per op,
                               every kernel computing in fp64 (storage dtypes
                               unchanged), no cuDNN; implies !fuse */
  bool reference_tf32;      /* with reference: fp32 convolutions' operands
                               rounded to TF32 (the module check's
                               reference for a module whose convolutions
                               may use TF32) */
  /* the kernel cache (docs/CACHE.md): each unique group's unit is looked
   * up by its key before anything is built, and a unit the picker verified
   * is stored. NULL: no cache. Not used with options that change the code
   * a group gets (the kernel options, no_cudnn, reference). */
  struct kf_cache *cache;
  struct kf_cache_remote *remote;  /* the HTTP remote behind it, or NULL: looked up
                               on a local miss (a hit written through), and
                               given what is stored unless read-only */
  const char *llm_endpoint; /* the endpoint an LLM's given units came from
                               (kfuse compile --agent llm), kept with them
                               in the cache as kf_cache_endpoint_name has it */
  bool require_cached;      /* a group the cache misses is an error naming
                               it (nothing is built, compiled or judged) */
  bool reverify;            /* a cached unit is judged again on the GPU
                               before use; one that fails is dropped from
                               the cache and the group built anew */
  const kf_module_checker *checker; /* the whole module checked before it is
                               written (NULL: not checked; the report says so) */
  kf_module_check *check_out; /* where the check's result goes, or NULL; its
                               fallback and first_failure are the caller's */
  bool keep_values;         /* no arena reuse: every group output keeps its
                               region (the module check's reference) */
} kf_compile_options;

/* The compile itself (kf_compile_graph, include/kfuse/compile.h), handed
 * to the module check's worker by the kfuse command, which builds its
 * reference modules with it: the judge sits below the driver and reaches
 * the compile only through this. */
typedef kf_status (*kf_compile_fn)(kf_graph *g, const kf_compile_options *o, const char *out_path, kf_diag *diag);

/* o's defaults: the default precision policy, sm_90, a shared module,
 * fusion on, 30 s of judging a group (agent/compile_stages.c) */
KF_API void kf_compile_options_init(kf_compile_options *o);

/* ---- the compile's stages before any kernel is made (agent/compile_stages.c),
 * shared by the compile driver and the task writer ---- */

/* The compile pipeline on g (or the reference's), then the layout passes
 * where o asks for cuDNN's channels-last convolutions (kf_pass_run_compile). */
KF_API kf_status kf_compile_passes(kf_graph *g, const kf_compile_options *o, kf_diag *diag);
/* Partition as o says (fusion, precision, horizontal merging), every
 * group's sizes checked against what a byte count can hold. */
KF_API kf_status kf_compile_partition(const kf_graph *g, const kf_compile_options *o, kf_partition **out,
                                      kf_diag *diag);
/* The built-in policy's options from o. */
KF_API void kf_compile_builtin_options(const kf_compile_options *o, kf_builtin_options *bo);

#ifdef __cplusplus
}
#endif
#endif
