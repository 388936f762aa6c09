/* frontend/aten_rnn.c — recurrent layers of the default export IR (lstm,
 * gru, rnn_tanh, rnn_relu and their *_cell forms), unrolled over time.
 *
 * Core-ATen exports already unroll these; the default IR keeps one node per
 * nn.LSTM/nn.GRU/nn.RNN. The lowering does what PyTorch's decomposition does:
 * the input projection of a whole layer is one matrix product, then every
 * time step multiplies the hidden state, applies the gates and is stacked
 * into the layer's output; bidirectional layers run a second pass backwards
 * and concatenate the features. Gate order is PyTorch's: LSTM (i, f, g, o),
 * GRU (r, z, n). Projections (proj_size) and training-time dropout between
 * layers are refused. */
#include <stdio.h>
#include <string.h>

#include "aten_int.h"

typedef struct rnn {
  at_ctx *c;
  int cell;
  int gates; /* 4 LSTM, 3 GRU, 1 plain */
  int64_t hidden;
} rnn;

static kf_value *select0(at_ctx *c, kf_value *x, int64_t dim, int64_t i) {
  kf_op *op = at_op(c, KF_OP_SELECT, &x, 1, 1, NULL);
  kf_op_set_int(op, "dim", dim);
  kf_op_set_int(op, "index", i);
  return at_fin(c, op);
}

static kf_value *transpose_w(at_ctx *c, kf_value *w) {
  int64_t p[2] = {1, 0};
  return at_permute(c, w, p, 2);
}

/* x [N, K] times w^T (w is [G, K]), plus b [G] when given. */
static kf_value *linear2(at_ctx *c, kf_value *x, kf_value *wt, kf_value *b) {
  if (!x || !wt) return NULL;
  if (b) {
    kf_value *ops[3] = {b, x, wt};
    kf_op *op = at_op(c, KF_OP_ADDMM, ops, 3, 1, NULL);
    kf_op_set_number(op, "beta", kf_number_int(1));
    kf_op_set_number(op, "alpha", kf_number_int(1));
    return at_fin(c, op);
  }
  kf_value *ops[2] = {x, wt};
  return at_fin(c, at_op(c, KF_OP_MM, ops, 2, 1, NULL));
}

/* Split [B, gates*H] into `gates` pieces of H along dim 1. */
static bool split_gates(rnn *r, kf_value *x, kf_value **out) {
  at_ctx *c = r->c;
  if (!x) return false;
  if (r->gates == 1) {
    out[0] = x;
    return true;
  }
  int64_t sizes[4];
  for (int i = 0; i < r->gates; i++) sizes[i] = r->hidden;
  kf_op *op = at_op(c, KF_OP_SPLIT, &x, 1, r->gates, NULL);
  kf_op_set_int(op, "dim", 1);
  kf_op_set_ints(op, "sizes", sizes, r->gates);
  if (!at_fin(c, op)) return false;
  for (int i = 0; i < r->gates; i++) out[i] = op->results[i];
  return true;
}

/* One time step: xp = x_t W_ih^T + b_ih ([B, G]); returns the new h (and
 * *cst, the new cell state, for LSTM). */
