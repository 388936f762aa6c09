/* kfr_driver.c — finds the CUDA driver and cuBLASLt at run time.
 *
 * Modules must start on machines without a GPU (and report that clearly),
 * so neither library is a link-time dependency: libcuda.so.1 is opened with
 * dlopen and its entry points come from cuGetProcAddress_v2; cuBLASLt is
 * opened only when a model has a GEMM step. Both are loaded once per
 * process and never closed (other instances may be using them); a failed
 * attempt leaves nothing behind, so a later create tries again.
 *
 * Environment: KFUSE_LIBCUDA overrides the driver library (tests use it to
 * point at a missing file, the toolkit's stub or tests/fake's driver);
 * KFUSE_CUBLASLT names the cuBLASLt library to use instead of searching.
 * Every variable is read with secure_getenv: in a set-user-ID or
 * set-group-ID program they are all ignored, so an unprivileged caller
 * cannot point a privileged one at a library of its choosing. */
#include <dlfcn.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfr_int.h"

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static kfr_driver g_cu;
static int g_cu_ready;
static kfr_cublaslt g_lt;
static int g_lt_ready;

const char *kfr_cu_describe(const kfr_driver *d, CUresult r, char *buf,
                            size_t n) {
  const char *name = NULL, *text = NULL;
  if (d && d->errname && d->errname(r, &name) != CUDA_SUCCESS)
    name = NULL;
  if (d && d->errstring && d->errstring(r, &text) != CUDA_SUCCESS)
    text = NULL;
  if (name)
    snprintf(buf, n, "%s (%s)", name, text ? text : "no description");
  else if (r == CUDA_ERROR_STUB_LIBRARY)
    snprintf(buf, n, "CUDA error 34 (this libcuda.so.1 is the toolkit's stub, "
             "not an NVIDIA driver)");
  else
    snprintf(buf, n, "CUDA error %d", (int)r);
  return buf;
}

int kfr_time3(const kfr_driver *cu, CUstream stream, CUevent ev[2], kfr_timed_call call, void *ctx, float *ms) {
  float t[3];
  for (int rep = -1; rep < 3; rep++) {
    if (rep >= 0 && cu->cuEventRecord(ev[0], stream) != CUDA_SUCCESS)
      return -1;
    if (call(ctx))
      return 1;
    if (rep >= 0 && (cu->cuEventRecord(ev[1], stream) != CUDA_SUCCESS || cu->cuEventSynchronize(ev[1]) != CUDA_SUCCESS ||
                     cu->cuEventElapsedTime(&t[rep], ev[0], ev[1]) != CUDA_SUCCESS))
      return -1;
  }
  /* the median of the three */
  float lo = t[0] < t[1] ? t[0] : t[1], hi = t[0] < t[1] ? t[1] : t[0];
  *ms = t[2] < lo ? lo : t[2] > hi ? hi : t[2];
  return 0;
}

static int driver_fail(void *h, char *msg, size_t n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int driver_fail(void *h, char *msg, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, n, fmt, ap);
  va_end(ap);
  if (h)
    dlclose(h);
  memset(&g_cu, 0, sizeof g_cu);
  return KFUSE_ENODRIVER;
}

/* Called with g_lock held. */
static int load_driver(char *msg, size_t n) {
  const char *path = secure_getenv("KFUSE_LIBCUDA");
  if (!path || !*path)
    path = "libcuda.so.1";
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    return driver_fail(NULL, msg, n, "no CUDA driver: cannot load %s (%s); "
                       "is an NVIDIA driver installed?", path, e ? e : "?");
  }
  PFN_cuGetProcAddress_v12000 getproc =
      (PFN_cuGetProcAddress_v12000)dlsym(h, "cuGetProcAddress_v2");
  PFN_cuDriverGetVersion_v2020 getversion =
      (PFN_cuDriverGetVersion_v2020)dlsym(h, "cuDriverGetVersion");
  g_cu.errname = (PFN_cuGetErrorName_v6000)dlsym(h, "cuGetErrorName");
  g_cu.errstring = (PFN_cuGetErrorString_v6000)dlsym(h, "cuGetErrorString");
  if (!getproc || !getversion)
    return driver_fail(h, msg, n, "the CUDA driver %s is too old (no "
                       "cuGetProcAddress_v2); CUDA 12 or newer is needed", path);
  char why[256];
  CUresult r = getversion(&g_cu.version);
  if (r != CUDA_SUCCESS)
    return driver_fail(h, msg, n, "no usable CUDA driver: cuDriverGetVersion "
                       "failed: %s", kfr_cu_describe(&g_cu, r, why, sizeof why));
  if (g_cu.version < KFR_CU_ABI)
    return driver_fail(h, msg, n, "the CUDA driver supports CUDA %d.%d; kfuse "
                       "modules need 12.0 or newer", g_cu.version / 1000,
                       g_cu.version % 1000 / 10);
  CUdriverProcAddressQueryResult found;
  void *p;
