/* kfr_plan_writer.c — builds binary plans (runtime/kfr_plan.h) for the
 * compiler and the runtime's tests; see kfr_plan_writer.h. Not part of the
 * runtime library that modules link: it lives in kfuse_plan_writer, which
 * pulls only the validator (kfr_validate.c) out of kfuse_runtime.
 *
 * Blob offsets are kept relative to the blob section while building and
 * made absolute in the copy finish produces, so finish can run again after
 * more records are added. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfr_hash.h"
#include "kfr_plan_writer.h"
#include "kfuse_runtime.h"

#define NONE_IDX UINT32_MAX

struct kfr_writer {
  uint32_t sm_arch;
  uint64_t arena_bytes, weights_bytes, weights_hash;
  uint32_t model_name, weights_path;
  int embedded, beside_module;
  const void *wimage; /* borrowed */

  kfr_buffer *buf;
  uint32_t nbuf, capbuf;
  kfr_module *mod;
  uint32_t nmod, capmod;
  kfr_kernel *ker;
  uint32_t nker, capker;
  kfr_step *step;
  uint32_t nstep, capstep;
  kfr_arg *arg;
  uint32_t narg, caparg;

  char *str;
  size_t nstr, capstr;
  uint32_t *hash; /* string offset + 1, 0 = empty slot */
  size_t hcap, hused;

  uint8_t *blob; /* blob section before the embedded weights */
  size_t nblob, capblob;

  int rc; /* first failure, reported by finish */
  char msg[256];
};

