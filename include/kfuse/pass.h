/* kfuse/pass.h — the graph passes (pass/): the registry, the pipelines and
 * their runner. pass/pipeline.c holds every pipeline kfuse runs: "default"
 * (what `kfuse opt` and `kfuse info` run), "compile" (what kfuse compile
 * runs before partitioning), "reference" (the same for the per-op fp64
 * reference: the model as exported) and, after either, the layout passes
 * kfuse compile adds where cuDNN computes the convolutions
 * (kf_pass_run_compile). */
#ifndef KFUSE_PASS_H
#define KFUSE_PASS_H

#include <stdbool.h>

#include "kfuse/ir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef kf_status (*kf_pass_fn)(kf_graph *g, kf_diag *diag);

typedef struct kf_pass_info {
  const char *name;
  const char *summary;
  kf_pass_fn run;
} kf_pass_info;

/* All registered passes. */
KF_API const kf_pass_info *kf_pass_list(int *n);
KF_API const kf_pass_info *kf_pass_find(const char *name);
/* Run a comma-separated pipeline ("dce,simplify"); each name is a pass or a
 * named pipeline ("default", "compile", "reference"); the verifier runs
 * after each pass when verify_each is set. */
KF_API kf_status kf_pass_run_pipeline(kf_graph *g, const char *pipeline,
                                      bool verify_each, kf_diag *diag);
/* A named pipeline's passes, comma-separated, or NULL. */
KF_API const char *kf_pass_pipeline(const char *name);
/* The default pipeline: kf_pass_pipeline("default"). */
KF_API const char *kf_pass_default_pipeline(void);

/* What kfuse compile runs on a graph before partitioning: "reference" or
 * "compile", then, where cuDNN computes the convolutions (cudnn and not
 * reference), channels-last (every chain of convolutions, or with
 * channels_last_all every convolution; none without channels_last) and
 * dense-conv-inputs; the verifier after each pass. */
typedef struct kf_compile_passes_choice {
  bool reference;         /* the per-op fp64 reference's passes */
  bool cudnn;             /* convolutions on cuDNN (not --no-cudnn) */
  bool channels_last;     /* not --no-channels-last */
  bool channels_last_all; /* --channels-last-all */
} kf_compile_passes_choice;
KF_API kf_status kf_pass_run_compile(kf_graph *g, const kf_compile_passes_choice *c, kf_diag *diag);

#ifdef __cplusplus
}
#endif
#endif
