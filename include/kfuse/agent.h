/* kfuse/agent.h — kernel units and the policies that produce them.
 *
 * A kernel unit is what any policy produces for one group and what the cache
 * stores: CUDA C++ device code (extern "C" __global__ kernels, compiled by
 * NVRTC) plus a declarative launch plan — launches with grid, block, dynamic
 * shared memory and arguments drawn from the group's inputs, outputs,
 * scratch buffers and immediates — and optional library steps (cuBLASLt
 * GEMM, cuDNN convolution). No policy ships host code: the runtime owns every host-side action.
 *
 * Pointers passed for a group input or output point at the value's first
 * element (its storage base plus its storage offset); the kernel knows the
 * value's shape and strides from the group, which are part of the group's
 * canonical form, so a unit is only reused for identical layouts. */
#ifndef KFUSE_AGENT_H
#define KFUSE_AGENT_H

#include <stdint.h>

#include "kfuse/ir.h"
#include "kfuse/partition.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kf_unit_arg_kind {
  KF_UARG_INPUT = 1,   /* index: group input; pointer to its first element */
  KF_UARG_OUTPUT = 2,  /* index: group output */
  KF_UARG_SCRATCH = 3, /* index: unit scratch buffer */
  KF_UARG_I64 = 4,
  KF_UARG_I32 = 5,
  KF_UARG_F32 = 6,
  KF_UARG_F64 = 7,
  KF_UARG_NONE = 8,    /* absent optional library operand */
} kf_unit_arg_kind;

/* Pointer kinds (INPUT, OUTPUT, SCRATCH) point i bytes past the start of
 * the value or buffer (a GEMM step over one chunk of a batch); I64/I32
 * carry their value in i, F32/F64 in f. */
typedef struct kf_unit_arg {
  kf_unit_arg_kind kind;
  int index;
  int64_t i;
  double f;
} kf_unit_arg;

typedef enum kf_unit_step_kind {
  KF_USTEP_LAUNCH = 1,
  KF_USTEP_GEMM = 2,
  KF_USTEP_MEMSET = 3, /* args: [0] buffer, [1] I64 byte count; zero fill */
  KF_USTEP_CONV = 4,
  KF_USTEP_COPY = 5, /* args: [0] destination, [1] source, [2] I64 byte count */
} kf_unit_step_kind;

/* Row-major batched GEMM as the runtime runs it (runtime/kfr_plan.h,
 * kfr_gemm); args: [0] A, [1] B, [2] C or NONE, [3] D, [4] bias or NONE,
 * [5] workspace (SCRATCH) or NONE. */
typedef struct kf_unit_gemm {
  int64_t m, n, k, batch;
  int64_t lda, ldb, ldc, ldd;
  int64_t stride_a, stride_b, stride_c, stride_d;
  bool trans_a, trans_b, has_c;
  kf_dtype dtype;
  int compute;  /* kfr_compute */
  int epilogue; /* kfr_epilogue */
  double alpha, beta;
  int64_t workspace_bytes;
} kf_unit_gemm;

/* Convolution as the runtime runs it on cuDNN (runtime/kfr_plan.h,
 * kfr_conv): y = act(alpha1 * conv(x, w) + alpha2 * z + bias), or with
 * transposed y = alpha1 * conv_transpose(x, w) (w [c, k/groups, filter],
 * no bias, z or activation), dense operands; spatial entries past nd are 1
 * (pad 0). args: [0] x, [1] w,
 * [2] y, [3] bias or NONE, [4] z or NONE, [5] workspace (SCRATCH) or NONE. */
typedef struct kf_unit_conv {
  int nd;
  int layout;     /* kfr_conv_layout */
  kf_dtype dtype;
  int compute;    /* kfr_compute */
  int activation; /* kfr_activation */
  bool has_bias, has_z;
  bool transposed;
  int64_t n, c, k, groups;
  int64_t in[3], filter[3], out[3];
  int64_t pad[3], stride[3], dilation[3];
  double alpha1, alpha2;
  int64_t workspace_bytes;
} kf_unit_conv;

typedef struct kf_unit_step {
  kf_unit_step_kind kind;
  char *kernel;          /* LAUNCH: entry name in the unit's source */
  uint32_t grid[3], block[3];
  uint32_t smem;
  int n_args;
  kf_unit_arg *args;
  kf_unit_gemm gemm;
  kf_unit_conv conv;
} kf_unit_step;

