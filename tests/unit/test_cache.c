/* tests/unit/test_cache.c — the kernel cache's local store (cache/,
 * include/kfuse/cache.h): keys (every field counts, fields cannot run into
 * each other), put/get round trips, the replace rule (higher reward, then
 * faster on the same GPU; ties keep the older), corrupt and truncated
 * entries (a warning naming the entry, a miss, removed; verify counts
 * them), LRU eviction (gc and the size limit on put), export/import, the
 * format check, the directory order and endpoint names. The entries are
 * synthetic (policy "synthetic:test", GPU "synthetic-gpu"): no kernel is
 * compiled or timed here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "kfuse/cache.h"
#include "kfuse/curl.h"
#include "../cache/synth_entry.h"

static char g_msgs[8192];

static void collect(void *user, kf_diag_level level, const char *msg) {
  (void)user;
  size_t n = strlen(g_msgs);
  snprintf(g_msgs + n, sizeof g_msgs - n, "%s%s\n", level == KF_DIAG_WARNING ? "warning: " : "", msg);
}

static kf_diag *fresh_diag(void) {
  static kf_diag d;
  g_msgs[0] = 0;
  kf_diag_init(&d, collect, NULL);
  return &d;
}

static char g_dir[256];

static int setup(void **state) {
  (void)state;
  snprintf(g_dir, sizeof g_dir, "/tmp/kfuse_test_cache_XXXXXX");
  if (!mkdtemp(g_dir)) return -1;
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

static kf_cache *open_store(const char *sub, int64_t max_bytes) {
  char d[400];
  snprintf(d, sizeof d, "%s/%s", g_dir, sub);
  kf_cache_options o;
  kf_cache_options_init(&o);
  o.max_bytes = max_bytes;
  kf_cache *c = NULL;
  if (kf_cache_open(d, &o, &c, fresh_diag()) != KF_OK) fail_msg("open %s: %s", d, g_msgs);
  return c;
}

/* a synthetic entry for group number g: the caller frees the strings */
typedef struct synth {
  kf_cache_entry e;
  char canonical[128], unit_json[128], verdict[160];
  unsigned char cubin[600];
} synth;

static void make(synth *s, int g, int reward, double ms, const char *gpu) {
  memset(s, 0, sizeof *s);
  snprintf(s->canonical, sizeof s->canonical, "kfuse-group-v1\nkind elementwise\n%%0 = kf.relu(%%i0) #%d\n", g);
  snprintf(s->unit_json, sizeof s->unit_json, "{\"synthetic\": true, \"group\": %d, \"ms\": %g}", g, ms);
  snprintf(s->verdict, sizeof s->verdict,
           "{\"format\": \"kfuse-verdict-v1\", \"synthetic\": true, \"reward\": %d, \"ms\": %g}", reward, ms);
  for (size_t i = 0; i < sizeof s->cubin; i++) s->cubin[i] = (unsigned char)(i * 7 + (unsigned)g); /* zeros too */
  kf_cache_entry *e = &s->e;
  assert_int_equal(synth_entry_key(e, s->canonical, "cuda-13.0/nvrtc-13.0", fresh_diag()), KF_OK);
  e->unit_json = s->unit_json;
  e->unit_cu = "extern \"C\" __global__ void k() {}\n";
  e->cubin = s->cubin;
  e->cubin_bytes = sizeof s->cubin;
  e->verdict = s->verdict;
  e->reward = reward;
  e->ms = ms;
  e->gpu = (char *)gpu;
  e->policy = "synthetic:test";
}

static void put(kf_cache *c, synth *s, kf_cache_put_result want) {
  kf_cache_put_result r;
  if (kf_cache_put(c, &s->e, &r, fresh_diag()) != KF_OK) fail_msg("put: %s", g_msgs);
  assert_int_equal(r, want);
}

static kf_cache_entry *get(kf_cache *c, const char *key) {
  kf_cache_entry *e = NULL;
  if (kf_cache_get(c, key, &e, fresh_diag()) != KF_OK) fail_msg("get: %s", g_msgs);
  return e;
}

