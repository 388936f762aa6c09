/* agent/builtin_rnn.c — the kf.rnn op (an LSTM or GRU layer,
 * pass/recurrences.c) as T launches of rnn.cu, one per time step.
 *
 * Each launch computes the step's gh = h W_hh^T + b_hh for the hidden
 * units of its block (all G gate rows of them, so the cell needs no other
 * block's result) and the cell; the kernel boundary orders the steps. Step
 * k (time index t = k, or T-1-k for reverse) reads xg[t], the previous h
 * (h0 at k = 0, else hseq at the previous time index) and, for lstm, the
 * cell state (c0 at k = 0, else the state result it updates in place), and
 * writes hseq[t] and the state. Results a group does not export go to
 * scratch buffers. Operands must be dense row-major (the pass makes them
 * so). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"

/* dense row-major from its first element on */
static bool dense(const kf_type *t) {
  kf_type u = *t;
  u.offset = 0;
  return kf_type_is_contiguous(&u);
}

/* a result the group exports, else a scratch buffer of its size */
static void result_arg(const kf_group *g, const kf_value *v, kf_unit *u, kf_unit_arg_kind *kind, int *index) {
  int oi = kb_group_output(g, v);
  if (oi >= 0) {
    *kind = KF_UARG_OUTPUT;
    *index = oi;
  } else {
    *kind = KF_UARG_SCRATCH;
    *index = kf_unit_add_scratch(u, kf_type_numel(&v->type) * (int64_t)kf_dtype_size(v->type.dtype));
  }
}

