/* tests/unit/test_cache_remote.c — the kernel cache's wire form and the
 * parts of its HTTP remote that need no server (cache/wire.c,
 * cache/remote.c, cache/tiered.c; docs/CACHE.md).
 *
 * The wire form: round trips with and without the optional fields
 * (binary cubins with zero bytes, an empty cubin); a body cut at every
 * byte offset and a body with any single bit flipped are errors, never a
 * crash or an entry; crafted bodies with a valid checksum (an unknown or
 * repeated field, a length past the end, a missing field, NUL in a
 * string, numbers out of form, another version, a key or payload hash
 * that does not match) are refused with the reason. The remote without a
 * server: URLs with credentials, queries or another scheme refused
 * without echoing the secret; a user without a password; a refused
 * connection is a warning and a miss, costs 1 + retries requests once
 * and marks the remote down (later calls send nothing and say nothing);
 * read-only never sends; the tiered fetch and store over a local store.
 * The servers (nginx, errors, a slow one, auth) are tests/cache/
 * remote_check.py's. Entries are synthetic (policy "synthetic:test"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <llvm-c/blake3.h>

#include "cache_int.h"
#include "kfuse/cache.h"
#include "../cache/synth_entry.h"

static char g_msgs[16384];

static void collect(void *user, kf_diag_level level, const char *msg) {
  (void)user;
  size_t n = strlen(g_msgs);
  snprintf(g_msgs + n, sizeof g_msgs - n, "%s%s\n",
           level == KF_DIAG_WARNING ? "warning: " : level == KF_DIAG_ERROR ? "error: " : "", msg);
}

static kf_diag g_diag;

static kf_diag *fresh_diag(void) {
  g_msgs[0] = 0;
  kf_diag_init(&g_diag, collect, NULL);
  return &g_diag;
}

static char g_dir[256];

static int setup(void **state) {
  (void)state;
  snprintf(g_dir, sizeof g_dir, "/tmp/kfuse_test_cache_remote_XXXXXX");
  return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

/* ---- synthetic entries ------------------------------------------------------ */

typedef struct synth {
  kf_cache_entry e;
  char canonical[128], unit_json[128], verdict[160];
  unsigned char cubin[700];
} synth;

/* A complete entry for group g, as the store would hold it (payload hash,
 * created_ms): the strings live in s. */
static void make(synth *s, int g) {
  memset(s, 0, sizeof *s);
  snprintf(s->canonical, sizeof s->canonical, "kfuse-group-v1\nkind elementwise\n%%0 = kf.relu(%%i0) #%d\n", g);
  snprintf(s->unit_json, sizeof s->unit_json, "{\"synthetic\": true, \"group\": %d}", g);
  snprintf(s->verdict, sizeof s->verdict, "{\"format\": \"kfuse-verdict-v1\", \"synthetic\": true, \"reward\": 2}");
  for (size_t i = 0; i < sizeof s->cubin; i++) s->cubin[i] = (unsigned char)(i * 13 + (unsigned)g); /* zeros too */
  kf_cache_entry *e = &s->e;
  assert_int_equal(synth_entry_key(e, s->canonical, "cuda-13.0/nvrtc-13.0", fresh_diag()), KF_OK);
  e->unit_json = s->unit_json;
  e->unit_cu = "extern \"C\" __global__ void k() {}\n";
  e->cubin = s->cubin;
  e->cubin_bytes = sizeof s->cubin;
  e->verdict = s->verdict;
  e->evidence = "{\"runs\": [0.1, 0.2]}";
  e->reward = 2;
  e->ms = 0.1 + g / 3.0; /* not short in decimal: the %.17g round trip */
  e->gpu = "synthetic-gpu";
  e->policy = "synthetic:test";
  e->endpoint = "";
  e->created_ms = 1700000000123LL + g;
  e->last_used_ms = e->created_ms;
  e->bytes = kf_cache_payload_bytes(e);
  kf_cache_payload_hash(e, e->payload_hash);
}

static void encode(const kf_cache_entry *e, kf_strbuf *b) {
  kf_strbuf_init(b);
  if (kf_cache_entry_encode(e, b, fresh_diag()) != KF_OK) fail_msg("encode: %s", g_msgs);
}

