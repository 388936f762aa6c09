/* judge/gpu.c — what the judge's worker does on the GPU (judge/worker.c
 * forks it; nothing here runs in the judging process).
 *
 * Every buffer a unit gets is guarded (galloc): with the driver's virtual
 * memory management, its own mapping with unmapped address space before
 * and after it and its end placed against the end of the mapping (less
 * than 256 bytes of slack, 16 in the misaligned set), so a read or a write
 * past the end faults; without it (an old or fake driver), a plain
 * allocation with 4 KiB after the end. The slack after the end is filled
 * with a canary checked after every run: a write past the end that does
 * not fault is caught there.
 *
 * For each unit (the task's built-in one first, so its baseline survives a
 * candidate that kills the worker, then the candidate):
 *   1. for every input set: fresh input, output and scratch buffers (the
 *      new ones allocated before the last set's are freed, so no two sets
 *      share addresses); set 2's inputs start at addresses aligned to
 *      their element size only (as views of a caller's tensors can), every
 *      other buffer 256-byte aligned; three runs, each on poisoned outputs
 *      and scratch and followed by a device-wide sync, its outputs checked
 *      against the fp64 reference of its inputs, its inputs against their
 *      bytes and every canary: values A (poison 0xFF: NaN for floats, -1
 *      for integers); values B, A with one element in eight redrawn, in the
 *      same buffers (poison 0x5A, a large finite value: an element left
 *      unwritten fails even where the reference is NaN; a result cached by
 *      pointer, or by a sample of the content, is stale); A again, whose
 *      bits must equal the first run's ("deterministic"; required of a
 *      unit of kernels, not of one with library steps, whose determinism is
 *      the library's);
 *   2. timing on a set the unit has never seen (the held-out pair, sets
 *      past n_sets): its inputs copied until inputs and outputs together
 *      cover twice the L2 cache (at most 32 copies), runs rotated over the
 *      copies, each on poisoned outputs and scratch, between two events on
 *      the judge's own stream and followed by a device-wide sync; 3 warm-up
 *      runs, then at least 10 and until min_time_ms of GPU time (at most
 *      500); the median;
 *   3. every copy's outputs, as its last timed run left them, checked
 *      against the held-out set's reference, and its canaries: a unit that
 *      skips work while timed (recognising inputs, counting calls) leaves
 *      poison;
 *   3b. for the unit profiled (kf_jwork.profile_unit: kf_judge_unit with
 *      kf_judge_options.profile), the timing again with an event after
 *      every step: each step's median alone (profile()).
 * A unit with library steps runs through the runtime (kfuse_model_run on
 * the judge's stream) from its one-group plan (plan.c); its scratch is the
 * runtime's arena and is not poisoned.
 * A CUDA error ends the worker's use of the GPU (errors such as an illegal
 * address leave the context unusable): the unit fails with the error and
 * any unit after it is not judged. The report goes to the parent after the
 * bandwidth measure and after each unit (kf_jgpu_send). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "judge_int.h"
#include "kfr_driver.h"
#include "kfr_plan.h"
#include "kfuse_runtime.h"
#include "kfuse/interp.h"

/* One kernel argument's value, as cuLaunchKernel reads it: the parameter
 * pointer is the union's address, which is every member's address. */
typedef union jarg {
  CUdeviceptr ptr;
  int64_t i64;
  int32_t i32;
  float f32;
  double f64;
} jarg;

#define MAX_COPIES 32
/* timed runs at most: a unit of microseconds reaches it long before
 * min_time_ms of GPU time (each run also waits for the spin, the L2 flush
 * and a sync: 2000 runs took 0.25 s a candidate, a median of 500 is as
 * steady) */
#define MAX_RUNS 500
#define POISON_A 0xFF
#define POISON_B 0x5A

typedef struct jg {
  const kfr_driver *cu;
  CUdevice dev;
  CUcontext ctx;
  CUstream s;
  CUevent e0, e1;
  CUmodule spin_mod;
  CUfunction spin; /* kf_spin(ns): busy for ns nanoseconds; NULL when the
                      driver would not load it */
  CUdeviceptr flush; /* 2x L2, written before each timed run (0: none) */
  size_t flush_bytes;
  CUmodule cmp_mod;
  CUfunction cmp;      /* kf_cmp: first differing byte of two buffers; NULL:
                          inputs are checked on the host */
  CUdeviceptr cmp_at;  /* per input: kf_cmp's answer (u64) */
  /* every variant's inputs on the device, uploaded once (pristine[v][i]);
   * NULL when they do not fit: each run then uploads from the host */
  CUdeviceptr **pristine;
  int n_variants, n_inputs;
  void **hout;         /* per output: host scratch, page-locked when it can be */
  int n_out;
  bool *hout_pinned;
  bool dead; /* a CUDA error: stop using the GPU */
  CUresult err; /* the error that made it dead */
  size_t gran;  /* guarded buffers through virtual memory management: the
                   allocation granularity; 0: plain allocations (galloc) */
  bool exact;   /* under compute-sanitizer: plain allocations of the exact
                   size, so the tool's bounds are the buffer's */
  char *why;
  size_t n;
} jg;

/* A kernel that keeps the GPU busy for a while, queued ahead of each timed
 * run: the run's launches and its start event are then queued before the
 * GPU reaches them, so the time between the events is the GPU's work, not
 * the host's launch latency (a unit of microseconds otherwise measures
 * several microseconds of launch gap: 7.0 against 4.0 us through
 * kfuse.load, H100, 2026-11-25). PTX, JIT-compiled by the driver: the
 * worker never runs NVRTC. */
static const char spin_ptx[] =
    ".version 7.8\n"
    ".target sm_90\n"
    ".address_size 64\n"
    ".visible .entry kf_spin(.param .u64 ns)\n"
    "{\n"
    "  .reg .u64 %t0, %t1, %d, %lim;\n"
    "  .reg .pred %p;\n"
    "  ld.param.u64 %lim, [ns];\n"
    "  mov.u64 %t0, %globaltimer;\n"
    "SPIN:\n"
    "  mov.u64 %t1, %globaltimer;\n"
    "  sub.u64 %d, %t1, %t0;\n"
    "  setp.lt.u64 %p, %d, %lim;\n"
    "  @%p bra SPIN;\n"
    "  ret;\n"
    "}\n";

/* kf_cmp(a, b, n, at): *at = min(*at, the first i < n with a[i] != b[i]),
 * a grid-stride loop over bytes; *at starts at all ones (no difference).
 * Checks a unit's inputs against their uploaded copies on the device, so a
 * run's check moves 8 bytes to the host instead of every input. */
static const char cmp_ptx[] =
    ".version 7.8\n"
    ".target sm_90\n"
    ".address_size 64\n"
    ".visible .entry kf_cmp(.param .u64 a, .param .u64 b, .param .u64 n, .param .u64 at)\n"
    "{\n"
    "  .reg .u64 %a, %b, %n, %at, %i, %st, %pa, %pb, %old;\n"
    "  .reg .u32 %x, %y, %c, %nt, %t, %nc;\n"
    "  .reg .pred %p, %q;\n"
    "  ld.param.u64 %a, [a];\n"
    "  ld.param.u64 %b, [b];\n"
    "  ld.param.u64 %n, [n];\n"
    "  ld.param.u64 %at, [at];\n"
    "  cvta.to.global.u64 %a, %a;\n"
    "  cvta.to.global.u64 %b, %b;\n"
    "  cvta.to.global.u64 %at, %at;\n"
    "  mov.u32 %c, %ctaid.x;\n"
    "  mov.u32 %nt, %ntid.x;\n"
    "  mov.u32 %t, %tid.x;\n"
    "  mov.u32 %nc, %nctaid.x;\n"
    "  mul.wide.u32 %i, %c, %nt;\n"
    "  cvt.u64.u32 %st, %t;\n"
    "  add.u64 %i, %i, %st;\n"
    "  mul.wide.u32 %st, %nc, %nt;\n"
    "LOOP:\n"
    "  setp.ge.u64 %p, %i, %n;\n"
    "  @%p bra DONE;\n"
    "  add.u64 %pa, %a, %i;\n"
    "  add.u64 %pb, %b, %i;\n"
    "  ld.global.u8 %x, [%pa];\n"
    "  ld.global.u8 %y, [%pb];\n"
    "  setp.ne.u32 %q, %x, %y;\n"
    "  @%q atom.global.min.u64 %old, [%at], %i;\n"
    "  add.u64 %i, %i, %st;\n"
    "  bra LOOP;\n"
    "DONE:\n"
    "  ret;\n"
    "}\n";

