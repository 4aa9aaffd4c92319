/* The v3 operations of spec section 6 that are lowered to other ops rather
 * than being ops of their own (docs/language.md's table says which):
 *
 *   logsumexp(x, axis=K)  m + log(sum(exp(x - m), K)), m = stop_gradient(max(x, K))
 *   softmax(x, axis=K)    e / sum(e, K), e = exp(x - m)
 *   log_softmax(x, axis)  (x - m) - log(sum(exp(x - m), K))
 *   clip(x, lo, hi)       select(t > hi, hi, t), t = select(x < lo, lo, x)
 *   stack(a, b, axis=K)   concat of the operands reshaped with a 1 at K
 *
 * exactly as the spec defines them: written so, they never overflow, their
 * derivatives in every direction come from the rules of the ops used
 * (softmax's is exact: the max carries none), and the code generator fuses
 * them like the hand-written forms (the `x - max` row and online groups,
 * cg_rows.c, cg_online.c). Here too the ops along one axis that are ops of
 * their own, cumsum and concat, whose argument checking they share. */
#include "lower_internal.h"

#include <string.h>

/* v with the reduced axes `axes` of type x kept as 1s, broadcast back to x. */
static Inst *spread(Ctx *c, Inst *v, const Type *x, unsigned axes) {
  Type keep = *x, full = *x;
  keep.dtype = full.dtype = v->type.dtype;
  for (int k = 0; k < x->rank; k++)
    if (axes & (1u << k))
      keep.dim[k] = ir_lit(1);
  return ir_broadcast(&c->b, ir_reshape(&c->b, v, &keep), &full);
}

/* logsumexp (all axes by default), softmax, log_softmax (the last axis by
 * default) and cumsum (the last axis by default). */
Val lower_along(Ctx *c, Expr *call, const struct Builtin *bi) {
  Val x = lw_reduce_operand(c, call, bi);
  if (!x.v)
    return BAD;
  bool scan = bi->kind == B_SCAN;
  if (!scan && !lw_need_float(c, x, call->loc, arena_printf(c->m->arena, "'%s'", bi->name)))
    return BAD;
  int rank = x.v->type.rank, k;
  if (!lw_axis_arg(c, call, rank, &k))
    return BAD;
  if (scan && rank == 0) {
    ERR(c, call->loc, "'%s' needs an operand with at least one axis; this one is a scalar",
        bi->name);
    return BAD;
  }
  c->b.loc = call->loc;
  Inst *v = x.weak ? lw_concrete(c, x, x.integral && scan ? DT_I32 : DT_F32).v : x.v;
  if (k < 0 && bi->kind != B_LOGSUMEXP)
    k = rank - 1;
  if (scan)
    return (Val){.v = ir_along(&c->b, bi->op, v, k), .weak = false};
  unsigned axes = rank == 0 ? 0 : k < 0 ? (1u << rank) - 1 : 1u << k;
  Inst *m = ir_unary(&c->b, OP_stop_gradient, ir_reduce(&c->b, OP_max, v, axes));
  Inst *z = ir_binary(&c->b, OP_sub, v, spread(c, m, &v->type, axes));
  Inst *e = ir_unary(&c->b, OP_exp, z);
  Inst *s = ir_reduce(&c->b, OP_sum, e, axes);
  Inst *r;
  if (bi->kind == B_LOGSUMEXP)
    r = ir_binary(&c->b, OP_add, m, ir_unary(&c->b, OP_log, s));
  else if (bi->kind == B_SOFTMAX)
    r = ir_binary(&c->b, OP_div, e, spread(c, s, &v->type, axes));
  else
    r = ir_binary(&c->b, OP_sub, z, spread(c, ir_unary(&c->b, OP_log, s), &v->type, axes));
  return (Val){.v = r, .weak = false};
}

/* clip(x, lo, hi): lo where x < lo, then hi where that exceeds hi (NumPy's
 * minimum(maximum(x, lo), hi), hi when lo > hi), as selects: the gradient
 * reaches x where lo <= x <= hi, both ends included, and nothing outside
 * (maximum and minimum would halve it at the ends, where they tie). */
Val lower_clip(Ctx *c, Expr *call) {
  if (!lw_check_arity(c, call, "clip", 3, 3, NULL))
    return BAD;
  Val v[3];
  for (int k = 0; k < 3; k++) {
    v[k] = lw_value_arg(c, lw_nth_positional(call, k)->value);
    if (!v[k].v || !lw_not_bool(c, v[k], call->loc))
      return BAD;
  }
  /* one dtype and one shape for the three */
  for (int k = 1; k < 3; k++)
    if (!lw_unify_dtypes(c, &v[0], &v[k], call->loc, "'clip'"))
      return BAD;
  if (!lw_unify_dtypes(c, &v[1], &v[2], call->loc, "'clip'") ||
      !lw_unify_dtypes(c, &v[0], &v[1], call->loc, "'clip'"))
    return BAD;
  if (!lw_need_float(c, v[0], call->loc, "'clip'"))
    return BAD;
  if (!lw_broadcast_pair(c, &v[0], &v[1], call->loc, "'clip'") ||
      !lw_broadcast_pair(c, &v[0], &v[2], call->loc, "'clip'") ||
      !lw_broadcast_pair(c, &v[1], &v[2], call->loc, "'clip'") ||
      !lw_broadcast_pair(c, &v[0], &v[1], call->loc, "'clip'"))
    return BAD;
  c->b.loc = call->loc;
  Inst *x = v[0].v, *lo = v[1].v, *hi = v[2].v;
  Inst *t = ir_select(&c->b, ir_binary(&c->b, OP_lt, x, lo), lo, x);
  Inst *r = ir_select(&c->b, ir_binary(&c->b, OP_gt, t, hi), hi, t);
  return (Val){.v = r, .weak = v[0].weak && v[1].weak && v[2].weak};
}

