/* kfr_sync.c — how an instance is shared: the gate that lets destroy wait
 * for calls on other threads, the references that keep an instance alive
 * while a graph of the caller's holds a run of it, and create's work on a
 * stream of its own.
 *
 * The gate. Every run takes the instance's lock (runs share the arena,
 * the launch parameters and the graph). A destroy while a run is inside
 * on another thread, or waiting for the lock, must not free the lock under
 * it: callers counts the calls inside or waiting, destroy sets closing and
 * waits on idle until none is left, and a call that gets the lock after
 * closing was set returns KFUSE_ECLOSED without touching anything.
 * kfuse_model_error comes in the same way (kfr_enter_reader: counted, so
 * destroy waits for it too) but is let in after closing as well, to read
 * the message of the call that was turned away. A call that starts after
 * destroy has returned uses freed memory: that stays the caller's rule (no
 * handle can detect it).
 *
 * Captures. A run on a stream the caller is capturing becomes part of the
 * caller's graph: its kernels read the instance's arena, weights and
 * modules whenever the graph is replayed, long after the run returned,
 * maybe after destroy. So the captured run moves a reference to the
 * instance into that graph (a CUDA user object, once per capture); CUDA
 * drops it when the graph and every exec instantiated from it are
 * destroyed (and their launches done), calling released() on a thread of
 * its own. Destroy while such references live retires the instance
 * instead of freeing it: the handle is dead, the memory stays; released()
 * may not call CUDA, so it only marks the instance ready, and the next
 * create or destroy in the process frees it (kfr_sweep). Ordering of
 * replays against the instance's other runs is kfuse_model_run's: the
 * captured run waits on and records the instance's end event through
 * event wait/record nodes (which CUDA evaluates at each launch of the
 * graph; scripts/gpu_concurrency_check.sh checks replays against eager
 * runs on a GPU).
 *
 * Checked runs. Index ops read 0 for an out-of-range index and set their
 * module's flag word (agent/templates/kf_common.cuh); kfuse_model_check
 * waits for the instance's runs on its own stream, reads and clears the
 * flags and names the steps: checking costs a synchronisation, so it is
 * the caller's choice (the Python loader's check=True), not every run's.
 *
 * Create's stream. Create runs in processes that have other GPU work in flight (PyTorch
 * shares the device's primary context with every module), so it must
 * never wait for work it did not queue: no cuCtxSynchronize, nothing on the
 * legacy default stream (which waits for every blocking stream), no
 * synchronous copies. Its uploads and timed searches go to m->own, a
 * non-blocking stream of the instance, and it waits only on that stream.
 * Scratch buffers come from the stream-ordered allocator where the device
 * has one: cuMemFree may wait for the whole device, cuMemFreeAsync on
 * m->own does not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfr_int.h"

/* ---- the gate ------------------------------------------------------------------ */

int kfr_enter(kfuse_model *m) {
  atomic_fetch_add(&m->callers, 1);
  pthread_mutex_lock(&m->lock);
  if (atomic_load(&m->closing)) {
    kfr_fail(m, KFUSE_ECLOSED, "the model is being destroyed (kfuse_model_destroy was called)");
    kfr_leave(m);
    return KFUSE_ECLOSED;
  }
  return KFUSE_OK;
}

void kfr_enter_reader(kfuse_model *m) {
  atomic_fetch_add(&m->callers, 1);
  pthread_mutex_lock(&m->lock);
}

void kfr_leave(kfuse_model *m) {
  atomic_fetch_sub(&m->callers, 1);
  if (atomic_load(&m->closing))
    pthread_cond_broadcast(&m->idle);
  pthread_mutex_unlock(&m->lock);
}

void kfr_close(kfuse_model *m) {
  atomic_store(&m->closing, 1);
  pthread_mutex_lock(&m->lock);
  while (atomic_load(&m->callers) > 0)
    pthread_cond_wait(&m->idle, &m->lock);
  pthread_mutex_unlock(&m->lock);
}

/* ---- references held by the caller's graphs ---------------------------------- */

static pthread_mutex_t g_zombie_lock = PTHREAD_MUTEX_INITIALIZER;
static kfuse_model *g_retired; /* destroyed, held by graphs, or ready to free */

/* A user object's destructor: a graph that held a run is gone. On a CUDA
 * thread, which must not call CUDA: marks a retired instance ready. */
static void released(void *p) {
  kfuse_model *m = p;
  pthread_mutex_lock(&g_zombie_lock);
  if (--m->captures == 0 && m->retired)
    m->ready = 1;
  pthread_mutex_unlock(&g_zombie_lock);
}