static bool ok(jg *g, CUresult r, const char *call) {
  if (r == CUDA_SUCCESS) return true;
  char d[200];
  const char *hint = r == CUDA_ERROR_ILLEGAL_ADDRESS
                         ? " (an access outside the unit's buffers faults: each buffer ends against unmapped memory)"
                     : r == CUDA_ERROR_MISALIGNED_ADDRESS
                         ? " (inputs of set 2 are aligned to their element size only, as views of a caller's "
                           "tensors can be: a vector access must check its address)"
                         : "";
  snprintf(g->why, g->n, "%s: %s%s", call, kfr_cu_describe(g->cu, r, d, sizeof d), hint);
  g->dead = true;
  g->err = r;
  return false;
}

static void report_send(kf_jreport *r); /* worker.c's pipe, below */

/* ---- buffers ---- */

/* One guarded buffer (galloc): p, bytes long, is what the unit gets; the
 * slack from p + bytes to the end of what is mapped (or allocated) holds
 * the canary. With virtual memory management: va (va_bytes reserved), the
 * physical allocation h mapped at map (map_bytes); else raw from
 * cuMemAlloc. */
typedef struct jmem {
  CUdeviceptr p;
  size_t bytes, slack;
  CUdeviceptr va, map, raw;
  size_t va_bytes, map_bytes;
  CUmemGenericAllocationHandle h;
  bool mapped;
} jmem;

#define CANARY 0xA5
/* slack checked after the end of a plain allocation (no unmapped memory
 * to fault on) */
#define PLAIN_GUARD 4096

static bool gfree(jg *g, jmem *m) {
  bool good = true;
  if (m->mapped) good = ok(g, g->cu->cuMemUnmap(m->map, m->map_bytes), "cuMemUnmap");
  if (m->h) good = ok(g, g->cu->cuMemRelease(m->h), "cuMemRelease") && good;
  if (m->va) good = ok(g, g->cu->cuMemAddressFree(m->va, m->va_bytes), "cuMemAddressFree") && good;
  if (m->raw) good = ok(g, g->cu->cuMemFree(m->raw), "cuMemFree") && good;
  memset(m, 0, sizeof *m);
  return good;
}

/* A buffer of bytes (> 0) whose start is 256-byte aligned, or, with shift
 * (1 to 15), at shift past a 16-byte boundary; its end against unmapped
 * memory where the driver allows, its slack filled with the canary (queued
 * on the judge's stream) */
static bool galloc(jg *g, size_t bytes, unsigned shift, jmem *m) {
  memset(m, 0, sizeof *m);
  m->bytes = bytes;
  const size_t a = shift ? 16 : 256;
  if (g->gran) {
    size_t map = (bytes + 2 * 256 + g->gran - 1) / g->gran * g->gran;
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = (int)g->dev;
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    m->va_bytes = map + 2 * g->gran; /* a granule unmapped on each side */
    if (!ok(g, g->cu->cuMemAddressReserve(&m->va, m->va_bytes, g->gran, 0, 0), "cuMemAddressReserve")) goto fail;
    m->map = m->va + (CUdeviceptr)g->gran;
    m->map_bytes = map;
    if (!ok(g, g->cu->cuMemCreate(&m->h, map, &prop, 0), "cuMemCreate")) goto fail;
    if (!ok(g, g->cu->cuMemMap(m->map, map, 0, m->h, 0), "cuMemMap")) goto fail;
    m->mapped = true;
    if (!ok(g, g->cu->cuMemSetAccess(m->map, map, &acc, 1), "cuMemSetAccess")) goto fail;
    CUdeviceptr end = m->map + (CUdeviceptr)map;
    m->p = (end - bytes - shift) / a * a + shift;
    m->slack = (size_t)(end - (m->p + bytes));
  } else if (g->exact) {
    if (!ok(g, g->cu->cuMemAlloc(&m->raw, bytes + shift), "cuMemAlloc")) goto fail;
    m->p = m->raw + shift;
    return true;
  } else {
    size_t raw = bytes + 256 + PLAIN_GUARD;
    if (!ok(g, g->cu->cuMemAlloc(&m->raw, raw), "cuMemAlloc")) goto fail;
    m->p = m->raw + shift; /* cuMemAlloc's addresses are 256-byte aligned */
    m->slack = raw - shift - bytes;
  }
  if (m->slack && !ok(g, g->cu->cuMemsetD8Async(m->p + bytes, CANARY, m->slack, g->s), "cuMemsetD8Async"))
    goto fail;
  return true;
fail:
  {
    char keep[512];
    snprintf(keep, sizeof keep, "%s", g->why);
    bool dead = g->dead;
    CUresult err = g->err;
    g->dead = false;
    gfree(g, m);
    g->dead = dead || g->dead;
    g->err = err;
    snprintf(g->why, g->n, "%s", keep);
  }
  return false;
}

/* The slack after m's end still holds the canary: false with the reason in
 * why[n] when the unit wrote there (a CUDA error: g->dead) */
static bool guard_ok(jg *g, const jmem *m, const char *what, char *why, size_t n) {
  if (!m->slack) return true;
  unsigned char buf[256 + PLAIN_GUARD];
  size_t k = m->slack < sizeof buf ? m->slack : sizeof buf;
  if (!ok(g, g->cu->cuMemcpyDtoH(buf, m->p + m->bytes, k), "cuMemcpyDtoH")) {
    snprintf(why, n, "%s", g->why);
    return false;
  }
  for (size_t i = 0; i < k; i++)
    if (buf[i] != CANARY) {
      snprintf(why, n, "it wrote past the end of %s (%zu bytes after its last byte): a unit writes only inside its "
               "buffers", what, i);
      return false;
    }
  return true;
}

/* in[i] is input i's first element; in_base[i] the start of its storage,
 * offset elements before it (what the runtime is given); mem[] every
 * buffer's guarded allocation: inputs, outputs, then scratch */
typedef struct jbufs {
  int n_in, n_out, n_scr;
  CUdeviceptr *in, *in_base, *out, *scr;
  jmem *mem;
  bool shared_scr; /* scr[] is another jbufs' (a timing copy): not freed here */
} jbufs;

static void bufs_free(jg *g, jbufs *b) {
  int nm = b->n_in + b->n_out + b->n_scr;
  for (int i = 0; b->mem && i < nm; i++)
    if (!(b->shared_scr && i >= b->n_in + b->n_out)) gfree(g, &b->mem[i]);
  free(b->in);
  free(b->in_base);
  free(b->out);
  free(b->scr);
  free(b->mem);
  memset(b, 0, sizeof *b);
}

/* Every buffer the unit needs (inputs when with_inputs), unfilled; no
 * scratch for a unit the runtime runs (its arena holds it), share's
 * scratch when given (a timing copy); inputs aligned to their element size
 * only when misaligned */
static bool bufs_alloc(jg *g, const kf_jtask *t, const kf_unit *u, bool with_inputs, bool runtime, bool misaligned,
                       const jbufs *share, jbufs *b) {
  memset(b, 0, sizeof *b);
  b->n_in = t->n_in;
  b->n_out = t->n_out;
  b->n_scr = runtime ? 0 : u->n_scratch;
  b->in = calloc((size_t)b->n_in + 1, sizeof *b->in);
  b->in_base = calloc((size_t)b->n_in + 1, sizeof *b->in_base);
  b->out = calloc((size_t)b->n_out + 1, sizeof *b->out);
  b->scr = calloc((size_t)b->n_scr + 1, sizeof *b->scr);
  b->mem = calloc((size_t)(b->n_in + b->n_out + b->n_scr) + 1, sizeof *b->mem);
  if (!b->in || !b->in_base || !b->out || !b->scr || !b->mem) {
    snprintf(g->why, g->n, "out of host memory");
    return false;
  }
  for (int i = 0; with_inputs && i < t->n_in; i++) {
    /* as in a module: the value sits offset elements into its storage */
    size_t es = kf_dtype_size(t->in[i].type.dtype);
    int64_t pre = t->in[i].type.offset * (int64_t)es;
    unsigned shift = misaligned && es < 16 ? (unsigned)es : 0;
    if (t->in[i].bytes && !galloc(g, (size_t)(pre + t->in[i].bytes), shift, &b->mem[i])) return false;
    b->in_base[i] = b->mem[i].p;
    b->in[i] = b->in_base[i] + (CUdeviceptr)pre;
  }
  for (int i = 0; i < t->n_out; i++) {
    if (t->out[i].bytes && !galloc(g, (size_t)t->out[i].bytes, 0, &b->mem[b->n_in + i])) return false;
    b->out[i] = b->mem[b->n_in + i].p;
  }
  b->shared_scr = share != NULL;
  for (int i = 0; i < b->n_scr; i++) {
    jmem *m = &b->mem[b->n_in + b->n_out + i];
    if (share) {
      b->scr[i] = share->scr[i];
      continue;
    }
    if (u->scratch_bytes[i] && !galloc(g, (size_t)u->scratch_bytes[i], 0, m)) return false;
    b->scr[i] = m->p;
  }
  return true;
}

