/* driver/units_int.h — private to the driver: a kernel unit for every unique
 * group (driver/units.c), used by the module compile (driver/compile.c)
 * and by kfuse warm (kf_compile_warm). */
#ifndef KFUSE_UNITS_INT_H
#define KFUSE_UNITS_INT_H

#include <stdbool.h>

#include "kfuse/agent.h"
#include "kfuse/compile.h"
#include "kfuse/partition.h"

#define KF_MAX_CANDS (KF_BUILTIN_MAX_VARIANTS + 1)

/* Where a slot's unit came from */
typedef enum kf_uslot_source {
  KF_USLOT_BUILT = 0,    /* built by the built-in policy (and judged, where it was) */
  KF_USLOT_LOCAL = 1,    /* the local kernel cache */
  KF_USLOT_REMOTE = 2,   /* the remote cache (written through into the local one) */
} kf_uslot_source;

/* One unique group (by canonical key) and its unit */
typedef struct kf_uslot {
  const kf_graph *g;
  const kf_partition *p;
  const kf_group *first;  /* the group whose key produced the unit */
  const char *given_dir;  /* --unit KEY=DIR for this group, or NULL */
  bool given_optional;    /* a given unit that fails the judge is a warning
                             (kfuse warm's agent units), not an error */
  kf_unit *unit;
  double build_s, compile_s, pick_s;
  /* judged on the GPU (n_cands > 0): every candidate's verdict (their
   * units freed, but the chosen one's, which is `unit`) */
  int n_cands, chosen;
  kf_pick_cand *cands;
  kf_pick_info info;
  /* the kernel cache */
  char cache_key[65];     /* "" when the cache is off */
  kf_uslot_source source;
  bool reverified;        /* a cached unit judged again (--reverify) */
  bool stored;            /* put into the cache after this compile verified it */
  int cached_reward;      /* a hit's: reward, time and GPU when it was verified */
  double cached_ms;
  char cached_gpu[96];
  char cached_policy[128];
} kf_uslot;

/* What was judged and cached, for the report and the progress line */
typedef struct kf_units_state {
  bool on;          /* a picker, and a GPU as far as is known */
  char why[512];    /* when !on, or no group was judged */
  int judged;       /* groups judged on the GPU */
  int verified;     /* of them, with their chosen unit verified */
  int replaced;     /* of them, where a variant beat the rule's unit */
  int compiled;     /* units compiled with NVRTC in this run */
  int over_budget;  /* groups with choices left to the rule: the judging
                       time (judge_seconds) was spent */
  bool cache_on;
  char cache_why[256]; /* when !cache_on */
  int hits_local, hits_remote, misses, stored;
} kf_units_state;

/* A unit for each of slots[0..ns) (first, g, p and given_dir set): from the
 * cache where it holds one for the group's key, else the built-in policy's
 * rule unit compiled with NVRTC and, with a picker and a GPU, judged
 * beside its variants, the fastest verified kept and stored in the cache.
 * o->require_cached makes a miss an error naming every group that misses. */
kf_status kf_units_build(kf_uslot *slots, int ns, const kf_compile_options *o, kf_units_state *us,
                         kf_diag *diag);

/* Frees what the slots own (units, candidates). */
void kf_units_free(kf_uslot *slots, int ns);

#endif
