/* tools/cmd_compile.c — `kfuse compile`: a model in, a module out.
 *
 *   kfuse compile MODEL -o OUT.so [--emit so|obj] [--target sm_90|sm_90a]
 *                 [--precision default|tf32|bf16|fp16|fp32] [--report R.json]
 *                 [--embed-weights] [--no-fuse] [--no-horizontal] [--no-cudnn]
 *                 [--no-channels-last] [--channels-last-all] [--no-judge] [--judge-all] [--no-verify-module]
 *                 [--judge-timeout S] [--unit KEY=DIR ...] [--reference] [--prefix NAME] [--kernel-option KEY=N ...] [-q]
 *                 [--cache DIR | --no-cache] [--require-cached] [--reverify] [--offline]
 *                 [--remote URL [--remote-read-only] [--remote-timeout S]]
 *                 [--agent llm --endpoint URL --model NAME [--agent-groups N] [--agent-jobs N]
 *                  [--agent-gpus N] [--agent-tokens N] [--agent-seconds S] [--agent-turns N]
 *                  [--agent-judge N] [--agent-session-tokens N] [--agent-session-seconds S]
 *                  [--agent-target F] [--agent-dir DIR] [--api-key-env NAME] [--temperature T]
 *                  [--max-tokens N] [--timeout S] [--retries N] [--backoff S]]
 *
 * --kernel-option forces a template choice on every group instead of the
 * rule's: block=N threads a block, vec=N elements a vector access, tpr=N
 * threads a row (reductions), cache=N values a thread kept in registers
 * between a normalisation's phases (-1: read the row again instead), occ=N
 * resident threads a SM asked of ptxas for row kernels (sets the register
 * budget), attn_scratch=N KiB of attention scores held at once by the
 * GEMM-softmax-GEMM lowering (the batch is chunked to fit; 256 MiB by
 * rule), ctpr=N threads splitting each row and cblock=N threads a block of
 * reductions over an outer dim (the column layout), unroll=N the unroll
 * factor of a row kernel's reduced loop.
 *
 * Needs no GPU: kernels are compiled with NVRTC; with a GPU of the target's
 * arch here (and no --no-judge, formerly --no-tune) the candidates of each
 * group with choices (the rule's unit and the built-in policy's variants)
 * are judged on it by the kernel environment's judge (judge/pick.c: fresh
 * inputs against the fp64 reference, timed in a worker process) and the
 * fastest verified kept; --judge-all judges every group, so every kernel of
 * the module is verified on this GPU. Without a GPU choices are by rule
 * (the report says which). --unit KEY=DIR puts the unit in DIR (one written
 * for the task of the group with canonical key KEY, as an agent or a person
 * writes it) into the module once the judge has verified it here; never
 * unverified. --agent llm runs LLM agent sessions on the groups first
 * (tools/compile_agent.c) and hands their verified units in the same way:
 * the built-in units stay wherever none is verified. The kernel cache
 * (driver/units.c, docs/CACHE.md) is looked up for every group before
 * anything is built and given what was verified; its options are shared
 * with kfuse warm (tools/cmd_warm.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kfuse/agent_loop.h"
#include "kfuse/compile.h"
#include "kfuse/frontend.h"
#include "kfuse/judge.h"
#include "tools_int.h"

/* --kernel-option KEY=N: a template choice forced on every group */
static bool kernel_option(kf_compile_options *o, const char *s, kf_diag *diag) {
  static const struct {
    const char *key;
    int lo, hi;
    bool pow2;
  } keys[] = {{"block", 32, 1024, true},    {"vec", 1, 8, true},      {"tpr", 1, 1024, true},
              {"cache", -1, 32, false},      {"occ", 32, 2048, false},
              {"attn_scratch", 1, 1 << 24, false}, {"ctpr", 1, 32, true},  {"cblock", 32, 1024, true},
              {"unroll", 1, 16, true},      {"tilea", 1, 1024, true}, {"tilet", 1, 1024, true},
              {"rsplit", 1, 4096, false}};
  const char *eq = strchr(s, '=');
  char *end = NULL;
  long v = eq ? strtol(eq + 1, &end, 10) : 0;
  for (size_t i = 0; eq && i < sizeof keys / sizeof keys[0]; i++) {
    if (strlen(keys[i].key) != (size_t)(eq - s) || strncmp(s, keys[i].key, (size_t)(eq - s))) continue;
    if (end == eq + 1 || *end || v < keys[i].lo || v > keys[i].hi || (keys[i].pow2 && (v & (v - 1)))) {
      kf_diag_error(diag, "--kernel-option %s: %s takes %s from %d to %d", s, keys[i].key,
                    keys[i].pow2 ? "a power of two" : "an integer", keys[i].lo, keys[i].hi);
      return false;
    }
    int *f[] = {&o->block_size, &o->vector_width, &o->row_threads, &o->row_cache, &o->row_occupancy,
                &o->attn_scratch_kib, &o->col_threads, &o->col_block, &o->row_unroll,
                &o->tile_a, &o->tile_t, &o->row_split};
    *f[i] = (int)v;
    return true;
  }
  kf_diag_error(diag, "--kernel-option '%s': expected block=N, vec=N, tpr=N, cache=N, occ=N, attn_scratch=N, "
                "ctpr=N, cblock=N, unroll=N, tilea=N, tilet=N or rsplit=N", s);
  return false;
}

