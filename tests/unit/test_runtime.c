/* tests/unit/test_runtime.c — the runtime (runtime/) without a GPU: the plan
 * writer, the plan validator and the paths of create that fail before or
 * at the CUDA driver.
 *
 * The validator is the runtime's only defence against a corrupt module, so
 * it gets a plan broken one field at a time (each must be rejected with
 * KFUSE_EPLAN and a message naming the record), the same plan truncated at
 * every byte, and many randomly flipped ones (run under ASan: nothing may
 * be read outside the plan). Finding cuBLASLt and cuDNN needs no GPU
 * either: the search order on a fake tree, and the real libraries where
 * this machine has them. tests/gpu/runtime_smoke.c covers running. */
#include <dlfcn.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "kfr_hash.h"
#include "kfr_int.h"
#include "kfr_plan.h"
#include "kfr_plan_writer.h"
#include "test_plans.h"
#include "kfuse_runtime.h"

#define assert_contains(s, sub)                                            \
  do {                                                                     \
    if (!strstr((s), (sub)))                                               \
      fail_msg("expected a message containing \"%s\", got \"%s\"", (sub),  \
               (s));                                                       \
  } while (0)

/* ---- a plan that uses every record kind ------------------------------------ */

/* Buffers, in order. */
enum { B_X, B_Y, B_OUT, B_T, B_WS, B_W, B_BIAS, N_BUF };
/* Steps, in order. */
enum { S_LAUNCH, S_GEMM, S_MEMSET, S_COPY, N_STEP };

/* The smallest image the validator takes for a cubin: an ELF64 header and
 * one section header, the section covering the header (the runtime never
 * loads it here: no driver). */
static uint8_t fake_cubin[128];

static void make_fake_cubin(void) {
  uint8_t *b = fake_cubin;
  memset(b, 0, sizeof fake_cubin);
  memcpy(b, "\177ELF", 4);
  b[4] = 2, b[5] = 1, b[6] = 1; /* ELFCLASS64, little-endian, version 1 */
  uint64_t shoff = 64;
  uint16_t shentsize = 64, shnum = 1;
  memcpy(b + 0x28, &shoff, 8);
  memcpy(b + 0x3a, &shentsize, 2);
  memcpy(b + 0x3c, &shnum, 2);
  uint32_t type = 1; /* SHT_PROGBITS */
  uint64_t off = 0, size = 64;
  memcpy(b + 64 + 4, &type, 4);
  memcpy(b + 64 + 0x18, &off, 8);
  memcpy(b + 64 + 0x20, &size, 8);
}
static const float bias_data[3] = {0.5f, -1.0f, 2.0f};

/* x: [4, 8] f32, y: [4, 8] f32 -> out: [4, 3] f32. Launch t = f(x, y);
 * GEMM out = t @ W + bias (W [8, 3] from the weights file); memset and copy
 * on the arena. */
static int build(void **plan, size_t *bytes, int embedded) {
  static float image[64];
  make_fake_cubin();
  kfr_writer *w = kfr_writer_create(90);
  assert_non_null(w);
  kfr_writer_set_model_name(w, "every_record");
  kfr_writer_set_arena(w, 4096);
  if (embedded)
    kfr_writer_set_weights_embedded(w, image, sizeof image);
  else
    kfr_writer_set_weights_file(w, "model.weights", 1024, 0x1234abcd, 0);
  kfr_tensor_desc d48, d43, d3;
  kfr_tensor_desc_init(&d48, KFUSE_DTYPE_F32, 2, (int64_t[]){4, 8});
  kfr_tensor_desc_init(&d43, KFUSE_DTYPE_F32, 2, (int64_t[]){4, 3});
  kfr_tensor_desc_init(&d3, KFUSE_DTYPE_F32, 1, (int64_t[]){3});
  assert_int_equal(kfr_writer_input(w, 0, "x", &d48), B_X);
  assert_int_equal(kfr_writer_input(w, 1, "y", &d48), B_Y);
  assert_int_equal(kfr_writer_output(w, 0, "out", &d43), B_OUT);
  assert_int_equal(kfr_writer_arena(w, 0, 128, "t", &d48), B_T);
  assert_int_equal(kfr_writer_arena(w, 1024, 1024, "gemm_ws", NULL), B_WS);
  assert_int_equal(kfr_writer_weight(w, 64, 96, "fc.weight", NULL), B_W);
  assert_int_equal(kfr_writer_const(w, bias_data, sizeof bias_data, "fc.bias", &d3),
                   B_BIAS);
  uint32_t mod = kfr_writer_module(w, fake_cubin, sizeof fake_cubin);
  uint32_t k = kfr_writer_kernel(w, mod, "mix_f32", 0);
  assert_int_equal(kfr_writer_launch(w, k, (uint32_t[]){1, 1, 1},
                                     (uint32_t[]){32, 1, 1}, 0, "g0_mix"),
                   S_LAUNCH);
  kfr_writer_arg_ptr(w, B_X, 0);
  kfr_writer_arg_ptr(w, B_Y, 0);
  kfr_writer_arg_ptr(w, B_T, 0);
  kfr_writer_arg_i64(w, 32);
  kfr_writer_arg_i32(w, -7);
  kfr_writer_arg_f32(w, 0.25f);
  kfr_writer_arg_f64(w, 1e-300);
  kfr_gemm g;
  test_small_gemm(&g);
  assert_int_equal(kfr_writer_gemm(w, &g, "g1_linear"), S_GEMM);
  kfr_writer_arg_ptr(w, B_T, 0);
  kfr_writer_arg_ptr(w, B_W, 0);
  kfr_writer_arg_none(w);
  kfr_writer_arg_ptr(w, B_OUT, 0);
  kfr_writer_arg_ptr(w, B_BIAS, 0);
  kfr_writer_arg_ptr(w, B_WS, 0);
  assert_int_equal(kfr_writer_memset(w, "zero_t", B_T, 64, 64), S_MEMSET);
  assert_int_equal(kfr_writer_copy(w, "copy_out", B_OUT, 0, B_T, 16, 48),
                   S_COPY);
  char msg[512];
  int rc = kfr_writer_finish(w, plan, bytes, msg, sizeof msg);
  if (rc)
    fail_msg("finish: %d %s", rc, msg);
  kfr_writer_destroy(w);
  return rc;
}

static kfr_header *hdr(void *p) { return p; }
static kfr_buffer *buf(void *p, uint32_t i) {
  return (kfr_buffer *)((uint8_t *)p + hdr(p)->off_buffers) + i;
}
static kfr_module *mod(void *p, uint32_t i) {
  return (kfr_module *)((uint8_t *)p + hdr(p)->off_modules) + i;
}
static kfr_kernel *ker(void *p, uint32_t i) {
  return (kfr_kernel *)((uint8_t *)p + hdr(p)->off_kernels) + i;
}
static kfr_step *step(void *p, uint32_t i) {
  return (kfr_step *)((uint8_t *)p + hdr(p)->off_steps) + i;
}
static kfr_arg *sarg(void *p, uint32_t s, uint32_t i) {
  return (kfr_arg *)((uint8_t *)p + hdr(p)->off_args) + step(p, s)->first_arg + i;
}
static const char *str(void *p, uint32_t off) {
  return (const char *)p + hdr(p)->off_strings + off;
}

/* ---- XXH64 ------------------------------------------------------------------ */

/* xxHash's own sanity vectors (cli/xsum_sanity_check.c): its test buffer,
 * byte i = the top byte of PRIME32 * PRIME64^i, hashed whole and one byte
 * at a time; lengths on both sides of a 32-byte stripe. */
static void test_xxh64(void **state) {
  (void)state;
  const uint64_t prime32 = 2654435761u, prime64 = 11400714785074694797ull;
  uint8_t b[222];
  uint64_t g = prime32;
  for (size_t i = 0; i < sizeof b; i++) {
    b[i] = (uint8_t)(g >> 56);
    g *= prime64;
  }
  static const struct {
    size_t len;
    int seeded;
    uint64_t want;
  } v[] = {
      {0, 0, 0xEF46DB3751D8E999ull},   {0, 1, 0xAC75FDA2929B17EFull},
      {1, 0, 0xE934A84ADB052768ull},   {1, 1, 0x5014607643A9B4C3ull},
      {4, 0, 0x9136A0DCA57457EEull},   {14, 0, 0x8282DCC4994E35C8ull},
      {14, 1, 0xC3BD6BF63DEB6DF0ull},  {222, 0, 0xB641AE8CB691C174ull},
      {222, 1, 0x20CB8AB7AE10C14Aull},
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    uint64_t seed = v[i].seeded ? prime32 : 0;
    if (kfr_xxh64(b, v[i].len, seed) != v[i].want)
      fail_msg("XXH64 of %zu bytes, seed %llu: %016llx, want %016llx",
               v[i].len, (unsigned long long)seed,
               (unsigned long long)kfr_xxh64(b, v[i].len, seed),
               (unsigned long long)v[i].want);
    kfr_xxh64_state st;
    kfr_xxh64_init(&st, seed);
    for (size_t k = 0; k < v[i].len; k++)
      kfr_xxh64_update(&st, b + k, 1);
    assert_true(kfr_xxh64_final(&st) == v[i].want);
  }
  /* strings others publish */
  assert_true(kfr_xxh64("abc", 3, 0) == 0x44BC2CF5AD770999ull);
  assert_true(kfr_xxh64("xxhash", 6, 0) == 0x32DD38952C4BC720ull);
  /* uneven pieces across stripes equal one call */
  uint8_t big[1000];
  for (size_t i = 0; i < sizeof big; i++)
    big[i] = (uint8_t)(i * 7 + 3);
  kfr_xxh64_state st;
  kfr_xxh64_init(&st, 0);
  for (size_t at = 0, k = 1; at < sizeof big; at += k, k = k * 3 % 97 + 1)
    kfr_xxh64_update(&st, big + at, at + k > sizeof big ? sizeof big - at : k);
  assert_true(kfr_xxh64_final(&st) == kfr_xxh64(big, sizeof big, 0));
}