int kfr_capture_hold(kfuse_model *m, CUstream s) {
  const kfr_driver *cu = m->cu;
  char why[256];
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  CUgraph g = NULL;
  CUresult r = cu->cuStreamGetCaptureInfo(s, &st, &id, &g, NULL, NULL);
  if (r != CUDA_SUCCESS)
    return kfr_fail(m, KFUSE_ECUDA, "cuStreamGetCaptureInfo failed (the caller's capture): %s",
                    kfr_cu_describe(cu, r, why, sizeof why));
  if (st != CU_STREAM_CAPTURE_STATUS_ACTIVE || !g)
    return kfr_fail(m, KFUSE_ECUDA, "run: the caller's stream is in a capture that is no longer active "
                    "(status %d); end it and capture again", (int)st);
  if (m->holding && id == m->held_capture)
    return KFUSE_OK; /* this capture holds the instance already */
  pthread_mutex_lock(&g_zombie_lock);
  m->captures++;
  pthread_mutex_unlock(&g_zombie_lock);
  CUuserObject obj = NULL;
  r = cu->cuUserObjectCreate(&obj, m, released, 1, CU_USER_OBJECT_NO_DESTRUCTOR_SYNC);
  if (r != CUDA_SUCCESS) {
    pthread_mutex_lock(&g_zombie_lock);
    m->captures--;
    pthread_mutex_unlock(&g_zombie_lock);
    return kfr_fail(m, KFUSE_ECUDA, "cuUserObjectCreate failed (the captured run's reference to the model): %s",
                    kfr_cu_describe(cu, r, why, sizeof why));
  }
  r = cu->cuGraphRetainUserObject(g, obj, 1, CU_GRAPH_USER_OBJECT_MOVE);
  if (r != CUDA_SUCCESS) {
    (void)cu->cuUserObjectRelease(obj, 1); /* released() undoes the count */
    return kfr_fail(m, KFUSE_ECUDA, "cuGraphRetainUserObject failed (the captured run's reference to the "
                    "model): %s", kfr_cu_describe(cu, r, why, sizeof why));
  }
  m->held_capture = id;
  m->holding = 1;
  return KFUSE_OK;
}

/* Free the retired instances no graph holds any more. */
static void sweep(void) {
  kfuse_model *ready = NULL;
  pthread_mutex_lock(&g_zombie_lock);
  for (kfuse_model **p = &g_retired; *p;) {
    kfuse_model *m = *p;
    if (m->ready) {
      *p = m->next_retired;
      m->next_retired = ready;
      ready = m;
    } else {
      p = &m->next_retired;
    }
  }
  pthread_mutex_unlock(&g_zombie_lock);
  while (ready) {
    kfuse_model *m = ready;
    ready = m->next_retired;
    kfr_model_release(m);
  }
}

void kfr_retire(kfuse_model *m) {
  pthread_mutex_lock(&g_zombie_lock);
  int now = m->captures == 0;
  if (!now) {
    m->retired = 1;
    m->next_retired = g_retired;
    g_retired = m;
  }
  pthread_mutex_unlock(&g_zombie_lock);
  if (now)
    kfr_model_release(m);
  sweep();
}

void kfr_sweep(void) { sweep(); }

/* ---- create's own stream ------------------------------------------------------ */

CUresult kfr_scratch_alloc(kfuse_model *m, CUdeviceptr *p, size_t n) {
  CUresult r = m->pools ? m->cu->cuMemAllocAsync(p, n, m->own) : m->cu->cuMemAlloc(p, n);
  if (r != CUDA_SUCCESS)
    *p = 0;
  return r;
}

void kfr_scratch_free(kfuse_model *m, CUdeviceptr p) {
  if (!p)
    return;
  /* best effort, like every release: a failure here cannot be acted on */
  if (m->pools) {
    (void)m->cu->cuMemFreeAsync(p, m->own);
  } else {
    (void)m->cu->cuStreamSynchronize(m->own);
    (void)m->cu->cuMemFree(p);
  }
}

/* ---- checked runs ---------------------------------------------------------------- */

