/* tests/unit/test_task.c — the task writer (agent/task.c, kfuse task):
 * every task of a few fixtures reads back (task.json, group.mlir through
 * the MLIR-text reader and the verifier, the built-in unit through the
 * strict unit reader), the group function's signature matches task.json,
 * and bad requests (an existing directory, a group that does not exist or
 * runs no kernel) are refused without writing anything. tests/task_check.sh
 * runs `kfuse task --all` over every fixture. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "kfuse/agent.h"
#include "kfuse/frontend.h"
#include "kfuse/compile.h"
#include "kfuse/task.h"

static char g_msgs[4096];

static void collect(void *user, kf_diag_level level, const char *msg) {
  (void)user;
  (void)level;
  size_t n = strlen(g_msgs);
  snprintf(g_msgs + n, sizeof g_msgs - n, "%s\n", msg);
}

static kf_diag *fresh_diag(void) {
  static kf_diag d;
  g_msgs[0] = 0;
  kf_diag_init(&d, collect, NULL);
  return &d;
}

static kf_graph *load(const char *path) {
  kf_load_options o;
  kf_load_options_init(&o);
  kf_graph *g = NULL;
  if (kf_model_load(path, &o, &g, fresh_diag()) != KF_OK) fail_msg("load %s: %s", path, g_msgs);
  if (kf_graph_verify(g, fresh_diag()) != KF_OK) fail_msg("verify %s: %s", path, g_msgs);
  return g;
}

static char *fixture(const char *name) {
  const char *d = getenv("KFUSE_FIXTURES");
  char *p = malloc(1024);
  snprintf(p, 1024, "%s/%s.pt2", d ? d : "tests/fixtures", name);
  return p;
}

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) fail_msg("%s: cannot open", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  assert_true(s && fread(s, 1, (size_t)n, f) == (size_t)n);
  s[n] = 0;
  fclose(f);
  return s;
}

static char *tmp_root(void) {
  char *t = strdup("/tmp/kfuse_task_XXXXXX");
  assert_non_null(mkdtemp(t));
  return t;
}

static void rm_rf(const char *dir) {
  char cmd[1200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

/* One task directory: its files read back and agree with each other. */
static void check_task(const char *dir) {
  char path[1200];
  snprintf(path, sizeof path, "%s/task.json", dir);
  char *text = slurp(path);
  cJSON *t = cJSON_Parse(text);
  free(text);
  if (!t) fail_msg("%s: not JSON", path);
  assert_string_equal(cJSON_GetObjectItem(t, "format")->valuestring, "kfuse-task-v1");
  cJSON *ins = cJSON_GetObjectItem(t, "inputs"), *outs = cJSON_GetObjectItem(t, "outputs");
  assert_true(cJSON_IsArray(ins) && cJSON_IsArray(outs));
  assert_true(cJSON_GetArraySize(outs) > 0);
  /* the group alone, as IR: arguments and results as task.json lists them */
  snprintf(path, sizeof path, "%s/group.mlir", dir);
  kf_graph *g = load(path);
  assert_int_equal(g->n_inputs, cJSON_GetArraySize(ins));
  assert_int_equal(g->n_outputs, cJSON_GetArraySize(outs));
  for (int i = 0; i < g->n_inputs; i++) {
    cJSON *in = cJSON_GetArrayItem(ins, i);
    assert_string_equal(g->input_names[i], cJSON_GetObjectItem(in, "name")->valuestring);
    assert_string_equal(kf_dtype_name(g->inputs[i]->type.dtype), cJSON_GetObjectItem(in, "dtype")->valuestring);
    cJSON *shape = cJSON_GetObjectItem(in, "shape");
    if (shape) {
      assert_int_equal(g->inputs[i]->type.rank, cJSON_GetArraySize(shape));
      for (int d = 0; d < g->inputs[i]->type.rank; d++)
        assert_int_equal(g->inputs[i]->type.shape[d], (int64_t)cJSON_GetArrayItem(shape, d)->valuedouble);
    }
  }
  kf_graph_destroy(g);
  /* the built-in unit, through the strict reader */
  cJSON *bu = cJSON_GetObjectItem(t, "builtin_unit");
  if (cJSON_IsString(bu)) {
    snprintf(path, sizeof path, "%s/%s", dir, bu->valuestring);
    kf_unit *u = NULL;
    if (kf_unit_read_dir(path, &u, fresh_diag()) != KF_OK) fail_msg("%s: %s", path, g_msgs);
    assert_true(u->n_steps > 0);
    kf_unit_destroy(u);
  } else {
    assert_true(cJSON_IsString(cJSON_GetObjectItem(t, "builtin_why")));
  }
  /* the floor's bytes: inputs and outputs once each; FLOPs for the
   * groups whose anchor multiplies matrices */
  cJSON *floor = cJSON_GetObjectItem(t, "floor");
  assert_true(cJSON_GetObjectItem(floor, "bytes")->valuedouble > 0);
  const char *kind = cJSON_GetObjectItem(t, "kind")->valuestring;
  double flops = cJSON_GetObjectItem(floor, "flops")->valuedouble;
  if (!strcmp(kind, "gemm") || !strcmp(kind, "conv") || !strcmp(kind, "attention")) assert_true(flops > 0);
  else assert_true(flops == 0);
  cJSON_Delete(t);
}

