/* frontend/aten.h — private: lowering of one ATen call onto kf ops.
 *
 * Both frontends that see ATen ops — the .pt2 reader (frontend/pt2_graph.c)
 * and the torch-mlir reader (frontend/torch_mlir.c) — turn each node into a
 * kf_aten_call and hand it to kf_aten_lower. The lowering owns the op
 * signature table (PyTorch schema strings, parsed once), so it matches
 * positional and keyword arguments, fills in defaults for arguments that
 * were not serialized, normalises them (negative dims, "all dims", dtype
 * numbering), decomposes default-IR ops (linear, conv2d, layer_norm, ...)
 * into core ones, and checks the result against the types the exporter
 * recorded. */
#ifndef KFUSE_FRONTEND_ATEN_H
#define KFUSE_FRONTEND_ATEN_H

#include "kfuse/ir.h"

typedef enum kf_aten_arg_kind {
  KF_ARG_NONE = 0,    /* None */
  KF_ARG_TENSOR,      /* one value (tensor or scalar value) */
  KF_ARG_TENSORS,     /* list of values; entries may be NULL (Tensor?[]) */
  KF_ARG_INT,
  KF_ARG_FLOAT,
  KF_ARG_BOOL,
  KF_ARG_INTS,
  KF_ARG_FLOATS,
  KF_ARG_BOOLS,
  KF_ARG_STR,
  KF_ARG_DTYPE,       /* already converted to kf_dtype */
  KF_ARG_IGNORED,     /* layout, device, memory format, pin_memory, ... */
} kf_aten_arg_kind;

typedef struct kf_aten_arg {
  const char *name; /* keyword name, or NULL for positional */
  kf_aten_arg_kind kind;
  int64_t i;          /* INT, BOOL, DTYPE */
  double f;           /* FLOAT */
  const char *s;      /* STR */
  int n;              /* list length */
  const int64_t *ints;
  const double *floats;
  kf_value *value;    /* TENSOR */
  kf_value **values;  /* TENSORS */
} kf_aten_arg;

/* How the caller numbers dtypes passed as plain ints (torch-mlir passes
 * c10::ScalarType numbers; torch.export's JSON has its own enum). */
typedef enum kf_dtype_numbering {
  KF_DTYPE_NUMBERING_C10 = 0,
  KF_DTYPE_NUMBERING_EXPORT = 1,
} kf_dtype_numbering;

typedef struct kf_aten_call {
  const char *target;    /* "add.Tensor", "aten::add.Tensor" or
                            "torch.ops.aten.add.Tensor"; ".default" optional */
  const char *node;      /* node name for the created ops and for messages */
  const char *source;    /* stack trace or location, may be NULL */
  const char *file;      /* model file, for messages */
  int n_args;
  const kf_aten_arg *args;
  int n_outs;            /* results the caller expects */
  const kf_type *out_types; /* recorded result types, NULL entries allowed
                               via out_known; may be NULL when unknown */
  const bool *out_known; /* per result: is out_types[i] meaningful */
  kf_dtype_numbering dtype_numbering;
  bool kwargs_positional; /* keyword-only parameters may be filled by
                             position (torch-mlir's calling convention) */
} kf_aten_call;

/* Lower one call: appends ops to g and writes n_outs values to outs (a
 * result the op does not produce, such as the unused extra outputs of batch
 * norm, is written as NULL: the caller must fail if something uses it).
 * Errors name the file, node and op, and the stack trace when present. */
kf_status kf_aten_lower(kf_graph *g, const kf_aten_call *call, kf_value **outs,
                        kf_diag *diag);

/* True when target names an in-place overload (relu_, add_.Tensor): it is
 * lowered through its functional form and outs[0] is the new value of the
 * mutated argument (self), which the caller must rebind. */
bool kf_aten_is_inplace(const char *target);

/* Convert an export ScalarType number (torch/_export/serde/schema.py) or a
 * c10 one; KF_DTYPE_INVALID when unknown or unsupported. */
kf_dtype kf_dtype_from_export(int64_t v);
kf_dtype kf_dtype_from_c10(int64_t v);

#endif