/* Every canary of b intact (see guard_ok) */
static bool guards_ok(jg *g, const kf_jtask *t, const jbufs *b, char *why, size_t n) {
  char what[160];
  for (int i = 0; i < b->n_in + b->n_out + b->n_scr; i++) {
    if (b->shared_scr && i >= b->n_in + b->n_out) break;
    if (i < b->n_in) snprintf(what, sizeof what, "input '%s'", t->in[i].name);
    else if (i < b->n_in + b->n_out) snprintf(what, sizeof what, "output '%s'", t->out[i - b->n_in].name);
    else snprintf(what, sizeof what, "scratch buffer %d", i - b->n_in - b->n_out);
    if (!guard_ok(g, &b->mem[i], what, why, n)) return false;
  }
  return true;
}

static bool poison(jg *g, const kf_jtask *t, const kf_unit *u, const jbufs *b, unsigned char v) {
  for (int i = 0; i < t->n_out; i++)
    if (t->out[i].bytes && !ok(g, g->cu->cuMemsetD8Async(b->out[i], v, (size_t)t->out[i].bytes, g->s), "cuMemsetD8Async"))
      return false;
  for (int i = 0; i < b->n_scr; i++)
    if (u->scratch_bytes[i] &&
        !ok(g, g->cu->cuMemsetD8Async(b->scr[i], v, (size_t)u->scratch_bytes[i], g->s), "cuMemsetD8Async"))
      return false;
  return true;
}

/* ---- the input variants on the device ---- */

static void pristine_free(jg *g) {
  for (int v = 0; g->pristine && v < g->n_variants; v++) {
    for (int i = 0; g->pristine[v] && i < g->n_inputs; i++)
      if (g->pristine[v][i] && !g->dead) g->cu->cuMemFree(g->pristine[v][i]);
    free(g->pristine[v]);
  }
  free(g->pristine);
  g->pristine = NULL;
}

/* Every variant's inputs uploaded once into device buffers, when together
 * they take at most a quarter of the free memory; else (or when memory
 * runs out on the way) each run uploads its inputs from the host, as
 * before. Uploads go through a page-locked staging buffer: from pageable
 * memory (the worker's mapping of the work file) they ran at about 1 GB/s,
 * and a 134 MB input's 15 verification runs, each uploading the inputs and
 * reading them back, took 3.7 s a candidate (H100, 2026-11-27). False only
 * on a CUDA error. */
static bool pristine_make(jg *g, const kf_jwork *w) {
  const kf_jtask *t = w->task;
  const int nv = KF_JVARIANTS(w->n_sets);
  double total = 0;
  int64_t big = 0;
  for (int i = 0; i < t->n_in; i++) {
    total += (double)t->in[i].bytes;
    big = t->in[i].bytes > big ? t->in[i].bytes : big;
  }
  total *= nv;
  size_t free_b = 0, total_b = 0;
  if (t->n_in == 0 || big == 0 || g->cu->cuMemGetInfo(&free_b, &total_b) != CUDA_SUCCESS || total > (double)free_b / 4)
    return true;
  g->n_variants = nv;
  g->n_inputs = t->n_in;
  g->pristine = calloc((size_t)nv, sizeof *g->pristine);
  bool have = g->pristine != NULL;
  for (int v = 0; have && v < nv; v++) {
    have = (g->pristine[v] = calloc((size_t)t->n_in, sizeof **g->pristine)) != NULL;
    for (int i = 0; have && i < t->n_in; i++)
      have = !t->in[i].bytes || g->cu->cuMemAlloc(&g->pristine[v][i], (size_t)t->in[i].bytes) == CUDA_SUCCESS;
  }
  if (!have) { /* out of memory here or there: the host path */
    pristine_free(g);
    return true;
  }
  const size_t chunk = (size_t)64 << 20;
  size_t sb = (size_t)big < chunk ? (size_t)big : chunk;
  void *stage = NULL;
  if (g->cu->cuMemAllocHost(&stage, sb) != CUDA_SUCCESS) stage = NULL;
  bool good = true;
  for (int v = 0; good && v < nv; v++)
    for (int i = 0; good && i < t->n_in; i++) {
      const char *src = w->sets[v].in[i];
      size_t bytes = (size_t)t->in[i].bytes;
      if (!stage) {
        good = !bytes || ok(g, g->cu->cuMemcpyHtoD(g->pristine[v][i], src, bytes), "cuMemcpyHtoD");
        continue;
      }
      for (size_t at = 0; good && at < bytes; at += sb) {
        size_t c = bytes - at < sb ? bytes - at : sb;
        memcpy(stage, src + at, c);
        good = ok(g, g->cu->cuMemcpyHtoD(g->pristine[v][i] + (CUdeviceptr)at, stage, c), "cuMemcpyHtoD");
      }
    }
  if (stage && !g->dead) g->cu->cuMemFreeHost(stage);
  if (!good) pristine_free(g);
  return good;
}

/* The device's copies of the inputs against the host's, after a unit ran:
 * a unit is untrusted code in the same context, and one writing past its
 * buffers into a copy could change the inputs later runs and units get, or
 * change a copy and its own input alike to pass the read-only check.
 * *bad when a copy changed; changed copies (or copies that could not be
 * read back for want of host memory) are uploaded again for the next unit.
 * False only on a CUDA error. */
static bool pristine_verify(jg *g, const kf_jwork *w, bool *bad) {
  const kf_jtask *t = w->task;
  *bad = false;
  if (!g->pristine) return true;
  int64_t big = 0;
  for (int i = 0; i < t->n_in; i++) big = t->in[i].bytes > big ? t->in[i].bytes : big;
  const size_t chunk = (size_t)64 << 20;
  size_t sb = (size_t)big < chunk ? (size_t)big : chunk;
  void *stage = NULL;
  bool pinned = g->cu->cuMemAllocHost(&stage, sb) == CUDA_SUCCESS;
  if (!pinned) stage = malloc(sb);
  if (!stage) {
    /* no host memory to tell: the copies are made again for the next
     * unit, and this one is not blamed */
    pristine_free(g);
    return pristine_make(g, w);
  }
  bool good = true;
  for (int v = 0; good && !*bad && v < g->n_variants; v++)
    for (int i = 0; good && !*bad && i < t->n_in; i++) {
      const char *src = w->sets[v].in[i];
      size_t bytes = (size_t)t->in[i].bytes;
      for (size_t at = 0; good && !*bad && at < bytes; at += sb) {
        size_t c = bytes - at < sb ? bytes - at : sb;
        good = ok(g, g->cu->cuMemcpyDtoH(stage, g->pristine[v][i] + (CUdeviceptr)at, c), "cuMemcpyDtoH");
        *bad = good && memcmp(stage, src + at, c) != 0;
      }
    }
  if (pinned) {
    if (!g->dead) g->cu->cuMemFreeHost(stage);
  } else {
    free(stage);
  }
  if (good && *bad) {
    pristine_free(g);
    good = pristine_make(g, w);
  }
  return good;
}

/* Variant v's inputs into b: from the device's copies, or the host's */
static bool load_inputs(jg *g, const kf_jwork *w, int v, const jbufs *b) {
  const kf_jtask *t = w->task;
  for (int i = 0; i < t->n_in; i++) {
    size_t bytes = (size_t)t->in[i].bytes;
    if (!bytes) continue;
    if (g->pristine ? !ok(g, g->cu->cuMemcpyDtoDAsync(b->in[i], g->pristine[v][i], bytes, g->s), "cuMemcpyDtoDAsync")
                    : !ok(g, g->cu->cuMemcpyHtoD(b->in[i], w->sets[v].in[i], bytes), "cuMemcpyHtoD"))
      return false;
  }
  return true;
}

