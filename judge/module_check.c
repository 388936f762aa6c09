/* judge/module_check.c — the whole module checked before kfuse compile
 * writes it (kf_module_checker, include/kfuse/compile.h).
 *
 * Every group passing the judge does not make a module right: the bugs of
 * layouts, fusion and library calls live between groups (torchvision's
 * ResNet-50 compiled to a module 0.21 from the fp64 model while every group
 * passed: a race between cuDNN plans and the launches around them). So the
 * finished module is run on fresh inputs against a reference that shares
 * none of its lowering:
 *
 *   1. the reference: the model loaded again and compiled as `kfuse compile
 *      --reference` compiles it (one group per op, every kernel computing in
 *      fp64, no cuDNN, no channels-last, no fusion), with no arena reuse so
 *      that every value it computes can be read after a run; into a
 *      temporary directory, removed after;
 *   2. a spec (JSON) of both modules: inputs with the value range of each
 *      (integer inputs below the size of every dim they index, else 0 or
 *      1), outputs, the compiled module's groups with the plan steps that
 *      compute them and where each group output lives, the reference's
 *      values by name;
 *   3. a worker process (`kfuse module-check-worker SPEC RESULT`, a fresh
 *      image as the judge's workers: judge/module_check_worker.c) runs both
 *      modules on `sets` input sets and compares every output by its
 *      relative error norm against the bound the precision policy gives;
 *      on a mismatch it finds the first group whose outputs (given the
 *      module's own inputs up to there) diverge from the reference's values
 *      of the same name, by bisection over prefix runs of the module
 *      (kfuse_model_debug_run);
 *   4. the result: passed, or KF_ERR_MISMATCH with the group, its ops and
 *      what was done to them (fusion, channels-last, a library step).
 *
 * Without a GPU the check is not run and the report says so (the worker
 * says there is none before the reference is built). */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "judge_int.h"
#include "kfuse/frontend.h"

/* ---- bounds ---- */

/* The bound on an output's relative error norm against the fp64 reference,
 * from the precision policy and the dtypes in the graph: fp32 1e-3; 1e-2
 * where TF32 is allowed (the default policy's cuDNN convolutions, or
 * --precision tf32: eager's own TF32 ResNet-50 is 5e-4 from fp64 on an
 * H200); half types 3e-2 (fp16) and 6e-2 (bf16: 8 bits of mantissa, and
 * the reference rounds to them after every op). The defects this check is
 * for are far above: 0.21 and 0.12 on the ResNets. */
static double bound_for(const kf_graph *g, const kf_compile_options *o) {
  double b = 1e-3;
  bool conv = false, f16 = false, bf16 = false;
  for (const kf_op *op = g->first; op; op = op->next) {
    if (op->code == KF_OP_CONV && op->n_results && op->results[0]->type.dtype == KF_DTYPE_F32) conv = true;
    for (int r = 0; r < op->n_results; r++) {
      f16 |= op->results[r]->type.dtype == KF_DTYPE_F16;
      bf16 |= op->results[r]->type.dtype == KF_DTYPE_BF16;
    }
  }
  if ((conv && !o->no_cudnn) || o->precision == KF_PRECISION_TF32) b = 1e-2;
  if (f16 || o->precision == KF_PRECISION_FP16) b = b > 3e-2 ? b : 3e-2;
  if (bf16 || o->precision == KF_PRECISION_BF16) b = b > 6e-2 ? b : 6e-2;
  return b;
}

/* ---- input ranges ---- */

/* The largest value an integer input may take and stay in range for every
 * dim it indexes (through views), or -1 when it indexes none. */
static int64_t index_limit(const kf_graph *g, const kf_value *v, int depth) {
  int64_t lim = -1;
  if (depth > 16) return lim;
  for (const kf_op *op = g->first; op; op = op->next)
    for (int i = 0; i < op->n_operands; i++) {
      if (op->operands[i] != v) continue;
      int64_t l = -1;
      const kf_value *x = op->n_operands ? op->operands[0] : NULL;
      if (op->code == KF_OP_EMBEDDING && i == 1 && x && x->type.rank >= 1) {
        l = x->type.shape[0];
      } else if ((op->code == KF_OP_INDEX_SELECT || op->code == KF_OP_GATHER) && i == 1 && x) {
        int64_t d = kf_op_get_int(op, "dim");
        if (d >= 0 && d < x->type.rank) l = x->type.shape[d];
      } else if (op->code == KF_OP_INDEX && i >= 1 && x) {
        int nd = 0;
        const int64_t *dims = kf_op_get_ints(op, "dims", &nd);
        if (i - 1 < nd && dims[i - 1] >= 0 && dims[i - 1] < x->type.rank) l = x->type.shape[dims[i - 1]];
      } else if (kf_op_info_get(op->code)->kind == KF_KIND_VIEW && op->n_results == 1) {
        l = index_limit(g, op->results[0], depth + 1);
      }
      if (l >= 0 && (lim < 0 || l < lim)) lim = l;
    }
  return lim;
}

