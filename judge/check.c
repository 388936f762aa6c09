/* judge/check.c — what the judge refuses before a unit reaches the GPU:
 * launch shapes the device cannot run (Hopper's limits: grid x < 2^31,
 * y and z <= 65535, blocks of at most 1024 threads with z <= 64, at most
 * 227 KiB of dynamic shared memory), arguments naming a value or buffer
 * the task does not have or pointing outside it, a source that includes
 * what a unit may not (agent/unit_source.c), memsets and copies
 * writing an input or running past their buffer, library steps' operands
 * naming buffers that do not exist, scratch over the limit.
 * After compiling, kf_junit_check_params holds every launch's arguments
 * to the kernel's parameter list as its cubin gives it (agent/cubin.c):
 * the count and each one's size.
 * Each reason is one line of the verdict. Pointers inside their buffer
 * can still be indexed past it by the kernel: that is the worker's to
 * catch (an illegal address) or the verification's (poisoned buffers). */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "judge_int.h"

#define SM90_MAX_DYN_SMEM (227 * 1024)

static void why_line(kf_strbuf *why, int *n, const char *fmt, ...) KF_PRINTF(3, 4);
static void why_line(kf_strbuf *why, int *n, const char *fmt, ...) {
  char b[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b, sizeof b, fmt, ap);
  va_end(ap);
  if (*n < 20) kf_strbuf_printf(why, "%s\n", b); /* the first 20 are enough */
  (*n)++;
}

bool kf_junit_has_library_steps(const kf_unit *u) {
  for (int s = 0; s < u->n_steps; s++)
    if (u->steps[s].kind == KF_USTEP_GEMM || u->steps[s].kind == KF_USTEP_CONV) return true;
  return false;
}

/* Bytes of the buffer a pointer argument names, or -1 when there is none */
static int64_t arg_buffer(const kf_jtask *t, const kf_unit *u, const kf_unit_arg *a) {
  switch (a->kind) {
  case KF_UARG_INPUT: return a->index >= 0 && a->index < t->n_in ? t->in[a->index].bytes : -1;
  case KF_UARG_OUTPUT: return a->index >= 0 && a->index < t->n_out ? t->out[a->index].bytes : -1;
  case KF_UARG_SCRATCH: return a->index >= 0 && a->index < u->n_scratch ? u->scratch_bytes[a->index] : -1;
  default: return -1;
  }
}

static const char *arg_kind(kf_unit_arg_kind k) {
  switch (k) {
  case KF_UARG_INPUT: return "input";
  case KF_UARG_OUTPUT: return "output";
  case KF_UARG_SCRATCH: return "scratch";
  case KF_UARG_I64: return "i64";
  case KF_UARG_I32: return "i32";
  case KF_UARG_F32: return "f32";
  case KF_UARG_F64: return "f64";
  default: return "value";
  }
}

static bool is_ptr(kf_unit_arg_kind k) { return k == KF_UARG_INPUT || k == KF_UARG_OUTPUT || k == KF_UARG_SCRATCH; }

/* A range [a.i, a.i + len) of the buffer a names, a destination or not */
static void check_range(const kf_jtask *t, const kf_unit *u, int s, int k, const kf_unit_arg *a, int64_t len,
                        bool dest, kf_strbuf *why, int *n) {
  if (!is_ptr(a->kind)) {
    why_line(why, n, "step %d: argument %d must be a buffer", s, k);
    return;
  }
  if (dest && a->kind == KF_UARG_INPUT) {
    why_line(why, n, "step %d: writes input %d (inputs are read-only)", s, a->index);
    return;
  }
  int64_t b = arg_buffer(t, u, a);
  if (len < 0 || a->i < 0 || a->i > b || len > b - a->i)
    why_line(why, n, "step %d: %lld bytes at offset %lld of %s %d, which has %lld", s, (long long)len,
             (long long)a->i, arg_kind(a->kind), a->index, (long long)b);
}

/* Step s's pointer arguments name buffers that exist and point inside
 * them; with launch, NONE (absent library operands) is refused too */
static void check_ptrs(const kf_jtask *t, const kf_unit *u, int s, const kf_unit_step *st, bool launch,
                       kf_strbuf *why, int *n) {
  for (int k = 0; k < st->n_args; k++) {
    const kf_unit_arg *a = &st->args[k];
    if (launch && a->kind == KF_UARG_NONE) why_line(why, n, "step %d: argument %d is NONE (library steps only)", s, k);
    if (!is_ptr(a->kind)) continue;
    int64_t bb = arg_buffer(t, u, a);
    if (bb < 0)
      why_line(why, n, "step %d: argument %d names %s %d, which does not exist", s, k, arg_kind(a->kind), a->index);
    else if (a->i < 0 || (a->i >= bb && !(a->i == 0 && bb == 0)))
      why_line(why, n, "step %d: argument %d points %lld bytes into %s %d, which has %lld", s, k, (long long)a->i,
               arg_kind(a->kind), a->index, (long long)bb);
  }
}