/* ---- the writer ------------------------------------------------------------ */

static void test_writer_layout(void **state) {
  (void)state;
  void *p;
  size_t n;
  build(&p, &n, 0);
  kfr_header *h = hdr(p);
  assert_memory_equal(h->magic, KFR_PLAN_MAGIC, 8);
  assert_int_equal(h->version, KFR_PLAN_VERSION);
  assert_int_equal(h->total_bytes, n);
  assert_int_equal(h->sm_arch, 90);
  assert_int_equal(h->flags, 0);
  assert_int_equal(h->n_inputs, 2);
  assert_int_equal(h->n_outputs, 1);
  assert_int_equal(h->n_buffers, N_BUF);
  assert_int_equal(h->n_steps, N_STEP);
  assert_int_equal(h->n_args, 7 + 6 + 2 + 3);
  assert_int_equal(h->arena_bytes, 4096);
  assert_int_equal(h->weights_bytes, 1024);
  assert_int_equal(h->weights_hash, 0x1234abcdULL);
  /* the model id is the hash of the plan with the id zero */
  uint64_t id = h->model_id;
  h->model_id = 0;
  assert_true(id == kfr_xxh64(p, n, 0));
  h->model_id = id;
  kfr_weights_header wh;
  kfr_weights_header_fill(p, &wh);
  assert_memory_equal(wh.magic, KFR_WEIGHTS_MAGIC, 8);
  assert_int_equal(wh.version, KFR_WEIGHTS_VERSION);
  assert_int_equal(wh.header_bytes, KFR_WEIGHTS_HEADER_BYTES);
  assert_true(wh.model_id == id);
  assert_int_equal(wh.data_bytes, 1024);
  assert_true(wh.data_hash == 0x1234abcdULL);
  assert_string_equal(str(p, h->model_name), "every_record");
  assert_string_equal(str(p, h->weights_path), "model.weights");
  assert_string_equal(str(p, 0), "");
  assert_int_equal(h->off_blobs % 256, 0);
  /* inputs: contiguous descs and sizes */
  assert_int_equal(buf(p, B_X)->nbytes, 4 * 8 * 4);
  assert_int_equal(buf(p, B_X)->desc.strides[0], 8);
  assert_int_equal(buf(p, B_X)->desc.strides[1], 1);
  assert_int_equal(buf(p, B_OUT)->nbytes, 4 * 3 * 4);
  assert_string_equal(str(p, buf(p, B_Y)->name), "y");
  /* blobs land where the records say */
  assert_memory_equal((uint8_t *)p + buf(p, B_BIAS)->offset, bias_data,
                      sizeof bias_data);
  assert_memory_equal((uint8_t *)p + mod(p, 0)->offset, fake_cubin,
                      sizeof fake_cubin);
  assert_int_equal(mod(p, 0)->offset % 256, 0);
  assert_int_equal(buf(p, B_BIAS)->offset % 256, 0);
  assert_int_equal(buf(p, B_W)->offset, 64); /* a file offset: unchanged */
  assert_string_equal(str(p, ker(p, 0)->name), "mix_f32");
  /* steps and their args */
  assert_string_equal(str(p, step(p, S_GEMM)->name), "g1_linear");
  assert_int_equal(step(p, S_LAUNCH)->n_args, 7);
  assert_int_equal(step(p, S_GEMM)->first_arg, 7);
  assert_int_equal(sarg(p, S_LAUNCH, 4)->kind, KFR_ARG_I32);
  assert_int_equal(sarg(p, S_LAUNCH, 4)->offset, -7);
  assert_true(sarg(p, S_LAUNCH, 5)->f == 0.25);
  assert_true(sarg(p, S_LAUNCH, 6)->f == 1e-300);
  assert_int_equal(sarg(p, S_GEMM, 2)->kind, KFR_ARG_NONE);
  assert_int_equal(step(p, S_GEMM)->gemm.epilogue, KFR_EPI_RELU_BIAS);
  assert_int_equal(sarg(p, S_COPY, 1)->offset, 16);
  assert_int_equal(sarg(p, S_COPY, 2)->offset, 48);
  char msg[256];
  assert_int_equal(kfr_plan_check(p, n, msg, sizeof msg), KFUSE_OK);
  assert_string_equal(msg, "");
  free(p);
}

static void test_writer_embedded(void **state) {
  (void)state;
  void *p;
  size_t n;
  build(&p, &n, 1);
  kfr_header *h = hdr(p);
  assert_int_equal(h->flags, KFR_FLAG_WEIGHTS_EMBEDDED);
  /* the image's hash, as a weights file's would be */
  uint64_t off0 = buf(p, B_W)->offset - 64;
  assert_true(h->weights_hash ==
              kfr_xxh64((uint8_t *)p + off0, h->weights_bytes, 0));
  /* the weight's offset now points into the blob section, 64 bytes into
   * the 256-aligned image */
  uint64_t off = buf(p, B_W)->offset;
  assert_true(off >= h->off_blobs && off + 96 <= h->off_blobs + h->blobs_bytes);
  assert_int_equal((off - 64) % 256, 0);
  assert_int_equal(kfr_plan_check(p, n, NULL, 0), KFUSE_OK);
  free(p);
}

static void test_writer_strings_shared(void **state) {
  (void)state;
  kfr_writer *w = kfr_writer_create(90);
  kfr_tensor_desc d;
  kfr_tensor_desc_init(&d, KFUSE_DTYPE_F16, 1, (int64_t[]){5});
  kfr_writer_input(w, 0, "same", &d);
  kfr_writer_output(w, 0, "same", &d);
  kfr_writer_copy(w, "same", 1, 0, 0, 0, 10);
  void *p;
  size_t n;
  char msg[256];
  assert_int_equal(kfr_writer_finish(w, &p, &n, msg, sizeof msg), KFUSE_OK);
  assert_int_equal(buf(p, 0)->name, buf(p, 1)->name);
  assert_int_equal(buf(p, 0)->name, step(p, 0)->name);
  assert_int_equal(hdr(p)->strings_bytes, 1 + 5); /* "" and "same" */
  assert_int_equal(hdr(p)->n_modules, 0);
  assert_int_equal(hdr(p)->blobs_bytes, 0);
  free(p);
  /* finishing again gives the same plan */
  void *q;
  size_t m;
  assert_int_equal(kfr_writer_finish(w, &q, &m, msg, sizeof msg), KFUSE_OK);
  assert_int_equal(m, n);
  free(q);
  kfr_writer_destroy(w);
}

/* PTX (NUL-terminated) and fatbin images pass the image check too. */
static void test_writer_module_kinds(void **state) {
  (void)state;
  static const char ptx[] = ".version 8.0\n.target sm_90\n";
  uint8_t fatbin[64];
  memset(fatbin, 0, sizeof fatbin);
  uint32_t magic = 0xBA55ED50u;
  uint64_t fat = 48;
  memcpy(fatbin, &magic, 4);
  fatbin[6] = 16;
  memcpy(fatbin + 8, &fat, 8);
  kfr_writer *w = kfr_writer_create(90);
  kfr_writer_module(w, ptx, sizeof ptx);
  kfr_writer_module(w, fatbin, sizeof fatbin);
  void *p;
  size_t n;
  char msg[256];
  assert_int_equal(kfr_writer_finish(w, &p, &n, msg, sizeof msg), KFUSE_OK);
  free(p);
  kfr_writer_module(w, ptx, sizeof ptx - 1); /* without its NUL */
  assert_int_equal(kfr_writer_finish(w, &p, &n, msg, sizeof msg), KFUSE_EPLAN);
  assert_contains(msg, "module 2: neither an ELF cubin nor a fatbin");
  kfr_writer_destroy(w);
}

