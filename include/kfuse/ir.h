/* kfuse/ir.h — the graph IR: values, ops, attributes, graphs; the op table;
 * shape inference, verifier, printer and passes.
 *
 * A graph is a straight-line SSA program in topological order. Values are
 * tensors (dtype, shape, strides, storage offset) or scalars (a PyTorch
 * number: f64, i64 or bool). Ops come from one table (kfuse/ops.def) that
 * drives the enum, the names, the operand and attribute schemas, the verifier
 * and the printer. All IR memory lives in an arena owned by the graph and is
 * freed at once; weight data is never copied into it — a graph refers to
 * weights through a kf_weight_store supplied by whoever loaded the model.
 *
 * The textual form is MLIR generic syntax (docs/ARCHITECTURE.md): printing
 * needs nothing; parsing goes through the MLIR C API (kfuse/frontend.h). */
#ifndef KFUSE_IR_H
#define KFUSE_IR_H

#include <stdbool.h>
#include <stdint.h>

#include "kfuse/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define KF_MAX_RANK 8

typedef enum kf_dtype {
  KF_DTYPE_INVALID = 0,
  KF_DTYPE_F32,
  KF_DTYPE_F64,
  KF_DTYPE_F16,
  KF_DTYPE_BF16,
  KF_DTYPE_I64,
  KF_DTYPE_I32,
  KF_DTYPE_I16,
  KF_DTYPE_I8,
  KF_DTYPE_U8,
  KF_DTYPE_BOOL,
  KF_DTYPE_COUNT
} kf_dtype;

/* MLIR spelling: f32 f64 f16 bf16 i64 i32 i16 i8 ui8 i1. */
KF_API const char *kf_dtype_name(kf_dtype t);
/* Inverse of kf_dtype_name; KF_DTYPE_INVALID when unknown. */
KF_API kf_dtype kf_dtype_from_name(const char *name, size_t len);
KF_API size_t kf_dtype_size(kf_dtype t);
KF_API bool kf_dtype_is_float(kf_dtype t);
KF_API bool kf_dtype_is_int(kf_dtype t); /* integral, excluding bool */
/* PyTorch's promoteTypes for two dtypes. */
KF_API kf_dtype kf_dtype_promote(kf_dtype a, kf_dtype b);

typedef enum kf_type_kind { KF_TYPE_TENSOR = 0, KF_TYPE_SCALAR = 1 } kf_type_kind;

/* A value's type. Scalars use dtype F64, I64 or BOOL and rank 0. Strides
 * and offset are in elements; contiguous row-major unless a view says
 * otherwise. */
typedef struct kf_type {
  kf_type_kind kind;
  kf_dtype dtype;
  int rank;
  int64_t shape[KF_MAX_RANK];
  int64_t strides[KF_MAX_RANK];
  int64_t offset;
} kf_type;

KF_API void kf_type_init_tensor(kf_type *t, kf_dtype dtype, int rank,
                                const int64_t *shape); /* contiguous */
KF_API void kf_type_init_scalar(kf_type *t, kf_dtype dtype);
KF_API void kf_type_set_contiguous(kf_type *t);
KF_API bool kf_type_is_contiguous(const kf_type *t);
/* Channels-last (NHWC memory order) of a rank-4 [N, C, H, W] tensor, or
 * NDHWC of a rank-5 [N, C, D, H, W] one, the layout pass/layout.c gives
 * convolutions' activations; size-1 dims are ignored, as in
 * kf_type_is_contiguous (a tensor may be both). */
KF_API void kf_type_set_channels_last(kf_type *t);
KF_API bool kf_type_is_channels_last(const kf_type *t);
KF_API int64_t kf_type_numel(const kf_type *t);
/* Same kind, dtype and shape (strides ignored). */
KF_API bool kf_type_same_shape(const kf_type *a, const kf_type *b);
/* Both tensors of the same rank and sizes, whatever their dtypes and strides. */
KF_API bool kf_type_same_dims(const kf_type *a, const kf_type *b);
KF_API bool kf_type_equal(const kf_type *a, const kf_type *b);
/* Writes e.g. "tensor<2x3xf32>" (the textual form) into buf. */
KF_API void kf_type_str(const kf_type *t, char *buf, size_t n);

/* ---- op table ----------------------------------------------------------- */

