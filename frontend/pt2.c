/* frontend/pt2.c — reads torch.export archives (.pt2): the zip container,
 * its layout, the JSON records and the weight store.
 *
 * Layouts: PyTorch >= 2.8 writes "<root>/models/<name>.json" with
 * "<root>/data/weights/<name>_weights_config.json" (the docs call it
 * _model_param_config.json; both are accepted), "data/constants/<name>_
 * constants_config.json" and one raw record per storage; PyTorch <= 2.7
 * wrote "serialized_exported_program.json" with the weights in a pickle,
 * which kfuse does not read. The root prefix is the directory of the
 * archive's first entry. Weights are never copied into the graph: the store
 * maps STORED records in place (mmap, data offset from minizip) or reads
 * them on first use (libzip) and keeps them until the graph is destroyed.
 * Every record's CRC is checked on first use (libzip does it for what it
 * reads; mapped records are summed here), so a corrupt archive is an error,
 * not silently wrong weights. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <minizip/unzip.h>
#include <zip.h>
#include <zlib.h>

#include "kfuse/frontend.h"
#include "pt2_int.h"

#define MAX_JSON_BYTES ((int64_t)1 << 31)

/* ---- the archive ----------------------------------------------------------- */

typedef struct archive {
  const char *file; /* display name */
  zip_t *za;
  char prefix[512];
} archive;

static const char *zerr(zip_t *za) { return zip_strerror(za); }

/* Read a whole record; *buf is NUL-terminated (for JSON) and owned by the
 * caller. */
static kf_status read_record(archive *ar, zip_int64_t idx, const char *name, int64_t max,
                             char **buf, int64_t *len, kf_diag *diag) {
  *buf = NULL;
  *len = 0;
  zip_stat_t zs;
  zip_stat_init(&zs);
  if (zip_stat_index(ar->za, (zip_uint64_t)idx, 0, &zs) != 0 || !(zs.valid & ZIP_STAT_SIZE)) {
    kf_diag_error(diag, "%s: %s: cannot stat record: %s", ar->file, name, zerr(ar->za));
    return KF_ERR_FORMAT;
  }
  if ((int64_t)zs.size > max) {
    kf_diag_error(diag, "%s: %s: record of %llu bytes exceeds the limit of %lld", ar->file, name,
                  (unsigned long long)zs.size, (long long)max);
    return KF_ERR_LIMIT;
  }
  char *b = malloc((size_t)zs.size + 1);
  if (!b) {
    kf_diag_error(diag, "%s: %s: out of memory for %llu bytes", ar->file, name,
                  (unsigned long long)zs.size);
    return KF_ERR_NOMEM;
  }
  zip_file_t *zf = zip_fopen_index(ar->za, (zip_uint64_t)idx, 0);
  if (!zf) {
    kf_diag_error(diag, "%s: %s: cannot open record: %s", ar->file, name, zerr(ar->za));
    free(b);
    return KF_ERR_FORMAT;
  }
  zip_uint64_t got = 0;
  kf_status st = KF_OK;
  /* read until libzip reports the end: that last read checks the CRC */
  for (;;) {
    char extra;
    zip_int64_t k = got < zs.size ? zip_fread(zf, b + got, zs.size - got) : zip_fread(zf, &extra, 1);
    if (k < 0) {
      kf_diag_error(diag, "%s: %s: read failed: %s", ar->file, name, zip_file_strerror(zf));
      st = KF_ERR_FORMAT;
      break;
    }
    if (k == 0) break;
    if (got >= zs.size) {
      kf_diag_error(diag, "%s: %s: record is longer than its directory entry says", ar->file, name);
      st = KF_ERR_FORMAT;
      break;
    }
    got += (zip_uint64_t)k;
  }
  if (st == KF_OK && got != zs.size) {
    kf_diag_error(diag, "%s: %s: record is truncated (%llu of %llu bytes)", ar->file, name,
                  (unsigned long long)got, (unsigned long long)zs.size);
    st = KF_ERR_FORMAT;
  }
  int rc = zip_fclose(zf);
  if (st == KF_OK && rc != 0) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, rc);
    kf_diag_error(diag, "%s: %s: read failed: %s", ar->file, name, zip_error_strerror(&ze));
    zip_error_fini(&ze);
    st = KF_ERR_FORMAT;
  }
  if (st != KF_OK) {
    free(b);
    return st;
  }
  b[got] = 0;
  *buf = b;
  *len = (int64_t)got;
  return KF_OK;
}

