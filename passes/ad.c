/* Reverse-mode automatic differentiation, as an IR-to-IR transformation.
 *
 * For an exported f, pass_ad builds f_grad (scalar result) or f_vjp (tensor
 * result, with a `seed` cotangent parameter): a copy of f's body (the primal
 * sweep), then, walking it backwards, the adjoint of every active value
 * (passes/activity.c), built from the rule its op names in ir/ops.def. The
 * result is an ordinary IR function: it prints with --emit-ir=ad and goes
 * through the same optimizer and code generator as everything else. Because
 * every rule emits only ops that themselves have rules, the gradient of a
 * gradient comes out of the same machinery (grad inside a differentiated
 * function is exact, not rejected).
 *
 * Inactive values get no adjoint code at all: stop_gradient, const
 * parameters and piecewise-constant ops contribute exactly nothing.
 *
 * Every rule keeps a zero adjoint exactly zero (spec section 7: the branch
 * select() did not pick contributes 0). A local derivative can be NaN or
 * infinite wherever the forward value it is taken at is (sin(sqrt(x)) at
 * x = -1 has cos(NaN) as its derivative), and any value can be, so the
 * chain rule multiplies with `mulz` (0 * anything = 0) for every op whose
 * derivative is not a constant; the rules that route g by a comparison
 * (relu, maximum, minimum, select, max, min) use select, so a loser gets an
 * exact 0 even from a NaN adjoint; the products that carry an adjoint in a
 * matmul, and the adjoint of mulz's second operand, leave out a term with a
 * zero factor on either side (matmulz, ad_mul_either_zero). */
#include <string.h>

#include "ad_internal.h"

typedef void Rule(AD *a, Inst *y, Inst *g);

static bool defined_in(const Inst *x, const Region *r) {
  for (const Region *p = x->parent; p; p = p->owner->parent)
    if (p == r)
      return true;
  return false;
}

/* Add `d` to the adjoint of x (nothing if x is inactive). Inside the
 * adjoint of a region, a value defined outside it collects its adjoint in
 * the region's own table: the region yields it. */
void ad_contribute(AD *a, Inst *x, Inst *d) {
  if (!x->active)
    return;
  PtrMap *map = a->cur && !defined_in(x, a->cur) ? a->captured : &a->adj;
  Inst **s = (Inst **)ptrmap_slot(map, x);
  *s = *s ? ir_binary(&a->b, OP_add, *s, d) : d;
}

#define contribute ad_contribute

static Inst *K(AD *a, const Inst *like, double v) {
  return ir_const_like(&a->b, &like->type, v);
}

/* The chain rule's product g * dy/dx: a zero g gives exactly zero, even
 * where the derivative d is NaN or infinite (mulz). */
static Inst *chain(AD *a, Inst *g, Inst *d) { return ir_binary(&a->b, OP_mulz, g, d); }

/* u * v, or exactly 0 where either factor is zero: for products of two
 * values that may each be a zero adjoint while the other is infinite. An
 * op (mul0), not select(v == 0, 0, mulz(u, v)): a select has the tangent
 * of the branch it picks, 0 where v = 0, where u v's derivative in v is u
 * (the Hessian of x @ x was 0 at x = 0: v3 seed 42166). */
Inst *ad_mul_either_zero(Builder *b, Inst *u, Inst *v) { return ir_binary(b, OP_mul0, u, v); }

#define X (y->args[0])
#define Y2 (y->args[1])
#define B (&a->b)

static void ad_none(AD *a, Inst *y, Inst *g) { (void)a, (void)y, (void)g; }
static void ad_zero(AD *a, Inst *y, Inst *g) { (void)a, (void)y, (void)g; }

