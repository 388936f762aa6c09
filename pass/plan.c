/* pass/plan.c — serialises a compiled model into the binary plan
 * (runtime/kfr_plan.h) and writes headers for object modules.
 *
 * Buffers: one per graph input and output, one per weight storage region
 * (tied weights share one), one for the whole arena (intermediates and the
 * scratch area after them). Every kernel argument is a buffer plus a byte
 * offset: the value's region in the arena (from the memory plan) plus its
 * own storage offset, so views cost nothing. Cubins are stored once per
 * distinct kernel unit, so repeated blocks share their code. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfr_plan.h"
#include "kfuse_runtime.h"
#include "plan_int.h"

extern const unsigned char kf_runtime_header_text[];
extern const unsigned long kf_runtime_header_text_len;

/* ---- a growable table ---------------------------------------------------- */

typedef struct vec {
  unsigned char *data;
  size_t len, cap;
  bool failed;
} vec;

static size_t vec_push(vec *v, const void *p, size_t n) {
  if (v->failed) return 0;
  if (v->len + n > v->cap) {
    size_t cap = v->cap ? v->cap : 1024;
    while (cap < v->len + n) cap *= 2;
    unsigned char *d = realloc(v->data, cap);
    if (!d) {
      v->failed = true;
      return 0;
    }
    v->data = d;
    v->cap = cap;
  }
  size_t at = v->len;
  if (p)
    memcpy(v->data + at, p, n);
  else
    memset(v->data + at, 0, n);
  v->len += n;
  return at;
}

static void vec_align(vec *v, size_t a) {
  size_t pad = (a - v->len % a) % a;
  if (pad) vec_push(v, NULL, pad);
}

typedef struct writer {
  vec buffers, modules, kernels, steps, args, strings, blobs;
  const kf_plan_input *in;
  kf_diag *diag;
  int arena_buf;
  int *weight_buf;  /* per graph weight */
  int *input_buf, *output_buf;
  const kf_unit **module_units; /* unit -> module index, by position */
  int n_modules;
} writer;

static uint32_t str_add(writer *w, const char *s) {
  if (!s) s = "";
  return (uint32_t)vec_push(&w->strings, s, strlen(s) + 1);
}

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
  memset(d, 0, sizeof *d);
  d->dtype = dtype_code(t->dtype);
  d->rank = (uint32_t)t->rank;
  for (int i = 0; i < t->rank; i++) {
    d->shape[i] = t->shape[i];
    d->strides[i] = t->strides[i];
  }
}

static int add_buffer(writer *w, uint32_t kind, uint32_t index, uint64_t offset, uint64_t nbytes,
                      const char *name, const kf_type *t) {
  kfr_buffer b;
  memset(&b, 0, sizeof b);
  b.kind = kind;
  b.index = index;
  b.offset = offset;
  b.nbytes = nbytes;
  b.name = str_add(w, name);
  if (t) desc_of(t, &b.desc);
  vec_push(&w->buffers, &b, sizeof b);
  return (int)(w->buffers.len / sizeof b) - 1;
}

static int64_t value_bytes(const kf_type *t) {
  return kf_type_numel(t) * (int64_t)kf_dtype_size(t->dtype);
}

