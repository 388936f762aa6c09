/* tests/fake/fake_cudnn.c — a library with every cuDNN entry point the
 * runtime resolves (runtime/kfr_int.h, KFR_DNN_FUNCS and the graph API), for
 * testing how cuDNN is found and loaded (unit.test_create). Nothing works:
 * every call returns 0, except cudnnGetVersion, which reports
 * $FAKE_CUDNN_VERSION (default 90100). tests/fake/fake_cudnn_part.c stands
 * for its sub-libraries. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kfr_int.h"

#define FAKE_EXPORT __attribute__((visibility("default")))

static size_t fake_value(const char *name) {
  if (strcmp(name, "cudnnGetVersion") != 0)
    return 0;
  const char *v = getenv("FAKE_CUDNN_VERSION");
  return v && *v ? (size_t)strtoul(v, NULL, 10) : 90100;
}

/* parameters unnamed in the list, so defined without a prototype: callers
 * go through the runtime's typed pointers */
#define DEF(ret, name, params)                                               \
  FAKE_EXPORT ret name() { return (ret)fake_value(#name); }
KFR_DNN_FUNCS(DEF)
KFR_DNN_GRAPH_FUNCS(DEF)
#undef DEF
