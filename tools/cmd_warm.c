/* tools/cmd_warm.c — `kfuse warm`: fill the kernel cache for models, on a
 * GPU runner of a CI matrix; and the cache options kfuse compile shares.
 *
 *   kfuse warm MODEL... [--cache DIR] [--remote URL [--remote-read-only]]
 *              [--shard K/N] [--target ...] [--precision ...]
 *              [--judge-timeout S] [-q] [--agent llm --endpoint URL
 *              --model NAME [--agent-dir DIR] [--agent-* ...]]
 *
 * The unique groups of all the models (by cache key) are sorted by key and
 * dealt round-robin over N shards; this job takes shard K. For each of its
 * groups the cache is consulted and, on a miss, the built-in policy's
 * candidates are built, compiled and judged on the GPU (every group, as
 * kfuse compile --judge-all does), and the verified winner stored. N jobs
 * with K = 1..N sharing one cache (an export/import artifact, or a remote)
 * cover every group once (docs/CACHE.md "Warming in CI"). With --agent
 * llm, LLM agent sessions then work on the shard's groups the cache
 * missed (tools/compile_agent.c, model by model, each group once), and a
 * second pass judges their verified units beside the built-in ones and
 * stores the better.
 *
 * Exit status: 0 every group of the shard is cached; 1 an error, or some
 * groups could not be verified (no GPU, or no candidate passed): they are
 * listed; 2 usage. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "kfuse/agent_loop.h"
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
  const char *env = secure_getenv("KFUSE_CACHE_REMOTE");
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
  kf_diag *d = cc->dir || secure_getenv("KFUSE_CACHE_DIR") ? diag : &quiet;
  kf_status st = kf_cache_dir_resolve(cc->dir, dir, sizeof dir, d);
  if (!st) st = kf_cache_open(dir, NULL, out, d);
  if (st && d == &quiet) {
    while (why.len && why.data[why.len - 1] == '\n') why.data[--why.len] = '\0';
    const char *w = why.data ? why.data : kf_status_str(st);
    if (strncmp(w, "error: ", 7) == 0) w += 7;
    kf_diag_warn(diag, "%s: no kernel cache (%s); pass --cache DIR or --no-cache", cmd, w);
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

/* One pass of kf_compile_warm over the models, read afresh (the compile
 * passes change a graph). */
static kf_status warm_pass(const char **models, int n, const kf_compile_options *o, int shard, int n_shards,
                           kf_warm_counts *wc, kf_diag *diag) {
  memset(wc, 0, sizeof *wc);
  kf_graph **graphs = calloc((size_t)n, sizeof *graphs);
  kf_status st = graphs ? KF_OK : KF_ERR_NOMEM;
  kf_load_options lo;
  kf_load_options_init(&lo);
  for (int m = 0; m < n && !st; m++) {
    st = kf_model_load(models[m], &lo, &graphs[m], diag);
    if (!st) st = kf_graph_verify(graphs[m], diag);
  }
  if (!st) st = kf_compile_warm(graphs, n, o, shard, n_shards, wc, diag);
  for (int m = 0; graphs && m < n; m++) kf_graph_destroy(graphs[m]);
  free(graphs);
  return st;
}

/* --agent llm: LLM agent sessions (tools/compile_agent.c) on the groups of
 * this shard that the cache missed, model by model, each group at most
 * once; then a second pass judges the units they verified beside the
 * built-in ones and stores a better one (the replace rule: a higher
 * reward, or faster on the same GPU). */
