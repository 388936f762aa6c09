/* frontend/load.c — kf_model_load: picks the reader by content and name (a
 * zip archive or a *.pt2 file is read as .pt2, anything else as MLIR text)
 * and the load options. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfuse/frontend.h"

void kf_load_options_init(kf_load_options *o) {
  memset(o, 0, sizeof *o);
  o->map_weights = true;
}

kf_status kf_model_load(const char *path, const kf_load_options *opts,
                        kf_graph **out, kf_diag *diag) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) {
    kf_diag_error(diag, "%s: cannot open: %s", path, strerror(errno));
    return KF_ERR_IO;
  }
  unsigned char magic[4] = {0};
  size_t got = fread(magic, 1, 4, f);
  size_t len = strlen(path);
  bool pt2_name = len >= 4 && strcmp(path + len - 4, ".pt2") == 0;
  /* zip archives, and anything named .pt2 (so that a broken archive gets
   * the archive reader's message, not MLIR's) */
  if ((got == 4 && memcmp(magic, "PK\003\004", 4) == 0) || pt2_name) {
    fclose(f);
    return kf_pt2_load(path, opts, out, diag);
  }
  if (fseek(f, 0, SEEK_END) != 0) {
    fclose(f);
    kf_diag_error(diag, "%s: cannot seek", path);
    return KF_ERR_IO;
  }
  long n = ftell(f);
  if (n < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    kf_diag_error(diag, "%s: cannot determine size", path);
    return KF_ERR_IO;
  }
  char *text = malloc((size_t)n + 1);
  if (!text) {
    fclose(f);
    return KF_ERR_NOMEM;
  }
  size_t k = fread(text, 1, (size_t)n, f);
  bool err = ferror(f) || k != (size_t)n;
  fclose(f);
  if (err) {
    free(text);
    kf_diag_error(diag, "%s: read failed", path);
    return KF_ERR_IO;
  }
  text[n] = 0;
  kf_status st = kf_mlir_parse(text, (size_t)n, path, out, diag);
  free(text);
  return st;
}
