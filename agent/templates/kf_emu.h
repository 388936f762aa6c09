// agent/templates/kf_emu.h — runs kfuse's CUDA templates on the CPU: kfuse
// compile's module check without a GPU and the emulator tests
// (judge/emu.c, tests/emu/emu_check.c). Embedded with the templates, never
// given to NVRTC.
//
// Included first (g++ -include) when a unit's source is compiled as host
// C++ with -DKF_EMU. It maps CUDA's keywords and intrinsics onto C++17 and
// executes a launch as CUDA may schedule it: blocks one after another, the
// threads of a block as coroutines that run until they finish or reach a
// barrier (__syncthreads, __syncwarp, each warp shuffle), so every barrier
// really waits for all its threads. __shared__ variables become static
// locals: shared by a block's threads, and blocks never overlap. Only what
// the templates use is here.
#ifndef KF_EMU_H
#define KF_EMU_H

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <type_traits>
#include <ucontext.h>
#include <utility>
#include <vector>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) alignas(n)

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
};
struct alignas(16) uint4 {
  unsigned x, y, z, w;
};
struct alignas(8) uint2 {
  unsigned x, y;
};

inline dim3 threadIdx, blockIdx; // set by the scheduler before each switch
inline dim3 blockDim, gridDim;

inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline float __uint_as_float(unsigned i) { float f; std::memcpy(&f, &i, 4); return f; }
inline unsigned __float_as_uint(float f) { unsigned i; std::memcpy(&i, &f, 4); return i; }
inline double __longlong_as_double(long long i) { double d; std::memcpy(&d, &i, 8); return d; }
inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }
using std::erf; using std::exp; using std::exp2; using std::expm1; using std::log; using std::log2;
using std::log10; using std::log1p; using std::sqrt; using std::sin; using std::cos; using std::tan;
using std::asin; using std::acos; using std::atan; using std::sinh; using std::cosh; using std::tanh;
using std::asinh; using std::acosh; using std::atanh; using std::floor; using std::ceil; using std::rint;
using std::trunc; using std::fabs; using std::fmod; using std::pow; using std::atan2; using std::copysign;

// IEEE half <-> float, round to nearest even (what cvt.rn.f16.f32 does)
inline float kf_emu_f16_to_f32(unsigned short h) {
  unsigned sign = (h & 0x8000u) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  unsigned bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13);
  } else if (exp == 0) {
    if (man == 0) {
      bits = sign;
    } else {
      float f = std::ldexp((float)man, -24);
      return sign ? -f : f;
    }
  } else {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  }
  return __uint_as_float(bits);
}
inline unsigned short kf_emu_f32_to_f16(float f) {
  unsigned u = __float_as_uint(f);
  unsigned short sign = (unsigned short)((u >> 16) & 0x8000u);
  float a = std::fabs(f);
  if (a != a) return sign | 0x7e00;
  if (a >= 65520.0f) return sign | 0x7c00; // rounds to infinity
  if (a < 6.103515625e-05f) {              // subnormal or zero: multiples of 2^-24
    float q = std::nearbyint(a * 16777216.0f);
    return sign | (unsigned short)q;
  }
  int e;
  float m = std::frexp(a, &e); // a = m * 2^e, m in [0.5, 1)
  float q = std::nearbyint(std::ldexp(m, 11)); // 11 significant bits
  if (q >= 2048.0f) {
    q /= 2;
    e++;
  }
  if (e - 1 + 15 >= 31) return sign | 0x7c00;
  return sign | (unsigned short)(((e - 1 + 15) << 10) | ((unsigned)q & 0x3ff));
}

// ---- CUDA threads as coroutines ---------------------------------------------------
// A launch runs its blocks one after another; within a block every CUDA
// thread is a coroutine (ucontext) on one OS thread, switched at barriers:
// deterministic, and cheap enough for fixture-sized launches.

