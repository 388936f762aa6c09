// kf_common.cuh — what every kfuse template builds on: storage types for
// the 16-bit floats, conversions with PyTorch's semantics, scalar and 16-byte
// vector loads and stores, index helpers and warp/block reductions.
//
// NVRTC compiles these without any CUDA or C++ standard header, so the 16-bit
// float conversions are written with PTX `cvt` and bit arithmetic rather than
// cuda_fp16.h: the headers stay small and cold compiles stay fast.
#ifndef KF_COMMON_CUH
#define KF_COMMON_CUH

// The module's out-of-range index flag: a kernel that meets an index out of
// range (after wrapping negative ones; gather, embedding, index,
// index_select), where PyTorch raises IndexError, reads 0 for it and sets
// this word. One per module (one NVRTC program per unit); the runtime finds
// it by name and reads and clears it in kfuse_model_check
// (runtime/kfr_sync.c). C linkage: the name is the symbol.
extern "C" {
__device__ unsigned int kf_index_error;
}

namespace kf {

__device__ __forceinline__ void index_error() { atomicOr(&kf_index_error, 1u); }

typedef long long i64;
typedef unsigned long long u64;

// Storage-only types: a value is loaded into float (or double in the fp64
// reference) and computed there, as PyTorch's CUDA kernels do (opmath).
struct __align__(2) half_t { unsigned short x; };
struct __align__(2) bf16_t { unsigned short x; };

#ifndef KF_EMU
__device__ __forceinline__ float f16_to_f32(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ unsigned short f32_to_f16(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}
#else // the CPU emulation of tests/emu
__device__ __forceinline__ float f16_to_f32(unsigned short h) { return kf_emu_f16_to_f32(h); }
__device__ __forceinline__ unsigned short f32_to_f16(float f) { return kf_emu_f32_to_f16(f); }
#endif
__device__ __forceinline__ float bf16_to_f32(unsigned short h) {
  return __uint_as_float(((unsigned)h) << 16);
}
// Round to nearest even, NaN kept quiet: c10::BFloat16's rounding.
__device__ __forceinline__ unsigned short f32_to_bf16(float f) {
  unsigned u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
  u += 0x7fffu + ((u >> 16) & 1u);
  return (unsigned short)(u >> 16);
}

__device__ __forceinline__ bool isnan_(float x) { return x != x; }
__device__ __forceinline__ bool isnan_(double x) { return x != x; }
template <class T> __device__ __forceinline__ bool isnan_(T) { return false; }

__device__ __forceinline__ float inf_f() { return __int_as_float(0x7f800000); }
__device__ __forceinline__ double inf_d() { return __longlong_as_double(0x7ff0000000000000LL); }
__device__ __forceinline__ float nan_f() { return __int_as_float(0x7fc00000); }
__device__ __forceinline__ double nan_d() { return __longlong_as_double(0x7ff8000000000000LL); }

// ---- conversions ---------------------------------------------------------
// cvt<To>(from): PyTorch's c10::convert on the GPU. Floats to integers
// truncate (saturating, as the GPU does; NaN gives 0); to uint8 through
// int64 as c10 does; anything to bool is "!= 0"; 16-bit floats round to
// nearest even from float (a double goes through float first, as c10's
// Half/BFloat16 constructors do).

template <class To> struct cvt_ {
  template <class From> __device__ static __forceinline__ To f(From x) { return static_cast<To>(x); }
  __device__ static __forceinline__ To f(half_t x) { return static_cast<To>(f16_to_f32(x.x)); }
  __device__ static __forceinline__ To f(bf16_t x) { return static_cast<To>(bf16_to_f32(x.x)); }
  __device__ static __forceinline__ To f(bool x) { return static_cast<To>(x ? 1 : 0); }
};
template <> struct cvt_<bool> {
  template <class From> __device__ static __forceinline__ bool f(From x) { return x != From(0); }
  __device__ static __forceinline__ bool f(half_t x) { return f16_to_f32(x.x) != 0.0f; }
  __device__ static __forceinline__ bool f(bf16_t x) { return bf16_to_f32(x.x) != 0.0f; }
  __device__ static __forceinline__ bool f(bool x) { return x; }
};
template <> struct cvt_<unsigned char> {
  template <class From> __device__ static __forceinline__ unsigned char f(From x) {
    return static_cast<unsigned char>(static_cast<i64>(x));
  }
  __device__ static __forceinline__ unsigned char f(half_t x) { return f(f16_to_f32(x.x)); }
  __device__ static __forceinline__ unsigned char f(bf16_t x) { return f(bf16_to_f32(x.x)); }
  __device__ static __forceinline__ unsigned char f(bool x) { return x ? 1 : 0; }
};
template <> struct cvt_<half_t> {
  template <class From> __device__ static __forceinline__ half_t f(From x) {
    half_t h;
    h.x = f32_to_f16(static_cast<float>(x));
    return h;
  }
  __device__ static __forceinline__ half_t f(half_t x) { return x; }
  __device__ static __forceinline__ half_t f(bf16_t x) { return f(bf16_to_f32(x.x)); }
  __device__ static __forceinline__ half_t f(bool x) { return f(x ? 1.0f : 0.0f); }
};
template <> struct cvt_<bf16_t> {
  template <class From> __device__ static __forceinline__ bf16_t f(From x) {
    bf16_t h;
    h.x = f32_to_bf16(static_cast<float>(x));
    return h;
  }
  __device__ static __forceinline__ bf16_t f(bf16_t x) { return x; }
  __device__ static __forceinline__ bf16_t f(half_t x) { return f(f16_to_f32(x.x)); }
  __device__ static __forceinline__ bf16_t f(bool x) { return f(x ? 1.0f : 0.0f); }
};

template <class To, class From> __device__ __forceinline__ To cvt(From x) { return cvt_<To>::f(x); }

// Round a register value as if stored in dtype S and loaded back into R
// (explicit casts to f16/bf16 inside a fused chain).
template <class S, class R> __device__ __forceinline__ R round_as(R x) {
  return cvt<R>(cvt<S>(x));
}

// An fp32 value rounded to TF32's 10-bit mantissa, to nearest even: the
// module check's reference rounds a convolution's operands so where the
// module's may run on TF32 tensor cores (agent/builtin_conv.c).
__device__ __forceinline__ float tf32(float x) {
  unsigned u = __float_as_uint(x);
  if ((u & 0x7f800000u) == 0x7f800000u) return x; // inf, NaN
  u += 0xfffu + ((u >> 13) & 1u);
  return __uint_as_float(u & 0xffffe000u);
}

// ---- loads and stores -------------------------------------------------------

template <class R, class S> __device__ __forceinline__ R ld(const S *p) { return cvt<R>(*p); }
template <class S, class R> __device__ __forceinline__ void st(S *p, R v) { *p = cvt<S>(v); }

// N consecutive elements through the widest aligned accesses (16 bytes at
// most); the caller checked alignment to vec_align<S, N>().
template <class S, int N> __host__ __device__ constexpr int vec_bytes() {
  return (int)sizeof(S) * N >= 16 ? 16 : (int)sizeof(S) * N;
}

template <int B> struct raw_;
template <> struct raw_<16> { typedef uint4 t; };
template <> struct raw_<8> { typedef uint2 t; };
template <> struct raw_<4> { typedef unsigned t; };
template <> struct raw_<2> { typedef unsigned short t; };
template <> struct raw_<1> { typedef unsigned char t; };

template <class S, int N, class R> __device__ __forceinline__ void vld(R (&out)[N], const S *p) {
  constexpr int B = vec_bytes<S, N>();
  constexpr int PER = B / (int)sizeof(S);
  typedef typename raw_<B>::t raw;
#pragma unroll
  for (int c = 0; c < N / PER; c++) {
    union { raw r; S s[PER]; } u;
    u.r = *reinterpret_cast<const raw *>(p + c * PER);
#pragma unroll
    for (int j = 0; j < PER; j++) out[c * PER + j] = cvt<R>(u.s[j]);
  }
}

template <class S, int N, class R> __device__ __forceinline__ void vst(S *p, const R (&in)[N]) {
  constexpr int B = vec_bytes<S, N>();
  constexpr int PER = B / (int)sizeof(S);
  typedef typename raw_<B>::t raw;
#pragma unroll
  for (int c = 0; c < N / PER; c++) {
    union { raw r; S s[PER]; } u;
#pragma unroll
    for (int j = 0; j < PER; j++) u.s[j] = cvt<S>(in[c * PER + j]);
    *reinterpret_cast<raw *>(p + c * PER) = u.r;
  }
}

template <class S, int N> __device__ __forceinline__ bool vec_aligned(const void *p) {
  return (reinterpret_cast<u64>(p) % (u64)vec_bytes<S, N>()) == 0;
}

// N elements from p, or one element broadcast when B (a scalar operand).
template <bool B, class S, int N, class R> __device__ __forceinline__ void vload(R (&out)[N], const S *p) {
  if constexpr (B) {
    const R v = ld<R>(p);
#pragma unroll
    for (int j = 0; j < N; j++) out[j] = v;
  } else {
    vld<S, N>(out, p);
  }
}

}  // namespace kf

// ---- index helpers ------------------------------------------------------------
namespace kf {

// Offset of the element at coordinates c under strides s (R dims).
template <class I, int R>
__device__ __forceinline__ I dot(const I (&c)[R], const long long (&s)[R]) {
  I o = 0;
#pragma unroll
  for (int d = 0; d < R; d++) o += c[d] * (I)s[d];
  return o;
}

// Coordinates of linear index i (row-major) in a shape of R dims.
template <class I, int R>
__device__ __forceinline__ void unravel(I i, const long long (&shape)[R], I (&c)[R]) {
#pragma unroll
  for (int d = R - 1; d > 0; d--) {
    c[d] = i % (I)shape[d];
    i = i / (I)shape[d];
  }
  c[0] = i;
}

// Offset of linear index i of a shape under strides, without keeping the
// coordinates.
template <class I, int R>
__device__ __forceinline__ I offset_of(I i, const long long (&shape)[R], const long long (&s)[R]) {
  I o = 0;
#pragma unroll
  for (int d = R - 1; d > 0; d--) {
    o += (i % (I)shape[d]) * (I)s[d];
    i = i / (I)shape[d];
  }
  return o + i * (I)s[0];
}

// ---- warp and block reductions --------------------------------------------------

template <class T> __device__ __forceinline__ T shfl_xor(T v, int m, int w = 32) {
  return __shfl_xor_sync(0xffffffffu, v, m, w);
}
__device__ __forceinline__ bool shfl_xor(bool v, int m, int w = 32) {
  return __shfl_xor_sync(0xffffffffu, (int)v, m, w) != 0;
}
template <class T> __device__ __forceinline__ T shfl_idx(T v, int l, int w = 32) {
  return __shfl_sync(0xffffffffu, v, l, w);
}
template <class T> __device__ __forceinline__ T shfl_up(T v, int d, int w = 32) {
  return __shfl_up_sync(0xffffffffu, v, d, w);
}

}  // namespace kf

#endif
