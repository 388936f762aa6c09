/* tests/emu/emu_check.c — checks the built-in kernels' numerics without a
 * GPU: partitions a fixture, builds a unit per group, runs the units on
 * the CPU in group order through the emulation of judge/emu.c (the
 * sources as host C++ over agent/templates/kf_emu.h: real threads per
 * block, real barriers for __syncthreads and warp shuffles; GEMM and cuDNN
 * steps computed after the runtime's contracts), each value in its own
 * buffer, and compares the graph outputs with the outputs PyTorch recorded
 * in the fixture's .kfio.
 *
 *   emu_check MODEL FIXTURE.kfio|- WORKDIR MODE
 *   MODE: fused (default precision, tolerance max(fixture's, 1e-4)),
 *         fused-nocudnn (the same without cuDNN steps: convolutions as
 *         im2col + GEMM or direct kernels), fused-chunked (attention's
 *         GEMM lowering with a 16 KiB score scratch: many chunks),
 *         perop-fp64 (one group per op, computed in fp64: the fixture's
 *         own tolerance), perop-tf32 (perop-fp64 with fp32 convolutions'
 *         operands rounded to TF32, the module check's reference where
 *         TF32 is allowed: each output's largest difference from the
 *         reference, over its largest magnitude, between 1e-5 (the
 *         rounding is seen to happen: fp32 against fp64 moves them
 *         2e-7) and 2e-3 (TF32's size: 2^-11 an operand), element-wise
 *         tolerances being meaningless where products cancel), or
 *         fused-oob (every integer input set out of
 *         range for any index op: the outputs are not compared, the
 *         kernels' out-of-range index flag must be set)
 *   In every other mode the flag (kf_index_error, kf_common.cuh) must stay
 *   clear: in-range indices, negative ones wrapped, never set it.
 *   With "-" instead of a .kfio (hand-written graphs, tests/emu/NAME.mlir:
 *   larger shapes and paths the fixtures do not reach) the inputs are
 *   pseudo-random (floats in [-2, 2), integers in [0, 4), bools) and the
 *   reference is the fp64 CPU interpreter, tolerance 1e-4 (1e-5 for the
 *   fp64 mode) plus 1e-2 relative for outputs of 16-bit float dtype.
 *
 * Buffers are poisoned (all bits set: NaN for floats) before each group
 * runs, so an element a kernel fails to write shows up as a mismatch. The
 * emulator checks logic (indexing, reductions, epilogues, dtype handling),
 * not GPU timing or memory-model subtleties beyond barriers. The host
 * compiler is $KFUSE_EMU_CXX (default g++). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kfuse/agent.h"
#include "kfuse/compile.h"
#include "kfuse/frontend.h"
#include "kfuse/interp.h"
#include "kfuse/ir.h"
#include "kfuse/pass.h"
#include "kfuse/judge.h"
#include "kfuse/partition.h"

static int64_t extent(const kf_type *t) {
  if (t->kind != KF_TYPE_TENSOR) return 0;
  int64_t e = t->offset + 1;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] == 0) return t->offset;
    e += (t->shape[i] - 1) * t->strides[i];
  }
  return e;
}


typedef struct vstore {
  void **ptr;   /* by value id: first element */
  void **owned; /* allocations to free */
  int n_owned, cap_owned;
} vstore;

static void *own(vstore *s, size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) return NULL;
  memset(p, 0xff, bytes ? bytes : 1); /* poison */
  if (s->n_owned == s->cap_owned) {
    s->cap_owned = s->cap_owned ? 2 * s->cap_owned : 64;
    s->owned = realloc(s->owned, sizeof *s->owned * (size_t)s->cap_owned);
  }
  s->owned[s->n_owned++] = p;
  return p;
}