static kf_value *step(rnn *r, kf_value *xp, kf_value *h, kf_value **cst, kf_value *whh_t, kf_value *bhh) {
  at_ctx *c = r->c;
  kf_value *hp = linear2(c, h, whh_t, bhh);
  if (!xp || !hp) return NULL;
  switch (r->cell) {
  case AT_CELL_LSTM: {
    kf_value *g[4];
    if (!split_gates(r, at_binary(c, KF_OP_ADD, xp, hp), g)) return NULL;
    kf_value *i = at_unary(c, KF_OP_SIGMOID, g[0]);
    kf_value *f = at_unary(c, KF_OP_SIGMOID, g[1]);
    kf_value *gg = at_unary(c, KF_OP_TANH, g[2]);
    kf_value *o = at_unary(c, KF_OP_SIGMOID, g[3]);
    kf_value *cn = at_binary(c, KF_OP_ADD, at_binary(c, KF_OP_MUL, f, *cst), at_binary(c, KF_OP_MUL, i, gg));
    *cst = cn;
    return at_binary(c, KF_OP_MUL, o, at_unary(c, KF_OP_TANH, cn));
  }
  case AT_CELL_GRU: {
    kf_value *gi[3], *gh[3];
    if (!split_gates(r, xp, gi) || !split_gates(r, hp, gh)) return NULL;
    kf_value *rr = at_unary(c, KF_OP_SIGMOID, at_binary(c, KF_OP_ADD, gi[0], gh[0]));
    kf_value *z = at_unary(c, KF_OP_SIGMOID, at_binary(c, KF_OP_ADD, gi[1], gh[1]));
    kf_value *n = at_unary(c, KF_OP_TANH, at_binary(c, KF_OP_ADD, gi[2], at_binary(c, KF_OP_MUL, rr, gh[2])));
    /* (1 - z) * n + z * h, as n + z * (h - n) */
    return at_binary(c, KF_OP_ADD, n, at_binary(c, KF_OP_MUL, z, at_binary(c, KF_OP_SUB, h, n)));
  }
  default:
    return at_unary(c, r->cell == AT_CELL_TANH ? KF_OP_TANH : KF_OP_RELU, at_binary(c, KF_OP_ADD, xp, hp));
  }
}

/* Concatenate values of equal shape [B, H] along a new leading dim. */
static kf_value *stack0(at_ctx *c, kf_value **vs, int n) {
  kf_value *us[64];
  kf_value **u = n <= 64 ? us : kf_graph_alloc(c->g, sizeof(kf_value *) * (size_t)n);
  for (int i = 0; i < n; i++) {
    const kf_type *t = &vs[i]->type;
    int64_t sh[KF_MAX_RANK];
    sh[0] = 1;
    memcpy(sh + 1, t->shape, sizeof(int64_t) * (size_t)t->rank);
    u[i] = at_reshape(c, vs[i], t->rank + 1, sh);
    if (!u[i]) return NULL;
  }
  if (n == 1) return u[0];
  kf_op *op = at_op(c, KF_OP_CAT, u, n, 1, NULL);
  kf_op_set_int(op, "dim", 0);
  return at_fin(c, op);
}

static kf_value *cat_dim(at_ctx *c, kf_value *a, kf_value *b, int64_t d) {
  if (!a || !b) return NULL;
  kf_value *ops[2] = {a, b};
  kf_op *op = at_op(c, KF_OP_CAT, ops, 2, 1, NULL);
  kf_op_set_int(op, "dim", d);
  return at_fin(c, op);
}

/* PyTorch's shape function for lstm.input records h_n and c_n with an extra
 * leading 1 ([1, L*D, B, H]) while the eager kernel returns [L*D, B, H]; its
 * core-ATen decomposition really computes the 4-d form. Later nodes were
 * traced against the recorded shape, so follow the archive when only
 * size-1 dims differ. */
static kf_value *conform(at_ctx *c, int i, kf_value *v) {
  const kf_aten_call *call = c->call;
  if (!v || i >= call->n_outs || !call->out_types || (call->out_known && !call->out_known[i])) return v;
  const kf_type *want = &call->out_types[i];
  if (want->kind != KF_TYPE_TENSOR || want->dtype != v->type.dtype ||
      kf_type_numel(want) != kf_type_numel(&v->type))
    return v;
  int64_t a[KF_MAX_RANK], b[KF_MAX_RANK];
  int na = 0, nb = 0;
  for (int k = 0; k < want->rank; k++)
    if (want->shape[k] != 1) a[na++] = want->shape[k];
  for (int k = 0; k < v->type.rank; k++)
    if (v->type.shape[k] != 1) b[nb++] = v->type.shape[k];
  if (na != nb || memcmp(a, b, sizeof(int64_t) * (size_t)na) != 0) return v;
  return at_reshape(c, v, want->rank, want->shape);
}

