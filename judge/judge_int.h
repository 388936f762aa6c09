/* judge/judge_int.h — private to the judge (include/kfuse/judge.h).
 *
 * The judge is split by where code runs:
 *   task_read.c  the task: a group in memory, or a task directory read back
 *                (task.json + group.mlir)
 *   check.c      static checks of a unit against its task, before any GPU
 *   compare.c    outputs against the fp64 reference, the tolerances
 *   plan.c       a unit with library steps as a module plan for the runtime
 *   reference.c  the GPU reference: the built-in fp64 unit of the group
 *   worker.c     the worker processes (fork + exec of kfuse judge-worker
 *                and judge-compile): limits, reports through pipes
 *   gpu.c        what the GPU worker does (only ever in that worker)
 *   judge.c      the protocol: inputs, references, the worker, reward,
 *                verdict
 * The judging process itself never creates a CUDA context and never runs
 * NVRTC on a candidate: both happen in workers, so a fault there cannot
 * take the caller down (docs/AGENT.md "Isolation"). */
#ifndef KFUSE_JUDGE_INT_H
#define KFUSE_JUDGE_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "kfuse/agent.h"
#include "kfuse/ir.h"
#include "kfuse/judge.h"
#include "kfuse/partition.h"

/* ---- the task (task.c) ---- */

typedef struct kf_jvalue {
  char name[96];
  kf_type type;  /* dtype, shape, strides and offset as the unit sees them */
  int64_t numel;
  int64_t bytes; /* from the first element to one past the last */
} kf_jvalue;

typedef struct kf_jtask {
  kf_graph *graph; /* group.mlir */
  int n_in, n_out;
  kf_jvalue *in, *out;
  kf_precision precision;
  bool has_conv;  /* the group has a convolution: under the default policy
                     TF32 is allowed there (kf_precision_effective) */
  kf_target target;
  int group;
  char key[80];
  char kind[32];
  int64_t floor_bytes;
  double floor_flops;
  double eager_ms, compile_ms; /* baselines written into the task; < 0: none */
  char builtin_dir[64];        /* "builtin_unit": the built-in unit's directory
                                  in the task directory, "" when none */
} kf_jtask;

/* The precision the task's unit may compute in (its tolerances and peak). */
static inline kf_precision kf_jtask_precision(const kf_jtask *t) {
  return kf_precision_effective(t->precision, t->has_conv);
}

kf_status kf_jtask_read(const char *dir, kf_jtask *t, kf_diag *diag);
/* The same task in memory: group grp of g (compiled with o) as the task
 * directory kf_task_write_group writes would hold it, without the
 * baselines and the built-in unit. t->graph must not outlive g. */
kf_status kf_jtask_from_group(const kf_graph *g, const kf_group *grp, const kf_compile_options *o, kf_jtask *t,
                              kf_diag *diag);
void kf_jtask_fini(kf_jtask *t);

/* ---- static checks (check.c) ---- */

/* Every reason u cannot run as t's unit, one line each into *why (launch
 * shapes over the device's limits, arguments naming a value or buffer that
 * does not exist or lying outside it, scratch over the limit, library
 * steps). True when there is none. */
bool kf_junit_check(const kf_jtask *t, const kf_unit *u, const kf_judge_options *o, kf_strbuf *why);
/* After compiling: every launch passes what its kernel takes (the cubin's
 * parameter list: count and sizes); reasons appended to why. */
bool kf_junit_check_params(const kf_unit *u, kf_strbuf *why);
/* Whether u has a library step (GEMM, CONV): the worker runs such a unit
 * through the runtime, from a one-group plan (plan.c) */
bool kf_junit_has_library_steps(const kf_unit *u);

/* ---- the GPU reference (reference.c) ---- */

/* The built-in fp64 unit of the task's group, compiled (with its plan when
 * it has library steps); an error with the reason in why[n] when there is
 * none. */
kf_status kf_jref_unit(const kf_jtask *t, kf_unit **out, void **plan, size_t *plan_bytes, char *why, size_t n);

/* ---- library steps (plan.c) ---- */

/* The module plan of the task's group with u as its unit (*blob malloc'd);
 * refused for tasks with strided inputs or outputs. */
kf_status kf_jplan_build(const kf_jtask *t, const kf_unit *u, void **blob, size_t *bytes, kf_diag *diag);

/* ---- comparison (compare.c) ---- */

typedef struct kf_jtol {
  double atol; /* times the RMS of the reference output */
  double rtol; /* times |reference element| */
  double norm; /* relative error in norm */
} kf_jtol;

/* The precision policy's tolerance for an output of dtype dt. */
kf_jtol kf_jtol_for(kf_precision p, kf_dtype dt);

/* Offset in elements of logical element i of t from its first element. */
int64_t kf_jelem_offset(const kf_type *t, int64_t i);

typedef struct kf_jcmp {
  double max_abs, rel_norm;
  int64_t bad;       /* elements out of tolerance */
  int64_t unwritten; /* of them, still holding the poison pattern */
} kf_jcmp;

