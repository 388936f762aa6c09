/* driver/emit.c — writes a module's object file through the LLVM C API and
 * links shared modules.
 *
 * The object holds the plan blob (runtime/kfr_plan.h: plan, cubins,
 * embedded constants and weights) as a read-only, 64-byte aligned array and
 * one exported function, <prefix>_create, that hands it to the runtime's
 * kfr_model_create. Everything else a module exports (run, destroy, the
 * info queries) is the runtime's, linked in from libkfuse_runtime.a. The
 * object targets the host (x86-64 Linux, position independent), so it can
 * become part of a shared module or be linked statically into a program. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Core.h>
#include <llvm-c/Target.h>
#include <llvm-c/TargetMachine.h>

#include "emit_int.h"

extern const unsigned char kf_runtime_header_text[];
extern const unsigned long kf_runtime_header_text_len;

static bool valid_prefix(const char *p) {
  if (!p || !*p || (*p >= '0' && *p <= '9')) return false;
  for (const char *c = p; *c; c++)
    if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
          *c == '_'))
      return false;
  return true;
}

kf_status kf_emit_object(const void *blob, size_t blob_bytes, const char *prefix,
                         const char *path, const char *shown, kf_diag *diag) {
  if (!valid_prefix(prefix)) {
    kf_diag_error(diag, "symbol prefix '%s' is not a C identifier", prefix ? prefix : "");
    return KF_ERR_ARG;
  }
  LLVMInitializeX86TargetInfo();
  LLVMInitializeX86Target();
  LLVMInitializeX86TargetMC();
  LLVMInitializeX86AsmPrinter();
  const char *triple = "x86_64-pc-linux-gnu";
  LLVMTargetRef target;
  char *err = NULL;
  if (LLVMGetTargetFromTriple(triple, &target, &err)) {
    kf_diag_error(diag, "LLVM has no target for %s: %s", triple, err ? err : "?");
    LLVMDisposeMessage(err);
    return KF_ERR_INTERNAL;
  }
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(target, triple, "x86-64", "",
                                                    LLVMCodeGenLevelDefault, LLVMRelocPIC,
                                                    LLVMCodeModelDefault);
  if (!tm) {
    kf_diag_error(diag, "LLVM could not create a target machine for %s", triple);
    return KF_ERR_INTERNAL;
  }
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = LLVMModuleCreateWithNameInContext("kfuse_module", ctx);
  LLVMSetTarget(mod, triple);
  LLVMTargetDataRef td = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(mod, td);

  /* the plan blob */
  LLVMTypeRef i8 = LLVMInt8TypeInContext(ctx), i32 = LLVMInt32TypeInContext(ctx),
              i64 = LLVMInt64TypeInContext(ctx), ptr = LLVMPointerTypeInContext(ctx, 0);
  LLVMValueRef init = LLVMConstStringInContext2(ctx, blob, blob_bytes, 1);
  char name[300];
  snprintf(name, sizeof name, "%s_plan_blob", prefix);
  LLVMValueRef gv = LLVMAddGlobal(mod, LLVMArrayType2(i8, blob_bytes), name);
  LLVMSetInitializer(gv, init);
  LLVMSetGlobalConstant(gv, 1);
  LLVMSetLinkage(gv, LLVMInternalLinkage);
  LLVMSetAlignment(gv, 64);
  LLVMSetSection(gv, ".rodata.kfuse_plan");

  /* int kfr_model_create(const void *, size_t, const kfuse_options *, kfuse_model **) */
  LLVMTypeRef cparams[4] = {ptr, i64, ptr, ptr};
  LLVMTypeRef cty = LLVMFunctionType(i32, cparams, 4, 0);
  LLVMValueRef callee = LLVMAddFunction(mod, "kfr_model_create", cty);
  /* int <prefix>_create(const kfuse_options *, kfuse_model **) */
  LLVMTypeRef wparams[2] = {ptr, ptr};
  LLVMTypeRef wty = LLVMFunctionType(i32, wparams, 2, 0);
  snprintf(name, sizeof name, "%s_create", prefix);
  LLVMValueRef fn = LLVMAddFunction(mod, name, wty);
  LLVMSetLinkage(fn, LLVMExternalLinkage);
  LLVMSetVisibility(fn, LLVMDefaultVisibility);
  LLVMBasicBlockRef bb = LLVMAppendBasicBlockInContext(ctx, fn, "entry");
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  LLVMPositionBuilderAtEnd(b, bb);
  LLVMValueRef args[4] = {gv, LLVMConstInt(i64, blob_bytes, 0), LLVMGetParam(fn, 0),
                          LLVMGetParam(fn, 1)};
  LLVMValueRef r = LLVMBuildCall2(b, cty, callee, args, 4, "");
  LLVMBuildRet(b, r);
  LLVMDisposeBuilder(b);

  kf_status st = KF_OK;
  if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &err)) {
    kf_diag_error(diag, "internal error: the emitted LLVM module is invalid: %s", err ? err : "?");
    st = KF_ERR_INTERNAL;
  }
  LLVMDisposeMessage(err);
  err = NULL;
  if (st == KF_OK && LLVMTargetMachineEmitToFile(tm, mod, path, LLVMObjectFile, &err)) {
    kf_diag_error(diag, "%s: cannot write the object file: %s", shown, err ? err : "?");
    st = KF_ERR_IO;
  }
  LLVMDisposeMessage(err);
  LLVMDisposeModule(mod);
  LLVMDisposeTargetData(td);
  LLVMContextDispose(ctx);
  LLVMDisposeTargetMachine(tm);
  return st;
}