static void test_key(void **state) {
  (void)state;
  kf_cache_key_fields f;
  kf_cache_key_fields_init(&f);
  assert_int_equal(f.codegen, KF_CACHE_CODEGEN_VERSION);
  f.canonical = "kfuse-group-v1\nkind elementwise\n";
  f.precision = "default";
  f.arch = "sm_90";
  f.toolkit = "cuda-13.0";
  f.driver = "";
  kf_cache_key base, k;
  assert_int_equal(kf_cache_key_make(&f, &base, fresh_diag()), KF_OK);
  assert_int_equal(strlen(base.hex), 64);
  assert_int_equal(kf_cache_key_make(&f, &k, fresh_diag()), KF_OK);
  assert_string_equal(base.hex, k.hex); /* deterministic */
  /* every field is in the key */
  kf_cache_key_fields g = f;
  g.precision = "tf32";
  assert_int_equal(kf_cache_key_make(&g, &k, fresh_diag()), KF_OK);
  assert_string_not_equal(base.hex, k.hex);
  g = f;
  g.arch = "sm_90a";
  assert_int_equal(kf_cache_key_make(&g, &k, fresh_diag()), KF_OK);
  assert_string_not_equal(base.hex, k.hex);
  g = f;
  g.toolkit = "cuda-13.1";
  assert_int_equal(kf_cache_key_make(&g, &k, fresh_diag()), KF_OK);
  assert_string_not_equal(base.hex, k.hex);
  g = f;
  g.driver = "580";
  assert_int_equal(kf_cache_key_make(&g, &k, fresh_diag()), KF_OK);
  assert_string_not_equal(base.hex, k.hex);
  g = f;
  g.codegen = KF_CACHE_CODEGEN_VERSION + 1;
  assert_int_equal(kf_cache_key_make(&g, &k, fresh_diag()), KF_OK);
  assert_string_not_equal(base.hex, k.hex);
  g = f;
  g.canonical = "kfuse-group-v1\nkind elementwise \n";
  assert_int_equal(kf_cache_key_make(&g, &k, fresh_diag()), KF_OK);
  assert_string_not_equal(base.hex, k.hex);
  /* fields cannot run into each other: "sm_90" + "a..." vs "sm_90a" + "..." */
  kf_cache_key a, b;
  g = f;
  g.arch = "sm_9";
  g.toolkit = "0cuda-13.0";
  assert_int_equal(kf_cache_key_make(&g, &a, fresh_diag()), KF_OK);
  assert_string_not_equal(base.hex, a.hex);
  g.arch = "";
  assert_int_equal(kf_cache_key_make(&g, &b, fresh_diag()), KF_ERR_ARG);
  assert_non_null(strstr(g_msgs, "'arch'"));
  g = f;
  g.canonical = NULL;
  assert_int_equal(kf_cache_key_make(&g, &b, fresh_diag()), KF_ERR_ARG);
  assert_non_null(strstr(g_msgs, "'canonical'"));
  g = f;
  g.driver = NULL;
  assert_int_equal(kf_cache_key_make(&g, &b, fresh_diag()), KF_ERR_ARG);
}

