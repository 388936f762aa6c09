/* tests/emu/emu_check.c — checks the built-in kernels' numerics without a
 * GPU: partitions a fixture, builds a unit per group, compiles all unit
 * sources as host C++ with the CUDA emulation of tests/emu/kf_emu.h (real
 * threads per block, real barriers for __syncthreads and warp shuffles),
 * runs the steps on the CPU in group order — launches through the
 * emulator, GEMM steps with a CPU GEMM following kfr_gemm's row-major
 * contract, cuDNN CONV steps with a CPU convolution following kfr_conv's
 * (y = act(alpha1 conv + alpha2 z + bias), dense operands) — and compares the graph outputs with the outputs PyTorch
 * recorded in the fixture's .kfio.
 *
 *   emu_check MODEL FIXTURE.kfio|- TEMPLATE_DIR EMU_HEADER WORKDIR MODE
 *   MODE: fused (default precision, tolerance max(fixture's, 1e-4)),
 *         fused-nocudnn (the same without cuDNN steps: convolutions as
 *         im2col + GEMM or direct kernels), fused-chunked (attention's
 *         GEMM lowering with a 16 KiB score scratch: many chunks),
 *         perop-fp64 (one group per op, computed in fp64: the fixture's
 *         own tolerance), or fused-oob (every integer input set out of
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
#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfuse/agent.h"
#include "kfuse/compile.h"
#include "kfuse/frontend.h"
#include "kfuse/interp.h"
#include "kfuse/ir.h"
#include "kfuse/partition.h"
#include "kfr_plan.h"

typedef int (*launch_fn)(const char *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                         void **, int);

static int64_t extent(const kf_type *t) {
  if (t->kind != KF_TYPE_TENSOR) return 0;
  int64_t e = t->offset + 1;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] == 0) return t->offset;
    e += (t->shape[i] - 1) * t->strides[i];
  }
  return e;
}

static double get(kf_dtype dt, const void *p, int64_t i) {
  kf_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = dt;
  t.rank = 1;
  t.shape[0] = i + 1;
  t.data = (void *)p;
  return kf_tensor_get(&t, i);
}

static void set(kf_dtype dt, void *p, int64_t i, double v) {
  kf_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = dt;
  t.rank = 1;
  t.shape[0] = i + 1;
  t.data = p;
  kf_tensor_set(&t, i, v);
}

static double gelu_tanh(double x) {
  return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

/* kfr_gemm's contract, in double */
static void cpu_gemm(const kf_unit_gemm *q, const void *A, const void *B, const void *bias,
                     kf_dtype bias_dt, void *D) {
  for (int64_t b = 0; b < q->batch; b++)
    for (int64_t i = 0; i < q->m; i++)
      for (int64_t j = 0; j < q->n; j++) {
        double acc = 0;
        for (int64_t k = 0; k < q->k; k++) {
          int64_t ia = b * q->stride_a + (q->trans_a ? k * q->lda + i : i * q->lda + k);
          int64_t ib = b * q->stride_b + (q->trans_b ? j * q->ldb + k : k * q->ldb + j);
          acc += get(q->dtype, A, ia) * get(q->dtype, B, ib);
        }
        double v = q->alpha * acc;
        if (q->epilogue == KFR_EPI_BIAS || q->epilogue == KFR_EPI_RELU_BIAS ||
            q->epilogue == KFR_EPI_GELU_BIAS)
          v += get(bias_dt, bias, j);
        if (q->epilogue == KFR_EPI_RELU_BIAS || q->epilogue == KFR_EPI_RELU) v = v > 0 ? v : 0;
        if (q->epilogue == KFR_EPI_GELU_BIAS || q->epilogue == KFR_EPI_GELU) v = gelu_tanh(v);
        set(q->dtype, D, b * q->stride_d + i * q->ldd + j, v);
      }
}

/* kfr_conv's contract, in double: cross-correlation of dense x [n, c,
 * in...] with w [k, c/groups, filter...] into y [n, k, out...] (NHWC
 * layout: x, y, z channels-last, w KRSC), then
 * alpha1 * conv + alpha2 * z + bias and the activation */
