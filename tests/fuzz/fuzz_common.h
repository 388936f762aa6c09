/* tests/fuzz/fuzz_common.h — shared by the libFuzzer targets (scripts/fuzz.sh). */
#ifndef KFUSE_FUZZ_COMMON_H
#define KFUSE_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>

/* Load a .pt2 archive from memory and, when it loads, do everything a user
 * command would: verify, print, run the default pipeline, print again, and
 * read every weight through the weight store. Diagnostics are discarded. */
void fuzz_exercise_pt2(const uint8_t *data, size_t size);

/* A stored (uncompressed) zip of n records, data on 64-byte boundaries, as
 * torch.export writes them. Returns a malloc'd buffer, or NULL. */
typedef struct fuzz_record {
  const char *name;
  const void *data;
  size_t size;
} fuzz_record;
uint8_t *fuzz_make_zip(const fuzz_record *recs, int n, size_t *out_size);

#endif
