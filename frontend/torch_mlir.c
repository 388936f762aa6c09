/* frontend/torch_mlir.c — torch-mlir's torch dialect (placeholder while
 * being written: every torch op is reported as unsupported). */
#include "mlir_int.h"

bool kf_torch_is_type(MlirType t) { (void)t; return false; }
kf_status kf_torch_type(mlir_conv *c, MlirType t, kf_type *out, const char *what) {
  (void)t; (void)out;
  kf_diag_error(c->diag, "%s: %s: torch dialect types are not supported yet", c->file, what);
  return KF_ERR_UNSUPPORTED;
}
kf_status kf_torch_convert_op(mlir_conv *c, MlirOperation op) {
  (void)op;
  kf_diag_error(c->diag, "%s: torch dialect ops are not supported yet", c->file);
  return KF_ERR_UNSUPPORTED;
}
void kf_torch_fini(mlir_conv *c) { (void)c; }
