/* agent/unit.c — kernel units: construction helpers for the policies,
 * kf_unit_destroy, and lookup of the embedded templates (and writing them
 * out for a host compiler: kf_templates_write).
 *
 * A unit owns everything it points to (name, policy, source, steps with
 * their kernel names and arguments, scratch sizes, cubin, log); the
 * builders grow the step and scratch arrays one element at a time, which is
 * cheap at the sizes units have (a handful of steps). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent_int.h"

const kf_template *kf_template_find(const char *name) {
  for (int i = 0; i < kf_n_templates; i++)
    if (strcmp(kf_templates[i].name, name) == 0) return &kf_templates[i];
  return NULL;
}

kf_status kf_templates_write(const char *dir, kf_diag *diag) {
  for (int i = 0; i < kf_n_templates; i++) {
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, kf_templates[i].name);
    FILE *f = fopen(path, "w");
    bool ok = f && fwrite(kf_templates[i].text, 1, kf_templates[i].len, f) == kf_templates[i].len;
    int e = errno;
    if (f && fclose(f)) ok = false;
    if (!ok) {
      kf_diag_error(diag, "cannot write the template %s into %s: %s", kf_templates[i].name, dir, strerror(e));
      return KF_ERR_IO;
    }
  }
  return KF_OK;
}

static char *dup(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

kf_unit *kf_unit_new(const char *name, const char *policy) {
  kf_unit *u = calloc(1, sizeof *u);
  if (!u) return NULL;
  u->name = dup(name);
  u->policy = dup(policy);
  if (!u->name || !u->policy) {
    kf_unit_destroy(u);
    return NULL;
  }
  return u;
}

kf_unit_step *kf_unit_add_step(kf_unit *u, kf_unit_step_kind kind) {
  kf_unit_step *s = realloc(u->steps, sizeof *s * (size_t)(u->n_steps + 1));
  if (!s) return NULL;
  u->steps = s;
  s = &u->steps[u->n_steps++];
  memset(s, 0, sizeof *s);
  s->kind = kind;
  return s;
}

bool kf_unit_step_args(kf_unit_step *s, int n) {
  free(s->args);
  s->args = calloc((size_t)(n ? n : 1), sizeof *s->args);
  s->n_args = s->args ? n : 0;
  return s->args != NULL;
}

int kf_unit_add_scratch(kf_unit *u, int64_t bytes) {
  int64_t *b = realloc(u->scratch_bytes, sizeof *b * (size_t)(u->n_scratch + 1));
  if (!b) return -1;
  u->scratch_bytes = b;
  b[u->n_scratch] = bytes;
  return u->n_scratch++;
}

void kf_unit_destroy(kf_unit *u) {
  if (!u) return;
  for (int i = 0; i < u->n_steps; i++) {
    free(u->steps[i].kernel);
    free(u->steps[i].args);
  }
  free(u->steps);
  free(u->scratch_bytes);
  free(u->name);
  free(u->policy);
  free(u->source);
  free(u->cubin);
  free(u->compile_log);
  free(u);
}