static void test_writer_misuse(void **state) {
  (void)state;
  void *p;
  size_t n;
  char msg[256];
  /* an arg before any step */
  kfr_writer *w = kfr_writer_create(90);
  assert_int_equal(kfr_writer_arg_i64(w, 1), UINT32_MAX);
  assert_int_equal(kfr_writer_finish(w, &p, &n, msg, sizeof msg), KFUSE_EARG);
  assert_null(p);
  assert_contains(msg, "before any step");
  kfr_writer_destroy(w);
  /* an input without a desc */
  w = kfr_writer_create(90);
  assert_int_equal(kfr_writer_input(w, 0, "x", NULL), UINT32_MAX);
  assert_int_equal(kfr_writer_finish(w, &p, &n, msg, sizeof msg), KFUSE_EARG);
  assert_contains(msg, "input 0 (x) has no desc");
  kfr_writer_destroy(w);
  /* an output whose byte count overflows (it used to become 0) */
  w = kfr_writer_create(90);
  kfr_tensor_desc big;
  kfr_tensor_desc_init(&big, KFUSE_DTYPE_F32, 2,
                       (int64_t[]){(int64_t)1 << 62, 8});
  assert_int_equal(kfr_writer_output(w, 0, "y", &big), UINT32_MAX);
  assert_int_equal(kfr_writer_finish(w, &p, &n, msg, sizeof msg), KFUSE_EARG);
  assert_contains(msg, "output 0 (y) of shape [4611686018427387904, 8] and "
                       "dtype 1 has more bytes than 64 bits count");
  kfr_writer_destroy(w);
  /* what the writer accepts but the validator does not: a step naming a
   * missing buffer, an input number left out */
  w = kfr_writer_create(90);
  kfr_tensor_desc d;
  kfr_tensor_desc_init(&d, KFUSE_DTYPE_F32, 1, (int64_t[]){4});
  kfr_writer_input(w, 1, "second", &d);
  kfr_writer_output(w, 0, "result", &d);
  assert_int_equal(kfr_writer_finish(w, &p, &n, msg, sizeof msg), KFUSE_EPLAN);
  assert_contains(msg, "input 0 has no buffer");
  kfr_writer_input(w, 0, "first", &d);
  kfr_writer_memset(w, "zero", 7, 0, 16);
  assert_int_equal(kfr_writer_finish(w, &p, &n, msg, sizeof msg), KFUSE_EPLAN);
  assert_contains(msg, "arg 0: buffer 7, the plan has 3");
  kfr_writer_destroy(w);
  kfr_writer_destroy(NULL);
}

/* ---- the validator: one field at a time ------------------------------------ */

typedef struct mutation {
  const char *name;
  void (*apply)(void *p);
  const char *expect; /* part of the message */
} mutation;

#define MUT(id, body) \
  static void mut_##id(void *p) { body; }

MUT(magic, hdr(p)->magic[0] = 'X')
MUT(version, hdr(p)->version = KFR_PLAN_VERSION + 1)
MUT(header_bytes, hdr(p)->header_bytes += 8)
MUT(total_bytes, hdr(p)->total_bytes -= 8)
MUT(flags, hdr(p)->flags |= 0x10)
MUT(flags_both, hdr(p)->flags = KFR_FLAG_WEIGHTS_EMBEDDED |
                                KFR_FLAG_WEIGHTS_BESIDE_MODULE)
MUT(buffers_past_end, hdr(p)->off_buffers = hdr(p)->total_bytes + 8)
MUT(buffers_misaligned, hdr(p)->off_buffers += 4)
MUT(buffers_count, hdr(p)->n_buffers = UINT32_MAX)
MUT(args_overflow, hdr(p)->off_args = UINT64_MAX - 7)
MUT(steps_into_end, hdr(p)->off_steps = hdr(p)->total_bytes - 8)
MUT(modules_in_header, hdr(p)->off_modules = 8)
MUT(kernels_count, hdr(p)->n_kernels = 1u << 30)
MUT(strings_empty, hdr(p)->strings_bytes = 0)
MUT(strings_no_nul, hdr(p)->strings_bytes -= 1)
MUT(strings_past_end, hdr(p)->off_strings = hdr(p)->total_bytes)
MUT(strings_overflow, hdr(p)->strings_bytes = UINT64_MAX)
MUT(blobs_past_end, hdr(p)->blobs_bytes += 1)
MUT(blobs_overflow, hdr(p)->off_blobs = UINT64_MAX - 4)
MUT(model_name, hdr(p)->model_name = (uint32_t)hdr(p)->strings_bytes)
MUT(weights_path, hdr(p)->weights_path = UINT32_MAX)
MUT(inputs_over_buffers, hdr(p)->n_inputs = N_BUF + 1)
MUT(input_missing, hdr(p)->n_inputs = 3)
MUT(buffer_kind, buf(p, B_T)->kind = 99)
MUT(buffer_kind_zero, buf(p, B_T)->kind = 0)
MUT(buffer_name, buf(p, B_T)->name = 1u << 31)
MUT(input_index, buf(p, B_Y)->index = 2)
MUT(input_twice, buf(p, B_Y)->index = 0)
MUT(output_index, buf(p, B_OUT)->index = 1)
MUT(input_dtype, buf(p, B_X)->desc.dtype = 0)
MUT(input_dtype_big, buf(p, B_X)->desc.dtype = 11)
MUT(input_rank, buf(p, B_X)->desc.rank = KFR_MAX_RANK + 1)
MUT(input_shape, buf(p, B_X)->desc.shape[1] = -8)
MUT(input_nbytes, buf(p, B_X)->nbytes += 4)
MUT(input_shape_overflow, { buf(p, B_X)->desc.shape[0] = INT64_MAX;
                            buf(p, B_X)->desc.shape[1] = INT64_MAX; })
MUT(arena_range, buf(p, B_WS)->nbytes = 4096)
MUT(arena_overflow, buf(p, B_WS)->offset = UINT64_MAX - 100)
MUT(weight_range, buf(p, B_W)->offset = 1000)
MUT(const_range, buf(p, B_BIAS)->offset = hdr(p)->total_bytes)
MUT(const_before_blobs, buf(p, B_BIAS)->offset = hdr(p)->off_blobs - 8)
MUT(module_offset, mod(p, 0)->offset = 0)
MUT(module_empty, mod(p, 0)->nbytes = 0)
MUT(module_overflow, mod(p, 0)->nbytes = UINT64_MAX)
static uint8_t *image(void *p) { return (uint8_t *)p + mod(p, 0)->offset; }
MUT(elf_class, image(p)[4] = 1)
MUT(elf_short, mod(p, 0)->nbytes = 40)
MUT(elf_shnum, image(p)[0x3c] = 2)
MUT(elf_shentsize, image(p)[0x3a] = 32)
MUT(elf_shoff, image(p)[0x28 + 7] = 0x80)
MUT(elf_phnum, { image(p)[0x38] = 1; image(p)[0x36] = 56;
                 image(p)[0x20] = 100; })
/* a 16-bit field of the cubin's ELF header: 0x36 e_phentsize, 0x38
 * e_phnum, 0x3a e_shentsize */
static void put16(void *p, size_t at, uint16_t v) { memcpy(image(p) + at, &v, 2); }
MUT(elf_phentsize_0, (put16(p, 0x36, 0), put16(p, 0x38, 65535)))
MUT(elf_phentsize_40, (put16(p, 0x36, 40), put16(p, 0x38, 1)))
MUT(elf_shentsize_72, put16(p, 0x3a, 72))
MUT(elf_section, image(p)[64 + 0x20] = 200)
MUT(elf_section_overflow, memset(image(p) + 64 + 0x18, 0xff, 8))
MUT(not_elf_no_nul, { image(p)[1] = 'X'; image(p)[127] = 'x'; })
MUT(fatbin_size, { uint32_t magic = 0xBA55ED50u; uint64_t big = 1000;
                   memcpy(image(p), &magic, 4); image(p)[6] = 16;
                   memcpy(image(p) + 8, &big, 8); })
MUT(kernel_module, ker(p, 0)->module = 1)
MUT(kernel_name, ker(p, 0)->name = UINT32_MAX)
MUT(kernel_name_empty, ker(p, 0)->name = 0)
MUT(step_kind, step(p, S_COPY)->kind = 0)
MUT(step_name, step(p, S_COPY)->name = 1u << 20)
MUT(step_kernel, step(p, S_LAUNCH)->kernel = 5)
MUT(step_args, step(p, S_COPY)->n_args = 4)
MUT(step_args_overflow, step(p, S_COPY)->first_arg = UINT32_MAX)
MUT(step_grid, step(p, S_LAUNCH)->grid[2] = 0)
MUT(step_block, step(p, S_LAUNCH)->block[1] = 64)
MUT(step_smem, step(p, S_LAUNCH)->smem = 64 * 1024)
MUT(arg_kind, sarg(p, S_LAUNCH, 3)->kind = 77)
MUT(arg_buffer, sarg(p, S_LAUNCH, 0)->buffer = N_BUF)
MUT(arg_offset_negative, sarg(p, S_LAUNCH, 0)->offset = -4)
MUT(arg_offset_past, sarg(p, S_LAUNCH, 2)->offset = 129)
MUT(arg_i32, sarg(p, S_LAUNCH, 4)->offset = (int64_t)INT32_MAX + 1)
MUT(arg_none_in_launch, sarg(p, S_LAUNCH, 3)->kind = KFR_ARG_NONE)
MUT(gemm_nargs, { step(p, S_GEMM)->n_args = 5; })
MUT(gemm_m, step(p, S_GEMM)->gemm.m = 0)
MUT(gemm_k_huge, step(p, S_GEMM)->gemm.k = (int64_t)1 << 40)
MUT(gemm_dtype, step(p, S_GEMM)->gemm.dtype = KFUSE_DTYPE_I32)
MUT(gemm_compute, step(p, S_GEMM)->gemm.compute = 9)
MUT(gemm_epilogue, step(p, S_GEMM)->gemm.epilogue = 9)
MUT(gemm_trans, step(p, S_GEMM)->gemm.trans_a = 2)
MUT(gemm_beta, step(p, S_GEMM)->gemm.beta = 1.0)
MUT(gemm_lda, step(p, S_GEMM)->gemm.lda = 7)
MUT(gemm_a_extent, step(p, S_GEMM)->gemm.lda = 9) /* 3*9+8 floats > 128 B */
MUT(gemm_batch_stride, { step(p, S_GEMM)->gemm.batch = 2;
                         step(p, S_GEMM)->gemm.stride_d = -12; })
