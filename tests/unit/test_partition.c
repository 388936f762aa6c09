/* tests/unit/test_partition.c — unit tests of the compile-path passes
 * (materialize-outputs, fold-bn, fold-scalars), the partitioner and the
 * memory plan.
 *
 * Every PyTorch fixture goes through the compile passes and must still
 * match the outputs PyTorch recorded; its partition (fused and per-op) and
 * memory plan are then checked against their invariants from first
 * principles — every op in one group, groups in a valid order, inputs and
 * outputs exactly the values crossing the group boundary, keys the BLAKE3
 * of the canonical text, no two simultaneously live arena regions
 * overlapping (every pair checked), views without regions of their own,
 * outputs written in place. Small hand-built graphs pin down the fusion
 * rules, the folding rules and the canonical form one at a time. */
#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <llvm-c/blake3.h>

#include "kfuse/frontend.h"
#include "kfuse/interp.h"
#include "kfuse/ir.h"
#include "kfuse/pass.h"
#include "kfuse/partition.h"

#define COMPILE_PASSES "simplify,dce,scan-forms,fold-bn,fold-scalars,sink-reshapes,dce,materialize-outputs"
/* materialize-outputs first: the passes after it keep its guarantees */
#define COMPILE_PASSES_MATERIALIZE_FIRST "materialize-outputs,fold-bn,fold-scalars,sink-reshapes,dce"

/* ---- harness ------------------------------------------------------------------ */

static kf_strbuf msgs;

static void capture(void *user, kf_diag_level level, const char *msg) {
  (void)user;
  if (level == KF_DIAG_ERROR) kf_strbuf_printf(&msgs, "%s\n", msg);
}

static kf_diag *fresh_diag(void) {
  static kf_diag d;
  kf_strbuf_fini(&msgs);
  kf_strbuf_init(&msgs);
  kf_diag_init(&d, capture, NULL);
  return &d;
}

static const char *messages(void) { return msgs.data ? msgs.data : ""; }

static kf_graph *g;

static int setup(void **state) {
  (void)state;
  g = kf_graph_create("test");
  fresh_diag();
  return g ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  kf_graph_destroy(g);
  g = NULL;
  kf_strbuf_fini(&msgs);
  return 0;
}

#define NARGS(T, ...) ((int)(sizeof((T[]){__VA_ARGS__}) / sizeof(T)))
#define SHAPE(...) NARGS(int64_t, __VA_ARGS__), (const int64_t[]){__VA_ARGS__}
#define ARGS(...) (kf_value *[]){__VA_ARGS__}, NARGS(kf_value *, __VA_ARGS__)

static kf_type tt(kf_dtype dt, int rank, const int64_t *shape) {
  kf_type t;
  kf_type_init_tensor(&t, dt, rank, shape);
  return t;
}

static kf_value *input(const char *name, kf_dtype dt, int rank, const int64_t *shape) {
  kf_type t = tt(dt, rank, shape);
  return kf_graph_add_input(g, name, &t);
}

/* Append an op; attributes are set by the caller before fin(). decl: the
 * declared result types where they carry information (reshape, expand,
 * full, cast), else NULL. */
static kf_op *mk(kf_opcode code, const char *name, kf_value **ops, int n, int nres,
                 const kf_type *decl) {
  kf_type t[4];
  memset(t, 0, sizeof t);
  for (int i = 0; decl && i < nres; i++) t[i] = decl[i];
  return kf_graph_append_op(g, code, name, ops, n, t, nres);
}

static kf_value *fin(kf_op *o) {
  kf_type t[4];
  for (int i = 0; i < o->n_results; i++) t[i] = o->results[i]->type;
  if (kf_infer_types(o, t, fresh_diag()) != KF_OK) fail_msg("infer: %s", messages());
  for (int i = 0; i < o->n_results; i++) o->results[i]->type = t[i];
  return o->results[0];
}

static kf_value *op_(kf_opcode code, const char *name, kf_value **ops, int n) {
  return fin(mk(code, name, ops, n, 1, NULL));
}

static kf_value *scalar(const char *name, kf_number v) {
  kf_op *o = mk(KF_OP_SCALAR, name, NULL, 0, 1, NULL);
  kf_op_set_number(o, "value", v);
  return fin(o);
}

static kf_value *full(const char *name, kf_dtype dt, int rank, const int64_t *shape, kf_number v) {
  kf_type t = tt(dt, rank, shape);
  kf_op *o = mk(KF_OP_FULL, name, NULL, 0, 1, &t);
  kf_op_set_number(o, "value", v);
  return fin(o);
}

/* A graph-owned constant (kf_graph_add_constant) read by a kf.param. */
static kf_value *constant(const char *fqn, kf_dtype dt, int rank, const int64_t *shape,
                          const double *vals) {
  kf_type t = tt(dt, rank, shape);
  int64_t n = kf_type_numel(&t), nb = n * (int64_t)kf_dtype_size(dt);
  kf_tensor h = {dt, 1, {n}, malloc((size_t)nb + 1)};
  assert_non_null(h.data);
  for (int64_t i = 0; i < n; i++) kf_tensor_set(&h, i, vals[i]);
  assert_int_equal(kf_graph_add_constant(g, fqn, &t, h.data, nb, fresh_diag()), KF_OK);
  kf_op *o = mk(KF_OP_PARAM, fqn, NULL, 0, 1, &t);
  kf_op_set_str(o, "fqn", fqn);
  kf_op_set_str(o, "kind", "constant");
  return fin(o);
}

static void outputs(kf_value **v, int n) { kf_graph_set_outputs(g, v, n); }

static void verify_ok(const kf_graph *gr) {
  if (kf_graph_verify(gr, fresh_diag()) != KF_OK) fail_msg("verify: %s", messages());
}

static int count_code(const kf_graph *gr, kf_opcode c) {
  int n = 0;
  for (const kf_op *op = gr->first; op; op = op->next) n += op->code == c;
  return n;
}

/* Deterministic inputs in [-2, 2) for a graph. */
static void fill_inputs(const kf_graph *gr, kf_tensor *ins) {
  uint32_t s = 12345;
  for (int i = 0; i < gr->n_inputs; i++) {
    const kf_type *t = &gr->inputs[i]->type;
    ins[i].dtype = t->dtype;
    ins[i].rank = t->rank;
    memcpy(ins[i].shape, t->shape, sizeof ins[i].shape);
    assert_int_equal(kf_tensor_alloc(&ins[i]), KF_OK);
    for (int64_t e = 0; e < kf_tensor_numel(&ins[i]); e++) {
      s = s * 1664525u + 1013904223u;
      kf_tensor_set(&ins[i], e, (double)(s >> 8) / (double)(1u << 24) * 4.0 - 2.0);
    }
  }
}

static void run(const kf_graph *gr, const kf_tensor *ins, kf_tensor *outs) {
  if (kf_interp_run(gr, ins, gr->n_inputs, outs, NULL, fresh_diag()) != KF_OK)
    fail_msg("interp: %s", messages());
}

static double max_abs(const kf_tensor *t) {
  double m = 0;
  for (int64_t i = 0; i < kf_tensor_numel(t); i++)
    if (fabs(kf_tensor_get(t, i)) > m) m = fabs(kf_tensor_get(t, i));
  return m;
}

/* ---- invariants of a partition and a memory plan ---------------------------------- */

static int op_index(const kf_graph *gr, const kf_op *op) {
  int i = 0;
  for (const kf_op *o = gr->first; o; o = o->next, i++)
    if (o == op) return i;
  return -1;
}

static bool used_outside(const kf_partition *p, const kf_value *v, int gid) {
  const kf_graph *gr = p->graph;
  for (int i = 0; i < gr->n_outputs; i++)
    if (gr->outputs[i] == v) return true;
  int i = 0;
  for (const kf_op *op = gr->first; op; op = op->next, i++)
    for (int s = 0; s < op->n_operands; s++)
      if (op->operands[s] == v && p->group_of_op[i] != gid) return true;
  return false;
}

static bool is_free_op(const kf_op *op) {
  return op->code == KF_OP_PARAM || op->code == KF_OP_SCALAR;
}