static void fail(kfr_writer *w, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void fail(kfr_writer *w, int rc, const char *fmt, ...) {
  if (w->rc)
    return;
  w->rc = rc;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(w->msg, sizeof w->msg, fmt, ap);
  va_end(ap);
}

/* Room for one more element of size sz in *p (count n, capacity *cap). */
static int grow(kfr_writer *w, void **p, size_t n, uint32_t *cap, size_t sz) {
  if (n < *cap)
    return 1;
  if (n >= UINT32_MAX - 1) {
    fail(w, KFUSE_EARG, "plan writer: too many records");
    return 0;
  }
  size_t nc = *cap ? (size_t)*cap * 2 : 16;
  if (nc > UINT32_MAX - 1)
    nc = UINT32_MAX - 1;
  void *q = realloc(*p, nc * sz);
  if (!q) {
    fail(w, KFUSE_ENOMEM, "plan writer: out of memory");
    return 0;
  }
  memset((char *)q + (size_t)*cap * sz, 0, (nc - *cap) * sz);
  *p = q;
  *cap = (uint32_t)nc;
  return 1;
}

static int reserve_bytes(kfr_writer *w, void **p, size_t *cap, size_t need) {
  if (need <= *cap)
    return 1;
  size_t nc = *cap ? *cap : 256;
  while (nc < need) {
    if (nc > SIZE_MAX / 2) {
      fail(w, KFUSE_ENOMEM, "plan writer: out of memory");
      return 0;
    }
    nc *= 2;
  }
  void *q = realloc(*p, nc);
  if (!q) {
    fail(w, KFUSE_ENOMEM, "plan writer: out of memory");
    return 0;
  }
  *p = q;
  *cap = nc;
  return 1;
}

static uint64_t fnv(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

static int rehash(kfr_writer *w, size_t cap) {
  uint32_t *t = calloc(cap, sizeof *t);
  if (!t) {
    fail(w, KFUSE_ENOMEM, "plan writer: out of memory");
    return 0;
  }
  for (size_t i = 0; i < w->hcap; i++) {
    if (!w->hash[i])
      continue;
    size_t j = fnv(w->str + w->hash[i] - 1) & (cap - 1);
    while (t[j])
      j = (j + 1) & (cap - 1);
    t[j] = w->hash[i];
  }
  free(w->hash);
  w->hash = t;
  w->hcap = cap;
  return 1;
}

/* Offset of s in the string section, added once. */
static uint32_t intern(kfr_writer *w, const char *s) {
  if (!s)
    s = "";
  if (w->hused * 2 >= w->hcap && !rehash(w, w->hcap ? w->hcap * 2 : 64))
    return 0;
  size_t j = fnv(s) & (w->hcap - 1);
  for (; w->hash[j]; j = (j + 1) & (w->hcap - 1))
    if (!strcmp(w->str + w->hash[j] - 1, s))
      return w->hash[j] - 1;
  size_t len = strlen(s) + 1;
  if (w->nstr + len >= UINT32_MAX) {
    fail(w, KFUSE_EARG, "plan writer: string section over 4 GiB");
    return 0;
  }
  if (!reserve_bytes(w, (void **)&w->str, &w->capstr, w->nstr + len))
    return 0;
  memcpy(w->str + w->nstr, s, len);
  uint32_t off = (uint32_t)w->nstr;
  w->nstr += len;
  w->hash[j] = off + 1;
  w->hused++;
  return off;
}

/* Copy bytes into the blob section, 256-aligned; returns the relative
 * offset, or UINT64_MAX. */
static uint64_t add_blob(kfr_writer *w, const void *data, size_t n) {
  size_t at = (w->nblob + 255) & ~(size_t)255;
  if (at < w->nblob || at + n < at) {
    fail(w, KFUSE_ENOMEM, "plan writer: blob section too large");
    return UINT64_MAX;
  }
  if (!reserve_bytes(w, (void **)&w->blob, &w->capblob, at + n))
    return UINT64_MAX;
  memset(w->blob + w->nblob, 0, at - w->nblob);
  if (n)
    memcpy(w->blob + at, data, n);
  w->nblob = at + n;
  return at;
}

kfr_writer *kfr_writer_create(uint32_t sm_arch) {
  kfr_writer *w = calloc(1, sizeof *w);
  if (!w)
    return NULL;
  w->sm_arch = sm_arch;
  intern(w, ""); /* offset 0 is the empty string */
  if (w->rc) {
    kfr_writer_destroy(w);
    return NULL;
  }
  return w;
}

void kfr_writer_destroy(kfr_writer *w) {
  if (!w)
    return;
  free(w->buf);
  free(w->mod);
  free(w->ker);
  free(w->step);
  free(w->arg);
  free(w->str);
  free(w->hash);
  free(w->blob);
  free(w);
}

void kfr_tensor_desc_init(kfr_tensor_desc *d, uint32_t dtype, uint32_t rank,
                          const int64_t *shape) {
  memset(d, 0, sizeof *d);
  if (rank > KFR_MAX_RANK)
    rank = KFR_MAX_RANK;
  d->dtype = dtype;
  d->rank = rank;
  int64_t stride = 1;
  for (uint32_t r = rank; r-- > 0;) {
    d->shape[r] = shape[r];
    d->strides[r] = stride;
    /* an absurd shape saturates (the byte count is then refused) */
    if (__builtin_mul_overflow(stride, shape[r] > 0 ? shape[r] : 1, &stride))
      stride = INT64_MAX;
  }
}

void kfr_writer_set_model_name(kfr_writer *w, const char *name) {
  w->model_name = intern(w, name);
}

void kfr_writer_set_arena(kfr_writer *w, uint64_t bytes) {
  w->arena_bytes = bytes;
}

void kfr_writer_set_weights_file(kfr_writer *w, const char *path,
                                 uint64_t bytes, uint64_t hash,
                                 int beside_module) {
  w->embedded = 0;
  w->wimage = NULL;
  w->weights_bytes = bytes;
  w->weights_hash = hash;
  w->beside_module = beside_module != 0;
  w->weights_path = intern(w, path);
}

void kfr_writer_set_weights_embedded(kfr_writer *w, const void *image,
                                     uint64_t bytes) {
  w->embedded = 1;
  w->beside_module = 0;
  w->wimage = image;
  w->weights_bytes = bytes;
  w->weights_hash = image ? kfr_xxh64(image, (size_t)bytes, 0) : 0;
  w->weights_path = 0;
  if (bytes && !image)
    fail(w, KFUSE_EARG, "plan writer: embedded weights of %llu bytes without "
         "data", (unsigned long long)bytes);
}

static uint32_t add_buffer(kfr_writer *w, uint32_t kind, uint32_t index,
                           uint64_t offset, uint64_t nbytes, const char *name,
                           const kfr_tensor_desc *desc) {
  uint32_t nm = intern(w, name);
  if (w->rc || !grow(w, (void **)&w->buf, w->nbuf, &w->capbuf, sizeof *w->buf))
    return NONE_IDX;
  kfr_buffer *b = &w->buf[w->nbuf];
  memset(b, 0, sizeof *b);
  b->kind = kind;
  b->index = index;
  b->offset = offset;
  b->nbytes = nbytes;
  b->name = nm;
  if (desc)
    b->desc = *desc;
  return w->nbuf++;
}

/* nbytes of a contiguous tensor with this desc (0 if it makes no sense: the
 * validator then names the problem); 1 in *overflow when the byte count
 * does not fit in 64 bits. */
static uint64_t desc_bytes(const kfr_tensor_desc *d, int *overflow) {
  static const uint8_t size[] = {0, 4, 8, 2, 2, 8, 4, 2, 1, 1, 1};
  *overflow = 0;
  if (!d || d->dtype >= sizeof size || d->rank > KFR_MAX_RANK)
    return 0;
  uint64_t n = size[d->dtype];
  for (uint32_t r = 0; r < d->rank; r++) {
    if (d->shape[r] < 0)
      return 0;
    if (__builtin_mul_overflow(n, (uint64_t)d->shape[r], &n)) {
      *overflow = 1;
      return 0;
    }
  }
  return n;
}

static uint32_t add_io(kfr_writer *w, uint32_t kind, uint32_t index,
                       const char *name, const kfr_tensor_desc *desc) {
  const char *what = kind == KFR_BUF_INPUT ? "input" : "output";
  if (!desc) {
    fail(w, KFUSE_EARG, "plan writer: %s %u (%s) has no desc", what, index,
         name ? name : "");
    return NONE_IDX;
  }
  int overflow;
  uint64_t bytes = desc_bytes(desc, &overflow);
  if (overflow) {
    char shape[KFR_MAX_RANK * 24 + 4] = "[";
    for (uint32_t r = 0; r < desc->rank && r < KFR_MAX_RANK; r++)
      snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%lld",
               r ? ", " : "", (long long)desc->shape[r]);
    strcat(shape, "]");
    fail(w, KFUSE_EARG, "plan writer: %s %u (%s) of shape %s and dtype %u has "
         "more bytes than 64 bits count", what, index, name ? name : "", shape,
         desc->dtype);
    return NONE_IDX;
  }
  return add_buffer(w, kind, index, 0, bytes, name, desc);
}

uint32_t kfr_writer_input(kfr_writer *w, uint32_t index, const char *name,
                          const kfr_tensor_desc *desc) {
  return add_io(w, KFR_BUF_INPUT, index, name, desc);
}

uint32_t kfr_writer_output(kfr_writer *w, uint32_t index, const char *name,
                           const kfr_tensor_desc *desc) {
  return add_io(w, KFR_BUF_OUTPUT, index, name, desc);
}

uint32_t kfr_writer_arena(kfr_writer *w, uint64_t offset, uint64_t nbytes,
                          const char *name, const kfr_tensor_desc *desc) {
  return add_buffer(w, KFR_BUF_ARENA, 0, offset, nbytes, name, desc);
}

uint32_t kfr_writer_weight(kfr_writer *w, uint64_t offset, uint64_t nbytes,
                           const char *name, const kfr_tensor_desc *desc) {
  return add_buffer(w, KFR_BUF_WEIGHT, 0, offset, nbytes, name, desc);
}

uint32_t kfr_writer_const(kfr_writer *w, const void *data, uint64_t nbytes,
                          const char *name, const kfr_tensor_desc *desc) {
  if (nbytes && !data) {
    fail(w, KFUSE_EARG, "plan writer: const %s of %llu bytes without data",
         name ? name : "", (unsigned long long)nbytes);
    return NONE_IDX;
  }
  uint64_t at = add_blob(w, data, (size_t)nbytes);
  if (at == UINT64_MAX)
    return NONE_IDX;
  return add_buffer(w, KFR_BUF_CONST, 0, at, nbytes, name, desc);
}

uint32_t kfr_writer_module(kfr_writer *w, const void *cubin, size_t nbytes) {
  if (!cubin || !nbytes) {
    fail(w, KFUSE_EARG, "plan writer: empty cubin for module %u", w->nmod);
    return NONE_IDX;
  }
  uint64_t at = add_blob(w, cubin, nbytes);
  if (at == UINT64_MAX ||
      !grow(w, (void **)&w->mod, w->nmod, &w->capmod, sizeof *w->mod))
    return NONE_IDX;
  w->mod[w->nmod].offset = at;
  w->mod[w->nmod].nbytes = nbytes;
  return w->nmod++;
}

uint32_t kfr_writer_kernel(kfr_writer *w, uint32_t module, const char *entry,
                           uint32_t max_dynamic_smem) {
  uint32_t nm = intern(w, entry);
  if (w->rc || !grow(w, (void **)&w->ker, w->nker, &w->capker, sizeof *w->ker))
    return NONE_IDX;
  kfr_kernel *k = &w->ker[w->nker];
  memset(k, 0, sizeof *k);
  k->module = module;
  k->name = nm;
  k->max_dynamic_smem = max_dynamic_smem;
  return w->nker++;
}

static kfr_step *add_step(kfr_writer *w, uint32_t kind, const char *name) {
  uint32_t nm = intern(w, name);
  if (w->rc ||
      !grow(w, (void **)&w->step, w->nstep, &w->capstep, sizeof *w->step))
    return NULL;
  kfr_step *s = &w->step[w->nstep++];
  memset(s, 0, sizeof *s);
  s->kind = kind;
  s->name = nm;
  s->first_arg = w->narg;
  return s;
}

uint32_t kfr_writer_launch(kfr_writer *w, uint32_t kernel,
                           const uint32_t grid[3], const uint32_t block[3],
                           uint32_t smem, const char *name) {
  kfr_step *s = add_step(w, KFR_STEP_LAUNCH, name);
  if (!s)
    return NONE_IDX;
  s->kernel = kernel;
  memcpy(s->grid, grid, sizeof s->grid);
  memcpy(s->block, block, sizeof s->block);
  s->smem = smem;
  return w->nstep - 1;
}

uint32_t kfr_writer_gemm(kfr_writer *w, const kfr_gemm *g, const char *name) {
  kfr_step *s = add_step(w, KFR_STEP_GEMM, name);
  if (!s)
    return NONE_IDX;
  s->gemm = *g;
  return w->nstep - 1;
}

uint32_t kfr_writer_conv(kfr_writer *w, const kfr_conv *c, const char *name) {
  kfr_step *s = add_step(w, KFR_STEP_CONV, name);
  if (!s)
    return NONE_IDX;
  s->conv = *c;
  return w->nstep - 1;
}

static uint32_t add_arg(kfr_writer *w, uint32_t kind, uint32_t buffer,
                        int64_t i, double f) {
  if (w->rc)
    return NONE_IDX;
  if (!w->nstep) {
    fail(w, KFUSE_EARG, "plan writer: an arg was added before any step");
    return NONE_IDX;
  }
  if (!grow(w, (void **)&w->arg, w->narg, &w->caparg, sizeof *w->arg))
    return NONE_IDX;
  kfr_arg *a = &w->arg[w->narg];
  memset(a, 0, sizeof *a);
  a->kind = kind;
  a->buffer = buffer;
  a->offset = i;
  a->f = f;
  w->step[w->nstep - 1].n_args++;
  return w->narg++;
}

uint32_t kfr_writer_memset(kfr_writer *w, const char *name, uint32_t buffer,
                           int64_t offset, int64_t bytes) {
  if (!add_step(w, KFR_STEP_MEMSET, name))
    return NONE_IDX;
  add_arg(w, KFR_ARG_PTR, buffer, offset, 0);
  add_arg(w, KFR_ARG_I64, 0, bytes, 0);
  return w->rc ? NONE_IDX : w->nstep - 1;
}

uint32_t kfr_writer_copy(kfr_writer *w, const char *name, uint32_t dst,
                         int64_t dst_offset, uint32_t src, int64_t src_offset,
                         int64_t bytes) {
  if (!add_step(w, KFR_STEP_COPY, name))
    return NONE_IDX;
  add_arg(w, KFR_ARG_PTR, dst, dst_offset, 0);
  add_arg(w, KFR_ARG_PTR, src, src_offset, 0);
  add_arg(w, KFR_ARG_I64, 0, bytes, 0);
  return w->rc ? NONE_IDX : w->nstep - 1;
}

uint32_t kfr_writer_arg_ptr(kfr_writer *w, uint32_t buffer, int64_t offset) {
  return add_arg(w, KFR_ARG_PTR, buffer, offset, 0);
}
uint32_t kfr_writer_arg_i64(kfr_writer *w, int64_t v) {
  return add_arg(w, KFR_ARG_I64, 0, v, 0);
}
uint32_t kfr_writer_arg_i32(kfr_writer *w, int32_t v) {
  return add_arg(w, KFR_ARG_I32, 0, v, 0);
}
uint32_t kfr_writer_arg_f32(kfr_writer *w, float v) {
  return add_arg(w, KFR_ARG_F32, 0, 0, v);
}
uint32_t kfr_writer_arg_f64(kfr_writer *w, double v) {
  return add_arg(w, KFR_ARG_F64, 0, 0, v);
}
uint32_t kfr_writer_arg_none(kfr_writer *w) {
  return add_arg(w, KFR_ARG_NONE, 0, 0, 0);
}

static uint64_t up(uint64_t x, uint64_t a) { return (x + a - 1) & ~(a - 1); }

int kfr_writer_finish(kfr_writer *w, void **plan, size_t *bytes, char *msg,
                      size_t msgsz) {
  *plan = NULL;
  *bytes = 0;
  if (msg && msgsz)
    msg[0] = 0;
  if (w->rc) {
    if (msg && msgsz)
      snprintf(msg, msgsz, "%s", w->msg);
    return w->rc;
  }
  kfr_header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, KFR_PLAN_MAGIC, 8);
  h.version = KFR_PLAN_VERSION;
  h.header_bytes = sizeof h;
  h.sm_arch = w->sm_arch;
  h.flags = w->embedded ? KFR_FLAG_WEIGHTS_EMBEDDED : 0;
  if (w->beside_module)
    h.flags |= KFR_FLAG_WEIGHTS_BESIDE_MODULE;
  h.arena_bytes = w->arena_bytes;
  h.weights_bytes = w->weights_bytes;
  h.weights_hash = w->weights_hash;
  for (uint32_t i = 0; i < w->nbuf; i++) {
    const kfr_buffer *b = &w->buf[i];
    if (b->kind == KFR_BUF_INPUT && b->index + 1 > h.n_inputs)
      h.n_inputs = b->index + 1;
    if (b->kind == KFR_BUF_OUTPUT && b->index + 1 > h.n_outputs)
      h.n_outputs = b->index + 1;
  }
  h.n_buffers = w->nbuf;
  h.n_modules = w->nmod;
  h.n_kernels = w->nker;
  h.n_steps = w->nstep;
  h.n_args = w->narg;
  h.model_name = w->model_name;
  h.weights_path = w->weights_path;
  uint64_t off = sizeof h;
  h.off_buffers = off;
  off += (uint64_t)w->nbuf * sizeof(kfr_buffer);
  h.off_modules = off;
  off += (uint64_t)w->nmod * sizeof(kfr_module);
  h.off_kernels = off;
  off += (uint64_t)w->nker * sizeof(kfr_kernel);
  h.off_steps = off;
  off += (uint64_t)w->nstep * sizeof(kfr_step);
  h.off_args = off;
  off += (uint64_t)w->narg * sizeof(kfr_arg);
  h.off_strings = off;
  h.strings_bytes = w->nstr;
  off = up(off + w->nstr, 8);
  uint64_t wimage_at = up(w->nblob, 256);
  uint64_t blob_bytes =
      w->embedded && w->weights_bytes ? wimage_at + w->weights_bytes : w->nblob;
  if (blob_bytes) {
    off = up(off, 256);
    h.off_blobs = off;
    h.blobs_bytes = blob_bytes;
    off += blob_bytes;
  } else {
    h.off_blobs = off;
  }
  h.total_bytes = off;
  if (off > SIZE_MAX) {
    if (msg && msgsz)
      snprintf(msg, msgsz, "plan writer: plan too large");
    return KFUSE_ENOMEM;
  }
  uint8_t *p = calloc(1, (size_t)off);
  if (!p) {
    if (msg && msgsz)
      snprintf(msg, msgsz, "plan writer: out of memory for a %llu-byte plan",
               (unsigned long long)off);
    return KFUSE_ENOMEM;
  }
  memcpy(p, &h, sizeof h);
  kfr_buffer *bufs = (kfr_buffer *)(p + h.off_buffers);
  if (w->nbuf)
    memcpy(bufs, w->buf, w->nbuf * sizeof(kfr_buffer));
  for (uint32_t i = 0; i < w->nbuf; i++) {
    if (bufs[i].kind == KFR_BUF_CONST)
      bufs[i].offset += h.off_blobs;
    else if (bufs[i].kind == KFR_BUF_WEIGHT && w->embedded)
      bufs[i].offset += h.off_blobs + wimage_at;
  }
  kfr_module *mods = (kfr_module *)(p + h.off_modules);
  if (w->nmod)
    memcpy(mods, w->mod, w->nmod * sizeof(kfr_module));
  for (uint32_t i = 0; i < w->nmod; i++)
    mods[i].offset += h.off_blobs;
  if (w->nker)
    memcpy(p + h.off_kernels, w->ker, w->nker * sizeof(kfr_kernel));
  if (w->nstep)
    memcpy(p + h.off_steps, w->step, w->nstep * sizeof(kfr_step));
  if (w->narg)
    memcpy(p + h.off_args, w->arg, w->narg * sizeof(kfr_arg));
  memcpy(p + h.off_strings, w->str, w->nstr);
  if (w->nblob)
    memcpy(p + h.off_blobs, w->blob, w->nblob);
  if (w->embedded && w->weights_bytes)
    memcpy(p + h.off_blobs + wimage_at, w->wimage, w->weights_bytes);
  /* the model id: the whole plan, this field still 0 */
  ((kfr_header *)p)->model_id = kfr_xxh64(p, (size_t)off, 0);
  int rc = kfr_plan_check(p, (size_t)off, msg, msgsz);
  if (rc) {
    free(p);
    return rc;
  }
  *plan = p;
  *bytes = (size_t)off;
  return KFUSE_OK;
}

void kfr_weights_header_fill(const void *plan, kfr_weights_header *out) {
  const kfr_header *h = plan;
  memset(out, 0, sizeof *out);
  memcpy(out->magic, KFR_WEIGHTS_MAGIC, 8);
  out->version = KFR_WEIGHTS_VERSION;
  out->header_bytes = KFR_WEIGHTS_HEADER_BYTES;
  out->model_id = h->model_id;
  out->data_bytes = h->weights_bytes;
  out->data_hash = h->weights_hash;
}
