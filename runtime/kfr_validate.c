/* kfr_validate.c — checks a binary plan (kfr_plan.h) completely before the
 * runtime trusts any of it: header, table bounds, string references, blob
 * ranges, every index, every record kind, and that every device range a
 * library step touches lies inside its buffer. A plan that passes can be
 * walked without further checks; one that fails gets KFUSE_EPLAN and a
 * one-line message naming the record ("plan: step 3 (g2_gemm): ...").
 *
 * No CUDA here: the compiler's plan writer links this file too. All
 * arithmetic on plan values goes through the overflow-checked helpers. */
#include <elf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfr_int.h"

typedef struct chk {
  const uint8_t *p;
  const kfr_header *h;
  char *msg;
  size_t n;
} chk;

static int bad(chk *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad(chk *c, const char *fmt, ...) {
  if (c->msg && c->n) {
    int k = snprintf(c->msg, c->n, "plan: ");
    if (k < 0 || (size_t)k >= c->n)
      k = 0;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg + k, c->n - (size_t)k, fmt, ap);
    va_end(ap);
  }
  return KFUSE_EPLAN;
}

uint32_t kfr_dtype_size(uint32_t dtype) {
  switch (dtype) {
  case KFUSE_DTYPE_F32: return 4;
  case KFUSE_DTYPE_F64: return 8;
  case KFUSE_DTYPE_F16: return 2;
  case KFUSE_DTYPE_BF16: return 2;
  case KFUSE_DTYPE_I64: return 8;
  case KFUSE_DTYPE_I32: return 4;
  case KFUSE_DTYPE_I16: return 2;
  case KFUSE_DTYPE_I8: return 1;
  case KFUSE_DTYPE_U8: return 1;
  case KFUSE_DTYPE_BOOL: return 1;
  default: return 0;
  }
}

/* [off, off + len) inside [lo, hi)? Without overflow. */
static bool within(uint64_t off, uint64_t len, uint64_t lo, uint64_t hi) {
  uint64_t end;
  if (off < lo || off > hi || __builtin_add_overflow(off, len, &end))
    return false;
  return end <= hi;
}

static const char *str_or(const chk *c, uint32_t off) {
  if (off >= c->h->strings_bytes)
    return "?";
  return (const char *)c->p + c->h->off_strings + off;
}

static const char *buf_kind(uint32_t k) {
  switch (k) {
  case KFR_BUF_INPUT: return "input";
  case KFR_BUF_OUTPUT: return "output";
  case KFR_BUF_WEIGHT: return "weight";
  case KFR_BUF_ARENA: return "arena";
  case KFR_BUF_CONST: return "const";
  default: return "?";
  }
}

static int check_table(chk *c, const char *what, uint64_t off, uint32_t count,
                       size_t size) {
  uint64_t len;
  if (off > c->h->total_bytes)
    return bad(c, "header: %s table offset %llu is past the end (%llu bytes)",
               what, (unsigned long long)off,
               (unsigned long long)c->h->total_bytes);
  if (count == 0)
    return KFUSE_OK;
  if (off % 8)
    return bad(c, "header: %s table offset %llu is not 8-byte aligned", what,
               (unsigned long long)off);
  if (__builtin_mul_overflow((uint64_t)count, (uint64_t)size, &len) ||
      !within(off, len, sizeof(kfr_header), c->h->total_bytes))
    return bad(c, "header: %u %s records at offset %llu do not fit in the "
               "%llu-byte plan", count, what, (unsigned long long)off,
               (unsigned long long)c->h->total_bytes);
  return KFUSE_OK;
}

static int check_desc(chk *c, uint32_t i, const kfr_buffer *b,
                      const char *name) {
  const kfr_tensor_desc *d = &b->desc;
  uint32_t es = kfr_dtype_size(d->dtype);
  if (!es)
    return bad(c, "buffer %u (%s %s): unknown dtype %u", i, buf_kind(b->kind),
               name, d->dtype);
  if (d->rank > KFR_MAX_RANK)
    return bad(c, "buffer %u (%s %s): rank %u is over %d", i, buf_kind(b->kind),
               name, d->rank, KFR_MAX_RANK);
  uint64_t numel = 1;
  for (uint32_t r = 0; r < d->rank; r++) {
    if (d->shape[r] < 0)
      return bad(c, "buffer %u (%s %s): dimension %u is %lld", i,
                 buf_kind(b->kind), name, r, (long long)d->shape[r]);
    if (__builtin_mul_overflow(numel, (uint64_t)d->shape[r], &numel))
      return bad(c, "buffer %u (%s %s): element count overflows", i,
                 buf_kind(b->kind), name);
  }
  uint64_t bytes;
  if (__builtin_mul_overflow(numel, (uint64_t)es, &bytes))
    return bad(c, "buffer %u (%s %s): %llu elements of %u bytes overflow a "
               "64-bit byte count", i, buf_kind(b->kind), name,
               (unsigned long long)numel, es);
  if (bytes != b->nbytes)
    return bad(c, "buffer %u (%s %s): nbytes is %llu, its shape and dtype "
               "need %llu", i, buf_kind(b->kind), name,
               (unsigned long long)b->nbytes, (unsigned long long)bytes);
  return KFUSE_OK;
}

