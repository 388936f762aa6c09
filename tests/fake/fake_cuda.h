/* tests/fake/fake_cuda.h — the control functions of the fake CUDA driver
 * (fake_cuda.c). Tests open the library by the path they give the
 * runtime (KFUSE_LIBCUDA) and look these up with dlsym, so that both see
 * the same copy; the typedefs are for that. */
#ifndef KFUSE_FAKE_CUDA_H
#define KFUSE_FAKE_CUDA_H

/* Clear the log, the injected failures and the launch hold (not the
 * counters of fake_cuda_stats: tests compare them before and after). */
void fake_cuda_reset(void);
typedef void (*fake_cuda_reset_fn)(void);
/* The whole log, one call a line (valid until the next call). */
const char *fake_cuda_log(void);
typedef const char *(*fake_cuda_log_fn)(void);
/* How many log lines contain needle. */
int fake_cuda_count(const char *needle);
typedef int (*fake_cuda_count_fn)(const char *);
/* A "-- text" line in the log, to find phases by. */
void fake_cuda_mark(const char *text);
typedef void (*fake_cuda_mark_fn)(const char *);
/* Fail call with result after letting skip calls through, times times
 * (-1: from then on). */
void fake_cuda_fail(const char *call, int skip, int times, int result);
typedef void (*fake_cuda_fail_fn)(const char *, int, int, int);
/* on: cuLaunchKernel waits until fake_cuda_block_launches(0). */
void fake_cuda_block_launches(int on);
typedef void (*fake_cuda_block_launches_fn)(int);
/* Launches waiting now. */
int fake_cuda_blocked(void);
typedef int (*fake_cuda_blocked_fn)(void);
/* Device allocations alive now; whether p is one of them. */
int fake_cuda_live_allocs(void);
typedef int (*fake_cuda_live_allocs_fn)(void);
int fake_cuda_is_live(unsigned long long p);
typedef int (*fake_cuda_is_live_fn)(unsigned long long);

/* Counters since the library was loaded. */
typedef struct fake_stats {
  long live;          /* device allocations and handles (modules, functions,
                         streams, events, graphs, execs, user objects) alive */
  long launches;      /* cuLaunchKernel calls that succeeded */
  long param_queries; /* cuFuncGetParamInfo calls */
  long htod_bytes;    /* bytes copied host to device */
} fake_stats;
void fake_cuda_stats(fake_stats *out);
typedef void (*fake_cuda_stats_fn)(fake_stats *);

#endif
