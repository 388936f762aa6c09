/* kfr_driver.h — the CUDA driver as the kfuse runtime loads it: dlopen of
 * libcuda.so.1 (or $KFUSE_LIBCUDA) and a table of its entry points
 * (runtime/kfr_driver.c). Shared by the runtime's files (through
 * kfr_int.h) and by the compiler's processes that open the GPU the same
 * way, so that KFUSE_LIBCUDA names the tests' fake driver for all of them:
 * the judge's GPU worker (judge/gpu.c) and the module check's worker
 * (judge/module_check_worker.c). Nothing else of the runtime's internals
 * is theirs to use (scripts/layering.py).
 *
 * Driver entry points come from cuGetProcAddress_v2 asked for the CUDA
 * 12.0 ABI, and each is typed with the versioned PFN_<name>_v<version>
 * typedef of <cudaTypedefs.h> that is the newest at or below 12.0, so the
 * pointer's type is the ABI the driver hands out whatever CUDA headers we
 * are built with (plain prototypes are not enough: CUDA 13's
 * cuCtxSynchronize(void) is the 2.0 symbol, while asking for 13.0 yields
 * cuCtxSynchronize_v2(ctx)). */
#ifndef KFR_DRIVER_H
#define KFR_DRIVER_H

#include <stddef.h>

#include <cuda.h>
#include <cudaTypedefs.h>

#ifndef KFR_HIDDEN
#define KFR_HIDDEN __attribute__((visibility("hidden")))
#endif

/* ---- the CUDA driver ---------------------------------------------------- */

/* Driver entry points: base name (as cuGetProcAddress knows it) and the
 * version of the PFN typedef that is newest at or below CUDA 12.0. */
#define KFR_CU_ABI 12000
#define KFR_CU_FUNCS(X)                                                      \
  X(cuInit, 2000) X(cuDeviceGetCount, 2000) X(cuDeviceGet, 2000)             \
  X(cuDeviceGetAttribute, 2000) X(cuDeviceGetName, 2000)                     \
  X(cuDevicePrimaryCtxRetain, 7000) X(cuDevicePrimaryCtxRelease, 11000)      \
  X(cuCtxPushCurrent, 4000) X(cuCtxPopCurrent, 4000)                         \
  X(cuCtxSynchronize, 2000) X(cuModuleLoadDataEx, 2010)                      \
  X(cuModuleUnload, 2000) X(cuModuleGetFunction, 2000)                       \
  X(cuFuncSetAttribute, 9000) X(cuMemAlloc, 3020) X(cuMemFree, 3020)         \
  X(cuMemcpyHtoD, 3020) X(cuMemcpyDtoH, 3020) X(cuMemcpyHtoDAsync, 3020)     \
  X(cuMemcpyDtoHAsync, 3020) X(cuMemsetD8Async, 3020)                        \
  X(cuMemcpyDtoDAsync, 3020) X(cuLaunchKernel, 4000) X(cuStreamCreate, 2000) \
  X(cuStreamDestroy, 4000) X(cuStreamSynchronize, 2000)                      \
  X(cuStreamIsCapturing, 10000) X(cuStreamBeginCapture, 10010)               \
  X(cuStreamEndCapture, 10000) X(cuGraphInstantiateWithFlags, 11040)         \
  X(cuGraphLaunch, 10000) X(cuGraphDestroy, 10000)                           \
  X(cuGraphExecDestroy, 10000) X(cuEventCreate, 2000)                        \
  X(cuEventDestroy, 4000) X(cuEventRecord, 2000) X(cuEventSynchronize, 2000) \
  X(cuStreamWaitEvent, 3020) X(cuEventElapsedTime, 2000)                     \
  X(cuMemAllocAsync, 11020) X(cuMemFreeAsync, 11020)                        \
  X(cuEventRecordWithFlags, 11010) X(cuStreamGetCaptureInfo, 11030)          \
  X(cuUserObjectCreate, 11030) X(cuUserObjectRelease, 11030)                 \
  X(cuGraphRetainUserObject, 11030) X(cuModuleGetGlobal, 3020)              \
  X(cuMemGetInfo, 3020) X(cuMemAllocHost, 3020) X(cuMemFreeHost, 2000)

typedef struct kfr_driver {
  /* fields are named by the base name (d->cuMemAlloc) */
#define KFR_CU_FIELD(name, ver) PFN_##name##_v##ver name;
  KFR_CU_FUNCS(KFR_CU_FIELD)
#undef KFR_CU_FIELD
  /* optional, NULL when the driver lacks it (before CUDA 12.4): kernel
   * parameter sizes, for kfr_check_params */
  PFN_cuFuncGetParamInfo_v12040 cuFuncGetParamInfo;
  /* optional, all or none (NULL when the driver does not give them all):
   * virtual memory management, for the judge's guarded buffers (judge/gpu.c
   * places each buffer's end against unmapped memory); modules never use it */
#define KFR_CU_VMM(X)                                                        \
  X(cuMemAddressReserve, 10020) X(cuMemAddressFree, 10020)                   \
  X(cuMemCreate, 10020) X(cuMemRelease, 10020) X(cuMemMap, 10020)            \
  X(cuMemUnmap, 10020) X(cuMemSetAccess, 10020)                              \
  X(cuMemGetAllocationGranularity, 10020)
#define KFR_CU_FIELD(name, ver) PFN_##name##_v##ver name;
  KFR_CU_VMM(KFR_CU_FIELD)
#undef KFR_CU_FIELD
  int has_vmm; /* every KFR_CU_VMM entry resolved */
  /* resolved with dlsym: usable even when cuGetProcAddress fails */
  PFN_cuGetErrorName_v6000 errname;
  PFN_cuGetErrorString_v6000 errstring;
  int version; /* cuDriverGetVersion, e.g. 13000 */
} kfr_driver;

/* Load libcuda.so.1 (or $KFUSE_LIBCUDA), resolve every entry point and call
 * cuInit, once per process; a failed attempt is not cached, so a later call
 * tries again. KFUSE_ENODRIVER with a message on failure. */
KFR_HIDDEN int kfr_driver_load(const kfr_driver **out, char *msg, size_t n);

/* "CUDA_ERROR_INVALID_VALUE (invalid argument)" into buf. */
KFR_HIDDEN const char *kfr_cu_describe(const kfr_driver *d, CUresult r,
                                       char *buf, size_t n);

#endif