static void test_put_get(void **state) {
  (void)state;
  kf_cache *c = open_store("a", 0);
  synth s;
  make(&s, 1, 2, 0.5, "synthetic-gpu");
  assert_null(get(c, s.e.key)); /* a miss */
  put(c, &s, KF_CACHE_PUT_NEW);
  kf_cache_entry *e = get(c, s.e.key);
  assert_non_null(e);
  assert_string_equal(e->key, s.e.key);
  assert_string_equal(e->canonical, s.canonical);
  assert_string_equal(e->unit_json, s.unit_json);
  assert_string_equal(e->unit_cu, s.e.unit_cu);
  assert_string_equal(e->verdict, s.verdict);
  assert_null(e->evidence);
  assert_int_equal(e->cubin_bytes, sizeof s.cubin);
  assert_memory_equal(e->cubin, s.cubin, sizeof s.cubin);
  assert_int_equal(e->reward, 2);
  assert_true(e->ms == 0.5);
  assert_string_equal(e->gpu, "synthetic-gpu");
  assert_string_equal(e->policy, "synthetic:test");
  assert_string_equal(e->endpoint, "");
  assert_string_equal(e->arch, "sm_90a");
  assert_true(e->created_ms > 0);
  kf_cache_entry_destroy(e);
  kf_cache_entry_destroy(NULL);
  /* a key of another arch never matches */
  kf_cache_key_fields f = {s.canonical, "default", "sm_90", "cuda-13.0/nvrtc-13.0", "", KF_CACHE_CODEGEN_VERSION};
  kf_cache_key other;
  assert_int_equal(kf_cache_key_make(&f, &other, fresh_diag()), KF_OK);
  assert_null(get(c, other.hex));
  kf_cache_stats st;
  assert_int_equal(kf_cache_get_stats(c, &st, fresh_diag()), KF_OK);
  assert_int_equal(st.entries, 1);
  assert_int_equal(st.hits, 1);
  assert_int_equal(st.misses, 2);
  assert_true(st.bytes > (int64_t)sizeof s.cubin);
  /* refused: unverified, a key that is not the fields', a key in an endpoint */
  synth bad;
  make(&bad, 2, -1, 1.0, "synthetic-gpu");
  assert_int_equal(kf_cache_put(c, &bad.e, NULL, fresh_diag()), KF_ERR_ARG);
  assert_non_null(strstr(g_msgs, "reward -1"));
  make(&bad, 2, 1, 1.0, "synthetic-gpu");
  bad.e.key[0] = bad.e.key[0] == 'a' ? 'b' : 'a';
  assert_int_equal(kf_cache_put(c, &bad.e, NULL, fresh_diag()), KF_ERR_ARG);
  make(&bad, 2, 1, 1.0, "synthetic-gpu");
  bad.e.endpoint = "https://user:sk-secret@host/v1";
  assert_int_equal(kf_cache_put(c, &bad.e, NULL, fresh_diag()), KF_ERR_ARG);
  assert_int_equal(kf_cache_get(c, "nothex", &e, fresh_diag()), KF_ERR_ARG);
  kf_cache_close(c);
  kf_cache_close(NULL);
}

static void test_replace(void **state) {
  (void)state;
  kf_cache *c = open_store("r", 0);
  synth s;
  make(&s, 3, 1, 2.0, "gpu-a");
  put(c, &s, KF_CACHE_PUT_NEW);
  make(&s, 3, 1, 2.0, "gpu-a");
  put(c, &s, KF_CACHE_PUT_KEPT); /* identical */
  make(&s, 3, 1, 2.0, "gpu-b");
  s.e.policy = "synthetic:tie";
  put(c, &s, KF_CACHE_PUT_KEPT); /* tie (equal ms): the older stays */
  make(&s, 3, 1, 1.0, "gpu-b");
  put(c, &s, KF_CACHE_PUT_KEPT); /* faster, but on another GPU: no comparison, keep */
  make(&s, 3, 1, 3.0, "gpu-a");
  put(c, &s, KF_CACHE_PUT_KEPT); /* slower */
  kf_cache_entry *e = get(c, s.e.key);
  assert_string_equal(e->gpu, "gpu-a");
  assert_string_equal(e->policy, "synthetic:test");
  assert_true(e->ms == 2.0);
  kf_cache_entry_destroy(e);
  make(&s, 3, 1, 1.5, "gpu-a");
  put(c, &s, KF_CACHE_PUT_REPLACED); /* faster on the same GPU */
  make(&s, 3, 2, 9.0, "gpu-b");
  put(c, &s, KF_CACHE_PUT_REPLACED); /* higher reward wins whatever the time */
  make(&s, 3, 1, 0.1, "gpu-b");
  put(c, &s, KF_CACHE_PUT_KEPT); /* lower reward never replaces */
  e = get(c, s.e.key);
  assert_int_equal(e->reward, 2);
  assert_true(e->ms == 9.0);
  kf_cache_entry_destroy(e);
  kf_cache_close(c);
}

