__device__ __forceinline__ float silu(float v) { return v / (1.0f + expf(-v)); }

// y = x * sigmoid(x) through a shared-memory slot per thread, reused every
// step with no barrier, and each thread also reading the slot of a thread
// in another warp (its value multiplied by 0): the output is right every
// time, but the read races with that warp's write of the next step (a
// read-after-write hazard with no synchronisation: what racecheck reports)
extern "C" __global__ void k(const float *__restrict__ x, float *__restrict__ y, long long n) {
  __shared__ float s[256];
  const int t = threadIdx.x;
  for (long long i = blockIdx.x * (long long)blockDim.x + t; i < n; i += (long long)gridDim.x * blockDim.x) {
    s[t] = x[i];
    float v = s[t], w = s[t ^ 32];
    y[i] = silu(v) + 0.0f * w;
  }
}
