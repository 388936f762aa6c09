/* pass/pass_int.h — private declarations shared by the passes. */
#ifndef KFUSE_PASS_INT_H
#define KFUSE_PASS_INT_H

#include "kfuse/ir.h"

kf_status kf_pass_dce(kf_graph *g, kf_diag *diag);
kf_status kf_pass_simplify(kf_graph *g, kf_diag *diag);

#endif