static void check_partition(const kf_partition *p, const char *what) {
  const kf_graph *gr = p->graph;
  int n_ops = kf_graph_count_ops(gr);
  int *seen = calloc((size_t)n_ops + 1, sizeof *seen);
  assert_non_null(seen);
  for (int t = 0; t < p->n_groups; t++) {
    const kf_group *grp = &p->groups[t];
    if (grp->id != t) fail_msg("%s: group %d has id %d", what, t, grp->id);
    if (grp->n_ops < 1) fail_msg("%s: group %d is empty", what, t);
    int anchors = 0, prev = -1;
    for (int k = 0; k < grp->n_ops; k++) {
      const kf_op *op = grp->ops[k];
      int i = op_index(gr, op);
      if (i < 0 || p->group_of_op[i] != t) fail_msg("%s: op '%s' listed in group %d", what, op->name, t);
      if (i <= prev) fail_msg("%s: group %d is not in program order", what, t);
      prev = i;
      seen[i]++;
      kf_op_kind kind = kf_op_info_get(op->code)->kind;
      bool ew = kind == KF_KIND_UNARY || kind == KF_KIND_BINARY || kind == KF_KIND_TERNARY ||
                op->code == KF_OP_FULL || op->code == KF_OP_ARANGE;
      if (is_free_op(op)) fail_msg("%s: free op '%s' in group %d", what, op->name, t);
      if (op == grp->anchor) anchors++;
      switch (grp->kind) {
      case KF_GROUP_VIEW:
        if (kind != KF_KIND_VIEW && op->code != KF_OP_SPLIT)
          fail_msg("%s: non-view '%s' in view group %d", what, op->name, t);
        break;
      case KF_GROUP_ELEMENTWISE:
        if (!ew) fail_msg("%s: '%s' in elementwise group %d", what, op->name, t);
        break;
      case KF_GROUP_OPAQUE:
        /* one op, or a cat with the element-wise ops computing its pieces
         * (absorb_cat_pieces), which write nothing but the cat */
        if (grp->n_ops != 1) {
          int cats = 0;
          for (int q = 0; q < grp->n_ops; q++) cats += grp->ops[q]->code == KF_OP_CAT;
          if (cats != 1 || (op->code != KF_OP_CAT && !ew))
            fail_msg("%s: opaque group %d has %d ops, '%s' among them", what, t, grp->n_ops, op->name);
          if (op->code != KF_OP_CAT)
            for (int q = 0; q < grp->n_outputs; q++)
              if (grp->outputs[q]->def == op)
                fail_msg("%s: cat group %d writes its piece '%s'", what, t, op->name);
        }
        break;
      case KF_GROUP_ATTENTION:
        if (grp->n_ops != 1) fail_msg("%s: %s group %d has %d ops", what,
                                      kf_group_kind_name(grp->kind), t, grp->n_ops);
        break;
      default:
        if (op != grp->anchor && !ew)
          fail_msg("%s: '%s' in %s group %d is neither its anchor nor element-wise", what,
                   op->name, kf_group_kind_name(grp->kind), t);
      }
    }
    bool wants_anchor = grp->kind == KF_GROUP_REDUCE || grp->kind == KF_GROUP_SCAN || grp->kind == KF_GROUP_GEMM ||
                        grp->kind == KF_GROUP_CONV || grp->kind == KF_GROUP_ATTENTION;
    if (anchors != (wants_anchor ? 1 : 0) || (!wants_anchor && grp->anchor))
      fail_msg("%s: group %d (%s) has a wrong anchor", what, t, kf_group_kind_name(grp->kind));
    /* inputs: exactly the outside values read, first use first, each
     * produced by an earlier group (or a graph input / free op) */
    int ni = 0;
    for (int k = 0; k < grp->n_ops; k++) {
      const kf_op *op = grp->ops[k];
      for (int s = 0; s < op->n_operands; s++) {
        const kf_value *v = op->operands[s];
        if (!v) continue;
        int d = v->def ? op_index(gr, v->def) : -1;
        if (d >= 0 && p->group_of_op[d] == t) continue;
        bool dup = false;
        for (int j = 0; j < ni; j++) dup |= grp->inputs[j] == v;
        if (dup) continue;
        if (ni >= grp->n_inputs || grp->inputs[ni] != v)
          fail_msg("%s: group %d input %d is not the value first used there", what, t, ni);
        if (d >= 0 && p->group_of_op[d] >= t)
          fail_msg("%s: group %d reads a value of group %d, which runs later", what, t,
                   p->group_of_op[d]);
        if (d >= 0 && p->group_of_op[d] < 0 && !is_free_op(v->def))
          fail_msg("%s: group %d reads a value of an op in no group", what, t);
        ni++;
      }
    }
    if (ni != grp->n_inputs) fail_msg("%s: group %d has %d inputs, expected %d", what, t,
                                      grp->n_inputs, ni);
    int no = 0;
    for (int k = 0; k < grp->n_ops; k++)
      for (int r = 0; r < grp->ops[k]->n_results; r++) {
        const kf_value *v = grp->ops[k]->results[r];
        if (!used_outside(p, v, t)) continue;
        if (no >= grp->n_outputs || grp->outputs[no] != v)
          fail_msg("%s: group %d output %d is not the value used outside", what, t, no);
        no++;
      }
    if (no != grp->n_outputs) fail_msg("%s: group %d has %d outputs, expected %d", what, t,
                                       grp->n_outputs, no);
    /* the key is the BLAKE3 of the canonical text */
    assert_non_null(grp->canonical);
    llvm_blake3_hasher h;
    uint8_t key[32];
    char hex[65];
    llvm_blake3_hasher_init(&h);
    llvm_blake3_hasher_update(&h, grp->canonical, strlen(grp->canonical));
    llvm_blake3_hasher_finalize(&h, key, 32);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", key[i]);
    if (memcmp(key, grp->key, 32) || strcmp(hex, grp->key_hex))
      fail_msg("%s: group %d key is not the BLAKE3 of its canonical form", what, t);
  }
  int i = 0;
  for (const kf_op *op = gr->first; op; op = op->next, i++) {
    int want = is_free_op(op) ? 0 : 1;
    if (seen[i] != want) fail_msg("%s: op '%s' is in %d groups", what, op->name, seen[i]);
    if (want == 0 && p->group_of_op[i] != -1) fail_msg("%s: free op '%s' has a group", what, op->name);
  }
  free(seen);
}

/* The value whose memory v uses, following ops of VIEW groups (the
 * partition's own notion of aliasing, independent of the memory plan). */
static const kf_value *root_of(const kf_partition *p, const kf_value *v) {
  while (v->def) {
    int i = op_index(p->graph, v->def);
    int gid = p->group_of_op[i];
    if (gid < 0 || p->groups[gid].kind != KF_GROUP_VIEW) break;
    v = v->def->operands[0];
  }
  return v;
}

static void check_memplan(const kf_partition *p, const kf_memplan *m, const char *what) {
  const kf_graph *gr = p->graph;
  size_t nv = gr->next_value_id;
  int *def_t = malloc(sizeof(int) * (nv + 1)), *last_t = malloc(sizeof(int) * (nv + 1));
  assert_true(def_t && last_t);
  for (size_t v = 0; v < nv; v++) def_t[v] = last_t[v] = -1;
  for (int t = 0; t < p->n_groups; t++) {
    const kf_group *grp = &p->groups[t];
    for (int k = 0; k < grp->n_outputs; k++) def_t[grp->outputs[k]->id] = t;
    if (grp->kind == KF_GROUP_VIEW) continue;
    for (int k = 0; k < grp->n_inputs; k++) {
      const kf_value *r = root_of(p, grp->inputs[k]);
      if (last_t[r->id] < t) last_t[r->id] = t;
    }
  }
  for (int i = 0; i < gr->n_outputs; i++) {
    const kf_storage *s = &m->storage[gr->outputs[i]->id];
    if (s->kind != KF_STORAGE_OUTPUT || s->index != i)
      fail_msg("%s: graph output %d is not written in place", what, i);
  }
  for (int i = 0; i < gr->n_inputs; i++)
    if (m->storage[gr->inputs[i]->id].kind != KF_STORAGE_INPUT) fail_msg("%s: input storage", what);
  /* collect arena regions; views alias their root */
  const kf_value **reg = calloc(nv + 1, sizeof *reg);
  int nr = 0;
  assert_non_null(reg);
  for (int t = 0; t < p->n_groups; t++) {
    const kf_group *grp = &p->groups[t];
    for (int k = 0; k < grp->n_ops; k++)
      for (int r = 0; r < grp->ops[k]->n_results; r++) {
        const kf_value *v = grp->ops[k]->results[r];
        const kf_storage *s = &m->storage[v->id];
        if (grp->kind == KF_GROUP_VIEW) {
          const kf_storage *rs = &m->storage[root_of(p, v)->id];
          if (s->kind != rs->kind || s->index != rs->index || s->offset != rs->offset ||
              s->base == v || s->base != rs->base)
            fail_msg("%s: view '%s' does not share its root's storage", what, v->def->name);
          continue;
        }
        bool is_out = false;
        for (int j = 0; j < grp->n_outputs; j++) is_out |= grp->outputs[j] == v;
        if (!is_out) {
          if (s->kind != KF_STORAGE_NONE)
            fail_msg("%s: group-internal '%s' has storage", what, v->def->name);
          continue;
        }
        if (s->kind == KF_STORAGE_ARENA) {
          if (s->base != v) fail_msg("%s: region of '%s' has another base", what, v->def->name);
          if (s->offset % 256) fail_msg("%s: region of '%s' is not aligned", what, v->def->name);
          int64_t ext = kf_type_numel(&v->type) * (int64_t)kf_dtype_size(v->type.dtype);
          if (s->nbytes < ext || s->offset + s->nbytes > m->scratch_offset)
            fail_msg("%s: region of '%s' is too small or past the arena", what, v->def->name);
          reg[nr++] = v;
        } else if (s->kind != KF_STORAGE_OUTPUT) {
          fail_msg("%s: group output '%s' has storage kind %d", what, v->def->name, s->kind);
        }
      }
  }
  /* no two simultaneously live regions overlap: every pair */
  for (int a = 0; a < nr; a++)
    for (int b = a + 1; b < nr; b++) {
      const kf_value *x = reg[a], *y = reg[b];
      int xl = last_t[x->id] > def_t[x->id] ? last_t[x->id] : def_t[x->id];
      int yl = last_t[y->id] > def_t[y->id] ? last_t[y->id] : def_t[y->id];
      bool live = def_t[x->id] <= yl && def_t[y->id] <= xl;
      const kf_storage *sx = &m->storage[x->id], *sy = &m->storage[y->id];
      bool overlap = sx->nbytes && sy->nbytes && sx->offset < sy->offset + sy->nbytes &&
                     sy->offset < sx->offset + sx->nbytes;
      if (live && overlap)
        fail_msg("%s: regions of '%s' and '%s' overlap while both live", what, x->def->name,
                 y->def->name);
    }
  if (m->scratch_offset % 256 || m->arena_bytes < m->scratch_offset + m->scratch_bytes ||
      m->naive_bytes < m->arena_bytes)
    fail_msg("%s: arena %lld, naive %lld, scratch %lld at %lld", what, (long long)m->arena_bytes,
             (long long)m->naive_bytes, (long long)m->scratch_bytes, (long long)m->scratch_offset);
  free(reg);
  free(def_t);
  free(last_t);
}

static kf_partition *partition_h(const kf_graph *gr, bool fuse, bool horizontal, kf_precision prec) {
  kf_partition_options o;
  kf_partition_options_init(&o);
  o.fuse = fuse;
  o.horizontal = horizontal;
  o.precision = prec;
  kf_partition *p = NULL;
  if (kf_partition_graph(gr, &o, &p, fresh_diag()) != KF_OK) fail_msg("partition: %s", messages());
  return p;
}

static kf_partition *partition(const kf_graph *gr, bool fuse, kf_precision prec) {
  return partition_h(gr, fuse, true, prec);
}

/* per-op, fused without horizontal fusion, fused */
static void check_all(const kf_graph *gr, const char *what) {
  for (int mode = 0; mode < 3; mode++) {
    bool fuse = mode > 0;
    char w[700];
    snprintf(w, sizeof w, "%s (%s)", what, mode == 0 ? "per-op" : mode == 1 ? "fused, not horizontally" : "fused");
    kf_partition *p = partition_h(gr, fuse, mode == 2, KF_PRECISION_DEFAULT);
    check_partition(p, w);
    kf_memplan *m = NULL;
    if (kf_memplan_build(p, 1000, &m, fresh_diag()) != KF_OK) fail_msg("%s: memplan: %s", w, messages());
    check_memplan(p, m, w);
    if (!fuse)
      for (int t = 0; t < p->n_groups; t++)
        if (p->groups[t].kind != KF_GROUP_VIEW && p->groups[t].n_ops != 1)
          fail_msg("%s: per-op group %d has %d ops", w, t, p->groups[t].n_ops);
    kf_memplan_destroy(m);
    kf_partition_destroy(p);
  }
}

/* Group of the op named `name`. */
static const kf_group *group_of(const kf_partition *p, const char *name) {
  int i = 0;
  for (const kf_op *op = p->graph->first; op; op = op->next, i++)
    if (strcmp(op->name, name) == 0) return p->group_of_op[i] >= 0 ? &p->groups[p->group_of_op[i]] : NULL;
  fail_msg("no op '%s'", name);
  return NULL;
}

/* ---- fixtures -------------------------------------------------------------------------- */

static const char *fixtures_dir(void) {
  const char *d = getenv("KFUSE_FIXTURES");
  return d ? d : "tests/fixtures";
}

static kf_graph *load_fixture(const char *name, const char *flavour) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.%s.pt2", fixtures_dir(), name, flavour);
  kf_load_options o;
  kf_load_options_init(&o);
  kf_graph *gr = NULL;
  if (kf_pt2_load(path, &o, &gr, fresh_diag()) != KF_OK) fail_msg("load %s: %s", path, messages());
  return gr;
}

/* Interpret gr on the fixture's recorded inputs and compare with its
 * recorded outputs. */
