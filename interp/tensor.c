/* interp/tensor.c — placeholder; being written. */
#include "kfuse/interp.h"
void kf_tensor_fini(kf_tensor *t) { (void)t; }
kf_status kf_tensor_compare(const kf_tensor *got, const kf_tensor *want, double atol, double rtol, const char *what, kf_diag *diag) {
  (void)got; (void)want; (void)atol; (void)rtol; kf_diag_error(diag, "%s: comparison not implemented yet", what); return KF_ERR_UNSUPPORTED; }
