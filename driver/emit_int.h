/* driver/emit_int.h — private: object emission and linking (driver/emit.c),
 * used by the compile driver (driver/compile.c). */
#ifndef KFUSE_EMIT_INT_H
#define KFUSE_EMIT_INT_H

#include <stddef.h>

#include "kfuse/status.h"

/* Write an x86-64 ELF object holding blob and <prefix>_create to path
 * (named `shown` in messages: the caller writes under a temporary name). */
kf_status kf_emit_object(const void *blob, size_t blob_bytes, const char *prefix,
                         const char *path, const char *shown, kf_diag *diag);
/* Locate libkfuse_runtime.a (KFUSE_RUNTIME_LIB, else beside the kfuse
 * binary, lib/ or ../lib/). */
kf_status kf_find_runtime_lib(char *buf, size_t n, kf_diag *diag);
/* cc -shared object + the runtime -> out (KFUSE_CC overrides cc), linked
 * so that the module exports only the module API and binds its own
 * references to itself (-Bsymbolic, a version script written beside out);
 * out is named `shown` in messages. */
kf_status kf_link_shared(const char *object, const char *out, const char *shown, kf_diag *diag);

#endif
