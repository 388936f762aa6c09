/* tests/fake/fake_cuda.c — a fake CUDA driver, cuBLASLt and cuDNN in one
 * shared library, for testing the runtime (runtime/) and compiled modules
 * without a GPU.
 *
 * Point KFUSE_LIBCUDA, KFUSE_CUBLASLT and KFUSE_CUDNN_LIBRARY at it: the
 * runtime resolves the driver's entry points through cuGetProcAddress_v2
 * (answered from a table built from the runtime's own list, KFR_CU_FUNCS,
 * each entry checked at compile time against the PFN typedef the runtime
 * casts it to), cuBLASLt's and cuDNN's by name. Nothing runs on a device:
 * "device memory" is host memory (so uploads really read what the runtime
 * gives them, copies and memsets really happen and ASan sees overruns),
 * kernels, cuBLASLt and cuDNN calls are only logged, modules, functions,
 * streams, events, graphs and user objects are small structs. Every call
 * appends a line to a log,
 *
 *   cuStreamWaitEvent s=s2 e=e1 flags=1 cap
 *
 * naming streams s1, s2, ... ("null" for the legacy stream), events e1,
 * ..., and marking work queued on a stream that is being captured with
 * "cap". A test reads the log and steers the fake through the exported
 * fake_cuda_* functions (see fake_cuda.h): fail the nth call of an entry
 * point, hold kernel launches until released (a run "in flight" on another
 * thread), count live allocations and handles, launches and parameter
 * queries. Tests open the library by the path they give the runtime, so
 * both share its state.
 *
 * Kernel parameters (cuFuncGetParamInfo) come from the cubin itself, as the
 * real driver's do: the EIATTR_KPARAM_INFO records of the kernel's
 * .nv.info.<name> section (ordinal, offset, and the size in bits 18-31 of
 * the third word: checked against nvcc's sm_90 cubins), so a compiled
 * module's real cubins are checked as a GPU would check them
 * (tests/fake/create_check.c). FAKE_CUDA_PARAMS overrides them by name for
 * hand-made images: "k1=8,8,4;k2=4". A kernel that neither names gets
 * CUDA_ERROR_NOT_FOUND.
 *
 * Graphs and user objects follow CUDA's reference rules: a capture's graph
 * owns the references moved to it, an exec instantiated from it takes its
 * own, and a user object's destructor runs when the last reference goes
 * (here on the releasing thread; CUDA runs it on an internal one).
 * cuBLASLt's heuristic returns up to three candidates whose algo.data[0]
 * is 1000 x the smallest requested operand alignment + the candidate's
 * index; a timed call of candidate 2 takes 0.5 ms, any other 1 ms (the
 * elapsed time of the events around it), so a timed search picks candidate
 * 2 and an untimed one candidate 0. cuDNN: the legacy calls kfr_int.h
 * declares (no graph API: the runtime then uses the legacy path); a copy
 * of this library also stands for a cuDNN candidate in the library-search
 * tests (tests/fake/fake_cudnn_part.c stands for its sub-libraries).
 *
 * Environment, read at each call:
 *   FAKE_CUDA_FAIL=name[:skip]  fail that call (for scripts; tests call
 *                               fake_cuda_fail)
 *   FAKE_CUDA_VERSION=N         what cuDriverGetVersion reports (default
 *                               13000); below 12040 cuFuncGetParamInfo does
 *                               not exist
 *   FAKE_CUDA_NO_POOLS=1        the device has no stream-ordered allocator
 *   FAKE_CUDA_TRUNCATE=P:N      the first host-to-device copy first
 *                               truncates file P to N bytes (a writer
 *                               truncating a file in place while create
 *                               reads it)
 *   FAKE_CUDNN_VERSION=N        what cudnnGetVersion reports (default 91000)
 *   FAKE_CUDA_LAUNCH=ACTION     what every cuLaunchKernel also does, for
 *                               the judge's worker tests: "hang" never
 *                               returns (a kernel that does not end),
 *                               "crash" raises SIGSEGV, "print:N" writes N
 *                               bytes to stdout (device printf); with
 *                               "@NAME" after it, only launches of kernel NAME
 */
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_cuda.h"
#include "kfr_int.h" /* the runtime's entry-point list and types */

#define EXPORT __attribute__((visibility("default")))

/* ---- state, log and failures ------------------------------------------------ */

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static char *g_log;
static size_t g_log_len, g_log_cap;
static char *g_log_copy;
static int g_next_stream = 1, g_next_event = 1, g_next_graph = 1;

typedef struct fail_spec {
  char name[64];
  int skip, times, result;
} fail_spec;
static fail_spec g_fail[8];
static int g_nfail;
static int g_env_read;

static int g_block_launches, g_blocked, g_release_gen;
static double g_last_ms = 1.0; /* the last cuBLASLt call's "duration" */

typedef struct alloc_rec {
  void *p;
  size_t n;
} alloc_rec;
static alloc_rec *g_allocs;
static int g_nallocs, g_cap_allocs;
/* modules, functions, streams, events, graphs, execs, user objects alive */
static long g_handles;
static long g_launches, g_param_queries, g_htod_bytes;

