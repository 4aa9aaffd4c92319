/* What passes/tangent.c (the rules, the sweep) and passes/tangent_region.c
 * (the tangents of loops and branches) share. */
#ifndef SGC_TANGENT_INTERNAL_H
#define SGC_TANGENT_INTERNAL_H

#include "passes.h"

typedef struct TG {
  Builder b;   /* where the new function's code goes */
  PtrMap tan;  /* value of the source function -> its tangent (absent: zero) */
} TG;

/* The primal copy (x->aux) and the tangent of every instruction of the
 * source block starting at `first`, emitted at t's position. */
void tg_block(TG *t, Inst *first);
/* The same for a region op that tg_block found varied (or an unloop whose
 * loop was): one new region op carrying primal values and tangents; its
 * projs and theirs are mapped too. */
void tg_region(TG *t, Inst *op);
/* The tangent of source value x, or zeros of its type at t's position. */
Inst *tg_tangent_or_zero(TG *t, Inst *x);

#endif