static void ad_neg(AD *a, Inst *y, Inst *g) { contribute(a, X, ir_unary(B, OP_neg, g)); }
static void ad_exp(AD *a, Inst *y, Inst *g) { contribute(a, X, chain(a, g, y)); }
static void ad_log(AD *a, Inst *y, Inst *g) {
  contribute(a, X, chain(a, g, ir_binary(B, OP_div, K(a, y, 1), X)));
}
static void ad_log1p(AD *a, Inst *y, Inst *g) {
  Inst *u = ir_binary(B, OP_add, K(a, y, 1), X);
  contribute(a, X, chain(a, g, ir_binary(B, OP_div, K(a, y, 1), u)));
}
static void ad_expm1(AD *a, Inst *y, Inst *g) { /* exp(x), not y + 1: exact for x << 0 */
  contribute(a, X, chain(a, g, ir_unary(B, OP_exp, X)));
}
static void ad_sqrt(AD *a, Inst *y, Inst *g) {
  contribute(a, X, chain(a, g, ir_binary(B, OP_div, K(a, y, 0.5), y)));
}
static void ad_rsqrt(AD *a, Inst *y, Inst *g) { /* d/dx x^-1/2 = -0.5 y / x */
  Inst *d = ir_binary(B, OP_div, ir_binary(B, OP_mul, K(a, y, -0.5), y), X);
  contribute(a, X, chain(a, g, d));
}
static void ad_square(AD *a, Inst *y, Inst *g) {
  contribute(a, X, chain(a, g, ir_binary(B, OP_mul, K(a, y, 2), X)));
}
static void ad_sin(AD *a, Inst *y, Inst *g) {
  contribute(a, X, chain(a, g, ir_unary(B, OP_cos, X)));
}
static void ad_cos(AD *a, Inst *y, Inst *g) {
  contribute(a, X, chain(a, g, ir_unary(B, OP_neg, ir_unary(B, OP_sin, X))));
}
static void ad_tanh(AD *a, Inst *y, Inst *g) {
  Inst *d = ir_binary(B, OP_sub, K(a, y, 1), ir_binary(B, OP_mul, y, y));
  contribute(a, X, chain(a, g, d));
}
static void ad_sigmoid(AD *a, Inst *y, Inst *g) {
  Inst *d = ir_binary(B, OP_mul, y, ir_binary(B, OP_sub, K(a, y, 1), y));
  contribute(a, X, chain(a, g, d));
}
static void ad_softplus(AD *a, Inst *y, Inst *g) {
  contribute(a, X, chain(a, g, ir_unary(B, OP_sigmoid, X)));
}
/* The v3 functions' partial derivatives, which the adjoint (g times them)
 * and the tangent (passes/tangent.c: t times them) share, so both
 * directions compute the same local derivatives: dy/d(operand k). */
