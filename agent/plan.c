/* agent/plan.c — kernel units and the partitioned, planned graph they
 * belong to serialised into the binary plan a module carries
 * (runtime/kfr_plan.h; include/kfuse/plan.h). The compile driver builds a
 * model's plan here, the judge a one-unit plan for a unit with library
 * steps (judge/plan.c), so it lives with the units, below both.
 *
 * Buffers: one per graph input and output, one per weight storage region
 * (tied weights share one), one for the whole arena (intermediates and the
 * scratch area after them). Every kernel argument is a buffer plus a byte
 * offset: the value's region in the arena (from the memory plan) plus its
 * own storage offset, so views cost nothing. Cubins are stored once per
 * distinct kernel unit, so repeated blocks share their code. The blob is
 * laid out and validated by the runtime's own plan writer
 * (runtime/kfr_plan_writer.h), so a plan the runtime would refuse never
 * leaves the compiler. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfr_plan.h"
#include "kfr_plan_writer.h"
#include "kfuse/plan.h"
#include "kfuse_runtime.h"

/* ---- building through the runtime's plan writer ---------------------------- */

typedef struct writer {
  kfr_writer *w;
  const kf_plan_input *in;
  kf_diag *diag;
  uint32_t arena_buf;
  uint32_t *weight_buf; /* per graph weight, UINT32_MAX when unused */
  uint32_t *input_buf, *output_buf;
  const kf_unit **module_units;
  uint32_t *module_index;
  int n_modules;
} writer;

static uint32_t dtype_code(kf_dtype t) {
  switch (t) {
  case KF_DTYPE_F32: return KFUSE_DTYPE_F32;
  case KF_DTYPE_F64: return KFUSE_DTYPE_F64;
  case KF_DTYPE_F16: return KFUSE_DTYPE_F16;
  case KF_DTYPE_BF16: return KFUSE_DTYPE_BF16;
  case KF_DTYPE_I64: return KFUSE_DTYPE_I64;
  case KF_DTYPE_I32: return KFUSE_DTYPE_I32;
  case KF_DTYPE_I16: return KFUSE_DTYPE_I16;
  case KF_DTYPE_I8: return KFUSE_DTYPE_I8;
  case KF_DTYPE_U8: return KFUSE_DTYPE_U8;
  case KF_DTYPE_BOOL: return KFUSE_DTYPE_BOOL;
  default: return 0;
  }
}

static void desc_of(const kf_type *t, kfr_tensor_desc *d) {
  kfr_tensor_desc_init(d, dtype_code(t->dtype), (uint32_t)t->rank, t->shape);
}

/* Buffer and byte offset of a value's first element. */
static kf_status locate(writer *w, const kf_value *v, uint32_t *buf, int64_t *off) {
  const kf_storage *s = &w->in->memplan->storage[v->id];
  int64_t es = (int64_t)kf_dtype_size(v->type.dtype);
  switch (s->kind) {
  case KF_STORAGE_INPUT:
    *buf = w->input_buf[s->index];
    *off = v->type.offset * es;
    return KF_OK;
  case KF_STORAGE_OUTPUT:
    *buf = w->output_buf[s->index];
    *off = v->type.offset * es;
    return KF_OK;
  case KF_STORAGE_WEIGHT:
    if (w->weight_buf[s->index] == UINT32_MAX) break;
    *buf = w->weight_buf[s->index];
    *off = v->type.offset * es;
    return KF_OK;
  case KF_STORAGE_ARENA:
    *buf = w->arena_buf;
    *off = s->offset + v->type.offset * es;
    return KF_OK;
  case KF_STORAGE_NONE: break;
  }
  const char *who = v->def ? v->def->name : w->in->graph->input_names[v->index];
  kf_diag_error(w->diag, "internal error: value '%s' has no storage for a kernel argument", who);
  return KF_ERR_INTERNAL;
}

static uint32_t module_of(writer *w, const kf_unit *u) {
  for (int i = 0; i < w->n_modules; i++)
    if (w->module_units[i] == u) return w->module_index[i];
  w->module_units[w->n_modules] = u;
  w->module_index[w->n_modules] = kfr_writer_module(w->w, u->cubin, u->cubin_bytes);
  return w->module_index[w->n_modules++];
}