static void same_str(const char *a, const char *b) {
  if (!a || !b)
    assert_true(a == b);
  else
    assert_string_equal(a, b);
}

static void assert_same_entry(const kf_cache_entry *a, const kf_cache_entry *b) {
  assert_string_equal(a->key, b->key);
  assert_string_equal(a->payload_hash, b->payload_hash);
  same_str(a->canonical, b->canonical);
  same_str(a->precision, b->precision);
  same_str(a->arch, b->arch);
  same_str(a->toolkit, b->toolkit);
  same_str(a->driver, b->driver);
  assert_int_equal(a->codegen, b->codegen);
  same_str(a->unit_json, b->unit_json);
  same_str(a->unit_cu, b->unit_cu);
  assert_true((a->cubin == NULL) == (b->cubin == NULL));
  assert_int_equal(a->cubin_bytes, b->cubin_bytes);
  if (a->cubin_bytes) assert_memory_equal(a->cubin, b->cubin, a->cubin_bytes);
  same_str(a->verdict, b->verdict);
  same_str(a->evidence, b->evidence);
  assert_int_equal(a->reward, b->reward);
  assert_true(a->ms == b->ms);
  same_str(a->gpu, b->gpu);
  same_str(a->policy, b->policy);
  same_str(a->endpoint, b->endpoint);
  assert_int_equal(a->created_ms, b->created_ms);
  assert_int_equal(a->bytes, b->bytes);
}

/* ---- the wire form ------------------------------------------------------------ */

static void round_trip(const kf_cache_entry *e) {
  kf_strbuf b;
  encode(e, &b);
  assert_memory_equal(b.data, KF_CACHE_WIRE_FORMAT "\n", sizeof KF_CACHE_WIRE_FORMAT);
  kf_cache_entry *d = NULL;
  if (kf_cache_entry_decode(b.data, b.len, &d, fresh_diag()) != KF_OK) fail_msg("decode: %s", g_msgs);
  assert_non_null(d);
  assert_same_entry(e, d);
  assert_int_equal(d->last_used_ms, e->created_ms);
  assert_int_equal(d->hits, 0);
  /* encoding is deterministic: the decoded entry encodes to the same bytes */
  kf_strbuf b2;
  encode(d, &b2);
  assert_int_equal(b.len, b2.len);
  assert_memory_equal(b.data, b2.data, b.len);
  kf_strbuf_fini(&b2);
  kf_cache_entry_destroy(d);
  kf_strbuf_fini(&b);
}

static void test_wire_round_trip(void **state) {
  (void)state;
  synth s;
  make(&s, 1);
  round_trip(&s.e);
  /* without the optional fields */
  make(&s, 2);
  s.e.unit_cu = NULL;
  s.e.cubin = NULL;
  s.e.cubin_bytes = 0;
  s.e.evidence = NULL;
  s.e.bytes = kf_cache_payload_bytes(&s.e);
  kf_cache_payload_hash(&s.e, s.e.payload_hash);
  round_trip(&s.e);
  /* an empty cubin stays an empty cubin, not an absent one */
  make(&s, 3);
  s.e.cubin_bytes = 0;
  s.e.bytes = kf_cache_payload_bytes(&s.e);
  kf_cache_payload_hash(&s.e, s.e.payload_hash);
  round_trip(&s.e);
  /* an endpoint name and a reward of 3 */
  make(&s, 4);
  s.e.endpoint = "https://llm.example/v1";
  s.e.policy = "llm:some-model";
  s.e.reward = 3;
  s.e.ms = 0;
  kf_cache_payload_hash(&s.e, s.e.payload_hash);
  round_trip(&s.e);
}

static void test_wire_refuses_to_encode(void **state) {
  (void)state;
  synth s;
  make(&s, 5);
  kf_strbuf b;
  kf_strbuf_init(&b);
  s.e.verdict = NULL;
  assert_int_equal(kf_cache_entry_encode(&s.e, &b, fresh_diag()), KF_ERR_ARG);
  make(&s, 5);
  s.e.payload_hash[0] = 0;
  assert_int_equal(kf_cache_entry_encode(&s.e, &b, fresh_diag()), KF_ERR_ARG);
  assert_non_null(strstr(g_msgs, "payload hash"));
  kf_strbuf_fini(&b);
}

