/* tools/cmd_cache.c — kfuse cache stats|ls|verify|gc|export|import|push|
 * pull: look after the kernel cache (include/kfuse/cache.h,
 * docs/CACHE.md). The store is --cache DIR, else $KFUSE_CACHE_DIR, else the
 * per-user XDG cache dir; push and pull move entries to and from an HTTP
 * remote (--remote URL; credentials from the environment only). Exit
 * status: 0 done, 1 failed (verify: any entry was corrupt; push: any entry
 * not pushed; pull: any key not pulled), 2 usage. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "kfuse/cache.h"
#include "tools_int.h"

/* "elementwise 21 ops: relu gelu ..." from a kfuse-group-v1 canonical form */
static void group_summary(const char *canonical, char *out, size_t n) {
  size_t o = 0;
  int ops = 0;
  char kind[32] = "?";
  char names[256] = "";
  size_t nl = 0;
  for (const char *line = canonical; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    if (len > 5 && strncmp(line, "kind ", 5) == 0)
      snprintf(kind, sizeof kind, "%.*s", (int)(len - 5), line + 5);
    const char *eq = memchr(line, '=', len);
    if (line[0] == '%' && eq && eq + 2 < line + len && strncmp(eq, "= kf.", 5) == 0) {
      ops++;
      const char *nm = eq + 5, *paren = memchr(nm, '(', (size_t)(line + len - nm));
      size_t k = paren ? (size_t)(paren - nm) : 0;
      if (k && nl + k + 2 < sizeof names) nl += (size_t)snprintf(names + nl, sizeof names - nl, "%s%.*s", nl ? " " : "", (int)k, nm);
    }
    line = end ? end + 1 : NULL;
  }
  o = (size_t)snprintf(out, n, "%s %d op%s: %s", kind, ops, ops == 1 ? "" : "s", names);
  if (o >= n && n > 4) memcpy(out + n - 4, "...", 4);
}

static void age(int64_t ms, char *out, size_t n) {
  int64_t d = ms / 1000;
  if (d < 120)
    snprintf(out, n, "%llds", (long long)d);
  else if (d < 7200)
    snprintf(out, n, "%lldm", (long long)(d / 60));
  else if (d < 172800)
    snprintf(out, n, "%lldh", (long long)(d / 3600));
  else
    snprintf(out, n, "%lldd", (long long)(d / 86400));
}

typedef struct ls_state {
  bool json;
  cJSON *arr;
  int64_t now;
} ls_state;

static int ls_one(void *user, const kf_cache_entry *e) {
  ls_state *st = user;
  char summary[200];
  group_summary(e->canonical, summary, sizeof summary);
  if (st->json) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "key", e->key);
    cJSON_AddStringToObject(o, "group", summary);
    cJSON_AddStringToObject(o, "precision", e->precision);
    cJSON_AddStringToObject(o, "arch", e->arch);
    cJSON_AddStringToObject(o, "toolkit", e->toolkit);
    cJSON_AddStringToObject(o, "driver", e->driver);
    cJSON_AddNumberToObject(o, "codegen", e->codegen);
    cJSON_AddStringToObject(o, "policy", e->policy);
    cJSON_AddStringToObject(o, "endpoint", e->endpoint);
    cJSON_AddNumberToObject(o, "reward", e->reward);
    cJSON_AddNumberToObject(o, "ms", e->ms);
    cJSON_AddStringToObject(o, "gpu", e->gpu);
    cJSON_AddNumberToObject(o, "bytes", (double)e->bytes);
    cJSON_AddNumberToObject(o, "created_ms", (double)e->created_ms);
    cJSON_AddNumberToObject(o, "last_used_ms", (double)e->last_used_ms);
    cJSON_AddNumberToObject(o, "hits", (double)e->hits);
    cJSON_AddStringToObject(o, "payload_hash", e->payload_hash);
    cJSON_AddItemToArray(st->arr, o);
  } else {
    char a[32];
    age(st->now - e->created_ms, a, sizeof a);
    printf("%.16s  %6d  %10.4f  %-24.24s  %-28.28s  %5s  %s\n", e->key, e->reward, e->ms, e->gpu, e->policy, a,
           summary);
  }
  return 0;
}

/* N, or N with a K, M or G suffix (powers of 1024) */
static bool parse_bytes(const char *s, int64_t *out) {
  char *end = NULL;
  long long v = strtoll(s, &end, 10);
  if (end == s || v < 0) return false;
  long long m = 1;
  if (*end == 'K' || *end == 'k') m = 1LL << 10, end++;
  else if (*end == 'M' || *end == 'm') m = 1LL << 20, end++;
  else if (*end == 'G' || *end == 'g') m = 1LL << 30, end++;
  if (*end || v > INT64_MAX / m) return false;
  *out = v * m;
  return true;
}

static bool is_key(const char *k) {
  if (strlen(k) != 64) return false;
  for (int i = 0; i < 64; i++)
    if (!((k[i] >= '0' && k[i] <= '9') || (k[i] >= 'a' && k[i] <= 'f'))) return false;
  return true;
}

/* kfuse cache push: every local entry the remote lacks */
static int do_push(kf_cache *c, kf_cache_remote *r, kf_diag *diag) {
  kf_cache_push_counts k;
  if (kf_cache_remote_push(r, c, &k, diag) != KF_OK) return 1;
  printf("pushed to %s: %lld entries: %lld pushed, %lld already there, %lld failed\n", kf_cache_remote_url(r),
         (long long)k.entries, (long long)k.pushed, (long long)k.present, (long long)k.failed);
  return k.failed ? 1 : 0;
}

/* kfuse cache pull: each key from the remote into the store (one already
 * there is left as it is) */
static int do_pull(kf_cache *c, kf_cache_remote *r, char **keys, int n, kf_diag *diag) {
  long long pulled = 0, local = 0, missed = 0;
  for (int i = 0; i < n; i++) {
    kf_cache_entry *e = NULL;
    int source = KF_CACHE_MISS;
    if (kf_cache_fetch(c, r, keys[i], &e, &source, diag) != KF_OK) return 1;
    kf_cache_entry_destroy(e);
    if (source == KF_CACHE_REMOTE) pulled++;
    else if (source == KF_CACHE_LOCAL) local++;
    else missed++;
    printf("%s %s\n", keys[i], source == KF_CACHE_REMOTE ? "pulled" : source == KF_CACHE_LOCAL ? "already local"
                                                                                                  : "missed");
  }
  kf_cache_remote_stats st;
  kf_cache_remote_get_stats(r, &st);
  printf("pulled from %s: %d keys: %lld pulled, %lld already local, %lld missed (%lld corrupt%s)\n",
         kf_cache_remote_url(r), n, pulled, local, missed, (long long)st.corrupt,
         st.down ? "; the remote failed" : "");
  return missed ? 1 : 0;
}

static int run_sub(const char *sub, const char *dir_flag, const char *file, const char *max_s, bool json,
                   const char *remote_url, bool read_only, double remote_timeout, char **keys, int n_keys,
                   kf_diag *diag);

int kf_cmd_cache(int argc, char **argv, kf_diag *diag) {
  const char *cmd = "cache";
  if (argc < 1)
    return kf_cli_error(cmd, diag, "needs a subcommand: stats, ls, verify, gc, export FILE, import FILE, push, "
                                   "pull KEY...");
  if (kf_cli_is_help(argv[0])) {
    kf_cli_usage(stdout, cmd);
    return 0;
  }
  const char *sub = argv[0], *dir_flag = NULL, *file = NULL, *max_s = NULL, *remote_url = NULL;
  bool json = false, read_only = false;
  double remote_timeout = -1;
  bool needs_file = strcmp(sub, "export") == 0 || strcmp(sub, "import") == 0;
  bool push = strcmp(sub, "push") == 0, pull = strcmp(sub, "pull") == 0, remote = push || pull;
  if (!needs_file && !remote && strcmp(sub, "stats") != 0 && strcmp(sub, "ls") != 0 &&
      strcmp(sub, "verify") != 0 && strcmp(sub, "gc") != 0)
    return kf_cli_error(cmd, diag, "unknown subcommand '%s' (stats, ls, verify, gc, export, import, push, pull)",
                        sub);
  char **keys = calloc((size_t)argc, sizeof *keys);
  int n_keys = 0;
  if (!keys) return 1;
  int rc = 2;
  for (int i = 1; i < argc; i++) {
    if (kf_cli_is_help(argv[i])) {
      kf_cli_usage(stdout, cmd);
      rc = 0;
      goto out;
    } else if (strcmp(argv[i], "--cache") == 0) {
      if (!kf_cli_value(argc, argv, &i, cmd, &dir_flag, diag)) goto out;
    } else if (strcmp(argv[i], "--max-bytes") == 0 && strcmp(sub, "gc") == 0) {
      if (!kf_cli_value(argc, argv, &i, cmd, &max_s, diag)) goto out;
    } else if (strcmp(argv[i], "--json") == 0 && (strcmp(sub, "ls") == 0 || strcmp(sub, "stats") == 0)) {
      json = true;
    } else if (strcmp(argv[i], "--remote") == 0 && remote) {
      if (!kf_cli_value(argc, argv, &i, cmd, &remote_url, diag)) goto out;
    } else if (strcmp(argv[i], "--remote-timeout") == 0 && remote) {
      const char *v;
      if (!kf_cli_value(argc, argv, &i, cmd, &v, diag) ||
          !kf_cli_double(cmd, "--remote-timeout", v, 0.001, 3600, &remote_timeout, diag))
        goto out;
    } else if (strcmp(argv[i], "--remote-read-only") == 0 && remote) {
      if (push) {
        kf_cli_error(cmd, diag, "push writes to the remote: --remote-read-only contradicts it");
        goto out;
      }
      read_only = true;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      rc = kf_cli_unknown(cmd, argv[i], diag);
      goto out;
    } else if (needs_file && !file) {
      file = argv[i];
    } else if (pull) {
      if (!is_key(argv[i])) {
        kf_cli_error(cmd, diag, "pull: '%.70s' is not a key (64 lowercase hex digits, as kfuse cache ls --json "
                     "prints them)", argv[i]);
        goto out;
      }
      keys[n_keys++] = argv[i];
    } else {
      kf_cli_error(cmd, diag, "%s: unexpected argument '%s'", sub, argv[i]);
      goto out;
    }
  }
  if (needs_file && !file) {
    kf_cli_error(cmd, diag, "%s needs a FILE", sub);
    goto out;
  }
  if (remote && !remote_url) {
    kf_cli_error(cmd, diag, "%s needs --remote URL", sub);
    goto out;
  }
  if (pull && n_keys == 0) {
    kf_cli_error(cmd, diag, "pull needs at least one KEY");
    goto out;
  }
  rc = run_sub(sub, dir_flag, file, max_s, json, remote_url, read_only, remote_timeout, keys, n_keys,
                        diag);
out:
  free(keys);
  return rc;
}

/* Runs a parsed subcommand; the exit status. */
static int run_sub(const char *sub, const char *dir_flag, const char *file, const char *max_s, bool json,
                   const char *remote_url, bool read_only, double remote_timeout, char **keys, int n_keys,
                   kf_diag *diag) {
  const char *cmd = "cache";
  int64_t max_bytes = 0;
  if (strcmp(sub, "gc") == 0) {
    if (!max_s) return kf_cli_error(cmd, diag, "gc needs --max-bytes N (K, M, G suffixes allowed)");
    if (!parse_bytes(max_s, &max_bytes))
      return kf_cli_error(cmd, diag, "--max-bytes '%s': expected a byte count such as 500M", max_s);
  }
  char dir[4096];
  if (kf_cache_dir_resolve(dir_flag, dir, sizeof dir, diag) != KF_OK) return 2;
  kf_cache_remote *r = NULL;
  if (remote_url) {
    kf_cache_remote_options ro;
    kf_cache_remote_options_init(&ro);
    ro.url = remote_url;
    ro.read_only = read_only;
    if (remote_timeout > 0) ro.timeout_s = remote_timeout;
    if (ro.connect_timeout_s > ro.timeout_s) ro.connect_timeout_s = ro.timeout_s;
    kf_status s = kf_cache_remote_open(&ro, &r, diag);
    if (s != KF_OK) return s == KF_ERR_ARG ? 2 : 1;
  }
  kf_cache *c = NULL;
  if (kf_cache_open(dir, NULL, &c, diag) != KF_OK) {
    kf_cache_remote_close(r);
    return 1;
  }
  int rc = 1;
  if (strcmp(sub, "push") == 0) {
    rc = do_push(c, r, diag);
  } else if (strcmp(sub, "pull") == 0) {
    rc = do_pull(c, r, keys, n_keys, diag);
  } else if (strcmp(sub, "stats") == 0) {
    kf_cache_stats s;
    if (kf_cache_get_stats(c, &s, diag) == KF_OK) {
      if (json)
        printf("{\"entries\": %lld, \"bytes\": %lld, \"file_bytes\": %lld, \"hits\": %lld, "
               "\"misses\": %lld}\n", (long long)s.entries, (long long)s.bytes, (long long)s.file_bytes,
               (long long)s.hits, (long long)s.misses);
      else
        printf("cache %s\n  entries %lld\n  payload bytes %lld\n  on disk %lld bytes\n  hits %lld, misses %lld\n",
               dir, (long long)s.entries, (long long)s.bytes, (long long)s.file_bytes, (long long)s.hits,
               (long long)s.misses);
      rc = 0;
    }
  } else if (strcmp(sub, "ls") == 0) {
    ls_state st = {json, json ? cJSON_CreateArray() : NULL, (int64_t)time(NULL) * 1000};
    if (!json) printf("%-16s  %6s  %10s  %-24s  %-28s  %5s  %s\n", "key", "reward", "ms", "gpu", "policy", "age",
                      "group");
    if (kf_cache_list(c, ls_one, &st, diag) == KF_OK) {
      if (json) {
        char *text = cJSON_Print(st.arr);
        if (text) printf("%s\n", text);
        free(text);
      }
      rc = 0;
    }
    cJSON_Delete(st.arr);
  } else if (strcmp(sub, "verify") == 0) {
    int64_t ok = 0, bad = 0;
    if (kf_cache_verify(c, &ok, &bad, diag) == KF_OK) {
      printf("verified %lld entries: %lld intact, %lld corrupt (removed)\n", (long long)(ok + bad), (long long)ok,
             (long long)bad);
      rc = bad ? 1 : 0;
    }
  } else if (strcmp(sub, "gc") == 0) {
    int64_t n = 0, freed = 0;
    if (kf_cache_gc(c, max_bytes, &n, &freed, diag) == KF_OK) {
      printf("evicted %lld entries, %lld payload bytes\n", (long long)n, (long long)freed);
      rc = 0;
    }
  } else if (strcmp(sub, "export") == 0) {
    int64_t n = 0;
    if (kf_cache_export(c, file, &n, diag) == KF_OK) {
      printf("exported %lld entries to %s\n", (long long)n, file);
      rc = 0;
    }
  } else {
    kf_cache_import_counts k;
    if (kf_cache_import(c, file, &k, diag) == KF_OK) {
      printf("imported %s: %lld added, %lld replaced, %lld kept, %lld corrupt (skipped)\n", file,
             (long long)k.added, (long long)k.replaced, (long long)k.kept, (long long)k.corrupt);
      rc = 0;
    }
  }
  kf_cache_close(c);
  kf_cache_remote_close(r);
  return rc;
}
