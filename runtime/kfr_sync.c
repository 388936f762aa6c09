/* kfr_sync.c — what keeps an instance's GPU work to itself: the scratch
 * memory of create's algorithm searches, ordered on the instance's own
 * stream.
 *
 * Create runs in processes that have other GPU work in flight (PyTorch
 * shares the device's primary context with every module), so it must
 * never wait for work it did not queue: no cuCtxSynchronize, nothing on the
 * legacy default stream (which waits for every blocking stream), no
 * synchronous copies. Its uploads and timed searches go to m->own, a
 * non-blocking stream of the instance, and it waits only on that stream.
 * Scratch buffers come from the stream-ordered allocator where the device
 * has one: cuMemFree may wait for the whole device, cuMemFreeAsync on
 * m->own does not. */
#include "kfr_int.h"

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