Inst *ad_partial(Builder *b, Inst *y, int k) {
  Inst *x = y->args[0], *one;
  switch (y->op) {
  case OP_tan: /* 1 + tan^2 */
    one = ir_const_like(b, &y->type, 1);
    return ir_binary(b, OP_add, one, ir_binary(b, OP_mul, y, y));
  case OP_asin:
  case OP_acos: { /* +-1 / sqrt((1 - x)(1 + x)): exact near |x| = 1 */
    one = ir_const_like(b, &y->type, 1);
    Inst *q = ir_binary(b, OP_mul, ir_binary(b, OP_sub, one, x), ir_binary(b, OP_add, one, x));
    Inst *r = ir_unary(b, OP_rsqrt, q);
    return y->op == OP_asin ? r : ir_unary(b, OP_neg, r);
  }
  case OP_atan:
    one = ir_const_like(b, &y->type, 1);
    return ir_binary(b, OP_div, one, ir_binary(b, OP_add, one, ir_unary(b, OP_square, x)));
  case OP_sinh:
    return ir_unary(b, OP_cosh, x);
  case OP_cosh:
    return ir_unary(b, OP_sinh, x);
  case OP_log2:
  case OP_log10: { /* 1 / (x ln base) */
    double ln_base = y->op == OP_log2 ? 0.69314718055994530942 : 2.30258509299404568402;
    return ir_binary(b, OP_div, ir_const_like(b, &y->type, 1 / ln_base), x);
  }
  case OP_erf: { /* 2/sqrt(pi) e^(-x^2) */
    Inst *e = ir_unary(b, OP_exp, ir_unary(b, OP_neg, ir_unary(b, OP_square, x)));
    return ir_binary(b, OP_mul, ir_const_like(b, &y->type, 1.12837916709551257390), e);
  }
  case OP_lgamma:
    return ir_polygamma(b, 0, x);
  case OP_polygamma:
    return ir_polygamma(b, y->index + 1, x);
  case OP_atan2: { /* atan2(u, v): d/du = v / (u^2 + v^2), d/dv = -u / (u^2 + v^2) */
    Inst *v = y->args[1];
    Inst *r2 = ir_binary(b, OP_add, ir_unary(b, OP_square, x), ir_unary(b, OP_square, v));
    return k == 0 ? ir_binary(b, OP_div, v, r2) : ir_unary(b, OP_neg, ir_binary(b, OP_div, x, r2));
  }
  default:
    die("ad_partial: %s has no partial derivatives here", ir_ops[y->op].name);
  }
}
static void ad_partials(AD *a, Inst *y, Inst *g) {
  for (int k = 0; k < y->nargs; k++)
    if (y->args[k]->active)
      contribute(a, y->args[k], chain(a, g, ad_partial(B, y, k)));
}
static void ad_relu(AD *a, Inst *y, Inst *g) { /* relu'(0) = 0 */
  Inst *pos = ir_binary(B, OP_gt, X, K(a, y, 0));
  contribute(a, X, ir_select(B, pos, g, K(a, y, 0)));
}
static void ad_abs(AD *a, Inst *y, Inst *g) { /* sign(0) = 0 = abs'(0) */
  contribute(a, X, chain(a, g, ir_unary(B, OP_sign, X)));
}
static void ad_convert(AD *a, Inst *y, Inst *g) {
  contribute(a, X, ir_convert(B, g, X->type.dtype));
}
static void ad_add(AD *a, Inst *y, Inst *g) {
  contribute(a, X, g);
  contribute(a, Y2, g);
}
static void ad_sub(AD *a, Inst *y, Inst *g) {
  contribute(a, X, g);
  if (Y2->active)
    contribute(a, Y2, ir_unary(B, OP_neg, g));
}
static void ad_mul(AD *a, Inst *y, Inst *g) {
  if (X->active)
    contribute(a, X, chain(a, g, Y2));
  if (Y2->active)
    contribute(a, Y2, chain(a, g, X));
}
/* mulz(a, b) is 0 for every b where a == 0: b's adjoint is 0 there, even
 * for an infinite g. */
static void ad_mulz(AD *a, Inst *y, Inst *g) {
  if (X->active)
    contribute(a, X, chain(a, g, Y2));
  if (Y2->active)
    contribute(a, Y2, ad_mul_either_zero(B, g, X));
}
/* mul0(a, b) is 0 for every a where b == 0 and for every b where a == 0. */
static void ad_mul0(AD *a, Inst *y, Inst *g) {
  if (X->active)
    contribute(a, X, ad_mul_either_zero(B, g, Y2));
  if (Y2->active)
    contribute(a, Y2, ad_mul_either_zero(B, g, X));
}
static void ad_div(AD *a, Inst *y, Inst *g) { /* d/da = 1/b, d/db = -y/b */
  if (X->active)
    contribute(a, X, chain(a, g, ir_binary(B, OP_div, K(a, y, 1), Y2)));
  if (Y2->active)
    contribute(a, Y2, chain(a, g, ir_unary(B, OP_neg, ir_binary(B, OP_div, y, Y2))));
}
/* d/da = b a^(b-1), taken as 0 where b = 0 (a^0 is 1 for every a; at
 * a = 0, 0 * 0^-1 would be NaN); d/db = y log a, taken as 0 where y = 0:
 * at a = 0 (where a^b is constant in b > 0, as JAX does) and at a = inf
 * with b < 0 (constant 0 there too; 0 * log inf would be NaN). */
static void ad_pow(AD *a, Inst *y, Inst *g) {
  if (X->active) {
    Inst *e = ir_binary(B, OP_pow, X, ir_binary(B, OP_sub, Y2, K(a, y, 1)));
    contribute(a, X, chain(a, g, ir_binary(B, OP_mulz, Y2, e)));
  }
  if (Y2->active) {
    Inst *base = ir_select(B, ir_binary(B, OP_eq, X, K(a, y, 0)), K(a, y, 1), X);
    contribute(a, Y2, chain(a, g, ir_binary(B, OP_mulz, y, ir_unary(B, OP_log, base))));
  }
}
/* maximum/minimum: the winner takes g, a tie gives g/2 to each side, the
 * loser (and both sides where one is NaN) exactly 0, whatever g is: g is
 * routed by select, as relu, select and max route it. */
