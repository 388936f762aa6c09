/* kfuse/frontend.h — reading models into the graph IR.
 *
 * Two input forms:
 *  - torch.export archives (.pt2, PyTorch 2.6-2.11 layouts, schema major 8):
 *    core ATen IR (after run_decompositions()) and the default export IR
 *    where the op is known. Weights are not copied: the graph's weight store
 *    reads them lazily or maps them in place.
 *  - MLIR text in generic form: kfuse's own textual IR ("kf.*" ops, what
 *    kf_graph_print writes) and torch-mlir's torch dialect ("torch.aten.*",
 *    !torch.vtensor types).
 * Every failure is reported through the diagnostic sink with the file, the
 * node or record and the field concerned; nothing aborts on bad input. */
#ifndef KFUSE_FRONTEND_H
#define KFUSE_FRONTEND_H

#include <stdbool.h>
#include <stddef.h>

#include "kfuse/ir.h"
#include "kfuse/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kf_load_options {
  bool map_weights; /* mmap stored weight records in place (else read on demand) */
} kf_load_options;

/* Defaults: map_weights = true. */
KF_API void kf_load_options_init(kf_load_options *o);

/* Load a .pt2 archive. On success *out owns the graph (kf_graph_destroy). */
KF_API kf_status kf_pt2_load(const char *path, const kf_load_options *opts,
                             kf_graph **out, kf_diag *diag);
/* Same, from memory (fuzzing, embedding). The buffer must outlive the
 * graph; display_name is used in messages. */
KF_API kf_status kf_pt2_load_buffer(const void *data, size_t n,
                                    const char *display_name, kf_graph **out,
                                    kf_diag *diag);

/* Parse MLIR generic-form text: kfuse IR or torch dialect. */
KF_API kf_status kf_mlir_parse(const char *text, size_t n,
                               const char *display_name, kf_graph **out,
                               kf_diag *diag);

/* Load by content: a zip archive is read as .pt2, anything else as MLIR
 * text. */
KF_API kf_status kf_model_load(const char *path, const kf_load_options *opts,
                               kf_graph **out, kf_diag *diag);

/* Visit every supported ATen overload: its schema (PyTorch's syntax) and
 * how kfuse lowers it (the kf ops, or a note). */
typedef void (*kf_aten_visit_fn)(void *user, const char *schema,
                                 const char *lowering);
KF_API void kf_aten_list(kf_aten_visit_fn fn, void *user);

#ifdef __cplusplus
}
#endif
#endif
