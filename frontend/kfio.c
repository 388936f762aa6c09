/* frontend/kfio.c — reads .kfio files: the inputs and outputs PyTorch
 * recorded for a test model (scripts/make_fixtures.py writes them; `kfuse
 * run --io` and the test suite read them).
 *
 * Format, version 1 (also in docs/FORMATS.md):
 *
 *   bytes 0..7    ASCII "KFIO0001"
 *   bytes 8..15   H, the header length: unsigned 64-bit little-endian
 *   bytes 16..    H bytes of UTF-8 JSON, one object:
 *                   {"format": "kfio", "version": 1, "model": str,
 *                    "torch_version": str, "atol": float, "rtol": float,
 *                    "inputs": [entry...], "outputs": [entry...]}
 *                 entry = {"name": str, "dtype": str, "shape": [int...],
 *                          "offset": int, "nbytes": int}
 *                 dtype is one of f32 f64 f16 bf16 i64 i32 i16 i8 ui8 i1
 *   data section  starts at the first 64-byte boundary at or after 16 + H;
 *                 each entry's bytes lie at data + offset: the tensor in
 *                 row-major contiguous order, little-endian, bool as one
 *                 byte (0 or 1), f16/bf16 as their bit patterns.
 *                 nbytes == numel(shape) * size(dtype).
 *
 * Unknown header keys are ignored; "model" and "torch_version" are
 * informational. Inputs are listed in the model's argument order, outputs in
 * the order of the flattened result. Everything is checked before use: a bad
 * file gets one error naming the file and the field, never a crash. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kfuse/interp.h"

#define KFIO_MAGIC "KFIO0001"
#define KFIO_ALIGN 64
/* A header larger than this is not a fixture: refuse before allocating. */
#define KFIO_MAX_HEADER (64u << 20)

typedef struct reader {
  const char *path;
  FILE *f;
  int64_t size;       /* file size */
  int64_t data_start; /* offset of the data section */
  kf_diag *diag;
} reader;

static uint64_t le64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

/* A JSON number that is an exact non-negative integer below 2^53. */
static bool get_count(const cJSON *item, int64_t *out) {
  if (!cJSON_IsNumber(item)) return false;
  double d = item->valuedouble;
  if (!(d >= 0 && d < 9007199254740992.0) || d != floor(d)) return false;
  *out = (int64_t)d;
  return true;
}

static const char *dtype_list = "f32 f64 f16 bf16 i64 i32 i16 i8 ui8 i1";