int kf_cli_agent_option(int argc, char **argv, int *i, const char *cmd, bool *agent, const char **agent_dir,
                        kf_agent_options *ao, kf_compile_agent_options *cao, kf_diag *diag) {
  const char *a = argv[*i], *v;
  long long nn;
  double sec;
  int k = kf_cli_llm_option(argc, argv, i, cmd, &ao->llm, diag);
  if (k != 0) return k;
  if (strcmp(a, "--agent") == 0) {
    if (!kf_cli_value(argc, argv, i, cmd, &v, diag)) return -1;
    if (strcmp(v, "llm") != 0 && strcmp(v, "builtin") != 0)
      return kf_cli_error(cmd, diag, "--agent takes llm or builtin, not '%s'", v), -1;
    *agent = strcmp(v, "llm") == 0;
  } else if (strcmp(a, "--agent-dir") == 0) {
    if (!kf_cli_value(argc, argv, i, cmd, agent_dir, diag)) return -1;
  } else if (strcmp(a, "--agent-groups") == 0 || strcmp(a, "--agent-turns") == 0 ||
             strcmp(a, "--agent-judge") == 0 || strcmp(a, "--agent-jobs") == 0 ||
             strcmp(a, "--agent-gpus") == 0) {
    if (!kf_cli_value(argc, argv, i, cmd, &v, diag) || !kf_cli_int(cmd, a, v, 1, 100000, &nn, diag)) return -1;
    if (strcmp(a, "--agent-groups") == 0) cao->groups = (int)nn;
    else if (strcmp(a, "--agent-turns") == 0) ao->max_turns = (int)nn;
    else if (strcmp(a, "--agent-jobs") == 0) cao->jobs = (int)nn;
    else if (strcmp(a, "--agent-gpus") == 0) cao->gpus = (int)nn;
    else ao->max_judge = (int)nn;
  } else if (strcmp(a, "--agent-tokens") == 0 || strcmp(a, "--agent-session-tokens") == 0) {
    if (!kf_cli_value(argc, argv, i, cmd, &v, diag) || !kf_cli_int(cmd, a, v, 1, 1000000000000LL, &nn, diag))
      return -1;
    if (strcmp(a, "--agent-tokens") == 0) cao->tokens = nn;
    else ao->max_tokens = nn;
  } else if (strcmp(a, "--agent-seconds") == 0 || strcmp(a, "--agent-session-seconds") == 0) {
    if (!kf_cli_value(argc, argv, i, cmd, &v, diag) || !kf_cli_double(cmd, a, v, 1, 1e7, &sec, diag)) return -1;
    if (strcmp(a, "--agent-seconds") == 0) cao->seconds = sec;
    else ao->max_seconds = sec;
  } else if (strcmp(a, "--agent-target") == 0) {
    if (!kf_cli_value(argc, argv, i, cmd, &v, diag) ||
        !kf_cli_double(cmd, a, v, 0.001, 1, &ao->target_fraction, diag))
      return -1;
  } else {
    return 0;
  }
  return 1;
}