static void log_line(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Called with g_mu held. */
static void log_line(const char *fmt, ...) {
  char line[512];
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  if (k < 0) return;
  size_t n = strlen(line);
  if (g_log_len + n + 2 > g_log_cap) {
    size_t cap = g_log_cap ? 2 * g_log_cap : 1 << 16;
    while (cap < g_log_len + n + 2) cap *= 2;
    char *p = realloc(g_log, cap);
    if (!p) return;
    g_log = p;
    g_log_cap = cap;
  }
  memcpy(g_log + g_log_len, line, n);
  g_log_len += n;
  g_log[g_log_len++] = '\n';
  g_log[g_log_len] = 0;
}

static void read_env_fail(void) {
  if (g_env_read) return;
  g_env_read = 1;
  const char *e = getenv("FAKE_CUDA_FAIL");
  if (!e || !*e || g_nfail >= 8) return;
  fail_spec *f = &g_fail[g_nfail++];
  snprintf(f->name, sizeof f->name, "%s", e);
  char *colon = strchr(f->name, ':');
  f->skip = 0;
  if (colon) {
    *colon = 0;
    f->skip = atoi(colon + 1);
  }
  f->times = -1;
  f->result = CUDA_ERROR_UNKNOWN;
}

/* The failure to inject for this call of name, or 0. Called with g_mu held. */
static int should_fail(const char *name) {
  read_env_fail();
  for (int i = 0; i < g_nfail; i++) {
    fail_spec *f = &g_fail[i];
    if (strcmp(f->name, name) != 0 || f->times == 0) continue;
    if (f->skip > 0) {
      f->skip--;
      continue;
    }
    if (f->times > 0) f->times--;
    log_line("%s FAILED %d", name, f->result);
    return f->result;
  }
  return 0;
}

EXPORT void fake_cuda_reset(void) {
  pthread_mutex_lock(&g_mu);
  g_log_len = 0;
  if (g_log) g_log[0] = 0;
  g_nfail = 0;
  g_env_read = 1; /* the environment's failure only before the first reset */
  g_block_launches = 0;
  pthread_mutex_unlock(&g_mu);
}

EXPORT const char *fake_cuda_log(void) {
  pthread_mutex_lock(&g_mu);
  free(g_log_copy);
  g_log_copy = strdup(g_log ? g_log : "");
  pthread_mutex_unlock(&g_mu);
  return g_log_copy;
}

EXPORT int fake_cuda_count(const char *needle) {
  pthread_mutex_lock(&g_mu);
  int n = 0;
  for (const char *p = g_log; p && *p;) {
    const char *nl = strchr(p, '\n');
    size_t len = nl ? (size_t)(nl - p) : strlen(p);
    if (memmem(p, len, needle, strlen(needle))) n++;
    p += len + (nl ? 1 : 0);
  }
  pthread_mutex_unlock(&g_mu);
  return n;
}

EXPORT void fake_cuda_mark(const char *text) {
  pthread_mutex_lock(&g_mu);
  log_line("-- %s", text);
  pthread_mutex_unlock(&g_mu);
}

EXPORT void fake_cuda_fail(const char *call, int skip, int times, int result) {
  pthread_mutex_lock(&g_mu);
  if (g_nfail < 8) {
    fail_spec *f = &g_fail[g_nfail++];
    snprintf(f->name, sizeof f->name, "%s", call);
    f->skip = skip;
    f->times = times;
    f->result = result;
  }
  pthread_mutex_unlock(&g_mu);
}

EXPORT void fake_cuda_block_launches(int on) {
  pthread_mutex_lock(&g_mu);
  g_block_launches = on;
  if (!on) {
    g_release_gen++;
    pthread_cond_broadcast(&g_cv);
  }
  pthread_mutex_unlock(&g_mu);
}

EXPORT int fake_cuda_blocked(void) {
  pthread_mutex_lock(&g_mu);
  int n = g_blocked;
  pthread_mutex_unlock(&g_mu);
  return n;
}

EXPORT int fake_cuda_live_allocs(void) {
  pthread_mutex_lock(&g_mu);
  int n = g_nallocs;
  pthread_mutex_unlock(&g_mu);
  return n;
}

EXPORT int fake_cuda_is_live(unsigned long long p) {
  pthread_mutex_lock(&g_mu);
  int live = 0;
  for (int i = 0; i < g_nallocs && !live; i++) live = (uintptr_t)g_allocs[i].p == (uintptr_t)p;
  pthread_mutex_unlock(&g_mu);
  return live;
}

EXPORT void fake_cuda_stats(fake_stats *out) {
  pthread_mutex_lock(&g_mu);
  out->live = g_nallocs + g_handles;
  out->launches = g_launches;
  out->param_queries = g_param_queries;
  out->htod_bytes = g_htod_bytes;
  pthread_mutex_unlock(&g_mu);
}

/* A handle made or destroyed (not under g_mu). */
static void handle_count(int d) {
  pthread_mutex_lock(&g_mu);
  g_handles += d;
  pthread_mutex_unlock(&g_mu);
}

/* ---- objects ------------------------------------------------------------------ */

struct CUstream_st {
  int id;
  unsigned flags;
  struct CUgraph_st *capturing; /* the graph being captured, or NULL */
  unsigned long long capture_id;
};
struct CUevent_st {
  int id;
  unsigned flags;
};
struct CUuserObject_st {
  int refs;
  void *ptr;
  CUhostFn destroy;
};
typedef struct uref {
  struct CUuserObject_st *obj;
  unsigned count;
} uref;
struct CUgraph_st {
  int id;
  uref refs[64];
  int nrefs;
};
struct CUgraphExec_st {
  int id;
  uref refs[64];
  int nrefs;
};
#define MAX_PARAMS 256
struct CUfunc_st {
  struct CUfunc_st *next; /* the module's functions */
  char name[256];
  int n_params; /* -1: unknown */
  uint32_t size[MAX_PARAMS], offset[MAX_PARAMS];
};
struct CUmod_st {
  unsigned *index_error;   /* the module's kf_index_error word */
  const uint8_t *image;    /* the caller's: valid while create runs */
  struct CUfunc_st *funcs; /* freed with the module, as the driver does */
};
struct CUctx_st {
  int dummy;
};

static struct CUctx_st g_ctx;

static const char *sname(CUstream s, char *buf, size_t n) {
  if (!s) return "null";
  snprintf(buf, n, "s%d", s->id);
  return buf;
}

static const char *cap(CUstream s) { return s && s->capturing ? " cap" : ""; }

/* Drop count references of a user object; the destructor runs outside g_mu
 * (it may take the runtime's locks). Called with g_mu held; returns the
 * destructor to call, if any. */
static struct CUuserObject_st *unref(struct CUuserObject_st *o, unsigned count) {
  o->refs -= (int)count;
  if (o->refs > 0) return NULL;
  return o;
}

static void run_destructors(struct CUuserObject_st **dead, int n) {
  for (int i = 0; i < n; i++) {
    dead[i]->destroy(dead[i]->ptr);
    free(dead[i]);
    handle_count(-1);
  }
}

/* ---- kernels' parameters --------------------------------------------------------- */

static uint64_t rd(const uint8_t *p, int n) {
  uint64_t v = 0;
  memcpy(&v, p, (size_t)n);
  return v;
}

/* FAKE_CUDA_PARAMS "name=s,s,s;name2=s": 1 if f's name is listed */
static int params_from_env(struct CUfunc_st *f) {
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
        uint32_t sz = (uint32_t)strtoul(q, &next, 10);
        if (next == q || sz == 0)
          break;
        off = (off + sz - 1) / sz * sz;
        f->size[f->n_params] = sz;
        f->offset[f->n_params++] = off;
        off += sz;
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
 * the walk still checks every range it reads against the section. */
static void params_from_cubin(struct CUfunc_st *f, const uint8_t *b) {
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

/* ---- the driver's entry points ------------------------------------------------ */

static CUresult f_cuInit(unsigned flags) {
  pthread_mutex_lock(&g_mu);
  log_line("cuInit");
  int r = should_fail("cuInit");
  pthread_mutex_unlock(&g_mu);
  return (CUresult)r;
}

#define SIMPLE(call)                 \
  pthread_mutex_lock(&g_mu);         \
  log_line("%s", call);              \
  int fr = should_fail(call);        \
  pthread_mutex_unlock(&g_mu);       \
  if (fr) return (CUresult)fr;

static CUresult f_cuDeviceGetCount(int *n) {
  SIMPLE("cuDeviceGetCount");
  *n = 1;
  return CUDA_SUCCESS;
}

static CUresult f_cuDeviceGet(CUdevice *d, int ordinal) {
  SIMPLE("cuDeviceGet");
  *d = ordinal;
  return CUDA_SUCCESS;
}

static CUresult f_cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d) {
  pthread_mutex_lock(&g_mu);
  int fr = should_fail("cuDeviceGetAttribute");
  pthread_mutex_unlock(&g_mu);
  if (fr) return (CUresult)fr;
  switch (a) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 9; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *v = getenv("FAKE_CUDA_NO_POOLS") ? 0 : 1; break;
  default: *v = 0; break;
  }
  return CUDA_SUCCESS;
}

static CUresult f_cuDeviceGetName(char *name, int n, CUdevice d) {
  SIMPLE("cuDeviceGetName");
  snprintf(name, (size_t)n, "Fake GPU");
  return CUDA_SUCCESS;
}

static CUresult f_cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) {
  SIMPLE("cuDevicePrimaryCtxRetain");
  *c = &g_ctx;
  return CUDA_SUCCESS;
}