/* concat(a, b, ..., axis=K) and stack(a, b, ..., axis=K): one or more
 * tensors of one dtype; concat's of one rank (at least 1), equal off axis
 * K, stack's of one shape. K defaults to 0 (NumPy's), and counts from the
 * end of the operands' axes (concat) or of the result's (stack). */
Val lower_concat(Ctx *c, Expr *call, const struct Builtin *bi) {
  static const char *const kws[] = {"axis", NULL};
  bool stack = bi->kind == B_STACK;
  if (!lw_check_arity(c, call, bi->name, 0, 1 << 20, kws))
    return BAD;
  int n = 0;
  for (Arg *a = call->args; a; a = a->next)
    n += a->kw == NULL;
  if (n == 0) {
    ERR(c, call->loc, "'%s' takes one or more tensors", bi->name);
    return BAD;
  }
  Val *v = ARENA_ARRAY(c->m->arena, Val, n);
  for (int j = 0; j < n; j++) {
    Expr *e = lw_nth_positional(call, j)->value;
    v[j] = lw_value_arg(c, e);
    if (!v[j].v || !lw_not_bool(c, v[j], e->loc))
      return BAD;
  }
  /* one dtype: weak operands take the others' (f32, or i32 if all are
   * integer literals) */
  int strong = -1;
  bool integral = true;
  for (int j = 0; j < n; j++) {
    if (!v[j].weak && strong < 0)
      strong = j;
    integral &= v[j].integral;
  }
  for (int j = 0; j < n; j++) {
    Expr *e = lw_nth_positional(call, j)->value;
    if (strong < 0) { /* stack(2, 1, 0.1) is f32, like 2 + 0.1 */
      v[j] = lw_concrete(c, v[j], integral ? DT_I32 : DT_F32);
      continue;
    }
    DType dt = v[strong].v->type.dtype;
    if (v[j].weak && !lw_weak_fits(c, v[j], dt, e->loc))
      return BAD;
    v[j] = lw_concrete(c, v[j], dt);
    if (v[j].v->type.dtype != dt) {
      ERR(c, e->loc, "'%s' joins tensors of one dtype: this one is %s, the first %s; convert "
                     "it with %s(...)", bi->name, ir_dtype_name(v[j].v->type.dtype),
          ir_dtype_name(dt), ir_dtype_name(dt));
      return BAD;
    }
  }
  const Type *t0 = &v[0].v->type;
  int rank = t0->rank + (stack ? 1 : 0), k;
  if (!stack && t0->rank == 0) {
    ERR(c, lw_nth_positional(call, 0)->value->loc,
        "'concat' joins tensors along an axis; this one is a scalar (stack(a, b) makes a vector "
        "of scalars)");
    return BAD;
  }
  if (rank > IR_MAX_RANK) {
    ERR(c, call->loc, "the result would have more than %d dimensions", IR_MAX_RANK);
    return BAD;
  }
  if (!lw_axis_arg(c, call, rank, &k))
    return BAD;
  k = k < 0 ? 0 : k;
  for (int j = 1; j < n; j++) {
    const Type *t = &v[j].v->type;
    bool same = t->rank == t0->rank;
    for (int d = 0; same && d < t->rank; d++)
      same = (!stack && d == k) || ir_dim_eq(t->dim[d], t0->dim[d]);
    if (!same) {
      Expr *e = lw_nth_positional(call, j)->value;
      if (stack)
        ERR(c, e->loc, "'stack' joins tensors of one shape: this one is %s, the first %s",
            lw_dstr(c, t), lw_dstr(c, t0));
      else if (t->rank != t0->rank)
        ERR(c, e->loc, "'concat' joins tensors of one rank: this one is %s, the first %s",
            lw_dstr(c, t), lw_dstr(c, t0));
      else
        ERR(c, e->loc, "'concat' along axis %d joins tensors equal on the other axes: this one "
                       "is %s, the first %s", k, lw_dstr(c, t), lw_dstr(c, t0));
      return BAD;
    }
  }
  c->b.loc = call->loc;
  Inst **xs = ARENA_ARRAY(c->m->arena, Inst *, n);
  SizePoly len = ir_poly_const(0);
  for (int j = 0; j < n; j++) {
    xs[j] = v[j].v;
    if (stack) { /* a 1 inserted at k */
      Type one = xs[j]->type;
      for (int d = rank - 1; d > k; d--)
        one.dim[d] = one.dim[d - 1];
      one.dim[k] = ir_lit(1);
      one.rank = rank;
      xs[j] = ir_reshape(&c->b, xs[j], &one);
    }
    SizePoly d = ir_poly_of(c->m, xs[j]->type.dim[k]);
    if (!ir_poly_add(c->m, &len, &d, 1, &len)) {
      ERR(c, call->loc, "the joined length is too large a size expression");
      return BAD;
    }
  }
  Type t = xs[0]->type;
  t.dim[k] = ir_poly_dim(c->m, &len);
  if (n == 1)
    return (Val){.v = xs[0], .weak = false};
  return (Val){.v = ir_concat(&c->b, xs, n, k, &t), .weak = false};
}