static kf_status L_rnn(at_ctx *c, int cell) {
  rnn r = {c, cell, cell == AT_CELL_LSTM ? 4 : cell == AT_CELL_GRU ? 3 : 1, 0};
  kf_value *x = at_tensor(c, "input");
  if (!x) return c->st ? c->st : at_err(c, KF_ERR_FORMAT, "input is None");
  int nparams;
  kf_value **params = at_tensors(c, "params", &nparams);
  bool has_b = at_bool(c, "has_biases"), bidir = at_bool(c, "bidirectional"),
       batch_first = at_bool(c, "batch_first");
  int64_t layers = at_int(c, "num_layers");
  int dirs = bidir ? 2 : 1;
  if (at_bool(c, "train") && at_float(c, "dropout") != 0 && layers > 1)
    return at_err(c, KF_ERR_UNSUPPORTED, "dropout between layers in training mode is random: export in eval mode");
  int per = has_b ? 4 : 2;
  if (layers < 1 || layers > 64 || nparams != per * dirs * (int)layers)
    return at_err(c, KF_ERR_UNSUPPORTED,
                  "%d parameter tensors for %lld layers (projections, proj_size > 0, are not supported)", nparams,
                  (long long)layers);
  kf_value *h0 = NULL, *c0 = NULL;
  if (cell == AT_CELL_LSTM) {
    int nh;
    kf_value **hx = at_tensors(c, "hx", &nh);
    if (nh != 2) return at_err(c, KF_ERR_INVALID, "hx must hold (h0, c0), has %d tensors", nh);
    h0 = hx[0];
    c0 = hx[1];
  } else {
    h0 = at_tensor(c, "hx");
    if (!h0) return c->st ? c->st : at_err(c, KF_ERR_FORMAT, "hx is None");
  }
  const kf_type *tx = &x->type;
  bool unbatched = tx->rank == 2;
  if (tx->rank != 2 && tx->rank != 3) return at_err(c, KF_ERR_INVALID, "input must be 2-d or 3-d, has rank %d", tx->rank);
  /* to [T, B, I] */
  if (unbatched) {
    int64_t sh[3] = {tx->shape[0], 1, tx->shape[1]};
    x = at_reshape(c, x, 3, sh);
  } else if (batch_first) {
    int64_t p[3] = {1, 0, 2};
    x = at_permute(c, x, p, 3);
  }
  AT_CHECK(c, x);
  int64_t T = x->type.shape[0], B = x->type.shape[1];
  if (T < 1 || T > 4096) return at_err(c, KF_ERR_LIMIT, "sequence length %lld (kfuse unrolls 1..4096 steps)", (long long)T);
  r.hidden = params[1]->type.rank == 2 ? params[1]->type.shape[1] : -1;
  if (r.hidden < 1) return at_err(c, KF_ERR_INVALID, "malformed recurrent weights");
  int64_t hsh[3] = {layers * dirs, B, r.hidden};
  h0 = at_reshape(c, h0, 3, hsh);
  if (c0) c0 = at_reshape(c, c0, 3, hsh);
  AT_CHECK(c, h0);
  if (c0 == NULL && cell == AT_CELL_LSTM) return c->st;
  kf_value **hs = kf_graph_alloc(c->g, sizeof(kf_value *) * (size_t)T);
  kf_value **hn = kf_graph_alloc(c->g, sizeof(kf_value *) * (size_t)(layers * dirs));
  kf_value **cn = kf_graph_alloc(c->g, sizeof(kf_value *) * (size_t)(layers * dirs));
  kf_value *in = x;
  for (int l = 0; l < layers; l++) {
    kf_value *dir_out[2] = {NULL, NULL};
    for (int d = 0; d < dirs; d++) {
      kf_value **p = params + (l * dirs + d) * per;
      kf_value *wih = p[0], *whh = p[1], *bih = has_b ? p[2] : NULL, *bhh = has_b ? p[3] : NULL;
      int64_t I = in->type.shape[2];
      int64_t s2[2] = {T * B, I};
      kf_value *xp = linear2(c, at_reshape(c, in, 2, s2), transpose_w(c, wih), bih);
      AT_CHECK(c, xp);
      int64_t G = xp->type.shape[1];
      if (G != r.gates * r.hidden) return at_err(c, KF_ERR_INVALID, "weight_ih has %lld rows, expected %lld",
                                                 (long long)G, (long long)(r.gates * r.hidden));
      int64_t s3[3] = {T, B, G};
      xp = at_reshape(c, xp, 3, s3);
      kf_value *whh_t = transpose_w(c, whh);
      kf_value *h = select0(c, h0, 0, l * dirs + d);
      kf_value *cs = c0 ? select0(c, c0, 0, l * dirs + d) : NULL;
      AT_CHECK(c, h);
      for (int64_t k = 0; k < T; k++) {
        int64_t t = d == 0 ? k : T - 1 - k;
        h = step(&r, select0(c, xp, 0, t), h, &cs, whh_t, bhh);
        AT_CHECK(c, h);
        hs[t] = h;
      }
      hn[l * dirs + d] = h;
      cn[l * dirs + d] = cs;
      dir_out[d] = stack0(c, hs, (int)T);
      AT_CHECK(c, dir_out[d]);
    }
    in = dirs == 2 ? cat_dim(c, dir_out[0], dir_out[1], 2) : dir_out[0];
    AT_CHECK(c, in);
  }
  /* back to the caller's layout */
  kf_value *out = in;
  if (unbatched) {
    int64_t sh[2] = {T, out->type.shape[2]};
    out = at_reshape(c, out, 2, sh);
  } else if (batch_first) {
    int64_t p[3] = {1, 0, 2};
    out = at_permute(c, out, p, 3);
  }
  kf_value *h_n = stack0(c, hn, (int)(layers * dirs));
  kf_value *c_n = cell == AT_CELL_LSTM ? stack0(c, cn, (int)(layers * dirs)) : NULL;
  if (unbatched) {
    int64_t sh[2] = {layers * dirs, r.hidden};
    h_n = at_reshape(c, h_n, 2, sh);
    if (c_n) c_n = at_reshape(c, c_n, 2, sh);
  }
  h_n = conform(c, 1, h_n);
  if (c_n) c_n = conform(c, 2, c_n);
  AT_CHECK(c, out);
  AT_CHECK(c, h_n);
  at_out(c, 0, out);
  at_out(c, 1, h_n);
  if (cell == AT_CELL_LSTM) {
    AT_CHECK(c, c_n);
    at_out(c, 2, c_n);
  }
  return KF_OK;
}