/* ---- where values live ---- */

static cJSON *ints(const int64_t *v, int n) {
  cJSON *a = cJSON_CreateArray();
  for (int i = 0; a && i < n; i++) cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i]));
  return a;
}

/* A value's location in a module: {name, dtype, shape, strides, kind,
 * index, byte_offset} (byte_offset: of its first element, from the arena's
 * start, or from the input's or output's pointer), or NULL when it has no
 * storage the worker can read (scalars, weights). */
static cJSON *locate(const kf_module_built *b, const kf_value *v) {
  const kf_storage *s = &b->memplan->storage[v->id];
  if (v->type.kind != KF_TYPE_TENSOR) return NULL;
  const char *kind = s->kind == KF_STORAGE_ARENA    ? "arena"
                     : s->kind == KF_STORAGE_OUTPUT ? "output"
                     : s->kind == KF_STORAGE_INPUT  ? "input"
                                                    : NULL;
  if (!kind) return NULL;
  const char *name = v->def ? v->def->name : b->graph->input_names[v->index];
  int64_t es = (int64_t)kf_dtype_size(v->type.dtype);
  int64_t off = (s->kind == KF_STORAGE_ARENA ? s->offset : 0) + v->type.offset * es;
  /* a view of an output or input: its offset from the base's first element */
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddStringToObject(o, "name", name ? name : "");
  cJSON_AddNumberToObject(o, "dtype", v->type.dtype);
  cJSON_AddItemToObject(o, "shape", ints(v->type.shape, v->type.rank));
  cJSON_AddItemToObject(o, "strides", ints(v->type.strides, v->type.rank));
  cJSON_AddStringToObject(o, "kind", kind);
  cJSON_AddNumberToObject(o, "index", s->index);
  cJSON_AddNumberToObject(o, "byte_offset", (double)off);
  return o;
}

/* What was done to a group's ops, for the message naming it. */
static void describe_group(const kf_module_built *b, int gi, char *out, size_t n) {
  const kf_group *g = &b->partition->groups[gi];
  size_t o = 0;
  o += (size_t)snprintf(out + o, n - o, "group %d (%s", g->id, kf_group_kind_name(g->kind));
  const kf_unit *u = b->units[gi];
  if (u && u->name && o < n)
    o += (size_t)snprintf(out + o, n - o, ", unit %s%s%s", u->name, u->policy ? " by " : "", u->policy ? u->policy : "");
  bool cl = false, lib = false;
  for (int k = 0; k < g->n_ops; k++)
    for (int r = 0; r < g->ops[k]->n_results; r++) {
      const kf_type *t = &g->ops[k]->results[r]->type;
      if (t->kind == KF_TYPE_TENSOR && kf_type_is_channels_last(t) && !kf_type_is_contiguous(t)) cl = true;
    }
  for (int s = 0; u && s < u->n_steps; s++) lib |= u->steps[s].kind == KF_USTEP_GEMM || u->steps[s].kind == KF_USTEP_CONV;
  if (o < n)
    o += (size_t)snprintf(out + o, n - o, "%s%s%s): ", g->n_ops > 1 ? ", fused" : "", cl ? ", channels-last" : "",
                          lib ? ", a library step (cuBLASLt/cuDNN)" : "");
  for (int k = 0; k < g->n_ops && o < n; k++)
    o += (size_t)snprintf(out + o, n - o, "%s%s (kf.%s)", k ? ", " : "", g->ops[k]->name,
                          kf_opcode_name(g->ops[k]->code));
}

/* The module's spec: inputs, outputs, and per group the plan steps and
 * the locations of its outputs. */