static kf_status agent_sessions(const char **models, int n, const kf_compile_options *o,
                                const kf_agent_options *ao, const kf_compile_agent_options *cao,
                                const char *agent_dir, const kf_warm_counts *wc, int shard, int n_shards,
                                kf_diag *diag) {
  if (mkdir(agent_dir, 0755) != 0) {
    kf_diag_error(diag, "warm: --agent-dir %s: cannot create it: %s%s", agent_dir, strerror(errno),
                  errno == EEXIST ? " (it must not exist)" : "");
    return KF_ERR_IO;
  }
  /* the keys still without a session */
  char (*left)[65] = calloc((size_t)wc->n_missed + 1, sizeof *left);
  kf_compile_given *all = calloc(1, sizeof *all), *g = calloc(1, sizeof *g);
  const char **keys = calloc(KF_COMPILE_GIVEN_MAX + 1, sizeof *keys);
  const char **dirs = calloc(KF_COMPILE_GIVEN_MAX + 1, sizeof *dirs);
  kf_status st = left && all && g && keys && dirs ? KF_OK : KF_ERR_NOMEM;
  int n_left = 0, sessions = 0;
  for (int k = 0; !st && k < wc->n_missed; k++) memcpy(left[n_left++], wc->missed[k], 65);
  for (int m = 0; !st && m < n && n_left > 0; m++) {
    char dir[4200];
    snprintf(dir, sizeof dir, "%s/model_%d", agent_dir, m + 1);
    kf_compile_agent_options ca = *cao;
    ca.only_keys = (const char(*)[65])left;
    ca.n_only = n_left;
    kf_status as = kf_compile_agent(models[m], o, ao, dir, &ca, g, diag);
    if (as == KF_ERR_NOMEM) st = as;
    else if (as)
      kf_diag_warn(diag, "warm: the agent sessions on %s did not finish (%s)", models[m], kf_status_str(as));
    sessions += g->n_tried;
    /* a key tried once is not tried again for another model */
    for (int t = 0; t < g->n_tried; t++)
      for (int k = 0; k < n_left; k++)
        if (strcmp(left[k], g->tried[t]) == 0) {
          memmove(left[k], left[--n_left], 65);
          break;
        }
    for (int u = 0; u < g->n && all->n < KF_COMPILE_GIVEN_MAX; u++) {
      memcpy(all->keys[all->n], g->keys[u], 65);
      memcpy(all->dirs[all->n++], g->dirs[u], sizeof all->dirs[0]);
    }
  }
  if (!st && all->n > 0) {
    for (int u = 0; u < all->n; u++) {
      keys[u] = all->keys[u];
      dirs[u] = all->dirs[u];
    }
    kf_compile_options o2 = *o;
    o2.n_given = all->n;
    o2.given_keys = keys;
    o2.given_dirs = dirs;
    o2.llm_endpoint = ao->llm.endpoint;
    kf_warm_counts w2;
    st = warm_pass(models, n, &o2, shard, n_shards, &w2, diag);
    free(w2.missed);
    if (!st)
      printf("warm: agent: %d session%s on the %d missed group%s, %d unit%s verified; %d stored (better than the "
             "built-in unit)\n", sessions, sessions == 1 ? "" : "s", wc->n_missed, wc->n_missed == 1 ? "" : "s",
             all->n, all->n == 1 ? "" : "s", w2.stored);
  } else if (!st) {
    printf("warm: agent: %d session%s on the %d missed group%s, no unit verified\n", sessions,
           sessions == 1 ? "" : "s", wc->n_missed, wc->n_missed == 1 ? "" : "s");
  }
  free(left);
  free(all);
  free(g);
  free(keys);
  free(dirs);
  return st;
}

int kf_cmd_warm(int argc, char **argv, kf_diag *diag) {
  const char *cmd = "warm";
  kf_compile_options o;
  kf_compile_options_init(&o);
  o.progress = true;
  kf_cli_cache cc;
  memset(&cc, 0, sizeof cc);
  /* --agent llm: sessions on the groups the cache missed */
  bool agent = false;
  const char *agent_dir = NULL;
  kf_agent_options ao;
  kf_agent_options_init(&ao);
  kf_compile_agent_options cao;
  kf_compile_agent_options_init(&cao);
  int shard = 0, n_shards = 1;
  double judge_timeout = 60;
  const char **models = calloc((size_t)argc + 1, sizeof *models);
  if (!models) return 1;
  int n = 0, rc = 2;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i], *v;
    int k = kf_cli_cache_option(argc, argv, &i, cmd, &cc, diag);
    if (k == 0) k = kf_cli_agent_option(argc, argv, &i, cmd, &agent, &agent_dir, &ao, &cao, diag);
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
        kf_cli_error(cmd, diag, "--precision takes default, tf32, bf16, fp16 or fp32, not '%s'", v);
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
  if (agent && cc.offline) {
    kf_cli_error(cmd, diag, "--offline never calls an LLM: drop --agent llm or --offline");
    goto out;
  }
  if (agent && (!ao.llm.endpoint || !ao.llm.model)) {
    kf_cli_error(cmd, diag, "--agent llm needs --endpoint and --model");
    goto out;
  }
  char adir[64];
  if (agent && !agent_dir) {
    snprintf(adir, sizeof adir, "kfuse-warm-%d-of-%d.agent", shard + 1, n_shards);
    agent_dir = adir;
  }
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
  kf_judge_options jo;
  kf_cli_compile_judge_options(&jo, judge_timeout); /* as kfuse compile judges */
  kf_judge_picker jp;
  kf_judge_picker_init(&jp, &jo, true);
  o.picker = &jp.picker;
  kf_warm_counts wc;
  kf_status st = warm_pass(models, n, &o, shard, n_shards, &wc, diag);
  if (!st) {
    printf("warm: shard %d/%d: %d of %d unique groups; %d already cached, %d judged, %d stored, %d failed "
           "verification, %d not judged\n", shard + 1, n_shards, wc.in_shard, wc.unique_groups, wc.hits, wc.judged,
           wc.stored, wc.failed, wc.not_judged);
    rc = wc.failed || wc.not_judged ? 1 : 0;
  }
  if (!st && agent && wc.n_missed > 0) {
    cao.judge.timeout_s = judge_timeout;
    if (agent_sessions(models, n, &o, &ao, &cao, agent_dir, &wc, shard, n_shards, diag) != KF_OK) rc = 1;
  }
  free(wc.missed);
  kf_cli_cache_close(cache, remote);
out:
  free(models);
  return rc;
}
