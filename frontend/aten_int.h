/* frontend/aten_int.h — private to the ATen lowering (aten.c, aten_ops.c).
 *
 * aten.c owns the machinery: the op-signature table parsed from PyTorch
 * schema strings, argument matching and defaults, the emit helpers that
 * create and type kf ops, and the final check against the types the exporter
 * recorded. aten_ops.c holds the table itself and one lowering function per
 * family of overloads, written against the helpers below. */
#ifndef KFUSE_FRONTEND_ATEN_INT_H
#define KFUSE_FRONTEND_ATEN_INT_H

#include <stdbool.h>
#include <stdint.h>

#include "aten.h"
#include "kfuse/ir.h"

#define AT_MAX_ARGS 16

/* Argument types of the schema language, reduced to what lowering needs. */
typedef enum at_type {
  AT_TENSOR,  /* Tensor (a Python number is accepted: a wrapped number) */
  AT_TENSORS, /* Tensor[] and Tensor?[] */
  AT_SCALAR,  /* Scalar */
  AT_INT,     /* int, SymInt */
  AT_INTS,    /* int[], int[N], SymInt[] */
  AT_FLOAT,
  AT_FLOATS,
  AT_BOOL,
  AT_BOOLS,
  AT_STR,
  AT_DTYPE,   /* ScalarType */
  AT_OTHER,   /* Layout, Device, MemoryFormat, Generator: accepted, ignored */
} at_type;

typedef struct at_sarg {
  const char *name;
  at_type type;
  bool optional;   /* T? : None allowed */
  bool elem_opt;   /* Tensor?[] : None entries allowed */
  int fixed;       /* N of int[N], else 0 */
  bool kw_only;
  bool mutated;    /* (a!) */
  bool has_default;
  kf_aten_arg def; /* kind KF_ARG_NONE for a None default */
} at_sarg;

typedef struct at_schema {
  const char *name;     /* "add" */
  const char *overload; /* "Tensor", or "" for the default overload */
  int n_args;
  at_sarg args[AT_MAX_ARGS];
  int n_returns; /* -1: Tensor[] */
} at_schema;

typedef struct at_ctx at_ctx;
typedef kf_status (*at_lower_fn)(at_ctx *c);

/* One supported overload: the schema in PyTorch's syntax, its lowering, a
 * parameter for it (an opcode or a variant) and a short description for
 * `kfuse ops --aten` (NULL: "kf.<opcode k>"). */
typedef struct at_row {
  const char *schema;
  at_lower_fn fn;
  int k;
  const char *desc;
} at_row;

extern const at_row kf_aten_rows[];
extern const int kf_aten_n_rows;

struct at_ctx {
  kf_graph *g;
  const kf_aten_call *call;
  const at_row *row;
  const at_schema *s;
  kf_aten_arg a[AT_MAX_ARGS]; /* by schema position, defaults filled in */
  kf_value **outs;
  int n_outs;
  kf_diag *diag; /* prefixes messages with the node */
  kf_status st;  /* first failure of an emit helper */
  char what[1024]; /* "model.pt2: node 'x' (aten.add.Tensor)" */
  int seq;        /* helper ops created so far */
};

/* ---- errors ---------------------------------------------------------------
 * Report "<what>: <message>" and return st. */
kf_status at_err(at_ctx *c, kf_status st, const char *fmt, ...) KF_PRINTF(3, 4);

/* ---- arguments (already checked against the schema: these cannot fail) -- */
const kf_aten_arg *at_arg(at_ctx *c, const char *name);
bool at_none(at_ctx *c, const char *name);
int64_t at_int(at_ctx *c, const char *name);
double at_float(at_ctx *c, const char *name);
bool at_bool(at_ctx *c, const char *name);
const char *at_str(at_ctx *c, const char *name); /* NULL for None */
kf_dtype at_dtype(at_ctx *c, const char *name);  /* INVALID for None */
kf_number at_num(at_ctx *c, const char *name);    /* Scalar */
/* int[]: n entries (an int given for int[N] is repeated N times). */
const int64_t *at_ints(at_ctx *c, const char *name, int *n);
const double *at_floats(at_ctx *c, const char *name, int *n);
kf_value **at_tensors(at_ctx *c, const char *name, int *n);
/* Tensor argument as an operand: a Python number becomes a kf.scalar (a
 * wrapped number); None gives NULL. */
