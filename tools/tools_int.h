/* tools/tools_int.h — private: the kfuse commands that live in their own
 * files (tools/cmd_*.c), each returning the process exit status, and the
 * command-line helpers they share (tools/cli.c). */
#ifndef KFUSE_TOOLS_INT_H
#define KFUSE_TOOLS_INT_H

#include <stdbool.h>
#include <stdio.h>

#include "kfuse/agent.h"
#include "kfuse/cache.h"
#include "kfuse/status.h"

/* ---- the command line (tools/cli.c) ---- */

/* Every command's usage (kfuse help). */
void kf_cli_usage_all(FILE *f);
/* One command's: the synopsis, and on stdout its description too. */
void kf_cli_usage(FILE *f, const char *cmd);
/* --help or -h */
bool kf_cli_is_help(const char *arg);
/* "kfuse: error: CMD: <message>", then CMD's synopsis; returns 2. */
int kf_cli_error(const char *cmd, kf_diag *diag, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "CMD: unknown option 'OPT'"; returns 2. */
int kf_cli_unknown(const char *cmd, const char *opt, kf_diag *diag);
/* The value of option argv[*i] (advancing *i), or "option X needs a
 * value" and false. */
bool kf_cli_value(int argc, char **argv, int *i, const char *cmd, const char **out, kf_diag *diag);
/* The whole of s as a finite number in [lo, hi] (hi may be INFINITY), or
 * an error naming the option and false. */
bool kf_cli_double(const char *cmd, const char *opt, const char *s, double lo, double hi, double *out,
                   kf_diag *diag);
/* The whole of s as a decimal integer in [lo, hi], or an error naming the
 * option and false. */
bool kf_cli_int(const char *cmd, const char *opt, const char *s, long long lo, long long hi, long long *out,
                kf_diag *diag);

/* --target's value: sm_90 or sm_90a into *t, or an error naming CMD and
 * false. */
bool kf_cli_target(const char *cmd, const char *s, kf_target *t, kf_diag *diag);

int kf_cmd_compile(int argc, char **argv, kf_diag *diag);
int kf_cmd_task(int argc, char **argv, kf_diag *diag);
int kf_cmd_tasks(int argc, char **argv, kf_diag *diag);
/* A compile option that kfuse task, kfuse tasks and kfuse compile share (--precision,
 * --target, --no-fuse, --no-horizontal, --no-cudnn, --no-channels-last,
 * -q) at argv[*i] into o: 1 taken (advancing *i past its value), 0 not
 * one, -1 an error (reported; tools/cmd_task.c). */
struct kf_compile_options;
int kf_cli_task_option(int argc, char **argv, int *i, const char *cmd, struct kf_compile_options *o,
                       kf_diag *diag);
int kf_cmd_judge(int argc, char **argv, kf_diag *diag);
int kf_cmd_run_module(const char *path, const char *io, double atol, double rtol, bool graph,
                      kf_diag *diag);
int kf_cmd_bench(int argc, char **argv, kf_diag *diag);
int kf_cmd_llm_chat(int argc, char **argv, kf_diag *diag);
int kf_cmd_agent(int argc, char **argv, kf_diag *diag);
int kf_cmd_serve(int argc, char **argv, kf_diag *diag);
int kf_cmd_cache(int argc, char **argv, kf_diag *diag);
int kf_cmd_warm(int argc, char **argv, kf_diag *diag);
struct kf_judge_options;
/* How kfuse compile and kfuse warm judge candidates (tools/cmd_compile.c):
 * 100 ms of timed runs each, timeout_s per stage, groups over 4 GiB of host
 * judge data skipped. */
void kf_cli_compile_judge_options(struct kf_judge_options *jo, double timeout_s);

/* The kernel cache options kfuse compile and kfuse warm share
 * (tools/cmd_warm.c): --cache DIR, --no-cache, --offline, --remote URL
 * (else $KFUSE_CACHE_REMOTE), --remote-read-only, --remote-timeout S. */
typedef struct kf_cli_cache {
  const char *dir;        /* --cache DIR */
  bool off;               /* --no-cache */
  bool offline;           /* --offline: no LLM, no remote */
  const char *remote;     /* --remote URL */
  bool remote_read_only;  /* --remote-read-only */
  double remote_timeout;  /* --remote-timeout S; 0: the remote's default */
} kf_cli_cache;
/* 1: argv[*i] was one (consumed), 0: not one, -1: usage error (reported) */
int kf_cli_cache_option(int argc, char **argv, int *i, const char *cmd, kf_cli_cache *cc, kf_diag *diag);
/* Contradictions among them (--no-cache with --cache or --remote,
 * --offline with --remote) reported as usage errors: false. */
bool kf_cli_cache_usage_ok(const kf_cli_cache *cc, const char *cmd, kf_diag *diag);
/* The cache cc names into *out: NULL with --no-cache; a directory given
 * (--cache, $KFUSE_CACHE_DIR) that cannot be opened is an error, the
 * per-user default a warning and no cache. The remote into *remote (NULL:
 * none, --offline, or no libcurl here: a warning); a malformed URL is an
 * error. Close both with kf_cli_cache_close. */
kf_status kf_cli_cache_open(const kf_cli_cache *cc, const char *cmd, kf_cache **out, kf_cache_remote **remote,
                            kf_diag *diag);
void kf_cli_cache_close(kf_cache *c, kf_cache_remote *r);
#include "kfuse/compile_agent.h"
struct kf_agent_options;
/* The agent options kfuse compile and kfuse warm share (tools/cmd_compile.c):
 * --agent llm|builtin, --agent-dir, --agent-* budgets and the LLM client's
 * options (kf_cli_llm_option). 1: consumed, 0: not one, -1: usage error. */
int kf_cli_agent_option(int argc, char **argv, int *i, const char *cmd, bool *agent, const char **agent_dir,
                        struct kf_agent_options *ao, kf_compile_agent_options *cao, kf_diag *diag);
/* An option of the LLM client (--endpoint, --model, --api-key-env,
 * --temperature, --max-tokens, --timeout, --retries, --backoff) at
 * argv[*i] into c: 1 taken (advancing *i past its value), 0 not one, -1
 * an error (reported). */
struct kf_llm_config;
int kf_cli_llm_option(int argc, char **argv, int *i, const char *cmd, struct kf_llm_config *c, kf_diag *diag);

#endif
