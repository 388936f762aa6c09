/* judge/judge.c — kf_judge_unit: one unit for one task, start to verdict.
 *
 *   1. read the task (task_read.c) and the unit (agent/unit_io.c, strict);
 *   2. static checks (check.c); a unit that fails them is not compiled;
 *   3. NVRTC for the task's target, the log verbatim on failure;
 *   4. `sets` input sets drawn here, each from its own value range (see
 *      draw()), and their fp64 references from the CPU interpreter
 *      (interp/), in the judging process;
 *   5. the worker (worker.c, gpu.c) verifies and times the built-in unit
 *      and the candidate on the GPU;
 *   6. the floor, the reward and the verdict.
 * The seed of the input sets is drawn from the OS unless the caller fixes
 * it, and never appears in the verdict: a policy that sees verdicts cannot
 * learn the inputs it will be checked on. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "judge_int.h"
#include "kfuse/interp.h"

/* A candidate faster than this fraction of the floor is impossible: the
 * floor's bandwidth is a device-to-device copy's, which a kernel that only
 * reads can beat by a little (measured: below 10% on H100), never by 25%. */
#define FLOOR_SLACK 0.75
/* reward 2 and 3: at least 5% faster than the baseline */
/* tasks of up to this many input and output elements get the CPU
 * interpreter's reference (0.5 s for 10 variants of 4M elements on these
 * machines' CPUs); larger ones the GPU's */
#define KF_JCPU_REF_ELEMS ((int64_t)4 << 20)
/* and of up to this many FLOPs (the task's floor's): the interpreter's
 * convolutions run at about 0.13 GFLOP/s a thread, and a 1 GFLOP
 * pointwise convolution's ten variants took 16 s (MobileNetV1, H100,
 * 2026-11-27); the GPU reference does them in milliseconds */
#define KF_JCPU_REF_FLOPS 2e7
#define SPEEDUP_NEEDED 1.05

void kf_judge_options_init(kf_judge_options *o) {
  memset(o, 0, sizeof *o);
  o->sets = 5;
  o->timeout_s = 60;
  o->max_output_bytes = 64 << 10;
  o->max_scratch_bytes = (int64_t)4 << 30;
  o->builtin = true;
  o->min_time_ms = 200;
  o->sanitize = true;
}

/* ---- input sets ---- */