typedef enum kf_opcode {
#define KF_OP(ID, NAME, KIND, OPERANDS, RESULTS, ATTRS) KF_OP_##ID,
#include "kfuse/ops.def"
#undef KF_OP
  KF_OP_COUNT
} kf_opcode;

typedef enum kf_op_kind {
  KF_KIND_SOURCE,
  KF_KIND_UNARY,
  KF_KIND_BINARY,
  KF_KIND_TERNARY,
  KF_KIND_VIEW,
  KF_KIND_SHAPE,
  KF_KIND_REDUCE,
  KF_KIND_SCAN,
  KF_KIND_NORM,
  KF_KIND_MATMUL,
  KF_KIND_CONV,
  KF_KIND_POOL,
  KF_KIND_ATTENTION,
  KF_KIND_RECURRENT,
} kf_op_kind;

typedef enum kf_attr_kind {
  KF_ATTR_INT = 'i',
  KF_ATTR_FLOAT = 'f',
  KF_ATTR_BOOL = 'b',
  KF_ATTR_INTS = 'I',
  KF_ATTR_FLOATS = 'F',
  KF_ATTR_STR = 's',
  KF_ATTR_DTYPE = 't',
  KF_ATTR_NUMBER = 'n',
} kf_attr_kind;

#define KF_MAX_ATTRS 8
#define KF_MAX_OPERAND_SLOTS 8

typedef struct kf_attr_schema {
  const char *name;
  kf_attr_kind kind;
  bool optional;
} kf_attr_schema;

typedef struct kf_operand_schema {
  const char *name;
  bool optional;    /* slot may be NULL */
  bool variadic;    /* last slot only: zero or more values */
  bool allow_scalar;
} kf_operand_schema;

typedef struct kf_op_info {
  kf_opcode code;
  const char *name; /* without the "kf." prefix */
  kf_op_kind kind;
  int n_results;    /* -1: decided by attributes (split) */
  int n_operand_slots;
  kf_operand_schema operands[KF_MAX_OPERAND_SLOTS];
  int n_attrs;
  kf_attr_schema attrs[KF_MAX_ATTRS];
  bool has_optional_operands;
} kf_op_info;

/* Parsed schema of an op (parsed from ops.def once, thread-safe). */
KF_API const kf_op_info *kf_op_info_get(kf_opcode code);

/* The result rule of a one-row binary op (ops.def's KF_EW2 rows);
 * KF_EW2_NONE for every other op. */
typedef enum kf_ew2_result {
  KF_EW2_NONE = 0,
  KF_EW2_PROMOTE, /* the operands' promoted type */
  KF_EW2_FLOAT,   /* that type when floating, else the default float */
  KF_EW2_INT,     /* that type, which must be integer or bool */
  KF_EW2_CMP,     /* bool: the operands compared in their promoted type */
  KF_EW2_LOGICAL, /* bool: the operands taken as bools */
} kf_ew2_result;
KF_API kf_ew2_result kf_op_ew2_result(kf_opcode code);
/* Look up by name without "kf."; KF_OP_COUNT when unknown. */
KF_API kf_opcode kf_opcode_from_name(const char *name, size_t len);
KF_API const char *kf_opcode_name(kf_opcode code);
/* Index of attribute `name` in the op's schema, or -1. */
KF_API int kf_op_attr_index(kf_opcode code, const char *name);

/* ---- values, attributes, ops, graphs -------------------------------------- */

typedef struct kf_op kf_op;
typedef struct kf_graph kf_graph;

typedef struct kf_value {
  uint32_t id;      /* dense, unique within the graph */
  kf_type type;
  kf_op *def;       /* NULL for graph inputs */
  int index;        /* result index in def, or graph input index */
} kf_value;

typedef enum kf_number_kind {
  KF_NUM_INT = 0,
  KF_NUM_FLOAT = 1,
  KF_NUM_BOOL = 2,
} kf_number_kind;

typedef struct kf_number {
  kf_number_kind kind;
  int64_t i; /* INT and BOOL (0/1) */
  double f;  /* FLOAT */
} kf_number;

KF_API kf_number kf_number_int(int64_t v);
KF_API kf_number kf_number_float(double v);
KF_API kf_number kf_number_bool(bool v);
KF_API double kf_number_as_double(kf_number n);

