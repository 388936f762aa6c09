#include <cuda_bf16.h>

// y = x * sigmoid(x) on bf16, two elements a thread and step where x and y
// are 4-byte aligned (one at a time where not: a view of a caller's tensor
// may start at any element), computed in fp32 and rounded once (n is even)
extern "C" __global__ void k(const __nv_bfloat16 *__restrict__ x, __nv_bfloat16 *__restrict__ y, long long n) {
  if (((unsigned long long)x | (unsigned long long)y) % 4) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)gridDim.x * blockDim.x) {
      float v = __bfloat162float(x[i]);
      y[i] = __float2bfloat16_rn(v / (1.0f + expf(-v)));
    }
    return;
  }
  const __nv_bfloat162 *x2 = reinterpret_cast<const __nv_bfloat162 *>(x);
  __nv_bfloat162 *y2 = reinterpret_cast<__nv_bfloat162 *>(y);
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n / 2; i += (long long)gridDim.x * blockDim.x) {
    float2 v = __bfloat1622float2(x2[i]);
    v.x = v.x / (1.0f + expf(-v.x));
    v.y = v.y / (1.0f + expf(-v.y));
    y2[i] = __float22bfloat162_rn(v);
  }
}
