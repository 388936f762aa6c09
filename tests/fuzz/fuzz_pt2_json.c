/* tests/fuzz/fuzz_pt2_json.c — libFuzzer target for the exported-program
 * JSON. Mutating a real archive mostly breaks its CRCs, so the JSON reader
 * behind them is seldom reached; here the input *is* models/model.json, and
 * the target wraps it in a well-formed archive together with every other
 * record of a template archive (weights config, weight records, metadata)
 * before loading it. The template is $KFUSE_FUZZ_TEMPLATE (scripts/fuzz.sh
 * uses tests/fixtures/mlp.core.pt2); without it the archive holds only the
 * JSON. Seeds: the model.json of every fixture. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zip.h>

#include "fuzz_common.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_RECORDS 64

static fuzz_record recs[MAX_RECORDS];
static int n_recs = 1; /* slot 0 is the fuzzed JSON */

/* Copy every record of the template except its models/ JSON. */
static void load_template(const char *path) {
  int err = 0;
  zip_t *z = zip_open(path, ZIP_RDONLY, &err);
  if (!z) {
    fprintf(stderr, "fuzz_pt2_json: cannot open template %s (libzip error %d)\n", path, err);
    exit(1);
  }
  zip_int64_t n = zip_get_num_entries(z, 0);
  for (zip_int64_t i = 0; i < n && n_recs < MAX_RECORDS; i++) {
    zip_stat_t st;
    if (zip_stat_index(z, (zip_uint64_t)i, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE)) continue;
    if (strstr(st.name, "/models/")) continue;
    const char *rel = strchr(st.name, '/');
    char *name = malloc(strlen(rel ? rel : st.name) + 16);
    uint8_t *data = malloc(st.size ? st.size : 1);
    zip_file_t *f = zip_fopen_index(z, (zip_uint64_t)i, 0);
    if (!name || !data || !f || zip_fread(f, data, st.size) != (zip_int64_t)st.size) {
      fprintf(stderr, "fuzz_pt2_json: cannot read %s from %s\n", st.name, path);
      exit(1);
    }
    zip_fclose(f);
    sprintf(name, "archive%s", rel ? rel : st.name);
    recs[n_recs].name = name;
    recs[n_recs].data = data;
    recs[n_recs].size = st.size;
    n_recs++;
  }
  zip_close(z);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  recs[0].name = "archive/models/model.json";
  const char *t = getenv("KFUSE_FUZZ_TEMPLATE");
  if (t && *t) load_template(t);
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  recs[0].data = data;
  recs[0].size = size;
  size_t n = 0;
  uint8_t *zip = fuzz_make_zip(recs, n_recs, &n);
  if (!zip) return 0;
  fuzz_exercise_pt2(zip, n);
  free(zip);
  return 0;
}