kf_value *at_operand(at_ctx *c, const char *name);
/* Tensor argument that must be a tensor: a number becomes a 0-d kf.full. */
kf_value *at_tensor(at_ctx *c, const char *name);

/* ---- emitting ops ---------------------------------------------------------
 * Every helper returns NULL after reporting an error (c->st is set), so a
 * lowering can chain them and check once with AT_CHECK. */
#define AT_CHECK(c, v)                                                        \
  do {                                                                        \
    if (!(v)) return (c)->st ? (c)->st : KF_ERR_INVALID;                      \
  } while (0)

/* Append an op named after the node; results start with `declared` types
 * (NULL: untyped). Set attributes, then call at_fin. */
kf_op *at_op(at_ctx *c, kf_opcode code, kf_value **operands, int n,
             int n_results, const kf_type *declared);
/* Infer the op's result types (kf_infer_types) and store them; returns
 * result 0, or NULL on error. */
kf_value *at_fin(at_ctx *c, kf_op *op);

kf_value *at_scalar(at_ctx *c, kf_number v);
kf_value *at_unary(at_ctx *c, kf_opcode code, kf_value *x);
kf_value *at_binary(at_ctx *c, kf_opcode code, kf_value *a, kf_value *b);
kf_value *at_where(at_ctx *c, kf_value *cond, kf_value *a, kf_value *b);
/* Returns x itself when nothing changes. */
kf_value *at_reshape(at_ctx *c, kf_value *x, int rank, const int64_t *shape);
kf_value *at_permute(at_ctx *c, kf_value *x, const int64_t *dims, int n);
kf_value *at_expand(at_ctx *c, kf_value *x, int rank, const int64_t *shape);
kf_value *at_cast(at_ctx *c, kf_value *x, kf_dtype t);
kf_value *at_full(at_ctx *c, kf_dtype t, int rank, const int64_t *shape,
                  kf_number v);
kf_value *at_arange(at_ctx *c, kf_number start, kf_number end, kf_number step,
                    kf_dtype t);
kf_value *at_reduce(at_ctx *c, kf_opcode code, kf_value *x, const int64_t *dims,
                    int nd, bool keepdim, kf_dtype declared);
kf_value *at_index_select(at_ctx *c, kf_value *x, int64_t dim, kf_value *idx);

/* Wrap a possibly negative dim into [0, rank) (rank 0 admits -1 and 0);
 * false after reporting. `what` names the argument. */
bool at_wrap_dim(at_ctx *c, int64_t d, int rank, const char *what,
                 int64_t *out);
/* Wrap, sort and de-duplicate a dim list; NULL/0 entries or an empty list
 * mean every dim when all_if_empty. Writes *nd dims into out. */
bool at_dims(at_ctx *c, const int64_t *d, int n, int rank, bool all_if_empty,
             const char *what, int64_t *out, int *nd);

/* Store result i (ignored past the caller's n_outs). */
void at_out(at_ctx *c, int i, kf_value *v);

/* Recurrent layers (aten_rnn.c); the row's k is one of these. */
enum { AT_CELL_LSTM, AT_CELL_GRU, AT_CELL_TANH, AT_CELL_RELU };
kf_status at_lower_rnn(at_ctx *c);
kf_status at_lower_rnn_cell(at_ctx *c);

/* Number helpers. */
kf_number at_number_of_kind(kf_dtype t, double v);
bool at_number_is(kf_number n, double v);

#endif
