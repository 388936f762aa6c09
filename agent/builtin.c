/* agent/builtin.c — the built-in template policy: a kernel unit for a group
 * from the CUDA templates in agent/templates, with every template choice
 * (block size, vector width, rows per block, grid size) picked by rule.
 *
 * Without a GPU nothing can be timed, so this policy never searches: it
 * writes one candidate per group and says so in the unit's policy string
 * ("builtin:<kind>/v1 rule"). The agent's environment may later time
 * variants produced with other kf_builtin_options. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"

void kf_builtin_options_init(kf_builtin_options *o) {
  memset(o, 0, sizeof *o);
  o->target.sm = 90;
  o->target.arch_specific = false;
  o->precision = KF_PRECISION_DEFAULT;
  o->block_size = 0;
  o->vector_width = 0;
  o->fp64 = false;
}

/* ---- rules ------------------------------------------------------------------
 * Every choice a GPU search would make, fixed by rule for an H100/H200-class
 * GPU (132 SMs), in this one place:
 *   element-wise (kb_rules_elementwise)
 *   - 256 threads per block: 8 warps, enough to hide latency at full
 *     occupancy (8 blocks per SM) without limiting registers;
 *   - 16-byte vector accesses when every access is contiguous along the
 *     innermost dim (or broadcast along it) and aligned: 4 f32, 8 f16/bf16
 *     elements per thread and step;
 *   - on the vector path ceil(n / (block * vec * 4)) blocks, each thread
 *     issuing the loads of 4 vectors before its stores; otherwise a
 *     grid-stride loop over min(ceil(n / block), 132 * 8) blocks;
 *   rows of a reduction or normalisation (kb_rules_rows)
 *   - rows contiguous along the reduced dims: a warp per row up to 4096
 *     elements (fewer lanes for rows under 32), a 256-thread block beyond;
 *     normalisations keep the row in registers, 16 values a thread for
 *     rows of 2048 elements or more, else 8: a row over 256 elements gets
 *     ceil(len / 16 or 8) threads rounded up to a power of two (at most
 *     1024). The template asks ptxas for a full SM and, when that spills,
 *     half of one (agent/nvrtc.c). Measured on an H200 at 4096 elements
 *     (scripts/sweep.py, 2026-11-22): 16 values a thread beat 8 by 24%
 *     (layer norm) and 7% (softmax), 4 a thread lost by 40-80%; reading
 *     the row twice instead of keeping it (kernel option cache=-1) lost
 *     at every block shape tried;
 *   - reductions over an outer dim (the kept dim is the contiguous one):
 *     a column layout, 32 rows per block and 16 threads splitting each row
 *     (fewer on rows under 128: 8 elements a thread at least);
 *   - fewer row blocks than 2 per SM: long rows split over up to 1024
 *     blocks (about 4 blocks per SM in all, at least 16 elements a thread),
 *     partial states combined by a second launch;
 *   - up to 132 * 16 blocks over the rows (grid-stride), or a block per
 *     row group when the rows are cached in registers;
 *   scans (kb_rules_scan)
 *   - lines contiguous (rows): 16 elements a thread and tile (16-byte
 *     vectors: 4 f32, 8 f16/bf16, 2 int64 ... times 16 / width), threads
 *     per line the power of two that covers the line in one tile, up to
 *     256: lines up to 4096 f32 elements in one tile, longer ones in
 *     tiles of 4096 carried along; up to 32 threads a line share a warp
 *     (several lines a 256-thread block), more take a block each;
 *   - lines strided with neighbouring lines contiguous (columns): 256
 *     threads a block, each walking one vector of lines;
 *   - fewer blocks than 2 per SM: lines split into chunks over about 4
 *     blocks per SM in all (at most 1024 a line; rows: whole tiles, columns:
 *     at least 32 positions), chunk totals first (a second launch reads
 *     the input again);
 *   - a block per line group (rows), or up to 132 * 32 blocks in a
 *     grid-stride loop (columns).
 *   GEMM workspace (kb_rules_workspace)
 *   - 32 MiB for products of 2^27 multiply-adds or more (cuBLASLt's
 *     split-K kernels on Hopper), 4 MiB below;
 *   attention as GEMM-softmax-GEMM (kb_rules_attn_scratch,
 *   kb_rules_attn_softmax)
 *   - at most 256 MiB of scores at once: products stay large (KernelBench
 *     L1 97's 1 GiB of fp32 scores runs as 4 chunks of 256 heads, each
 *     product 256 x 512 x 512 x 1024) while the arena grows by a bounded
 *     amount;
 *   - the softmax as the row normalisations: 16 values a thread for rows
 *     of 2048 keys or more, else 8, in 16-byte vectors where the row
 *     length allows, a power of two of threads a row up to 1024 (rows of
 *     32768 fp32 keys: 1024 threads x 32 values), a 256-thread block or
 *     one row's; longer rows (over 32 values a thread, 16 in fp64) are
 *     read twice instead of kept in registers.
 * Options (kfuse compile --kernel-option) override block size, vector
 * width, threads per row, the row cache and the occupancy asked for. */
