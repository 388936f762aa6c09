/* ir/ir.c — the graph IR core: dtypes, types, the op table parsed from
 * kfuse/ops.def, graph construction, attributes and the arena.
 * Inference, verification and printing live in their own files. */
#include "kfuse/ir.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- dtypes -------------------------------------------------------------- */

static const struct {
  const char *name;
  size_t size;
} dtype_tab[KF_DTYPE_COUNT] = {
    [KF_DTYPE_INVALID] = {"invalid", 0}, [KF_DTYPE_F32] = {"f32", 4},
    [KF_DTYPE_F64] = {"f64", 8},         [KF_DTYPE_F16] = {"f16", 2},
    [KF_DTYPE_BF16] = {"bf16", 2},       [KF_DTYPE_I64] = {"i64", 8},
    [KF_DTYPE_I32] = {"i32", 4},         [KF_DTYPE_I16] = {"i16", 2},
    [KF_DTYPE_I8] = {"i8", 1},           [KF_DTYPE_U8] = {"ui8", 1},
    [KF_DTYPE_BOOL] = {"i1", 1},
};

const char *kf_dtype_name(kf_dtype t) {
  return (t >= 0 && t < KF_DTYPE_COUNT) ? dtype_tab[t].name : "invalid";
}

kf_dtype kf_dtype_from_name(const char *name, size_t len) {
  for (int t = 1; t < KF_DTYPE_COUNT; t++)
    if (strlen(dtype_tab[t].name) == len &&
        memcmp(dtype_tab[t].name, name, len) == 0)
      return (kf_dtype)t;
  return KF_DTYPE_INVALID;
}

size_t kf_dtype_size(kf_dtype t) {
  return (t >= 0 && t < KF_DTYPE_COUNT) ? dtype_tab[t].size : 0;
}

bool kf_dtype_is_float(kf_dtype t) {
  return t == KF_DTYPE_F32 || t == KF_DTYPE_F64 || t == KF_DTYPE_F16 ||
         t == KF_DTYPE_BF16;
}

bool kf_dtype_is_int(kf_dtype t) {
  return t == KF_DTYPE_I64 || t == KF_DTYPE_I32 || t == KF_DTYPE_I16 ||
         t == KF_DTYPE_I8 || t == KF_DTYPE_U8;
}

/* c10::promoteTypes restricted to our dtypes. */
kf_dtype kf_dtype_promote(kf_dtype a, kf_dtype b) {
  if (a == b) return a;
  if (a == KF_DTYPE_BOOL) return b;
  if (b == KF_DTYPE_BOOL) return a;
  bool fa = kf_dtype_is_float(a), fb = kf_dtype_is_float(b);
  if (fa && !fb) return a;
  if (fb && !fa) return b;
  if (fa && fb) {
    if (a == KF_DTYPE_F64 || b == KF_DTYPE_F64) return KF_DTYPE_F64;
    return KF_DTYPE_F32; /* f32 with anything, or f16 with bf16 */
  }
  /* both integral and different */
  if (a == KF_DTYPE_U8 || b == KF_DTYPE_U8) {
    kf_dtype o = a == KF_DTYPE_U8 ? b : a;
    return o == KF_DTYPE_I8 ? KF_DTYPE_I16 : o;
  }
  static const int rank[KF_DTYPE_COUNT] = {
      [KF_DTYPE_I8] = 1, [KF_DTYPE_I16] = 2, [KF_DTYPE_I32] = 3,
      [KF_DTYPE_I64] = 4};
  return rank[a] > rank[b] ? a : b;
}

/* ---- types --------------------------------------------------------------- */

void kf_type_set_contiguous(kf_type *t) {
  int64_t s = 1;
  for (int i = t->rank - 1; i >= 0; i--) {
    t->strides[i] = s;
    /* saturate: absurd shapes from bad input must not overflow (UB) */
    if (__builtin_mul_overflow(s, t->shape[i] > 1 ? t->shape[i] : 1, &s)) s = INT64_MAX;
  }
  t->offset = 0;
}