static void minmax2(AD *a, Inst *y, Inst *g, Op wins, Op loses) {
  Inst *z = K(a, y, 0);
  Inst *tie = ir_select(B, ir_binary(B, OP_eq, X, Y2), ir_binary(B, OP_mul, g, K(a, y, 0.5)), z);
  if (X->active)
    contribute(a, X, ir_select(B, ir_binary(B, wins, X, Y2), g, tie));
  if (Y2->active)
    contribute(a, Y2, ir_select(B, ir_binary(B, loses, X, Y2), g, tie));
}
static void ad_maximum(AD *a, Inst *y, Inst *g) { minmax2(a, y, g, OP_gt, OP_lt); }
static void ad_minimum(AD *a, Inst *y, Inst *g) { minmax2(a, y, g, OP_lt, OP_gt); }
static void ad_select(AD *a, Inst *y, Inst *g) {
  Inst *c = y->args[0], *z = K(a, y, 0);
  if (y->args[1]->active)
    contribute(a, y->args[1], ir_select(B, c, g, z));
  if (y->args[2]->active)
    contribute(a, y->args[2], ir_select(B, c, z, g));
}
static void ad_broadcast(AD *a, Inst *y, Inst *g) {
  contribute(a, X, ir_unbroadcast(B, g, &X->type));
}
static void ad_reshape(AD *a, Inst *y, Inst *g) { contribute(a, X, ir_reshape(B, g, &X->type)); }
static void ad_transpose(AD *a, Inst *y, Inst *g) {
  int inv[IR_MAX_RANK];
  for (int k = 0; k < y->type.rank; k++)
    inv[y->perm[k]] = k;
  contribute(a, X, ir_transpose(B, g, inv));
}
Inst *ad_spread(Builder *b, Inst *v, const Type *x, unsigned axes) {
  Type keep = *x;
  keep.dtype = v->type.dtype;
  for (int k = 0; k < x->rank; k++)
    if (axes & (1u << k))
      keep.dim[k] = ir_lit(1);
  Type full = *x;
  full.dtype = v->type.dtype;
  return ir_broadcast(b, ir_reshape(b, v, &keep), &full);
}
static void ad_sum(AD *a, Inst *y, Inst *g) { contribute(a, X, ad_spread(B, g, &X->type, y->axes)); }
/* max/min: ties split g evenly among the elements equal to the result. */
static void ad_maxmin(AD *a, Inst *y, Inst *g) {
  Inst *hit = ir_binary(B, OP_eq, X, ad_spread(B, y, &X->type, y->axes));
  Inst *z = K(a, X, 0);
  Inst *cnt = ir_reduce(B, OP_sum, ir_select(B, hit, K(a, X, 1), z), y->axes);
  Inst *share = ir_binary(B, OP_div, g, cnt);
  contribute(a, X, ir_select(B, hit, ad_spread(B, share, &X->type, y->axes), z));
}
/* prod along K: each element's derivative is the product of the others
 * (prod_others: prefix and suffix products, exact with one zero or more,
 * no division by the product). */
static void ad_prod(AD *a, Inst *y, Inst *g) {
  Inst *others = ir_along(B, OP_prod_others, X, ad_axis_of(y));
  contribute(a, X, chain(a, ad_spread(B, g, &X->type, y->axes), others));
}
/* Its derivative (prod's second) along g: at j, the sum over i != j of
 * g[i] times the product of all but x[i] and x[j] (ad_prod_pairs_sum). */
static void ad_prod_others(AD *a, Inst *y, Inst *g) {
  contribute(a, X, ad_prod_pairs_sum(B, X, g, ad_axis_of(y)));
}
Inst *ad_prod_pairs_sum(Builder *b, Inst *x, Inst *v, int axis) {
  return ir_binary(b, OP_add, ir_along2(b, OP_prod_pairs_lo, x, v, axis),
                   ir_along2(b, OP_prod_pairs_hi, x, v, axis));
}
/* prod_pairs_lo/hi are linear in v, and lo's transpose is hi (the matrix
 * of the products of all but two is symmetric); their derivative along x
 * (prod's third) is not implemented: an error at the op, never a wrong
 * number. */
