/* Algebraic simplification, only where the result is the same under IEEE
 * arithmetic, and elimination of values known to be zero.
 *
 *   x * 1, 1 * x, x / 1, x + 0, 0 + x, x - 0      -> x
 *   -0 - x                                         -> -x
 *   -(-x)                                          -> x
 *   mulz(x, 1), mulz(1, x)                         -> x
 *   mulz(c, x) with c a nonzero literal            -> c * x
 *   mulz(x, c) with c a finite literal             -> x * c
 *   mul0(x, c), mul0(c, x), c finite and nonzero   -> mulz(x, c)
 *   pow(x, 1) -> x,  pow(x, 2) -> square(x),  pow(x, -1) -> 1 / x
 *   select(c, x, x)                                -> x
 *   transpose(transpose(x))                        -> one transpose, or x
 *   reshape(reshape(x))                            -> one reshape, or x
 *   broadcast(reshape(x)), the reshape only adding
 *   or dropping leading 1s                         -> broadcast(x)
 *   sum(broadcast(x)) over exactly the new axes    -> mulz(count, x)
 *     (mulz: the sum of nothing is 0 even for an infinite or NaN x; with
 *     a literal nonzero count it becomes count * x below)
 *
 * (x - x is never folded: it is NaN for infinite x. x * 0 neither.)
 *
 * A value is known zero if it is a +0 literal or made from known zeros by
 * an op that maps +0 to +0 (add, sub, broadcast, reshape, transpose, sum,
 * convert, select of two zeros, mulz with a zero first operand). Such values, which AD produces for adjoints that turn out to be
 * zero, are replaced by a literal zero, and their additions vanish by the
 * rules above; DCE then removes what computed them.
 *
 * Requires: nothing. Keeps: every value's bits, except that x + 0 may turn
 * -0 into +0 and sum(broadcast) rounds once instead of n times. */
#include <math.h>

#include "passes.h"

static Inst *literal(Inst *x) {
  while (x->op == OP_broadcast || x->op == OP_reshape)
    x = x->args[0];
  return x->op == OP_const ? x : NULL;
}

static bool is_lit(Inst *x, double v) {
  Inst *l = literal(x);
  return l && l->num == v;
}

static bool is_neg_zero(Inst *x) {
  Inst *l = literal(x);
  return l && l->num == 0 && signbit(l->num);
}

/* Known to be +0 everywhere (each rule maps +0 operands to +0). */
static bool known_zero(Inst *x) {
  switch (x->op) {
  case OP_const:
    return x->num == 0 && !signbit(x->num);
  case OP_broadcast:
  case OP_reshape:
  case OP_transpose:
  case OP_sum:
  case OP_convert:
    return x->args[0]->aux != NULL;
  case OP_mulz: /* gives +0 for a first operand of either zero */
    return x->args[0]->aux != NULL || is_neg_zero(x->args[0]);
  case OP_mul0: /* gives +0 for either operand of either zero */
    return x->args[0]->aux || x->args[1]->aux || is_neg_zero(x->args[0]) ||
           is_neg_zero(x->args[1]);
  case OP_add:
  case OP_sub:
    return x->args[0]->aux && x->args[1]->aux;
  case OP_select:
    return x->args[1]->aux && x->args[2]->aux;
  default:
    return false;
  }
}

