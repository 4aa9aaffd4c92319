/* Reverse-mode AD of loops and branches (spec section 7: the gradient of the
 * program with each loop unrolled as often as it ran and each `if` replaced
 * by the branch that ran).
 *
 *  - `if c {A} else {B}`: the adjoint is `if c {A'} else {B'}`, where A' is
 *    a copy of A (recomputing its values: captured values are unchanged, so
 *    the copy computes the same bits) followed by A's reverse sweep seeded
 *    with the adjoints of the if's results; each branch yields the adjoints
 *    of the values it captured from outside, and the new if's results are
 *    added to those values' adjoints.
 *  - `for` and `while`: the adjoint is an `unloop` of the loop: it runs once
 *    per iteration the loop ran, last first, and receives the loop index
 *    and the carried values entering that iteration (the code generator
 *    records them while the loop runs: a tape, or checkpoints). Its body is
 *    a copy of the loop body (recomputing the iteration from that state)
 *    followed by the body's reverse sweep; it carries the adjoints of the
 *    carried values (seeding the yields, giving the adjoints entering the
 *    iteration) and accumulators for the adjoints of captured values. Its
 *    results are added to the adjoints of the initial values and of the
 *    captured values. Conditions and indices get no adjoint.
 * Loops inside a body are copied with it, so the adjoint of an inner loop
 * reverses the copy that ran in the same reverse iteration. */
#include <string.h>

#include "ad_internal.h"

static bool inside(const Inst *x, const Region *r) {
  for (const Region *p = x->parent; p; p = p->owner->parent)
    if (p == r)
      return true;
  return false;
}

static bool float_type(const Type *t) { return t->dtype == DT_F32 || t->dtype == DT_F64; }

/* x, read inside `top`: if defined outside it, a capture (see captures). */
static void note_capture(Inst *x, Region *top, PtrVec *active, PtrMap *seen) {
  if (!x || inside(x, top))
    return;
  x->aux = x;
  if (!active)
    return;
  void **s = ptrmap_slot(seen, x);
  if (!*s && x->active && float_type(&x->type))
    vec_push(active, x);
  *s = x;
}

/* Values used in r (at any depth) but defined outside it: each gets aux =
 * itself (a copy of r reads them as they are), and (unless `active` is
 * NULL) the active ones are collected, once each, in first-use order.
 * Called again right before each copy: the reverse sweep of a region op
 * nested in an earlier copy clears the aux of the values it captured,
 * which may be captures of this region too (an if in an if). */
static void captures(Region *r, Region *top, PtrVec *active, PtrMap *seen) {
  for (Inst *i = r->first; i; i = ir_walk_next(i)) {
    if (!inside(i, top))
      break;
    for (int k = 0; k < i->nargs; k++)
      note_capture(i->args[k], top, active, seen);
    for (int q = 0; q < i->nregions; q++)
      for (int k = 0; k < i->regions[q].nyields; k++)
        note_capture(i->regions[q].yields[k], top, active, seen);
  }
  for (int k = 0; k < r->nyields; k++)
    note_capture(r->yields[k], top, active, seen);
}

/* Copy the instructions of `from` into `to` (aux maps its arguments and its
 * captured values), keeping their activity. */
static void copy_body(AD *a, Region *from, Region *to) {
  Builder b = a->b;
  b.before = NULL;
  b.r = to;
  for (Inst *i = from->first; i; i = i->next)
    ir_copy_inst(&b, i, NULL, NULL);
  for (Inst *i = from->first; i; i = ir_walk_next(i)) {
    if (!inside(i, from))
      break;
    ((Inst *)i->aux)->active = i->active;
    for (int q = 0; q < i->nregions; q++)
      for (int k = 0; k < i->regions[q].nparams; k++) {
        Inst *p = i->regions[q].params[k];
        ((Inst *)p->aux)->active = p->active;
      }
  }
}

