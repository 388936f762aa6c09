/* tools/cli.c — what every kfuse subcommand shares on its command line: its
 * usage text (`kfuse CMD --help` prints it and exits 0; a usage error prints
 * one "kfuse: error: CMD: ..." line naming the option, then it, and exits
 * 2), options that take a value (a missing value is named: "option -o
 * needs a value"), and strict number parsing (the whole argument, finite,
 * in range: "nan", "inf", "1e9" for an integer, "12x", overflow and
 * negative counts are refused instead of becoming 0, 1 or a comparison
 * that always passes). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools_int.h"

typedef struct command {
  const char *name, *synopsis, *text;
} command;

static const command commands[] = {
    {"info", "info MODEL [-p PIPELINE] [--no-ir]",
     "        load MODEL (.pt2 or MLIR text), run the default pipeline and print\n"
     "        the partition-ready IR and a summary: ops, weights, memory\n"},
    {"opt", "opt FILE [-p PIPELINE] [-o OUT] [--no-verify] [--list-passes]",
     "        print FILE's IR after the passes in PIPELINE (comma-separated\n"
     "        pass names, or the named pipelines default, compile, reference;\n"
     "        default: none); '-' reads standard input\n"},
    {"run", "run MODEL --io FILE.kfio [--atol A] [--rtol R] [-p PIPELINE]",
     "        run the CPU reference interpreter (fp64) on the inputs recorded\n"
     "        in FILE.kfio and compare with the outputs recorded there; A and R\n"
     "        (finite, >= 0) replace the file's tolerances\n"},
    {"partition",
     "partition MODEL [-p PIPELINE] [--no-fuse] [--no-horizontal] [--precision P]\n"
     "            [--canonical]",
     "        run the compile passes (or PIPELINE), cut the graph into fusion groups\n"
     "        and plan its memory; print the groups (kind, ops, inputs, outputs,\n"
     "        key; --canonical: their canonical forms) and the arena size;\n"
     "        --no-horizontal keeps sibling element-wise groups apart\n"},
    {"compile",
     "compile MODEL -o OUT.so [--emit so|obj] [--target sm_90|sm_90a]\n"
     "          [--precision default|tf32|bf16|fp16|fp32] [--report R.json]\n"
     "          [--embed-weights] [--no-fuse] [--no-horizontal] [--no-cudnn]\n"
     "          [--no-channels-last] [--channels-last-all] [--no-judge] [--judge-all]\n"
     "          [--no-verify-module]\n"
     "          [--judge-timeout S] [--judge-seconds S] [--unit KEY=DIR ...] [--reference]\n"
     "          [--prefix NAME] [--kernel-option KEY=N ...] [-q]\n"
     "          [--cache DIR | --no-cache] [--require-cached] [--reverify] [--offline]\n"
     "          [--remote URL [--remote-read-only] [--remote-timeout S]]\n"
     "          [--agent llm --endpoint URL --model NAME [--agent-groups N] [--agent-jobs N]\n"
     "           [--agent-gpus N] [--agent-tokens N] [--agent-seconds S] [--agent-turns N]\n"
     "           [--agent-judge N] [--agent-session-tokens N] [--agent-session-seconds S]\n"
     "           [--agent-target F] [--agent-dir DIR] [LLM options as llm-chat's]]",
     "        compile MODEL into a module linked with the kfuse runtime; weights go\n"
     "        to OUT.so.weights unless embedded; every output is written under a\n"
     "        temporary name and renamed into place (docs/DEPLOY.md); needs no GPU\n"
     "        (kernels are compiled, choices made by rule); with a GPU here, the\n"
     "        candidates of each group with choices are judged on it (verified\n"
     "        against the fp64 reference, timed; as kfuse judge does) and the\n"
     "        fastest verified kept unless --no-judge (--no-tune: the same);\n"
     "        --judge-all judges every group (every kernel verified on this\n"
     "        GPU); a candidate's worker is killed after --judge-timeout seconds\n"
     "        (60); judging takes groups, those moving the most bytes first,\n"
     "        until --judge-seconds of it are spent (30, none with --judge-all;\n"
     "        0: no limit), and the rest keep the rule's unit; --unit KEY=DIR\n"
     "        uses the unit in DIR (written for the task of the group with key\n"
     "        KEY) once it is verified here (never without a GPU); convolutions\n"
     "        run on cuDNN (loaded by the module at create time) unless\n"
     "        --no-cudnn, with NHWC activations\n"
     "        between chained convolutions unless --no-channels-last (and around\n"
     "        lone ones too with --channels-last-all). The whole module is\n"
     "        checked before it is written: with a GPU here run on 3 fresh input\n"
     "        sets against the per-op fp64 reference module (--reference); without\n"
     "        one, up to 3e8 multiply-adds a run (KFUSE_MODULE_CHECK_CPU_LIMIT),\n"
     "        emulated on the CPU (kernels as host C++, g++) against the fp64\n"
     "        interpreter; every output held to a bound from the precision\n"
     "        policy, or more where rounding to the model's dtypes moves the\n"
     "        model itself further (measured); on a mismatch the\n"
     "        first diverging group is named and the model compiled again with\n"
     "        --no-channels-last, then --no-fuse, then --no-cudnn, each checked,\n"
     "        and the report says which (module_check); none passing: no module,\n"
     "        exit 1; --no-verify-module skips the check.\n"
     "        --kernel-option forces a\n"
     "        template choice on every group: block=N threads a block, vec=N\n"
     "        elements a vector access, tpr=N threads a row of a reduction,\n"
     "        cache=N values a thread kept in registers by normalisations (-1:\n"
     "        read the row twice), occ=N resident threads a SM for row kernels,\n"
     "        attn_scratch=N KiB of scores attention's GEMM lowering holds at once,\n"
     "        ctpr=N / cblock=N threads a row / a block of column reductions,\n"
     "        unroll=N the unroll factor of a row kernel's reduced loop,\n"
     "        tilea=N / tilet=N a tiled element-wise launch's tile along its\n"
     "        innermost dim / along the dim its transposed accesses walk,\n"
     "        rsplit=N blocks each row of a row reduction is split over, at least\n"
     "        Kernel cache (docs/CACHE.md): each unique group's unit is looked up\n"
     "        first (--cache DIR, else $KFUSE_CACHE_DIR, else ~/.cache/kfuse;\n"
     "        --no-cache: none), and units verified here are stored; a hit is\n"
     "        neither built, compiled nor judged; --require-cached fails, naming\n"
     "        every group the cache misses, before building anything; --reverify\n"
     "        judges each hit again on the GPU (one that fails is dropped and\n"
     "        rebuilt); --remote URL (else $KFUSE_CACHE_REMOTE) is an HTTP\n"
     "        cache behind the local one (GET/PUT/HEAD of URL/ab/KEY; hits\n"
     "        written through; verified units stored there too unless\n"
     "        --remote-read-only; a failing remote is a warning, never a failed\n"
     "        build); --offline never calls an LLM or a remote. Not used with\n"
     "        --kernel-option, --no-cudnn or --reference.\n"
     "        --agent llm: before compiling, a model behind an OpenAI-compatible\n"
     "        endpoint works on the --agent-groups groups (default 4) with the\n"
     "        largest share of the model's time x distance from their floor (the\n"
     "        built-in units timed on the GPU; without one, the largest floor\n"
     "        estimate) in sessions of kfuse agent, --agent-jobs at once (default\n"
     "        up to 4), their judge calls queued onto --agent-gpus GPUs (default:\n"
     "        the visible ones); budgets per model (--agent-tokens over all\n"
     "        sessions, --agent-seconds of wall time) and per group (turns 20,\n"
     "        judge calls 10, tokens, seconds, --agent-target fraction of the\n"
     "        floor); OUT.so.agent/ or --agent-dir, agent.json and the report list\n"
     "        the sessions; the units the judge verified go in as --unit does; the\n"
     "        built-in units stay wherever none is verified or the endpoint fails\n"},
    {"task",
     "task MODEL (--group N | --all) -o DIR [--precision default|tf32|bf16|fp16|fp32]\n"
     "          [--target sm_90|sm_90a] [--no-fuse] [--no-horizontal] [--no-cudnn]\n"
     "          [--no-channels-last] [-q]",
     "        write a fusion group (or every group that runs a kernel, in\n"
     "        DIR/group_<id>, listed in DIR/tasks.json) as a task for a kernel\n"
     "        policy: task.json (inputs, outputs, ops, key, precision, the bytes\n"
     "        of its floor), group.mlir (the group alone as kfuse IR),\n"
     "        canonical.txt and builtin/ (the built-in unit, unit.json +\n"
     "        unit.cu); the groups are kfuse compile's with the same options;\n"
     "        DIR must not exist (docs/AGENT.md)\n"},
    {"tasks",
     "tasks MODEL... -o DIR [--update] [--keep-going] [--min-floor-us US]\n"
     "          [--max-floor-us US] [--kinds KIND,...] [--precision default|tf32|bf16|fp16|fp32]\n"
     "          [--target sm_90|sm_90a] [--no-fuse] [--no-horizontal] [--no-cudnn]\n"
     "          [--no-channels-last] [-q]",
     "        write the unique fusion groups of many models as tasks (a training\n"
     "        set): one task per canonical key in DIR/<first 16 hex of the key>,\n"
     "        the same key in several models or several times in one written once\n"
     "        with every occurrence listed; groups whose outputs are fills or do\n"
     "        not depend on the model's inputs are dropped, and so are those whose\n"
     "        floor estimate (bytes at 3 TB/s + FLOPs at 50 TFLOP/s) lies outside\n"
     "        [--min-floor-us, --max-floor-us] or whose kind is not in --kinds\n"
     "        (elementwise, reduce, gemm, conv, attention, opaque, scan);\n"
     "        DIR/index.json, written last, lists the tasks, their occurrences and\n"
     "        the dropped groups with reasons; DIR must not exist unless --update\n"
     "        (new keys added, occurrences merged, same options and filters); a\n"
     "        model that fails stops the run with nothing written, unless\n"
     "        --keep-going skips it (docs/AGENT.md)\n"},
    {"judge",
     "judge TASK_DIR UNIT_DIR [--sets N] [--timeout S] [--max-output BYTES]\n"
     "          [--min-time MS] [--seed N] [--no-builtin] [--profile] [--no-sanitize]",
     "        compile the unit (unit.json + unit.cu) for the task, verify it on\n"
     "        the GPU against the fp64 reference on N >= 5 fresh random input\n"
     "        sets (default 5) in poisoned buffers, time it beside the task's\n"
     "        built-in unit and print the verdict (JSON: correctness, times,\n"
     "        floor, reward -1/1/2/3, every reason); the GPU work runs in a worker\n"
     "        process killed after S seconds (default 60) or BYTES of output\n"
     "        (default 65536); --profile adds each step's own time (\"profile\");\n"
     "        a unit that verified runs again under compute-sanitizer's memcheck\n"
     "        and racecheck where the tool is found (--no-sanitize: not);\n"
     "        exit 1 when it could not judge (docs/AGENT.md)\n"},
    {"agent",
     "agent TASK_DIR -o OUT_DIR --endpoint URL --model NAME [--api-key-env NAME]\n"
     "          [--temperature T] [--max-tokens N] [--timeout S] [--retries N] [--backoff S]\n"
     "          [--max-turns N] [--session-tokens N] [--max-seconds S] [--max-judge N]\n"
     "          [--target-fraction F] [--context-chars N] [--judge-timeout S]\n"
     "          [--trajectory FILE]",
     "        let a model behind an OpenAI-compatible endpoint write kernels for\n"
     "        the task (kfuse task) with tools: list_files, read_file, write_unit,\n"
     "        judge, profile, submit; the best unit the judge verified goes to OUT_DIR\n"
     "        (unit.json, unit.cu), every attempt to OUT_DIR/attempts/, the\n"
     "        session to OUT_DIR/trajectory.jsonl; budgets: turns (default 20),\n"
     "        tokens, seconds, judge calls (default 10); older observations trimmed\n"
     "        past --context-chars (400000), each trim in the trajectory; prints\n"
     "        result.json; exit 1 when the session ended on an error (docs/AGENT.md)\n"},
    {"serve",
     "serve --tasks DIR -o OUT_DIR [--listen HOST:PORT] [--gpus N] [--max-sessions N]\n"
     "          [--idle-timeout S] [--max-judge N] [--max-calls N] [--max-body BYTES]\n"
     "          [--threads N] [--token-env NAME] [--judge-timeout S] [--sets N]\n"
     "          [--no-sanitize] [-q]",
     "        serve the kernel environment over HTTP for RL trainers: sessions on\n"
     "        the tasks under DIR (kfuse task), tool calls answered with\n"
     "        observations, verdicts and rewards, judge calls queued one at a\n"
     "        time on each of N GPUs (default 1); listens on 127.0.0.1:8470 by\n"
     "        default (port 0 picks one) and prints the address; sessions write\n"
     "        OUT_DIR/sessions/SID/ as kfuse agent does; --token-env NAME requires\n"
     "        'Authorization: Bearer $NAME'; --no-sanitize: no compute-sanitizer\n"
     "        pass over units that verified; SIGINT/SIGTERM stop it cleanly\n"
     "        (docs/AGENT.md; client: python/kfuse/rollout.py)\n"},
    {"cache",
     "cache stats|ls|verify|gc|export FILE|import FILE|push|pull KEY... [--cache DIR]\n"
     "          [--json] [--max-bytes N] [--remote URL] [--remote-timeout S]\n"
     "          [--remote-read-only]",
     "        look after the kernel cache in DIR (else $KFUSE_CACHE_DIR, else\n"
     "        $XDG_CACHE_HOME/kfuse or ~/.cache/kfuse): stats (entries, bytes,\n"
     "        hits, misses), ls (key, reward, median ms, GPU, policy, age, group;\n"
     "        --json: every field), verify (every entry's payload hash and key;\n"
     "        corrupt ones removed, exit 1 if any), gc --max-bytes N (K/M/G:\n"
     "        least recently used entries evicted down to N payload bytes),\n"
     "        export FILE (every entry in one file, e.g. a CI artifact), import\n"
     "        FILE (entries put by the replace rule: a higher reward, then a\n"
     "        faster time on the same GPU, wins; ties keep the older), push\n"
     "        --remote URL (every entry the HTTP remote lacks: HEAD, then PUT\n"
     "        at URL/ab/KEY), pull --remote URL KEY... (from the remote into\n"
     "        DIR; --remote-read-only: never PUT); credentials from\n"
     "        $KFUSE_CACHE_REMOTE_BEARER, or $KFUSE_CACHE_REMOTE_USER and\n"
     "        $KFUSE_CACHE_REMOTE_PASSWORD; --remote-timeout S bounds each\n"
     "        request, retries included (default 10); exit 1 when an entry was\n"
     "        not pushed or a key not pulled (docs/CACHE.md)\n"},
    {"warm",
     "warm MODEL... [--cache DIR] [--remote URL [--remote-read-only] [--remote-timeout S]]\n"
     "          [--shard K/N] [--target sm_90|sm_90a] [--precision default|tf32|bf16|fp16|fp32]\n"
     "          [--judge-timeout S] [-q] [--agent llm --endpoint URL --model NAME\n"
     "           [--agent-dir DIR] [--agent-* budgets and LLM options as compile's]]",
     "        fill the kernel cache for MODELs on a GPU: their unique groups (by\n"
     "        cache key, over all models) sorted by key and dealt round-robin\n"
     "        over N shards, this job taking shard K (--shard 1/1 by default);\n"
     "        each group the cache misses has its candidates built, compiled\n"
     "        and judged (as compile --judge-all), the verified winner stored;\n"
     "        N CI jobs sharing one cache (a remote, or exports imported) cover\n"
     "        every group once; exit 1 when some group could not be verified;\n"
     "        --agent llm: then LLM agent sessions (as compile --agent llm's, in\n"
     "        DIR, default kfuse-warm-K-of-N.agent) on the shard's groups the\n"
     "        cache missed, each once, and their verified units stored where\n"
     "        better than the built-in ones (docs/CACHE.md)\n"},
    {"llm-chat",
     "llm-chat --endpoint URL --model NAME (--prompt TEXT | --messages FILE)\n"
     "          [--tools FILE] [--api-key-env NAME] [--temperature T] [--max-tokens N]\n"
     "          [--timeout S] [--retries N] [--backoff S]",
     "        send one chat request to an OpenAI-compatible endpoint\n"
     "        (URL/chat/completions) and print the reply as JSON: text, tool calls\n"
     "        with their arguments parsed, token counts, attempts; the API key\n"
     "        comes from $OPENAI_API_KEY or the variable --api-key-env names and\n"
     "        is never printed; 429, 5xx and timeouts are retried (Retry-After\n"
     "        honoured, else backoff from S seconds, default 1, doubling);\n"
     "        exit 1 when the request failed (docs/AGENT.md)\n"},
    {"run-module", "run MODULE.so --io FILE.kfio [--atol A] [--rtol R] [--graph]",
     "        run a compiled module on the GPU on the recorded inputs and compare\n"},
    {"bench", "bench MODULE.so [--iters N] [--warmup N] [--graph]",
     "        time a compiled module on the GPU with random inputs (CUDA events);\n"
     "        N runs timed (1 to 1000000, default 100) after the warm-up ones\n"
     "        (0 to 1000000, default 10)\n"},
    {"ops", "ops [--aten]", "        list the IR's ops, or the supported ATen overloads\n"},
    {"version", "version", "        print kfuse's version\n"},
};

static const command *find(const char *cmd) {
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    if (strcmp(commands[i].name, cmd) == 0) return &commands[i];
  return NULL;
}

void kf_cli_usage_all(FILE *f) {
  fprintf(f, "usage: kfuse <command> [options]   (kfuse <command> --help)\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
    fprintf(f, "  %s\n%s", commands[i].synopsis, commands[i].text);
  fprintf(f, "  help\n");
}

void kf_cli_usage(FILE *f, const char *cmd) {
  const command *c = find(cmd);
  if (!c) {
    kf_cli_usage_all(f);
    return;
  }
  fprintf(f, "usage: kfuse %s\n", c->synopsis);
  if (f == stdout) fputs(c->text, f);
  /* run serves models and modules: both usages */
  if (strcmp(cmd, "run") == 0) kf_cli_usage(f, "run-module");
}