MUT(gemm_batch_extent, { step(p, S_GEMM)->gemm.batch = 2;
                         step(p, S_GEMM)->gemm.stride_b = 0;
                         step(p, S_GEMM)->gemm.stride_d = 12; })
MUT(gemm_d_offset, sarg(p, S_GEMM, 3)->offset = 4)
MUT(gemm_a_kind, sarg(p, S_GEMM, 0)->kind = KFR_ARG_I64)
MUT(gemm_c_kind, sarg(p, S_GEMM, 2)->kind = KFR_ARG_PTR)
MUT(gemm_c_missing, step(p, S_GEMM)->gemm.has_c = 1)
MUT(gemm_bias_missing, sarg(p, S_GEMM, 4)->kind = KFR_ARG_NONE)
MUT(gemm_bias_extra, step(p, S_GEMM)->gemm.epilogue = KFR_EPI_RELU)
MUT(gemm_workspace_kind, sarg(p, S_GEMM, 5)->kind = KFR_ARG_NONE)
MUT(gemm_workspace_size, step(p, S_GEMM)->gemm.workspace_bytes = 1025)
MUT(memset_count, sarg(p, S_MEMSET, 1)->offset = 65)
MUT(memset_count_negative, sarg(p, S_MEMSET, 1)->offset = -1)
MUT(memset_count_kind, sarg(p, S_MEMSET, 1)->kind = KFR_ARG_I32)
MUT(memset_dst_kind, sarg(p, S_MEMSET, 0)->kind = KFR_ARG_I64)
MUT(memset_nargs, step(p, S_MEMSET)->n_args = 3)
MUT(copy_src, sarg(p, S_COPY, 1)->offset = 100)
MUT(copy_dst, sarg(p, S_COPY, 0)->offset = 1)
MUT(copy_nargs, step(p, S_COPY)->n_args = 2)

static const mutation mutations[] = {
    {"magic", mut_magic, "bad magic"},
    {"version", mut_version, "version"},
    {"header_bytes", mut_header_bytes, "header_bytes"},
    {"total_bytes", mut_total_bytes, "total_bytes"},
    {"flags", mut_flags, "unknown flags 0x10"},
    {"flags_both", mut_flags_both, "weights both embedded and in a file"},
    {"elf_phentsize_0", mut_elf_phentsize_0,
     "module 0: ELF program header entry size 0, not 56"},
    {"elf_phentsize_40", mut_elf_phentsize_40,
     "module 0: ELF program header entry size 40, not 56"},
    {"elf_shentsize_72", mut_elf_shentsize_72,
     "module 0: ELF section header entry size 72, not 64"},
    {"buffers_past_end", mut_buffers_past_end, "buffer table offset"},
    {"buffers_misaligned", mut_buffers_misaligned, "not 8-byte aligned"},
    {"buffers_count", mut_buffers_count, "buffer records"},
    {"args_overflow", mut_args_overflow, "arg table offset"},
    {"steps_into_end", mut_steps_into_end, "step records"},
    {"modules_in_header", mut_modules_in_header, "module records"},
    {"kernels_count", mut_kernels_count, "kernel records"},
    {"strings_empty", mut_strings_empty, "string section"},
    {"strings_no_nul", mut_strings_no_nul, "does not end in a NUL"},
    {"strings_past_end", mut_strings_past_end, "string section"},
    {"strings_overflow", mut_strings_overflow, "string section"},
    {"blobs_past_end", mut_blobs_past_end, "blob section"},
    {"blobs_overflow", mut_blobs_overflow, "blob section"},
    {"model_name", mut_model_name, "model name offset"},
    {"weights_path", mut_weights_path, "weights path offset"},
    {"inputs_over_buffers", mut_inputs_over_buffers, "inputs and 1 outputs"},
    {"input_missing", mut_input_missing, "input 2 has no buffer"},
    {"buffer_kind", mut_buffer_kind, "buffer 3 (t): unknown kind 99"},
    {"buffer_kind_zero", mut_buffer_kind_zero, "unknown kind 0"},
    {"buffer_name", mut_buffer_name, "buffer 3: name offset"},
    {"input_index", mut_input_index, "buffer 1 (input y): index 2"},
    {"input_twice", mut_input_twice, "input 0 has more than one buffer"},
    {"output_index", mut_output_index, "buffer 2 (output out): index 1"},
    {"input_dtype", mut_input_dtype, "unknown dtype 0"},
    {"input_dtype_big", mut_input_dtype_big, "unknown dtype 11"},
    {"input_rank", mut_input_rank, "rank 9"},
    {"input_shape", mut_input_shape, "dimension 1 is -8"},
    {"input_nbytes", mut_input_nbytes, "nbytes is 132"},
    {"input_shape_overflow", mut_input_shape_overflow, "overflows"},
    {"arena_range", mut_arena_range, "buffer 4 (arena gemm_ws)"},
    {"arena_overflow", mut_arena_overflow, "4096-byte arena"},
    {"weight_range", mut_weight_range, "weights file's size"},
    {"const_range", mut_const_range, "buffer 6 (const fc.bias)"},
    {"const_before_blobs", mut_const_before_blobs, "outside the blob section"},
    {"module_offset", mut_module_offset, "module 0"},
    {"module_empty", mut_module_empty, "module 0"},
    {"module_overflow", mut_module_overflow, "module 0"},
    {"elf_class", mut_elf_class, "module 0: not a 64-bit little-endian ELF"},
    {"elf_short", mut_elf_short, "shorter than its header"},
    {"elf_shnum", mut_elf_shnum, "ELF section headers lie outside"},
    {"elf_shentsize", mut_elf_shentsize, "ELF section header entry size 32, not 64"},
    {"elf_shoff", mut_elf_shoff, "ELF section headers lie outside"},
    {"elf_phnum", mut_elf_phnum, "ELF program headers lie outside"},
    {"elf_section", mut_elf_section, "ELF section 0 lies outside its 128 bytes"},
    {"elf_section_overflow", mut_elf_section_overflow, "ELF section 0"},
    {"not_elf_no_nul", mut_not_elf_no_nul, "not NUL-terminated PTX"},
    {"fatbin_size", mut_fatbin_size, "fatbin states more bytes"},
    {"kernel_module", mut_kernel_module, "kernel 0: module 1"},
    {"kernel_name", mut_kernel_name, "kernel 0: entry name"},
    {"kernel_name_empty", mut_kernel_name_empty, "kernel 0: entry name"},
    {"step_kind", mut_step_kind, "step 3 (copy_out): unknown kind 0"},
    {"step_name", mut_step_name, "step 3: name offset"},
    {"step_kernel", mut_step_kernel, "step 0 (g0_mix): kernel 5"},
    {"step_args", mut_step_args, "step 3 (copy_out): args"},
    {"step_args_overflow", mut_step_args_overflow, "args [4294967295"},
    {"step_grid", mut_step_grid, "dimension 2 is 0"},
    {"step_block", mut_step_block, "2048 threads"},
    {"step_smem", mut_step_smem, "65536 bytes of dynamic shared memory"},
    {"arg_kind", mut_arg_kind, "arg 3: unknown kind 77"},
    {"arg_buffer", mut_arg_buffer, "arg 0: buffer 7, the plan has 7"},
    {"arg_offset_negative", mut_arg_offset_negative, "offset -4 is outside"},
    {"arg_offset_past", mut_arg_offset_past, "offset 129 is outside buffer 3"},
    {"arg_i32", mut_arg_i32, "does not fit in 32 bits"},
    {"arg_none_in_launch", mut_arg_none_in_launch, "kernel arg 3 is NONE"},
    {"gemm_nargs", mut_gemm_nargs, "has 6 args, this one 5"},
    {"gemm_m", mut_gemm_m, "must be positive"},
    {"gemm_k_huge", mut_gemm_k_huge, "over 2^31"},
    {"gemm_dtype", mut_gemm_dtype, "GEMM dtype 6"},
    {"gemm_compute", mut_gemm_compute, "unknown GEMM compute 9"},
    {"gemm_epilogue", mut_gemm_epilogue, "unknown GEMM epilogue 9"},
    {"gemm_trans", mut_gemm_trans, "must be 0 or 1"},
    {"gemm_beta", mut_gemm_beta, "no C"},
    {"gemm_lda", mut_gemm_lda, "operand A has leading dimension 7"},
    {"gemm_a_extent", mut_gemm_a_extent, "operand A (4 x 8, ld 9"},
    {"gemm_batch_stride", mut_gemm_batch_stride, "batch stride -12"},
    {"gemm_batch_extent", mut_gemm_batch_extent, "operand D (4 x 3, ld 3, batch 2"},
    {"gemm_d_offset", mut_gemm_d_offset, "operand D"},
    {"gemm_a_kind", mut_gemm_a_kind, "operand A is not a pointer"},
    {"gemm_c_kind", mut_gemm_c_kind, "without C has arg 2"},
    {"gemm_c_missing", mut_gemm_c_missing, "operand C is not a pointer"},
    {"gemm_bias_missing", mut_gemm_bias_missing, "operand bias is not"},
    {"gemm_bias_extra", mut_gemm_bias_extra, "without bias epilogue"},
    {"gemm_workspace_kind", mut_gemm_workspace_kind, "workspace of 1024 bytes"},
    {"gemm_workspace_size", mut_gemm_workspace_size, "does not fit in buffer 4"},
    {"memset_count", mut_memset_count, "MEMSET destination range [64, +65)"},
    {"memset_count_negative", mut_memset_count_negative, "non-negative"},
    {"memset_count_kind", mut_memset_count_kind, "non-negative I64"},
    {"memset_dst_kind", mut_memset_dst_kind, "MEMSET destination is not"},
    {"memset_nargs", mut_memset_nargs, "MEMSET step has 2 args"},
    {"copy_src", mut_copy_src, "COPY source range"},
    {"copy_dst", mut_copy_dst, "COPY destination range"},
    {"copy_nargs", mut_copy_nargs, "COPY step has 3 args"},
};