void kf_type_init_tensor(kf_type *t, kf_dtype dtype, int rank,
                         const int64_t *shape) {
  KF_ASSERT(rank >= 0 && rank <= KF_MAX_RANK);
  memset(t, 0, sizeof *t);
  t->kind = KF_TYPE_TENSOR;
  t->dtype = dtype;
  t->rank = rank;
  for (int i = 0; i < rank; i++) t->shape[i] = shape[i];
  kf_type_set_contiguous(t);
}

void kf_type_init_scalar(kf_type *t, kf_dtype dtype) {
  memset(t, 0, sizeof *t);
  t->kind = KF_TYPE_SCALAR;
  t->dtype = dtype;
}

/* Contiguous in PyTorch's sense: strides of size-1 dims do not matter. */
bool kf_type_is_contiguous(const kf_type *t) {
  if (t->kind != KF_TYPE_TENSOR) return true;
  if (t->offset != 0) return false;
  int64_t s = 1;
  for (int i = t->rank - 1; i >= 0; i--) {
    if (t->shape[i] != 1 && t->strides[i] != s) return false;
    if (__builtin_mul_overflow(s, t->shape[i], &s)) s = INT64_MAX;
  }
  return true;
}

/* Channels-last order of a rank-4 [N, C, H, W] (NHWC) or rank-5
 * [N, C, D, H, W] (NDHWC) tensor, innermost first: C, then the spatial
 * dims from the last, then N. */
static int cl_dim(int rank, int j) { return j == 0 ? 1 : j == rank - 1 ? 0 : rank - j; }

void kf_type_set_channels_last(kf_type *t) {
  if (t->kind != KF_TYPE_TENSOR || (t->rank != 4 && t->rank != 5)) {
    kf_type_set_contiguous(t);
    return;
  }
  int64_t s = 1;
  for (int j = 0; j < t->rank; j++) {
    int i = cl_dim(t->rank, j);
    t->strides[i] = s;
    if (__builtin_mul_overflow(s, t->shape[i] > 1 ? t->shape[i] : 1, &s)) s = INT64_MAX;
  }
  t->offset = 0;
}

bool kf_type_is_channels_last(const kf_type *t) {
  if (t->kind != KF_TYPE_TENSOR || (t->rank != 4 && t->rank != 5) || t->offset != 0) return false;
  int64_t s = 1;
  for (int j = 0; j < t->rank; j++) {
    int i = cl_dim(t->rank, j);
    if (t->shape[i] != 1 && t->strides[i] != s) return false;
    if (__builtin_mul_overflow(s, t->shape[i], &s)) s = INT64_MAX;
  }
  return true;
}

bool kf_op_is_layout_copy(const kf_op *op) {
  if (op->code != KF_OP_COPY || op->n_operands != 1 || op->n_results != 1 || !op->operands[0]) return false;
  const kf_type *x = &op->operands[0]->type, *r = &op->results[0]->type;
  if (x->kind != KF_TYPE_TENSOR || (x->rank != 4 && x->rank != 5) || x->dtype != r->dtype ||
      !kf_type_same_shape(x, r))
    return false;
  bool xc = kf_type_is_contiguous(x), xl = kf_type_is_channels_last(x);
  bool rc = kf_type_is_contiguous(r), rl = kf_type_is_channels_last(r);
  return (xc && !xl && rl && !rc) || (xl && !xc && rc && !rl);
}

bool kf_op_is_view(const kf_op *op) {
  switch (op->code) {
  case KF_OP_PERMUTE: case KF_OP_EXPAND: case KF_OP_SLICE: case KF_OP_SELECT:
  case KF_OP_AS_STRIDED: case KF_OP_UNFOLD: case KF_OP_SPLIT:
    return true;
  case KF_OP_RESHAPE: {
    /* infer.c gives a reshape the operand's layout when PyTorch's
     * computeStride allows it, else a fresh contiguous one: a view keeps
     * the operand's storage offset and element order, so a contiguous
     * result of a non-contiguous operand can only be a copy. */
    const kf_type *r = &op->results[0]->type, *x = &op->operands[0]->type;
    return !kf_type_is_contiguous(r) || kf_type_is_contiguous(x);
  }
  default:
    return false;
  }
}

