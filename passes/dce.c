/* Dead-code elimination: drop every instruction no result depends on.
 * Requires: nothing. Keeps: results and their inputs, in order. Every op is
 * pure, so "unused" is the only test. */
#include "passes.h"

void pass_dce(Module *m) {
  for (Function *f = m->funcs; f; f = f->next) {
    for (Inst *i = f->first; i; i = i->next)
      i->aux = NULL;
    for (int k = 0; k < f->nresults; k++)
      f->results[k]->aux = f;
    for (Inst *i = f->last, *prev; i; i = prev) {
      prev = i->prev;
      if (!i->aux) {
        ir_unlink(f, i);
        continue;
      }
      for (int k = 0; k < i->nargs; k++)
        i->args[k]->aux = f;
    }
    for (Inst *i = f->first; i; i = i->next)
      i->aux = NULL;
    for (int k = 0; k < f->nparams; k++)
      f->params[k]->aux = NULL;
  }
}
