/* The verifier: every invariant the IR promises, checked after each pass
 * when checking is on (sgc --verify, SGC_VERIFY=1, sgc-opt always).
 *   - every operand is a parameter of the same function or an instruction
 *     defined earlier in it (SSA dominance for straight-line code);
 *   - every instruction's type is the one its shape rule gives;
 *   - the results are defined values, parameters only in Function.params.
 * Errors name the function and print the offending instruction. */
#include <string.h>

#include "ir.h"

enum { MARK_SEEN = 1 };

static int report(Module *m, Function *f, Inst *i, const char *after, const char *msg) {
  char buf[256];
  fprintf(stderr, "verifier%s%s: @%s: ", after ? " after " : "", after ? after : "", f->name);
  if (i) {
    fprintf(stderr, "%%%d = %s", i->id, ir_ops[i->op].name);
    for (int k = 0; k < i->nargs; k++)
      if (i->args[k]->op == OP_param)
        fprintf(stderr, "%s%%%s", k ? ", " : " ", i->args[k]->name);
      else
        fprintf(stderr, "%s%%%d", k ? ", " : " ", i->args[k]->id);
    fprintf(stderr, " : %s: ", ir_type_str(m, &i->type, buf, sizeof buf));
  }
  fprintf(stderr, "%s\n", msg);
  return 1;
}

static int by_name(const void *a, const void *b) {
  return strcmp((*(Inst *const *)a)->name, (*(Inst *const *)b)->name);
}

/* Parameter names are unique (sorted, so linear-logarithmic). */
static int check_unique_names(Module *m, Function *f, const char *after) {
  if (f->nparams < 2)
    return 0;
  Inst **sorted = xmalloc(sizeof(Inst *) * (size_t)f->nparams);
  memcpy(sorted, f->params, sizeof(Inst *) * (size_t)f->nparams);
  qsort(sorted, (size_t)f->nparams, sizeof(Inst *), by_name);
  int errors = 0;
  for (int k = 1; k < f->nparams; k++)
    if (strcmp(sorted[k - 1]->name, sorted[k]->name) == 0) {
      char msg[300];
      snprintf(msg, sizeof msg, "duplicate parameter %%%.250s", sorted[k]->name);
      errors += report(m, f, NULL, after, msg);
    }
  free(sorted);
  return errors;
}

static int verify_func(Module *m, Function *f, const char *after) {
  int errors = 0;
  char msg[512];
  ir_renumber(f);
  /* aux marks what is defined so far; clear it first */
  for (int k = 0; k < f->nparams; k++)
    f->params[k]->aux = NULL;
  for (Inst *i = f->first; i; i = i->next)
    i->aux = NULL;
  for (int k = 0; k < f->nparams; k++) {
    Inst *p = f->params[k];
    if (p->op != OP_param)
      errors += report(m, f, NULL, after, "a parameter is not an OP_param");
    p->aux = (void *)(intptr_t)MARK_SEEN;
  }
  errors += check_unique_names(m, f, after);
  for (Inst *i = f->first; i; i = i->next) {
    if (i->op == OP_param) {
      errors += report(m, f, i, after, "parameter in the body");
      continue;
    }
    bool ok = true;
    for (int k = 0; k < i->nargs; k++)
      if (!i->args[k] || i->args[k]->aux != (void *)(intptr_t)MARK_SEEN) {
        snprintf(msg, sizeof msg, "operand %d is not defined before its use", k);
        errors += report(m, f, i, after, msg);
        ok = false;
      }
    if (ok) {
      Type t;
      char err[256];
      if (!ir_infer_type(m, i, &t, err, sizeof err))
        errors += report(m, f, i, after, err);
      else if (!ir_type_eq(&t, &i->type)) {
        char buf[256];
        snprintf(msg, sizeof msg, "result type should be %s", ir_type_str(m, &t, buf, sizeof buf));
        errors += report(m, f, i, after, msg);
      }
    }
    if (i->op == OP_grad && (!i->callee || i->wrt < 0 || i->wrt >= i->callee->nparams))
      errors += report(m, f, i, after, "grad without a valid callee and wrt");
    if (i->op == OP_call && (!i->callee || i->callee->nparams != i->nargs))
      errors += report(m, f, i, after, "call without a matching callee");
    i->aux = (void *)(intptr_t)MARK_SEEN;
  }
  if (f->nresults < 1)
    errors += report(m, f, NULL, after, "no results");
  for (int k = 0; k < f->nresults; k++)
    if (!f->results[k] || f->results[k]->aux != (void *)(intptr_t)MARK_SEEN) {
      snprintf(msg, sizeof msg, "result %d is not a defined value", k);
      errors += report(m, f, NULL, after, msg);
    }
  for (int k = 0; k < f->nparams; k++)
    f->params[k]->aux = NULL;
  for (Inst *i = f->first; i; i = i->next)
    i->aux = NULL;
  return errors;
}

int ir_verify(Module *m, const char *after_pass) {
  int errors = 0;
  for (Function *f = m->funcs; f; f = f->next)
    errors += verify_func(m, f, after_pass);
  return errors;
}