kf_status kb_unit_rnn(const kf_group *g, const kf_builtin_options *o, const kf_op *op, kf_unit *u, kf_strbuf *src,
                      kf_diag *diag) {
  bool lstm = strcmp(kf_op_get_str(op, "mode"), "lstm") == 0, rev = kf_op_get_flag(op, "reverse");
  const kf_value *xg = op->operands[0], *h0 = op->operands[1];
  kf_dtype dt = xg->type.dtype;
  if (dt != KF_DTYPE_F32 && dt != KF_DTYPE_F64) return kb_unsupported(diag, g, op, "a recurrence in %s", kf_dtype_name(dt));
  for (int i = 0; i < 5; i++)
    if (op->operands[i] && !dense(&op->operands[i]->type))
      return kb_unsupported(diag, g, op, "operand %d is not dense row-major", i);
  int64_t T = xg->type.shape[0], B = xg->type.shape[1], H = h0->type.shape[1], G = lstm ? 4 : 3;
  size_t es = kf_dtype_size(dt), acc = strcmp(kb_reg_type(dt, o->fp64), "double") == 0 ? 8 : 4;
  /* batch rows staged per pass: the previous h of BC rows in 40 KiB */
  int64_t bc = (int64_t)(40 * 1024 / acc) / H;
  if (bc > 32) bc = 32;
  if (bc > B) bc = B;
  if (bc < 1) return kb_unsupported(diag, g, op, "hidden size %" PRId64 " too large for the step kernel", H);
  /* hidden units per block: about one block per SM's worth of units */
  int64_t units = (H + 131) / 132;
  if (units > 8) units = 8;
  if (units * G > 32) units = 32 / G;
  int64_t blocks = (H + units - 1) / units;
  int block = (int)((units * G) * 32 > 256 ? 256 : (units * G) * 32);
  if (units * bc > block) /* rnn.cu: one cell a thread; cannot happen with the sizes above */
    return kb_unsupported(diag, g, op, "%" PRId64 " cells for %d threads", units * bc, block);

  int in[5];
  for (int i = 0; i < 5; i++) {
    in[i] = op->operands[i] ? kb_group_input(g, op->operands[i]) : -1;
    if (op->operands[i] && in[i] < 0) return kb_unsupported(diag, g, op, "operand %d is not a group input", i);
  }
  kf_unit_arg_kind hk, sk;
  int hi, si;
  result_arg(g, op->results[0], u, &hk, &hi);
  result_arg(g, op->results[1], u, &sk, &si);
  if (hi < 0 || si < 0) {
    kf_diag_error(diag, "unit %s: out of memory for a scratch buffer", u->name);
    return KF_ERR_NOMEM;
  }

  char name[96];
  snprintf(name, sizeof name, "%s_k%d", u->name, u->n_steps);
  int64_t one = 1;
  kb_kernel k;
  kb_init(&k, o, name, 1, &one);
  /* parameters in the kernel's order; the launches rebind them */
  int pxg = kb_use_param(&k, KF_UARG_INPUT, in[0], dt, false);
  int php = kb_use_param(&k, KF_UARG_INPUT, in[1], dt, false);
  int pcp = lstm ? kb_use_param(&k, KF_UARG_INPUT, in[2], dt, false) : -1;
  int pw = kb_use_param(&k, KF_UARG_INPUT, in[3], dt, false);
  int pb = kb_use_param(&k, KF_UARG_INPUT, in[4], dt, false);
  int pho = kb_use_param(&k, hk, hi, dt, true);
  int pco = kb_use_param(&k, sk, si, dt, true);
  const char *S = kb_storage_type(dt);
  char params[512];
  if (lstm)
    snprintf(params, sizeof params, "const %s *kf_p%d, const %s *kf_p%d, const %s *kf_p%d, const %s *kf_p%d, "
             "const %s *kf_p%d, %s *kf_p%d, %s *kf_p%d", S, pxg, S, php, S, pcp, S, pw, S, pb, S, pho, S, pco);
  else
    snprintf(params, sizeof params, "const %s *kf_p%d, const %s *kf_p%d, const %s *kf_p%d, const %s *kf_p%d, "
             "%s *kf_p%d, %s *kf_p%d", S, pxg, S, php, S, pw, S, pb, S, pho, S, pco);
  /* no __restrict__: the state is read and written through two pointers */
  kb_def(&k, "KF_KERNEL", "%s", name);
  kb_def(&k, "KF_PARAMS", "%s", params);
  kb_def(&k, "KF_MODE", "%d", lstm ? 0 : 1);
  kb_def(&k, "KF_G", "%d", (int)G);
  kb_def(&k, "KF_B", "%" PRId64 "LL", B);
  kb_def(&k, "KF_H", "%" PRId64 "LL", H);
  kb_def(&k, "KF_U", "%d", (int)units);
  kb_def(&k, "KF_BC", "%d", (int)bc);
  kb_def(&k, "KF_BLOCK", "%d", block);
  kb_def(&k, "KF_S", "%s", S);
  kb_def(&k, "KF_ACC", "%s", kb_reg_type(dt, o->fp64));
  kb_def(&k, "KF_XG", "kf_p%d", pxg);
  kb_def(&k, "KF_HP", "kf_p%d", php);
  if (lstm) kb_def(&k, "KF_CP", "kf_p%d", pcp);
  kb_def(&k, "KF_W", "kf_p%d", pw);
  kb_def(&k, "KF_BIAS", "kf_p%d", pb);
  kb_def(&k, "KF_HO", "kf_p%d", pho);
  kb_def(&k, "KF_CO", "kf_p%d", pco);
  uint32_t grid[3] = {(uint32_t)blocks, 1, 1}, blk[3] = {(uint32_t)block, 1, 1};
  int first = u->n_steps;
  kf_status st = kb_finish(&k, u, src, "rnn.cu", grid, blk, 0, diag);
  kb_fini(&k);
  if (st) return st;
  int64_t xstep = B * G * H * (int64_t)es, hstep = B * H * (int64_t)es;
  for (int64_t s = 0; s < T; s++) {
    int64_t t = rev ? T - 1 - s : s, tp = rev ? t + 1 : t - 1;
    kf_unit_step *ls;
    if (s == 0) ls = &u->steps[first];
    else {
      ls = kf_unit_add_step(u, KF_USTEP_LAUNCH);
      if (!ls) return KF_ERR_NOMEM;
      const kf_unit_step *s0 = &u->steps[first];
      if (!kf_unit_step_args(ls, s0->n_args) || !(ls->kernel = strdup(s0->kernel))) return KF_ERR_NOMEM;
      memcpy(ls->grid, s0->grid, sizeof ls->grid);
      memcpy(ls->block, s0->block, sizeof ls->block);
      memcpy(ls->args, s0->args, (size_t)s0->n_args * sizeof *ls->args);
      /* the previous h in hseq; lstm's cell state in the state result */
      ls->args[php] = (kf_unit_arg){.kind = hk, .index = hi, .i = tp * hstep};
      if (lstm) ls->args[pcp] = (kf_unit_arg){.kind = sk, .index = si, .i = 0};
    }
    ls->args[pxg].i = t * xstep;
    ls->args[pho].i = t * hstep;
  }
  return KF_OK;
}
