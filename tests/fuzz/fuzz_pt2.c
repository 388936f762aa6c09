/* tests/fuzz/fuzz_pt2.c — libFuzzer target: the whole .pt2 frontend on raw
 * bytes (zip container, records, JSON, weights), then verify, print and the
 * default pipeline on whatever loads. Seeds: the fixture archives and the
 * broken archives of tests/bad (scripts/fuzz.sh). */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_exercise_pt2(data, size);
  return 0;
}
