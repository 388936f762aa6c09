__device__ __forceinline__ float silu(float v) { return v / (1.0f + expf(-v)); }

// y = x * sigmoid(x), then 65536 float atomics adding terms of about one
// unit in the last place (mixed signs) to y[0..63] (1024 each): within any tolerance,
// but the order the atomics land in varies from run to run, and so do the
// bits of y[0..63]
extern "C" __global__ void k(const float *__restrict__ x, float *__restrict__ y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x)
    y[i] = silu(x[i]);
}
extern "C" __global__ void jitter(const float *__restrict__ x, float *y) {
  int t = blockIdx.x * blockDim.x + threadIdx.x;
  int slot = t % 64;
  float term = (x[t] > 0.0f ? 6e-8f : -6e-8f) * (fabsf(y[slot]) + 1e-3f);
  atomicAdd(&y[slot], term);
}
