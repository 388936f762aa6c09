/* include/kfuse/judge.h — the judge of issue 10's kernel environment: it
 * compiles one kernel unit for one task (a directory `kfuse task` wrote),
 * verifies it against the fp64 reference on fresh random inputs, times it
 * beside the task's built-in unit and gives it a milestone reward. Every
 * GPU action runs in a worker process with limits, so a hung, crashing or
 * flooding candidate fails with its reason and the caller carries on.
 * docs/AGENT.md "The judge" describes the protocol and the verdict. */
#ifndef KFUSE_JUDGE_H
#define KFUSE_JUDGE_H

#include <stdbool.h>
#include <stdint.h>

#include "kfuse/options.h"
#include "kfuse/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kf_judge_options {
  int sets;                  /* random input sets verified (at least 5) */
  double timeout_s;          /* the worker's wall time for each stage (the
                                device and reference, each unit) */
  int64_t max_output_bytes;  /* what the worker may print (device printf) */
  int64_t max_scratch_bytes; /* the unit's scratch buffers together */
  uint64_t seed;             /* 0: fresh from the OS (and never reported) */
  bool builtin;              /* also judge the task's built-in unit, the baseline */
  double min_time_ms;        /* GPU time spent timing each unit, at least */
  double max_host_bytes;     /* the input sets and references held on the
                                host (twice: here and in the worker's memory
                                file), at most; 0: a quarter of the RAM */
  const char *worker_exe;    /* the kfuse binary, run as the worker; NULL:
                                this process's own (right for kfuse) */
  int device;                /* the CUDA device ordinal the worker uses */
  struct kf_judge_queue *queue; /* kf_judge_unit: when set, the GPU comes from
                                this queue (device is ignored), taken for the
                                worker's run only: reading, compiling and the
                                CPU reference hold no GPU */
  bool profile;              /* kf_judge_unit: also time each step of the
                                candidate between its own CUDA events (the
                                verdict's "profile"; the agent's profile
                                tool) */
  bool sanitize;             /* kf_judge_unit: a candidate that verified is
                                run again under compute-sanitizer's memcheck
                                and racecheck where the tool is found
                                (judge/sanitize.c); errors make it reward -1 */
} kf_judge_options;

/* sets 5, timeout 60 s, output 64 KiB, scratch 4 GiB, seed 0, builtin on,
 * 200 ms of timed runs, device 0, sanitize on. */
KF_API void kf_judge_options_init(kf_judge_options *o);

/* Judge the unit in unit_dir (unit.json + unit.cu) for the task in
 * task_dir. The verdict, JSON (format kfuse-verdict-v1), is appended to
 * *verdict whenever the unit was judged, whatever its reward; KF_OK then.
 * An error (a task that cannot be read, no GPU or driver, a unit of
 * library steps, which the judge does not run yet) is reported through
 * diag and also written as a verdict with "judged": false and the reason. */
KF_API kf_status kf_judge_unit(const char *task_dir, const char *unit_dir, const kf_judge_options *o,
                               kf_strbuf *verdict, kf_diag *diag);

/* Candidates the caller built and compiled itself (kfuse compile: the
 * built-in policy's variants of one group), judged together in one worker
 * for the task in task_dir, in order: candidate 0 is the baseline of
 * reward 3 when the task has no torch.compile time. Each gets the static
 * checks, the verification and the timing kf_judge_unit gives. The units
 * number their inputs as the task does (kf_task_unit_inputs). */
typedef struct kf_judge_cand {
  struct kf_unit *unit; /* compiled (cubin set) */
  /* the verdict */
  bool judged;  /* verified and timed on the GPU (or failed there) */
  bool correct; /* verified, and not under the floor */
  int reward;   /* -1, 1, 2, 3 as in kf_judge_unit's verdict */
  double ms;    /* median time, when timed */
  char why[512]; /* the reason it is not correct */
  double verify_s, time_s; /* the worker's wall time verifying it, timing it */
} kf_judge_cand;

