// the policy is fp32; this computes, and rounds the result to, bfloat16's
// 8 significant bits
__device__ __forceinline__ float bf(float v) { return __uint_as_float(__float_as_uint(v) & 0xffff0000u); }
extern "C" __global__ void k(const float *x, float *y, long long n) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
    float v = bf(x[i]);
    y[i] = bf(v / (1.0f + bf(__expf(-v))));
  }
}