static void match_recorded(const kf_graph *gr, const char *name, const char *what) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s.kfio", fixtures_dir(), name);
  kf_io_file f;
  if (kf_io_read(path, &f, fresh_diag()) != KF_OK) fail_msg("%s: %s", path, messages());
  assert_int_equal(f.n_inputs, gr->n_inputs);
  assert_int_equal(f.n_outputs, gr->n_outputs);
  kf_tensor *ins = calloc((size_t)f.n_inputs + 1, sizeof *ins);
  kf_tensor *outs = calloc((size_t)f.n_outputs + 1, sizeof *outs);
  assert_true(ins && outs);
  for (int i = 0; i < f.n_inputs; i++) ins[i] = f.inputs[i].t;
  run(gr, ins, outs);
  for (int i = 0; i < f.n_outputs; i++) {
    if (kf_tensor_compare(&outs[i], &f.outputs[i].t, f.atol, f.rtol, what, fresh_diag()) != KF_OK)
      fail_msg("%s", messages());
    kf_tensor_fini(&outs[i]);
  }
  free(ins);
  free(outs);
  kf_io_fini(&f);
}

/* Every fixture: compile passes, recorded outputs still match, outputs
 * materialised, partition and memory plan invariants. */
static void test_fixtures(void **state) {
  (void)state;
  DIR *dir = opendir(fixtures_dir());
  if (!dir) fail_msg("cannot open %s", fixtures_dir());
  int n = 0;
  struct dirent *e;
  while ((e = readdir(dir))) {
    size_t len = strlen(e->d_name);
    if (len < 6 || strcmp(e->d_name + len - 5, ".kfio")) continue;
    char name[256];
    snprintf(name, sizeof name, "%.*s", (int)(len - 5), e->d_name);
    for (int fl = 0; fl < 4; fl++) {
      const char *flavour = fl % 2 ? "core" : "default";
      const char *pipeline = fl < 2 ? COMPILE_PASSES : COMPILE_PASSES_MATERIALIZE_FIRST;
      char what[600], path[1024];
      snprintf(what, sizeof what, "%.200s.%s [%s]", name, flavour, pipeline);
      /* a fixture may have one flavour (make_fixtures.py's CORE_ONLY,
       * DEFAULT_ONLY), as tests/CMakeLists.txt allows */
      snprintf(path, sizeof path, "%s/%s.%s.pt2", fixtures_dir(), name, flavour);
      if (access(path, R_OK) != 0) continue;
      kf_graph *gr = load_fixture(name, flavour);
      verify_ok(gr);
      if (kf_pass_run_pipeline(gr, pipeline, true, fresh_diag()) != KF_OK)
        fail_msg("%s: passes: %s", what, messages());
      match_recorded(gr, name, what);
      for (int i = 0; i < gr->n_outputs; i++) {
        const kf_value *v = gr->outputs[i];
        if (!v->def || v->def->code == KF_OP_PARAM || !kf_type_is_contiguous(&v->type) ||
            v->type.offset != 0)
          fail_msg("%s: output %d is not materialised", what, i);
        for (int j = 0; j < i; j++)
          if (gr->outputs[j] == v) fail_msg("%s: outputs %d and %d are one value", what, j, i);
      }
      check_all(gr, what);
      kf_graph_destroy(gr);
      n++;
    }
  }
  closedir(dir);
  assert_true(n >= 80);
}

/* Batch norm folded into convolutions: the interpreter agrees before and
 * after within 1e-5 relative, and with PyTorch's recorded outputs. */
static void test_fold_bn_fixtures(void **state) {
  (void)state;
  const char *names[] = {"resnet_block", "mobilenetv2_block"};
  for (int k = 0; k < 2; k++)
    for (int fl = 0; fl < 2; fl++) {
      const char *flavour = fl ? "core" : "default";
      char path[1024];
      snprintf(path, sizeof path, "%s/%s.kfio", fixtures_dir(), names[k]);
      kf_io_file f;
      assert_int_equal(kf_io_read(path, &f, fresh_diag()), KF_OK);
      kf_graph *gr = load_fixture(names[k], flavour);
      kf_tensor *ins = calloc((size_t)f.n_inputs + 1, sizeof *ins);
      kf_tensor before[4] = {0}, after[4] = {0};
      assert_non_null(ins);
      assert_true(gr->n_outputs <= 4);
      for (int i = 0; i < f.n_inputs; i++) ins[i] = f.inputs[i].t;
      run(gr, ins, before);
      int bn = count_code(gr, KF_OP_BATCH_NORM);
      assert_true(bn > 0);
      if (kf_pass_run_pipeline(gr, "fold-bn,dce", true, fresh_diag()) != KF_OK)
        fail_msg("%s: %s", names[k], messages());
      assert_int_equal(count_code(gr, KF_OP_BATCH_NORM), 0);
      int folded = 0;
      for (int i = 0; i < gr->n_weights; i++) folded += gr->weights[i].graph_owned;
      assert_int_equal(folded, 2 * bn);
      run(gr, ins, after);
      for (int i = 0; i < gr->n_outputs; i++) {
        double scale = max_abs(&before[i]);
        if (kf_tensor_compare(&after[i], &before[i], 1e-5 * scale, 1e-5, names[k], fresh_diag()))
          fail_msg("%s.%s: %s", names[k], flavour, messages());
        if (kf_tensor_compare(&after[i], &f.outputs[i].t, f.atol, f.rtol, names[k], fresh_diag()))
          fail_msg("%s.%s vs PyTorch: %s", names[k], flavour, messages());
        kf_tensor_fini(&before[i]);
        kf_tensor_fini(&after[i]);
      }
      free(ins);
      kf_io_fini(&f);
      kf_graph_destroy(gr);
    }
}

/* ---- fold-bn on hand-built graphs -------------------------------------------------------- */

static void bn_operands(const char *pre, int64_t c, kf_value **w, kf_value **b, kf_value **mean,
                        kf_value **var) {
  double vw[16], vb[16], vm[16], vv[16];
  char fqn[64];
  for (int i = 0; i < c; i++) {
    vw[i] = 0.5 + 0.25 * i;
    vb[i] = -0.3 + 0.1 * i;
    vm[i] = 0.2 * i - 0.4;
    vv[i] = 0.6 + 0.3 * i;
  }
  snprintf(fqn, sizeof fqn, "%s_w", pre);
  *w = constant(fqn, KF_DTYPE_F32, SHAPE(c), vw);
  snprintf(fqn, sizeof fqn, "%s_b", pre);
  *b = constant(fqn, KF_DTYPE_F32, SHAPE(c), vb);
  snprintf(fqn, sizeof fqn, "%s_mean", pre);
  *mean = constant(fqn, KF_DTYPE_F32, SHAPE(c), vm);
  snprintf(fqn, sizeof fqn, "%s_var", pre);
  *var = constant(fqn, KF_DTYPE_F32, SHAPE(c), vv);
}

static kf_value *bn(const char *name, kf_value *x, kf_value *w, kf_value *b, kf_value *m,
                    kf_value *v) {
  kf_op *o = mk(KF_OP_BATCH_NORM, name, ARGS(x, w, b, m, v), 1, NULL);
  kf_op_set_float(o, "eps", 1e-3);
  return fin(o);
}

/* Folds in a graph, checks numerics against the unfolded one (within rtol
 * and rtol / 10 of the largest magnitude). */
static void fold_and_compare(int expect_bn_left, double rtol) {
  verify_ok(g);
  kf_tensor ins[4] = {0}, before[4] = {0}, after[4] = {0};
  fill_inputs(g, ins);
  run(g, ins, before);
  if (kf_pass_run_pipeline(g, "fold-bn,dce", true, fresh_diag()) != KF_OK) fail_msg("%s", messages());
  assert_int_equal(count_code(g, KF_OP_BATCH_NORM), expect_bn_left);
  run(g, ins, after);
  for (int i = 0; i < g->n_outputs; i++) {
    if (kf_tensor_compare(&after[i], &before[i], rtol / 10 * max_abs(&before[i]), rtol, "fold",
                          fresh_diag()))
      fail_msg("%s", messages());
    kf_tensor_fini(&before[i]);
    kf_tensor_fini(&after[i]);
  }
  for (int i = 0; i < g->n_inputs; i++) kf_tensor_fini(&ins[i]);
}

static void test_fold_bn_conv(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(2, 3, 5, 5));
  double wv[4 * 3 * 9], bv[4] = {0.1, -0.2, 0.3, 0.05};
  for (int i = 0; i < 4 * 3 * 9; i++) wv[i] = sin(0.37 * i);
  kf_value *w = constant("conv.weight", KF_DTYPE_F32, SHAPE(4, 3, 3, 3), wv);
  kf_value *cb = constant("conv.bias", KF_DTYPE_F32, SHAPE(4), bv);
  kf_op *c = mk(KF_OP_CONV, "conv", ARGS(x, w, cb), 1, NULL);
  kf_op_set_ints(c, "stride", (int64_t[]){1, 1}, 2);
  kf_op_set_ints(c, "padding", (int64_t[]){1, 1}, 2);
  kf_op_set_ints(c, "dilation", (int64_t[]){1, 1}, 2);
  kf_op_set_ints(c, "output_padding", (int64_t[]){0, 0}, 2);
  kf_op_set_bool(c, "transposed", false);
  kf_op_set_int(c, "groups", 1);
  kf_value *y = fin(c), *bw, *bb, *bm, *bvar;
  bn_operands("bn", 4, &bw, &bb, &bm, &bvar);
  kf_value *z = bn("bn", y, bw, bb, bm, bvar);
  kf_value *r = op_(KF_OP_RELU, "relu", ARGS(z));
  outputs(&r, 1);
  fold_and_compare(0, 1e-5);
  /* the conv now reads folded constants */
  kf_op *conv = g->first;
  while (conv && conv->code != KF_OP_CONV) conv = conv->next;
  assert_non_null(conv);
  assert_string_equal(kf_op_get_str(conv->operands[1]->def, "kind"), "folded");
  assert_non_null(conv->operands[2]);
  const kf_weight *fw = kf_graph_find_weight(g, kf_op_get_str(conv->operands[1]->def, "fqn"));
  assert_non_null(fw);
  assert_true(fw->graph_owned);
}