static CUresult f_cuDevicePrimaryCtxRelease(CUdevice d) {
  SIMPLE("cuDevicePrimaryCtxRelease");
  return CUDA_SUCCESS;
}

static CUresult f_cuCtxPushCurrent(CUcontext c) {
  pthread_mutex_lock(&g_mu);
  int fr = should_fail("cuCtxPushCurrent");
  pthread_mutex_unlock(&g_mu);
  return (CUresult)fr;
}

static CUresult f_cuCtxPopCurrent(CUcontext *c) {
  pthread_mutex_lock(&g_mu);
  int fr = should_fail("cuCtxPopCurrent");
  pthread_mutex_unlock(&g_mu);
  if (c) *c = &g_ctx;
  return (CUresult)fr;
}

static CUresult f_cuCtxSynchronize(void) {
  SIMPLE("cuCtxSynchronize");
  return CUDA_SUCCESS;
}

static CUresult f_cuModuleLoadDataEx(CUmodule *mod, const void *image, unsigned n, CUjit_option *o, void **v) {
  SIMPLE("cuModuleLoadDataEx");
  struct CUmod_st *m = calloc(1, sizeof *m);
  if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
  m->index_error = calloc(1, sizeof *m->index_error);
  if (!m->index_error) {
    free(m);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  m->image = image;
  handle_count(1);
  *mod = m;
  return CUDA_SUCCESS;
}

static CUresult f_cuModuleUnload(CUmodule mod) {
  SIMPLE("cuModuleUnload");
  long n = 1;
  for (struct CUfunc_st *f = mod->funcs, *next; f; f = next, n++) {
    next = f->next;
    free(f);
  }
  handle_count(-(int)n);
  free(mod->index_error);
  free(mod);
  return CUDA_SUCCESS;
}

static CUresult f_cuModuleGetFunction(CUfunction *f, CUmodule mod, const char *name) {
  pthread_mutex_lock(&g_mu);
  log_line("cuModuleGetFunction %s", name);
  int fr = should_fail("cuModuleGetFunction");
  pthread_mutex_unlock(&g_mu);
  if (fr) return (CUresult)fr;
  struct CUfunc_st *fn = calloc(1, sizeof *fn);
  if (!fn) return CUDA_ERROR_OUT_OF_MEMORY;
  snprintf(fn->name, sizeof fn->name, "%s", name);
  if (!params_from_env(fn)) params_from_cubin(fn, mod->image);
  pthread_mutex_lock(&g_mu);
  fn->next = mod->funcs;
  mod->funcs = fn;
  g_handles++;
  pthread_mutex_unlock(&g_mu);
  *f = fn;
  return CUDA_SUCCESS;
}

static CUresult f_cuModuleGetGlobal(CUdeviceptr *p, size_t *bytes, CUmodule mod, const char *name) {
  pthread_mutex_lock(&g_mu);
  log_line("cuModuleGetGlobal %s", name);
  int fr = should_fail("cuModuleGetGlobal");
  pthread_mutex_unlock(&g_mu);
  if (fr) return (CUresult)fr;
  if (strcmp(name, "kf_index_error") != 0) return CUDA_ERROR_NOT_FOUND;
  if (p) *p = (CUdeviceptr)(uintptr_t)mod->index_error;
  if (bytes) *bytes = sizeof *mod->index_error;
  return CUDA_SUCCESS;
}

static CUresult f_cuFuncSetAttribute(CUfunction f, CUfunction_attribute a, int v) {
  SIMPLE("cuFuncSetAttribute");
  return CUDA_SUCCESS;
}

/* What the kernel's cubin (or FAKE_CUDA_PARAMS) declares; INVALID_VALUE
 * past the last parameter, as CUDA answers. */
static CUresult f_cuFuncGetParamInfo(CUfunction f, size_t i, size_t *off, size_t *size) {
  pthread_mutex_lock(&g_mu);
  log_line("cuFuncGetParamInfo %s %zu", f->name, i);
  g_param_queries++;
  int fr = should_fail("cuFuncGetParamInfo");
  pthread_mutex_unlock(&g_mu);
  if (fr) return (CUresult)fr;
  if (f->n_params < 0) return CUDA_ERROR_NOT_FOUND; /* neither the cubin nor FAKE_CUDA_PARAMS says */
  if (i >= (size_t)f->n_params) return CUDA_ERROR_INVALID_VALUE;
  if (off) *off = f->offset[i];
  if (size) *size = f->size[i];
  return CUDA_SUCCESS;
}

static CUresult do_alloc(CUdeviceptr *p, size_t n, const char *call, CUstream s) {
  char sb[16];
  pthread_mutex_lock(&g_mu);
  int fr = should_fail(call);
  if (fr) {
    pthread_mutex_unlock(&g_mu);
    return (CUresult)fr;
  }
  size_t sz = (n + 255) & ~(size_t)255;
  void *q = aligned_alloc(256, sz ? sz : 256);
  if (!q) {
    pthread_mutex_unlock(&g_mu);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  memset(q, 0, sz ? sz : 256);
  if (g_nallocs == g_cap_allocs) {
    g_cap_allocs = g_cap_allocs ? 2 * g_cap_allocs : 64;
    g_allocs = realloc(g_allocs, sizeof *g_allocs * (size_t)g_cap_allocs);
  }
  g_allocs[g_nallocs++] = (alloc_rec){q, n};
  if (strcmp(call, "cuMemAllocAsync") == 0)
    log_line("%s p=%p n=%zu s=%s", call, q, n, sname(s, sb, sizeof sb));
  else
    log_line("%s p=%p n=%zu", call, q, n);
  pthread_mutex_unlock(&g_mu);
  *p = (CUdeviceptr)(uintptr_t)q;
  return CUDA_SUCCESS;
}

static CUresult do_free(CUdeviceptr p, const char *call, CUstream s) {
  char sb[16];
  pthread_mutex_lock(&g_mu);
  int fr = should_fail(call);
  if (fr) {
    pthread_mutex_unlock(&g_mu);
    return (CUresult)fr;
  }
  for (int i = 0; i < g_nallocs; i++)
    if ((uintptr_t)g_allocs[i].p == (uintptr_t)p) {
      free(g_allocs[i].p);
      g_allocs[i] = g_allocs[--g_nallocs];
      if (strcmp(call, "cuMemFreeAsync") == 0)
        log_line("%s p=%p s=%s", call, (void *)(uintptr_t)p, sname(s, sb, sizeof sb));
      else
        log_line("%s p=%p", call, (void *)(uintptr_t)p);
      pthread_mutex_unlock(&g_mu);
      return CUDA_SUCCESS;
    }
  log_line("%s p=%p BAD (not allocated)", call, (void *)(uintptr_t)p);
  pthread_mutex_unlock(&g_mu);
  return CUDA_ERROR_INVALID_VALUE;
}

static CUresult f_cuMemAlloc(CUdeviceptr *p, size_t n) { return do_alloc(p, n, "cuMemAlloc", NULL); }
static CUresult f_cuMemFree(CUdeviceptr p) { return do_free(p, "cuMemFree", NULL); }
/* 80 GB, all of it free but what the fake's live allocations hold */
static CUresult f_cuMemGetInfo(size_t *free_b, size_t *total) {
  size_t used = 0;
  pthread_mutex_lock(&g_mu);
  log_line("cuMemGetInfo");
  for (int i = 0; i < g_nallocs; i++) used += g_allocs[i].n;
  pthread_mutex_unlock(&g_mu);
  *total = (size_t)80 << 30;
  *free_b = *total - used;
  return CUDA_SUCCESS;
}
/* page-locked host memory: plain host memory here, counted with the
 * device allocations (a leak shows in fake_cuda_live_allocs) */
static CUresult f_cuMemAllocHost(void **p, size_t n) {
  CUdeviceptr d = 0;
  CUresult r = do_alloc(&d, n, "cuMemAllocHost", NULL);
  *p = r == CUDA_SUCCESS ? (void *)(uintptr_t)d : NULL;
  return r;
}
static CUresult f_cuMemFreeHost(void *p) { return do_free((CUdeviceptr)(uintptr_t)p, "cuMemFreeHost", NULL); }
static CUresult f_cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s) {
  return do_alloc(p, n, "cuMemAllocAsync", s);
}
static CUresult f_cuMemFreeAsync(CUdeviceptr p, CUstream s) { return do_free(p, "cuMemFreeAsync", s); }

/* FAKE_CUDA_TRUNCATE=P:N: truncate P to N bytes, once. Called with g_mu
 * held. */
static void truncate_once(void) {
  static int done;
  const char *e = getenv("FAKE_CUDA_TRUNCATE");
  const char *colon = e ? strrchr(e, ':') : NULL;
  if (done || !colon) return;
  done = 1;
  char path[4096];
  snprintf(path, sizeof path, "%.*s", (int)(colon - e), e);
  if (truncate(path, atol(colon + 1)) != 0) perror("fake_cuda: FAKE_CUDA_TRUNCATE");
}

/* a copy or memset: logged, done unless the stream is being captured */
static CUresult copy_op(const char *call, CUstream s, int has_stream, void *dst, const void *src, int value,
                        size_t n) {
  char sb[16];
  int htod = strncmp(call, "cuMemcpyHtoD", 12) == 0;
  pthread_mutex_lock(&g_mu);
  if (htod) {
    truncate_once();
    g_htod_bytes += (long)n;
  }
  if (has_stream)
    log_line("%s n=%zu s=%s%s", call, n, sname(s, sb, sizeof sb), cap(s));
  else
    log_line("%s n=%zu", call, n);
  int fr = should_fail(call);
  int captured = s && s->capturing;
  pthread_mutex_unlock(&g_mu);
  if (fr) return (CUresult)fr;
  if (!captured && n) {
    if (src)
      memmove(dst, src, n);
    else
      memset(dst, value, n);
  }
  return CUDA_SUCCESS;
}

static CUresult f_cuMemcpyHtoD(CUdeviceptr d, const void *h, size_t n) {
  return copy_op("cuMemcpyHtoD", NULL, 0, (void *)(uintptr_t)d, h, 0, n);
}
static CUresult f_cuMemcpyDtoH(void *h, CUdeviceptr d, size_t n) {
  return copy_op("cuMemcpyDtoH", NULL, 0, h, (const void *)(uintptr_t)d, 0, n);
}
static CUresult f_cuMemcpyHtoDAsync(CUdeviceptr d, const void *h, size_t n, CUstream s) {
  return copy_op("cuMemcpyHtoDAsync", s, 1, (void *)(uintptr_t)d, h, 0, n);
}
static CUresult f_cuMemcpyDtoHAsync(void *h, CUdeviceptr d, size_t n, CUstream s) {
  return copy_op("cuMemcpyDtoHAsync", s, 1, h, (const void *)(uintptr_t)d, 0, n);
}
static CUresult f_cuMemcpyDtoDAsync(CUdeviceptr d, CUdeviceptr src, size_t n, CUstream s) {
  return copy_op("cuMemcpyDtoDAsync", s, 1, (void *)(uintptr_t)d, (const void *)(uintptr_t)src, 0, n);
}
static CUresult f_cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  return copy_op("cuMemsetD8Async", s, 1, (void *)(uintptr_t)d, NULL, v, n);
}

