/* tests/fuzz/fuzz_cache_wire.c — libFuzzer target for the kernel cache's
 * wire form (cache/wire.c), the bytes an HTTP remote hands back.
 *
 * Mutated bodies almost never keep a valid BLAKE3 trailer, so the field
 * parser behind it would seldom be reached. Each input is therefore decoded
 * twice: as it is (the framing, the version line, the trailer check), and
 * as the fields of a body, given the version line and a valid trailer here,
 * so every length, tag and number reaches the parser. An entry that decodes
 * must encode to bytes that decode to the same entry. Seeds: one body of
 * every field, written by scripts/fuzz.sh. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/blake3.h>

#include "kfuse/cache.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void drop(void *user, kf_diag_level level, const char *msg) {
  (void)user;
  (void)level;
  (void)msg;
}

static void decode_and_check(const void *p, size_t n, kf_diag *d) {
  kf_cache_entry *e = NULL;
  if (kf_cache_entry_decode(p, n, &e, d) != KF_OK) return;
  kf_strbuf b;
  kf_strbuf_init(&b);
  kf_cache_entry *again = NULL;
  if (kf_cache_entry_encode(e, &b, d) != KF_OK || kf_cache_entry_decode(b.data, b.len, &again, d) != KF_OK ||
      strcmp(again->payload_hash, e->payload_hash) != 0 || again->created_ms != e->created_ms)
    abort(); /* a decoded entry must survive its own round trip */
  kf_cache_entry_destroy(again);
  kf_cache_entry_destroy(e);
  kf_strbuf_fini(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  kf_diag d;
  kf_diag_init(&d, drop, NULL);
  decode_and_check(data, size, &d);

  static const char magic[] = KF_CACHE_WIRE_FORMAT "\n";
  size_t n = sizeof magic - 1 + size + 9 + 32;
  uint8_t *body = malloc(n);
  if (!body) return 0;
  memcpy(body, magic, sizeof magic - 1);
  if (size) memcpy(body + sizeof magic - 1, data, size);
  uint8_t *t = body + sizeof magic - 1 + size;
  t[0] = 'Z';
  for (int i = 0; i < 8; i++) t[1 + i] = (uint8_t)((uint64_t)32 >> (8 * i));
  llvm_blake3_hasher h;
  llvm_blake3_hasher_init(&h);
  llvm_blake3_hasher_update(&h, body, (size_t)(t - body));
  llvm_blake3_hasher_finalize(&h, t + 9, 32);
  decode_and_check(body, n, &d);
  free(body);
  return 0;
}