static uint64_t next(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static double u01(uint64_t *s) { return (double)(next(s) >> 11) / (double)(1ULL << 53); }

/* Set k's floating values: [-1, 1), [0, 1), [-4, 4), (-1, 0], then random
 * signs over six decades (1e-3 to 1e3), repeating; so results keyed on
 * values, sign assumptions and range assumptions all meet a set that
 * breaks them. Integers and bools: 0 or 1 (valid indices of any dim the
 * group indexes, which has at least two entries). */
static double draw(int k, uint64_t *s) {
  double u = u01(s);
  switch (k % 5) {
  case 0: return 2 * u - 1;
  case 1: return u;
  case 2: return 8 * u - 4;
  case 3: return -u;
  default: return (next(s) & 1 ? -1 : 1) * pow(10.0, 6 * u - 3);
  }
}

/* Integers and bools by attempt: {1, 2} first (a divisor is never 0),
 * then {0, 1} (every index of a dim of two or more entries is valid), then
 * all 1; the first the reference accepts is kept */
static double draw_int(int attempt, uint64_t *s) {
  return attempt == 0 ? (double)(1 + (next(s) & 1)) : attempt == 1 ? (double)(next(s) & 1) : 1.0;
}

/* fp32 values of a large input are drawn by several threads, each over
 * its own part from its own stream (seeded from the variant's): drawing a
 * 33M-element input's ten variants took 1.4 s on five threads */
#define F32_PART ((int64_t)1 << 22)
#define F32_THREADS 4

typedef struct f32_part {
  float *f;
  int64_t lo, hi;
  int k;
  bool redraw; /* one element in eight, else all */
  uint64_t s;
} f32_part;

static void *f32_part_main(void *arg) {
  f32_part *j = arg;
  for (int64_t i = j->lo; i < j->hi; i++)
    if (!j->redraw || (next(&j->s) & 7) == 0) j->f[i] = (float)draw(j->k, &j->s);
  return NULL;
}

static void f32_fill(float *f, int64_t n, int k, bool redraw, uint64_t *s) {
  f32_part j[F32_THREADS];
  int np = n < F32_PART ? 1 : F32_THREADS;
  uint64_t base = next(s);
  for (int q = 0; q < np; q++)
    j[q] = (f32_part){f, n * q / np, n * (q + 1) / np, k, redraw, base ^ (0x9e3779b97f4a7c15ULL * (uint64_t)(q + 1))};
  pthread_t th[F32_THREADS];
  bool started[F32_THREADS] = {false};
  for (int q = 1; q < np; q++) started[q] = pthread_create(&th[q], NULL, f32_part_main, &j[q]) == 0;
  f32_part_main(&j[0]);
  for (int q = 1; q < np; q++) {
    if (started[q]) pthread_join(th[q], NULL);
    else f32_part_main(&j[q]); /* no thread for it: here */
  }
}

/* fp32, the common case, is stored directly: the same bits kf_tensor_set
 * stores (its rounding to float is the cast), without its per-element
 * dispatch (a third of drawing a large group's sets) */
static void fill(const kf_jvalue *v, void *p, int k, int attempt, uint64_t *s) {
  int64_t es = (int64_t)kf_dtype_size(v->type.dtype), n = v->bytes / es;
  if (v->type.dtype == KF_DTYPE_F32) {
    f32_fill(p, n, k, false, s);
    return;
  }
  kf_tensor t = {v->type.dtype, 1, {n}, p};
  bool fl = kf_dtype_is_float(v->type.dtype);
  for (int64_t i = 0; i < n; i++) kf_tensor_set(&t, i, fl ? draw(k, s) : draw_int(attempt, s));
}

/* B from A: one element in eight redrawn, at random positions */
static void redraw(const kf_jvalue *v, void *p, int k, int attempt, uint64_t *s) {
  int64_t es = (int64_t)kf_dtype_size(v->type.dtype), n = v->bytes / es;
  if (v->type.dtype == KF_DTYPE_F32) {
    f32_fill(p, n, k, true, s);
    return;
  }
  kf_tensor t = {v->type.dtype, 1, {n}, p};
  bool fl = kf_dtype_is_float(v->type.dtype);
  for (int64_t i = 0; i < n; i++)
    if ((next(s) & 7) == 0) kf_tensor_set(&t, i, fl ? draw(k, s) : draw_int(attempt, s));
}

static void sets_free(const kf_jtask *t, kf_jset *sets, int n) {
  n *= 2;
  for (int k = 0; sets && k < n; k++) {
    for (int i = 0; sets[k].in && i < t->n_in; i++) free(sets[k].in[i]);
    for (int i = 0; sets[k].ref && i < t->n_out; i++) free(sets[k].ref[i]);
    free(sets[k].in);
    free(sets[k].ref);
  }
  free(sets);
}

static void to_buf(void *user, kf_diag_level level, const char *msg);

/* Input sets first, first + step, ...: each one's values A (sets[2p]) and
 * B (sets[2p + 1]) and their references; the job of one thread */
typedef struct pair_job {
  const kf_jtask *t;
  kf_jset *sets;
  int first, step, n_pairs;
  uint64_t seed;
  bool cpu_ref; /* references from the interpreter; else the inputs only */
  kf_status st;
  kf_strbuf log;
} pair_job;

static kf_status variant(const kf_jtask *t, kf_jset *sets, int k, int attempt, uint64_t seed, bool cpu_ref,
                         kf_diag *diag) {
  kf_jset *s = &sets[k];
  kf_tensor *in = calloc((size_t)t->n_in + 1, sizeof *in), *res = calloc((size_t)t->n_out + 1, sizeof *res);
  kf_status st = in && res ? KF_OK : KF_ERR_NOMEM;
  uint64_t rs = seed ^ (0x6b667573ULL * (uint64_t)(k + 1));
  for (int i = 0; i < t->n_in && !st; i++) {
    const kf_jvalue *v = &t->in[i];
    if (!s->in[i]) s->in[i] = malloc((size_t)(v->bytes ? v->bytes : 1));
    in[i].dtype = v->type.dtype;
    in[i].rank = v->type.rank;
    memcpy(in[i].shape, v->type.shape, sizeof in[i].shape);
    if (!s->in[i] || (cpu_ref && kf_tensor_alloc(&in[i]) != KF_OK)) {
      st = KF_ERR_NOMEM;
      break;
    }
    if (k % 2 == 0) {
      fill(v, s->in[i], k / 2, attempt, &rs);
    } else {
      memcpy(s->in[i], sets[k - 1].in[i], (size_t)v->bytes);
      redraw(v, s->in[i], k / 2, attempt, &rs);
    }
    /* the interpreter takes contiguous tensors: gather the extent (one copy
     * when the value is contiguous: kf_jelem_offset is then the index) */
    size_t es = kf_dtype_size(v->type.dtype);
    if (cpu_ref && kf_type_is_contiguous(&v->type))
      memcpy(in[i].data, s->in[i], (size_t)v->numel * es);
    else
      for (int64_t e = 0; cpu_ref && e < v->numel; e++)
        memcpy((char *)in[i].data + e * (int64_t)es, (char *)s->in[i] + kf_jelem_offset(&v->type, e) * (int64_t)es,
               es);
  }
  kf_interp_options io = {0};
  if (!st && cpu_ref) st = kf_interp_run(t->graph, in, t->n_in, res, &io, diag);
  for (int i = 0; i < t->n_out && !st && cpu_ref; i++) {
    if (kf_tensor_numel(&res[i]) != t->out[i].numel) {
      kf_diag_error(diag, "judge: the reference's output %d has %lld elements, the task's %lld", i,
                    (long long)kf_tensor_numel(&res[i]), (long long)t->out[i].numel);
      st = KF_ERR_INTERNAL;
      break;
    }
    free(s->ref[i]);
    s->ref[i] = malloc(sizeof(double) * (size_t)(t->out[i].numel ? t->out[i].numel : 1));
    if (!s->ref[i]) {
      st = KF_ERR_NOMEM;
      break;
    }
    for (int64_t e = 0; e < t->out[i].numel; e++) s->ref[i][e] = kf_tensor_get(&res[i], e);
  }
  for (int i = 0; res && i < t->n_out; i++) kf_tensor_fini(&res[i]);
  for (int i = 0; in && i < t->n_in; i++) kf_tensor_fini(&in[i]);
  free(in);
  free(res);
  return st;
}

static bool has_int_inputs(const kf_jtask *t) {
  for (int i = 0; i < t->n_in; i++)
    if (!kf_dtype_is_float(t->in[i].type.dtype)) return true;
  return false;
}

static void *pair_main(void *arg) {
  pair_job *j = arg;
  const kf_jtask *t = j->t;
  for (int p = j->first; p < j->n_pairs && !j->st; p += j->step) {
    for (int k = 2 * p; k <= 2 * p + 1 && !j->st; k++) {
      kf_jset *s = &j->sets[k];
      s->in = calloc((size_t)t->n_in + 1, sizeof *s->in);
      s->ref = calloc((size_t)t->n_out + 1, sizeof *s->ref);
      if (!s->in || !s->ref) j->st = KF_ERR_NOMEM;
    }
    if (j->st) break;
    int attempts = has_int_inputs(t) && j->cpu_ref ? 3 : 1;
    for (int a = 0; a < attempts; a++) {
      kf_strbuf_fini(&j->log);
      kf_strbuf_init(&j->log);
      kf_diag d;
      kf_diag_init(&d, to_buf, &j->log);
      j->st = variant(t, j->sets, 2 * p, a, j->seed, j->cpu_ref, &d);
      if (!j->st) j->st = variant(t, j->sets, 2 * p + 1, a, j->seed, j->cpu_ref, &d);
      if (!j->st || j->st == KF_ERR_NOMEM) break;
    }
  }
  return NULL;
}

/* Inputs of every set, A and B, and their references (the interpreter's
 * fp64; it keeps no state between runs): 2n variants, the sets spread over
 * threads (one per CPU, at most one per set) */
static kf_status make_sets(const kf_jtask *t, int n, uint64_t seed, bool cpu_ref, kf_jset **out, kf_diag *diag) {
  kf_jset *sets = calloc((size_t)(2 * n), sizeof *sets);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int nt = (int)(cpus < 1 ? 1 : cpus > n ? n : cpus);
  pair_job *jobs = calloc((size_t)nt, sizeof *jobs);
  pthread_t *th = calloc((size_t)nt, sizeof *th);
  bool *started = calloc((size_t)nt, sizeof *started);
  if (!sets || !jobs || !th || !started) {
    free(sets);
    free(jobs);
    free(th);
    free(started);
    kf_diag_error(diag, "judge: out of memory for the input sets");
    return KF_ERR_NOMEM;
  }
  for (int i = 0; i < nt; i++) {
    jobs[i] = (pair_job){t, sets, i, nt, n, seed, cpu_ref, KF_OK, {0}};
    kf_strbuf_init(&jobs[i].log);
    started[i] = i > 0 && pthread_create(&th[i], NULL, pair_main, &jobs[i]) == 0;
  }
  pair_main(&jobs[0]);
  for (int i = 1; i < nt; i++) {
    if (started[i]) pthread_join(th[i], NULL);
    else pair_main(&jobs[i]); /* no thread for it: here */
  }
  kf_status st = KF_OK;
  for (int i = 0; i < nt; i++) {
    if (jobs[i].st && !st) {
      st = jobs[i].st;
      if (jobs[i].log.data) kf_diag_error(diag, "%s", jobs[i].log.data);
      kf_diag_error(diag, st == KF_ERR_NOMEM ? "judge: out of memory for the input sets"
                                             : "judge: the fp64 reference (the CPU interpreter) cannot run this task");
    }
    kf_strbuf_fini(&jobs[i].log);
  }
  free(jobs);
  free(th);
  free(started);
  if (st) {
    sets_free(t, sets, n);
    return st;
  }
  *out = sets;
  return KF_OK;
}

static uint64_t os_seed(void) {
  uint64_t s = 0;
  if (getrandom(&s, sizeof s, 0) != (ssize_t)sizeof s || !s) s = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
  return s;
}

/* ---- messages into a buffer (compile logs, read errors) ---- */

static void to_buf(void *user, kf_diag_level level, const char *msg) {
  kf_strbuf *b = user;
  kf_strbuf_printf(b, "%s%s\n", level == KF_DIAG_ERROR ? "" : level == KF_DIAG_WARNING ? "warning: " : "note: ", msg);
}

/* ---- the floor ---- */

/* Data-sheet dense peak of an H100/H200 SXM for the policy's matmul math
 * (FLOP/s): not measured (docs/AGENT.md says why) */
static double peak_flops(kf_precision p) {
  switch (p) {
  case KF_PRECISION_TF32: return 494.7e12;
  case KF_PRECISION_BF16:
  case KF_PRECISION_FP16: return 989.4e12;
  default: return 66.9e12;
  }
}

/* The peak a task's FLOPs are held to: a convolution the default policy
 * lets run in TF32 (its task's FLOPs are the convolution's) has the TF32
 * one; with the fp32 one, cuDNN's TF32 kernels ran "faster than the floor"
 * and were rejected (KernelBench L3 45's 3x3 convolutions on an H200:
 * 0.20 ms against a 0.29 ms fp32 floor) */
static double task_peak_flops(const kf_jtask *t) {
  return peak_flops(kf_jtask_precision(t));
}

/* ---- the verdict ---- */

static void add_reason(cJSON *reasons, const char *fmt, ...) KF_PRINTF(2, 3);
static void add_reason(cJSON *reasons, const char *fmt, ...) {
  char b[KF_JREASON + 256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b, sizeof b, fmt, ap);
  va_end(ap);
  cJSON_AddItemToArray(reasons, cJSON_CreateString(b));
}

static void add_num_or_null(cJSON *o, const char *k, double v, bool have) {
  if (have) cJSON_AddNumberToObject(o, k, v);
  else cJSON_AddNullToObject(o, k);
}

static cJSON *result_json(const kf_jresult *r, int sets) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddBoolToObject(o, "correct", r->ok);
  cJSON_AddNumberToObject(o, "sets", sets);
  cJSON_AddNumberToObject(o, "sets_passed", r->sets_passed);
  cJSON_AddNumberToObject(o, "max_abs_error", r->max_abs);
  cJSON_AddNumberToObject(o, "max_rel_error_norm", r->max_rel_norm);
  cJSON_AddBoolToObject(o, "deterministic", r->deterministic && r->sets_passed == sets);
  add_num_or_null(o, "ms", r->ms, r->runs > 0);
  add_num_or_null(o, "min_ms", r->min_ms, r->runs > 0);
  add_num_or_null(o, "max_ms", r->max_ms, r->runs > 0);
  cJSON_AddNumberToObject(o, "runs", r->runs);
  cJSON_AddNumberToObject(o, "input_copies", r->copies);
  if (r->reason[0]) cJSON_AddStringToObject(o, "why", r->reason);
  return o;
}