kf_status at_lower_rnn(at_ctx *c) { return L_rnn(c, c->row->k); }

/* lstm_cell / gru_cell / rnn_*_cell: one step, batched or not. */
kf_status at_lower_rnn_cell(at_ctx *c) {
  int cell = c->row->k;
  rnn r = {c, cell, cell == AT_CELL_LSTM ? 4 : cell == AT_CELL_GRU ? 3 : 1, 0};
  kf_value *x = at_tensor(c, "input");
  kf_value *wih = at_tensor(c, "w_ih"), *whh = at_tensor(c, "w_hh");
  kf_value *bih = at_tensor(c, "b_ih"), *bhh = at_tensor(c, "b_hh");
  if (c->st) return c->st;
  kf_value *h, *cs = NULL;
  if (cell == AT_CELL_LSTM) {
    int nh;
    kf_value **hx = at_tensors(c, "hx", &nh);
    if (nh != 2) return at_err(c, KF_ERR_INVALID, "hx must hold (h, c), has %d tensors", nh);
    h = hx[0];
    cs = hx[1];
  } else {
    h = at_tensor(c, "hx");
  }
  if (!x || !wih || !whh || !h) return at_err(c, KF_ERR_FORMAT, "missing input, hx or weights");
  if (whh->type.rank != 2) return at_err(c, KF_ERR_INVALID, "w_hh must be 2-d");
  r.hidden = whh->type.shape[1];
  bool unbatched = x->type.rank == 1;
  if (unbatched) {
    int64_t s[2] = {1, x->type.shape[0]}, hs[2] = {1, r.hidden};
    x = at_reshape(c, x, 2, s);
    h = at_reshape(c, h, 2, hs);
    if (cs) cs = at_reshape(c, cs, 2, hs);
  }
  AT_CHECK(c, x);
  kf_value *xp = linear2(c, x, transpose_w(c, wih), bih);
  kf_value *hn = step(&r, xp, h, &cs, transpose_w(c, whh), bhh);
  AT_CHECK(c, hn);
  if (unbatched) {
    hn = at_reshape(c, hn, 1, &r.hidden);
    if (cs) cs = at_reshape(c, cs, 1, &r.hidden);
  }
  AT_CHECK(c, hn);
  at_out(c, 0, hn);
  if (cell == AT_CELL_LSTM) {
    AT_CHECK(c, cs);
    at_out(c, 1, cs);
  }
  return KF_OK;
}