typedef struct kf_unit {
  char *name;            /* readable, e.g. "g12_elementwise" */
  char *policy;          /* who produced it: "builtin:elementwise/v4", "llm:<model>" */
  char *source;          /* CUDA C++ for NVRTC (NULL when only library steps) */
  int n_steps;
  kf_unit_step *steps;
  int n_scratch;
  int64_t *scratch_bytes;
  /* filled by kf_unit_compile */
  void *cubin;
  size_t cubin_bytes;
  char *compile_log;
} kf_unit;

/* Free everything the unit owns. Accepts NULL. */
KF_API void kf_unit_destroy(kf_unit *u);

typedef struct kf_target {
  int sm;               /* 90 */
  bool arch_specific;   /* sm_90a */
} kf_target;

/* Compile u->source with NVRTC for the target (-arch=sm_XX, -std=c++17,
 * include paths of the embedded template headers); stores the cubin and the
 * log. A compile error returns KF_ERR_INVALID with the log verbatim in the
 * diagnostic. Units without source succeed trivially. */
KF_API kf_status kf_unit_compile(kf_unit *u, const kf_target *t, kf_diag *diag);

/* Whether a unit's source includes only what a unit may (agent/unit_source.c,
 * docs/AGENT.md "What a unit may include"): kfuse's headers (kf_*.cuh) and
 * an allow-list of the CUDA toolkit's device headers, named literally. Also
 * refused: #include_next, #import, #embed, __has_include, raw string
 * literals, trigraphs and backslash-space line ends (constructs that could
 * hide a directive from this check). When not, appends one line per reason
 * (with the source line) to why and returns false. *needs_toolkit (may be
 * NULL) tells whether a toolkit header is included. kf_unit_compile refuses
 * such a source before NVRTC sees it. */
KF_API bool kf_unit_source_check(const char *source, bool *needs_toolkit, kf_strbuf *why);

/* A kernel's parameters as its cubin lists them (agent/cubin.c): the
 * count, with each one's size in bytes in sizes[0 .. count); -2 when the
 * cubin has no kernel of that name, -1 when its parameter table cannot be
 * read (why, wn: which). max bounds sizes. */
KF_API int kf_cubin_params(const void *cubin, size_t n, const char *kernel, int *sizes, int max, char *why,
                           size_t wn);

/* Write the embedded templates (agent/templates: the .cu/.cuh files and the
 * CPU emulation header kf_emu.h) into the existing directory dir, for a
 * host compiler (the module check's CPU emulation). */
KF_API kf_status kf_templates_write(const char *dir, kf_diag *diag);

/* Whether NVRTC can be loaded (dlopen); when not, why (into why[n]). */
KF_API bool kf_nvrtc_available(char *why, size_t n);
/* The toolkit units are compiled with, as the kernel cache keys it:
 * "nvrtc-MAJOR.MINOR" of the NVRTC that loads, else of the CUDA headers
 * kfuse was built with (a machine without NVRTC can still look units up). */
KF_API void kf_nvrtc_toolkit(char *out, size_t n);

/* A unit on disk (docs/FORMATS.md "Kernel unit on disk"): DIR/unit.json,
 * the launch plan, and DIR/unit.cu, the source (absent for units of
 * library steps only). What a policy writes and the judge reads; the
 * cubin is not part of it. Writing goes through temporary files renamed
 * into place; reading checks every field (an unknown or missing one, a
 * wrong type or range is an error naming the file and the field). */
KF_API kf_status kf_unit_write_dir(const kf_unit *u, const char *dir, kf_diag *diag);
KF_API kf_status kf_unit_read_dir(const char *dir, kf_unit **out, kf_diag *diag);
/* The JSON alone: source_file is the name written in "source" (when the
 * unit has a source); source is the text that "source" names, or NULL. */
KF_API kf_status kf_unit_to_json(const kf_unit *u, const char *source_file, kf_strbuf *out, kf_diag *diag);
KF_API kf_status kf_unit_from_json(const char *json, const char *file, const char *source, kf_unit **out,
                                   kf_diag *diag);

/* ---- the built-in policy -------------------------------------------------- */