/* What i simplifies to, built before i if needed; NULL if nothing applies. */
static Inst *simplify(Builder *b, Inst *i) {
  Inst *x = i->nargs > 0 ? i->args[0] : NULL, *y = i->nargs > 1 ? i->args[1] : NULL;
  switch (i->op) {
  case OP_add:
    return y->aux ? x : x->aux ? y : NULL;
  case OP_sub: /* -0 - x is -x exactly; +0 - x is not (at x = +0) */
    return y->aux ? x : is_neg_zero(x) ? ir_unary(b, OP_neg, y) : NULL;
  case OP_mul:
    return is_lit(y, 1) ? x : is_lit(x, 1) ? y : NULL;
  case OP_div:
    return is_lit(y, 1) ? x : NULL;
  case OP_mulz: {
    if (is_lit(y, 1))
      return x;
    if (is_lit(x, 1))
      return y;
    Inst *lx = literal(x), *ly = literal(y);
    if ((lx && lx->num != 0 && lx->num == lx->num) ||
        (ly && ly->num - ly->num == 0)) /* finite */
      return ir_binary(b, OP_mul, x, y);
    return NULL;
  }
  case OP_mul0: { /* a finite nonzero literal never annihilates */
    Inst *lx = literal(x), *ly = literal(y);
    if (ly && ly->num != 0 && ly->num - ly->num == 0)
      return ir_binary(b, OP_mulz, x, y);
    if (lx && lx->num != 0 && lx->num - lx->num == 0)
      return ir_binary(b, OP_mulz, y, x);
    return NULL;
  }
  case OP_pow:
    if (is_lit(y, 1))
      return x;
    if (is_lit(y, 2))
      return ir_unary(b, OP_square, x);
    if (is_lit(y, -1))
      return ir_binary(b, OP_div, ir_const_like(b, &x->type, 1), x);
    return NULL;
  case OP_neg:
    return x->op == OP_neg ? x->args[0] : NULL;
  case OP_broadcast: { /* of a reshape that only added or dropped leading 1s */
    if (x->op != OP_reshape)
      return NULL;
    const Type *a = &x->type, *c = &x->args[0]->type;
    int ia = 0, ic = 0;
    while (ia < a->rank && ir_dim_is(a->dim[ia], 1))
      ia++;
    while (ic < c->rank && ir_dim_is(c->dim[ic], 1))
      ic++;
    if (a->rank - ia != c->rank - ic || c->rank > i->type.rank)
      return NULL;
    for (int k = 0; ia + k < a->rank; k++)
      if (!ir_dim_eq(a->dim[ia + k], c->dim[ic + k]))
        return NULL;
    return ir_broadcast(b, x->args[0], &i->type);
  }
  case OP_select:
    return i->args[1] == i->args[2] ? i->args[1] : NULL;
  case OP_transpose: {
    if (x->op != OP_transpose)
      return NULL;
    int p[IR_MAX_RANK];
    bool identity = true;
    for (int k = 0; k < i->type.rank; k++) {
      p[k] = x->perm[i->perm[k]];
      identity &= p[k] == k;
    }
    return identity ? x->args[0] : ir_transpose(b, x->args[0], p);
  }
  case OP_reshape:
    if (x->op != OP_reshape)
      return NULL;
    return ir_shape_eq(&x->args[0]->type, &i->type) ? x->args[0] : ir_reshape(b, x->args[0], &i->type);
  case OP_sum: {
    if (x->op != OP_broadcast || i->type.dtype == DT_I32)
      return NULL;
    /* the axes broadcast added (on the left, or stretched from literal 1) */
    const Type *src = &x->args[0]->type;
    int lead = x->type.rank - src->rank;
    unsigned added = 0;
    for (int k = 0; k < x->type.rank; k++)
      if (k < lead || (ir_dim_is(src->dim[k - lead], 1) && !ir_dim_is(x->type.dim[k], 1)))
        added |= 1u << k;
    if (i->axes != added)
      return NULL;
    Inst *v = ir_reshape(b, x->args[0], &i->type);
    return ir_binary(b, OP_mulz, ir_broadcast(b, ir_count(b, &x->type, added, i->type.dtype), &i->type), v);
  }
  default:
    return NULL;
  }
}

void pass_simplify(Module *m) {
  for (Function *f = m->funcs; f; f = f->next) {
    for (int k = 0; k < f->nparams; k++)
      f->params[k]->aux = NULL;
    for (Inst *i = f->first, *next; i; i = next) {
      next = ir_walk_next(i);
      ir_resolve_args(i);
      i->aux = NULL;
      for (int r = 0; r < i->nregions; r++)
        for (int k = 0; k < i->regions[r].nparams; k++)
          i->regions[r].params[k]->aux = NULL;
      if (i->type.dtype == DT_BOOL || i->nregions)
        continue;
      Builder b = {m, f, i, i->loc, NULL};
      if (known_zero(i)) {
        if (i->op == OP_const || (i->op == OP_broadcast && i->args[0]->op == OP_const)) {
          i->aux = i; /* already a literal zero */
          continue;
        }
        Inst *z = ir_const_like(&b, &i->type, 0);
        z->aux = z;
        ir_forward(i, z);
        ir_unlink(f, i);
        continue;
      }
      Inst *r = simplify(&b, i);
      if (r && r != i) {
        ir_forward(i, r);
        ir_unlink(f, i);
      }
    }
    ir_resolve_func(f);
    for (Inst *i = f->first; i; i = ir_walk_next(i))
      i->aux = NULL;
  }
}
