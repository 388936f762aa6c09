/* kfr_int.h — internals of the kfuse runtime (runtime/), shared by its
 * source files and by the runtime's own tests; nothing else includes it
 * (the driver's loader, which the judge's workers use too, is in
 * kfr_driver.h, included here).
 *
 * The runtime never links the CUDA driver or cuBLASLt: both are loaded with
 * dlopen and their entry points kept in tables (the driver's in
 * kfr_driver.h says how they are typed). cuBLASLt's C API is unversioned:
 * its pointers take the header's types. */
#ifndef KFR_INT_H
#define KFR_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cublasLt.h>

#include "kfr_plan.h"
#include "kfuse_runtime.h"

#define KFR_HIDDEN __attribute__((visibility("hidden")))
#include "kfr_driver.h"

/* Times call(ctx) for the algorithm searches (cuBLASLt in kfr_run.c, the
 * cuDNN fused call and graph plans): one warm-up call, then three calls
 * each between ev[0] and ev[1] recorded on stream (the call must run
 * there: the instance's own stream, never the legacy one), the median in
 * *ms. Returns 0; 1 when call returned non-zero (nothing timed; the caller
 * skips that candidate); -1 when an event call failed. */
typedef int (*kfr_timed_call)(void *ctx);
KFR_HIDDEN int kfr_time3(const kfr_driver *cu, CUstream stream, CUevent ev[2], kfr_timed_call call, void *ctx,
                         float *ms);

/* ---- finding a CUDA library --------------------------------------------- */

/* Loads and resolves the library at path: 1 on success; on failure 0, with
 * "path (why)" appended to tried through kfr_lib_tried. */
typedef int (*kfr_lib_try)(const char *path, char *tried, size_t tn);

/* Where cuBLASLt and cuDNN are looked for when no variable names them, in
 * order: soname (the loader's search path, which also finds a copy PyTorch
 * already loaded), $CUDA_HOME/lib64, $CUDA_PATH/lib64, /usr/local/cuda/lib64,
 * then the nvidia/<pip_dirs>/lib directories of Python installations
 * ($VIRTUAL_ENV, $CONDA_PREFIX, ~/.local, /usr/local, /usr, /opt/<env>);
 * pip_dirs is a glob brace or a name ("{cu13,cublas}", "cudnn"). Within one
 * place the matches are tried newest first (descending strverscmp order:
 * python3.12 before python3.9; site- before dist-packages; /opt/<env> in
 * descending name order), never in directory order. Variables are read
 * with secure_getenv. Calls try on the soname and on every existing match
 * until one succeeds: 1 then, else 0 with what was tried in tried. */
KFR_HIDDEN int kfr_lib_search(const char *soname, const char *pip_dirs,
                              kfr_lib_try try_path, char *tried, size_t tn);

