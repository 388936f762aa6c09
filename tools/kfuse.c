/* tools/kfuse.c — the kfuse command-line tool.
 *
 *   kfuse info MODEL            partition-ready IR and what the model needs
 *   kfuse opt FILE [-p P]       IR in, named passes, IR out (kfuse-opt style)
 *   kfuse run MODEL --io F      run the CPU reference on recorded inputs and
 *                               compare with the recorded outputs
 *   kfuse partition MODEL       fusion groups and memory plan
 *   kfuse compile MODEL -o M.so a module (tools/cmd_compile.c)
 *   kfuse run M.so --io F       run a module on the GPU (tools/cmd_gpu.c)
 *   kfuse bench M.so            time a module on the GPU
 *   kfuse ops                   supported ops (kf IR and ATen overloads)
 *   kfuse cache SUB             the kernel cache (tools/cmd_cache.c)
 *   kfuse partition MODEL       fusion groups and the memory plan
 *
 * MODEL is a .pt2 archive or MLIR text (kfuse IR or torch dialect). Errors
 * go to stderr as "kfuse: error: <what and where>"; the exit status is 0 on
 * success, 1 on any failure, 2 on bad usage. `kfuse CMD --help` prints a
 * command's usage (tools/cli.c, with the option parsing the commands
 * share). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfuse/compile.h"
#include "kfuse/frontend.h"
#include "kfuse/interp.h"
#include "kfuse/ir.h"
#include "kfuse/pass.h"
#include "kfuse/judge.h"
#include "tools_int.h"
#include "kfuse/partition.h"

#define KFUSE_VERSION "0.1.0"

static char *read_all(const char *path, size_t *n, kf_diag *diag) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f) {
    kf_diag_error(diag, "%s: cannot open: %s", path, strerror(errno));
    return NULL;
  }
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    size_t k = fread(buf + len, 1, cap - len, f);
    len += k;
    if (len < cap) break;
    cap *= 2;
    char *nb = realloc(buf, cap + 1);
    if (!nb) {
      free(buf);
      buf = NULL;
    } else {
      buf = nb;
    }
  }
  bool err = ferror(f);
  if (f != stdin) fclose(f);
  if (!buf || err) {
    kf_diag_error(diag, "%s: read failed", path);
    free(buf);
    return NULL;
  }
  buf[len] = 0;
  *n = len;
  return buf;
}

static kf_status load(const char *path, kf_graph **g, kf_diag *diag) {
  if (strcmp(path, "-") == 0) {
    size_t n;
    char *text = read_all(path, &n, diag);
    if (!text) return KF_ERR_IO;
    kf_status st = kf_mlir_parse(text, n, "<stdin>", g, diag);
    free(text);
    return st;
  }
  kf_load_options o;
  kf_load_options_init(&o);
  return kf_model_load(path, &o, g, diag);
}

/* ---- info ---------------------------------------------------------------- */

static int64_t value_bytes(const kf_value *v) {
  return v->type.kind == KF_TYPE_TENSOR
             ? kf_type_numel(&v->type) * (int64_t)kf_dtype_size(v->type.dtype)
             : 0;
}

static bool is_view(const kf_op *op) {
  const kf_op_info *info = kf_op_info_get(op->code);
  return info->kind == KF_KIND_VIEW || op->code == KF_OP_SPLIT ||
         op->code == KF_OP_PARAM || op->code == KF_OP_SCALAR;
}

static void human(int64_t b, char *buf, size_t n) {
  const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)b;
  int i = 0;
  while (v >= 1024 && i < 4) {
    v /= 1024;
    i++;
  }
  if (i == 0)
    snprintf(buf, n, "%lld B", (long long)b);
  else
    snprintf(buf, n, "%.2f %s", v, u[i]);
}

/* Naive memory estimate: every non-view result is materialised, freed after
 * its last use (graph outputs live to the end). Later, the memory planner
 * replaces this with the real arena plan. */