static zip_int64_t locate(archive *ar, const char *rel) {
  char full[1024];
  if (snprintf(full, sizeof full, "%s%s", ar->prefix, rel) >= (int)sizeof full) return -1;
  return zip_name_locate(ar->za, full, 0);
}

/* Parse a JSON record; the error names the byte, line and column. */
static kf_status read_json(archive *ar, zip_int64_t idx, const char *rel, cJSON **out,
                           kf_diag *diag) {
  *out = NULL;
  char *buf;
  int64_t len;
  kf_status st = read_record(ar, idx, rel, MAX_JSON_BYTES, &buf, &len, diag);
  if (st) return st;
  const char *end = NULL;
  cJSON *j = cJSON_ParseWithLengthOpts(buf, (size_t)len, &end, 0);
  if (!j) {
    int64_t off = end ? (int64_t)(end - buf) : 0, line = 1, col = 1;
    if (off < 0 || off > len) off = len;
    for (int64_t i = 0; i < off; i++) {
      if (buf[i] == '\n') {
        line++;
        col = 1;
      } else {
        col++;
      }
    }
    kf_diag_error(diag, "%s: %s: malformed JSON at byte %lld (line %lld, column %lld)", ar->file, rel,
                  (long long)off, (long long)line, (long long)col);
    free(buf);
    return KF_ERR_FORMAT;
  }
  free(buf);
  if (!cJSON_IsObject(j)) {
    kf_diag_error(diag, "%s: %s: expected a JSON object at the top level", ar->file, rel);
    cJSON_Delete(j);
    return KF_ERR_FORMAT;
  }
  *out = j;
  return KF_OK;
}

static bool has_suffix(const char *s, const char *suf) {
  size_t n = strlen(s), m = strlen(suf);
  return n >= m && strcmp(s + n - m, suf) == 0;
}

/* ---- the weight store ------------------------------------------------------- */

typedef struct store_entry {
  char *fqn;
  char *record;  /* for messages (without the root prefix) */
  zip_int64_t index;
  int64_t size;   /* record bytes */
  int64_t needed; /* bytes the tensor needs */
  int leader;     /* entry that holds the data for this record */
  uint32_t crc;   /* from the central directory */
  bool has_crc;
  bool mapped;    /* data points into the mapping; CRC not yet checked */
  const void *data;
  void *owned;
} store_entry;

typedef struct store {
  pthread_mutex_t mu;
  char *file;
  zip_t *za;
  void *map;
  size_t map_len;
  int n;
  store_entry *e;
} store;

static int cmp_entry(const void *a, const void *b) {
  return strcmp(((const store_entry *)a)->fqn, ((const store_entry *)b)->fqn);
}

static void store_destroy(void *impl) {
  store *s = impl;
  if (!s) return;
  for (int i = 0; i < s->n; i++) {
    free(s->e[i].fqn);
    free(s->e[i].record);
    free(s->e[i].owned);
  }
  free(s->e);
  if (s->map) munmap(s->map, s->map_len);
  if (s->za) zip_discard(s->za);
  free(s->file);
  pthread_mutex_destroy(&s->mu);
  free(s);
}