static void ad_prod_pairs(AD *a, Inst *y, Inst *g) {
  if (X->active)
    ad_prod_third_order(a->b.m, y->loc);
  Op t = y->op == OP_prod_pairs_lo ? OP_prod_pairs_hi : OP_prod_pairs_lo;
  contribute(a, Y2, ir_along2(B, t, X, g, ad_axis_of(y)));
}
void ad_prod_third_order(Module *m, Loc loc) {
  ir_error(m, loc, "the third derivative of 'prod' is not implemented (prod is differentiated "
                   "twice at most); for positive values write exp(sum(log(x)))");
}
static void ad_cumsum(AD *a, Inst *y, Inst *g) { contribute(a, X, ir_along(B, OP_rcumsum, g, ad_axis_of(y))); }
static void ad_rcumsum(AD *a, Inst *y, Inst *g) { contribute(a, X, ir_along(B, OP_cumsum, g, ad_axis_of(y))); }
/* concat: each operand's adjoint is its piece of g (a slice at the sum of
 * the lengths before it). */
static void ad_concat(AD *a, Inst *y, Inst *g) {
  int k = ad_axis_of(y);
  SizePoly at = ir_poly_const(0);
  for (int j = 0; j < y->nargs; j++) {
    Inst *x = y->args[j];
    if (x->active) {
      Inst *start = ir_size_value(B, ir_poly_dim(a->b.m, &at));
      contribute(a, x, ir_index_op(B, OP_slice, g, start, k, &x->type));
    }
    SizePoly d = ir_poly_of(a->b.m, x->type.dim[k]);
    if (!ir_poly_add(a->b.m, &at, &d, 1, &at))
      die("concat: offset too large a size expression");
  }
}
/* outer(u, v) = u[:, None] * v[None, :], elementwise so it fuses */
static Inst *outer(AD *a, Inst *u, Inst *v) {
  Type t = ir_scalar(u->type.dtype);
  t.rank = 2;
  t.dim[0] = u->type.dim[0];
  t.dim[1] = v->type.dim[0];
  Type col = t;
  col.dim[1] = ir_lit(1);
  Inst *uc = ir_broadcast(B, ir_reshape(B, u, &col), &t);
  return ad_mul_either_zero(B, uc, ir_broadcast(B, v, &t));
}
/* The products below hold the adjoint g, which may be zero where the other
 * factor is infinite (the branch a select did not pick), or be infinite where
 * the other factor is zero: in every rank combination a term with a zero
 * factor is left out (matmulz, ad_mul_either_zero), as docs/language.md 4.4
 * promises. */
/* x with its last two axes swapped (a view: the GEMM kernel reads it
 * transposed in place). */
static Inst *swap_last2(AD *a, Inst *x) {
  int perm[IR_MAX_RANK], r = x->type.rank;
  for (int k = 0; k < r; k++)
    perm[k] = k;
  perm[r - 2] = r - 1;
  perm[r - 1] = r - 2;
  return ir_transpose(B, x, perm);
}
/* A batched product (ranks 2 and up): each operand's adjoint is one GEMM per
 * batch element, and where the operand's batch axis was broadcast, those
 * GEMMs accumulate into the same matrix (matmulz_into): the sum over the
 * broadcast axis costs no temporary. A product that itself summed over batch
 * axes (a matmulz of a gradient, differentiated again) spreads g back over
 * them first. */
