/* The flat list of passes sgc runs, the registry sgc-opt looks passes up
 * in, and pipeline_compile, which the sgc command and libsgc share. The verifier runs between passes when checking is on (--verify,
 * SGC_VERIFY=1, which `make check` sets). */
#include "pipeline.h"

#include <string.h>

#include "../frontend/ast.h"
#include "../frontend/lower.h"
#include "../passes/passes.h"

const PassInfo sg_passes[] = {
    {"inline", pass_inline, "inline every call and expand grad(...)"},
    {"activity", pass_activity, "mark the values AD would differentiate (# active)"},
    {"ad", pass_ad, "add the derivatives --exports asks for (f_grad / f_vjp by default)"},
    {"jvp", pass_jvp, "add f_jvp (forward mode) for every export"},
    {"hvp", pass_hvp, "add f_hvp (Hessian-vector products) for every scalar export"},
    {"strip-custom", pass_strip_custom, "replace each custom op by its body (after AD)"},
    {"strip-stop", pass_strip_stop, "remove stop_gradient (after AD)"},
    {"fold", pass_fold, "fold literal operands into literal results"},
    {"simplify", pass_simplify, "IEEE-exact algebra; replace known zeros"},
    {"cse", pass_cse, "merge identical instructions"},
    {"dce", pass_dce, "remove unused instructions"},
    {"remat", pass_remat, "recompute cheap values at each use instead of storing them"},
    {NULL, NULL, NULL},
};

const PassInfo *pipeline_find(const char *name) {
  for (const PassInfo *p = sg_passes; p->name; p++)
    if (strcmp(p->name, name) == 0)
      return p;
  return NULL;
}

int pipeline_run(Module *m, const char *const *names, int n, bool verify) {
  for (int k = 0; k < n; k++) {
    const PassInfo *p = pipeline_find(names[k]);
    if (!p)
      die("no pass named %s", names[k]);
    p->run(m);
    if (m->errors)
      return m->errors;
    if (verify) {
      int errors = ir_verify(m, p->name);
      if (errors)
        return errors;
    }
  }
  return 0;
}

int pipeline_to_ad(Module *m, bool verify) {
  static const char *const to_ad[] = {"inline", "ad"};
  return pipeline_run(m, to_ad, 2, verify);
}

int pipeline_optimize(Module *m, int opt_level, bool verify) {
  static const char *const o0[] = {"strip-custom", "strip-stop", "dce"};
  static const char *const o2[] = {"strip-custom", "strip-stop", "fold", "simplify", "cse", "dce",
                                   "fold", "simplify", "cse", "dce", "remat"};
  if (opt_level == 0)
    return pipeline_run(m, o0, sizeof o0 / sizeof o0[0], verify);
  return pipeline_run(m, o2, sizeof o2 / sizeof o2[0], verify);
}

/* An object without exports links to nothing: likely a forgotten
 * `export`, shown at the first function. */
static void warn_if_empty(Diag *diag, const Module *m) {
  for (const Function *f = m->funcs; f; f = f->next)
    if (f->exported)
      return;
  diag_warning(diag, m->funcs ? m->funcs->loc : (Loc){.line = 0},
               "no exported function; the object is empty");
}

Module *pipeline_compile(Diag *diag, const char *src, size_t len, const Options *o, Stage until) {
  Arena *arena = arena_new();
  Program prog;
  parse_program(arena, diag, src, len, &prog);
  Module *m = diag->errors ? NULL : lower_program(&prog, diag);
  arena_free(arena);
  if (!m)
    return NULL;
  if (o->emit_ir == STAGE_NONE && o->emit_dot == STAGE_NONE)
    warn_if_empty(diag, m);
  if (o->verify && ir_verify(m, "lowering"))
    die("the lowered IR does not verify");
  m->exports = o->exports;
  m->diag = diag;
  if (until == STAGE_PARSED)
    return m;
  if (pipeline_to_ad(m, o->verify)) {
    if (!m->errors)
      die("the IR does not verify after AD");
    ir_module_free(m);
    return NULL;
  }
  if (until == STAGE_AD)
    return m;
  if (pipeline_optimize(m, o->opt_level, o->verify))
    die("the IR does not verify after optimization");
  return m;
}