/* Every prefix of a valid body is an error: nothing is read past n (ASan
 * watches the copy, which is exactly n bytes), nothing is returned. */
static void test_wire_truncated(void **state) {
  (void)state;
  synth s;
  make(&s, 6);
  kf_strbuf b;
  encode(&s.e, &b);
  for (size_t n = 0; n < b.len; n++) {
    unsigned char *cut = malloc(n ? n : 1);
    memcpy(cut, b.data, n);
    kf_cache_entry *d = (kf_cache_entry *)1;
    kf_status st = kf_cache_entry_decode(cut, n, &d, fresh_diag());
    if (st == KF_OK) fail_msg("a body cut to %zu of %zu bytes decoded", n, b.len);
    assert_null(d);
    assert_true(g_diag.n_errors > 0);
    free(cut);
  }
  kf_strbuf_fini(&b);
}

static void test_wire_bit_flips(void **state) {
  (void)state;
  synth s;
  make(&s, 7);
  kf_strbuf b;
  encode(&s.e, &b);
  unsigned char *p = malloc(b.len);
  memcpy(p, b.data, b.len);
  for (size_t i = 0; i < b.len; i++)
    for (int bit = 0; bit < 8; bit++) {
      p[i] ^= (unsigned char)(1u << bit);
      kf_cache_entry *d = NULL;
      kf_status st = kf_cache_entry_decode(p, b.len, &d, fresh_diag());
      if (st == KF_OK) fail_msg("byte %zu bit %d flipped: decoded", i, bit);
      assert_null(d);
      p[i] ^= (unsigned char)(1u << bit);
    }
  kf_cache_entry *d = NULL;
  assert_int_equal(kf_cache_entry_decode(p, b.len, &d, fresh_diag()), KF_OK); /* restored */
  kf_cache_entry_destroy(d);
  free(p);
  kf_strbuf_fini(&b);
}

/* ---- crafted bodies with a valid checksum --------------------------------------- */

typedef struct field {
  char tag;
  size_t len;
  const char *p;
} field;

/* The fields of a valid body (our own encoder's output). */
static int split(const kf_strbuf *b, field *f, int max) {
  size_t p = sizeof KF_CACHE_WIRE_FORMAT; /* the line and its '\n' */
  int n = 0;
  while (p < b->len) {
    uint64_t len = 0;
    for (int i = 7; i >= 0; i--) len = (len << 8) | (unsigned char)b->data[p + 1 + i];
    if (b->data[p] == 'Z') break;
    assert_true(n < max);
    f[n].tag = b->data[p];
    f[n].len = (size_t)len;
    f[n].p = b->data + p + 9;
    n++;
    p += 9 + (size_t)len;
  }
  return n;
}

/* magic + fields + a valid trailer */
static void join(kf_strbuf *out, const char *magic, const field *f, int n) {
  kf_strbuf_init(out);
  kf_strbuf_append(out, magic, strlen(magic));
  for (int i = 0; i < n; i++) {
    uint8_t hdr[9];
    kf_cache_field_header(hdr, f[i].tag, f[i].len);
    kf_strbuf_append(out, (const char *)hdr, 9);
    kf_strbuf_append(out, f[i].p, f[i].len);
  }
  uint8_t sum[32], hdr[9];
  llvm_blake3_hasher h;
  llvm_blake3_hasher_init(&h);
  llvm_blake3_hasher_update(&h, out->data, out->len);
  llvm_blake3_hasher_finalize(&h, sum, sizeof sum);
  kf_cache_field_header(hdr, 'Z', 32);
  kf_strbuf_append(out, (const char *)hdr, 9);
  kf_strbuf_append(out, (const char *)sum, 32);
}

static int find(const field *f, int n, char tag) {
  for (int i = 0; i < n; i++)
    if (f[i].tag == tag) return i;
  fail_msg("no field '%c'", tag);
  return -1;
}

