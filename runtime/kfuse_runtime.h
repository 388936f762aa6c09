/* kfuse_runtime.h — the C API of a module kfuse emits (model.so / model.o).
 *
 * A module holds a plan (buffers, kernel launches, library steps), the
 * kernels as cubins, and model metadata; the runtime (runtime/, linked into
 * every module, depending on nothing else in kfuse) loads the CUDA driver
 * with dlopen, loads the cubins, allocates one arena by the memory plan,
 * uploads the weights and runs the plan on the caller's stream.
 *
 * Every function returns 0 on success or a KFUSE_E* code; the message of
 * the last failure of a model (or of a failed create) is available from
 * kfuse_model_error / kfuse_last_error.
 *
 * Sharing an instance (docs/DEPLOY.md, "Concurrency", says more). What is
 * enforced:
 *  - Runs on one instance from several threads and streams are serialised
 *    on the host (a lock) and on the GPU: each run's stream waits for the
 *    end of the instance's previous run, whichever stream that was on, and
 *    the run marks its own end (they share the arena). One instance per
 *    concurrent stream gives parallelism.
 *  - A run on a stream the caller is capturing into a CUDA graph is
 *    captured in that order: the graph waits for the instance's previous
 *    run and marks its end through event wait/record nodes, so each replay
 *    is ordered with the instance's other runs and replays as if it were a
 *    run queued at its launch. The graph holds a reference to the
 *    instance: destroying the instance while the graph or an exec of it
 *    exists keeps the instance's device memory (and context reference)
 *    until the last of them is destroyed; it is then freed at the next
 *    create or destroy in the process. Replays bake in the pointers of the
 *    captured run, as any CUDA graph does.
 *  - kfuse_model_destroy waits for calls inside the instance on other
 *    threads (a run in progress or waiting for the lock) and for the GPU
 *    work of its runs; a run that reaches the instance once destroy has
 *    begun returns KFUSE_ECLOSED.
 *  - Create never waits for GPU work it did not queue: its uploads and
 *    algorithm searches run on a stream of its own.
 * The caller's rules (not detectable): no call on a handle after destroy
 * has returned (nor a second destroy); the module's library stays loaded
 * while an instance or a graph holding one exists; the info and count
 * functions only read and may be called from any thread before destroy.
 * kfuse_model_error may be called from any thread before destroy returns:
 * it copies the instance's last message under the instance's lock (as a
 * call, so destroy waits for it) into a buffer of the calling thread; the
 * message is the instance's last failure, which after calls on several
 * threads need not be the caller's own.
 *
 * Environment: KFUSE_CUBLASLT=path picks the cuBLASLt library and
 * KFUSE_CUDNN_LIBRARY=path cuDNN (default: the loader's search path,
 * $CUDA_HOME/lib64, /usr/local/cuda/lib64, then Python's nvidia/.../lib,
 * newest first); KFUSE_LIBCUDA=path replaces libcuda.so.1 (for tests). All
 * are read with secure_getenv (ignored in set-user-ID programs);
 * docs/DEPLOY.md has the whole search.
 *
 * In a shared module (model.so) the entry points are named kfuse_model_*;
 * in an object module (model.o, static linking) they are named after the
 * prefix given at compile time (<prefix>_create, ...), declared in the
 * header kfuse writes next to it. */
#ifndef KFUSE_RUNTIME_H
#define KFUSE_RUNTIME_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
  KFUSE_OK = 0,
  KFUSE_ENOMEM = 1,     /* host or device allocation failed */
  KFUSE_ENODRIVER = 2,  /* libcuda.so.1 missing or no GPU */
  KFUSE_EARCH = 3,      /* the GPU cannot run the module's cubins */
  KFUSE_EPLAN = 4,      /* the embedded plan is corrupt, of another version,
                           or its launches disagree with their kernels */
  KFUSE_EWEIGHTS = 5,   /* weights file missing, unreadable, or not this
                           module's (size, header, model id, hash) */
  KFUSE_EARG = 6,       /* bad argument: count, shape, dtype, NULL pointer,
                           an output overlapping an input or output */
  KFUSE_ECUDA = 7,      /* a CUDA driver call failed */
  KFUSE_ELIBRARY = 8,   /* cuBLASLt/cuDNN missing or failed */
  KFUSE_ECLOSED = 9,    /* the instance is being destroyed (see below) */
  KFUSE_EINDEX = 10,    /* a run met an out-of-range index (kfuse_model_check) */
};

typedef struct kfuse_model kfuse_model;

typedef struct kfuse_options {
  uint32_t struct_size;     /* sizeof(kfuse_options): lets the struct grow */
  int device;               /* CUDA device ordinal (default 0) */
  const char *weights_path; /* NULL: the path recorded at compile time,
                               resolved relative to the module's directory
                               when relative; ignored for embedded weights */
  int cuda_graph;           /* 1: capture the plan once and replay it
                               (inputs/outputs are copied through fixed
                               buffers; if the capture fails, the instance
                               says so once on stderr and launches every
                               step instead); 0: launch every step */
  int skip_weights_hash;    /* 1: do not hash the weights file's data at
                               create (its exact size and the model id in
                               its header are still checked); 0 (default):
                               check the data's XXH64 against the module's,
                               about as costly as reading the file */
  int conv_search;          /* how a convolution's cuDNN engine is chosen at
                               create: 1 (default) times the candidates on
                               the device and keeps the fastest (the first
                               create on a fresh machine compiles cuDNN's
                               runtime-compiled engines: seconds per model);
                               0 takes cuDNN's heuristics' first (create in
                               well under a second, the same choice every
                               time). KFUSE_CUDNN_FIND=0 in the environment
                               makes it 0 whatever this says */
} kfuse_options;