static CUresult f_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned smem, CUstream s, void **params, void **extra) {
  char sb[16];
  pthread_mutex_lock(&g_mu);
  log_line("cuLaunchKernel %s s=%s%s", f->name, sname(s, sb, sizeof sb), cap(s));
  int fr = should_fail("cuLaunchKernel");
  if (!fr) g_launches++;
  if (!fr && g_block_launches) {
    int gen = g_release_gen;
    g_blocked++;
    while (g_release_gen == gen) pthread_cond_wait(&g_cv, &g_mu);
    g_blocked--;
  }
  pthread_mutex_unlock(&g_mu);
  const char *env = getenv("FAKE_CUDA_LAUNCH");
  char act[64] = "";
  if (env) {
    snprintf(act, sizeof act, "%s", env);
    char *at = strchr(act, '@');
    if (at) {
      *at = 0;
      if (strcmp(at + 1, f->name) != 0) act[0] = 0;
    }
  }
  if (!fr && strcmp(act, "hang") == 0) {
    for (;;) pause();
  } else if (!fr && strcmp(act, "crash") == 0) {
    raise(SIGSEGV);
  } else if (!fr && strncmp(act, "print:", 6) == 0) {
    static const char line[] = "fake kernel printf\n";
    for (long left = atol(act + 6); left > 0; left -= (long)sizeof line - 1)
      if (fwrite(line, 1, left < (long)sizeof line - 1 ? (size_t)left : sizeof line - 1, stdout) == 0) break;
    fflush(stdout);
  }
  return (CUresult)fr;
}