/* pseudo-random inputs and the interpreter's outputs, as if recorded */
static int make_reference(const kf_graph *g, kf_io_file *io, kf_diag *d) {
  io->n_inputs = g->n_inputs;
  io->n_outputs = g->n_outputs;
  io->inputs = calloc((size_t)g->n_inputs + 1, sizeof *io->inputs);
  io->outputs = calloc((size_t)g->n_outputs + 1, sizeof *io->outputs);
  io->atol = io->rtol = 1e-5;
  if (!io->inputs || !io->outputs) return 1;
  uint64_t s = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < g->n_inputs; i++) {
    kf_tensor *t = &io->inputs[i].t;
    const kf_type *ty = &g->inputs[i]->type;
    t->dtype = ty->dtype;
    t->rank = ty->rank;
    memcpy(t->shape, ty->shape, sizeof t->shape);
    if (kf_tensor_alloc(t)) return 1;
    io->inputs[i].name = strdup(g->input_names[i] ? g->input_names[i] : "x");
    for (int64_t e = 0; e < kf_tensor_numel(t); e++) {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      double u = (double)(s >> 11) / 9007199254740992.0;
      double v = kf_dtype_is_float(t->dtype) ? 4 * u - 2 : t->dtype == KF_DTYPE_BOOL ? (u < 0.5) : (double)(int)(4 * u);
      kf_tensor_set(t, e, v);
    }
  }
  kf_tensor *outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
  if (!outs) return 1;
  kf_tensor *ins = calloc((size_t)g->n_inputs + 1, sizeof *ins);
  for (int i = 0; i < g->n_inputs; i++) ins[i] = io->inputs[i].t;
  kf_interp_options iopt;
  memset(&iopt, 0, sizeof iopt);
  kf_status st = kf_interp_run(g, ins, g->n_inputs, outs, &iopt, d);
  free(ins);
  for (int i = 0; i < g->n_outputs; i++) {
    io->outputs[i].t = outs[i];
    char nm[32];
    snprintf(nm, sizeof nm, "out%d", i);
    io->outputs[i].name = strdup(nm);
  }
  free(outs);
  return st ? 1 : 0;
}

