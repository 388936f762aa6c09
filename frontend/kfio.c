/* frontend/kfio.c — placeholder; being written. */
#include <string.h>
#include "kfuse/interp.h"
kf_status kf_io_read(const char *path, kf_io_file *out, kf_diag *diag) {
  memset(out, 0, sizeof *out); kf_diag_error(diag, "%s: .kfio reading is not implemented yet", path); return KF_ERR_UNSUPPORTED; }
void kf_io_fini(kf_io_file *f) { (void)f; }