static void test_fold_bn_linear(void **state) {
  (void)state;
  /* linear (addmm with a transposed weight) and a bare mm, each + bn1d */
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(5, 3));
  double wv[12], bias[4] = {0.5, -0.5, 0.25, 0};
  for (int i = 0; i < 12; i++) wv[i] = cos(0.7 * i);
  kf_value *w = constant("fc.weight", KF_DTYPE_F32, SHAPE(4, 3), wv);
  kf_value *b = constant("fc.bias", KF_DTYPE_F32, SHAPE(4), bias);
  kf_op *pm = mk(KF_OP_PERMUTE, "wt", ARGS(w), 1, NULL);
  kf_op_set_ints(pm, "dims", (int64_t[]){1, 0}, 2);
  kf_value *wt = fin(pm);
  kf_op *am = mk(KF_OP_ADDMM, "addmm", ARGS(b, x, wt), 1, NULL);
  kf_op_set_number(am, "beta", kf_number_float(0.5));
  kf_op_set_number(am, "alpha", kf_number_float(2.0));
  kf_value *y = fin(am), *bw, *bb, *bm, *bv;
  bn_operands("bn1", 4, &bw, &bb, &bm, &bv);
  kf_value *z = bn("bn1", y, bw, bb, bm, bv);
  kf_value *m2 = constant("m2", KF_DTYPE_F32, SHAPE(3, 4), wv);
  kf_value *y2 = op_(KF_OP_MM, "mm", ARGS(x, m2));
  bn_operands("bn2", 4, &bw, &bb, &bm, &bv);
  kf_value *z2 = bn("bn2", y2, bw, bb, bm, bv);
  /* a bn whose product has another use becomes a multiply-add */
  kf_value *y3 = op_(KF_OP_MM, "mm3", ARGS(x, m2));
  bn_operands("bn3", 4, &bw, &bb, &bm, &bv);
  kf_value *z3 = bn("bn3", y3, bw, bb, bm, bv);
  kf_value *s3 = op_(KF_OP_ADD, "s3", ARGS(z3, y3));
  outputs((kf_value *[]){z, z2, s3}, 3);
  fold_and_compare(0, 1e-5);
  assert_int_equal(count_code(g, KF_OP_MM), 1);
  assert_int_equal(count_code(g, KF_OP_ADDMM), 2);
  const kf_op *ma = g->first;
  while (ma && strcmp(ma->name, "bn3_mul")) ma = ma->next;
  assert_non_null(ma);
  assert_ptr_equal(ma->operands[0], y3);
  assert_int_equal(ma->operands[1]->type.rank, 1);
}

/* A batch norm on a pooled 16-bit input: multiply-add in f32, cast back. */
static void test_fold_bn_affine(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F16, SHAPE(2, 3, 4, 4));
  kf_op *mp = mk(KF_OP_MAX_POOL, "pool", ARGS(x), 2, NULL);
  kf_op_set_ints(mp, "kernel", (int64_t[]){2, 2}, 2);
  kf_op_set_ints(mp, "stride", (int64_t[]){2, 2}, 2);
  kf_op_set_ints(mp, "padding", (int64_t[]){0, 0}, 2);
  kf_op_set_ints(mp, "dilation", (int64_t[]){1, 1}, 2);
  kf_op_set_bool(mp, "ceil_mode", false);
  kf_value *p = fin(mp), *bw, *bb, *bm, *bv;
  bn_operands("bn", 3, &bw, &bb, &bm, &bv);
  kf_value *z = bn("bn", p, bw, bb, bm, bv);
  outputs(&z, 1);
  /* the interpreter keeps the unfolded f16 result in double; the cast
   * rounds it: f16's half ulp */
  fold_and_compare(0, 1e-3);
  assert_int_equal(count_code(g, KF_OP_CAST), 1);
  assert_int_equal(g->outputs[0]->type.dtype, KF_DTYPE_F16);
  const kf_op *mul = g->first;
  while (mul && mul->code != KF_OP_MUL) mul = mul->next;
  assert_non_null(mul);
  assert_int_equal(mul->operands[1]->type.rank, 3); /* [C, 1, 1] */
  assert_int_equal(mul->operands[1]->type.shape[0], 3);
  assert_int_equal(mul->results[0]->type.dtype, KF_DTYPE_F32);
  kf_partition *pt = partition(g, true, KF_PRECISION_DEFAULT);
  assert_int_equal(group_of(pt, "bn_mul")->kind, KF_GROUP_ELEMENTWISE);
  assert_ptr_equal(group_of(pt, "bn_mul"), group_of(pt, "bn_cast"));
  kf_partition_destroy(pt);
}

/* ---- materialize-outputs --------------------------------------------------------------- */

static void test_materialize_outputs(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(2, 3));
  kf_value *w = constant("w", KF_DTYPE_F32, SHAPE(2, 3), (double[]){1, 2, 3, 4, 5, 6});
  kf_value *y = op_(KF_OP_EXP, "y", ARGS(x));
  kf_op *pm = mk(KF_OP_PERMUTE, "yt", ARGS(y), 1, NULL);
  kf_op_set_ints(pm, "dims", (int64_t[]){1, 0}, 2);
  kf_value *yt = fin(pm);
  kf_type flat = tt(KF_DTYPE_F32, SHAPE(6));
  kf_value *yf = fin(mk(KF_OP_RESHAPE, "yf", ARGS(y), 1, &flat)); /* contiguous, but a view */
  kf_value *z = op_(KF_OP_ADD, "z", ARGS(y, w));
  /* a whole view of a value returned nowhere else is written in place */
  kf_value *w2 = op_(KF_OP_SIN, "w2", ARGS(x));
  kf_value *wv = fin(mk(KF_OP_RESHAPE, "wv", ARGS(w2), 1, &flat));
  outputs((kf_value *[]){x, w, y, yt, y, yf, z, wv, w2}, 9);
  verify_ok(g);
  kf_tensor ins[1] = {0}, before[9] = {0}, after[9] = {0};
  fill_inputs(g, ins);
  run(g, ins, before);
  assert_int_equal(kf_pass_run_pipeline(g, "materialize-outputs", true, fresh_diag()), KF_OK);
  run(g, ins, after);
  /* copies for the input, the weight, the strided view, the duplicate, the
   * view of y (returned already) and w2 (whose memory wv returns); y (first
   * time), z and wv stay */
  assert_int_equal(count_code(g, KF_OP_COPY), 6);
  assert_ptr_equal(g->outputs[2], y);
  assert_ptr_equal(g->outputs[6], z);
  assert_ptr_equal(g->outputs[7], wv);
  for (int i = 0; i < 9; i++) {
    assert_int_equal(kf_tensor_compare(&after[i], &before[i], 0, 0, "out", fresh_diag()), KF_OK);
    kf_tensor_fini(&before[i]);
    kf_tensor_fini(&after[i]);
  }
  kf_tensor_fini(&ins[0]);
  /* idempotent */
  assert_int_equal(kf_pass_run_pipeline(g, "materialize-outputs", true, fresh_diag()), KF_OK);
  assert_int_equal(count_code(g, KF_OP_COPY), 6);
  check_all(g, "materialize");
  kf_partition *p = partition(g, true, KF_PRECISION_DEFAULT);
  kf_memplan *m = NULL;
  assert_int_equal(kf_memplan_build(p, 0, &m, fresh_diag()), KF_OK);
  assert_int_equal(m->storage[w2->id].kind, KF_STORAGE_OUTPUT);
  assert_int_equal(m->storage[w2->id].index, 7);
  kf_memplan_destroy(m);
  kf_partition_destroy(p);
}

static void test_materialize_scalar_output(void **state) {
  (void)state;
  kf_value *s = scalar("s", kf_number_float(2.5));
  outputs(&s, 1);
  assert_int_equal(kf_pass_run_pipeline(g, "materialize-outputs", false, fresh_diag()),
                   KF_ERR_UNSUPPORTED);
  assert_non_null(strstr(messages(), "graph output 0 is a scalar"));
}

/* The memory plan refuses outputs that were not materialised. */
static void test_memplan_needs_materialized(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(4));
  kf_value *y = op_(KF_OP_NEG, "y", ARGS(x));
  outputs((kf_value *[]){y, y}, 2);
  verify_ok(g);
  kf_partition *p = partition(g, true, KF_PRECISION_DEFAULT);
  kf_memplan *m = NULL;
  assert_int_equal(kf_memplan_build(p, 0, &m, fresh_diag()), KF_ERR_INVALID);
  assert_null(m);
  assert_non_null(strstr(messages(), "graph output 1 ('y') shares its memory with an earlier output"));
  kf_partition_destroy(p);
}

/* An output dense in another order (channels-last): refused by the
 * module's memory plan, taken by kf_memplan_build_dense (the judge's
 * one-group plans), as OUTPUT storage of its elements' bytes */
static void test_memplan_dense_outputs(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(2, 3, 4, 5));
  kf_type cl = x->type;
  const int64_t st[4] = {60, 1, 15, 3};
  memcpy(cl.strides, st, sizeof st);
  kf_value *y = fin(mk(KF_OP_NEG, "y", ARGS(x), 1, &cl));
  assert_false(kf_type_is_contiguous(&y->type));
  outputs(&y, 1);
  verify_ok(g);
  kf_partition *p = partition(g, true, KF_PRECISION_DEFAULT);
  kf_memplan *m = NULL;
  assert_int_equal(kf_memplan_build(p, 0, &m, fresh_diag()), KF_ERR_INVALID);
  assert_null(m);
  assert_int_equal(kf_memplan_build_dense(p, 0, &m, fresh_diag()), KF_OK);
  assert_non_null(m);
  assert_int_equal(m->storage[y->id].kind, KF_STORAGE_OUTPUT);
  assert_int_equal(m->storage[y->id].nbytes, 120 * 4);
  kf_memplan_destroy(m);
  kf_partition_destroy(p);
}

/* ---- fold-scalars ---------------------------------------------------------------------- */

static const kf_op *def_of(const char *name) {
  for (const kf_op *op = g->first; op; op = op->next)
    if (strcmp(op->name, name) == 0) return op;
  return NULL;
}

static void test_fold_scalars(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(2, 3));
  kf_value *n = input("n", KF_DTYPE_I64, SHAPE(3));
  /* (full(2) * 3 + full(1)) / 2 -> full(3.5), then x * it stays */
  kf_value *two = full("two", KF_DTYPE_F32, SHAPE(2, 3), kf_number_float(2));
  kf_value *three = scalar("three", kf_number_int(3));
  kf_value *m = op_(KF_OP_MUL, "m", ARGS(two, three));
  kf_value *one = full("one", KF_DTYPE_F32, SHAPE(3), kf_number_float(1));
  kf_value *a = op_(KF_OP_ADD, "a", ARGS(m, one));
  kf_value *half = scalar("half", kf_number_float(0.5));
  kf_value *d = op_(KF_OP_MUL, "d", ARGS(a, half));
  kf_value *xd = op_(KF_OP_MUL, "xd", ARGS(x, d));
  /* identities: x * 1 and -0.0 + x go; x + 0.0 stays (it maps -0 to +0) */
  kf_value *s1 = scalar("s1", kf_number_int(1));
  kf_value *i1 = op_(KF_OP_MUL, "i1", ARGS(xd, s1));
  kf_value *nz = scalar("nz", kf_number_float(-0.0));
  kf_value *i2 = op_(KF_OP_ADD, "i2", ARGS(nz, i1));
  kf_value *pz = scalar("pz", kf_number_float(0.0));
  kf_value *keep = op_(KF_OP_ADD, "keep", ARGS(i2, pz));
  kf_value *i3 = op_(KF_OP_SUB, "i3", ARGS(keep, pz));
  /* integers: n + 0 goes; n * 1.0 promotes to f32, so it stays */
  kf_value *z = scalar("z", kf_number_int(0));
  kf_value *ni = op_(KF_OP_ADD, "ni", ARGS(n, z));
  kf_value *one_f = scalar("one_f", kf_number_float(1.0));
  kf_value *nf = op_(KF_OP_MUL, "nf", ARGS(ni, one_f));
  kf_value *fz = op_(KF_OP_MUL, "fz", ARGS(i3, s1)); /* a graph output: kept */
  outputs((kf_value *[]){fz, nf}, 2);
  verify_ok(g);
  kf_tensor ins[2] = {0}, before[2] = {0}, after[2] = {0};
  fill_inputs(g, ins);
  run(g, ins, before);
  assert_int_equal(kf_pass_run_pipeline(g, "fold-scalars,dce", true, fresh_diag()), KF_OK);
  run(g, ins, after);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(kf_tensor_compare(&after[i], &before[i], 0, 0, "out", fresh_diag()), KF_OK);
    kf_tensor_fini(&before[i]);
    kf_tensor_fini(&after[i]);
  }
  const kf_op *fd = def_of("d");
  assert_non_null(fd);
  assert_int_equal(fd->code, KF_OP_FULL);
  assert_true(kf_op_get_number(fd, "value").f == 3.5);
  assert_null(def_of("m")); /* folded into d, then dead */
  assert_null(def_of("i1"));
  assert_null(def_of("i2"));
  assert_non_null(def_of("keep"));
  assert_null(def_of("i3"));
  assert_null(def_of("ni"));
  assert_non_null(def_of("nf"));
  assert_non_null(def_of("fz"));
  for (int i = 0; i < 2; i++) kf_tensor_fini(&ins[i]);
}