static cJSON *module_spec(const kf_module_built *b) {
  cJSON *m = cJSON_CreateObject();
  if (!m) return NULL;
  cJSON_AddStringToObject(m, "path", b->module_path);
  if (b->weights_path) cJSON_AddStringToObject(m, "weights", b->weights_path);
  cJSON *gs = cJSON_AddArrayToObject(m, "groups");
  for (int i = 0; i < b->partition->n_groups; i++) {
    const kf_group *g = &b->partition->groups[i];
    if (g->kind == KF_GROUP_VIEW) continue;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "group", i);
    cJSON_AddNumberToObject(e, "end_step", b->end_step[i]);
    char what[1024];
    describe_group(b, i, what, sizeof what);
    cJSON_AddStringToObject(e, "what", what);
    cJSON *vs = cJSON_AddArrayToObject(e, "values");
    for (int k = 0; k < g->n_outputs; k++) {
      cJSON *l = locate(b, g->outputs[k]);
      if (l) cJSON_AddItemToArray(vs, l);
    }
    cJSON_AddItemToArray(gs, e);
  }
  return m;
}

/* ---- the reference's build: its layout recorded by its own checker ---- */

typedef struct ref_capture {
  cJSON *spec; /* the reference's module spec, once built */
} ref_capture;

static kf_status capture(void *user, const kf_module_built *b, const kf_compile_options *o, kf_module_check *out,
                         kf_diag *diag) {
  (void)o;
  (void)diag;
  ref_capture *rc = user;
  out->checked = false;
  rc->spec = module_spec(b);
  return rc->spec ? KF_OK : KF_ERR_NOMEM;
}

typedef struct first_err {
  char msg[600];
} first_err;

static void keep_first(void *user, kf_diag_level level, const char *msg) {
  first_err *e = user;
  if (level == KF_DIAG_ERROR && !e->msg[0]) snprintf(e->msg, sizeof e->msg, "%s", msg);
}

/* ---- the worker ---- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st;
  (void)flag;
  (void)ftw;
  (void)remove(path);
  return 0;
}

/* Run `kfuse module-check-worker spec result` with a wall-time limit; its
 * output goes to log. 0, or why in why[n]. */
static int run_worker(const kf_judge_module_checker *c, const char *spec, const char *result, const char *log,
                      double limit_s, char *why, size_t n) {
  pid_t parent = getpid();
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(why, n, "fork failed: %s", strerror(errno));
    return -1;
  }
  if (pid == 0) {
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int nul = open("/dev/null", O_RDONLY);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    if (nul >= 0) dup2(nul, 0);
    const char *exe = c->worker_exe ? c->worker_exe : "/proc/self/exe";
    char *argv[] = {(char *)"kfuse", (char *)"module-check-worker", (char *)spec, (char *)result, NULL};
    execv(exe, argv);
    _exit(127);
  }
  double t0 = kf_now_s();
  int status = 0;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) {
      snprintf(why, n, "waitpid failed: %s", strerror(errno));
      return -1;
    }
    if (kf_now_s() - t0 > limit_s) {
      kill(-pid, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      snprintf(why, n, "the check's worker ran past %.0f s and was killed", limit_s);
      return -1;
    }
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  if (WIFSIGNALED(status)) {
    snprintf(why, n, "the check's worker died of signal %d", WTERMSIG(status));
    return -1;
  }
  return 0;
}

static char *slurp(const char *path, size_t max) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *b = malloc(max + 1);
  size_t k = b ? fread(b, 1, max, f) : 0;
  fclose(f);
  if (b) b[k] = 0;
  return b;
}

/* The last non-empty line of the worker's log, for a message. */
static void last_line(const char *log, char *out, size_t n) {
  char *t = slurp(log, 1 << 16);
  out[0] = 0;
  if (!t) return;
  char *e = t + strlen(t);
  while (e > t && (e[-1] == '\n' || e[-1] == ' ')) *--e = 0;
  char *s = strrchr(t, '\n');
  snprintf(out, n, "%s", s ? s + 1 : t);
  free(t);
}