namespace kf_emu {

struct barrier {
  int count = 0, expected = 0;
  unsigned long gen = 0;
};

struct block_state {
  barrier block;
  barrier warps[32];
  unsigned long long xch[32][32];
  std::vector<ucontext_t> ctx;
  std::vector<char> done;
  ucontext_t sched;
  unsigned cur = 0;
  const std::function<void()> *f = nullptr;
};

inline block_state *g_block;

inline int lane_id() { return (int)(threadIdx.x % 32); }
inline int warp_id() { return (int)(threadIdx.x / 32); }

// give the other coroutines a turn until the barrier's generation moves
inline void arrive_and_wait(barrier &b) {
  unsigned long g = b.gen;
  if (++b.count == b.expected) {
    b.count = 0;
    b.gen++;
    return;
  }
  block_state *bs = g_block;
  while (b.gen == g) swapcontext(&bs->ctx[bs->cur], &bs->sched);
}

template <class T> inline T exchange(T v, int src) {
  block_state *b = g_block;
  int w = warp_id(), l = lane_id();
  unsigned long long slot = 0;
  std::memcpy(&slot, &v, sizeof v);
  b->xch[w][l] = slot;
  arrive_and_wait(b->warps[w]);
  unsigned long long got = b->xch[w][src];
  arrive_and_wait(b->warps[w]);
  T r;
  std::memcpy(&r, &got, sizeof r);
  return r;
}

inline void trampoline() {
  block_state *bs = g_block;
  (*bs->f)();
  bs->done[bs->cur] = 1;
  swapcontext(&bs->ctx[bs->cur], &bs->sched);
}

// Runs every block of a launch; f is called by each thread of a block.
inline void launch(dim3 grid, dim3 block, const std::function<void()> &f) {
  gridDim = grid;
  blockDim = block;
  unsigned nt = block.x * block.y * block.z;
  block_state *bs = new block_state;
  bs->block.expected = (int)nt;
  for (int w = 0; w < 32; w++) {
    int left = (int)nt - w * 32;
    bs->warps[w].expected = left >= 32 ? 32 : (left > 0 ? left : 0);
  }
  bs->ctx.resize(nt);
  bs->done.resize(nt);
  bs->f = &f;
  const size_t stack = 64 * 1024;
  std::vector<char> stacks(stack * nt);
  g_block = bs;
  for (unsigned bz = 0; bz < grid.z; bz++)
    for (unsigned by = 0; by < grid.y; by++)
      for (unsigned bx = 0; bx < grid.x; bx++) {
        blockIdx.x = bx;
        blockIdx.y = by;
        blockIdx.z = bz;
        for (unsigned t = 0; t < nt; t++) {
          getcontext(&bs->ctx[t]);
          bs->ctx[t].uc_stack.ss_sp = &stacks[stack * t];
          bs->ctx[t].uc_stack.ss_size = stack;
          bs->ctx[t].uc_link = nullptr;
          makecontext(&bs->ctx[t], trampoline, 0);
          bs->done[t] = 0;
        }
        unsigned left = nt;
        while (left) {
          for (unsigned t = 0; t < nt; t++) {
            if (bs->done[t]) continue;
            bs->cur = t;
            threadIdx.x = t;
            swapcontext(&bs->sched, &bs->ctx[t]);
            if (bs->done[t]) left--;
          }
        }
      }
  g_block = nullptr;
  delete bs;
}

// A kernel parameter from args[i]: pointers are passed as the pointer
// itself, scalars (the attention softmax's chunk position) as a pointer to
// the value, as cuLaunchKernel's kernelParams hold them.
template <class P> P param(void *a) {
  if constexpr (std::is_pointer_v<P>)
    return static_cast<P>(a);
  else
    return *static_cast<const P *>(a);
}

template <class... P, std::size_t... I>
void call(void (*k)(P...), void **args, std::index_sequence<I...>) {
  k(param<P>(args[I])...);
}

template <class... P> int run(void (*k)(P...), dim3 g, dim3 b, void **args, int nargs) {
  if (nargs != (int)sizeof...(P)) return 1;
  launch(g, b, [&] { call(k, args, std::index_sequence_for<P...>{}); });
  return 0;
}

}  // namespace kf_emu

// one OS thread runs every CUDA thread of a launch: plain read-modify-write
inline unsigned atomicOr(unsigned *p, unsigned v) {
  unsigned old = *p;
  *p = old | v;
  return old;
}

inline void __syncthreads() { kf_emu::arrive_and_wait(kf_emu::g_block->block); }
inline void __syncwarp(unsigned = 0xffffffffu) {
  kf_emu::arrive_and_wait(kf_emu::g_block->warps[kf_emu::warp_id()]);
}
template <class T> inline T __shfl_xor_sync(unsigned, T v, int m, int w = 32) {
  (void)w;
  return kf_emu::exchange(v, kf_emu::lane_id() ^ m);
}
template <class T> inline T __shfl_sync(unsigned, T v, int src, int w = 32) {
  int l = kf_emu::lane_id();
  return kf_emu::exchange(v, (l / w) * w + (src % w));
}
template <class T> inline T __shfl_up_sync(unsigned, T v, unsigned d, int w = 32) {
  int l = kf_emu::lane_id();
  int s = (l % w) >= (int)d ? l - (int)d : l;
  return kf_emu::exchange(v, s);
}

#endif
