/* stop_gradient is the identity once gradients exist: replace each by its
 * operand so the optimizer and code generator never see it.
 * Requires: the AD pass has run (before it, stop_gradient carries meaning).
 * Keeps: every value's type and bits. */
#include "passes.h"

void pass_strip_stop(Module *m) {
  for (Function *f = m->funcs; f; f = f->next) {
    for (Inst *i = f->first, *next; i; i = next) {
      next = ir_walk_next(i);
      ir_resolve_args(i);
      if (i->op == OP_stop_gradient) {
        ir_forward(i, i->args[0]);
        ir_unlink(f, i);
      }
    }
    ir_resolve_func(f);
  }
}