static int64_t scratch_offset(const kf_memplan *mp, const kf_unit *u, int index) {
  int64_t off = mp->scratch_offset;
  for (int k = 0; k < index; k++) off += (u->scratch_bytes[k] + 255) / 256 * 256;
  return off;
}

/* Resolve a unit argument that must be a pointer (plus its byte offset). */
static kf_status arg_ptr(writer *w, const kf_group *g, const kf_unit *u, const kf_unit_arg *a,
                         uint32_t *buf, int64_t *off) {
  switch (a->kind) {
  case KF_UARG_INPUT:
  case KF_UARG_OUTPUT: {
    bool in = a->kind == KF_UARG_INPUT;
    int n = in ? g->n_inputs : g->n_outputs;
    if (a->index < 0 || a->index >= n) break;
    kf_status st = locate(w, in ? g->inputs[a->index] : g->outputs[a->index], buf, off);
    if (st == KF_OK) *off += a->i;
    return st;
  }
  case KF_UARG_SCRATCH:
    if (a->index < 0 || a->index >= u->n_scratch) break;
    *buf = w->arena_buf;
    *off = scratch_offset(w->in->memplan, u, a->index) + a->i;
    return KF_OK;
  default: break;
  }
  kf_diag_error(w->diag, "internal error: unit %s: a pointer argument (kind %d, index %d) names nothing",
                u->name ? u->name : "?", a->kind, a->index);
  return KF_ERR_INTERNAL;
}

static kf_status add_args(writer *w, const kf_group *g, const kf_unit *u, const kf_unit_step *s) {
  for (int i = 0; i < s->n_args; i++) {
    const kf_unit_arg *a = &s->args[i];
    switch (a->kind) {
    case KF_UARG_I64: kfr_writer_arg_i64(w->w, a->i); break;
    case KF_UARG_I32: kfr_writer_arg_i32(w->w, (int32_t)a->i); break;
    case KF_UARG_F32: kfr_writer_arg_f32(w->w, (float)a->f); break;
    case KF_UARG_F64: kfr_writer_arg_f64(w->w, a->f); break;
    case KF_UARG_NONE: kfr_writer_arg_none(w->w); break;
    default: {
      uint32_t buf;
      int64_t off;
      kf_status st = arg_ptr(w, g, u, a, &buf, &off);
      if (st) return st;
      kfr_writer_arg_ptr(w->w, buf, off);
    }
    }
  }
  return KF_OK;
}

static void gemm_of(const kf_unit_gemm *q, kfr_gemm *r) {
  memset(r, 0, sizeof *r);
  r->m = q->m;
  r->n = q->n;
  r->k = q->k;
  r->batch = q->batch;
  r->lda = q->lda;
  r->ldb = q->ldb;
  r->ldc = q->ldc;
  r->ldd = q->ldd;
  r->stride_a = q->stride_a;
  r->stride_b = q->stride_b;
  r->stride_c = q->stride_c;
  r->stride_d = q->stride_d;
  r->trans_a = q->trans_a;
  r->trans_b = q->trans_b;
  r->has_c = q->has_c;
  r->dtype = dtype_code(q->dtype);
  r->compute = (uint32_t)q->compute;
  r->epilogue = (uint32_t)q->epilogue;
  r->alpha = q->alpha;
  r->beta = q->beta;
  r->workspace_bytes = (uint64_t)q->workspace_bytes;
}

static void conv_of(const kf_unit_conv *q, kfr_conv *r) {
  memset(r, 0, sizeof *r);
  r->nd = (uint32_t)q->nd;
  r->layout = (uint32_t)q->layout;
  r->transposed = q->transposed ? 1u : 0u;
  r->dtype = dtype_code(q->dtype);
  r->compute = (uint32_t)q->compute;
  r->activation = (uint32_t)q->activation;
  r->has_bias = q->has_bias;
  r->has_z = q->has_z;
  r->n = q->n;
  r->c = q->c;
  r->k = q->k;
  r->groups = q->groups;
  for (int d = 0; d < 3; d++) {
    r->in[d] = q->in[d];
    r->filter[d] = q->filter[d];
    r->out[d] = q->out[d];
    r->pad[d] = q->pad[d];
    r->stride[d] = q->stride[d];
    r->dilation[d] = q->dilation[d];
  }
  r->alpha1 = q->alpha1;
  r->alpha2 = q->alpha2;
  r->workspace_bytes = (uint64_t)q->workspace_bytes;
}