typedef struct unit_state {
  kf_unit *u;
  bool read, checked, compiled, params; /* params: launches match the kernels' parameter lists */
  void *plan; /* library steps: the one-group plan the worker runs */
  size_t plan_bytes;
  bool no_plan; /* library steps, but no plan: not judged (log says why) */
  kf_strbuf log; /* read errors, static-check reasons, compile log */
} unit_state;

/* Read, check and compile the unit in dir */
static void prepare(const char *dir, const kf_jtask *t, const kf_judge_options *o, unit_state *s) {
  kf_strbuf_init(&s->log);
  kf_diag d;
  kf_diag_init(&d, to_buf, &s->log);
  if (kf_unit_read_dir(dir, &s->u, &d) != KF_OK) return;
  s->read = true;
  if (!kf_junit_check(t, s->u, o, &s->log)) return;
  s->checked = true;
  if (kf_jcompile(s->u, &t->target, o, &d) != KF_OK) return;
  s->compiled = true;
  if (!kf_junit_check_params(s->u, &s->log)) return;
  s->params = true;
  if (kf_junit_has_library_steps(s->u) && kf_jplan_build(t, s->u, &s->plan, &s->plan_bytes, &d) != KF_OK)
    s->no_plan = true;
}

static void unit_state_fini(unit_state *s) {
  kf_unit_destroy(s->u);
  free(s->plan);
  kf_strbuf_fini(&s->log);
}

static void emit(cJSON *v, kf_strbuf *out) {
  char *s = cJSON_Print(v);
  if (s) {
    kf_strbuf_printf(out, "%s\n", s);
    cJSON_free(s);
  }
}

/* A verdict that judges nothing: why, and what is known */
static kf_status not_judged(cJSON *v, kf_strbuf *out, kf_status st, const char *why) {
  cJSON_AddBoolToObject(v, "judged", false);
  cJSON_AddStringToObject(v, "why", why);
  emit(v, out);
  cJSON_Delete(v);
  return st;
}

/* ---- what every judgement needs beyond its units ---- */

/* The input sets and their references (the CPU interpreter's, or the
 * built-in fp64 unit's on the GPU, which the worker runs) */
typedef struct jprep {
  kf_jset *sets;
  bool cpu_ref;
  kf_unit *ref_unit;
  void *ref_plan;
  size_t ref_plan_bytes;
  double seconds;
} jprep;

static void prep_fini(const kf_jtask *t, const kf_judge_options *o, jprep *jp) {
  kf_unit_destroy(jp->ref_unit);
  free(jp->ref_plan);
  sets_free(t, jp->sets, o->sets + 1);
  memset(jp, 0, sizeof *jp);
}