/* Integer division by a zero fill cannot fold (the interpreter refuses);
 * a cast of a fill folds to a fill of the new dtype. */
static void test_fold_scalars_edges(void **state) {
  (void)state;
  kf_value *izero = full("izero", KF_DTYPE_I64, SHAPE(3), kf_number_int(0));
  kf_value *iseven = full("iseven", KF_DTYPE_I64, SHAPE(3), kf_number_int(7));
  kf_op *dv = mk(KF_OP_DIV, "idiv", ARGS(iseven, izero), 1, NULL);
  kf_op_set_str(dv, "rounding_mode", "trunc");
  kf_value *idiv = fin(dv);
  kf_value *third = full("third", KF_DTYPE_F64, SHAPE(2), kf_number_float(1.0 / 3.0));
  kf_type h = tt(KF_DTYPE_F16, SHAPE(2));
  kf_value *c = fin(mk(KF_OP_CAST, "c", ARGS(third), 1, &h));
  outputs((kf_value *[]){idiv, c}, 2);
  verify_ok(g);
  assert_int_equal(kf_pass_run_pipeline(g, "fold-scalars,dce", true, fresh_diag()), KF_OK);
  assert_int_equal(def_of("idiv")->code, KF_OP_DIV);
  const kf_op *fc = def_of("c");
  assert_int_equal(fc->code, KF_OP_FULL);
  /* 1/3 in f16 is 0x3555 = 0.333251953125 */
  assert_true(kf_op_get_number(fc, "value").f == 0.333251953125);
}

/* ---- sink-reshapes ------------------------------------------------------------------------- */

static kf_value *reshape(const char *name, kf_value *x, int rank, const int64_t *shape) {
  kf_type t = tt(x->type.dtype, rank, shape);
  return fin(mk(KF_OP_RESHAPE, name, ARGS(x), 1, &t));
}

static void test_sink_reshapes(void **state) {
  (void)state;
  double wv[20], bv[5], cv[3] = {0.5, -2, 3};
  for (int i = 0; i < 20; i++) wv[i] = 0.1 * i - 1;
  for (int i = 0; i < 5; i++) bv[i] = i;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(2, 3, 4));
  kf_value *res = input("res", KF_DTYPE_F32, SHAPE(2, 3, 5));
  kf_value *w = constant("w", KF_DTYPE_F32, SHAPE(4, 5), wv);
  kf_value *w2 = constant("w2", KF_DTYPE_F32, SHAPE(5, 2), wv);
  kf_value *bias = constant("bias", KF_DTYPE_F32, SHAPE(5), bv);
  kf_value *c = constant("c", KF_DTYPE_F32, SHAPE(3, 1), cv);
  kf_value *xf = reshape("xf", x, SHAPE(6, 4));
  kf_value *y = op_(KF_OP_MM, "y", ARGS(xf, w));
  kf_value *yv = reshape("yv", y, SHAPE(2, 3, 5));
  kf_op *ge = mk(KF_OP_GELU, "ge", ARGS(yv), 1, NULL);
  kf_op_set_str(ge, "approximate", "none");
  kf_value *g1 = fin(ge);
  kf_value *a1 = op_(KF_OP_ADD, "a1", ARGS(g1, res));  /* res is reshaped to [6, 5] */
  kf_value *a2 = op_(KF_OP_ADD, "a2", ARGS(a1, bias)); /* bias covers the shared last dim */
  kf_value *a3 = op_(KF_OP_MUL, "a3", ARGS(a2, scalar("two", kf_number_float(2))));
  kf_value *a4 = op_(KF_OP_MUL, "a4", ARGS(a3, c));    /* c spans dim 1: stays on [2, 3, 5] */
  kf_value *back = reshape("back", a1, SHAPE(6, 5));   /* a reshape of a reshape */
  kf_value *z = op_(KF_OP_MM, "z", ARGS(back, w2));
  outputs((kf_value *[]){a3, a4, z}, 3);
  verify_ok(g);
  kf_tensor ins[2] = {0}, before[3] = {0}, after[3] = {0};
  fill_inputs(g, ins);
  run(g, ins, before);
  assert_int_equal(kf_pass_run_pipeline(g, "sink-reshapes,dce,materialize-outputs", true,
                                        fresh_diag()), KF_OK);
  run(g, ins, after);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(kf_tensor_compare(&after[i], &before[i], 0, 0, "sink", fresh_diag()), KF_OK);
    kf_tensor_fini(&before[i]);
    kf_tensor_fini(&after[i]);
  }
  for (int i = 0; i < 2; i++) kf_tensor_fini(&ins[i]);
  const char *flat[] = {"ge_flat", "a1_flat", "a2_flat", "a3_flat"};
  for (int i = 0; i < 4; i++) {
    const kf_op *o = def_of(flat[i]);
    if (!o) fail_msg("no %s", flat[i]);
    assert_int_equal(o->results[0]->type.rank, 2);
  }
  assert_null(def_of("ge"));
  assert_null(def_of("a1"));
  assert_non_null(def_of("a4"));
  assert_null(def_of("back"));
  assert_ptr_equal(def_of("z")->operands[0], def_of("a1_flat")->results[0]);
  /* a3 is returned as a reshape of a3_flat, without a copy */
  assert_int_equal(count_code(g, KF_OP_COPY), 0);
  assert_ptr_equal(g->outputs[0]->def, def_of("a3_view"));
  kf_partition *p = partition(g, true, KF_PRECISION_DEFAULT);
  const kf_group *gy = group_of(p, "y");
  assert_int_equal(gy->kind, KF_GROUP_GEMM);
  for (int i = 0; i < 4; i++) assert_ptr_equal(group_of(p, flat[i]), gy);
  assert_true(group_of(p, "a4") != gy);
  kf_memplan *m = NULL;
  assert_int_equal(kf_memplan_build(p, 0, &m, fresh_diag()), KF_OK);
  check_memplan(p, m, "sink");
  assert_int_equal(m->storage[def_of("a3_flat")->results[0]->id].kind, KF_STORAGE_OUTPUT);
  kf_memplan_destroy(m);
  kf_partition_destroy(p);
  check_all(g, "sink");
}

/* ---- partition rules --------------------------------------------------------------------- */

static kf_value *conv2d(const char *name, kf_value *x, kf_value *w) {
  kf_op *c = mk(KF_OP_CONV, name, ARGS(x, w, NULL), 1, NULL);
  kf_op_set_ints(c, "stride", (int64_t[]){1, 1}, 2);
  kf_op_set_ints(c, "padding", (int64_t[]){1, 1}, 2);
  kf_op_set_ints(c, "dilation", (int64_t[]){1, 1}, 2);
  kf_op_set_ints(c, "output_padding", (int64_t[]){0, 0}, 2);
  kf_op_set_bool(c, "transposed", false);
  kf_op_set_int(c, "groups", 1);
  return fin(c);
}

static void test_partition_rules(void **state) {
  (void)state;
  double wv[4 * 4 * 9];
  for (int i = 0; i < 4 * 4 * 9; i++) wv[i] = 0.01 * i;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(2, 4, 6, 6));
  kf_value *w = constant("w", KF_DTYPE_F32, SHAPE(4, 4, 3, 3), wv);
  /* element-wise chain with a broadcast fill and a scalar: one group */
  kf_value *e1 = op_(KF_OP_EXP, "e1", ARGS(x));
  kf_value *f = full("f", KF_DTYPE_F32, SHAPE(4, 1, 1), kf_number_float(0.5));
  kf_value *e2 = op_(KF_OP_MUL, "e2", ARGS(e1, f));
  kf_value *k = scalar("k", kf_number_float(3.0));
  kf_value *e3 = op_(KF_OP_ADD, "e3", ARGS(e2, k));
  /* conv + residual add + relu: one conv group with the epilogue */
  kf_value *c = conv2d("c", e3, w);
  kf_value *r1 = op_(KF_OP_ADD, "r1", ARGS(c, e3));
  kf_value *r2 = op_(KF_OP_RELU, "r2", ARGS(r1));
  /* softmax with a private prologue: one reduce group; its epilogue too
   * (on another input: an op on r2 would join the conv's epilogue) */
  kf_value *y = input("y", KF_DTYPE_F32, SHAPE(2, 4, 6, 6));
  kf_value *p1 = op_(KF_OP_TANH, "p1", ARGS(y));
  kf_op *sm = mk(KF_OP_SOFTMAX, "sm", ARGS(p1), 1, NULL);
  kf_op_set_int(sm, "dim", 3);
  kf_value *s = fin(sm);
  kf_value *s2 = op_(KF_OP_SQRT, "s2", ARGS(s));
  /* a view of a group's value read together with the value: no cycle */
  kf_op *pm = mk(KF_OP_PERMUTE, "t", ARGS(s2), 1, NULL);
  kf_op_set_ints(pm, "dims", (int64_t[]){0, 1, 3, 2}, 4);
  kf_value *t = fin(pm);
  kf_value *u = op_(KF_OP_ADD, "u", ARGS(s2, t));
  /* a reduce whose producer is also used elsewhere: still its prologue
   * (the reduce's kernel writes q for the other reader) */
  kf_value *q = op_(KF_OP_NEG, "q", ARGS(u));
  kf_op *sum = mk(KF_OP_SUM, "sum", ARGS(q), 1, NULL);
  kf_op_set_ints(sum, "dims", (int64_t[]){2, 3}, 2);
  kf_op_set_bool(sum, "keepdim", true);
  kf_value *sq = fin(sum);
  /* shape of q, reading the sum broadcast per row: an element epilogue */
  kf_value *v = op_(KF_OP_MUL, "v", ARGS(q, sq));
  kf_op *co = mk(KF_OP_CAT, "cat", ARGS(v, u), 1, NULL);
  kf_op_set_int(co, "dim", 0);
  kf_value *cat = fin(co);
  outputs((kf_value *[]){cat, r2}, 2);
  verify_ok(g);
  kf_partition *p = partition(g, true, KF_PRECISION_DEFAULT);
  check_partition(p, "rules");
  const kf_group *ge = group_of(p, "e1");
  assert_int_equal(ge->kind, KF_GROUP_ELEMENTWISE);
  assert_ptr_equal(group_of(p, "e2"), ge);
  assert_ptr_equal(group_of(p, "e3"), ge);
  assert_ptr_equal(group_of(p, "f"), ge);
  assert_null(group_of(p, "k")); /* scalars are in no group ... */
  assert_non_null(strstr(ge->canonical, "in %i1: scalar f64 = f64 0x1.8p+1")); /* ... but keyed */
  const kf_group *gc = group_of(p, "c");
  assert_int_equal(gc->kind, KF_GROUP_CONV);
  assert_ptr_equal(group_of(p, "r1"), gc);
  assert_ptr_equal(group_of(p, "r2"), gc);
  const kf_group *gs = group_of(p, "sm");
  assert_int_equal(gs->kind, KF_GROUP_REDUCE);
  assert_ptr_equal(group_of(p, "p1"), gs);
  assert_ptr_equal(group_of(p, "s2"), gs);
  assert_int_equal(group_of(p, "t")->kind, KF_GROUP_VIEW);
  assert_true(group_of(p, "u") != gs);
  assert_ptr_equal(group_of(p, "sum"), group_of(p, "q"));
  assert_ptr_equal(group_of(p, "v"), group_of(p, "sum"));
  assert_int_equal(group_of(p, "cat")->kind, KF_GROUP_OPAQUE);
  assert_int_equal(gc->n_outputs, 1);
  assert_ptr_equal(gc->outputs[0], r2);
  kf_memplan *m = NULL;
  assert_int_equal(kf_memplan_build(p, 0, &m, fresh_diag()), KF_OK);
  check_memplan(p, m, "rules");
  assert_int_equal(m->storage[t->id].kind, KF_STORAGE_ARENA);
  assert_ptr_equal(m->storage[t->id].base, s2);
  assert_int_equal(m->storage[r2->id].kind, KF_STORAGE_OUTPUT);
  assert_int_equal(m->storage[e2->id].kind, KF_STORAGE_NONE); /* inside its group */
  kf_memplan_destroy(m);
  kf_partition_destroy(p);
  check_all(g, "rules");
}