static int run(const char *model, const char *kfio, const char *work, const char *mode) {
  kf_diag d;
  kf_diag_init(&d, NULL, NULL);
  bool tf32 = strcmp(mode, "perop-tf32") == 0;
  bool fp64 = strcmp(mode, "perop-fp64") == 0 || tf32;
  bool nocudnn = strcmp(mode, "fused-nocudnn") == 0;
  /* fused-reread: normalisations read their rows again instead of keeping
   * them in registers, two rows a block of 128 threads each */
  bool reread = strcmp(mode, "fused-reread") == 0;
  /* fused-nhwc: pass/layout.c's channels-last convolutions, as kfuse
   * compile runs them */
  bool nhwc = strcmp(mode, "fused-nhwc") == 0;
  /* fused-cl: the channels-last pass with kfuse compile's own rule (chained
   * convolutions over its size floor), as a default compile runs it */
  bool cl = strcmp(mode, "fused-cl") == 0;
  /* fused-chunked: attention's GEMM lowering holds at most 16 KiB of
   * scores, so its batch (and rows) split over several step triples */
  bool chunked = strcmp(mode, "fused-chunked") == 0;
  /* fused-oob: integer inputs out of range for every index op */
  bool oob = strcmp(mode, "fused-oob") == 0;
  /* fused-variants: the choices kfuse compile judges on a GPU
   * (kf_builtin_variants), here 4 threads on each row of a column
   * reduction in 1024-thread blocks, the reduced loop unrolled 8 times and
   * long rows split over 8 blocks each */
  bool variants = strcmp(mode, "fused-variants") == 0;
  /* fused-convbatch: cuDNN convolutions as one step per sample (the path
   * of tensors over 2^31 elements: each step's operands offset into the
   * same buffers; both layouts offset a sample the same way) */
  bool convbatch = strcmp(mode, "fused-convbatch") == 0;
  if (!fp64 && !nocudnn && !reread && !nhwc && !cl && !chunked && !oob && !variants && !convbatch &&
      strcmp(mode, "fused") != 0) {
    fprintf(stderr,
            "unknown mode '%s' (fused, fused-nocudnn, fused-reread, fused-nhwc, fused-cl, fused-chunked, fused-oob, "
            "fused-variants, fused-convbatch, perop-fp64, perop-tf32)\n",
            mode);
    return 2;
  }
  kf_load_options lo;
  kf_load_options_init(&lo);
  kf_graph *g = NULL;
  kf_partition *p = NULL;
  kf_io_file io;
  memset(&io, 0, sizeof io);
  kf_unit **units = NULL;
  vstore vs;
  memset(&vs, 0, sizeof vs);
  kf_emu *emu = NULL;
  int rc = 1;
  bool use_interp = strcmp(kfio, "-") == 0;
  if (kf_model_load(model, &lo, &g, &d)) goto done;
  if (!use_interp && kf_io_read(kfio, &io, &d)) goto done;
  /* the reference from the graph as loaded: the compile passes' rewrites
   * are under test too */
  if (use_interp && make_reference(g, &io, &d)) goto done;
  if (kf_pass_run_pipeline(g, fp64 ? kf_pass_pipeline("reference") : kf_pass_pipeline("compile"), true, &d))
    goto done;
  if (nhwc && kf_pass_run_pipeline(g, "channels-last-all", true, &d)) goto done;
  if (cl && kf_pass_run_pipeline(g, "channels-last", true, &d)) goto done;
  kf_partition_options po;
  kf_partition_options_init(&po);
  po.fuse = !fp64;
  if (kf_partition_graph(g, &po, &p, &d)) goto done;
  kf_builtin_options bo;
  kf_builtin_options_init(&bo);
  bo.fp64 = fp64;
  bo.tf32_conv_operands = tf32;
  bo.no_cudnn = nocudnn;
  if (chunked) bo.attn_scratch_bytes = 16 << 10;
  if (convbatch) bo.conv_batch = 1;
  if (variants) {
    bo.col_threads = 4;
    bo.col_block = 1024;
    bo.row_unroll = 8;
    bo.row_split = 8;
  }
  if (reread) {
    bo.row_cache = -1;
    bo.row_threads = 128;
    bo.block_size = 256;
  }
  units = calloc((size_t)p->n_groups + 1, sizeof *units);

  /* ---- units, compiled for the emulation in WORKDIR/MODEL.MODE/ */
  const char *mname = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/%s.%s", work, mname, mode);
  if (mkdir(dir, 0755) && errno != EEXIST) {
    fprintf(stderr, "cannot make %s: %s\n", dir, strerror(errno));
    goto done;
  }
  for (int i = 0; i < p->n_groups; i++) {
    const kf_group *grp = &p->groups[i];
    if (grp->kind == KF_GROUP_VIEW) continue;
    if (kf_builtin_unit(p, grp, &bo, &units[i], &d)) goto done;
  }
  if (kf_emu_build(units, p->n_groups, dir, &emu, &d)) goto done;
  if (oob) { /* after the reference: ±2^20 is out of range for every dim here */
    for (int i = 0; i < io.n_inputs; i++) {
      kf_tensor *t = &io.inputs[i].t;
      if (kf_dtype_is_float(t->dtype) || t->dtype == KF_DTYPE_BOOL) continue;
      for (int64_t e = 0; e < kf_tensor_numel(t); e++) kf_tensor_set(t, e, e % 2 ? -(1 << 20) : 1 << 20);
    }
  }

  /* ---- storage: inputs, weights, then groups in order */
  vs.ptr = calloc(g->next_value_id + 1, sizeof *vs.ptr);
  if (io.n_inputs != g->n_inputs) {
    fprintf(stderr, "FAIL: %d inputs recorded, graph has %d\n", io.n_inputs, g->n_inputs);
    goto done;
  }
  for (int i = 0; i < g->n_inputs; i++) vs.ptr[g->inputs[i]->id] = io.inputs[i].t.data;
  for (kf_op *op = g->first; op; op = op->next) {
    if (op->code != KF_OP_PARAM) continue;
    const kf_type *t = &op->results[0]->type;
    const void *data = NULL;
    int64_t nb = 0;
    if (g->store.get(g->store.impl, kf_op_get_str(op, "fqn"), &data, &nb, &d)) goto done;
    size_t es = kf_dtype_size(t->dtype);
    if (nb == 0 || !data) {
      void *z = own(&vs, (size_t)extent(t) * es);
      memset(z, 0, (size_t)extent(t) * es);
      data = z;
    }
    vs.ptr[op->results[0]->id] = (char *)data + t->offset * (int64_t)es;
  }
  for (int gi = 0; gi < p->n_groups; gi++) {
    const kf_group *grp = &p->groups[gi];
    if (grp->kind == KF_GROUP_VIEW) {
      for (int k = 0; k < grp->n_ops; k++) {
        const kf_op *op = grp->ops[k];
        const kf_value *x = op->operands[0];
        for (int r = 0; r < op->n_results; r++) {
          const kf_value *v = op->results[r];
          size_t es = kf_dtype_size(v->type.dtype);
          vs.ptr[v->id] = (char *)vs.ptr[x->id] + (v->type.offset - x->type.offset) * (int64_t)es;
        }
      }
      continue;
    }
    for (int k = 0; k < grp->n_outputs; k++) {
      const kf_value *v = grp->outputs[k];
      if (v->type.kind != KF_TYPE_TENSOR) continue;
      size_t es = kf_dtype_size(v->type.dtype);
      char *b = own(&vs, (size_t)extent(&v->type) * es);
      vs.ptr[v->id] = b + v->type.offset * (int64_t)es;
    }
    if (kf_emu_run_unit(emu, grp, units[gi], vs.ptr, &d)) goto done;
  }

  /* ---- the out-of-range index flag */
  if (oob) {
    printf("%s %s: index flag %u\n", mname, mode, kf_emu_index_error(emu));
    rc = kf_emu_index_error(emu) ? 0 : 1;
    if (rc) fprintf(stderr, "FAIL: out-of-range indices did not set kf_index_error\n");
    goto done;
  }
  if (kf_emu_index_error(emu)) {
    fprintf(stderr, "FAIL: kf_index_error set by in-range indices\n");
    goto done;
  }

  /* ---- compare */
  double atol = io.atol, rtol = io.rtol;
  if (!fp64) {
    atol = atol > 1e-4 ? atol : 1e-4;
    rtol = rtol > 1e-4 ? rtol : 1e-4;
  }
  /* 16-bit floats anywhere: intermediates rounded to them (per-op groups
   * store every value in its dtype, the interpreter keeps fp64) */
  bool narrow = false;
  for (kf_op *op = g->first; op; op = op->next)
    for (int r = 0; r < op->n_results; r++)
      narrow |= op->results[r]->type.dtype == KF_DTYPE_F16 || op->results[r]->type.dtype == KF_DTYPE_BF16;
  if (narrow && use_interp && fp64) {
    atol = atol > 1e-2 ? atol : 1e-2;
    rtol = rtol > 1e-2 ? rtol : 1e-2;
  }
  int bad = 0;
  double moved = 0; /* the largest |got - reference| / max |reference| */
  for (int i = 0; i < g->n_outputs && i < io.n_outputs; i++) {
    const kf_value *v = g->outputs[i];
    kf_tensor got;
    memset(&got, 0, sizeof got);
    got.dtype = v->type.dtype;
    got.rank = v->type.rank;
    memcpy(got.shape, v->type.shape, sizeof got.shape);
    if (kf_tensor_alloc(&got)) goto done;
    /* gather through the output's strides */
    int64_t n = kf_tensor_numel(&got), idx[KF_MAX_RANK] = {0};
    for (int64_t e = 0; e < n; e++) {
      int64_t off = 0;
      for (int k = 0; k < got.rank; k++) off += idx[k] * v->type.strides[k];
      kf_tensor_set(&got, e, kf_elem_get(v->type.dtype, vs.ptr[v->id], off));
      for (int k = got.rank - 1; k >= 0; k--) {
        if (++idx[k] < got.shape[k]) break;
        idx[k] = 0;
      }
    }
    char what[300];
    snprintf(what, sizeof what, "%s output %d (%s)", mname, i, io.outputs[i].name);
    double rt = rtol;
    if (v->type.dtype == KF_DTYPE_F16 || v->type.dtype == KF_DTYPE_BF16) rt = rt > 1e-2 ? rt : 1e-2;
    if (tf32 && kf_dtype_is_float(got.dtype) && kf_tensor_numel(&got) == kf_tensor_numel(&io.outputs[i].t)) {
      double dmax = 0, rmax = 0;
      for (int64_t e = 0; e < kf_tensor_numel(&got); e++) {
        double a = kf_tensor_get(&got, e), r = kf_tensor_get(&io.outputs[i].t, e);
        if (!(fabs(a - r) <= dmax)) dmax = fabs(a - r); /* NaN too */
        if (fabs(r) > rmax) rmax = fabs(r);
      }
      double m = rmax > 0 ? dmax / rmax : dmax;
      if (!(m <= 2e-3)) {
        fprintf(stderr, "FAIL: %s is %.3g off the reference (relative to its largest), over TF32's 2e-3\n", what, m);
        bad++;
      }
      if (m > moved) moved = m;
    } else if (kf_tensor_compare(&got, &io.outputs[i].t, atol, rt, what, &d)) {
      bad++;
    }
    kf_tensor_fini(&got);
  }
  if (tf32) {
    printf("%s %s: outputs moved %.3g (relative to their largest) by the TF32 rounding\n", mname, mode, moved);
    if (!(moved > 1e-5)) {
      fprintf(stderr, "FAIL: the TF32 operands left the outputs where fp64 puts them (%.3g)\n", moved);
      bad++;
    }
  }
  printf("%s %s: %d outputs, %d mismatched (atol %g rtol %g)\n", mname, mode, g->n_outputs, bad, atol,
         rtol);
  rc = bad ? 1 : 0;
done:
  if (rc && d.n_errors == 0) fprintf(stderr, "FAIL\n");
  for (int i = 0; i < vs.n_owned; i++) free(vs.owned[i]);
  free(vs.owned);
  free(vs.ptr);
  if (units)
    for (int i = 0; p && i < p->n_groups; i++) kf_unit_destroy(units[i]);
  free(units);
  kf_emu_destroy(emu);
  kf_io_fini(&io);
  kf_partition_destroy(p);
  kf_graph_destroy(g);
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: emu_check MODEL.pt2 FIXTURE.kfio|- WORKDIR MODE\n");
    return 2;
  }
  return run(argv[1], argv[2], argv[3], argv[4]);
}