static void test_check_each_field(void **state) {
  (void)state;
  void *good;
  size_t n;
  build(&good, &n, 0);
  void *p = malloc(n);
  assert_non_null(p);
  for (size_t i = 0; i < sizeof mutations / sizeof mutations[0]; i++) {
    memcpy(p, good, n);
    mutations[i].apply(p);
    char msg[512] = "unset";
    int rc = kfr_plan_check(p, n, msg, sizeof msg);
    if (rc != KFUSE_EPLAN)
      fail_msg("%s: accepted (rc %d), message \"%s\"", mutations[i].name, rc,
               msg);
    if (strncmp(msg, "plan: ", 6) || !strstr(msg, mutations[i].expect))
      fail_msg("%s: expected \"%s\" in \"%s\"", mutations[i].name,
               mutations[i].expect, msg);
  }
  /* and the unmodified plan is still fine, as is one program header of
   * the right size inside the image */
  memcpy(p, good, n);
  assert_int_equal(kfr_plan_check(p, n, NULL, 0), KFUSE_OK);
  uint64_t phoff = 64;
  memcpy(image(p) + 0x20, &phoff, 8);
  put16(p, 0x36, 56);
  put16(p, 0x38, 1);
  assert_int_equal(kfr_plan_check(p, n, NULL, 0), KFUSE_OK);
  free(p);
  free(good);
}

/* ---- CONV steps -------------------------------------------------------------- */

/* Buffers of the convolution plan, in order. */
enum { CB_X, CB_Y, CB_W, CB_B, CB_Z, CB_WS };
static const float conv_bias[8] = {0};

/* y [2, 8, 3, 3] = relu(conv(x [2, 4, 6, 6], w [8, 2, 3, 3]; stride 2,
 * padding 1, groups 2) + z + bias): a fused cuDNN step, and a bare one in
 * 1-d over a slice of the same buffers. */
static int build_conv(void **plan, size_t *bytes, char *msg, size_t n) {
  kfr_writer *w = kfr_writer_create(90);
  assert_non_null(w);
  kfr_writer_set_model_name(w, "conv");
  kfr_writer_set_arena(w, 8192);
  kfr_writer_set_weights_file(w, "conv.weights", 1024, 0, 0);
  kfr_tensor_desc dx, dy, db;
  kfr_tensor_desc_init(&dx, KFUSE_DTYPE_F32, 4, (int64_t[]){2, 4, 6, 6});
  kfr_tensor_desc_init(&dy, KFUSE_DTYPE_F32, 4, (int64_t[]){2, 8, 3, 3});
  kfr_tensor_desc_init(&db, KFUSE_DTYPE_F32, 1, (int64_t[]){8});
  assert_int_equal(kfr_writer_input(w, 0, "x", &dx), CB_X);
  assert_int_equal(kfr_writer_output(w, 0, "y", &dy), CB_Y);
  assert_int_equal(kfr_writer_weight(w, 0, 576, "conv.weight", NULL), CB_W);
  assert_int_equal(kfr_writer_const(w, conv_bias, sizeof conv_bias, "conv.bias", &db),
                   CB_B);
  assert_int_equal(kfr_writer_arena(w, 0, 576, "z", &dy), CB_Z);
  assert_int_equal(kfr_writer_arena(w, 1024, 4096, "ws", NULL), CB_WS);
  kfr_conv c;
  test_grouped_conv(&c);
  assert_int_equal(kfr_writer_conv(w, &c, "g0_conv"), 0);
  kfr_writer_arg_ptr(w, CB_X, 0);
  kfr_writer_arg_ptr(w, CB_W, 0);
  kfr_writer_arg_ptr(w, CB_Y, 0);
  kfr_writer_arg_ptr(w, CB_B, 0);
  kfr_writer_arg_ptr(w, CB_Z, 0);
  kfr_writer_arg_none(w); /* the workspace is the runtime's own */
  /* 1-d, no bias, strict fp32: x [1, 4, 36] -> y [1, 8, 34], w [8, 4, 3] */
  memset(&c, 0, sizeof c);
  c.nd = 1;
  c.dtype = KFUSE_DTYPE_F32;
  c.compute = KFR_COMPUTE_32F;
  c.n = 1, c.c = 4, c.k = 8, c.groups = 1;
  for (int d = 0; d < 3; d++) {
    c.in[d] = c.filter[d] = c.out[d] = c.stride[d] = c.dilation[d] = 1;
    c.pad[d] = 0;
  }
  c.in[0] = 36, c.filter[0] = 3, c.out[0] = 34;
  c.alpha1 = 1.0;
  assert_int_equal(kfr_writer_conv(w, &c, "g1_conv1d"), 1);
  kfr_writer_arg_ptr(w, CB_X, 0);
  kfr_writer_arg_ptr(w, CB_W, 0);
  kfr_writer_arg_ptr(w, CB_WS, 0);
  kfr_writer_arg_none(w);
  kfr_writer_arg_none(w);
  kfr_writer_arg_none(w);
  int rc = kfr_writer_finish(w, plan, bytes, msg, n);
  kfr_writer_destroy(w);
  return rc;
}

static void test_conv_plan(void **state) {
  (void)state;
  void *p;
  size_t n;
  char msg[512] = "";
  if (build_conv(&p, &n, msg, sizeof msg))
    fail_msg("finish: %s", msg);
  assert_int_equal(hdr(p)->n_steps, 2);
  assert_int_equal(step(p, 0)->kind, KFR_STEP_CONV);
  assert_int_equal(step(p, 0)->conv.groups, 2);
  assert_int_equal(step(p, 0)->conv.out[1], 3);
  assert_int_equal(step(p, 1)->conv.nd, 1);
  assert_int_equal(sarg(p, 1, 3)->kind, KFR_ARG_NONE);
  free(p);
}

#define CMUT(id, body) \
  static void cmut_##id(void *p) { kfr_conv *c = &step(p, 0)->conv; (void)c; body; }

CMUT(nargs, step(p, 0)->n_args = 5)
CMUT(nd, c->nd = 4)
CMUT(nd_zero, c->nd = 0)
CMUT(dtype, c->dtype = KFUSE_DTYPE_F64)
CMUT(compute, c->compute = 9)
CMUT(activation, c->activation = 2)
CMUT(has_bias, c->has_bias = 2)
CMUT(layout, c->layout = 2)
CMUT(transposed, c->transposed = 2)
CMUT(transposed_bias, c->transposed = 1)
/* step 1 as a transposed convolution: x [1, 4, 34] -> y [1, 8, 36], w [4, 8, 3] */
CMUT(transposed_out, { kfr_conv *d = &step(p, 1)->conv; d->transposed = 1; d->in[0] = 34; d->out[0] = 37; })
CMUT(nhwc_1d, { kfr_conv *d = &step(p, 1)->conv; d->layout = KFR_CONV_NHWC; })
CMUT(n, c->n = 0)
CMUT(groups, c->groups = 3)
CMUT(groups_zero, c->groups = 0)
CMUT(out, c->out[1] = 4)
CMUT(stride, c->stride[0] = 0)
CMUT(pad, c->pad[1] = -1)
CMUT(dilation_big, c->dilation[0] = (int64_t)1 << 40)
CMUT(past_nd, c->in[2] = 2)
CMUT(huge, { c->n = (int64_t)1 << 30; })
CMUT(act_needs_bias, { c->has_bias = 0; sarg(p, 0, 3)->kind = KFR_ARG_NONE; })
CMUT(alpha2_without_z, { c->has_z = 0; sarg(p, 0, 4)->kind = KFR_ARG_NONE;
                         c->activation = KFR_ACT_NONE; })