#define KB_SMS 132
#define KB_BLOCKS_PER_SM 8

kb_rules kb_rules_elementwise(const kf_builtin_options *o, int64_t n, int elem_bytes, bool can_vec) {
  kb_rules r;
  r.block = o->block_size > 0 ? o->block_size : 256;
  if (r.block > 1024) r.block = 1024;
  r.vec = 1;
  if (can_vec) {
    int w = elem_bytes > 0 ? 16 / elem_bytes : 1;
    if (w < 1) w = 1;
    if (o->vector_width > 0) w = o->vector_width;
    /* a power of two up to 16 */
    int p2 = 1;
    while (p2 * 2 <= w && p2 < 16) p2 *= 2;
    r.vec = p2;
  }
  /* vector paths: 4 vectors a thread (the template's unrolled step), as
   * many blocks as that takes; scalar paths: a grid-stride loop over at
   * most 132 * 8 blocks */
  int64_t per = (int64_t)r.block * r.vec * (r.vec > 1 ? 4 : 1);
  int64_t blocks = (n + per - 1) / per;
  if (blocks < 1) blocks = 1;
  int64_t cap = r.vec > 1 ? ((int64_t)1 << 30) : KB_SMS * KB_BLOCKS_PER_SM;
  if (blocks > cap) blocks = cap;
  r.grid = (uint32_t)blocks;
  return r;
}

