/* kfuse/agent_loop.h — the LLM kernel agent's loop over one task (issue 11;
 * docs/AGENT.md, "The agent loop").
 *
 * A model behind an OpenAI-compatible endpoint (kfuse/llm.h) gets the skill
 * document (agent/SKILL.md) as its system prompt and the task's summary,
 * and works through tools over the task directory: list_files, read_file,
 * write_unit, judge (kfuse/judge.h: compile, verify, time, reward),
 * profile (the same with each step's time) and submit (the tools live in
 * kfuse/env_session.h, which kfuse serve shares). The best unit the judge verified is kept in the output directory
 * whatever the model submits last; every turn, tool call and verdict goes
 * to a JSONL trajectory. Budgets: turns, tokens, wall time, judge calls.
 * The API key stays inside the client: no trajectory or file holds it. */
#ifndef KFUSE_AGENT_LOOP_H
#define KFUSE_AGENT_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kfuse/env_session.h"
#include "kfuse/llm.h"

struct kf_agent_result;

typedef struct kf_agent_options {
  kf_llm_config llm;
  int max_turns;           /* model replies, at most */
  int64_t max_tokens;      /* prompt + completion tokens over the session; 0: no limit */
  double max_seconds;      /* wall time; 0: no limit */
  int max_judge;           /* judge calls; 0: no limit */
  double target_fraction;  /* stop once a verified unit reaches this fraction
                              of the floor; 0: never */
  int64_t context_chars;   /* older tool observations are trimmed past this */
  kf_env_judge_fn judge;   /* the session's judge (required; kfuse/judge.h's
                              kf_judge_bound_call, which may queue onto GPUs) */
  void *judge_user;
  const char *trajectory;  /* JSONL path; NULL: OUT_DIR/trajectory.jsonl */
  /* Asked before each turn with the counts so far (budgets shared by
   * several sessions: kfuse compile --agent llm's per-model ones): true
   * ends the session, its stop reason written to why (n bytes). Called
   * from the session's thread. NULL: never. */
  bool (*should_stop)(void *user, const struct kf_agent_result *so_far, char *why, size_t n);
  void *stop_user;
  /* Asked once before the first request to the endpoint: false when the
   * session cannot judge (no GPU, no NVRTC), with why; the session then
   * ends at once with that error and no token spent (kfuse/judge.h's
   * kf_judge_ready fits). NULL: not asked. */
  bool (*ready)(void *user, char *why, size_t n);
  void *ready_user;
} kf_agent_options;

/* 20 turns, no token or time limit, 10 judge calls, target 0, 400k
 * characters of context, no judge (the caller's to set). */
KF_API void kf_agent_options_init(kf_agent_options *o);

typedef struct kf_agent_result {
  bool have_unit;      /* a verified unit is in OUT_DIR (unit.json, unit.cu) */
  int best_reward;     /* its reward (-2 when none) */
  double best_ms;      /* its median time (ms), or -1 */
  double best_fraction; /* its fraction of the floor, or -1 */
  int turns, tool_calls, judge_calls, units_written;
  int64_t prompt_tokens, completion_tokens;
  bool tokens_estimated; /* a reply came without "usage": its counts are estimates */
  double seconds, model_seconds, judge_seconds;
  char stop[160];      /* why the session ended */
  char error[512];     /* what failed when it ended on an error (the endpoint
                          failed, the judge cannot run, a write failed);
                          empty when it ended as sessions do */
} kf_agent_result;

/* The version line of the embedded skill document ("skill-version: N"). */
KF_API const char *kf_agent_skill_version(void);

/* Run the loop on the task in task_dir; candidates and the kept unit go to
 * out_dir (created; it must not exist). KF_OK whenever the session ran,
 * whatever it found (res says; res->error when it ended on an error);
 * errors for bad arguments, an unreadable task, an out_dir that exists or
 * cannot be written. */
KF_API kf_status kf_agent_run(const char *task_dir, const char *out_dir, const kf_agent_options *o,
                              kf_agent_result *res, kf_diag *diag);

#endif