static void memory_estimate(const kf_graph *g, int64_t *total, int64_t *peak) {
  int nops = kf_graph_count_ops(g);
  size_t nv = g->next_value_id ? g->next_value_id : 1;
  int *last = malloc(sizeof(int) * nv);
  KF_ASSERT(last != NULL);
  for (size_t i = 0; i < nv; i++) last[i] = -1;
  int idx = 0;
  for (const kf_op *op = g->first; op; op = op->next, idx++)
    for (int i = 0; i < op->n_operands; i++)
      if (op->operands[i]) last[op->operands[i]->id] = idx;
  for (int i = 0; i < g->n_outputs; i++) last[g->outputs[i]->id] = nops;
  /* a view keeps its base alive: propagate last use to the base chain */
  for (const kf_op *op = g->last; op; op = op->prev)
    if (is_view(op) && op->n_operands && op->operands[0])
      for (int r = 0; r < op->n_results; r++)
        if (last[op->results[r]->id] > last[op->operands[0]->id])
          last[op->operands[0]->id] = last[op->results[r]->id];
  int64_t live = 0, pk = 0, tot = 0;
  int64_t *free_at = calloc((size_t)nops + 2, sizeof(int64_t));
  KF_ASSERT(free_at != NULL);
  idx = 0;
  for (const kf_op *op = g->first; op; op = op->next, idx++) {
    if (!is_view(op))
      for (int r = 0; r < op->n_results; r++) {
        int64_t b = value_bytes(op->results[r]);
        int l = last[op->results[r]->id];
        if (l < 0) continue; /* unused result: not counted */
        live += b;
        tot += b;
        free_at[l] += b;
      }
    if (live > pk) pk = live;
    live -= free_at[idx];
  }
  free(free_at);
  free(last);
  *total = tot;
  *peak = pk;
}

static int cmd_info(int argc, char **argv, kf_diag *diag) {
  const char *path = NULL, *pipeline = kf_pass_default_pipeline();
  bool print_ir = true;
  for (int i = 0; i < argc; i++) {
    if (kf_cli_is_help(argv[i])) {
      kf_cli_usage(stdout, "info");
      return 0;
    } else if (strcmp(argv[i], "-p") == 0) {
      if (!kf_cli_value(argc, argv, &i, "info", &pipeline, diag)) return 2;
    } else if (strcmp(argv[i], "--no-ir") == 0) {
      print_ir = false;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return kf_cli_unknown("info", argv[i], diag);
    } else if (!path) {
      path = argv[i];
    } else {
      return kf_cli_error("info", diag, "more than one model given ('%s', '%s')", path, argv[i]);
    }
  }
  if (!path) return kf_cli_error("info", diag, "no model given");
  kf_graph *g = NULL;
  kf_status st = load(path, &g, diag);
  if (st == KF_OK) st = kf_graph_verify(g, diag);
  int ops_before = st == KF_OK ? kf_graph_count_ops(g) : 0;
  if (st == KF_OK) st = kf_pass_run_pipeline(g, pipeline, true, diag);
  if (st != KF_OK) {
    kf_graph_destroy(g);
    return 1;
  }
  if (print_ir && kf_graph_print(g, kf_write_file, stdout) != KF_OK) {
    kf_diag_error(diag, "writing to standard output failed");
    kf_graph_destroy(g);
    return 1;
  }
  char b1[64], b2[64];
  printf("\n// model '%s' from %s\n", g->name, g->origin ? g->origin : path);
  printf("// inputs:\n");
  for (int i = 0; i < g->n_inputs; i++) {
    kf_type_str(&g->inputs[i]->type, b1, sizeof b1);
    printf("//   %-24s %s\n", g->input_names[i], b1);
  }
  printf("// outputs:\n");
  for (int i = 0; i < g->n_outputs; i++) {
    kf_type_str(&g->outputs[i]->type, b1, sizeof b1);
    printf("//   #%-23d %s\n", i, b1);
  }
  int count[KF_OP_COUNT] = {0};
  for (const kf_op *op = g->first; op; op = op->next) count[op->code]++;
  printf("// ops: %d after pipeline '%s' (%d before), %d of them weight references\n",
         kf_graph_count_ops(g), pipeline, ops_before, count[KF_OP_PARAM]);
  for (int c = 0; c < KF_OP_COUNT; c++)
    if (count[c] && c != KF_OP_PARAM) printf("//   %-20s %d\n", kf_opcode_name(c), count[c]);
  int64_t wbytes = 0;
  int nw_used = 0;
  for (int i = 0; i < g->n_weights; i++) {
    /* tied weights share one storage record: count it once */
    bool seen = false;
    for (int j = 0; j < i && g->weights[i].storage; j++)
      seen |= g->weights[j].storage && strcmp(g->weights[j].storage, g->weights[i].storage) == 0;
    if (!seen) wbytes += g->weights[i].storage_bytes;
  }
  nw_used = count[KF_OP_PARAM];
  human(wbytes, b1, sizeof b1);
  printf("// weights: %d tensors, %s stored (%d referenced after the pipeline)\n",
         g->n_weights, b1, nw_used);
  int64_t total, peak;
  memory_estimate(g, &total, &peak);
  human(total, b1, sizeof b1);
  human(peak, b2, sizeof b2);
  printf("// activations: %s materialised in all, %s peak live (naive plan, no reuse across ops)\n",
         b1, b2);
  kf_graph_destroy(g);
  return 0;
}