static kf_status store_read(store *s, store_entry *e, kf_diag *diag) {
  if (e->size == 0) { /* a fake tensor was exported: PyTorch reads zeros */
    e->owned = calloc(1, (size_t)(e->needed ? e->needed : 1));
    if (!e->owned) return KF_ERR_NOMEM;
    e->data = e->owned;
    return KF_OK;
  }
  /* e->size was checked against the compressed size at load time */
  void *buf = malloc((size_t)e->size);
  if (!buf) {
    kf_diag_error(diag, "%s: weight '%s' (%s): out of memory for %lld bytes", s->file, e->fqn, e->record,
                  (long long)e->size);
    return KF_ERR_NOMEM;
  }
  zip_file_t *zf = zip_fopen_index(s->za, (zip_uint64_t)e->index, 0);
  if (!zf) {
    kf_diag_error(diag, "%s: weight '%s' (%s): cannot open record: %s", s->file, e->fqn, e->record,
                  zip_strerror(s->za));
    free(buf);
    return KF_ERR_FORMAT;
  }
  int64_t got = 0;
  kf_status st = KF_OK;
  for (;;) { /* to the end, so that libzip checks the CRC */
    char extra;
    zip_int64_t k = got < e->size ? zip_fread(zf, (char *)buf + got, (zip_uint64_t)(e->size - got))
                                  : zip_fread(zf, &extra, 1);
    if (k < 0) {
      kf_diag_error(diag, "%s: weight '%s' (%s): read failed: %s", s->file, e->fqn, e->record,
                    zip_file_strerror(zf));
      st = KF_ERR_FORMAT;
      break;
    }
    if (k == 0) break;
    if (got >= e->size) {
      kf_diag_error(diag, "%s: weight '%s' (%s): record is longer than its directory entry says", s->file,
                    e->fqn, e->record);
      st = KF_ERR_FORMAT;
      break;
    }
    got += k;
  }
  if (st == KF_OK && got != e->size) {
    kf_diag_error(diag, "%s: weight '%s' (%s): record is truncated (%lld of %lld bytes)", s->file, e->fqn,
                  e->record, (long long)got, (long long)e->size);
    st = KF_ERR_FORMAT;
  }
  int rc = zip_fclose(zf);
  if (st == KF_OK && rc != 0) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, rc);
    kf_diag_error(diag, "%s: weight '%s' (%s): read failed: %s", s->file, e->fqn, e->record,
                  zip_error_strerror(&ze));
    zip_error_fini(&ze);
    st = KF_ERR_FORMAT;
  }
  if (st) {
    free(buf);
    return st;
  }
  e->owned = buf;
  e->data = buf;
  return KF_OK;
}

/* CRC-32 (IEEE) of mapped records: libzip checks the records it reads,
 * but a mapping bypasses it. zlib's, which the archive library links
 * anyway: several times a byte-at-a-time table's speed, which mattered
 * once weights reach hundreds of MB (ResNet-18's 46 MB: a fifth of a
 * rebuild from the kernel cache). */
static uint32_t crc32_of(const unsigned char *p, int64_t n) {
  uLong c = crc32_z(0L, Z_NULL, 0);
  return (uint32_t)crc32_z(c, p, (z_size_t)n);
}

static kf_status store_get(void *impl, const char *fqn, const void **data, int64_t *nbytes,
                           kf_diag *diag) {
  store *s = impl;
  *data = NULL;
  *nbytes = 0;
  store_entry key;
  key.fqn = (char *)fqn;
  store_entry *e = bsearch(&key, s->e, (size_t)s->n, sizeof *s->e, cmp_entry);
  if (!e) {
    kf_diag_error(diag, "%s: weight '%s' is not in the archive", s->file, fqn);
    return KF_ERR_ARG;
  }
  pthread_mutex_lock(&s->mu);
  store_entry *l = &s->e[e->leader];
  kf_status st = KF_OK;
  if (!l->data) st = store_read(s, l, diag);
  if (st == KF_OK && l->mapped) {
    if (l->has_crc && crc32_of(l->data, l->size) != l->crc) {
      kf_diag_error(diag, "%s: weight '%s' (%s): CRC mismatch: the archive is corrupt", s->file, e->fqn,
                    l->record);
      st = KF_ERR_FORMAT;
    } else {
      l->mapped = false;
    }
  }
  if (st == KF_OK) {
    *data = l->data;
    *nbytes = l->size ? l->size : e->needed;
  }
  pthread_mutex_unlock(&s->mu);
  return st;
}

/* Point STORED records into a read-only mapping of the archive. A record
 * that is compressed, or an archive minizip cannot read, falls back to
 * reading on demand. */