#define KFR_CU_RESOLVE(name, ver)                                             \
  p = NULL;                                                                   \
  r = getproc(#name, &p, KFR_CU_ABI, CU_GET_PROC_ADDRESS_DEFAULT, &found);    \
  if (r != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS || !p)        \
    return driver_fail(h, msg, n, "the CUDA driver (CUDA %d.%d) has no %s: "  \
                       "%s", g_cu.version / 1000, g_cu.version % 1000 / 10,   \
                       #name, r != CUDA_SUCCESS                               \
                           ? kfr_cu_describe(&g_cu, r, why, sizeof why)       \
                           : "symbol not found for this version");            \
  g_cu.name = (PFN_##name##_v##ver)p;
  KFR_CU_FUNCS(KFR_CU_RESOLVE)
#undef KFR_CU_RESOLVE
  /* optional (CUDA 12.4): without it launches are not checked against
   * their kernels' parameters (kfr_params.c) */
  if (g_cu.version >= 12040) {
    p = NULL;
    r = getproc("cuFuncGetParamInfo", &p, 12040, CU_GET_PROC_ADDRESS_DEFAULT,
                &found);
    if (r == CUDA_SUCCESS && found == CU_GET_PROC_ADDRESS_SUCCESS && p)
      g_cu.cuFuncGetParamInfo = (PFN_cuFuncGetParamInfo_v12040)p;
  }
  /* optional, all or none: virtual memory management (the judge's guarded
   * buffers) */
  g_cu.has_vmm = 1;
#define KFR_CU_RESOLVE_OPT(name, ver)                                         \
  p = NULL;                                                                   \
  r = getproc(#name, &p, KFR_CU_ABI, CU_GET_PROC_ADDRESS_DEFAULT, &found);    \
  if (r == CUDA_SUCCESS && found == CU_GET_PROC_ADDRESS_SUCCESS && p)         \
    g_cu.name = (PFN_##name##_v##ver)p;                                       \
  else                                                                        \
    g_cu.has_vmm = 0;
  KFR_CU_VMM(KFR_CU_RESOLVE_OPT)
#undef KFR_CU_RESOLVE_OPT
  r = g_cu.cuInit(0);
  if (r != CUDA_SUCCESS)
    return driver_fail(h, msg, n, "no usable GPU: cuInit failed: %s",
                       kfr_cu_describe(&g_cu, r, why, sizeof why));
  return KFUSE_OK; /* h stays open for the life of the process */
}

int kfr_driver_load(const kfr_driver **out, char *msg, size_t n) {
  int rc = KFUSE_OK;
  pthread_mutex_lock(&g_lock);
  if (!g_cu_ready) {
    rc = load_driver(msg, n);
    g_cu_ready = rc == KFUSE_OK;
  }
  pthread_mutex_unlock(&g_lock);
  *out = rc == KFUSE_OK ? &g_cu : NULL;
  return rc;
}

/* ---- finding a CUDA library --------------------------------------------- */

void kfr_lib_tried(char *tried, size_t tn, const char *path, const char *fmt,
                   ...) {
  size_t used = strnlen(tried, tn);
  if (used + 1 >= tn)
    return;
  int k = snprintf(tried + used, tn - used, "%s%s (", used ? "; " : "", path);
  if (k < 0 || (size_t)k >= tn - used)
    return;
  used += (size_t)k;
  va_list ap;
  va_start(ap, fmt);
  k = vsnprintf(tried + used, tn - used, fmt, ap);
  va_end(ap);
  if (k < 0 || (size_t)k >= tn - used)
    return;
  used += (size_t)k;
  snprintf(tried + used, tn - used, ")");
}

/* Newest first: descending version order (strverscmp: python3.12 before
 * python3.9, cu13 before cu12), independent of the locale and of the
 * order the file system lists a directory in. */
static int newest_first(const void *a, const void *b) {
  return strverscmp(*(const char *const *)b, *(const char *const *)a);
}

/* try_path on every match of prefix + pattern, newest first (nothing when
 * prefix is an unset variable or the pattern does not fit). */
static int try_glob(const char *prefix, const char *pattern,
                    kfr_lib_try try_path, char *tried, size_t tn) {
  if (!prefix || !*prefix)
    return 0;
  char pat[1024];
  if (snprintf(pat, sizeof pat, "%s%s", prefix, pattern) >= (int)sizeof pat)
    return 0;
  glob_t g;
  memset(&g, 0, sizeof g);
  int ok = 0;
  /* sorted here, not by glob: glob sorts each brace alternative apart and
   * by the locale's collation */
  if (glob(pat, GLOB_BRACE | GLOB_NOSORT, NULL, &g) == 0) {
    qsort(g.gl_pathv, g.gl_pathc, sizeof *g.gl_pathv, newest_first);
    for (size_t i = 0; i < g.gl_pathc && !ok; i++)
      ok = try_path(g.gl_pathv[i], tried, tn);
  }
  globfree(&g);
  return ok;
}

int kfr_lib_search(const char *soname, const char *pip_dirs,
                   kfr_lib_try try_path, char *tried, size_t tn) {
  /* by soname first: also finds the copy PyTorch already loaded */
  if (try_path(soname, tried, tn))
    return 1;
  char lib64[256], site[512], user[512], local[512], dist[512], opt[512];
  int k = 0;
  k |= snprintf(lib64, sizeof lib64, "/lib64/%s", soname) >= (int)sizeof lib64;
  k |= snprintf(site, sizeof site, "/lib/python3*/{site,dist}-packages/"
                "nvidia/%s/lib/%s", pip_dirs, soname) >= (int)sizeof site;
  k |= snprintf(user, sizeof user, "/.local/lib/python3*/site-packages/"
                "nvidia/%s/lib/%s", pip_dirs, soname) >= (int)sizeof user;
  k |= snprintf(local, sizeof local, "/local/lib/python3*/dist-packages/"
                "nvidia/%s/lib/%s", pip_dirs, soname) >= (int)sizeof local;
  k |= snprintf(dist, sizeof dist, "/lib/python3/dist-packages/nvidia/%s/"
                "lib/%s", pip_dirs, soname) >= (int)sizeof dist;
  k |= snprintf(opt, sizeof opt, "/*/{.venv/,}lib/python3*/site-packages/"
                "nvidia/%s/lib/%s", pip_dirs, soname) >= (int)sizeof opt;
  if (k) {
    kfr_lib_tried(tried, tn, soname, "name too long to search for");
    return 0;
  }
  return try_glob(secure_getenv("CUDA_HOME"), lib64, try_path, tried, tn) ||
         try_glob(secure_getenv("CUDA_PATH"), lib64, try_path, tried, tn) ||
         try_glob("/usr/local/cuda", lib64, try_path, tried, tn) ||
         try_glob(secure_getenv("VIRTUAL_ENV"), site, try_path, tried, tn) ||
         try_glob(secure_getenv("CONDA_PREFIX"), site, try_path, tried, tn) ||
         try_glob(secure_getenv("HOME"), user, try_path, tried, tn) ||
         try_glob("/usr", local, try_path, tried, tn) ||
         try_glob("/usr", dist, try_path, tried, tn) ||
         try_glob("/opt", opt, try_path, tried, tn);
}

/* ---- cuBLASLt ------------------------------------------------------------ */

#define LT_SONAME "libcublasLt.so.13"

/* Try one path; on success resolve everything. Called with g_lock held. */
static int try_lt(const char *path, char *tried, size_t tn) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    kfr_lib_tried(tried, tn, path, "%s", e ? e : "?");
    return 0;
  }
  void *p;
#define KFR_LT_RESOLVE(name)                                                 \
  p = dlsym(h, #name);                                                       \
  if (!p) {                                                                  \
    kfr_lib_tried(tried, tn, path, "no %s", #name);                          \
    dlclose(h);                                                              \
    memset(&g_lt, 0, sizeof g_lt);                                           \
    return 0;                                                                \
  }                                                                          \
  g_lt.name = (__typeof__(name) *)p;
  KFR_LT_FUNCS(KFR_LT_RESOLVE)
#undef KFR_LT_RESOLVE
  snprintf(g_lt.path, sizeof g_lt.path, "%s", path);
  return 1; /* h stays open for the life of the process */
}

static int load_lt(char *msg, size_t n) {
  char tried[2048] = "";
  const char *env = secure_getenv("KFUSE_CUBLASLT");
  if (env && *env) {
    if (try_lt(env, tried, sizeof tried))
      return KFUSE_OK;
    snprintf(msg, n, "cannot load cuBLASLt from KFUSE_CUBLASLT: %s", tried);
    return KFUSE_ELIBRARY;
  }
  if (kfr_lib_search(LT_SONAME, "{cu13,cublas}", try_lt, tried, sizeof tried))
    return KFUSE_OK;
  snprintf(msg, n, "cannot load cuBLASLt (" LT_SONAME ") for the model's GEMM "
           "steps; tried %s; set KFUSE_CUBLASLT to its path", tried);
  return KFUSE_ELIBRARY;
}

int kfr_cublaslt_load(const kfr_cublaslt **out, char *msg, size_t n) {
  int rc = KFUSE_OK;
  pthread_mutex_lock(&g_lock);
  if (!g_lt_ready) {
    rc = load_lt(msg, n);
    g_lt_ready = rc == KFUSE_OK;
  }
  pthread_mutex_unlock(&g_lock);
  *out = rc == KFUSE_OK ? &g_lt : NULL;
  return rc;
}
