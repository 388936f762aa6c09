/* tools/cmd_gpu.c — `kfuse run MODULE.so` and `kfuse bench MODULE.so`: load a
 * compiled module and run it on the GPU.
 *
 *   kfuse run MODULE.so --io F.kfio [--atol A] [--rtol R] [--graph]
 *       run on the inputs recorded in F.kfio and compare with its outputs
 *   kfuse bench MODULE.so [--iters N] [--warmup N] [--graph]
 *       random inputs; median, p10 and p90 of N timed runs (CUDA events)
 *
 * The CUDA driver is loaded with dlopen like everywhere in kfuse, so the tool
 * still starts on machines without a GPU and says clearly why it cannot run. */
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#include "kfuse/interp.h"
#include "kfuse_runtime.h"
#include "kfuse/elf.h"
#include "tools_int.h"

typedef struct drv {
  void *lib;
  CUresult (*Init)(unsigned);
  CUresult (*DeviceGet)(CUdevice *, int);
  CUresult (*PrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*CtxSetCurrent)(CUcontext);
  CUresult (*MemAlloc)(CUdeviceptr *, size_t);
  CUresult (*MemFree)(CUdeviceptr);
  CUresult (*MemcpyHtoD)(CUdeviceptr, const void *, size_t);
  CUresult (*MemcpyDtoH)(void *, CUdeviceptr, size_t);
  CUresult (*StreamCreate)(CUstream *, unsigned);
  CUresult (*StreamDestroy)(CUstream);
  CUresult (*StreamSynchronize)(CUstream);
  CUresult (*EventCreate)(CUevent *, unsigned);
  CUresult (*EventRecord)(CUevent, CUstream);
  CUresult (*EventSynchronize)(CUevent);
  CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
  CUresult (*EventDestroy)(CUevent);
  CUresult (*GetErrorString)(CUresult, const char **);
} drv;

typedef struct module {
  void *lib;
  int (*create)(const kfuse_options *, kfuse_model **);
  int (*run)(kfuse_model *, void *, const void *const *, void *const *);
  void (*destroy)(kfuse_model *);
  int (*num_inputs)(const kfuse_model *);
  int (*num_outputs)(const kfuse_model *);
  int (*input_info)(const kfuse_model *, int, kfuse_tensor_info *);
  int (*output_info)(const kfuse_model *, int, kfuse_tensor_info *);
  const char *(*error)(const kfuse_model *);
  const char *(*last_error)(void);
  void (*options_init)(kfuse_options *);
} module;

#define SYM(h, s, name)                                                      \
  do {                                                                       \
    *(void **)&(s) = dlsym((h), (name));                                     \
    if (!(s)) missing = (name);                                              \
  } while (0)

static bool drv_load(drv *d, kf_diag *diag) {
  memset(d, 0, sizeof *d);
  d->lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!d->lib) {
    kf_diag_error(diag, "no CUDA driver (libcuda.so.1: %s): running a module needs an NVIDIA GPU",
                  dlerror());
    return false;
  }
  const char *missing = NULL;
  SYM(d->lib, d->Init, "cuInit");
  SYM(d->lib, d->DeviceGet, "cuDeviceGet");
  SYM(d->lib, d->PrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  SYM(d->lib, d->CtxSetCurrent, "cuCtxSetCurrent");
  SYM(d->lib, d->MemAlloc, "cuMemAlloc_v2");
  SYM(d->lib, d->MemFree, "cuMemFree_v2");
  SYM(d->lib, d->MemcpyHtoD, "cuMemcpyHtoD_v2");
  SYM(d->lib, d->MemcpyDtoH, "cuMemcpyDtoH_v2");
  SYM(d->lib, d->StreamCreate, "cuStreamCreate");
  SYM(d->lib, d->StreamDestroy, "cuStreamDestroy_v2");
  SYM(d->lib, d->StreamSynchronize, "cuStreamSynchronize");
  SYM(d->lib, d->EventCreate, "cuEventCreate");
  SYM(d->lib, d->EventRecord, "cuEventRecord");
  SYM(d->lib, d->EventSynchronize, "cuEventSynchronize");
  SYM(d->lib, d->EventElapsedTime, "cuEventElapsedTime_v2");
  SYM(d->lib, d->EventDestroy, "cuEventDestroy_v2");
  SYM(d->lib, d->GetErrorString, "cuGetErrorString");
  if (missing) {
    kf_diag_error(diag, "the CUDA driver lacks %s", missing);
    return false;
  }
  return true;
}

