/* tools/cmd_task.c — `kfuse task`: a model's fusion groups written out as
 * tasks for a kernel policy (include/kfuse/task.h, docs/AGENT.md).
 *
 *   kfuse task MODEL (--group N | --all) -o DIR [--precision P]
 *              [--target sm_90|sm_90a] [--no-fuse] [--no-horizontal]
 *              [--no-cudnn] [--no-channels-last] [-q]
 *
 * The groups are those `kfuse compile` would make with the same options
 * (`kfuse partition` lists them). Needs no GPU: the floor's time and the
 * baselines are the judge's to measure. */
#include <stdio.h>
#include <string.h>

#include "kfuse/frontend.h"
#include "kfuse/task.h"
#include "tools_int.h"

int kf_cmd_task(int argc, char **argv, kf_diag *diag) {
  kf_compile_options o;
  kf_compile_options_init(&o);
  o.progress = true;
  const char *in = NULL, *out = NULL, *v;
  long long group = -1;
  bool all = false, have_group = false;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (kf_cli_is_help(a)) {
      kf_cli_usage(stdout, "task");
      return 0;
    } else if (strcmp(a, "-o") == 0) {
      if (!kf_cli_value(argc, argv, &i, "task", &out, diag)) return 2;
    } else if (strcmp(a, "--group") == 0) {
      if (!kf_cli_value(argc, argv, &i, "task", &v, diag)) return 2;
      if (!kf_cli_int("task", "--group", v, 0, 1 << 30, &group, diag)) return 2;
      have_group = true;
    } else if (strcmp(a, "--all") == 0) {
      all = true;
    } else if (strcmp(a, "--precision") == 0) {
      if (!kf_cli_value(argc, argv, &i, "task", &v, diag)) return 2;
      if (!kf_precision_parse(v, &o.precision))
        return kf_cli_error("task", diag, "--precision takes default, tf32, bf16 or fp16, not '%s'", v);
    } else if (strcmp(a, "--target") == 0) {
      if (!kf_cli_value(argc, argv, &i, "task", &v, diag)) return 2;
      if (!kf_cli_target("task", v, &o.target, diag)) return 2;
    } else if (strcmp(a, "--no-fuse") == 0) {
      o.fuse = false;
    } else if (strcmp(a, "--no-horizontal") == 0) {
      o.no_horizontal = true;
    } else if (strcmp(a, "--no-cudnn") == 0) {
      o.no_cudnn = true;
    } else if (strcmp(a, "--no-channels-last") == 0) {
      o.no_channels_last = true;
    } else if (strcmp(a, "-q") == 0) {
      o.progress = false;
    } else if (a[0] == '-' && a[1]) {
      return kf_cli_unknown("task", a, diag);
    } else if (!in) {
      in = a;
    } else {
      return kf_cli_error("task", diag, "more than one model given ('%s', '%s')", in, a);
    }
  }
  if (!in) return kf_cli_error("task", diag, "no model given");
  if (!out) return kf_cli_error("task", diag, "-o DIR is required");
  if (all == have_group) return kf_cli_error("task", diag, "give one of --group N and --all");
  kf_load_options lo;
  kf_load_options_init(&lo);
  kf_graph *g = NULL;
  kf_status st = kf_model_load(in, &lo, &g, diag);
  if (st == KF_OK) st = kf_graph_verify(g, diag);
  if (st == KF_OK) st = kf_task_write(g, &o, all ? -1 : (int)group, out, diag);
  kf_graph_destroy(g);
  return st == KF_OK ? 0 : 1;
}