/* Reads one entry of the "inputs" or "outputs" array into e. */
static kf_status read_entry(reader *r, const cJSON *obj, const char *list,
                            int idx, kf_io_entry *e) {
  char where[96];
  snprintf(where, sizeof where, "%s[%d]", list, idx);
  if (!cJSON_IsObject(obj)) {
    kf_diag_error(r->diag, "%s: %s: expected an object", r->path, where);
    return KF_ERR_FORMAT;
  }
  const cJSON *name = cJSON_GetObjectItemCaseSensitive(obj, "name");
  if (!cJSON_IsString(name)) {
    kf_diag_error(r->diag, "%s: %s.name: missing or not a string", r->path, where);
    return KF_ERR_FORMAT;
  }
  const char *nm = name->valuestring;
  const cJSON *dt = cJSON_GetObjectItemCaseSensitive(obj, "dtype");
  if (!cJSON_IsString(dt)) {
    kf_diag_error(r->diag, "%s: %s ('%s').dtype: missing or not a string", r->path,
                  where, nm);
    return KF_ERR_FORMAT;
  }
  kf_dtype dtype = kf_dtype_from_name(dt->valuestring, strlen(dt->valuestring));
  if (dtype == KF_DTYPE_INVALID) {
    kf_diag_error(r->diag, "%s: %s ('%s').dtype: unknown dtype '%s' (expected one of %s)",
                  r->path, where, nm, dt->valuestring, dtype_list);
    return KF_ERR_FORMAT;
  }
  const cJSON *shape = cJSON_GetObjectItemCaseSensitive(obj, "shape");
  if (!cJSON_IsArray(shape)) {
    kf_diag_error(r->diag, "%s: %s ('%s').shape: missing or not an array", r->path,
                  where, nm);
    return KF_ERR_FORMAT;
  }
  int rank = cJSON_GetArraySize(shape);
  if (rank > KF_MAX_RANK) {
    kf_diag_error(r->diag, "%s: %s ('%s').shape: rank %d exceeds the maximum %d",
                  r->path, where, nm, rank, KF_MAX_RANK);
    return KF_ERR_LIMIT;
  }
  kf_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = dtype;
  t.rank = rank;
  /* numel and bytes, refusing overflow: sizes stay below 2^53 each, so a
   * product past the file size can stop early. */
  uint64_t numel = 1;
  bool huge = false;
  int d = 0;
  for (const cJSON *s = shape->child; s; s = s->next, d++) {
    int64_t v;
    if (!get_count(s, &v)) {
      kf_diag_error(r->diag, "%s: %s ('%s').shape[%d]: not a non-negative integer",
                    r->path, where, nm, d);
      return KF_ERR_FORMAT;
    }
    t.shape[d] = v;
    if (v == 0) {
      numel = 0;
    } else if (!huge && numel) {
      if (numel > (uint64_t)INT64_MAX / (uint64_t)v) huge = true;
      else numel *= (uint64_t)v;
    }
  }
  if (numel == 0) huge = false;
  int64_t offset, nbytes;
  if (!get_count(cJSON_GetObjectItemCaseSensitive(obj, "offset"), &offset)) {
    kf_diag_error(r->diag, "%s: %s ('%s').offset: missing or not a non-negative integer",
                  r->path, where, nm);
    return KF_ERR_FORMAT;
  }
  if (!get_count(cJSON_GetObjectItemCaseSensitive(obj, "nbytes"), &nbytes)) {
    kf_diag_error(r->diag, "%s: %s ('%s').nbytes: missing or not a non-negative integer",
                  r->path, where, nm);
    return KF_ERR_FORMAT;
  }
  size_t es = kf_dtype_size(dtype);
  if (huge || numel > (uint64_t)nbytes / es || numel * es != (uint64_t)nbytes) {
    char want[32] = "too many";
    if (!huge && numel <= UINT64_MAX / es)
      snprintf(want, sizeof want, "%" PRIu64, numel * es);
    kf_diag_error(r->diag,
                  "%s: %s ('%s').nbytes: %" PRId64 " does not match its shape and dtype "
                  "%s (%s bytes expected)",
                  r->path, where, nm, nbytes, kf_dtype_name(dtype), want);
    return KF_ERR_FORMAT;
  }
  int64_t avail = r->size - r->data_start;
  if (avail < 0) avail = 0;
  if (offset > avail || nbytes > avail - offset) {
    kf_diag_error(r->diag,
                  "%s: %s ('%s').offset: bytes %" PRId64 "..%" PRId64
                  " lie outside the data section (%" PRId64 " bytes)",
                  r->path, where, nm, offset, offset + nbytes, avail);
    return KF_ERR_FORMAT;
  }
  kf_status st = kf_tensor_alloc(&t);
  if (st != KF_OK) {
    kf_diag_error(r->diag, "%s: %s ('%s'): cannot allocate %" PRId64 " bytes", r->path,
                  where, nm, nbytes);
    return st == KF_ERR_LIMIT ? KF_ERR_LIMIT : KF_ERR_NOMEM;
  }
  if (nbytes) {
    if (fseeko(r->f, (off_t)(r->data_start + offset), SEEK_SET) != 0 ||
        fread(t.data, 1, (size_t)nbytes, r->f) != (size_t)nbytes) {
      kf_diag_error(r->diag, "%s: %s ('%s'): reading %" PRId64 " bytes failed", r->path,
                    where, nm, nbytes);
      kf_tensor_fini(&t);
      return KF_ERR_IO;
    }
  }
  if (dtype == KF_DTYPE_BOOL) {
    const unsigned char *b = t.data;
    for (int64_t i = 0; i < nbytes; i++)
      if (b[i] > 1) {
        kf_diag_error(r->diag, "%s: %s ('%s'): bool element %" PRId64 " is %u, not 0 or 1",
                      r->path, where, nm, i, b[i]);
        kf_tensor_fini(&t);
        return KF_ERR_FORMAT;
      }
  }
  e->name = strdup(nm);
  if (!e->name) {
    kf_tensor_fini(&t);
    kf_diag_error(r->diag, "%s: out of memory", r->path);
    return KF_ERR_NOMEM;
  }
  e->t = t;
  return KF_OK;
}