static bool ck(drv *d, CUresult r, const char *what, kf_diag *diag) {
  if (r == CUDA_SUCCESS) return true;
  const char *s = NULL;
  d->GetErrorString(r, &s);
  kf_diag_error(diag, "%s failed: %s (%d)", what, s ? s : "?", (int)r);
  return false;
}

static bool module_load(module *m, const char *path, kf_diag *diag) {
  memset(m, 0, sizeof *m);
  char buf[4096];
  /* dlopen needs a path with a slash to not search the library path */
  snprintf(buf, sizeof buf, "%s%s", strchr(path, '/') ? "" : "./", path);
  m->lib = dlopen(buf, RTLD_NOW | RTLD_LOCAL); /* the file was checked first (session_open) */
  if (!m->lib) {
    kf_diag_error(diag, "%s: cannot load the module: %s", path, dlerror());
    return false;
  }
  const char *missing = NULL;
  SYM(m->lib, m->create, "kfuse_model_create");
  SYM(m->lib, m->run, "kfuse_model_run");
  SYM(m->lib, m->destroy, "kfuse_model_destroy");
  SYM(m->lib, m->num_inputs, "kfuse_model_num_inputs");
  SYM(m->lib, m->num_outputs, "kfuse_model_num_outputs");
  SYM(m->lib, m->input_info, "kfuse_model_input_info");
  SYM(m->lib, m->output_info, "kfuse_model_output_info");
  SYM(m->lib, m->error, "kfuse_model_error");
  SYM(m->lib, m->last_error, "kfuse_last_error");
  SYM(m->lib, m->options_init, "kfuse_options_init");
  if (missing) {
    kf_diag_error(diag, "%s: not a kfuse module (no %s)", path, missing);
    return false;
  }
  return true;
}

static kf_dtype dtype_of(int code) {
  switch (code) {
  case KFUSE_DTYPE_F32: return KF_DTYPE_F32;
  case KFUSE_DTYPE_F64: return KF_DTYPE_F64;
  case KFUSE_DTYPE_F16: return KF_DTYPE_F16;
  case KFUSE_DTYPE_BF16: return KF_DTYPE_BF16;
  case KFUSE_DTYPE_I64: return KF_DTYPE_I64;
  case KFUSE_DTYPE_I32: return KF_DTYPE_I32;
  case KFUSE_DTYPE_I16: return KF_DTYPE_I16;
  case KFUSE_DTYPE_I8: return KF_DTYPE_I8;
  case KFUSE_DTYPE_U8: return KF_DTYPE_U8;
  case KFUSE_DTYPE_BOOL: return KF_DTYPE_BOOL;
  default: return KF_DTYPE_INVALID;
  }
}

typedef struct session {
  drv d;
  module m;
  kfuse_model *model;
  CUstream stream;
  int n_in, n_out;
  kf_tensor *host_in, *host_out;
  CUdeviceptr *dev_in, *dev_out;
} session;

static void session_close(session *s) {
  if (s->model) s->m.destroy(s->model);
  for (int i = 0; i < s->n_in; i++) {
    if (s->dev_in && s->dev_in[i]) s->d.MemFree(s->dev_in[i]);
    if (s->host_in) kf_tensor_fini(&s->host_in[i]);
  }
  for (int i = 0; i < s->n_out; i++) {
    if (s->dev_out && s->dev_out[i]) s->d.MemFree(s->dev_out[i]);
    if (s->host_out) kf_tensor_fini(&s->host_out[i]);
  }
  if (s->stream) s->d.StreamDestroy(s->stream);
  free(s->host_in);
  free(s->host_out);
  free(s->dev_in);
  free(s->dev_out);
}