void kf_cli_compile_judge_options(kf_judge_options *jo, double timeout_s) {
  /* candidates judged as kfuse judge judges them, with 100 ms of timed runs
   * each (the median of at least 10) */
  kf_judge_options_init(jo);
  jo->min_time_ms = 100;
  jo->timeout_s = timeout_s;
  /* groups whose input sets and references would hold more than 4 GiB on
   * the host are not judged at compile time: drawing and checking them
   * there costs more than a compile should (KernelBench L1 40, 268 MB a
   * tensor: 66 s) */
  jo->max_host_bytes = 4.0 * (1 << 30);
}

/* What `kfuse compile`'s arguments say */
enum { MAX_GIVEN = 64 };
typedef struct compile_args {
  kf_compile_options o;
  const char *in, *out;
  bool judge_all, judge_seconds_given, no_verify_module;
  const char *given_keys[MAX_GIVEN], *given_dirs[MAX_GIVEN]; /* --unit KEY=DIR (keys malloc'd) */
  int n_given;
  double judge_timeout;
  /* --agent llm: sessions before the compile (driver/compile_agent.c) */
  bool agent;
  kf_agent_options ao;
  const char *agent_dir;
  kf_compile_agent_options cao;
  kf_cli_cache cc;
} compile_args;

/* The options one by one into a; -1 when the compile should go on, else
 * the command's exit status (0 after --help, 2 for bad usage) */
static int parse_args(int argc, char **argv, compile_args *a, kf_diag *diag) {
  kf_compile_options *o = &a->o;
  for (int i = 0; i < argc; i++) {
    const char *arg = argv[i], *v;
    int k = kf_cli_agent_option(argc, argv, &i, "compile", &a->agent, &a->agent_dir, &a->ao, &a->cao, diag);
    if (k == 0) k = kf_cli_cache_option(argc, argv, &i, "compile", &a->cc, diag);
    /* --precision, --target, --no-fuse, --no-horizontal, --no-cudnn,
     * --no-channels-last, -q: as kfuse task and kfuse tasks take them */
    if (k == 0) k = kf_cli_task_option(argc, argv, &i, "compile", o, diag);
    if (k < 0) return 2;
    if (k > 0) continue;
    if (kf_cli_is_help(arg)) {
      kf_cli_usage(stdout, "compile");
      return 0;
    } else if (strcmp(arg, "-o") == 0) {
      if (!kf_cli_value(argc, argv, &i, "compile", &a->out, diag)) return 2;
    } else if (strcmp(arg, "--emit") == 0) {
      if (!kf_cli_value(argc, argv, &i, "compile", &v, diag)) return 2;
      if (strcmp(v, "so") == 0) o->emit = KF_EMIT_SO;
      else if (strcmp(v, "obj") == 0) o->emit = KF_EMIT_OBJ;
      else return kf_cli_error("compile", diag, "--emit takes so or obj, not '%s'", v);
    } else if (strcmp(arg, "--report") == 0) {
      if (!kf_cli_value(argc, argv, &i, "compile", &o->report_path, diag)) return 2;
    } else if (strcmp(arg, "--prefix") == 0) {
      if (!kf_cli_value(argc, argv, &i, "compile", &o->prefix, diag)) return 2;
    } else if (strcmp(arg, "--embed-weights") == 0) {
      o->embed_weights = true;
    } else if (strcmp(arg, "--no-judge") == 0 || strcmp(arg, "--no-tune") == 0) {
      o->no_tune = true;
    } else if (strcmp(arg, "--judge-all") == 0) {
      a->judge_all = true;
    } else if (strcmp(arg, "--unit") == 0) {
      if (!kf_cli_value(argc, argv, &i, "compile", &v, diag)) return 2;
      const char *eq = strchr(v, '=');
      if (!eq || eq - v != 64 || !eq[1] || strspn(v, "0123456789abcdef") != 64)
        return kf_cli_error("compile", diag, "--unit takes KEY=DIR, KEY a group's 64-hex-digit key, not '%s'", v);
      if (a->n_given >= MAX_GIVEN) return kf_cli_error("compile", diag, "more than %d --unit options", MAX_GIVEN);
      a->given_keys[a->n_given] = strndup(v, 64);
      a->given_dirs[a->n_given] = eq + 1;
      if (!a->given_keys[a->n_given]) return 1;
      a->n_given++;
    } else if (strcmp(arg, "--judge-seconds") == 0) {
      if (!kf_cli_value(argc, argv, &i, "compile", &v, diag)) return 2;
      if (!kf_cli_double("compile", arg, v, 0, 1e7, &o->judge_seconds, diag)) return 2;
      a->judge_seconds_given = true;
    } else if (strcmp(arg, "--judge-timeout") == 0) {
      if (!kf_cli_value(argc, argv, &i, "compile", &v, diag)) return 2;
      char *end = NULL;
      a->judge_timeout = strtod(v, &end);
      if (end == v || *end || !(a->judge_timeout >= 1 && a->judge_timeout <= 3600))
        return kf_cli_error("compile", diag, "--judge-timeout takes seconds from 1 to 3600, not '%s'", v);
    } else if (strcmp(arg, "--no-verify-module") == 0) {
      a->no_verify_module = true;
    } else if (strcmp(arg, "--channels-last-all") == 0) {
      o->channels_last_all = true;
    } else if (strcmp(arg, "--kernel-option") == 0) {
      if (!kf_cli_value(argc, argv, &i, "compile", &v, diag)) return 2;
      if (!kernel_option(o, v, diag)) return 2;
    } else if (strcmp(arg, "--reference") == 0) {
      o->reference = true;
    } else if (strcmp(arg, "--require-cached") == 0) {
      o->require_cached = true;
    } else if (strcmp(arg, "--reverify") == 0) {
      o->reverify = true;
    } else if (arg[0] == '-' && arg[1]) {
      return kf_cli_unknown("compile", arg, diag);
    } else if (!a->in) {
      a->in = arg;
    } else {
      return kf_cli_error("compile", diag, "more than one model given ('%s', '%s')", a->in, arg);
    }
  }
  return -1;
}

