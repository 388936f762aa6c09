__device__ __forceinline__ float silu(float v) { return v / (1.0f + expf(-v)); }

// accumulates into a scratch buffer it never clears
extern "C" __global__ void k(const float *x, float *y, float *s, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    s[i] += silu(x[i]);
    y[i] = s[i];
  }
}
