/* tests/cache/remote_client.c — the cache API calls that `kfuse cache`
 * does not expose, for tests/cache/remote_check.py: synthetic entries in a
 * store, kf_cache_store over both tiers, kf_cache_remote_get with timings.
 * Nothing here is a real kernel or timing: units, verdicts and times are
 * generated (policy "synthetic:remote", GPU "synthetic-gpu").
 *
 *   remote_client make DIR N SEED
 *       N synthetic entries put into the store at DIR (cubins from none to
 *       about 200 KiB, zero bytes included); prints each key
 *   remote_client store URL DIR SEED [--read-only]
 *       one new synthetic entry through kf_cache_store (the local store at
 *       DIR, the remote at URL); prints its key, then the remote's stats
 *   remote_client get URL [--timeout S] KEY...
 *       kf_cache_remote_get of each key with no local store: one line
 *       "KEY hit|miss SECONDS" each, then the remote's stats
 *
 * The stats line is JSON: {"requests": N, "retries": N, "hits": N, ...}.
 * Diagnostics go to stderr as kfuse prints them. Exit 0 when every call
 * returned KF_OK, 1 otherwise, 2 for usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfuse/cache.h"
#include "synth_entry.h"

static uint64_t rng;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static void print_stats(kf_cache_remote *r) {
  kf_cache_remote_stats s;
  kf_cache_remote_get_stats(r, &s);
  printf("{\"requests\": %lld, \"retries\": %lld, \"hits\": %lld, \"misses\": %lld, \"corrupt\": %lld, "
         "\"puts\": %lld, \"put_failures\": %lld, \"skipped\": %lld, \"down\": %s, \"puts_stopped\": %s}\n",
         (long long)s.requests, (long long)s.retries, (long long)s.hits, (long long)s.misses,
         (long long)s.corrupt, (long long)s.puts, (long long)s.put_failures, (long long)s.skipped,
         s.down ? "true" : "false", s.puts_stopped ? "true" : "false");
}

/* Entry number i of seed into e (buffers owned by the caller's arrays);
 * not yet stored: no payload hash, no time. */
typedef struct synth {
  kf_cache_entry e;
  char canonical[200], unit_json[200], verdict[200], evidence[100];
  unsigned char *cubin;
} synth;

static int make_entry(synth *s, uint64_t seed, int i) {
  memset(s, 0, sizeof *s);
  rng = seed * 2654435761u + (uint64_t)i * 97 + 1;
  snprintf(s->canonical, sizeof s->canonical,
           "kfuse-group-v1\nkind elementwise\n%%0 = kf.relu(%%i0) #remote-%llu-%d\n", (unsigned long long)seed, i);
  kf_cache_entry *e = &s->e;
  if (synth_entry_key(e, s->canonical, "synthetic-toolkit", NULL) != KF_OK) return 1;
  e->reward = 1 + (int)(next() % 3);
  e->ms = (double)(1 + next() % 100000) / 1000.0;
  snprintf(s->unit_json, sizeof s->unit_json, "{\"synthetic\": true, \"seed\": %llu, \"entry\": %d}",
           (unsigned long long)seed, i);
  snprintf(s->verdict, sizeof s->verdict,
           "{\"format\": \"kfuse-verdict-v1\", \"synthetic\": true, \"reward\": %d, \"ms\": %.3f}", e->reward, e->ms);
  e->unit_json = s->unit_json;
  e->verdict = s->verdict;
  e->unit_cu = "extern \"C\" __global__ void synthetic() {}\n";
  if (i % 4 != 3) { /* every fourth without a cubin, as library steps are */
    size_t n = (size_t)(next() % (200 * 1024));
    s->cubin = malloc(n + 1);
    if (!s->cubin) return 1;
    for (size_t j = 0; j < n; j++) s->cubin[j] = (unsigned char)(j % 5 == 0 ? 0 : next());
    e->cubin = s->cubin;
    e->cubin_bytes = n;
  }
  if (i % 2) {
    snprintf(s->evidence, sizeof s->evidence, "{\"runs\": %d}", 3 + i);
    e->evidence = s->evidence;
  }
  e->gpu = "synthetic-gpu";
  e->policy = "synthetic:remote";
  return 0;
}

static int do_make(const char *dir, int n, uint64_t seed) {
  kf_cache *c = NULL;
  if (kf_cache_open(dir, NULL, &c, NULL) != KF_OK) return 1;
  int rc = 0;
  for (int i = 0; i < n && !rc; i++) {
    synth s;
    if (make_entry(&s, seed, i) != 0 || kf_cache_put(c, &s.e, NULL, NULL) != KF_OK) rc = 1;
    else printf("%s\n", s.e.key);
    free(s.cubin);
  }
  kf_cache_close(c);
  return rc;
}

static kf_cache_remote *open_remote(const char *url, bool read_only, double timeout) {
  kf_cache_remote_options o;
  kf_cache_remote_options_init(&o);
  o.url = url;
  o.read_only = read_only;
  if (timeout > 0) {
    o.timeout_s = timeout;
    if (o.connect_timeout_s > timeout) o.connect_timeout_s = timeout;
  }
  kf_cache_remote *r = NULL;
  return kf_cache_remote_open(&o, &r, NULL) == KF_OK ? r : NULL;
}

static int do_store(const char *url, const char *dir, uint64_t seed, bool read_only) {
  kf_cache_remote *r = open_remote(url, read_only, 0);
  kf_cache *c = NULL;
  if (!r || kf_cache_open(dir, NULL, &c, NULL) != KF_OK) {
    kf_cache_remote_close(r);
    return 1;
  }
  synth s;
  int rc = make_entry(&s, seed, 0) != 0 || kf_cache_store(c, r, &s.e, NULL, NULL) != KF_OK;
  printf("%s\n", s.e.key);
  print_stats(r);
  free(s.cubin);
  kf_cache_close(c);
  kf_cache_remote_close(r);
  return rc;
}

static int do_get(const char *url, double timeout, int n, char **keys) {
  kf_cache_remote *r = open_remote(url, true, timeout);
  if (!r) return 1;
  int rc = 0;
  for (int i = 0; i < n; i++) {
    kf_cache_entry *e = NULL;
    double t0 = kf_now_s();
    if (kf_cache_remote_get(r, keys[i], &e, NULL) != KF_OK) rc = 1;
    printf("%s %s %.3f\n", keys[i], e ? "hit" : "miss", kf_now_s() - t0);
    fflush(stdout);
    kf_cache_entry_destroy(e);
  }
  print_stats(r);
  kf_cache_remote_close(r);
  return rc;
}

int main(int argc, char **argv) {
  if (argc == 5 && strcmp(argv[1], "make") == 0)
    return do_make(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 10));
  if ((argc == 5 || argc == 6) && strcmp(argv[1], "store") == 0)
    return do_store(argv[2], argv[3], strtoull(argv[4], NULL, 10), argc == 6 && strcmp(argv[5], "--read-only") == 0);
  if (argc >= 4 && strcmp(argv[1], "get") == 0) {
    double timeout = 0;
    int first = 3;
    if (argc >= 6 && strcmp(argv[3], "--timeout") == 0) {
      timeout = atof(argv[4]);
      first = 5;
    }
    return do_get(argv[2], timeout, argc - first, argv + first);
  }
  fprintf(stderr, "usage: remote_client make DIR N SEED | store URL DIR SEED [--read-only] | "
                  "get URL [--timeout S] KEY...\n");
  return 2;
}