/* The options that contradict each other or are missing: the exit status
 * 2 with a message, or -1 */
static int check_args(compile_args *a, kf_diag *diag) {
  kf_compile_options *o = &a->o;
  if (!a->in) return kf_cli_error("compile", diag, "no model given");
  if (!a->out) return kf_cli_error("compile", diag, "-o OUT.so is required");
  if (o->prefix && o->emit != KF_EMIT_OBJ) {
    kf_diag_error(diag, "--prefix applies to --emit obj only (a .so exports kfuse_model_*)");
    return 2;
  }
  if (a->judge_all && o->no_tune) {
    kf_diag_error(diag, "--judge-all and --no-judge contradict each other");
    return 2;
  }
  if (a->judge_all && !a->judge_seconds_given) o->judge_seconds = 0; /* every group verified, however long */
  if (!kf_cli_cache_usage_ok(&a->cc, "compile", diag)) return 2;
  if (a->agent && a->cc.offline)
    return kf_cli_error("compile", diag, "--offline never calls an LLM: drop --agent llm or --offline");
  if (a->agent && o->require_cached)
    return kf_cli_error("compile", diag, "--require-cached builds from the cache alone: drop --agent llm");
  if ((o->require_cached || o->reverify) && a->cc.off)
    return kf_cli_error("compile", diag, "%s needs the kernel cache: drop --no-cache",
                        o->require_cached ? "--require-cached" : "--reverify");
  if (a->agent && (!a->ao.llm.endpoint || !a->ao.llm.model))
    return kf_cli_error("compile", diag, "--agent llm needs --endpoint and --model");
  return -1;
}

/* --agent llm: the sessions on the model's groups before the compile; their
 * verified units join the given ones (*ag keeps their directories' names).
 * False only when out of memory. */
