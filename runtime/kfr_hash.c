/* kfr_hash.c — XXH64 (runtime/kfr_hash.h), from the specification:
 *
 *   four lanes v1..v4 = seed + P1 + P2, seed + P2, seed, seed - P1 consume
 *   32-byte stripes (each lane one little-endian 64-bit word: v = rotl(v +
 *   word * P2, 31) * P1); at the end the lanes are merged (or, under 32
 *   bytes, the accumulator starts at seed + P5), the length is added, the
 *   remaining 8-, 4- and 1-byte pieces are mixed in, and the result is
 *   avalanched.
 *
 * Words are read with memcpy (any alignment) as little-endian, which is the
 * host order on every target kfuse builds for (x86-64). */
#include <string.h>

#include "kfr_hash.h"

#define P1 0x9E3779B185EBCA87ull
#define P2 0xC2B2AE3D27D4EB4Full
#define P3 0x165667B19E3779F9ull
#define P4 0x85EBCA77C2B2AE63ull
#define P5 0x27D4EB2F165667C5ull

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "kfr_hash.c reads words in host order, which must be little-endian"
#endif

static inline uint64_t rotl(uint64_t x, int r) {
  return (x << r) | (x >> (64 - r));
}

static inline uint64_t rd64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static inline uint32_t rd32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

static inline uint64_t round64(uint64_t acc, uint64_t word) {
  acc += word * P2;
  acc = rotl(acc, 31);
  return acc * P1;
}

static inline uint64_t merge(uint64_t acc, uint64_t v) {
  acc ^= round64(0, v);
  return acc * P1 + P4;
}

/* Whole stripes of p[0, n): returns the bytes consumed (a multiple of 32). */
static size_t stripes(uint64_t v[4], const uint8_t *p, size_t n) {
  size_t done = 0;
  uint64_t a = v[0], b = v[1], c = v[2], d = v[3];
  for (; n - done >= 32; done += 32) {
    a = round64(a, rd64(p + done));
    b = round64(b, rd64(p + done + 8));
    c = round64(c, rd64(p + done + 16));
    d = round64(d, rd64(p + done + 24));
  }
  v[0] = a, v[1] = b, v[2] = c, v[3] = d;
  return done;
}

void kfr_xxh64_init(kfr_xxh64_state *s, uint64_t seed) {
  memset(s, 0, sizeof *s);
  s->seed = seed;
  s->v[0] = seed + P1 + P2;
  s->v[1] = seed + P2;
  s->v[2] = seed;
  s->v[3] = seed - P1;
}

void kfr_xxh64_update(kfr_xxh64_state *s, const void *data, size_t n) {
  const uint8_t *p = data;
  if (!n)
    return;
  s->total += n;
  if (s->nbuf) { /* complete the partial stripe first */
    size_t k = 32 - s->nbuf < n ? 32 - s->nbuf : n;
    memcpy(s->buf + s->nbuf, p, k);
    s->nbuf += (uint32_t)k;
    p += k;
    n -= k;
    if (s->nbuf < 32)
      return;
    stripes(s->v, s->buf, 32);
    s->nbuf = 0;
  }
  size_t done = stripes(s->v, p, n);
  memcpy(s->buf, p + done, n - done);
  s->nbuf = (uint32_t)(n - done);
}

uint64_t kfr_xxh64_final(const kfr_xxh64_state *s) {
  uint64_t acc;
  if (s->total >= 32) {
    acc = rotl(s->v[0], 1) + rotl(s->v[1], 7) + rotl(s->v[2], 12) +
          rotl(s->v[3], 18);
    for (int i = 0; i < 4; i++)
      acc = merge(acc, s->v[i]);
  } else {
    acc = s->seed + P5;
  }
  acc += s->total;
  const uint8_t *p = s->buf;
  size_t n = s->nbuf;
  for (; n >= 8; p += 8, n -= 8) {
    acc ^= round64(0, rd64(p));
    acc = rotl(acc, 27) * P1 + P4;
  }
  if (n >= 4) {
    acc ^= (uint64_t)rd32(p) * P1;
    acc = rotl(acc, 23) * P2 + P3;
    p += 4;
    n -= 4;
  }
  for (; n; p++, n--) {
    acc ^= (uint64_t)*p * P5;
    acc = rotl(acc, 11) * P1;
  }
  acc ^= acc >> 33;
  acc *= P2;
  acc ^= acc >> 29;
  acc *= P3;
  acc ^= acc >> 32;
  return acc;
}

uint64_t kfr_xxh64(const void *data, size_t n, uint64_t seed) {
  kfr_xxh64_state s;
  kfr_xxh64_init(&s, seed);
  kfr_xxh64_update(&s, data, n);
  return kfr_xxh64_final(&s);
}