static int check_buffers(chk *c, uint8_t *in_seen, uint8_t *out_seen) {
  const kfr_header *h = c->h;
  const kfr_buffer *bufs = (const kfr_buffer *)(c->p + h->off_buffers);
  bool embedded = h->flags & KFR_FLAG_WEIGHTS_EMBEDDED;
  uint64_t blo = h->off_blobs, bhi = h->off_blobs + h->blobs_bytes;
  for (uint32_t i = 0; i < h->n_buffers; i++) {
    const kfr_buffer *b = &bufs[i];
    if (b->name >= h->strings_bytes)
      return bad(c, "buffer %u: name offset %u is outside the %llu-byte "
                 "string section", i, b->name,
                 (unsigned long long)h->strings_bytes);
    const char *name = str_or(c, b->name);
    switch (b->kind) {
    case KFR_BUF_INPUT:
    case KFR_BUF_OUTPUT: {
      bool in = b->kind == KFR_BUF_INPUT;
      uint32_t count = in ? h->n_inputs : h->n_outputs;
      uint8_t *seen = in ? in_seen : out_seen;
      if (b->index >= count)
        return bad(c, "buffer %u (%s %s): index %u, the model has %u %ss", i,
                   buf_kind(b->kind), name, b->index, count, buf_kind(b->kind));
      if (seen[b->index]++)
        return bad(c, "buffer %u (%s %s): %s %u has more than one buffer", i,
                   buf_kind(b->kind), name, buf_kind(b->kind), b->index);
      int rc = check_desc(c, i, b, name);
      if (rc)
        return rc;
      break;
    }
    case KFR_BUF_WEIGHT:
      if (embedded ? !within(b->offset, b->nbytes, blo, bhi)
                   : !within(b->offset, b->nbytes, 0, h->weights_bytes))
        return bad(c, "buffer %u (weight %s): bytes [%llu, +%llu) are outside "
                   "the %s", i, name, (unsigned long long)b->offset,
                   (unsigned long long)b->nbytes,
                   embedded ? "blob section" : "weights file's size");
      break;
    case KFR_BUF_ARENA:
      if (!within(b->offset, b->nbytes, 0, h->arena_bytes))
        return bad(c, "buffer %u (arena %s): bytes [%llu, +%llu) are outside "
                   "the %llu-byte arena", i, name, (unsigned long long)b->offset,
                   (unsigned long long)b->nbytes,
                   (unsigned long long)h->arena_bytes);
      break;
    case KFR_BUF_CONST:
      if (!within(b->offset, b->nbytes, blo, bhi))
        return bad(c, "buffer %u (const %s): bytes [%llu, +%llu) are outside "
                   "the blob section", i, name, (unsigned long long)b->offset,
                   (unsigned long long)b->nbytes);
      break;
    default:
      return bad(c, "buffer %u (%s): unknown kind %u", i, name, b->kind);
    }
  }
  for (uint32_t i = 0; i < h->n_inputs; i++)
    if (!in_seen[i])
      return bad(c, "input %u has no buffer", i);
  for (uint32_t i = 0; i < h->n_outputs; i++)
    if (!out_seen[i])
      return bad(c, "output %u has no buffer", i);
  return KFUSE_OK;
}

static int check_args(chk *c) {
  const kfr_header *h = c->h;
  const kfr_arg *args = (const kfr_arg *)(c->p + h->off_args);
  const kfr_buffer *bufs = (const kfr_buffer *)(c->p + h->off_buffers);
  for (uint32_t i = 0; i < h->n_args; i++) {
    const kfr_arg *a = &args[i];
    switch (a->kind) {
    case KFR_ARG_PTR:
      if (a->buffer >= h->n_buffers)
        return bad(c, "arg %u: buffer %u, the plan has %u", i, a->buffer,
                   h->n_buffers);
      if (a->offset < 0 || (uint64_t)a->offset > bufs[a->buffer].nbytes)
        return bad(c, "arg %u: offset %lld is outside buffer %u (%s %s, %llu "
                   "bytes)", i, (long long)a->offset, a->buffer,
                   buf_kind(bufs[a->buffer].kind),
                   str_or(c, bufs[a->buffer].name),
                   (unsigned long long)bufs[a->buffer].nbytes);
      break;
    case KFR_ARG_I32:
      if (a->offset < INT32_MIN || a->offset > INT32_MAX)
        return bad(c, "arg %u: I32 value %lld does not fit in 32 bits", i,
                   (long long)a->offset);
      break;
    case KFR_ARG_I64:
    case KFR_ARG_F32:
    case KFR_ARG_F64:
    case KFR_ARG_NONE:
      break;
    default:
      return bad(c, "arg %u: unknown kind %u", i, a->kind);
    }
  }
  return KFUSE_OK;
}