/* Buffer and byte offset of a value's first element. */
static kf_status locate(writer *w, const kf_value *v, int *buf, int64_t *off) {
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
    if (w->weight_buf[s->index] < 0) break;
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

static int module_of(writer *w, const kf_unit *u) {
  for (int i = 0; i < w->n_modules; i++)
    if (w->module_units[i] == u) return i;
  vec_align(&w->blobs, 256);
  kfr_module m = {(uint64_t)w->blobs.len, (uint64_t)u->cubin_bytes};
  vec_push(&w->blobs, u->cubin, u->cubin_bytes);
  vec_push(&w->modules, &m, sizeof m);
  w->module_units[w->n_modules] = u;
  return w->n_modules++;
}

static int kernel_of(writer *w, int module, const char *name) {
  size_t n = w->kernels.len / sizeof(kfr_kernel);
  for (size_t i = 0; i < n; i++) {
    const kfr_kernel *k = (const kfr_kernel *)w->kernels.data + i;
    if ((int)k->module == module && strcmp((const char *)w->strings.data + k->name, name) == 0)
      return (int)i;
  }
  kfr_kernel k = {(uint32_t)module, str_add(w, name), 0, 0};
  vec_push(&w->kernels, &k, sizeof k);
  return (int)n;
}

static kf_status add_args(writer *w, const kf_group *g, const kf_unit *u, const kf_unit_step *s,
                          uint32_t *first, kf_diag *diag) {
  *first = (uint32_t)(w->args.len / sizeof(kfr_arg));
  const kf_memplan *mp = w->in->memplan;
  for (int i = 0; i < s->n_args; i++) {
    const kf_unit_arg *a = &s->args[i];
    kfr_arg r;
    memset(&r, 0, sizeof r);
    switch (a->kind) {
    case KF_UARG_INPUT:
    case KF_UARG_OUTPUT: {
      bool in = a->kind == KF_UARG_INPUT;
      int n = in ? g->n_inputs : g->n_outputs;
      if (a->index < 0 || a->index >= n) {
        kf_diag_error(diag, "internal error: unit %s: argument %d names group %s %d of %d", u->name, i,
                      in ? "input" : "output", a->index, n);
        return KF_ERR_INTERNAL;
      }
      int buf;
      int64_t off;
      kf_status st = locate(w, in ? g->inputs[a->index] : g->outputs[a->index], &buf, &off);
      if (st) return st;
      r.kind = KFR_ARG_PTR;
      r.buffer = (uint32_t)buf;
      r.offset = off;
      break;
    }
    case KF_UARG_SCRATCH: {
      if (a->index < 0 || a->index >= u->n_scratch) {
        kf_diag_error(diag, "internal error: unit %s: scratch %d of %d", u->name, a->index, u->n_scratch);
        return KF_ERR_INTERNAL;
      }
      int64_t off = mp->scratch_offset;
      for (int k = 0; k < a->index; k++) off += (u->scratch_bytes[k] + 255) / 256 * 256;
      r.kind = KFR_ARG_PTR;
      r.buffer = (uint32_t)w->arena_buf;
      r.offset = off;
      break;
    }
    case KF_UARG_I64: r.kind = KFR_ARG_I64; r.offset = a->i; break;
    case KF_UARG_I32: r.kind = KFR_ARG_I32; r.offset = a->i; break;
    case KF_UARG_F32: r.kind = KFR_ARG_F32; r.f = a->f; break;
    case KF_UARG_F64: r.kind = KFR_ARG_F64; r.f = a->f; break;
    case KF_UARG_NONE: r.kind = KFR_ARG_NONE; break;
    default:
      kf_diag_error(diag, "internal error: unit %s: argument %d has kind %d", u->name, i, a->kind);
      return KF_ERR_INTERNAL;
    }
    vec_push(&w->args, &r, sizeof r);
  }
  return KF_OK;
}

kf_status kf_plan_build(const kf_plan_input *in, void **blob_out, size_t *bytes_out, kf_diag *diag) {
  *blob_out = NULL;
  *bytes_out = 0;
  const kf_graph *g = in->graph;
  const kf_partition *p = in->partition;
  writer w;
  memset(&w, 0, sizeof w);
  w.in = in;
  w.diag = diag;
  kf_status st = KF_OK;
  w.weight_buf = malloc(sizeof(int) * (size_t)(g->n_weights + 1));
  w.input_buf = malloc(sizeof(int) * (size_t)(g->n_inputs + 1));
  w.output_buf = malloc(sizeof(int) * (size_t)(g->n_outputs + 1));
  w.module_units = calloc((size_t)p->n_groups + 1, sizeof *w.module_units);
  if (!w.weight_buf || !w.input_buf || !w.output_buf || !w.module_units) {
    st = KF_ERR_NOMEM;
    goto done;
  }
  str_add(&w, ""); /* offset 0 is the empty string */

  for (int i = 0; i < g->n_inputs; i++)
    w.input_buf[i] = add_buffer(&w, KFR_BUF_INPUT, (uint32_t)i, 0,
                                (uint64_t)value_bytes(&g->inputs[i]->type), g->input_names[i],
                                &g->inputs[i]->type);
  for (int i = 0; i < g->n_outputs; i++) {
    char name[32];
    snprintf(name, sizeof name, "out%d", i);
    w.output_buf[i] = add_buffer(&w, KFR_BUF_OUTPUT, (uint32_t)i, 0,
                                 (uint64_t)value_bytes(&g->outputs[i]->type), name,
                                 &g->outputs[i]->type);
  }
  /* embedded weights go first in the blob section, so their offsets are
   * known before the cubins are appended */
  int64_t wbase = 0;
  if (in->embed_weights && in->weights_bytes > 0) {
    vec_align(&w.blobs, 256);
    wbase = (int64_t)w.blobs.len;
    vec_push(&w.blobs, NULL, (size_t)in->weights_bytes);
    if (w.blobs.failed) {
      st = KF_ERR_NOMEM;
      goto done;
    }
    for (int i = 0; i < g->n_weights; i++) {
      if (in->weight_offset[i] < 0) continue;
      const kf_weight *wt = &g->weights[i];
      const void *data;
      int64_t n;
      if (!g->store.get) {
        kf_diag_error(diag, "weight '%s' has no data (the model was read without weights)", wt->fqn);
        st = KF_ERR_ARG;
        goto done;
      }
      if ((st = g->store.get(g->store.impl, wt->fqn, &data, &n, diag))) goto done;
      if (n < wt->storage_bytes) {
        kf_diag_error(diag, "weight '%s': the store holds %lld bytes, the graph expects %lld", wt->fqn,
                      (long long)n, (long long)wt->storage_bytes);
        st = KF_ERR_FORMAT;
        goto done;
      }
      memcpy(w.blobs.data + wbase + in->weight_offset[i], data, (size_t)wt->storage_bytes);
    }
  }
  for (int i = 0; i < g->n_weights; i++) {
    w.weight_buf[i] = -1;
    if (in->weight_offset[i] < 0) continue;
    for (int j = 0; j < i; j++)
      if (in->weight_offset[j] == in->weight_offset[i]) w.weight_buf[i] = w.weight_buf[j];
    if (w.weight_buf[i] >= 0) continue;
    w.weight_buf[i] = add_buffer(&w, KFR_BUF_WEIGHT, (uint32_t)i,
                                 (uint64_t)(wbase + in->weight_offset[i]),
                                 (uint64_t)g->weights[i].storage_bytes, g->weights[i].fqn, NULL);
  }
  w.arena_buf = add_buffer(&w, KFR_BUF_ARENA, 0, 0,
                           (uint64_t)(in->memplan->scratch_offset + in->memplan->scratch_bytes),
                           "arena", NULL);

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
      kfr_step r;
      memset(&r, 0, sizeof r);
      char name[300];
      snprintf(name, sizeof name, "group %d (%s) step %d", grp->id, u->name ? u->name : "?", si);
      r.name = str_add(&w, name);
      r.n_args = (uint32_t)s->n_args;
      if ((st = add_args(&w, grp, u, s, &r.first_arg, diag))) break;
      switch (s->kind) {
      case KF_USTEP_LAUNCH:
        if (!u->cubin || !s->kernel) {
          kf_diag_error(diag, "internal error: unit %s launches without a compiled kernel", u->name);
          st = KF_ERR_INTERNAL;
          break;
        }
        r.kind = KFR_STEP_LAUNCH;
        r.kernel = (uint32_t)kernel_of(&w, module_of(&w, u), s->kernel);
        memcpy(r.grid, s->grid, sizeof r.grid);
        memcpy(r.block, s->block, sizeof r.block);
        r.smem = s->smem;
        if (s->smem > 48 * 1024) {
          kfr_kernel *k = (kfr_kernel *)w.kernels.data + r.kernel;
          if (k->max_dynamic_smem < s->smem) k->max_dynamic_smem = s->smem;
        }
        break;
      case KF_USTEP_GEMM: {
        const kf_unit_gemm *q = &s->gemm;
        r.kind = KFR_STEP_GEMM;
        r.gemm.m = q->m;
        r.gemm.n = q->n;
        r.gemm.k = q->k;
        r.gemm.batch = q->batch;
        r.gemm.lda = q->lda;
        r.gemm.ldb = q->ldb;
        r.gemm.ldc = q->ldc;
        r.gemm.ldd = q->ldd;
        r.gemm.stride_a = q->stride_a;
        r.gemm.stride_b = q->stride_b;
        r.gemm.stride_c = q->stride_c;
        r.gemm.stride_d = q->stride_d;
        r.gemm.trans_a = q->trans_a;
        r.gemm.trans_b = q->trans_b;
        r.gemm.has_c = q->has_c;
        r.gemm.dtype = dtype_code(q->dtype);
        r.gemm.compute = (uint32_t)q->compute;
        r.gemm.epilogue = (uint32_t)q->epilogue;
        r.gemm.alpha = q->alpha;
        r.gemm.beta = q->beta;
        r.gemm.workspace_bytes = (uint64_t)q->workspace_bytes;
        break;
      }
      case KF_USTEP_MEMSET: r.kind = KFR_STEP_MEMSET; break;
      default:
        kf_diag_error(diag, "internal error: unit %s has a step of kind %d", u->name, s->kind);
        st = KF_ERR_INTERNAL;
      }
      if (!st) vec_push(&w.steps, &r, sizeof r);
    }
  }
  if (st) goto done;

  /* assemble */
  kfr_header h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, KFR_PLAN_MAGIC, 8);
  h.version = KFR_PLAN_VERSION;
  h.header_bytes = sizeof h;
  h.sm_arch = (uint32_t)in->target.sm;
  h.flags = in->embed_weights ? KFR_FLAG_WEIGHTS_EMBEDDED : 0;
  h.arena_bytes = (uint64_t)(in->memplan->scratch_offset + in->memplan->scratch_bytes);
  h.weights_bytes = (uint64_t)in->weights_bytes;
  h.n_inputs = (uint32_t)g->n_inputs;
  h.n_outputs = (uint32_t)g->n_outputs;
  h.n_buffers = (uint32_t)(w.buffers.len / sizeof(kfr_buffer));
  h.n_modules = (uint32_t)(w.modules.len / sizeof(kfr_module));
  h.n_kernels = (uint32_t)(w.kernels.len / sizeof(kfr_kernel));
  h.n_steps = (uint32_t)(w.steps.len / sizeof(kfr_step));
  h.n_args = (uint32_t)(w.args.len / sizeof(kfr_arg));
  h.model_name = str_add(&w, g->name);
  h.weights_path = in->weights_path ? str_add(&w, in->weights_path) : 0;
  vec out = {0};
  vec_push(&out, &h, sizeof h);
  vec *parts[] = {&w.buffers, &w.modules, &w.kernels, &w.steps, &w.args, &w.strings};
  uint64_t *offs[] = {&h.off_buffers, &h.off_modules, &h.off_kernels, &h.off_steps, &h.off_args,
                      &h.off_strings};
  for (int i = 0; i < 6; i++) {
    vec_align(&out, 8);
    *offs[i] = out.len;
    vec_push(&out, parts[i]->data, parts[i]->len);
  }
  h.strings_bytes = w.strings.len;
  vec_align(&out, 256);
  h.off_blobs = out.len;
  h.blobs_bytes = w.blobs.len;
  vec_push(&out, w.blobs.data, w.blobs.len);
  h.total_bytes = out.len;
  bool failed = out.failed;
  for (int i = 0; i < 6; i++) failed |= parts[i]->failed;
  failed |= w.blobs.failed;
  if (failed) {
    free(out.data);
    st = KF_ERR_NOMEM;
    goto done;
  }
  /* module blob offsets are relative to the blob section: make them absolute */
  kfr_module *mods = (kfr_module *)(out.data + h.off_modules);
  for (uint32_t i = 0; i < h.n_modules; i++) mods[i].offset += h.off_blobs;
  kfr_buffer *bufs = (kfr_buffer *)(out.data + h.off_buffers);
  if (in->embed_weights)
    for (uint32_t i = 0; i < h.n_buffers; i++)
      if (bufs[i].kind == KFR_BUF_WEIGHT) bufs[i].offset += h.off_blobs;
  memcpy(out.data, &h, sizeof h);
  *blob_out = out.data;
  *bytes_out = out.len;
