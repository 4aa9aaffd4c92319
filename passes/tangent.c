/* Forward-mode automatic differentiation (the tangent transformation), as
 * an IR-to-IR transformation.
 *
 * tg_build makes, from a call-free function f, one that computes f's values
 * and their tangents (directional derivatives) along tangent parameters, one
 * per differentiated parameter, in ONE sweep: each instruction of f is
 * copied, and right after it comes its tangent, built from its operands'
 * tangents by the rule its op names in ir/ops.def. No tape: the cost is a
 * small multiple of f's. Loops and branches become loops and branches that
 * carry tangents beside their values (passes/tangent_region.c).
 *
 * Only *varied* values (passes/activity.c: depending on a differentiated
 * parameter through ops with a non-zero derivative, never through
 * stop_gradient, const, i32 or bool values) get a tangent; every other
 * value's tangent is exactly zero and costs no code, so nothing from inside
 * stop_gradient(e) reaches a tangent (spec section 7).
 *
 * The rules mirror the adjoint rules of passes/ad.c, local derivative for
 * local derivative, so that a Jacobian by columns (forward) equals the one by
 * rows (reverse) bit for bit up to summation order: the chain rule's product
 * is mulz(tangent, f'(x)) (a zero tangent stays exactly zero where f'(x) is
 * NaN or infinite, as in the branch select did not pick), comparisons route
 * tangents by select (relu, maximum, minimum, select, max, min), ties split
 * as the adjoints split them, and a product with a tangent factor leaves out
 * the terms with a zero factor (matmulz, ad_mul_either_zero). */
#include <string.h>

#include "ad_internal.h"
#include "tangent_internal.h"

/* The tangent of y (an instruction of the new function, whose operands are
 * primal copies) from the tangents d[k] of its operands (NULL: zero). NULL
 * result: zero. */
typedef Inst *Rule(TG *t, Inst *y, Inst *const *d);

#define X (y->args[0])
#define Y2 (y->args[1])
#define B (&t->b)

static Inst *K(TG *t, const Inst *like, double v) { return ir_const_like(B, &like->type, v); }

/* d * f'(x): exactly zero where the tangent d is, whatever f'(x) is. */
static Inst *chain(TG *t, Inst *d, Inst *deriv) { return ir_binary(B, OP_mulz, d, deriv); }

/* A sum of tangents, any of which may be NULL (zero). */
static Inst *plus(TG *t, Inst *a, Inst *b) { return !a ? b : !b ? a : ir_binary(B, OP_add, a, b); }

static Inst *tg_none(TG *t, Inst *y, Inst *const *d) {
  (void)t, (void)d;
  die("%s has no tangent rule, yet it is varied", ir_ops[y->op].name);
}
static Inst *tg_zero(TG *t, Inst *y, Inst *const *d) { return (void)t, (void)y, (void)d, NULL; }

/* Ops linear in operand 0 (neg, convert, broadcast, reshape, transpose, sum,
 * and the indexing ops, linear in their data): the same op on its tangent,
 * with the same indices, axes and result type. */
static Inst *tg_linear(TG *t, Inst *y, Inst *const *d) {
  Inst *args[3];
  args[0] = d[0];
  for (int k = 1; k < y->nargs; k++)
    args[k] = y->args[k];
  return ir_clone_inst(B, y, args);
}

/* Indexed assignment: the same update of v's tangent with u's, with the
 * same positions (linear in v and u together); a zero tangent of u still
 * overwrites v's at the positions, unless it is added. */