/* ---- opt ----------------------------------------------------------------- */

static int cmd_opt(int argc, char **argv, kf_diag *diag) {
  const char *path = NULL, *pipeline = "", *outp = NULL;
  bool verify = true;
  for (int i = 0; i < argc; i++) {
    if (kf_cli_is_help(argv[i])) {
      kf_cli_usage(stdout, "opt");
      return 0;
    } else if (strcmp(argv[i], "-p") == 0) {
      if (!kf_cli_value(argc, argv, &i, "opt", &pipeline, diag)) return 2;
    } else if (strcmp(argv[i], "-o") == 0) {
      if (!kf_cli_value(argc, argv, &i, "opt", &outp, diag)) return 2;
    } else if (strcmp(argv[i], "--no-verify") == 0) {
      verify = false;
    } else if (strcmp(argv[i], "--list-passes") == 0) {
      int n;
      const kf_pass_info *p = kf_pass_list(&n);
      for (int k = 0; k < n; k++) printf("%-12s %s\n", p[k].name, p[k].summary);
      for (const char *const *nm = (const char *const[]){"default", "compile", "reference", NULL}; *nm; nm++)
        printf("%-12s %s\n", *nm, kf_pass_pipeline(*nm));
      return 0;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return kf_cli_unknown("opt", argv[i], diag);
    } else if (!path) {
      path = argv[i];
    } else {
      return kf_cli_error("opt", diag, "more than one file given ('%s', '%s')", path, argv[i]);
    }
  }
  if (!path) return kf_cli_error("opt", diag, "no file given ('-' reads standard input)");
  kf_graph *g = NULL;
  kf_status st = load(path, &g, diag);
  if (st == KF_OK && verify) st = kf_graph_verify(g, diag);
  if (st == KF_OK) st = kf_pass_run_pipeline(g, pipeline, verify, diag);
  if (st == KF_OK) {
    FILE *f = outp ? fopen(outp, "w") : stdout;
    if (!f) {
      kf_diag_error(diag, "%s: cannot open for writing: %s", outp, strerror(errno));
      st = KF_ERR_IO;
    } else {
      st = kf_graph_print(g, kf_write_file, f);
      if (f != stdout && fclose(f) != 0) st = KF_ERR_IO;
      if (st != KF_OK) kf_diag_error(diag, "%s: write failed", outp ? outp : "<stdout>");
    }
  }
  kf_graph_destroy(g);
  return st == KF_OK ? 0 : 1;
}

/* ---- run ----------------------------------------------------------------- */

