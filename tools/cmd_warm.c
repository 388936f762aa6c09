/* tools/cmd_warm.c — `kfuse warm`: fill the kernel cache for models, on a
 * GPU runner of a CI matrix; and the cache options kfuse compile shares.
 *
 *   kfuse warm MODEL... [--cache DIR] [--remote URL [--remote-read-only]]
 *              [--shard K/N] [--target ...] [--precision ...]
 *              [--judge-timeout S] [-q]
 *
 * The unique groups of all the models (by cache key) are sorted by key and
 * dealt round-robin over N shards; this job takes shard K. For each of its
 * groups the cache is consulted and, on a miss, the built-in policy's
 * candidates are built, compiled and judged on the GPU (every group, as
 * kfuse compile --judge-all does), and the verified winner stored. N jobs
 * with K = 1..N sharing one cache (an export/import artifact, or a remote)
 * cover every group once (docs/CACHE.md "Warming in CI").
 *
 * Exit status: 0 every group of the shard is cached; 1 an error, or some
 * groups could not be verified (no GPU, or no candidate passed): they are
 * listed; 2 usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfuse/compile.h"
#include "kfuse/frontend.h"
#include "kfuse/judge.h"
#include "tools_int.h"

int kf_cli_cache_option(int argc, char **argv, int *i, const char *cmd, kf_cli_cache *cc, kf_diag *diag) {
  const char *a = argv[*i], *v;
  if (strcmp(a, "--cache") == 0) return kf_cli_value(argc, argv, i, cmd, &cc->dir, diag) ? 1 : -1;
  if (strcmp(a, "--remote") == 0) return kf_cli_value(argc, argv, i, cmd, &cc->remote, diag) ? 1 : -1;
  if (strcmp(a, "--remote-timeout") == 0)
    return kf_cli_value(argc, argv, i, cmd, &v, diag) &&
                   kf_cli_double(cmd, a, v, 0.001, 3600, &cc->remote_timeout, diag)
               ? 1
               : -1;
  bool *flag = strcmp(a, "--no-cache") == 0           ? &cc->off
               : strcmp(a, "--offline") == 0          ? &cc->offline
               : strcmp(a, "--remote-read-only") == 0 ? &cc->remote_read_only
                                                      : NULL;
  if (!flag) return 0;
  *flag = true;
  return 1;
}

bool kf_cli_cache_usage_ok(const kf_cli_cache *cc, const char *cmd, kf_diag *diag) {
  if (cc->off && (cc->dir || cc->remote)) {
    kf_cli_error(cmd, diag, "--%s and --no-cache contradict each other", cc->dir ? "cache" : "remote");
    return false;
  }
  if (cc->offline && cc->remote) {
    kf_cli_error(cmd, diag, "--offline never calls a remote: drop --remote or --offline");
    return false;
  }
  return true;
}

static kf_status open_remote(const kf_cli_cache *cc, const char *cmd, kf_cache_remote **out, kf_diag *diag) {
  *out = NULL;
  const char *env = getenv("KFUSE_CACHE_REMOTE");
  const char *url = cc->remote ? cc->remote : env && *env ? env : NULL;
  if (!url) return KF_OK;
  if (cc->offline) {
    if (cc->remote) {
      kf_diag_error(diag, "%s: --offline never calls a remote: drop --remote or --offline", cmd);
      return KF_ERR_ARG;
    }
    return KF_OK; /* $KFUSE_CACHE_REMOTE stays unused */
  }
  kf_cache_remote_options ro;
  kf_cache_remote_options_init(&ro);
  ro.url = url;
  ro.read_only = cc->remote_read_only;
  if (cc->remote_timeout > 0) ro.timeout_s = cc->remote_timeout;
  kf_status st = kf_cache_remote_open(&ro, out, diag);
  if (st == KF_ERR_UNSUPPORTED) {
    /* no libcurl here: the local cache and the built-in policy still serve */
    kf_diag_warn(diag, "%s: the remote cache is not used (see above)", cmd);
    st = KF_OK;
  }
  return st;
}

kf_status kf_cli_cache_open(const kf_cli_cache *cc, const char *cmd, kf_cache **out, kf_cache_remote **remote,
                            kf_diag *diag) {
  *out = NULL;
  *remote = NULL;
  if (cc->off) {
    if (cc->dir || cc->remote) {
      kf_diag_error(diag, "%s: --%s and --no-cache contradict each other", cmd, cc->dir ? "cache" : "remote");
      return KF_ERR_ARG;
    }
    return KF_OK;
  }
  char dir[4096];
  /* a directory the user named must work; the default one is a
   * convenience, and a compile goes on without it */
  kf_diag quiet;
  kf_strbuf why;
  kf_strbuf_init(&why);
  kf_diag_init(&quiet, kf_diag_to_strbuf, &why);
  kf_diag *d = cc->dir || getenv("KFUSE_CACHE_DIR") ? diag : &quiet;
  kf_status st = kf_cache_dir_resolve(cc->dir, dir, sizeof dir, d);
  if (!st) st = kf_cache_open(dir, NULL, out, d);
  if (st && d == &quiet) {
    while (why.len && why.data[why.len - 1] == '\n') why.data[--why.len] = '\0';
    kf_diag_warn(diag, "%s: no kernel cache (%s); pass --cache DIR or --no-cache", cmd,
                 why.data ? why.data : kf_status_str(st));
    st = KF_OK;
  }
  kf_strbuf_fini(&why);
  if (!st) st = open_remote(cc, cmd, remote, diag);
  if (st) {
    kf_cache_close(*out);
    *out = NULL;
  }
  return st;
}

