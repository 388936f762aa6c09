/* kfr_plan.h — the binary plan a kfuse module carries, shared by the
 * compiler (which writes it) and the runtime (which validates and runs it).
 *
 * One contiguous little-endian blob, 8-byte aligned:
 *
 *   kfr_header
 *   kfr_buffer[n_buffers]   device regions steps refer to
 *   kfr_module[n_modules]   cubins (bytes in the blob section)
 *   kfr_kernel[n_kernels]   (module, entry name)
 *   kfr_step[n_steps]       what runs, in order
 *   kfr_arg[n_args]         kernel arguments and library operands
 *   strings                 NUL-terminated, referenced by offset
 *   blobs                   cubins and embedded constants, 256-aligned
 *
 * Every offset is from the start of the blob and is range-checked by the
 * runtime before use; every index is checked against its table. Version
 * changes whenever any record changes. docs/FORMATS.md describes it.
 *
 * Details the runtime relies on (runtime/kfr_validate.c checks them all):
 * - String references (uint32 "string offset" fields) count from the start
 *   of the string section; the section ends in a NUL, and offset 0 is ""
 *   in plans written by runtime/kfr_plan_writer.c.
 * - Each model input and output number has exactly one INPUT/OUTPUT
 *   buffer, whose nbytes is its desc's element count times the element
 *   size (the caller passes contiguous tensors).
 * - A PTR arg's offset lies within its buffer (0 <= offset <= nbytes); GEMM
 *   and CONV operands, MEMSET and COPY ranges lie wholly inside their
 *   buffers.
 * - WEIGHT buffers: offsets in the weights file's data (which follows its
 *   KFR_WEIGHTS_HEADER_BYTES-byte header), or, with
 *   KFR_FLAG_WEIGHTS_EMBEDDED, plan offsets inside the blob section. The
 *   runtime uploads the span the WEIGHT buffers cover, starting at a
 *   multiple of 256, so a weight's device address is congruent to its
 *   offset modulo 256. CONST buffers likewise, from the blob section.
 * - A weights file (kfr_weights_header, then exactly weights_bytes bytes of
 *   data) belongs to one plan: its header repeats the plan's model_id,
 *   weights_bytes and weights_hash (XXH64 of the data, runtime/kfr_hash.h),
 *   and create checks all of them (runtime/kfr_weights.c). model_id is the
 *   XXH64 of the whole plan with the model_id field zero, so any change to
 *   the plan (kernels, steps, weights, their hash) changes it. */
#ifndef KFR_PLAN_H
#define KFR_PLAN_H

#include <stddef.h>
#include <stdint.h>

#define KFR_PLAN_MAGIC "KFPLAN\r\n"
#define KFR_PLAN_VERSION 6u
#define KFR_MAX_RANK 8

enum kfr_buffer_kind {
  KFR_BUF_INPUT = 1,    /* index: model input number (pointer from the caller) */
  KFR_BUF_OUTPUT = 2,   /* index: model output number (pointer from the caller) */
  KFR_BUF_WEIGHT = 3,   /* offset/nbytes: bytes in the weights file (or in
                           the blob section when the plan embeds weights) */
  KFR_BUF_ARENA = 4,    /* offset: byte offset in the arena */
  KFR_BUF_CONST = 5,    /* offset/nbytes: bytes in the blob section,
                           uploaded once at create */
};

/* A tensor's layout, in elements; dtype numbered as KFUSE_DTYPE_*. */
typedef struct kfr_tensor_desc {
  uint32_t dtype;
  uint32_t rank;
  int64_t shape[KFR_MAX_RANK];
  int64_t strides[KFR_MAX_RANK];
} kfr_tensor_desc;

typedef struct kfr_buffer {
  uint32_t kind;
  uint32_t index;
  uint64_t offset;
  uint64_t nbytes;
  uint32_t name; /* string offset (value or weight name) */
  uint32_t pad;
  kfr_tensor_desc desc; /* inputs/outputs: checked and reported by the API */
} kfr_buffer;

typedef struct kfr_module {
  uint64_t offset; /* cubin bytes */
  uint64_t nbytes;
} kfr_module;

typedef struct kfr_kernel {
  uint32_t module;
  uint32_t name;        /* string offset: the extern "C" entry */
  uint32_t max_dynamic_smem; /* raise the function's limit to this when > 48 KiB */
  uint32_t pad;
} kfr_kernel;

enum kfr_step_kind {
  KFR_STEP_LAUNCH = 1, /* cuLaunchKernel(kernel, grid, block, smem, args) */
  KFR_STEP_GEMM = 2,   /* cuBLASLt matmul, parameters in gemm */
  KFR_STEP_MEMSET = 3, /* args[0] = PTR, args[1] = I64 byte count, byte 0 */
  KFR_STEP_COPY = 4,   /* args[0] = dst PTR, args[1] = src PTR, args[2] = I64 bytes */
  KFR_STEP_CONV = 5,   /* cuDNN convolution, parameters in conv */
};