/* ---- linking ------------------------------------------------------------- */

/* Directory of the running kfuse binary (for its runtime library). */
static bool exe_dir(char *buf, size_t n) {
  ssize_t k = readlink("/proc/self/exe", buf, n - 1);
  if (k <= 0) return false;
  buf[k] = 0;
  char *slash = strrchr(buf, '/');
  if (!slash) return false;
  *slash = 0;
  return true;
}

kf_status kf_find_runtime_lib(char *buf, size_t n, kf_diag *diag) {
  const char *env = secure_getenv("KFUSE_RUNTIME_LIB");
  if (env && *env) {
    if (access(env, R_OK) != 0) {
      kf_diag_error(diag, "KFUSE_RUNTIME_LIB=%s: %s", env, strerror(errno));
      return KF_ERR_IO;
    }
    snprintf(buf, n, "%s", env);
    return KF_OK;
  }
  char dir[PATH_MAX];
  if (exe_dir(dir, sizeof dir)) {
    const char *rel[] = {"libkfuse_runtime.a", "lib/libkfuse_runtime.a", "../lib/libkfuse_runtime.a"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
      snprintf(buf, n, "%s/%s", dir, rel[i]);
      if (access(buf, R_OK) == 0) return KF_OK;
    }
  }
  kf_diag_error(diag, "cannot find libkfuse_runtime.a next to the kfuse binary (or in lib/, "
                      "../lib/); set KFUSE_RUNTIME_LIB");
  return KF_ERR_IO;
}

/* The exports of a shared module: the module API, nothing else. */
static const char version_script[] = "{ global: kfuse_model_*; kfuse_last_error; kfuse_options_init; "
                                     "local: *; };\n";

