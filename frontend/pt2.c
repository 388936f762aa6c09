/* frontend/pt2.c — placeholder; being written. */
#include "kfuse/frontend.h"
kf_status kf_pt2_load(const char *path, const kf_load_options *opts, kf_graph **out, kf_diag *diag) {
  (void)opts; *out = NULL; kf_diag_error(diag, "%s: .pt2 reading is not implemented yet", path); return KF_ERR_UNSUPPORTED; }
kf_status kf_pt2_load_buffer(const void *data, size_t n, const char *name, kf_graph **out, kf_diag *diag) {
  (void)data; (void)n; *out = NULL; kf_diag_error(diag, "%s: .pt2 reading is not implemented yet", name); return KF_ERR_UNSUPPORTED; }