/* An error, with the reason in *why, when the task cannot be judged here */
static kf_status prep_sets(const kf_jtask *t, const kf_judge_options *o, jprep *jp, kf_strbuf *why) {
  memset(jp, 0, sizeof *jp);
  double t0 = kf_now_s();
  kf_diag rd;
  kf_diag_init(&rd, to_buf, why);
  /* the reference: the CPU interpreter for tasks up to KF_JCPU_REF_ELEMS
   * elements and KF_JCPU_REF_FLOPS, else (or when the GPU one refuses) the
   * built-in fp64 unit on the GPU */
  int64_t elems = 0;
  for (int i = 0; i < t->n_in; i++) elems += t->in[i].numel;
  for (int i = 0; i < t->n_out; i++) elems += t->out[i].numel;
  jp->cpu_ref = elems <= KF_JCPU_REF_ELEMS && t->floor_flops <= KF_JCPU_REF_FLOPS;
  uint64_t seed = o->seed ? o->seed : os_seed();
  /* host bytes: every variant's inputs and references, twice (here and in
   * the worker's memory file); at most a quarter of the machine's memory */
  double host = 0;
  for (int i = 0; i < t->n_in; i++) host += (double)t->in[i].bytes;
  for (int i = 0; i < t->n_out; i++) host += 8.0 * (double)t->out[i].numel;
  host *= 2.0 * KF_JVARIANTS(o->sets);
  double phys = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
  if (o->max_host_bytes > 0 && host > o->max_host_bytes) {
    kf_strbuf_printf(why,
                     "the input sets and references need %.1f GiB of host memory, over the %.1f GiB allowed (the "
                     "judge draws inputs and checks outputs on the host: a limit of this version)",
                     host / (1 << 30), o->max_host_bytes / (1 << 30));
    return KF_ERR_LIMIT;
  }
  if (phys > 0 && host > phys / 4) {
    kf_strbuf_printf(why,
                     "the input sets and references need %.1f GiB of host memory, over a quarter of this machine's "
                     "%.1f GiB (the judge draws inputs on the host: a limit of this version)",
                     host / (1 << 30), phys / (1 << 30));
    return KF_ERR_LIMIT;
  }
  /* the verified sets and the held-out pair the timing runs on */
  kf_status st = jp->cpu_ref ? make_sets(t, o->sets + 1, seed, true, &jp->sets, &rd) : KF_ERR_LIMIT;
  char gwhy[400] = "";
  if (st == KF_ERR_LIMIT || st == KF_ERR_UNSUPPORTED) {
    kf_status gs = kf_jref_unit(t, &jp->ref_unit, &jp->ref_plan, &jp->ref_plan_bytes, gwhy, sizeof gwhy);
    if (!gs) {
      jp->cpu_ref = false;
      st = make_sets(t, o->sets + 1, seed, false, &jp->sets, &rd);
    } else if (!jp->cpu_ref) {
      /* no GPU reference: the interpreter, if it can */
      jp->cpu_ref = true;
      st = make_sets(t, o->sets + 1, seed, true, &jp->sets, &rd);
    }
  }
  jp->seconds = kf_now_s() - t0;
  if (st) {
    if (gwhy[0]) kf_strbuf_printf(why, "no GPU reference either: %s\n", gwhy);
    if (!why->len) kf_strbuf_printf(why, "no reference");
  }
  return st;
}

static kf_jwork work_of(const kf_jtask *t, const kf_judge_options *o, const jprep *jp) {
  kf_jwork w;
  memset(&w, 0, sizeof w);
  w.task = t;
  w.opt = o;
  if (!jp->cpu_ref) {
    w.ref_unit = jp->ref_unit;
    w.ref_plan = jp->ref_plan;
    w.ref_plan_bytes = jp->ref_plan_bytes;
  }
  w.profile_unit = -1;
  w.n_sets = o->sets;
  w.sets = jp->sets;
  return w;
}

/* The verdict's "profile" (kf_judge_options.profile): each step of the
 * candidate u alone, its median and its share of their sum; or why there
 * is none. Nsight Compute's metrics are not collected (not built). */
static cJSON *profile_json(const kf_unit *u, const kf_jresult *c) {
  cJSON *p = cJSON_CreateObject();
  if (!p) return NULL;
  cJSON_AddBoolToObject(p, "available", c->prof_steps > 0);
  if (!c->prof_steps) {
    cJSON_AddStringToObject(p, "why", c->prof_why[0] ? c->prof_why
                                      : !c->ok      ? "the unit did not verify: only a verified unit is profiled"
                                                    : "not profiled");
    return p;
  }
  double sum = 0;
  for (int s = 0; s < c->prof_steps; s++) sum += c->step_ms[s];
  cJSON *steps = cJSON_AddArrayToObject(p, "steps");
  for (int s = 0; steps && s < c->prof_steps && s < u->n_steps; s++) {
    const kf_unit_step *st = &u->steps[s];
    cJSON *o = cJSON_CreateObject();
    if (!o) break;
    cJSON_AddNumberToObject(o, "step", s);
    cJSON_AddStringToObject(o, "kind", st->kind == KF_USTEP_LAUNCH   ? "launch"
                                       : st->kind == KF_USTEP_MEMSET ? "memset"
                                       : st->kind == KF_USTEP_COPY   ? "copy"
                                                                     : "library");
    if (st->kind == KF_USTEP_LAUNCH) {
      cJSON_AddStringToObject(o, "kernel", st->kernel ? st->kernel : "");
      int g3[3] = {(int)st->grid[0], (int)st->grid[1], (int)st->grid[2]};
      int b3[3] = {(int)st->block[0], (int)st->block[1], (int)st->block[2]};
      cJSON_AddItemToObject(o, "grid", cJSON_CreateIntArray(g3, 3));
      cJSON_AddItemToObject(o, "block", cJSON_CreateIntArray(b3, 3));
      cJSON_AddNumberToObject(o, "smem", st->smem);
    }
    cJSON_AddNumberToObject(o, "ms", c->step_ms[s]);
    cJSON_AddNumberToObject(o, "share", sum > 0 ? c->step_ms[s] / sum : 0);
    cJSON_AddItemToArray(steps, o);
  }
  cJSON_AddNumberToObject(p, "sum_ms", sum);
  cJSON_AddNumberToObject(p, "whole_ms", c->ms);
  cJSON_AddNumberToObject(p, "runs", c->prof_runs);
  cJSON_AddStringToObject(p, "method", "each step between its own CUDA events, timed as the whole unit is (spin "
                                       "kernel ahead, L2 flushed, inputs rotated); median per step");
  cJSON_AddStringToObject(p, "ncu", "not collected: Nsight Compute metrics are not built yet");
  return p;
}

/* The floor in ms on the device the worker measured */
static double floor_ms_of(const kf_jtask *t, const kf_jreport *r) {
  double floor_ms = 0;
  if (r->bw_gbs > 0) floor_ms = (double)t->floor_bytes / (r->bw_gbs * 1e6);
  double fl_ms = t->floor_flops / task_peak_flops(t) * 1e3;
  return fl_ms > floor_ms ? fl_ms : floor_ms;
}