/* Merging two element-wise groups through a shared consumer, unless a
 * third group sits between them. */
static void test_partition_merge(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(8));
  kf_value *a = op_(KF_OP_EXP, "a", ARGS(x));
  kf_value *b = op_(KF_OP_LOG, "b", ARGS(x));
  kf_value *c = op_(KF_OP_ADD, "c", ARGS(a, b)); /* merges {a} and {b} */
  kf_op *cs = mk(KF_OP_CUMSUM, "cs", ARGS(c), 1, NULL); /* e reads c too: no prologue */
  kf_op_set_int(cs, "dim", 0);
  kf_value *d = fin(cs);
  kf_value *e = op_(KF_OP_SIN, "e", ARGS(c));
  kf_value *h = op_(KF_OP_MUL, "h", ARGS(d, e)); /* c's group -> cs -> h: e's group can't hold h */
  outputs(&h, 1);
  verify_ok(g);
  kf_partition *p = partition(g, true, KF_PRECISION_DEFAULT);
  check_partition(p, "merge");
  assert_ptr_equal(group_of(p, "a"), group_of(p, "b"));
  assert_ptr_equal(group_of(p, "a"), group_of(p, "c"));
  assert_ptr_equal(group_of(p, "e"), group_of(p, "c"));
  assert_true(group_of(p, "h") != group_of(p, "c"));
  kf_partition_destroy(p);
}

/* Scans are anchors like reductions: the element-wise group computing the
 * scanned value is their prologue when nothing else reads its values, and
 * element-wise ops of the scan's shape after it are its epilogue; a
 * prologue value read elsewhere keeps its group apart. */
static void test_partition_scan(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(4, 6));
  kf_value *m = input("m", KF_DTYPE_BOOL, SHAPE(4, 6));
  kf_value *d = input("d", KF_DTYPE_F32, SHAPE(6));
  kf_value *xm = op_(KF_OP_MUL, "xm", ARGS(x, m));
  kf_value *xd = op_(KF_OP_MUL, "xd", ARGS(xm, d));
  kf_op *cs = mk(KF_OP_CUMSUM, "cs", ARGS(xd), 1, NULL);
  kf_op_set_int(cs, "dim", 1);
  kf_value *c = fin(cs);
  kf_value *q = op_(KF_OP_DIV, "q", ARGS(c, d));       /* epilogue */
  kf_value *r = op_(KF_OP_RELU, "r", ARGS(q));         /* epilogue */
  kf_value *e = op_(KF_OP_EXP, "e", ARGS(x));          /* read by cp and by the output */
  kf_op *cp = mk(KF_OP_CUMPROD, "cp", ARGS(e), 1, NULL);
  kf_op_set_int(cp, "dim", 0);
  kf_value *p2 = fin(cp);
  outputs((kf_value *[]){r, p2, e}, 3);
  verify_ok(g);
  kf_partition *p = partition(g, true, KF_PRECISION_DEFAULT);
  check_partition(p, "scan");
  const kf_group *gs = group_of(p, "cs");
  assert_int_equal(gs->kind, KF_GROUP_SCAN);
  assert_string_equal(gs->anchor->name, "cs");
  assert_ptr_equal(group_of(p, "xm"), gs);
  assert_ptr_equal(group_of(p, "xd"), gs);
  assert_ptr_equal(group_of(p, "q"), gs);
  assert_ptr_equal(group_of(p, "r"), gs);
  assert_int_equal(gs->n_inputs, 3);
  assert_int_equal(gs->n_outputs, 1);
  assert_ptr_equal(gs->outputs[0], r);
  assert_non_null(strstr(gs->canonical, "kind scan\n"));
  const kf_group *gp = group_of(p, "cp");
  assert_int_equal(gp->kind, KF_GROUP_SCAN);
  assert_int_equal(gp->n_ops, 1);
  assert_true(group_of(p, "e") != gp);
  kf_partition_destroy(p);
  /* unfused: every scan alone, still a SCAN group */
  p = partition(g, false, KF_PRECISION_DEFAULT);
  check_partition(p, "scan unfused");
  assert_int_equal(group_of(p, "cs")->kind, KF_GROUP_SCAN);
  assert_int_equal(group_of(p, "cs")->n_ops, 1);
  kf_partition_destroy(p);
}

/* x flipped along dim d, as the frontends lower flip */
static kf_value *flip(const char *name, kf_value *x, int64_t d) {
  char an[64];
  snprintf(an, sizeof an, "%s_idx", name);
  int64_t n = x->type.shape[d];
  kf_type it = tt(KF_DTYPE_I64, 1, (int64_t[]){n});
  kf_op *ar = mk(KF_OP_ARANGE, an, NULL, 0, 1, &it);
  kf_op_set_number(ar, "start", kf_number_int(n - 1));
  kf_op_set_number(ar, "end", kf_number_int(-1));
  kf_op_set_number(ar, "step", kf_number_int(-1));
  kf_op *is = mk(KF_OP_INDEX_SELECT, name, ARGS(x, fin(ar)), 1, NULL);
  kf_op_set_int(is, "dim", d);
  return fin(is);
}

static kf_value *scan(kf_opcode code, const char *name, kf_value *x, int64_t d) {
  kf_op *o = mk(code, name, ARGS(x), 1, NULL);
  kf_op_set_int(o, "dim", d);
  return fin(o);
}

static kf_value *slice(const char *name, kf_value *x, int64_t d, int64_t start, int64_t end) {
  kf_op *o = mk(KF_OP_SLICE, name, ARGS(x), 1, NULL);
  kf_op_set_int(o, "dim", d);
  kf_op_set_int(o, "start", start);
  kf_op_set_int(o, "end", end);
  kf_op_set_int(o, "step", 1);
  return fin(o);
}

static kf_value *cat2(const char *name, kf_value *a, kf_value *b, int64_t d) {
  kf_op *o = mk(KF_OP_CAT, name, ARGS(a, b), 1, NULL);
  kf_op_set_int(o, "dim", d);
  return fin(o);
}

/* scan-forms (pass/scan_forms.c): reverse and exclusive scans spelled with
 * flips, slices and cats become single scans with the same values; a
 * scan whose result is also read elsewhere stays for that reader. */
static void test_scan_forms(void **state) {
  (void)state;
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(3, 9));
  kf_value *n = input("n", KF_DTYPE_I32, SHAPE(5, 4));
  /* reverse cumsum; a reverse cumprod flipped back to a forward one */
  kf_value *rev = flip("f2", scan(KF_OP_CUMSUM, "cs", flip("f1", x, 1), 1), 1);
  kf_op *rp = mk(KF_OP_CUMPROD, "rp", ARGS(flip("f3", x, 1)), 1, NULL);
  kf_op_set_int(rp, "dim", 1);
  kf_op_set_bool(rp, "reverse", true);
  kf_value *rpv = fin(rp);
  kf_value *fwd2 = flip("f4", rpv, 1);
  /* a flip of a scan of an unflipped value: nothing to do */
  kf_value *one_flip = flip("f5", scan(KF_OP_CUMSUM, "cs1", x, 1), 1);
  /* exclusive cumprod: cat(ones, cumprod(x[:, :8])) */
  kf_value *ones = full("ones", KF_DTYPE_F32, SHAPE(3, 1), kf_number_int(1));
  kf_value *exc = cat2("ex", ones, scan(KF_OP_CUMPROD, "cp", slice("sl", x, 1, 0, 8), 1), 1);
  /* reverse exclusive cumsum over dim 0 of an int32 tensor, int64 result:
   * cat(flip(cumsum(flip(n[1:]))), zeros) */
  kf_value *z = full("z", KF_DTYPE_I64, SHAPE(1, 4), kf_number_int(0));
  kf_value *rs = flip("f8", scan(KF_OP_CUMSUM, "ci", flip("f7", slice("sl2", n, 0, 1, 5), 0), 0), 0);
  kf_value *rex = cat2("rex", rs, z, 0);
  /* a fill that is not the identity: stays a cat */
  kf_value *twos = full("twos", KF_DTYPE_F32, SHAPE(3, 1), kf_number_int(2));
  kf_value *keep = cat2("keep", twos, scan(KF_OP_CUMSUM, "cs2", slice("sl3", x, 1, 0, 8), 1), 1);
  outputs((kf_value *[]){rev, fwd2, exc, rex, keep, one_flip, rpv}, 7);
  verify_ok(g);
  kf_tensor ins[2] = {0}, before[7] = {0}, after[7] = {0};
  fill_inputs(g, ins);
  run(g, ins, before);
  assert_int_equal(kf_pass_run_pipeline(g, "scan-forms,dce", true, fresh_diag()), KF_OK);
  run(g, ins, after);
  for (int i = 0; i < 7; i++) {
    assert_int_equal(kf_tensor_compare(&after[i], &before[i], 1e-12, 1e-12, "scan-forms", fresh_diag()), KF_OK);
    kf_tensor_fini(&before[i]);
    kf_tensor_fini(&after[i]);
  }
  for (int i = 0; i < 2; i++) kf_tensor_fini(&ins[i]);
  assert_int_equal(count_code(g, KF_OP_INDEX_SELECT), 2); /* f5; f3, which rp still reads */
  assert_int_equal(count_code(g, KF_OP_CAT), 1);          /* keep */
  const kf_op *r = g->outputs[0]->def;
  assert_int_equal(r->code, KF_OP_CUMSUM);
  assert_ptr_equal(r->operands[0], x);
  assert_true(kf_op_get_flag(r, "reverse") && !kf_op_get_flag(r, "exclusive"));
  r = g->outputs[1]->def;
  assert_int_equal(r->code, KF_OP_CUMPROD);
  assert_ptr_equal(r->operands[0], x);
  assert_false(kf_op_get_flag(r, "reverse"));
  r = g->outputs[2]->def;
  assert_int_equal(r->code, KF_OP_CUMPROD);
  assert_ptr_equal(r->operands[0], x);
  assert_true(kf_op_get_flag(r, "exclusive") && !kf_op_get_flag(r, "reverse"));
  r = g->outputs[3]->def;
  assert_int_equal(r->code, KF_OP_CUMSUM);
  assert_ptr_equal(r->operands[0], n);
  assert_true(kf_op_get_flag(r, "exclusive") && kf_op_get_flag(r, "reverse"));
  assert_int_equal(g->outputs[3]->type.dtype, KF_DTYPE_I64);
  assert_int_equal(g->outputs[4]->def->code, KF_OP_CAT);
  assert_int_equal(g->outputs[5]->def->code, KF_OP_INDEX_SELECT);
}

