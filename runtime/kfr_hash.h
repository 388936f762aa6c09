/* kfr_hash.h — XXH64, the content hash that binds a module to its weights
 * file (runtime/kfr_weights.c checks it at create; driver/compile.c computes
 * it while writing the file; the plan writer hashes embedded weights and
 * the plan itself for its model id).
 *
 * Written here from the algorithm's specification (xxHash's
 * doc/xxhash_spec.md, XXH64): no dependency. XXH64 is not cryptographic: it
 * detects a wrong, stale, truncated or corrupted file, not a forgery (whoever
 * can replace the weights file beside a module can replace the module too).
 * It runs at several GB/s on one core, so checking it costs about as much as
 * reading the file. docs/DEPLOY.md gives the measured rate. */
#ifndef KFR_HASH_H
#define KFR_HASH_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Streaming state: init, update any number of times, final. */
typedef struct kfr_xxh64_state {
  uint64_t v[4];     /* the four lane accumulators */
  uint64_t total;    /* bytes seen */
  uint64_t seed;
  uint8_t buf[32];   /* a partial stripe */
  uint32_t nbuf;
} kfr_xxh64_state;

void kfr_xxh64_init(kfr_xxh64_state *s, uint64_t seed);
void kfr_xxh64_update(kfr_xxh64_state *s, const void *data, size_t n);
/* The hash of everything seen so far; s may be updated further. */
uint64_t kfr_xxh64_final(const kfr_xxh64_state *s);
/* One call: XXH64(data, n, seed). */
uint64_t kfr_xxh64(const void *data, size_t n, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif
