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
 * call (only before inlining: --emit-dot=parsed) is differentiable in the
 * arguments of the callee's non-const parameters. */
static bool flows(const Inst *i, int k) {
  if (i->op == OP_call)
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

/* The block argument of loop body `r` holding state value k (carried value
 * or, for an unloop, accumulator k), and the operand that initialises it:
 * for [lo, hi, init...] with params [i, c...]; while [init...] with [c...];
 * unloop [loop, acc...] with [i, c..., acc...], c the loop's carried values. */
static Inst *state_param(Inst *op, Region *r, int k) {
  if (op->op == OP_unloop)
    return r->params[1 + ir_num_results(op->args[0]) + k];
  return r->params[(op->op == OP_for) + k];
}
static Inst *state_init(Inst *op, int k) {
  return op->args[k + (op->op == OP_for ? 2 : op->op == OP_unloop ? 1 : 0)];
}

/* The region whose block arguments are a loop's carried values. */
static Region *loop_body(Inst *op) { return &op->regions[op->op == OP_while ? 1 : 0]; }

static bool result_varied(Inst *op, int k) {
  if (op->op == OP_custom) /* as its rules say: from any differentiated argument */
    return op->active && ir_is_float(ir_result_type(op, k).dtype);
  if (op->op == OP_if)
    return op->regions[0].yields[k]->active || op->regions[1].yields[k]->active;
  return state_param(op, loop_body(op), k)->active;
}

/* `any`: dependence through every op and dtype (ad_depends), not only
 * through non-zero derivatives of float values. */
static bool carries(const Inst *x, bool any) { return any || differentiable_type(x); }

static void vary_block(Inst *first, bool any);

/* An unloop recomputes its loop's iterations from the carried values it
 * receives: those are varied as the loop's are. */
static void vary_region(Inst *op, bool any) {
  op->active = false;
  int n = ir_num_results(op);
  if (op->op == OP_custom) { /* a call whose derivative its rules give */
    for (int r = 0; r < op->nregions; r++)
      vary_block(op->regions[r].first, any);
    for (int k = 0; k < op->nargs; k++)
      op->active |= op->args[k]->active;
    return;
  }
  if (op->op == OP_if) {
    vary_block(op->regions[0].first, any);
    vary_block(op->regions[1].first, any);
    for (int k = 0; k < n && !op->active; k++)
      op->active = result_varied(op, k);
    return;
  }
  for (int r = 0; r < op->nregions; r++) {
    Region *reg = &op->regions[r];
    for (int k = 0; k < reg->nparams; k++)
      reg->params[k]->active = false;
    for (int k = 0; k < n; k++)
      state_param(op, reg, k)->active =
          carries(state_init(op, k), any) && state_init(op, k)->active;
  }
  if (op->op == OP_unloop) {
    Inst *loop = op->args[0];
    for (int k = 0; k < ir_num_results(loop); k++)
      op->regions[0].params[1 + k]->active = state_param(loop, loop_body(loop), k)->active;
  }
  Region *body = loop_body(op);
  for (bool changed = true; changed;) {
    vary_block(body->first, any);
    changed = false;
    for (int k = 0; k < n; k++) {
      Inst *p = state_param(op, body, k);
      if (body->yields[k]->active && !p->active && carries(p, any)) {
        for (int r = 0; r < op->nregions; r++)
          state_param(op, &op->regions[r], k)->active = true;
        changed = true;
      }
    }
  }
  if (op->op == OP_while)
    vary_block(op->regions[0].first, any);
  for (int k = 0; k < n && !op->active; k++)
    op->active = result_varied(op, k);
}

static void vary_block(Inst *first, bool any) {
  for (Inst *i = first; i; i = i->next) {
    i->active = false;
    if (i->nregions) {
      vary_region(i, any);
      continue;
    }
    if (i->op == OP_proj) {
      i->active = carries(i, any) && result_varied(i->args[0], i->index);
      continue;
    }
    /* i32 and bool values have zero derivative (spec section 7) */
    if (!carries(i, any))
      continue;
    for (int k = 0; k < i->nargs; k++)
      i->active |= i->args[k]->active && (any || flows(i, k));
  }
}

static void use_block(Function *f, Inst *last);

/* An unloop's carried-value arguments pass no usefulness back into its
 * loop: reverse mode refuses to differentiate an active unloop (ad_region.c),
 * so only its accumulators matter. */
static void use_region(Function *f, Inst *op) {
  if (op->op == OP_custom) { /* its rules see every argument */
    for (int k = 0; k < op->nargs; k++)
      op->args[k]->aux = f;
    return;
  }
  if (op->op == OP_if) {
    use_block(f, op->regions[0].last);
    use_block(f, op->regions[1].last);
    return;
  }
  int n = ir_num_results(op);
  Region *body = loop_body(op);
  for (bool changed = true; changed;) {
    use_block(f, body->last);
    changed = false;
    for (int k = 0; k < n; k++)
      if (state_param(op, body, k)->aux && !body->yields[k]->aux) {
        body->yields[k]->aux = f;
        changed = true;
      }
  }
  for (int k = 0; k < n; k++)
    if (state_param(op, body, k)->aux)
      state_init(op, k)->aux = f;
}

/* useful, backward: aux marks values the result depends on */
static void use_block(Function *f, Inst *last) {
  for (Inst *i = last; i; i = i->prev) {
    if (!i->aux)
      continue;
    if (i->op == OP_proj) {
      Inst *op = i->args[0];
      op->aux = f;
      for (int r = 0; r < op->nregions && op->op != OP_custom; r++)
        if (op->op == OP_if || r == op->nregions - 1)
          op->regions[r].yields[i->index]->aux = f;
      /* after zero iterations (a while: when its condition fails) the
       * result is the carried value itself, whatever the body does */
      if (op->op != OP_if && op->op != OP_custom)
        state_param(op, loop_body(op), i->index)->aux = f;
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
 * active when one of their results is (after ad_varied alone: when one of
 * their results is varied). */
static void settle(Inst *first) {
  for (Inst *i = first; i; i = i->next) {
    i->active &= i->aux != NULL && !i->nregions;
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

static void vary(Function *f, const bool *from, bool any) {
  for (int k = 0; k < f->nparams; k++)
    f->params[k]->active = from[k] && carries(f->params[k], any);
  vary_block(f->first, any);
  for (int k = 0; k < f->nparams; k++)
    f->params[k]->aux = NULL;
  clear_aux(f->first);
}

void ad_varied(Function *f, const bool *differentiable) { vary(f, differentiable, false); }

void ad_depends(Function *f, const bool *from) { vary(f, from, true); }

void ad_activity(Function *f, const bool *differentiable) {
  ad_varied(f, differentiable);
  for (int k = 0; k < f->nresults; k++)
    f->results[k]->aux = f;
  use_block(f, f->last);
  for (int k = 0; k < f->nparams; k++) {
    f->params[k]->active &= f->params[k]->aux != NULL;
    f->params[k]->aux = NULL;
  }
  settle(f->first);
}