static void corrupt_sql(const char *sub, const char *sql) {
  char p[400];
  snprintf(p, sizeof p, "%s/%s/index.sqlite", g_dir, sub);
  sqlite3 *db = NULL;
  assert_int_equal(sqlite3_open(p, &db), SQLITE_OK);
  char *err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) fail_msg("%s: %s", sql, err);
  sqlite3_close(db);
}

static void test_corrupt(void **state) {
  (void)state;
  kf_cache *c = open_store("x", 0);
  synth s1, s2, s3;
  make(&s1, 10, 1, 1.0, "synthetic-gpu");
  make(&s2, 11, 1, 1.0, "synthetic-gpu");
  make(&s3, 12, 1, 1.0, "synthetic-gpu");
  put(c, &s1, KF_CACHE_PUT_NEW);
  put(c, &s2, KF_CACHE_PUT_NEW);
  put(c, &s3, KF_CACHE_PUT_NEW);
  /* a truncated cubin, an altered source, a reward raised behind its back */
  char sql[300];
  snprintf(sql, sizeof sql, "UPDATE entries SET cubin = substr(cubin, 1, 100) WHERE key = '%s'", s1.e.key);
  corrupt_sql("x", sql);
  snprintf(sql, sizeof sql, "UPDATE entries SET unit_cu = 'x' || unit_cu WHERE key = '%s'", s2.e.key);
  corrupt_sql("x", sql);
  snprintf(sql, sizeof sql, "UPDATE entries SET reward = 3 WHERE key = '%s'", s3.e.key);
  corrupt_sql("x", sql);
  kf_cache_entry *e = NULL;
  assert_int_equal(kf_cache_get(c, s1.e.key, &e, fresh_diag()), KF_OK);
  assert_null(e); /* a miss */
  char prefix[17];
  snprintf(prefix, sizeof prefix, "%.16s", s1.e.key);
  assert_non_null(strstr(g_msgs, "warning: "));
  assert_non_null(strstr(g_msgs, prefix));
  assert_non_null(strstr(g_msgs, "corrupt"));
  kf_cache_stats st;
  assert_int_equal(kf_cache_get_stats(c, &st, fresh_diag()), KF_OK);
  assert_int_equal(st.entries, 2); /* removed */
  /* verify finds the other two and removes them */
  int64_t ok = -1, bad = -1;
  assert_int_equal(kf_cache_verify(c, &ok, &bad, fresh_diag()), KF_OK);
  assert_int_equal(ok, 0);
  assert_int_equal(bad, 2);
  snprintf(prefix, sizeof prefix, "%.16s", s2.e.key);
  assert_non_null(strstr(g_msgs, prefix));
  snprintf(prefix, sizeof prefix, "%.16s", s3.e.key);
  assert_non_null(strstr(g_msgs, prefix));
  assert_int_equal(kf_cache_verify(c, &ok, &bad, fresh_diag()), KF_OK);
  assert_int_equal(bad, 0);
  /* a corrupt entry is replaced by any verified put */
  put(c, &s1, KF_CACHE_PUT_NEW);
  snprintf(sql, sizeof sql, "UPDATE entries SET verdict = '{}' WHERE key = '%s'", s1.e.key);
  corrupt_sql("x", sql);
  synth worse;
  make(&worse, 10, 1, 5.0, "synthetic-gpu");
  kf_cache_put_result r;
  assert_int_equal(kf_cache_put(c, &worse.e, &r, fresh_diag()), KF_OK);
  assert_int_equal(r, KF_CACHE_PUT_REPLACED);
  assert_non_null(strstr(g_msgs, "corrupt"));
  kf_cache_close(c);
  /* another format is refused by name */
  corrupt_sql("x", "UPDATE meta SET value = 'kfuse-cache-v0' WHERE name = 'format'");
  char d[400];
  snprintf(d, sizeof d, "%s/x", g_dir);
  assert_int_equal(kf_cache_open(d, NULL, &c, fresh_diag()), KF_ERR_VERSION);
  assert_null(c);
  assert_non_null(strstr(g_msgs, "kfuse-cache-v0"));
}