static Inst *tg_update(TG *t, Inst *y, Inst *const *d) {
  if (!d[1] && (y->op == OP_update_add || !d[0]))
    return d[0];
  return ir_update(B, y->op, d[0] ? d[0] : K(t, y, 0), d[1] ? d[1] : K(t, Y2, 0), y->args + 2, y->axes);
}
static Inst *tg_exp(TG *t, Inst *y, Inst *const *d) { return chain(t, d[0], y); }
static Inst *tg_log(TG *t, Inst *y, Inst *const *d) {
  return chain(t, d[0], ir_binary(B, OP_div, K(t, y, 1), X));
}
static Inst *tg_log1p(TG *t, Inst *y, Inst *const *d) {
  Inst *u = ir_binary(B, OP_add, K(t, y, 1), X);
  return chain(t, d[0], ir_binary(B, OP_div, K(t, y, 1), u));
}
static Inst *tg_expm1(TG *t, Inst *y, Inst *const *d) { return chain(t, d[0], ir_unary(B, OP_exp, X)); }
static Inst *tg_sqrt(TG *t, Inst *y, Inst *const *d) {
  return chain(t, d[0], ir_binary(B, OP_div, K(t, y, 0.5), y));
}
static Inst *tg_rsqrt(TG *t, Inst *y, Inst *const *d) {
  return chain(t, d[0], ir_binary(B, OP_div, ir_binary(B, OP_mul, K(t, y, -0.5), y), X));
}
static Inst *tg_square(TG *t, Inst *y, Inst *const *d) {
  return chain(t, d[0], ir_binary(B, OP_mul, K(t, y, 2), X));
}
static Inst *tg_sin(TG *t, Inst *y, Inst *const *d) { return chain(t, d[0], ir_unary(B, OP_cos, X)); }
static Inst *tg_cos(TG *t, Inst *y, Inst *const *d) {
  return chain(t, d[0], ir_unary(B, OP_neg, ir_unary(B, OP_sin, X)));
}
static Inst *tg_tanh(TG *t, Inst *y, Inst *const *d) {
  Inst *one = K(t, y, 1);
  return chain(t, d[0], ir_binary(B, OP_sub, one, ir_binary(B, OP_mul, y, y)));
}
static Inst *tg_sigmoid(TG *t, Inst *y, Inst *const *d) {
  Inst *one = K(t, y, 1);
  return chain(t, d[0], ir_binary(B, OP_mul, y, ir_binary(B, OP_sub, one, y)));
}
static Inst *tg_softplus(TG *t, Inst *y, Inst *const *d) {
  return chain(t, d[0], ir_unary(B, OP_sigmoid, X));
}
static Inst *tg_relu(TG *t, Inst *y, Inst *const *d) { /* relu'(0) = 0 */
  Inst *z = K(t, y, 0);
  return ir_select(B, ir_binary(B, OP_gt, X, z), d[0], z);
}
static Inst *tg_abs(TG *t, Inst *y, Inst *const *d) { /* abs'(0) = sign(0) = 0 */
  return chain(t, d[0], ir_unary(B, OP_sign, X));
}
static Inst *tg_add(TG *t, Inst *y, Inst *const *d) { return (void)y, plus(t, d[0], d[1]); }
static Inst *tg_sub(TG *t, Inst *y, Inst *const *d) {
  (void)y;
  if (!d[1])
    return d[0];
  return d[0] ? ir_binary(B, OP_sub, d[0], d[1]) : ir_unary(B, OP_neg, d[1]);
}
static Inst *tg_mul(TG *t, Inst *y, Inst *const *d) {
  Inst *da = d[0] ? chain(t, d[0], Y2) : NULL;
  return plus(t, da, d[1] ? chain(t, d[1], X) : NULL);
}
/* mulz(a, b) is 0 for every b where a == 0: b's tangent counts only where
 * a is not zero. */
static Inst *tg_mulz(TG *t, Inst *y, Inst *const *d) {
  Inst *da = d[0] ? chain(t, d[0], Y2) : NULL;
  return plus(t, da, d[1] ? ad_mul_either_zero(B, d[1], X) : NULL);
}
/* mul0(a, b): each side's tangent counts only where the other is not 0. */
static Inst *tg_mul0(TG *t, Inst *y, Inst *const *d) {
  Inst *da = d[0] ? ad_mul_either_zero(B, d[0], Y2) : NULL;
  return plus(t, da, d[1] ? ad_mul_either_zero(B, d[1], X) : NULL);
}
static Inst *tg_div(TG *t, Inst *y, Inst *const *d) {
  Inst *da = d[0] ? chain(t, d[0], ir_binary(B, OP_div, K(t, y, 1), Y2)) : NULL;
  Inst *db = d[1] ? chain(t, d[1], ir_unary(B, OP_neg, ir_binary(B, OP_div, y, Y2))) : NULL;
  return plus(t, da, db);
}
/* As ad_pow: d/da = b a^(b-1), taken as 0 where b = 0; d/db = y log a,
 * taken as 0 where y = 0. */
static Inst *tg_pow(TG *t, Inst *y, Inst *const *d) {
  Inst *da = NULL, *db = NULL;
  if (d[0]) {
    Inst *one = K(t, y, 1);
    Inst *e = ir_binary(B, OP_pow, X, ir_binary(B, OP_sub, Y2, one));
    da = chain(t, d[0], ir_binary(B, OP_mulz, Y2, e));
  }
  if (d[1]) {
    Inst *zero = K(t, y, 0), *one = K(t, y, 1);
    Inst *base = ir_select(B, ir_binary(B, OP_eq, X, zero), one, X);
    db = chain(t, d[1], ir_binary(B, OP_mulz, y, ir_unary(B, OP_log, base)));
  }
  return plus(t, da, db);
}
/* maximum/minimum: the winner's tangent; on a tie the mean of both (each
 * halved, as the adjoint gives g/2 to each side); where one side is NaN,
 * exactly 0. */