bool kf_cli_is_help(const char *arg) { return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0; }

int kf_cli_error(const char *cmd, kf_diag *diag, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  kf_diag_error(diag, "%s: %s", cmd, msg);
  kf_cli_usage(stderr, cmd);
  return 2;
}

int kf_cli_unknown(const char *cmd, const char *opt, kf_diag *diag) {
  return kf_cli_error(cmd, diag, "unknown option '%s'", opt);
}

bool kf_cli_value(int argc, char **argv, int *i, const char *cmd, const char **out, kf_diag *diag) {
  if (*i + 1 >= argc) {
    kf_cli_error(cmd, diag, "option %s needs a value", argv[*i]);
    return false;
  }
  *out = argv[++*i];
  return true;
}

bool kf_cli_double(const char *cmd, const char *opt, const char *s, double lo, double hi, double *out,
                   kf_diag *diag) {
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno == ERANGE || !isfinite(v) || v < lo || v > hi) {
    if (isinf(hi))
      kf_cli_error(cmd, diag, "%s '%s': expected a finite number, at least %g", opt, s, lo);
    else
      kf_cli_error(cmd, diag, "%s '%s': expected a finite number from %g to %g", opt, s, lo, hi);
    return false;
  }
  *out = v;
  return true;
}

bool kf_cli_target(const char *cmd, const char *s, kf_target *t, kf_diag *diag) {
  if (strcmp(s, "sm_90") != 0 && strcmp(s, "sm_90a") != 0) {
    kf_cli_error(cmd, diag, "--target: kfuse builds for sm_90 or sm_90a (Hopper), not '%s'", s);
    return false;
  }
  t->sm = 90;
  t->arch_specific = strcmp(s, "sm_90a") == 0;
  return true;
}

bool kf_cli_int(const char *cmd, const char *opt, const char *s, long long lo, long long hi, long long *out,
                kf_diag *diag) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end || errno == ERANGE || v < lo || v > hi) {
    kf_cli_error(cmd, diag, "%s '%s': expected a whole number from %lld to %lld", opt, s, lo, hi);
    return false;
  }
  *out = v;
  return true;
}
