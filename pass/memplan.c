/* pass/memplan.c — where every value of a partitioned graph lives
 * (kfuse/partition.h, kf_memplan_build).
 *
 *   graph inputs            INPUT, the caller's pointer
 *   kf.param results        WEIGHT, by weight index
 *   scalars                 NONE (units read them by value)
 *   views                   their storage root's storage; their own type
 *                           carries the element offset and strides
 *   group outputs returned  OUTPUT: written in place into the caller's
 *                           buffer (materialize-outputs guarantees they are
 *                           contiguous computed values, distinct); for an
 *                           output that is a whole view (a reshape of a
 *                           computed value), the value it views
 *   other group outputs     ARENA regions
 *   values inside a group   NONE (never leave the kernel)
 *
 * Arena regions: walking the groups in execution order, at step t the
 * regions whose last reader ran at step t-1 are freed, then the outputs of
 * group t are allocated. A region lives from the step that writes it to
 * the last step that reads it or reads a view of it (VIEW groups run
 * nothing, so their readers count instead), inclusive, so a kernel never
 * writes over an input it is still reading. Allocation is best fit over a
 * free list of holes kept sorted and coalesced; when no hole fits, the
 * region goes at the top of the arena (growing a free hole that ends there,
 * if any). Sizes are the value's extent, (largest element index + 1) *
 * element size, rounded up to 256 bytes, which is also every region's
 * alignment. Scratch for the units (GEMM workspaces) follows the regions
 * at scratch_offset; arena_bytes covers both, and naive_bytes is what the
 * same regions and scratch would take without reuse. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "kfuse/partition.h"
#include "pass_int.h"

#define ALIGN 256
/* Every size and offset of the plan is an int64_t byte count, and regions
 * are rounded up to ALIGN: sizes stay at or below this, so that rounding
 * and adding them up is checked in one place (heap_alloc, the totals). */
#define SIZE_LIMIT (INT64_MAX / 2)