int kfr_find_index_flags(kfuse_model *m) {
  m->index_flag = calloc(m->h.n_modules + 1, sizeof *m->index_flag);
  if (!m->index_flag)
    return kfr_fail(m, KFUSE_ENOMEM, "out of host memory");
  for (uint32_t i = 0; i < m->h.n_modules; i++) {
    size_t bytes = 0;
    CUresult r = m->cu->cuModuleGetGlobal(&m->index_flag[i], &bytes, m->modules[i], "kf_index_error");
    if (r == CUDA_ERROR_NOT_FOUND) { /* a module built before the flag existed */
      m->index_flag[i] = 0;
      continue;
    }
    if (r != CUDA_SUCCESS) {
      char why[256];
      m->index_flag[i] = 0;
      return kfr_fail(m, KFUSE_ECUDA, "cuModuleGetGlobal failed (module %u, kf_index_error): %s", i,
                      kfr_cu_describe(m->cu, r, why, sizeof why));
    }
    if (bytes != sizeof(uint32_t)) {
      m->index_flag[i] = 0;
      return kfr_fail(m, KFUSE_EPLAN, "module %u: its kf_index_error is %zu bytes, not a 4-byte word", i, bytes);
    }
  }
  return KFUSE_OK;
}

/* m->err: the steps that launch a kernel of a flagged module. */
static int index_fail(kfuse_model *m, const uint32_t *flag) {
  char steps[512] = "";
  size_t used = 0;
  int n = 0;
  for (uint32_t s = 0; s < m->h.n_steps; s++) {
    const kfr_step *st = &m->steps[s];
    if (st->kind != KFR_STEP_LAUNCH || !flag[m->kernels[st->kernel].module])
      continue;
    if (n++ < 4 && used < sizeof steps) {
      int k = snprintf(steps + used, sizeof steps - used, "%sstep %u (%s)", used ? ", " : "", s,
                       kfr_step_name(m, s));
      used += k > 0 ? (size_t)k : 0;
    }
  }
  return kfr_fail(m, KFUSE_EINDEX, "an index was out of range in %s%s, where PyTorch raises IndexError; the "
                  "outputs of the runs since the last check are undefined", steps, n > 4 ? " and others" : "");
}

int kfuse_model_check(kfuse_model *m) {
  if (!m)
    return KFUSE_EARG;
  int rc = kfr_enter(m);
  if (rc)
    return rc;
  const kfr_driver *cu = m->cu;
  char why[256];
  uint32_t *flag = calloc(m->h.n_modules + 1, sizeof *flag);
  CUresult r = cu->cuCtxPushCurrent(m->ctx);
  if (!flag || r != CUDA_SUCCESS) {
    rc = flag ? kfr_fail(m, KFUSE_ECUDA, "cuCtxPushCurrent failed (device context): %s",
                         kfr_cu_describe(cu, r, why, sizeof why))
              : kfr_fail(m, KFUSE_ENOMEM, "out of host memory");
    free(flag);
    kfr_leave(m);
    return rc;
  }
  /* the runs so far end at done: read the flags after it, on our stream */
  const char *call = "cuStreamWaitEvent";
  int any = 0;
  if ((r = cu->cuStreamWaitEvent(m->own, m->done, 0)) == CUDA_SUCCESS) {
    call = "cuMemcpyDtoHAsync";
    for (uint32_t i = 0; i < m->h.n_modules && r == CUDA_SUCCESS; i++)
      if (m->index_flag[i])
        r = cu->cuMemcpyDtoHAsync(&flag[i], m->index_flag[i], sizeof flag[i], m->own);
  }
  if (r == CUDA_SUCCESS) {
    call = "cuStreamSynchronize";
    r = cu->cuStreamSynchronize(m->own);
  }
  for (uint32_t i = 0; r == CUDA_SUCCESS && i < m->h.n_modules; i++)
    if (flag[i]) {
      any = 1;
      call = "cuMemsetD8Async";
      r = cu->cuMemsetD8Async(m->index_flag[i], 0, sizeof flag[i], m->own);
    }
  if (any && r == CUDA_SUCCESS) {
    call = "cuStreamSynchronize";
    r = cu->cuStreamSynchronize(m->own);
  }
  if (r != CUDA_SUCCESS)
    /* a sticky error of a run's kernels shows up here */
    rc = kfr_fail(m, r == CUDA_ERROR_OUT_OF_MEMORY ? KFUSE_ENOMEM : KFUSE_ECUDA,
                  "checking the model's runs: %s failed: %s", call, kfr_cu_describe(cu, r, why, sizeof why));
  else if (any)
    rc = index_fail(m, flag);
  CUcontext popped;
  if ((r = cu->cuCtxPopCurrent(&popped)) != CUDA_SUCCESS && rc == KFUSE_OK)
    rc = kfr_fail(m, KFUSE_ECUDA, "cuCtxPopCurrent failed (device context): %s",
                  kfr_cu_describe(cu, r, why, sizeof why));
  if (rc == KFUSE_OK)
    m->err[0] = 0;
  free(flag);
  kfr_leave(m);
  return rc;
}