enum kfr_epilogue {
  KFR_EPI_NONE = 0,
  KFR_EPI_BIAS = 1,      /* D = alpha*A@B + bias (bias per column of row-major D) */
  KFR_EPI_RELU_BIAS = 2,
  KFR_EPI_GELU_BIAS = 3, /* tanh approximation, as cuBLASLt computes it */
  KFR_EPI_RELU = 4,
  KFR_EPI_GELU = 5,
};

enum kfr_compute {
  KFR_COMPUTE_32F = 1,      /* full fp32 (PyTorch's default for matmul) */
  KFR_COMPUTE_32F_TF32 = 2, /* TF32 tensor cores */
  KFR_COMPUTE_32F_BF16 = 3,
  KFR_COMPUTE_32F_F16 = 4,
};

/* Row-major batched GEMM: D[b] = alpha * op(A[b]) @ op(B[b]) + beta * C[b]
 * (+ epilogue). Operands are args (PTR kind) at first_arg + {0: A, 1: B,
 * 2: C or unused, 3: D, 4: bias or unused}. Leading dimensions and batch
 * strides in elements; a batch stride of 0 broadcasts. The runtime maps it
 * onto cuBLASLt's column-major convention. */
/* GEMM details: has_c = 0 requires beta = 0 (C is then D's layout and is
 * not read); a bias has n elements of the operand dtype, shared by every
 * batch; F64 operands always compute in fp64 (compute is ignored for them);
 * the step has exactly 6 args: A, B, C|NONE, D, bias|NONE (bias iff the
 * epilogue has one), workspace|NONE (PTR iff workspace_bytes > 0). */
typedef struct kfr_gemm {
  int64_t m, n, k, batch;
  int64_t lda, ldb, ldc, ldd;
  int64_t stride_a, stride_b, stride_c, stride_d;
  uint32_t trans_a, trans_b; /* 1: the operand is stored transposed */
  uint32_t dtype;            /* KFUSE_DTYPE_* of A, B, C, D */
  uint32_t compute;          /* kfr_compute */
  uint32_t epilogue;         /* kfr_epilogue */
  uint32_t has_c;
  double alpha, beta;
  uint64_t workspace_bytes;  /* from the arena: args[first_arg + 5] */
} kfr_gemm;

enum kfr_activation {
  KFR_ACT_NONE = 0,
  KFR_ACT_RELU = 1, /* NaN propagates, as torch.relu */
};

/* Convolution (cross-correlation, as PyTorch's conv) over nd = 1, 2 or 3
 * spatial dims, on cuDNN:
 *
 *   y = act(alpha1 * conv(x, w) + alpha2 * z + bias)
 *
 * or, with transposed = 1 (since version 5), PyTorch's transposed
 * convolution y = alpha1 * conv_transpose(x, w), which is cuDNN's
 * backward-data convolution with x as dy and y as dx: x [n, c, in...],
 * w [c, k/groups, filter...], y [n, k, out...], where the forward relation
 * holds with in and out swapped (in = (out + 2 pad - dilation (filter - 1)
 * - 1) / stride + 1, so PyTorch's output_padding is whatever makes out
 * larger than (in - 1) stride - 2 pad + dilation (filter - 1) + 1 and
 * below the next stride); no bias, z or activation (the unit adds them in
 * a launch after).
 *
 * x [n, c, in...], w [k, c/groups, filter...], y and z [n, k, out...],
 * bias [k]; every operand dense in the step's layout (row-major NC +
 * spatial, or for nd 2 NHWC with KRSC weights) in dtype (f32, f16 or bf16). Spatial entries past nd are 1 (pad 0). The step has exactly
 * 6 args: x, w, y, bias|NONE, z|NONE, NONE (the workspace is the
 * runtime's own, since version 4). Without z, alpha2 is 0 and z is not read; an
 * activation or a z needs a bias (cuDNN's fused call takes one). compute:
 * KFR_COMPUTE_32F for f32 forbids TF32 (cuDNN FMA math); any other value
 * lets cuDNN use tensor cores (TF32 for f32), accumulating in fp32.
 * workspace_bytes is the most the algorithm may use: the runtime picks the
 * fastest algorithm that fits, then allocates the workspace the chosen
 * algorithms need (runtime/kfr_cudnn.c). Element counts and
 * sizes must fit in 31 bits (cuDNN's legacy API takes int). */
enum kfr_conv_layout {
  KFR_CONV_NCHW = 0, /* x, y, z [n, c, spatial...] row-major; w [k, c/g, filter...] */
  KFR_CONV_NHWC = 1, /* nd 2 or 3: x, y, z channels-last (NHWC / NDHWC
                        memory order of the same logical dims), w with dim
                        1 innermost (KRSC, KTRSC; transposed: C R S K/g) */
};