/* decoding the fields f[n] under magic fails with want, saying expect */
static void refused(const char *magic, const field *f, int n, kf_status want, const char *expect) {
  kf_strbuf b;
  join(&b, magic, f, n);
  kf_cache_entry *d = NULL;
  kf_status st = kf_cache_entry_decode(b.data, b.len, &d, fresh_diag());
  if (st != want) fail_msg("expected %s, got %s: %s", kf_status_str(want), kf_status_str(st), g_msgs);
  assert_null(d);
  if (!strstr(g_msgs, expect)) fail_msg("expected '%s' in: %s", expect, g_msgs);
  kf_strbuf_fini(&b);
}

#define MAGIC KF_CACHE_WIRE_FORMAT "\n"

static void test_wire_crafted(void **state) {
  (void)state;
  synth s;
  make(&s, 8);
  kf_strbuf b;
  encode(&s.e, &b);
  field f[32], g[33];
  int n = split(&b, f, 32);
  assert_int_equal(n, 19);
  /* the fields reassembled decode: the crafting itself is sound */
  kf_strbuf ok;
  join(&ok, MAGIC, f, n);
  assert_int_equal(ok.len, b.len);
  assert_memory_equal(ok.data, b.data, b.len);
  kf_strbuf_fini(&ok);

  refused("kfuse-cache-entry-v2\n", f, n, KF_ERR_VERSION, "format version '2'");
  refused("kfuse-cache-entrx-v1\n", f, n, KF_ERR_FORMAT, "not a kfuse cache entry");
  /* an unknown field */
  memcpy(g, f, sizeof f);
  g[n] = (field){'q', 3, "abc"};
  refused(MAGIC, g, n + 1, KF_ERR_FORMAT, "unknown field tag 0x71");
  /* a repeated one */
  memcpy(g, f, sizeof f);
  g[n] = f[find(f, n, 'U')];
  refused(MAGIC, g, n + 1, KF_ERR_FORMAT, "'gpu' appears twice");
  /* a missing one: each required field in turn */
  const char required[] = "KHGPATDCJRWMUONc";
  for (const char *t = required; *t; t++) {
    int k = 0;
    for (int i = 0; i < n; i++)
      if (f[i].tag != *t) g[k++] = f[i];
    refused(MAGIC, g, k, KF_ERR_FORMAT, "is missing");
  }
  /* fields in another order are still the same entry */
  for (int i = 0; i < n; i++) g[i] = f[n - 1 - i];
  kf_strbuf rev;
  join(&rev, MAGIC, g, n);
  kf_cache_entry *d = NULL;
  if (kf_cache_entry_decode(rev.data, rev.len, &d, fresh_diag()) != KF_OK) fail_msg("reversed: %s", g_msgs);
  assert_same_entry(&s.e, d);
  kf_cache_entry_destroy(d);
  kf_strbuf_fini(&rev);
  /* a NUL inside a string */
  memcpy(g, f, sizeof f);
  int j = find(g, n, 'J');
  char *nul = malloc(g[j].len);
  memcpy(nul, g[j].p, g[j].len);
  nul[3] = 0;
  g[j].p = nul;
  refused(MAGIC, g, n, KF_ERR_FORMAT, "'unit_json' holds a NUL byte");
  free(nul);
  /* numbers: not decimal, a leading zero, "-0", out of range, ms spelt otherwise */
  const struct {
    char tag;
    const char *text;
  } bad[] = {{'W', "2x"}, {'W', "02"}, {'W', "-0"}, {'W', "99999999999"}, {'C', "0"}, {'c', "-5"},
             {'c', ""},   {'M', "nan"}, {'M', "inf"}, {'M', "-1"},         {'M', "1e400"}, {'M', "0.10"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    memcpy(g, f, sizeof f);
    int k = find(g, n, bad[i].tag);
    g[k].p = bad[i].text;
    g[k].len = strlen(bad[i].text);
    refused(MAGIC, g, n, KF_ERR_FORMAT, "not a number in range");
  }
  /* a key of the wrong length */
  memcpy(g, f, sizeof f);
  g[find(g, n, 'K')].len = 63;
  refused(MAGIC, g, n, KF_ERR_FORMAT, "64 hex digits");
  /* content that does not match the payload hash */
  memcpy(g, f, sizeof f);
  int u = find(g, n, 'U');
  g[u].p = "another-gpu";
  g[u].len = strlen("another-gpu");
  refused(MAGIC, g, n, KF_ERR_FORMAT, "payload hash");
  kf_strbuf_fini(&b);

  /* a payload hash that matches, but a key that is not its fields' key */
  make(&s, 9);
  memcpy(s.e.key, "00000000000000000000000000000000000000000000000000000000000000ff", 65);
  kf_cache_payload_hash(&s.e, s.e.payload_hash);
  encode(&s.e, &b);
  d = NULL;
  assert_int_equal(kf_cache_entry_decode(b.data, b.len, &d, fresh_diag()), KF_ERR_FORMAT);
  assert_null(d);
  assert_non_null(strstr(g_msgs, "not to its key"));
  kf_strbuf_fini(&b);
  /* an unverified unit */
  make(&s, 10);
  s.e.reward = 0;
  kf_cache_payload_hash(&s.e, s.e.payload_hash);
  encode(&s.e, &b);
  assert_int_equal(kf_cache_entry_decode(b.data, b.len, &d, fresh_diag()), KF_ERR_FORMAT);
  assert_non_null(strstr(g_msgs, "not a verified unit"));
  kf_strbuf_fini(&b);
  /* a length that runs past the end: field headers claiming 2^64 - 1 bytes */
  make(&s, 11);
  encode(&s.e, &b);
  size_t at = sizeof KF_CACHE_WIRE_FORMAT;
  memset(b.data + at + 1, 0xff, 8);
  assert_int_equal(kf_cache_entry_decode(b.data, b.len, &d, fresh_diag()), KF_ERR_FORMAT);
  assert_non_null(strstr(g_msgs, "claims 18446744073709551615 bytes"));
  kf_strbuf_fini(&b);
  /* bytes after the trailer */
  make(&s, 12);
  encode(&s.e, &b);
  kf_strbuf_append(&b, "x", 1);
  assert_int_equal(kf_cache_entry_decode(b.data, b.len, &d, fresh_diag()), KF_ERR_FORMAT);
  kf_strbuf_fini(&b);
  assert_int_equal(kf_cache_entry_decode(NULL, 0, &d, fresh_diag()), KF_ERR_FORMAT);
}

/* ---- the remote without a server ---------------------------------------------- */

static void clear_auth_env(void) {
  unsetenv("KFUSE_CACHE_REMOTE_BEARER");
  unsetenv("KFUSE_CACHE_REMOTE_USER");
  unsetenv("KFUSE_CACHE_REMOTE_PASSWORD");
}

static kf_status try_open(const char *url, kf_cache_remote **r) {
  kf_cache_remote_options o;
  kf_cache_remote_options_init(&o);
  o.url = url;
  *r = NULL;
  return kf_cache_remote_open(&o, r, fresh_diag());
}

static void test_remote_open(void **state) {
  (void)state;
  clear_auth_env();
  kf_cache_remote_options o;
  kf_cache_remote_options_init(&o);
  assert_true(o.timeout_s == 10.0);
  assert_int_equal(o.retries, 2);
  assert_int_equal(o.max_body_bytes, (int64_t)256 << 20);
  assert_false(o.read_only);
  kf_cache_remote *r = NULL;
  assert_int_equal(try_open(NULL, &r), KF_ERR_ARG);
  assert_int_equal(try_open("ftp://cache.example/kfuse", &r), KF_ERR_ARG);
  assert_non_null(strstr(g_msgs, "http://"));
  assert_int_equal(try_open("cache.example/kfuse", &r), KF_ERR_ARG);
  /* credentials in the URL: refused, and not repeated */
  assert_int_equal(try_open("https://ci:hunter2-secret@cache.example/kfuse", &r), KF_ERR_ARG);
  assert_null(strstr(g_msgs, "hunter2"));
  assert_non_null(strstr(g_msgs, "KFUSE_CACHE_REMOTE_USER"));
  assert_int_equal(try_open("https://cache.example/kfuse?token=hunter2", &r), KF_ERR_ARG);
  assert_null(strstr(g_msgs, "hunter2"));
  assert_int_equal(try_open("http:///kfuse", &r), KF_ERR_ARG);
  /* a user without a password; a token with a line break */
  setenv("KFUSE_CACHE_REMOTE_USER", "ci", 1);
  assert_int_equal(try_open("https://cache.example/kfuse", &r), KF_ERR_ARG);
  assert_non_null(strstr(g_msgs, "KFUSE_CACHE_REMOTE_PASSWORD"));
  clear_auth_env();
  setenv("KFUSE_CACHE_REMOTE_BEARER", "abc\r\nX-Evil: 1", 1);
  assert_int_equal(try_open("https://cache.example/kfuse", &r), KF_ERR_ARG);
  assert_null(strstr(g_msgs, "X-Evil"));
  clear_auth_env();
  /* a good one: nothing is sent at open; the trailing '/' is dropped */
  assert_int_equal(try_open("https://cache.example/kfuse/", &r), KF_OK);
  assert_string_equal(kf_cache_remote_url(r), "https://cache.example/kfuse");
  kf_cache_remote_stats st;
  kf_cache_remote_get_stats(r, &st);
  assert_int_equal(st.requests, 0);
  /* keys are checked before anything is sent */
  kf_cache_entry *e = NULL;
  bool present = true;
  assert_int_equal(kf_cache_remote_get(r, "ABC", &e, fresh_diag()), KF_ERR_ARG);
  assert_int_equal(kf_cache_remote_head(r, NULL, &present, fresh_diag()), KF_ERR_ARG);
  assert_false(present);
  kf_cache_remote_close(r);
  kf_cache_remote_close(NULL);
}

/* http://127.0.0.1:PORT/kfuse where nothing listens */
static void refused_url(char *out, size_t n) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct sockaddr_in a;
  memset(&a, 0, sizeof a);
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  socklen_t len = sizeof a;
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
  close(fd); /* bound, never listened: connections are refused */
  snprintf(out, n, "http://127.0.0.1:%d/kfuse", ntohs(a.sin_port));
}