static void ad_batched_matmul(AD *a, Inst *y, Inst *g) {
  Inst *l = X, *r = Y2;
  Type full;
  char err[256];
  if (!ir_matmul_type(a->b.m, &l->type, &r->type, &full, err, sizeof err))
    die("batched matmul: %s", err);
  full.dtype = g->type.dtype;
  g = ir_broadcast(B, g, &full);
  if (l->active)
    contribute(a, l, ir_matmulz_into(B, g, swap_last2(a, r), &l->type));
  if (r->active)
    contribute(a, r, ir_matmulz_into(B, swap_last2(a, l), g, &r->type));
}
static void ad_matmul(AD *a, Inst *y, Inst *g) {
  static const int T[2] = {1, 0};
  Inst *l = X, *r = Y2;
  int rl = l->type.rank, rr = r->type.rank;
  if (rl > 2 || rr > 2) {
    ad_batched_matmul(a, y, g);
    return;
  }
  if (l->active) {
    Inst *d;
    if (rl == 2 && rr == 2)
      d = ir_matmulz(B, g, ir_transpose(B, r, T));
    else if (rl == 2)
      d = outer(a, g, r);
    else if (rr == 2)
      d = ir_matmulz(B, r, g);
    else
      d = ad_mul_either_zero(B, ir_broadcast(B, g, &r->type), r);
    contribute(a, l, d);
  }
  if (r->active) {
    Inst *d;
    if (rl == 2)
      d = ir_matmulz(B, ir_transpose(B, l, T), g);
    else if (rr == 2)
      d = outer(a, l, g);
    else
      d = ad_mul_either_zero(B, ir_broadcast(B, g, &l->type), l);
    contribute(a, r, d);
  }
}
/* Indexing: each op is linear in its data, and its adjoint is its
 * partner: gather <-> scatter_add, take_along <-> scatter_along, slice <->
 * unslice, with the same index and axis. A scatter accumulates repeated
 * indices; an index has no adjoint (i32). */
static void partner(AD *a, Inst *y, Inst *g, Op op) {
  contribute(a, X, ir_index_op(B, op, g, Y2, ad_axis_of(y), &X->type));
}
static void ad_gather(AD *a, Inst *y, Inst *g) { partner(a, y, g, OP_scatter_add); }
static void ad_scatter_add(AD *a, Inst *y, Inst *g) { partner(a, y, g, OP_gather); }
static void ad_take_along(AD *a, Inst *y, Inst *g) { partner(a, y, g, OP_scatter_along); }
static void ad_scatter_along(AD *a, Inst *y, Inst *g) { partner(a, y, g, OP_take_along); }
static void ad_slice(AD *a, Inst *y, Inst *g) { partner(a, y, g, OP_unslice); }
static void ad_unslice(AD *a, Inst *y, Inst *g) { partner(a, y, g, OP_slice); }
/* Indexed assignment: u's adjoint is g read at the positions; the old
 * value's is g with them zeroed for update (an overwritten position gets
 * no gradient from its old value, section 7), g itself for update_add. */
static void ad_update(AD *a, Inst *y, Inst *g) { /* g read before it is updated: in place */
  Inst *const *ix = y->args + 2;
  if (Y2->active)
    contribute(a, Y2, ir_positions(B, g, ix, y->axes, &Y2->type));
  if (X->active)
    contribute(a, X, ir_update(B, OP_update, g, K(a, Y2, 0), ix, y->axes));
}
static void ad_update_add(AD *a, Inst *y, Inst *g) {
  contribute(a, X, g);
  if (Y2->active)
    contribute(a, Y2, ir_positions(B, g, y->args + 2, y->axes, &Y2->type));
}
#undef X
#undef Y2
#undef B

static Rule *const rules[OP_COUNT] = {
#define OP(name, arity, shape, adjoint, tangent, flags) [OP_##name] = adjoint,
#include "../ir/ops.def"
#undef OP
};

bool ad_propagates(Op op) { return rules[op] != ad_zero && rules[op] != ad_none; }

/* The reverse sweep over a block: each active value's adjoint, last first.
 * A region op gets the adjoint of its results from its projs (which come
 * after it, so they are done) and builds its own adjoint region. */
void ad_reverse_block(AD *a, Inst *last) {
  for (Inst *i = last; i; i = i->prev) {
    if (!i->active)
      continue;
    a->b.loc = i->loc;
    if (i->nregions) {
      ad_reverse_region(a, i);
      continue;
    }
    Inst *g = ptrmap_get(&a->adj, i);
    if (g)
      rules[i->op](a, i, g);
  }
}

void ad_clear_aux(Inst *first) {
  for (Inst *i = first; i; i = i->next) {
    i->aux = NULL;
    for (int r = 0; r < i->nregions; r++) {
      for (int k = 0; k < i->regions[r].nparams; k++)
        i->regions[r].params[k]->aux = NULL;
      ad_clear_aux(i->regions[r].first);
    }
  }
}