static void store_map(store *s, const char *path, const char *prefix, kf_diag *diag) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  struct stat sb;
  if (fstat(fd, &sb) != 0 || sb.st_size <= 0) {
    close(fd);
    return;
  }
  void *map = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (map == MAP_FAILED) {
    kf_diag_warn(diag, "%s: cannot map the archive (%s); weights are read on demand", s->file,
                 strerror(errno));
    return;
  }
  s->map = map;
  s->map_len = (size_t)sb.st_size;
  unzFile uf = unzOpen64(path);
  if (!uf) return;
  for (int i = 0; i < s->n; i++) {
    store_entry *e = &s->e[i];
    if (e->leader != i || e->size == 0) continue;
    char full[1024];
    if (snprintf(full, sizeof full, "%s%s", prefix, e->record) >= (int)sizeof full) continue;
    if (unzLocateFile(uf, full, 1) != UNZ_OK) continue;
    unz_file_info64 info;
    if (unzGetCurrentFileInfo64(uf, &info, NULL, 0, NULL, 0, NULL, 0) != UNZ_OK) continue;
    if (info.compression_method != 0 || (int64_t)info.uncompressed_size != e->size) continue;
    if (unzOpenCurrentFile(uf) != UNZ_OK) continue;
    ZPOS64_T pos = unzGetCurrentFileZStreamPos64(uf);
    unzCloseCurrentFile(uf);
    if (pos == 0 || pos > (ZPOS64_T)sb.st_size || (ZPOS64_T)e->size > (ZPOS64_T)sb.st_size - pos) continue;
    e->data = (const char *)map + pos;
    e->mapped = true;
  }
  unzClose(uf);
}

/* Build the store from the weights the graph uses; takes ownership of za. */
static kf_status store_create(const char *file, zip_t *za, const pt2_program *p, const char *path,
                              const char *prefix, kf_weight_store *out, kf_diag *diag) {
  store *s = calloc(1, sizeof *s);
  int n = 0;
  for (int i = 0; i < p->n_weights; i++) n += p->weights[i].used;
  if (s) {
    s->file = strdup(file);
    s->e = calloc((size_t)(n ? n : 1), sizeof *s->e);
  }
  if (!s || !s->file || !s->e || pthread_mutex_init(&s->mu, NULL) != 0) {
    if (s) {
      free(s->file);
      free(s->e);
      free(s);
    }
    zip_discard(za);
    return KF_ERR_NOMEM;
  }
  s->za = za;
  for (int i = 0; i < p->n_weights; i++) {
    const pt2_weight *w = &p->weights[i];
    if (!w->used) continue;
    store_entry *e = &s->e[s->n];
    e->fqn = strdup(w->fqn);
    e->record = strdup(w->short_rec);
    e->index = w->index;
    e->size = w->size;
    e->needed = w->needed;
    zip_stat_t zs;
    zip_stat_init(&zs);
    if (zip_stat_index(za, (zip_uint64_t)w->index, 0, &zs) == 0 && (zs.valid & ZIP_STAT_CRC)) {
      e->crc = zs.crc;
      e->has_crc = true;
    }
    s->n++;
    if (!e->fqn || !e->record) {
      store_destroy(s);
      return KF_ERR_NOMEM;
    }
  }
  qsort(s->e, (size_t)s->n, sizeof *s->e, cmp_entry);
  /* tied weights share one record: the first entry holds its data */
  for (int i = 0; i < s->n; i++) {
    s->e[i].leader = i;
    for (int j = 0; j < i; j++)
      if (s->e[j].index == s->e[i].index && s->e[j].size > 0) {
        s->e[i].leader = j;
        break;
      }
  }
  if (path && s->n) store_map(s, path, prefix, diag);
  out->impl = s;
  out->get = store_get;
  out->destroy = store_destroy;
  return KF_OK;
}

/* ---- configs ------------------------------------------------------------------ */

