/* frontend/pt2_int.h — private to the .pt2 reader (pt2.c, pt2_graph.c).
 *
 * pt2.c deals with the archive: the zip, the root prefix, the layout of the
 * records, the JSON documents and the weight store. pt2_graph.c turns the
 * ExportedProgram JSON into a kf_graph, asking pt2.c (through the weight
 * table below) where each parameter, buffer and constant lives. */
#ifndef KFUSE_FRONTEND_PT2_INT_H
#define KFUSE_FRONTEND_PT2_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "kfuse/ir.h"

/* Largest element count, stride or offset a tensor may have: keeps every
 * size computation far from int64 overflow. */
#define KF_PT2_MAX_ELEMS ((int64_t)1 << 50)

/* One entry of the weights or constants config: a named tensor and the
 * record that holds its storage. */
typedef struct pt2_weight {
  const char *fqn;       /* borrowed from the config JSON */
  const cJSON *meta;     /* its TensorMeta, or NULL */
  char *record;          /* full record name, or NULL (not in the zip) */
  const char *short_rec; /* record name without the root prefix, for messages */
  int64_t index;         /* zip entry index, -1 when missing */
  int64_t size;          /* bytes of the record */
  bool pickled;          /* use_pickle: a tensor subclass we cannot read */
  bool used;             /* referenced by the graph */
  int64_t needed;        /* bytes the tensor view needs (set when used) */
} pt2_weight;

typedef struct pt2_program {
  const char *file;      /* display name for messages */
  const char *json_name; /* "models/model.json" (without the prefix) */
  const cJSON *root;     /* the ExportedProgram */
  pt2_weight *weights;   /* weights config, then constants config */
  int n_weights;
  bool legacy_pickle;    /* <= 2.7 layout: weights only in a pickle */
} pt2_program;

/* Build the graph of `p`: inputs, kf.param ops for every parameter, buffer
 * and constant (marking the weights it uses), the nodes and the outputs.
 * On failure *out is NULL and every problem has been reported. */
kf_status kf_pt2_build_graph(pt2_program *p, const char *model_name,
                             kf_graph **out, kf_diag *diag);

/* TensorMeta -> kf_type (shape, dtype, strides, storage offset). `what`
 * names the tensor in messages. */
kf_status kf_pt2_tensor_meta(const pt2_program *p, const cJSON *meta,
                             const char *what, kf_type *out, kf_diag *diag);

#endif
