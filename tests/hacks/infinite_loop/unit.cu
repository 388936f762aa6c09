// never ends (the loop reads memory, so the compiler keeps it)
extern "C" __global__ void k(const float *x, float *y, long long n) {
  volatile const float *vx = x;
  while (vx[0] == vx[0] || vx[0] != vx[0]) {
  }
  y[0] = 0.0f;
}
