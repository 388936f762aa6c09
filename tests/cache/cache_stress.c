/* tests/cache/cache_stress.c — puts and gets synthetic entries on one
 * store, for tests/cache/cache_check.py (many of these at once, some
 * killed with SIGKILL). Nothing here is a real kernel or timing: units,
 * verdicts and times are generated (policy "synthetic:stress", GPU
 * "synthetic-gpu").
 *
 *   cache_stress write DIR SEED OPS NKEYS LOG
 *       OPS random puts and gets over NKEYS groups; after each put has
 *       committed, one line "put KEY REWARD MS" is appended to LOG (one
 *       write(2), O_APPEND); every hit's content is checked against its
 *       key's group
 *   cache_stress check DIR LOG...
 *       every logged put's key is present with a unit at least as good
 *       (higher reward, or the same reward and no slower: one GPU name);
 *       every entry reads back intact; exit 1 naming the first failure */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kfuse/cache.h"

static uint64_t rng;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

static void fields(int g, char *canonical, size_t n, kf_cache_key_fields *f) {
  snprintf(canonical, n, "kfuse-group-v1\nkind elementwise\n%%0 = kf.relu(%%i0) #synthetic-%d\n", g);
  kf_cache_key_fields_init(f);
  f->canonical = canonical;
  f->precision = "default";
  f->arch = "sm_90a";
  f->toolkit = "synthetic-toolkit";
  f->driver = "";
}

static int do_write(const char *dir, uint64_t seed, int ops, int nkeys, const char *log) {
  rng = seed * 2654435761u + 1;
  int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0) return perror(log), 1;
  kf_cache *c = NULL;
  if (kf_cache_open(dir, NULL, &c, NULL) != KF_OK) return 1;
  size_t cubin_cap = 256 * 1024;
  unsigned char *cubin = malloc(cubin_cap);
  for (int op = 0; op < ops; op++) {
    int g = (int)(next() % (uint64_t)nkeys);
    char canonical[160];
    kf_cache_key_fields f;
    fields(g, canonical, sizeof canonical, &f);
    kf_cache_key k;
    if (kf_cache_key_make(&f, &k, NULL) != KF_OK) return 1;
    if (next() % 3 == 0) {
      kf_cache_entry *e = NULL;
      if (kf_cache_get(c, k.hex, &e, NULL) != KF_OK) return 1;
      if (e) {
        char want[64];
        snprintf(want, sizeof want, "\"group\": %d,", g);
        if (!strstr(e->unit_json, want) || strcmp(e->canonical, canonical) != 0) {
          fprintf(stderr, "cache_stress: entry %.16s holds another group's unit\n", k.hex);
          return 1;
        }
        kf_cache_entry_destroy(e);
      }
      continue;
    }
    int reward = 1 + (int)(next() % 3);
    double ms = (double)(1 + next() % 1000) / 100.0;
    size_t nb = 1024 + (size_t)(next() % (cubin_cap - 1024));
    for (size_t i = 0; i < nb; i++) cubin[i] = (unsigned char)next();
    char unit_json[160], verdict[200];
    snprintf(unit_json, sizeof unit_json, "{\"synthetic\": true, \"group\": %d, \"writer\": %llu}", g,
             (unsigned long long)seed);
    snprintf(verdict, sizeof verdict,
             "{\"format\": \"kfuse-verdict-v1\", \"synthetic\": true, \"reward\": %d, \"ms\": %.2f}", reward, ms);
    kf_cache_entry e;
    memset(&e, 0, sizeof e);
    memcpy(e.key, k.hex, 65);
    e.canonical = canonical;
    e.precision = (char *)f.precision;
    e.arch = (char *)f.arch;
    e.toolkit = (char *)f.toolkit;
    e.driver = (char *)f.driver;
    e.codegen = f.codegen;
    e.unit_json = unit_json;
    e.unit_cu = "extern \"C\" __global__ void synthetic() {}\n";
    e.cubin = cubin;
    e.cubin_bytes = nb;
    e.verdict = verdict;
    e.reward = reward;
    e.ms = ms;
    e.gpu = "synthetic-gpu";
    e.policy = "synthetic:stress";
    if (kf_cache_put(c, &e, NULL, NULL) != KF_OK) return 1;
    char line[128];
    int n = snprintf(line, sizeof line, "put %s %d %.2f\n", k.hex, reward, ms);
    if (write(fd, line, (size_t)n) != n) return perror(log), 1;
  }
  free(cubin);
  kf_cache_close(c);
  close(fd);
  return 0;
}

static int do_check(const char *dir, int nlogs, char **logs) {
  kf_cache *c = NULL;
  if (kf_cache_open(dir, NULL, &c, NULL) != KF_OK) return 1;
  int checked = 0;
  for (int i = 0; i < nlogs; i++) {
    FILE *f = fopen(logs[i], "r");
    if (!f) continue; /* a writer killed before it wrote anything */
    char key[80];
    int reward;
    double ms;
    char line[256];
    while (fgets(line, sizeof line, f)) {
      if (!strchr(line, '\n')) continue; /* a line cut by the kill */
      if (sscanf(line, "put %70s %d %lf", key, &reward, &ms) != 3) continue;
      kf_cache_entry *e = NULL;
      if (kf_cache_get(c, key, &e, NULL) != KF_OK) return 1;
      if (!e) {
        fprintf(stderr, "cache_stress: lost: %.16s (logged by %s)\n", key, logs[i]);
        return 1;
      }
      if (e->reward < reward || (e->reward == reward && e->ms > ms + 1e-9)) {
        fprintf(stderr, "cache_stress: %.16s holds reward %d, %.2f ms; a better one (%d, %.2f ms) was put\n", key,
                e->reward, e->ms, reward, ms);
        return 1;
      }
      kf_cache_entry_destroy(e);
      checked++;
    }
    fclose(f);
  }
  kf_cache_close(c);
  printf("cache_stress: %d logged puts present and at least as good\n", checked);
  return 0;
}

int main(int argc, char **argv) {
  if (argc == 7 && strcmp(argv[1], "write") == 0)
    return do_write(argv[2], strtoull(argv[3], NULL, 10), atoi(argv[4]), atoi(argv[5]), argv[6]);
  if (argc >= 3 && strcmp(argv[1], "check") == 0) return do_check(argv[2], argc - 3, argv + 3);
  fprintf(stderr, "usage: cache_stress write DIR SEED OPS NKEYS LOG | check DIR LOG...\n");
  return 2;
}