/* A row-major operand: rows x cols with leading dimension ld, batch
 * matrices stride elements apart, at arg a. Its whole extent must lie in
 * the buffer. */
static int check_operand(chk *c, uint32_t s, const char *sname,
                         const char *what, const kfr_arg *a, int64_t rows,
                         int64_t cols, int64_t ld, int64_t batch,
                         int64_t stride, uint32_t es) {
  const kfr_buffer *bufs = (const kfr_buffer *)(c->p + c->h->off_buffers);
  if (a->kind != KFR_ARG_PTR)
    return bad(c, "step %u (%s): GEMM operand %s is not a pointer arg", s,
               sname, what);
  if (ld < cols || ld < 1)
    return bad(c, "step %u (%s): GEMM operand %s has leading dimension %lld, "
               "below its %lld columns", s, sname, what, (long long)ld,
               (long long)cols);
  if (stride < 0)
    return bad(c, "step %u (%s): GEMM operand %s has batch stride %lld", s,
               sname, what, (long long)stride);
  /* elements = (batch-1)*stride + (rows-1)*ld + cols */
  uint64_t e1, e2, e, bytes;
  if (__builtin_mul_overflow((uint64_t)(batch - 1), (uint64_t)stride, &e1) ||
      __builtin_mul_overflow((uint64_t)(rows - 1), (uint64_t)ld, &e2) ||
      __builtin_add_overflow(e1, e2, &e) ||
      __builtin_add_overflow(e, (uint64_t)cols, &e) ||
      __builtin_mul_overflow(e, (uint64_t)es, &bytes) ||
      !within((uint64_t)a->offset, bytes, 0, bufs[a->buffer].nbytes))
    return bad(c, "step %u (%s): GEMM operand %s (%lld x %lld, ld %lld, batch "
               "%lld, stride %lld) does not fit in buffer %u (%s %s, %llu bytes) "
               "at offset %lld", s, sname, what, (long long)rows,
               (long long)cols, (long long)ld, (long long)batch,
               (long long)stride, a->buffer, buf_kind(bufs[a->buffer].kind),
               str_or(c, bufs[a->buffer].name),
               (unsigned long long)bufs[a->buffer].nbytes,
               (long long)a->offset);
  return KFUSE_OK;
}

static int check_gemm(chk *c, uint32_t s, const char *sname,
                      const kfr_step *st, const kfr_arg *a) {
  const kfr_gemm *g = &st->gemm;
  const kfr_buffer *bufs = (const kfr_buffer *)(c->p + c->h->off_buffers);
  if (st->n_args != 6)
    return bad(c, "step %u (%s): a GEMM step has 6 args, this one %u", s, sname,
               st->n_args);
  if (g->m < 1 || g->n < 1 || g->k < 1 || g->batch < 1)
    return bad(c, "step %u (%s): GEMM sizes m=%lld n=%lld k=%lld batch=%lld "
               "must be positive", s, sname, (long long)g->m, (long long)g->n,
               (long long)g->k, (long long)g->batch);
  if (g->m > INT32_MAX || g->n > INT32_MAX || g->k > INT32_MAX ||
      g->batch > INT32_MAX)
    return bad(c, "step %u (%s): GEMM sizes over 2^31", s, sname);
  if (g->trans_a > 1 || g->trans_b > 1 || g->has_c > 1)
    return bad(c, "step %u (%s): GEMM trans_a/trans_b/has_c must be 0 or 1",
               s, sname);
  uint32_t es;
  switch (g->dtype) {
  case KFUSE_DTYPE_F32:
  case KFUSE_DTYPE_F64:
  case KFUSE_DTYPE_F16:
  case KFUSE_DTYPE_BF16:
    es = kfr_dtype_size(g->dtype);
    break;
  default:
    return bad(c, "step %u (%s): GEMM dtype %u is not f32, f64, f16 or bf16",
               s, sname, g->dtype);
  }
  if (g->compute < KFR_COMPUTE_32F || g->compute > KFR_COMPUTE_32F_F16)
    return bad(c, "step %u (%s): unknown GEMM compute %u", s, sname,
               g->compute);
  if (g->epilogue > KFR_EPI_GELU)
    return bad(c, "step %u (%s): unknown GEMM epilogue %u", s, sname,
               g->epilogue);
  if (!g->has_c && g->beta != 0.0)
    return bad(c, "step %u (%s): GEMM beta is %g but the step has no C", s,
               sname, g->beta);
  int rc;
  int64_t ar = g->trans_a ? g->k : g->m, ac = g->trans_a ? g->m : g->k;
  int64_t br = g->trans_b ? g->n : g->k, bc = g->trans_b ? g->k : g->n;
  if ((rc = check_operand(c, s, sname, "A", &a[0], ar, ac, g->lda, g->batch,
                          g->stride_a, es)) ||
      (rc = check_operand(c, s, sname, "B", &a[1], br, bc, g->ldb, g->batch,
                          g->stride_b, es)) ||
      (rc = check_operand(c, s, sname, "D", &a[3], g->m, g->n, g->ldd,
                          g->batch, g->stride_d, es)))
    return rc;
  if (g->has_c) {
    if ((rc = check_operand(c, s, sname, "C", &a[2], g->m, g->n, g->ldc,
                            g->batch, g->stride_c, es)))
      return rc;
  } else if (a[2].kind != KFR_ARG_NONE) {
    return bad(c, "step %u (%s): GEMM without C has arg 2 of kind %u, not NONE",
               s, sname, a[2].kind);
  }
  bool bias = g->epilogue == KFR_EPI_BIAS || g->epilogue == KFR_EPI_RELU_BIAS ||
              g->epilogue == KFR_EPI_GELU_BIAS;
  if (bias) {
    if ((rc = check_operand(c, s, sname, "bias", &a[4], 1, g->n, g->n, 1, 0,
                            es)))
      return rc;
  } else if (a[4].kind != KFR_ARG_NONE) {
    return bad(c, "step %u (%s): GEMM without bias epilogue has arg 4 of kind "
               "%u, not NONE", s, sname, a[4].kind);
  }
  if (g->workspace_bytes) {
    if (a[5].kind != KFR_ARG_PTR)
      return bad(c, "step %u (%s): GEMM workspace of %llu bytes has no pointer "
                 "arg", s, sname, (unsigned long long)g->workspace_bytes);
    if (!within((uint64_t)a[5].offset, g->workspace_bytes, 0,
                bufs[a[5].buffer].nbytes))
      return bad(c, "step %u (%s): GEMM workspace of %llu bytes does not fit in "
                 "buffer %u at offset %lld", s, sname,
                 (unsigned long long)g->workspace_bytes, a[5].buffer,
                 (long long)a[5].offset);
  } else if (a[5].kind != KFR_ARG_NONE && a[5].kind != KFR_ARG_PTR) {
    return bad(c, "step %u (%s): GEMM workspace arg has kind %u", s, sname,
               a[5].kind);
  }
  return KFUSE_OK;
}