static int count(const char *hay, const char *needle) {
  int k = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) k++;
  return k;
}

static void test_remote_down(void **state) {
  (void)state;
  clear_auth_env();
  char url[128];
  refused_url(url, sizeof url);
  kf_cache_remote_options o;
  kf_cache_remote_options_init(&o);
  o.url = url;
  o.backoff_s = 0.01;
  kf_cache_remote *r = NULL;
  assert_int_equal(kf_cache_remote_open(&o, &r, fresh_diag()), KF_OK);
  synth s;
  make(&s, 20);
  kf_cache_entry *e = (kf_cache_entry *)1;
  kf_diag *d = fresh_diag();
  double t0 = kf_now_s();
  assert_int_equal(kf_cache_remote_get(r, s.e.key, &e, d), KF_OK); /* a failure is a miss */
  assert_null(e);
  assert_int_equal(d->n_errors, 0);
  assert_int_equal(d->n_warnings, 1);
  assert_non_null(strstr(g_msgs, "not used again"));
  assert_non_null(strstr(g_msgs, url));
  kf_cache_remote_stats st;
  kf_cache_remote_get_stats(r, &st);
  assert_true(st.down);
  assert_int_equal(st.requests, 3); /* 1 + 2 retries */
  assert_int_equal(st.retries, 2);
  assert_int_equal(st.misses, 1);
  /* down: nothing more is sent, nothing more is said */
  bool present = true;
  assert_int_equal(kf_cache_remote_get(r, s.e.key, &e, d), KF_OK);
  assert_int_equal(kf_cache_remote_head(r, s.e.key, &present, d), KF_OK);
  assert_false(present);
  assert_int_equal(kf_cache_remote_put(r, &s.e, d), KF_OK);
  kf_cache_remote_get_stats(r, &st);
  assert_int_equal(st.requests, 3);
  assert_int_equal(st.skipped, 1);
  assert_int_equal(d->n_warnings, 1);
  assert_int_equal(count(g_msgs, "warning"), 1);
  assert_true(kf_now_s() - t0 < 5.0);
  /* the tiers: the local store serves, the dead remote costs nothing */
  char dir[400];
  snprintf(dir, sizeof dir, "%s/local", g_dir);
  kf_cache *c = NULL;
  assert_int_equal(kf_cache_open(dir, NULL, &c, fresh_diag()), KF_OK);
  int source = -1;
  d = fresh_diag();
  assert_int_equal(kf_cache_fetch(c, r, s.e.key, &e, &source, d), KF_OK);
  assert_null(e);
  assert_int_equal(source, KF_CACHE_MISS);
  assert_int_equal(kf_cache_store(c, r, &s.e, NULL, d), KF_OK);
  assert_int_equal(kf_cache_fetch(c, r, s.e.key, &e, &source, d), KF_OK);
  assert_non_null(e);
  assert_int_equal(source, KF_CACHE_LOCAL);
  assert_string_equal(e->payload_hash, s.e.payload_hash);
  kf_cache_entry_destroy(e);
  assert_int_equal(d->n_warnings + d->n_errors, 0);
  kf_cache_remote_get_stats(r, &st);
  assert_int_equal(st.requests, 3);
  kf_cache_close(c);
  kf_cache_remote_close(r);
}