/* Why the worker judged nothing ("" when it did): no GPU, no reference */
static void nothing_judged(const kf_jreport *r, const kf_jproc *p, const kf_judge_options *o, char *b, size_t n) {
  char fate[256];
  kf_jproc_fate(p, o, fate, sizeof fate);
  b[0] = '\0';
  if (p->reported && r->ref_failed)
    snprintf(b, n, "%s", r->gpu_error);
  else if (p->reported && r->gpu_ok && !r->refs_ready)
    snprintf(b, n, "the GPU reference (the built-in fp64 unit) ended the worker: %s", fate);
  else if (!p->reported || !r->gpu_ok)
    snprintf(b, n, "no GPU to judge on: %s%s%.*s", p->reported ? r->gpu_error : fate,
             !p->reported && p->output_bytes ? "; it printed: " : "",
             !p->reported && p->output_bytes ? 400 : 0, p->excerpt);
}

/* The judge's eager analogue for a task without PyTorch's eager time
 * (eager.c): its time, kernels, or why there is none */
typedef struct jeager {
  double ms;
  int kernels;
  char why[400];
} jeager;

/* The candidate c's correctness and reward (-1, 1, 2, 3) against the floor
 * and the baselines (the task's torch.compile time, else the built-in
 * unit's b when judged), each step a line in reasons. */
static bool reward_of(const kf_jtask *t, const kf_judge_options *o, const kf_jresult *c, const kf_jresult *b,
                      double floor_ms, const jeager *ea, cJSON *reasons, int *reward) {
  *reward = -1;
  if (!c->ok) {
    add_reason(reasons, "incorrect: %s", c->reason);
    return false;
  }
  if (floor_ms > 0 && c->ms < FLOOR_SLACK * floor_ms) {
    add_reason(reasons,
               "rejected: %.4g ms is below %.2f of the roofline floor (%.4g ms): faster than the device can move "
               "the bytes, so the timing cannot be real",
               c->ms, FLOOR_SLACK, floor_ms);
    return false;
  }
  *reward = 1;
  add_reason(reasons,
             "correct on %d input sets (three runs each, set 2's inputs aligned to their element size only; "
             "bitwise repeatable) and on every timing copy (a set it had not seen)",
             o->sets);
  if (t->eager_ms >= 0) {
    if (c->ms * SPEEDUP_NEEDED <= t->eager_ms) *reward = 2;
    add_reason(reasons, "%.3fx the eager baseline (PyTorch's, from the task: %.4g ms)%s", t->eager_ms / c->ms,
               t->eager_ms, *reward >= 2 ? ": reward 2" : "");
  } else if (ea && ea->ms > 0) {
    if (c->ms * SPEEDUP_NEEDED <= ea->ms) *reward = 2;
    add_reason(reasons, "%.3fx the judge's eager analogue (%d per-op built-in kernels, timed here: %.4g ms)%s",
               ea->ms / c->ms, ea->kernels, ea->ms, *reward >= 2 ? ": reward 2" : "");
  } else {
    add_reason(reasons, "no eager baseline in the task and no eager analogue (%s): reward 2 not assessed",
               ea && ea->why[0] ? ea->why : "not timed");
  }
  double base_ms = -1;
  const char *base_name = NULL;
  if (t->compile_ms >= 0) {
    base_ms = t->compile_ms;
    base_name = "torch.compile";
  } else if (b && b->ok) {
    base_ms = b->ms;
    base_name = "the built-in unit";
  }
  if (base_name) {
    if (c->ms * SPEEDUP_NEEDED <= base_ms) *reward = 3;
    add_reason(reasons, "%.3fx %s (%.4g ms)%s", base_ms / c->ms, base_name, base_ms, *reward == 3 ? ": reward 3" : "");
  } else {
    add_reason(reasons, "no torch.compile time and no judged built-in unit: reward 3 not assessed");
  }
  return true;
}

/* The verdict's figures beyond the reward: the tolerance, the floor, the
 * baselines, how the times were taken, the worker (p, workers, its fate) */
static void add_details(cJSON *v, const kf_jtask *t, const kf_judge_options *o, const kf_jreport *r,
                        const kf_jresult *c, const kf_jresult *b, bool has_base, double floor_ms, const kf_unit *cu,
                        const kf_jproc *p, int workers, const char *fate) {
  cJSON *tol = cJSON_AddObjectToObject(v, "tolerance");
  kf_jtol tl = kf_jtol_for(kf_jtask_precision(t), t->out[0].type.dtype);
  cJSON_AddNumberToObject(tol, "atol_x_rms", tl.atol);
  cJSON_AddNumberToObject(tol, "rtol", tl.rtol);
  cJSON_AddNumberToObject(tol, "rel_error_norm", tl.norm);
  cJSON *fj = cJSON_AddObjectToObject(v, "floor");
  cJSON_AddNumberToObject(fj, "bytes", (double)t->floor_bytes);
  cJSON_AddNumberToObject(fj, "flops", t->floor_flops);
  cJSON_AddNumberToObject(fj, "bandwidth_gbs", r->bw_gbs);
  cJSON_AddNumberToObject(fj, "peak_tflops", task_peak_flops(t) / 1e12);
  cJSON_AddNumberToObject(fj, "ms", floor_ms);
  add_num_or_null(fj, "fraction", c->runs && floor_ms > 0 ? floor_ms / c->ms : 0, c->runs > 0 && floor_ms > 0);
  if (o->profile) cJSON_AddItemToObject(v, "profile", profile_json(cu, c));
  cJSON *bj = cJSON_AddObjectToObject(v, "baselines");
  add_num_or_null(bj, "eager_ms", t->eager_ms, t->eager_ms >= 0);
  add_num_or_null(bj, "torch_compile_ms", t->compile_ms, t->compile_ms >= 0);
  add_num_or_null(bj, "builtin_ms", b->ms, has_base && b->ok);
  char timing[400];
  snprintf(timing, sizeof timing, "CUDA events around each run, %s, %s, inputs rotated over %d copies, device "
           "synchronised after, median",
           r->spin ? "a spin kernel queued ahead (launch gaps left out)"
                   : "no spin kernel ahead (it did not load: launch gaps included)",
           r->flush ? "the L2 flushed before (written over twice its size)" : "the L2 not flushed (no memory for it)",
           c->copies);
  cJSON_AddStringToObject(v, "timing", timing);
  cJSON_AddStringToObject(v, "guard", r->guard == 2   ? "unmapped: every buffer ends against unmapped memory "
                                                         "(an access past it faults), a canary in the slack"
                                      : r->guard == 1 ? "canary: 4 KiB after every buffer checked after each run "
                                                         "(the driver has no virtual memory management: reads "
                                                         "past the end are not caught)"
                                                       : "none: the device was not opened");
  cJSON *wj = cJSON_AddObjectToObject(v, "worker");
  cJSON_AddNumberToObject(wj, "wall_s", p->wall_s);
  cJSON_AddNumberToObject(wj, "workers", workers);
  cJSON_AddNumberToObject(wj, "output_bytes", (double)p->output_bytes);
  if (p->output_bytes) cJSON_AddStringToObject(wj, "output_start", p->excerpt);
  if (fate[0]) cJSON_AddStringToObject(wj, "fate", fate);
}