typedef struct kf_judge_batch {
  bool judged;     /* false: nothing was (no GPU, no reference): why */
  bool no_gpu;     /* the reason is that there is no GPU of the target's arch */
  char why[512];
  char device[96];
  double floor_ms; /* the task's roofline floor on that device */
  int workers;     /* worker processes started (more than one after a fault) */
  double seconds;
  /* where the seconds went: the input sets (and CPU references) drawn, the
   * worker's wall time, and in it the device opened (and its bandwidth
   * measured) and the GPU references made */
  double sets_s, worker_s, open_s, refs_s;
} kf_judge_batch;

/* At most this many candidates a call */
#define KF_JUDGE_MAX_CANDS 10

/* KF_OK whenever the candidates were looked at, judged or not (bt says);
 * an error only for bad arguments or no memory. */
KF_API kf_status kf_judge_units(const char *task_dir, kf_judge_cand *c, int n, const kf_judge_options *o,
                                kf_judge_batch *bt, kf_diag *diag);

/* The same for candidates of group grp of g, a graph kfuse compile's
 * passes ran on with co's options (kfuse compile's picker): the task is
 * made in memory (the group alone as a graph, kf_task_group_graph), as
 * kf_task_write_group would write it, without a trip through disk. The
 * units' input arguments are numbered as the task's inputs
 * (kf_task_unit_inputs). */
struct kf_group;
KF_API kf_status kf_judge_group(const kf_graph *g, const struct kf_group *grp, const kf_compile_options *co,
                                kf_judge_cand *c, int n, const kf_judge_options *o, kf_judge_batch *bt,
                                kf_diag *diag);

/* kfuse compile's picker (kf_compile_options.picker): each group's
 * candidates judged by kf_judge_group with o's options. */
typedef struct kf_judge_picker {
  kf_picker picker; /* what kf_compile_options.picker points to */
  kf_judge_options opt;
} kf_judge_picker;

KF_API void kf_judge_picker_init(kf_judge_picker *jp, const kf_judge_options *o, bool all_groups);

/* Judge calls queued onto GPUs, first come first served, one call a GPU
 * at a time (kfuse serve's sessions, kfuse compile --agent llm's): take
 * waits for a free GPU and returns its ordinal (for
 * kf_judge_options.device), give hands it back. Shared by threads. */
typedef struct kf_judge_queue kf_judge_queue;

/* A queue onto GPUs 0 .. gpus-1 (gpus >= 1). */
KF_API kf_status kf_judge_queue_create(int gpus, kf_judge_queue **out);
/* NULL is fine; no call may be waiting or holding a GPU. */
KF_API void kf_judge_queue_destroy(kf_judge_queue *q);
KF_API int kf_judge_queue_gpus(const kf_judge_queue *q);
KF_API int kf_judge_queue_take(kf_judge_queue *q);
KF_API void kf_judge_queue_give(kf_judge_queue *q, int device);

/* The judge an environment session calls (kf_env_options.judge and
 * kf_agent_options.judge, include/kfuse/env_session.h): binding is a
 * kf_judge_binding, the options every call gets and, when queue is set,
 * the queue each call waits on for a GPU (its ordinal replaces o.device).
 * Read only, so one binding may serve sessions on several threads. */
typedef struct kf_judge_binding {
  kf_judge_options o;
  kf_judge_queue *queue; /* NULL: o.device */
} kf_judge_binding;
KF_API kf_status kf_judge_bound_call(void *binding, const char *task_dir, const char *unit_dir, bool profile,
                                     kf_strbuf *verdict, kf_diag *diag);
/* (The call hands the queue to kf_judge_unit as kf_judge_options.queue: a
 * session's NVRTC compile and input draw run while other sessions hold
 * the GPUs.) */

/* Whether judge calls can run here: NVRTC loads, the CUDA driver loads
 * and initialises, and it sees the device o names (or, with o->queue, as
 * many as the queue has). False with why otherwise. Loads the driver in
 * this process (no context is made). For a loop to ask before it spends
 * anything (kf_agent_options.ready: user is a kf_judge_options). */
KF_API bool kf_judge_ready(void *judge_options, char *why, size_t n);