/* got: v's extent as the GPU left it; ref: v.numel doubles in logical
 * order. poison: the byte the extent was filled with before the run.
 * False with the first bad element and the counts in why. */
bool kf_jcompare(const kf_jvalue *v, const void *got, const double *ref, kf_jtol tol, unsigned char poison,
                 kf_jcmp *c, char *why, size_t n);

/* ---- what the worker gets and gives back ---- */

/* One input variant: sets[2k] is set k's values A, sets[2k + 1] its
 * values B (A with one element in eight redrawn) */
typedef struct kf_jset {
  void **in;    /* per input: v.bytes of random values (the extent) */
  double **ref; /* per output: numel doubles, the fp64 reference */
} kf_jset;

/* units one worker judges, in index order (kfuse judge: the built-in
 * unit, then the candidate; kfuse compile: a group's candidates) */
#define KF_JMAX_UNITS KF_JUDGE_MAX_CANDS

typedef struct kf_jwork {
  const kf_jtask *task;
  const kf_judge_options *opt;
  int n_units;
  const kf_unit *units[KF_JMAX_UNITS]; /* compiled; NULL: an empty slot */
  const void *plans[KF_JMAX_UNITS];    /* a unit with library steps: its plan */
  size_t plan_bytes[KF_JMAX_UNITS];
  /* the GPU reference: when set, the sets come without references and the
   * worker makes them by running it first */
  const kf_unit *ref_unit;
  const void *ref_plan;
  size_t ref_plan_bytes;
  int profile_unit; /* the unit whose steps are also timed one by one
                       (kf_judge_options.profile); -1: none */
  int n_sets;    /* input sets the unit is verified on */
  kf_jset *sets; /* KF_JVARIANTS(n_sets) variants */
  /* a run under compute-sanitizer (sanitize.c): KF_JSAN_MEMCHECK or
   * KF_JSAN_RACECHECK, the tool's path in sanitizer; the worker then runs
   * each unit once on set 1 and once on set 2 in buffers of their exact
   * sizes, checks nothing itself and times nothing */
  int sanitize;
  const char *sanitizer;
} kf_jwork;

#define KF_JSAN_MEMCHECK 1
#define KF_JSAN_RACECHECK 2
/* compute-sanitizer's exit status when it found errors */
#define KF_JSAN_EXIT 86

/* Variants made for n verified sets: each set's A and B, then the
 * held-out pair, whose A (sets[2n]) the timing runs on (a set the unit
 * has not seen; its B is made alike but not used) */
#define KF_JVARIANTS(n) (2 * (n) + 2)

#define KF_JREASON 1536
/* steps of a unit the profile times one by one, at most */
#define KF_JPROF_STEPS 64

typedef struct kf_jresult {
  int ran;           /* reached the GPU */
  int skipped;       /* not run: the worker's context was lost to a unit
                        before it (kf_jjudge_units runs it again) */
  int env_error;     /* not the unit's fault (a library missing): not judged */
  int ok;            /* verified on every set, twice, and after timing */
  int sets_passed;
  int deterministic; /* the repeat runs gave the same bits */
  double max_abs, max_rel_norm;
  double ms, min_ms, max_ms; /* timed runs: median, fastest, slowest */
  int runs, copies;          /* timed runs; input copies rotated over */
  char reason[KF_JREASON];   /* why not ok ("" when ok) */
  /* the profile (kf_jwork.profile_unit): each step between its own events */
  int prof_steps, prof_runs;     /* steps timed (0: none), runs */
  float step_ms[KF_JPROF_STEPS]; /* per step: the median */
  char prof_why[256];            /* why there is none, for a unit profiled */
  double verify_s, time_s;       /* wall time: the sets' runs; timing (and profile) */
} kf_jresult;

#define KF_JREPORT_MAGIC 0x6b666a72

typedef struct kf_jreport {
  int magic;
  int gpu_ok; /* a device of the task's arch was opened */
  char device[96];
  char gpu_error[512];
  double bw_gbs;    /* device-to-device copy bandwidth, measured */
  int ref_failed;   /* the GPU reference did not run: gpu_error says why */
  int refs_ready;   /* the references exist (made, or given): units follow */
  int spin;         /* timed runs had a spin kernel queued ahead (gpu.c) */
  int flush;        /* and the L2 flushed (written) before each */
  int guard;        /* buffers' ends: 2 against unmapped memory, 1 a canary
                       only (no virtual memory management), 0 not opened */
  int64_t l2_bytes;
  double open_s, refs_s; /* wall time: device opened (bandwidth included), GPU references */
  kf_jresult res[KF_JMAX_UNITS];
} kf_jreport;

/* In the worker only: everything on the GPU, results into *r, each
 * stage's report also written whole to kf_jreport_fd when it is >= 0 (the
 * pipe to the judging process; worker.c sets it). */
void kf_jgpu_run(const kf_jwork *w, kf_jreport *r);
extern int kf_jreport_fd;

/* ---- the worker process (worker.c) ---- */