/* Reward 2's baseline where the task has no eager time: the judge's own
 * analogue, timed once a process per task (eager.c), for a candidate that
 * verified; the seconds it took */
static double eager_of(const kf_jtask *t, const kf_judge_options *o, const kf_jresult *c, jeager *ea,
                       kf_diag *diag) {
  double t0 = kf_now_s();
  ea->ms = -1;
  ea->kernels = 0;
  ea->why[0] = '\0';
  if (t->eager_ms < 0 && c->ok) {
    kf_status es = kf_jeager_ms(t, o, &ea->ms, &ea->kernels, ea->why, sizeof ea->why, diag);
    if (es) snprintf(ea->why, sizeof ea->why, "it could not be timed: %s", kf_status_str(es));
  }
  return kf_now_s() - t0;
}

/* The verdict's baselines (bj) completed: the eager analogue, and which
 * baseline decided rewards 2 and 3 */
static void add_eager(cJSON *bj, const kf_jtask *t, const jeager *ea, bool builtin_ok) {
  if (!bj) return;
  add_num_or_null(bj, "eager_analogue_ms", ea->ms, ea->ms > 0);
  if (ea->ms > 0) cJSON_AddNumberToObject(bj, "eager_analogue_kernels", ea->kernels);
  else if (ea->why[0]) cJSON_AddStringToObject(bj, "eager_analogue_why", ea->why);
  cJSON_AddStringToObject(bj, "reward2_from", t->eager_ms >= 0 ? "task" : ea->ms > 0 ? "eager_analogue" : "none");
  cJSON_AddStringToObject(bj, "reward3_from", t->compile_ms >= 0 ? "task" : builtin_ok ? "builtin" : "none");
}

/* The verdict's "sanitizer": a candidate that verified (correct) run
 * again under compute-sanitizer's memcheck, then racecheck (sanitize.c),
 * alone in w's worker slots; errors make *reward -1 with the tool's
 * findings in reasons. NULL when o->sanitize is off. */
static cJSON *sanitize_json(const kf_judge_options *o, const kf_jwork *w0, bool correct, int *reward, cJSON *reasons,
                            kf_diag *diag) {
  if (!o->sanitize) return NULL;
  cJSON *sj = cJSON_CreateObject();
  if (!sj) return NULL;
  char tool[4096];
  if (!correct) {
    cJSON_AddStringToObject(sj, "why", "not run: the candidate did not verify");
    return sj;
  }
  if (secure_getenv("KFUSE_JUDGE_NO_WORKER")) {
    cJSON_AddStringToObject(sj, "why", "not run: KFUSE_JUDGE_NO_WORKER (no worker to run under the tool)");
    return sj;
  }
  if (!kf_jsanitizer_find(tool, sizeof tool)) {
    cJSON_AddStringToObject(sj, "why", "not run: no compute-sanitizer ($KFUSE_COMPUTE_SANITIZER, $CUDA_HOME/bin, "
                                       "$CUDA_PATH/bin, /usr/local/cuda/bin, $PATH)");
    return sj;
  }
  kf_jwork w = *w0;
  w.n_units = 1; /* the candidate alone */
  w.units[0] = w0->units[w0->n_units - 1];
  w.plans[0] = w0->plans[w0->n_units - 1];
  w.plan_bytes[0] = w0->plan_bytes[w0->n_units - 1];
  static const struct {
    int which;
    const char *name;
  } tools[2] = {{KF_JSAN_MEMCHECK, "memcheck"}, {KF_JSAN_RACECHECK, "racecheck"}};
  kf_judge_options oo = *o;
  w.opt = &oo;
  for (int i = 0; i < 2; i++) {
    char why[KF_JREASON + 128];
    bool clean = false, errors = false;
    if (o->queue) oo.device = kf_judge_queue_take(o->queue);
    kf_status st = kf_jsanitize(&w, tool, tools[i].which, why, sizeof why, &clean, &errors, diag);
    if (o->queue) kf_judge_queue_give(o->queue, oo.device);
    if (st) snprintf(why, sizeof why, "not run: the worker could not be started (%s)", kf_status_str(st));
    cJSON *t = cJSON_AddObjectToObject(sj, tools[i].name);
    cJSON_AddBoolToObject(t, "clean", clean);
    cJSON_AddStringToObject(t, "why", why);
    if (!st && errors) {
      *reward = -1;
      add_reason(reasons, "rejected: %s", why);
      break; /* racecheck adds nothing to a unit memcheck refused */
    }
  }
  return sj;
}