static int64_t align_up(int64_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

/* Bytes from the value's storage start to one past its last element, or -1
 * when that is over SIZE_LIMIT (an absurd shape: 2^62 f32 elements, say). */
static int64_t extent_bytes(const kf_type *t) {
  if (t->kind != KF_TYPE_TENSOR) return 0;
  int64_t hi = t->offset, step;
  for (int i = 0; i < t->rank; i++) {
    if (t->shape[i] == 0) return 0;
    if (__builtin_mul_overflow(t->shape[i] - 1, t->strides[i], &step) ||
        __builtin_add_overflow(hi, step, &hi))
      return -1;
  }
  int64_t n;
  if (__builtin_add_overflow(hi, 1, &n) ||
      __builtin_mul_overflow(n, (int64_t)kf_dtype_size(t->dtype), &n) || n > SIZE_LIMIT)
    return -1;
  return n;
}

/* ---- free list ------------------------------------------------------------- */

typedef struct hole {
  int64_t off, size;
} hole;

typedef struct heap {
  hole *h;
  int n, cap;
  int64_t top; /* end of the highest region ever handed out */
} heap;

/* The offset of a region of size bytes, or -1 when the arena would pass
 * SIZE_LIMIT. */
static int64_t heap_alloc(heap *H, int64_t size) {
  int best = -1;
  for (int i = 0; i < H->n; i++)
    if (H->h[i].size >= size && (best < 0 || H->h[i].size < H->h[best].size)) best = i;
  if (best >= 0) {
    int64_t off = H->h[best].off;
    H->h[best].off += size;
    H->h[best].size -= size;
    if (H->h[best].size == 0) {
      memmove(&H->h[best], &H->h[best + 1], sizeof(hole) * (size_t)(H->n - best - 1));
      H->n--;
    }
    return off;
  }
  int64_t off = H->n && H->h[H->n - 1].off + H->h[H->n - 1].size == H->top ? H->h[H->n - 1].off
                                                                            : H->top;
  if (size > SIZE_LIMIT - off) return -1;
  if (off != H->top) H->n--; /* the free hole at the top grows */
  H->top = off + size;
  return off;
}

static bool heap_free(heap *H, int64_t off, int64_t size) {
  int i = 0;
  while (i < H->n && H->h[i].off < off) i++;
  if (H->n == H->cap) {
    int cap = H->cap ? H->cap * 2 : 16;
    hole *h = realloc(H->h, sizeof *h * (size_t)cap);
    if (!h) return false;
    H->h = h;
    H->cap = cap;
  }
  memmove(&H->h[i + 1], &H->h[i], sizeof(hole) * (size_t)(H->n - i));
  H->h[i].off = off;
  H->h[i].size = size;
  H->n++;
  if (i + 1 < H->n && H->h[i].off + H->h[i].size == H->h[i + 1].off) {
    H->h[i].size += H->h[i + 1].size;
    memmove(&H->h[i + 1], &H->h[i + 2], sizeof(hole) * (size_t)(H->n - i - 2));
    H->n--;
  }
  if (i > 0 && H->h[i - 1].off + H->h[i - 1].size == H->h[i].off) {
    H->h[i - 1].size += H->h[i].size;
    memmove(&H->h[i], &H->h[i + 1], sizeof(hole) * (size_t)(H->n - i - 1));
    H->n--;
  }
  return true;
}

/* ---- the plan ----------------------------------------------------------------- */

static const char *value_name(const kf_graph *g, const kf_value *v) {
  return v->def ? v->def->name : g->input_names[v->index];
}

static kf_status too_large(const kf_graph *g, const char *file, const kf_value *v, const char *what,
                           kf_diag *diag) {
  char t[256];
  kf_type_str(&v->type, t, sizeof t);
  kf_diag_error(diag, "%s: value '%s' (%s) %s", file, value_name(g, v), t, what);
  return KF_ERR_LIMIT;
}

kf_status kf_memplan_check_sizes(const kf_partition *p, kf_diag *diag) {
  const kf_graph *g = p->graph;
  const char *file = g->origin ? g->origin : g->name;
  for (int i = 0; i < g->n_inputs; i++)
    if (extent_bytes(&g->inputs[i]->type) < 0)
      return too_large(g, file, g->inputs[i], "is too large: its elements span more than 2^62 bytes",
                       diag);
  for (const kf_op *op = g->first; op; op = op->next)
    for (int r = 0; r < op->n_results; r++)
      if (extent_bytes(&op->results[r]->type) < 0)
        return too_large(g, file, op->results[r],
                         "is too large: its elements span more than 2^62 bytes", diag);
  return KF_OK;
}

static bool dense(const kf_type *t) {
  int64_t n = kf_type_numel(t), ext = 0;
  if (t->offset != 0 || n < 1) return t->offset == 0;
  for (int d = 0; d < t->rank; d++) {
    if (t->strides[d] < 0) return false;
    ext += (t->shape[d] - 1) * t->strides[d];
  }
  return ext + 1 == n;
}

static kf_status build(const kf_partition *p, int64_t scratch_bytes, bool dense_outputs, bool keep,
                       kf_memplan **out, kf_diag *diag);

kf_status kf_memplan_build(const kf_partition *p, int64_t scratch_bytes, kf_memplan **out, kf_diag *diag) {
  return build(p, scratch_bytes, false, false, out, diag);
}

kf_status kf_memplan_build_dense(const kf_partition *p, int64_t scratch_bytes, kf_memplan **out,
                                 kf_diag *diag) {
  return build(p, scratch_bytes, true, false, out, diag);
}

kf_status kf_memplan_build_keep(const kf_partition *p, int64_t scratch_bytes, kf_memplan **out, kf_diag *diag) {
  return build(p, scratch_bytes, false, true, out, diag);
}

/* keep: no region is ever freed (every value stays readable after a run) */
static kf_status build(const kf_partition *p, int64_t scratch_bytes, bool dense_outputs, bool keep,
                       kf_memplan **out, kf_diag *diag) {
  const kf_graph *g = p->graph;
  size_t nv = g->next_value_id ? g->next_value_id : 1;
  kf_memplan *m = calloc(1, sizeof *m);
  int *last = malloc(sizeof(int) * nv);
  int *out_of = malloc(sizeof(int) * nv); /* value id -> graph output index */
  heap H = {0};
  kf_status st = KF_OK;
  *out = NULL;
  if (!m || !last || !out_of || !(m->storage = calloc(nv, sizeof *m->storage))) goto nomem;
  if (scratch_bytes < 0) {
    kf_diag_error(diag, "memory plan: negative scratch size");
    st = KF_ERR_ARG;
    goto fail;
  }
  for (size_t v = 0; v < nv; v++) {
    last[v] = -1;
    out_of[v] = -1;
  }
  const char *file = g->origin ? g->origin : g->name;
  if (scratch_bytes > SIZE_LIMIT) {
    kf_diag_error(diag, "%s: %lld bytes of kernel scratch: over the memory plan's limit of 2^62 bytes", file,
                  (long long)scratch_bytes);
    st = KF_ERR_LIMIT;
    goto fail;
  }
  if ((st = kf_memplan_check_sizes(p, diag))) goto fail;

  for (int i = 0; i < g->n_inputs; i++) {
    kf_storage *s = &m->storage[g->inputs[i]->id];
    s->kind = KF_STORAGE_INPUT;
    s->index = i;
    s->nbytes = extent_bytes(&g->inputs[i]->type);
    s->base = g->inputs[i];
  }
  for (const kf_op *op = g->first; op; op = op->next) {
    if (op->code != KF_OP_PARAM) continue;
    const kf_weight *w = kf_graph_find_weight(g, kf_op_get_str(op, "fqn"));
    if (!w) {
      kf_diag_error(diag, "%s: node '%s' (kf.param): weight '%s' is not in the weight table", file,
                    op->name, kf_op_get_str(op, "fqn"));
      st = KF_ERR_INVALID;
      goto fail;
    }
    kf_storage *s = &m->storage[op->results[0]->id];
    s->kind = KF_STORAGE_WEIGHT;
    s->index = (int)(w - g->weights);
    s->nbytes = w->storage_bytes;
    s->base = op->results[0];
  }
  /* graph outputs: the invariant materialize-outputs establishes */
  for (int i = 0; i < g->n_outputs; i++) {
    const kf_value *v = g->outputs[i];
    const char *why = NULL;
    if (v->type.kind != KF_TYPE_TENSOR)
      why = "is a scalar";
    else if (!v->def || v->def->code == KF_OP_PARAM)
      why = v->def ? "is a weight" : "is a graph input";
    else if ((kf_op_is_view(v->def) && !kf_pass_is_whole_view(v)) ||
             !(kf_type_is_contiguous(&v->type) || (dense_outputs && !kf_op_is_view(v->def) && dense(&v->type))))
      why = "is a view or not contiguous";
    else if (out_of[kf_pass_storage_root(v)->id] >= 0)
      why = "shares its memory with an earlier output";
    if (why) {
      kf_diag_error(diag, "%s: graph output %d ('%s') %s: run the materialize-outputs pass before "
                    "planning memory", file, i, value_name(g, v), why);
      st = KF_ERR_INVALID;
      goto fail;
    }
    out_of[kf_pass_storage_root(v)->id] = i;
  }
  /* last reader of every storage root, by step */
  for (int t = 0; t < p->n_groups; t++) {
    const kf_group *grp = &p->groups[t];
    if (grp->kind == KF_GROUP_VIEW) continue;
    for (int k = 0; k < grp->n_inputs; k++) {
      const kf_value *r = kf_pass_storage_root(grp->inputs[k]);
      if (last[r->id] < t) last[r->id] = t;
    }
  }
  /* regions to free before step t: a list per step (head[t], next[r]) */
  int n_regions = 0;
  for (int t = 0; t < p->n_groups; t++)
    if (p->groups[t].kind != KF_GROUP_VIEW) n_regions += p->groups[t].n_outputs;
  const kf_value **region = calloc((size_t)n_regions + 1, sizeof *region);
  int *next = malloc(sizeof(int) * ((size_t)n_regions + 1));
  int *head = malloc(sizeof(int) * ((size_t)p->n_groups + 2));
  if (!region || !next || !head) {
    free(region);
    free(next);
    free(head);
    goto nomem;
  }
  for (int t = 0; t <= p->n_groups; t++) head[t] = -1;
  int nr = 0;
  for (int t = 0; t < p->n_groups && st == KF_OK; t++) {
    const kf_group *grp = &p->groups[t];
    /* free what step t-1 read last */
    for (int r = head[t]; r >= 0; r = next[r]) {
      const kf_storage *s = &m->storage[region[r]->id];
      if (s->nbytes > 0 && !heap_free(&H, s->offset, align_up(s->nbytes))) st = KF_ERR_NOMEM;
    }
    if (grp->kind == KF_GROUP_VIEW) {
      for (int k = 0; k < grp->n_ops; k++)
        for (int r = 0; r < grp->ops[k]->n_results; r++) {
          const kf_value *v = grp->ops[k]->results[r];
          const kf_value *root = kf_pass_storage_root(v);
          m->storage[v->id] = m->storage[root->id];
          if (m->storage[root->id].kind == KF_STORAGE_NONE) {
            kf_diag_error(diag, "%s: internal error: view '%s' of '%s', which has no storage",
                          file, value_name(g, v), value_name(g, root));
            st = KF_ERR_INTERNAL;
          }
        }
      continue;
    }
    for (int k = 0; k < grp->n_outputs; k++) {
      const kf_value *v = grp->outputs[k];
      kf_storage *s = &m->storage[v->id];
      s->base = v;
      s->nbytes = extent_bytes(&v->type);
      if (v->type.kind != KF_TYPE_TENSOR) {
        s->kind = KF_STORAGE_NONE;
        continue;
      }
      if (out_of[v->id] >= 0) {
        s->kind = KF_STORAGE_OUTPUT;
        s->index = out_of[v->id];
        continue;
      }
      s->kind = KF_STORAGE_ARENA;
      int64_t size = align_up(s->nbytes);
      if (__builtin_add_overflow(m->naive_bytes, size, &m->naive_bytes) || m->naive_bytes > SIZE_LIMIT)
        m->naive_bytes = SIZE_LIMIT; /* only reported */
      s->offset = size ? heap_alloc(&H, size) : 0;
      if (s->offset < 0) {
        st = too_large(g, file, v,
                       "does not fit in the arena: with the values live beside it, the arena would pass "
                       "2^62 bytes",
                       diag);
        break;
      }
      int when = keep ? p->n_groups : (last[v->id] > t ? last[v->id] : t) + 1; /* <= n_groups */
      region[nr] = v;
      next[nr] = head[when];
      head[when] = nr;
      nr++;
    }
  }
  free(region);
  free(next);
  free(head);
  if (st == KF_ERR_NOMEM) goto nomem;
  if (st) goto fail;
  m->scratch_offset = align_up(H.top);
  m->scratch_bytes = align_up(scratch_bytes);
  if (__builtin_add_overflow(m->scratch_offset, m->scratch_bytes, &m->arena_bytes) ||
      m->arena_bytes > SIZE_LIMIT) {
    kf_diag_error(diag, "%s: an arena of %lld bytes and %lld bytes of kernel scratch: over the memory plan's "
                  "limit of 2^62 bytes", file, (long long)m->scratch_offset, (long long)m->scratch_bytes);
    st = KF_ERR_LIMIT;
    goto fail;
  }
  m->naive_bytes = m->naive_bytes > SIZE_LIMIT - m->scratch_bytes ? SIZE_LIMIT
                                                                  : m->naive_bytes + m->scratch_bytes;
  free(H.h);
  free(last);
  free(out_of);
  *out = m;
  return KF_OK;
nomem:
  kf_diag_error(diag, "memory plan of '%s': out of memory", g->name);
  st = KF_ERR_NOMEM;
fail:
  free(H.h);
  free(last);
  free(out_of);
  kf_memplan_destroy(m);
  return st;
}

void kf_memplan_destroy(kf_memplan *m) {
  if (!m) return;
  free(m->storage);
  free(m);
}
