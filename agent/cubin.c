/* agent/cubin.c — a kernel's parameter list, read from the cubin NVRTC made.
 *
 * A unit's launch step lists its arguments in unit.json; the kernel's own
 * parameter list is in its source. Nothing tied the two: a launch that
 * passes fewer arguments than the kernel takes, or a 4-byte value where
 * the kernel reads 8, has the kernel read bytes nobody wrote. The cubin
 * says what the kernel takes: an ELF64 file whose section
 * ".nv.info.<kernel>" holds attributes, one EIATTR_KPARAM_INFO (0x17) per
 * parameter: a 12-byte value, u32 index, u16 ordinal, u16 offset in the
 * parameter bank, u32 whose bits 18..31 are the parameter's size in
 * bytes. Attributes are a format byte and an id byte, then by format:
 * nothing (0x01), one byte and a pad (0x02), a u16 (0x03), or a u16 size
 * and that many bytes (0x04). Read as measured on NVRTC 13.0's cubins for
 * sm_90 (a kernel of pointer, long long, int, float, double and char
 * parameters: sizes 8, 8, 8, 4, 4, 8, 1). Where the table cannot be read
 * (an unknown format byte, no such section), this says so and the caller
 * decides; it never guesses. */
#include <stdio.h>
#include <string.h>

#include "agent_int.h"

#define EI_KPARAM_INFO 0x17

static uint16_t u16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t u32(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t u64(const unsigned char *p) { return (uint64_t)u32(p) | (uint64_t)u32(p + 4) << 32; }

int kf_cubin_params(const void *cubin, size_t n, const char *kernel, int *sizes, int max, char *why, size_t wn) {
  const unsigned char *b = cubin;
  if (!b || n < 64 || memcmp(b, "\177ELF", 4) != 0 || b[4] != 2 || b[5] != 1) {
    snprintf(why, wn, "not a 64-bit little-endian ELF cubin");
    return -1;
  }
  uint64_t shoff = u64(b + 0x28);
  uint16_t shentsize = u16(b + 0x3a), shnum = u16(b + 0x3c), shstrndx = u16(b + 0x3e);
  if (shentsize != 64 || shoff > n || (uint64_t)shnum * 64 > n - shoff || shstrndx >= shnum) {
    snprintf(why, wn, "the cubin's section table is malformed");
    return -1;
  }
  const unsigned char *sh = b + shoff;
  uint64_t stroff = u64(sh + (size_t)shstrndx * 64 + 0x18), strsz = u64(sh + (size_t)shstrndx * 64 + 0x20);
  if (stroff > n || strsz > n - stroff) {
    snprintf(why, wn, "the cubin's section names are malformed");
    return -1;
  }
  char want[300];
  if (snprintf(want, sizeof want, ".nv.info.%s", kernel) >= (int)sizeof want) {
    snprintf(why, wn, "the kernel's name is too long");
    return -1;
  }
  size_t wl = strlen(want);
  for (uint16_t i = 0; i < shnum; i++) {
    const unsigned char *s = sh + (size_t)i * 64;
    uint32_t name = u32(s);
    if (name >= strsz || strsz - name <= wl || memcmp(b + stroff + name, want, wl + 1) != 0) continue;
    uint64_t off = u64(s + 0x18), size = u64(s + 0x20);
    if (off > n || size > n - off) {
      snprintf(why, wn, "section %s runs past the cubin", want);
      return -1;
    }
    const unsigned char *p = b + off, *e = b + off + size;
    int count = 0;
    for (int k = 0; k < max; k++) sizes[k] = -1;
    while (p + 2 <= e) {
      unsigned fmt = p[0], attr = p[1];
      size_t len;
      if (fmt == 0x01) len = 2;
      else if (fmt == 0x02 || fmt == 0x03) len = 4;
      else if (fmt == 0x04 && p + 4 <= e) len = 4 + (size_t)u16(p + 2);
      else {
        snprintf(why, wn, "an attribute of format 0x%02x in %s, which this reader does not know", fmt, want);
        return -1;
      }
      if ((size_t)(e - p) < len) {
        snprintf(why, wn, "section %s ends inside an attribute", want);
        return -1;
      }
      if (fmt == 0x04 && attr == EI_KPARAM_INFO) {
        if (len != 16) {
          snprintf(why, wn, "a parameter entry of %zu bytes in %s", len - 4, want);
          return -1;
        }
        int ordinal = u16(p + 8);
        int psize = (int)((u32(p + 12) >> 18) & 0x3fff);
        if (ordinal >= max) {
          snprintf(why, wn, "kernel %s takes more than %d parameters", kernel, max);
          return -1;
        }
        if (sizes[ordinal] >= 0) {
          snprintf(why, wn, "parameter %d listed twice in %s", ordinal, want);
          return -1;
        }
        sizes[ordinal] = psize;
        if (ordinal + 1 > count) count = ordinal + 1;
      }
      p += len;
    }
    for (int k = 0; k < count; k++)
      if (sizes[k] < 0) {
        snprintf(why, wn, "parameter %d of kernel %s is not listed", k, kernel);
        return -1;
      }
    return count;
  }
  snprintf(why, wn, "the unit's source has no kernel %s (extern \"C\" __global__)", kernel);
  return -2;
}
