/* kfr_params.c — each launch's arguments against the kernel it launches
 * (create time, after the kernels are resolved).
 *
 * cuLaunchKernel reads one pointer per parameter from the argument array
 * and copies as many bytes as the kernel declares, so a plan whose
 * arguments disagree with its kernel in count or size makes the kernel
 * read garbage (or the driver read past the array) instead of failing. The
 * plan validator cannot see the kernels' signatures; the driver can:
 * cuFuncGetParamInfo (CUDA 12.4) gives each parameter's size, and answers
 * CUDA_ERROR_INVALID_VALUE past the last one. A driver without it (loaded
 * optionally, runtime/kfr_driver.c) skips this check.
 *
 * The probe one past the plan's last argument is the only way to see a
 * kernel that takes more (the 13.0 driver has no parameter count), and a
 * tool that reports failed API calls (compute-sanitizer) lists each one; it
 * is made once per kernel, not once per step that launches it. */
#include <stdlib.h>

#include "kfr_int.h"

static const char *kind_name(uint32_t k) {
  switch (k) {
  case KFR_ARG_PTR: return "a pointer";
  case KFR_ARG_I64: return "an I64";
  case KFR_ARG_I32: return "an I32";
  case KFR_ARG_F32: return "an F32";
  case KFR_ARG_F64: return "an F64";
  default: return "an unknown";
  }
}

/* What cuLaunchKernel copies for an argument of this kind. */
static size_t kind_size(uint32_t k) {
  switch (k) {
  case KFR_ARG_I32:
  case KFR_ARG_F32: return 4;
  default: return 8; /* PTR, I64, F64 */
  }
}

int kfr_check_params(kfuse_model *m) {
  const kfr_driver *cu = m->cu;
  if (!cu->cuFuncGetParamInfo)
    return KFUSE_OK;
  /* per kernel: 0 not probed yet, else its parameter count + 1 */
  uint32_t *probed = calloc(m->h.n_kernels ? m->h.n_kernels : 1, sizeof *probed);
  if (!probed)
    return kfr_fail(m, KFUSE_ENOMEM, "out of host memory checking kernel parameters");
  int rc = KFUSE_OK;
  for (uint32_t s = 0; s < m->h.n_steps && rc == KFUSE_OK; s++) {
    const kfr_step *st = &m->steps[s];
    if (st->kind != KFR_STEP_LAUNCH)
      continue;
    CUfunction f = m->funcs[st->kernel];
    const char *kname = m->strings + m->kernels[st->kernel].name;
    const kfr_arg *a = &m->args[st->first_arg];
    char why[256];
    /* the probe past the end: once per kernel; a later launch of it must
     * pass the count that probe confirmed */
    uint32_t known = probed[st->kernel];
    if (known && known - 1 != st->n_args) {
      rc = kfr_fail(m, KFUSE_EPLAN, "plan: step %u (%s): kernel '%s' takes "
                    "%u parameters, the plan passes %u arguments", s,
                    kfr_step_name(m, s), kname, known - 1, st->n_args);
      break;
    }
    uint32_t last = known ? st->n_args : st->n_args + 1;
    for (uint32_t i = 0; i < last && rc == KFUSE_OK; i++) {
      size_t off = 0, size = 0;
      CUresult r = cu->cuFuncGetParamInfo(f, i, &off, &size);
      if (i == st->n_args) { /* past the plan's last argument */
        if (r == CUDA_SUCCESS)
          rc = kfr_fail(m, KFUSE_EPLAN, "plan: step %u (%s): kernel '%s' "
                        "takes more than the %u arguments the plan passes",
                        s, kfr_step_name(m, s), kname, st->n_args);
        break; /* INVALID_VALUE (no such parameter), as expected */
      }
      if (r == CUDA_ERROR_INVALID_VALUE)
        rc = kfr_fail(m, KFUSE_EPLAN, "plan: step %u (%s): kernel '%s' takes "
                      "%u parameters, the plan passes %u arguments", s,
                      kfr_step_name(m, s), kname, i, st->n_args);
      else if (r != CUDA_SUCCESS)
        rc = kfr_fail(m, KFUSE_ECUDA, "cuFuncGetParamInfo failed (kernel '%s', "
                      "parameter %u, step %u): %s", kname, i, s,
                      kfr_cu_describe(cu, r, why, sizeof why));
      else if (size != kind_size(a[i].kind))
        rc = kfr_fail(m, KFUSE_EPLAN, "plan: step %u (%s): kernel '%s' "
                      "parameter %u is %zu bytes, the plan passes %s argument "
                      "(%zu bytes)", s, kfr_step_name(m, s), kname, i, size,
                      kind_name(a[i].kind), kind_size(a[i].kind));
    }
    if (rc == KFUSE_OK)
      probed[st->kernel] = st->n_args + 1;
  }
  free(probed);
  return rc;
}
