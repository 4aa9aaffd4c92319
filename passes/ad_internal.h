/* What passes/ad.c (the rules, the sweep) and passes/ad_region.c (the
 * adjoints of loops and branches) share, and the helpers the tangent rules
 * (passes/tangent.c) take from the adjoint rules so that both directions
 * compute the same local derivatives. */
#ifndef SGC_AD_INTERNAL_H
#define SGC_AD_INTERNAL_H

#include "passes.h"

typedef struct AD {
  Builder b;
  PtrMap adj;        /* value -> its adjoint so far */
  Function *f;       /* the function being built */
  Region *cur;       /* the adjoint region being filled; NULL: the body */
  PtrMap *captured;  /* in a region: adjoints of values defined outside it */
  Loc at;            /* the transform being built, for errors (line 0: none) */
  const char *export_of; /* the export whose --exports derivative this is, or NULL */
} AD;

/* Add d to the adjoint of x (nothing if x is inactive). */
void ad_contribute(AD *a, Inst *x, Inst *d);
/* The reverse sweep over the block ending at `last`, at a's position. */
void ad_reverse_block(AD *a, Inst *last);
/* The adjoint of a for, while or if whose results' adjoints are known. */
void ad_reverse_region(AD *a, Inst *op);
/* aux = NULL for a block, its regions' arguments and bodies. */
void ad_clear_aux(Inst *first);

/* u * v, or exactly 0 where v is zero (even for an infinite or NaN u):
 * a product of two values that may each be a zero (co)tangent while the
 * other is infinite. */
Inst *ad_mul_either_zero(Builder *b, Inst *u, Inst *v);
/* v, a reduction of a value of type x over `axes`, with those axes kept
 * as 1s and broadcast back to x's shape (in v's dtype). */
Inst *ad_spread(Builder *b, Inst *v, const Type *x, unsigned axes);
/* dy/d(operand k) for the ops whose rules are ad_partials/tg_partials in
 * ir/ops.def (the v3 functions): both directions take their local
 * derivatives from here. */
Inst *ad_partial(Builder *b, Inst *y, int k);
/* The one axis an F_AXIS op works along. */
static inline int ad_axis_of(const Inst *y) { return __builtin_ctz(y->axes); }
/* prod_others' derivative along v: prod_pairs_lo + prod_pairs_hi of (x, v)
 * (both directions). */
Inst *ad_prod_pairs_sum(Builder *b, Inst *x, Inst *v, int axis);
/* prod's third derivative is not implemented: report it at loc (both
 * directions reach it, prod_pairs having no derivative along x). */
void ad_prod_third_order(Module *m, Loc loc);

#endif
