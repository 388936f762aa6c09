#include <cuda_fp16.h>
#include <mma.h>

// y = relu(x @ w + b), x [128, 256], w [256, 256], b [256], all fp16 and
// row-major; tensor cores (wmma 16x16x16, fp32 accumulation), the bias and
// the relu applied to the accumulator before one rounding to fp16. A block
// of four warps computes a 32x32 tile of y, each warp a 16x16 quarter.
// wmma loads need 32-byte aligned addresses: where x or w is not (a view
// of a caller's tensor may start at any element, the judge's set 2), the
// block computes its tile with plain fp32 arithmetic instead.
using namespace nvcuda;

#define M 128
#define K 256
#define N 256

extern "C" __global__ void k(const __half *__restrict__ x, const __half *__restrict__ w,
                             const __half *__restrict__ b, __half *__restrict__ y) {
  __shared__ float acc[4][16 * 16];
  if (((unsigned long long)x | (unsigned long long)w) % 32) {
    for (int e = threadIdx.x; e < 32 * 32; e += blockDim.x) {
      int r = blockIdx.y * 32 + e / 32, c = blockIdx.x * 32 + e % 32;
      float v = 0.0f;
      for (int kk = 0; kk < K; kk++) v += __half2float(x[(size_t)r * K + kk]) * __half2float(w[(size_t)kk * N + c]);
      v += __half2float(b[c]);
      y[(size_t)r * N + c] = __float2half_rn(v > 0.0f ? v : 0.0f);
    }
    return;
  }
  int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int row = blockIdx.y * 32 + (warp / 2) * 16;
  int col = blockIdx.x * 32 + (warp % 2) * 16;
  wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> fa;
  wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> fb;
  wmma::fragment<wmma::accumulator, 16, 16, 16, float> fc;
  wmma::fill_fragment(fc, 0.0f);
  for (int kk = 0; kk < K; kk += 16) {
    wmma::load_matrix_sync(fa, x + (size_t)row * K + kk, K);
    wmma::load_matrix_sync(fb, w + (size_t)kk * N + col, N);
    wmma::mma_sync(fc, fa, fb, fc);
  }
  wmma::store_matrix_sync(acc[warp], fc, 16, wmma::mem_row_major);
  __syncwarp();
  for (int e = lane; e < 256; e += 32) {
    int r = e / 16, c = e % 16;
    float v = acc[warp][e] + __half2float(b[col + c]);
    y[(size_t)(row + r) * N + col + c] = __float2half_rn(v > 0.0f ? v : 0.0f);
  }
}
