/* agent/nvrtc.c — compiling kernel units to cubins with NVRTC.
 *
 * NVRTC is loaded at run time with dlopen, never linked, so kfuse starts on
 * machines without the CUDA toolkit and only compiling needs it. Search
 * order: $KFUSE_NVRTC_LIBRARY when set (that file and nothing else), the
 * loader's path ("libnvrtc.so.13"), then $CUDA_HOME/lib64 and
 * /usr/local/cuda/lib64. nvrtc.h is used for its types only, cuda.h for the
 * version kfuse was built against.
 *
 * Every unit is compiled with the embedded template headers (kf_*.cuh)
 * passed as in-memory headers, for the real target arch (sm_XX, or sm_XXa
 * when arch-specific features are allowed), C++17, -default-device, and
 * without --use_fast_math: the templates implement PyTorch's numerics,
 * which fast math would change.
 *
 * A unit's source is untrusted: kf_unit_source_check (unit_source.c)
 * refuses it before NVRTC runs unless every #include names kfuse's headers
 * or the toolkit's device headers. A unit that includes a toolkit header
 * (cuda_fp16.h, mma.h, cuda/pipeline, ...) gets the toolkit's include
 * folder (and its cccl/ folder, where CUDA 13 keeps libcu++) on the include
 * path: $CUDA_HOME/include, $CUDA_PATH/include, the include folder beside
 * the NVRTC that loaded (lib64/../include, also pip's nvidia/cu13 layout),
 * /usr/local/cuda/include, /usr/include; the first holding cuda_fp16.h.
 * Other units compile without one. What NVRTC says goes back to the policy
 * reduced to what concerns the unit (reduce_log): the lines about the
 * unit's own source (with its own line quoted from the unit, not from the
 * compiler) and kfuse's headers, ptxas's lines, and the toolkit's headers
 * named by their path under <cuda>/; nothing the compiler quoted from
 * another file, and no host path. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cuda.h>
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
  const char *forced = secure_getenv("KFUSE_NVRTC_LIBRARY");
  void *h = NULL;
  if (forced && *forced) {
    h = try_open(forced);
    if (!h) {
      const char *e = dlerror();
      snprintf(nv.error, sizeof nv.error, "NVRTC not loaded from $KFUSE_NVRTC_LIBRARY (%s): %s", forced,
               e ? e : "dlopen failed");
      return;
    }
  } else {
    h = try_open(name);
  }
  char path[600];
  const char *home = secure_getenv("CUDA_HOME");
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

/* ---- the toolkit's headers ---- */

static pthread_once_t inc_once = PTHREAD_ONCE_INIT;
static char inc_dir[PATH_MAX], inc_cccl[PATH_MAX + 8];

static bool has_fp16(const char *dir) {
  char p[PATH_MAX + 32];
  snprintf(p, sizeof p, "%s/cuda_fp16.h", dir);
  return access(p, R_OK) == 0;
}

static void inc_try(const char *dir) {
  if (inc_dir[0] || !dir || !*dir) return;
  char real[PATH_MAX];
  if (!realpath(dir, real) || !has_fp16(real)) return;
  snprintf(inc_dir, sizeof inc_dir, "%s", real);
  char c[PATH_MAX + 16];
  snprintf(c, sizeof c, "%s/cccl/cuda/std", real);
  if (access(c, R_OK) == 0) snprintf(inc_cccl, sizeof inc_cccl, "%s/cccl", real);
}

static void inc_find(void) {
  char d[PATH_MAX + 16];
  const char *envs[] = {"CUDA_HOME", "CUDA_PATH"};
  for (int i = 0; i < 2; i++) {
    const char *e = secure_getenv(envs[i]);
    if (e && *e) {
      snprintf(d, sizeof d, "%s/include", e);
      inc_try(d);
    }
  }
  Dl_info info;
  if (nv.lib && dladdr((void *)nv.create, &info) && info.dli_fname) {
    char lib[PATH_MAX];
    if (realpath(info.dli_fname, lib)) {
      char *slash = strrchr(lib, '/'); /* .../lib64/libnvrtc.so.13 -> .../include */
      if (slash) {
        *slash = '\0';
        snprintf(d, sizeof d, "%s/../include", lib);
        inc_try(d);
      }
    }
  }
  inc_try("/usr/local/cuda/include");
  inc_try("/usr/include");
}

/* ---- what the compiler says, reduced to what concerns the unit ---- */

static bool starts(const char *s, const char *e, const char *p) {
  size_t l = strlen(p);
  return (size_t)(e - s) >= l && memcmp(s, p, l) == 0;
}

