// kf_reduce.cuh — reducers and the row all-reduce of reduce.cu.
//
// A reducer is a small object (its parameters: var's correction, a norm's
// order) with a plain-data state: init(), add(state, value, index),
// combine(a, b) (associative, and order-insensitive for ties: arg
// reductions compare indices), shfl(state, lane mask) for warp butterflies,
// and results r0(state) / r1(state). States are POD so they can live in
// shared memory and in the scratch buffer of split reductions.
//
// Numerics follow ATen's CUDA reductions: NaN propagates through max/min;
// argmax/argmin treat NaN as the extreme value and keep the first index on
// ties; var is Welford's with Chan's combination; softmax keeps a running
// maximum and rescaled sum.
#ifndef KF_REDUCE_CUH
#define KF_REDUCE_CUH

#include "kf_common.cuh"
#include "kf_ops.cuh"

namespace kf {

template <class T> __device__ __forceinline__ T lowest_();
template <> __device__ __forceinline__ float lowest_<float>() { return -inf_f(); }
template <> __device__ __forceinline__ double lowest_<double>() { return -inf_d(); }

template <class T> struct red_sum {
  typedef T state;
  __device__ state init() const { return T(0); }
  __device__ void add(state &s, T v, long long) const { s = T(s + v); }
  __device__ state combine(state a, state b) const { return T(a + b); }
  __device__ state shfl(state s, int m) const { return shfl_xor(s, m); }
  __device__ state bcast(state s, int l) const { return shfl_idx(s, l); }
  __device__ T r0(state s, long long) const { return s; }
  __device__ long long r1(state, long long) const { return 0; }
};

template <class T> struct red_mean : red_sum<T> {
  __device__ T r0(T s, long long n) const { return s / T(n); }
};

template <class T> struct red_prod {
  typedef T state;
  __device__ state init() const { return T(1); }
  __device__ void add(state &s, T v, long long) const { s = T(s * v); }
  __device__ state combine(state a, state b) const { return T(a * b); }
  __device__ state shfl(state s, int m) const { return shfl_xor(s, m); }
  __device__ state bcast(state s, int l) const { return shfl_idx(s, l); }
  __device__ T r0(state s, long long) const { return s; }
  __device__ long long r1(state, long long) const { return 0; }
};

// amax/amin: NaN wins (ATen's max_propagate_nan)
// amax/amin's identity: every value (and NaN) replaces it
template <bool MAX> __device__ __forceinline__ float ext_identity(float) { return MAX ? -inf_f() : inf_f(); }
template <bool MAX> __device__ __forceinline__ double ext_identity(double) { return MAX ? -inf_d() : inf_d(); }
template <bool MAX, class T> __device__ __forceinline__ T ext_identity(T) { // signed integers
  const T hi = (T)(~0ULL >> (65 - 8 * sizeof(T)));
  return MAX ? (T)(-hi - 1) : hi;
}

template <class T, bool MAX> struct red_ext {
  typedef struct { T v; bool any; } state;
  __device__ static T pick(T a, T b) {
    if (isnan_(a)) return a;
    if (isnan_(b)) return b;
    return MAX ? (a > b ? a : b) : (a < b ? a : b);
  }
  __device__ state init() const { state s; s.v = ext_identity<MAX>(T()); s.any = false; return s; }
  // per element one compare and one select on the running value, from the
  // identity: the first NaN stays (nothing compares greater than it), the
  // identity never survives a value. Against a "first value?" test and
  // pick's two NaN tests per element, which left L1 49 (amax over dim 1 of
  // [128, 4096, 4095]) at 0.77x eager.
  __device__ void add(state &s, T v, long long) const {
    s.v = (isnan_(v) || (MAX ? v > s.v : v < s.v)) ? v : s.v;
    s.any = true;
  }
  __device__ state combine(state a, state b) const {
    if (!a.any) return b;
    if (!b.any) return a;
    a.v = pick(a.v, b.v);
    return a;
  }
  __device__ state shfl(state s, int m) const {
    s.v = shfl_xor(s.v, m);
    s.any = shfl_xor(s.any, m);
    return s;
  }
  __device__ state bcast(state s, int l) const {
    s.v = shfl_idx(s.v, l);
    s.any = shfl_idx((int)s.any, l) != 0;
    return s;
  }
  __device__ T r0(state s, long long) const { return s.any ? s.v : T(0); }
  __device__ long long r1(state, long long) const { return 0; }
};

template <bool ALL> struct red_bool {
  typedef bool state;
  __device__ state init() const { return ALL; }
  __device__ void add(state &s, bool v, long long) const { s = ALL ? (s && v) : (s || v); }
  __device__ state combine(state a, state b) const { return ALL ? (a && b) : (a || b); }
  __device__ state shfl(state s, int m) const { return shfl_xor(s, m); }
  __device__ state bcast(state s, int l) const { return shfl_idx((int)s, l) != 0; }
  __device__ bool r0(state s, long long) const { return s; }
  __device__ long long r1(state, long long) const { return 0; }
};

// Vector norms: ord 2, 1, inf, -inf, 0 and general p (sum |x|^p)^(1/p).
template <class T, int KIND> struct red_norm {
  // KIND: 0 -> p, 1 -> 1, 2 -> 2, 3 -> inf, 4 -> -inf, 5 -> 0
  T p;
  typedef T state;
  __device__ state init() const { return KIND == 3 ? T(0) : KIND == 4 ? T(inf_d()) : T(0); }
  __device__ void add(state &s, T v, long long) const {
    T a = v < T(0) ? T(-v) : v;
    if (isnan_(v)) a = v;
    if (KIND == 0) s += pow_(a, p);
    else if (KIND == 1) s += a;
    else if (KIND == 2) s += a * a;
    else if (KIND == 3) s = (isnan_(a) || a > s) ? a : s;
    else if (KIND == 4) s = (isnan_(a) || a < s) ? a : s;
    else s += (v != T(0)) ? T(1) : T(0);
  }
  __device__ state combine(state a, state b) const {
    if (KIND == 3) return (isnan_(a) || a > b) ? a : b;
    if (KIND == 4) return (isnan_(a) || a < b) ? a : b;
    return a + b;
  }
  __device__ state shfl(state s, int m) const { return shfl_xor(s, m); }
  __device__ state bcast(state s, int l) const { return shfl_idx(s, l); }
  __device__ T r0(state s, long long) const {
    if (KIND == 0) return pow_(s, T(1) / p);
    if (KIND == 2) return sqrt_(s);
    return s;
  }
  __device__ long long r1(state, long long) const { return 0; }
};

// Welford: r0 = mean, r1 = var with `corr` (0: biased, as the norms use)
template <class T> struct red_welford {
  T corr;
  typedef struct { T mean, m2, n; } state;
  __device__ state init() const { state s; s.mean = T(0); s.m2 = T(0); s.n = T(0); return s; }
  __device__ void add(state &s, T v, long long) const {
    s.n += T(1);
    T d = v - s.mean;
    s.mean += d / s.n;
    s.m2 += d * (v - s.mean);
  }
  __device__ state combine(state a, state b) const {
    if (a.n == T(0)) return b;
    if (b.n == T(0)) return a;
    state r;
    r.n = a.n + b.n;
    T d = b.mean - a.mean;
    T nb = b.n / r.n;
    r.mean = a.mean + d * nb;
    r.m2 = a.m2 + b.m2 + d * d * a.n * nb;
    return r;
  }
  __device__ state shfl(state s, int m) const {
    s.mean = shfl_xor(s.mean, m);
    s.m2 = shfl_xor(s.m2, m);
    s.n = shfl_xor(s.n, m);
    return s;
  }
  __device__ state bcast(state s, int l) const {
    s.mean = shfl_idx(s.mean, l);
    s.m2 = shfl_idx(s.m2, l);
    s.n = shfl_idx(s.n, l);
    return s;
  }
  __device__ T r0(state s, long long) const { return s.mean; }
  __device__ T r1(state s, long long) const {
    T d = s.n - corr;
    return s.m2 / (d > T(0) ? d : T(0));
  }
};

// argmax/argmin and max/min along a dim: (value, first index); NaN counts
// as the extreme (ATen's greater_or_nan / less_or_nan).
template <class T, bool MAX> struct red_arg {
  typedef struct { T v; long long i; } state;
  __device__ static bool better(T a, long long ia, T b, long long ib) {
    if (isnan_(a)) return isnan_(b) ? ia < ib : true;
    if (isnan_(b)) return false;
    if (a == b) return ia < ib;
    return MAX ? a > b : a < b;
  }
  __device__ state init() const { state s; s.v = T(0); s.i = -1; return s; }
  __device__ void add(state &s, T v, long long i) const {
    // strictly better or strictly worse (neither a NaN nor equal) decides
    // with one comparison each; ties and NaNs take better()'s full test
    bool take = MAX ? v > s.v : v < s.v;
    if (!take && !(MAX ? v < s.v : v > s.v)) take = better(v, i, s.v, s.i);
    if (s.i < 0 || take) {
      s.v = v;
      s.i = i;
    }
  }
  __device__ state combine(state a, state b) const {
    if (a.i < 0) return b;
    if (b.i < 0) return a;
    return better(b.v, b.i, a.v, a.i) ? b : a;
  }
  __device__ state shfl(state s, int m) const {
    s.v = shfl_xor(s.v, m);
    s.i = shfl_xor(s.i, m);
    return s;
  }
  __device__ state bcast(state s, int l) const {
    s.v = shfl_idx(s.v, l);
    s.i = shfl_idx(s.i, l);
    return s;
  }
  __device__ T r0(state s, long long) const { return s.v; }
  __device__ long long r1(state s, long long) const { return s.i; }
};

// softmax statistics: running max m and sum of exp(x - m)
template <class T> struct red_softmax {
  typedef struct { T m, s; } state;
  __device__ state init() const { state r; r.m = lowest_<T>(); r.s = T(0); return r; }
  __device__ void add(state &st, T v, long long) const {
    if (v == lowest_<T>()) return; // exp(-inf - m) adds nothing
    if (v > st.m) {
      st.s = st.s * exp_(st.m - v) + T(1);
      st.m = v;
    } else {
      st.s += exp_(v - st.m);
    }
  }
  __device__ state combine(state a, state b) const {
    if (b.s == T(0) && b.m == lowest_<T>()) return a;
    if (a.s == T(0) && a.m == lowest_<T>()) return b;
    state r;
    r.m = a.m > b.m ? a.m : b.m;
    if (isnan_(a.m) || isnan_(b.m)) r.m = a.m + b.m;
    r.s = a.s * exp_(a.m - r.m) + b.s * exp_(b.m - r.m);
    return r;
  }
  __device__ state shfl(state s, int m) const {
    s.m = shfl_xor(s.m, m);
    s.s = shfl_xor(s.s, m);
    return s;
  }
  __device__ state bcast(state s, int l) const {
    s.m = shfl_idx(s.m, l);
    s.s = shfl_idx(s.s, l);
    return s;
  }
  __device__ T r0(state s, long long) const { return s.m; }
  __device__ T r1(state s, long long) const { return s.s; }
};

// All-reduce of one state per thread over the TPR threads of each row of a
// block of BLOCK threads. ROWLAYOUT: a row's threads are consecutive
// (tid = slot * TPR + lane); otherwise rows are consecutive (tid = lane *
// RPB + slot). Every thread of the row returns the same state (the warp
// path broadcasts the row leader's). Called by every thread of the block.
template <class RED, int BLOCK, int TPR, bool ROWLAYOUT>
__device__ __forceinline__ typename RED::state row_allreduce(const RED &red, typename RED::state s,
                                                             typename RED::state *smem) {
  if constexpr (ROWLAYOUT && TPR <= 32) {
#pragma unroll
    for (int m = TPR / 2; m >= 1; m /= 2) s = red.combine(s, red.shfl(s, m));
    if constexpr (TPR > 1) s = red.bcast(s, (int)(threadIdx.x % 32) / TPR * TPR);
    return s;
  } else if constexpr (ROWLAYOUT) {
#pragma unroll
    for (int m = 16; m >= 1; m /= 2) s = red.combine(s, red.shfl(s, m));
    const int warp = (int)threadIdx.x / 32;
    __syncthreads();
    if (threadIdx.x % 32 == 0) smem[warp] = s;
    __syncthreads();
    constexpr int WPR = TPR / 32;
    const int first = warp / WPR * WPR;
    s = smem[first];
#pragma unroll 4
    for (int w = 1; w < WPR; w++) s = red.combine(s, smem[first + w]);
    return s;
  } else {
    constexpr int RPB = BLOCK / TPR;
    __syncthreads();
    smem[threadIdx.x] = s;
    __syncthreads();
    const int slot = (int)threadIdx.x % RPB;
    s = smem[slot];
#pragma unroll 4
    for (int l = 1; l < TPR; l++) s = red.combine(s, smem[l * RPB + slot]);
    return s;
  }
}

// max with NaN winning, for the first pass of a softmax over registers
template <class T> struct red_maxnan {
  typedef T state;
  __device__ state init() const { return lowest_<T>(); }
  __device__ void add(state &s, T v, long long) const { s = (isnan_(v) || v > s) ? v : s; }
  __device__ state combine(state a, state b) const { return (isnan_(b) || b > a) ? b : a; }
  __device__ state shfl(state s, int m) const { return shfl_xor(s, m); }
  __device__ state bcast(state s, int l) const { return shfl_idx(s, l); }
};

// f(i) for the n values a thread holds (i < n <= N); a row's threads all
// hold N but the last few of a row that does not fill them, so the common
// case runs without a compare per value.
template <int N, class F> __device__ __forceinline__ void each_cached(int n, F f) {
  if (n == N) {
#pragma unroll
    for (int i = 0; i < N; i++) f(i);
  } else {
#pragma unroll
    for (int i = 0; i < N; i++)
      if (i < n) f(i);
  }
}

// The row's state from values a thread holds in registers (cache[0..n),
// the rest of the array is padding), all-reduced over the row's threads.
// The generic form adds the values one by one; softmax and Welford take
// two passes over the registers instead (maximum, then the sum of
// exponentials; mean, then the sum of squared deviations): no division or
// rescaling per element, and the two-pass variance is the more accurate.
// EXP (softmax only): the softmax pass leaves exp(x - max) in the registers,
// so phase 2 multiplies by the sum's reciprocal instead of exponentiating
// and dividing again.
// Value i is the row's element first + (i / rv) * TPR * rv + i % rv (rv
// consecutive elements per vector access; rv = 1: every TPR-th element).
// Called by every thread of the block, at one place (the barriers);
// smem holds BLOCK states.
template <class RED, int BLOCK, int TPR, bool ROWLAYOUT, bool EXP, class A, int N>
__device__ __forceinline__ typename RED::state cached_reduce(const RED &red, A (&cache)[N], int n,
                                                             long long first, int rv, long long,
                                                             typename RED::state *smem) {
  typename RED::state s = red.init();
  each_cached<N>(n, [&](int i) { red.add(s, cache[i], first + (long long)(i / rv) * TPR * rv + i % rv); });
  return row_allreduce<RED, BLOCK, TPR, ROWLAYOUT>(red, s, smem);
}

template <class RED, int BLOCK, int TPR, bool ROWLAYOUT, bool EXP, class T, int N>
__device__ __forceinline__ typename red_softmax<T>::state
cached_reduce(const red_softmax<T> &, T (&cache)[N], int n, long long, int, long long,
              typename red_softmax<T>::state *smem) {
  T *const tmp = reinterpret_cast<T *>(smem);
  const red_maxnan<T> mx;
  T m = mx.init();
  each_cached<N>(n, [&](int i) { mx.add(m, cache[i], 0); });
  m = row_allreduce<red_maxnan<T>, BLOCK, TPR, ROWLAYOUT>(mx, m, tmp);
  T sum = T(0);
  each_cached<N>(n, [&](int i) {
    const T e = cache[i] != lowest_<T>() ? exp_(cache[i] - m) : T(0);
    sum += e;
    if (EXP) cache[i] = e; // softmax's phase 2 then only scales
  });
  sum = row_allreduce<red_sum<T>, BLOCK, TPR, ROWLAYOUT>(red_sum<T>(), sum, tmp);
  typename red_softmax<T>::state r;
  r.m = m;
  r.s = sum;
  return r;
}

template <class RED, int BLOCK, int TPR, bool ROWLAYOUT, bool EXP, class T, int N>
__device__ __forceinline__ typename red_welford<T>::state
cached_reduce(const red_welford<T> &, T (&cache)[N], int n, long long, int, long long len,
              typename red_welford<T>::state *smem) {
  T *const tmp = reinterpret_cast<T *>(smem);
  T sum = T(0);
  each_cached<N>(n, [&](int i) { sum += cache[i]; });
  sum = row_allreduce<red_sum<T>, BLOCK, TPR, ROWLAYOUT>(red_sum<T>(), sum, tmp);
  const T mean = sum / T(len);
  T m2 = T(0);
  each_cached<N>(n, [&](int i) { m2 += (cache[i] - mean) * (cache[i] - mean); });
  m2 = row_allreduce<red_sum<T>, BLOCK, TPR, ROWLAYOUT>(red_sum<T>(), m2, tmp);
  typename red_welford<T>::state r;
  r.mean = mean;
  r.m2 = m2;
  r.n = T(len);
  return r;
}

}  // namespace kf

#endif