static Inst *minmax2(TG *t, Inst *y, Inst *const *d, Op wins, Op loses) {
  Inst *half = K(t, y, 0.5);
  Inst *ta = d[0] ? ir_binary(B, OP_mul, d[0], half) : NULL;
  Inst *tie = plus(t, ta, d[1] ? ir_binary(B, OP_mul, d[1], half) : NULL);
  Inst *z = K(t, y, 0);
  Inst *r = ir_select(B, ir_binary(B, OP_eq, X, Y2), tie, z);
  if (d[1])
    r = ir_select(B, ir_binary(B, loses, X, Y2), d[1], r);
  if (d[0])
    r = ir_select(B, ir_binary(B, wins, X, Y2), d[0], r);
  return r;
}
static Inst *tg_maximum(TG *t, Inst *y, Inst *const *d) { return minmax2(t, y, d, OP_gt, OP_lt); }
static Inst *tg_minimum(TG *t, Inst *y, Inst *const *d) { return minmax2(t, y, d, OP_lt, OP_gt); }
/* Only the picked side's tangent, so nothing leaks from the other. */
static Inst *tg_select(TG *t, Inst *y, Inst *const *d) {
  Inst *a = d[1] ? d[1] : K(t, y, 0);
  return ir_select(B, X, a, d[2] ? d[2] : K(t, y, 0));
}
/* max/min reductions: the mean of the tangents of the elements equal to
 * the result (the adjoint splits g evenly among them). Where none is equal
 * (an empty axis, or a NaN result) the adjoint gives nothing to anyone, so
 * the tangent is 0: the count is taken as at least 1, not 0/0. */
static Inst *tg_maxmin(TG *t, Inst *y, Inst *const *d) {
  Inst *hit = ir_binary(B, OP_eq, X, ad_spread(B, y, &X->type, y->axes));
  Inst *z = K(t, X, 0);
  Inst *cnt = ir_reduce(B, OP_sum, ir_select(B, hit, K(t, X, 1), z), y->axes);
  cnt = ir_binary(B, OP_maximum, cnt, K(t, cnt, 1));
  Inst *picked = ir_reduce(B, OP_sum, ir_select(B, hit, d[0], z), y->axes);
  return ir_binary(B, OP_div, picked, cnt);
}
/* Products: each side's tangent times the other side, leaving out the
 * terms with a zero factor (matmulz), in the product's own type (a batched
 * product summing over broadcast batch axes sums the same way). */
static Inst *tg_matmul(TG *t, Inst *y, Inst *const *d) {
  Inst *dl = d[0] ? ir_matmulz_into(B, d[0], Y2, &y->type) : NULL;
  Inst *dr = d[1] ? ir_matmulz_into(B, X, d[1], &y->type) : NULL;
  return plus(t, dl, dr);
}
/* The v3 functions: the sum of each tangent times the partial derivative
 * the adjoint uses (ad_partial). */
static Inst *tg_partials(TG *t, Inst *y, Inst *const *d) {
  Inst *r = NULL;
  for (int k = 0; k < y->nargs; k++)
    if (d[k])
      r = plus(t, r, chain(t, d[k], ad_partial(B, y, k)));
  return r;
}
/* prod along K: the sum over K of each tangent times the product of the
 * others (prod_others, as the adjoint). */
static Inst *tg_prod(TG *t, Inst *y, Inst *const *d) {
  Inst *others = ir_along(B, OP_prod_others, X, ad_axis_of(y));
  return ir_reduce(B, OP_sum, chain(t, d[0], others), y->axes);
}
/* prod_others: the same products of all but two as its adjoint. */
static Inst *tg_prod_others(TG *t, Inst *y, Inst *const *d) {
  return ad_prod_pairs_sum(B, X, d[0], ad_axis_of(y));
}
/* prod_pairs_lo/hi: linear in v; along x (prod's third derivative) the
 * error of the adjoint. */
static Inst *tg_prod_pairs(TG *t, Inst *y, Inst *const *d) {
  if (d[0])
    ad_prod_third_order(t->b.m, y->loc);
  return d[1] ? ir_along2(B, y->op, X, d[1], ad_axis_of(y)) : NULL;
}
/* concat: the tangents joined the same way, zeros for the operands that
 * have none. */
