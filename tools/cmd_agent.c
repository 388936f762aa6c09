/* tools/cmd_agent.c — `kfuse agent`: the LLM kernel agent's loop on one
 * task (include/kfuse/agent_loop.h, docs/AGENT.md).
 *
 *   kfuse agent TASK_DIR -o OUT_DIR --endpoint URL --model NAME
 *               [--api-key-env NAME] [--temperature T] [--max-tokens N]
 *               [--timeout S] [--retries N] [--backoff S]
 *               [--max-turns N] [--session-tokens N] [--max-seconds S]
 *               [--max-judge N] [--target-fraction F] [--context-chars N]
 *               [--judge-timeout S] [--trajectory FILE]
 *
 * Prints the session's result (OUT_DIR/result.json). Exit status 0 when
 * the session ran its course (whatever it found: have_unit says), 1 when
 * it could not start or write or ended on an error (the endpoint failed,
 * no GPU or NVRTC to judge with: checked before the first request, so no
 * token is spent; the error on stderr and in result.json's "error"), 2 on
 * bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfuse/agent_loop.h"
#include "kfuse/judge.h"
#include "tools_int.h"

int kf_cmd_agent(int argc, char **argv, kf_diag *diag) {
  kf_agent_options o;
  kf_agent_options_init(&o);
  kf_judge_binding jb = {.queue = NULL};
  kf_judge_options_init(&jb.o);
  o.judge = kf_judge_bound_call;
  o.judge_user = &jb;
  o.ready = kf_judge_ready; /* no token spent where nothing can be judged */
  o.ready_user = &jb.o;
  const char *task = NULL, *out = NULL, *v;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    long long n;
    int k = kf_cli_llm_option(argc, argv, &i, "agent", &o.llm, diag);
    if (k < 0) return 2;
    if (k > 0) continue;
    if (kf_cli_is_help(a)) {
      kf_cli_usage(stdout, "agent");
      return 0;
    } else if (strcmp(a, "-o") == 0) {
      if (!kf_cli_value(argc, argv, &i, "agent", &out, diag)) return 2;
    } else if (strcmp(a, "--max-turns") == 0) {
      if (!kf_cli_value(argc, argv, &i, "agent", &v, diag) || !kf_cli_int("agent", a, v, 1, 100000, &n, diag))
        return 2;
      o.max_turns = (int)n;
    } else if (strcmp(a, "--session-tokens") == 0) {
      if (!kf_cli_value(argc, argv, &i, "agent", &v, diag) ||
          !kf_cli_int("agent", a, v, 0, (long long)1 << 50, &n, diag))
        return 2;
      o.max_tokens = n;
    } else if (strcmp(a, "--max-seconds") == 0) {
      if (!kf_cli_value(argc, argv, &i, "agent", &v, diag) ||
          !kf_cli_double("agent", a, v, 0, 1e7, &o.max_seconds, diag))
        return 2;
    } else if (strcmp(a, "--max-judge") == 0) {
      if (!kf_cli_value(argc, argv, &i, "agent", &v, diag) || !kf_cli_int("agent", a, v, 0, 100000, &n, diag))
        return 2;
      o.max_judge = (int)n;
    } else if (strcmp(a, "--target-fraction") == 0) {
      if (!kf_cli_value(argc, argv, &i, "agent", &v, diag) ||
          !kf_cli_double("agent", a, v, 0, 1, &o.target_fraction, diag))
        return 2;
    } else if (strcmp(a, "--context-chars") == 0) {
      if (!kf_cli_value(argc, argv, &i, "agent", &v, diag) ||
          !kf_cli_int("agent", a, v, 1000, (long long)1 << 40, &n, diag))
        return 2;
      o.context_chars = n;
    } else if (strcmp(a, "--judge-timeout") == 0) {
      if (!kf_cli_value(argc, argv, &i, "agent", &v, diag) ||
          !kf_cli_double("agent", a, v, 1, 86400, &jb.o.timeout_s, diag))
        return 2;
    } else if (strcmp(a, "--trajectory") == 0) {
      if (!kf_cli_value(argc, argv, &i, "agent", &o.trajectory, diag)) return 2;
    } else if (a[0] == '-' && a[1]) {
      return kf_cli_unknown("agent", a, diag);
    } else if (!task) {
      task = a;
    } else {
      return kf_cli_error("agent", diag, "more than one task directory given ('%s', '%s')", task, a);
    }
  }
  if (!task || !out) return kf_cli_error("agent", diag, "a task directory and -o OUT_DIR are needed");
  if (!o.llm.endpoint || !o.llm.model) return kf_cli_error("agent", diag, "--endpoint and --model are needed");
  kf_agent_result r;
  kf_status st = kf_agent_run(task, out, &o, &r, diag);
  if (st != KF_OK && !r.turns) return 1;
  char p[4096];
  snprintf(p, sizeof p, "%s/result.json", out);
  char *text = NULL;
  if (kf_read_text(p, 1 << 20, &text, diag) != KF_OK) return 1;
  fputs(text, stdout);
  fputc('\n', stdout);
  free(text);
  if (fflush(stdout) != 0) return 1;
  if (r.error[0]) {
    kf_diag_error(diag, "agent: the session ended on an error: %s", r.error);
    return 1;
  }
  return st == KF_OK ? 0 : 1;
}