static CUresult f_cuStreamCreate(CUstream *s, unsigned flags) {
  pthread_mutex_lock(&g_mu);
  int fr = should_fail("cuStreamCreate");
  if (fr) {
    pthread_mutex_unlock(&g_mu);
    return (CUresult)fr;
  }
  struct CUstream_st *st = calloc(1, sizeof *st);
  st->id = g_next_stream++;
  st->flags = flags;
  g_handles++;
  log_line("cuStreamCreate s=s%d flags=%u", st->id, flags);
  pthread_mutex_unlock(&g_mu);
  *s = st;
  return CUDA_SUCCESS;
}

static CUresult f_cuStreamDestroy(CUstream s) {
  char sb[16];
  pthread_mutex_lock(&g_mu);
  log_line("cuStreamDestroy s=%s", sname(s, sb, sizeof sb));
  g_handles--;
  pthread_mutex_unlock(&g_mu);
  free(s);
  return CUDA_SUCCESS;
}

static CUresult f_cuStreamSynchronize(CUstream s) {
  char sb[16];
  pthread_mutex_lock(&g_mu);
  log_line("cuStreamSynchronize s=%s", sname(s, sb, sizeof sb));
  int fr = should_fail("cuStreamSynchronize");
  pthread_mutex_unlock(&g_mu);
  return (CUresult)fr;
}

static CUresult f_cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st) {
  pthread_mutex_lock(&g_mu);
  int fr = should_fail("cuStreamIsCapturing");
  *st = s && s->capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  pthread_mutex_unlock(&g_mu);
  return (CUresult)fr;
}

static CUresult f_cuStreamGetCaptureInfo(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *g,
                                         const CUgraphNode **deps, size_t *ndeps) {
  char sb[16];
  pthread_mutex_lock(&g_mu);
  log_line("cuStreamGetCaptureInfo s=%s", sname(s, sb, sizeof sb));
  int fr = should_fail("cuStreamGetCaptureInfo");
  if (st) *st = s && s->capturing ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  if (id) *id = s && s->capturing ? s->capture_id : 0;
  if (g) *g = s ? s->capturing : NULL;
  if (deps) *deps = NULL;
  if (ndeps) *ndeps = 0;
  pthread_mutex_unlock(&g_mu);
  return (CUresult)fr;
}

static CUresult f_cuStreamBeginCapture(CUstream s, CUstreamCaptureMode mode) {
  char sb[16];
  pthread_mutex_lock(&g_mu);
  log_line("cuStreamBeginCapture s=%s", sname(s, sb, sizeof sb));
  int fr = should_fail("cuStreamBeginCapture");
  if (!fr) {
    if (!s || s->capturing) {
      fr = CUDA_ERROR_ILLEGAL_STATE;
    } else {
      s->capturing = calloc(1, sizeof *s->capturing);
      s->capturing->id = g_next_graph++;
      g_handles++;
      s->capture_id = (unsigned long long)s->capturing->id;
    }
  }
  pthread_mutex_unlock(&g_mu);
  return (CUresult)fr;
}

/* Release every reference a graph or exec holds. */
static void drop_refs(uref *refs, int n) {
  struct CUuserObject_st *dead[64];
  int nd = 0;
  pthread_mutex_lock(&g_mu);
  for (int i = 0; i < n; i++) {
    struct CUuserObject_st *o = unref(refs[i].obj, refs[i].count);
    if (o) dead[nd++] = o;
  }
  pthread_mutex_unlock(&g_mu);
  run_destructors(dead, nd);
}

static CUresult f_cuStreamEndCapture(CUstream s, CUgraph *g) {
  char sb[16];
  pthread_mutex_lock(&g_mu);
  log_line("cuStreamEndCapture s=%s", sname(s, sb, sizeof sb));
  int fr = should_fail("cuStreamEndCapture");
  struct CUgraph_st *graph = s ? s->capturing : NULL;
  if (s) s->capturing = NULL;
  pthread_mutex_unlock(&g_mu);
  if (!graph) return CUDA_ERROR_ILLEGAL_STATE;
  if (fr) { /* the capture is lost, with its references */
    drop_refs(graph->refs, graph->nrefs);
    free(graph);
    handle_count(-1);
    *g = NULL;
    return (CUresult)fr;
  }
  *g = graph;
  return CUDA_SUCCESS;
}

static CUresult f_cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long flags) {
  pthread_mutex_lock(&g_mu);
  log_line("cuGraphInstantiateWithFlags g=%d", g ? g->id : -1);
  int fr = should_fail("cuGraphInstantiateWithFlags");
  if (fr) {
    pthread_mutex_unlock(&g_mu);
    return (CUresult)fr;
  }
  struct CUgraphExec_st *x = calloc(1, sizeof *x);
  x->id = g->id;
  g_handles++;
  for (int i = 0; i < g->nrefs; i++) {
    x->refs[x->nrefs++] = g->refs[i];
    g->refs[i].obj->refs += (int)g->refs[i].count;
  }
  pthread_mutex_unlock(&g_mu);
  *e = x;
  return CUDA_SUCCESS;
}

static CUresult f_cuGraphLaunch(CUgraphExec e, CUstream s) {
  char sb[16];
  pthread_mutex_lock(&g_mu);
  log_line("cuGraphLaunch g=%d s=%s", e->id, sname(s, sb, sizeof sb));
  int fr = should_fail("cuGraphLaunch");
  pthread_mutex_unlock(&g_mu);
  return (CUresult)fr;
}

