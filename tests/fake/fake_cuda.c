/* tests/fake/fake_cuda.c — a CUDA driver without a GPU, for CPU tests of
 * what create does (KFUSE_LIBCUDA=<this library>).
 *
 * It exports what the runtime's loader (runtime/kfr_driver.c) looks for:
 * cuDriverGetVersion, cuGetErrorName/String and cuGetProcAddress_v2, which
 * hands out the entry points of KFR_CU_FUNCS (each checked at compile time
 * against the PFN typedef the runtime casts it to) and cuFuncGetParamInfo.
 * "Device memory" is host memory, so uploads really read what the runtime
 * gives them; modules, functions, streams, events and graphs are small
 * heap objects; launches are counted, not run.
 *
 * Kernel parameters (cuFuncGetParamInfo) come from the cubin itself, as the
 * real driver's do: the EIATTR_KPARAM_INFO records of the kernel's
 * .nv.info.<name> section (ordinal, offset, and the size in bits 18-31 of
 * the third word: checked against nvcc's sm_90 cubins). FAKE_CUDA_PARAMS
 * overrides them by name for hand-made images: "k1=8,8,4;k2=4".
 *
 * Other knobs, read at each call:
 *   FAKE_CUDA_VERSION=N     what cuDriverGetVersion reports (default 13000);
 *                           below 12040 cuFuncGetParamInfo does not exist
 *   FAKE_CUDA_TRUNCATE=P:N  the first host-to-device copy first truncates
 *                           file P to N bytes (a writer truncating a file in
 *                           place while create reads it)
 *
 * fake_cuda_stats() reports what happened, for tests that dlopen this
 * library by the same path (they then share its state with the runtime). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kfr_int.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

typedef struct fake_stats {
  long live;          /* allocations and handles not yet freed */
  long launches;      /* cuLaunchKernel calls */
  long param_queries; /* cuFuncGetParamInfo calls */
  long htod_bytes;    /* bytes copied host to device */
} fake_stats;

static fake_stats g_stats;

FAKE_EXPORT void fake_cuda_stats(fake_stats *out) { *out = g_stats; }

static void *obj(size_t n) {
  void *p = calloc(1, n ? n : 1);
  if (p)
    g_stats.live++;
  return p;
}

static void unobj(void *p) {
  if (p) {
    g_stats.live--;
    free(p);
  }
}

/* ---- kernels' parameters --------------------------------------------------- */

#define MAX_PARAMS 256

typedef struct fake_func {
  struct fake_func *next; /* the module's functions */
  char name[256];
  int n_params; /* -1: unknown */
  uint32_t size[MAX_PARAMS], offset[MAX_PARAMS];
} fake_func;

typedef struct fake_module {
  const uint8_t *image; /* the caller's: valid while create runs */
  fake_func *funcs;     /* freed with the module, as the driver does */
} fake_module;

static uint64_t rd(const uint8_t *p, int n) {
  uint64_t v = 0;
  memcpy(&v, p, (size_t)n);
  return v;
}

/* FAKE_CUDA_PARAMS "name=s,s,s;name2=s": 1 if name is listed */
static int params_from_env(fake_func *f) {
  const char *e = getenv("FAKE_CUDA_PARAMS");
  size_t n = strlen(f->name);
  for (const char *p = e; p && *p;) {
    const char *end = strchr(p, ';');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len > n && p[n] == '=' && strncmp(p, f->name, n) == 0) {
      f->n_params = 0;
      uint32_t off = 0;
      for (const char *q = p + n + 1; q < p + len && f->n_params < MAX_PARAMS;) {
        char *next;
        uint32_t s = (uint32_t)strtoul(q, &next, 10);
        if (next == q)
          break;
        off = (off + s - 1) / s * s;
        f->size[f->n_params] = s;
        f->offset[f->n_params++] = off;
        off += s;
        q = *next == ',' ? next + 1 : next;
      }
      return 1;
    }
    p = end ? end + 1 : NULL;
  }
  return 0;
}

/* The KPARAM_INFO records of section ".nv.info.<name>" of an ELF64 cubin.
 * Images come from plans the runtime validated (headers inside the image);
 * the walk still checks every range it reads. */
