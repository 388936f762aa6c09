/* tests/cache/cache_compile.c — kfuse compile and kfuse warm with a
 * synthetic picker, for tests/cache/compile_cache_check.py. CI has no GPU,
 * so nothing can be verified there; this picker calls every candidate
 * correct (reward 1, the rule fastest: 1.0 ms, variants slower) on a GPU
 * named "synthetic-test-gpu", so that the compile driver's cache path —
 * store after judging, look up, build from hits alone, shard — runs end to
 * end through the same code as a real compile. Its entries say what they
 * are (GPU "synthetic-test-gpu", verdict device the same); the judge itself
 * is tested elsewhere (judge.*, tests/hacks, scripts/gpu_cache_check.sh on
 * a GPU).
 *
 *   cache_compile compile MODEL OUT.so CACHE_DIR [REPORT]
 *   cache_compile warm CACHE_DIR K/N MODEL...
 *
 * CACHE_COMPILE_VERDICT=fail makes every candidate fail verification
 * instead; CACHE_COMPILE_PICK_MS=N makes each judge call take N ms of
 * wall time and CACHE_COMPILE_JUDGE_SECONDS=S sets the compile's judging
 * time (kf_compile_options.judge_seconds; the library's default else);
 * CACHE_COMPILE_REVERIFY=1 compiles with --reverify;
 * CACHE_COMPILE_REMOTE=URL puts an HTTP remote behind the cache
 * (CACHE_COMPILE_REMOTE_RO=1: read-only).
 *
 * The runtime archive is found as kfuse finds it ($KFUSE_RUNTIME_LIB). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kfuse/cache.h"
#include "kfuse/compile.h"
#include "kfuse/frontend.h"

static kf_status synthetic_judge(void *user, const kf_graph *g, const kf_partition *p, const kf_group *grp,
                                 const kf_compile_options *o, kf_pick_cand *c, int n, kf_pick_info *info,
                                 kf_diag *diag) {
  (void)user, (void)g, (void)p, (void)o, (void)diag;
  const char *v = getenv("CACHE_COMPILE_VERDICT");
  bool fail = v && strcmp(v, "fail") == 0;
  const char *ms = getenv("CACHE_COMPILE_PICK_MS");
  if (ms && atoi(ms) > 0) {
    struct timespec ts = {.tv_sec = atoi(ms) / 1000, .tv_nsec = (long)(atoi(ms) % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
  }
  memset(info, 0, sizeof *info);
  info->judged = true;
  snprintf(info->device, sizeof info->device, "synthetic-test-gpu");
  info->floor_ms = 0.5;
  for (int k = 0; k < n; k++) {
    c[k].judged = true;
    c[k].correct = !fail;
    c[k].reward = fail ? -1 : 1;
    c[k].ms = 1.0 + 0.25 * k + 0.001 * (grp->id % 7);
    if (fail) snprintf(c[k].why, sizeof c[k].why, "incorrect: synthetic failure");
  }
  return KF_OK;
}

static void print_diag(void *user, kf_diag_level level, const char *msg) {
  (void)user;
  fprintf(stderr, "cache_compile: %s: %s\n",
          level == KF_DIAG_ERROR ? "error" : level == KF_DIAG_WARNING ? "warning" : "note", msg);
}

static kf_graph *load(const char *path, kf_diag *d) {
  kf_load_options lo;
  kf_load_options_init(&lo);
  kf_graph *g = NULL;
  if (kf_model_load(path, &lo, &g, d) != KF_OK) return NULL;
  if (kf_graph_verify(g, d) != KF_OK) {
    kf_graph_destroy(g);
    return NULL;
  }
  return g;
}

int main(int argc, char **argv) {
  kf_diag d;
  kf_diag_init(&d, print_diag, NULL);
  bool compile = argc >= 5 && argc <= 6 && strcmp(argv[1], "compile") == 0;
  bool warm = argc >= 5 && strcmp(argv[1], "warm") == 0;
  if (!compile && !warm) {
    fprintf(stderr, "usage: cache_compile compile MODEL OUT.so CACHE_DIR [REPORT]\n"
                    "       cache_compile warm CACHE_DIR K/N MODEL...\n");
    return 2;
  }
  kf_picker pk = {.judge = synthetic_judge, .user = NULL, .all_groups = true};
  kf_compile_options o;
  kf_compile_options_init(&o);
  o.picker = &pk;
  const char *dir = compile ? argv[4] : argv[2];
  kf_cache *c = NULL;
  if (kf_cache_open(dir, NULL, &c, &d) != KF_OK) return 1;
  o.cache = c;
  kf_cache_remote *r = NULL;
  const char *url = getenv("CACHE_COMPILE_REMOTE");
  if (url && *url) {
    kf_cache_remote_options ro;
    kf_cache_remote_options_init(&ro);
    ro.url = url;
    const char *rro = getenv("CACHE_COMPILE_REMOTE_RO");
    ro.read_only = rro && strcmp(rro, "1") == 0;
    if (kf_cache_remote_open(&ro, &r, &d) != KF_OK) {
      kf_cache_close(c);
      return 1;
    }
    o.remote = r;
  }
  const char *js = getenv("CACHE_COMPILE_JUDGE_SECONDS");
  if (js && *js) o.judge_seconds = atof(js);
  const char *rv = getenv("CACHE_COMPILE_REVERIFY");
  o.reverify = rv && strcmp(rv, "1") == 0;
  int rc = 1;
  if (compile) {
    o.report_path = argc == 6 ? argv[5] : NULL;
    kf_graph *g = load(argv[2], &d);
    if (g && kf_compile_graph(g, &o, argv[3], &d) == KF_OK) rc = 0;
    kf_graph_destroy(g);
  } else {
    int k = 0, n = 0;
    if (sscanf(argv[3], "%d/%d", &k, &n) != 2) {
      fprintf(stderr, "cache_compile: shard '%s' is not K/N\n", argv[3]);
      kf_cache_remote_close(r);
      kf_cache_close(c);
      return 2;
    }
    int nm = argc - 4;
    kf_graph **gs = calloc((size_t)nm, sizeof *gs);
    bool ok = gs != NULL;
    for (int m = 0; ok && m < nm; m++) ok = (gs[m] = load(argv[4 + m], &d)) != NULL;
    kf_warm_counts wc;
    if (ok && kf_compile_warm(gs, nm, &o, k - 1, n, &wc, &d) == KF_OK) {
      printf("unique %d in_shard %d hits %d judged %d stored %d failed %d not_judged %d\n", wc.unique_groups,
             wc.in_shard, wc.hits, wc.judged, wc.stored, wc.failed, wc.not_judged);
      free(wc.missed);
      rc = 0;
    }
    for (int m = 0; gs && m < nm; m++) kf_graph_destroy(gs[m]);
    free(gs);
  }
  kf_cache_remote_close(r);
  kf_cache_close(c);
  return rc;
}