kf_status kf_judge_unit(const char *task_dir, const char *unit_dir, const kf_judge_options *opt, kf_strbuf *out,
                        kf_diag *diag) {
  kf_judge_options o;
  if (opt) o = *opt;
  else kf_judge_options_init(&o);
  if (o.sets < 5) o.sets = 5;
  double t0 = kf_now_s();
  cJSON *v = cJSON_CreateObject();
  if (!v) return KF_ERR_NOMEM;
  cJSON_AddStringToObject(v, "format", "kfuse-verdict-v1");
  cJSON_AddStringToObject(v, "task", task_dir);
  cJSON_AddStringToObject(v, "unit", unit_dir);

  kf_jtask t;
  kf_strbuf tlog;
  kf_strbuf_init(&tlog);
  kf_diag td;
  kf_diag_init(&td, to_buf, &tlog);
  kf_status st = kf_jtask_read(task_dir, &t, &td);
  if (st) {
    kf_diag_error(diag, "%s", tlog.data ? tlog.data : "judge: cannot read the task");
    st = not_judged(v, out, st, tlog.data ? tlog.data : "the task cannot be read");
    kf_strbuf_fini(&tlog);
    return st;
  }
  kf_strbuf_fini(&tlog);
  cJSON_AddStringToObject(v, "key", t.key);
  cJSON_AddNumberToObject(v, "group", t.group);
  cJSON_AddStringToObject(v, "precision", kf_precision_name(t.precision));

  unit_state cand, base;
  memset(&cand, 0, sizeof cand);
  memset(&base, 0, sizeof base);
  cJSON *reasons = cJSON_CreateArray();
  jprep jp;
  memset(&jp, 0, sizeof jp);
  double t_compile = kf_now_s();
  prepare(unit_dir, &t, &o, &cand);
  t_compile = kf_now_s() - t_compile;
  if (cand.u) {
    cJSON_AddStringToObject(v, "name", cand.u->name ? cand.u->name : "");
    cJSON_AddStringToObject(v, "policy", cand.u->policy ? cand.u->policy : "");
  }
  if (cand.no_plan) {
    cJSON_Delete(reasons);
    kf_diag_error(diag, "judge: %s: %s", unit_dir, cand.log.data);
    st = not_judged(v, out, KF_ERR_UNSUPPORTED, cand.log.data);
    goto done_early;
  }
  cJSON_AddBoolToObject(v, "compiled", cand.compiled);
  if (cand.u && cand.u->compile_log && cand.u->compile_log[0])
    cJSON_AddStringToObject(v, "compile_log", cand.u->compile_log);
  if (!cand.params) {
    /* reward -1: not readable, refused by the static checks, by NVRTC, or
     * launching its kernels with arguments they do not take */
    cJSON_AddBoolToObject(v, "judged", true);
    cJSON_AddBoolToObject(v, "correct", false);
    cJSON_AddNumberToObject(v, "reward", -1);
    add_reason(reasons, "%s: %s",
               !cand.read      ? "the unit cannot be read"
               : !cand.checked ? "refused before compiling"
               : !cand.compiled ? "does not compile"
                                : "refused before running (its launches do not match its kernels)",
               cand.log.data ? cand.log.data : "");
    cJSON_AddItemToObject(v, "reasons", reasons);
    emit(v, out);
    cJSON_Delete(v);
    st = KF_OK;
    goto done_early;
  }
  if (o.builtin && t.builtin_dir[0]) {
    char bdir[4096];
    snprintf(bdir, sizeof bdir, "%s/%s", task_dir, t.builtin_dir);
    prepare(bdir, &t, &o, &base);
  }

  kf_strbuf rlog;
  kf_strbuf_init(&rlog);
  st = prep_sets(&t, &o, &jp, &rlog);
  if (st) {
    cJSON_Delete(reasons);
    kf_diag_error(diag, "judge: %s", rlog.data ? rlog.data : "no reference");
    st = not_judged(v, out, st, rlog.data ? rlog.data : "no reference");
    kf_strbuf_fini(&rlog);
    goto done_early;
  }
  kf_strbuf_fini(&rlog);
  cJSON_AddStringToObject(v, "reference", jp.cpu_ref ? "fp64 CPU interpreter" : "built-in fp64 unit on the GPU");

  /* the built-in unit first (the baseline survives a candidate that ends
   * the worker), then the candidate */
  bool base_ok = base.params && !base.no_plan;
  kf_jwork w = work_of(&t, &o, &jp);
  w.n_units = 2;
  w.profile_unit = o.profile ? 1 : -1;
  w.units[0] = base_ok ? base.u : NULL;
  w.plans[0] = base_ok ? base.plan : NULL;
  w.plan_bytes[0] = base_ok ? base.plan_bytes : 0;
  w.units[1] = cand.u;
  w.plans[1] = cand.plan;
  w.plan_bytes[1] = cand.plan_bytes;
  kf_jreport *r = malloc(sizeof *r);
  kf_jproc p;
  int workers = 0;
  double t_gpu = kf_now_s();
  if (o.queue) o.device = kf_judge_queue_take(o.queue); /* the GPU for this run only (w.opt is &o) */
  st = r ? kf_jjudge_units(&w, r, &p, &workers, diag) : KF_ERR_NOMEM;
  if (o.queue) kf_judge_queue_give(o.queue, o.device);
  t_gpu = kf_now_s() - t_gpu;
  if (st) {
    cJSON_Delete(reasons);
    free(r);
    st = not_judged(v, out, st, "the worker could not be started");
    goto done_early;
  }
  char nj[KF_JREASON + 64];
  nothing_judged(r, &p, &o, nj, sizeof nj);
  kf_jresult *c = &r->res[1], *b = &r->res[0];
  if (!nj[0] && c->env_error) snprintf(nj, sizeof nj, "%s", c->reason);
  if (nj[0]) {
    cJSON_Delete(reasons);
    kf_status why_st = p.reported && r->gpu_ok ? KF_ERR_INTERNAL : KF_ERR_UNSUPPORTED;
    free(r);
    kf_diag_error(diag, "judge: %s", nj);
    st = not_judged(v, out, why_st, nj);
    goto done_early;
  }
  cJSON_AddStringToObject(v, "device", r->device);
  cJSON_AddBoolToObject(v, "judged", true);
  char fate[256];
  kf_jproc_fate(&p, &o, fate, sizeof fate);

  /* floor, reward */
  double floor_ms = floor_ms_of(&t, r);
  int reward = -1;
  jeager ea;
  double t_eager = eager_of(&t, &o, c, &ea, diag);
  bool correct = reward_of(&t, &o, c, w.units[0] ? b : NULL, floor_ms, &ea, reasons, &reward);
  cJSON *san = sanitize_json(&o, &w, correct, &reward, reasons, diag);
  correct = correct && reward >= 1;
  if (w.units[0] && !b->ok) add_reason(reasons, "the built-in unit failed: %s", b->reason);
  if (!base_ok && o.builtin && t.builtin_dir[0])
    add_reason(reasons, "the built-in unit was not judged: %s", base.log.data ? base.log.data : "");
  if (p.output_bytes) add_reason(reasons, "the worker printed %lld bytes", (long long)p.output_bytes);
  if (workers > 1) add_reason(reasons, "%d workers: the one the built-in unit ended, then a fresh one", workers);
  cJSON_AddBoolToObject(v, "correct", correct);
  cJSON_AddNumberToObject(v, "reward", reward);
  cJSON_AddItemToObject(v, "reasons", reasons);
  cJSON_AddItemToObject(v, "candidate", result_json(c, o.sets));
  if (w.units[0]) cJSON_AddItemToObject(v, "builtin", result_json(b, o.sets));
  add_details(v, &t, &o, r, c, b, w.units[0] != NULL, floor_ms, cand.u, &p, workers, fate);
  add_eager(cJSON_GetObjectItemCaseSensitive(v, "baselines"), &t, &ea, w.units[0] && b->ok);
  if (san) cJSON_AddItemToObject(v, "sanitizer", san);
  cJSON *sj = cJSON_AddObjectToObject(v, "seconds");
  cJSON_AddNumberToObject(sj, "compile", t_compile);
  cJSON_AddNumberToObject(sj, "reference", jp.seconds);
  cJSON_AddNumberToObject(sj, "gpu", t_gpu);
  cJSON_AddNumberToObject(sj, "eager_analogue", t_eager);
  cJSON_AddNumberToObject(sj, "total", kf_now_s() - t0);
  emit(v, out);
  cJSON_Delete(v);
  free(r);
  st = KF_OK;
done_early:
  prep_fini(&t, &o, &jp);
  unit_state_fini(&cand);
  unit_state_fini(&base);
  kf_jtask_fini(&t);
  return st;
}

/* ---- candidates in memory (kfuse compile) ---- */

/* c[0..n) judged against the task: read from task_dir, or (task_dir NULL)
 * group grp of g in memory */
