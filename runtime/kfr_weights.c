/* kfr_weights.c — finding a module's weights file, checking that it is the
 * one its plan was compiled with, and uploading it (create time).
 *
 * Which file: kfuse_options.weights_path when given; else, for a shared
 * module (plan flag KFR_FLAG_WEIGHTS_BESIDE_MODULE), the module file's own
 * path + ".weights", so a module and its weights renamed together stay a
 * pair and a stale file under the old name is never consulted; else the
 * name recorded at compile time, relative to the directory of the object
 * holding the plan (a program or library that linked an object module).
 *
 * What is checked, before any byte of it is used (docs/DEPLOY.md):
 *   - it is a regular file (opened O_NONBLOCK: a FIFO or a device must not
 *     block create) of exactly KFR_WEIGHTS_HEADER_BYTES + weights_bytes;
 *   - its header names this plan: magic, version, the plan's model_id (a
 *     stale file, another model's, or the new file of a module rebuilt
 *     after this process loaded the old one, is refused here without
 *     reading the data), and the plan's size and hash of the data;
 *   - the data's XXH64 equals the plan's weights_hash, unless the caller
 *     asked to skip it (kfuse_options.skip_weights_hash): the size and the
 *     header's model id still bind the file then.
 * The file is read with pread in chunks, each hashed and uploaded in the
 * same pass, so the bytes checked are exactly the bytes uploaded; create
 * fails (and frees the upload) if the hash differs, so no run sees
 * unchecked weights. Nothing is mapped: a file truncated in place while
 * create reads it gives a short read and a clear error, never SIGBUS.
 *
 * Each chunk goes up with cuMemcpyHtoDAsync on the instance's own stream
 * (create never uses the legacy stream nor a synchronous copy, which would
 * wait for the process's other GPU work: kfr_sync.c), and that stream is
 * synchronised before the chunk buffer is refilled: an asynchronous copy
 * may read its pageable source after the call returns. One buffer and a
 * wait per 8 MiB keeps this simple; reading the next chunk while the copy
 * runs would need two pinned buffers. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kfr_hash.h"
#include "kfr_int.h"

_Static_assert(sizeof(kfr_weights_header) == KFR_WEIGHTS_HEADER_BYTES,
               "the weights header is 256 bytes");

/* host buffer the file is read through, per chunk */
#define CHUNK_BYTES ((size_t)8 << 20)

/* The file mapped at address p, from /proc/self/maps; 0 if none. *deleted:
 * the kernel marks a file replaced or removed since it was mapped. */
static int mapped_file(const void *p, char *out, size_t n, int *deleted) {
  FILE *f = fopen("/proc/self/maps", "re");
  if (!f)
    return 0;
  char line[PATH_MAX + 128];
  int found = 0;
  uintptr_t a = (uintptr_t)p;
  while (!found && fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    int at = 0;
    if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &at) < 2 || !at)
      continue;
    if (a < lo || a >= hi || line[at] != '/')
      continue;
    line[strcspn(line, "\n")] = 0;
    char *del = strstr(line + at, " (deleted)");
    *deleted = del != NULL;
    if (del)
      *del = 0;
    found = snprintf(out, n, "%s", line + at) < (int)n;
  }
  fclose(f);
  return found;
}

static const char *file_kind(mode_t m) {
  if (S_ISDIR(m))
    return "a directory";
  if (S_ISFIFO(m))
    return "a FIFO";
  if (S_ISCHR(m))
    return "a character device";
  if (S_ISBLK(m))
    return "a block device";
  if (S_ISSOCK(m))
    return "a socket";
  return "not a regular file";
}

/* The weights file's path into out; *replaced: the module file was
 * replaced since it was loaded (for messages). */