static Inst *mapped(Inst *x) { return x->aux ? x->aux : x; }

static Inst *zero(AD *a, const Type *t) { return ir_const_like(&a->b, t, 0); }

/* Run the reverse sweep of region `r` (already filled with the recomputed
 * primal) as a scope of its own, the adjoint of each ys[k] seeded with
 * gs[k] (where not NULL) first; its captured adjoints come back in `cap`. */
static void reverse_in(AD *a, Region *r, PtrMap *cap, Inst **ys, Inst **gs, int n) {
  Region *cur = a->cur;
  PtrMap *captured = a->captured;
  Builder saved = a->b;
  a->cur = r;
  a->captured = cap;
  a->b.before = NULL;
  a->b.r = r;
  for (int k = 0; k < n; k++)
    if (gs[k])
      ad_contribute(a, mapped(ys[k]), gs[k]);
  ad_reverse_block(a, r->last);
  a->b = saved;
  a->cur = cur;
  a->captured = captured;
}

/* The yields of a scope's end: each captured value's adjoint, plus `acc`. */
static Inst *captured_sum(AD *a, PtrMap *cap, Inst *x, Inst *acc) {
  Inst *d = ptrmap_get(cap, x);
  if (!acc)
    return d ? d : zero(a, &x->type);
  return d ? ir_binary(&a->b, OP_add, acc, d) : acc;
}

static void reverse_if(AD *a, Inst *op, Inst **g) {
  int n = ir_num_results(op);
  PtrVec cap = {0};
  PtrMap seen = {0};
  captures(&op->regions[0], &op->regions[0], &cap, &seen);
  captures(&op->regions[1], &op->regions[1], &cap, &seen);
  ptrmap_free(&seen);
  if (cap.len == 0) {
    vec_free(&cap);
    return;
  }
  Inst *adj = ir_region_op(&a->b, OP_if, op->args, 1, 2);
  for (int r = 0; r < 2; r++) {
    Region *from = &op->regions[r], *to = &adj->regions[r];
    captures(from, from, NULL, NULL);
    copy_body(a, from, to);
    PtrMap local = {0};
    reverse_in(a, to, &local, from->yields, g, n);
    Builder saved = a->b;
    a->b.before = NULL;
    a->b.r = to;
    Inst **ys = xmalloc(sizeof(Inst *) * (size_t)cap.len);
    for (int j = 0; j < cap.len; j++)
      ys[j] = captured_sum(a, &local, cap.data[j], NULL);
    ir_set_yields(a->b.m, to, ys, cap.len);
    free(ys);
    a->b = saved;
    ptrmap_free(&local);
    ad_clear_aux(from->first);
  }
  Inst **res = xmalloc(sizeof(Inst *) * (size_t)cap.len);
  for (int j = 0; j < cap.len; j++) /* the projs first: they follow their op */
    res[j] = ir_proj(&a->b, adj, j);
  for (int j = 0; j < cap.len; j++)
    ad_contribute(a, cap.data[j], res[j]);
  free(res);
  for (int r = 0; r < 2; r++)
    for (int j = 0; j < cap.len; j++)
      ((Inst *)cap.data[j])->aux = NULL;
  vec_free(&cap);
}