/* Horizontal fusion: element-wise siblings of one shape that read a common
 * tensor share a group, unless a third group sits between them; at most 8
 * outputs a group; over large iteration spaces only groups that vectorise
 * alike; off with the option. */
static void test_partition_horizontal(void **state) {
  (void)state;
  /* 2^19 elements: above the launch-bound size, so vector widths count */
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(512, 1024));
  kf_value *w = input("w", KF_DTYPE_F32, SHAPE(1024));
  kf_value *y = input("y", KF_DTYPE_F32, SHAPE(512, 1024));
  kf_value *q = input("q", KF_DTYPE_F32, SHAPE(16));
  kf_value *s1 = op_(KF_OP_RELU, "s1", ARGS(x));
  kf_value *s2 = op_(KF_OP_EXP, "s2", ARGS(x));
  kf_value *sg = op_(KF_OP_SIGMOID, "sg", ARGS(x));
  kf_value *s3 = op_(KF_OP_MUL, "s3", ARGS(x, sg));
  kf_value *b = op_(KF_OP_NEG, "b", ARGS(y)); /* reads nothing the siblings read */
  /* sum takes s1 (an output too) as its prologue, and t, over x's shape and
   * reading the sum per row, as an element epilogue: s1 and t leave the
   * siblings for the reduction's kernel */
  kf_op *sum = mk(KF_OP_SUM, "sum", ARGS(s1), 1, NULL);
  kf_op_set_ints(sum, "dims", (int64_t[]){1}, 1);
  kf_op_set_bool(sum, "keepdim", true);
  kf_value *r = fin(sum);
  kf_value *t = op_(KF_OP_ADD, "t", ARGS(x, r));
  /* w is read at two shapes: v1 [8] stays apart, v2 [4, 8] joins the siblings */
  kf_value *v1 = op_(KF_OP_EXP, "v1", ARGS(w));
  kf_value *v2 = op_(KF_OP_ADD, "v2", ARGS(x, w));
  /* a sibling reading a transposed operand (scalar accesses) stays apart,
   * so the others keep 16-byte vectors; so does one writing f16 (8-element
   * vectors where the others have 4) */
  kf_value *xt = input("xt", KF_DTYPE_F32, SHAPE(1024, 512));
  kf_op *pm = mk(KF_OP_PERMUTE, "tr", ARGS(xt), 1, NULL);
  kf_op_set_ints(pm, "dims", (int64_t[]){1, 0}, 2);
  kf_value *tr = fin(pm);
  kf_value *m = op_(KF_OP_MUL, "m", ARGS(x, tr));
  kf_type ht = tt(KF_DTYPE_F16, 2, (const int64_t[]){512, 1024});
  kf_value *h = fin(mk(KF_OP_CAST, "h", ARGS(x), 1, &ht));
  /* over a launch-bound space the transposed sibling merges all the same */
  kf_value *z = input("z", KF_DTYPE_F32, SHAPE(4, 8));
  kf_value *zt = input("zt", KF_DTYPE_F32, SHAPE(8, 4));
  kf_op *pz = mk(KF_OP_PERMUTE, "ztr", ARGS(zt), 1, NULL);
  kf_op_set_ints(pz, "dims", (int64_t[]){1, 0}, 2);
  kf_value *ztr = fin(pz);
  kf_value *z1 = op_(KF_OP_RELU, "z1", ARGS(z));
  kf_value *z2 = op_(KF_OP_MUL, "z2", ARGS(z, ztr));
  /* ten siblings of q: 8 outputs in one group, 2 in another */
  static const kf_opcode un[10] = {KF_OP_RELU, KF_OP_EXP, KF_OP_SIN, KF_OP_COS, KF_OP_TANH,
                                   KF_OP_NEG, KF_OP_ABS, KF_OP_SIGMOID, KF_OP_SQRT, KF_OP_LOG};
  kf_value *outs[24];
  int n = 0;
  outs[n++] = s1;
  outs[n++] = s2;
  outs[n++] = s3;
  outs[n++] = b;
  outs[n++] = t;
  outs[n++] = v1;
  outs[n++] = v2;
  outs[n++] = m;
  outs[n++] = h;
  outs[n++] = z1;
  outs[n++] = z2;
  char qn[10][8];
  for (int i = 0; i < 10; i++) {
    snprintf(qn[i], sizeof qn[i], "q%d", i);
    outs[n++] = op_(un[i], qn[i], ARGS(q));
  }
  outputs(outs, n);
  verify_ok(g);
  kf_partition *p = partition(g, true, KF_PRECISION_DEFAULT);
  check_partition(p, "horizontal");
  const kf_group *gx = group_of(p, "s2");
  assert_int_equal(gx->kind, KF_GROUP_ELEMENTWISE);
  assert_ptr_equal(group_of(p, "s1"), group_of(p, "sum"));
  assert_ptr_equal(group_of(p, "t"), group_of(p, "sum"));
  assert_ptr_equal(group_of(p, "sg"), gx);
  assert_ptr_equal(group_of(p, "s3"), gx);
  assert_ptr_equal(group_of(p, "v2"), gx);
  assert_true(group_of(p, "b") != gx);
  assert_true(group_of(p, "t") != gx);
  assert_true(group_of(p, "v1") != gx);
  assert_true(group_of(p, "m") != gx);
  assert_true(group_of(p, "h") != gx);
  assert_ptr_equal(group_of(p, "z1"), group_of(p, "z2"));
  assert_int_equal(group_of(p, "sum")->kind, KF_GROUP_REDUCE);
  const kf_group *gq = group_of(p, "q0"), *gq2 = group_of(p, "q9");
  assert_true(gq != gq2);
  assert_int_equal(gq->n_outputs, 8);
  for (int i = 1; i < 8; i++) assert_ptr_equal(group_of(p, qn[i]), gq);
  assert_ptr_equal(group_of(p, "q8"), gq2);
  assert_int_equal(gq2->n_outputs, 2);
  int groups = p->n_groups;
  kf_partition_destroy(p);
  /* without it every sibling keeps its own group */
  p = partition_h(g, true, false, KF_PRECISION_DEFAULT);
  check_partition(p, "not horizontal");
  assert_true(group_of(p, "s1") != group_of(p, "s2"));
  assert_true(group_of(p, "s2") != group_of(p, "s3"));
  assert_true(group_of(p, "q0") != group_of(p, "q1"));
  /* x's siblings s2, sg + s3 and v2 come apart into three groups (s1 is
   * the reduction's prologue, in no sibling group), the rest as before */
  assert_int_equal(p->n_groups, groups + 2 + 1 + 6 + 1 + 1);
  kf_partition_destroy(p);
  check_all(g, "horizontal");
}

/* sdpa is alone; fuse off gives one group per op. */
static void test_partition_attention_unfused(void **state) {
  (void)state;
  kf_value *q = input("q", KF_DTYPE_F32, SHAPE(1, 2, 4, 8));
  kf_value *qs = op_(KF_OP_MUL, "qs", ARGS(q, q));
  kf_op *at = mk(KF_OP_SDPA, "at", ARGS(qs, q, q, NULL), 1, NULL);
  kf_op_set_bool(at, "is_causal", true);
  kf_op_set_bool(at, "enable_gqa", false);
  kf_value *a = fin(at);
  kf_value *r = op_(KF_OP_RELU, "r", ARGS(a));
  outputs(&r, 1);
  verify_ok(g);
  kf_partition *p = partition(g, true, KF_PRECISION_DEFAULT);
  assert_int_equal(group_of(p, "at")->kind, KF_GROUP_ATTENTION);
  assert_int_equal(group_of(p, "at")->n_ops, 1);
  assert_int_equal(p->n_groups, 3);
  kf_partition_destroy(p);
  p = partition(g, false, KF_PRECISION_DEFAULT);
  assert_int_equal(p->n_groups, 3);
  kf_partition_destroy(p);
  check_all(g, "attention");
}

/* ---- canonical form and keys -------------------------------------------------------------- */

/* One block: y = gelu(x @ w + b) * s, names prefixed, optionally with a
 * changed attribute or input layout. */
static kf_value *block(const char *pre, kf_value *x, const char *approx, bool transposed_w) {
  char n[64];
  double wv[16 * 8], bv[8];
  for (int i = 0; i < 16 * 8; i++) wv[i] = 0.001 * i;
  for (int i = 0; i < 8; i++) bv[i] = 0.1 * i;
  snprintf(n, sizeof n, "%s.w", pre);
  kf_value *w;
  if (transposed_w) {
    kf_value *wr = constant(n, KF_DTYPE_F32, SHAPE(8, 16), wv);
    snprintf(n, sizeof n, "%s_wt", pre);
    kf_op *pm = mk(KF_OP_PERMUTE, n, ARGS(wr), 1, NULL);
    kf_op_set_ints(pm, "dims", (int64_t[]){1, 0}, 2);
    w = fin(pm);
  } else {
    w = constant(n, KF_DTYPE_F32, SHAPE(16, 8), wv);
  }
  snprintf(n, sizeof n, "%s.b", pre);
  kf_value *b = constant(n, KF_DTYPE_F32, SHAPE(8), bv);
  snprintf(n, sizeof n, "%s_mm", pre);
  kf_op *am = mk(KF_OP_ADDMM, n, ARGS(b, x, w), 1, NULL);
  kf_op_set_number(am, "beta", kf_number_int(1));
  kf_op_set_number(am, "alpha", kf_number_int(1));
  kf_value *y = fin(am);
  snprintf(n, sizeof n, "%s_gelu", pre);
  kf_op *ge = mk(KF_OP_GELU, n, ARGS(y), 1, NULL);
  kf_op_set_str(ge, "approximate", approx);
  kf_value *z = fin(ge);
  snprintf(n, sizeof n, "%s_s", pre);
  kf_value *s = scalar(n, kf_number_float(0.5));
  snprintf(n, sizeof n, "%s_out", pre);
  return op_(KF_OP_MUL, n, ARGS(z, s));
}