typedef struct kfr_conv {
  uint32_t nd;
  uint32_t dtype;       /* KFUSE_DTYPE_* of x, w, y, z, bias */
  uint32_t compute;     /* kfr_compute */
  uint32_t activation;  /* kfr_activation */
  uint32_t has_bias, has_z;
  uint32_t layout;      /* kfr_conv_layout */
  uint32_t transposed;  /* 0: forward; 1: transposed (backward data) */
  int64_t n, c, k, groups;
  int64_t in[3], filter[3], out[3];
  int64_t pad[3], stride[3], dilation[3];
  double alpha1, alpha2;
  uint64_t workspace_bytes; /* the algorithm search's budget */
} kfr_conv;

typedef struct kfr_step {
  uint32_t kind;
  uint32_t kernel;
  uint32_t grid[3];
  uint32_t block[3];
  uint32_t smem;
  uint32_t first_arg;
  uint32_t n_args;
  uint32_t name; /* string offset: the group or op this step comes from */
  union {
    kfr_gemm gemm; /* KFR_STEP_GEMM only */
    kfr_conv conv; /* KFR_STEP_CONV only */
  };
} kfr_step;

enum kfr_arg_kind {
  KFR_ARG_PTR = 1, /* device pointer: buffer base + offset bytes */
  KFR_ARG_I64 = 2,
  KFR_ARG_I32 = 3,
  KFR_ARG_F32 = 4,
  KFR_ARG_F64 = 5,
  KFR_ARG_NONE = 6, /* an absent optional operand (library steps) */
};

typedef struct kfr_arg {
  uint32_t kind;
  uint32_t buffer; /* PTR */
  int64_t offset;  /* PTR: bytes; I64/I32: the value */
  double f;        /* F32/F64 */
} kfr_arg;

typedef struct kfr_header {
  char magic[8];
  uint32_t version;
  uint32_t header_bytes; /* sizeof(kfr_header) */
  uint64_t total_bytes;
  uint32_t sm_arch;      /* e.g. 90: the cubins' target */
  uint32_t flags;        /* KFR_FLAG_* */
  uint64_t arena_bytes;
  uint64_t weights_bytes; /* bytes of weights data (in the file after its
                             header, or embedded) */
  uint32_t n_inputs, n_outputs;
  uint32_t n_buffers, n_modules, n_kernels, n_steps, n_args;
  uint32_t model_name;    /* string offset */
  uint32_t weights_path;  /* string offset: the weights file's name at
                             compile time, relative to the module's
                             directory unless absolute */
  uint32_t pad;
  uint64_t off_buffers, off_modules, off_kernels, off_steps, off_args;
  uint64_t off_strings, strings_bytes;
  uint64_t off_blobs, blobs_bytes;
  uint64_t weights_hash;  /* XXH64 (seed 0) of the weights data (version 6) */
  uint64_t model_id;      /* XXH64 (seed 0) of the plan with this field 0 */
} kfr_header;

enum {
  KFR_FLAG_WEIGHTS_EMBEDDED = 1, /* WEIGHT offsets are in the blob section */
  /* the weights file is the shared module's own path + ".weights" (not the
   * recorded name, which only names it in messages): renaming a module and
   * its weights file together keeps them paired (version 6) */
  KFR_FLAG_WEIGHTS_BESIDE_MODULE = 2,
};

/* The first KFR_WEIGHTS_HEADER_BYTES of a weights file; the data follows.
 * Written by kfr_weights_header_fill (runtime/kfr_plan_writer.h). */
#define KFR_WEIGHTS_MAGIC "KFWGHT\r\n"
#define KFR_WEIGHTS_VERSION 1u
#define KFR_WEIGHTS_HEADER_BYTES 256u

typedef struct kfr_weights_header {
  char magic[8];         /* KFR_WEIGHTS_MAGIC */
  uint32_t version;      /* KFR_WEIGHTS_VERSION */
  uint32_t header_bytes; /* KFR_WEIGHTS_HEADER_BYTES: where the data starts */
  uint64_t model_id;     /* the plan's model_id */
  uint64_t data_bytes;   /* the plan's weights_bytes */
  uint64_t data_hash;    /* the plan's weights_hash */
  uint8_t zero[216];     /* zero */
} kfr_weights_header;

/* Check a whole plan: KFUSE_OK, or KFUSE_EPLAN with a one-line message
 * naming the record and field (KFUSE_ENOMEM if checking could not
 * allocate). Implemented in the runtime (runtime/kfr_validate.c, no CUDA);
 * the plan writer runs it on every plan it finishes. */
#ifdef __cplusplus
extern "C"
#endif
int kfr_plan_check(const void *plan, size_t bytes, char *msg, size_t n);

#endif
