/* kfr_model.c — creating and destroying a model instance, and the query
 * functions of the module API (runtime/kfuse_runtime.h).
 *
 * Create checks the whole plan before touching CUDA, then: driver, device
 * and architecture, the device's primary context, a stream of the
 * instance's own (everything create queues goes there, and create waits
 * for nothing else: kfr_sync.c), cubins and kernels and their parameters
 * (runtime/kfr_params.c), one arena allocation, the weights (from the
 * plan, or read from their file and checked against the plan:
 * runtime/kfr_weights.c) and constants, the fixed buffers of CUDA-graph
 * mode, the cuBLASLt state of GEMM steps and the cuDNN state of CONV
 * steps. Everything it needs from the plan is copied, so the plan only
 * has to live until create returns. Any failure undoes what was
 * done and leaves a message for kfuse_last_error. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kfr_int.h"
#include "kfr_hash.h"

static _Thread_local char t_last_error[1024];

int kfr_fail(kfuse_model *m, int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->err, sizeof m->err, fmt, ap);
  va_end(ap);
  return rc;
}

static int set_last(int rc, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int set_last(int rc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t_last_error, sizeof t_last_error, fmt, ap);
  va_end(ap);
  return rc;
}

/* A failed CUDA call during create: the call, what for, and the error. */
static int cu_fail(kfuse_model *m, CUresult r, const char *call,
                   const char *what) {
  char why[256];
  return kfr_fail(m, r == CUDA_ERROR_OUT_OF_MEMORY ? KFUSE_ENOMEM : KFUSE_ECUDA,
                  "%s failed (%s): %s", call, what,
                  kfr_cu_describe(m->cu, r, why, sizeof why));
}

void kfuse_options_init(kfuse_options *o) {
  if (!o)
    return;
  memset(o, 0, sizeof *o);
  o->struct_size = sizeof *o;
  o->device = 0;
  o->weights_path = NULL;
  o->cuda_graph = 0;
  o->skip_weights_hash = 0;
  o->conv_search = 1;
}

/* Copy the records and strings out of the plan (already checked). */
static int copy_meta(kfuse_model *m, const uint8_t *p) {
  const kfr_header *h = &m->h;
  size_t nb = (size_t)h->n_buffers * sizeof(kfr_buffer);
  size_t nk = (size_t)h->n_kernels * sizeof(kfr_kernel);
  size_t ns = (size_t)h->n_steps * sizeof(kfr_step);
  size_t na = (size_t)h->n_args * sizeof(kfr_arg);
  size_t total = nb + nk + ns + na + h->strings_bytes;
  uint8_t *q = malloc(total);
  m->input_buf = calloc(h->n_inputs + 1, sizeof(uint32_t));
  m->output_buf = calloc(h->n_outputs + 1, sizeof(uint32_t));
  if (!q || !m->input_buf || !m->output_buf) {
    free(q);
    return kfr_fail(m, KFUSE_ENOMEM, "out of host memory copying the plan");
  }
  m->meta = q;
  m->buffers = (kfr_buffer *)q;
  memcpy(m->buffers, p + h->off_buffers, nb);
  m->kernels = (kfr_kernel *)(q + nb);
  memcpy(m->kernels, p + h->off_kernels, nk);
  m->steps = (kfr_step *)(q + nb + nk);
  memcpy(m->steps, p + h->off_steps, ns);
  m->args = (kfr_arg *)(q + nb + nk + ns);
  memcpy(m->args, p + h->off_args, na);
  m->strings = (char *)(q + nb + nk + ns + na);
  memcpy(m->strings, p + h->off_strings, h->strings_bytes);
  for (uint32_t i = 0; i < h->n_buffers; i++) {
    if (m->buffers[i].kind == KFR_BUF_INPUT)
      m->input_buf[m->buffers[i].index] = i;
    else if (m->buffers[i].kind == KFR_BUF_OUTPUT)
      m->output_buf[m->buffers[i].index] = i;
  }
  return KFUSE_OK;
}

