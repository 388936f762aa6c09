__device__ __forceinline__ float silu(float v) { return v / (1.0f + expf(-v)); }

// writes the first half of the output only
extern "C" __global__ void k(const float *x, float *y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) if (i < n / 2) y[i] = silu(x[i]);
}