/* A dense conv operand of `elems` elements at arg a (PTR or, when absent,
 * NONE). */
static int check_conv_operand(chk *c, uint32_t s, const char *sname,
                              const char *what, const kfr_arg *a, bool present,
                              uint64_t elems, uint32_t es) {
  const kfr_buffer *bufs = (const kfr_buffer *)(c->p + c->h->off_buffers);
  if (!present) {
    if (a->kind != KFR_ARG_NONE)
      return bad(c, "step %u (%s): CONV without %s has that arg of kind %u, not "
                 "NONE", s, sname, what, a->kind);
    return KFUSE_OK;
  }
  if (a->kind != KFR_ARG_PTR)
    return bad(c, "step %u (%s): CONV operand %s is not a pointer arg", s,
               sname, what);
  if (!within((uint64_t)a->offset, elems * es, 0, bufs[a->buffer].nbytes))
    return bad(c, "step %u (%s): CONV operand %s (%llu elements) does not fit "
               "in buffer %u (%s %s, %llu bytes) at offset %lld", s, sname, what,
               (unsigned long long)elems, a->buffer,
               buf_kind(bufs[a->buffer].kind), str_or(c, bufs[a->buffer].name),
               (unsigned long long)bufs[a->buffer].nbytes, (long long)a->offset);
  return KFUSE_OK;
}

/* Product of v[0..n) into *out, false when it passes INT32_MAX. */
static bool prod31(const int64_t *v, int n, uint64_t base, uint64_t *out) {
  uint64_t p = base;
  for (int i = 0; i < n; i++)
    if (__builtin_mul_overflow(p, (uint64_t)v[i], &p) || p > INT32_MAX)
      return false;
  *out = p;
  return true;
}