done:
  free(w.buffers.data);
  free(w.modules.data);
  free(w.kernels.data);
  free(w.steps.data);
  free(w.args.data);
  free(w.strings.data);
  free(w.blobs.data);
  free(w.weight_buf);
  free(w.input_buf);
  free(w.output_buf);
  free(w.module_units);
  return st;
}

kf_status kf_write_header(const char *obj_path, const char *prefix, const kf_graph *g, kf_diag *diag) {
  size_t n = strlen(obj_path);
  char *path = malloc(n + 3);
  if (!path) return KF_ERR_NOMEM;
  memcpy(path, obj_path, n + 1);
  if (n > 2 && strcmp(path + n - 2, ".o") == 0)
    strcpy(path + n - 2, ".h");
  else
    strcat(path, ".h");
  FILE *f = fopen(path, "w");
  kf_status st = KF_OK;
  if (!f) {
    kf_diag_error(diag, "%s: cannot open for writing", path);
    free(path);
    return KF_ERR_IO;
  }
  fprintf(f, "/* Generated by kfuse for model '%s': link %s with libkfuse_runtime.a\n", g->name,
          obj_path);
  fprintf(f, " * (and -ldl -lpthread). Inputs:\n");
  for (int i = 0; i < g->n_inputs; i++) {
    char t[256];
    kf_type_str(&g->inputs[i]->type, t, sizeof t);
    fprintf(f, " *   %d %s: %s\n", i, g->input_names[i], t);
  }
  fprintf(f, " * Outputs:\n");
  for (int i = 0; i < g->n_outputs; i++) {
    char t[256];
    kf_type_str(&g->outputs[i]->type, t, sizeof t);
    fprintf(f, " *   %d: %s\n", i, t);
  }
  fprintf(f, " */\n");
  fwrite(kf_runtime_header_text, 1, kf_runtime_header_text_len, f);
  fprintf(f, "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
  fprintf(f, "/* Create an instance of model '%s' (opts may be NULL). */\n", g->name);
  fprintf(f, "int %s_create(const kfuse_options *opts, kfuse_model **out);\n", prefix);
  fprintf(f, "#ifdef __cplusplus\n}\n#endif\n");
  if (ferror(f)) st = KF_ERR_IO;
  if (fclose(f) != 0) st = KF_ERR_IO;
  if (st) kf_diag_error(diag, "%s: write failed", path);
  free(path);
  return st;
}