/* Host scratch for each output (page-locked up to 1 GiB in all, where the
 * driver gives it: reading outputs back is then about 10x faster) */
static bool hout_make(jg *g, const kf_jtask *t) {
  g->n_out = t->n_out;
  g->hout = calloc((size_t)t->n_out + 1, sizeof *g->hout);
  g->hout_pinned = calloc((size_t)t->n_out + 1, sizeof *g->hout_pinned);
  if (!g->hout || !g->hout_pinned) return false;
  int64_t pinned = 0;
  for (int i = 0; i < t->n_out; i++) {
    size_t bytes = (size_t)(t->out[i].bytes ? t->out[i].bytes : 1);
    if (pinned + (int64_t)bytes <= ((int64_t)1 << 30) && g->cu->cuMemAllocHost(&g->hout[i], bytes) == CUDA_SUCCESS) {
      g->hout_pinned[i] = true;
      pinned += (int64_t)bytes;
    } else if (!(g->hout[i] = malloc(bytes))) {
      return false;
    }
  }
  return true;
}

static void hout_free(jg *g) {
  for (int i = 0; g->hout && i < g->n_out; i++) {
    if (g->hout_pinned[i]) {
      if (!g->dead) g->cu->cuMemFreeHost(g->hout[i]); /* a lost context keeps it: the process ends soon */
    } else {
      free(g->hout[i]);
    }
  }
  free(g->hout);
  free(g->hout_pinned);
  g->hout = NULL;
  g->hout_pinned = NULL;
}

/* ---- a unit's module and its runs ---- */

typedef struct jmod {
  kfuse_model *mdl; /* a unit with library steps: the runtime runs it */
  CUmodule mod;
  CUfunction *fn;   /* per step (launches) */
  jarg **vals; /* per step: its arguments */
  void ***params;
} jmod;

static void mod_free(jg *g, const kf_unit *u, jmod *m) {
  for (int s = 0; s < u->n_steps; s++) {
    if (m->vals) free(m->vals[s]);
    if (m->params) free(m->params[s]);
  }
  free(m->vals);
  free(m->params);
  free(m->fn);
  if (m->mod && !g->dead) g->cu->cuModuleUnload(m->mod);
  if (m->mdl && !g->dead) kfuse_model_destroy(m->mdl);
  memset(m, 0, sizeof *m);
}

static bool mod_load(jg *g, const kf_unit *u, jmod *m) {
  memset(m, 0, sizeof *m);
  int n = u->n_steps;
  m->fn = calloc((size_t)n + 1, sizeof *m->fn);
  m->vals = calloc((size_t)n + 1, sizeof *m->vals);
  m->params = calloc((size_t)n + 1, sizeof *m->params);
  if (!m->fn || !m->vals || !m->params) return false;
  for (int s = 0; s < n; s++) {
    const kf_unit_step *st = &u->steps[s];
    m->vals[s] = calloc((size_t)st->n_args + 1, sizeof **m->vals);
    m->params[s] = calloc((size_t)st->n_args + 1, sizeof **m->params);
    if (!m->vals[s] || !m->params[s]) return false;
    for (int i = 0; i < st->n_args; i++) m->params[s][i] = &m->vals[s][i];
  }
  if (u->cubin && !ok(g, g->cu->cuModuleLoadDataEx(&m->mod, u->cubin, 0, NULL, NULL), "cuModuleLoadDataEx"))
    return false;
  for (int s = 0; s < n; s++) {
    const kf_unit_step *st = &u->steps[s];
    if (st->kind != KF_USTEP_LAUNCH) continue;
    char call[200];
    snprintf(call, sizeof call, "cuModuleGetFunction(\"%s\")", st->kernel);
    if (!ok(g, g->cu->cuModuleGetFunction(&m->fn[s], m->mod, st->kernel), call)) return false;
    if (st->smem > 48 * 1024 &&
        !ok(g, g->cu->cuFuncSetAttribute(m->fn[s], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, (int)st->smem),
            "cuFuncSetAttribute"))
      return false;
  }
  return true;
}

static CUdeviceptr arg_ptr(const kf_unit_arg *a, const jbufs *b) {
  switch (a->kind) {
  case KF_UARG_INPUT: return b->in[a->index] + (CUdeviceptr)a->i;
  case KF_UARG_OUTPUT: return b->out[a->index] + (CUdeviceptr)a->i;
  case KF_UARG_SCRATCH: return b->scr[a->index] + (CUdeviceptr)a->i;
  default: return 0;
  }
}

/* Step s of the unit over b, queued on the judge's stream (the static
 * checks, judge/check.c, already hold every index and range) */
static bool run_step(jg *g, const kf_unit *u, jmod *m, const jbufs *b, int s) {
  const kf_unit_step *st = &u->steps[s];
  for (int i = 0; i < st->n_args; i++) {
    const kf_unit_arg *a = &st->args[i];
    jarg *v = &m->vals[s][i];
    switch (a->kind) {
    case KF_UARG_I64: v->i64 = a->i; break;
    case KF_UARG_I32: v->i32 = (int32_t)a->i; break;
    case KF_UARG_F32: v->f32 = (float)a->f; break;
    case KF_UARG_F64: v->f64 = a->f; break;
    default: v->ptr = arg_ptr(a, b); break;
    }
  }
  char call[200];
  switch (st->kind) {
  case KF_USTEP_MEMSET:
    return ok(g, g->cu->cuMemsetD8Async(m->vals[s][0].ptr, 0, (size_t)st->args[1].i, g->s), "cuMemsetD8Async");
  case KF_USTEP_COPY:
    return ok(g, g->cu->cuMemcpyDtoDAsync(m->vals[s][0].ptr, m->vals[s][1].ptr, (size_t)st->args[2].i, g->s),
              "cuMemcpyDtoDAsync");
  case KF_USTEP_LAUNCH:
    snprintf(call, sizeof call, "step %d: cuLaunchKernel(\"%s\")", s, st->kernel);
    return ok(g, g->cu->cuLaunchKernel(m->fn[s], st->grid[0], st->grid[1], st->grid[2], st->block[0], st->block[1],
                                       st->block[2], st->smem, g->s, st->n_args ? m->params[s] : NULL, NULL),
              call);
  default: snprintf(g->why, g->n, "step %d: not a step the judge runs", s); return false;
  }
}

/* One run of the unit over b, queued on the judge's stream */
static bool run(jg *g, const kf_unit *u, jmod *m, const jbufs *b) {
  if (m->mdl) {
    int rc = kfuse_model_run(m->mdl, (void *)g->s, (const void *const *)b->in_base, (void *const *)b->out);
    if (rc != KFUSE_OK) snprintf(g->why, g->n, "kfuse_model_run: %s", kfuse_model_error(m->mdl));
    return rc == KFUSE_OK;
  }
  for (int s = 0; s < u->n_steps; s++)
    if (!run_step(g, u, m, b, s)) return false;
  return true;
}

/* ---- checks of one run ---- */

/* The outputs in b against set's references; host: scratch of the largest
 * output's size. Fills the result's error figures. */
static bool outputs_ok(jg *g, const kf_jwork *w, const kf_jset *set, const jbufs *b, unsigned char pv,
                       void **host, kf_jresult *res, char *why, size_t n) {
  const kf_jtask *t = w->task;
  for (int i = 0; i < t->n_out; i++) {
    const kf_jvalue *v = &t->out[i];
    if (v->bytes && !ok(g, g->cu->cuMemcpyDtoH(host[i], b->out[i], (size_t)v->bytes), "cuMemcpyDtoH")) {
      snprintf(why, n, "%s", g->why);
      return false;
    }
    kf_jcmp c;
    kf_jtol tol = kf_jtol_for(kf_jtask_precision(t), v->type.dtype);
    bool good = kf_jcompare(v, host[i], set->ref[i], tol, pv, &c, why, n);
    if (c.max_abs > res->max_abs) res->max_abs = c.max_abs;
    if (c.rel_norm > res->max_rel_norm) res->max_rel_norm = c.rel_norm;
    if (!good) return false;
  }
  return true;
}

/* The inputs in b against variant v's: on the device (kf_cmp against the
 * uploaded copies) when it can, else read back and compared here */