int64_t kf_type_numel(const kf_type *t) {
  int64_t n = 1;
  if (t->kind != KF_TYPE_TENSOR) return 1;
  for (int i = 0; i < t->rank; i++)
    if (__builtin_mul_overflow(n, t->shape[i], &n)) return INT64_MAX; /* saturate, as above */
  return n;
}

bool kf_type_same_dims(const kf_type *a, const kf_type *b) {
  if (a->kind != KF_TYPE_TENSOR || b->kind != KF_TYPE_TENSOR || a->rank != b->rank) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

bool kf_type_same_shape(const kf_type *a, const kf_type *b) {
  if (a->kind != b->kind || a->dtype != b->dtype || a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != b->shape[i]) return false;
  return true;
}

bool kf_type_equal(const kf_type *a, const kf_type *b) {
  if (!kf_type_same_shape(a, b)) return false;
  if (a->kind != KF_TYPE_TENSOR) return true;
  bool ca = kf_type_is_contiguous(a), cb = kf_type_is_contiguous(b);
  if (ca || cb) return ca && cb;
  if (a->offset != b->offset) return false;
  for (int i = 0; i < a->rank; i++)
    if (a->shape[i] != 1 && a->strides[i] != b->strides[i]) return false;
  return true;
}

void kf_type_str(const kf_type *t, char *buf, size_t n) {
  kf_strbuf b;
  kf_strbuf_init(&b);
  if (t->kind == KF_TYPE_SCALAR) {
    kf_strbuf_printf(&b, "%s", kf_dtype_name(t->dtype));
  } else {
    kf_strbuf_printf(&b, "tensor<");
    for (int i = 0; i < t->rank; i++)
      kf_strbuf_printf(&b, "%lldx", (long long)t->shape[i]);
    kf_strbuf_printf(&b, "%s", kf_dtype_name(t->dtype));
    if (!kf_type_is_contiguous(t)) {
      kf_strbuf_printf(&b, ", #kf.strided<[");
      for (int i = 0; i < t->rank; i++)
        kf_strbuf_printf(&b, "%s%lld", i ? ", " : "", (long long)t->strides[i]);
      kf_strbuf_printf(&b, "]");
      if (t->offset) kf_strbuf_printf(&b, ", offset: %lld", (long long)t->offset);
      kf_strbuf_printf(&b, ">");
    }
    kf_strbuf_printf(&b, ">");
  }
  if (n) {
    size_t k = b.data ? (b.len < n - 1 ? b.len : n - 1) : 0;
    if (k) memcpy(buf, b.data, k);
    buf[k] = 0;
  }
  kf_strbuf_fini(&b);
}

/* ---- op table ------------------------------------------------------------ */

typedef struct op_row {
  const char *name;
  kf_op_kind kind;
  const char *operands;
  int n_results;
  const char *attrs;
} op_row;

static const op_row op_rows[KF_OP_COUNT] = {
#define KF_OP(ID, NAME, KIND, OPERANDS, RESULTS, ATTRS)                      \
  [KF_OP_##ID] = {NAME, KF_KIND_##KIND, OPERANDS, RESULTS, ATTRS},
#include "kfuse/ops.def"
#undef KF_OP
};

static kf_op_info op_infos[KF_OP_COUNT];
static pthread_once_t op_infos_once = PTHREAD_ONCE_INIT;
/* Names are split into this static pool; sized generously for ops.def. */
static char name_pool[8192];

static const char *pool_word(size_t *used, const char *s, size_t n) {
  KF_ASSERT(*used + n + 1 <= sizeof name_pool);
  char *p = name_pool + *used;
  memcpy(p, s, n);
  p[n] = 0;
  *used += n + 1;
  return p;
}

static void parse_op_table(void) {
  size_t used = 0;
  for (int c = 0; c < KF_OP_COUNT; c++) {
    const op_row *r = &op_rows[c];
    kf_op_info *info = &op_infos[c];
    KF_ASSERT(r->name != NULL);
    info->code = (kf_opcode)c;
    info->name = r->name;
    info->kind = r->kind;
    info->n_results = r->n_results;
    for (const char *p = r->operands; *p;) {
      while (*p == ' ') p++;
      if (!*p) break;
      const char *w = p;
      while (*p && *p != ' ') p++;
      size_t n = (size_t)(p - w);
      KF_ASSERT(info->n_operand_slots < KF_MAX_OPERAND_SLOTS);
      kf_operand_schema *o = &info->operands[info->n_operand_slots++];
      if (*w == '%') {
        o->allow_scalar = true;
        w++;
        n--;
      }
      if (n && w[n - 1] == '?') {
        o->optional = true;
        info->has_optional_operands = true;
        n--;
      } else if (n && w[n - 1] == '*') {
        o->variadic = true;
        n--;
      }
      o->name = pool_word(&used, w, n);
    }
    for (int i = 0; i + 1 < info->n_operand_slots; i++)
      KF_ASSERT(!info->operands[i].variadic);
    for (const char *p = r->attrs; *p;) {
      while (*p == ' ') p++;
      if (!*p) break;
      const char *w = p;
      while (*p && *p != ':') p++;
      KF_ASSERT(*p == ':');
      KF_ASSERT(info->n_attrs < KF_MAX_ATTRS);
      kf_attr_schema *a = &info->attrs[info->n_attrs++];
      a->name = pool_word(&used, w, (size_t)(p - w));
      p++;
      a->kind = (kf_attr_kind)*p++;
      KF_ASSERT(strchr("ifbIFstn", (int)a->kind) != NULL);
      if (*p == '?') {
        a->optional = true;
        p++;
      }
      KF_ASSERT(*p == ' ' || *p == 0);
    }
  }
}

const kf_op_info *kf_op_info_get(kf_opcode code) {
  KF_ASSERT(code >= 0 && code < KF_OP_COUNT);
  pthread_once(&op_infos_once, parse_op_table);
  return &op_infos[code];
}

kf_ew2_result kf_op_ew2_result(kf_opcode code) {
  switch (code) {
#define KF_OP(ID, NAME, KIND, OPERANDS, RESULTS, ATTRS)
#define KF_EW2(ID, NAME, RESULT, INTERP, TORCH, ATEN) \
  case KF_OP_##ID: return KF_EW2_##RESULT;
#include "kfuse/ops.def"
#undef KF_EW2
#undef KF_OP
  default: return KF_EW2_NONE;
  }
}

kf_opcode kf_opcode_from_name(const char *name, size_t len) {
  for (int c = 0; c < KF_OP_COUNT; c++)
    if (strlen(op_rows[c].name) == len && memcmp(op_rows[c].name, name, len) == 0)
      return (kf_opcode)c;
  return KF_OP_COUNT;
}

const char *kf_opcode_name(kf_opcode code) {
  return (code >= 0 && code < KF_OP_COUNT) ? op_rows[code].name : "?";
}

int kf_op_attr_index(kf_opcode code, const char *name) {
  const kf_op_info *info = kf_op_info_get(code);
  for (int i = 0; i < info->n_attrs; i++)
    if (strcmp(info->attrs[i].name, name) == 0) return i;
  return -1;
}

/* ---- numbers ------------------------------------------------------------- */

kf_number kf_number_int(int64_t v) {
  kf_number n = {KF_NUM_INT, v, (double)v};
  return n;
}
kf_number kf_number_float(double v) {
  kf_number n = {KF_NUM_FLOAT, 0, v};
  return n;
}
kf_number kf_number_bool(bool v) {
  kf_number n = {KF_NUM_BOOL, v ? 1 : 0, v ? 1.0 : 0.0};
  return n;
}
double kf_number_as_double(kf_number n) {
  return n.kind == KF_NUM_FLOAT ? n.f : (double)n.i;
}

/* ---- arena --------------------------------------------------------------- */

typedef struct chunk {
  struct chunk *next;
  size_t used, cap;
  max_align_t data[];
} chunk;

typedef struct arena {
  chunk *head;
} arena;

static void *arena_alloc(arena *a, size_t n) {
  n = (n + 15) & ~(size_t)15;
  if (!a->head || a->head->used + n > a->head->cap) {
    size_t cap = n > 65536 ? n : 65536;
    chunk *c = malloc(sizeof(chunk) + cap);
    if (!c) kf_panic(__FILE__, __LINE__, "out of memory for IR arena");
    c->next = a->head;
    c->used = 0;
    c->cap = cap;
    a->head = c;
  }
  void *p = (char *)a->head->data + a->head->used;
  a->head->used += n;
  memset(p, 0, n);
  return p;
}

static void arena_free(arena *a) {
  for (chunk *c = a->head, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  free(a);
}

/* ---- graphs -------------------------------------------------------------- */

kf_graph *kf_graph_create(const char *name) {
  kf_graph *g = calloc(1, sizeof *g);
  arena *a = calloc(1, sizeof *a);
  if (!g || !a) {
    free(g);
    free(a);
    return NULL;
  }
  g->arena = a;
  g->name = kf_graph_strdup(g, name ? name : "model");
  return g;
}

void kf_graph_destroy(kf_graph *g) {
  if (!g) return;
  if (g->store.destroy) g->store.destroy(g->store.impl);
  arena_free(g->arena);
  free(g);
}

void *kf_graph_alloc(kf_graph *g, size_t n) { return arena_alloc(g->arena, n); }

const char *kf_graph_strndup(kf_graph *g, const char *s, size_t n) {
  char *p = arena_alloc(g->arena, n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

const char *kf_graph_strdup(kf_graph *g, const char *s) {
  return kf_graph_strndup(g, s, strlen(s));
}

/* Grow an arena array of pointers by one (arrays here are small). */
static void **push_ptr(kf_graph *g, void **arr, int n, void *item) {
  void **p = kf_graph_alloc(g, sizeof(void *) * (size_t)(n + 1));
  if (n) memcpy(p, arr, sizeof(void *) * (size_t)n);
  p[n] = item;
  return p;
}

static kf_value *new_value(kf_graph *g, const kf_type *t) {
  kf_value *v = kf_graph_alloc(g, sizeof *v);
  v->id = g->next_value_id++;
  v->type = *t;
  return v;
}

kf_value *kf_graph_add_input(kf_graph *g, const char *name,
                             const kf_type *type) {
  kf_value *v = new_value(g, type);
  v->index = g->n_inputs;
  g->inputs = (kf_value **)push_ptr(g, (void **)g->inputs, g->n_inputs, v);
  g->input_names = (const char **)push_ptr(
      g, (void **)g->input_names, g->n_inputs, (void *)kf_graph_strdup(g, name));
  g->n_inputs++;
  return v;
}

void kf_graph_set_outputs(kf_graph *g, kf_value **outs, int n) {
  g->outputs = kf_graph_alloc(g, sizeof(kf_value *) * (size_t)(n ? n : 1));
  if (n) memcpy(g->outputs, outs, sizeof(kf_value *) * (size_t)n);
  g->n_outputs = n;
}

int kf_graph_add_weight(kf_graph *g, const char *fqn, const kf_type *type,
                        int64_t storage_bytes) {
  kf_weight *w = kf_graph_alloc(g, sizeof(kf_weight) * (size_t)(g->n_weights + 1));
  if (g->n_weights) memcpy(w, g->weights, sizeof(kf_weight) * (size_t)g->n_weights);
  w[g->n_weights].fqn = kf_graph_strdup(g, fqn);
  w[g->n_weights].type = *type;
  w[g->n_weights].storage_bytes = storage_bytes;
  g->weights = w;
  return g->n_weights++;
}

const kf_weight *kf_graph_find_weight(const kf_graph *g, const char *fqn) {
  for (int i = 0; i < g->n_weights; i++)
    if (strcmp(g->weights[i].fqn, fqn) == 0) return &g->weights[i];
  return NULL;
}

/* ---- graph-owned constants ------------------------------------------------ */

/* Constants made by passes live in a store layered over the model's: the
 * layer answers for its own entries and hands every other name to the base,
 * so whoever reads weights (the interpreter, the plan writer) keeps going
 * through g->store alone. */
typedef struct const_entry {
  char *fqn;
  void *data;
  int64_t nbytes;
} const_entry;

typedef struct const_layer {
  kf_weight_store base;
  int n, cap;
  const_entry *e;
} const_layer;

static kf_status layer_get(void *impl, const char *fqn, const void **data,
                           int64_t *nbytes, kf_diag *diag) {
  const_layer *l = impl;
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->e[i].fqn, fqn) == 0) {
      *data = l->e[i].data;
      *nbytes = l->e[i].nbytes;
      return KF_OK;
    }
  if (!l->base.get) {
    kf_diag_error(diag, "weight '%s' has no data (the model was read without weights)", fqn);
    return KF_ERR_UNSUPPORTED;
  }
  return l->base.get(l->base.impl, fqn, data, nbytes, diag);
}

static void layer_destroy(void *impl) {
  const_layer *l = impl;
  if (!l) return;
  if (l->base.destroy) l->base.destroy(l->base.impl);
  for (int i = 0; i < l->n; i++) {
    free(l->e[i].fqn);
    free(l->e[i].data);
  }
  free(l->e);
  free(l);
}

void kf_graph_take_store(kf_graph *g, kf_weight_store store) {
  if (g->store.get == layer_get) {
    const_layer *l = g->store.impl;
    if (l->base.destroy) l->base.destroy(l->base.impl);
    l->base = store;
    return;
  }
  if (g->store.destroy) g->store.destroy(g->store.impl);
  g->store = store;
}

kf_status kf_graph_add_constant(kf_graph *g, const char *fqn, const kf_type *type, void *data,
                                int64_t nbytes, kf_diag *diag) {
  kf_status st = KF_OK;
  const_layer *l = NULL;
  char *name = NULL;
  if (type->kind != KF_TYPE_TENSOR ||
      (!kf_type_is_contiguous(type) && !kf_type_is_channels_last(type)) ||
      nbytes != kf_type_numel(type) * (int64_t)kf_dtype_size(type->dtype) || (nbytes && !data)) {
    kf_diag_error(diag, "constant '%s': needs a dense (row-major or channels-last) tensor type and "
                  "numel * dtype size bytes", fqn);
    st = KF_ERR_INVALID;
    goto fail;
  }
  if (kf_graph_find_weight(g, fqn)) {
    kf_diag_error(diag, "constant '%s': the graph already has a weight of that name", fqn);
    st = KF_ERR_INVALID;
    goto fail;
  }
  if (g->store.get != layer_get) {
    l = calloc(1, sizeof *l);
    if (!l) goto nomem;
    l->base = g->store;
    g->store.impl = l;
    g->store.get = layer_get;
    g->store.destroy = layer_destroy;
  }
  l = g->store.impl;
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 16;
    const_entry *e = realloc(l->e, sizeof *e * (size_t)cap);
    if (!e) goto nomem;
    l->e = e;
    l->cap = cap;
  }
  name = strdup(fqn);
  if (!name) goto nomem;
  l->e[l->n].fqn = name;
  l->e[l->n].data = data;
  l->e[l->n].nbytes = nbytes;
  l->n++;
  int wi = kf_graph_add_weight(g, fqn, type, nbytes);
  g->weights[wi].graph_owned = true;
  return KF_OK;
nomem:
  kf_diag_error(diag, "constant '%s': out of memory", fqn);
  st = KF_ERR_NOMEM;
fail:
  free(data);
  return st;
}

kf_op *kf_graph_append_op(kf_graph *g, kf_opcode code, const char *name,
                          kf_value **operands, int n_operands,
                          const kf_type *result_types, int n_results) {
  kf_op *op = kf_graph_alloc(g, sizeof *op);
  op->code = code;
  op->graph = g;
  if (name) {
    op->name = kf_graph_strdup(g, name);
  } else {
    char buf[32];
    snprintf(buf, sizeof buf, "t%u", g->next_name_id++);
    op->name = kf_graph_strdup(g, buf);
  }
  op->n_operands = n_operands;
  op->operands = kf_graph_alloc(g, sizeof(kf_value *) * (size_t)(n_operands ? n_operands : 1));
  for (int i = 0; i < n_operands; i++) op->operands[i] = operands[i];
  op->n_results = n_results;
  op->results = kf_graph_alloc(g, sizeof(kf_value *) * (size_t)(n_results ? n_results : 1));
  for (int i = 0; i < n_results; i++) {
    op->results[i] = new_value(g, &result_types[i]);
    op->results[i]->def = op;
    op->results[i]->index = i;
  }
  op->prev = g->last;
  if (g->last)
    g->last->next = op;
  else
    g->first = op;
  g->last = op;
  return op;
}

void kf_graph_move_op(kf_graph *g, kf_op *op, kf_op *before) {
  if (op == before) return;
  kf_graph_remove_op(g, op);
  op->next = before;
  op->prev = before ? before->prev : g->last;
  if (op->prev)
    op->prev->next = op;
  else
    g->first = op;
  if (before)
    before->prev = op;
  else
    g->last = op;
}

void kf_graph_remove_op(kf_graph *g, kf_op *op) {
  if (op->prev)
    op->prev->next = op->next;
  else
    g->first = op->next;
  if (op->next)
    op->next->prev = op->prev;
  else
    g->last = op->prev;
  op->prev = op->next = NULL;
}

void kf_graph_replace_uses(kf_graph *g, kf_value *from, kf_value *to) {
  for (kf_op *op = g->first; op; op = op->next)
    for (int i = 0; i < op->n_operands; i++)
      if (op->operands[i] == from) op->operands[i] = to;
  for (int i = 0; i < g->n_outputs; i++)
    if (g->outputs[i] == from) g->outputs[i] = to;
}

int kf_graph_count_uses(const kf_graph *g, const kf_value *v) {
  int n = 0;
  for (const kf_op *op = g->first; op; op = op->next)
    for (int i = 0; i < op->n_operands; i++) n += op->operands[i] == v;
  for (int i = 0; i < g->n_outputs; i++) n += g->outputs[i] == v;
  return n;
}

int kf_graph_count_ops(const kf_graph *g) {
  int n = 0;
  for (const kf_op *op = g->first; op; op = op->next) n++;
  return n;
}

/* ---- attributes ---------------------------------------------------------- */

static kf_attr *attr_slot(const kf_op *op, const char *name, kf_attr_kind kind) {
  int i = kf_op_attr_index(op->code, name);
  if (i < 0 || kf_op_info_get(op->code)->attrs[i].kind != kind) {
    char msg[160];
    snprintf(msg, sizeof msg, "op kf.%s has no attribute %s of kind '%c'",
             kf_opcode_name(op->code), name, (char)kind);
    kf_panic(__FILE__, __LINE__, msg);
  }
  return (kf_attr *)&op->attrs[i];
}

void kf_op_set_int(kf_op *op, const char *name, int64_t v) {
  kf_attr *a = attr_slot(op, name, KF_ATTR_INT);
  a->present = true;
  a->u.i = v;
}
void kf_op_set_float(kf_op *op, const char *name, double v) {
  kf_attr *a = attr_slot(op, name, KF_ATTR_FLOAT);
  a->present = true;
  a->u.f = v;
}
void kf_op_set_bool(kf_op *op, const char *name, bool v) {
  kf_attr *a = attr_slot(op, name, KF_ATTR_BOOL);
  a->present = true;
  a->u.b = v;
}
void kf_op_set_ints(kf_op *op, const char *name, const int64_t *v, int n) {
  kf_attr *a = attr_slot(op, name, KF_ATTR_INTS);
  a->present = true;
  a->u.ints.n = n;
  a->u.ints.v = kf_graph_alloc(op->graph, sizeof(int64_t) * (size_t)(n ? n : 1));
  if (n) memcpy(a->u.ints.v, v, sizeof(int64_t) * (size_t)n);
}
void kf_op_set_floats(kf_op *op, const char *name, const double *v, int n) {
  kf_attr *a = attr_slot(op, name, KF_ATTR_FLOATS);
  a->present = true;
  a->u.floats.n = n;
  a->u.floats.v = kf_graph_alloc(op->graph, sizeof(double) * (size_t)(n ? n : 1));
  if (n) memcpy(a->u.floats.v, v, sizeof(double) * (size_t)n);
}
void kf_op_set_str(kf_op *op, const char *name, const char *s) {
  kf_attr *a = attr_slot(op, name, KF_ATTR_STR);
  a->present = true;
  a->u.s = kf_graph_strdup(op->graph, s);
}
void kf_op_set_dtype(kf_op *op, const char *name, kf_dtype t) {
  kf_attr *a = attr_slot(op, name, KF_ATTR_DTYPE);
  a->present = true;
  a->u.t = t;
}
void kf_op_set_number(kf_op *op, const char *name, kf_number v) {
  kf_attr *a = attr_slot(op, name, KF_ATTR_NUMBER);
  a->present = true;
  a->u.num = v;
}

bool kf_op_has_attr(const kf_op *op, const char *name) {
  int i = kf_op_attr_index(op->code, name);
  return i >= 0 && op->attrs[i].present;
}

static const kf_attr *get_present(const kf_op *op, const char *name,
                                  kf_attr_kind kind) {
  const kf_attr *a = attr_slot(op, name, kind);
  if (!a->present) {
    char msg[160];
    snprintf(msg, sizeof msg, "op '%s' (kf.%s): attribute %s is absent",
             op->name, kf_opcode_name(op->code), name);
    kf_panic(__FILE__, __LINE__, msg);
  }
  return a;
}

int64_t kf_op_get_int(const kf_op *op, const char *name) {
  return get_present(op, name, KF_ATTR_INT)->u.i;
}
double kf_op_get_float(const kf_op *op, const char *name) {
  return get_present(op, name, KF_ATTR_FLOAT)->u.f;
}
bool kf_op_get_bool(const kf_op *op, const char *name) {
  return get_present(op, name, KF_ATTR_BOOL)->u.b;
}
bool kf_op_get_flag(const kf_op *op, const char *name) {
  return kf_op_has_attr(op, name) && kf_op_get_bool(op, name);
}
const int64_t *kf_op_get_ints(const kf_op *op, const char *name, int *n) {
  const kf_attr *a = get_present(op, name, KF_ATTR_INTS);
  *n = a->u.ints.n;
  return a->u.ints.v;
}
const double *kf_op_get_floats(const kf_op *op, const char *name, int *n) {
  const kf_attr *a = get_present(op, name, KF_ATTR_FLOATS);
  *n = a->u.floats.n;
  return a->u.floats.v;
}
const char *kf_op_get_str(const kf_op *op, const char *name) {
  return get_present(op, name, KF_ATTR_STR)->u.s;
}
kf_dtype kf_op_get_dtype(const kf_op *op, const char *name) {
  return get_present(op, name, KF_ATTR_DTYPE)->u.t;
}
kf_number kf_op_get_number(const kf_op *op, const char *name) {
  return get_present(op, name, KF_ATTR_NUMBER)->u.num;
}