static void free_entries(kf_io_entry *es, int n) {
  if (!es) return;
  for (int i = 0; i < n; i++) {
    free(es[i].name);
    kf_tensor_fini(&es[i].t);
  }
  free(es);
}

/* Reads the "inputs" or "outputs" array of the header. */
static kf_status read_list(reader *r, const cJSON *hdr, const char *key,
                           kf_io_entry **out, int *n_out) {
  const cJSON *arr = cJSON_GetObjectItemCaseSensitive(hdr, key);
  if (!cJSON_IsArray(arr)) {
    kf_diag_error(r->diag, "%s: header: \"%s\" is missing or not an array", r->path, key);
    return KF_ERR_FORMAT;
  }
  int n = cJSON_GetArraySize(arr);
  kf_io_entry *es = calloc((size_t)n + 1, sizeof *es);
  if (!es) {
    kf_diag_error(r->diag, "%s: out of memory", r->path);
    return KF_ERR_NOMEM;
  }
  int i = 0;
  for (const cJSON *it = arr->child; it; it = it->next, i++) {
    kf_status st = read_entry(r, it, key, i, &es[i]);
    if (st != KF_OK) {
      free_entries(es, i);
      return st;
    }
  }
  *out = es;
  *n_out = n;
  return KF_OK;
}

static kf_status get_tolerance(reader *r, const cJSON *hdr, const char *key,
                               double *out) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(hdr, key);
  if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || isinf(v->valuedouble)) {
    kf_diag_error(r->diag, "%s: header: \"%s\" is missing or not a finite number >= 0",
                  r->path, key);
    return KF_ERR_FORMAT;
  }
  *out = v->valuedouble;
  return KF_OK;
}

static kf_status check_header(reader *r, const cJSON *hdr) {
  const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(hdr, "format");
  if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, "kfio") != 0) {
    kf_diag_error(r->diag, "%s: header: \"format\" is missing or not \"kfio\"", r->path);
    return KF_ERR_FORMAT;
  }
  const cJSON *ver = cJSON_GetObjectItemCaseSensitive(hdr, "version");
  if (!cJSON_IsNumber(ver)) {
    kf_diag_error(r->diag, "%s: header: \"version\" is missing or not a number", r->path);
    return KF_ERR_FORMAT;
  }
  if (ver->valuedouble != 1) {
    kf_diag_error(r->diag, "%s: header: version %g is not supported (this kfuse reads 1)",
                  r->path, ver->valuedouble);
    return KF_ERR_VERSION;
  }
  static const char *const strs[] = {"model", "torch_version"};
  for (size_t i = 0; i < sizeof strs / sizeof strs[0]; i++) {
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(hdr, strs[i]);
    if (s && !cJSON_IsString(s)) {
      kf_diag_error(r->diag, "%s: header: \"%s\" is not a string", r->path, strs[i]);
      return KF_ERR_FORMAT;
    }
  }
  return KF_OK;
}