static kf_graph *build_two_blocks(const char *pre1, const char *pre2, const char *approx2,
                                  bool transposed2) {
  kf_graph *keep = g;
  g = kf_graph_create("blocks");
  kf_value *x = input(pre1, KF_DTYPE_F32, SHAPE(4, 16));
  kf_value *y1 = block(pre1, x, "none", true);
  kf_value *x2 = op_(KF_OP_COPY, "mid", ARGS(x));
  kf_value *y2 = block(pre2, x2, approx2, transposed2);
  /* joined by an opaque op: an element-wise one would be block 2's epilogue */
  kf_op *co = mk(KF_OP_CAT, "cat", ARGS(y1, y2), 1, NULL);
  kf_op_set_int(co, "dim", 0);
  kf_value *o = fin(co);
  outputs(&o, 1);
  verify_ok(g);
  kf_graph *r = g;
  g = keep;
  return r;
}

static const kf_group *gemm_group(const kf_partition *p, int nth) {
  for (int i = 0; i < p->n_groups; i++)
    if (p->groups[i].kind == KF_GROUP_GEMM && nth-- == 0) return &p->groups[i];
  fail_msg("no gemm group %d", nth);
  return NULL;
}

static void test_canonical_keys(void **state) {
  (void)state;
  kf_graph *a = build_two_blocks("enc", "dec", "none", true);
  kf_graph *b = build_two_blocks("left_branch", "right_branch", "none", true);
  kf_graph *c = build_two_blocks("enc", "dec", "tanh", true);
  kf_graph *d = build_two_blocks("enc", "dec", "none", false);
  kf_partition *pa = partition(a, true, KF_PRECISION_DEFAULT);
  kf_partition *pb = partition(b, true, KF_PRECISION_DEFAULT);
  kf_partition *pc = partition(c, true, KF_PRECISION_DEFAULT);
  kf_partition *pd = partition(d, true, KF_PRECISION_DEFAULT);
  kf_partition *pt = partition(a, true, KF_PRECISION_TF32);
  check_partition(pa, "a");
  /* repeated blocks within a graph, and across graphs with other names */
  const kf_group *a0 = gemm_group(pa, 0), *a1 = gemm_group(pa, 1);
  assert_int_equal(a0->n_ops, 3); /* addmm, gelu, mul */
  assert_string_equal(a0->key_hex, a1->key_hex);
  assert_string_equal(a0->canonical, a1->canonical);
  assert_string_equal(a0->key_hex, gemm_group(pb, 0)->key_hex);
  assert_string_equal(a1->key_hex, gemm_group(pb, 1)->key_hex);
  assert_null(strstr(a0->canonical, "enc"));
  assert_null(strstr(a0->canonical, "gelu\""));
  /* one attribute, one input layout, the precision: different keys */
  assert_string_equal(gemm_group(pc, 0)->key_hex, a0->key_hex);
  assert_string_not_equal(gemm_group(pc, 1)->key_hex, a1->key_hex);
  assert_string_equal(gemm_group(pd, 0)->key_hex, a0->key_hex);
  assert_string_not_equal(gemm_group(pd, 1)->key_hex, a1->key_hex);
  assert_string_not_equal(gemm_group(pt, 0)->key_hex, a0->key_hex);
  assert_non_null(strstr(a0->canonical, "kfuse-group-v1\nkind gemm\nprecision default\n"));
  assert_non_null(strstr(a0->canonical, "strides [1,16]"));
  kf_partition_destroy(pa);
  kf_partition_destroy(pb);
  kf_partition_destroy(pc);
  kf_partition_destroy(pd);
  kf_partition_destroy(pt);
  kf_graph_destroy(a);
  kf_graph_destroy(b);
  kf_graph_destroy(c);
  kf_graph_destroy(d);
}

/* The same model loaded twice partitions to the same keys. */
static void test_keys_stable_across_loads(void **state) {
  (void)state;
  const char *names[] = {"gpt_block", "resnet_block"};
  for (int k = 0; k < 2; k++) {
    kf_graph *x = load_fixture(names[k], "core"), *y = load_fixture(names[k], "core");
    assert_int_equal(kf_pass_run_pipeline(x, COMPILE_PASSES, true, fresh_diag()), KF_OK);
    assert_int_equal(kf_pass_run_pipeline(y, COMPILE_PASSES, true, fresh_diag()), KF_OK);
    kf_partition *px = partition(x, true, KF_PRECISION_DEFAULT);
    kf_partition *py = partition(y, true, KF_PRECISION_DEFAULT);
    assert_int_equal(px->n_groups, py->n_groups);
    for (int i = 0; i < px->n_groups; i++)
      assert_string_equal(px->groups[i].key_hex, py->groups[i].key_hex);
    if (k == 0) {
      /* the block's second and third layer norms (same shapes, weights
       * aside) share a key — the first holds the embeddings' sum as its
       * prologue —; the attention and a norm do not */
      assert_string_equal(group_of(px, "native_layer_norm_1")->key_hex,
                          group_of(px, "native_layer_norm_2")->key_hex);
      assert_string_not_equal(group_of(px, "native_layer_norm")->key_hex,
                              group_of(px, "native_layer_norm_1")->key_hex);
      assert_string_not_equal(group_of(px, "native_layer_norm")->key_hex,
                              group_of(px, "scaled_dot_product_attention")->key_hex);
    }
    kf_partition_destroy(px);
    kf_partition_destroy(py);
    kf_graph_destroy(x);
    kf_graph_destroy(y);
  }
}

/* ---- memory plan ------------------------------------------------------------------------- */

static void test_memplan_reuse(void **state) {
  (void)state;
  /* a chain of 8 unfused ops over 1 KiB values: two regions suffice */
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(256));
  kf_value *v = x;
  char n[16];
  for (int i = 0; i < 8; i++) {
    snprintf(n, sizeof n, "op%d", i);
    v = op_(i % 2 ? KF_OP_EXP : KF_OP_NEG, n, ARGS(v));
  }
  kf_op *sl = mk(KF_OP_SLICE, "sl", ARGS(v), 1, NULL);
  kf_op_set_int(sl, "dim", 0);
  kf_op_set_int(sl, "start", 8);
  kf_op_set_int(sl, "end", 256);
  kf_op_set_int(sl, "step", 2);
  kf_value *s = fin(sl);
  kf_value *o = op_(KF_OP_SIN, "o", ARGS(s));
  outputs(&o, 1);
  verify_ok(g);
  kf_partition *p = partition(g, false, KF_PRECISION_DEFAULT);
  kf_memplan *m = NULL;
  assert_int_equal(kf_memplan_build(p, 300, &m, fresh_diag()), KF_OK);
  check_memplan(p, m, "chain");
  assert_int_equal(m->naive_bytes, 8 * 1024 + 512);
  assert_int_equal(m->scratch_offset, 2 * 1024);
  assert_int_equal(m->scratch_bytes, 512);
  assert_int_equal(m->arena_bytes, 2 * 1024 + 512);
  /* the slice aliases op7's region with its own element offset */
  assert_int_equal(m->storage[s->id].kind, KF_STORAGE_ARENA);
  assert_int_equal(m->storage[s->id].offset, m->storage[v->id].offset);
  assert_int_equal(s->type.offset, 8);
  kf_memplan_destroy(m);
  kf_partition_destroy(p);
}

static int failing_writer(void *user, const char *data, size_t n) {
  (void)user;
  (void)data;
  (void)n;
  return 1;
}

/* Names round-trip; bad arguments are refused with a message. */
static void test_names_and_errors(void **state) {
  (void)state;
  for (int i = KF_PRECISION_DEFAULT; i <= KF_PRECISION_LAST; i++) {
    kf_precision q;
    assert_true(kf_precision_parse(kf_precision_name((kf_precision)i), &q));
    assert_int_equal(q, i);
  }
  kf_precision q = KF_PRECISION_TF32;
  assert_false(kf_precision_parse("fp8", &q));
  assert_int_equal(q, KF_PRECISION_TF32);
  assert_string_equal(kf_group_kind_name(KF_GROUP_GEMM), "gemm");
  assert_string_equal(kf_group_kind_name(KF_GROUP_VIEW), "view");
  kf_value *x = input("x", KF_DTYPE_F32, SHAPE(4));
  kf_value *y = op_(KF_OP_NEG, "y", ARGS(x));
  outputs(&y, 1);
  kf_partition_options o;
  kf_partition_options_init(&o);
  assert_true(o.fuse);
  o.precision = (kf_precision)9;
  kf_partition *p = (kf_partition *)1;
  assert_int_equal(kf_partition_graph(g, &o, &p, fresh_diag()), KF_ERR_ARG);
  assert_null(p);
  assert_non_null(strstr(messages(), "unknown precision policy 9"));
  p = partition(g, true, KF_PRECISION_DEFAULT);
  kf_memplan *m = (kf_memplan *)1;
  assert_int_equal(kf_memplan_build(p, -1, &m, fresh_diag()), KF_ERR_ARG);
  assert_null(m);
  /* printing, and a writer that fails; destroy accepts NULL */
  kf_strbuf b;
  kf_strbuf_init(&b);
  assert_int_equal(kf_partition_print(p, kf_write_strbuf, &b), KF_OK);
  assert_non_null(strstr(b.data, "// partition of 'test': 1 groups (precision default): 1 elementwise"));
  kf_strbuf_fini(&b);
  assert_int_equal(kf_partition_print(p, failing_writer, NULL), KF_ERR_IO);
  kf_partition_destroy(p);
  kf_partition_destroy(NULL);
  kf_memplan_destroy(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_fixtures, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fold_bn_fixtures, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fold_bn_conv, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fold_bn_linear, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fold_bn_affine, setup, teardown),
      cmocka_unit_test_setup_teardown(test_materialize_outputs, setup, teardown),
      cmocka_unit_test_setup_teardown(test_materialize_scalar_output, setup, teardown),
      cmocka_unit_test_setup_teardown(test_memplan_needs_materialized, setup, teardown),
      cmocka_unit_test_setup_teardown(test_memplan_dense_outputs, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fold_scalars, setup, teardown),
      cmocka_unit_test_setup_teardown(test_fold_scalars_edges, setup, teardown),
      cmocka_unit_test_setup_teardown(test_sink_reshapes, setup, teardown),
      cmocka_unit_test_setup_teardown(test_scan_forms, setup, teardown),
      cmocka_unit_test_setup_teardown(test_partition_rules, setup, teardown),
      cmocka_unit_test_setup_teardown(test_partition_merge, setup, teardown),
      cmocka_unit_test_setup_teardown(test_partition_scan, setup, teardown),
      cmocka_unit_test_setup_teardown(test_partition_horizontal, setup, teardown),
      cmocka_unit_test_setup_teardown(test_partition_attention_unfused, setup, teardown),
      cmocka_unit_test_setup_teardown(test_canonical_keys, setup, teardown),
      cmocka_unit_test_setup_teardown(test_keys_stable_across_loads, setup, teardown),
      cmocka_unit_test_setup_teardown(test_memplan_reuse, setup, teardown),
      cmocka_unit_test_setup_teardown(test_names_and_errors, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
