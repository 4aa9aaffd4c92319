/* Dead-code elimination: drop every instruction no result depends on.
 * Requires: nothing. Keeps: results and their inputs, in order. Every op is
 * pure, so "unused" is the only test. A region op is live when one of its
 * results is read; then its regions' yields are live, and whatever its
 * bodies use, inside or captured from outside. (Carried values no one reads
 * stay: dropping one would change the op's signature.) */
#include "passes.h"

static void mark(Inst *x, Function *f) { x->aux = f; }

/* Walk a block backwards: what is live marks its operands live. */
static void sweep(Function *f, Inst *last) {
  for (Inst *i = last, *prev; i; i = prev) {
    prev = i->prev;
    if (!i->aux) {
      ir_unlink(f, i);
      continue;
    }
    for (int k = 0; k < i->nargs; k++)
      mark(i->args[k], f);
    for (int r = 0; r < i->nregions; r++) {
      Region *b = &i->regions[r];
      for (int k = 0; k < b->nyields; k++)
        mark(b->yields[k], f);
      sweep(f, b->last);
    }
  }
}

static void clear(Inst *first) {
  for (Inst *i = first; i; i = i->next) {
    i->aux = NULL;
    for (int r = 0; r < i->nregions; r++) {
      for (int k = 0; k < i->regions[r].nparams; k++)
        i->regions[r].params[k]->aux = NULL;
      clear(i->regions[r].first);
    }
  }
}

void pass_dce(Module *m) {
  for (Function *f = m->funcs; f; f = f->next) {
    clear(f->first);
    for (int k = 0; k < f->nresults; k++)
      mark(f->results[k], f);
    sweep(f, f->last);
    clear(f->first);
    for (int k = 0; k < f->nparams; k++)
      f->params[k]->aux = NULL;
  }
}