kf_status kf_io_read(const char *path, kf_io_file *out, kf_diag *diag) {
  memset(out, 0, sizeof *out);
  reader r = {path, NULL, 0, 0, diag};
  kf_status st = KF_ERR_FORMAT;
  char *text = NULL;
  cJSON *hdr = NULL;
  kf_io_file res;
  memset(&res, 0, sizeof res);

  r.f = fopen(path, "rb");
  if (!r.f) {
    kf_diag_error(diag, "%s: cannot open: %s", path, strerror(errno));
    return KF_ERR_IO;
  }
  off_t end;
  if (fseeko(r.f, 0, SEEK_END) != 0 || (end = ftello(r.f)) < 0 ||
      fseeko(r.f, 0, SEEK_SET) != 0) {
    kf_diag_error(diag, "%s: cannot determine the file size: %s", path, strerror(errno));
    st = KF_ERR_IO;
    goto done;
  }
  r.size = (int64_t)end;
  unsigned char pre[16];
  size_t got = fread(pre, 1, sizeof pre, r.f);
  if (got < 8 || memcmp(pre, KFIO_MAGIC, 8) != 0) {
    if (ferror(r.f))
      kf_diag_error(diag, "%s: read failed", path);
    else
      kf_diag_error(diag, "%s: bad magic: not a .kfio file (expected \"%s\" at byte 0)",
                    path, KFIO_MAGIC);
    st = ferror(r.f) ? KF_ERR_IO : KF_ERR_FORMAT;
    goto done;
  }
  if (got < sizeof pre) {
    kf_diag_error(diag, "%s: header length: file ends at byte %zu, inside the 16-byte prefix",
                  path, got);
    goto done;
  }
  uint64_t h = le64(pre + 8);
  if (h > (uint64_t)(r.size - 16)) {
    kf_diag_error(diag,
                  "%s: header length: %" PRIu64 " bytes run past the end of the file (%" PRId64
                  " bytes)",
                  path, h, r.size);
    goto done;
  }
  if (h > KFIO_MAX_HEADER) {
    kf_diag_error(diag, "%s: header length: %" PRIu64 " bytes exceeds the limit of %u",
                  path, h, KFIO_MAX_HEADER);
    st = KF_ERR_LIMIT;
    goto done;
  }
  r.data_start = (int64_t)((16 + h + KFIO_ALIGN - 1) / KFIO_ALIGN * KFIO_ALIGN);
  text = malloc((size_t)h + 1);
  if (!text) {
    kf_diag_error(diag, "%s: out of memory reading a %" PRIu64 "-byte header", path, h);
    st = KF_ERR_NOMEM;
    goto done;
  }
  if (fread(text, 1, (size_t)h, r.f) != (size_t)h) {
    kf_diag_error(diag, "%s: reading the header failed", path);
    st = KF_ERR_IO;
    goto done;
  }
  text[h] = 0;
  if (memchr(text, 0, (size_t)h)) {
    kf_diag_error(diag, "%s: header: malformed JSON (contains a NUL byte at %zu)", path,
                  (size_t)((char *)memchr(text, 0, (size_t)h) - text) + 16);
    goto done;
  }
  const char *stop = NULL;
  hdr = cJSON_ParseWithLengthOpts(text, (size_t)h, &stop, false);
  if (!hdr) {
    size_t at = stop && stop >= text && stop <= text + h ? (size_t)(stop - text) : 0;
    kf_diag_error(diag, "%s: header: malformed JSON at byte %zu", path, at + 16);
    goto done;
  }
  if (!cJSON_IsObject(hdr)) {
    kf_diag_error(diag, "%s: header: expected a JSON object", path);
    goto done;
  }
  if ((st = check_header(&r, hdr)) != KF_OK) goto done;
  if ((st = get_tolerance(&r, hdr, "atol", &res.atol)) != KF_OK) goto done;
  if ((st = get_tolerance(&r, hdr, "rtol", &res.rtol)) != KF_OK) goto done;
  st = read_list(&r, hdr, "inputs", &res.inputs, &res.n_inputs);
  if (st != KF_OK) goto done;
  st = read_list(&r, hdr, "outputs", &res.outputs, &res.n_outputs);
  if (st != KF_OK) goto done;
  res.meta_json = text;
  text = NULL;
  *out = res;
  memset(&res, 0, sizeof res);
  st = KF_OK;
done:
  kf_io_fini(&res);
  cJSON_Delete(hdr);
  free(text);
  if (r.f) fclose(r.f);
  return st;
}

void kf_io_fini(kf_io_file *f) {
  if (!f) return;
  free_entries(f->inputs, f->n_inputs);
  free_entries(f->outputs, f->n_outputs);
  free(f->meta_json);
  memset(f, 0, sizeof *f);
}