static Inst *tg_concat(TG *t, Inst *y, Inst *const *d) {
  Inst **args = xmalloc(sizeof(Inst *) * (size_t)y->nargs);
  for (int k = 0; k < y->nargs; k++)
    args[k] = d[k] ? d[k] : K(t, y->args[k], 0);
  Inst *r = ir_clone_inst(B, y, args);
  free(args);
  return r;
}
#undef X
#undef Y2
#undef B

static Rule *const rules[OP_COUNT] = {
#define OP(name, arity, shape, adjoint, tangent, flags) [OP_##name] = tangent,
#include "../ir/ops.def"
#undef OP
};

Inst *tg_tangent_or_zero(TG *t, Inst *x) {
  Inst *d = ptrmap_get(&t->tan, x);
  return d ? d : ir_const_like(&t->b, &x->type, 0);
}

/* A region op whose copy must carry tangents: a varied one, or an unloop of
 * a loop that carries them (its block arguments are that loop's state). */
static bool tangent_region(const Inst *i) {
  return i->nregions && (i->active || (i->op == OP_unloop && i->args[0]->active));
}

void tg_block(TG *t, Inst *first) {
  for (Inst *i = first; i; i = i->next) {
    t->b.loc = i->loc;
    if (tangent_region(i)) {
      tg_region(t, i);
      continue;
    }
    if (i->op == OP_proj && tangent_region(i->args[0]))
      continue; /* tg_region mapped it */
    Inst *c = ir_copy_inst(&t->b, i, NULL, NULL);
    if (!i->active || i->nregions)
      continue;
    Inst *small[4], **dv = i->nargs <= 4 ? small : xmalloc(sizeof(Inst *) * (size_t)i->nargs);
    bool any = false;
    for (int k = 0; k < i->nargs; k++)
      any |= (dv[k] = ptrmap_get(&t->tan, i->args[k])) != NULL;
    Inst *d = any ? rules[i->op](t, c, dv) : NULL;
    if (d)
      *ptrmap_slot(&t->tan, i) = d;
    /* A tangent indexes where its primal copy c does, which makes the
     * checks: nothing of it needs to stay for its checks alone
     * (passes/dce.c), e.g. an unloop's recomputed tangent updates. */
    for (Inst *x = c->next; x; x = x->next)
      x->rechecks = true;
    if (dv != small)
      free(dv);
  }
}

Function *tg_build(Module *m, Function *f, const char *name, const bool *wrt, const char *prefix,
                   bool with_value) {
  Function *g = ir_func_new(m, name);
  g->loc = f->loc;
  g->kind = FN_JVP;
  int nr = f->nresults;
  bool *diff = xmalloc(sizeof(bool) * (size_t)(f->nparams + 1));
  for (int k = 0; k < f->nparams; k++)
    diff[k] = wrt[k] && ir_is_float(f->params[k]->type.dtype);
  ad_varied(f, diff); /* before the copies: it clears aux */
  for (int k = 0; k < f->nparams; k++) {
    Inst *p = f->params[k];
    p->aux = ir_add_param(m, g, p->name, p->type, p->is_const);
  }
  TG t = {.b = {m, g, NULL, f->loc, NULL}};
  for (int k = 0; k < f->nparams; k++) {
    if (!diff[k])
      continue;
    Inst *p = f->params[k];
    const char *want = arena_printf(m->arena, "%s%s", prefix, p->name);
    *ptrmap_slot(&t.tan, p) = ir_add_param(m, g, ir_unique_name(m, g, want, "_t"), p->type, false);
  }
  tg_block(&t, f->first);

  Inst **res = xmalloc(sizeof(Inst *) * (size_t)(2 * nr));
  const char **names = xmalloc(sizeof(char *) * (size_t)(2 * nr));
  int nres = 0;
  for (int r = 0; with_value && r < nr; r++) {
    res[nres] = f->results[r]->aux;
    names[nres++] = ir_unique_name(m, g, f->result_names[r], "_out");
  }
  for (int r = 0; r < nr; r++) {
    Inst *y = f->results[r];
    if (!ir_is_float(y->type.dtype))
      continue;
    res[nres] = tg_tangent_or_zero(&t, y);
    names[nres] = ir_result_name(m, g, names, nres,
                                 arena_printf(m->arena, "t_%s", f->result_names[r]));
    nres++;
  }
  ir_set_results(m, g, res, names, nres);
  for (int k = 0; k < f->nparams; k++)
    f->params[k]->aux = NULL;
  ad_clear_aux(f->first);
  ptrmap_free(&t.tan);
  free(res);
  free(names);
  free(diff);
  return g;
}