static int weights_path(kfuse_model *m, const void *plan, const char *given,
                        char *out, size_t n, int *replaced) {
  *replaced = 0;
  if (given && *given) {
    if ((size_t)snprintf(out, n, "%s", given) >= n)
      return kfr_fail(m, KFUSE_EWEIGHTS, "weights path too long: %s", given);
    return KFUSE_OK;
  }
  const char *rec = m->strings + m->h.weights_path;
  int beside = (m->h.flags & KFR_FLAG_WEIGHTS_BESIDE_MODULE) != 0;
  if (!*rec && !beside)
    return kfr_fail(m, KFUSE_EWEIGHTS, "the model's weights are in a separate "
                    "file, but the module records no path and none was given "
                    "(kfuse_options.weights_path)");
  if (rec[0] == '/' && !beside) {
    snprintf(out, n, "%s", rec);
    return KFUSE_OK;
  }
  Dl_info info;
  struct link_map *lm = NULL;
  char file[PATH_MAX];
  int have = 0;
  if (dladdr1(plan, &info, (void **)&lm, RTLD_DL_LINKMAP) && lm) {
    /* absolute, even if the module was opened by a relative path (or as
     * /proc/self/fd/N) and the working directory changed since */
    if (mapped_file(plan, file, sizeof file, replaced)) {
      have = 1;
    } else if (lm->l_name && lm->l_name[0]) { /* a shared object */
      if (!realpath(lm->l_name, file))
        snprintf(file, sizeof file, "%s", lm->l_name);
      have = 1;
    } else { /* the main program (statically linked model.o) */
      ssize_t k = readlink("/proc/self/exe", file, sizeof file - 1);
      if (k > 0) {
        file[k] = 0;
        have = 1;
      }
    }
  }
  int shared = lm && lm->l_name && lm->l_name[0];
  if (beside && have && shared) {
    if ((size_t)snprintf(out, n, "%s.weights", file) >= n)
      return kfr_fail(m, KFUSE_EWEIGHTS, "weights path too long: %s.weights",
                      file);
    return KFUSE_OK;
  }
  if (!have) { /* plan not in a module: the working directory */
    snprintf(out, n, "%s", rec);
    return KFUSE_OK;
  }
  char *slash = strrchr(file, '/');
  if (slash)
    *slash = 0;
  if ((size_t)snprintf(out, n, "%s/%s", slash ? file : ".", rec) >= n)
    return kfr_fail(m, KFUSE_EWEIGHTS, "weights path too long: %s/%s", file,
                    rec);
  return KFUSE_OK;
}

/* pread all of n bytes at off; returns the bytes read (short at EOF), or
 * -1 with errno. */
static ssize_t pread_full(int fd, void *buf, size_t n, uint64_t off) {
  size_t got = 0;
  while (got < n) {
    ssize_t k = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0)
      return -1;
    if (k == 0)
      break;
    got += (size_t)k;
  }
  return (ssize_t)got;
}

/* The header against the plan. */
static int check_header(kfuse_model *m, const char *path,
                        const kfr_weights_header *w, int replaced) {
  const kfr_header *h = &m->h;
  if (memcmp(w->magic, KFR_WEIGHTS_MAGIC, 8) != 0)
    return kfr_fail(m, KFUSE_EWEIGHTS, "%s is not a kfuse weights file (no "
                    "weights header; written by a kfuse older than plan "
                    "version 6?)", path);
  if (w->version != KFR_WEIGHTS_VERSION ||
      w->header_bytes != KFR_WEIGHTS_HEADER_BYTES)
    return kfr_fail(m, KFUSE_EWEIGHTS, "the weights file %s has format version "
                    "%u with a %u-byte header; this runtime reads version %u, "
                    "%u bytes", path, w->version, w->header_bytes,
                    KFR_WEIGHTS_VERSION, KFR_WEIGHTS_HEADER_BYTES);
  if (w->model_id != h->model_id)
    return kfr_fail(m, KFUSE_EWEIGHTS, "the weights file %s belongs to another "
                    "module (its model id is %016llx, this module's %016llx)%s",
                    path, (unsigned long long)w->model_id,
                    (unsigned long long)h->model_id,
                    replaced ? ": the module file was replaced since this "
                               "process loaded it; load the new module, or "
                               "restart the process"
                             : ": a stale file, or one of another build; "
                               "rebuild, or keep each module with its own "
                               "weights file");
  if (w->data_bytes != h->weights_bytes || w->data_hash != h->weights_hash)
    return kfr_fail(m, KFUSE_EWEIGHTS, "the header of the weights file %s is "
                    "corrupt: it records %llu bytes with hash %016llx for this "
                    "module, which has %llu bytes with hash %016llx", path,
                    (unsigned long long)w->data_bytes,
                    (unsigned long long)w->data_hash,
                    (unsigned long long)h->weights_bytes,
                    (unsigned long long)h->weights_hash);
  return KFUSE_OK;
}

static int cu_fail(kfuse_model *m, CUresult r, const char *call,
                   const char *path) {
  char why[256];
  return kfr_fail(m, r == CUDA_ERROR_OUT_OF_MEMORY ? KFUSE_ENOMEM : KFUSE_ECUDA,
                  "%s failed (uploading the weights of %s): %s", call, path,
                  kfr_cu_describe(m->cu, r, why, sizeof why));
}

/* Read the data once: hash every byte, upload the span [lo, hi) the WEIGHT
 * buffers cover to m->weights. */