static bool inputs_ok(jg *g, const kf_jwork *w, int v, const jbufs *b, void *host, char *why, size_t n) {
  const kf_jtask *t = w->task;
  const kf_jset *set = &w->sets[v];
  if (g->pristine && g->cmp) {
    uint64_t at[16];
    for (int i0 = 0; i0 < t->n_in; i0 += 16) {
      int m = t->n_in - i0 < 16 ? t->n_in - i0 : 16;
      if (!ok(g, g->cu->cuMemsetD8Async(g->cmp_at, 0xFF, sizeof at, g->s), "cuMemsetD8Async")) goto cuda_error;
      for (int i = i0; i < i0 + m; i++) {
        uint64_t bytes = (uint64_t)t->in[i].bytes;
        if (!bytes) continue;
        CUdeviceptr a = b->in[i], c = g->pristine[v][i], r = g->cmp_at + (CUdeviceptr)(8 * (i - i0));
        void *args[] = {&a, &c, &bytes, &r};
        uint64_t blocks = (bytes + 255) / 256;
        if (!ok(g, g->cu->cuLaunchKernel(g->cmp, (unsigned)(blocks < 4096 ? blocks : 4096), 1, 1, 256, 1, 1, 0, g->s,
                                         args, NULL),
                "cuLaunchKernel(kf_cmp)"))
          goto cuda_error;
      }
      if (!ok(g, g->cu->cuCtxSynchronize(), "cuCtxSynchronize") ||
          !ok(g, g->cu->cuMemcpyDtoH(at, g->cmp_at, sizeof at), "cuMemcpyDtoH"))
        goto cuda_error;
      for (int i = i0; i < i0 + m; i++)
        if (t->in[i].bytes && at[i - i0] != UINT64_MAX) {
          snprintf(why, n, "input '%s' was modified (its first changed byte is at offset %llu): inputs are read-only",
                   t->in[i].name, (unsigned long long)at[i - i0]);
          return false;
        }
    }
    return true;
  cuda_error:
    snprintf(why, n, "%s", g->why);
    return false;
  }
  for (int i = 0; i < t->n_in; i++) {
    const kf_jvalue *v = &t->in[i];
    if (!v->bytes) continue;
    if (!ok(g, g->cu->cuMemcpyDtoH(host, b->in[i], (size_t)v->bytes), "cuMemcpyDtoH")) {
      snprintf(why, n, "%s", g->why);
      return false;
    }
    if (memcmp(host, set->in[i], (size_t)v->bytes) != 0) {
      int64_t k = 0;
      while (((unsigned char *)host)[k] == ((unsigned char *)set->in[i])[k]) k++;
      snprintf(why, n, "input '%s' was modified (its first changed byte is at offset %lld): inputs are read-only",
               v->name, (long long)k);
      return false;
    }
  }
  return true;
}

static int cmp_float(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return x < y ? -1 : x > y;
}

/* The profile (kf_jwork.profile_unit): every step between its own pair
 * of events, over runs timed as the whole unit's are (the spin ahead, the
 * L2 flushed, inputs rotated over the copies): at least 10 runs and until
 * min_time_ms of GPU time; each step's median. An event between two steps
 * costs the GPU a little, so the steps' sum may exceed the whole run's
 * median. A unit the profile cannot split gets prof_why. False only on a
 * CUDA error (the unit faulted: it fails as it would in the timing). */
static bool profile(jg *g, const kf_jwork *w, const kf_unit *u, jmod *m, const jbufs *copies, int n_copies,
                    uint64_t spin_ns, kf_jresult *res) {
  const int n = u->n_steps;
  if (m->mdl) {
    snprintf(res->prof_why, sizeof res->prof_why,
             "a unit with library steps runs through the runtime as a whole: no per-step times");
    return true;
  }
  if (n < 1 || n > KF_JPROF_STEPS) {
    snprintf(res->prof_why, sizeof res->prof_why, "%d steps: the profile times units of 1 to %d", n, KF_JPROF_STEPS);
    return true;
  }
  CUevent ev[KF_JPROF_STEPS + 1] = {0};
  float *t = malloc(sizeof *t * (size_t)n * MAX_RUNS);
  bool good = t != NULL;
  if (!t) snprintf(res->prof_why, sizeof res->prof_why, "the worker ran out of host memory");
  for (int s = 0; good && s <= n; s++) good = ok(g, g->cu->cuEventCreate(&ev[s], CU_EVENT_DEFAULT), "cuEventCreate");
  double total = 0;
  int runs = 0;
  while (good && runs < MAX_RUNS && (runs < 10 || total < w->opt->min_time_ms)) {
    void *sp[] = {&spin_ns};
    const jbufs *b = &copies[runs % n_copies];
    good = (!g->spin || ok(g, g->cu->cuLaunchKernel(g->spin, 1, 1, 1, 1, 1, 1, 0, g->s, sp, NULL), "cuLaunchKernel")) &&
           (!g->flush ||
            ok(g, g->cu->cuMemsetD8Async(g->flush, (unsigned char)runs, g->flush_bytes, g->s), "cuMemsetD8Async")) &&
           ok(g, g->cu->cuEventRecord(ev[0], g->s), "cuEventRecord");
    for (int s = 0; good && s < n; s++)
      good = run_step(g, u, m, b, s) && ok(g, g->cu->cuEventRecord(ev[s + 1], g->s), "cuEventRecord");
    good = good && ok(g, g->cu->cuCtxSynchronize(), "cuCtxSynchronize");
    for (int s = 0; good && s < n; s++) {
      float f = 0;
      good = ok(g, g->cu->cuEventElapsedTime(&f, ev[s], ev[s + 1]), "cuEventElapsedTime");
      t[(size_t)s * MAX_RUNS + (size_t)runs] = f;
      total += f;
    }
    if (good) runs++;
  }
  if (good) {
    for (int s = 0; s < n; s++) {
      float *ts = t + (size_t)s * MAX_RUNS;
      qsort(ts, (size_t)runs, sizeof *ts, cmp_float);
      res->step_ms[s] = ts[runs / 2];
    }
    res->prof_steps = n;
    res->prof_runs = runs;
  }
  for (int s = 0; !g->dead && s <= n; s++)
    if (ev[s]) g->cu->cuEventDestroy(ev[s]);
  free(t);
  return !g->dead;
}

/* ---- one unit ---- */

/* The unit loaded (its cubin), or its module created by the runtime (a
 * plan: library steps); *env set when what failed is this machine's (a
 * library or the driver missing), not the unit's */
static bool unit_open(jg *g, const kf_unit *u, const void *plan, size_t plan_bytes, jmod *m, int *env, char *why,
                      size_t n) {
  if (plan) {
    kfuse_options ko;
    kfuse_options_init(&ko);
    int rc = kfr_model_create(plan, plan_bytes, &ko, &m->mdl);
    if (rc != KFUSE_OK) {
      *env = rc == KFUSE_ELIBRARY || rc == KFUSE_ENODRIVER;
      snprintf(why, n, "the runtime cannot create the unit's module: %s", kfuse_last_error());
      m->mdl = NULL;
      return false;
    }
    return true;
  }
  if (!mod_load(g, u, m)) {
    snprintf(why, n, "loading the unit: %s", g->why);
    return false;
  }
  return true;
}

/* The GPU reference: w->ref_unit run on every input variant (fresh
 * buffers, outputs poisoned) and its outputs, as doubles, into the sets'
 * references. False with the reason in why[n]. */
