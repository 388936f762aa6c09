/* tests/fuzz/fuzz_common.c — what every fuzz target does with a loaded
 * graph, and a minimal writer of stored zip archives (so that a target can
 * fuzz the JSON inside an archive without fighting the zip CRCs). */
#include "fuzz_common.h"

#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "kfuse/frontend.h"
#include "kfuse/ir.h"
#include "kfuse/pass.h"

static void quiet(void *user, kf_diag_level level, const char *msg) {
  (void)user;
  (void)level;
  /* touch the message so a dangling pointer would show up under ASan */
  volatile size_t n = strlen(msg);
  (void)n;
}

static int null_writer(void *user, const char *data, size_t n) {
  (void)user;
  (void)data;
  (void)n;
  return 0;
}

void fuzz_exercise_pt2(const uint8_t *data, size_t size) {
  kf_diag d;
  kf_diag_init(&d, quiet, NULL);
  kf_graph *g = NULL;
  if (kf_pt2_load_buffer(data, size, "fuzz.pt2", &g, &d) != KF_OK) {
    kf_graph_destroy(g);
    return;
  }
  if (kf_graph_verify(g, &d) == KF_OK) {
    kf_graph_print(g, null_writer, NULL);
    if (kf_pass_run_pipeline(g, kf_pass_default_pipeline(), true, &d) == KF_OK)
      kf_graph_print(g, null_writer, NULL);
  }
  if (g->store.get)
    for (int i = 0; i < g->n_weights; i++) {
      const void *w = NULL;
      int64_t nb = 0;
      if (g->store.get(g->store.impl, g->weights[i].fqn, &w, &nb, &d) == KF_OK && nb > 0) {
        /* read first and last byte: the store promised nb readable bytes */
        volatile uint8_t a = ((const uint8_t *)w)[0], b = ((const uint8_t *)w)[nb - 1];
        (void)a;
        (void)b;
      }
    }
  kf_graph_destroy(g);
}

static void put16(uint8_t *p, unsigned v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

uint8_t *fuzz_make_zip(const fuzz_record *recs, int n, size_t *out_size) {
  size_t cap = 22;
  for (int i = 0; i < n; i++) cap += 30 + 4 + 64 + 46 + 2 * strlen(recs[i].name) + recs[i].size;
  uint8_t *z = calloc(1, cap);
  if (!z) return NULL;
  size_t *offs = calloc((size_t)n + 1, sizeof *offs);
  if (!offs) {
    free(z);
    return NULL;
  }
  size_t pos = 0;
  for (int i = 0; i < n; i++) {
    size_t nl = strlen(recs[i].name);
    size_t pad = (64 - (pos + 30 + nl + 4) % 64) % 64;
    uint32_t crc = (uint32_t)crc32(0L, (const Bytef *)recs[i].data, (uInt)recs[i].size);
    uint8_t *h = z + pos;
    offs[i] = pos;
    put32(h, 0x04034b50);
    put16(h + 4, 20);
    put32(h + 14, crc);
    put32(h + 18, (uint32_t)recs[i].size);
    put32(h + 22, (uint32_t)recs[i].size);
    put16(h + 26, (unsigned)nl);
    put16(h + 28, (unsigned)(4 + pad));
    memcpy(h + 30, recs[i].name, nl);
    put16(h + 30 + nl, 0x4246); /* "FB" padding field, as PyTorch writes */
    put16(h + 32 + nl, (unsigned)pad);
    pos += 30 + nl + 4 + pad;
    if (recs[i].size) memcpy(z + pos, recs[i].data, recs[i].size);
    pos += recs[i].size;
  }
  size_t cd = pos;
  for (int i = 0; i < n; i++) {
    size_t nl = strlen(recs[i].name);
    const uint8_t *l = z + offs[i];
    uint8_t *h = z + pos;
    put32(h, 0x02014b50);
    put16(h + 4, 20);
    put16(h + 6, 20);
    memcpy(h + 16, l + 14, 12); /* crc, sizes */
    put16(h + 28, (unsigned)nl);
    put32(h + 42, (uint32_t)offs[i]);
    memcpy(h + 46, recs[i].name, nl);
    pos += 46 + nl;
  }
  uint8_t *e = z + pos;
  put32(e, 0x06054b50);
  put16(e + 8, (unsigned)n);
  put16(e + 10, (unsigned)n);
  put32(e + 12, (uint32_t)(pos - cd));
  put32(e + 16, (uint32_t)cd);
  pos += 22;
  free(offs);
  *out_size = pos;
  return z;
}