CMUT(x_kind, sarg(p, 0, 0)->kind = KFR_ARG_I64)
CMUT(x_extent, sarg(p, 0, 0)->offset = 4)
CMUT(w_extent, buf(p, CB_W)->nbytes = 572)
CMUT(y_extent, sarg(p, 0, 2)->offset = 4)
CMUT(bias_missing, sarg(p, 0, 3)->kind = KFR_ARG_NONE)
CMUT(z_missing, sarg(p, 0, 4)->kind = KFR_ARG_NONE)
CMUT(z_extra, { kfr_conv *d = &step(p, 1)->conv; (void)d;
                sarg(p, 1, 4)->kind = KFR_ARG_PTR; sarg(p, 1, 4)->buffer = CB_Z; })
CMUT(workspace_ptr, { sarg(p, 0, 5)->kind = KFR_ARG_PTR; sarg(p, 0, 5)->buffer = CB_WS; })
CMUT(workspace_imm, sarg(p, 1, 5)->kind = KFR_ARG_F32)

static const mutation conv_mutations[] = {
    {"nargs", cmut_nargs, "a CONV step has 6 args, this one 5"},
    {"nd", cmut_nd, "CONV nd is 4, not 1, 2 or 3"},
    {"nd_zero", cmut_nd_zero, "CONV nd is 0"},
    {"dtype", cmut_dtype, "CONV dtype 2 is not f32, f16 or bf16"},
    {"compute", cmut_compute, "unknown CONV compute 9"},
    {"activation", cmut_activation, "unknown CONV activation 2"},
    {"has_bias", cmut_has_bias, "has_bias/has_z must be 0 or 1"},
    {"layout", cmut_layout, "CONV layout 2, transposed 0"},
    {"transposed", cmut_transposed, "CONV layout 0, transposed 2"},
    {"transposed_bias", cmut_transposed_bias, "a transposed CONV step has no bias, residual or activation"},
    {"transposed_out", cmut_transposed_out, "step 1 (g1_conv1d): CONV dim 0: input size 34, transposed output 37 "
                                            "with filter 3, padding 0, stride 1 and dilation 1 gives 35"},
    {"nhwc_1d", cmut_nhwc_1d, "an NHWC CONV step is 2-d or 3-d, this one 1-d"},
    {"n", cmut_n, "CONV sizes n=0 c=4 k=8 groups=2 must be positive"},
    {"groups", cmut_groups, "not multiples of groups=3"},
    {"groups_zero", cmut_groups_zero, "must be positive"},
    {"out", cmut_out, "dim 1: output size 4, input 6 with filter 3, padding 1, "
                      "stride 2 and dilation 1 gives 3"},
    {"stride", cmut_stride, "CONV dim 0: input 6, filter 3, stride 0"},
    {"pad", cmut_pad, "padding -1 non-negative"},
    {"dilation_big", cmut_dilation_big, "all under 2^31"},
    {"past_nd", cmut_past_nd, "spatial dim 2 is past nd=2 but not 1"},
    {"huge", cmut_huge, "2^31 elements or more"},
    {"act_needs_bias", cmut_act_needs_bias, "needs a bias"},
    {"alpha2_without_z", cmut_alpha2_without_z, "alpha2 is 1 but the step has no z"},
    {"x_kind", cmut_x_kind, "CONV operand x is not a pointer arg"},
    {"x_extent", cmut_x_extent, "CONV operand x (288 elements) does not fit in buffer 0"},
    {"w_extent", cmut_w_extent, "CONV operand w (144 elements) does not fit in buffer 2 "
                                "(weight conv.weight, 572 bytes)"},
    {"y_extent", cmut_y_extent, "CONV operand y (144 elements) does not fit in buffer 1"},
    {"bias_missing", cmut_bias_missing, "CONV operand bias is not a pointer arg"},
    {"z_missing", cmut_z_missing, "CONV operand z is not a pointer arg"},
    {"z_extra", cmut_z_extra, "step 1 (g1_conv1d): CONV without z has that arg of kind 1"},
    {"workspace_ptr", cmut_workspace_ptr, "step 0 (g0_conv): CONV arg 5 has kind 1; the workspace is not in the plan"},
    {"workspace_imm", cmut_workspace_imm, "step 1 (g1_conv1d): CONV arg 5 has kind 4"},
};

static void test_conv_check_each_field(void **state) {
  (void)state;
  void *good;
  size_t n;
  char msg[512] = "";
  if (build_conv(&good, &n, msg, sizeof msg))
    fail_msg("finish: %s", msg);
  void *p = malloc(n);
  assert_non_null(p);
  for (size_t i = 0; i < sizeof conv_mutations / sizeof conv_mutations[0]; i++) {
    memcpy(p, good, n);
    conv_mutations[i].apply(p);
    strcpy(msg, "unset");
    int rc = kfr_plan_check(p, n, msg, sizeof msg);
    if (rc != KFUSE_EPLAN)
      fail_msg("%s: accepted (rc %d), message \"%s\"", conv_mutations[i].name, rc,
               msg);
    if (strncmp(msg, "plan: ", 6) || !strstr(msg, conv_mutations[i].expect))
      fail_msg("%s: expected \"%s\" in \"%s\"", conv_mutations[i].name,
               conv_mutations[i].expect, msg);
  }
  memcpy(p, good, n);
  assert_int_equal(kfr_plan_check(p, n, NULL, 0), KFUSE_OK);
  /* a well-formed transposed step: the forward relation with in and out swapped */
  kfr_conv *t = &step(p, 1)->conv;
  t->transposed = 1;
  t->in[0] = 34;
  t->out[0] = 36;
  if (kfr_plan_check(p, n, msg, sizeof msg) != KFUSE_OK)
    fail_msg("transposed step refused: %s", msg);
  free(p);
  free(good);
}

/* The plan writer refuses a bad CONV step when it finishes. */
static void test_conv_writer_rejects(void **state) {
  (void)state;
  kfr_writer *w = kfr_writer_create(90);
  kfr_tensor_desc d;
  kfr_tensor_desc_init(&d, KFUSE_DTYPE_F32, 3, (int64_t[]){1, 1, 4});
  kfr_writer_input(w, 0, "x", &d);
  kfr_writer_output(w, 0, "y", &d);
  kfr_conv c;
  memset(&c, 0, sizeof c);
  c.nd = 1, c.dtype = KFUSE_DTYPE_F32, c.compute = KFR_COMPUTE_32F;
  c.n = c.c = c.k = c.groups = 1;
  for (int d2 = 0; d2 < 3; d2++)
    c.in[d2] = c.filter[d2] = c.out[d2] = c.stride[d2] = c.dilation[d2] = 1;
  c.in[0] = 4, c.filter[0] = 1, c.out[0] = 4;
  c.activation = KFR_ACT_RELU; /* without a bias */
  kfr_writer_conv(w, &c, "relu_no_bias");
  kfr_writer_arg_ptr(w, 0, 0);
  kfr_writer_arg_ptr(w, 0, 0);
  kfr_writer_arg_ptr(w, 1, 0);
  kfr_writer_arg_none(w);
  kfr_writer_arg_none(w);
  kfr_writer_arg_none(w);
  void *p = NULL;
  size_t n = 0;
  char msg[512] = "";
  assert_int_equal(kfr_writer_finish(w, &p, &n, msg, sizeof msg), KFUSE_EPLAN);
  assert_contains(msg, "step 0 (relu_no_bias): CONV with an activation or a residual "
                       "input needs a bias");
  kfr_writer_destroy(w);
}

/* Every prefix of a good plan, in a buffer of exactly that size (ASan
 * catches any read past it), and the plan with bytes appended. */
static void test_check_truncated(void **state) {
  (void)state;
  void *good;
  size_t n;
  build(&good, &n, 1);
  for (size_t k = 0; k < n; k++) {
    void *p = malloc(k ? k : 1);
    assert_non_null(p);
    memcpy(p, good, k);
    char msg[256] = "";
    int rc = kfr_plan_check(p, k, msg, sizeof msg);
    if (rc != KFUSE_EPLAN || strncmp(msg, "plan: ", 6))
      fail_msg("truncated to %zu of %zu bytes: rc %d \"%s\"", k, n, rc, msg);
    free(p);
  }
  void *p = calloc(1, n + 8);
  memcpy(p, good, n);
  char msg[256];
  assert_int_equal(kfr_plan_check(p, n + 8, msg, sizeof msg), KFUSE_EPLAN);
  assert_contains(msg, "total_bytes");
  free(p);
  free(good);
}