/* Appends "path (why)" to tried, "; "-separated, truncating safely. */
KFR_HIDDEN void kfr_lib_tried(char *tried, size_t tn, const char *path,
                              const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- cuBLASLt ----------------------------------------------------------- */

#define KFR_LT_FUNCS(X)                                                      \
  X(cublasLtCreate) X(cublasLtDestroy) X(cublasLtGetVersion)                 \
  X(cublasLtGetStatusName) X(cublasLtMatmulDescCreate)                       \
  X(cublasLtMatmulDescDestroy) X(cublasLtMatmulDescSetAttribute)             \
  X(cublasLtMatrixLayoutCreate) X(cublasLtMatrixLayoutDestroy)               \
  X(cublasLtMatrixLayoutSetAttribute) X(cublasLtMatmulPreferenceCreate)      \
  X(cublasLtMatmulPreferenceDestroy) X(cublasLtMatmulPreferenceSetAttribute) \
  X(cublasLtMatmulAlgoGetHeuristic) X(cublasLtMatmul)

typedef struct kfr_cublaslt {
#define KFR_LT_FIELD(name) __typeof__(name) *name;
  KFR_LT_FUNCS(KFR_LT_FIELD)
#undef KFR_LT_FIELD
  char path[512]; /* where it was found, for messages */
} kfr_cublaslt;

/* Load libcublasLt.so.13 once per process: $KFUSE_CUBLASLT if set, else
 * kfr_lib_search's places with the nvidia/{cu13,cublas}/lib directories.
 * KFUSE_ELIBRARY with the places tried on failure. */
KFR_HIDDEN int kfr_cublaslt_load(const kfr_cublaslt **out, char *msg,
                                 size_t n);

/* ---- cuDNN -------------------------------------------------------------- */

/* The few cuDNN 9 declarations the runtime uses, from its legacy (v7-style)
 * API, so that building needs no cudnn.h; values as in cudnn_graph.h,
 * cudnn_ops.h and cudnn_cnn.h of cuDNN 9. */
typedef int kfr_dnn_status;  /* cudnnStatus_t; 0 is CUDNN_STATUS_SUCCESS */
typedef struct cudnnContext *kfr_dnn_handle;
typedef struct cudnnTensorStruct *kfr_dnn_tensor;
typedef struct cudnnFilterStruct *kfr_dnn_filter;
typedef struct cudnnConvolutionStruct *kfr_dnn_conv;
typedef struct cudnnActivationStruct *kfr_dnn_act;
enum {
  KFR_DNN_DATA_FLOAT = 0, KFR_DNN_DATA_HALF = 2, KFR_DNN_DATA_BFLOAT16 = 9,
  KFR_DNN_TENSOR_NCHW = 0,
  KFR_DNN_TENSOR_NHWC = 1,
  KFR_DNN_CROSS_CORRELATION = 1,
  KFR_DNN_DEFAULT_MATH = 0, KFR_DNN_TENSOR_OP_MATH = 1, KFR_DNN_FMA_MATH = 3,
  KFR_DNN_PROPAGATE_NAN = 1,
  KFR_DNN_ACTIVATION_RELU = 1, KFR_DNN_ACTIVATION_IDENTITY = 5,
  KFR_DNN_FWD_ALGO_IMPLICIT_PRECOMP_GEMM = 1, KFR_DNN_FWD_ALGO_COUNT = 8,
  KFR_DNN_BWD_DATA_ALGO_COUNT = 6,
};
/* cudnnConvolutionFwdAlgoPerf_t, and cudnnConvolutionBwdDataAlgoPerf_t,
 * which has the same fields */
typedef struct kfr_dnn_perf {
  int algo;
  kfr_dnn_status status;
  float time;
  size_t memory;
  int determinism;
  int math_type;
  int reserved[3];
} kfr_dnn_perf;

#define KFR_DNN_FUNCS(X)                                                     \
  X(size_t, cudnnGetVersion, (void))                                         \
  X(const char *, cudnnGetErrorString, (kfr_dnn_status))                     \
  X(kfr_dnn_status, cudnnCreate, (kfr_dnn_handle *))                         \
  X(kfr_dnn_status, cudnnDestroy, (kfr_dnn_handle))                          \
  X(kfr_dnn_status, cudnnSetStream, (kfr_dnn_handle, CUstream))              \
  X(kfr_dnn_status, cudnnCreateTensorDescriptor, (kfr_dnn_tensor *))         \
  X(kfr_dnn_status, cudnnSetTensorNdDescriptor,                              \
    (kfr_dnn_tensor, int, int, const int *, const int *))                    \
  X(kfr_dnn_status, cudnnDestroyTensorDescriptor, (kfr_dnn_tensor))          \
  X(kfr_dnn_status, cudnnCreateFilterDescriptor, (kfr_dnn_filter *))         \
  X(kfr_dnn_status, cudnnSetFilterNdDescriptor,                              \
    (kfr_dnn_filter, int, int, int, const int *))                            \
  X(kfr_dnn_status, cudnnDestroyFilterDescriptor, (kfr_dnn_filter))          \
  X(kfr_dnn_status, cudnnCreateConvolutionDescriptor, (kfr_dnn_conv *))      \
  X(kfr_dnn_status, cudnnSetConvolutionNdDescriptor,                         \
    (kfr_dnn_conv, int, const int *, const int *, const int *, int, int))    \
  X(kfr_dnn_status, cudnnSetConvolutionMathType, (kfr_dnn_conv, int))        \
  X(kfr_dnn_status, cudnnSetConvolutionGroupCount, (kfr_dnn_conv, int))      \
  X(kfr_dnn_status, cudnnDestroyConvolutionDescriptor, (kfr_dnn_conv))       \
  X(kfr_dnn_status, cudnnGetConvolutionNdForwardOutputDim,                   \
    (kfr_dnn_conv, kfr_dnn_tensor, kfr_dnn_filter, int, int *))              \
  X(kfr_dnn_status, cudnnCreateActivationDescriptor, (kfr_dnn_act *))        \
  X(kfr_dnn_status, cudnnSetActivationDescriptor,                            \
    (kfr_dnn_act, int, int, double))                                         \
  X(kfr_dnn_status, cudnnDestroyActivationDescriptor, (kfr_dnn_act))         \
  X(kfr_dnn_status, cudnnGetConvolutionForwardAlgorithm_v7,                  \
    (kfr_dnn_handle, kfr_dnn_tensor, kfr_dnn_filter, kfr_dnn_conv,           \
     kfr_dnn_tensor, int, int *, kfr_dnn_perf *))                            \
  X(kfr_dnn_status, cudnnFindConvolutionForwardAlgorithmEx,                  \
    (kfr_dnn_handle, kfr_dnn_tensor, const void *, kfr_dnn_filter,           \
     const void *, kfr_dnn_conv, kfr_dnn_tensor, void *, int, int *,         \
     kfr_dnn_perf *, void *, size_t))                                        \
  X(kfr_dnn_status, cudnnGetConvolutionForwardWorkspaceSize,                 \
    (kfr_dnn_handle, kfr_dnn_tensor, kfr_dnn_filter, kfr_dnn_conv,           \
     kfr_dnn_tensor, int, size_t *))                                         \
  X(kfr_dnn_status, cudnnConvolutionForward,                                 \
    (kfr_dnn_handle, const void *, kfr_dnn_tensor, const void *,             \
     kfr_dnn_filter, const void *, kfr_dnn_conv, int, void *, size_t,        \
     const void *, kfr_dnn_tensor, void *))                                  \
  X(kfr_dnn_status, cudnnConvolutionBiasActivationForward,                   \
    (kfr_dnn_handle, const void *, kfr_dnn_tensor, const void *,             \
     kfr_dnn_filter, const void *, kfr_dnn_conv, int, void *, size_t,        \
     const void *, kfr_dnn_tensor, const void *, kfr_dnn_tensor,             \
     const void *, kfr_dnn_act, kfr_dnn_tensor, void *))                     \
  /* transposed steps: backward data, w and dy (the step's x) to dx (y) */  \
  X(kfr_dnn_status, cudnnGetConvolutionBackwardDataAlgorithm_v7,             \
    (kfr_dnn_handle, kfr_dnn_filter, kfr_dnn_tensor, kfr_dnn_conv,           \
     kfr_dnn_tensor, int, int *, kfr_dnn_perf *))                            \
  X(kfr_dnn_status, cudnnFindConvolutionBackwardDataAlgorithmEx,             \
    (kfr_dnn_handle, kfr_dnn_filter, const void *, kfr_dnn_tensor,           \
     const void *, kfr_dnn_conv, kfr_dnn_tensor, void *, int, int *,         \
     kfr_dnn_perf *, void *, size_t))                                        \
  X(kfr_dnn_status, cudnnConvolutionBackwardData,                            \
    (kfr_dnn_handle, const void *, kfr_dnn_filter, const void *,             \
     kfr_dnn_tensor, const void *, kfr_dnn_conv, int, void *, size_t,        \
     const void *, kfr_dnn_tensor, void *))

/* The graph (backend) API, resolved when present (kfr_cudnn_graph.c);
 * descriptor types, attribute names and attribute types are ints. */
#define KFR_DNN_GRAPH_FUNCS(X)                                               \
  X(kfr_dnn_status, cudnnBackendCreateDescriptor, (int, void **))            \
  X(kfr_dnn_status, cudnnBackendDestroyDescriptor, (void *))                 \
  X(kfr_dnn_status, cudnnBackendFinalize, (void *))                          \
  X(kfr_dnn_status, cudnnBackendSetAttribute,                                \
    (void *, int, int, int64_t, const void *))                               \
  X(kfr_dnn_status, cudnnBackendGetAttribute,                                \
    (void *, int, int, int64_t, int64_t *, void *))                          \
  X(kfr_dnn_status, cudnnBackendExecute, (kfr_dnn_handle, void *, void *))

typedef struct kfr_cudnn {
#define KFR_DNN_FIELD(ret, name, params) ret(*name) params;
  KFR_DNN_FUNCS(KFR_DNN_FIELD)
  KFR_DNN_GRAPH_FUNCS(KFR_DNN_FIELD) /* NULL when absent */
#undef KFR_DNN_FIELD
  size_t version; /* cudnnGetVersion(), e.g. 91000 */
  char path[512]; /* where it was found, for messages */
} kfr_cudnn;

/* Load cuDNN 9 (libcudnn.so.9) once per process: $KFUSE_CUDNN_LIBRARY if
 * set, else kfr_lib_search's places with the nvidia/cudnn/lib directories.
 * KFUSE_ELIBRARY naming the library, the places tried and the variable on
 * failure. */
KFR_HIDDEN int kfr_cudnn_load(const kfr_cudnn **out, char *msg, size_t n);

/* ---- the plan ----------------------------------------------------------- */

/* Bytes per element of a KFUSE_DTYPE_*, 0 if unknown. */
KFR_HIDDEN uint32_t kfr_dtype_size(uint32_t dtype);

/* The string at offset off of the plan's string section (validated plan). */
static inline const char *kfr_str(const kfr_header *h, const void *plan,
                                  uint32_t off) {
  return (const char *)plan + h->off_strings + off;
}

/* ---- a model instance --------------------------------------------------- */

/* One kernel argument's value, as cuLaunchKernel reads it: the parameter
 * pointer is the union's address, which is every member's address. */
typedef union kfr_value {
  CUdeviceptr ptr;
  int64_t i64;
  int32_t i32;
  float f32;
  double f64;
} kfr_value;

/* A GEMM step in cuBLASLt's column-major terms (see kfr_run.c). Two
 * algorithms: the one chosen (timed) at create for the planned operand
 * alignments, and a fallback for runs whose pointers are less aligned,
 * chosen at the first such run; each run takes the one its pointers allow
 * (kfr_gemm_pick). */
typedef struct kfr_gemm_rt {
  cublasLtMatmulDesc_t op;
  cublasLtMatrixLayout_t la, lb, lc, ld; /* cuBLASLt's A, B, C, D */
  cublasLtMatmulAlgo_t algo;
  int have_algo;
  uint32_t align[4]; /* A, B, C, D alignment the algorithm was chosen for */
  cublasLtMatmulAlgo_t algo_low; /* the fallback, when have_low */
  int have_low;
  uint32_t align_low[4];
  union {
    float f;
    double d;
  } alpha, beta;
} kfr_gemm_rt;

/* A CONV step's cuDNN state (see kfr_cudnn.c). */
typedef struct kfr_conv_rt {
  kfr_dnn_tensor xd, yd, bd; /* z shares y's descriptor */
  kfr_dnn_filter wd;
  kfr_dnn_conv cd;
  kfr_dnn_act ad;
  int algo;
  int math;  /* cudnnMathType_t set on cd */
  int fused; /* cudnnConvolutionBiasActivationForward (else ConvolutionForward) */
  int legacy; /* algo and math chosen for the legacy calls */
  uint64_t ws_bytes; /* workspace the chosen algorithm or plan needs */
  /* the graph API's execution plan (kfr_cudnn_graph.c), NULL: legacy
   * calls; its variant pack for the pointers of the last run */
  void *plan, *vpack;
  uint32_t plan_of; /* nonzero: plan is step plan_of - 1's (the same
                       convolution), released with that step */
  void **descs; /* the descriptors the plan was built from */
  int n_descs;
  void *vp_ptrs[5], *vp_ws;
  union {
    float f;
    double d;
  } alpha1, alpha2, zero;
} kfr_conv_rt;

struct kfuse_model {
  /* Serialises run (the arena, the launch parameters and the graph are
   * shared by every run of an instance). */
  pthread_mutex_t lock;
  /* The entry gate (kfr_sync.c): calls inside or waiting for the lock,
   * destroy's flag, and the condition destroy waits on for callers to
   * drain. */
  atomic_int callers;
  atomic_int closing;
  pthread_cond_t idle;
  /* Live graphs of the caller's that captured a run (kfr_sync.c), under
   * the process-wide zombie lock: destroy with captures alive retires the
   * instance (keeps everything) until they are gone. */
  int captures;
  int retired, ready;
  struct kfuse_model *next_retired;
  /* per module: its out-of-range index flag (kf_common.cuh's
   * kf_index_error), 0 when the module has none */
  CUdeviceptr *index_flag;
  uint64_t held_capture; /* the capture the last reference went to, */
  int holding;           /* once there was one */

  /* The plan's records, copied at create: the caller's plan is not used
   * after create returns. */
  void *meta;
  kfr_header h;
  kfr_buffer *buffers;
  kfr_kernel *kernels;
  kfr_step *steps;
  kfr_arg *args;
  char *strings;
  uint32_t *input_buf, *output_buf; /* buffer number of input/output i */

  const kfr_driver *cu;
  CUdevice dev;
  CUcontext ctx;
  int ctx_retained;
  /* the instance's own non-blocking stream: create's uploads and
   * algorithm searches run on it, so create waits for nothing else (not
   * the legacy stream, not the context); whether the device has the
   * stream-ordered allocator the searches' scratch comes from */
  CUstream own;
  int pools;
  CUmodule *modules;
  CUfunction *funcs;

  CUdeviceptr arena, weights, consts;
  uint64_t weights_lo, consts_lo; /* plan offsets the regions start at */
  CUdeviceptr *base;              /* per buffer; inputs/outputs set per run */
  kfr_value *vals;                /* per arg */
  void **params;                  /* per arg: &vals[i] */

  const kfr_cublaslt *lt_api;
  cublasLtHandle_t lt;
  kfr_gemm_rt *gemm; /* per step; used by GEMM steps only */

  const kfr_cudnn *dnn_api;
  kfr_dnn_handle dnn;  /* per instance, used under lock like lt */
  kfr_conv_rt *conv;   /* per step; used by CONV steps only */
  /* staging for caller tensors less than 16-byte aligned (kfr_cudnn.c),
   * allocated at first need */
  CUdeviceptr conv_stage;
  /* the CONV steps' workspace, allocated at create for the chosen
   * algorithms (the largest ws_bytes; 0 when none needs any) */
  CUdeviceptr conv_ws;

  int use_graph;
  int conv_search;            /* kfuse_options.conv_search: time cuDNN's candidates */
  CUdeviceptr *gin, *gout; /* fixed input/output buffers (graph mode) */
  CUstream cap;            /* capture stream (graph mode) */
  CUgraphExec exec;
  CUevent done; /* recorded after every run: orders runs on other streams */
  /* cuDNN steps run on m->own, the stream their plans were built and
   * timed on, forked from and joined back to the run's stream (kfr_run.c,
   * run_steps) */
  CUevent dnn_fork, dnn_join;

  char err[1024];
};

/* step s's name, for messages */
static inline const char *kfr_step_name(const kfuse_model *m, uint32_t s) {
  return m->strings + m->steps[s].name;
}

/* KFUSE_CUDNN_VERBOSE=1: cuDNN's searches and choices on stderr
 * (kfr_cudnn.c) */
KFR_HIDDEN int kfr_cudnn_verbose(void);
/* the workspace a graph plan over its step's budget may take (kfr_cudnn.c) */
KFR_HIDDEN uint64_t kfr_conv_big_ws_limit(kfuse_model *m);

/* Find the model's weights file (kfuse_options.weights_path when given),
 * check it against the plan (size, header, model id, and unless skip_hash
 * the XXH64 of its data) and upload it to m->weights (kfr_weights.c). */
KFR_HIDDEN int kfr_weights_load(kfuse_model *m, const void *plan,
                                const char *given, int skip_hash);

/* Each launch step's argument count and sizes against its kernel's
 * parameters (cuFuncGetParamInfo; skipped when the driver lacks it):
 * KFUSE_EPLAN naming the step, kernel and argument (kfr_params.c). */
KFR_HIDDEN int kfr_check_params(kfuse_model *m);

/* The entry gate: kfr_enter takes the instance's lock for a call
 * (KFUSE_ECLOSED, lock not held, when destroy has begun); kfr_leave gives
 * it back. kfr_close (destroy) turns later calls away and waits until no
 * call is inside or waiting. */
KFR_HIDDEN int kfr_enter(kfuse_model *m);
/* kfuse_model_error's entry: counted and locked like kfr_enter, also while
 * closing (it only reads m->err); leave with kfr_leave. */
KFR_HIDDEN void kfr_enter_reader(kfuse_model *m);
KFR_HIDDEN void kfr_leave(kfuse_model *m);
KFR_HIDDEN void kfr_close(kfuse_model *m);
/* A run on stream s, which the caller is capturing into a graph: that
 * graph gets a reference to the instance (a CUDA user object), so destroy
 * keeps the instance's memory while the graph or an exec of it lives. */
KFR_HIDDEN int kfr_capture_hold(kfuse_model *m, CUstream s);
/* After kfr_close: release the instance now (kfr_model_release) when no
 * graph holds it, else keep it until the last one is gone; then release
 * every retired instance whose graphs are gone. */
KFR_HIDDEN void kfr_retire(kfuse_model *m);
/* Find each module's out-of-range index flag (create time, after the
 * modules are loaded). */
KFR_HIDDEN int kfr_find_index_flags(kfuse_model *m);
/* Release the retired instances no graph holds any more (every create). */
KFR_HIDDEN void kfr_sweep(void);
/* Free everything of an instance (kfr_model.c; no call may be inside). */
KFR_HIDDEN void kfr_model_release(kfuse_model *m);

/* Scratch device memory for create's searches, ordered on m->own
 * (kfr_sync.c): cuMemAllocAsync/cuMemFreeAsync where the device has memory
 * pools, else cuMemAlloc and, after m->own is drained, cuMemFree (which
 * may wait for the whole device). Alloc returns a CUresult; *p is 0 on
 * failure. Free accepts 0. */
KFR_HIDDEN CUresult kfr_scratch_alloc(kfuse_model *m, CUdeviceptr *p, size_t n);
KFR_HIDDEN void kfr_scratch_free(kfuse_model *m, CUdeviceptr p);

/* Printf into m->err; returns rc. */
KFR_HIDDEN int kfr_fail(kfuse_model *m, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Which algorithm a GEMM run with operand alignments run[4] (A, B, C, D,
 * bytes) uses: 0 the planned one (chosen for planned[4]), 1 the fallback
 * (chosen for low[4], when have_low), 2 neither fits: choose a new
 * fallback for need[4], the smaller of run and the current fallback's (or
 * planned) alignments, so fallbacks only ever widen. */
KFR_HIDDEN int kfr_gemm_pick(const uint32_t planned[4], int have_low, const uint32_t low[4], const uint32_t run[4],
                             uint32_t need[4]);

/* Build the cuBLASLt descriptors of GEMM step s and pick its algorithm
 * (create time). */
KFR_HIDDEN int kfr_gemm_prepare(kfuse_model *m, uint32_t s);
KFR_HIDDEN void kfr_gemm_release(kfuse_model *m, uint32_t s);

/* cuDNN state of the model's CONV steps: the handle, each step's
 * descriptors and algorithm (create time); the release of all of it; and
 * running CONV step s on a stream. */
KFR_HIDDEN int kfr_conv_prepare_all(kfuse_model *m);
KFR_HIDDEN void kfr_conv_release_all(kfuse_model *m);
KFR_HIDDEN int kfr_conv_run(kfuse_model *m, uint32_t s, CUstream stream);
/* kfr_cudnn_graph.c: build step s's execution plan (search buffers x, w, y,
 * bias and the workspace; x 0: no timing, the heuristics' first plan).
 * KFUSE_OK with m->conv[s].plan set, or 1: stay on the legacy calls. */
KFR_HIDDEN int kfr_conv_graph_prepare(kfuse_model *m, uint32_t s, CUdeviceptr x, CUdeviceptr w,
                                      CUdeviceptr y, CUdeviceptr b, CUdeviceptr ws);
/* Run step s's plan: KFUSE_OK or an error (m->err). The pointers are
 * 16-byte aligned, as the plan declares (kfr_conv_run stages any that are
 * not). */
KFR_HIDDEN int kfr_conv_graph_run(kfuse_model *m, uint32_t s, void *x, void *w, void *y, void *b, void *z,
                                  void *ws);
KFR_HIDDEN void kfr_conv_graph_release(kfuse_model *m, uint32_t s);
/* Dims and strides of a dense [a, b, spatial...] tensor of an nd-d
 * convolution as cuDNN takes it (kfr_cudnn.c): 1-d becomes 2-d with height
 * 1 (cuDNN wants at least 4 dims); nhwc: the NHWC memory order of a 4-d
 * tensor. Returns the number of dims. */
KFR_HIDDEN int kfr_conv_dims(uint32_t nd, int64_t a, int64_t b, const int64_t *sp, int nhwc, int *dim,
                             int *str);
/* f32 data, fp32 compute: no TF32 */
static inline int kfr_conv_strict_fp32(const kfr_conv *c) {
  return c->dtype == KFUSE_DTYPE_F32 && c->compute == KFR_COMPUTE_32F;
}

#endif
