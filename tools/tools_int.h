/* tools/tools_int.h — private: the kfuse commands that live in their own
 * files (tools/cmd_*.c). Each returns the process exit status. */
#ifndef KFUSE_TOOLS_INT_H
#define KFUSE_TOOLS_INT_H

#include <stdbool.h>

#include "kfuse/status.h"

int kf_cmd_compile(int argc, char **argv, kf_diag *diag);
int kf_cmd_run_module(const char *path, const char *io, double atol, double rtol, bool graph,
                      kf_diag *diag);
int kf_cmd_bench(int argc, char **argv, kf_diag *diag);

#endif