typedef struct kf_attr {
  bool present;
  union {
    int64_t i;
    double f;
    bool b;
    struct { int64_t *v; int n; } ints;
    struct { double *v; int n; } floats;
    const char *s;
    kf_dtype t;
    kf_number num;
  } u;
} kf_attr;

struct kf_op {
  kf_opcode code;
  const char *name;  /* unique within the graph (node name); not NULL */
  const char *source; /* where it came from (stack trace), may be NULL */
  int n_operands;     /* slots: fixed slots plus the variadic tail */
  kf_value **operands; /* optional slots may be NULL */
  int n_results;
  kf_value **results;
  kf_attr attrs[KF_MAX_ATTRS]; /* indexed like kf_op_info.attrs */
  kf_op *prev, *next;
  kf_graph *graph;
};

/* A model weight the graph refers to. Data comes from the store, lazily. */
typedef struct kf_weight {
  const char *fqn;
  kf_type type;     /* dtype, shape, strides and storage offset */
  int64_t storage_bytes; /* bytes of the underlying storage record */
  const char *storage;   /* name of that record; weights sharing one (tied
                            weights) have the same name; NULL: own storage */
  bool graph_owned;      /* data created by a pass (kf_graph_add_constant,
                            e.g. folded batch norm), held by the graph's
                            store, not in the model file */
} kf_weight;

/* Supplies weight bytes on demand. get returns a pointer to the storage
 * (valid until the store is destroyed) or an error with a diagnostic. */
typedef struct kf_weight_store {
  void *impl;
  kf_status (*get)(void *impl, const char *fqn, const void **data,
                   int64_t *nbytes, kf_diag *diag);
  void (*destroy)(void *impl);
} kf_weight_store;

struct kf_graph {
  const char *name;   /* model name (e.g. "model"), not NULL */
  const char *origin; /* file it was read from, may be NULL */
  int n_inputs;
  kf_value **inputs;
  const char **input_names;
  int n_outputs;
  kf_value **outputs;
  kf_op *first, *last;
  int n_weights;
  kf_weight *weights;
  kf_weight_store store; /* impl may be NULL: no data available */
  uint32_t next_value_id;
  uint32_t next_name_id;
  void *arena; /* private */
};

/* Create an empty graph named `name`. NULL on allocation failure. */
KF_API kf_graph *kf_graph_create(const char *name);
/* Frees the graph, its arena and its weight store. Accepts NULL. */
KF_API void kf_graph_destroy(kf_graph *g);

/* Arena allocation tied to the graph's lifetime (zeroed; aborts on OOM, as
 * IR memory exhaustion is not recoverable in a useful way). */
KF_API void *kf_graph_alloc(kf_graph *g, size_t n);
KF_API const char *kf_graph_strdup(kf_graph *g, const char *s);
KF_API const char *kf_graph_strndup(kf_graph *g, const char *s, size_t n);

/* Append a graph input with the given name and type. */
KF_API kf_value *kf_graph_add_input(kf_graph *g, const char *name,
                                    const kf_type *type);
/* Replace the output list. */
KF_API void kf_graph_set_outputs(kf_graph *g, kf_value **outs, int n);
/* Register a weight; returns its index. */
KF_API int kf_graph_add_weight(kf_graph *g, const char *fqn,
                               const kf_type *type, int64_t storage_bytes);
KF_API const kf_weight *kf_graph_find_weight(const kf_graph *g,
                                             const char *fqn);
/* Take ownership of a weight store (destroyed with the graph). When passes
 * have added constants, the new store replaces only the layer beneath them. */
KF_API void kf_graph_take_store(kf_graph *g, kf_weight_store store);
/* Add a graph-owned constant tensor (new data made by a pass, e.g. a conv
 * weight with batch norm folded in) as weight `fqn`, which must be new.
 * type: a contiguous (or channels-last) tensor; data: nbytes = numel * dtype size bytes from
 * malloc, taken in every case (freed on failure). The bytes are served by
 * g->store, layered over the model's store, and live until the graph is
 * destroyed; the weight is marked graph_owned. */
KF_API kf_status kf_graph_add_constant(kf_graph *g, const char *fqn,
                                       const kf_type *type, void *data,
                                       int64_t nbytes, kf_diag *diag);

/* Create an op at the end of the graph. operands: n_operands slots (NULL for
 * absent optional ones); result_types: n_results types. name may be NULL
 * (a fresh "%N"-style name is generated). Attributes start absent. */