static kf_status check(void *user, const kf_module_built *b, const kf_compile_options *o, kf_module_check *out,
                       kf_diag *diag) {
  kf_judge_module_checker *c = user;
  double t0 = kf_now_s();
  kf_status st = KF_OK;
  cJSON *spec = NULL;
  ref_capture rc = {NULL};
  kf_graph *rg = NULL;
  char dir[4096] = "", path[4200], res[4200], logp[4200], refso[4200];
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/kfuse-mcheck-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    snprintf(out->why, sizeof out->why, "no temporary directory for the check: %s", strerror(errno));
    dir[0] = 0;
    return KF_OK;
  }
  snprintf(path, sizeof path, "%s/spec.json", dir);
  snprintf(res, sizeof res, "%s/result.json", dir);
  snprintf(logp, sizeof logp, "%s/worker.log", dir);
  snprintf(refso, sizeof refso, "%s/reference.so", dir);
  out->bound = bound_for(b->graph, o);

  /* a GPU first: without one nothing is built */
  spec = cJSON_CreateObject();
  if (!spec) {
    st = KF_ERR_NOMEM;
    goto done;
  }
  cJSON_AddBoolToObject(spec, "probe", true);
  {
    char *text = cJSON_PrintUnformatted(spec);
    FILE *f = text ? fopen(path, "w") : NULL;
    bool ok = f && fputs(text, f) >= 0;
    if (f && fclose(f)) ok = false;
    free(text);
    if (!ok) {
      snprintf(out->why, sizeof out->why, "cannot write the check's spec in %s", dir);
      goto done;
    }
  }
  char why[600] = "";
  if (run_worker(c, path, res, logp, 60, why, sizeof why)) {
    snprintf(out->why, sizeof out->why, "no GPU check: %s", why);
    goto done;
  }
  {
    char *t = slurp(res, 1 << 20);
    cJSON *r = t ? cJSON_Parse(t) : NULL;
    free(t);
    cJSON *gpu = cJSON_GetObjectItem(r, "gpu");
    if (!cJSON_IsTrue(gpu)) {
      cJSON *w = cJSON_GetObjectItem(r, "why");
      char ll[400];
      last_line(logp, ll, sizeof ll);
      snprintf(out->why, sizeof out->why, "no GPU to check the module on: %s",
               cJSON_IsString(w) ? w->valuestring : ll[0] ? ll : "the probe gave no answer");
      cJSON_Delete(r);
      goto done;
    }
    cJSON *dv = cJSON_GetObjectItem(r, "device");
    if (cJSON_IsString(dv)) snprintf(out->device, sizeof out->device, "%s", dv->valuestring);
    cJSON_Delete(r);
  }
  cJSON_Delete(spec);
  spec = NULL;

  /* the reference */
  double tr = kf_now_s();
  {
    first_err fe = {""};
    kf_diag q;
    kf_diag_init(&q, keep_first, &fe);
    kf_load_options lo;
    kf_load_options_init(&lo);
    kf_compile_options ro;
    kf_compile_options_init(&ro);
    ro.reference = true;
    ro.fuse = false;
    ro.keep_values = true;
    ro.target = o->target;
    ro.precision = o->precision;
    ro.no_tune = true;
    kf_module_checker cap = {capture, &rc};
    ro.checker = &cap;
    st = kf_model_load(c->model_path, &lo, &rg, &q);
    if (!st) st = kf_compile_graph(rg, &ro, refso, &q);
    if (st) {
      snprintf(out->why, sizeof out->why, "the reference module could not be built: %s",
               fe.msg[0] ? fe.msg : kf_status_str(st));
      st = st == KF_ERR_NOMEM ? st : KF_OK;
      goto done;
    }
    /* its files have their final names now */
    cJSON_DeleteItemFromObject(rc.spec, "path");
    cJSON_DeleteItemFromObject(rc.spec, "weights");
    cJSON_AddStringToObject(rc.spec, "path", refso);
    char rw[4300];
    snprintf(rw, sizeof rw, "%s.weights", refso);
    cJSON_AddStringToObject(rc.spec, "weights", rw);
  }
  out->reference_s = kf_now_s() - tr;

  /* the spec */
  spec = cJSON_CreateObject();
  cJSON *mod = module_spec(b);
  if (!spec || !mod) {
    cJSON_Delete(mod);
    st = KF_ERR_NOMEM;
    goto done;
  }
  cJSON_AddItemToObject(spec, "module", mod);
  cJSON_AddItemToObject(spec, "reference", rc.spec);
  rc.spec = NULL;
  cJSON_AddNumberToObject(spec, "sets", c->sets > 0 ? c->sets : 3);
  cJSON_AddNumberToObject(spec, "bound", out->bound);
  uint64_t seed = c->seed;
  if (!seed && getrandom(&seed, sizeof seed, 0) != (ssize_t)sizeof seed) seed = (uint64_t)time(NULL);
  cJSON_AddNumberToObject(spec, "seed", (double)(seed & ((1ull << 52) - 1)));
  cJSON *ins = cJSON_AddArrayToObject(spec, "inputs");
  for (int i = 0; i < b->graph->n_inputs; i++) {
    const kf_value *v = b->graph->inputs[i];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", b->graph->input_names[i]);
    cJSON_AddNumberToObject(e, "dtype", v->type.dtype);
    cJSON_AddItemToObject(e, "shape", ints(v->type.shape, v->type.rank));
    if (!kf_dtype_is_float(v->type.dtype)) {
      int64_t lim = v->type.dtype == KF_DTYPE_BOOL ? -1 : index_limit(b->graph, v, 0);
      cJSON_AddNumberToObject(e, "int_hi", (double)(lim > 0 ? lim : 2)); /* values 0 .. int_hi - 1 */
    }
    cJSON_AddItemToArray(ins, e);
  }
  cJSON *outs = cJSON_AddArrayToObject(spec, "outputs");
  for (int i = 0; i < b->graph->n_outputs; i++) {
    const kf_value *v = b->graph->outputs[i];
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "dtype", v->type.dtype);
    cJSON_AddItemToObject(e, "shape", ints(v->type.shape, v->type.rank));
    cJSON_AddItemToArray(outs, e);
  }
  {
    char *text = cJSON_PrintUnformatted(spec);
    FILE *f = text ? fopen(path, "w") : NULL;
    bool ok = f && fputs(text, f) >= 0;
    if (f && fclose(f)) ok = false;
    free(text);
    if (!ok) {
      snprintf(out->why, sizeof out->why, "cannot write the check's spec in %s", dir);
      goto done;
    }
  }
  if (run_worker(c, path, res, logp, c->timeout_s > 0 ? c->timeout_s : 600, why, sizeof why)) {
    char ll[400];
    last_line(logp, ll, sizeof ll);
    snprintf(out->why, sizeof out->why, "%s%s%s", why, ll[0] ? ": " : "", ll);
    st = KF_ERR_INTERNAL;
    goto done;
  }
  {
    char *t = slurp(res, 1 << 22);
    cJSON *r = t ? cJSON_Parse(t) : NULL;
    free(t);
    cJSON *err = cJSON_GetObjectItem(r, "error");
    if (!r || cJSON_IsString(err)) {
      char ll[400];
      last_line(logp, ll, sizeof ll);
      snprintf(out->why, sizeof out->why, "the check's worker failed: %s",
               cJSON_IsString(err) ? err->valuestring : ll[0] ? ll : "no result");
      cJSON_Delete(r);
      st = KF_ERR_INTERNAL;
      goto done;
    }
    out->checked = true;
    out->sets = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(r, "sets"));
    out->max_rel_err = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "max_rel_err"));
    out->passed = cJSON_IsTrue(cJSON_GetObjectItem(r, "passed"));
    cJSON *w = cJSON_GetObjectItem(r, "why");
    if (cJSON_IsString(w)) snprintf(out->why, sizeof out->why, "%s", w->valuestring);
    out->repeat_diff = cJSON_GetNumberValue(cJSON_GetObjectItem(r, "repeat_max_diff"));
    if (out->repeat_diff > 0) {
      size_t l = strlen(out->why);
      snprintf(out->why + l, sizeof out->why - l, "%stwo runs of the module on the same inputs differ by up to %.3g "
               "(a race: the first diverging group may be misnamed)", l ? "; " : "", out->repeat_diff);
    }
    cJSON *bad = cJSON_GetObjectItem(r, "first_bad_group");
    if (cJSON_IsObject(bad)) {
      out->bad_group = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(bad, "group"));
      out->bad_rel_err = cJSON_GetNumberValue(cJSON_GetObjectItem(bad, "rel_err"));
      cJSON *bw = cJSON_GetObjectItem(bad, "what");
      snprintf(out->bad_what, sizeof out->bad_what, "%s (relative error %.2e)",
               cJSON_IsString(bw) ? bw->valuestring : "?", out->bad_rel_err);
    }
    cJSON_Delete(r);
    if (!out->passed) st = KF_ERR_MISMATCH;
  }
done:
  out->seconds = kf_now_s() - t0;
  cJSON_Delete(spec);
  cJSON_Delete(rc.spec);
  kf_graph_destroy(rg);
  if (dir[0] && !c->keep_files) nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
  else if (dir[0]) kf_diag_note(diag, "module check files kept in %s", dir);
  return st;
}

void kf_judge_module_checker_init(kf_judge_module_checker *c, const char *model_path) {
  memset(c, 0, sizeof *c);
  c->checker.check = check;
  c->checker.user = c;
  c->model_path = model_path;
  c->sets = 3;
  c->timeout_s = 600;
  const char *k = secure_getenv("KFUSE_MODULE_CHECK_KEEP");
  c->keep_files = k && *k == '1';
}
