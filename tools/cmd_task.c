/* tools/cmd_task.c — `kfuse task`: a model's fusion groups written out as
 * tasks for a kernel policy (include/kfuse/task.h, docs/AGENT.md).
 *
 *   kfuse task MODEL (--group N | --all) -o DIR [--precision P]
 *              [--target sm_90|sm_90a] [--no-fuse] [--no-horizontal]
 *              [--no-cudnn] [--no-channels-last] [-q]
 *
 * The groups are those `kfuse compile` would make with the same options
 * (`kfuse partition` lists them). Needs no GPU: the floor's time and the
 * baselines are the judge's to measure. The compile options are parsed by
 * kf_cli_task_option, which `kfuse tasks` (tools/cmd_tasks.c) and `kfuse
 * compile` (tools/cmd_compile.c) share. */
#include <stdio.h>
#include <string.h>

#include "kfuse/frontend.h"
#include "kfuse/compile.h"
#include "kfuse/task.h"
#include "tools_int.h"

/* the compile options kfuse task, kfuse tasks and kfuse compile share
 * (tools_int.h) */
int kf_cli_task_option(int argc, char **argv, int *i, const char *cmd, kf_compile_options *o, kf_diag *diag) {
  const char *a = argv[*i], *v;
  if (strcmp(a, "--precision") == 0) {
    if (!kf_cli_value(argc, argv, i, cmd, &v, diag)) return -1;
    if (!kf_precision_parse(v, &o->precision)) {
      kf_cli_error(cmd, diag, "--precision takes default, tf32, bf16, fp16 or fp32, not '%s'", v);
      return -1;
    }
  } else if (strcmp(a, "--target") == 0) {
    if (!kf_cli_value(argc, argv, i, cmd, &v, diag)) return -1;
    if (!kf_cli_target(cmd, v, &o->target, diag)) return -1;
  } else if (strcmp(a, "--no-fuse") == 0) {
    o->fuse = false;
  } else if (strcmp(a, "--no-horizontal") == 0) {
    o->no_horizontal = true;
  } else if (strcmp(a, "--no-cudnn") == 0) {
    o->no_cudnn = true;
  } else if (strcmp(a, "--no-channels-last") == 0) {
    o->no_channels_last = true;
  } else if (strcmp(a, "-q") == 0) {
    o->progress = false;
  } else {
    return 0;
  }
  return 1;
}

int kf_cmd_task(int argc, char **argv, kf_diag *diag) {
  kf_compile_options o;
  kf_compile_options_init(&o);
  o.progress = true;
  const char *in = NULL, *out = NULL, *v;
  int took;
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
    } else if ((took = kf_cli_task_option(argc, argv, &i, "task", &o, diag)) != 0) {
      if (took < 0) return 2;
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