/* Append the entries of a PayloadConfig ({"config": {fqn: {...}}}). */
static kf_status add_config(archive *ar, const cJSON *cfg, const char *rel, const char *dir,
                            pt2_weight **ws, int *n, kf_diag *diag) {
  const cJSON *map = cJSON_GetObjectItemCaseSensitive(cfg, "config");
  if (!map) return KF_OK; /* an empty config may omit it */
  if (!cJSON_IsObject(map)) {
    kf_diag_error(diag, "%s: %s: 'config' must be an object", ar->file, rel);
    return KF_ERR_FORMAT;
  }
  int k = cJSON_GetArraySize(map);
  pt2_weight *nw = realloc(*ws, sizeof **ws * (size_t)(*n + k + 1));
  if (!nw) return KF_ERR_NOMEM;
  *ws = nw;
  const cJSON *it;
  cJSON_ArrayForEach(it, map) {
    pt2_weight *w = &(*ws)[*n];
    memset(w, 0, sizeof *w);
    w->fqn = it->string;
    w->index = -1;
    (*n)++;
    if (!cJSON_IsObject(it)) {
      kf_diag_error(diag, "%s: %s: entry '%s' must be an object", ar->file, rel, it->string);
      return KF_ERR_FORMAT;
    }
    const cJSON *pn = cJSON_GetObjectItemCaseSensitive(it, "path_name");
    const cJSON *pk = cJSON_GetObjectItemCaseSensitive(it, "use_pickle");
    const cJSON *tm = cJSON_GetObjectItemCaseSensitive(it, "tensor_meta");
    w->pickled = cJSON_IsTrue(pk);
    w->meta = cJSON_IsObject(tm) ? tm : NULL;
    if (!cJSON_IsString(pn)) {
      kf_diag_error(diag, "%s: %s: entry '%s' has no path_name", ar->file, rel, it->string);
      return KF_ERR_FORMAT;
    }
    size_t len = strlen(ar->prefix) + strlen(dir) + strlen(pn->valuestring) + 1;
    w->record = malloc(len);
    if (!w->record) return KF_ERR_NOMEM;
    snprintf(w->record, len, "%s%s%s", ar->prefix, dir, pn->valuestring);
    w->short_rec = w->record + strlen(ar->prefix);
    w->index = zip_name_locate(ar->za, w->record, 0);
    if (w->index >= 0) {
      zip_stat_t zs;
      zip_stat_init(&zs);
      if (zip_stat_index(ar->za, (zip_uint64_t)w->index, 0, &zs) != 0 || !(zs.valid & ZIP_STAT_SIZE)) {
        kf_diag_error(diag, "%s: %s: cannot stat record: %s", ar->file, w->short_rec, zerr(ar->za));
        return KF_ERR_FORMAT;
      }
      w->size = (int64_t)zs.size;
      /* Deflate expands at most ~1032:1 and a stored record not at all: a
       * larger claimed size is a corrupt or hostile directory entry. */
      if (!(zs.valid & ZIP_STAT_COMP_SIZE) || (zs.size > 4096u && (zs.size - 4096u) / 1100u > zs.comp_size)) {
        kf_diag_error(diag, "%s: %s: record claims %llu bytes from %llu compressed bytes", ar->file,
                      w->short_rec, (unsigned long long)zs.size, (unsigned long long)zs.comp_size);
        return KF_ERR_FORMAT;
      }
    }
  }
  return KF_OK;
}

/* ---- loading -------------------------------------------------------------------- */

typedef struct loader {
  archive ar;
  cJSON *program, *wcfg, *ccfg;
  pt2_program p;
  char *model_name;
  char *json_rel;
} loader;

static void loader_fini(loader *L) {
  cJSON_Delete(L->program);
  cJSON_Delete(L->wcfg);
  cJSON_Delete(L->ccfg);
  for (int i = 0; i < L->p.n_weights; i++) free(L->p.weights[i].record);
  free(L->p.weights);
  free(L->model_name);
  free(L->json_rel);
  if (L->ar.za) zip_discard(L->ar.za);
}

static bool find_layout_prefix(archive *ar, const char *cand) {
  snprintf(ar->prefix, sizeof ar->prefix, "%s", cand);
  zip_int64_t n = zip_get_num_entries(ar->za, 0);
  size_t pl = strlen(ar->prefix);
  for (zip_int64_t i = 0; i < n; i++) {
    const char *nm = zip_get_name(ar->za, (zip_uint64_t)i, ZIP_FL_ENC_RAW);
    if (!nm || strncmp(nm, ar->prefix, pl) != 0) continue;
    if (strncmp(nm + pl, "models/", 7) == 0 || strcmp(nm + pl, "serialized_exported_program.json") == 0)
      return true;
  }
  return false;
}