static int check_conv(chk *c, uint32_t s, const char *sname,
                      const kfr_step *st, const kfr_arg *a) {
  const kfr_conv *v = &st->conv;
  if (st->n_args != 6)
    return bad(c, "step %u (%s): a CONV step has 6 args, this one %u", s, sname,
               st->n_args);
  if (v->nd < 1 || v->nd > 3)
    return bad(c, "step %u (%s): CONV nd is %u, not 1, 2 or 3", s, sname,
               v->nd);
  if (v->dtype != KFUSE_DTYPE_F32 && v->dtype != KFUSE_DTYPE_F16 &&
      v->dtype != KFUSE_DTYPE_BF16)
    return bad(c, "step %u (%s): CONV dtype %u is not f32, f16 or bf16", s,
               sname, v->dtype);
  if (v->compute < KFR_COMPUTE_32F || v->compute > KFR_COMPUTE_32F_F16)
    return bad(c, "step %u (%s): unknown CONV compute %u", s, sname,
               v->compute);
  if (v->activation > KFR_ACT_RELU)
    return bad(c, "step %u (%s): unknown CONV activation %u", s, sname,
               v->activation);
  if (v->has_bias > 1 || v->has_z > 1)
    return bad(c, "step %u (%s): CONV has_bias/has_z must be 0 or 1", s,
               sname);
  if (v->layout > KFR_CONV_NHWC || v->transposed > 1)
    return bad(c, "step %u (%s): CONV layout %u, transposed %u: the layout is 0 "
               "(NCHW) or 1 (NHWC), transposed 0 or 1", s, sname, v->layout,
               v->transposed);
  if (v->layout == KFR_CONV_NHWC && v->nd != 2 && v->nd != 3)
    return bad(c, "step %u (%s): an NHWC CONV step is 2-d or 3-d, this one %u-d", s,
               sname, v->nd);
  if (v->transposed && (v->has_bias || v->has_z || v->activation != KFR_ACT_NONE))
    return bad(c, "step %u (%s): a transposed CONV step has no bias, residual "
               "or activation", s, sname);
  if (v->n < 1 || v->c < 1 || v->k < 1 || v->groups < 1)
    return bad(c, "step %u (%s): CONV sizes n=%lld c=%lld k=%lld groups=%lld "
               "must be positive", s, sname, (long long)v->n, (long long)v->c,
               (long long)v->k, (long long)v->groups);
  if (v->c % v->groups || v->k % v->groups)
    return bad(c, "step %u (%s): CONV channels c=%lld and k=%lld are not "
               "multiples of groups=%lld", s, sname, (long long)v->c,
               (long long)v->k, (long long)v->groups);
  for (uint32_t d = 0; d < 3; d++) {
    if (d >= v->nd) {
      if (v->in[d] != 1 || v->filter[d] != 1 || v->out[d] != 1 ||
          v->pad[d] != 0 || v->stride[d] != 1 || v->dilation[d] != 1)
        return bad(c, "step %u (%s): CONV spatial dim %u is past nd=%u but not "
                   "1 (pad 0)", s, sname, d, v->nd);
      continue;
    }
    if (v->in[d] < 1 || v->filter[d] < 1 || v->stride[d] < 1 ||
        v->dilation[d] < 1 || v->pad[d] < 0 || v->in[d] > INT32_MAX ||
        v->filter[d] > INT32_MAX || v->stride[d] > INT32_MAX ||
        v->dilation[d] > INT32_MAX || v->pad[d] > INT32_MAX)
      return bad(c, "step %u (%s): CONV dim %u: input %lld, filter %lld, stride "
                 "%lld, dilation %lld must be positive and padding %lld "
                 "non-negative, all under 2^31", s, sname, d,
                 (long long)v->in[d], (long long)v->filter[d],
                 (long long)v->stride[d], (long long)v->dilation[d],
                 (long long)v->pad[d]);
    /* out = (in + 2 pad - dilation (filter - 1) - 1) / stride + 1, in and
     * out swapped for a transposed step (cuDNN's backward data) */
    int64_t src = v->transposed ? v->out[d] : v->in[d];
    int64_t dst = v->transposed ? v->in[d] : v->out[d];
    if (v->out[d] < 1 || v->out[d] > INT32_MAX)
      return bad(c, "step %u (%s): CONV dim %u: output size %lld is not in "
                 "[1, 2^31)", s, sname, d, (long long)v->out[d]);
    int64_t span = src + 2 * v->pad[d] - v->dilation[d] * (v->filter[d] - 1);
    int64_t want = span >= 1 ? (span - 1) / v->stride[d] + 1 : 0;
    if (want < 1 || dst != want)
      return bad(c, "step %u (%s): CONV dim %u: %s size %lld, %s %lld with "
                 "filter %lld, padding %lld, stride %lld and dilation %lld "
                 "gives %lld", s, sname, d, v->transposed ? "input" : "output",
                 (long long)dst, v->transposed ? "transposed output" : "input",
                 (long long)src, (long long)v->filter[d], (long long)v->pad[d],
                 (long long)v->stride[d], (long long)v->dilation[d],
                 (long long)want);
  }
  uint64_t nx, nw, ny;
  if (!prod31(v->in, 3, (uint64_t)v->n, &nx) || !prod31(&v->c, 1, nx, &nx) ||
      !prod31(v->filter, 3, (uint64_t)v->k, &nw) ||
      !prod31(v->out, 3, (uint64_t)v->n, &ny) || !prod31(&v->k, 1, ny, &ny))
    return bad(c, "step %u (%s): CONV operand of 2^31 elements or more (cuDNN's "
               "legacy API counts in int)", s, sname);
  nw *= (uint64_t)(v->c / v->groups);
  if (nw > INT32_MAX)
    return bad(c, "step %u (%s): CONV filter of 2^31 elements or more", s,
               sname);
  if (!v->has_bias && (v->activation != KFR_ACT_NONE || v->has_z))
    return bad(c, "step %u (%s): CONV with an activation or a residual input "
               "needs a bias (cuDNN's fused call takes one)", s, sname);
  if (!v->has_z && v->alpha2 != 0.0)
    return bad(c, "step %u (%s): CONV alpha2 is %g but the step has no z", s,
               sname, v->alpha2);
  uint32_t es = kfr_dtype_size(v->dtype);
  int rc;
  if ((rc = check_conv_operand(c, s, sname, "x", &a[0], true, nx, es)) ||
      (rc = check_conv_operand(c, s, sname, "w", &a[1], true, nw, es)) ||
      (rc = check_conv_operand(c, s, sname, "y", &a[2], true, ny, es)) ||
      (rc = check_conv_operand(c, s, sname, "bias", &a[3], v->has_bias,
                               (uint64_t)v->k, es)) ||
      (rc = check_conv_operand(c, s, sname, "z", &a[4], v->has_z, ny, es)))
    return rc;
  /* the workspace is the runtime's own (plan version 4) */
  if (a[5].kind != KFR_ARG_NONE)
    return bad(c, "step %u (%s): CONV arg 5 has kind %u; the workspace is "
               "not in the plan", s, sname, a[5].kind);
  return KFUSE_OK;
}

