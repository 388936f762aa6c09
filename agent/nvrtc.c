/* agent/nvrtc.c — compiling kernel units to cubins with NVRTC.
 *
 * NVRTC is loaded at run time with dlopen, never linked, so kfuse starts on
 * machines without the CUDA toolkit and only compiling needs it. Search
 * order: the loader's path ("libnvrtc.so.13"), then $CUDA_HOME/lib64 and
 * /usr/local/cuda/lib64. nvrtc.h is used for its types only.
 *
 * Every unit is compiled with the embedded template headers (kf_*.cuh)
 * passed as in-memory headers, for the real target arch (sm_XX, or sm_XXa
 * when arch-specific features are allowed), C++17, -default-device, and
 * without --use_fast_math: the templates implement PyTorch's numerics,
 * which fast math would change. */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nvrtc.h>

#include "agent_int.h"

typedef nvrtcResult (*pfn_create)(nvrtcProgram *, const char *, const char *, int,
                                  const char *const *, const char *const *);
typedef nvrtcResult (*pfn_compile)(nvrtcProgram, int, const char *const *);
typedef nvrtcResult (*pfn_size)(nvrtcProgram, size_t *);
typedef nvrtcResult (*pfn_get)(nvrtcProgram, char *);
typedef nvrtcResult (*pfn_destroy)(nvrtcProgram *);
typedef const char *(*pfn_errstr)(nvrtcResult);
typedef nvrtcResult (*pfn_version)(int *, int *);

static struct {
  void *lib;
  char where[640];
  char error[1024];
  pfn_create create;
  pfn_compile compile;
  pfn_size log_size, cubin_size;
  pfn_get log, cubin;
  pfn_destroy destroy;
  pfn_errstr errstr;
  pfn_version version;
} nv;

static pthread_once_t nv_once = PTHREAD_ONCE_INIT;

static void *try_open(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (h) snprintf(nv.where, sizeof nv.where, "%s", path);
  return h;
}

static void nv_load(void) {
  const char *name = "libnvrtc.so.13";
  void *h = try_open(name);
  char path[600];
  const char *home = getenv("CUDA_HOME");
  if (!h && home && *home) {
    snprintf(path, sizeof path, "%s/lib64/%s", home, name);
    h = try_open(path);
  }
  if (!h) {
    snprintf(path, sizeof path, "/usr/local/cuda/lib64/%s", name);
    h = try_open(path);
  }
  if (!h) {
    snprintf(nv.error, sizeof nv.error,
             "NVRTC (%s) not found: looked on the loader path, in $CUDA_HOME/lib64 and in "
             "/usr/local/cuda/lib64; install the CUDA 13 toolkit's NVRTC or set CUDA_HOME",
             name);
    return;
  }
  struct { const char *sym; void **slot; } syms[] = {
    {"nvrtcCreateProgram", (void **)&nv.create},
    {"nvrtcCompileProgram", (void **)&nv.compile},
    {"nvrtcGetProgramLogSize", (void **)&nv.log_size},
    {"nvrtcGetProgramLog", (void **)&nv.log},
    {"nvrtcGetCUBINSize", (void **)&nv.cubin_size},
    {"nvrtcGetCUBIN", (void **)&nv.cubin},
    {"nvrtcDestroyProgram", (void **)&nv.destroy},
    {"nvrtcGetErrorString", (void **)&nv.errstr},
    {"nvrtcVersion", (void **)&nv.version},
  };
  for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
    *syms[i].slot = dlsym(h, syms[i].sym);
    if (!*syms[i].slot) {
      snprintf(nv.error, sizeof nv.error, "%s: symbol %s missing", nv.where, syms[i].sym);
      dlclose(h);
      return;
    }
  }
  nv.lib = h;
}

static const char *rstr(nvrtcResult r) {
  const char *s = nv.errstr ? nv.errstr(r) : NULL;
  return s ? s : "unknown NVRTC error";
}

/* The embedded headers, for nvrtcCreateProgram. */
static int header_list(const char ***texts, const char ***names) {
  int n = 0;
  for (int i = 0; i < kf_n_templates; i++) {
    size_t l = strlen(kf_templates[i].name);
    if (l > 4 && strcmp(kf_templates[i].name + l - 4, ".cuh") == 0) n++;
  }
  *texts = calloc((size_t)n + 1, sizeof **texts);
  *names = calloc((size_t)n + 1, sizeof **names);
  if (!*texts || !*names) return -1;
  int k = 0;
  for (int i = 0; i < kf_n_templates; i++) {
    size_t l = strlen(kf_templates[i].name);
    if (l > 4 && strcmp(kf_templates[i].name + l - 4, ".cuh") == 0) {
      (*texts)[k] = kf_templates[i].text;
      (*names)[k] = kf_templates[i].name;
      k++;
    }
  }
  return n;
}