static bool session_open(session *s, const char *path, bool graph, kf_diag *diag) {
  memset(s, 0, sizeof *s);
  /* the file first, whatever the machine: a truncated or foreign module is
   * refused with what is wrong with it, before dlopen would fault on it */
  char buf[4096], why[256];
  snprintf(buf, sizeof buf, "%s%s", strchr(path, '/') ? "" : "./", path);
  if (!kf_elf_check(buf, why, sizeof why)) {
    kf_diag_error(diag, "%s: not a loadable module: %s", path, why);
    return false;
  }
  if (!drv_load(&s->d, diag) || !module_load(&s->m, path, diag)) return false;
  drv *d = &s->d;
  CUdevice dev;
  CUcontext ctx;
  if (!ck(d, d->Init(0), "cuInit", diag) || !ck(d, d->DeviceGet(&dev, 0), "cuDeviceGet", diag) ||
      !ck(d, d->PrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain", diag) ||
      !ck(d, d->CtxSetCurrent(ctx), "cuCtxSetCurrent", diag) ||
      !ck(d, d->StreamCreate(&s->stream, 0), "cuStreamCreate", diag))
    return false;
  kfuse_options o;
  s->m.options_init(&o);
  o.cuda_graph = graph;
  int rc = s->m.create(&o, &s->model);
  if (rc) {
    kf_diag_error(diag, "%s: %s (code %d)", path, s->m.last_error(), rc);
    return false;
  }
  s->n_in = s->m.num_inputs(s->model);
  s->n_out = s->m.num_outputs(s->model);
  s->host_in = calloc((size_t)s->n_in + 1, sizeof *s->host_in);
  s->host_out = calloc((size_t)s->n_out + 1, sizeof *s->host_out);
  s->dev_in = calloc((size_t)s->n_in + 1, sizeof *s->dev_in);
  s->dev_out = calloc((size_t)s->n_out + 1, sizeof *s->dev_out);
  if (!s->host_in || !s->host_out || !s->dev_in || !s->dev_out) return false;
  for (int io = 0; io < 2; io++) {
    int n = io ? s->n_out : s->n_in;
    for (int i = 0; i < n; i++) {
      kfuse_tensor_info info;
      if ((io ? s->m.output_info : s->m.input_info)(s->model, i, &info)) {
        kf_diag_error(diag, "%s: cannot query %s %d", path, io ? "output" : "input", i);
        return false;
      }
      kf_tensor *t = io ? &s->host_out[i] : &s->host_in[i];
      t->dtype = dtype_of(info.dtype);
      t->rank = info.rank;
      for (int k = 0; k < info.rank; k++) t->shape[k] = info.shape[k];
      if (t->dtype == KF_DTYPE_INVALID || kf_tensor_alloc(t) != KF_OK) {
        kf_diag_error(diag, "%s: %s %d has dtype code %d", path, io ? "output" : "input", i, info.dtype);
        return false;
      }
      size_t bytes = (size_t)kf_tensor_numel(t) * kf_dtype_size(t->dtype);
      CUdeviceptr *p = io ? &s->dev_out[i] : &s->dev_in[i];
      if (!ck(d, d->MemAlloc(p, bytes ? bytes : 1), "cuMemAlloc", diag)) return false;
    }
  }
  return true;
}

static bool upload_inputs(session *s, kf_diag *diag) {
  for (int i = 0; i < s->n_in; i++) {
    size_t bytes = (size_t)kf_tensor_numel(&s->host_in[i]) * kf_dtype_size(s->host_in[i].dtype);
    if (bytes && !ck(&s->d, s->d.MemcpyHtoD(s->dev_in[i], s->host_in[i].data, bytes), "cuMemcpyHtoD", diag))
      return false;
  }
  return true;
}

static bool run_once(session *s, kf_diag *diag) {
  int rc = s->m.run(s->model, s->stream, (const void *const *)s->dev_in, (void *const *)s->dev_out);
  if (rc) {
    kf_diag_error(diag, "run failed: %s (code %d)", s->m.error(s->model), rc);
    return false;
  }
  return true;
}

int kf_cmd_run_module(const char *path, const char *io, double atol, double rtol, bool graph,
                      kf_diag *diag) {
  kf_io_file f;
  memset(&f, 0, sizeof f);
  session s;
  int rc = 1;
  if (kf_io_read(io, &f, diag) != KF_OK) return 1;
  if (!session_open(&s, path, graph, diag)) goto done;
  if (f.n_inputs != s.n_in || f.n_outputs != s.n_out) {
    kf_diag_error(diag, "%s: has %d inputs and %d outputs, the module %d and %d", io, f.n_inputs,
                  f.n_outputs, s.n_in, s.n_out);
    goto done;
  }
  for (int i = 0; i < s.n_in; i++) {
    const kf_tensor *a = &f.inputs[i].t, *b = &s.host_in[i];
    bool same = a->dtype == b->dtype && a->rank == b->rank;
    for (int k = 0; same && k < a->rank; k++) same = a->shape[k] == b->shape[k];
    if (!same) {
      kf_diag_error(diag, "%s: input %d (%s) does not match the module's input", io, i, f.inputs[i].name);
      goto done;
    }
    memcpy(b->data, a->data, (size_t)kf_tensor_numel(a) * kf_dtype_size(a->dtype));
  }
  if (!upload_inputs(&s, diag) || !run_once(&s, diag) ||
      !ck(&s.d, s.d.StreamSynchronize(s.stream), "the module's kernels (cuStreamSynchronize)", diag))
    goto done;
  if (atol < 0) atol = f.atol;
  if (rtol < 0) rtol = f.rtol;
  rc = 0;
  for (int i = 0; i < s.n_out; i++) {
    kf_tensor *t = &s.host_out[i];
    size_t bytes = (size_t)kf_tensor_numel(t) * kf_dtype_size(t->dtype);
    if (bytes && !ck(&s.d, s.d.MemcpyDtoH(t->data, s.dev_out[i], bytes), "cuMemcpyDtoH", diag)) {
      rc = 1;
      break;
    }
    char what[512];
    snprintf(what, sizeof what, "%s: output %d (%s)", path, i, f.outputs[i].name);
    if (kf_tensor_compare(t, &f.outputs[i].t, atol, rtol, what, diag) != KF_OK) rc = 1;
  }
  if (rc == 0)
    printf("%s: %d outputs match the recorded PyTorch outputs on the GPU (atol %g, rtol %g)\n", path,
           s.n_out, atol, rtol);
done:
  session_close(&s);
  kf_io_fini(&f);
  return rc;
}

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

int kf_cmd_bench(int argc, char **argv, kf_diag *diag) {
  const char *path = NULL;
  int iters = 100, warmup = 10;
  bool graph = false;
  for (int i = 0; i < argc; i++) {
    const char *v;
    long long n;
    if (kf_cli_is_help(argv[i])) {
      kf_cli_usage(stdout, "bench");
      return 0;
    } else if (strcmp(argv[i], "--iters") == 0 || strcmp(argv[i], "--warmup") == 0) {
      const char *opt = argv[i];
      bool it = opt[2] == 'i';
      if (!kf_cli_value(argc, argv, &i, "bench", &v, diag) ||
          !kf_cli_int("bench", opt, v, it ? 1 : 0, 1000000, &n, diag))
        return 2;
      *(it ? &iters : &warmup) = (int)n;
    } else if (strcmp(argv[i], "--graph") == 0) {
      graph = true;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return kf_cli_unknown("bench", argv[i], diag);
    } else if (path) {
      return kf_cli_error("bench", diag, "more than one module given ('%s', '%s')", path, argv[i]);
    } else {
      path = argv[i];
    }
  }
  if (!path) return kf_cli_error("bench", diag, "no module given");
  session s;
  int rc = 1;
  float *ms = calloc((size_t)iters, sizeof *ms);
  CUevent e0 = NULL, e1 = NULL;
  if (!ms) return 1;
  if (!session_open(&s, path, graph, diag)) goto done;
  /* random inputs: uniform in [-1, 1) for floats, [0, 4) for integers (safe
   * as indices of small tables), 0/1 for bool */
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < s.n_in; i++)
    for (int64_t k = 0; k < kf_tensor_numel(&s.host_in[i]); k++) {
      seed ^= seed << 13;
      seed ^= seed >> 7;
      seed ^= seed << 17;
      double u = (double)(seed >> 11) / 9007199254740992.0;
      kf_dtype t = s.host_in[i].dtype;
      kf_tensor_set(&s.host_in[i], k,
                    kf_dtype_is_float(t) ? 2 * u - 1 : t == KF_DTYPE_BOOL ? (u < 0.5) : floor(4 * u));
    }
  if (!upload_inputs(&s, diag)) goto done;
  for (int i = 0; i < warmup; i++)
    if (!run_once(&s, diag)) goto done;
  if (!ck(&s.d, s.d.EventCreate(&e0, 0), "cuEventCreate", diag) ||
      !ck(&s.d, s.d.EventCreate(&e1, 0), "cuEventCreate", diag))
    goto done;
  for (int i = 0; i < iters; i++) {
    if (!ck(&s.d, s.d.EventRecord(e0, s.stream), "cuEventRecord", diag) || !run_once(&s, diag) ||
        !ck(&s.d, s.d.EventRecord(e1, s.stream), "cuEventRecord", diag) ||
        !ck(&s.d, s.d.EventSynchronize(e1), "cuEventSynchronize", diag) ||
        !ck(&s.d, s.d.EventElapsedTime(&ms[i], e0, e1), "cuEventElapsedTime", diag))
      goto done;
  }
  qsort(ms, (size_t)iters, sizeof *ms, cmp_float);
  printf("%s: median %.4f ms, p10 %.4f ms, p90 %.4f ms over %d runs (%d warm-up)%s\n", path,
         ms[iters / 2], ms[iters / 10], ms[iters * 9 / 10], iters, warmup,
         graph ? ", CUDA graph" : "");
  rc = 0;
done:
  if (e0) s.d.EventDestroy(e0);
  if (e1) s.d.EventDestroy(e1);
  session_close(&s);
  free(ms);
  return rc;
}
