/* interp/interp.c — placeholder; being written. */
#include "kfuse/interp.h"
kf_status kf_interp_run(const kf_graph *g, const kf_tensor *inputs, int n_inputs, kf_tensor *outputs, const kf_interp_options *opts, kf_diag *diag) {
  (void)g; (void)inputs; (void)n_inputs; (void)outputs; (void)opts; kf_diag_error(diag, "the interpreter is not implemented yet"); return KF_ERR_UNSUPPORTED; }