static int check_range(chk *c, uint32_t s, const char *sname, const char *what,
                       const kfr_arg *p, int64_t bytes) {
  const kfr_buffer *bufs = (const kfr_buffer *)(c->p + c->h->off_buffers);
  if (p->kind != KFR_ARG_PTR)
    return bad(c, "step %u (%s): %s is not a pointer arg", s, sname, what);
  if (!within((uint64_t)p->offset, (uint64_t)bytes, 0, bufs[p->buffer].nbytes))
    return bad(c, "step %u (%s): %s range [%lld, +%lld) is outside buffer %u "
               "(%s %s, %llu bytes)", s, sname, what, (long long)p->offset,
               (long long)bytes, p->buffer, buf_kind(bufs[p->buffer].kind),
               str_or(c, bufs[p->buffer].name),
               (unsigned long long)bufs[p->buffer].nbytes);
  return KFUSE_OK;
}

static int check_steps(chk *c) {
  const kfr_header *h = c->h;
  const kfr_step *steps = (const kfr_step *)(c->p + h->off_steps);
  const kfr_arg *args = (const kfr_arg *)(c->p + h->off_args);
  const kfr_kernel *kernels = (const kfr_kernel *)(c->p + h->off_kernels);
  for (uint32_t s = 0; s < h->n_steps; s++) {
    const kfr_step *st = &steps[s];
    if (st->name >= h->strings_bytes)
      return bad(c, "step %u: name offset %u is outside the %llu-byte string "
                 "section", s, st->name, (unsigned long long)h->strings_bytes);
    const char *sname = str_or(c, st->name);
    if ((uint64_t)st->first_arg + st->n_args > h->n_args)
      return bad(c, "step %u (%s): args [%u, +%u) are outside the %u args", s,
                 sname, st->first_arg, st->n_args, h->n_args);
    const kfr_arg *a = &args[st->first_arg];
    int rc;
    switch (st->kind) {
    case KFR_STEP_LAUNCH: {
      if (st->kernel >= h->n_kernels)
        return bad(c, "step %u (%s): kernel %u, the plan has %u", s, sname,
                   st->kernel, h->n_kernels);
      for (int d = 0; d < 3; d++)
        if (st->grid[d] == 0 || st->block[d] == 0)
          return bad(c, "step %u (%s): grid or block dimension %d is 0", s,
                     sname, d);
      uint64_t threads = (uint64_t)st->block[0] * st->block[1] * st->block[2];
      if (threads > 1024)
        return bad(c, "step %u (%s): block of %llu threads is over 1024", s,
                   sname, (unsigned long long)threads);
      uint32_t allowed = kernels[st->kernel].max_dynamic_smem;
      if (st->smem > 48 * 1024 && st->smem > allowed)
        return bad(c, "step %u (%s): %u bytes of dynamic shared memory, the "
                   "kernel allows %u", s, sname, st->smem, allowed);
      for (uint32_t i = 0; i < st->n_args; i++)
        if (a[i].kind == KFR_ARG_NONE)
          return bad(c, "step %u (%s): kernel arg %u is NONE", s, sname, i);
      break;
    }
    case KFR_STEP_GEMM:
      if ((rc = check_gemm(c, s, sname, st, a)))
        return rc;
      break;
    case KFR_STEP_CONV:
      if ((rc = check_conv(c, s, sname, st, a)))
        return rc;
      break;
    case KFR_STEP_MEMSET:
      if (st->n_args != 2)
        return bad(c, "step %u (%s): a MEMSET step has 2 args, this one %u", s,
                   sname, st->n_args);
      if (a[1].kind != KFR_ARG_I64 || a[1].offset < 0)
        return bad(c, "step %u (%s): MEMSET byte count is not a non-negative "
                   "I64 arg", s, sname);
      if ((rc = check_range(c, s, sname, "MEMSET destination", &a[0],
                            a[1].offset)))
        return rc;
      break;
    case KFR_STEP_COPY:
      if (st->n_args != 3)
        return bad(c, "step %u (%s): a COPY step has 3 args, this one %u", s,
                   sname, st->n_args);
      if (a[2].kind != KFR_ARG_I64 || a[2].offset < 0)
        return bad(c, "step %u (%s): COPY byte count is not a non-negative I64 "
                   "arg", s, sname);
      if ((rc = check_range(c, s, sname, "COPY destination", &a[0],
                            a[2].offset)) ||
          (rc = check_range(c, s, sname, "COPY source", &a[1], a[2].offset)))
        return rc;
      break;
    default:
      return bad(c, "step %u (%s): unknown kind %u", s, sname, st->kind);
    }
  }
  return KFUSE_OK;
}

