/* kfuse/precision.h — the precision policy (ir/precision.c): what a
 * compile may compute in lower precision than the model's dtypes say. One
 * definition for the partitioner (it is part of every group's key), the
 * built-in templates, the judge's tolerances and the module check's
 * bounds. */
#ifndef KFUSE_PRECISION_H
#define KFUSE_PRECISION_H

#include <stdbool.h>

#include "kfuse/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum kf_precision {
  KF_PRECISION_DEFAULT = 0, /* PyTorch eager defaults: fp32 matmul in full
                               precision, TF32 allowed in convolutions */
  KF_PRECISION_TF32 = 1,    /* TF32 in matmul and convolution */
  KF_PRECISION_BF16 = 2,    /* compute matmul/conv in bf16, fp32 accumulate */
  KF_PRECISION_FP16 = 3,
  KF_PRECISION_FP32 = 4,    /* strict fp32: no TF32 anywhere (PyTorch with
                               torch.backends.cudnn.allow_tf32 = False) */
} kf_precision;

#define KF_PRECISION_LAST KF_PRECISION_FP32

KF_API const char *kf_precision_name(kf_precision p);
/* "default", "tf32", "bf16", "fp16", "fp32"; returns false when unknown. */
KF_API bool kf_precision_parse(const char *s, kf_precision *out);
/* The precision a computation under policy p may use: the default policy
 * lets a convolution use TF32 (PyTorch's default,
 * torch.backends.cudnn.allow_tf32), so for one with a convolution it is
 * KF_PRECISION_TF32; otherwise p itself. */
KF_API kf_precision kf_precision_effective(kf_precision p, bool has_conv);

#ifdef __cplusplus
}
#endif
#endif