static int64_t pow2ceil(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

kb_row_rules kb_rules_rows(const kf_builtin_options *o, int64_t rows, int64_t rlen, bool rowlayout,
                           bool phase2) {
  kb_row_rules r;
  memset(&r, 0, sizeof r);
  r.rowlayout = rowlayout;
  int block = o->block_size > 0 ? o->block_size : 256;
  if (rowlayout) {
    if (rlen <= 32)
      r.tpr = (int)pow2ceil(rlen);
    else if (phase2) {
      /* values a thread: 16 for long rows (4096-element layer norm 0.106
       * -> 0.081 ms, softmax 0.091 -> 0.085 ms against 8 a thread, H200,
       * scripts/sweep.py, 2026-11-22: more rows in flight per SM), else 8 */
      int64_t v = rlen >= 2048 ? 16 : 8;
      int64_t t = (int64_t)pow2ceil((rlen + v - 1) / v);
      r.tpr = rlen <= 256 ? 32 : (int)(t > 1024 ? 1024 : t);
    } else
      r.tpr = rlen <= 4096 ? 32 : 256;
    if (o->row_threads > 0) r.tpr = o->row_threads;
    if (r.tpr > block) block = r.tpr;
  } else {
    /* a warp covers 32 neighbouring rows (coalesced): at least 32 rows a
     * block. 16 threads on each row (so 512-thread blocks) by rule: over 8,
     * sum over dim 1 of [128, 4096, 4095] 3.66 -> 3.41 ms and of [16,
     * 16384, 1024] 0.392 -> 0.361 ms, sum over dim 0 of [8192, 8192] and
     * mean over dim 1 of [64, 1024, 2048] unchanged, amax over dim 1 of
     * [128, 4096, 4095] 3.96 -> 4.05 ms (H100, .kb sweep, 2026-11-25).
     * Fewer on short rows, so that a thread reduces 8 elements or more:
     * a min over the depth (22) of a [128, 16, 22, 30, 30] convolution
     * took 0.605 ms with 16 a row, 0.102 with 2, 0.101 with 1, 0.120 with
     * 4, 0.206 with 8 (KernelBench L2 24; eager 0.127; H100, 2026-11-25) */
    r.tpr = 16;
    while (r.tpr > 1 && (int64_t)r.tpr * 8 > rlen) r.tpr /= 2;
    if (o->col_threads > 0) r.tpr = o->col_threads;
    block = o->col_block > 0 ? o->col_block : 256;
    if (block < r.tpr * 32) block = r.tpr * 32 > 1024 ? 1024 : r.tpr * 32;
    /* 1024-thread blocks where the rows still fill two waves of them: sum
     * over dim 1 of [128, 4096, 4095] 3.43 -> 3.12 ms, the reduction over
     * channels of KernelBench L2 92 (its g2) 0.456 -> 0.365 ms; argmin over
     * dim 1 of [128, 4096, 4095] 4.02 -> 4.07 (H100, 2026-11-25) */
    if (o->col_block == 0 && r.tpr <= 32 && rows / (1024 / r.tpr) >= KB_SMS * 2) block = 1024;
  }
  /* a multiple of the threads per row and of a warp */
  if (block % r.tpr) block = r.tpr;
  if (block < 32) block = 32;
  r.block = block;
  int rpb = block / r.tpr;
  int64_t row_blocks = (rows + rpb - 1) / rpb;
  r.split = 1;
  r.chunk = rlen;
  /* too few rows to fill the GPU: rows split over blocks, two waves of
   * blocks at full occupancy in all (a mean over 2^30 elements read at 2.0
   * TB/s from 528 blocks, half of an H100's threads, against Inductor's
   * 3.1; two waves so that a kernel resident at fewer blocks an SM still
   * ends in whole waves), chunks a multiple of 16 elements so every
   * block's vector loads stay aligned */
  if (row_blocks < KB_SMS * 2 && rlen >= (int64_t)r.tpr * 64) {
    int64_t target = (int64_t)KB_SMS * (2048 / block > 0 ? 2048 / block : 1) * 2;
    int64_t want = (target + row_blocks - 1) / row_blocks;
    int64_t most = rlen / ((int64_t)r.tpr * 16);
    if (want > most) want = most;
    if (want > 4096) want = 4096;
    if (want >= 2) {
      int64_t chunk = (rlen + want - 1) / want;
      if (rowlayout) chunk = (chunk + 15) / 16 * 16;
      r.split = (int)((rlen + chunk - 1) / chunk);
      r.chunk = chunk;
      if (r.split < 2) {
        r.split = 1;
        r.chunk = rlen;
      }
    }
  }
  /* forced (kernel option rsplit): long rows in chunks of 8 elements a
   * thread or more, whatever the number of rows, a normalisation's
   * statistics in one launch and the rewrite of the row in a third. Tried
   * as a way to run the statistics at full occupancy where the row is
   * reread from DRAM anyway; slower everywhere it was measured (see
   * kf_builtin_variants), so never chosen by rule */
  if (rowlayout && o->row_split > 1) {
    int64_t want = o->row_split, most = rlen / ((int64_t)r.tpr * 8);
    if (want > most) want = most;
    if (want > r.split) {
      int64_t chunk = (rlen + want - 1) / want;
      chunk = (chunk + 15) / 16 * 16;
      if ((rlen + chunk - 1) / chunk >= 2) {
        r.split = (int)((rlen + chunk - 1) / chunk);
        r.chunk = chunk;
      }
    }
  }
  r.cache = 0;
  if (phase2 && r.split == 1 && o->row_cache >= 0) {
    int64_t per = (rlen + r.tpr - 1) / r.tpr;
    if (per <= (o->row_cache > 0 ? o->row_cache : 16)) r.cache = (int)per;
  }
  /* rows cached in registers: a block per row group, as many as there are
   * (as Inductor launches a program per row), not a grid-stride loop */
  int64_t gx = row_blocks < 1 ? 1 : row_blocks;
  int64_t cap = r.cache > 0 ? ((int64_t)1 << 30) : KB_SMS * 16;
  if (gx > cap) gx = cap;
  r.grid = (uint32_t)gx;
  return r;
}

kb_scan_rules kb_rules_scan(const kf_builtin_options *o, int64_t lines, int64_t len, bool rowlayout,
                            int vec) {
  kb_scan_rules r;
  memset(&r, 0, sizeof r);
  r.rowlayout = rowlayout;
  r.split = 1;
  if (vec < 1) vec = 1;
  if (lines < 1) lines = 1;
  if (len < 1) len = 1;
  int64_t blocks;
  if (rowlayout) {
    r.nv = vec >= 16 ? 1 : 16 / vec;
    int64_t need = (len + (int64_t)vec * r.nv - 1) / ((int64_t)vec * r.nv);
    int64_t t = pow2ceil(need);
    r.tpr = (int)(t > 256 ? 256 : t);
    if (o->row_threads > 0) r.tpr = o->row_threads;
    r.block = r.tpr >= 32 ? r.tpr : (o->block_size >= 32 ? o->block_size : 256);
    if (r.block > 1024) r.block = 1024;
    if (r.block % r.tpr) r.block = r.tpr < 32 ? 256 : r.tpr;
    int64_t lpb = r.block / r.tpr;
    blocks = (lines + lpb - 1) / lpb;
    int64_t tile = (int64_t)r.tpr * r.nv * vec;
    int64_t ntiles = (len + tile - 1) / tile;
    r.chunk = ntiles;
    if (blocks < KB_SMS * 2 && ntiles >= 2) {
      int64_t want = (KB_SMS * 4 + blocks - 1) / blocks;
      if (want > ntiles) want = ntiles;
      if (want > 1024) want = 1024;
      int64_t ct = (ntiles + want - 1) / want;
      int64_t split = (ntiles + ct - 1) / ct;
      if (split >= 2) {
        r.split = (int)split;
        r.chunk = ct;
      }
    }
  } else {
    r.tpr = 1;
    r.nv = 1;
    r.block = o->block_size > 0 ? o->block_size : 256;
    int64_t groups = lines / vec;
    blocks = (groups + r.block - 1) / r.block;
    r.chunk = len;
    if (blocks < KB_SMS * 2 && len >= 64) {
      int64_t want = (KB_SMS * 4 + blocks - 1) / blocks;
      if (want > len / 32) want = len / 32;
      if (want > 1024) want = 1024;
      if (want >= 2) {
        int64_t chunk = (len + want - 1) / want;
        r.split = (int)((len + chunk - 1) / chunk);
        r.chunk = chunk;
      }
    }
    if (blocks > KB_SMS * 32) blocks = KB_SMS * 32;
  }
  if (blocks < 1) blocks = 1;
  if (blocks > INT32_MAX) blocks = INT32_MAX;
  r.grid = (uint32_t)blocks;
  return r;
}

int64_t kb_rules_attn_scratch(const kf_builtin_options *o) {
  return o->attn_scratch_bytes > 0 ? o->attn_scratch_bytes : (int64_t)256 << 20;
}

kb_attn_rules kb_rules_attn_softmax(const kf_builtin_options *o, int64_t keys, int elem_bytes) {
  kb_attn_rules r;
  r.vec = keys % (16 / elem_bytes) == 0 ? 16 / elem_bytes : 1;
  int64_t per = keys >= 2048 ? 16 : 8;
  int64_t t = pow2ceil((keys + per - 1) / per);
  r.tpr = (int)(t > 1024 ? 1024 : t);
  if (o->row_threads > 0) r.tpr = o->row_threads;
  int most = o->row_cache > 0 ? o->row_cache : elem_bytes == 8 ? 16 : 32;
  int64_t span = (int64_t)r.tpr * r.vec, c = (keys + span - 1) / span * r.vec;
  while (c > most && r.tpr < 1024 && o->row_threads <= 0) {
    r.tpr *= 2;
    span = (int64_t)r.tpr * r.vec;
    c = (keys + span - 1) / span * r.vec;
  }
  r.cache = o->row_cache < 0 || c > most ? 0 : (int)c;
  if (r.cache == 0) r.vec = 1;
  int block = o->block_size > 0 ? o->block_size : 256;
  r.block = r.tpr > block ? r.tpr : block;
  return r;
}

int64_t kb_rules_workspace(int64_t m, int64_t n, int64_t k, int64_t batch) {
  double work = (double)m * (double)n * (double)k * (double)batch;
  return work >= (double)(1 << 27) ? (int64_t)32 << 20 : (int64_t)4 << 20;
}

/* ---- the policy --------------------------------------------------------------- */

kf_status kf_builtin_unit(const kf_partition *p, const kf_group *g, const kf_builtin_options *o,
                          kf_unit **out, kf_diag *diag) {
  *out = NULL;
  if (!p || !g || !o) return KF_ERR_ARG;
  char name[64], policy[96];
  const char *kind = kf_group_kind_name(g->kind);
  snprintf(name, sizeof name, "g%d_%s", g->id, kind ? kind : "group");
  for (char *c = name; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')))
      *c = '_';
  snprintf(policy, sizeof policy, "builtin:%s/v1 rule%s", kind ? kind : "group",
           !o->fp64 ? "" : o->tf32_conv_operands ? " fp64-reference tf32-conv" : " fp64-reference");
  kf_unit *u = kf_unit_new(name, policy);
  if (!u) return KF_ERR_NOMEM;
  kf_strbuf src;
  kf_strbuf_init(&src);
  kf_strbuf_printf(&src, "// kfuse unit %s: %s, group %d, key %s\n", name, policy, g->id, g->key_hex);
  kf_status st;
  switch (g->kind) {
  case KF_GROUP_VIEW: st = KF_OK; break;
  case KF_GROUP_ELEMENTWISE: st = kb_unit_elementwise(p, g, o, u, &src, diag); break;
  case KF_GROUP_REDUCE: st = kb_unit_reduce(p, g, o, u, &src, diag); break;
  case KF_GROUP_SCAN: st = kb_unit_scan(p, g, o, u, &src, diag); break;
  case KF_GROUP_GEMM: st = kb_unit_gemm(p, g, o, u, &src, diag); break;
  case KF_GROUP_CONV: st = kb_unit_conv(p, g, o, u, &src, diag); break;
  case KF_GROUP_ATTENTION: st = kb_unit_attention(p, g, o, u, &src, diag); break;
  case KF_GROUP_OPAQUE: st = kb_unit_opaque(p, g, o, u, &src, diag); break;
  default: st = kb_unsupported(diag, g, NULL, "unknown group kind %d", (int)g->kind); break;
  }
  if (!st && src.failed) st = KF_ERR_NOMEM;
  bool launches = false;
  for (int i = 0; i < u->n_steps; i++) launches |= u->steps[i].kind == KF_USTEP_LAUNCH;
  if (!st && launches) {
    u->source = src.data;
    src.data = NULL;
  }
  kf_strbuf_fini(&src);
  if (st) {
    kf_unit_destroy(u);
    return st;
  }
  *out = u;
  return KF_OK;
}

/* ---- choices worth timing ------------------------------------------------------ */

/* Groups moving fewer bytes than this are not searched: their time is the
 * launch's, whatever the template shape */
#define KF_VARIANT_MIN_BYTES ((int64_t)4 << 20)

static void variant(kf_builtin_variant *v, int *n, const kf_builtin_options *base, const char *label) {
  snprintf(v[*n].label, sizeof v[*n].label, "%s", label);
  v[*n].opt = *base;
  ++*n;
}

int kf_builtin_variants(const kf_group *g, const kf_builtin_options *base, kf_builtin_variant *out) {
  int n = 0;
  if (base->fp64) return 0;
  switch (g->kind) {
  case KF_GROUP_REDUCE:
  case KF_GROUP_SCAN:
    /* rows: the register budget ptxas is asked for (resident threads a
     * SM) and the block shape; the best differ per kernel (softmax and
     * layer norm on the same rows want different ones: scripts/sweep.py,
     * H200, 2026-11-22) */
    if (kf_group_io_bytes(g) < KF_VARIANT_MIN_BYTES) return 0;
    if (base->row_occupancy == 0) {
      static const int occ[] = {1536, 1280, 1024};
      for (int i = 0; i < 3; i++) {
        char l[32];
        snprintf(l, sizeof l, "occ=%d", occ[i]);
        variant(out, &n, base, l);
        out[n - 1].opt.row_occupancy = occ[i];
      }
    }
    if (base->block_size == 0 && g->kind == KF_GROUP_REDUCE) {
      variant(out, &n, base, "block=512");
      out[n - 1].opt.block_size = 512;
    }
    if (g->kind == KF_GROUP_REDUCE) {
      /* reductions over an outer dim (rows of a row layout ignore these,
       * and the variant is dropped as the rule's unit again): fewer and
       * more threads on each row, and the reduced loop unrolled further
       * (more loads in flight) */
      if (base->col_threads == 0) {
        variant(out, &n, base, "ctpr=4");
        out[n - 1].opt.col_threads = 4;
        variant(out, &n, base, "ctpr=8");
        out[n - 1].opt.col_threads = 8;
      }
      if (base->row_unroll == 0) {
        variant(out, &n, base, "unroll=8");
        out[n - 1].opt.row_unroll = 8;
      }
      /* no rsplit variant: long rows split over blocks were slower
       * everywhere tried (softmax over 393216, L2 norm over 65535, group
       * norm over 2M elements, KernelBench L2 92: 8-55%, H100,
       * 2026-11-25); a split pays only when rows are too few (the rule) */
    }
    return n;
  case KF_GROUP_CONV: {
    const kf_op *a = g->anchor;
    if (base->no_cudnn || !a || a->n_operands < 2) return 0;
    const kf_type *x = &a->operands[0]->type;
    bool tr = kf_op_get_bool(a, "transposed");
    /* cuDNN's bare convolution and an element-wise epilogue against its
     * fused call (the rule, where the epilogue is bias (+ residual) (+
     * relu)); a group the rule does not fuse gives the rule's unit again,
     * which the compile drops */
    if (!base->conv_unfused && !tr && a->n_operands > 2 && a->operands[2]) {
      variant(out, &n, base, "unfused");
      out[n - 1].opt.conv_unfused = true;
    }
    /* cuDNN's choice against im2col + cuBLASLt: only where the latter is
     * a GEMM (one group, not transposed, row-major activations); the
     * direct template is never a candidate (correct everywhere, fast
     * nowhere) */
    if (tr || kf_op_get_int(a, "groups") != 1 || !kf_type_is_contiguous(x) ||
        !kf_type_is_contiguous(&a->results[0]->type))
      return n;
    variant(out, &n, base, "no-cudnn");
    out[n - 1].opt.no_cudnn = true;
    return n;
  }
  default: return 0;
  }
}