static bool make_refs(jg *g, const kf_jwork *w, char *why, size_t n) {
  const kf_jtask *t = w->task;
  jmod m;
  memset(&m, 0, sizeof m);
  int env = 0;
  bool good = unit_open(g, w->ref_unit, w->ref_plan, w->ref_plan_bytes, &m, &env, why, n);
  for (int v = 0; good && v < KF_JVARIANTS(w->n_sets); v++) {
    if (v == 2 * w->n_sets + 1) continue; /* the held-out pair's B: unused */
    jbufs b;
    good = bufs_alloc(g, t, w->ref_unit, true, w->ref_plan != NULL, false, NULL, &b) && load_inputs(g, w, v, &b);
    good = good && poison(g, t, w->ref_unit, &b, POISON_A) && run(g, w->ref_unit, &m, &b) &&
           ok(g, g->cu->cuCtxSynchronize(), "cuCtxSynchronize");
    for (int i = 0; good && i < t->n_out; i++) {
      const kf_jvalue *o = &t->out[i];
      void *host = g->hout[i];
      good = !o->bytes || ok(g, g->cu->cuMemcpyDtoH(host, b.out[i], (size_t)o->bytes), "cuMemcpyDtoH");
      kf_tensor view = {o->type.dtype, 1, {o->bytes / (int64_t)kf_dtype_size(o->type.dtype)}, host};
      size_t es = kf_dtype_size(o->type.dtype);
      int64_t poisoned = 0;
      const bool f32 = o->type.dtype == KF_DTYPE_F32 && kf_type_is_contiguous(&o->type);
      if (good && f32) {
        /* the common case without the per-element dispatch: the poison's
         * float is all ones */
        const float *f = host;
        const uint32_t *bits = host;
        for (int64_t e = 0; e < o->numel; e++) {
          w->sets[v].ref[i][e] = f[e];
          poisoned += bits[e] == 0xFFFFFFFFu;
        }
      }
      for (int64_t e = 0; good && !f32 && e < o->numel; e++) {
        int64_t off = kf_jelem_offset(&o->type, e);
        w->sets[v].ref[i][e] = kf_tensor_get(&view, off);
        const unsigned char *pb = (const unsigned char *)host + off * (int64_t)es;
        bool all = true;
        for (size_t q = 0; q < es && all; q++) all = pb[q] == POISON_A;
        poisoned += all;
      }
      if (good && o->numel && poisoned == o->numel) {
        snprintf(why, n, "it wrote none of output '%s'", o->name);
        good = false;
      }
    }
    if (!good && !why[0]) snprintf(why, n, "%s", g->why);
    if (!g->dead) bufs_free(g, &b);
  }
  if (!g->dead) mod_free(g, w->ref_unit, &m);
  return good;
}

static void judge_unit(jg *g, const kf_jwork *w, int unit, int64_t l2, kf_jresult *res) {
  const kf_jtask *t = w->task;
  const kf_unit *u = w->units[unit];
  const bool rt = w->plans[unit] != NULL;
  memset(res, 0, sizeof *res);
  res->ran = 1;
  jmod m;
  memset(&m, 0, sizeof m);
  char *why = res->reason;
  size_t n = sizeof res->reason;
  jbufs cur, prev;
  memset(&cur, 0, sizeof cur);
  memset(&prev, 0, sizeof prev);
  jbufs *copies = NULL;
  int n_copies = 0;
  float *times = NULL;
  int64_t big = 1;
  for (int i = 0; i < t->n_in; i++) big = t->in[i].bytes > big ? t->in[i].bytes : big;
  /* inputs read back only when they are not checked on the device */
  void **host = g->hout, *first = NULL, *inhost = g->pristine && g->cmp ? NULL : malloc((size_t)big);
  if (!(g->pristine && g->cmp) && !inhost) {
    snprintf(why, n, "the worker ran out of host memory");
    goto done;
  }
  int64_t out_total = 0;
  for (int i = 0; i < t->n_out; i++) out_total += t->out[i].bytes;
  first = malloc((size_t)(out_total ? out_total : 1));
  if (!first) {
    snprintf(why, n, "the worker ran out of host memory");
    goto done;
  }
  if (!unit_open(g, u, w->plans[unit], w->plan_bytes[unit], &m, &res->env_error, why, n)) goto done;
  res->deterministic = 1;
  double t0 = kf_now_s();
  for (int k = 0; k < w->n_sets; k++) {
    jbufs nb;
    /* set 2: inputs aligned to their element size only */
    if (!bufs_alloc(g, t, u, true, rt, k == 1, NULL, &nb)) {
      snprintf(why, n, "set %d: %s", k + 1, g->why);
      bufs_free(g, &nb);
      goto done;
    }
    bufs_free(g, &prev);
    prev = cur;
    cur = nb;
    /* A, then B in the same buffers (a result cached by pointer or by part
     * of the content is stale there), then A again (must repeat) */
    static const struct {
      int variant;
      unsigned char poison;
    } runs3[3] = {{0, POISON_A}, {1, POISON_B}, {0, POISON_B}};
    for (int rep = 0; rep < 3; rep++) {
      const int var = 2 * k + runs3[rep].variant;
      const kf_jset *set = &w->sets[var];
      unsigned char pv = runs3[rep].poison;
      char w2[KF_JREASON - 64];
      if (!load_inputs(g, w, var, &cur)) {
        snprintf(why, n, "set %d: %s", k + 1, g->why);
        goto done;
      }
      if (!poison(g, t, u, &cur, pv) || !run(g, u, &m, &cur) || !ok(g, g->cu->cuCtxSynchronize(), "cuCtxSynchronize")) {
        snprintf(why, n, "set %d, run %d: %s", k + 1, rep + 1, g->why);
        goto done;
      }
      if (!outputs_ok(g, w, set, &cur, pv, host, res, w2, sizeof w2)) {
        snprintf(why, n, "set %d, run %d%s: %s", k + 1, rep + 1,
                 rep == 1 ? " (new values in the same buffers)" : rep == 2 ? " (the first values again)" : "", w2);
        goto done;
      }
      if (!inputs_ok(g, w, var, &cur, inhost, w2, sizeof w2) || !guards_ok(g, t, &cur, w2, sizeof w2)) {
        snprintf(why, n, "set %d, run %d: %s", k + 1, rep + 1, w2);
        goto done;
      }
      int64_t at = 0;
      for (int i = 0; i < t->n_out && rep != 1; i++) {
        size_t ob = (size_t)t->out[i].bytes;
        if (rep == 0) {
          memcpy((char *)first + at, host[i], ob);
        } else if (memcmp((char *)first + at, host[i], ob) != 0) {
          res->deterministic = 0;
          size_t d = 0;
          while (((const unsigned char *)first)[at + (int64_t)d] == ((const unsigned char *)host[i])[d]) d++;
          /* a unit with library steps: the library's determinism, as
           * PyTorch accepts it; a unit of kernels must repeat its bits */
          if (!rt) {
            snprintf(why, n,
                     "set %d, run 3 (the first values again): output '%s' differs in its bits from run 1's on the "
                     "same inputs (first at byte %zu): a unit must be deterministic (a race, or atomics whose order "
                     "varies)",
                     k + 1, t->out[i].name, d);
            goto done;
          }
        }
        at += (int64_t)ob;
      }
    }
    res->sets_passed++;
  }
  bufs_free(g, &prev);
  res->verify_s = kf_now_s() - t0;
  t0 = kf_now_s();

  bufs_free(g, &cur);

  /* timing over copies of the held-out set's inputs: values the unit has
   * not seen */
  const int hv = 2 * w->n_sets;
  int64_t per = out_total;
  for (int i = 0; i < t->n_in; i++) per += t->in[i].bytes;
  size_t free_b = 0, total_b = 0;
  if (!ok(g, g->cu->cuMemGetInfo(&free_b, &total_b), "cuMemGetInfo")) {
    snprintf(why, n, "timing: %s", g->why);
    goto done;
  }
  n_copies = per > 0 ? (int)((2 * l2 + per - 1) / per) : 1;
  if (n_copies > MAX_COPIES) n_copies = MAX_COPIES;
  while (n_copies > 1 && (int64_t)n_copies * per > (int64_t)(free_b / 4)) n_copies--;
  if (n_copies < 1) n_copies = 1;
  copies = calloc((size_t)n_copies, sizeof *copies);
  times = malloc(sizeof *times * MAX_RUNS);
  if (!copies || !times) {
    snprintf(why, n, "the worker ran out of host memory");
    goto done;
  }
  if (!bufs_alloc(g, t, u, true, rt, false, NULL, &copies[0]) || !load_inputs(g, w, hv, &copies[0])) {
    snprintf(why, n, "timing: %s", g->why);
    goto done;
  }
  for (int c = 1; c < n_copies; c++) {
    if (!bufs_alloc(g, t, u, true, rt, false, &copies[0], &copies[c])) {
      bufs_free(g, &copies[c]);
      n_copies = c; /* fewer copies: what memory allows */
      g->dead = false;
      g->err = CUDA_SUCCESS;
      break;
    }
    for (int i = 0; i < t->n_in; i++)
      if (t->in[i].bytes &&
          !ok(g, g->cu->cuMemcpyDtoDAsync(copies[c].in[i], copies[0].in[i], (size_t)t->in[i].bytes, g->s),
              "cuMemcpyDtoDAsync")) {
        snprintf(why, n, "timing: %s", g->why);
        goto done;
      }
  }
  res->copies = n_copies;
  for (int r = 0; r < 3; r++)
    if (!run(g, u, &m, &copies[r % n_copies])) {
      snprintf(why, n, "timing: %s", g->why);
      goto done;
    }
  if (!ok(g, g->cu->cuCtxSynchronize(), "cuCtxSynchronize")) {
    snprintf(why, n, "timing: %s", g->why);
    goto done;
  }
  /* the spin ahead of each run: 1.5 times what queueing one run costs the
   * host, plus 20 us, within [20 us, 200 ms] */
  uint64_t spin_ns = 0;
  if (g->spin) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    bool queued = run(g, u, &m, &copies[0]);
    clock_gettime(CLOCK_MONOTONIC, &b);
    if (!queued || !ok(g, g->cu->cuCtxSynchronize(), "cuCtxSynchronize")) {
      snprintf(why, n, "timing: %s", g->why);
      goto done;
    }
    double host_ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
    double want = 1.5 * host_ns + 20e3;
    spin_ns = (uint64_t)(want < 20e3 ? 20e3 : want > 200e6 ? 200e6 : want);
  }
  double total = 0;
  int runs = 0;
  while (runs < MAX_RUNS && (runs < 10 || total < w->opt->min_time_ms)) {
    float f = 0;
    void *sp[] = {&spin_ns};
    const jbufs *b = &copies[runs % n_copies];
    /* outputs and scratch poisoned ahead of the spin (outside the events):
     * a timed run that skips work leaves poison, checked below */
    if (!poison(g, t, u, b, POISON_A) ||
        (g->spin && !ok(g, g->cu->cuLaunchKernel(g->spin, 1, 1, 1, 1, 1, 1, 0, g->s, sp, NULL), "cuLaunchKernel")) ||
        (g->flush &&
         !ok(g, g->cu->cuMemsetD8Async(g->flush, (unsigned char)runs, g->flush_bytes, g->s), "cuMemsetD8Async")) ||
        !ok(g, g->cu->cuEventRecord(g->e0, g->s), "cuEventRecord") || !run(g, u, &m, b) ||
        !ok(g, g->cu->cuEventRecord(g->e1, g->s), "cuEventRecord") ||
        !ok(g, g->cu->cuCtxSynchronize(), "cuCtxSynchronize") ||
        !ok(g, g->cu->cuEventElapsedTime(&f, g->e0, g->e1), "cuEventElapsedTime")) {
      snprintf(why, n, "timing, run %d: %s", runs + 1, g->why);
      goto done;
    }
    times[runs++] = f;
    total += f;
  }
  qsort(times, (size_t)runs, sizeof *times, cmp_float);
  res->runs = runs;
  res->ms = times[runs / 2];
  res->min_ms = times[0];
  res->max_ms = times[runs - 1];

  /* every copy as its last timed run left it: outputs against the held-out
   * set's reference, inputs unchanged, canaries intact */
  for (int c = 0; c < n_copies && c < runs; c++) {
    char w2[KF_JREASON - 96];
    if (!outputs_ok(g, w, &w->sets[hv], &copies[c], POISON_A, host, res, w2, sizeof w2) ||
        !inputs_ok(g, w, hv, &copies[c], inhost, w2, sizeof w2) || !guards_ok(g, t, &copies[c], w2, sizeof w2)) {
      snprintf(why, n, "after timing, timing copy %d of %d (inputs it had not seen, as its last timed run left it): %s",
               c + 1, n_copies, w2);
      goto done;
    }
  }
  if (unit == w->profile_unit && !profile(g, w, u, &m, copies, n_copies, spin_ns, res)) {
    snprintf(why, n, "profile: %s", g->why);
    goto done;
  }
  res->ok = 1;
  res->time_s = kf_now_s() - t0;
