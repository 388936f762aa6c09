/* driver/emit_int.h — private: object emission, linking and the header of
 * an object module (driver/emit.c), used by the compile driver
 * (driver/compile.c). */
#ifndef KFUSE_EMIT_INT_H
#define KFUSE_EMIT_INT_H

#include <stddef.h>

#include "kfuse/ir.h"
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

/* The header's path for an object module's path: ".o" becomes ".h"
 * (else ".h" is appended); malloc'd, NULL when out of memory. */
char *kf_header_path(const char *obj_path);

/* Write the C header for an object module obj_path (named in its text):
 * the runtime API plus <prefix>_create, to path (named `shown` in
 * messages). */
kf_status kf_write_header(const char *path, const char *shown, const char *obj_path,
                          const char *prefix, const kf_graph *g, kf_diag *diag);

#endif