KF_API kf_op *kf_graph_append_op(kf_graph *g, kf_opcode code, const char *name,
                                 kf_value **operands, int n_operands,
                                 const kf_type *result_types, int n_results);
/* Move op (linked in g) to just before `before` (NULL: to the end). The
 * caller keeps SSA order valid: used by passes that create ops mid-graph. */
KF_API void kf_graph_move_op(kf_graph *g, kf_op *op, kf_op *before);
/* Unlink and forget an op (its results must be unused). */
KF_API void kf_graph_remove_op(kf_graph *g, kf_op *op);
/* Replace every use of `from` (operands and graph outputs) by `to`. */
KF_API void kf_graph_replace_uses(kf_graph *g, kf_value *from, kf_value *to);
/* A kf.copy between the two dense layouts of a rank-4 tensor (row-major to
 * channels-last or back, same dtype): a transpose, its own kernel. */
KF_API bool kf_op_is_layout_copy(const kf_op *op);
/* True when op's results alias its operand's storage instead of holding
 * their own: permute, expand, slice, select, as_strided, unfold (kind VIEW
 * in ops.def), split (kind SHAPE: several results, each a view), and a
 * reshape whose result is laid out as a view (its type is not a fresh
 * contiguous layout, or its operand is contiguous: a view either way, as
 * kf_infer_types computes it). The one definition the passes (partition,
 * memory plan, materialize-outputs) and the interpreter share. */
KF_API bool kf_op_is_view(const kf_op *op);
/* Number of uses of v (operands and graph outputs). */
KF_API int kf_graph_count_uses(const kf_graph *g, const kf_value *v);
KF_API int kf_graph_count_ops(const kf_graph *g);

/* Attribute setters; the attribute must exist in the op's schema with that
 * kind (aborts otherwise: a programming error). */
KF_API void kf_op_set_int(kf_op *op, const char *name, int64_t v);
KF_API void kf_op_set_float(kf_op *op, const char *name, double v);
KF_API void kf_op_set_bool(kf_op *op, const char *name, bool v);
KF_API void kf_op_set_ints(kf_op *op, const char *name, const int64_t *v,
                           int n);
KF_API void kf_op_set_floats(kf_op *op, const char *name, const double *v,
                             int n);
KF_API void kf_op_set_str(kf_op *op, const char *name, const char *s);
KF_API void kf_op_set_dtype(kf_op *op, const char *name, kf_dtype t);
KF_API void kf_op_set_number(kf_op *op, const char *name, kf_number v);
/* Attribute getters (borrow); the attribute must be present unless
 * kf_op_has_attr says so. */
KF_API bool kf_op_has_attr(const kf_op *op, const char *name);
KF_API int64_t kf_op_get_int(const kf_op *op, const char *name);
KF_API double kf_op_get_float(const kf_op *op, const char *name);
KF_API bool kf_op_get_bool(const kf_op *op, const char *name);
/* An optional bool attribute: false when absent. */
KF_API bool kf_op_get_flag(const kf_op *op, const char *name);
KF_API const int64_t *kf_op_get_ints(const kf_op *op, const char *name, int *n);
KF_API const double *kf_op_get_floats(const kf_op *op, const char *name,
                                      int *n);
KF_API const char *kf_op_get_str(const kf_op *op, const char *name);
KF_API kf_dtype kf_op_get_dtype(const kf_op *op, const char *name);
KF_API kf_number kf_op_get_number(const kf_op *op, const char *name);

/* ---- inference, verification, printing ------------------------------------ */

/* Compute the result types of `op` from its operands and attributes.
 * `results` holds the op's declared result types on entry (used where the
 * type itself carries information: reshape, expand, full, cast, ...) and
 * the inferred types on return. Errors name the op. */
KF_API kf_status kf_infer_types(const kf_op *op, kf_type *results,
                                kf_diag *diag);

/* Check every invariant of the graph: operand/attribute schemas, SSA order,
 * unique names, result types equal to inferred ones. Reports every problem
 * it finds, returns KF_ERR_INVALID if any. */
KF_API kf_status kf_graph_verify(const kf_graph *g, kf_diag *diag);

/* Print the graph as MLIR generic-form text. Returns KF_ERR_IO if the writer
 * fails. */
KF_API kf_status kf_graph_print(const kf_graph *g, kf_write_fn write,
                                void *user);

#ifdef __cplusplus
}
#endif
#endif
