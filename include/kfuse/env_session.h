/* kfuse/env_session.h — one session of the kernel environment on one task
 * (issue 11; docs/AGENT.md, "The agent loop" and "The rollout service").
 *
 * What a policy works through, whoever drives it: `kfuse agent`'s loop
 * (kfuse/agent_loop.h) and `kfuse serve`'s sessions both open one of these
 * and run every tool call through it, so the tools exist once. A session
 * gives the system prompt (the skill document, agent/SKILL.md), the first
 * user message (the task's summary), the OpenAI tool definitions
 * (list_files, read_file, write_unit, judge, profile, submit), and runs
 * one tool call at a time: an observation for the model, the verdict and
 * reward of a judge call (profile is a judge call that also times each
 * step of the unit alone). The model's code is untrusted: it is only written under
 * OUT_DIR and run by the judge the caller hands the session
 * (kf_env_options.judge: kfuse/judge.h's kf_judge_bound_call, with its
 * workers, static checks and limits); file tools read inside the task
 * directory only. The session lives with the kernel makers (agent/), below
 * the judge, and reaches it only through that hook. The best unit
 * the judge verified is kept in OUT_DIR; every tool call goes to the
 * trajectory (JSONL, kfuse-trajectory-v1).
 *
 * A session is not shared between threads; different sessions may run in
 * different threads at once. */
#ifndef KFUSE_ENV_SESSION_H
#define KFUSE_ENV_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "kfuse/status.h"

struct cJSON;

typedef struct kf_env_session kf_env_session;

/* A judge call: the unit in unit_dir (unit.json + unit.cu) for the task in
 * task_dir, its verdict (JSON, kfuse-verdict-v1) appended to *verdict
 * whenever the unit was judged (KF_OK then, whatever its reward); profile:
 * also each step of the unit timed alone. user is kf_env_options.judge_user. */
typedef kf_status (*kf_env_judge_fn)(void *user, const char *task_dir, const char *unit_dir, bool profile,
                                     kf_strbuf *verdict, kf_diag *diag);

typedef struct kf_env_options {
  int max_judge;          /* judge calls; one past it is answered with an
                             error observation; 0: no limit */
  kf_env_judge_fn judge;  /* the judge and profile tools' judge (required;
                             kfuse/judge.h's kf_judge_bound_call) */
  void *judge_user;
  const char *trajectory; /* JSONL path; NULL: OUT_DIR/trajectory.jsonl */
  const char *source;     /* who drives the session ("agent", "serve"), in
                             the start record */
  const char *model, *endpoint; /* the start record's; NULL: "" */
  const struct cJSON *budget;   /* the start record's "budget" (copied);
                                   NULL: {"judge_calls": max_judge} */
  const struct cJSON *request;  /* the start record's "request" (copied): the
                                   parameters every request to the model
                                   carries besides model, messages and tools
                                   (temperature, max_tokens); NULL: none */
} kf_env_options;

/* 10 judge calls, source "agent", no judge (the caller's to set). */
KF_API void kf_env_options_init(kf_env_options *o);

/* Where a session stands. */
typedef struct kf_env_stats {
  bool have_unit;       /* a verified unit is in OUT_DIR (unit.json, unit.cu) */
  int best_reward;      /* its reward (-2 when none) */
  double best_ms;       /* its median time (ms), or -1 */
  double best_fraction; /* its fraction of the floor, or -1 */
  int tool_calls, judge_calls, units_written;
  int attempt;          /* the last unit written (0: none) */
  bool submitted;
  double seconds;       /* since the session opened */
  double judge_seconds;
} kf_env_stats;

/* What one tool call gave. */
typedef struct kf_env_step {
  char *observation;    /* the text the model gets back */
  struct cJSON *verdict; /* a judge call's verdict as the model sees it (no
                            paths, no seeds), or NULL */
  bool judged;          /* a judge call got a verdict: reward is its */
  int reward;           /* -1, 1, 2, 3 (0 when not judged) */
  bool done;            /* submit: the session is over */
} kf_env_step;

KF_API void kf_env_step_fini(kf_env_step *s);

/* The skill document's version line ("skill-version: N"). */
KF_API const char *kf_env_skill_version(void);

/* Open a session on the task in task_dir (a directory `kfuse task` wrote)
 * with out_dir for its files (created; it must not exist), and write the
 * trajectory's start record. Errors: bad arguments, an unreadable task,
 * an out_dir that exists or cannot be written, no memory. */
KF_API kf_status kf_env_session_open(const char *task_dir, const char *out_dir, const kf_env_options *o,
                                     kf_env_session **out, kf_diag *diag);

/* Closes the trajectory (the end record is kf_env_session_end's); NULL is
 * fine. */
KF_API void kf_env_session_destroy(kf_env_session *s);

/* Borrowed, valid while the session is: the system prompt, the first user
 * message, the tools (a JSON array of OpenAI function tools), the task's
 * key ("" when task.json has none). */
KF_API const char *kf_env_session_system(const kf_env_session *s);
KF_API const char *kf_env_session_prompt(const kf_env_session *s);
KF_API const struct cJSON *kf_env_session_tools(const kf_env_session *s);
KF_API const char *kf_env_session_task_key(const kf_env_session *s);

KF_API void kf_env_session_stats(const kf_env_session *s, kf_env_stats *st);

/* Run one tool call: name, its arguments as sent (text, or NULL), parsed
 * (an object), or NULL with args_error saying why they are unusable; id
 * and turn (0: none) go to the trajectory's tool record. Unusable
 * arguments, unknown tools, paths outside the task, budgets spent and
 * judge failures are error observations, not errors: KF_OK unless out of
 * memory. */
KF_API kf_status kf_env_session_call(kf_env_session *s, const char *id, const char *name, const char *arguments,
                                     const struct cJSON *args, const char *args_error, int turn, kf_env_step *step,
                                     kf_diag *diag);

/* Append one record (taken) to the trajectory, flushed. */
KF_API void kf_env_session_record(kf_env_session *s, struct cJSON *record, kf_diag *diag);

/* The outcome as a new object, for the caller to add to: stop, have_unit,
 * best_reward, best_ms, best_fraction (when have_unit), tool_calls,
 * units_written, judge_calls, seconds, judge_seconds. NULL: no memory. */
KF_API struct cJSON *kf_env_session_result(const kf_env_session *s, const char *stop);

/* Write result (taken) as OUT_DIR/result.json and as the trajectory's
 * end record ("type": "end"). */
KF_API kf_status kf_env_session_end(kf_env_session *s, struct cJSON *result, kf_diag *diag);

#endif
