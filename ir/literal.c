/* What the compiler knows of a value before the program runs: integer
 * arithmetic on literals as the generated code does it (passes/fold.c folds
 * with it), and the entries of a short i32 index built from literals,
 * `arange` and integer ops (`(arange(3) + 1) % 3`, `[2, 0, 1]`), which
 * codegen turns into a table of constants instead of a computed index
 * (cg_data.c). */
#include <math.h>

#include "ir.h"

bool ir_fold_i32(Op op, const double *a, double *r) {
  /* The operand of a convert is a float of any size (i32(-1e40)), which no
   * integer type holds: it is saturated before anything reads it as one. */
  if (op == OP_convert) { /* toward zero, saturating, NaN -> 0 */
    *r = a[0] != a[0] ? 0 : a[0] >= 2147483647.0 ? 2147483647.0
                      : a[0] <= -2147483648.0 ? -2147483648.0 : trunc(a[0]);
    return true;
  }
  int64_t x = (int64_t)a[0], y = 0;
  switch (op) {
  case OP_neg: *r = ir_wrap_i32((double)-x); return true;
  case OP_abs: *r = ir_wrap_i32((double)(x < 0 ? -x : x)); return true;
  case OP_sign: *r = (double)((x > 0) - (x < 0)); return true;
  case OP_stop_gradient: *r = a[0]; return true;
  default: break;
  }
  if (ir_ops[op].arity != 2)
    return false;
  y = (int64_t)a[1];
  switch (op) {
  case OP_add: *r = ir_wrap_i32((double)(x + y)); return true;
  case OP_sub: *r = ir_wrap_i32((double)(x - y)); return true;
  case OP_mul: *r = ir_wrap_i32((double)(x * y)); return true;
  case OP_maximum: *r = (double)(x > y ? x : y); return true;
  case OP_minimum: *r = (double)(x < y ? x : y); return true;
  case OP_idiv:
  case OP_mod: {
    if (y == 0)
      return false;
    int64_t q = x / y;
    if (q * y != x && ((x < 0) != (y < 0)))
      q--;
    *r = ir_wrap_i32((double)(op == OP_idiv ? q : x - q * y));
    return true;
  }
  default: return false;
  }
}

/* Entry p of v, an i32 value of at most one axis whose entries are known;
 * false if they are not (a parameter, a division by zero, ...) or when
 * *budget operands have been visited: shared operands are visited once per
 * use, so an index of many shared steps would cost exponential time. */
static bool entry(const Inst *v, int64_t p, double *r, int *budget) {
  if (v->type.dtype != DT_I32 || v->type.rank > 1 || --*budget < 0)
    return false;
  switch (v->op) {
  case OP_const: *r = v->num; return true;
  case OP_arange: *r = (double)p; return true;
  case OP_broadcast: /* from a scalar, or the same axis */
  case OP_reshape:
    return entry(v->args[0], v->args[0]->type.rank == 0 ? 0 : p, r, budget);
  case OP_concat: {
    for (int k = 0; k < v->nargs; k++) {
      const Dim *d = &v->args[k]->type.dim[0];
      if (d->sym >= 0)
        return false;
      if (p < d->size)
        return entry(v->args[k], p, r, budget);
      p -= d->size;
    }
    return false;
  }
  default: break;
  }
  if (!ir_op_is(v->op, F_ELEM) || v->nargs == 0 || v->nargs > 2)
    return false;
  double a[2];
  for (int k = 0; k < v->nargs; k++)
    if (!entry(v->args[k], v->args[k]->type.rank == 0 ? 0 : p, &a[k], budget))
      return false;
  return ir_fold_i32(v->op, a, r);
}

int ir_index_table(const Inst *ix, int64_t *t, int cap) {
  if (ix->type.dtype != DT_I32 || ix->type.rank != 1 || ix->type.dim[0].sym >= 0)
    return -1;
  int64_t n = ix->type.dim[0].size;
  if (n > cap)
    return -1;
  int budget = 4096; /* operands visited, for all the entries */
  for (int64_t p = 0; p < n; p++) {
    double r;
    if (!entry(ix, p, &r, &budget))
      return -1;
    t[p] = (int64_t)r;
  }
  return (int)n;
}