typedef struct kfuse_tensor_info {
  const char *name;
  int dtype; /* KFUSE_DTYPE_* */
  int rank;
  int64_t shape[8];
} kfuse_tensor_info;

/* <prefix>_create(const kfuse_options *opts, kfuse_model **out): opts may
 * be NULL for defaults; see the generated header. */

/* Element types, numbered like kfuse's kf_dtype. */
enum {
  KFUSE_DTYPE_F32 = 1,
  KFUSE_DTYPE_F64 = 2,
  KFUSE_DTYPE_F16 = 3,
  KFUSE_DTYPE_BF16 = 4,
  KFUSE_DTYPE_I64 = 5,
  KFUSE_DTYPE_I32 = 6,
  KFUSE_DTYPE_I16 = 7,
  KFUSE_DTYPE_I8 = 8,
  KFUSE_DTYPE_U8 = 9,
  KFUSE_DTYPE_BOOL = 10,
};

#if defined(__GNUC__)
#define KFUSE_EXPORT __attribute__((visibility("default")))
#else
#define KFUSE_EXPORT
#endif

/* ---- entry points of every module ----------------------------------------
 * <prefix>_create is emitted per model (kfuse_model_create in a .so); the
 * others are the runtime's and serve every model linked with it. */

/* Run the model: inputs[i] / outputs[i] are device pointers to contiguous
 * tensors of the shapes and dtypes the info functions report. An output
 * may share no byte with an input or another output (KFUSE_EARG: outputs
 * are written while inputs are still read); inputs may share memory. An
 * out-of-range index in an index op reads 0 and is flagged for
 * kfuse_model_check, not reported here. stream is a CUstream
 * (cudaStream_t); NULL means the legacy default stream. Returns when the
 * work is queued, not when it is done. */
KFUSE_EXPORT int kfuse_model_run(kfuse_model *m, void *stream,
                                 const void *const *inputs,
                                 void *const *outputs);
/* Wait for the instance's runs so far (its own end event; no other work)
 * and report what they flagged on the GPU: KFUSE_EINDEX when an index op
 * (gather, embedding, index, index_select) met an out-of-range index, where
 * PyTorch raises IndexError (those runs' outputs are undefined: the element
 * reads 0); the flag is cleared. KFUSE_ECUDA when a run failed on the GPU.
 * A debug aid: it blocks the calling thread. */
KFUSE_EXPORT int kfuse_model_check(kfuse_model *m);
/* Free the instance and its device memory, after waiting for calls on
 * other threads and its GPU work (the memory stays while a CUDA graph that
 * captured a run exists; see above). Accepts NULL. */
KFUSE_EXPORT void kfuse_model_destroy(kfuse_model *m);
KFUSE_EXPORT int kfuse_model_num_inputs(const kfuse_model *m);
KFUSE_EXPORT int kfuse_model_num_outputs(const kfuse_model *m);
KFUSE_EXPORT int kfuse_model_input_info(const kfuse_model *m, int i,
                                        kfuse_tensor_info *out);
KFUSE_EXPORT int kfuse_model_output_info(const kfuse_model *m, int i,
                                         kfuse_tensor_info *out);
/* Message of the instance's last failure ("" if none), copied into a
 * buffer of the calling thread that stays valid until this thread calls
 * kfuse_model_error again. */
KFUSE_EXPORT const char *kfuse_model_error(const kfuse_model *m);
/* Message of this thread's last failed create. */
KFUSE_EXPORT const char *kfuse_last_error(void);
/* Initialise options with their defaults. */
KFUSE_EXPORT void kfuse_options_init(kfuse_options *o);

/* ---- debugging aids (kfuse compile's module check uses them to find the
 * first group whose outputs differ from the reference's) ---- */

/* Run only the plan's first n_steps steps (all of them for n_steps >= the
 * plan's count), launching each (never through the CUDA graph) on stream,
 * which must not be capturing; ordered like kfuse_model_run. The values
 * those steps wrote stay in the arena until the next run. */
KFUSE_EXPORT int kfuse_model_debug_run(kfuse_model *m, void *stream,
                                       const void *const *inputs,
                                       void *const *outputs, uint32_t n_steps);
/* The device address and size of the instance's arena (where the
 * intermediates live, at the offsets of the compile's memory plan) and the
 * plan's step count. */
KFUSE_EXPORT int kfuse_model_debug_arena(const kfuse_model *m,
                                         uint64_t *device_ptr, uint64_t *bytes,
                                         uint32_t *n_steps);

/* What <prefix>_create calls: plan is the module's embedded plan blob. */
int kfr_model_create(const void *plan, size_t plan_bytes,
                     const kfuse_options *opts, kfuse_model **out);

#ifdef __cplusplus
}
#endif
#endif