kf_status kf_link_shared(const char *object, const char *out, const char *shown, kf_diag *diag) {
  char rt[PATH_MAX];
  kf_status st = kf_find_runtime_lib(rt, sizeof rt, diag);
  if (st) return st;
  const char *cc = secure_getenv("KFUSE_CC");
  if (!cc || !*cc) cc = "cc";
  /* Symbols bound within the module: every module carries its own copy of
   * the runtime, perhaps of another kfuse version, so one module's calls
   * into it (kfr_model_create calls kfuse_options_init and
   * kfuse_model_destroy) must never resolve to another module's copy loaded
   * earlier into the global scope. -Bsymbolic binds them to the module's
   * own definitions (DT_SYMBOLIC); the version script exports the module
   * API only, whatever visibility the runtime archive was built with. */
  size_t vn = strlen(out) + 8;
  char *ver = malloc(vn);
  if (!ver) return KF_ERR_NOMEM;
  snprintf(ver, vn, "%s.ver", out);
  FILE *vf = fopen(ver, "w");
  if (!vf || fputs(version_script, vf) < 0 || fclose(vf) != 0) {
    kf_diag_error(diag, "cannot link %s: cannot write its version script: %s", shown, strerror(errno));
    if (vf) unlink(ver);
    free(ver);
    return KF_ERR_IO;
  }
  char vopt[PATH_MAX + 32];
  snprintf(vopt, sizeof vopt, "-Wl,--version-script=%s", ver);
  char *argv[] = {(char *)cc, "-shared", "-o", (char *)out, (char *)object, rt,
                  "-Wl,-Bsymbolic", vopt, "-Wl,-z,noexecstack", "-ldl", "-lpthread", NULL};
  pid_t pid;
  int pfd[2];
  if (pipe(pfd) != 0) {
    kf_diag_error(diag, "cannot link %s: pipe: %s", shown, strerror(errno));
    unlink(ver);
    free(ver);
    return KF_ERR_IO;
  }
  pid = fork();
  if (pid < 0) {
    close(pfd[0]);
    close(pfd[1]);
    kf_diag_error(diag, "cannot link %s: fork: %s", shown, strerror(errno));
    unlink(ver);
    free(ver);
    return KF_ERR_IO;
  }
  if (pid == 0) {
    dup2(pfd[1], 1);
    dup2(pfd[1], 2);
    close(pfd[0]);
    close(pfd[1]);
    execvp(cc, argv);
    fprintf(stderr, "cannot run %s: %s\n", cc, strerror(errno));
    _exit(127);
  }
  close(pfd[1]);
  kf_strbuf log;
  kf_strbuf_init(&log);
  char chunk[4096];
  ssize_t k;
  while ((k = read(pfd[0], chunk, sizeof chunk)) > 0) kf_strbuf_append(&log, chunk, (size_t)k);
  close(pfd[0]);
  int wst = 0;
  while (waitpid(pid, &wst, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(wst) || WEXITSTATUS(wst) != 0) {
    kf_diag_error(diag, "linking %s with %s failed (exit %d)%s%s", shown, cc,
                  WIFEXITED(wst) ? WEXITSTATUS(wst) : -1, log.data ? ":\n" : "",
                  log.data ? log.data : "");
    st = KF_ERR_IO;
  }
  kf_strbuf_fini(&log);
  unlink(ver);
  free(ver);
  return st;
}

/* ---- the header of an object module ---- */

char *kf_header_path(const char *obj_path) {
  size_t n = strlen(obj_path);
  char *path = malloc(n + 3);
  if (!path) return NULL;
  memcpy(path, obj_path, n + 1);
  if (n > 2 && strcmp(path + n - 2, ".o") == 0)
    strcpy(path + n - 2, ".h");
  else
    strcat(path, ".h");
  return path;
}

kf_status kf_write_header(const char *path, const char *shown, const char *obj_path,
                          const char *prefix, const kf_graph *g, kf_diag *diag) {
  FILE *f = fopen(path, "w");
  kf_status st = KF_OK;
  if (!f) {
    kf_diag_error(diag, "%s: cannot open for writing: %s", shown, strerror(errno));
    return KF_ERR_IO;
  }
  fprintf(f, "/* Generated by kfuse for model '%s': link %s with libkfuse_runtime.a\n", g->name,
          obj_path);
  fprintf(f, " * (and -ldl -lpthread). Inputs:\n");
  for (int i = 0; i < g->n_inputs; i++) {
    char t[256];
    kf_type_str(&g->inputs[i]->type, t, sizeof t);
    fprintf(f, " *   %d %s: %s\n", i, g->input_names[i], t);
  }
  fprintf(f, " * Outputs:\n");
  for (int i = 0; i < g->n_outputs; i++) {
    char t[256];
    kf_type_str(&g->outputs[i]->type, t, sizeof t);
    fprintf(f, " *   %d: %s\n", i, t);
  }
  fprintf(f, " */\n");
  fwrite(kf_runtime_header_text, 1, kf_runtime_header_text_len, f);
  fprintf(f, "\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n");
  fprintf(f, "/* Create an instance of model '%s' (opts may be NULL). */\n", g->name);
  fprintf(f, "int %s_create(const kfuse_options *opts, kfuse_model **out);\n", prefix);
  fprintf(f, "#ifdef __cplusplus\n}\n#endif\n");
  if (ferror(f)) st = KF_ERR_IO;
  if (fclose(f) != 0) st = KF_ERR_IO;
  if (st) kf_diag_error(diag, "%s: write failed: %s", shown, strerror(errno));
  return st;
}