static void test_evict(void **state) {
  (void)state;
  kf_cache *c = open_store("e", 0);
  synth s[5];
  int64_t per = 0;
  for (int i = 0; i < 5; i++) {
    make(&s[i], 20 + i, 1, 1.0, "synthetic-gpu");
    s[i].e.created_ms = 1000000 + i * 1000; /* oldest first */
    put(c, &s[i], KF_CACHE_PUT_NEW);
  }
  kf_cache_entry *e = get(c, s[0].e.key); /* the oldest is now the most recently used */
  per = e->bytes;
  kf_cache_entry_destroy(e);
  int64_t n = 0, freed = 0;
  assert_int_equal(kf_cache_gc(c, 3 * per, &n, &freed, fresh_diag()), KF_OK);
  assert_int_equal(n, 2);
  assert_int_equal(freed, 2 * per);
  assert_null(get(c, s[1].e.key));
  assert_null(get(c, s[2].e.key));
  e = get(c, s[0].e.key);
  assert_non_null(e);
  kf_cache_entry_destroy(e);
  assert_int_equal(kf_cache_gc(c, 0, &n, &freed, fresh_diag()), KF_OK);
  assert_int_equal(n, 3);
  assert_int_equal(kf_cache_gc(c, -1, &n, &freed, fresh_diag()), KF_ERR_ARG);
  kf_cache_close(c);
  /* a size limit on put evicts the least recently used, never the new one */
  c = open_store("e2", 2 * per);
  for (int i = 0; i < 5; i++) {
    make(&s[i], 30 + i, 1, 1.0, "synthetic-gpu");
    s[i].e.created_ms = 2000000 + i * 1000;
    put(c, &s[i], KF_CACHE_PUT_NEW);
  }
  kf_cache_stats st;
  assert_int_equal(kf_cache_get_stats(c, &st, fresh_diag()), KF_OK);
  assert_int_equal(st.entries, 2);
  e = get(c, s[4].e.key);
  assert_non_null(e);
  kf_cache_entry_destroy(e);
  e = get(c, s[3].e.key);
  assert_non_null(e);
  kf_cache_entry_destroy(e);
  kf_cache_close(c);
}

typedef struct listed {
  int n;
  char keys[16][65];
  int rewards[16];
} listed;

static int list_one(void *user, const kf_cache_entry *e) {
  listed *l = user;
  assert_null(e->unit_json); /* metadata only */
  snprintf(l->keys[l->n], 65, "%s", e->key);
  l->rewards[l->n++] = e->reward;
  return 0;
}

static void test_export_import(void **state) {
  (void)state;
  kf_cache *c = open_store("src", 0);
  synth s[3];
  for (int i = 0; i < 3; i++) {
    make(&s[i], 40 + i, 1 + i, 1.0, "synthetic-gpu");
    put(c, &s[i], KF_CACHE_PUT_NEW);
  }
  char file[400];
  snprintf(file, sizeof file, "%s/cache.kfc", g_dir);
  int64_t n = 0;
  assert_int_equal(kf_cache_export(c, file, &n, fresh_diag()), KF_OK);
  assert_int_equal(n, 3);
  listed a = {0}, b = {0};
  assert_int_equal(kf_cache_list(c, list_one, &a, fresh_diag()), KF_OK);
  kf_cache *d = open_store("dst", 0);
  synth better;
  make(&better, 40, 3, 1.0, "synthetic-gpu"); /* beats s[0] (reward 1) */
  put(d, &better, KF_CACHE_PUT_NEW);
  kf_cache_import_counts k;
  assert_int_equal(kf_cache_import(d, file, &k, fresh_diag()), KF_OK);
  assert_int_equal(k.added, 2);
  assert_int_equal(k.kept, 1);
  assert_int_equal(k.replaced, 0);
  assert_int_equal(kf_cache_list(d, list_one, &b, fresh_diag()), KF_OK);
  assert_int_equal(b.n, 3);
  for (int i = 0; i < 3; i++) assert_string_equal(a.keys[i], b.keys[i]);
  kf_cache_entry *e = get(d, better.e.key);
  assert_int_equal(e->reward, 3);
  kf_cache_entry_destroy(e);
  /* not an export */
  assert_int_equal(kf_cache_import(d, "/dev/null", &k, fresh_diag()), KF_ERR_FORMAT);
  char db[400];
  snprintf(db, sizeof db, "%s/src/index.sqlite", g_dir);
  assert_int_equal(kf_cache_import(d, db, &k, fresh_diag()), KF_ERR_VERSION);
  assert_non_null(strstr(g_msgs, "not a kfuse cache export"));
  kf_cache_close(d);
  kf_cache_close(c);
}