static void all_tasks(const char *name) {
  char *path = fixture(name), *root = tmp_root(), out[1100];
  snprintf(out, sizeof out, "%s/tasks", root);
  kf_graph *g = load(path);
  kf_compile_options o;
  kf_compile_options_init(&o);
  if (kf_task_write(g, &o, -1, out, fresh_diag()) != KF_OK) fail_msg("%s: %s", name, g_msgs);
  kf_graph_destroy(g);
  char idx[1200];
  snprintf(idx, sizeof idx, "%s/tasks.json", out);
  char *text = slurp(idx);
  cJSON *t = cJSON_Parse(text);
  free(text);
  cJSON *list = cJSON_GetObjectItem(t, "tasks");
  assert_true(cJSON_GetArraySize(list) > 0);
  cJSON *e;
  cJSON_ArrayForEach(e, list) {
    char dir[1300];
    snprintf(dir, sizeof dir, "%s/%s", out, cJSON_GetObjectItem(e, "dir")->valuestring);
    check_task(dir);
  }
  cJSON_Delete(t);
  rm_rf(root);
  free(root);
  free(path);
}

static void test_mlp(void **state) {
  (void)state;
  all_tasks("mlp.default");
}

static void test_resnet_block(void **state) {
  (void)state;
  all_tasks("resnet_block.core");
}

static void test_attention(void **state) {
  (void)state;
  all_tasks("attention.default");
}

static void test_norms(void **state) {
  (void)state;
  all_tasks("norms.default");
}

/* One group to DIR itself; an existing DIR, a missing group and a view
 * group are refused and leave nothing behind. */
static void test_one_and_refusals(void **state) {
  (void)state;
  char *path = fixture("mlp.default"), *root = tmp_root(), out[1100];
  snprintf(out, sizeof out, "%s/one", root);
  kf_compile_options o;
  kf_compile_options_init(&o);
  kf_graph *g = load(path);
  assert_int_equal(kf_task_write(g, &o, 1, out, fresh_diag()), KF_OK);
  kf_graph_destroy(g);
  check_task(out);
  /* group 1: x [4, 16] @ w^T [16, 32] + bias, relu: 2 x 4 x 32 x 16 FLOPs;
   * bytes: bias 32, x 64, w 512, out 128 floats */
  char tj[1200];
  snprintf(tj, sizeof tj, "%s/task.json", out);
  char *text = slurp(tj);
  cJSON *t = cJSON_Parse(text);
  free(text);
  cJSON *floor = cJSON_GetObjectItem(t, "floor");
  assert_int_equal((int64_t)cJSON_GetObjectItem(floor, "flops")->valuedouble, 2 * 4 * 32 * 16);
  assert_int_equal((int64_t)cJSON_GetObjectItem(floor, "bytes")->valuedouble, (32 + 64 + 512 + 128) * 4);
  cJSON_Delete(t);

  g = load(path);
  assert_int_equal(kf_task_write(g, &o, 1, out, fresh_diag()), KF_ERR_ARG);
  assert_non_null(strstr(g_msgs, "exists"));
  kf_graph_destroy(g);

  char other[1200];
  snprintf(other, sizeof other, "%s/missing", root);
  g = load(path);
  assert_int_equal(kf_task_write(g, &o, 999, other, fresh_diag()), KF_ERR_ARG);
  assert_non_null(strstr(g_msgs, "--group 999"));
  kf_graph_destroy(g);
  g = load(path);
  assert_int_equal(kf_task_write(g, &o, 0, other, fresh_diag()), KF_ERR_ARG); /* group 0: a view */
  assert_non_null(strstr(g_msgs, "view group"));
  kf_graph_destroy(g);
  struct stat st;
  assert_int_not_equal(lstat(other, &st), 0);
  rm_rf(root);
  free(root);
  free(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_mlp),           cmocka_unit_test(test_resnet_block), cmocka_unit_test(test_attention),
      cmocka_unit_test(test_norms),         cmocka_unit_test(test_one_and_refusals),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