static int cmd_run(int argc, char **argv, kf_diag *diag) {
  const char *path = NULL, *io = NULL, *pipeline = "";
  double atol = -1, rtol = -1;
  bool graph = false;
  for (int i = 0; i < argc; i++) {
    const char *v;
    if (kf_cli_is_help(argv[i])) {
      kf_cli_usage(stdout, "run");
      return 0;
    } else if (strcmp(argv[i], "--io") == 0) {
      if (!kf_cli_value(argc, argv, &i, "run", &io, diag)) return 2;
    } else if (strcmp(argv[i], "--atol") == 0 || strcmp(argv[i], "--rtol") == 0) {
      /* a NaN tolerance would make every comparison pass */
      const char *opt = argv[i];
      if (!kf_cli_value(argc, argv, &i, "run", &v, diag) ||
          !kf_cli_double("run", opt, v, 0, INFINITY, opt[2] == 'a' ? &atol : &rtol, diag))
        return 2;
    } else if (strcmp(argv[i], "-p") == 0) {
      if (!kf_cli_value(argc, argv, &i, "run", &pipeline, diag)) return 2;
    } else if (strcmp(argv[i], "--graph") == 0) {
      graph = true;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return kf_cli_unknown("run", argv[i], diag);
    } else if (!path) {
      path = argv[i];
    } else {
      return kf_cli_error("run", diag, "more than one model given ('%s', '%s')", path, argv[i]);
    }
  }
  if (!path) return kf_cli_error("run", diag, "no model or module given");
  if (!io) return kf_cli_error("run", diag, "--io FILE.kfio is required");
  size_t plen = strlen(path);
  if (plen > 3 && strcmp(path + plen - 3, ".so") == 0)
    return kf_cmd_run_module(path, io, atol, rtol, graph, diag);
  kf_graph *g = NULL;
  kf_io_file f;
  memset(&f, 0, sizeof f);
  kf_tensor *outs = NULL, *ins = NULL;
  int rc = 1;
  kf_status st = load(path, &g, diag);
  if (st == KF_OK) st = kf_graph_verify(g, diag);
  if (st == KF_OK) st = kf_pass_run_pipeline(g, pipeline, true, diag);
  if (st == KF_OK) st = kf_io_read(io, &f, diag);
  if (st != KF_OK) goto done;
  if (f.n_inputs != g->n_inputs || f.n_outputs != g->n_outputs) {
    kf_diag_error(diag, "%s: has %d inputs and %d outputs, the model %d and %d", io,
                  f.n_inputs, f.n_outputs, g->n_inputs, g->n_outputs);
    goto done;
  }
  ins = calloc((size_t)f.n_inputs + 1, sizeof *ins);
  outs = calloc((size_t)g->n_outputs + 1, sizeof *outs);
  if (!ins || !outs) goto done;
  for (int i = 0; i < f.n_inputs; i++) ins[i] = f.inputs[i].t;
  if (kf_interp_run(g, ins, f.n_inputs, outs, NULL, diag) != KF_OK) goto done;
  if (atol < 0) atol = f.atol;
  if (rtol < 0) rtol = f.rtol;
  rc = 0;
  for (int i = 0; i < g->n_outputs; i++) {
    char what[256];
    snprintf(what, sizeof what, "%s: output %d (%s)", path, i, f.outputs[i].name);
    if (kf_tensor_compare(&outs[i], &f.outputs[i].t, atol, rtol, what, diag) != KF_OK)
      rc = 1;
  }
  if (rc == 0)
    printf("%s: %d outputs match the recorded PyTorch outputs (atol %g, rtol %g)\n",
           path, g->n_outputs, atol, rtol);
done:
  if (outs)
    for (int i = 0; i < g->n_outputs; i++) kf_tensor_fini(&outs[i]);
  free(outs);
  free(ins);
  kf_io_fini(&f);
  kf_graph_destroy(g);
  return rc;
}

/* ---- partition ----------------------------------------------------------- */