/* "FILE(N): ..." where FILE is prog; N into *line */
static bool about(const char *s, const char *e, const char *file, long *line) {
  size_t l = strlen(file);
  if ((size_t)(e - s) <= l + 3 || memcmp(s, file, l) != 0 || s[l] != '(') return false;
  char *end = NULL;
  long n = strtol(s + l + 1, &end, 10);
  if (end == s + l + 1 || end >= e || *end != ')') return false;
  *line = n;
  return true;
}

static bool kf_header_line(const char *s, const char *e) {
  if (starts(s, e, "agent/templates/")) return true;
  if (!starts(s, e, "kf_")) return false;
  const char *p = memchr(s, '(', (size_t)(e - s));
  return p && p - s > 4 && memcmp(p - 4, ".cuh", 4) == 0;
}

/* The source's line n (from 1), or NULL */
static const char *source_line(const char *src, long n, size_t *len) {
  if (n < 1) return NULL;
  for (long k = 1; k < n && src; k++) {
    src = strchr(src, '\n');
    if (src) src++;
  }
  if (!src || !*src) return NULL;
  const char *e = strchr(src, '\n');
  *len = e ? (size_t)(e - src) : strlen(src);
  return src;
}

static char *reduce_log(const char *log, const char *prog, const char *source) {
  kf_strbuf out = {0};
  int dropped = 0;
  char done[200];
  snprintf(done, sizeof done, "in the compilation of \"%s\"", prog);
  int quote = 0; /* NVRTC quotes the line and marks the column after a message */
  for (const char *s = log; s && *s;) {
    const char *e = strchr(s, '\n');
    if (!e) e = s + strlen(s);
    long ln = 0;
    const char *b = s;
    while (b < e && (*b == ' ' || *b == '\t')) b++;
    bool context = quote > 0 && b > s;
    quote = context ? quote - 1 : 0;
    if (context) {
      /* the unit's own line is quoted from the unit instead */
    } else if (about(s, e, prog, &ln)) {
      quote = 2;
      kf_strbuf_printf(&out, "%.*s\n", (int)(e - s), s);
      size_t l = 0;
      const char *src = source_line(source, ln, &l);
      if (src && l <= 400) kf_strbuf_printf(&out, "    %.*s\n", (int)l, src);
    } else if (starts(s, e, "ptxas") || kf_header_line(s, e) ||
               ((b[0] >= '0' && b[0] <= '9') && strstr(b, " bytes stack frame") && strstr(b, " bytes stack frame") < e) ||
               (strstr(s, done) && strstr(s, done) < e)) {
      kf_strbuf_printf(&out, "%.*s\n", (int)(e - s), s);
    } else if (inc_dir[0] && starts(s, e, inc_dir) && s[strlen(inc_dir)] == '/' && memchr(s, ':', (size_t)(e - s))) {
      kf_strbuf_printf(&out, "<cuda>%.*s\n", (int)(e - s - strlen(inc_dir)), s + strlen(inc_dir));
    } else if (e > b) {
      dropped++;
    }
    s = *e ? e + 1 : e;
  }
  if (dropped)
    kf_strbuf_printf(&out, "(%d line%s of compiler output quoting source text or naming other files left out)\n",
                     dropped, dropped == 1 ? "" : "s");
  if (!out.data) return strdup("");
  return out.data;
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
  bool toolkit = false;
  kf_strbuf why = {0};
  if (!kf_unit_source_check(source, &toolkit, &why)) {
    kf_diag_error(diag, "unit %s: refused before compiling:\n%s", name, why.data ? why.data : "");
    free(why.data);
    return KF_ERR_INVALID;
  }
  free(why.data);
  char inc_opt[PATH_MAX + 32], cccl_opt[PATH_MAX + 48];
  int nopt = 4;
  if (toolkit) {
    pthread_once(&inc_once, inc_find);
    if (!inc_dir[0]) {
      kf_diag_error(diag,
                    "unit %s: includes the CUDA toolkit's headers, which are not on this machine (looked in "
                    "$CUDA_HOME/include, $CUDA_PATH/include, beside NVRTC, /usr/local/cuda/include, "
                    "/usr/include); install the CUDA 13 toolkit's headers or set CUDA_HOME",
                    name);
      return KF_ERR_UNSUPPORTED;
    }
    snprintf(inc_opt, sizeof inc_opt, "--include-path=%s", inc_dir);
    snprintf(cccl_opt, sizeof cccl_opt, "--include-path=%s", inc_cccl);
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
  /* ptxas's per-kernel resource lines (registers, spills) go to the log */
  const char *opts[6] = {arch, "-std=c++17", "-default-device", "--ptxas-options=-v"};
  if (toolkit) {
    opts[nopt++] = inc_opt;
    if (inc_cccl[0]) opts[nopt++] = cccl_opt;
  }
  nvrtcResult cr = nv.compile(prog, nopt, opts);
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
  {
    char *reduced = reduce_log(log, prog_name, source);
    if (!reduced) {
      st = KF_ERR_NOMEM;
      goto done;
    }
    free(log);
    log = reduced;
  }
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

/* Kernels of reduce.cu that hold rows in registers ask ptxas for a full SM
 * of resident threads (32 registers a thread). Where ptxas had to spill to
 * fit that, the kernel is compiled again asking for half (KF_MINB_LOW in
 * its prelude; 64 registers): measured on the H200, a layer norm + GELU
 * kernel spilling 80 bytes at 32 registers ran 10% slower than at 64. This
 * returns a copy of source with KF_MINB_LOW defined for every reduce.cu
 * kernel the ptxas log reports spills for, or NULL when none did. */
static char *lower_occupancy(const char *source, const char *log) {
  char *out = NULL;
  const char *p = log;
  static const char entry[] = "Compiling entry function '";
  while ((p = strstr(p, entry)) != NULL) {
    p += sizeof entry - 1;
    const char *e = strchr(p, '\'');
    if (!e || e - p >= 96) break;
    char fn[96];
    memcpy(fn, p, (size_t)(e - p));
    fn[e - p] = '\0';
    /* this function's lines run to the next entry */
    const char *next = strstr(e, entry);
    const char *sp = strstr(e, " bytes spill stores");
    if (!sp || (next && sp > next)) continue;
    const char *d = sp;
    while (d > e && d[-1] >= '0' && d[-1] <= '9') d--;
    if (d == sp || atol(d) == 0) continue;
    char marker[200], repl[260];
    snprintf(marker, sizeof marker, "#define KF_KERNEL %s\n", fn);
    const char *base = out ? out : source;
    const char *at = strstr(base, marker);
    char tmpl[160];
    snprintf(tmpl, sizeof tmpl, "// ---- kernel %s (template reduce.cu)", fn);
    if (!at || !strstr(base, tmpl)) continue;
    snprintf(repl, sizeof repl, "%s#define KF_MINB_LOW 1\n", marker);
    size_t n = strlen(base), ml = strlen(marker), rl = strlen(repl);
    char *next_src = malloc(n - ml + rl + 1);
    if (!next_src) {
      free(out);
      return NULL;
    }
    size_t off = (size_t)(at - base);
    memcpy(next_src, base, off);
    memcpy(next_src + off, repl, rl);
    memcpy(next_src + off + rl, at + ml, n - off - ml + 1);
    free(out);
    out = next_src;
  }
  return out;
}

kf_status kf_unit_compile(kf_unit *u, const kf_target *t, kf_diag *diag) {
  if (!u) return KF_ERR_ARG;
  if (!u->source) return KF_OK;
  free(u->cubin);
  free(u->compile_log);
  u->cubin = NULL;
  u->cubin_bytes = 0;
  u->compile_log = NULL;
  const char *name = u->name ? u->name : "unit";
  kf_status st = compile_source(name, u->source, t, &u->cubin, &u->cubin_bytes, &u->compile_log, diag);
  if (st || !u->compile_log) return st;
  char *lowered = lower_occupancy(u->source, u->compile_log);
  if (!lowered) return KF_OK;
  free(u->cubin);
  free(u->compile_log);
  u->cubin = NULL;
  u->cubin_bytes = 0;
  u->compile_log = NULL;
  st = compile_source(name, lowered, t, &u->cubin, &u->cubin_bytes, &u->compile_log, diag);
  if (st) {
    free(lowered);
    return st;
  }
  /* the source that made the cubin */
  free(u->source);
  u->source = lowered;
  return KF_OK;
}

bool kf_nvrtc_available(char *why, size_t n) {
  pthread_once(&nv_once, nv_load);
  if (!nv.lib && why && n) snprintf(why, n, "%s", nv.error);
  return nv.lib != NULL;
}

void kf_nvrtc_toolkit(char *out, size_t n) {
  int major = CUDA_VERSION / 1000, minor = CUDA_VERSION % 1000 / 10;
  pthread_once(&nv_once, nv_load);
  if (nv.lib) {
    int a = 0, b = 0;
    if (nv.version(&a, &b) == NVRTC_SUCCESS) {
      major = a;
      minor = b;
    }
  }
  snprintf(out, n, "nvrtc-%d.%d", major, minor);
}