/* The embedded weights image: every used storage region at its offset. */
static kf_status weights_image(const kf_plan_input *in, unsigned char **out, kf_diag *diag) {
  const kf_graph *g = in->graph;
  unsigned char *img = calloc(1, (size_t)(in->weights_bytes ? in->weights_bytes : 1));
  if (!img) return KF_ERR_NOMEM;
  for (int i = 0; i < g->n_weights; i++) {
    if (in->weight_offset[i] < 0) continue;
    const kf_weight *wt = &g->weights[i];
    const void *data;
    int64_t n;
    kf_status st;
    if (!g->store.get) {
      kf_diag_error(diag, "weight '%s' has no data (the model was read without weights)", wt->fqn);
      free(img);
      return KF_ERR_ARG;
    }
    if ((st = g->store.get(g->store.impl, wt->fqn, &data, &n, diag))) {
      free(img);
      return st;
    }
    if (n < wt->storage_bytes) {
      kf_diag_error(diag, "weight '%s': the store holds %lld bytes, the graph expects %lld", wt->fqn,
                    (long long)n, (long long)wt->storage_bytes);
      free(img);
      return KF_ERR_FORMAT;
    }
    memcpy(img + in->weight_offset[i], data, (size_t)wt->storage_bytes);
  }
  *out = img;
  return KF_OK;
}