static int cmd_partition(int argc, char **argv, kf_diag *diag) {
  const char *path = NULL, *pipeline = kf_pass_pipeline("compile");
  kf_partition_options po;
  kf_partition_options_init(&po);
  bool canonical = false;
  for (int i = 0; i < argc; i++) {
    const char *v;
    if (kf_cli_is_help(argv[i])) {
      kf_cli_usage(stdout, "partition");
      return 0;
    } else if (strcmp(argv[i], "-p") == 0) {
      if (!kf_cli_value(argc, argv, &i, "partition", &pipeline, diag)) return 2;
    } else if (strcmp(argv[i], "--no-fuse") == 0) {
      po.fuse = false;
    } else if (strcmp(argv[i], "--no-horizontal") == 0) {
      po.horizontal = false;
    } else if (strcmp(argv[i], "--canonical") == 0) {
      canonical = true;
    } else if (strcmp(argv[i], "--precision") == 0) {
      if (!kf_cli_value(argc, argv, &i, "partition", &v, diag)) return 2;
      if (!kf_precision_parse(v, &po.precision))
        return kf_cli_error("partition", diag, "--precision takes default, tf32, bf16, fp16 or fp32, not '%s'", v);
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return kf_cli_unknown("partition", argv[i], diag);
    } else if (path) {
      return kf_cli_error("partition", diag, "more than one model given ('%s', '%s')", path, argv[i]);
    } else {
      path = argv[i];
    }
  }
  if (!path) return kf_cli_error("partition", diag, "no model given");
  kf_graph *g = NULL;
  kf_partition *p = NULL;
  kf_memplan *m = NULL;
  kf_status st = load(path, &g, diag);
  if (st == KF_OK) st = kf_graph_verify(g, diag);
  if (st == KF_OK) st = kf_pass_run_pipeline(g, pipeline, true, diag);
  if (st == KF_OK) st = kf_partition_graph(g, &po, &p, diag);
  if (st == KF_OK) st = kf_memplan_build(p, 0, &m, diag);
  if (st == KF_OK && kf_partition_print(p, kf_write_file, stdout) != KF_OK) st = KF_ERR_IO;
  if (st == KF_OK && canonical)
    for (int i = 0; i < p->n_groups; i++) {
      printf("// canonical form of group %d (key %s):\n", i, p->groups[i].key_hex);
      for (const char *l = p->groups[i].canonical; *l;) {
        const char *e = strchr(l, '\n');
        int n = e ? (int)(e - l) : (int)strlen(l);
        printf("//   %.*s\n", n, l);
        l += n + (e ? 1 : 0);
      }
    }
  if (st == KF_OK) {
    int regions = 0, in_place = 0, kernels = 0, unique = 0;
    for (size_t v = 0; v < g->next_value_id; v++) {
      const kf_storage *s = &m->storage[v];
      regions += s->kind == KF_STORAGE_ARENA && s->base && s->base->id == v;
      in_place += s->kind == KF_STORAGE_OUTPUT;
    }
    for (int i = 0; i < p->n_groups; i++) {
      if (p->groups[i].kind == KF_GROUP_VIEW) continue;
      kernels++;
      bool seen = false;
      for (int j = 0; j < i && !seen; j++)
        seen = p->groups[j].kind != KF_GROUP_VIEW &&
               strcmp(p->groups[j].key_hex, p->groups[i].key_hex) == 0;
      unique += !seen;
    }
    char b1[64], b2[64];
    human(m->arena_bytes, b1, sizeof b1);
    human(m->naive_bytes, b2, sizeof b2);
    printf("// %d groups with kernels (%d distinct keys), %d ops after pipeline '%s'\n", kernels,
           unique, kf_graph_count_ops(g), pipeline);
    printf("// memory plan: arena %s with reuse (%s without), %d regions; %d outputs written in "
           "place\n", b1, b2, regions, in_place);
  }
  if (st == KF_ERR_IO) kf_diag_error(diag, "writing to standard output failed");
  kf_memplan_destroy(m);
  kf_partition_destroy(p);
  kf_graph_destroy(g);
  return st == KF_OK ? 0 : 1;
}

/* ---- ops ----------------------------------------------------------------- */

static void print_aten(void *user, const char *schema, const char *lowering) {
  (void)user;
  printf("%-90s -> %s\n", schema, lowering);
}

