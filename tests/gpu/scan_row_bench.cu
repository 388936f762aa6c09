// tests/gpu/scan_row_bench.cu — the arithmetic and memory accesses of
// agent/templates/scan.cu's row layout, written out by hand for f32 lines
// of KernelBench 89's shape ([32768, 32768], dim 1), timed against a
// device-to-device copy of the same bytes. It measures the design, not
// kfuse's generated kernel (that one adds the prologue/epilogue bodies,
// run-time alignment checks and reverse/exclusive forms), so a gap between
// the two points at the generated code.
//
//   nvcc -arch=sm_90 -O3 -o scan_row_bench tests/gpu/scan_row_bench.cu && ./scan_row_bench
//
// 256 threads a line; a tile is 8 warps x 4 slices x 32 lanes x 4 floats:
// each thread loads its 4 vectors, scans them in registers, the slices'
// totals are scanned across lanes with shuffles, the warps' through shared
// memory (double-buffered: one barrier a tile), the total carries on.
#include <cstdio>
#include <cstdlib>

#define NV 4

__global__ void __launch_bounds__(256, 4) scan_rows(const float *__restrict__ x, float *__restrict__ y, int len) {
  const int t = threadIdx.x, lane = t & 31, w = t >> 5;
  __shared__ float sm[2][8];
  int par = 0;
  const float *xr = x + (long)blockIdx.x * len;
  float *yr = y + (long)blockIdx.x * len;
  float carry = 0;
  for (int base = 0; base < len; base += 4096) {
    float4 a[NV];
    for (int v = 0; v < NV; v++) a[v] = *(const float4 *)(xr + base + ((w * NV + v) * 32 + lane) * 4);
    float pre[NV], wrun = 0;
    for (int v = 0; v < NV; v++) {
      a[v].y += a[v].x;
      a[v].z += a[v].y;
      a[v].w += a[v].z;
      float s = a[v].w;
      for (int m = 1; m < 32; m *= 2) {
        float q = __shfl_up_sync(~0u, s, m);
        if (lane >= m) s += q;
      }
      float e = __shfl_up_sync(~0u, s, 1);
      if (!lane) e = 0;
      pre[v] = wrun + e;
      wrun += __shfl_sync(~0u, s, 31);
    }
    if (!lane) sm[par][w] = wrun;
    __syncthreads();
    float before = 0, all = 0;
    for (int i = 0; i < 8; i++) {
      if (i == w) before = all;
      all += sm[par][i];
    }
    par ^= 1;
    const float p0 = carry + before;
    carry += all;
    for (int v = 0; v < NV; v++) {
      const float p = p0 + pre[v];
      *(float4 *)(yr + base + ((w * NV + v) * 32 + lane) * 4) =
          make_float4(p + a[v].x, p + a[v].y, p + a[v].z, p + a[v].w);
    }
  }
}

int main() {
  const int rows = 32768, len = 32768;
  const size_t n = (size_t)rows * len;
  float *x, *y, ms;
  if (cudaMalloc(&x, n * 4) != cudaSuccess || cudaMalloc(&y, n * 4) != cudaSuccess) {
    fprintf(stderr, "cudaMalloc failed\n");
    return 1;
  }
  float *h = (float *)malloc((size_t)len * 4);
  for (int i = 0; i < len; i++) h[i] = 1;
  cudaMemcpy(x, h, (size_t)len * 4, cudaMemcpyHostToDevice); // row 0: ones
  cudaEvent_t a, b;
  cudaEventCreate(&a);
  cudaEventCreate(&b);
  for (int r = 0; r < 2; r++) {
    scan_rows<<<rows, 256>>>(x, y, len);
    cudaEventRecord(a);
    for (int i = 0; i < 10; i++) scan_rows<<<rows, 256>>>(x, y, len);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    cudaEventElapsedTime(&ms, a, b);
    printf("scan %.3f ms %.2f TB/s (read + written)\n", ms / 10, n * 8 / ms / 1e8);
    cudaEventRecord(a);
    for (int i = 0; i < 10; i++) cudaMemcpy(y + n / 2, x, n * 2, cudaMemcpyDeviceToDevice);
    cudaEventRecord(b);
    cudaEventSynchronize(b);
    cudaEventElapsedTime(&ms, a, b);
    printf("copy %.3f ms %.2f TB/s (read + written)\n", ms / 10, n * 4 / ms / 1e8);
  }
  scan_rows<<<1, 256>>>(x, y, len);
  cudaMemcpy(h, y, (size_t)len * 4, cudaMemcpyDeviceToHost);
  int bad = h[0] != 1 || h[4095] != 4096 || h[len - 1] != len;
  printf("row 0 of ones: %g %g %g%s\n", h[0], h[4095], h[len - 1], bad ? " WRONG" : "");
  return bad;
}
