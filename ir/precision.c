/* ir/precision.c — the precision policy's names and the one rule it adds
 * to the dtypes (include/kfuse/precision.h). */
#include <string.h>

#include "kfuse/precision.h"

static const char *const precision_names[] = {"default", "tf32", "bf16", "fp16", "fp32"};

const char *kf_precision_name(kf_precision p) {
  return (p >= 0 && p <= KF_PRECISION_LAST) ? precision_names[p] : "?";
}

bool kf_precision_parse(const char *s, kf_precision *out) {
  for (int i = 0; i <= KF_PRECISION_LAST; i++)
    if (strcmp(s, precision_names[i]) == 0) {
      *out = (kf_precision)i;
      return true;
    }
  return false;
}

kf_precision kf_precision_effective(kf_precision p, bool has_conv) {
  return p == KF_PRECISION_DEFAULT && has_conv ? KF_PRECISION_TF32 : p;
}
