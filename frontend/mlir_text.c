/* frontend/mlir_text.c — placeholder; being written. */
#include "kfuse/frontend.h"
kf_status kf_mlir_parse(const char *text, size_t n, const char *name, kf_graph **out, kf_diag *diag) {
  (void)text; (void)n; *out = NULL; kf_diag_error(diag, "%s: MLIR parsing is not implemented yet", name); return KF_ERR_UNSUPPORTED; }
