/* agent/compile_stages.c — a compile's options and its defaults
 * (kf_compile_options_init), and the compile's stages before any kernel is
 * made, as those options ask for them (include/kfuse/options.h): its
 * passes, its partition, and the built-in policy's options. Shared by the
 * compile driver (driver/compile.c, driver/units.c) and the task writer
 * (agent/task.c), which writes a model's groups exactly as a compile would
 * partition them. */
#include <string.h>

#include "agent_int.h"
#include "kfuse/options.h"
#include "kfuse/pass.h"

void kf_compile_options_init(kf_compile_options *o) {
  memset(o, 0, sizeof *o);
  o->precision = KF_PRECISION_DEFAULT;
  o->target.sm = 90;
  o->emit = KF_EMIT_SO;
  o->fuse = true;
  o->judge_seconds = 30;
}

kf_status kf_compile_passes(kf_graph *g, const kf_compile_options *o, kf_diag *diag) {
  kf_compile_passes_choice c = {.reference = o->reference,
                                .cudnn = !o->no_cudnn,
                                .channels_last = !o->no_channels_last,
                                .channels_last_all = o->channels_last_all};
  return kf_pass_run_compile(g, &c, diag);
}

kf_status kf_compile_partition(const kf_graph *g, const kf_compile_options *o, kf_partition **out,
                               kf_diag *diag) {
  kf_partition_options po;
  kf_partition_options_init(&po);
  po.precision = o->precision;
  po.fuse = o->fuse && !o->reference;
  po.horizontal = !o->no_horizontal;
  kf_status st = kf_partition_graph(g, &po, out, diag);
  /* before any kernel is built for a shape no byte count can hold */
  if (!st) st = kf_memplan_check_sizes(*out, diag);
  return st;
}

void kf_compile_builtin_options(const kf_compile_options *o, kf_builtin_options *bo) {
  kf_builtin_options_init(bo);
  bo->target = o->target;
  bo->precision = o->precision;
  bo->no_cudnn = o->no_cudnn || o->reference;
  bo->fp64 = o->reference;
  bo->tf32_conv_operands = o->reference && o->reference_tf32;
  bo->block_size = o->block_size;
  bo->vector_width = o->vector_width;
  bo->row_threads = o->row_threads;
  bo->row_cache = o->row_cache;
  bo->row_occupancy = o->row_occupancy;
  bo->col_threads = o->col_threads;
  bo->col_block = o->col_block;
  bo->row_unroll = o->row_unroll;
  bo->tile_a = o->tile_a;
  bo->tile_t = o->tile_t;
  bo->row_split = o->row_split;
  bo->attn_scratch_bytes = (int64_t)o->attn_scratch_kib << 10;
}