static void params_from_cubin(fake_func *f, const uint8_t *b) {
  f->n_params = -1;
  if (!b || memcmp(b, "\177ELF", 4) != 0)
    return;
  uint64_t shoff = rd(b + 0x28, 8);
  uint32_t shentsize = (uint32_t)rd(b + 0x3a, 2), shnum = (uint32_t)rd(b + 0x3c, 2);
  uint32_t shstrndx = (uint32_t)rd(b + 0x3e, 2);
  if (shentsize != 64 || shstrndx >= shnum)
    return;
  const uint8_t *strsh = b + shoff + (uint64_t)shstrndx * 64;
  const char *names = (const char *)b + rd(strsh + 0x18, 8);
  char want[300];
  snprintf(want, sizeof want, ".nv.info.%s", f->name);
  for (uint32_t i = 0; i < shnum; i++) {
    const uint8_t *sh = b + shoff + (uint64_t)i * 64;
    if (strcmp(names + rd(sh, 4), want) != 0)
      continue;
    const uint8_t *p = b + rd(sh + 0x18, 8), *end = p + rd(sh + 0x20, 8);
    f->n_params = 0;
    while (p + 2 <= end) {
      uint8_t fmt = p[0], attr = p[1];
      if (fmt == 4) { /* EIFMT_SVAL: u16 size, then the value */
        if (p + 4 > end)
          break;
        uint32_t sz = (uint32_t)rd(p + 2, 2);
        const uint8_t *v = p + 4;
        if (v + sz > end)
          break;
        if (attr == 0x17 && sz >= 12) { /* EIATTR_KPARAM_INFO */
          uint32_t ord = (uint32_t)rd(v + 4, 2), off = (uint32_t)rd(v + 6, 2);
          uint32_t w = (uint32_t)rd(v + 8, 4);
          if (ord < MAX_PARAMS) {
            f->size[ord] = (w >> 18) & 0x3fff;
            f->offset[ord] = off;
            if ((int)ord + 1 > f->n_params)
              f->n_params = (int)ord + 1;
          }
        }
        p = v + sz;
      } else if (fmt == 1) { /* EIFMT_NVAL */
        p += 2;
      } else { /* EIFMT_BVAL, EIFMT_HVAL: a 2-byte value */
        p += 4;
      }
    }
    return;
  }
}

/* ---- the entry points ------------------------------------------------------- */