/* Random byte flips: each plan is accepted or rejected, never read out of
 * bounds; a small message buffer must be respected too. */
static void test_check_random_flips(void **state) {
  (void)state;
  void *good;
  size_t n;
  build(&good, &n, 0);
  uint8_t *p = malloc(n);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  int rejected = 0, trials = 20000;
  for (int t = 0; t < trials; t++) {
    memcpy(p, good, n);
    int flips = 1 + t % 4;
    for (int f = 0; f < flips; f++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      /* bias towards the records, where the structure is */
      size_t at = (x >> 8) % (t % 2 ? n : hdr(good)->off_strings);
      p[at] ^= (uint8_t)(1u << (x % 8));
    }
    char msg[24];
    int rc = kfr_plan_check(p, n, msg, sizeof msg);
    assert_true(rc == KFUSE_OK || rc == KFUSE_EPLAN);
    assert_true(strlen(msg) < sizeof msg);
    rejected += rc == KFUSE_EPLAN;
  }
  /* most flips hit a field that matters; padding and values do not */
  assert_true(rejected > trials / 4);
  free(p);
  free(good);
}

static void test_check_misc(void **state) {
  (void)state;
  char msg[256];
  assert_int_equal(kfr_plan_check(NULL, 100, msg, sizeof msg), KFUSE_EPLAN);
  assert_contains(msg, "NULL");
  void *good;
  size_t n;
  build(&good, &n, 0);
  uint8_t *p = malloc(n + 8);
  memcpy(p + 4, good, n);
  assert_int_equal(kfr_plan_check(p + 4, n, msg, sizeof msg), KFUSE_EPLAN);
  assert_contains(msg, "not 8-byte aligned");
  free(p);
  free(good);
}

/* ---- create and the API without a GPU -------------------------------------- */

static void test_create_rejects_bad_plan(void **state) {
  (void)state;
  void *p;
  size_t n;
  build(&p, &n, 0);
  kfuse_model *m = (kfuse_model *)&m; /* must be reset to NULL */
  hdr(p)->version = 99;
  assert_int_equal(kfr_model_create(p, n, NULL, &m), KFUSE_EPLAN);
  assert_null(m);
  assert_contains(kfuse_last_error(), "plan: header: version 99");
  assert_int_equal(kfr_model_create(p, n, NULL, NULL), KFUSE_EARG);
  assert_contains(kfuse_last_error(), "NULL");
  hdr(p)->version = KFR_PLAN_VERSION;
  kfuse_options o;
  kfuse_options_init(&o);
  o.struct_size = 2;
  assert_int_equal(kfr_model_create(p, n, &o, &m), KFUSE_EARG);
  assert_contains(kfuse_last_error(), "struct_size");
  free(p);
}

static void test_create_without_driver(void **state) {
  (void)state;
  void *p;
  size_t n;
  build(&p, &n, 0);
  kfuse_model *m = NULL;
  setenv("KFUSE_LIBCUDA", "/nonexistent/libcuda.so.1", 1);
  assert_int_equal(kfr_model_create(p, n, NULL, &m), KFUSE_ENODRIVER);
  assert_null(m);
  assert_contains(kfuse_last_error(), "no CUDA driver: cannot load "
                                      "/nonexistent/libcuda.so.1");
  /* the toolkit's stub loads but is no driver */
  const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
  if (access(stub, R_OK) == 0) {
    setenv("KFUSE_LIBCUDA", stub, 1);
    assert_int_equal(kfr_model_create(p, n, NULL, &m), KFUSE_ENODRIVER);
    assert_null(m);
    assert_contains(kfuse_last_error(), "stub");
  } else {
    print_message("skipped the stub case: %s is missing\n", stub);
  }
  unsetenv("KFUSE_LIBCUDA");
  /* the default search, where there is no driver (this machine, CI) */
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    assert_int_equal(kfr_model_create(p, n, NULL, &m), KFUSE_ENODRIVER);
    assert_contains(kfuse_last_error(), "libcuda.so.1");
  } else {
    dlclose(h);
    print_message("skipped the no-driver case: libcuda.so.1 is present\n");
  }
  free(p);
}

/* ---- finding cuBLASLt and cuDNN -------------------------------------------- */

/* mkdir -p of the directory part of path, then an empty file at path */
static void touch_p(const char *path) {
  char d[1024];
  snprintf(d, sizeof d, "%s", path);
  for (char *c = d + 1; *c; c++)
    if (*c == '/') {
      *c = 0;
      if (mkdir(d, 0700) != 0 && access(d, F_OK) != 0)
        fail_msg("mkdir %s failed", d);
      *c = '/';
    }
  FILE *f = fopen(path, "w");
  if (!f)
    fail_msg("cannot create %s", path);
  fclose(f);
}

static char g_seen[8][1024];
static int g_nseen;
static const char *g_accept; /* the path the fake loader accepts, or NULL */

static int fake_try(const char *path, char *tried, size_t tn) {
  if (g_nseen < 8)
    snprintf(g_seen[g_nseen], sizeof g_seen[0], "%s", path);
  g_nseen++;
  if (g_accept && strcmp(path, g_accept) == 0)
    return 1;
  kfr_lib_tried(tried, tn, path, "fake %d", g_nseen);
  return 0;
}

static void save_env(const char *name, char **keep) {
  const char *v = getenv(name);
  *keep = v ? strdup(v) : NULL;
}

static void restore_env(const char *name, char *keep) {
  if (keep)
    setenv(name, keep, 1);
  else
    unsetenv(name);
  free(keep);
}

static void test_lib_search_order(void **state) {
  (void)state;
  static const char *const vars[] = {"CUDA_HOME", "CUDA_PATH", "VIRTUAL_ENV",
                                     "CONDA_PREFIX", "HOME"};
  char *keep[5];
  for (int i = 0; i < 5; i++)
    save_env(vars[i], &keep[i]);
  const char *tmp = getenv("TMPDIR");
  char root[512];
  snprintf(root, sizeof root, "%s/kfuse_libsearch_XXXXXX",
           tmp && *tmp ? tmp : "/tmp");
  assert_non_null(mkdtemp(root));
  /* a name no system has, so only the fake tree can match */
  const char *so = "libkfuse_test_absent.so.9";
  char cuda[1024], venv[1024], venv13[1024], user[1024];
  snprintf(cuda, sizeof cuda, "%s/cuda/lib64/%s", root, so);
  snprintf(venv, sizeof venv,
           "%s/venv/lib/python3.12/site-packages/nvidia/cudnn/lib/%s", root, so);
  snprintf(venv13, sizeof venv13,
           "%s/venv/lib/python3.12/site-packages/nvidia/cu13/lib/%s", root, so);
  snprintf(user, sizeof user,
           "%s/home/.local/lib/python3.11/site-packages/nvidia/cudnn/lib/%s",
           root, so);
  touch_p(cuda);
  touch_p(venv);
  touch_p(venv13);
  touch_p(user);
  char d[1024];
  snprintf(d, sizeof d, "%s/cuda", root);
  setenv("CUDA_HOME", d, 1);
  unsetenv("CUDA_PATH");
  unsetenv("CONDA_PREFIX");
  snprintf(d, sizeof d, "%s/venv", root);
  setenv("VIRTUAL_ENV", d, 1);
  snprintf(d, sizeof d, "%s/home", root);
  setenv("HOME", d, 1);

  /* nothing accepted: the soname, then every existing place, in order */
  char tried[4096] = "";
  g_nseen = 0;
  g_accept = NULL;
  assert_int_equal(kfr_lib_search(so, "cudnn", fake_try, tried, sizeof tried), 0);
  assert_int_equal(g_nseen, 4);
  assert_string_equal(g_seen[0], so);
  assert_string_equal(g_seen[1], cuda);
  assert_string_equal(g_seen[2], venv);
  assert_string_equal(g_seen[3], user);
  char want[4096];
  snprintf(want, sizeof want, "%s (fake 1); %s (fake 2); %s (fake 3); %s (fake 4)",
           so, cuda, venv, user);
  assert_string_equal(tried, want);

  /* the first that loads wins; later places are not tried */
  tried[0] = 0;
  g_nseen = 0;
  g_accept = venv;
  assert_int_equal(kfr_lib_search(so, "cudnn", fake_try, tried, sizeof tried), 1);
  assert_int_equal(g_nseen, 3);
  /* a glob brace of pip directories (cuBLASLt's {cu13,cublas}) */
  tried[0] = 0;
  g_nseen = 0;
  g_accept = venv13;
  unsetenv("CUDA_HOME");
  assert_int_equal(
      kfr_lib_search(so, "{cu13,cublas}", fake_try, tried, sizeof tried), 1);
  assert_int_equal(g_nseen, 2);
  assert_string_equal(g_seen[1], venv13);
  g_accept = NULL;

  /* several Python versions in one place: newest first, whatever order
   * the directory lists them in (and not glob's collation, which puts
   * python3.10 before python3.9) */
  char pyv[4][1024];
  static const char *const vers[4] = {"3.9", "3.12", "3.10", "3.11"};
  for (int i = 0; i < 4; i++) {
    snprintf(pyv[i], sizeof pyv[i],
             "%s/multi/lib/python%s/site-packages/nvidia/cudnn/lib/%s", root,
             vers[i], so);
    touch_p(pyv[i]);
  }
  unsetenv("CUDA_HOME");
  unsetenv("HOME");
  snprintf(d, sizeof d, "%s/multi", root);
  setenv("VIRTUAL_ENV", d, 1);
  tried[0] = 0;
  g_nseen = 0;
  assert_int_equal(kfr_lib_search(so, "cudnn", fake_try, tried, sizeof tried), 0);
  assert_int_equal(g_nseen, 5);
  assert_string_equal(g_seen[1], pyv[1]); /* 3.12 */
  assert_string_equal(g_seen[2], pyv[3]); /* 3.11 */
  assert_string_equal(g_seen[3], pyv[2]); /* 3.10 */
  assert_string_equal(g_seen[4], pyv[0]); /* 3.9 */

  /* tried truncates, never overflows, and stays terminated */
  char small[24];
  memset(small, 'x', sizeof small);
  small[0] = 0;
  kfr_lib_tried(small, sizeof small, "/a/rather/long/path/libx.so", "why %d", 1);
  assert_true(strlen(small) < sizeof small);
  kfr_lib_tried(small, sizeof small, "/b", "again");
  assert_true(strlen(small) < sizeof small);
  assert_int_equal(strncmp(small, "/a/rather/long/path/lib", 23), 0);

  for (int i = 0; i < 5; i++)
    restore_env(vars[i], keep[i]);
  char cmd[1100];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  assert_int_equal(system(cmd), 0);
}

