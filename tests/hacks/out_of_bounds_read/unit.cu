__device__ __forceinline__ float silu(float v) { return v / (1.0f + expf(-v)); }

// reads one input's worth past the end of its input (and multiplies it by 0)
extern "C" __global__ void k(const float *x, float *y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) y[i] = silu(x[i]) + 0.0f * x[i + n];
}