static bool agent_units(compile_args *a, char *adir, size_t adir_n, kf_compile_given **ag, kf_diag *diag) {
  if (!a->agent_dir) {
    snprintf(adir, adir_n, "%s.agent", a->out);
    a->agent_dir = adir;
  }
  *ag = calloc(1, sizeof **ag);
  if (!*ag) return false;
  a->cao.judge.timeout_s = a->judge_timeout;
  kf_status as = kf_compile_agent(a->in, &a->o, &a->ao, a->agent_dir, &a->cao, *ag, diag);
  if (as != KF_OK) {
    /* the built-in policy still gives a module */
    kf_diag_warn(diag, "the agent sessions did not finish (%s); compiling with the built-in units",
                 kf_status_str(as));
  }
  if (a->n_given + (*ag)->n > MAX_GIVEN)
    kf_diag_warn(diag, "%d verified agent units left out: at most %d units are given to one compile",
                 a->n_given + (*ag)->n - MAX_GIVEN, MAX_GIVEN);
  for (int k = 0; k < (*ag)->n && a->n_given < MAX_GIVEN; k++) {
    a->given_keys[a->n_given] = strdup((*ag)->keys[k]);
    if (!a->given_keys[a->n_given]) return false;
    a->given_dirs[a->n_given++] = (*ag)->dirs[k];
  }
  a->o.llm_endpoint = a->ao.llm.endpoint;
  return true;
}

int kf_cmd_compile(int argc, char **argv, kf_diag *diag) {
  compile_args *a = calloc(1, sizeof *a);
  if (!a) return 1;
  kf_compile_options *o = &a->o;
  kf_compile_options_init(o);
  o->progress = true;
  a->judge_timeout = 60;
  kf_agent_options_init(&a->ao);
  kf_compile_agent_options_init(&a->cao);
  kf_compile_given *ag = NULL;
  int rc = parse_args(argc, argv, a, diag);
  if (rc < 0) rc = check_args(a, diag);
  if (rc >= 0) goto out;
  kf_judge_options jo;
  kf_cli_compile_judge_options(&jo, a->judge_timeout);
  kf_judge_picker jp;
  kf_judge_picker_init(&jp, &jo, a->judge_all);
  o->picker = &jp.picker;
  char adir[4200];
  if (a->agent && !agent_units(a, adir, sizeof adir, &ag, diag)) {
    rc = 1;
    goto out;
  }
  o->n_given = a->n_given;
  o->given_keys = a->given_keys;
  o->given_dirs = a->given_dirs;
  kf_status st = kf_cli_cache_open(&a->cc, "compile", &o->cache, &o->remote, diag);
  if (!st && (o->require_cached || o->reverify) && !o->cache) {
    kf_diag_error(diag, "%s needs the kernel cache, and none could be opened",
                  o->require_cached ? "--require-cached" : "--reverify");
    st = KF_ERR_IO;
  }
  /* the whole module checked against the fp64 reference before it is
   * written (judge/module_check.c); on a mismatch, compiled again with the
   * safer lowerings in turn, each checked likewise */
  kf_judge_module_checker mck;
  kf_judge_module_checker_init(&mck, a->in);
  kf_module_check mres;
  memset(&mres, 0, sizeof mres);
  if (!a->no_verify_module && o->emit == KF_EMIT_SO && !o->reference && st == KF_OK) {
    o->checker = &mck.checker;
    o->check_out = &mres;
    /* the reference is built while the module is compiled */
    kf_judge_module_checker_start(&mck, o);
  }
  if (st == KF_OK) st = kf_compile_file(a->in, o, a->out, diag);
  kf_judge_module_checker_fini(&mck);
  /* the sessions into the report; the module stands whatever happens here */
  if (st == KF_OK && a->agent && o->report_path &&
      kf_compile_agent_report(a->agent_dir, o->report_path, o->progress, diag))
    kf_diag_warn(diag, "the agent sessions are not in the report %s (see %s/agent.json)", o->report_path,
                 a->agent_dir);
  kf_cli_cache_close(o->cache, o->remote);
  rc = st == KF_OK ? 0 : 1;
out:
  for (int k = 0; k < a->n_given; k++) free((char *)a->given_keys[k]);
  free(ag);
  free(a);
  return rc;
}
