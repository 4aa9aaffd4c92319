/* Activity analysis: which values get an adjoint.
 *
 * A value is active when it is *varied* (it depends on a parameter being
 * differentiated, through operations whose derivative is not identically
 * zero) and *useful* (the result depends on it, again through such
 * operations). stop_gradient's result is never varied, nor is anything fed
 * only by `const` parameters, literals, comparisons, sign/floor/ceil/round,
 * nor any i32 or bool value (section 7):
 * the AD pass builds no adjoint code for any of them, so no NaN or infinity
 * from their derivatives can reach a gradient (spec section 7).
 *
 * Requires: nothing (the AD pass runs it on call-free functions; before
 * inlining, a call counts through its non-const parameters). Keeps: the IR
 * unchanged; sets Inst.active (of block arguments too). */
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

/* ---- regions ----
 * A carried value of a loop is varied if its initial value or its yield is
 * (a fixpoint over the body), and useful if its result or its use in the
 * next iteration is (a fixpoint backwards). A branch's result is varied if
 * either branch yields a varied value. Loop indices, conditions, i32 and
 * bool values have zero derivative. */

static bool differentiable_type(const Inst *x) {
  return x->type.dtype == DT_F32 || x->type.dtype == DT_F64;
}

static int lead(const Inst *op) { return op->op == OP_for || op->op == OP_unloop; }

/* The region whose block arguments are a loop's carried values. */
static Region *loop_body(Inst *op) { return &op->regions[op->op == OP_while ? 1 : 0]; }

static bool result_varied(Inst *op, int k) {
  if (op->op == OP_if)
    return op->regions[0].yields[k]->active || op->regions[1].yields[k]->active;
  return loop_body(op)->params[lead(op) + k]->active;
}

static void vary_block(Inst *first);

static void vary_region(Inst *op) {
  op->active = false;
  if (op->op == OP_if) {
    vary_block(op->regions[0].first);
    vary_block(op->regions[1].first);
    return;
  }
  int n = ir_num_results(op), l = lead(op);
  Inst *const *init = op->args + (op->op == OP_while ? 0 : op->op == OP_for ? 2 : 1);
  for (int r = 0; r < op->nregions; r++) {
    for (int k = 0; k < op->regions[r].nparams; k++)
      op->regions[r].params[k]->active = false;
    for (int k = 0; k < n && op->op != OP_unloop; k++)
      op->regions[r].params[l + k]->active = differentiable_type(init[k]) && init[k]->active;
  }
  Region *body = loop_body(op);
  for (bool changed = true; changed;) {
    vary_block(body->first);
    changed = false;
    for (int k = 0; k < n && op->op != OP_unloop; k++) {
      Inst *p = body->params[l + k];
      if (body->yields[k]->active && !p->active && differentiable_type(p)) {
        for (int r = 0; r < op->nregions; r++)
          op->regions[r].params[l + k]->active = true;
        changed = true;
      }
    }
  }
  if (op->op == OP_while)
    vary_block(op->regions[0].first);
}

static void vary_block(Inst *first) {
  for (Inst *i = first; i; i = i->next) {
    i->active = false;
    if (i->nregions) {
      vary_region(i);
      continue;
    }
    if (i->op == OP_proj) {
      i->active = differentiable_type(i) && result_varied(i->args[0], i->index);
      continue;
    }
    /* i32 and bool values have zero derivative (spec section 7) */
    if (!differentiable_type(i))
      continue;
    for (int k = 0; k < i->nargs; k++)
      i->active |= i->args[k]->active && flows(i, k);
  }
}

static void use_block(Function *f, Inst *last);

static void use_region(Function *f, Inst *op) {
  if (op->op == OP_if) {
    use_block(f, op->regions[0].last);
    use_block(f, op->regions[1].last);
    return;
  }
  int n = ir_num_results(op), l = lead(op);
  Region *body = loop_body(op);
  for (bool changed = true; changed;) {
    use_block(f, body->last);
    changed = false;
    for (int k = 0; k < n && op->op != OP_unloop; k++)
      if (body->params[l + k]->aux && !body->yields[k]->aux) {
        body->yields[k]->aux = f;
        changed = true;
      }
  }
  Inst *const *init = op->args + (op->op == OP_while ? 0 : 2);
  for (int k = 0; k < n && op->op != OP_unloop; k++)
    if (body->params[l + k]->aux)
      init[k]->aux = f;
}

/* useful, backward: aux marks values the result depends on */
static void use_block(Function *f, Inst *last) {
  for (Inst *i = last; i; i = i->prev) {
    if (!i->aux)
      continue;
    if (i->op == OP_proj) {
      Inst *op = i->args[0];
      op->aux = f;
      for (int r = 0; r < op->nregions; r++)
        if (op->op == OP_if || r == op->nregions - 1)
          op->regions[r].yields[i->index]->aux = f;
      continue;
    }
    if (i->nregions) {
      use_region(f, i);
      continue;
    }
    for (int k = 0; k < i->nargs; k++)
      if (flows(i, k))
        i->args[k]->aux = f;
  }
}

/* active = varied and useful, then aux cleared; region ops themselves are
 * active when one of their results is. */
static void settle(Inst *first) {
  for (Inst *i = first; i; i = i->next) {
    i->active &= i->aux != NULL;
    i->aux = NULL;
    for (int r = 0; r < i->nregions; r++) {
      for (int k = 0; k < i->regions[r].nparams; k++) {
        Inst *p = i->regions[r].params[k];
        p->active &= p->aux != NULL;
        p->aux = NULL;
      }
      settle(i->regions[r].first);
    }
  }
  for (Inst *i = first; i; i = i->next)
    if (i->op == OP_proj && i->active)
      i->args[0]->active = true;
}

static void clear_aux(Inst *first) {
  for (Inst *i = first; i; i = i->next) {
    i->aux = NULL;
    for (int r = 0; r < i->nregions; r++) {
      for (int k = 0; k < i->regions[r].nparams; k++)
        i->regions[r].params[k]->aux = NULL;
      clear_aux(i->regions[r].first);
    }
  }
}

void ad_activity(Function *f, const bool *differentiable) {
  for (int k = 0; k < f->nparams; k++)
    f->params[k]->active = differentiable[k] && differentiable_type(f->params[k]);
  vary_block(f->first);
  for (int k = 0; k < f->nparams; k++)
    f->params[k]->aux = NULL;
  clear_aux(f->first);
  for (int k = 0; k < f->nresults; k++)
    f->results[k]->aux = f;
  use_block(f, f->last);
  for (int k = 0; k < f->nparams; k++) {
    f->params[k]->active &= f->params[k]->aux != NULL;
    f->params[k]->aux = NULL;
  }
  settle(f->first);
}