static uint16_t rd16(const uint8_t *p) {
  uint16_t v;
  memcpy(&v, p, sizeof v);
  return v;
}
static uint32_t rd32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}
static uint64_t rd64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* cuModuleLoadData takes no size: it trusts the image's own headers. So the
 * image must be an ELF64 cubin whose header tables and sections lie inside
 * its bytes, a fatbin whose stated size does, or NUL-terminated PTX. */
static int check_image(chk *c, uint32_t i, const uint8_t *b, uint64_t n) {
  if (n >= 4 && !memcmp(b, "\177ELF", 4)) {
    if (n < 64)
      return bad(c, "module %u: ELF image of %llu bytes, shorter than its "
                 "header", i, (unsigned long long)n);
    if (b[4] != 2 || b[5] != 1)
      return bad(c, "module %u: not a 64-bit little-endian ELF image", i);
    uint64_t phoff = rd64(b + 0x20), shoff = rd64(b + 0x28);
    uint16_t phentsize = rd16(b + 0x36), phnum = rd16(b + 0x38);
    uint16_t shentsize = rd16(b + 0x3a), shnum = rd16(b + 0x3c);
    /* the loader walks phnum entries of the size it knows: a smaller
     * e_phentsize (0 with phnum 65535 passed the range check) would let
     * the table run past the image */
    if (phnum && phentsize != sizeof(Elf64_Phdr))
      return bad(c, "module %u: ELF program header entry size %u, not %zu "
                 "(Elf64_Phdr)", i, phentsize, sizeof(Elf64_Phdr));
    if (phnum && !within(phoff, (uint64_t)phnum * phentsize, 0, n))
      return bad(c, "module %u: ELF program headers lie outside its %llu "
                 "bytes", i, (unsigned long long)n);
    if (shnum && shentsize != sizeof(Elf64_Shdr))
      return bad(c, "module %u: ELF section header entry size %u, not %zu "
                 "(Elf64_Shdr)", i, shentsize, sizeof(Elf64_Shdr));
    if (shnum && !within(shoff, (uint64_t)shnum * shentsize, 0, n))
      return bad(c, "module %u: ELF section headers lie outside its %llu "
                 "bytes", i, (unsigned long long)n);
    for (uint32_t k = 0; k < shnum; k++) {
      const uint8_t *sh = b + shoff + (uint64_t)k * shentsize;
      if (rd32(sh + 4) != 8 /* SHT_NOBITS */ &&
          !within(rd64(sh + 0x18), rd64(sh + 0x20), 0, n))
        return bad(c, "module %u: ELF section %u lies outside its %llu bytes",
                   i, k, (unsigned long long)n);
    }
    return KFUSE_OK;
  }
  if (n >= 16 && rd32(b) == 0xBA55ED50u) {
    if (!within(rd16(b + 6), rd64(b + 8), 0, n))
      return bad(c, "module %u: fatbin states more bytes than its %llu", i,
                 (unsigned long long)n);
    return KFUSE_OK;
  }
  if (b[n - 1] != 0)
    return bad(c, "module %u: neither an ELF cubin nor a fatbin, and not "
               "NUL-terminated PTX", i);
  return KFUSE_OK;
}

