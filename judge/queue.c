/* judge/queue.c — judge calls queued onto GPUs (kfuse/judge.h,
 * kf_judge_queue), and whether they can run here at all (kf_judge_ready): kfuse serve's sessions and kfuse compile --agent llm's
 * sessions wait here for a free GPU, first come first served, and judge
 * on its ordinal (kf_judge_options.device), one call a GPU at a time, so
 * that two candidates never time against each other on one GPU. A call
 * holds its GPU while its worker runs, not while it compiles or draws its
 * inputs (kf_judge_options.queue, judge/judge.c).
 *
 * A ticket each: a caller takes the next ticket and waits until it is the
 * head of the queue and a GPU is free; the head then takes the lowest free
 * ordinal and the next ticket becomes the head. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "kfr_driver.h"
#include "kfuse/agent.h"
#include "kfuse/judge.h"
#include "kfuse_runtime.h"

struct kf_judge_queue {
  int gpus;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  bool *busy;
  unsigned long long ticket, head;
};

kf_status kf_judge_queue_create(int gpus, kf_judge_queue **out) {
  *out = NULL;
  if (gpus < 1) return KF_ERR_ARG;
  kf_judge_queue *q = calloc(1, sizeof *q);
  bool *busy = calloc((size_t)gpus, sizeof *busy);
  if (!q || !busy) {
    free(q);
    free(busy);
    return KF_ERR_NOMEM;
  }
  if (pthread_mutex_init(&q->mu, NULL) != 0) {
    free(q);
    free(busy);
    return KF_ERR_NOMEM;
  }
  if (pthread_cond_init(&q->cv, NULL) != 0) {
    pthread_mutex_destroy(&q->mu);
    free(q);
    free(busy);
    return KF_ERR_NOMEM;
  }
  q->gpus = gpus;
  q->busy = busy;
  *out = q;
  return KF_OK;
}

void kf_judge_queue_destroy(kf_judge_queue *q) {
  if (!q) return;
  pthread_mutex_destroy(&q->mu);
  pthread_cond_destroy(&q->cv);
  free(q->busy);
  free(q);
}

int kf_judge_queue_gpus(const kf_judge_queue *q) { return q->gpus; }

int kf_judge_queue_take(kf_judge_queue *q) {
  pthread_mutex_lock(&q->mu);
  unsigned long long me = q->ticket++;
  int dev = -1;
  for (;;) {
    if (me == q->head) {
      for (int i = 0; i < q->gpus && dev < 0; i++)
        if (!q->busy[i]) dev = i;
      if (dev >= 0) break;
    }
    pthread_cond_wait(&q->cv, &q->mu);
  }
  q->busy[dev] = true;
  q->head++;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
  return dev;
}

void kf_judge_queue_give(kf_judge_queue *q, int device) {
  pthread_mutex_lock(&q->mu);
  if (device >= 0 && device < q->gpus) q->busy[device] = false;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
}

kf_status kf_judge_bound_call(void *binding, const char *task_dir, const char *unit_dir, bool profile,
                              kf_strbuf *verdict, kf_diag *diag) {
  const kf_judge_binding *b = binding;
  kf_judge_options o = b->o;
  o.profile = profile;
  if (b->queue) o.queue = b->queue; /* kf_judge_unit takes a GPU for the worker's run only */
  return kf_judge_unit(task_dir, unit_dir, &o, verdict, diag);
}

bool kf_judge_ready(void *judge_options, char *why, size_t n) {
  const kf_judge_options *o = judge_options;
  char m[512] = "";
  if (!kf_nvrtc_available(m, sizeof m)) {
    snprintf(why, n, "%s", m);
    return false;
  }
  const kfr_driver *cu = NULL;
  if (kfr_driver_load(&cu, m, sizeof m) != KFUSE_OK) {
    snprintf(why, n, "no GPU to judge on: %s", m);
    return false;
  }
  int count = 0;
  if (cu->cuDeviceGetCount(&count) != CUDA_SUCCESS || count < 1) {
    snprintf(why, n, "no GPU to judge on: the CUDA driver sees no device");
    return false;
  }
  int need = o && o->queue ? kf_judge_queue_gpus(o->queue) : (o ? o->device : 0) + 1;
  if (count < need) {
    snprintf(why, n, "no GPU to judge on: %d device(s) needed, the driver sees %d", need, count);
    return false;
  }
  return true;
}
