/* Dead-code elimination: drop every instruction no result depends on,
 * except the checks of the program (spec section 6: an index out of range
 * or a division by zero is reported whether or not its value is used, at
 * every -O level): an op that can fail (F_FAILS) stays unless its checks
 * repeat earlier ones (Inst.rechecks: adjoints, AD's recomputations,
 * tangents), and so does a loop or branch holding one. Every other op is pure, so
 * "unused" is the only test. A region op is live when one of its results
 * is read or it holds such a check; then its regions' yields are live, and
 * whatever its bodies use, inside or captured from outside. (Carried
 * values no one reads stay: dropping one would change the op's signature.)
 * Requires: nothing. Keeps: results and their inputs, the checks, in order. */
#include "passes.h"

/* Does i check something at run time that nothing else checks? A region op
 * holds such a check at any depth (found once per op: `held`). */
static bool is_check(Inst *i) {
  if (i->nregions) {
    bool held = false;
    for (int r = 0; r < i->nregions && !held; r++)
      for (Inst *x = i->regions[r].first; x && !held; x = x->next)
        held = is_check(x);
    return held;
  }
  return ir_op_is(i->op, F_FAILS) && !i->rechecks;
}

static void mark(Inst *x, Function *f) { x->aux = f; }

/* Walk a block backwards: what is live marks its operands live. */
static void sweep(Function *f, Inst *last) {
  for (Inst *i = last, *prev; i; i = prev) {
    prev = i->prev;
    if (!i->aux && !is_check(i)) {
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