kf_status kf_plan_build(const kf_plan_input *in, void **blob_out, size_t *bytes_out, kf_diag *diag) {
  *blob_out = NULL;
  *bytes_out = 0;
  const kf_graph *g = in->graph;
  const kf_partition *p = in->partition;
  const kf_memplan *mp = in->memplan;
  writer w;
  memset(&w, 0, sizeof w);
  w.in = in;
  w.diag = diag;
  unsigned char *image = NULL;
  kf_status st = KF_OK;
  w.w = kfr_writer_create((uint32_t)in->target.sm);
  w.weight_buf = malloc(sizeof(uint32_t) * (size_t)(g->n_weights + 1));
  w.input_buf = malloc(sizeof(uint32_t) * (size_t)(g->n_inputs + 1));
  w.output_buf = malloc(sizeof(uint32_t) * (size_t)(g->n_outputs + 1));
  w.module_units = calloc((size_t)p->n_groups + 1, sizeof *w.module_units);
  w.module_index = calloc((size_t)p->n_groups + 1, sizeof *w.module_index);
  if (!w.w || !w.weight_buf || !w.input_buf || !w.output_buf || !w.module_units || !w.module_index) {
    st = KF_ERR_NOMEM;
    goto done;
  }
  kfr_writer_set_model_name(w.w, g->name);
  kfr_writer_set_arena(w.w, (uint64_t)(mp->scratch_offset + mp->scratch_bytes));
  if (in->embed_weights) {
    if ((st = weights_image(in, &image, diag))) goto done;
    kfr_writer_set_weights_embedded(w.w, image, (uint64_t)in->weights_bytes);
  } else {
    kfr_writer_set_weights_file(w.w, in->weights_path, (uint64_t)in->weights_bytes,
                                in->weights_hash, in->weights_beside_module);
  }
  for (int i = 0; i < g->n_inputs; i++) {
    kfr_tensor_desc d;
    desc_of(&g->inputs[i]->type, &d);
    w.input_buf[i] = kfr_writer_input(w.w, (uint32_t)i, g->input_names[i], &d);
  }
  for (int i = 0; i < g->n_outputs; i++) {
    kfr_tensor_desc d;
    char name[32];
    desc_of(&g->outputs[i]->type, &d);
    snprintf(name, sizeof name, "out%d", i);
    w.output_buf[i] = kfr_writer_output(w.w, (uint32_t)i, name, &d);
  }
  for (int i = 0; i < g->n_weights; i++) {
    w.weight_buf[i] = UINT32_MAX;
    if (in->weight_offset[i] < 0) continue;
    for (int j = 0; j < i; j++) /* tied weights share their region */
      if (in->weight_offset[j] == in->weight_offset[i]) w.weight_buf[i] = w.weight_buf[j];
    if (w.weight_buf[i] == UINT32_MAX)
      w.weight_buf[i] = kfr_writer_weight(w.w, (uint64_t)in->weight_offset[i],
                                          (uint64_t)g->weights[i].storage_bytes, g->weights[i].fqn, NULL);
  }
  w.arena_buf = kfr_writer_arena(w.w, 0, (uint64_t)(mp->scratch_offset + mp->scratch_bytes), "arena", NULL);

  for (int gi = 0; gi < p->n_groups && !st; gi++) {
    const kf_group *grp = &p->groups[gi];
    const kf_unit *u = in->units[gi];
    if (grp->kind == KF_GROUP_VIEW) continue;
    if (!u) {
      kf_diag_error(diag, "internal error: group %d has no kernel unit", grp->id);
      st = KF_ERR_INTERNAL;
      break;
    }
    for (int si = 0; si < u->n_steps && !st; si++) {
      const kf_unit_step *s = &u->steps[si];
      char name[300];
      snprintf(name, sizeof name, "group %d (%s) step %d", grp->id, u->name ? u->name : "?", si);
      switch (s->kind) {
      case KF_USTEP_LAUNCH: {
        if (!u->cubin || !s->kernel) {
          kf_diag_error(diag, "internal error: unit %s launches without a compiled kernel", u->name);
          st = KF_ERR_INTERNAL;
          break;
        }
        uint32_t k = kfr_writer_kernel(w.w, module_of(&w, u), s->kernel, s->smem > 48 * 1024 ? s->smem : 0);
        kfr_writer_launch(w.w, k, s->grid, s->block, s->smem, name);
        st = add_args(&w, grp, u, s);
        break;
      }
      case KF_USTEP_GEMM: {
        kfr_gemm q;
        gemm_of(&s->gemm, &q);
        kfr_writer_gemm(w.w, &q, name);
        st = add_args(&w, grp, u, s);
        break;
      }
      case KF_USTEP_CONV: {
        kfr_conv q;
        conv_of(&s->conv, &q);
        kfr_writer_conv(w.w, &q, name);
        st = add_args(&w, grp, u, s);
        break;
      }
      case KF_USTEP_MEMSET: {
        uint32_t buf;
        int64_t off;
        if (s->n_args != 2 || s->args[1].kind != KF_UARG_I64) {
          kf_diag_error(diag, "internal error: unit %s: a memset takes a buffer and a byte count", u->name);
          st = KF_ERR_INTERNAL;
          break;
        }
        if ((st = arg_ptr(&w, grp, u, &s->args[0], &buf, &off))) break;
        kfr_writer_memset(w.w, name, buf, off, s->args[1].i);
        break;
      }
      case KF_USTEP_COPY: {
        uint32_t db, sb;
        int64_t doff, soff;
        if (s->n_args != 3 || s->args[2].kind != KF_UARG_I64) {
          kf_diag_error(diag, "internal error: unit %s: a copy takes two buffers and a byte count", u->name);
          st = KF_ERR_INTERNAL;
          break;
        }
        if ((st = arg_ptr(&w, grp, u, &s->args[0], &db, &doff)) ||
            (st = arg_ptr(&w, grp, u, &s->args[1], &sb, &soff)))
          break;
        kfr_writer_copy(w.w, name, db, doff, sb, soff, s->args[2].i);
        break;
      }
      default:
        kf_diag_error(diag, "internal error: unit %s has a step of kind %d", u->name, s->kind);
        st = KF_ERR_INTERNAL;
      }
    }
  }
  if (st) goto done;
  char msg[512];
  int rc = kfr_writer_finish(w.w, blob_out, bytes_out, msg, sizeof msg);
  if (rc != KFUSE_OK) {
    kf_diag_error(diag, "internal error: the plan does not validate: %s", msg);
    st = rc == KFUSE_ENOMEM ? KF_ERR_NOMEM : KF_ERR_INTERNAL;
  }
done:
  kfr_writer_destroy(w.w);
  free(image);
  free(w.weight_buf);
  free(w.input_buf);
  free(w.output_buf);
  free(w.module_units);
  free(w.module_index);
  return st;
}
