/* pass/pipeline.c — the pass registry, every pipeline kfuse runs, and the
 * runner (include/kfuse/pass.h).
 *
 * The pipelines are the readable lists below (`pipelines`, and the layout
 * passes kf_pass_run_compile adds after them); `kfuse opt -p` takes any
 * comma-separated sequence of the registered names and pipeline names. */
#include <string.h>

#include "kfuse/pass.h"
#include "pass_int.h"

static const kf_pass_info passes[] = {
    {"dce", "remove ops whose results never reach an output", kf_pass_dce},
    {"simplify", "remove identity views, casts and copies", kf_pass_simplify},
    {"materialize-outputs", "give every graph output contiguous memory of its own (kf.copy)",
     kf_pass_materialize_outputs},
    {"fold-bn", "fold inference batch norm into the preceding conv, mm or addmm, else into "
                "a per-channel multiply-add", kf_pass_fold_bn},
    {"fold-scalars", "fold element-wise ops over fills and scalars; drop exact identities",
     kf_pass_fold_scalars},
    {"fold-reductions", "algebra on reductions: over size-1 dims, of reductions, of a matrix product's "
                        "columns (a matrix-vector product of the summed weights)",
     kf_pass_fold_reductions},
    {"scan-forms", "flip/scan/flip as one reverse scan; cat(identity, scan of all but the last) as one "
                   "exclusive scan", kf_pass_scan_forms},
    {"recurrences", "LSTM and GRU layers unrolled one cell per time step as one kf.rnn op (one launch a step)",
     kf_pass_recurrences},
    {"split-conv-bias", "a convolution's bias as an element-wise add where a reduction reads its result "
                        "(the reduction's prologue then takes the epilogue)", kf_pass_split_conv_bias},
    {"widen-f64", "every floating-point value in fp64, inputs and weights cast up once (the module check's "
                  "unrounded model; not in any pipeline)", kf_pass_widen_f64},
    {"dense-conv-inputs", "a convolution reads a strided view of its input (neither row-major nor "
                          "channels-last) through a row-major copy, which cuDNN takes",
     kf_pass_dense_conv_inputs},
    {"sink-reshapes", "move contiguous reshapes below element-wise ops (epilogues meet producers)",
     kf_pass_sink_reshapes},
    {"channels-last", "NHWC / NDHWC activations and dim-1-innermost weights for 2-d and 3-d "
                      "convolutions (cuDNN's fast kernels); row-major copies where other ops read them",
     kf_pass_channels_last},
    {"channels-last-all", "channels-last whatever the convolution's size (tests)", kf_pass_channels_last_all},
    {"channels-last-unchained", "channels-last also for convolutions chained to no other (--channels-last-all)",
     kf_pass_channels_last_unchained},
};

/* The named pipelines. compile: simplify first (it would remove the copies
 * materialize-outputs adds); fold-reductions after fold-bn (a folded shift
 * is a product's bias) and before fold-scalars (which folds the scalar
 * chains it leaves); scan-forms early, on the patterns as the frontends
 * lower them. reference: the model as exported, no algebraic rewrites or
 * scan idioms. */
static const struct {
  const char *name, *passes;
} pipelines[] = {
    {"default", "simplify,dce"},
    {"compile", "simplify,dce,scan-forms,recurrences,dce,fold-bn,fold-reductions,fold-scalars,sink-reshapes,"
                "split-conv-bias,dce,materialize-outputs"},
    {"reference", "simplify,dce,fold-bn,fold-scalars,sink-reshapes,dce,materialize-outputs"},
};

const char *kf_pass_pipeline(const char *name) {
  for (size_t i = 0; i < sizeof pipelines / sizeof pipelines[0]; i++)
    if (strcmp(pipelines[i].name, name) == 0) return pipelines[i].passes;
  return NULL;
}

kf_status kf_pass_run_compile(kf_graph *g, const kf_compile_passes_choice *c, kf_diag *diag) {
  kf_status st = kf_pass_run_pipeline(g, c->reference ? "reference" : "compile", true, diag);
  if (st != KF_OK || c->reference || !c->cudnn) return st;
  /* NHWC convolutions are a cuDNN choice: the other lowerings (and the
   * fp64 reference) read row-major tensors */
  if (c->channels_last)
    st = kf_pass_run_pipeline(g, c->channels_last_all ? "channels-last-unchained" : "channels-last", true, diag);
  /* what cuDNN cannot read as it is, after the layouts are chosen */
  if (st == KF_OK) st = kf_pass_run_pipeline(g, "dense-conv-inputs", true, diag);
  return st;
}

const kf_pass_info *kf_pass_list(int *n) {
  *n = (int)(sizeof passes / sizeof passes[0]);
  return passes;
}

const kf_pass_info *kf_pass_find(const char *name) {
  for (size_t i = 0; i < sizeof passes / sizeof passes[0]; i++)
    if (strcmp(passes[i].name, name) == 0) return &passes[i];
  return NULL;
}

const char *kf_pass_default_pipeline(void) { return kf_pass_pipeline("default"); }

static kf_status run_one(kf_graph *g, const char *name, size_t n,
                         bool verify_each, kf_diag *diag) {
  char buf[64];
  if (n == 0) return KF_OK;
  if (n >= sizeof buf) {
    kf_diag_error(diag, "unknown pass '%.*s'", (int)n, name);
    return KF_ERR_ARG;
  }
  memcpy(buf, name, n);
  buf[n] = 0;
  const char *named = kf_pass_pipeline(buf);
  if (named) return kf_pass_run_pipeline(g, named, verify_each, diag);
  const kf_pass_info *p = kf_pass_find(buf);
  if (!p) {
    kf_diag_error(diag, "unknown pass '%s' (kfuse opt --list-passes lists them)", buf);
    return KF_ERR_ARG;
  }
  kf_status st = p->run(g, diag);
  if (st != KF_OK) return st;
  if (verify_each && (st = kf_graph_verify(g, diag)) != KF_OK)
    kf_diag_error(diag, "the IR is invalid after pass '%s'", buf);
  return st;
}

kf_status kf_pass_run_pipeline(kf_graph *g, const char *pipeline,
                               bool verify_each, kf_diag *diag) {
  const char *p = pipeline;
  while (*p) {
    const char *e = strchr(p, ',');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    kf_status st = run_one(g, p, n, verify_each, diag);
    if (st != KF_OK) return st;
    p += n;
    if (*p == ',') p++;
  }
  return KF_OK;
}
