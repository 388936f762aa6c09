/* kfr_plan_writer.h — builds the binary plan of runtime/kfr_plan.h.
 *
 * Used by the compiler to serialise a model's plan (library
 * kfuse_plan_writer), and by the runtime's tests. Records are added in any
 * order except that a step's args follow the step; every add returns the
 * record's index (UINT32_MAX after a failure, which is also remembered and
 * reported by finish, so callers may check once at the end). finish lays
 * the plan out, runs the runtime's own validator on it (kfr_plan_check) and
 * hands over a malloc'd blob.
 *
 *   kfr_writer *w = kfr_writer_create(90);
 *   uint32_t x = kfr_writer_input(w, 0, "x", &desc);
 *   uint32_t y = kfr_writer_output(w, 0, "y", &desc);
 *   uint32_t mod = kfr_writer_module(w, cubin, cubin_bytes);
 *   uint32_t k = kfr_writer_kernel(w, mod, "relu_f32", 0);
 *   kfr_writer_launch(w, k, grid, block, 0, "g0_relu");
 *   kfr_writer_arg_ptr(w, x, 0);
 *   kfr_writer_arg_ptr(w, y, 0);
 *   kfr_writer_arg_i64(w, n);
 *   rc = kfr_writer_finish(w, &plan, &bytes, msg, sizeof msg);
 *   (the plan's model_id is set here: the XXH64 of the finished plan)
 *   kfr_writer_destroy(w);
 */
#ifndef KFR_PLAN_WRITER_H
#define KFR_PLAN_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "kfr_plan.h"
#include "kfuse_runtime.h" /* KFUSE_DTYPE_* and the status codes */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct kfr_writer kfr_writer;

/* A writer for a plan whose cubins target sm_<sm_arch> (e.g. 90). NULL if
 * out of memory. */
kfr_writer *kfr_writer_create(uint32_t sm_arch);
/* Accepts NULL. */
void kfr_writer_destroy(kfr_writer *w);

/* Fill d with a contiguous (row-major) layout of the given shape. rank is
 * clamped to KFR_MAX_RANK. */
void kfr_tensor_desc_init(kfr_tensor_desc *d, uint32_t dtype, uint32_t rank,
                          const int64_t *shape);

void kfr_writer_set_model_name(kfr_writer *w, const char *name);
void kfr_writer_set_arena(kfr_writer *w, uint64_t bytes);
/* Weights come from a file at run time: a kfr_weights_header, then exactly
 * `bytes` bytes of data whose XXH64 (runtime/kfr_hash.h, seed 0) is hash.
 * The file is path (relative: to the directory of the module holding the
 * plan), or with beside_module the shared module's own path + ".weights"
 * (path then only names it in messages). */
void kfr_writer_set_weights_file(kfr_writer *w, const char *path,
                                 uint64_t bytes, uint64_t hash,
                                 int beside_module);
/* Weights are embedded: the image (borrowed until finish) is copied into
 * the blob section and WEIGHT buffer offsets count from its start. */
void kfr_writer_set_weights_embedded(kfr_writer *w, const void *image,
                                     uint64_t bytes);

/* Buffers; desc may be NULL for arena, weight and const buffers. Input and
 * output buffers get nbytes from their desc. */
uint32_t kfr_writer_input(kfr_writer *w, uint32_t index, const char *name,
                          const kfr_tensor_desc *desc);
uint32_t kfr_writer_output(kfr_writer *w, uint32_t index, const char *name,
                           const kfr_tensor_desc *desc);
uint32_t kfr_writer_arena(kfr_writer *w, uint64_t offset, uint64_t nbytes,
                          const char *name, const kfr_tensor_desc *desc);
/* offset: in the weights file, or in the embedded image */
uint32_t kfr_writer_weight(kfr_writer *w, uint64_t offset, uint64_t nbytes,
                           const char *name, const kfr_tensor_desc *desc);
/* data is copied into the blob section */
uint32_t kfr_writer_const(kfr_writer *w, const void *data, uint64_t nbytes,
                          const char *name, const kfr_tensor_desc *desc);

/* A module image (copied): a cubin, a fatbin, or PTX text including its
 * terminating NUL; and a kernel in it. */
uint32_t kfr_writer_module(kfr_writer *w, const void *cubin, size_t nbytes);
uint32_t kfr_writer_kernel(kfr_writer *w, uint32_t module, const char *entry,
                           uint32_t max_dynamic_smem);

/* Steps; name is the group or op they come from. Their args follow. */
uint32_t kfr_writer_launch(kfr_writer *w, uint32_t kernel,
                           const uint32_t grid[3], const uint32_t block[3],
                           uint32_t smem, const char *name);
/* GEMM: then 6 args: A, B, C|none, D, bias|none, workspace|none. */
uint32_t kfr_writer_gemm(kfr_writer *w, const kfr_gemm *g, const char *name);
/* CONV: then 6 args: x, w, y, bias|none, z|none, workspace|none. */
uint32_t kfr_writer_conv(kfr_writer *w, const kfr_conv *c, const char *name);
/* MEMSET and COPY add their own args. */
uint32_t kfr_writer_memset(kfr_writer *w, const char *name, uint32_t buffer,
                           int64_t offset, int64_t bytes);
uint32_t kfr_writer_copy(kfr_writer *w, const char *name, uint32_t dst,
                         int64_t dst_offset, uint32_t src, int64_t src_offset,
                         int64_t bytes);

/* Args of the last step, in order. */
uint32_t kfr_writer_arg_ptr(kfr_writer *w, uint32_t buffer, int64_t offset);
uint32_t kfr_writer_arg_i64(kfr_writer *w, int64_t v);
uint32_t kfr_writer_arg_i32(kfr_writer *w, int32_t v);
uint32_t kfr_writer_arg_f32(kfr_writer *w, float v);
uint32_t kfr_writer_arg_f64(kfr_writer *w, double v);
uint32_t kfr_writer_arg_none(kfr_writer *w);

/* The header of the weights file that belongs to a finished plan. */
void kfr_weights_header_fill(const void *plan, kfr_weights_header *out);

/* Lay out and check the plan. On KFUSE_OK *plan is a malloc'd blob (free()
 * it) of *bytes bytes; otherwise KFUSE_ENOMEM, KFUSE_EARG (misuse, e.g. an
 * arg before any step) or KFUSE_EPLAN (the validator's message) with a
 * one-line message. The writer may be finished more than once. */
int kfr_writer_finish(kfr_writer *w, void **plan, size_t *bytes, char *msg,
                      size_t msgsz);

#ifdef __cplusplus
}
#endif
#endif
