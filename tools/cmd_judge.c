/* tools/cmd_judge.c — `kfuse judge`: one kernel unit judged for one task
 * (include/kfuse/judge.h, docs/AGENT.md "The judge").
 *
 *   kfuse judge TASK_DIR UNIT_DIR [--sets N] [--timeout S] [--max-output B]
 *               [--min-time MS] [--seed N] [--no-builtin] [--profile]
 *               [--no-sanitize]
 *
 * The verdict (JSON) goes to stdout. Exit status 0 when the unit was
 * judged, whatever its reward; 1 when it could not be (the task unreadable,
 * no GPU, library steps), with a verdict saying why; 2 for usage errors. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "kfuse/judge.h"
#include "tools_int.h"

int kf_cmd_judge(int argc, char **argv, kf_diag *diag) {
  kf_judge_options o;
  kf_judge_options_init(&o);
  const char *task = NULL, *unit = NULL, *v;
  long long n;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (kf_cli_is_help(a)) {
      kf_cli_usage(stdout, "judge");
      return 0;
    } else if (strcmp(a, "--sets") == 0) {
      if (!kf_cli_value(argc, argv, &i, "judge", &v, diag) || !kf_cli_int("judge", "--sets", v, 5, 1000, &n, diag))
        return 2;
      o.sets = (int)n;
    } else if (strcmp(a, "--timeout") == 0) {
      if (!kf_cli_value(argc, argv, &i, "judge", &v, diag) ||
          !kf_cli_double("judge", "--timeout", v, 0.1, 86400, &o.timeout_s, diag))
        return 2;
    } else if (strcmp(a, "--max-output") == 0) {
      if (!kf_cli_value(argc, argv, &i, "judge", &v, diag) ||
          !kf_cli_int("judge", "--max-output", v, 0, 1LL << 40, &n, diag))
        return 2;
      o.max_output_bytes = n;
    } else if (strcmp(a, "--min-time") == 0) {
      if (!kf_cli_value(argc, argv, &i, "judge", &v, diag) ||
          !kf_cli_double("judge", "--min-time", v, 0, 60000, &o.min_time_ms, diag))
        return 2;
    } else if (strcmp(a, "--seed") == 0) {
      if (!kf_cli_value(argc, argv, &i, "judge", &v, diag) ||
          !kf_cli_int("judge", "--seed", v, 1, 0x7fffffffffffffffLL, &n, diag))
        return 2;
      o.seed = (uint64_t)n;
    } else if (strcmp(a, "--no-builtin") == 0) {
      o.builtin = false;
    } else if (strcmp(a, "--profile") == 0) {
      o.profile = true;
    } else if (strcmp(a, "--no-sanitize") == 0) {
      o.sanitize = false;
    } else if (a[0] == '-' && a[1]) {
      return kf_cli_unknown("judge", a, diag);
    } else if (!task) {
      task = a;
    } else if (!unit) {
      unit = a;
    } else {
      return kf_cli_error("judge", diag, "more than a task and a unit given ('%s')", a);
    }
  }
  if (!task || !unit) return kf_cli_error("judge", diag, "give a task directory and a unit directory");
  kf_strbuf out;
  kf_strbuf_init(&out);
  kf_status st = kf_judge_unit(task, unit, &o, &out, diag);
  if (out.data) fputs(out.data, stdout);
  kf_strbuf_fini(&out);
  return st == KF_OK ? 0 : 1;
}