bool kf_junit_check(const kf_jtask *t, const kf_unit *u, const kf_judge_options *o, kf_strbuf *why) {
  int n = 0;
  if (u->n_steps < 1) why_line(why, &n, "the unit has no steps");
  if (u->source) { /* what the source may include (agent/unit_source.c) */
    kf_strbuf inc = {0};
    if (!kf_unit_source_check(u->source, NULL, &inc)) {
      for (char *l = inc.data; l && *l;) {
        char *e = strchr(l, '\n');
        if (e) *e = '\0';
        why_line(why, &n, "source %s", l);
        l = e ? e + 1 : l + strlen(l);
      }
    }
    kf_strbuf_fini(&inc);
  }
  int64_t scratch = 0;
  for (int i = 0; i < u->n_scratch; i++) {
    if (u->scratch_bytes[i] < 0) why_line(why, &n, "scratch %d has a negative size", i);
    else scratch += u->scratch_bytes[i];
  }
  if (scratch > o->max_scratch_bytes)
    why_line(why, &n, "scratch buffers of %lld bytes, over the judge's limit of %lld", (long long)scratch,
             (long long)o->max_scratch_bytes);
  for (int s = 0; s < u->n_steps; s++) {
    const kf_unit_step *st = &u->steps[s];
    switch (st->kind) {
    case KF_USTEP_GEMM:
    case KF_USTEP_CONV:
      /* the runtime checks the operands against the step's shape */
      check_ptrs(t, u, s, st, false, why, &n);
      break;
    case KF_USTEP_MEMSET:
      if (st->n_args != 2 || st->args[1].kind != KF_UARG_I64) why_line(why, &n, "step %d: memset needs (buffer, I64 bytes)", s);
      else check_range(t, u, s, 0, &st->args[0], st->args[1].i, true, why, &n);
      break;
    case KF_USTEP_COPY:
      if (st->n_args != 3 || st->args[2].kind != KF_UARG_I64) {
        why_line(why, &n, "step %d: copy needs (destination, source, I64 bytes)", s);
      } else {
        check_range(t, u, s, 0, &st->args[0], st->args[2].i, true, why, &n);
        check_range(t, u, s, 1, &st->args[1], st->args[2].i, false, why, &n);
      }
      break;
    case KF_USTEP_LAUNCH: {
      if (!st->kernel || !st->kernel[0]) why_line(why, &n, "step %d: a launch names no kernel", s);
      if (!u->source) why_line(why, &n, "step %d: a launch, but the unit has no source", s);
      const uint32_t *g = st->grid, *b = st->block;
      if (!g[0] || !g[1] || !g[2] || g[0] > 0x7fffffffu || g[1] > 65535 || g[2] > 65535)
        why_line(why, &n, "step %d: grid (%u, %u, %u) outside what the device launches (x < 2^31, y and z <= 65535, none 0)",
                 s, g[0], g[1], g[2]);
      uint64_t threads = (uint64_t)b[0] * b[1] * b[2];
      if (!b[0] || !b[1] || !b[2] || b[0] > 1024 || b[1] > 1024 || b[2] > 64 || threads > 1024)
        why_line(why, &n, "step %d: block (%u, %u, %u) outside what the device launches (at most 1024 threads, z <= 64, none 0)",
                 s, b[0], b[1], b[2]);
      if (st->smem > SM90_MAX_DYN_SMEM)
        why_line(why, &n, "step %d: %u bytes of dynamic shared memory, over sm_90's %d", s, st->smem, SM90_MAX_DYN_SMEM);
      check_ptrs(t, u, s, st, true, why, &n);
      break;
    }
    default: why_line(why, &n, "step %d: unknown kind %d", s, (int)st->kind); break;
    }
  }
  if (n > 20) kf_strbuf_printf(why, "(%d more)\n", n - 20);
  return n == 0;
}

static int arg_bytes(kf_unit_arg_kind k) {
  switch (k) {
  case KF_UARG_I32:
  case KF_UARG_F32: return 4;
  case KF_UARG_NONE: return 0;
  default: return 8; /* pointers, I64, F64 */
  }
}

bool kf_junit_check_params(const kf_unit *u, kf_strbuf *why) {
  int n = 0;
  if (!u->cubin) return true;
  for (int s = 0; s < u->n_steps; s++) {
    const kf_unit_step *st = &u->steps[s];
    if (st->kind != KF_USTEP_LAUNCH || !st->kernel) continue;
    int sizes[256];
    char w[300];
    int count = kf_cubin_params(u->cubin, u->cubin_bytes, st->kernel, sizes, 256, w, sizeof w);
    if (count == -1) continue; /* a table this reader does not know: the launch as the unit says */
    if (count == -2) {
      why_line(why, &n, "step %d: %s", s, w);
      continue;
    }
    if (count != st->n_args) {
      why_line(why, &n, "step %d: kernel %s takes %d parameter%s, the launch passes %d", s, st->kernel, count,
               count == 1 ? "" : "s", st->n_args);
      continue;
    }
    for (int k = 0; k < count; k++)
      if (sizes[k] != arg_bytes(st->args[k].kind))
        why_line(why, &n, "step %d: argument %d of kernel %s is %d bytes (%s), its parameter %d bytes", s, k,
                 st->kernel, arg_bytes(st->args[k].kind), arg_kind(st->args[k].kind), sizes[k]);
  }
  if (n > 20) kf_strbuf_printf(why, "(%d more)\n", n - 20);
  return n == 0;
}