/* kfuse compile's module check (kf_module_checker, include/kfuse/options.h;
 * judge/module_check.c): the linked module run on fresh input sets
 * against the per-op fp64 reference module built from the model at
 * model_path, in one worker process for all of a compile's checks; the
 * first diverging group found on a
 * mismatch. Without a GPU, a model under cpu_limit is emulated on the CPU
 * (kf_emu_*) against the fp64 interpreter; larger ones are not checked
 * (the result says so). */
typedef struct kf_judge_module_checker {
  kf_module_checker checker; /* what kf_compile_options.checker points to */
  const char *model_path;    /* loaded again for the reference */
  int sets;                  /* input sets (3) */
  double timeout_s;          /* the worker's wall-time limit (600) */
  uint64_t seed;             /* 0: drawn from the OS */
  const char *worker_exe;    /* NULL: /proc/self/exe */
  bool keep_files;           /* keep the temporary directory (the spec, the
                                reference, the worker's log):
                                KFUSE_MODULE_CHECK_KEEP=1 */
  double cpu_limit;          /* without a GPU: the module emulated on the CPU
                                against the fp64 interpreter when one run
                                is at most this many multiply-adds (3e8,
                                KFUSE_MODULE_CHECK_CPU_LIMIT); 0: never */
  bool bad_cpu_limit;        /* KFUSE_MODULE_CHECK_CPU_LIMIT did not parse */
  struct kf_mc_worker *worker; /* private: the check's worker process */
} kf_judge_module_checker;

KF_API void kf_judge_module_checker_init(kf_judge_module_checker *c, const char *model_path);
/* Start the check's worker ahead of the compile: it finds the GPU, builds
 * the fp64 reference for o's target and precision and loads it while the
 * module is being compiled (the check starts it itself when this was not
 * called). A worker that could not start is reported by the check. */
KF_API void kf_judge_module_checker_start(kf_judge_module_checker *c, const kf_compile_options *o);
/* Stop the worker, if any, and remove its files. */
KF_API void kf_judge_module_checker_fini(kf_judge_module_checker *c);
/* `kfuse module-check-worker MODEL DIR SM ARCH PRECISION` (started by the
 * check; not for use by hand), its reference modules built with compile
 * (kf_compile_graph). Returns the process exit status. */
KF_API int kf_judge_module_check_main(int argc, char **argv, kf_compile_fn compile);

/* ---- kernel units run on the CPU (judge/emu.c) ----
 * The module check without a GPU and the emulator tests: the units'
 * sources compiled as host C++ over the CUDA emulation of the templates
 * (agent/templates/kf_emu.h, by $KFUSE_EMU_CXX, default g++), library
 * steps computed in double after the runtime's contracts. */
typedef struct kf_emu kf_emu;
/* Compile and load the sources of units[0..n) (NULL entries and units
 * without source skipped, a unit given twice compiled once) in the existing
 * directory dir. KF_ERR_UNSUPPORTED when there is no host compiler or a
 * unit does not compile for the emulation (the diagnostic names it). */
KF_API kf_status kf_emu_build(kf_unit *const *units, int n, const char *dir, kf_emu **out, kf_diag *diag);
/* Run unit u (built by e) for group grp: ptr, indexed by value id, holds
 * the address of the first element of every value the group reads and
 * writes; scratch buffers are the emulation's own (poisoned). */
KF_API kf_status kf_emu_run_unit(kf_emu *e, const kf_group *grp, const kf_unit *u, void *const *ptr, kf_diag *diag);
/* The kernels' out-of-range index flag (kf_index_error), over every library. */
KF_API unsigned kf_emu_index_error(const kf_emu *e);
KF_API void kf_emu_destroy(kf_emu *e);

/* The worker's entry (`kfuse judge-worker`, which kf_judge_unit starts;
 * not for use by hand): reads its work from fd 4, reports on fd 3. Returns
 * the process exit status. */
KF_API int kf_judge_worker_main(void);
/* `kfuse judge-compile`: NVRTC for one unit, for the judge (likewise). */
KF_API int kf_judge_compile_main(void);

#ifdef __cplusplus
}
#endif
#endif