typedef struct kf_jproc {
  bool reported;    /* a whole report came back */
  bool timed_out;   /* killed at the wall-time limit */
  bool flooded;     /* killed for printing more than allowed */
  int exit_code;    /* when it exited, else -1 */
  int signal;       /* when a signal ended it, else 0 */
  int64_t output_bytes;
  char excerpt[2048]; /* the start of what it printed */
  double wall_s;
} kf_jproc;

/* u's source compiled with NVRTC in a worker process (kfuse
 * judge-compile) under o's timeout: cubin and log into u as
 * kf_unit_compile would; a crash or a timeout is a compile error. */
kf_status kf_jcompile(kf_unit *u, const kf_target *tg, const kf_judge_options *o, kf_diag *diag);

/* Run kf_jgpu_run(w) in a forked worker with w->opt's limits; *r is its
 * report when p->reported. KF_OK whenever the worker ran (whatever
 * happened to it); an error when it could not be started. */
kf_status kf_jproc_run(const kf_jwork *w, kf_jreport *r, kf_jproc *p, kf_diag *diag);

/* The eager analogue's units (eager.c): t's graph one op a group, each
 * kernel group's built-in unit compiled and numbering its inputs as the
 * group's task does; *p owns the groups (kf_partition_destroy), the
 * caller the units and the arrays. An error, the reason in why, when an
 * op has no built-in unit. */
kf_status kf_jeager_units(const kf_jtask *t, kf_partition **p, kf_unit ***units, const kf_group ***groups, int *n,
                          char *why, size_t wn);

/* The eager analogue's time on o's device: every op's unit judged
 * (kf_judge_group) and the medians summed, kept per process; *ms -1 with
 * the reason in why when it could not be timed (no GPU, an op without a
 * built-in unit, one that failed). An error only for out of memory or a
 * worker that could not start. */
kf_status kf_jeager_ms(const kf_jtask *t, const kf_judge_options *o, double *ms, int *kernels, char *why, size_t wn,
                       kf_diag *diag);

/* compute-sanitizer's path into buf (n bytes): $KFUSE_COMPUTE_SANITIZER,
 * else bin/compute-sanitizer under $CUDA_HOME, $CUDA_PATH or
 * /usr/local/cuda, else the first on $PATH; false when there is none */
bool kf_jsanitizer_find(char *buf, size_t n);

/* The units of w (their last one the candidate) run by a worker under
 * compute-sanitizer tool (which: KF_JSAN_MEMCHECK or KF_JSAN_RACECHECK);
 * *clean when the tool exited without errors after running it, *errors
 * when it reported some; neither when nothing was checked (a timeout, no
 * GPU); why[n] says which. An error only when the worker could not be
 * started. */
kf_status kf_jsanitize(const kf_jwork *w, const char *tool, int which, char *why, size_t n, bool *clean,
                       bool *errors, kf_diag *diag);

/* What became of a worker, as a reason ("" when it ended normally) */
void kf_jproc_fate(const kf_jproc *p, const kf_judge_options *o, char *b, size_t n);

/* Every unit of w judged: workers are started until each unit has a
 * result. A unit that ends its worker (a crash, a hang, a flood) or loses
 * its CUDA context fails with that fate as its reason; the units after it
 * go to a fresh worker. *r: the first worker's report (device, bandwidth)
 * with every unit's result merged in; *p: the first worker's fate;
 * workers: how many ran. Errors as kf_jproc_run's. */
kf_status kf_jjudge_units(const kf_jwork *w, kf_jreport *r, kf_jproc *p, int *workers, kf_diag *diag);

/* ---- the module check (module_check.c), shared with its GPU worker ---- */

/* ||a - b|| / ||b||; infinite where one has a NaN or infinity the other
 * has not; the largest absolute difference when ||b|| is 0. */
double kf_mc_rel_err(const double *a, const double *b, int64_t n);
/* splitmix64 */
uint64_t kf_mc_next(uint64_t *s);
/* A float input's value in input set set_k: set 0 normal, set 1 uniform in
 * [-1, 1), set 2 uniform in [0, 1), repeating. */
double kf_mc_draw(int set_k, uint64_t *s);
/* The per-op fp64 reference (kfuse compile --reference) of the model at
 * model_path built into so_path (and so_path.weights): its spec for the
 * worker (the module's groups and where their values live, its outputs),
 * or NULL with why. unrounded: of the model with every float value in fp64
 * (pass widen-f64; outputs fp64, values not kept), which the worker sets
 * against the reference to see how far rounding to the model's dtypes
 * moves its answer. */
struct cJSON *kf_mc_build_reference(kf_compile_fn compile, const char *model_path, kf_target target,
                                    kf_precision precision, bool tf32, const char *so_path, bool unrounded,
                                    char *why, size_t n);

/* The environment the judge's workers start with (worker.c): the judging
 * process's less anything not for CUDA, the loader or kfuse, and no
 * KFUSE_* variable named like a secret (KEY, TOKEN, SECRET, PASS, BEARER).
 * A NULL-terminated array the caller frees (not the strings, which are
 * environ's); NULL when out of memory. */
char **kf_jworker_env(void);

#endif