typedef struct kf_builtin_options {
  kf_target target;
  kf_precision precision;
  /* template choices: 0 = pick by rule (no GPU to time candidates) */
  int block_size;
  int vector_width;
  /* rows of reductions and normalisations: threads per row (a power of two
   * up to 1024), and whether a row stays in registers between the two
   * phases of a normalisation (-1: never, > 0: up to that many values a
   * thread) */
  int row_threads;
  int row_cache;
  /* resident threads a SM asked of ptxas for row kernels (0: by rule) */
  int row_occupancy;
  /* reductions over an outer dim (the column layout: neighbouring rows are
   * neighbouring threads): threads splitting each row and threads a block
   * (0: by rule, 8 and 256); the reduced loop's unroll factor in row
   * kernels (0: by rule, 4) */
  int col_threads, col_block, row_unroll;
  /* tiled element-wise launches (agent/templates/ew_tiled.cu): the tile's
   * extent along the innermost loop dim and along the dim the tiled
   * accesses walk (0: by rule) */
  int tile_a, tile_t;
  /* rows of a row layout split over at least this many blocks each
   * (partial states, then a combine; normalisations rewrite their chunk in
   * a third launch); 0: by rule, split only when rows are too few */
  int row_split;
  /* compute in fp64 (inputs converted on load, outputs rounded to their
   * dtype on store): the per-op verification reference */
  bool fp64;
  /* with fp64: fp32 convolutions' operands rounded to TF32 before the
   * product, as a module whose convolutions may use TF32 rounds them (the
   * module check's reference for such a module) */
  bool tf32_conv_operands;
  /* convolutions without cuDNN: im2col + cuBLASLt GEMM or the direct
   * template (kfuse compile --no-cudnn) */
  bool no_cudnn;
  /* cuDNN convolution steps write the bare convolution, the bias and
   * epilogue following as one element-wise launch, even where cuDNN's
   * fused conv + bias (+ residual) (+ relu) call could take them: its
   * fused engines are not its fastest convolutions everywhere (depthwise
   * 3x3 NHWC: 20-26 us fused against PyTorch's 6 us bare convolution and
   * a 3 us epilogue, KernelBench L3 19, H200, 2026-11-27) */
  bool conv_unfused;
  /* attention as GEMM-softmax-GEMM: the most bytes of scores held at once
   * (the batch is chunked to fit; 0: 256 MiB) */
  int64_t attn_scratch_bytes;
  /* samples of the batch a cuDNN convolution step takes at most (0: as
   * many as keep its tensors under 2^31 elements; the emulator's tests set
   * it to run the chunked path on small tensors) */
  int64_t conv_batch;
} kf_builtin_options;

KF_API void kf_builtin_options_init(kf_builtin_options *o);

/* The built-in template policy: a kernel unit for group g of p. Fails with
 * KF_ERR_UNSUPPORTED naming the op when no template covers it. */
KF_API kf_status kf_builtin_unit(const kf_partition *p, const kf_group *g,
                                 const kf_builtin_options *o, kf_unit **out,
                                 kf_diag *diag);

/* ---- choices worth timing ---------------------------------------------- */

#define KF_BUILTIN_MAX_VARIANTS 7

typedef struct kf_builtin_variant {
  char label[32];          /* "occ=1024", "no-cudnn" */
  kf_builtin_options opt;  /* base with the choice made */
} kf_builtin_variant;

/* The built-in policy's choices for group g beside the rule's unit, to be
 * judged on a GPU (kfuse compile: the fastest verified is kept): other
 * template shapes of row reductions and scans, a convolution without
 * cuDNN. Returns how many (at most KF_BUILTIN_MAX_VARIANTS); 0 when only
 * the rule is worth building. A variant may still fail to build, or build
 * the rule's unit again: the caller drops those. */
KF_API int kf_builtin_variants(const kf_group *g, const kf_builtin_options *base, kf_builtin_variant *out);

/* Whether two units are the same (launch plan and source) */
KF_API bool kf_unit_same(const kf_unit *a, const kf_unit *b);
/* A deep copy of u, cubin included */
KF_API kf_status kf_unit_clone(const kf_unit *u, kf_unit **out);

#ifdef __cplusplus
}
#endif
#endif
