/* Activity analysis: which values get an adjoint.
 *
 * A value is active when it is *varied* (it depends on a parameter being
 * differentiated, through operations whose derivative is not identically
 * zero) and *useful* (the result depends on it, again through such
 * operations). stop_gradient's result is never varied, nor is anything fed
 * only by `const` parameters, literals, comparisons, sign/floor/ceil/round:
 * the AD pass builds no adjoint code for any of them, so no NaN or infinity
 * from their derivatives can reach a gradient (spec section 7).
 *
 * Requires: nothing (the AD pass runs it on call-free functions; before
 * inlining, a call counts through its non-const parameters). Keeps: the IR
 * unchanged; sets Inst.active. */
#include "passes.h"

/* Whether i's derivative with respect to its operand k can be non-zero. A
 * call or grad (only before inlining: --emit-dot=parsed) is differentiable
 * in the arguments of the callee's non-const parameters. */
static bool flows(const Inst *i, int k) {
  if (i->op == OP_call || i->op == OP_grad)
    return k < i->callee->nparams && !i->callee->params[k]->is_const;
  return ad_propagates(i->op);
}

/* As a pass of its own, for tests and for reading: the activity of every
 * function with respect to its non-const parameters, marked by the printer. */
void pass_activity(Module *m) {
  for (Function *f = m->funcs; f; f = f->next) {
    bool *diff = xmalloc(sizeof(bool) * (size_t)(f->nparams + 1));
    for (int k = 0; k < f->nparams; k++)
      diff[k] = !f->params[k]->is_const;
    ad_activity(f, diff);
    free(diff);
  }
  m->show_activity = true;
}

void ad_activity(Function *f, const bool *differentiable) {
  for (int k = 0; k < f->nparams; k++)
    f->params[k]->active = differentiable[k];
  /* varied, forward */
  for (Inst *i = f->first; i; i = i->next) {
    i->active = false;
    /* i32 and bool values have zero derivative (spec section 7) */
    if (i->type.dtype == DT_I32 || i->type.dtype == DT_BOOL)
      continue;
    for (int k = 0; k < i->nargs; k++)
      i->active |= i->args[k]->active && flows(i, k);
  }
  /* useful, backward: aux marks values the result depends on */
  for (int k = 0; k < f->nparams; k++)
    f->params[k]->aux = NULL;
  for (Inst *i = f->first; i; i = i->next)
    i->aux = NULL;
  f->results[0]->aux = f;
  for (Inst *i = f->last; i; i = i->prev) {
    if (!i->aux)
      continue;
    for (int k = 0; k < i->nargs; k++)
      if (flows(i, k))
        i->args[k]->aux = f;
  }
  for (int k = 0; k < f->nparams; k++) {
    f->params[k]->active &= f->params[k]->aux != NULL;
    f->params[k]->aux = NULL;
  }
  for (Inst *i = f->first; i; i = i->next) {
    i->active &= i->aux != NULL;
    i->aux = NULL;
  }
}