static const char *mstr(const kfuse_model *m, uint32_t off) {
  return m->strings + off;
}

static int pick_device(kfuse_model *m, int ordinal) {
  const kfr_driver *cu = m->cu;
  int count = 0;
  CUresult r = cu->cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS)
    return cu_fail(m, r, "cuDeviceGetCount", "counting GPUs");
  if (count == 0)
    return kfr_fail(m, KFUSE_ENODRIVER, "no CUDA GPU found");
  if (ordinal < 0 || ordinal >= count)
    return kfr_fail(m, KFUSE_EARG, "device %d requested, %d GPU%s present",
                    ordinal, count, count == 1 ? "" : "s");
  if ((r = cu->cuDeviceGet(&m->dev, ordinal)) != CUDA_SUCCESS)
    return cu_fail(m, r, "cuDeviceGet", "opening the device");
  int major = 0, minor = 0;
  char name[128] = "?";
  if ((r = cu->cuDeviceGetAttribute(
           &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, m->dev)) ||
      (r = cu->cuDeviceGetAttribute(
           &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, m->dev)))
    return cu_fail(m, r, "cuDeviceGetAttribute", "compute capability");
  if ((r = cu->cuDeviceGetName(name, sizeof name, m->dev)) != CUDA_SUCCESS)
    return cu_fail(m, r, "cuDeviceGetName", "device name");
  /* a cubin runs on its own major version at an equal or higher minor */
  uint32_t want = m->h.sm_arch;
  if ((uint32_t)major != want / 10 || (uint32_t)minor < want % 10)
    return kfr_fail(m, KFUSE_EARCH, "module built for sm_%u, device %d (%s) is "
                    "sm_%d%d", want, ordinal, name, major, minor);
  return KFUSE_OK;
}