static void reverse_loop(AD *a, Inst *op, Inst **g) {
  int n = ir_num_results(op), lead = op->op == OP_for;
  Region *body = &op->regions[op->op == OP_while ? 1 : 0];
  Inst *const *init = op->args + (op->op == OP_for ? 2 : 0);
  /* the carried values whose adjoint flows: active, or given one */
  int *K = xmalloc(sizeof(int) * (size_t)(n + 1)), nk = 0;
  for (int k = 0; k < n; k++)
    if (float_type(&init[k]->type) && (body->params[lead + k]->active || g[k]))
      K[nk++] = k;
  PtrVec cap = {0};
  PtrMap seen = {0};
  captures(body, body, &cap, &seen);
  ptrmap_free(&seen);

  Inst **args = xmalloc(sizeof(Inst *) * (size_t)(1 + nk + cap.len));
  args[0] = op;
  for (int j = 0; j < nk; j++)
    args[1 + j] = g[K[j]] ? g[K[j]] : zero(a, &init[K[j]]->type);
  for (int j = 0; j < cap.len; j++)
    args[1 + nk + j] = zero(a, &((Inst *)cap.data[j])->type);
  Inst *u = ir_region_op(&a->b, OP_unloop, args, 1 + nk + cap.len, 1);
  free(args);
  Region *r = &u->regions[0];
  Inst *idx = ir_add_region_param(a->b.m, r, ir_scalar(DT_I32));
  if (lead)
    body->params[0]->aux = idx;
  for (int k = 0; k < n; k++) {
    Inst *c = ir_add_region_param(a->b.m, r, init[k]->type);
    c->active = body->params[lead + k]->active;
    body->params[lead + k]->aux = c;
  }
  Inst **acc = xmalloc(sizeof(Inst *) * (size_t)(nk + cap.len + 1));
  for (int j = 0; j < nk; j++)
    acc[j] = ir_add_region_param(a->b.m, r, init[K[j]]->type);
  for (int j = 0; j < cap.len; j++)
    acc[nk + j] = ir_add_region_param(a->b.m, r, ((Inst *)cap.data[j])->type);

  copy_body(a, body, r);
  PtrMap local = {0};
  /* seed the yields with the adjoints flowing back from the next iteration */
  Inst **seeded = xmalloc(sizeof(Inst *) * (size_t)(nk + 1));
  for (int j = 0; j < nk; j++)
    seeded[j] = body->yields[K[j]];
  reverse_in(a, r, &local, seeded, acc, nk);
  free(seeded);

  Builder saved = a->b;
  a->b.before = NULL;
  a->b.r = r;
  Inst **ys = xmalloc(sizeof(Inst *) * (size_t)(nk + cap.len + 1));
  for (int j = 0; j < nk; j++) {
    Inst *c = body->params[lead + K[j]]->aux;
    Inst *d = ptrmap_get(&a->adj, c);
    ys[j] = d ? d : zero(a, &c->type);
  }
  for (int j = 0; j < cap.len; j++)
    ys[nk + j] = captured_sum(a, &local, cap.data[j], acc[nk + j]);
  ir_set_yields(a->b.m, r, ys, nk + cap.len);
  a->b = saved;
  free(ys);
  ptrmap_free(&local);

  Inst **res = xmalloc(sizeof(Inst *) * (size_t)(nk + cap.len + 1));
  for (int j = 0; j < nk + cap.len; j++) /* the projs first: they follow their op */
    res[j] = ir_proj(&a->b, u, j);
  for (int j = 0; j < nk; j++)
    ad_contribute(a, init[K[j]], res[j]);
  for (int j = 0; j < cap.len; j++)
    ad_contribute(a, cap.data[j], res[nk + j]);
  free(res);
  for (int k = 0; k < body->nparams; k++)
    body->params[k]->aux = NULL;
  ad_clear_aux(body->first);
  for (int j = 0; j < cap.len; j++)
    ((Inst *)cap.data[j])->aux = NULL;
  vec_free(&cap);
  free(acc);
  free(K);
}

/* An unloop (a gradient through a loop, made by reverse mode) whose
 * results a derivative flows through: reverse mode would have to reverse
 * it again, which it cannot (spec 6b: an error naming what to write, never
 * a wrong number). Forward over reverse can (passes/tangent_region.c). */
