/* frontend/pt2_graph.c — turns the ExportedProgram JSON of a .pt2 archive
 * into a kf_graph.
 *
 * Placeholders follow graph_signature.input_specs: user inputs become graph
 * inputs; parameters, buffers and lifted constants become kf.param ops over
 * weights registered in the graph (their bytes come from the store pt2.c
 * installs). Every node is converted to a kf_aten_call — arguments by
 * their schema names, result types from tensor_values — and lowered by
 * frontend/aten.c; in-place nodes of the default export IR rebind the
 * tensor they mutate. Outputs come from output_specs; a buffer written
 * but never read before the write is dropped (mutation_without_state);
 * other mutations of buffers or inputs, effect tokens, symbolic shapes and
 * higher-order ops are rejected with a message that says so. Unknown JSON
 * keys are ignored and optional fields may be missing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aten.h"
#include "pt2_int.h"

/* ---- name -> value map ------------------------------------------------------
 * Names are borrowed from the JSON tree, which outlives the build. A name
 * may map to NULL: an output kfuse does not produce (unused extra results). */
typedef struct slot {
  const char *key;
  kf_value *v;
  const char *producer; /* node that made it, for messages */
  const char *written;  /* v NULL: a view an in-place node (this one) wrote through */
  const cJSON *meta;    /* in the tensor_values index: the value's entry */
} slot;

typedef struct vmap {
  slot *s;
  size_t cap, n;
} vmap;

static size_t hash(const char *s) {
  size_t h = 1469598103934665603ull;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h;
}

static slot *vmap_find(vmap *m, const char *k) {
  if (!m->cap) return NULL;
  for (size_t j = hash(k) & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
    if (!m->s[j].key) return NULL;
    if (strcmp(m->s[j].key, k) == 0) return &m->s[j];
  }
}

static bool vmap_put(vmap *m, const char *k, kf_value *v, const char *producer) {
  slot *e = vmap_find(m, k);
  if (e) {
    e->v = v;
    e->producer = producer;
    e->written = NULL;
    return true;
  }
  if ((m->n + 1) * 2 > m->cap) {
    size_t cap = m->cap ? m->cap * 2 : 256;
    slot *s = calloc(cap, sizeof *s);
    if (!s) return false;
    for (size_t i = 0; i < m->cap; i++) {
      if (!m->s[i].key) continue;
      size_t j = hash(m->s[i].key) & (cap - 1);
      while (s[j].key) j = (j + 1) & (cap - 1);
      s[j] = m->s[i];
    }
    free(m->s);
    m->s = s;
    m->cap = cap;
  }
  size_t j = hash(k) & (m->cap - 1);
  while (m->s[j].key) j = (j + 1) & (m->cap - 1);
  m->s[j].key = k;
  m->s[j].v = v;
  m->s[j].producer = producer;
  m->n++;
  return true;
}

/* ---- context ------------------------------------------------------------------ */

typedef struct ctx {
  pt2_program *p;
  kf_graph *g;
  kf_diag *diag;
  const cJSON *graph;
  const cJSON *tensor_values;
  vmap metas; /* tensor_values by name: a graph of 100k values (an unrolled
               * RNN) made the object's linear lookup quadratic */
  vmap values;
  char where[600]; /* "model.pt2: models/model.json" */
} ctx;

static kf_status err(ctx *c, kf_status st, const char *fmt, ...) KF_PRINTF(3, 4);
static kf_status err(ctx *c, kf_status st, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kf_diag_error(c->diag, "%s: %s", c->where, msg);
  return st;
}