done:
  if (!g->dead) {
    for (int c = n_copies - 1; copies && c >= 0; c--) bufs_free(g, &copies[c]); /* copy 0's scratch last */
    bufs_free(g, &cur);
    bufs_free(g, &prev);
    mod_free(g, u, &m);
  }
  free(copies);
  free(times);
  free(first);
  free(inhost);
}

/* Under compute-sanitizer (kf_jwork.sanitize): the unit run once on set
 * 1's values A and, under memcheck, once on set 2's (inputs aligned to
 * their element size only), each in fresh buffers of their exact sizes on poisoned outputs
 * and followed by a sync; nothing checked here: the tool reports what it
 * saw and exits with KF_JSAN_EXIT. ok when the runs raised no CUDA error. */
static void sanitize_unit(jg *g, const kf_jwork *w, int unit, kf_jresult *res) {
  const kf_jtask *t = w->task;
  const kf_unit *u = w->units[unit];
  const bool rt = w->plans[unit] != NULL;
  memset(res, 0, sizeof *res);
  res->ran = 1;
  jmod m;
  memset(&m, 0, sizeof m);
  char *why = res->reason;
  size_t n = sizeof res->reason;
  if (!unit_open(g, u, w->plans[unit], w->plan_bytes[unit], &m, &res->env_error, why, n)) return;
  bool good = true;
  /* racecheck: set 1 only (a race does not depend on alignment, and the
   * tool slows shared-memory work by orders of magnitude) */
  const int sets = w->sanitize == KF_JSAN_RACECHECK ? 1 : 2;
  for (int k = 0; good && k < sets && k < w->n_sets; k++) {
    jbufs b;
    good = bufs_alloc(g, t, u, true, rt, k == 1, NULL, &b) && load_inputs(g, w, 2 * k, &b) &&
           poison(g, t, u, &b, POISON_A) && run(g, u, &m, &b) && ok(g, g->cu->cuCtxSynchronize(), "cuCtxSynchronize");
    if (!good) snprintf(why, n, "set %d: %s", k + 1, g->why);
    else res->sets_passed++;
    if (!g->dead) bufs_free(g, &b);
  }
  res->ok = good;
  if (!g->dead) mod_free(g, u, &m);
}

/* ---- the device ---- */

static bool open_device(jg *g, const kf_jwork *w, kf_jreport *r) {
  const kf_jtask *t = w->task;
  if (kfr_driver_load(&g->cu, g->why, g->n) != KFUSE_OK) return false;
  int count = 0, major = 0, minor = 0, l2 = 0;
  const kfr_driver *cu = g->cu;
  if (!ok(g, cu->cuDeviceGetCount(&count), "cuDeviceGetCount")) return false;
  int ord = w->opt->device;
  if (count < 1) {
    snprintf(g->why, g->n, "no CUDA device");
    return false;
  }
  if (ord < 0 || ord >= count) {
    snprintf(g->why, g->n, "no CUDA device %d (the driver sees %d)", ord, count);
    return false;
  }
  if (!ok(g, cu->cuDeviceGet(&g->dev, ord), "cuDeviceGet") ||
      !ok(g, cu->cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, g->dev), "cuDeviceGetAttribute") ||
      !ok(g, cu->cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, g->dev), "cuDeviceGetAttribute") ||
      !ok(g, cu->cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, g->dev), "cuDeviceGetAttribute") ||
      !ok(g, cu->cuDeviceGetName(r->device, (int)sizeof r->device, g->dev), "cuDeviceGetName"))
    return false;
  if (major * 10 + minor != t->target.sm) {
    snprintf(g->why, g->n, "device %d is sm_%d%d, the task's target sm_%d", ord, major, minor, t->target.sm);
    return false;
  }
  r->l2_bytes = l2 > 0 ? l2 : 50 << 20; /* H100's, when the driver does not say */
  if (!ok(g, cu->cuDevicePrimaryCtxRetain(&g->ctx, g->dev), "cuDevicePrimaryCtxRetain") ||
      !ok(g, cu->cuCtxPushCurrent(g->ctx), "cuCtxPushCurrent") ||
      !ok(g, cu->cuStreamCreate(&g->s, CU_STREAM_NON_BLOCKING), "cuStreamCreate") ||
      !ok(g, cu->cuEventCreate(&g->e0, CU_EVENT_DEFAULT), "cuEventCreate") ||
      !ok(g, cu->cuEventCreate(&g->e1, CU_EVENT_DEFAULT), "cuEventCreate"))
    return false;
  /* without it, runs are timed as before: launch gaps included */
  if (cu->cuModuleLoadDataEx(&g->spin_mod, spin_ptx, 0, NULL, NULL) != CUDA_SUCCESS ||
      cu->cuModuleGetFunction(&g->spin, g->spin_mod, "kf_spin") != CUDA_SUCCESS)
    g->spin = NULL;
  r->spin = g->spin != NULL;
  /* without it (or its answer buffer), inputs are checked on the host */
  if (cu->cuModuleLoadDataEx(&g->cmp_mod, cmp_ptx, 0, NULL, NULL) != CUDA_SUCCESS ||
      cu->cuModuleGetFunction(&g->cmp, g->cmp_mod, "kf_cmp") != CUDA_SUCCESS ||
      cu->cuMemAlloc(&g->cmp_at, 16 * sizeof(uint64_t)) != CUDA_SUCCESS) {
    g->cmp = NULL;
    g->cmp_at = 0;
  }
  /* the L2 flushed before each timed run by writing twice its size, as
   * kfuse.baselines flushes it before eager's and torch.compile's runs:
   * a unit then meets the L2 those met (dirty lines to evict), and its
   * time compares with theirs (a unit reading 16 MiB: 9.4 us after clean
   * lines, 12.1 us after the write flush, H100, 2026-11-25) */
  g->flush_bytes = (size_t)r->l2_bytes * 2;
  if (cu->cuMemAlloc(&g->flush, g->flush_bytes) != CUDA_SUCCESS) {
    g->flush = 0;
    g->flush_bytes = 0;
  }
  r->flush = g->flush != 0;
  /* guarded buffers through virtual memory management where the driver
   * gives it (galloc); else plain allocations with a canary after each */
  if (cu->has_vmm) {
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = (int)g->dev;
    size_t gran = 0;
    if (cu->cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS && gran)
      g->gran = gran;
  }
  r->guard = g->gran ? 2 : 1;
  return true;
}

