/* judge/pick.c — the judge as kfuse compile's picker (kf_picker,
 * include/kfuse/options.h): a group's candidates, which the compile path
 * built and compiled, are judged as candidates of the group's task, made
 * in memory from the graph being compiled (kf_judge_group). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge_int.h"
#include "kfuse/task.h"

static kf_status pick_judge(void *user, const kf_graph *g, const kf_partition *p, const kf_group *grp,
                            const kf_compile_options *o, kf_pick_cand *c, int n, kf_pick_info *info,
                            kf_diag *diag) {
  (void)p;
  kf_judge_picker *jp = user;
  memset(info, 0, sizeof *info);
  if (n < 1 || n > KF_JUDGE_MAX_CANDS) {
    snprintf(info->why, sizeof info->why, "%d candidates: the judge takes 1 to %d at once", n, KF_JUDGE_MAX_CANDS);
    return KF_OK;
  }
  kf_judge_cand jc[KF_JUDGE_MAX_CANDS];
  memset(jc, 0, sizeof jc);
  /* copies numbering their inputs as the task does */
  char why[KF_JUDGE_MAX_CANDS][256];
  for (int k = 0; k < n; k++) {
    why[k][0] = '\0';
    if (kf_unit_clone(c[k].unit, &jc[k].unit) != KF_OK) {
      snprintf(why[k], sizeof why[k], "the unit cannot be copied for the judge");
      continue;
    }
    if (kf_task_unit_inputs(grp, jc[k].unit, why[k], sizeof why[k]) != KF_OK) {
      kf_unit_destroy(jc[k].unit);
      jc[k].unit = NULL;
    }
  }
  kf_judge_batch bt;
  kf_status st = kf_judge_group(g, grp, o, jc, n, &jp->opt, &bt, diag);
  if (st) goto done;
  info->judged = bt.judged;
  info->no_gpu = bt.no_gpu;
  snprintf(info->why, sizeof info->why, "%s", bt.why);
  snprintf(info->device, sizeof info->device, "%s", bt.device);
  info->floor_ms = bt.floor_ms;
  info->workers = bt.workers;
  info->seconds = bt.seconds;
  info->sets_s = bt.sets_s;
  info->worker_s = bt.worker_s;
  info->open_s = bt.open_s;
  info->refs_s = bt.refs_s;
  for (int k = 0; k < n; k++) {
    c[k].judged = jc[k].judged;
    c[k].correct = jc[k].correct;
    c[k].reward = jc[k].reward;
    c[k].ms = jc[k].ms;
    c[k].verify_s = jc[k].verify_s;
    c[k].time_s = jc[k].time_s;
    const char *w = why[k][0] ? why[k] : jc[k].why;
    snprintf(c[k].why, sizeof c[k].why, "%.*s", (int)sizeof c[k].why - 1, w);
  }
done:
  for (int k = 0; k < n; k++) kf_unit_destroy(jc[k].unit);
  return st;
}

void kf_judge_picker_init(kf_judge_picker *jp, const kf_judge_options *o, bool all_groups) {
  memset(jp, 0, sizeof *jp);
  if (o) jp->opt = *o;
  else kf_judge_options_init(&jp->opt);
  jp->picker.judge = pick_judge;
  jp->picker.user = jp;
  jp->picker.all_groups = all_groups;
}