static CUresult f_cuGraphDestroy(CUgraph g) {
  pthread_mutex_lock(&g_mu);
  log_line("cuGraphDestroy g=%d", g->id);
  g_handles--;
  pthread_mutex_unlock(&g_mu);
  drop_refs(g->refs, g->nrefs);
  free(g);
  return CUDA_SUCCESS;
}

static CUresult f_cuGraphExecDestroy(CUgraphExec e) {
  pthread_mutex_lock(&g_mu);
  log_line("cuGraphExecDestroy g=%d", e->id);
  g_handles--;
  pthread_mutex_unlock(&g_mu);
  drop_refs(e->refs, e->nrefs);
  free(e);
  return CUDA_SUCCESS;
}

static CUresult f_cuUserObjectCreate(CUuserObject *o, void *ptr, CUhostFn destroy, unsigned refs, unsigned flags) {
  SIMPLE("cuUserObjectCreate");
  if (flags != CU_USER_OBJECT_NO_DESTRUCTOR_SYNC || !refs || !destroy) return CUDA_ERROR_INVALID_VALUE;
  struct CUuserObject_st *u = calloc(1, sizeof *u);
  u->refs = (int)refs;
  u->ptr = ptr;
  u->destroy = destroy;
  handle_count(1);
  *o = u;
  return CUDA_SUCCESS;
}

static CUresult f_cuUserObjectRelease(CUuserObject o, unsigned count) {
  pthread_mutex_lock(&g_mu);
  log_line("cuUserObjectRelease");
  struct CUuserObject_st *dead = unref(o, count);
  pthread_mutex_unlock(&g_mu);
  if (dead) run_destructors(&dead, 1);
  return CUDA_SUCCESS;
}

static CUresult f_cuGraphRetainUserObject(CUgraph g, CUuserObject o, unsigned count, unsigned flags) {
  pthread_mutex_lock(&g_mu);
  log_line("cuGraphRetainUserObject g=%d flags=%u", g ? g->id : -1, flags);
  int fr = should_fail("cuGraphRetainUserObject");
  if (!fr && (!g || g->nrefs == 64)) fr = CUDA_ERROR_INVALID_VALUE;
  if (!fr) {
    g->refs[g->nrefs++] = (uref){o, count};
    if (!(flags & CU_GRAPH_USER_OBJECT_MOVE)) o->refs += (int)count;
  }
  pthread_mutex_unlock(&g_mu);
  return (CUresult)fr;
}

static CUresult f_cuEventCreate(CUevent *e, unsigned flags) {
  pthread_mutex_lock(&g_mu);
  int fr = should_fail("cuEventCreate");
  if (fr) {
    pthread_mutex_unlock(&g_mu);
    return (CUresult)fr;
  }
  struct CUevent_st *ev = calloc(1, sizeof *ev);
  ev->id = g_next_event++;
  ev->flags = flags;
  g_handles++;
  log_line("cuEventCreate e=e%d flags=%u", ev->id, flags);
  pthread_mutex_unlock(&g_mu);
  *e = ev;
  return CUDA_SUCCESS;
}

static CUresult f_cuEventDestroy(CUevent e) {
  pthread_mutex_lock(&g_mu);
  log_line("cuEventDestroy e=e%d", e->id);
  g_handles--;
  pthread_mutex_unlock(&g_mu);
  free(e);
  return CUDA_SUCCESS;
}

static CUresult record(const char *call, CUevent e, CUstream s, unsigned flags) {
  char sb[16];
  pthread_mutex_lock(&g_mu);
  log_line("%s e=e%d s=%s flags=%u%s", call, e->id, sname(s, sb, sizeof sb), flags, cap(s));
  int fr = should_fail(call);
  /* as CUDA: the external flag only while capturing */
  if (!fr && (flags & CU_EVENT_RECORD_EXTERNAL) && !(s && s->capturing)) fr = CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_unlock(&g_mu);
  return (CUresult)fr;
}

static CUresult f_cuEventRecord(CUevent e, CUstream s) { return record("cuEventRecord", e, s, 0); }
static CUresult f_cuEventRecordWithFlags(CUevent e, CUstream s, unsigned flags) {
  return record("cuEventRecordWithFlags", e, s, flags);
}

static CUresult f_cuEventSynchronize(CUevent e) {
  pthread_mutex_lock(&g_mu);
  log_line("cuEventSynchronize e=e%d", e->id);
  int fr = should_fail("cuEventSynchronize");
  pthread_mutex_unlock(&g_mu);
  return (CUresult)fr;
}

static CUresult f_cuStreamWaitEvent(CUstream s, CUevent e, unsigned flags) {
  char sb[16];
  pthread_mutex_lock(&g_mu);
  log_line("cuStreamWaitEvent s=%s e=e%d flags=%u%s", sname(s, sb, sizeof sb), e->id, flags, cap(s));
  int fr = should_fail("cuStreamWaitEvent");
  if (!fr && (flags & CU_EVENT_WAIT_EXTERNAL) && !(s && s->capturing)) fr = CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_unlock(&g_mu);
  return (CUresult)fr;
}

static CUresult f_cuEventElapsedTime(float *ms, CUevent a, CUevent b) {
  pthread_mutex_lock(&g_mu);
  int fr = should_fail("cuEventElapsedTime");
  *ms = (float)g_last_ms;
  pthread_mutex_unlock(&g_mu);
  return (CUresult)fr;
}

/* Every entry point the runtime resolves (KFR_CU_FUNCS), typed as the
 * runtime types it: a fake whose signature drifts from CUDA's, or a new
 * entry point of the runtime the fake lacks, fails to compile here. */
#define FAKE_TYPED(name, ver) static const PFN_##name##_v##ver p_##name = f_##name;
KFR_CU_FUNCS(FAKE_TYPED)
FAKE_TYPED(cuFuncGetParamInfo, 12040) /* optional in the runtime (kfr_params.c) */
#undef FAKE_TYPED

static const struct {
  const char *name;
  void *fn;
} g_table[] = {
#define FAKE_ENTRY(name, ver) {#name, (void *)p_##name},
    KFR_CU_FUNCS(FAKE_ENTRY)
#undef FAKE_ENTRY
};

static int driver_version(void) {
  const char *e = getenv("FAKE_CUDA_VERSION");
  return e && *e ? atoi(e) : 13000;
}

EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status) {
  *pfn = NULL;
  if (status) *status = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  if (strcmp(symbol, "cuFuncGetParamInfo") == 0) { /* CUDA 12.4 */
    if (driver_version() < 12040 || version < 12040) {
      if (status) *status = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
      return CUDA_ERROR_NOT_FOUND;
    }
    *pfn = (void *)p_cuFuncGetParamInfo;
  }
  for (size_t i = 0; !*pfn && i < sizeof g_table / sizeof g_table[0]; i++)
    if (strcmp(g_table[i].name, symbol) == 0) *pfn = g_table[i].fn;
  if (!*pfn) return CUDA_ERROR_NOT_FOUND;
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v) {
  *v = driver_version();
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorName(CUresult r, const char **s) {
  switch (r) {
  case CUDA_SUCCESS: *s = "CUDA_SUCCESS"; break;
  case CUDA_ERROR_INVALID_VALUE: *s = "CUDA_ERROR_INVALID_VALUE"; break;
  case CUDA_ERROR_OUT_OF_MEMORY: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
  case CUDA_ERROR_NOT_FOUND: *s = "CUDA_ERROR_NOT_FOUND"; break;
  case CUDA_ERROR_ILLEGAL_ADDRESS: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
  case CUDA_ERROR_ILLEGAL_STATE: *s = "CUDA_ERROR_ILLEGAL_STATE"; break;
  case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: *s = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"; break;
  case CUDA_ERROR_UNKNOWN: *s = "CUDA_ERROR_UNKNOWN"; break;
  default: *s = "CUDA_ERROR_FAKE"; break;
  }
  return CUDA_SUCCESS;
}

EXPORT CUresult cuGetErrorString(CUresult r, const char **s) {
  *s = r == CUDA_SUCCESS ? "no error" : "an error of the fake driver (injected, or a call it refuses)";
  return CUDA_SUCCESS;
}

/* ---- cuBLASLt ------------------------------------------------------------------- */

struct cublasLtContext {
  int dummy;
};

EXPORT cublasStatus_t cublasLtCreate(cublasLtHandle_t *h) {
  *h = calloc(1, sizeof **h);
  return *h ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}
EXPORT cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) {
  free(h);
  return CUBLAS_STATUS_SUCCESS;
}
EXPORT size_t cublasLtGetVersion(void) { return 130000; }
EXPORT const char *cublasLtGetStatusName(cublasStatus_t st) {
  return st == CUBLAS_STATUS_SUCCESS ? "CUBLAS_STATUS_SUCCESS" : "CUBLAS_STATUS_FAKE";
}
EXPORT cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *d, cublasComputeType_t c, cudaDataType_t t) {
  *d = calloc(1, sizeof **d);
  return *d ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}
EXPORT cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t d) {
  free(d);
  return CUBLAS_STATUS_SUCCESS;
}
EXPORT cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a,
                                                     const void *buf, size_t n) {
  return CUBLAS_STATUS_SUCCESS;
}
EXPORT cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *l, cudaDataType t, uint64_t rows,
                                                 uint64_t cols, int64_t ld) {
  *l = calloc(1, sizeof **l);
  return *l ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}
EXPORT cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t l) {
  free(l);
  return CUBLAS_STATUS_SUCCESS;
}
EXPORT cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t l, cublasLtMatrixLayoutAttribute_t a,
                                                       const void *buf, size_t n) {
  return CUBLAS_STATUS_SUCCESS;
}
/* the preference keeps the four minimum alignments in data[0..3] */
EXPORT cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *p) {
  *p = calloc(1, sizeof **p);
  if (!*p) return CUBLAS_STATUS_ALLOC_FAILED;
  for (int i = 0; i < 4; i++) (*p)->data[i] = 256;
  return CUBLAS_STATUS_SUCCESS;
}
EXPORT cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t p) {
  free(p);
  return CUBLAS_STATUS_SUCCESS;
}
EXPORT cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t p,
                                                           cublasLtMatmulPreferenceAttributes_t a, const void *buf,
                                                           size_t n) {
  int i = a == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES   ? 0
          : a == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES ? 1
          : a == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES ? 2
          : a == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES ? 3
                                                            : -1;
  if (i >= 0 && n == sizeof(uint32_t)) {
    uint32_t v;
    memcpy(&v, buf, sizeof v);
    p->data[i] = v;
  }
  return CUBLAS_STATUS_SUCCESS;
}
EXPORT cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t op,
                                                     cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
                                                     cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
                                                     cublasLtMatmulPreference_t pref, int requested,
                                                     cublasLtMatmulHeuristicResult_t res[], int *found) {
  uint64_t lo = 256;
  for (int i = 0; i < 4; i++)
    if (pref->data[i] < lo) lo = pref->data[i];
  int n = requested < 3 ? requested : 3;
  for (int i = 0; i < n; i++) {
    memset(&res[i], 0, sizeof res[i]);
    res[i].algo.data[0] = lo * 1000 + (uint64_t)i;
    res[i].state = CUBLAS_STATUS_SUCCESS;
    res[i].wavesCount = 1.0f;
  }
  *found = n;
  pthread_mutex_lock(&g_mu);
  log_line("cublasLtMatmulAlgoGetHeuristic requested=%d align=%llu", requested, (unsigned long long)lo);
  pthread_mutex_unlock(&g_mu);
  return CUBLAS_STATUS_SUCCESS;
}
EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t op, const void *alpha, const void *A,
                                     cublasLtMatrixLayout_t ad, const void *B, cublasLtMatrixLayout_t bd,
                                     const void *beta, const void *C, cublasLtMatrixLayout_t cd, void *D,
                                     cublasLtMatrixLayout_t dd, const cublasLtMatmulAlgo_t *algo, void *ws,
                                     size_t wsb, cudaStream_t stream) {
  char sb[16];
  CUstream s = (CUstream)stream;
  uint64_t tag = algo ? algo->data[0] : 0;
  pthread_mutex_lock(&g_mu);
  log_line("cublasLtMatmul algo=%llu s=%s%s", (unsigned long long)tag, sname(s, sb, sizeof sb), cap(s));
  g_last_ms = tag % 1000 == 2 ? 0.5 : 1.0;
  pthread_mutex_unlock(&g_mu);
  return CUBLAS_STATUS_SUCCESS;
}

/* ---- cuDNN 9 (the legacy calls runtime/kfr_int.h declares) -------------------- */

typedef struct fake_dnn {
  CUstream stream;
} fake_dnn;
typedef struct fake_desc {
  int nb, dim[8], pad[3], stride[3], dil[3], groups;
} fake_desc;

static void dnn_log(const char *call, const fake_dnn *h) {
  char sb[16];
  pthread_mutex_lock(&g_mu);
  log_line("%s s=%s%s", call, sname(h->stream, sb, sizeof sb), cap(h->stream));
  pthread_mutex_unlock(&g_mu);
}