static int cmd_ops(int argc, char **argv, kf_diag *diag) {
  bool aten = false;
  for (int i = 0; i < argc; i++) {
    if (kf_cli_is_help(argv[i])) {
      kf_cli_usage(stdout, "ops");
      return 0;
    } else if (strcmp(argv[i], "--aten") == 0) {
      aten = true;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return kf_cli_unknown("ops", argv[i], diag);
    } else {
      return kf_cli_error("ops", diag, "takes no argument ('%s')", argv[i]);
    }
  }
  if (aten) {
    kf_aten_list(print_aten, NULL);
    return 0;
  }
  for (int c = 0; c < KF_OP_COUNT; c++) {
    const kf_op_info *info = kf_op_info_get(c);
    printf("kf.%-18s (", info->name);
    for (int i = 0; i < info->n_operand_slots; i++)
      printf("%s%s%s%s", i ? ", " : "", info->operands[i].name,
             info->operands[i].optional ? "?" : "", info->operands[i].variadic ? "..." : "");
    printf(")");
    for (int i = 0; i < info->n_attrs; i++)
      printf("%s%s:%c%s", i ? " " : " {", info->attrs[i].name, (char)info->attrs[i].kind,
             info->attrs[i].optional ? "?" : "");
    printf("%s\n", info->n_attrs ? "}" : "");
  }
  printf("\n`kfuse ops --aten` lists the ATen overloads the frontends accept.\n");
  return 0;
}

int main(int argc, char **argv) {
  kf_diag diag;
  kf_diag_init(&diag, NULL, NULL);
  if (argc < 2) return kf_cli_usage_all(stderr), 2;
  const char *cmd = argv[1];
  if (strcmp(cmd, "info") == 0) return cmd_info(argc - 2, argv + 2, &diag);
  if (strcmp(cmd, "opt") == 0) return cmd_opt(argc - 2, argv + 2, &diag);
  if (strcmp(cmd, "run") == 0) return cmd_run(argc - 2, argv + 2, &diag);
  if (strcmp(cmd, "ops") == 0) return cmd_ops(argc - 2, argv + 2, &diag);
  if (strcmp(cmd, "partition") == 0) return cmd_partition(argc - 2, argv + 2, &diag);
  if (strcmp(cmd, "compile") == 0) return kf_cmd_compile(argc - 2, argv + 2, &diag);
  if (strcmp(cmd, "task") == 0) return kf_cmd_task(argc - 2, argv + 2, &diag);
  if (strcmp(cmd, "tasks") == 0) return kf_cmd_tasks(argc - 2, argv + 2, &diag);
  if (strcmp(cmd, "judge") == 0) return kf_cmd_judge(argc - 2, argv + 2, &diag);
  if (strcmp(cmd, "judge-worker") == 0) return kf_judge_worker_main(); /* started by the judge */
  if (strcmp(cmd, "judge-compile") == 0) return kf_judge_compile_main();
  if (strcmp(cmd, "module-check-worker") == 0) return kf_judge_module_check_main(argc, argv, kf_compile_graph); /* kfuse compile's */
  if (strcmp(cmd, "bench") == 0) return kf_cmd_bench(argc - 2, argv + 2, &diag);
  if (strcmp(cmd, "agent") == 0) return kf_cmd_agent(argc - 2, argv + 2, &diag);
  if (strcmp(cmd, "serve") == 0) return kf_cmd_serve(argc - 2, argv + 2, &diag);
  if (strcmp(cmd, "cache") == 0) return kf_cmd_cache(argc - 2, argv + 2, &diag);
  if (strcmp(cmd, "warm") == 0) return kf_cmd_warm(argc - 2, argv + 2, &diag);
  if (strcmp(cmd, "llm-chat") == 0) return kf_cmd_llm_chat(argc - 2, argv + 2, &diag);
  if (strcmp(cmd, "version") == 0 || strcmp(cmd, "--version") == 0) {
    if (argc > 2 && kf_cli_is_help(argv[2])) {
      kf_cli_usage(stdout, "version");
      return 0;
    }
    if (argc > 2) return kf_cli_error("version", &diag, "takes no argument ('%s')", argv[2]);
    printf("kfuse %s\n", KFUSE_VERSION);
    return 0;
  }
  if (strcmp(cmd, "help") == 0 || kf_cli_is_help(cmd)) {
    if (argc > 2) { /* kfuse help CMD */
      kf_cli_usage(stdout, argv[2]);
      return 0;
    }
    kf_cli_usage_all(stdout);
    return 0;
  }
  fprintf(stderr, "kfuse: error: unknown command '%s'\n", cmd);
  kf_cli_usage_all(stderr);
  return 2;
}
