/* judge/eager.c — the judge's own eager analogue, the baseline of reward 2
 * on a task without PyTorch's eager time: the task's graph (group.mlir)
 * partitioned one op a group (kf_partition_options.fuse = false: the
 * unfused per-op lowering, one kernel or library call per op, as PyTorch
 * eager runs it), each kernel group's built-in unit (the task's
 * precision; cuBLASLt and cuDNN where the built-in policy calls them,
 * convolution epilogues unfused) judged as kfuse compile's picker judges
 * a group (kf_judge_group: verified, then timed with the L2 flushed
 * before each run), and the medians summed. Each op's run starts from a
 * flushed L2 where eager's would find the previous op's output in it, so
 * the sum leans slow by the L2 hits eager gets between ops; the verdict
 * says it is the judge's analogue, not PyTorch's time.
 *
 * A task's figure is kept per process (kfuse serve's and an agent's
 * sessions judge one task many times), keyed by the task's key, its
 * precision, its target and the device. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "judge_int.h"
#include "kfuse/task.h"

kf_status kf_jeager_units(const kf_jtask *t, kf_partition **p_out, kf_unit ***units, const kf_group ***groups,
                          int *n, char *why, size_t wn) {
  *p_out = NULL;
  *units = NULL;
  *groups = NULL;
  *n = 0;
  kf_diag quiet;
  kf_diag_init(&quiet, NULL, NULL);
  kf_partition_options po;
  kf_partition_options_init(&po);
  po.precision = t->precision;
  po.fuse = false;
  kf_partition *p = NULL;
  kf_status st = kf_partition_graph(t->graph, &po, &p, &quiet);
  if (st) {
    snprintf(why, wn, "group.mlir does not partition one op a group: %s", kf_status_str(st));
    return st;
  }
  kf_unit **us = calloc((size_t)p->n_groups + 1, sizeof *us);
  const kf_group **gs = calloc((size_t)p->n_groups + 1, sizeof *gs);
  if (!us || !gs) {
    free(us);
    free(gs);
    kf_partition_destroy(p);
    return KF_ERR_NOMEM;
  }
  kf_builtin_options bo;
  kf_builtin_options_init(&bo);
  bo.target = t->target;
  bo.precision = t->precision;
  bo.conv_unfused = true;
  int k = 0;
  for (int i = 0; i < p->n_groups && !st; i++) {
    const kf_group *g = &p->groups[i];
    if (g->kind == KF_GROUP_VIEW) continue; /* a view moves no data, in eager as here */
    kf_unit *u = NULL;
    st = kf_builtin_unit(p, g, &bo, &u, &quiet);
    if (st) {
      snprintf(why, wn, "op group %d (%s) has no built-in unit", g->id, kf_group_kind_name(g->kind));
      break;
    }
    if ((st = kf_unit_compile(u, &t->target, &quiet)) != KF_OK) {
      snprintf(why, wn, "op group %d's built-in unit does not compile", g->id);
      kf_unit_destroy(u);
      break;
    }
    if ((st = kf_task_unit_inputs(g, u, why, wn)) != KF_OK) {
      kf_unit_destroy(u);
      break;
    }
    us[k] = u;
    gs[k] = g;
    k++;
  }
  if (!st && k == 0) {
    snprintf(why, wn, "the task's graph has no kernel op");
    st = KF_ERR_UNSUPPORTED;
  }
  if (st) {
    for (int i = 0; i < k; i++) kf_unit_destroy(us[i]);
    free(us);
    free(gs);
    kf_partition_destroy(p);
    return st;
  }
  *p_out = p;
  *units = us;
  *groups = gs;
  *n = k;
  return KF_OK;
}

/* ---- the per-process figures ---- */

typedef struct eager_memo {
  char key[160];
  double ms;
  int kernels;
} eager_memo;

#define EAGER_MEMOS 64
static eager_memo g_memo[EAGER_MEMOS];
static int g_n_memo;
static pthread_mutex_t g_memo_mu = PTHREAD_MUTEX_INITIALIZER;

static void memo_key(const kf_jtask *t, int device, char *k, size_t n) {
  snprintf(k, n, "%s/%d/%d%s/%d", t->key, (int)t->precision, t->target.sm, t->target.arch_specific ? "a" : "", device);
}

kf_status kf_jeager_ms(const kf_jtask *t, const kf_judge_options *o, double *ms, int *kernels, char *why, size_t wn,
                       kf_diag *diag) {
  *ms = -1;
  *kernels = 0;
  why[0] = '\0';
  char key[160];
  memo_key(t, o->queue ? -1 : o->device, key, sizeof key);
  pthread_mutex_lock(&g_memo_mu);
  for (int i = 0; i < g_n_memo; i++)
    if (strcmp(g_memo[i].key, key) == 0) {
      *ms = g_memo[i].ms;
      *kernels = g_memo[i].kernels;
    }
  pthread_mutex_unlock(&g_memo_mu);
  if (*ms > 0) return KF_OK;

  kf_partition *p = NULL;
  kf_unit **us = NULL;
  const kf_group **gs = NULL;
  int n = 0;
  kf_status st = kf_jeager_units(t, &p, &us, &gs, &n, why, wn);
  if (st) return st == KF_ERR_NOMEM ? st : KF_OK;
  kf_compile_options co;
  kf_compile_options_init(&co);
  co.precision = t->precision;
  co.target = t->target;
  kf_judge_options oo = *o;
  oo.builtin = false;
  oo.profile = false;
  oo.sanitize = false;
  oo.queue = NULL;
  double sum = 0;
  for (int i = 0; i < n && !st; i++) {
    kf_judge_cand c;
    memset(&c, 0, sizeof c);
    c.unit = us[i];
    kf_judge_batch bt;
    if (o->queue) oo.device = kf_judge_queue_take(o->queue); /* the GPU for this op's run only */
    st = kf_judge_group(t->graph, gs[i], &co, &c, 1, &oo, &bt, diag);
    if (o->queue) kf_judge_queue_give(o->queue, oo.device);
    if (st) break;
    if (!bt.judged || !c.correct || c.ms <= 0) {
      snprintf(why, wn, "op %d of %d (group %d) was not timed: %s", i + 1, n, gs[i]->id,
               !bt.judged ? bt.why : c.why[0] ? c.why : "not verified");
      sum = -1;
      break;
    }
    sum += c.ms;
  }
  for (int i = 0; i < n; i++) kf_unit_destroy(us[i]);
  free(us);
  free(gs);
  kf_partition_destroy(p);
  if (st) return st;
  if (sum > 0) {
    *ms = sum;
    *kernels = n;
    pthread_mutex_lock(&g_memo_mu);
    eager_memo *m = &g_memo[g_n_memo < EAGER_MEMOS ? g_n_memo++ : (int)(kf_now_s() * 1000) % EAGER_MEMOS];
    snprintf(m->key, sizeof m->key, "%s", key);
    m->ms = sum;
    m->kernels = n;
    pthread_mutex_unlock(&g_memo_mu);
  }
  return KF_OK;
}