static int load_modules(kfuse_model *m, const uint8_t *p) {
  const kfr_driver *cu = m->cu;
  const kfr_module *mods = (const kfr_module *)(p + m->h.off_modules);
  m->modules = calloc(m->h.n_modules + 1, sizeof(CUmodule));
  m->funcs = calloc(m->h.n_kernels + 1, sizeof(CUfunction));
  if (!m->modules || !m->funcs)
    return kfr_fail(m, KFUSE_ENOMEM, "out of host memory");
  for (uint32_t i = 0; i < m->h.n_modules; i++) {
    char log[4096] = "";
    CUjit_option opt[2] = {CU_JIT_ERROR_LOG_BUFFER,
                           CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *val[2] = {log, (void *)(uintptr_t)sizeof log};
    CUresult r = cu->cuModuleLoadDataEx(&m->modules[i], p + mods[i].offset, 2,
                                        opt, val);
    if (r != CUDA_SUCCESS) {
      char why[256];
      m->modules[i] = NULL;
      log[sizeof log - 1] = 0;
      return kfr_fail(m, r == CUDA_ERROR_NO_BINARY_FOR_GPU ? KFUSE_EARCH
                                                           : KFUSE_ECUDA,
                      "cuModuleLoadDataEx failed (module %u, %llu bytes): %s%s%s",
                      i, (unsigned long long)mods[i].nbytes,
                      kfr_cu_describe(cu, r, why, sizeof why),
                      log[0] ? "; JIT log: " : "", log);
    }
  }
  for (uint32_t i = 0; i < m->h.n_kernels; i++) {
    const kfr_kernel *k = &m->kernels[i];
    const char *name = mstr(m, k->name);
    CUresult r = cu->cuModuleGetFunction(&m->funcs[i], m->modules[k->module],
                                         name);
    if (r != CUDA_SUCCESS) {
      char why[256];
      return kfr_fail(m, KFUSE_ECUDA, "cuModuleGetFunction failed (kernel %u "
                      "'%s' in module %u): %s", i, name, k->module,
                      kfr_cu_describe(cu, r, why, sizeof why));
    }
    if (k->max_dynamic_smem > 48 * 1024) {
      r = cu->cuFuncSetAttribute(m->funcs[i],
                                 CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                 (int)k->max_dynamic_smem);
      if (r != CUDA_SUCCESS) {
        char why[256];
        return kfr_fail(m, KFUSE_ECUDA, "cuFuncSetAttribute failed (kernel '%s', "
                        "%u bytes of dynamic shared memory): %s", name,
                        k->max_dynamic_smem,
                        kfr_cu_describe(cu, r, why, sizeof why));
      }
    }
  }
  return kfr_check_params(m);
}

/* Upload the span of source bytes the buffers of one kind cover, starting
 * at a multiple of 256 so device addresses keep the offsets' alignment. */
static int upload_span(kfuse_model *m, uint32_t kind, const uint8_t *src,
                       CUdeviceptr *dst, uint64_t *lo_out, const char *what) {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (uint32_t i = 0; i < m->h.n_buffers; i++) {
    const kfr_buffer *b = &m->buffers[i];
    if (b->kind != kind || b->nbytes == 0)
      continue;
    if (b->offset < lo)
      lo = b->offset;
    if (b->offset + b->nbytes > hi)
      hi = b->offset + b->nbytes;
  }
  *lo_out = 0;
  *dst = 0;
  if (hi == 0)
    return KFUSE_OK;
  lo &= ~(uint64_t)255;
  *lo_out = lo;
  CUresult r = m->cu->cuMemAlloc(dst, hi - lo);
  if (r != CUDA_SUCCESS) {
    *dst = 0;
    return cu_fail(m, r, "cuMemAlloc", what);
  }
  /* on the instance's own stream (a synchronous copy would go through the
   * legacy stream and wait for the process's other work); done before
   * returning, as the caller may unmap src */
  if ((r = m->cu->cuMemcpyHtoDAsync(*dst, src + lo, hi - lo, m->own)) != CUDA_SUCCESS)
    return cu_fail(m, r, "cuMemcpyHtoDAsync", what);
  if ((r = m->cu->cuStreamSynchronize(m->own)) != CUDA_SUCCESS)
    return cu_fail(m, r, "cuStreamSynchronize", what);
  return KFUSE_OK;
}

/* The weights: from the plan when embedded, else from their file, checked
 * against the plan (runtime/kfr_weights.c). */
static int load_weights(kfuse_model *m, const uint8_t *plan,
                        const kfuse_options *o) {
  int have = 0;
  for (uint32_t i = 0; i < m->h.n_buffers && !have; i++)
    have = m->buffers[i].kind == KFR_BUF_WEIGHT && m->buffers[i].nbytes;
  if (!have)
    return KFUSE_OK;
  if (m->h.flags & KFR_FLAG_WEIGHTS_EMBEDDED)
    return upload_span(m, KFR_BUF_WEIGHT, plan, &m->weights, &m->weights_lo,
                       "embedded weights");
  return kfr_weights_load(m, plan, o->weights_path, o->skip_weights_hash);
}

/* Static buffer bases and the launch parameter arrays. */
static int prepare_args(kfuse_model *m) {
  const kfr_header *h = &m->h;
  m->base = calloc(h->n_buffers + 1, sizeof(CUdeviceptr));
  m->vals = calloc(h->n_args + 1, sizeof(kfr_value));
  m->params = calloc(h->n_args + 1, sizeof(void *));
  m->gemm = calloc(h->n_steps + 1, sizeof(kfr_gemm_rt));
  m->conv = calloc(h->n_steps + 1, sizeof(kfr_conv_rt));
  if (!m->base || !m->vals || !m->params || !m->gemm || !m->conv)
    return kfr_fail(m, KFUSE_ENOMEM, "out of host memory");
  for (uint32_t i = 0; i < h->n_buffers; i++) {
    const kfr_buffer *b = &m->buffers[i];
    switch (b->kind) {
    case KFR_BUF_ARENA: m->base[i] = m->arena + b->offset; break;
    case KFR_BUF_WEIGHT:
      m->base[i] = m->weights + (b->offset - m->weights_lo);
      break;
    case KFR_BUF_CONST: m->base[i] = m->consts + (b->offset - m->consts_lo); break;
    default: m->base[i] = 0; break; /* inputs/outputs: per run */
    }
  }
  for (uint32_t i = 0; i < h->n_args; i++) {
    const kfr_arg *a = &m->args[i];
    kfr_value *v = &m->vals[i];
    switch (a->kind) {
    case KFR_ARG_I64: v->i64 = a->offset; break;
    case KFR_ARG_I32: v->i32 = (int32_t)a->offset; break;
    case KFR_ARG_F32: v->f32 = (float)a->f; break;
    case KFR_ARG_F64: v->f64 = a->f; break;
    default: v->ptr = 0; break;
    }
    m->params[i] = v;
  }
  return KFUSE_OK;
}

static int alloc_graph_buffers(kfuse_model *m) {
  const kfr_driver *cu = m->cu;
  m->gin = calloc(m->h.n_inputs + 1, sizeof(CUdeviceptr));
  m->gout = calloc(m->h.n_outputs + 1, sizeof(CUdeviceptr));
  if (!m->gin || !m->gout)
    return kfr_fail(m, KFUSE_ENOMEM, "out of host memory");
  for (int io = 0; io < 2; io++) {
    uint32_t n = io ? m->h.n_outputs : m->h.n_inputs;
    for (uint32_t i = 0; i < n; i++) {
      const kfr_buffer *b = &m->buffers[io ? m->output_buf[i] : m->input_buf[i]];
      CUdeviceptr *d = io ? &m->gout[i] : &m->gin[i];
      if (b->nbytes == 0)
        continue;
      CUresult r = cu->cuMemAlloc(d, b->nbytes);
      if (r != CUDA_SUCCESS) {
        *d = 0;
        return cu_fail(m, r, "cuMemAlloc", "CUDA-graph input/output buffer");
      }
    }
  }
  CUresult r = cu->cuStreamCreate(&m->cap, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) {
    m->cap = NULL;
    return cu_fail(m, r, "cuStreamCreate", "capture stream");
  }
  return KFUSE_OK;
}

/* The instance's own stream (kfr_sync.c), and whether scratch can come
 * from the stream-ordered allocator. */
static int own_stream(kfuse_model *m) {
  CUresult r = m->cu->cuStreamCreate(&m->own, CU_STREAM_NON_BLOCKING);
  if (r != CUDA_SUCCESS) {
    m->own = NULL;
    return cu_fail(m, r, "cuStreamCreate", "the instance's own stream");
  }
  r = m->cu->cuDeviceGetAttribute(&m->pools, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, m->dev);
  if (r != CUDA_SUCCESS)
    return cu_fail(m, r, "cuDeviceGetAttribute", "memory pool support");
  return KFUSE_OK;
}

static int create(kfuse_model *m, const uint8_t *plan, const kfuse_options *o) {
  const kfr_header *h = &m->h;
  int rc = copy_meta(m, plan);
  if (rc)
    return rc;
  if ((rc = kfr_driver_load(&m->cu, m->err, sizeof m->err)))
    return rc;
  const kfr_driver *cu = m->cu;
  if ((rc = pick_device(m, o->device)))
    return rc;
  CUresult r = cu->cuDevicePrimaryCtxRetain(&m->ctx, m->dev);
  if (r != CUDA_SUCCESS)
    return cu_fail(m, r, "cuDevicePrimaryCtxRetain", "device context");
  m->ctx_retained = 1;
  if ((r = cu->cuCtxPushCurrent(m->ctx)) != CUDA_SUCCESS)
    return cu_fail(m, r, "cuCtxPushCurrent", "device context");
  if ((rc = own_stream(m)) || (rc = load_modules(m, plan)) || (rc = kfr_find_index_flags(m)))
    goto pop;
  if (h->arena_bytes) {
    r = cu->cuMemAlloc(&m->arena, h->arena_bytes);
    if (r != CUDA_SUCCESS) {
      m->arena = 0;
      char what[64];
      snprintf(what, sizeof what, "arena of %llu bytes",
               (unsigned long long)h->arena_bytes);
      rc = cu_fail(m, r, "cuMemAlloc", what);
      goto pop;
    }
  }
  if ((rc = load_weights(m, plan, o)) ||
      (rc = upload_span(m, KFR_BUF_CONST, plan, &m->consts, &m->consts_lo,
                        "constants")))
    goto pop;
  if ((rc = prepare_args(m)))
    goto pop;
  if ((r = cu->cuEventCreate(&m->done, CU_EVENT_DISABLE_TIMING)) !=
      CUDA_SUCCESS) {
    m->done = NULL;
    rc = cu_fail(m, r, "cuEventCreate", "run-ordering event");
    goto pop;
  }
  /* a plan with cuDNN steps: the events that move them onto m->own */
  int convs = 0;
  for (uint32_t s = 0; s < h->n_steps && !convs; s++)
    convs = m->steps[s].kind == KFR_STEP_CONV;
  if (convs && (r = cu->cuEventCreate(&m->dnn_fork, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS) {
    m->dnn_fork = NULL;
    rc = cu_fail(m, r, "cuEventCreate", "cuDNN stream fork event");
    goto pop;
  }
  if (convs && (r = cu->cuEventCreate(&m->dnn_join, CU_EVENT_DISABLE_TIMING)) != CUDA_SUCCESS) {
    m->dnn_join = NULL;
    rc = cu_fail(m, r, "cuEventCreate", "cuDNN stream join event");
    goto pop;
  }
  m->use_graph = o->cuda_graph != 0;
  m->conv_search = o->conv_search != 0;
  if (m->use_graph && (rc = alloc_graph_buffers(m)))
    goto pop;
  for (uint32_t s = 0; s < h->n_steps; s++)
    if (m->steps[s].kind == KFR_STEP_GEMM && (rc = kfr_gemm_prepare(m, s)))
      goto pop;
  if ((rc = kfr_conv_prepare_all(m)))
    goto pop;
  /* create's work is all on m->own: finished there, it is ordered before
   * any stream's later work */
  if ((r = cu->cuStreamSynchronize(m->own)) != CUDA_SUCCESS)
    rc = cu_fail(m, r, "cuStreamSynchronize", "finishing create's uploads and searches");
pop:;
  CUcontext popped;
  r = cu->cuCtxPopCurrent(&popped);
  if (r != CUDA_SUCCESS && rc == KFUSE_OK)
    rc = cu_fail(m, r, "cuCtxPopCurrent", "device context");
  return rc;
}

int kfr_model_create(const void *plan, size_t plan_bytes,
                     const kfuse_options *opts, kfuse_model **out) {
  if (!out)
    return set_last(KFUSE_EARG, "kfuse: create: the output pointer is NULL");
  *out = NULL;
  char msg[512];
  int rc = kfr_plan_check(plan, plan_bytes, msg, sizeof msg);
  if (rc)
    return set_last(rc, "kfuse: %s", msg);
  /* the plan as compiled: its model id is the XXH64 of the whole plan with
   * that field 0 (kfr_plan_writer.c), so a changed byte anywhere (a step,
   * an argument, a cubin) is caught here, before any of it is used */
  {
    const kfr_header *h = plan;
    const size_t at = offsetof(kfr_header, model_id);
    const uint64_t zero = 0;
    kfr_xxh64_state st;
    kfr_xxh64_init(&st, 0);
    kfr_xxh64_update(&st, plan, at);
    kfr_xxh64_update(&st, &zero, sizeof zero);
    kfr_xxh64_update(&st, (const char *)plan + at + sizeof zero, (size_t)h->total_bytes - at - sizeof zero);
    uint64_t id = kfr_xxh64_final(&st);
    if (id != h->model_id)
      return set_last(KFUSE_EPLAN,
                      "kfuse: create: the module's plan does not match its model id (%016llx, the plan hashes "
                      "to %016llx): it changed after kfuse compile wrote it (a damaged or edited file); "
                      "compile the model again",
                      (unsigned long long)h->model_id, (unsigned long long)id);
  }
  kfuse_options o;
  kfuse_options_init(&o);
  if (opts) {
    /* read only the fields the caller's struct has */
    if (opts->struct_size < offsetof(kfuse_options, device) + sizeof(int))
      return set_last(KFUSE_EARG, "kfuse: create: options.struct_size is %u; "
                      "call kfuse_options_init first", opts->struct_size);
    o.device = opts->device;
    if (opts->struct_size >= offsetof(kfuse_options, weights_path) +
                                 sizeof(const char *))
      o.weights_path = opts->weights_path;
    if (opts->struct_size >= offsetof(kfuse_options, cuda_graph) + sizeof(int))
      o.cuda_graph = opts->cuda_graph;
    if (opts->struct_size >=
        offsetof(kfuse_options, skip_weights_hash) + sizeof(int))
      o.skip_weights_hash = opts->skip_weights_hash;
    if (opts->struct_size >= offsetof(kfuse_options, conv_search) + sizeof(int))
      o.conv_search = opts->conv_search;
  }
  kfr_sweep(); /* instances destroyed earlier whose graphs are gone since */
  kfuse_model *m = calloc(1, sizeof *m);
  if (!m)
    return set_last(KFUSE_ENOMEM, "kfuse: create: out of host memory");
  if (pthread_mutex_init(&m->lock, NULL) != 0) {
    free(m);
    return set_last(KFUSE_ENOMEM, "kfuse: create: cannot create a mutex");
  }
  if (pthread_cond_init(&m->idle, NULL) != 0) {
    pthread_mutex_destroy(&m->lock);
    free(m);
    return set_last(KFUSE_ENOMEM, "kfuse: create: cannot create a condition variable");
  }
  memcpy(&m->h, plan, sizeof m->h);
  rc = create(m, plan, &o);
  if (rc) {
    set_last(rc, "kfuse: %s", m->err);
    kfuse_model_destroy(m);
    return rc;
  }
  m->err[0] = 0;
  t_last_error[0] = 0;
  *out = m;
  return KFUSE_OK;
}

/* Destroy waits for calls inside the instance on other threads and turns
 * later ones away (kfr_close), then frees the instance, or leaves it to the
 * caller's graphs that captured a run of it (kfr_retire, kfr_sync.c). */
void kfuse_model_destroy(kfuse_model *m) {
  if (!m)
    return;
  kfr_close(m);
  kfr_retire(m);
}

/* Release is best-effort: a failing release (a dead context, say) cannot
 * be reported through a void API, and must not stop the other releases. */
void kfr_model_release(kfuse_model *m) {
  const kfr_driver *cu = m->cu;
  if (cu && m->ctx_retained) {
    int pushed = cu->cuCtxPushCurrent(m->ctx) == CUDA_SUCCESS;
    /* runs still queued on callers' streams use our memory (every run,
     * and every replay of a captured one, records done) */
    if (m->done)
      (void)cu->cuEventSynchronize(m->done);
    for (uint32_t s = 0; m->gemm && s < m->h.n_steps; s++)
      if (m->steps[s].kind == KFR_STEP_GEMM)
        kfr_gemm_release(m, s);
    if (m->lt && m->lt_api)
      (void)m->lt_api->cublasLtDestroy(m->lt);
    kfr_conv_release_all(m);
    if (m->exec)
      (void)cu->cuGraphExecDestroy(m->exec);
    if (m->cap)
      (void)cu->cuStreamDestroy(m->cap);
    if (m->done)
      (void)cu->cuEventDestroy(m->done);
    if (m->dnn_fork)
      (void)cu->cuEventDestroy(m->dnn_fork);
    if (m->dnn_join)
      (void)cu->cuEventDestroy(m->dnn_join);
    if (m->own)
      (void)cu->cuStreamDestroy(m->own);
    for (uint32_t i = 0; m->gin && i < m->h.n_inputs; i++)
      if (m->gin[i])
        (void)cu->cuMemFree(m->gin[i]);
    for (uint32_t i = 0; m->gout && i < m->h.n_outputs; i++)
      if (m->gout[i])
        (void)cu->cuMemFree(m->gout[i]);
    if (m->arena)
      (void)cu->cuMemFree(m->arena);
    if (m->weights)
      (void)cu->cuMemFree(m->weights);
    if (m->consts)
      (void)cu->cuMemFree(m->consts);
    for (uint32_t i = 0; m->modules && i < m->h.n_modules; i++)
      if (m->modules[i])
        (void)cu->cuModuleUnload(m->modules[i]);
    if (pushed) {
      CUcontext popped;
      (void)cu->cuCtxPopCurrent(&popped);
    }
    (void)cu->cuDevicePrimaryCtxRelease(m->dev);
  }
  free(m->gin);
  free(m->gout);
  free(m->gemm);
  free(m->conv);
  free(m->params);
  free(m->vals);
  free(m->base);
  free(m->funcs);
  free(m->modules);
  free(m->index_flag);
  free(m->input_buf);
  free(m->output_buf);
  free(m->meta);
  pthread_cond_destroy(&m->idle);
  pthread_mutex_destroy(&m->lock);
  free(m);
}

int kfuse_model_num_inputs(const kfuse_model *m) {
  return m ? (int)m->h.n_inputs : -1;
}

int kfuse_model_num_outputs(const kfuse_model *m) {
  return m ? (int)m->h.n_outputs : -1;
}

static int info(const kfuse_model *m, const kfr_buffer *b,
                kfuse_tensor_info *out) {
  memset(out, 0, sizeof *out);
  out->name = mstr(m, b->name);
  out->dtype = (int)b->desc.dtype;
  out->rank = (int)b->desc.rank;
  for (uint32_t r = 0; r < b->desc.rank && r < 8; r++)
    out->shape[r] = b->desc.shape[r];
  return KFUSE_OK;
}

int kfuse_model_input_info(const kfuse_model *m, int i,
                           kfuse_tensor_info *out) {
  if (!m || !out || i < 0 || (uint32_t)i >= m->h.n_inputs)
    return KFUSE_EARG;
  return info(m, &m->buffers[m->input_buf[i]], out);
}

int kfuse_model_output_info(const kfuse_model *m, int i,
                            kfuse_tensor_info *out) {
  if (!m || !out || i < 0 || (uint32_t)i >= m->h.n_outputs)
    return KFUSE_EARG;
  return info(m, &m->buffers[m->output_buf[i]], out);
}

/* Calls write m->err under the instance's lock (kfr_enter), so the text is
 * copied under it too, into the calling thread's buffer: a reader never
 * sees a message half-written by a run on another thread. It enters
 * through the gate as a counted call (kfr_sync.c), so a destroy on another
 * thread waits for it instead of freeing the lock under it. */
const char *kfuse_model_error(const kfuse_model *m) {
  static _Thread_local char copy[sizeof m->err];
  if (!m)
    return "kfuse: the model is NULL";
  kfuse_model *w = (kfuse_model *)m; /* const API; only the gate is written */
  kfr_enter_reader(w);
  memcpy(copy, w->err, sizeof copy);
  kfr_leave(w);
  return copy;
}

const char *kfuse_last_error(void) { return t_last_error; }
