// writes through a pointer into unmapped memory
extern "C" __global__ void k(const float *x, float *y, long long n) {
  float *bad = reinterpret_cast<float *>(0x10);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) bad[i] = x[i];
}
