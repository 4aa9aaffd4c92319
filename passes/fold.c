/* Constant folding: an elementwise op whose operands are literals (or
 * literals broadcast) becomes a literal (broadcast to its shape); so does a
 * `count` of literal sizes and a reshape, transpose or broadcast of a
 * broadcast literal. f32 results are computed in double and rounded once,
 * which is exact for + - * / and sqrt and within an ulp of the generated
 * code for the transcendental functions; i32 results are exact, wrapped to
 * 32 bits as the generated code wraps (ir_fold_i32), and a division by
 * zero is left to fail at run time.
 * Requires: nothing. Keeps: every value, to rounding. */
#include <math.h>

#include "passes.h"

/* The literal x is (possibly broadcast), or NULL. */
static Inst *literal(Inst *x) {
  if (x->op == OP_broadcast)
    x = x->args[0];
  return x->op == OP_const ? x : NULL;
}

static double sigmoid(double x) { return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)); }

static bool eval(Op op, const double *a, double *r) {
  switch (op) {
  case OP_neg: *r = -a[0]; break;
  case OP_exp: *r = exp(a[0]); break;
  case OP_log: *r = log(a[0]); break;
  case OP_log1p: *r = log1p(a[0]); break;
  case OP_expm1: *r = expm1(a[0]); break;
  case OP_sqrt: *r = sqrt(a[0]); break;
  case OP_rsqrt: *r = 1 / sqrt(a[0]); break;
  case OP_square: *r = a[0] * a[0]; break;
  case OP_sin: *r = sin(a[0]); break;
  case OP_cos: *r = cos(a[0]); break;
  case OP_tanh: *r = tanh(a[0]); break;
  case OP_sigmoid: *r = sigmoid(a[0]); break;
  case OP_softplus: *r = fmax(a[0], 0) + log1p(exp(-fabs(a[0]))); break;
  case OP_relu: *r = a[0] < 0 ? 0 : a[0]; break;
  case OP_abs: *r = fabs(a[0]); break;
  case OP_sign: *r = a[0] > 0 ? 1 : a[0] < 0 ? -1 : a[0]; break;
  case OP_floor: *r = floor(a[0]); break;
  case OP_ceil: *r = ceil(a[0]); break;
  case OP_round: *r = nearbyint(a[0]); break; /* half to even */
  case OP_convert:
  case OP_stop_gradient: *r = a[0]; break;
  case OP_add: *r = a[0] + a[1]; break;
  case OP_sub: *r = a[0] - a[1]; break;
  case OP_mul: *r = a[0] * a[1]; break;
  case OP_div: *r = a[0] / a[1]; break;
  case OP_pow: *r = pow(a[0], a[1]); break;
  case OP_maximum: *r = isnan(a[0]) || isnan(a[1]) ? NAN : fmax(a[0], a[1]); break;
  case OP_minimum: *r = isnan(a[0]) || isnan(a[1]) ? NAN : fmin(a[0], a[1]); break;
  case OP_mulz: *r = a[0] == 0 ? 0 : a[0] * a[1]; break;
  case OP_mul0: *r = a[0] == 0 || a[1] == 0 ? 0 : a[0] * a[1]; break;
  default: return false;
  }
  return true;
}

static Inst *replace_by_literal(Module *m, Function *f, Inst *i, double v) {
  if (i->type.dtype == DT_F32)
    v = (float)v;
  Builder b = {m, f, i, i->loc, NULL};
  Inst *c = ir_const_like(&b, &i->type, v);
  ir_forward(i, c);
  ir_unlink(f, i);
  return c;
}

void pass_fold(Module *m) {
  for (Function *f = m->funcs; f; f = f->next)
    for (Inst *i = f->first, *next; i; i = next) {
      next = ir_walk_next(i);
      ir_resolve_args(i);
      if (i->type.dtype == DT_BOOL)
        continue;
      if (i->op == OP_count) {
        int64_t n = ir_static_numel(&i->attr);
        if (n >= 0)
          replace_by_literal(m, f, i, i->type.dtype == DT_I32 ? ir_wrap_i32((double)n) : (double)n);
        continue;
      }
      if ((i->op == OP_reshape || i->op == OP_transpose ||
           (i->op == OP_broadcast && i->args[0]->op != OP_const)) && literal(i->args[0])) {
        replace_by_literal(m, f, i, literal(i->args[0])->num);
        continue;
      }
      if (!ir_op_is(i->op, F_ELEM) || i->nargs == 0)
        continue;
      double a[3];
      bool all = true;
      for (int k = 0; k < i->nargs && all; k++) {
        Inst *l = literal(i->args[k]);
        all = l != NULL;
        if (l)
          a[k] = l->num;
      }
      double r;
      if (all && (i->type.dtype == DT_I32 ? ir_fold_i32(i->op, a, &r) : eval(i->op, a, &r)))
        replace_by_literal(m, f, i, r);
    }
  for (Function *f = m->funcs; f; f = f->next)
    ir_resolve_func(f);
}