static const cJSON *get(const cJSON *o, const char *k) {
  return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

static const char *get_str(const cJSON *o, const char *k) {
  const cJSON *v = get(o, k);
  return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A union is a one-key object {"variant": value}; keys with a null value
 * are skipped (some serializers write every variant, most null). */
static const cJSON *union_of(const cJSON *o, const char **variant) {
  *variant = NULL;
  if (!cJSON_IsObject(o)) return NULL;
  const cJSON *it;
  cJSON_ArrayForEach(it, o) {
    if (cJSON_IsNull(it)) continue;
    *variant = it->string;
    return it;
  }
  return NULL;
}

/* Integers arrive as JSON doubles; sys.maxsize (slice ends) saturates. */
static bool json_int(const cJSON *j, int64_t *out) {
  if (!cJSON_IsNumber(j)) return false;
  double d = j->valuedouble;
  if (d >= 9223372036854775807.0) {
    *out = INT64_MAX;
    return true;
  }
  if (d <= -9223372036854775808.0) {
    *out = INT64_MIN;
    return true;
  }
  if (floor(d) != d) return false;
  *out = (int64_t)d;
  return true;
}

static bool json_float(const cJSON *j, double *out) {
  if (cJSON_IsNumber(j)) {
    *out = j->valuedouble;
    return true;
  }
  if (cJSON_IsString(j)) {
    const char *s = j->valuestring;
    if (!strcmp(s, "Infinity") || !strcmp(s, "inf")) *out = INFINITY;
    else if (!strcmp(s, "-Infinity") || !strcmp(s, "-inf")) *out = -INFINITY;
    else if (!strcmp(s, "NaN") || !strcmp(s, "nan")) *out = NAN;
    else return false;
    return true;
  }
  return false;
}

/* The symbol of a symbolic size, for the "dynamic shape" message. */
static void symbol_of(const cJSON *expr, char *buf, size_t n) {
  const char *s = get_str(get(expr, "as_expr"), "expr_str");
  if (!s) s = get_str(expr, "as_name");
  if (!s) {
    snprintf(buf, n, "?");
    return;
  }
  const char *p = strstr(s, "Symbol('");
  if (p) {
    p += 8;
    const char *e = strchr(p, '\'');
    snprintf(buf, n, "%.*s", (int)(e ? e - p : 16), p);
  } else {
    snprintf(buf, n, "%.40s", s);
  }
}

/* A SymInt field: {"as_int": n} (or a bare number in old serializers). */
static kf_status sym_int(const pt2_program *p, const cJSON *j, const char *what, const char *field,
                         int64_t *out, kf_diag *diag) {
  if (json_int(j, out)) return KF_OK;
  const cJSON *v = get(j, "as_int");
  if (v && json_int(v, out)) return KF_OK;
  if (get(j, "as_expr") || get(j, "as_name")) {
    char sym[64];
    symbol_of(j, sym, sizeof sym);
    kf_diag_error(diag, "%s: %s: dynamic shape not supported (symbol %s in %s)", p->file, p->json_name, sym,
                  what);
    return KF_ERR_UNSUPPORTED;
  }
  kf_diag_error(diag, "%s: %s: %s: malformed %s", p->file, p->json_name, what, field);
  return KF_ERR_FORMAT;
}

kf_status kf_pt2_tensor_meta(const pt2_program *p, const cJSON *meta, const char *what, kf_type *out,
                             kf_diag *diag) {
  memset(out, 0, sizeof *out);
  if (!cJSON_IsObject(meta)) {
    kf_diag_error(diag, "%s: %s: %s: tensor metadata is missing or not an object", p->file, p->json_name,
                  what);
    return KF_ERR_FORMAT;
  }
  int64_t dt;
  if (!json_int(get(meta, "dtype"), &dt)) {
    kf_diag_error(diag, "%s: %s: %s: missing or malformed dtype", p->file, p->json_name, what);
    return KF_ERR_FORMAT;
  }
  kf_dtype t = kf_dtype_from_export(dt);
  if (t == KF_DTYPE_INVALID) {
    kf_diag_error(diag, "%s: %s: %s: unknown or unsupported dtype %lld", p->file, p->json_name, what,
                  (long long)dt);
    return KF_ERR_UNSUPPORTED;
  }
  const cJSON *layout = get(meta, "layout");
  int64_t lay;
  if (layout && json_int(layout, &lay) && lay != 7) {
    kf_diag_error(diag, "%s: %s: %s: layout %lld is not supported (only strided tensors)", p->file,
                  p->json_name, what, (long long)lay);
    return KF_ERR_UNSUPPORTED;
  }
  const cJSON *sizes = get(meta, "sizes");
  if (!cJSON_IsArray(sizes)) {
    kf_diag_error(diag, "%s: %s: %s: missing sizes", p->file, p->json_name, what);
    return KF_ERR_FORMAT;
  }
  int rank = cJSON_GetArraySize(sizes);
  if (rank > KF_MAX_RANK) {
    kf_diag_error(diag, "%s: %s: %s: rank %d exceeds kfuse's limit of %d", p->file, p->json_name, what, rank,
                  KF_MAX_RANK);
    return KF_ERR_LIMIT;
  }
  int64_t shape[KF_MAX_RANK];
  int i = 0;
  const cJSON *it;
  kf_status st;
  int64_t numel = 1;
  cJSON_ArrayForEach(it, sizes) {
    if ((st = sym_int(p, it, what, "size", &shape[i], diag))) return st;
    if (shape[i] < 0) {
      kf_diag_error(diag, "%s: %s: %s: negative size %lld", p->file, p->json_name, what, (long long)shape[i]);
      return KF_ERR_FORMAT;
    }
    if (__builtin_mul_overflow(numel, shape[i], &numel) || numel > KF_PT2_MAX_ELEMS) {
      kf_diag_error(diag, "%s: %s: %s: more than 2^50 elements", p->file, p->json_name, what);
      return KF_ERR_LIMIT;
    }
    i++;
  }
  kf_type_init_tensor(out, t, rank, shape);
  const cJSON *strides = get(meta, "strides");
  if (cJSON_IsArray(strides)) {
    if (cJSON_GetArraySize(strides) != rank) {
      kf_diag_error(diag, "%s: %s: %s: %d strides for %d sizes", p->file, p->json_name, what,
                    cJSON_GetArraySize(strides), rank);
      return KF_ERR_FORMAT;
    }
    i = 0;
    cJSON_ArrayForEach(it, strides) {
      if ((st = sym_int(p, it, what, "stride", &out->strides[i], diag))) return st;
      if (out->strides[i] < 0 || out->strides[i] > KF_PT2_MAX_ELEMS) {
        kf_diag_error(diag, "%s: %s: %s: stride out of range", p->file, p->json_name, what);
        return KF_ERR_FORMAT;
      }
      i++;
    }
  }
  const cJSON *off = get(meta, "storage_offset");
  if (off && !cJSON_IsNull(off)) {
    if ((st = sym_int(p, off, what, "storage_offset", &out->offset, diag))) return st;
    if (out->offset < 0 || out->offset > KF_PT2_MAX_ELEMS) {
      kf_diag_error(diag, "%s: %s: %s: storage offset out of range", p->file, p->json_name, what);
      return KF_ERR_FORMAT;
    }
  }
  return KF_OK;
}

/* ---- placeholders ------------------------------------------------------------ */

static const cJSON *meta_of(ctx *c, const char *name) {
  slot *s = vmap_find(&c->metas, name);
  return s ? s->meta : NULL;
}

/* The index meta_of reads; the first entry of a repeated name wins, as
 * cJSON's own lookup would have it. */
static bool index_metas(ctx *c) {
  if (!cJSON_IsObject(c->tensor_values)) return true;
  const cJSON *it;
  cJSON_ArrayForEach(it, c->tensor_values) {
    if (!it->string || vmap_find(&c->metas, it->string)) continue;
    if (!vmap_put(&c->metas, it->string, NULL, NULL)) return false;
    vmap_find(&c->metas, it->string)->meta = it;
  }
  return true;
}

static pt2_weight *find_weight(ctx *c, const char *fqn) {
  for (int i = 0; i < c->p->n_weights; i++)
    if (strcmp(c->p->weights[i].fqn, fqn) == 0) return &c->p->weights[i];
  return NULL;
}

/* Bytes an as_strided view reaches into its storage; -1 on overflow. */
static int64_t bytes_needed(const kf_type *t) {
  int64_t n = kf_type_numel(t);
  if (n == 0) return 0;
  int64_t hi = t->offset, term;
  for (int i = 0; i < t->rank; i++)
    if (__builtin_mul_overflow(t->shape[i] - 1, t->strides[i], &term) || __builtin_add_overflow(hi, term, &hi))
      return -1;
  if (__builtin_add_overflow(hi, 1, &hi) || __builtin_mul_overflow(hi, (int64_t)kf_dtype_size(t->dtype), &hi))
    return -1;
  return hi;
}

static kf_status add_param(ctx *c, const char *ph, const char *fqn, const char *kind) {
  pt2_weight *w = find_weight(c, fqn);
  if (!w) {
    if (c->p->legacy_pickle)
      return err(c, KF_ERR_UNSUPPORTED,
                 "%s '%s' is stored only in serialized_state_dict.pt, a pickle written by PyTorch <= 2.7 "
                 "that kfuse cannot read; save the model again with PyTorch >= 2.8",
                 kind, fqn);
    return err(c, KF_ERR_FORMAT, "%s '%s' (placeholder %s) is in neither the weights nor the constants config",
               kind, fqn, ph);
  }
  if (w->pickled)
    return err(c, KF_ERR_UNSUPPORTED, "%s '%s' is pickled (a tensor subclass); not supported", kind, fqn);
  if (w->index < 0)
    return err(c, KF_ERR_FORMAT, "%s '%s': record %s is missing from the archive", kind, fqn, w->short_rec);
  kf_type t, gt;
  char what[600];
  snprintf(what, sizeof what, "%s '%s'", kind, fqn);
  const cJSON *gm = meta_of(c, ph);
  kf_status st;
  if (w->meta) {
    if ((st = kf_pt2_tensor_meta(c->p, w->meta, what, &t, c->diag))) return st;
    if (gm) {
      if ((st = kf_pt2_tensor_meta(c->p, gm, what, &gt, c->diag))) return st;
      if (!kf_type_same_shape(&t, &gt)) {
        char a[256], b[256];
        kf_type_str(&gt, a, sizeof a);
        kf_type_str(&t, b, sizeof b);
        return err(c, KF_ERR_FORMAT, "%s: the graph says %s, the weights config %s", what, a, b);
      }
      /* the layout too: the graph's view of the storage must be the one
       * the weights config (checked against the record below) describes */
      bool same = gt.offset == t.offset;
      for (int i = 0; same && i < t.rank; i++) same = t.shape[i] <= 1 || gt.strides[i] == t.strides[i];
      if (!same) {
        char a[160] = "", b[160] = "";
        size_t ka = 0, kb = 0;
        for (int i = 0; i < t.rank; i++) {
          ka += (size_t)snprintf(a + ka, sizeof a - ka, "%s%lld", i ? ", " : "", (long long)gt.strides[i]);
          kb += (size_t)snprintf(b + kb, sizeof b - kb, "%s%lld", i ? ", " : "", (long long)t.strides[i]);
          if (ka >= sizeof a || kb >= sizeof b) break;
        }
        return err(c, KF_ERR_FORMAT,
                   "%s: the graph's strides (%s) and storage offset %lld disagree with the weights config's (%s) "
                   "and %lld",
                   what, a, (long long)gt.offset, b, (long long)t.offset);
      }
    }
  } else if (gm) {
    if ((st = kf_pt2_tensor_meta(c->p, gm, what, &t, c->diag))) return st;
  } else {
    return err(c, KF_ERR_FORMAT, "%s has no tensor metadata", what);
  }
  int64_t need = bytes_needed(&t);
  if (need < 0) return err(c, KF_ERR_LIMIT, "%s: its strides reach beyond 2^63 bytes", what);
  if (w->size == 0 && need > 0) {
    kf_diag_warn(c->diag, "%s: %s (%s) has an empty record (exported from a fake tensor): it reads as zeros",
                 c->p->file, what, w->short_rec);
  } else if (w->size < need) {
    kf_diag_error(c->diag, "%s: weight '%s' (%s): record has %lld bytes, tensor needs %lld", c->p->file, fqn,
                  w->short_rec, (long long)w->size, (long long)need);
    return KF_ERR_FORMAT;
  }
  if (!w->used) {
    w->used = true;
    w->needed = need;
    /* an empty record stores the zeros the store hands out (need bytes) */
    int wi = kf_graph_add_weight(c->g, fqn, &t, w->size ? w->size : need);
    c->g->weights[wi].storage = kf_graph_strdup(c->g, w->short_rec);
  } else if (!kf_type_equal(&kf_graph_find_weight(c->g, fqn)->type, &t)) {
    return err(c, KF_ERR_FORMAT, "%s is used with two different types", what);
  }
  kf_op *op = kf_graph_append_op(c->g, KF_OP_PARAM, ph, NULL, 0, &t, 1);
  kf_op_set_str(op, "fqn", fqn);
  kf_op_set_str(op, "kind", kind);
  if (!vmap_put(&c->values, ph, op->results[0], ph)) return KF_ERR_NOMEM;
  return KF_OK;
}

static kf_status add_inputs(ctx *c, const cJSON *specs) {
  const cJSON *spec;
  int i = 0;
  cJSON_ArrayForEach(spec, specs) {
    const char *kind;
    const cJSON *body = union_of(spec, &kind);
    if (!body) return err(c, KF_ERR_FORMAT, "input_specs[%d] is malformed", i);
    const cJSON *arg = get(body, "arg");
    kf_status st = KF_OK;
    if (!strcmp(kind, "user_input")) {
      const char *variant;
      const cJSON *a = union_of(arg, &variant);
      if (!a) return err(c, KF_ERR_FORMAT, "input_specs[%d]: user_input has no arg", i);
      if (!strcmp(variant, "as_tensor")) {
        const char *name = get_str(a, "name");
        if (!name) return err(c, KF_ERR_FORMAT, "input_specs[%d]: tensor input without a name", i);
        kf_type t;
        char what[300];
        snprintf(what, sizeof what, "input %s", name);
        if ((st = kf_pt2_tensor_meta(c->p, meta_of(c, name), what, &t, c->diag))) return st;
        kf_type_set_contiguous(&t);
        kf_value *v = kf_graph_add_input(c->g, name, &t);
        if (!vmap_put(&c->values, name, v, name)) return KF_ERR_NOMEM;
      } else if (!strncmp(variant, "as_sym", 6)) {
        return err(c, KF_ERR_UNSUPPORTED, "input %d is a symbolic number: dynamic shapes are not supported", i);
      } else if (!strcmp(variant, "as_custom_obj")) {
        return err(c, KF_ERR_UNSUPPORTED, "input %d is a script object; not supported", i);
      }
      /* constants (None, ints, strings) were specialised into the graph */
    } else if (!strcmp(kind, "parameter") || !strcmp(kind, "buffer") || !strcmp(kind, "tensor_constant")) {
      const char *ph = get_str(arg, "name");
      const char *fqn = get_str(body, !strcmp(kind, "parameter") ? "parameter_name"
                                      : !strcmp(kind, "buffer")  ? "buffer_name"
                                                                 : "tensor_constant_name");
      if (!ph || !fqn) return err(c, KF_ERR_FORMAT, "input_specs[%d]: %s without a name", i, kind);
      st = add_param(c, ph, fqn, !strcmp(kind, "parameter") ? "parameter"
                                 : !strcmp(kind, "buffer")  ? "buffer"
                                                            : "constant");
      if (st) return st;
    } else if (!strcmp(kind, "constant_input")) {
      /* a number, bool, string or None the model was called with (a flag
       * such as use_cache=False, positional or keyword): specialised into
       * the graph by export, so not an input of the compiled module */
    } else if (!strcmp(kind, "token")) {
      return err(c, KF_ERR_UNSUPPORTED, "the program takes an effect token (side-effecting ops); not supported");
    } else if (!strcmp(kind, "custom_obj")) {
      return err(c, KF_ERR_UNSUPPORTED, "the program takes a script object (torchbind); not supported");
    } else {
      return err(c, KF_ERR_UNSUPPORTED, "input_specs[%d]: input kind '%s' is not supported", i, kind);
    }
    i++;
  }
  return KF_OK;
}

/* ---- nodes ------------------------------------------------------------------- */

static bool is_skipped(const char *t) {
  static const char *skip[] = {"_assert_scalar", "sym_constrain_range_for_size", "sym_constrain_range",
                               "_assert_async", NULL};
  const char *p = strncmp(t, "torch.ops.aten.", 15) == 0 ? t + 15 : NULL;
  if (!p) return false;
  for (int i = 0; skip[i]; i++) {
    size_t n = strlen(skip[i]);
    if (strncmp(p, skip[i], n) == 0 && (p[n] == '.' || p[n] == 0)) return true;
  }
  return false;
}

static bool is_symbolic(const char *t) {
  return !strncmp(t, "_operator.", 10) || !strncmp(t, "torch.sym_", 10) || !strncmp(t, "math.", 5) ||
         !strncmp(t, "torch.ops.aten.sym_", 19) || !strncmp(t, "torch._sym", 10) ||
         !strncmp(t, "torch.ops.aten._local_scalar_dense", 34) || !strncmp(t, "torch.ops.aten.item", 19);
}

typedef struct node_ctx {
  ctx *c;
  const char *name;
  const char *target;
} node_ctx;

static kf_status nerr(node_ctx *n, kf_status st, const char *fmt, ...) KF_PRINTF(3, 4);
static kf_status nerr(node_ctx *n, kf_status st, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kf_diag_error(n->c->diag, "%s: node '%s' (%s): %s", n->c->p->file, n->name, n->target, msg);
  return st;
}

static kf_status lookup_tensor(node_ctx *n, const char *arg, const cJSON *ref, kf_value **out) {
  const char *name = get_str(ref, "name");
  if (!name) return nerr(n, KF_ERR_FORMAT, "argument '%s': tensor reference without a name", arg);
  slot *s = vmap_find(&n->c->values, name);
  if (!s) return nerr(n, KF_ERR_FORMAT, "argument '%s' refers to unknown value '%s'", arg, name);
  if (!s->v && s->written)
    return nerr(n, KF_ERR_UNSUPPORTED,
                "unsupported: argument '%s' reads '%s', a view that node '%s' wrote in place (a write through "
                "slices is kept only where the views it went through are not used again)", arg, name, s->written);
  if (!s->v)
    return nerr(n, KF_ERR_UNSUPPORTED,
                "argument '%s' uses '%s', a result of node '%s' that kfuse does not compute", arg, name,
                s->producer);
  *out = s->v;
  return KF_OK;
}

static kf_status sym_list_int(node_ctx *n, const char *arg, const cJSON *e, int64_t *out) {
  if (json_int(e, out)) return KF_OK;
  const char *v;
  const cJSON *b = union_of(e, &v);
  if (b && !strcmp(v, "as_int") && json_int(b, out)) return KF_OK;
  if (b && !strcmp(v, "as_name"))
    return nerr(n, KF_ERR_UNSUPPORTED, "argument '%s' uses symbolic value '%s': dynamic shapes are not supported",
                arg, cJSON_IsString(b) ? b->valuestring : "?");
  return nerr(n, KF_ERR_FORMAT, "argument '%s': malformed integer", arg);
}

/* One serialized Argument -> kf_aten_arg. */
static kf_status convert_arg(node_ctx *n, const char *name, const cJSON *arg, kf_aten_arg *out) {
  ctx *c = n->c;
  memset(out, 0, sizeof *out);
  out->name = name;
  const char *v;
  const cJSON *b = union_of(arg, &v);
  if (!b) {
    if (cJSON_IsObject(arg)) { /* {"as_none": null} style or empty: None */
      out->kind = KF_ARG_NONE;
      return KF_OK;
    }
    return nerr(n, KF_ERR_FORMAT, "argument '%s' is malformed", name);
  }
  int cnt = cJSON_IsArray(b) ? cJSON_GetArraySize(b) : 0;
  const cJSON *it;
  int i = 0;
  kf_status st;
  if (!strcmp(v, "as_none")) {
    out->kind = KF_ARG_NONE;
  } else if (!strcmp(v, "as_tensor")) {
    out->kind = KF_ARG_TENSOR;
    return lookup_tensor(n, name, b, &out->value);
  } else if (!strcmp(v, "as_optional_tensor")) {
    const char *w;
    const cJSON *x = union_of(b, &w);
    if (!x || !strcmp(w, "as_none")) {
      out->kind = KF_ARG_NONE;
      return KF_OK;
    }
    out->kind = KF_ARG_TENSOR;
    return lookup_tensor(n, name, x, &out->value);
  } else if (!strcmp(v, "as_tensors") || !strcmp(v, "as_optional_tensors")) {
    if (!cJSON_IsArray(b)) return nerr(n, KF_ERR_FORMAT, "argument '%s': expected a list", name);
    out->kind = KF_ARG_TENSORS;
    out->n = cnt;
    out->values = kf_graph_alloc(c->g, sizeof(kf_value *) * (size_t)(cnt ? cnt : 1));
    cJSON_ArrayForEach(it, b) {
      const cJSON *ref = it;
      if (!strcmp(v, "as_optional_tensors")) {
        const char *w;
        ref = union_of(it, &w);
        if (!ref || !strcmp(w, "as_none")) {
          out->values[i++] = NULL;
          continue;
        }
      }
      if ((st = lookup_tensor(n, name, ref, &out->values[i++]))) return st;
    }
  } else if (!strcmp(v, "as_int") || !strcmp(v, "as_sym_int")) {
    out->kind = KF_ARG_INT;
    if ((st = sym_list_int(n, name, b, &out->i))) return st;
    out->f = (double)out->i;
  } else if (!strcmp(v, "as_float") || !strcmp(v, "as_sym_float")) {
    out->kind = KF_ARG_FLOAT;
    const char *w;
    const cJSON *x = !strcmp(v, "as_sym_float") ? union_of(b, &w) : b;
    if (x && !strcmp(v, "as_sym_float") && strcmp(w, "as_float"))
      return nerr(n, KF_ERR_UNSUPPORTED, "argument '%s' is a symbolic float: dynamic shapes are not supported",
                  name);
    if (!json_float(x, &out->f)) return nerr(n, KF_ERR_FORMAT, "argument '%s': malformed float", name);
  } else if (!strcmp(v, "as_bool") || !strcmp(v, "as_sym_bool")) {
    out->kind = KF_ARG_BOOL;
    const char *w;
    const cJSON *x = !strcmp(v, "as_sym_bool") ? union_of(b, &w) : b;
    if (!cJSON_IsBool(x)) return nerr(n, KF_ERR_UNSUPPORTED, "argument '%s': expected a constant bool", name);
    out->i = cJSON_IsTrue(x);
  } else if (!strcmp(v, "as_string")) {
    if (!cJSON_IsString(b)) return nerr(n, KF_ERR_FORMAT, "argument '%s': malformed string", name);
    out->kind = KF_ARG_STR;
    out->s = b->valuestring;
  } else if (!strcmp(v, "as_ints") || !strcmp(v, "as_sym_ints") || !strcmp(v, "as_bools")) {
    if (!cJSON_IsArray(b)) return nerr(n, KF_ERR_FORMAT, "argument '%s': expected a list", name);
    bool bools = !strcmp(v, "as_bools");
    out->kind = bools ? KF_ARG_BOOLS : KF_ARG_INTS;
    out->n = cnt;
    int64_t *vals = kf_graph_alloc(c->g, sizeof(int64_t) * (size_t)(cnt ? cnt : 1));
    cJSON_ArrayForEach(it, b) {
      if (bools) {
        if (!cJSON_IsBool(it)) return nerr(n, KF_ERR_FORMAT, "argument '%s': malformed bool list", name);
        vals[i++] = cJSON_IsTrue(it);
      } else if ((st = sym_list_int(n, name, it, &vals[i++]))) {
        return st;
      }
    }
    out->ints = vals;
  } else if (!strcmp(v, "as_floats")) {
    if (!cJSON_IsArray(b)) return nerr(n, KF_ERR_FORMAT, "argument '%s': expected a list", name);
    out->kind = KF_ARG_FLOATS;
    out->n = cnt;
    double *vals = kf_graph_alloc(c->g, sizeof(double) * (size_t)(cnt ? cnt : 1));
    cJSON_ArrayForEach(it, b) {
      if (!json_float(it, &vals[i++])) return nerr(n, KF_ERR_FORMAT, "argument '%s': malformed float list", name);
    }
    out->floats = vals;
  } else if (!strcmp(v, "as_scalar_type")) {
    int64_t d;
    if (!json_int(b, &d)) return nerr(n, KF_ERR_FORMAT, "argument '%s': malformed dtype", name);
    kf_dtype t = kf_dtype_from_export(d);
    if (t == KF_DTYPE_INVALID)
      return nerr(n, KF_ERR_UNSUPPORTED, "argument '%s': unknown or unsupported dtype %lld", name, (long long)d);
    out->kind = KF_ARG_DTYPE;
    out->i = t;
  } else if (!strcmp(v, "as_layout")) {
    int64_t l;
    if (json_int(b, &l) && l != 7)
      return nerr(n, KF_ERR_UNSUPPORTED, "argument '%s': layout %lld is not supported (only strided)", name,
                  (long long)l);
    out->kind = KF_ARG_IGNORED;
  } else if (!strcmp(v, "as_memory_format") || !strcmp(v, "as_device")) {
    out->kind = KF_ARG_IGNORED;
  } else if (!strcmp(v, "as_graph")) {
    return nerr(n, KF_ERR_UNSUPPORTED, "argument '%s' is a subgraph (a higher-order op); not supported", name);
  } else if (!strcmp(v, "as_complex")) {
    return nerr(n, KF_ERR_UNSUPPORTED, "argument '%s' is a complex number; not supported", name);
  } else {
    return nerr(n, KF_ERR_UNSUPPORTED, "argument '%s' of kind '%s' is not supported", name, v);
  }
  return KF_OK;
}

/* Flatten a node's outputs into names (NULL for None entries). */
static kf_status output_names(node_ctx *n, const cJSON *outs, const char ***names, int *count) {
  int k = 0;
  const cJSON *o, *it;
  cJSON_ArrayForEach(o, outs) {
    const char *v;
    const cJSON *b = union_of(o, &v);
    if (b && (!strcmp(v, "as_tensors") || !strcmp(v, "as_optional_tensors")) && cJSON_IsArray(b))
      k += cJSON_GetArraySize(b);
    else
      k++;
  }
  const char **nm = kf_graph_alloc(n->c->g, sizeof(char *) * (size_t)(k ? k : 1));
  int i = 0;
  cJSON_ArrayForEach(o, outs) {
    const char *v;
    const cJSON *b = union_of(o, &v);
    if (!b || !strcmp(v, "as_none")) {
      nm[i++] = NULL;
    } else if (!strcmp(v, "as_tensor")) {
      nm[i++] = get_str(b, "name");
    } else if ((!strcmp(v, "as_tensors") || !strcmp(v, "as_optional_tensors")) && cJSON_IsArray(b)) {
      cJSON_ArrayForEach(it, b) {
        const char *w;
        const cJSON *ref = !strcmp(v, "as_optional_tensors") ? union_of(it, &w) : it;
        nm[i++] = ref ? get_str(ref, "name") : NULL;
      }
    } else if (!strncmp(v, "as_sym", 6)) {
      return nerr(n, KF_ERR_UNSUPPORTED, "the node computes a symbolic value: dynamic shapes are not supported");
    } else {
      return nerr(n, KF_ERR_UNSUPPORTED, "output of kind '%s' is not supported", v);
    }
  }
  *names = nm;
  *count = k;
  return KF_OK;
}

/* A buffer the model writes in forward is module state when a call reads
 * (or returns) the value the call before it left. kfuse modules hold no state, so such a
 * model is refused. But where no op of the graph reads the buffer's
 * placeholder before the write (the call overwrites it, `copy_` from an
 * input, first: the copy takes only its shape and dtype), its value never
 * reaches an output, of this call or any later one, and the write can be
 * dropped without changing a result (KernelBench L3 33's form). Buffers read
 * before they are written (counters, running statistics, caches) stay
 * refused. Both IRs come here: the core IR names the write in output_specs
 * (buffer_mutation), the default IR writes in place (rebind). */
static const kf_op *buffer_reader(const ctx *c, const kf_value *ph) {
  for (const kf_op *op = c->g->first; op; op = op->next)
    for (int k = 0; k < op->n_operands; k++)
      if (op->operands[k] == ph) return op;
  return NULL;
}

static void warn_write_dropped(ctx *c, const char *fqn) {
  kf_diag_warn(c->diag,
               "%s: the model writes buffer '%s' but overwrites it before reading it, so no output depends on "
               "what it held between calls: the write is not kept (the module holds no state)",
               c->where, fqn);
}

#define STATE_MSG "unsupported: the model writes buffer '%s' and reads the value it held before (node '%s'): " \
                  "that is state kept between calls, and a kfuse module keeps none"

static kf_status mutation_without_state(ctx *c, const char *buffer, kf_value *const *outs, int n_outs) {
  if (!buffer) return err(c, KF_ERR_FORMAT, "a buffer_mutation output without a buffer_name");
  const kf_value *ph = NULL;
  for (const kf_op *op = c->g->first; op && !ph; op = op->next)
    if (op->code == KF_OP_PARAM && op->n_results == 1) {
      const char *fqn = kf_op_get_str(op, "fqn"), *kind = kf_op_get_str(op, "kind");
      if (fqn && kind && !strcmp(fqn, buffer) && !strcmp(kind, "buffer")) ph = op->results[0];
    }
  if (!ph) return err(c, KF_ERR_FORMAT, "the model mutates buffer '%s', which is not among its inputs", buffer);
  const kf_op *r = buffer_reader(c, ph);
  if (r) return err(c, KF_ERR_UNSUPPORTED, STATE_MSG, buffer, r->name);
  for (int k = 0; k < n_outs; k++) /* the old value returned as it is */
    if (outs[k] == ph) return err(c, KF_ERR_UNSUPPORTED, STATE_MSG, buffer, "output");
  warn_write_dropped(c, buffer);
  return KF_OK;
}

static bool bound(const ctx *c, const kf_value *v) {
  for (size_t i = 0; i < c->values.cap; i++)
    if (c->values.s[i].key && c->values.s[i].v == v) return true;
  return false;
}

static bool slice_view(const kf_value *v) {
  return v->def && (v->def->code == KF_OP_SLICE || v->def->code == KF_OP_SELECT);
}

static kf_op *append(ctx *c, kf_opcode code, const char *node, kf_value **ops, int n, const kf_type *declared) {
  char name[300];
  snprintf(name, sizeof name, "%s.wb%d", node, kf_graph_count_ops(c->g));
  kf_type t;
  if (declared)
    t = *declared;
  else
    memset(&t, 0, sizeof t);
  return kf_graph_append_op(c->g, code, name, ops, n, &t, 1);
}

static kf_value *finish(ctx *c, kf_op *op) {
  kf_type t = op->results[0]->type;
  if (kf_infer_types(op, &t, c->diag) != KF_OK) return NULL;
  op->results[0]->type = t;
  return op->results[0];
}

/* An in-place write through kf.slice / kf.select views of a tensor the
 * graph computed (x[a:b, c:d] = v: the default IR's fill_ or copy_ into
 * slices of a new_zeros or a clone; torchvision's shifted-window attention
 * mask is built so) is functionalized as PyTorch's core decomposition
 * spells it: the new value scattered back into each parent, innermost
 * first (kf.slice_scatter; a select's dim put back as size 1), and the
 * base's names bound to the result. The views the write went through are
 * not derived again: their names (and the in-place node's result, *mark_out)
 * are marked, and a later node reading one is refused. A view of the base
 * or of the chain that some name still holds would see the write in
 * PyTorch and not here: refused. */
static kf_status write_through(node_ctx *n, kf_value *old, kf_value *nv, kf_op *mark, bool *mark_out) {
  ctx *c = n->c;
  kf_value *chain[KF_MAX_RANK * 8 + 1];
  int len = 0;
  kf_value *base = old;
  while (slice_view(base)) {
    if (len == (int)(sizeof chain / sizeof chain[0]))
      return nerr(n, KF_ERR_UNSUPPORTED, "unsupported: in-place update through too many views");
    chain[len++] = base;
    base = base->def->operands[0];
  }
  const kf_op_info *bi = base->def ? kf_op_info_get(base->def->code) : NULL;
  if (!base->def || base->def->code == KF_OP_PARAM || bi->kind == KF_KIND_VIEW || base->def->code == KF_OP_SPLIT)
    return nerr(n, KF_ERR_UNSUPPORTED, "unsupported: in-place update of a view of another tensor");
  if (nv->type.dtype != old->type.dtype || nv->type.rank != old->type.rank ||
      memcmp(nv->type.shape, old->type.shape, sizeof(int64_t) * (size_t)old->type.rank) != 0)
    return nerr(n, KF_ERR_UNSUPPORTED, "unsupported: in-place update of a view that changes its type");
  for (kf_op *op = c->g->first; op && op != (mark ? mark->next : c->g->first); op = op->next) {
    const kf_op_info *oi = kf_op_info_get(op->code);
    if ((oi->kind != KF_KIND_VIEW && op->code != KF_OP_SPLIT) || !op->n_operands) continue;
    bool of_chain = op->operands[0] == base;
    for (int k = 0; k < len && !of_chain; k++) of_chain = op->operands[0] == chain[k];
    if (!of_chain) continue;
    for (int r = 0; r < op->n_results; r++) {
      bool member = false;
      for (int k = 0; k < len && !member; k++) member = op->results[r] == chain[k];
      if (!member && bound(c, op->results[r]))
        return nerr(n, KF_ERR_UNSUPPORTED, "unsupported: in-place update of a tensor that has views");
    }
  }
  kf_value *cur = nv;
  for (int k = 0; k < len; k++) {
    const kf_op *vop = chain[k]->def;
    kf_value *parent = vop->operands[0];
    int64_t d = kf_op_get_int(vop, "dim"), s, e, step = 1;
    if (vop->code == KF_OP_SELECT) {
      s = kf_op_get_int(vop, "index");
      e = s + 1;
      kf_type rt;
      int64_t sh[KF_MAX_RANK];
      for (int i = 0; i < parent->type.rank; i++) sh[i] = i == d ? 1 : parent->type.shape[i];
      kf_type_init_tensor(&rt, cur->type.dtype, parent->type.rank, sh);
      cur = finish(c, append(c, KF_OP_RESHAPE, n->name, &cur, 1, &rt));
      if (!cur) return KF_ERR_INVALID;
    } else {
      s = kf_op_get_int(vop, "start");
      e = kf_op_get_int(vop, "end");
      step = kf_op_get_int(vop, "step");
    }
    kf_value *ops[2] = {parent, cur};
    kf_op *sc = append(c, KF_OP_SLICE_SCATTER, n->name, ops, 2, NULL);
    kf_op_set_int(sc, "dim", d);
    kf_op_set_int(sc, "start", s);
    kf_op_set_int(sc, "end", e);
    kf_op_set_int(sc, "step", step);
    cur = finish(c, sc);
    if (!cur) return KF_ERR_INVALID;
  }
  for (size_t i = 0; i < c->values.cap; i++) {
    slot *sl = &c->values.s[i];
    if (!sl->key || !sl->v) continue;
    if (sl->v == base) {
      sl->v = cur;
      continue;
    }
    for (int k = 0; k < len; k++)
      if (sl->v == chain[k]) {
        sl->v = NULL;
        sl->written = n->name;
      }
  }
  *mark_out = true;
  return KF_OK;
}

/* After an in-place op, every name bound to the old tensor means the new
 * value; mutating a weight, an input, a buffer read before the write or a
 * tensor that has views cannot be expressed that way and is refused (writes
 * through slices of a computed tensor: write_through). */
static kf_status rebind(node_ctx *n, kf_value *old, kf_value *nv, kf_op *mark, bool *mark_out) {
  ctx *c = n->c;
  if (!old || !nv || old == nv) return KF_OK;
  if (slice_view(old)) return write_through(n, old, nv, mark, mark_out);
  if (!old->def) return nerr(n, KF_ERR_UNSUPPORTED, "unsupported: the model mutates its input '%s' in place",
                             c->g->input_names[old->index]);
  const char *pkind = old->def->code == KF_OP_PARAM ? kf_op_get_str(old->def, "kind") : NULL;
  if (pkind && !strcmp(pkind, "buffer")) {
    const char *fqn = kf_op_get_str(old->def, "fqn");
    const kf_op *r = buffer_reader(c, old);
    if (r) return nerr(n, KF_ERR_UNSUPPORTED, STATE_MSG, fqn ? fqn : "?", r->name);
    warn_write_dropped(c, fqn ? fqn : "?");
  } else if (old->def->code == KF_OP_PARAM)
    return nerr(n, KF_ERR_UNSUPPORTED, "unsupported: the model mutates %s '%s' in place",
                kf_op_get_str(old->def, "kind"), kf_op_get_str(old->def, "fqn"));
  const kf_op_info *di = kf_op_info_get(old->def->code);
  if (di->kind == KF_KIND_VIEW || old->def->code == KF_OP_SPLIT)
    return nerr(n, KF_ERR_UNSUPPORTED, "unsupported: in-place update of a view of another tensor");
  for (kf_op *op = c->g->first; op && op != (mark ? mark->next : c->g->first); op = op->next) {
    const kf_op_info *oi = kf_op_info_get(op->code);
    if ((oi->kind == KF_KIND_VIEW || op->code == KF_OP_SPLIT) && op->n_operands && op->operands[0] == old)
      return nerr(n, KF_ERR_UNSUPPORTED, "unsupported: in-place update of a tensor that has views");
  }
  for (size_t i = 0; i < c->values.cap; i++)
    if (c->values.s[i].key && c->values.s[i].v == old) c->values.s[i].v = nv;
  return KF_OK;
}

static kf_status add_node(ctx *c, const cJSON *node, int index) {
  node_ctx n = {c, NULL, NULL};
  const char *target = get_str(node, "target");
  const cJSON *outs = get(node, "outputs");
  char fallback[32];
  n.name = get_str(node, "name");
  if (!n.name && cJSON_IsArray(outs)) {
    const char *v;
    const cJSON *b = union_of(cJSON_GetArrayItem(outs, 0), &v);
    if (b && !strcmp(v, "as_tensor")) n.name = get_str(b, "name");
    if (b && !strcmp(v, "as_tensors")) n.name = get_str(cJSON_GetArrayItem(b, 0), "name");
  }
  if (!n.name) {
    snprintf(fallback, sizeof fallback, "node%d", index);
    n.name = fallback;
  }
  n.target = !target ? "?" : strncmp(target, "torch.ops.", 10) == 0 ? target + 10 : target;
  if (!target) return nerr(&n, KF_ERR_FORMAT, "missing target");
  const char *src = get_str(get(node, "metadata"), "stack_trace");
  if (!strncmp(target, "torch.ops.higher_order.", 23)) {
    nerr(&n, KF_ERR_UNSUPPORTED, "higher-order op %s (control flow, wrappers) is not supported", target + 10);
    return KF_ERR_UNSUPPORTED;
  }
  if (is_skipped(target)) return KF_OK;
  if (is_symbolic(target))
    return nerr(&n, KF_ERR_UNSUPPORTED, "symbolic shape arithmetic: dynamic shapes are not supported");
  const cJSON *ins = get(node, "inputs");
  if (ins && !cJSON_IsArray(ins)) return nerr(&n, KF_ERR_FORMAT, "inputs must be a list");
  if (outs && !cJSON_IsArray(outs)) return nerr(&n, KF_ERR_FORMAT, "outputs must be a list");
  int na = ins ? cJSON_GetArraySize(ins) : 0;
  kf_aten_arg *args = kf_graph_alloc(c->g, sizeof *args * (size_t)(na ? na : 1));
  const cJSON *it;
  int i = 0;
  kf_status st;
  cJSON_ArrayForEach(it, ins) {
    const char *an = get_str(it, "name");
    const cJSON *arg = get(it, "arg");
    if (!arg) return nerr(&n, KF_ERR_FORMAT, "input %d has no arg", i);
    if ((st = convert_arg(&n, an, arg, &args[i]))) return st;
    i++;
  }
  const char **onames = NULL;
  int no = 0;
  if (outs && (st = output_names(&n, outs, &onames, &no))) return st;
  kf_type *otypes = kf_graph_alloc(c->g, sizeof(kf_type) * (size_t)(no ? no : 1));
  bool *oknown = kf_graph_alloc(c->g, sizeof(bool) * (size_t)(no ? no : 1));
  kf_value **ovals = kf_graph_alloc(c->g, sizeof(kf_value *) * (size_t)(no ? no : 1));
  for (int k = 0; k < no; k++) {
    const cJSON *m = onames[k] ? meta_of(c, onames[k]) : NULL;
    if (!m) continue;
    char what[300];
    snprintf(what, sizeof what, "tensor '%s' (result of node '%s')", onames[k], n.name);
    if ((st = kf_pt2_tensor_meta(c->p, m, what, &otypes[k], c->diag))) return st;
    oknown[k] = true;
  }
  kf_aten_call call;
  memset(&call, 0, sizeof call);
  call.target = target;
  call.node = n.name;
  call.source = src;
  call.file = c->p->file;
  call.n_args = na;
  call.args = args;
  call.n_outs = no;
  call.out_types = otypes;
  call.out_known = oknown;
  call.dtype_numbering = KF_DTYPE_NUMBERING_EXPORT;
  kf_op *mark = c->g->last;
  if ((st = kf_aten_lower(c->g, &call, ovals, c->diag))) return st;
  bool written = false;
  if (kf_aten_is_inplace(target) && na > 0 && args[0].kind == KF_ARG_TENSOR && no > 0)
    if ((st = rebind(&n, args[0].value, ovals[0], mark, &written))) return st;
  for (int k = 0; k < no; k++)
    if (onames[k] && !vmap_put(&c->values, onames[k], written && k == 0 ? NULL : ovals[k], n.name))
      return KF_ERR_NOMEM;
  if (written && onames[0]) vmap_find(&c->values, onames[0])->written = n.name;
  return KF_OK;
}

/* graph.outputs, where the archive has it, against output_specs: one
 * each, in order, naming the same value, and a value the graph defines
 * (kfuse reads the outputs from output_specs; an archive whose two lists
 * disagree was not written by torch.export, or was changed since) */
static kf_status check_graph_outputs(ctx *c, const cJSON *specs) {
  const cJSON *gouts = get(c->graph, "outputs");
  if (!gouts) return KF_OK;
  if (!cJSON_IsArray(gouts)) return err(c, KF_ERR_FORMAT, "graph.outputs must be a list");
  if (cJSON_GetArraySize(gouts) != cJSON_GetArraySize(specs))
    return err(c, KF_ERR_FORMAT, "graph has %d outputs but the signature describes %d", cJSON_GetArraySize(gouts),
               cJSON_GetArraySize(specs));
  int i = 0;
  const cJSON *go, *spec = specs->child;
  cJSON_ArrayForEach(go, gouts) {
    const char *gv, *kind, *sv;
    const cJSON *ga = union_of(go, &gv);
    const cJSON *body = spec ? union_of(spec, &kind) : NULL;
    const cJSON *sa = body ? union_of(get(body, "arg"), &sv) : NULL;
    if (ga && !strcmp(gv, "as_tensor")) {
      const char *gname = get_str(ga, "name");
      if (!gname || !vmap_find(&c->values, gname))
        return err(c, KF_ERR_FORMAT, "graph output %d names '%s', which no input or node defines", i,
                   gname ? gname : "?");
      /* a user output's arg is an Argument union, a mutation's a plain
       * TensorArgument */
      const char *sname = sa && !strcmp(sv, "as_tensor") ? get_str(sa, "name") : NULL;
      if (!sname && body) sname = get_str(get(body, "arg"), "name");
      if (!sname || strcmp(sname, gname) != 0)
        return err(c, KF_ERR_FORMAT, "graph output %d is '%s' but the signature's output %d is '%s'", i, gname, i,
                   sname ? sname : "not a tensor");
    }
    spec = spec ? spec->next : NULL;
    i++;
  }
  return KF_OK;
}

static kf_status add_outputs(ctx *c, const cJSON *specs) {
  kf_status cs = check_graph_outputs(c, specs);
  if (cs) return cs;
  int n = cJSON_GetArraySize(specs);
  kf_value **outs = kf_graph_alloc(c->g, sizeof(kf_value *) * (size_t)(n ? n : 1));
  int k = 0, i = 0;
  const cJSON *spec;
  cJSON_ArrayForEach(spec, specs) {
    const char *kind;
    const cJSON *body = union_of(spec, &kind);
    if (!body) return err(c, KF_ERR_FORMAT, "output_specs[%d] is malformed", i);
    const cJSON *arg = get(body, "arg");
    if (!strcmp(kind, "user_output")) {
      const char *v;
      const cJSON *a = union_of(arg, &v);
      if (!a || strcmp(v, "as_tensor"))
        return err(c, KF_ERR_UNSUPPORTED, "output %d is %s, not a tensor; only tensor outputs are supported", i,
                   a ? v : "missing");
      const char *name = get_str(a, "name");
      slot *s = name ? vmap_find(&c->values, name) : NULL;
      if (!s) return err(c, KF_ERR_FORMAT, "output %d refers to unknown value '%s'", i, name ? name : "?");
      if (!s->v && s->written)
        return err(c, KF_ERR_UNSUPPORTED, "unsupported: output %d is '%s', a view that node '%s' wrote in place",
                   i, name, s->written);
      if (!s->v)
        return err(c, KF_ERR_UNSUPPORTED, "output %d is '%s', a result of node '%s' that kfuse does not compute",
                   i, name, s->producer);
      outs[k++] = s->v;
    } else if (!strcmp(kind, "buffer_mutation")) {
      /* checked below, once every user output is known */
    } else if (!strcmp(kind, "user_input_mutation")) {
      const char *b = get_str(body, "user_input_name");
      return err(c, KF_ERR_UNSUPPORTED, "unsupported: the model mutates its input '%s'", b ? b : "?");
    } else if (!strcmp(kind, "parameter_mutation")) {
      const char *b = get_str(body, "parameter_name");
      return err(c, KF_ERR_UNSUPPORTED, "unsupported: the model mutates parameter '%s'", b ? b : "?");
    } else if (!strcmp(kind, "token")) {
      return err(c, KF_ERR_UNSUPPORTED, "unsupported: the program returns an effect token (side effects)");
    } else {
      return err(c, KF_ERR_UNSUPPORTED, "output %d of kind '%s' (a training graph?) is not supported", i, kind);
    }
    i++;
  }
  cJSON_ArrayForEach(spec, specs) {
    const char *kind;
    const cJSON *body = union_of(spec, &kind);
    if (body && !strcmp(kind, "buffer_mutation")) {
      kf_status st = mutation_without_state(c, get_str(body, "buffer_name"), outs, k);
      if (st) return st;
    }
  }
  kf_graph_set_outputs(c->g, outs, k);
  return KF_OK;
}

kf_status kf_pt2_build_graph(pt2_program *p, const char *model_name, kf_graph **out, kf_diag *diag) {
  *out = NULL;
  ctx c;
  memset(&c, 0, sizeof c);
  c.p = p;
  c.diag = diag;
  snprintf(c.where, sizeof c.where, "%s: %s", p->file, p->json_name);
  const cJSON *gm = get(p->root, "graph_module");
  c.graph = get(gm, "graph");
  const cJSON *sig = get(gm, "signature");
  const cJSON *nodes = get(c.graph, "nodes");
  const cJSON *in_specs = get(sig, "input_specs");
  const cJSON *out_specs = get(sig, "output_specs");
  c.tensor_values = get(c.graph, "tensor_values");
  if (!cJSON_IsObject(c.graph) || !cJSON_IsArray(in_specs) || !cJSON_IsArray(out_specs)) {
    err(&c, KF_ERR_FORMAT, "missing graph_module.graph or its signature (input_specs, output_specs)");
    return KF_ERR_FORMAT;
  }
  if (nodes && !cJSON_IsArray(nodes)) {
    err(&c, KF_ERR_FORMAT, "graph.nodes must be a list");
    return KF_ERR_FORMAT;
  }
  const cJSON *ginputs = get(c.graph, "inputs");
  if (cJSON_IsArray(ginputs) && cJSON_GetArraySize(ginputs) != cJSON_GetArraySize(in_specs)) {
    err(&c, KF_ERR_FORMAT, "graph has %d inputs but the signature describes %d", cJSON_GetArraySize(ginputs),
        cJSON_GetArraySize(in_specs));
    return KF_ERR_FORMAT;
  }
  if (!index_metas(&c)) {
    free(c.metas.s);
    return KF_ERR_NOMEM;
  }
  c.g = kf_graph_create(model_name);
  if (!c.g) {
    free(c.metas.s);
    return KF_ERR_NOMEM;
  }
  kf_status st = add_inputs(&c, in_specs);
  if (st == KF_OK) {
    /* symbols that no input mentions (range_constraints) still make the
     * program dynamic */
    const cJSON *rc = get(p->root, "range_constraints");
    if (cJSON_IsObject(rc) && rc->child)
      st = err(&c, KF_ERR_UNSUPPORTED, "dynamic shape not supported (symbol %s in range_constraints)",
               rc->child->string);
  }
  const cJSON *node;
  int i = 0;
  if (st == KF_OK)
    cJSON_ArrayForEach(node, nodes) {
      if ((st = add_node(&c, node, i++))) break;
    }
  if (st == KF_OK) st = add_outputs(&c, out_specs);
  free(c.values.s);
  free(c.metas.s);
  if (st != KF_OK) {
    kf_graph_destroy(c.g);
    return st;
  }
  *out = c.g;
  return KF_OK;
}
