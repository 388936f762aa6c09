// tests/gpu/smoke_kernels.cu — kernels for the runtime's GPU smoke test
// (tests/gpu/runtime_smoke.c). scripts/gpu_runtime_smoke.sh compiles them
// with `nvcc -cubin` for the machine's GPU; the test puts the cubin in its
// plans. Each kernel exercises one part of the launch path: pointer args,
// every scalar arg kind, launch bounds (to provoke a launch error), and
// dynamic shared memory above the 48 KiB default.

// c = a + b
extern "C" __global__ void __launch_bounds__(256)
vadd_f32(const float *a, const float *b, float *c, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    c[i] = a[i] + b[i];
}

// y = x * a + b + k, with a float, b a double and k an int: a wrong size
// or order of any scalar parameter changes the result.
extern "C" __global__ void __launch_bounds__(256)
axpb_f32(const float *x, float *y, float a, double b, int k, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = (float)((double)(x[i] * a) + b + (double)k);
}

// Each block reverses its chunk of `per_block` floats through dynamic
// shared memory (per_block * 4 bytes, more than 48 KiB in the test).
extern "C" __global__ void __launch_bounds__(1024)
reverse_chunks_f32(const float *x, float *y, int per_block) {
  extern __shared__ float chunk[];
  const float *src = x + (long long)blockIdx.x * per_block;
  float *dst = y + (long long)blockIdx.x * per_block;
  for (int i = threadIdx.x; i < per_block; i += blockDim.x)
    chunk[i] = src[i];
  __syncthreads();
  for (int i = threadIdx.x; i < per_block; i += blockDim.x)
    dst[i] = chunk[per_block - 1 - i];
}
