/* include/kfuse/task.h — a fusion group as a task for a kernel policy
 * (issue 10's environment): what a policy (the built-in one, an LLM, a
 * person) gets to write a unit for one group. docs/AGENT.md describes the
 * directory; agent/task.c writes it. */
#ifndef KFUSE_TASK_H
#define KFUSE_TASK_H

#include "kfuse/options.h"
#include "kfuse/ir.h"
#include "kfuse/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Runs the compile passes on g (as kf_compile_graph would, with o's
 * options), partitions it and writes one task directory per group:
 * group >= 0 writes that group's task to out_dir itself; group < 0 writes
 * every group that runs a kernel (view groups run none) to
 * out_dir/group_<id>. out_dir must not exist (nothing is overwritten); a
 * task directory is written under a temporary name and renamed into place,
 * so a reader never sees half of one. g is changed by the passes. */
KF_API kf_status kf_task_write(kf_graph *g, const kf_compile_options *o, int group, const char *out_dir,
                               kf_diag *diag);

/* One group's task into dir (which must not exist), from a graph the
 * compile passes ran on and its partition p: what kf_task_write writes
 * per group. kfuse compile writes one for the judge. */
KF_API kf_status kf_task_write_group(const kf_graph *g, const kf_partition *p, const kf_group *grp,
                                     const kf_compile_options *o, const char *dir, kf_diag *diag);

/* Group grp of g (a graph the compile passes ran on) alone as a graph, in
 * memory: what a task's group.mlir holds (its tensor inputs the graph's
 * inputs in task.json's order, the scalars it reads copied in, its
 * outputs the results), verified. Its ops' attributes point into g's
 * arena: *out (the caller destroys it) must not outlive g. The judge
 * judges kfuse compile's candidates against it. */
struct kf_group;
KF_API kf_status kf_task_group_graph(const kf_graph *g, const struct kf_group *grp, kf_graph **out,
                                     kf_diag *diag);

/* The name task.json gives v, a value of g (a graph input's name, else the
 * op that makes it, with the result's index for an op of several). */
KF_API void kf_task_value_name(const kf_graph *g, const kf_value *v, char *out, size_t n);

/* grp's floor as task.json's "floor" has it: bytes (every tensor input
 * read and every output written once) and FLOPs (matrix products,
 * convolutions, attention; 2 a multiply-add). */
KF_API void kf_task_group_floor(const struct kf_group *grp, double *bytes, double *flops);

/* u, a unit for group grp, with its input arguments renumbered as the
 * task's inputs (grp's inputs without its scalars, which group.mlir holds
 * as constants). KF_ERR_UNSUPPORTED, the reason in why[n], when u reads a
 * scalar input through a pointer. */
struct kf_unit;
KF_API kf_status kf_task_unit_inputs(const struct kf_group *grp, struct kf_unit *u, char *why, size_t n);

/* The reverse: u, a unit written for grp's task (kfuse compile --unit),
 * with its input arguments renumbered as grp's inputs. */
KF_API kf_status kf_task_unit_inputs_to_group(const struct kf_group *grp, struct kf_unit *u, char *why, size_t n);

/* ---- a task set: the groups of many models (kfuse tasks) ---- */

/* The compile passes on g with o's options and its partition into *out
 * (the caller destroys it): the groups kf_task_write writes, for a caller
 * that picks among them and writes some with kf_task_write_group. g is
 * changed by the passes and must outlive *out. */
KF_API kf_status kf_task_partition(kf_graph *g, const kf_compile_options *o, kf_partition **out,
                                   kf_diag *diag);

/* What a task set filters a group by, besides its key. */
typedef struct kf_task_facts {
  double bytes, flops;  /* the floor's, as task.json's "floor" has them */
  double floor_ms;      /* kf_task_floor_estimate_ms(bytes, flops) */
  int constant_output;  /* an output computed from none of the group's
                           tensor inputs (a fill: the same whatever the
                           task's inputs), or -1; a property of the key */
  int fixed_output;     /* an output that depends on no input of the graph
                           (computed from weights and constants only: the
                           same on every call of the model), or -1; a
                           property of this occurrence, not of the key */
} kf_task_facts;

/* facts[k] for every group k of p (p->n_groups of them), a partition of g. */
KF_API kf_status kf_task_facts_all(const kf_graph *g, const kf_partition *p, kf_task_facts *facts);

/* The floor's time in ms on an H100 before anything is measured: bytes at
 * 3.0 TB/s plus FLOPs at 50 TFLOP/s (the fp32 rate). A static stand-in
 * for a measured time: it orders groups, it does not judge them. */
KF_API double kf_task_floor_estimate_ms(double bytes, double flops);

#ifdef __cplusplus
}
#endif

#endif