static kf_status judge_cands(const char *task_dir, const kf_graph *g, const kf_group *grp,
                             const kf_compile_options *co, kf_judge_cand *c, int n, const kf_judge_options *opt,
                             kf_judge_batch *bt, kf_diag *diag) {
  kf_judge_options o;
  if (opt) o = *opt;
  else kf_judge_options_init(&o);
  if (o.sets < 5) o.sets = 5;
  double t0 = kf_now_s();
  memset(bt, 0, sizeof *bt);
  for (int k = 0; k < n; k++) {
    c[k].judged = c[k].correct = false;
    c[k].reward = -1;
    c[k].ms = 0;
    c[k].why[0] = '\0';
  }
  if (n < 1 || n > KF_JMAX_UNITS) {
    kf_diag_error(diag, "judge: %d candidates (1 to %d at once)", n, KF_JMAX_UNITS);
    return KF_ERR_ARG;
  }
  kf_jtask t;
  kf_strbuf log;
  kf_strbuf_init(&log);
  kf_diag d;
  kf_diag_init(&d, to_buf, &log);
  kf_status st = task_dir ? kf_jtask_read(task_dir, &t, &d) : kf_jtask_from_group(g, grp, co, &t, &d);
  if (st) {
    snprintf(bt->why, sizeof bt->why, "%s", log.data ? log.data : "the task cannot be made");
    kf_strbuf_fini(&log);
    return st == KF_ERR_NOMEM ? st : KF_OK;
  }
  /* static checks and plans: a candidate refused here is -1 without a GPU */
  void *plans[KF_JMAX_UNITS] = {NULL};
  size_t plan_bytes[KF_JMAX_UNITS] = {0};
  bool ready[KF_JMAX_UNITS] = {false};
  for (int k = 0; k < n; k++) {
    kf_strbuf_fini(&log);
    kf_strbuf_init(&log);
    if (!c[k].unit || (!c[k].unit->cubin && c[k].unit->source)) {
      snprintf(c[k].why, sizeof c[k].why, "not compiled");
      continue;
    }
    if (!kf_junit_check(&t, c[k].unit, &o, &log) || !kf_junit_check_params(c[k].unit, &log)) {
      snprintf(c[k].why, sizeof c[k].why, "refused before running: %s", log.data ? log.data : "");
      continue;
    }
    if (kf_junit_has_library_steps(c[k].unit) &&
        kf_jplan_build(&t, c[k].unit, &plans[k], &plan_bytes[k], &d) != KF_OK) {
      snprintf(c[k].why, sizeof c[k].why, "not judged: %s", log.data ? log.data : "no plan for its library steps");
      continue;
    }
    ready[k] = true;
  }
  int n_ready = 0;
  for (int k = 0; k < n; k++) n_ready += ready[k];
  jprep jp;
  memset(&jp, 0, sizeof jp);
  if (!n_ready) {
    /* nothing reaches the GPU: the first candidate's reason is the group's */
    snprintf(bt->why, sizeof bt->why, "no candidate can be judged: %.400s", c[0].why);
    goto done;
  }
  kf_strbuf_fini(&log);
  kf_strbuf_init(&log);
  st = prep_sets(&t, &o, &jp, &log);
  bt->sets_s = jp.seconds;
  if (st) {
    snprintf(bt->why, sizeof bt->why, "%s", log.data ? log.data : "no reference");
    st = st == KF_ERR_NOMEM ? st : KF_OK;
    goto done;
  }
  kf_jwork w = work_of(&t, &o, &jp);
  w.n_units = n;
  for (int k = 0; k < n; k++)
    if (ready[k]) {
      w.units[k] = c[k].unit;
      w.plans[k] = plans[k];
      w.plan_bytes[k] = plan_bytes[k];
    }
  kf_jreport *r = malloc(sizeof *r);
  kf_jproc p;
  double tw = kf_now_s();
  st = r ? kf_jjudge_units(&w, r, &p, &bt->workers, diag) : KF_ERR_NOMEM;
  bt->worker_s = kf_now_s() - tw;
  if (st) {
    free(r);
    snprintf(bt->why, sizeof bt->why, "the worker could not be started");
    goto done;
  }
  nothing_judged(r, &p, &o, bt->why, sizeof bt->why);
  bt->no_gpu = !p.reported || !r->gpu_ok;
  bt->open_s = r->open_s;
  bt->refs_s = r->refs_s;
  if (!bt->why[0]) {
    bt->judged = true;
    snprintf(bt->device, sizeof bt->device, "%s", r->device);
    bt->floor_ms = floor_ms_of(&t, r);
    for (int k = 0; k < n; k++) {
      const kf_jresult *res = &r->res[k];
      if (!ready[k]) continue;
      c[k].judged = res->ran && !res->env_error;
      c[k].ms = res->runs ? res->ms : 0;
      c[k].verify_s = res->verify_s;
      c[k].time_s = res->time_s;
      if (!res->ok) {
        snprintf(c[k].why, sizeof c[k].why, "%s%s", res->env_error ? "not judged: " : "incorrect: ", res->reason);
      } else if (bt->floor_ms > 0 && res->ms < FLOOR_SLACK * bt->floor_ms) {
        snprintf(c[k].why, sizeof c[k].why, "rejected: %.4g ms is below %.2f of the roofline floor (%.4g ms)", res->ms,
                 FLOOR_SLACK, bt->floor_ms);
      } else {
        c[k].correct = true;
        c[k].reward = 1;
      }
    }
    /* rewards 2 and 3 against the task's baselines, else candidate 0 */
    double base = t.compile_ms >= 0 ? t.compile_ms : c[0].correct ? c[0].ms : -1;
    for (int k = 0; k < n; k++) {
      if (!c[k].correct) continue;
      if (t.eager_ms >= 0 && c[k].ms * SPEEDUP_NEEDED <= t.eager_ms) c[k].reward = 2;
      if (base >= 0 && c[k].ms * SPEEDUP_NEEDED <= base) c[k].reward = 3;
    }
  }
  free(r);
done:
  for (int k = 0; k < n; k++) free(plans[k]);
  prep_fini(&t, &o, &jp);
  kf_jtask_fini(&t);
  kf_strbuf_fini(&log);
  bt->seconds = kf_now_s() - t0;
  return st;
}

kf_status kf_judge_units(const char *task_dir, kf_judge_cand *c, int n, const kf_judge_options *o,
                         kf_judge_batch *bt, kf_diag *diag) {
  return judge_cands(task_dir, NULL, NULL, NULL, c, n, o, bt, diag);
}

kf_status kf_judge_group(const kf_graph *g, const kf_group *grp, const kf_compile_options *co, kf_judge_cand *c,
                         int n, const kf_judge_options *o, kf_judge_batch *bt, kf_diag *diag) {
  return judge_cands(NULL, g, grp, co, c, n, o, bt, diag);
}