static void reverse_over_reverse(AD *a, Inst *op) {
  Loc loop = op->args[0]->loc, at = a->at.line ? a->at : op->loc;
  const char *where = loop.src_line ? arena_printf(a->b.m->arena, "line %d of '%s'",
                                                   loop.src_line, loop.inlined)
                                    : arena_printf(a->b.m->arena, "line %d", loop.line);
  if (a->export_of) {
    /* The user wrote no reverse derivative of this: --exports asked for
     * one of the export, whose body already holds a reverse sweep. */
    ir_error(a->b.m, at, "reverse mode cannot differentiate a gradient through a loop again: "
             "the derivative entry points of export '%s' (--exports) would reverse the "
             "gradient here, which reverses the loop at %s; compile with --exports=none "
             "(or --exports=jvp), or put this derivative under stop_gradient",
             a->export_of, where);
    return;
  }
  ir_error(a->b.m, at, "reverse mode cannot differentiate a gradient through a loop again: the "
           "gradient here reverses the loop at %s; for a second derivative write "
           "jvp(grad(f, wrt=x), wrt=x) (forward over reverse) instead, or put that gradient "
           "under stop_gradient", where);
}

/* The projs of op, by result (all of them exist: the inliner makes one per
 * result, and nothing removes one before AD is done). */
static Inst *proj_of(Inst *op, int k) {
  for (Inst *p = op->next; p && p->op == OP_proj && p->args[0] == op; p = p->next)
    if (p->index == k)
      return p;
  die("custom: result %d has no proj", k);
}

/* A custom op (a call of a function with rules, ir.h): its vjp rule's code,
 * its parameters the results and their adjoints g (zero where none
 * flowed), its yields the adjoints of the differentiable arguments. The
 * rule's code is ordinary code, differentiated again where a higher order
 * needs it. */
static void reverse_custom(AD *a, Inst *op, Inst **g) {
  if (!(op->index & CUSTOM_VJP)) {
    ir_error(a->b.m, op->loc, "'%s' has a custom jvp but no vjp rule, and reverse mode needs "
                              "one here", op->name);
    return;
  }
  Region *r = &op->regions[1];
  int n = ir_num_results(op), j = 0;
  for (int k = 0; k < n; k++)
    r->params[k]->aux = proj_of(op, k);
  for (int k = 0; k < n; k++)
    if (ir_is_float(ir_result_type(op, k).dtype)) {
      Type t = ir_result_type(op, k);
      r->params[n + j++]->aux = g[k] ? g[k] : zero(a, &t);
    }
  PtrVec cap = {0};
  PtrMap seen = {0};
  captures(r, r, &cap, &seen); /* read as they are */
  for (Inst *i = r->first; i; i = i->next)
    ir_copy_inst(&a->b, i, NULL, NULL);
  for (int k = 0; k < op->nargs; k++)
    ad_contribute(a, op->args[k], r->yields[k]->aux);
  for (size_t k = 0; k < seen.cap; k++) /* every captured value, active or not */
    if (seen.keys[k])
      ((Inst *)seen.keys[k])->aux = NULL;
  ptrmap_free(&seen);
  vec_free(&cap);
  ad_clear_aux(r->first);
  for (int k = 0; k < r->nparams; k++)
    r->params[k]->aux = NULL;
}

void ad_reverse_region(AD *a, Inst *op) {
  int n = ir_num_results(op);
  Inst **g = xmalloc(sizeof(Inst *) * (size_t)(n + 1));
  memset(g, 0, sizeof(Inst *) * (size_t)(n + 1));
  bool any = false;
  for (Inst *p = op->next; p && p->op == OP_proj && p->args[0] == op; p = p->next)
    any |= (g[p->index] = ptrmap_get(&a->adj, p)) != NULL;
  if (any) {
    if (op->op == OP_if)
      reverse_if(a, op, g);
    else if (op->op == OP_for || op->op == OP_while)
      reverse_loop(a, op, g);
    else if (op->op == OP_unloop)
      reverse_over_reverse(a, op);
    else if (op->op == OP_custom)
      reverse_custom(a, op, g);
    else
      die("cannot differentiate through %s", ir_ops[op->op].name);
  }
  free(g);
}