static kf_status load_archive(loader *L, kf_diag *diag) {
  archive *ar = &L->ar;
  zip_int64_t n = zip_get_num_entries(ar->za, 0);
  if (n <= 0) {
    kf_diag_error(diag, "%s: the archive is empty", ar->file);
    return KF_ERR_FORMAT;
  }
  /* root prefix: the first entry's top directory */
  const char *first = zip_get_name(ar->za, 0, ZIP_FL_ENC_RAW);
  char cand[512] = "";
  const char *slash = first ? strchr(first, '/') : NULL;
  if (slash && (size_t)(slash - first) + 1 < sizeof cand) {
    memcpy(cand, first, (size_t)(slash - first) + 1);
    cand[slash - first + 1] = 0;
  }
  if (!find_layout_prefix(ar, cand) && !find_layout_prefix(ar, "")) {
    bool aoti = false;
    for (zip_int64_t i = 0; i < n && !aoti; i++) {
      const char *nm = zip_get_name(ar->za, (zip_uint64_t)i, ZIP_FL_ENC_RAW);
      aoti = nm && strstr(nm, "data/aotinductor/");
    }
    if (aoti)
      kf_diag_error(diag, "%s: this is an AOTInductor package without an exported program "
                          "(models/<name>.json); save the ExportedProgram with torch.export.save",
                    ar->file);
    else
      kf_diag_error(diag, "%s: no exported program in the archive (expected %smodels/<name>.json)", ar->file,
                    cand);
    return KF_ERR_FORMAT;
  }
  /* the model: models/model.json when present, else the first one */
  size_t pl = strlen(ar->prefix);
  zip_int64_t pick = -1;
  int count = 0;
  for (zip_int64_t i = 0; i < n; i++) {
    const char *nm = zip_get_name(ar->za, (zip_uint64_t)i, ZIP_FL_ENC_RAW);
    if (!nm || strncmp(nm, ar->prefix, pl) != 0) continue;
    const char *rel = nm + pl;
    if (strncmp(rel, "models/", 7) || !has_suffix(rel, ".json") || strchr(rel + 7, '/')) continue;
    count++;
    if (pick < 0 || strcmp(rel, "models/model.json") == 0) {
      pick = i;
      free(L->json_rel);
      L->json_rel = strdup(rel);
      if (!L->json_rel) return KF_ERR_NOMEM;
    }
  }
  bool legacy = pick < 0;
  if (legacy) {
    L->json_rel = strdup("serialized_exported_program.json");
    if (!L->json_rel) return KF_ERR_NOMEM;
    pick = locate(ar, L->json_rel);
    L->model_name = strdup("model");
  } else {
    const char *base = L->json_rel + 7;
    L->model_name = strndup(base, strlen(base) - 5);
    if (count > 1)
      kf_diag_warn(diag, "%s: the archive holds %d models; reading %s", ar->file, count, L->json_rel);
  }
  if (!L->model_name) return KF_ERR_NOMEM;
  if (pick < 0) {
    kf_diag_error(diag, "%s: missing record %s%s", ar->file, ar->prefix, L->json_rel);
    return KF_ERR_FORMAT;
  }
  kf_status st = read_json(ar, pick, L->json_rel, &L->program, diag);
  if (st) return st;

  /* schema version: major 8, any minor */
  const cJSON *sv = cJSON_GetObjectItemCaseSensitive(L->program, "schema_version");
  const cJSON *maj = sv ? cJSON_GetObjectItemCaseSensitive(sv, "major") : NULL;
  const cJSON *min = sv ? cJSON_GetObjectItemCaseSensitive(sv, "minor") : NULL;
  if (!cJSON_IsNumber(maj)) {
    kf_diag_error(diag, "%s: %s: missing schema_version.major", ar->file, L->json_rel);
    return KF_ERR_FORMAT;
  }
  if (maj->valuedouble != 8) {
    kf_diag_error(diag, "%s: %s: schema version %g.%g is not supported (kfuse reads major version 8)",
                  ar->file, L->json_rel, maj->valuedouble, cJSON_IsNumber(min) ? min->valuedouble : 0.0);
    return KF_ERR_VERSION;
  }

  /* weights and constants configs */
  char rel[600];
  if (!legacy) {
    static const char *wnames[] = {"_weights_config.json", "_model_param_config.json"};
    for (int i = 0; i < 2 && !L->wcfg; i++) {
      snprintf(rel, sizeof rel, "data/weights/%s%s", L->model_name, wnames[i]);
      zip_int64_t idx = locate(ar, rel);
      if (idx >= 0 && (st = read_json(ar, idx, rel, &L->wcfg, diag))) return st;
    }
    snprintf(rel, sizeof rel, "data/constants/%s_constants_config.json", L->model_name);
    zip_int64_t idx = locate(ar, rel);
    if (idx >= 0 && (st = read_json(ar, idx, rel, &L->ccfg, diag))) return st;
    if (L->wcfg && (st = add_config(ar, L->wcfg, "weights config", "data/weights/", &L->p.weights,
                                    &L->p.n_weights, diag)))
      return st;
    if (L->ccfg && (st = add_config(ar, L->ccfg, "constants config", "data/constants/", &L->p.weights,
                                    &L->p.n_weights, diag)))
      return st;
  } else {
    L->p.legacy_pickle = locate(ar, "serialized_state_dict.pt") >= 0 ||
                         locate(ar, "serialized_constants.pt") >= 0;
  }
  L->p.file = ar->file;
  L->p.json_name = L->json_rel;
  L->p.root = L->program;
  return KF_OK;
}