/* Compile `source` (named `name` in messages) into a cubin. */
static kf_status compile_source(const char *name, const char *source, const kf_target *t,
                                void **cubin, size_t *cubin_bytes, char **log_out,
                                kf_diag *diag) {
  *cubin = NULL;
  *cubin_bytes = 0;
  *log_out = NULL;
  pthread_once(&nv_once, nv_load);
  if (!nv.lib) {
    kf_diag_error(diag, "unit %s: cannot compile: %s", name, nv.error);
    return KF_ERR_UNSUPPORTED;
  }
  if (!t || t->sm < 50 || t->sm > 999) {
    kf_diag_error(diag, "unit %s: invalid target sm_%d", name, t ? t->sm : 0);
    return KF_ERR_ARG;
  }
  const char **htexts = NULL, **hnames = NULL;
  int nh = header_list(&htexts, &hnames);
  nvrtcProgram prog = NULL;
  kf_status st = KF_OK;
  char *log = NULL;
  if (nh < 0) {
    st = KF_ERR_NOMEM;
    goto done;
  }
  char prog_name[160];
  snprintf(prog_name, sizeof prog_name, "%s.cu", name);
  nvrtcResult r = nv.create(&prog, source, prog_name, nh, htexts, hnames);
  if (r != NVRTC_SUCCESS) {
    kf_diag_error(diag, "unit %s: nvrtcCreateProgram: %s", name, rstr(r));
    st = r == NVRTC_ERROR_OUT_OF_MEMORY ? KF_ERR_NOMEM : KF_ERR_INTERNAL;
    goto done;
  }
  char arch[48];
  snprintf(arch, sizeof arch, "--gpu-architecture=sm_%d%s", t->sm, t->arch_specific ? "a" : "");
  const char *opts[] = {arch, "-std=c++17", "-default-device"};
  nvrtcResult cr = nv.compile(prog, (int)(sizeof opts / sizeof opts[0]), opts);
  size_t lsz = 0;
  r = nv.log_size(prog, &lsz);
  if (r != NVRTC_SUCCESS) {
    kf_diag_error(diag, "unit %s: nvrtcGetProgramLogSize: %s", name, rstr(r));
    st = KF_ERR_INTERNAL;
    goto done;
  }
  log = malloc(lsz + 1);
  if (!log) {
    st = KF_ERR_NOMEM;
    goto done;
  }
  log[0] = '\0';
  if (lsz > 0 && (r = nv.log(prog, log)) != NVRTC_SUCCESS) {
    kf_diag_error(diag, "unit %s: nvrtcGetProgramLog: %s", name, rstr(r));
    st = KF_ERR_INTERNAL;
    goto done;
  }
  log[lsz] = '\0';
  if (cr != NVRTC_SUCCESS) {
    kf_diag_error(diag, "unit %s: NVRTC failed to compile for sm_%d%s (%s):\n%s", name, t->sm,
                  t->arch_specific ? "a" : "", rstr(cr), log);
    st = KF_ERR_INVALID;
    goto done;
  }
  size_t csz = 0;
  if ((r = nv.cubin_size(prog, &csz)) != NVRTC_SUCCESS || csz == 0) {
    kf_diag_error(diag, "unit %s: nvrtcGetCUBINSize: %s", name,
                  r != NVRTC_SUCCESS ? rstr(r) : "empty cubin");
    st = KF_ERR_INTERNAL;
    goto done;
  }
  char *bin = malloc(csz);
  if (!bin) {
    st = KF_ERR_NOMEM;
    goto done;
  }
  if ((r = nv.cubin(prog, bin)) != NVRTC_SUCCESS) {
    free(bin);
    kf_diag_error(diag, "unit %s: nvrtcGetCUBIN: %s", name, rstr(r));
    st = KF_ERR_INTERNAL;
    goto done;
  }
  *cubin = bin;
  *cubin_bytes = csz;
done:
  if (prog && (r = nv.destroy(&prog)) != NVRTC_SUCCESS && st == KF_OK) {
    kf_diag_error(diag, "unit %s: nvrtcDestroyProgram: %s", name, rstr(r));
    st = KF_ERR_INTERNAL;
  }
  if (st == KF_OK || st == KF_ERR_INVALID) {
    *log_out = log;
    log = NULL;
  }
  if (st != KF_OK) {
    free(*cubin);
    *cubin = NULL;
    *cubin_bytes = 0;
  }
  free(log);
  free(htexts);
  free(hnames);
  return st;
}

kf_status kf_unit_compile(kf_unit *u, const kf_target *t, kf_diag *diag) {
  if (!u) return KF_ERR_ARG;
  if (!u->source) return KF_OK;
  free(u->cubin);
  free(u->compile_log);
  u->cubin = NULL;
  u->cubin_bytes = 0;
  u->compile_log = NULL;
  return compile_source(u->name ? u->name : "unit", u->source, t, &u->cubin, &u->cubin_bytes,
                        &u->compile_log, diag);
}

bool kf_nvrtc_available(char *why, size_t n) {
  pthread_once(&nv_once, nv_load);
  if (!nv.lib && why && n) snprintf(why, n, "%s", nv.error);
  return nv.lib != NULL;
}