EXPORT size_t cudnnGetVersion(void) {
  const char *v = getenv("FAKE_CUDNN_VERSION");
  return v && *v ? (size_t)strtoul(v, NULL, 10) : 91000;
}
EXPORT const char *cudnnGetErrorString(int st) { return st ? "CUDNN_STATUS_FAKE" : "CUDNN_STATUS_SUCCESS"; }
EXPORT int cudnnCreate(void **h) {
  *h = calloc(1, sizeof(fake_dnn));
  return *h ? 0 : 1;
}
EXPORT int cudnnDestroy(void *h) {
  free(h);
  return 0;
}
EXPORT int cudnnSetStream(void *h, CUstream s) {
  char sb[16];
  ((fake_dnn *)h)->stream = s;
  pthread_mutex_lock(&g_mu);
  log_line("cudnnSetStream s=%s", sname(s, sb, sizeof sb));
  pthread_mutex_unlock(&g_mu);
  return 0;
}
static int desc_create(void **d) {
  *d = calloc(1, sizeof(fake_desc));
  return *d ? 0 : 1;
}
static int desc_destroy(void *d) {
  free(d);
  return 0;
}
EXPORT int cudnnCreateTensorDescriptor(void **d) { return desc_create(d); }
EXPORT int cudnnDestroyTensorDescriptor(void *d) { return desc_destroy(d); }
EXPORT int cudnnCreateFilterDescriptor(void **d) { return desc_create(d); }
EXPORT int cudnnDestroyFilterDescriptor(void *d) { return desc_destroy(d); }
EXPORT int cudnnCreateConvolutionDescriptor(void **d) { return desc_create(d); }
EXPORT int cudnnDestroyConvolutionDescriptor(void *d) { return desc_destroy(d); }
EXPORT int cudnnCreateActivationDescriptor(void **d) { return desc_create(d); }
EXPORT int cudnnDestroyActivationDescriptor(void *d) { return desc_destroy(d); }
EXPORT int cudnnSetTensorNdDescriptor(void *d, int dt, int nb, const int *dim, const int *str) {
  fake_desc *f = d;
  f->nb = nb;
  for (int i = 0; i < nb && i < 8; i++) f->dim[i] = dim[i];
  return 0;
}
EXPORT int cudnnSetFilterNdDescriptor(void *d, int dt, int fmt, int nb, const int *dim) {
  return cudnnSetTensorNdDescriptor(d, dt, nb, dim, NULL);
}
EXPORT int cudnnSetConvolutionNdDescriptor(void *d, int sp, const int *pad, const int *stride, const int *dil,
                                           int mode, int dt) {
  fake_desc *f = d;
  f->nb = sp;
  for (int i = 0; i < sp && i < 3; i++) {
    f->pad[i] = pad[i];
    f->stride[i] = stride[i];
    f->dil[i] = dil[i];
  }
  return 0;
}
EXPORT int cudnnSetConvolutionMathType(void *d, int m) { return 0; }
EXPORT int cudnnSetConvolutionGroupCount(void *d, int g) {
  ((fake_desc *)d)->groups = g;
  return 0;
}
EXPORT int cudnnSetActivationDescriptor(void *d, int mode, int nan, double coef) { return 0; }
EXPORT int cudnnGetConvolutionNdForwardOutputDim(void *cd, void *xd, void *wd, int nb, int *out) {
  const fake_desc *c = cd, *x = xd, *w = wd;
  out[0] = x->dim[0];
  out[1] = w->dim[0];
  for (int i = 2; i < nb; i++) {
    int k = i - 2;
    out[i] = (x->dim[i] + 2 * c->pad[k] - c->dil[k] * (w->dim[i] - 1) - 1) / c->stride[k] + 1;
  }
  return 0;
}
typedef struct fake_perf {
  int algo, status;
  float time;
  size_t memory;
  int determinism, math_type, reserved[3];
} fake_perf;
static void perf_list(fake_perf *p, int *found) {
  memset(p, 0, 2 * sizeof *p);
  p[0].algo = 1;
  p[1].algo = 0;
  p[0].time = 0.5f;
  p[1].time = 1.0f;
  *found = 2;
}
EXPORT int cudnnGetConvolutionForwardAlgorithm_v7(void *h, void *x, void *w, void *c, void *y, int n, int *found,
                                                  fake_perf *p) {
  dnn_log("cudnnGetConvolutionForwardAlgorithm_v7", h);
  perf_list(p, found);
  return 0;
}
EXPORT int cudnnGetConvolutionBackwardDataAlgorithm_v7(void *h, void *w, void *dy, void *c, void *dx, int n,
                                                       int *found, fake_perf *p) {
  perf_list(p, found);
  return 0;
}
EXPORT int cudnnFindConvolutionForwardAlgorithmEx(void *h, void *xd, const void *x, void *wd, const void *w,
                                                  void *cd, void *yd, void *y, int n, int *found, fake_perf *p,
                                                  void *ws, size_t wsb) {
  dnn_log("cudnnFindConvolutionForwardAlgorithmEx", h);
  perf_list(p, found);
  return 0;
}
EXPORT int cudnnFindConvolutionBackwardDataAlgorithmEx(void *h, void *wd, const void *w, void *dyd, const void *dy,
                                                       void *cd, void *dxd, void *dx, int n, int *found,
                                                       fake_perf *p, void *ws, size_t wsb) {
  dnn_log("cudnnFindConvolutionBackwardDataAlgorithmEx", h);
  perf_list(p, found);
  return 0;
}
EXPORT int cudnnGetConvolutionForwardWorkspaceSize(void *h, void *x, void *w, void *c, void *y, int algo,
                                                   size_t *n) {
  *n = 0;
  return 0;
}
EXPORT int cudnnConvolutionForward(void *h, const void *a, void *xd, const void *x, void *wd, const void *w,
                                   void *cd, int algo, void *ws, size_t wsb, const void *b, void *yd, void *y) {
  dnn_log("cudnnConvolutionForward", h);
  return 0;
}
EXPORT int cudnnConvolutionBiasActivationForward(void *h, const void *a1, void *xd, const void *x, void *wd,
                                                 const void *w, void *cd, int algo, void *ws, size_t wsb,
                                                 const void *a2, void *zd, const void *z, void *bd, const void *b,
                                                 void *ad, void *yd, void *y) {
  dnn_log("cudnnConvolutionBiasActivationForward", h);
  return 0;
}
EXPORT int cudnnConvolutionBackwardData(void *h, const void *a, void *wd, const void *w, void *dyd, const void *dy,
                                        void *cd, int algo, void *ws, size_t wsb, const void *b, void *dxd,
                                        void *dx) {
  dnn_log("cudnnConvolutionBackwardData", h);
  return 0;
}
