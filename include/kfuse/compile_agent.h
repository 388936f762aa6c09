/* kfuse/compile_agent.h — the LLM kernel agent inside a compile: agent
 * sessions (kfuse/agent_loop.h) on a model's groups before the compile,
 * scheduled by the groups' share of the run time, their judge calls queued
 * onto the GPUs, and the units they verified handed to the compile
 * (driver/compile_agent.c; kfuse compile --agent llm and kfuse warm). */
#ifndef KFUSE_COMPILE_AGENT_H
#define KFUSE_COMPILE_AGENT_H

#include <stdbool.h>

#include "kfuse/agent_loop.h"
#include "kfuse/judge.h"
#include "kfuse/options.h"

#ifdef __cplusplus
extern "C" {
#endif

/* kfuse compile --agent llm (driver/compile_agent.c): agent sessions on
 * the model's groups before the compile; the units they verified, by key,
 * for the compile to verify again and use (as --unit). AGENT_DIR must not
 * exist. */
#define KF_COMPILE_GIVEN_MAX 64
typedef struct kf_compile_given {
  int n;
  char keys[KF_COMPILE_GIVEN_MAX][65];
  char dirs[KF_COMPILE_GIVEN_MAX][4200];
  /* the groups that had a session, verified or not (the first
   * KF_COMPILE_GIVEN_MAX): kfuse warm gives each key one session */
  int n_tried;
  char tried[KF_COMPILE_GIVEN_MAX][65];
} kf_compile_given;
/* The scheduling of the sessions: what the per-group kf_agent_options
 * leave to the whole model. */
typedef struct kf_compile_agent_options {
  int groups;     /* sessions at most (--agent-groups) */
  int jobs;       /* sessions in flight at once (--agent-jobs); 0: min(groups, 4) */
  int gpus;       /* GPUs judge calls are queued onto (--agent-gpus); 0: the visible ones */
  long long tokens; /* prompt + completion tokens over all sessions (--agent-tokens); 0: no limit */
  double seconds; /* wall time of the whole agent phase (--agent-seconds); 0: no limit */
  /* only groups with these keys (kf_group.key_hex) get sessions (kfuse
   * warm: the cache's misses); NULL: every group */
  const char (*only_keys)[65];
  int n_only;
  kf_judge_options judge; /* every judge call's, the sessions' and the
                             built-in baselines' (the device is the queue's) */
} kf_compile_agent_options;
/* 4 groups, the rest 0 (defaults, no limits), the judge's defaults. */
KF_API void kf_compile_agent_options_init(kf_compile_agent_options *o);
/* Sessions on the groups of the model at model path, compiled as co says,
 * each with ao's budgets and LLM; the verified units into *given. */
KF_API kf_status kf_compile_agent(const char *model, const kf_compile_options *co, const kf_agent_options *ao,
                                  const char *agent_dir, const kf_compile_agent_options *cao,
                                  kf_compile_given *given, kf_diag *diag);
/* After the compile: AGENT_DIR/agent.json into the compile's report (its
 * "agent": the ordering, the sessions, and per session in_module, whether
 * its unit replaced the built-in one), rewritten in place. */
KF_API kf_status kf_compile_agent_report(const char *agent_dir, const char *report, bool progress, kf_diag *diag);

#ifdef __cplusplus
}
#endif

#endif