static void cpu_conv(const kf_unit_conv *q, const void *X, const void *W, const void *bias,
                     const void *Z, void *Y) {
  kf_dtype dt = q->dtype;
  bool nhwc = q->layout == KFR_CONV_NHWC;
  int64_t cg = q->c / q->groups, kg = q->k / q->groups;
  const int64_t *I = q->in, *F = q->filter, *O = q->out;
  int64_t isz = I[0] * I[1] * I[2], fsz = F[0] * F[1] * F[2], osz = O[0] * O[1] * O[2];
  for (int64_t n = 0; n < q->n; n++)
    for (int64_t k = 0; k < q->k; k++)
      for (int64_t o0 = 0; o0 < O[0]; o0++)
        for (int64_t o1 = 0; o1 < O[1]; o1++)
          for (int64_t o2 = 0; o2 < O[2]; o2++) {
            double acc = 0;
            int64_t g = k / kg;
            if (q->transposed) { /* x [n, c, in], w [c, k/g, f]: y at i*s - p + f*d */
              for (int64_t ci = 0; ci < cg; ci++)
                for (int64_t f0 = 0; f0 < F[0]; f0++)
                  for (int64_t f1 = 0; f1 < F[1]; f1++)
                    for (int64_t f2 = 0; f2 < F[2]; f2++) {
                      int64_t t0 = o0 + q->pad[0] - f0 * q->dilation[0];
                      int64_t t1 = o1 + q->pad[1] - f1 * q->dilation[1];
                      int64_t t2 = o2 + q->pad[2] - f2 * q->dilation[2];
                      if (t0 < 0 || t1 < 0 || t2 < 0 || t0 % q->stride[0] || t1 % q->stride[1] ||
                          t2 % q->stride[2])
                        continue;
                      int64_t i0 = t0 / q->stride[0], i1 = t1 / q->stride[1], i2 = t2 / q->stride[2];
                      if (i0 >= I[0] || i1 >= I[1] || i2 >= I[2]) continue;
                      int64_t c = g * cg + ci;
                      int64_t xi = (n * q->c + c) * isz + (i0 * I[1] + i1) * I[2] + i2;
                      int64_t wi = (c * kg + k % kg) * fsz + (f0 * F[1] + f1) * F[2] + f2;
                      if (nhwc) { /* x N(D)HWC, w [c, f..., k/g] */
                        xi = (((n * I[0] + i0) * I[1] + i1) * I[2] + i2) * q->c + c;
                        wi = (((c * F[0] + f0) * F[1] + f1) * F[2] + f2) * kg + k % kg;
                      }
                      acc += get(dt, X, xi) * get(dt, W, wi);
                    }
              int64_t yi = nhwc ? (((n * O[0] + o0) * O[1] + o1) * O[2] + o2) * q->k + k
                                : (n * q->k + k) * osz + (o0 * O[1] + o1) * O[2] + o2;
              set(dt, Y, yi, q->alpha1 * acc);
              continue;
            }
            for (int64_t ci = 0; ci < cg; ci++)
              for (int64_t f0 = 0; f0 < F[0]; f0++)
                for (int64_t f1 = 0; f1 < F[1]; f1++)
                  for (int64_t f2 = 0; f2 < F[2]; f2++) {
                    int64_t i0 = o0 * q->stride[0] - q->pad[0] + f0 * q->dilation[0];
                    int64_t i1 = o1 * q->stride[1] - q->pad[1] + f1 * q->dilation[1];
                    int64_t i2 = o2 * q->stride[2] - q->pad[2] + f2 * q->dilation[2];
                    if (i0 < 0 || i0 >= I[0] || i1 < 0 || i1 >= I[1] || i2 < 0 || i2 >= I[2]) continue;
                    int64_t xi = (n * q->c + g * cg + ci) * isz + (i0 * I[1] + i1) * I[2] + i2;
                    int64_t wi = (k * cg + ci) * fsz + (f0 * F[1] + f1) * F[2] + f2;
                    if (nhwc) { /* x N(D)HWC, w K(T)RSC */
                      xi = (((n * I[0] + i0) * I[1] + i1) * I[2] + i2) * q->c + g * cg + ci;
                      wi = (((k * F[0] + f0) * F[1] + f1) * F[2] + f2) * cg + ci;
                    }
                    acc += get(dt, X, xi) * get(dt, W, wi);
                  }
            int64_t yi = nhwc ? (((n * O[0] + o0) * O[1] + o1) * O[2] + o2) * q->k + k
                              : (n * q->k + k) * osz + (o0 * O[1] + o1) * O[2] + o2;
            double v = q->alpha1 * acc;
            if (q->has_z) v += q->alpha2 * get(dt, Z, yi);
            if (q->has_bias) v += get(dt, bias, k);
            if (q->activation == KFR_ACT_RELU) v = v > 0 || isnan(v) ? v : 0;
            set(dt, Y, yi, v);
          }
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

static int run(const char *model, const char *kfio, const char *tdir, const char *hdr,
               const char *work, const char *mode) {
  kf_diag d;
  kf_diag_init(&d, NULL, NULL);
  bool fp64 = strcmp(mode, "perop-fp64") == 0;
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
            "fused-variants, fused-convbatch, perop-fp64)\n",
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
  void *so = NULL;
  int rc = 1;
  bool use_interp = strcmp(kfio, "-") == 0;
  if (kf_model_load(model, &lo, &g, &d)) goto done;
  if (!use_interp && kf_io_read(kfio, &io, &d)) goto done;
  /* the reference from the graph as loaded: the compile passes' rewrites
   * are under test too */
  if (use_interp && make_reference(g, &io, &d)) goto done;
  if (kf_pass_run_pipeline(g, fp64 ? kf_compile_reference_pipeline() : kf_compile_pipeline(), true, &d))
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

  /* ---- units, and one host C++ file for all of them */
  char base[512], cpp[600], sopath[600];
  const char *mname = strrchr(model, '/') ? strrchr(model, '/') + 1 : model;
  snprintf(base, sizeof base, "%s/%s.%s", work, mname, mode);
  snprintf(cpp, sizeof cpp, "%s.cpp", base);
  snprintf(sopath, sizeof sopath, "%s.so", base);
  FILE *f = fopen(cpp, "w");
  if (!f) {
    fprintf(stderr, "cannot write %s\n", cpp);
    goto done;
  }
  kf_strbuf names;
  kf_strbuf_init(&names);
  for (int i = 0; i < p->n_groups; i++) {
    const kf_group *grp = &p->groups[i];
    if (grp->kind == KF_GROUP_VIEW) continue;
    if (kf_builtin_unit(p, grp, &bo, &units[i], &d)) {
      fclose(f);
      kf_strbuf_fini(&names);
      goto done;
    }
    if (units[i]->source) fprintf(f, "%s\n", units[i]->source);
    for (int s = 0; s < units[i]->n_steps; s++)
      if (units[i]->steps[s].kind == KF_USTEP_LAUNCH)
        kf_strbuf_printf(&names, "  if (!strcmp(n, \"%s\")) return kf_emu::run(&%s, g, b, a, na);\n",
                         units[i]->steps[s].kernel, units[i]->steps[s].kernel);
  }
  /* a model whose every group is a library step writes no kernel source:
   * the index flag's definition still comes from the templates' header */
  bool any_source = false;
  for (int i = 0; i < p->n_groups; i++) any_source |= units[i] && units[i]->source;
  if (!any_source) fprintf(f, "#include \"kf_common.cuh\"\n");
  fprintf(f, "extern \"C\" int kf_emu_launch(const char *n, unsigned gx, unsigned gy, unsigned gz,\n"
             "    unsigned bx, unsigned by, unsigned bz, void **a, int na) {\n"
             "  dim3 g, b; g.x = gx; g.y = gy; g.z = gz; b.x = bx; b.y = by; b.z = bz;\n%s"
             "  return -1;\n}\n", names.data ? names.data : "");
  kf_strbuf_fini(&names);
  if (fclose(f)) goto done;
  char cmd[4096];
  const char *cxx = getenv("KFUSE_EMU_CXX");
  snprintf(cmd, sizeof cmd,
           "'%s' -std=c++17 -O1 -shared -fPIC -w -DKF_EMU -include '%s' -I '%s' '%s' -o '%s'",
           cxx && *cxx ? cxx : "g++", hdr, tdir, cpp, sopath);
  if (system(cmd) != 0) {
    fprintf(stderr, "FAIL: host compile failed: %s\n", cmd);
    goto done;
  }
  so = dlopen(sopath, RTLD_NOW | RTLD_LOCAL);
  launch_fn launch = so ? (launch_fn)dlsym(so, "kf_emu_launch") : NULL;
  const unsigned *index_flag = so ? (const unsigned *)dlsym(so, "kf_index_error") : NULL;
  if (!launch || !index_flag) {
    fprintf(stderr, "FAIL: dlopen %s: %s\n", sopath, dlerror());
    goto done;
  }
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
    const kf_unit *u = units[gi];
    void **scratch = calloc((size_t)u->n_scratch + 1, sizeof *scratch);
    for (int s = 0; s < u->n_scratch; s++) scratch[s] = own(&vs, (size_t)u->scratch_bytes[s]);
    for (int s = 0; s < u->n_steps; s++) {
      const kf_unit_step *st = &u->steps[s];
      void *args[64] = {0};
      long long imm[64] = {0};
      for (int a = 0; a < st->n_args && a < 64; a++) {
        const kf_unit_arg *x = &st->args[a];
        switch (x->kind) {
        case KF_UARG_INPUT: args[a] = (char *)vs.ptr[grp->inputs[x->index]->id] + x->i; break;
        case KF_UARG_OUTPUT: args[a] = (char *)vs.ptr[grp->outputs[x->index]->id] + x->i; break;
        case KF_UARG_SCRATCH: args[a] = (char *)scratch[x->index] + x->i; break;
        case KF_UARG_I64:
          imm[a] = x->i; /* scalars by address, as kernelParams */
          args[a] = &imm[a];
          break;
        default: args[a] = NULL; break;
        }
      }
      if (st->kind == KF_USTEP_LAUNCH) {
        int r = launch(st->kernel, st->grid[0], st->grid[1], st->grid[2], st->block[0], st->block[1],
                       st->block[2], args, st->n_args);
        if (r) {
          fprintf(stderr, "FAIL: launch %s: %d\n", st->kernel, r);
          free(scratch);
          goto done;
        }
      } else if (st->kind == KF_USTEP_GEMM) {
        kf_dtype bdt = st->gemm.dtype;
        if (st->args[4].kind == KF_UARG_INPUT) bdt = grp->inputs[st->args[4].index]->type.dtype;
        cpu_gemm(&st->gemm, args[0], args[1], args[4], bdt, args[3]);
      } else if (st->kind == KF_USTEP_CONV) {
        cpu_conv(&st->conv, args[0], args[1], args[3], args[4], args[2]);
      } else if (st->kind == KF_USTEP_COPY) {
        memcpy(args[0], args[1], (size_t)st->args[2].i);
      } else if (st->kind == KF_USTEP_MEMSET) {
        memset(args[0], 0, (size_t)st->args[1].i);
      }
    }
    free(scratch);
  }

  /* ---- the out-of-range index flag */
  if (oob) {
    printf("%s %s: index flag %u\n", mname, mode, *index_flag);
    rc = *index_flag ? 0 : 1;
    if (rc) fprintf(stderr, "FAIL: out-of-range indices did not set kf_index_error\n");
    goto done;
  }
  if (*index_flag) {
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
      kf_tensor_set(&got, e, get(v->type.dtype, vs.ptr[v->id], off));
      for (int k = got.rank - 1; k >= 0; k--) {
        if (++idx[k] < got.shape[k]) break;
        idx[k] = 0;
      }
    }
    char what[300];
    snprintf(what, sizeof what, "%s output %d (%s)", mname, i, io.outputs[i].name);
    double rt = rtol;
    if (v->type.dtype == KF_DTYPE_F16 || v->type.dtype == KF_DTYPE_BF16) rt = rt > 1e-2 ? rt : 1e-2;
    if (kf_tensor_compare(&got, &io.outputs[i].t, atol, rt, what, &d)) bad++;
    kf_tensor_fini(&got);
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
  if (so) dlclose(so);
  kf_io_fini(&io);
  kf_partition_destroy(p);
  kf_graph_destroy(g);
  return rc;
}

int main(int argc, char **argv) {
  if (argc != 7) {
    fprintf(stderr, "usage: emu_check MODEL.pt2 FIXTURE.kfio TEMPLATE_DIR EMU_HEADER WORKDIR MODE\n");
    return 2;
  }
  return run(argv[1], argv[2], argv[3], argv[4], argv[5], argv[6]);
}