/* whether the loader finds soname by itself (then the default search must
 * load it; else it must fail naming it) */
static int loader_has(const char *soname) {
  void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (h)
    dlclose(h);
  return h != NULL;
}

static void test_lib_load(void **state) {
  (void)state;
  char msg[4096];
  const kfr_cublaslt *lt = NULL;
  const kfr_cudnn *dnn = NULL;
  /* a variable naming a missing file, or a library without the entry points */
  setenv("KFUSE_CUBLASLT", "/nonexistent/libcublasLt.so.13", 1);
  assert_int_equal(kfr_cublaslt_load(&lt, msg, sizeof msg), KFUSE_ELIBRARY);
  assert_null(lt);
  assert_contains(msg, "cannot load cuBLASLt from KFUSE_CUBLASLT: "
                       "/nonexistent/libcublasLt.so.13 (");
  setenv("KFUSE_CUBLASLT", "libm.so.6", 1);
  assert_int_equal(kfr_cublaslt_load(&lt, msg, sizeof msg), KFUSE_ELIBRARY);
  assert_contains(msg, "libm.so.6 (no cublasLtCreate)");
  unsetenv("KFUSE_CUBLASLT");
  setenv("KFUSE_CUDNN_LIBRARY", "/nonexistent/libcudnn.so.9", 1);
  assert_int_equal(kfr_cudnn_load(&dnn, msg, sizeof msg), KFUSE_ELIBRARY);
  assert_null(dnn);
  assert_contains(msg, "cannot load cuDNN from KFUSE_CUDNN_LIBRARY: "
                       "/nonexistent/libcudnn.so.9 (");
  setenv("KFUSE_CUDNN_LIBRARY", "libm.so.6", 1);
  assert_int_equal(kfr_cudnn_load(&dnn, msg, sizeof msg), KFUSE_ELIBRARY);
  assert_contains(msg, "libm.so.6 (no cudnnGetVersion)");
  unsetenv("KFUSE_CUDNN_LIBRARY");

  /* the default search: loading needs no GPU */
  if (loader_has("libcublasLt.so.13")) {
    assert_int_equal(kfr_cublaslt_load(&lt, msg, sizeof msg), KFUSE_OK);
    assert_non_null(lt);
    assert_string_equal(lt->path, "libcublasLt.so.13");
    assert_true(lt->cublasLtGetVersion() >= 130000);
  } else {
    int rc = kfr_cublaslt_load(&lt, msg, sizeof msg);
    if (rc == KFUSE_OK) /* found by the search beyond the loader's path */
      assert_true(strchr(lt->path, '/') != NULL);
    else
      assert_contains(msg, "libcublasLt.so.13 (");
  }
  if (loader_has("libcudnn.so.9")) {
    assert_int_equal(kfr_cudnn_load(&dnn, msg, sizeof msg), KFUSE_OK);
    assert_non_null(dnn);
    assert_string_equal(dnn->path, "libcudnn.so.9");
    assert_true(dnn->version >= 90000);
  } else {
    int rc = kfr_cudnn_load(&dnn, msg, sizeof msg);
    if (rc == KFUSE_OK)
      assert_true(strchr(dnn->path, '/') != NULL && dnn->version >= 90000);
    else
      assert_contains(msg, "KFUSE_CUDNN_LIBRARY");
  }
}

/* A GEMM run's algorithm by its operands' alignment: the timed one
 * whenever the pointers allow it, however many misaligned runs came
 * before; one fallback, widened only when a run needs less alignment. */
static void test_gemm_pick(void **state) {
  (void)state;
  const uint32_t planned[4] = {256, 64, 256, 256};
  uint32_t low[4] = {0}, need[4] = {0};
  const uint32_t aligned[4] = {256, 256, 256, 256}, d4[4] = {256, 64, 4, 4}, a16[4] = {16, 64, 256, 256};
  assert_int_equal(kfr_gemm_pick(planned, 0, low, planned, need), 0);
  assert_int_equal(kfr_gemm_pick(planned, 0, low, aligned, need), 0);
  /* D 4-byte aligned: no fallback yet, one for (256, 64, 4, 4) */
  assert_int_equal(kfr_gemm_pick(planned, 0, low, d4, need), 2);
  assert_memory_equal(need, d4, sizeof need);
  memcpy(low, need, sizeof low);
  assert_int_equal(kfr_gemm_pick(planned, 1, low, d4, need), 1);
  /* an aligned run after it: the planned (timed) algorithm again */
  assert_int_equal(kfr_gemm_pick(planned, 1, low, aligned, need), 0);
  /* A 16-byte aligned: the fallback does not allow it; the new one allows both */
  assert_int_equal(kfr_gemm_pick(planned, 1, low, a16, need), 2);
  const uint32_t both[4] = {16, 64, 4, 4};
  assert_memory_equal(need, both, sizeof need);
  memcpy(low, need, sizeof low);
  assert_int_equal(kfr_gemm_pick(planned, 1, low, d4, need), 1);
  assert_int_equal(kfr_gemm_pick(planned, 1, low, a16, need), 1);
  assert_int_equal(kfr_gemm_pick(planned, 1, low, planned, need), 0);
}

static void test_api_null(void **state) {
  (void)state;
  kfuse_model_destroy(NULL);
  assert_int_equal(kfuse_model_num_inputs(NULL), -1);
  assert_int_equal(kfuse_model_num_outputs(NULL), -1);
  kfuse_tensor_info ti;
  assert_int_equal(kfuse_model_input_info(NULL, 0, &ti), KFUSE_EARG);
  assert_int_equal(kfuse_model_output_info(NULL, 0, &ti), KFUSE_EARG);
  assert_int_equal(kfuse_model_run(NULL, NULL, NULL, NULL), KFUSE_EARG);
  assert_non_null(kfuse_model_error(NULL));
  kfuse_options o;
  memset(&o, 0x5a, sizeof o);
  kfuse_options_init(&o);
  assert_int_equal(o.struct_size, sizeof o);
  assert_int_equal(o.device, 0);
  assert_null(o.weights_path);
  assert_int_equal(o.cuda_graph, 0);
  kfuse_options_init(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_xxh64),
      cmocka_unit_test(test_writer_layout),
      cmocka_unit_test(test_writer_embedded),
      cmocka_unit_test(test_writer_strings_shared),
      cmocka_unit_test(test_writer_module_kinds),
      cmocka_unit_test(test_writer_misuse),
      cmocka_unit_test(test_check_each_field),
      cmocka_unit_test(test_conv_plan),
      cmocka_unit_test(test_conv_check_each_field),
      cmocka_unit_test(test_conv_writer_rejects),
      cmocka_unit_test(test_check_truncated),
      cmocka_unit_test(test_check_random_flips),
      cmocka_unit_test(test_check_misc),
      cmocka_unit_test(test_create_rejects_bad_plan),
      cmocka_unit_test(test_create_without_driver),
      cmocka_unit_test(test_api_null),
      cmocka_unit_test(test_gemm_pick),
      cmocka_unit_test(test_lib_search_order),
      cmocka_unit_test(test_lib_load),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