int kfr_plan_check(const void *plan, size_t bytes, char *msg, size_t n) {
  chk c = {plan, plan, msg, n};
  if (msg && n)
    msg[0] = 0;
  if (!plan)
    return bad(&c, "no plan (NULL)");
  if ((uintptr_t)plan % 8)
    return bad(&c, "the plan is not 8-byte aligned in memory");
  if (bytes < sizeof(kfr_header))
    return bad(&c, "%zu bytes, shorter than the %zu-byte header", bytes,
               sizeof(kfr_header));
  const kfr_header *h = plan;
  if (memcmp(h->magic, KFR_PLAN_MAGIC, 8))
    return bad(&c, "header: bad magic (not a kfuse plan)");
  if (h->version != KFR_PLAN_VERSION)
    return bad(&c, "header: version %u, this runtime reads version %u",
               h->version, KFR_PLAN_VERSION);
  if (h->header_bytes != sizeof(kfr_header))
    return bad(&c, "header: header_bytes is %u, expected %zu", h->header_bytes,
               sizeof(kfr_header));
  if (h->total_bytes != bytes)
    return bad(&c, "header: total_bytes is %llu but the plan has %zu bytes",
               (unsigned long long)h->total_bytes, bytes);
  if (h->flags & ~(uint32_t)(KFR_FLAG_WEIGHTS_EMBEDDED |
                             KFR_FLAG_WEIGHTS_BESIDE_MODULE))
    return bad(&c, "header: unknown flags 0x%x", h->flags);
  if ((h->flags & KFR_FLAG_WEIGHTS_EMBEDDED) &&
      (h->flags & KFR_FLAG_WEIGHTS_BESIDE_MODULE))
    return bad(&c, "header: flags 0x%x: weights both embedded and in a file "
               "beside the module", h->flags);
  int rc;
  if ((rc = check_table(&c, "buffer", h->off_buffers, h->n_buffers,
                        sizeof(kfr_buffer))) ||
      (rc = check_table(&c, "module", h->off_modules, h->n_modules,
                        sizeof(kfr_module))) ||
      (rc = check_table(&c, "kernel", h->off_kernels, h->n_kernels,
                        sizeof(kfr_kernel))) ||
      (rc = check_table(&c, "step", h->off_steps, h->n_steps,
                        sizeof(kfr_step))) ||
      (rc = check_table(&c, "arg", h->off_args, h->n_args, sizeof(kfr_arg))))
    return rc;
  if (h->strings_bytes == 0 ||
      !within(h->off_strings, h->strings_bytes, sizeof(kfr_header), bytes))
    return bad(&c, "header: string section [%llu, +%llu) is empty or outside "
               "the %zu-byte plan", (unsigned long long)h->off_strings,
               (unsigned long long)h->strings_bytes, bytes);
  if (c.p[h->off_strings + h->strings_bytes - 1] != 0)
    return bad(&c, "header: the string section does not end in a NUL");
  if (!within(h->off_blobs, h->blobs_bytes, 0, bytes) ||
      (h->blobs_bytes && h->off_blobs < sizeof(kfr_header)))
    return bad(&c, "header: blob section [%llu, +%llu) is outside the "
               "%zu-byte plan", (unsigned long long)h->off_blobs,
               (unsigned long long)h->blobs_bytes, bytes);
  if (h->model_name >= h->strings_bytes)
    return bad(&c, "header: model name offset %u is outside the string "
               "section", h->model_name);
  if (h->weights_path >= h->strings_bytes)
    return bad(&c, "header: weights path offset %u is outside the string "
               "section", h->weights_path);
  /* every input and output needs its own buffer: this bounds the tables
   * below by the (already range-checked) buffer count */
  if (h->n_inputs > h->n_buffers || h->n_outputs > h->n_buffers)
    return bad(&c, "header: %u inputs and %u outputs but only %u buffers",
               h->n_inputs, h->n_outputs, h->n_buffers);

  const kfr_module *mods = (const kfr_module *)(c.p + h->off_modules);
  for (uint32_t i = 0; i < h->n_modules; i++)
    if (mods[i].nbytes == 0 ||
        !within(mods[i].offset, mods[i].nbytes, h->off_blobs,
                h->off_blobs + h->blobs_bytes))
      return bad(&c, "module %u: cubin bytes [%llu, +%llu) are empty or "
                 "outside the blob section", i,
                 (unsigned long long)mods[i].offset,
                 (unsigned long long)mods[i].nbytes);
  for (uint32_t i = 0; i < h->n_modules; i++)
    if ((rc = check_image(&c, i, c.p + mods[i].offset, mods[i].nbytes)))
      return rc;
  const kfr_kernel *kers = (const kfr_kernel *)(c.p + h->off_kernels);
  for (uint32_t i = 0; i < h->n_kernels; i++) {
    if (kers[i].module >= h->n_modules)
      return bad(&c, "kernel %u: module %u, the plan has %u", i,
                 kers[i].module, h->n_modules);
    if (kers[i].name >= h->strings_bytes || !*str_or(&c, kers[i].name))
      return bad(&c, "kernel %u: entry name offset %u is empty or outside the "
                 "string section", i, kers[i].name);
  }

  uint8_t *in_seen = calloc(h->n_inputs + 1, 1);
  uint8_t *out_seen = calloc(h->n_outputs + 1, 1);
  if (!in_seen || !out_seen) {
    rc = KFUSE_ENOMEM;
    if (msg && n)
      snprintf(msg, n, "plan: out of memory while checking it");
    goto done;
  }
  if ((rc = check_buffers(&c, in_seen, out_seen)) || (rc = check_args(&c)) ||
      (rc = check_steps(&c)))
    goto done;
done:
  free(in_seen);
  free(out_seen);
  return rc;
}