void kf_cli_cache_close(kf_cache *c, kf_cache_remote *r) {
  kf_cache_remote_close(r);
  kf_cache_close(c);
}

static bool parse_shard(const char *s, int *k, int *n) {
  char *end;
  long a = strtol(s, &end, 10);
  if (end == s || *end != '/') return false;
  const char *t = end + 1;
  long b = strtol(t, &end, 10);
  if (end == t || *end || b < 1 || b > 100000 || a < 1 || a > b) return false;
  *k = (int)a - 1;
  *n = (int)b;
  return true;
}

int kf_cmd_warm(int argc, char **argv, kf_diag *diag) {
  const char *cmd = "warm";
  kf_compile_options o;
  kf_compile_options_init(&o);
  o.progress = true;
  kf_cli_cache cc;
  memset(&cc, 0, sizeof cc);
  int shard = 0, n_shards = 1;
  double judge_timeout = 60;
  const char **models = calloc((size_t)argc + 1, sizeof *models);
  if (!models) return 1;
  int n = 0, rc = 2;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v;
    int k = kf_cli_cache_option(argc, argv, &i, cmd, &cc, diag);
    if (k < 0) goto out;
    if (k > 0) continue;
    if (kf_cli_is_help(a)) {
      kf_cli_usage(stdout, cmd);
      rc = 0;
      goto out;
    } else if (strcmp(a, "--shard") == 0) {
      if (!kf_cli_value(argc, argv, &i, cmd, &v, diag)) goto out;
      if (!parse_shard(v, &shard, &n_shards)) {
        kf_cli_error(cmd, diag, "--shard takes K/N with 1 <= K <= N, not '%s'", v);
        goto out;
      }
    } else if (strcmp(a, "--target") == 0) {
      if (!kf_cli_value(argc, argv, &i, cmd, &v, diag) || !kf_cli_target(cmd, v, &o.target, diag)) goto out;
    } else if (strcmp(a, "--precision") == 0) {
      if (!kf_cli_value(argc, argv, &i, cmd, &v, diag)) goto out;
      if (!kf_precision_parse(v, &o.precision)) {
        kf_cli_error(cmd, diag, "--precision takes default, tf32, bf16 or fp16, not '%s'", v);
        goto out;
      }
    } else if (strcmp(a, "--judge-timeout") == 0) {
      if (!kf_cli_value(argc, argv, &i, cmd, &v, diag) ||
          !kf_cli_double(cmd, a, v, 1, 3600, &judge_timeout, diag))
        goto out;
    } else if (strcmp(a, "-q") == 0) {
      o.progress = false;
    } else if (a[0] == '-' && a[1]) {
      kf_cli_unknown(cmd, a, diag);
      goto out;
    } else {
      models[n++] = a;
    }
  }
  if (n == 0) {
    kf_cli_error(cmd, diag, "no model given");
    goto out;
  }
  if (cc.off) {
    kf_cli_error(cmd, diag, "--no-cache: warm fills the cache");
    goto out;
  }
  if (!kf_cli_cache_usage_ok(&cc, cmd, diag)) goto out;
  rc = 1;
  kf_cache *cache = NULL;
  kf_cache_remote *remote = NULL;
  if (kf_cli_cache_open(&cc, cmd, &cache, &remote, diag) != KF_OK) goto out;
  if (!cache) {
    kf_diag_error(diag, "warm: no kernel cache to fill");
    kf_cli_cache_close(cache, remote);
    goto out;
  }
  o.cache = cache;
  o.remote = remote;
  /* as kfuse compile judges: 100 ms of timed runs a candidate; groups
   * whose judge data would hold more than 4 GiB on the host are skipped */
  kf_judge_options jo;
  kf_judge_options_init(&jo);
  jo.min_time_ms = 100;
  jo.timeout_s = judge_timeout;
  jo.max_host_bytes = 4.0 * (1 << 30);
  kf_judge_picker jp;
  kf_judge_picker_init(&jp, &jo, true);
  o.picker = &jp.picker;
  kf_graph **graphs = calloc((size_t)n, sizeof *graphs);
  kf_status st = graphs ? KF_OK : KF_ERR_NOMEM;
  kf_load_options lo;
  kf_load_options_init(&lo);
  for (int m = 0; m < n && !st; m++) {
    st = kf_model_load(models[m], &lo, &graphs[m], diag);
    if (!st) st = kf_graph_verify(graphs[m], diag);
  }
  kf_warm_counts wc;
  if (!st) st = kf_compile_warm(graphs, n, &o, shard, n_shards, &wc, diag);
  if (!st) {
    printf("warm: shard %d/%d: %d of %d unique groups; %d already cached, %d judged, %d stored, %d failed "
           "verification, %d not judged\n", shard + 1, n_shards, wc.in_shard, wc.unique_groups, wc.hits, wc.judged,
           wc.stored, wc.failed, wc.not_judged);
    rc = wc.failed || wc.not_judged ? 1 : 0;
  }
  for (int m = 0; graphs && m < n; m++) kf_graph_destroy(graphs[m]);
  free(graphs);
  kf_cli_cache_close(cache, remote);
out:
  free(models);
  return rc;
}