static CUresult CUDAAPI f_cuInit(unsigned flags) {
  (void)flags;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuDeviceGetCount(int *n) {
  *n = 1;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuDeviceGet(CUdevice *d, int ordinal) {
  if (ordinal != 0)
    return CUDA_ERROR_INVALID_DEVICE;
  *d = 0;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
  (void)d;
  if (a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)
    *v = 9;
  else if (a == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
    *v = 0;
  else
    *v = 1;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuDeviceGetName(char *name, int len, CUdevice d) {
  (void)d;
  snprintf(name, (size_t)len, "fake GPU (tests/fake/fake_cuda.c)");
  return CUDA_SUCCESS;
}
static int g_ctx;
static CUresult CUDAAPI f_cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  (void)d;
  *c = (CUcontext)&g_ctx;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuDevicePrimaryCtxRelease(CUdevice d) {
  (void)d;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuCtxPushCurrent(CUcontext c) {
  (void)c;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuCtxPopCurrent(CUcontext *c) {
  *c = (CUcontext)&g_ctx;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuCtxSynchronize(void) { return CUDA_SUCCESS; }
static CUresult CUDAAPI f_cuModuleLoadDataEx(CUmodule *m, const void *image, unsigned n,
                                             CUjit_option *o, void **v) {
  (void)n, (void)o, (void)v;
  fake_module *fm = obj(sizeof *fm);
  if (!fm)
    return CUDA_ERROR_OUT_OF_MEMORY;
  fm->image = image;
  *m = (CUmodule)fm;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuModuleUnload(CUmodule m) {
  fake_module *fm = (fake_module *)m;
  for (fake_func *f = fm ? fm->funcs : NULL, *next; f; f = next) {
    next = f->next;
    unobj(f);
  }
  unobj(fm);
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name) {
  fake_module *fm = (fake_module *)m;
  fake_func *ff = obj(sizeof *ff);
  if (!ff)
    return CUDA_ERROR_OUT_OF_MEMORY;
  snprintf(ff->name, sizeof ff->name, "%s", name);
  if (!params_from_env(ff))
    params_from_cubin(ff, fm->image);
  ff->next = fm->funcs;
  fm->funcs = ff;
  *f = (CUfunction)ff;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
  (void)f, (void)a, (void)v;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size) {
  const fake_func *ff = (const fake_func *)f;
  g_stats.param_queries++;
  if (ff->n_params < 0)
    return CUDA_ERROR_NOT_FOUND; /* neither the cubin nor FAKE_CUDA_PARAMS says */
  if (i >= (size_t)ff->n_params)
    return CUDA_ERROR_INVALID_VALUE;
  if (off)
    *off = ff->offset[i];
  if (size)
    *size = ff->size[i];
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuMemAlloc(CUdeviceptr *p, size_t n) {
  void *q = obj(n);
  if (!q)
    return CUDA_ERROR_OUT_OF_MEMORY;
  *p = (CUdeviceptr)(uintptr_t)q;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuMemFree(CUdeviceptr p) {
  unobj((void *)(uintptr_t)p);
  return CUDA_SUCCESS;
}
static void truncate_once(void) {
  static int done;
  const char *e = getenv("FAKE_CUDA_TRUNCATE");
  const char *colon = e ? strrchr(e, ':') : NULL;
  if (done || !colon)
    return;
  done = 1;
  char path[4096];
  snprintf(path, sizeof path, "%.*s", (int)(colon - e), e);
  if (truncate(path, atol(colon + 1)) != 0)
    perror("fake_cuda: FAKE_CUDA_TRUNCATE");
}
static CUresult CUDAAPI f_cuMemcpyHtoD(CUdeviceptr d, const void *s, size_t n) {
  truncate_once();
  memcpy((void *)(uintptr_t)d, s, n);
  g_stats.htod_bytes += (long)n;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuMemcpyDtoH(void *d, CUdeviceptr s, size_t n) {
  memcpy(d, (const void *)(uintptr_t)s, n);
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuMemcpyHtoDAsync(CUdeviceptr d, const void *s, size_t n, CUstream st) {
  (void)st;
  return f_cuMemcpyHtoD(d, s, n);
}
static CUresult CUDAAPI f_cuMemcpyDtoHAsync(void *d, CUdeviceptr s, size_t n, CUstream st) {
  (void)st;
  return f_cuMemcpyDtoH(d, s, n);
}
/* Device pointers of a run are the caller's and may be made up: memsets
 * and copies are not performed. */
static CUresult CUDAAPI f_cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream st) {
  (void)d, (void)v, (void)n, (void)st;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
  (void)d, (void)s, (void)n, (void)st;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                         unsigned bx, unsigned by, unsigned bz, unsigned smem,
                                         CUstream st, void **params, void **extra) {
  (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)smem, (void)st;
  (void)params, (void)extra;
  g_stats.launches++;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuStreamCreate(CUstream *s, unsigned flags) {
  (void)flags;
  *s = (CUstream)obj(8);
  return *s ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult CUDAAPI f_cuStreamDestroy(CUstream s) {
  unobj(s);
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuStreamSynchronize(CUstream s) {
  (void)s;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st) {
  (void)s;
  *st = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuStreamBeginCapture(CUstream s, CUstreamCaptureMode mode) {
  (void)s, (void)mode;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuStreamEndCapture(CUstream s, CUgraph *g) {
  (void)s;
  *g = (CUgraph)obj(8);
  return *g ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult CUDAAPI f_cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g,
                                                      unsigned long long flags) {
  (void)g, (void)flags;
  *e = (CUgraphExec)obj(8);
  return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult CUDAAPI f_cuGraphLaunch(CUgraphExec e, CUstream s) {
  (void)e, (void)s;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuGraphDestroy(CUgraph g) {
  unobj(g);
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuGraphExecDestroy(CUgraphExec e) {
  unobj(e);
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuEventCreate(CUevent *e, unsigned flags) {
  (void)flags;
  *e = (CUevent)obj(8);
  return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
static CUresult CUDAAPI f_cuEventDestroy(CUevent e) {
  unobj(e);
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuEventRecord(CUevent e, CUstream s) {
  (void)e, (void)s;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuEventSynchronize(CUevent e) {
  (void)e;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
  (void)s, (void)e, (void)flags;
  return CUDA_SUCCESS;
}
static CUresult CUDAAPI f_cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  (void)a, (void)b;
  *ms = 0.001f;
  return CUDA_SUCCESS;
}

/* Every entry point the runtime resolves, typed as the runtime types it. */
#define CHECK_TYPE(name, ver)                                                \
  __attribute__((unused)) static const PFN_##name##_v##ver chk_##name = f_##name;
KFR_CU_FUNCS(CHECK_TYPE)
CHECK_TYPE(cuFuncGetParamInfo, 12040)
#undef CHECK_TYPE

static const struct {
  const char *name;
  void *fn;
} g_table[] = {
#define ENTRY(name, ver) {#name, (void *)f_##name},
    KFR_CU_FUNCS(ENTRY)
#undef ENTRY
};

static int version(void) {
  const char *e = getenv("FAKE_CUDA_VERSION");
  return e && *e ? atoi(e) : 13000;
}

FAKE_EXPORT CUresult CUDAAPI cuDriverGetVersion(int *v) {
  *v = version();
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cuda_version,
                                                 cuuint64_t flags,
                                                 CUdriverProcAddressQueryResult *status) {
  (void)flags;
  *pfn = NULL;
  if (status)
    *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (strcmp(symbol, "cuFuncGetParamInfo") == 0) {
    if (version() < 12040 || cuda_version < 12040) {
      if (status)
        *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
      return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = (void *)f_cuFuncGetParamInfo;
  }
  for (size_t i = 0; !*pfn && i < sizeof g_table / sizeof g_table[0]; i++)
    if (strcmp(symbol, g_table[i].name) == 0)
      *pfn = g_table[i].fn;
  if (!*pfn)
    return CUDA_ERROR_NOT_FOUND;
  if (status)
    *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuGetErrorName(CUresult r, const char **s) {
  switch (r) {
  case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; break;
  case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
  case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
  case CUDA_ERROR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
  default: *s = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

FAKE_EXPORT CUresult CUDAAPI cuGetErrorString(CUresult r, const char **s) {
  const char *name = NULL;
  CUresult k = cuGetErrorName(r, &name);
  *s = name ? "(fake driver)" : NULL;
  return k;
}