static void test_remote_read_only(void **state) {
  (void)state;
  clear_auth_env();
  char url[128];
  refused_url(url, sizeof url);
  kf_cache_remote_options o;
  kf_cache_remote_options_init(&o);
  o.url = url;
  o.read_only = true;
  kf_cache_remote *r = NULL;
  assert_int_equal(kf_cache_remote_open(&o, &r, fresh_diag()), KF_OK);
  synth s;
  make(&s, 21);
  kf_diag *d = fresh_diag();
  assert_int_equal(kf_cache_remote_put(r, &s.e, d), KF_OK);
  /* a new entry (no payload hash, no time yet), as the compiler stores it */
  synth t;
  make(&t, 22);
  t.e.payload_hash[0] = 0;
  t.e.created_ms = 0;
  t.e.endpoint = NULL;
  char dir[400];
  snprintf(dir, sizeof dir, "%s/ro", g_dir);
  kf_cache *c = NULL;
  assert_int_equal(kf_cache_open(dir, NULL, &c, fresh_diag()), KF_OK);
  assert_int_equal(kf_cache_store(c, r, &t.e, NULL, d), KF_OK);
  kf_cache_remote_stats st;
  kf_cache_remote_get_stats(r, &st);
  assert_int_equal(st.requests, 0); /* read-only: nothing was ever sent */
  assert_int_equal(st.skipped, 2);
  assert_false(st.down);
  assert_int_equal(d->n_warnings + d->n_errors, 0);
  kf_cache_entry *e = NULL;
  int source = -1;
  assert_int_equal(kf_cache_fetch(c, NULL, t.e.key, &e, &source, d), KF_OK);
  assert_int_equal(source, KF_CACHE_LOCAL);
  kf_cache_entry_destroy(e);
  kf_cache_push_counts k;
  assert_int_equal(kf_cache_remote_push(r, c, &k, fresh_diag()), KF_ERR_ARG);
  assert_non_null(strstr(g_msgs, "read-only"));
  /* a put of something that is not a verified entry is the caller's error */
  t.e.reward = 0;
  assert_int_equal(kf_cache_remote_put(r, &t.e, fresh_diag()), KF_ERR_ARG);
  make(&t, 23);
  t.e.canonical = "tampered";
  assert_int_equal(kf_cache_remote_put(r, &t.e, fresh_diag()), KF_ERR_ARG);
  assert_non_null(strstr(g_msgs, "corrupt"));
  /* neither tier: a miss; a bad key: an error */
  assert_int_equal(kf_cache_fetch(NULL, NULL, t.e.key, &e, &source, fresh_diag()), KF_OK);
  assert_null(e);
  assert_int_equal(source, KF_CACHE_MISS);
  assert_int_equal(kf_cache_fetch(c, r, "nothex", &e, NULL, fresh_diag()), KF_ERR_ARG);
  kf_cache_close(c);
  kf_cache_remote_close(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_wire_round_trip),
      cmocka_unit_test(test_wire_refuses_to_encode),
      cmocka_unit_test(test_wire_truncated),
      cmocka_unit_test(test_wire_bit_flips),
      cmocka_unit_test(test_wire_crafted),
      cmocka_unit_test(test_remote_open),
      cmocka_unit_test_setup_teardown(test_remote_down, setup, teardown),
      cmocka_unit_test_setup_teardown(test_remote_read_only, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
