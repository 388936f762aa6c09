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

#include "kfuse/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kf_judge_options {
  int sets;                  /* random input sets verified (at least 5) */
  double timeout_s;          /* the worker's wall time */
  int64_t max_output_bytes;  /* what the worker may print (device printf) */
  int64_t max_scratch_bytes; /* the unit's scratch buffers together */
  uint64_t seed;             /* 0: fresh from the OS (and never reported) */
  bool builtin;              /* also judge the task's built-in unit, the baseline */
  double min_time_ms;        /* GPU time spent timing each unit, at least */
  const char *worker_exe;    /* the kfuse binary, run as the worker; NULL:
                                this process's own (right for kfuse) */
} kf_judge_options;

/* sets 5, timeout 60 s, output 64 KiB, scratch 4 GiB, seed 0, builtin on,
 * 200 ms of timed runs. */
KF_API void kf_judge_options_init(kf_judge_options *o);

/* Judge the unit in unit_dir (unit.json + unit.cu) for the task in
 * task_dir. The verdict, JSON (format kfuse-verdict-v1), is appended to
 * *verdict whenever the unit was judged, whatever its reward; KF_OK then.
 * An error (a task that cannot be read, no GPU or driver, a unit of
 * library steps, which the judge does not run yet) is reported through
 * diag and also written as a verdict with "judged": false and the reason. */
KF_API kf_status kf_judge_unit(const char *task_dir, const char *unit_dir, const kf_judge_options *o,
                               kf_strbuf *verdict, kf_diag *diag);

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
