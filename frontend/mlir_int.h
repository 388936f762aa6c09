/* frontend/mlir_int.h — private: state shared by the MLIR-text readers.
 *
 * frontend/mlir_text.c parses the text with the MLIR C API, finds the one
 * function, and converts its body op by op: "kf.*" ops itself, "torch.*"
 * ops through frontend/torch_mlir.c. Both bind MLIR values to kf values
 * through the map kept here. */
#ifndef KFUSE_FRONTEND_MLIR_INT_H
#define KFUSE_FRONTEND_MLIR_INT_H

#include <mlir-c/IR.h>

#include "kfuse/ir.h"

typedef struct mlir_binding {
  const void *key;
  kf_value *value;
} mlir_binding;

typedef struct mlir_conv {
  kf_graph *g;
  kf_diag *diag;
  const char *file;
  mlir_binding *map;
  size_t cap, n;
  void *torch; /* torch_mlir.c's state, created on first use */
} mlir_conv;

kf_value *kf_mlir_lookup(const mlir_conv *c, MlirValue v);
void kf_mlir_bind(mlir_conv *c, MlirValue v, kf_value *kv);

/* Name for messages and for the op: the NameLoc name if present. Writes at
 * most n bytes into buf; returns false when the op has no name location. */
bool kf_mlir_op_name(MlirOperation op, char *buf, size_t n);

/* Convert a builtin type (ranked tensor with an optional strided<> encoding,
 * or f64/i64/i1 scalars). `what` names the value for messages. */
kf_status kf_mlir_builtin_type(mlir_conv *c, MlirType t, kf_type *out,
                               const char *what);

/* torch dialect (frontend/torch_mlir.c). */
bool kf_torch_is_type(MlirType t);
kf_status kf_torch_type(mlir_conv *c, MlirType t, kf_type *out,
                        const char *what);
kf_status kf_torch_convert_op(mlir_conv *c, MlirOperation op);
/* Called for func.return operands in torch-dialect input. */
void kf_torch_fini(mlir_conv *c);

#endif