static void test_names(void **state) {
  (void)state;
  char out[128];
  kf_cache_endpoint_name("https://user:sk-secret@api.example.com:8443/v1?key=abc#x", out, sizeof out);
  assert_string_equal(out, "https://api.example.com:8443/v1");
  kf_cache_endpoint_name("http://127.0.0.1:8000/v1", out, sizeof out);
  assert_string_equal(out, "http://127.0.0.1:8000/v1");
  /* the same rule for every URL kfuse shows (support/curl.c) */
  kf_url_shown("http://u:p@host/v1/chat/completions?token=t", out, sizeof out);
  assert_string_equal(out, "http://host/v1/chat/completions");
  kf_url_shown("https://a@b@host:1/x#frag", out, sizeof out);
  assert_string_equal(out, "https://host:1/x");
  /* plain http off this machine */
  assert_true(kf_url_cleartext_remote("http://api.example.com/v1"));
  assert_true(kf_url_cleartext_remote("HTTP://10.0.0.2:8000/v1"));
  assert_true(kf_url_cleartext_remote("http://127.0.0.1.evil.example/v1"));
  assert_true(kf_url_cleartext_remote("http://localhost@evil.example/v1"));
  assert_false(kf_url_cleartext_remote("https://api.example.com/v1"));
  assert_false(kf_url_cleartext_remote("http://127.0.0.1:8000/v1"));
  assert_false(kf_url_cleartext_remote("http://127.4.5.6/v1"));
  assert_false(kf_url_cleartext_remote("http://localhost:8000/v1"));
  assert_false(kf_url_cleartext_remote("http://[::1]:8000/v1"));
  assert_false(kf_url_cleartext_remote("http://user:pw@localhost/v1"));
  char d[256];
  setenv("KFUSE_CACHE_DIR", "/from/env", 1);
  assert_int_equal(kf_cache_dir_resolve("/from/flag", d, sizeof d, fresh_diag()), KF_OK);
  assert_string_equal(d, "/from/flag");
  assert_int_equal(kf_cache_dir_resolve(NULL, d, sizeof d, fresh_diag()), KF_OK);
  assert_string_equal(d, "/from/env");
  unsetenv("KFUSE_CACHE_DIR");
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  assert_int_equal(kf_cache_dir_resolve(NULL, d, sizeof d, fresh_diag()), KF_OK);
  assert_string_equal(d, "/xdg/kfuse");
  setenv("XDG_CACHE_HOME", "relative", 1); /* ignored, as the XDG spec says */
  setenv("HOME", "/home/u", 1);
  assert_int_equal(kf_cache_dir_resolve(NULL, d, sizeof d, fresh_diag()), KF_OK);
  assert_string_equal(d, "/home/u/.cache/kfuse");
  unsetenv("XDG_CACHE_HOME");
  unsetenv("HOME");
  assert_int_equal(kf_cache_dir_resolve(NULL, d, sizeof d, fresh_diag()), KF_ERR_ARG);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_key),
      cmocka_unit_test_setup_teardown(test_put_get, setup, teardown),
      cmocka_unit_test_setup_teardown(test_replace, setup, teardown),
      cmocka_unit_test_setup_teardown(test_corrupt, setup, teardown),
      cmocka_unit_test_setup_teardown(test_evict, setup, teardown),
      cmocka_unit_test_setup_teardown(test_export_import, setup, teardown),
      cmocka_unit_test(test_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