/* Device-to-device copy bandwidth (read + write) in GB/s: the best of 5
 * copies of 256 MiB, or what a quarter of the free memory allows */
static double bandwidth(jg *g) {
  size_t free_b = 0, total_b = 0;
  if (!ok(g, g->cu->cuMemGetInfo(&free_b, &total_b), "cuMemGetInfo")) return 0;
  size_t bytes = (size_t)256 << 20;
  while (bytes > ((size_t)1 << 20) && 2 * bytes > free_b / 4) bytes /= 2;
  CUdeviceptr a = 0, b = 0;
  double best = 0;
  if (ok(g, g->cu->cuMemAlloc(&a, bytes), "cuMemAlloc") && ok(g, g->cu->cuMemAlloc(&b, bytes), "cuMemAlloc")) {
    for (int i = 0; i < 6; i++) {
      float f = 0;
      if (!ok(g, g->cu->cuEventRecord(g->e0, g->s), "cuEventRecord") ||
          !ok(g, g->cu->cuMemcpyDtoDAsync(b, a, bytes, g->s), "cuMemcpyDtoDAsync") ||
          !ok(g, g->cu->cuEventRecord(g->e1, g->s), "cuEventRecord") ||
          !ok(g, g->cu->cuEventSynchronize(g->e1), "cuEventSynchronize") ||
          !ok(g, g->cu->cuEventElapsedTime(&f, g->e0, g->e1), "cuEventElapsedTime"))
        break;
      double gbs = f > 0 ? 2.0 * (double)bytes / ((double)f * 1e6) : 0;
      if (i > 0 && gbs > best) best = gbs; /* the first warms up */
    }
  }
  if (a && !g->dead) g->cu->cuMemFree(a);
  if (b && !g->dead) g->cu->cuMemFree(b);
  return best;
}

/* What open_device made; nothing after a CUDA error (the context is lost
 * and goes with the process) */
static void close_device(jg *g) {
  pristine_free(g);
  hout_free(g);
  if (!g->cu || g->dead) return;
  if (g->spin_mod) g->cu->cuModuleUnload(g->spin_mod);
  if (g->cmp_mod) g->cu->cuModuleUnload(g->cmp_mod);
  if (g->cmp_at) g->cu->cuMemFree(g->cmp_at);
  if (g->flush) g->cu->cuMemFree(g->flush);
  if (g->e0) g->cu->cuEventDestroy(g->e0);
  if (g->e1) g->cu->cuEventDestroy(g->e1);
  if (g->s) g->cu->cuStreamDestroy(g->s);
  if (g->ctx) {
    CUcontext c;
    g->cu->cuCtxPopCurrent(&c);
    g->cu->cuDevicePrimaryCtxRelease(g->dev);
  }
}

void kf_jgpu_run(const kf_jwork *w, kf_jreport *r) {
  memset(r, 0, sizeof *r);
  r->magic = KF_JREPORT_MAGIC;
  jg g;
  memset(&g, 0, sizeof g);
  g.why = r->gpu_error;
  g.n = sizeof r->gpu_error;
  double t0 = kf_now_s();
  if (!open_device(&g, w, r)) {
    close_device(&g);
    report_send(r);
    return;
  }
  r->gpu_ok = 1;
  if (w->sanitize) {
    /* one run a set in exact buffers, the tool watching: no bandwidth, no
     * references, no copies of the inputs on the device */
    g.exact = true;
    g.gran = 0;
    r->open_s = kf_now_s() - t0;
    r->refs_ready = 1;
    report_send(r);
    char swhy[512];
    g.why = swhy;
    g.n = sizeof swhy;
    for (int k = 0; k < w->n_units; k++) {
      if (!w->units[k]) continue;
      if (g.dead) {
        r->res[k].skipped = 1;
        continue;
      }
      sanitize_unit(&g, w, k, &r->res[k]);
      report_send(r);
    }
    close_device(&g);
    return;
  }
  r->bw_gbs = bandwidth(&g);
  r->open_s = kf_now_s() - t0;
  if (g.dead) {
    r->gpu_ok = 0;
    report_send(r);
    return;
  }
  char why[512];
  g.why = why;
  g.n = sizeof why;
  /* the device is there: a worker that dies from here on died of the work */
  report_send(r);
  if (!hout_make(&g, w->task)) {
    snprintf(r->gpu_error, sizeof r->gpu_error, "the worker ran out of host memory");
    r->ref_failed = 1;
    report_send(r);
    close_device(&g);
    return;
  }
  if (!pristine_make(&g, w)) {
    snprintf(r->gpu_error, sizeof r->gpu_error, "uploading the input sets: %.400s", why);
    r->ref_failed = 1;
    report_send(r);
    close_device(&g);
    return;
  }
  if (w->ref_unit) {
    char rwhy[400] = "";
    why[0] = 0;
    t0 = kf_now_s();
    bool made = make_refs(&g, w, rwhy, sizeof rwhy);
    r->refs_s = kf_now_s() - t0;
    if (!made) {
      r->ref_failed = 1;
      snprintf(r->gpu_error, sizeof r->gpu_error, "the GPU reference (the built-in fp64 unit) failed: %s",
               rwhy[0] ? rwhy : why);
      report_send(r);
      close_device(&g);
      return;
    }
  }
  r->refs_ready = 1;
  report_send(r);
  for (int k = 0; k < w->n_units; k++) {
    if (!w->units[k]) continue;
    if (g.dead) {
      r->res[k].skipped = 1;
      snprintf(r->res[k].reason, sizeof r->res[k].reason,
               "not judged: the worker's CUDA context was lost to the unit before it");
      continue;
    }
    judge_unit(&g, w, k, r->l2_bytes, &r->res[k]);
    bool bad = false;
    if (!g.dead && !pristine_verify(&g, w, &bad)) {
      r->res[k].ok = 0;
      snprintf(r->res[k].reason, sizeof r->res[k].reason, "after its runs, checking the judge's input copies: %.400s",
               why);
    } else if (bad) {
      r->res[k].ok = 0;
      snprintf(r->res[k].reason, sizeof r->res[k].reason,
               "it wrote outside its buffers: the judge's device copies of the input sets changed while it ran");
    }
    report_send(r);
  }
  close_device(&g);
}

int kf_jreport_fd = -1;

static void report_send(kf_jreport *r) {
  if (kf_jreport_fd < 0) return;
  const char *p = (const char *)r;
  size_t left = sizeof *r;
  while (left) {
    ssize_t k = write(kf_jreport_fd, p, left);
    if (k <= 0) return;
    p += k;
    left -= (size_t)k;
  }
}