static int upload(kfuse_model *m, int fd, const char *path, int skip_hash) {
  const kfr_header *h = &m->h;
  uint64_t lo = UINT64_MAX, hi = 0;
  for (uint32_t i = 0; i < h->n_buffers; i++) {
    const kfr_buffer *b = &m->buffers[i];
    if (b->kind != KFR_BUF_WEIGHT || b->nbytes == 0)
      continue;
    if (b->offset < lo)
      lo = b->offset;
    if (b->offset + b->nbytes > hi)
      hi = b->offset + b->nbytes;
  }
  lo &= ~(uint64_t)255;
  m->weights_lo = lo;
  CUresult r = m->cu->cuMemAlloc(&m->weights, hi - lo);
  if (r != CUDA_SUCCESS) {
    m->weights = 0;
    return cu_fail(m, r, "cuMemAlloc", path);
  }
  uint8_t *chunk = malloc(CHUNK_BYTES);
  if (!chunk)
    return kfr_fail(m, KFUSE_ENOMEM, "out of host memory reading %s", path);
  kfr_xxh64_state hs;
  kfr_xxh64_init(&hs, 0);
  int rc = KFUSE_OK;
  uint64_t total = h->weights_bytes;
  for (uint64_t pos = 0; pos < total && !rc;) {
    size_t want = total - pos < CHUNK_BYTES ? (size_t)(total - pos) : CHUNK_BYTES;
    ssize_t got = pread_full(fd, chunk, want, KFR_WEIGHTS_HEADER_BYTES + pos);
    if (got < 0) {
      rc = kfr_fail(m, KFUSE_EWEIGHTS, "cannot read the weights file %s: %s",
                    path, strerror(errno));
      break;
    }
    if ((size_t)got < want) {
      rc = kfr_fail(m, KFUSE_EWEIGHTS, "the weights file %s shrank while it "
                    "was read: %llu of %llu data bytes (rewritten in place? "
                    "replace it by renaming a new file over it, as kfuse "
                    "compile does)", path,
                    (unsigned long long)(pos + (uint64_t)got),
                    (unsigned long long)total);
      break;
    }
    if (!skip_hash)
      kfr_xxh64_update(&hs, chunk, want);
    uint64_t a = pos > lo ? pos : lo, b = pos + want < hi ? pos + want : hi;
    if (a < b) {
      if ((r = m->cu->cuMemcpyHtoDAsync(m->weights + (a - lo), chunk + (a - pos), (size_t)(b - a),
                                        m->own)) != CUDA_SUCCESS)
        rc = cu_fail(m, r, "cuMemcpyHtoDAsync", path);
      else if ((r = m->cu->cuStreamSynchronize(m->own)) != CUDA_SUCCESS) /* before chunk is refilled */
        rc = cu_fail(m, r, "cuStreamSynchronize", path);
    }
    pos += want;
  }
  free(chunk);
  if (!rc && !skip_hash && kfr_xxh64_final(&hs) != h->weights_hash)
    rc = kfr_fail(m, KFUSE_EWEIGHTS, "the weights in %s do not match the "
                  "module: their XXH64 is %016llx, the module expects %016llx "
                  "(the file was modified or corrupted after kfuse compile "
                  "wrote it)", path,
                  (unsigned long long)kfr_xxh64_final(&hs),
                  (unsigned long long)h->weights_hash);
  return rc;
}

int kfr_weights_load(kfuse_model *m, const void *plan, const char *given,
                     int skip_hash) {
  char path[PATH_MAX + 256];
  int replaced;
  int rc = weights_path(m, plan, given, path, sizeof path, &replaced);
  if (rc)
    return rc;
  /* O_NONBLOCK: opening a FIFO with no writer would block */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return kfr_fail(m, KFUSE_EWEIGHTS, "cannot open the weights file %s: %s%s",
                    path, strerror(errno),
                    replaced ? " (the module file was replaced since this "
                               "process loaded it)" : "");
  struct stat st;
  uint64_t want = m->h.weights_bytes + KFR_WEIGHTS_HEADER_BYTES;
  kfr_weights_header wh;
  ssize_t got;
  if (fstat(fd, &st) != 0) {
    rc = kfr_fail(m, KFUSE_EWEIGHTS, "cannot stat the weights file %s: %s",
                  path, strerror(errno));
  } else if (!S_ISREG(st.st_mode)) {
    rc = kfr_fail(m, KFUSE_EWEIGHTS, "the weights file %s is %s, not a regular "
                  "file", path, file_kind(st.st_mode));
  } else if (want < m->h.weights_bytes || (uint64_t)st.st_size != want) {
    rc = kfr_fail(m, KFUSE_EWEIGHTS, "the weights file %s has %lld bytes; this "
                  "module's has exactly %llu (a %u-byte header and %llu bytes "
                  "of weights): a wrong or truncated file?", path,
                  (long long)st.st_size, (unsigned long long)want,
                  KFR_WEIGHTS_HEADER_BYTES,
                  (unsigned long long)m->h.weights_bytes);
  } else if ((got = pread_full(fd, &wh, sizeof wh, 0)) != (ssize_t)sizeof wh) {
    rc = kfr_fail(m, KFUSE_EWEIGHTS, "cannot read the header of the weights "
                  "file %s: %s", path, got < 0 ? strerror(errno) : "short read");
  } else if (!(rc = check_header(m, path, &wh, replaced))) {
    rc = upload(m, fd, path, skip_hash);
  }
  close(fd);
  return rc;
}