static kf_status finish_load(loader *L, const char *path, kf_graph **out, kf_diag *diag) {
  kf_graph *g = NULL;
  kf_status st = load_archive(L, diag);
  if (st == KF_OK) st = kf_pt2_build_graph(&L->p, L->model_name, &g, diag);
  if (st == KF_OK) {
    kf_weight_store ws;
    zip_t *za = L->ar.za;
    L->ar.za = NULL; /* the store owns it now */
    st = store_create(L->ar.file, za, &L->p, path, L->ar.prefix, &ws, diag);
    if (st == KF_OK) kf_graph_take_store(g, ws);
  }
  if (st != KF_OK) {
    if (st == KF_ERR_NOMEM && diag && diag->n_errors == 0)
      kf_diag_error(diag, "%s: out of memory", L->ar.file);
    kf_graph_destroy(g);
    g = NULL;
  } else {
    g->origin = kf_graph_strdup(g, L->ar.file);
  }
  loader_fini(L);
  *out = g;
  return st;
}

kf_status kf_pt2_load(const char *path, const kf_load_options *opts, kf_graph **out, kf_diag *diag) {
  *out = NULL;
  /* defaults of kf_load_options_init, which lives in the MLIR library */
  kf_load_options dflt = {.map_weights = true};
  if (!opts) opts = &dflt;
  loader L;
  memset(&L, 0, sizeof L);
  L.ar.file = path;
  int err = 0;
  L.ar.za = zip_open(path, ZIP_RDONLY | ZIP_CHECKCONS, &err);
  if (!L.ar.za) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, err);
    if (err == ZIP_ER_NOENT || err == ZIP_ER_OPEN || err == ZIP_ER_READ)
      kf_diag_error(diag, "%s: cannot open: %s", path, zip_error_strerror(&ze));
    else
      kf_diag_error(diag, "%s: not a readable zip archive: %s", path, zip_error_strerror(&ze));
    zip_error_fini(&ze);
    return err == ZIP_ER_NOENT || err == ZIP_ER_OPEN || err == ZIP_ER_READ ? KF_ERR_IO : KF_ERR_FORMAT;
  }
  return finish_load(&L, opts->map_weights ? path : NULL, out, diag);
}

kf_status kf_pt2_load_buffer(const void *data, size_t n, const char *display_name, kf_graph **out,
                             kf_diag *diag) {
  *out = NULL;
  const char *name = display_name ? display_name : "<buffer>";
  zip_error_t ze;
  zip_error_init(&ze);
  zip_source_t *src = zip_source_buffer_create(data, n, 0, &ze);
  if (!src) {
    kf_diag_error(diag, "%s: cannot read the buffer: %s", name, zip_error_strerror(&ze));
    zip_error_fini(&ze);
    return KF_ERR_NOMEM;
  }
  loader L;
  memset(&L, 0, sizeof L);
  L.ar.file = name;
  L.ar.za = zip_open_from_source(src, ZIP_RDONLY | ZIP_CHECKCONS, &ze);
  if (!L.ar.za) {
    kf_diag_error(diag, "%s: not a readable zip archive: %s", name, zip_error_strerror(&ze));
    zip_error_fini(&ze);
    zip_source_free(src);
    return KF_ERR_FORMAT;
  }
  zip_error_fini(&ze);
  return finish_load(&L, NULL, out, diag);
}
