/* tests/unit/test_plans.h — pieces of hand-written plans that more than one
 * runtime test builds (test_runtime.c checks what the writer and validator
 * make of them, test_runtime_fake.c runs them on the fake driver). */
#ifndef KFUSE_TEST_PLANS_H
#define KFUSE_TEST_PLANS_H

#include <string.h>

#include "kfr_plan.h"

/* A grouped 2-d convolution with cuDNN's fused bias + residual + ReLU:
 * x [2, 4, 6, 6] * w [8, 2, 3, 3] (groups 2, stride 2, pad 1) -> y [2, 8, 3, 3],
 * TF32 compute, a 4096-byte workspace. */
static inline void test_grouped_conv(kfr_conv *c) {
  memset(c, 0, sizeof *c);
  c->nd = 2;
  c->dtype = KFUSE_DTYPE_F32;
  c->compute = KFR_COMPUTE_32F_TF32;
  c->activation = KFR_ACT_RELU;
  c->has_bias = 1;
  c->has_z = 1;
  c->n = 2, c->c = 4, c->k = 8, c->groups = 2;
  for (int d = 0; d < 3; d++) {
    c->in[d] = c->filter[d] = c->out[d] = c->stride[d] = c->dilation[d] = 1;
    c->pad[d] = 0;
  }
  c->in[0] = c->in[1] = 6;
  c->filter[0] = c->filter[1] = 3;
  c->out[0] = c->out[1] = 3;
  c->pad[0] = c->pad[1] = 1;
  c->stride[0] = c->stride[1] = 2;
  c->alpha1 = 1.0;
  c->alpha2 = 1.0;
  c->workspace_bytes = 4096;
}

/* cuBLASLt's [4, 8] @ [8, 3] in full fp32 with bias and ReLU, a
 * 1024-byte workspace. */
static inline void test_small_gemm(kfr_gemm *g) {
  memset(g, 0, sizeof *g);
  g->m = 4, g->n = 3, g->k = 8, g->batch = 1;
  g->lda = 8, g->ldb = 3, g->ldc = 3, g->ldd = 3;
  g->dtype = KFUSE_DTYPE_F32;
  g->compute = KFR_COMPUTE_32F;
  g->epilogue = KFR_EPI_RELU_BIAS;
  g->alpha = 1.0;
  g->workspace_bytes = 1024;
}

#endif
