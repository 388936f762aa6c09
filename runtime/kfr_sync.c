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
 * closing was set returns KFUSE_ECLOSED without touching anything. A call
 * that starts after destroy has returned uses freed memory: that stays the
 * caller's rule (no handle can detect it).
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
 * Create's stream. Create runs in processes that have other GPU work in flight (PyTorch
 * shares the device's primary context with every module), so it must
 * never wait for work it did not queue: no cuCtxSynchronize, nothing on the
 * legacy default stream (which waits for every blocking stream), no
 * synchronous copies. Its uploads and timed searches go to m->own, a
 * non-blocking stream of the instance, and it waits only on that stream.
 * Scratch buffers come from the stream-ordered allocator where the device
 * has one: cuMemFree may wait for the whole device, cuMemFreeAsync on
 * m->own does not. */
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