Function *ad_build(Module *m, Function *f, const char *name, const AdSpec *spec) {
  Function *g = ir_func_new(m, name);
  g->loc = f->loc;
  int nr = f->nresults;
  bool vjp = spec->seeds || nr > 1 || f->results[0]->type.rank > 0;
  bool with_value = spec->with_value;
  g->kind = vjp ? FN_VJP : FN_GRAD;
  bool *diff = xmalloc(sizeof(bool) * (size_t)(f->nparams + nr + 1));
  for (int k = 0; k < f->nparams; k++) {
    Inst *p = f->params[k];
    diff[k] = (spec->only_wrt >= 0 ? k == spec->only_wrt : !p->is_const) &&
              ir_is_float(p->type.dtype);
    p->aux = ir_add_param(m, g, p->name, p->type, p->is_const);
  }
  /* One cotangent per float result: `seed`, or seed0..seedm numbered by
   * result position when there are several (spec section 9). */
  Inst **seeds = xmalloc(sizeof(Inst *) * (size_t)nr);
  for (int r = 0; r < nr; r++) {
    seeds[r] = NULL;
    if (!vjp || !ir_is_float(f->results[r]->type.dtype))
      continue;
    const char *want = nr == 1 ? "seed" : arena_printf(m->arena, "seed%d", r);
    seeds[r] = ir_add_param(m, g, ir_unique_name(m, g, want, "_in"), f->results[r]->type,
                            !spec->seeds);
    diff[g->nparams - 1] = false;
  }

  /* The primal sweep: a copy of f. */
  AD a = {.b = {m, g, NULL, f->loc, NULL}, .f = g, .at = spec->at, .export_of = spec->export_of};
  for (Inst *i = f->first; i; i = i->next) {
    a.b.loc = i->loc;
    ir_copy_inst(&a.b, i, NULL, NULL);
  }
  Inst **values = xmalloc(sizeof(Inst *) * (size_t)nr);
  const char **outs = xmalloc(sizeof(char *) * (size_t)nr);
  for (int r = 0; r < nr; r++) { /* names unique among g's parameters too */
    values[r] = f->results[r]->aux;
    outs[r] = ir_unique_name(m, g, f->result_names[r], "_out");
  }
  ir_set_results(m, g, values, outs, nr);

  ad_activity(g, diff);

  /* The adjoint sweep, appended after the primal one. */
  Inst *last = g->last;
  for (int r = 0; r < nr; r++)
    if (values[r]->active)
      contribute(&a, values[r], vjp ? seeds[r] : ir_const(&a.b, values[r]->type.dtype, 1));
  ad_reverse_block(&a, last);
  /* The adjoint sweep fails only where the primal one did (the partner of
   * an indexing op checks the same indices; recomputations repeat them):
   * nothing of it needs to stay for its checks alone (passes/dce.c). */
  for (Inst *i = last ? last->next : g->first; i; i = ir_walk_next(i))
    i->rechecks = true;

  int nres = 0;
  Inst **res = xmalloc(sizeof(Inst *) * (size_t)(f->nparams + nr + 1));
  const char **names = xmalloc(sizeof(char *) * (size_t)(f->nparams + nr + 1));
  for (int r = 0; with_value && r < nr; r++) {
    res[nres] = values[r];
    names[nres++] = g->result_names[r];
  }
  for (int k = 0; k < f->nparams; k++) {
    if (!diff[k])
      continue;
    Inst *p = g->params[k];
    Inst *d = ptrmap_get(&a.adj, p);
    if (!d)
      d = ir_const_like(&a.b, &p->type, 0);
    res[nres] = d;
    names[nres] = ir_result_name(m, g, names, nres, arena_printf(m->arena, "d_%s", p->name));
    nres++;
  }
  ir_set_results(m, g, res, names, nres);
  for (int k = 0; k < f->nparams; k++)
    f->params[k]->aux = NULL;
  ad_clear_aux(f->first);
  free(res);
  free(names);
  free(values);
  free(outs);
  free(seeds);
  free(diff);
  ptrmap_free(&a.adj);
  return g;
}
