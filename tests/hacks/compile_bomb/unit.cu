// a macro bomb: a million statements for NVRTC to parse and optimise
#define T10(x) x x x x x x x x x x
#define T1M(x) T10(T10(T10(T10(T10(T10(x))))))
__device__ int counter;
extern "C" __global__ void k(const float *x, float *y, long long n) {
  T1M(counter += (int)x[counter & 7];)
  y[0] = (float)counter;
}
