/* Calls (spec sections 4, 6 and 6b): built-in operations by name
 * (reductions, shape operations, constructors, random numbers), and calls
 * of functions with their sizes unified argument by argument: user
 * functions and function expressions, the transforms grad, jvp, vjp,
 * jacobian and hessian of a function expression (a derived function,
 * ir/derive.c): jvp(grad(f, wrt=x), wrt=x)(args...). */
#include "lower_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- builtins ---- */

static const struct Builtin builtins[] = {
    {"exp", B_UNARY, OP_exp},         {"log", B_UNARY, OP_log},
    {"log1p", B_UNARY, OP_log1p},     {"expm1", B_UNARY, OP_expm1},
    {"sqrt", B_UNARY, OP_sqrt},       {"rsqrt", B_UNARY, OP_rsqrt},
    {"square", B_UNARY, OP_square},   {"sin", B_UNARY, OP_sin},
    {"cos", B_UNARY, OP_cos},         {"tanh", B_UNARY, OP_tanh},
    {"sigmoid", B_UNARY, OP_sigmoid}, {"softplus", B_UNARY, OP_softplus},
    {"relu", B_UNARY, OP_relu},       {"abs", B_UNARY, OP_abs},
    {"sign", B_UNARY, OP_sign},       {"floor", B_UNARY, OP_floor},
    {"ceil", B_UNARY, OP_ceil},       {"round", B_UNARY, OP_round},
    {"pow", B_BINARY, OP_pow},        {"maximum", B_BINARY, OP_maximum},
    {"minimum", B_BINARY, OP_minimum},
    {"sum", B_REDUCE, OP_sum},        {"max", B_REDUCE, OP_max},
    {"min", B_REDUCE, OP_min},        {"mean", B_MEAN, OP_sum},
    {"select", B_SELECT, OP_select},  {"transpose", B_TRANSPOSE, OP_transpose},
    {"reshape", B_RESHAPE, OP_reshape}, {"broadcast", B_BROADCAST, OP_broadcast},
    {"zeros_like", B_ZEROS, OP_const}, {"ones_like", B_ONES, OP_const},
    {"stop_gradient", B_STOP, OP_stop_gradient},
    {"grad", B_TRANSFORM, OP_call},   {"jvp", B_TRANSFORM, OP_call},
    {"vjp", B_TRANSFORM, OP_call},    {"jacobian", B_TRANSFORM, OP_call},
    {"hessian", B_TRANSFORM, OP_call},
    {"take", B_TAKE, OP_gather}, {"take_along_axis", B_TAKE_ALONG, OP_take_along},
    {"zeros", B_MAKE, OP_const},      {"ones", B_MAKE, OP_const},
    {"full", B_FULL, OP_broadcast},   {"arange", B_ARANGE, OP_arange},
    {"argmax", B_ARG, OP_argmax},     {"argmin", B_ARG, OP_argmin},
    {"uniform", B_RANDOM, OP_uniform}, {"normal", B_RANDOM, OP_normal},
    {"split", B_SPLIT, OP_split},
    /* v3: real ops of their own (ops.def) */
    {"tan", B_UNARY, OP_tan},         {"asin", B_UNARY, OP_asin},
    {"acos", B_UNARY, OP_acos},       {"atan", B_UNARY, OP_atan},
    {"sinh", B_UNARY, OP_sinh},       {"cosh", B_UNARY, OP_cosh},
    {"log2", B_UNARY, OP_log2},       {"log10", B_UNARY, OP_log10},
    {"erf", B_UNARY, OP_erf},         {"lgamma", B_UNARY, OP_lgamma},
    {"atan2", B_BINARY, OP_atan2},
    {"prod", B_REDUCE, OP_prod},
    {"cumsum", B_SCAN, OP_cumsum},    {"concat", B_CONCAT, OP_concat},
    /* v3: the spec's formulas of other ops (lower_formula.c) */
    {"logsumexp", B_LOGSUMEXP, OP_max}, {"softmax", B_SOFTMAX, OP_max},
    {"log_softmax", B_LOG_SOFTMAX, OP_max}, {"clip", B_CLIP, OP_select},
    {"stack", B_STACK, OP_concat},
};

const struct Builtin *lw_find_builtin(const char *name) {
  for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
    if (strcmp(builtins[i].name, name) == 0)
      return &builtins[i];
  return NULL;
}

static Val lower_ctor(Ctx *c, Expr *call, const struct Builtin *bi);

/* ---- names close to a known one ---- */

/* Levenshtein distance, or more than `cap` (names are short; a long one
 * stops early). */
static int edit_distance(const char *a, const char *b, int cap) {
  int la = (int)strlen(a), lb = (int)strlen(b);
  if (la - lb > cap || lb - la > cap || lb > 63)
    return cap + 1;
  int row[64];
  for (int j = 0; j <= lb; j++)
    row[j] = j;
  for (int i = 1; i <= la; i++) {
    int diag = row[0], best = row[0] = i;
    for (int j = 1; j <= lb; j++) {
      int up = row[j];
      int v = diag + (a[i - 1] != b[j - 1]);
      v = up + 1 < v ? up + 1 : v;
      v = row[j - 1] + 1 < v ? row[j - 1] + 1 : v;
      diag = up;
      row[j] = v;
      best = v < best ? v : best;
    }
    if (best > cap)
      return cap + 1;
  }
  return row[lb];
}

/* Names from other array libraries that mean one of ours. */
static const struct { const char *theirs, *ours; } aliases[] = {
    {"where", "select"}, {"concatenate", "concat"}, {"clamp", "clip"},
};

/* The builtin or user function `name` most likely meant, or NULL: an alias,
 * else the closest name within a third of its length (at least 1). Only
 * while errors are still printed: a file of thousands of misspelled calls
 * must not cost a scan of every function for each. */
const char *lw_suggest_function(Ctx *c, const char *name) {
  int max = c->d->max_errors ? c->d->max_errors : 50;
  if (c->d->errors >= max)
    return NULL;
  for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
    if (strcmp(aliases[i].theirs, name) == 0)
      return aliases[i].ours;
  int limit = (int)strlen(name) / 3, bestd;
  bestd = (limit < 1 ? 1 : limit) + 1;
  const char *best = NULL;
  for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++) {
    int d = edit_distance(name, builtins[i].name, bestd - 1);
    if (d < bestd) {
      best = builtins[i].name;
      bestd = d;
    }
  }
  for (int i = 0; i < c->nfns; i++) {
    int d = edit_distance(name, c->fns[i].ast->name, bestd - 1);
    if (d < bestd) {
      best = c->fns[i].ast->name;
      bestd = d;
    }
  }
  return best;
}

/* ---- calls ---- */

static int count_positional(Expr *call) {
  int n = 0;
  for (Arg *a = call->args; a; a = a->next)
    n += a->kw == NULL;
  return n;
}

Arg *lw_nth_positional(Expr *call, int n) {
  for (Arg *a = call->args; a; a = a->next)
    if (!a->kw && n-- == 0)
      return a;
  return NULL;
}

/* Positional count in [lo, hi], keywords from `kws` (NULL-terminated) only,
 * no keyword twice, positionals before keywords. */
bool lw_check_arity(Ctx *c, Expr *call, const char *fname, int lo, int hi,
                        const char *const *kws) {
  bool ok = true, seen_kw = false;
  for (Arg *a = call->args; a; a = a->next) {
    if (!a->kw) {
      if (seen_kw) {
        ERR(c, a->loc, "positional argument after a keyword argument");
        ok = false;
      }
      continue;
    }
    seen_kw = true;
    bool known = false;
    for (int k = 0; kws && kws[k]; k++)
      known |= strcmp(kws[k], a->kw) == 0;
    if (!known) {
      if (kws && kws[0])
        ERR(c, a->loc, "unknown keyword argument '%s' to '%s' (it takes '%s')", a->kw, fname,
            kws[0]);
      else
        ERR(c, a->loc, "'%s' takes no keyword arguments", fname);
      ok = false;
    }
    for (Arg *b = call->args; b != a; b = b->next)
      if (b->kw && strcmp(b->kw, a->kw) == 0) {
        ERR(c, a->loc, "keyword argument '%s' given twice", a->kw);
        ok = false;
      }
  }
  int n = count_positional(call);
  if (ok && (n < lo || n > hi)) {
    if (lo == hi)
      ERR(c, call->loc, "'%s' takes %d argument%s, got %d", fname, lo, lo == 1 ? "" : "s", n);
    else
      ERR(c, call->loc, "'%s' takes %d or %d arguments, got %d", fname, lo, hi, n);
    ok = false;
  }
  return ok;
}

Arg *lw_keyword(Expr *call, const char *kw) {
  for (Arg *a = call->args; a; a = a->next)
    if (a->kw && strcmp(a->kw, kw) == 0)
      return a;
  return NULL;
}

/* A tensor-valued argument (not a shape list, not a function name). */
Val lw_value_arg(Ctx *c, Expr *e) {
  if (e->kind == EX_SHAPE) {
    ERR(c, e->loc, "a shape list like [2, n] is only valid as the shape argument of "
                   "reshape, broadcast or transpose");
    return BAD;
  }
  return lower_expr(c, e);
}

/* An integer literal, possibly negated: axis=-1. */
bool lw_int_literal(Expr *e, int64_t *out) {
  int sign = 1;
  if (e->kind == EX_NEG) {
    sign = -1;
    e = e->lhs;
  }
  if (e->kind != EX_NUMBER || e->num != floor(e->num) || fabs(e->num) > 1e9)
    return false;
  *out = sign * (int64_t)e->num;
  return true;
}

/* The `axis=K` of a call on a rank-`rank` operand, as 0..rank-1 in *k
 * (-1 when absent); false after reporting a bad one. */
bool lw_axis_arg(Ctx *c, Expr *call, int rank, int *k) {
  Arg *ax = lw_keyword(call, "axis");
  *k = -1;
  if (!ax)
    return true;
  int64_t v;
  if (!lw_int_literal(ax->value, &v)) {
    ERR(c, ax->value->loc, "axis must be an integer literal");
    return false;
  }
  if (v < -rank || v >= rank) {
    if (rank == 0)
      ERR(c, ax->value->loc, "axis %lld is out of range: the operand is a scalar", (long long)v);
    else
      ERR(c, ax->value->loc, "axis %lld is out of range for rank %d (valid: %d to %d)",
          (long long)v, rank, -rank, rank - 1);
    return false;
  }
  *k = (int)(v < 0 ? v + rank : v);
  return true;
}

/* NumPy's keepdims=True: say how to get it, with the shape it would have. */
static void keepdims_hint(Ctx *c, Expr *call, Arg *keep, const char *fname) {
  Val x = lw_value_arg(c, lw_nth_positional(call, 0)->value);
  int k;
  if (!x.v || !lw_axis_arg(c, call, x.v->type.rank, &k))
    return;
  Type kept = x.v->type;
  for (int j = 0; j < kept.rank; j++)
    if (k < 0 || j == k)
      kept.dim[j] = ir_lit(1);
  Arg *ax = lw_keyword(call, "axis");
  int64_t given = 0;
  if (ax)
    lw_int_literal(ax->value, &given);
  const char *red = !x.name ? NULL
                    : ax ? arena_printf(c->m->arena, "%s(%s, axis=%lld)", fname, x.name, (long long)given)
                         : arena_printf(c->m->arena, "%s(%s)", fname, x.name);
  if (red)
    ERR(c, keep->loc, "'%s' takes no 'keepdims'; to keep the reduced axis with size 1, reshape the "
                      "result: reshape(%s, %s)", fname, red, lw_dstr(c, &kept));
  else
    ERR(c, keep->loc, "'%s' takes no 'keepdims'; to keep the reduced axis with size 1, reshape the "
                      "result to %s", fname, lw_dstr(c, &kept));
}

/* The operand of a reduction along an optional axis, f(x, axis=K): one
 * value, not bool (BAD after saying why). */
Val lw_reduce_operand(Ctx *c, Expr *call, const struct Builtin *bi) {
  static const char *const kws[] = {"axis", NULL};
  Arg *keep = lw_keyword(call, "keepdims");
  if (keep && count_positional(call) == 1) {
    keepdims_hint(c, call, keep, bi->name);
    return BAD;
  }
  if (!lw_check_arity(c, call, bi->name, 1, 1, kws))
    return BAD;
  Val x = lw_value_arg(c, lw_nth_positional(call, 0)->value);
  if (x.v && !lw_not_bool(c, x, call->loc))
    return BAD;
  return x;
}

static Val lower_reduce(Ctx *c, Expr *call, const struct Builtin *bi) {
  Val x = lw_reduce_operand(c, call, bi);
  if (!x.v)
    return BAD;
  if ((bi->kind == B_MEAN || !ir_op_is(bi->op, F_INT)) &&
      !lw_need_float(c, x, call->loc, arena_printf(c->m->arena, "'%s'", bi->name)))
    return BAD;
  int rank = x.v->type.rank, k;
  if (!lw_axis_arg(c, call, rank, &k))
    return BAD;
  unsigned axes = k < 0 ? (1u << rank) - 1 : 1u << k;
  if (rank == 0)
    return x;
  if (ir_op_is(bi->op, F_AXIS) && k < 0) { /* one axis: of x flattened */
    x.v = lw_flatten(c, x.v, call->loc);
    if (!x.v)
      return BAD;
    axes = 1u;
  }
  Inst *r = ir_reduce(&c->b, bi->op, x.v, axes);
  if (bi->kind == B_MEAN) {
    Inst *n = ir_count(&c->b, &x.v->type, axes, x.v->type.dtype);
    r = ir_binary(&c->b, OP_div, r, ir_broadcast(&c->b, n, &r->type));
  }
  return (Val){.v = r, .weak = x.weak, .integral = x.integral && bi->kind != B_MEAN, .not_arith = true};
}

/* x as a vector of all its elements, row-major (NULL after an error). */
Inst *lw_flatten(Ctx *c, Inst *v, Loc loc) {
  if (v->type.rank == 1)
    return v;
  SizePoly n = ir_poly_const(1);
  for (int j = 0; j < v->type.rank; j++) {
    SizePoly d = ir_poly_of(c->m, v->type.dim[j]);
    if (!ir_poly_mul(c->m, &n, &d, &n)) {
      ERR(c, loc, "the element count of this tensor is too large a size expression");
      return NULL;
    }
  }
  Type flat = ir_scalar(v->type.dtype);
  flat.rank = 1;
  flat.dim[0] = ir_poly_dim(c->m, &n);
  return ir_reshape(&c->b, v, &flat);
}

/* reshape(x, [dims]) / broadcast(x, [dims]) / transpose(x, [perm]) */
static bool shape_list(Ctx *c, Arg *a, const char *fname, Expr **out) {
  if (a->value->kind != EX_SHAPE) {
    ERR(c, a->value->loc, "the second argument of '%s' must be a list like [2, n]", fname);
    return false;
  }
  *out = a->value;
  return true;
}

static Val lower_shape_op(Ctx *c, Expr *call, const struct Builtin *bi) {
  bool is_t = bi->kind == B_TRANSPOSE;
  if (!lw_check_arity(c, call, bi->name, is_t ? 1 : 2, 2, NULL))
    return BAD;
  Val x = lw_value_arg(c, lw_nth_positional(call, 0)->value);
  if (!x.v || !lw_not_bool(c, x, call->loc))
    return BAD;
  const Type *xt = &x.v->type;
  Expr *list = NULL;
  if (count_positional(call) == 2 && !shape_list(c, lw_nth_positional(call, 1), bi->name, &list))
    return BAD;
  if (is_t) {
    int perm[IR_MAX_RANK];
    if (!list) {
      for (int k = 0; k < xt->rank; k++)
        perm[k] = xt->rank - 1 - k;
    } else {
      if (list->ndims != xt->rank) {
        ERR(c, list->loc, "transpose of a rank-%d tensor needs %d axes, got %d", xt->rank,
            xt->rank, list->ndims);
        return BAD;
      }
      unsigned seen = 0;
      int k = 0;
      for (AstDim *d = list->dims; d; d = d->next, k++) {
        if (d->name || d->op || d->bad || d->size >= xt->rank || (seen & (1u << d->size))) {
          ERR(c, d->loc, "transpose needs a permutation of the axes 0 to %d", xt->rank - 1);
          return BAD;
        }
        seen |= 1u << d->size;
        perm[k] = (int)d->size;
      }
    }
    return (Val){.v = xt->rank < 2 ? x.v : ir_transpose(&c->b, x.v, perm), .weak = x.weak, .integral = x.integral,
                 .not_arith = true};
  }
  Type to = ir_scalar(xt->dtype);
  if (!lower_dims(c, list->dims, list->ndims, list->loc, false, &to))
    return BAD;
  if (bi->kind == B_RESHAPE) {
    if (!ir_reshape_ok(c->m, xt, &to)) {
      ERR(c, call->loc, "cannot reshape %s to %s: the number of elements differs", lw_dstr(c, xt),
          lw_dstr(c, &to));
      return BAD;
    }
    return (Val){.v = ir_reshape(&c->b, x.v, &to), .weak = x.weak, .integral = x.integral, .not_arith = true};
  }
  if (!ir_can_broadcast_to(xt, &to)) {
    ERR(c, call->loc, "cannot broadcast %s to %s", lw_dstr(c, xt), lw_dstr(c, &to));
    return BAD;
  }
  return (Val){.v = ir_broadcast(&c->b, x.v, &to), .weak = x.weak, .integral = x.integral, .not_arith = true};
}

/* Bind the callee's sizes to the caller's, argument by argument. */
static bool unify_call(Ctx *c, Expr *call, Function *callee, Val *args, Dim *map) {
  const char *cname = ir_func_display(c->m, callee);
  for (int s = 0; s < c->m->nsyms; s++)
    map[s] = (Dim){-1, -2}; /* unbound */
  bool ok = true;
  int *binder = xmalloc(sizeof(int) * (size_t)(c->m->nsyms + 1));
  for (int k = 0; k < callee->nparams; k++) {
    Inst *p = callee->params[k];
    Loc loc = lw_nth_positional(call, k)->value->loc;
    if (!args[k].v || !lw_not_bool(c, args[k], loc)) {
      ok = false;
      continue;
    }
    if (!lw_weak_fits(c, args[k], p->type.dtype, loc)) {
      ok = false;
      continue;
    }
    args[k] = lw_concrete(c, args[k], p->type.dtype);
    const Type *at = &args[k].v->type;
    if (at->dtype != p->type.dtype) {
      ERR(c, loc, "argument '%s' of '%s' must be %s, got %s; convert it with %s(...)", p->name,
          cname, ir_dtype_name(p->type.dtype), ir_dtype_name(at->dtype),
          ir_dtype_name(p->type.dtype));
      ok = false;
      continue;
    }
    bool fits = at->rank == p->type.rank;
    int bad = -1; /* the dimension that does not fit */
    for (int j = 0; fits && j < at->rank; j++) {
      Dim want = p->type.dim[j];
      if (want.sym < 0)
        fits = ir_dim_eq(want, at->dim[j]);
      else if (map[want.sym].sym == -2) {
        map[want.sym] = at->dim[j];
        binder[want.sym] = k;
      } else
        fits = ir_dim_eq(map[want.sym], at->dim[j]);
      if (!fits)
        bad = j;
    }
    if (!fits) {
      char buf[512];
      const char *with = "", *hint = "";
      if (bad >= 0) {
        Dim want = p->type.dim[bad], got = at->dim[bad];
        Dim other = want.sym >= 0 ? map[want.sym] : want;
        if (want.sym >= 0) {
          Type one = ir_scalar(DT_F32);
          one.rank = 1;
          one.dim[0] = other;
          char ob[128];
          ir_dims_str(c->m, &one, ob, sizeof ob);
          ob[strlen(ob) - 1] = 0;
          with = arena_printf(c->m->arena, " with %s = %s (bound by '%s')", c->m->syms[want.sym],
                              ob + 1, callee->params[binder[want.sym]]->name);
        }
        if (other.sym >= 0 || got.sym >= 0)
          hint = " (sizes with different names are never assumed equal)";
      }
      ERR(c, loc, "argument '%s' of '%s' has shape %s, which does not match %s%s%s", p->name,
          cname, lw_dstr(c, at), ir_dims_str(c->m, &p->type, buf, sizeof buf), with, hint);
      ok = false;
    }
  }
  free(binder);
  return ok;
}

static Type subst_type(Module *m, const Type *t, const Dim *map) {
  Type r = *t;
  for (int j = 0; j < t->rank; j++)
    if (!ir_subst_dim(m, t->dim[j], map, &r.dim[j]))
      die("size expression too large after substitution");
  return r;
}

/* ---- function expressions (spec 4 and 6b, v3) ---- */

static DeriveKind transform_kind(const char *name) {
  for (int k = 1; k < DV_COUNT; k++)
    if (strcmp(ir_derive_names[k], name) == 0)
      return (DeriveKind)k;
  return DV_NONE;
}

/* A transform applied to arguments: grad(f, wrt=x)(args). */
static bool is_transform_call(const Expr *e) {
  return e->kind == EX_CALL && e->callee->kind == EX_NAME && transform_kind(e->callee->name);
}

/* callee(args), one `call` per result wanted (result k is call {result=k};
 * inlining makes them one copy again, through CSE), into outs[0..nouts). */
bool lower_user_call_n(Ctx *c, Expr *call, Function *callee, Val *outs, int nouts) {
  const char *cname = ir_func_display(c->m, callee);
  /* the call's place: the function's name, or the transform's (errors in
   * building a derivative point there) */
  Loc at = is_transform_call(call->callee) ? call->callee->callee->loc : call->callee->loc;
  int n = callee->nparams;
  if (!lw_check_arity(c, call, cname, n, n, NULL))
    return false;
  Val *args = ARENA_ARRAY(c->m->arena, Val, n > 0 ? n : 1);
  bool ok = true;
  for (int k = 0; k < n; k++) {
    args[k] = lw_value_arg(c, lw_nth_positional(call, k)->value);
    ok &= args[k].v != NULL;
  }
  Dim *map = ARENA_ARRAY(c->m->arena, Dim, c->m->nsyms + 1);
  if (!ok || !unify_call(c, call, callee, args, map))
    return false;
  Inst **vs = ARENA_ARRAY(c->m->arena, Inst *, n > 0 ? n : 1);
  for (int k = 0; k < n; k++)
    vs[k] = args[k].v;
  c->b.loc = at;
  for (int r = 0; r < nouts; r++) {
    Type t = subst_type(c->m, &callee->results[r]->type, map);
    Inst *i = ir_new_inst(&c->b, OP_call, t, vs, n);
    i->callee = callee;
    i->wrt = r;
    outs[r] = (Val){.v = i, .weak = false};
  }
  return true;
}

/* The derived function of a transform `t(fexpr, wrt=p)`, or NULL after an
 * error (or quietly, when what it transforms had one already). */
static Function *lower_transform(Ctx *c, Expr *t) {
  const char *tname = t->callee->name;
  static const char *const kws[] = {"wrt", NULL};
  if (!lw_check_arity(c, t, tname, 1, 1, kws))
    return NULL;
  Arg *w = lw_keyword(t, "wrt");
  Expr *fe = lw_nth_positional(t, 0)->value;
  if (!w) {
    ERR(c, t->loc, "%s needs the parameter to differentiate with respect to: %s(f, wrt=x)",
        tname, tname);
    return NULL;
  }
  Function *f = lw_function_expr(c, fe, tname);
  if (!f)
    return NULL;
  const char *fname = ir_func_display(c->m, f);
  if (w->value->kind != EX_NAME) {
    ERR(c, w->value->loc, "wrt= must name a parameter of '%s'", fname);
    return NULL;
  }
  int k = 0;
  while (k < f->nparams && strcmp(f->params[k]->name, w->value->name) != 0)
    k++;
  if (k == f->nparams) {
    ERR(c, w->value->loc, "'%s' has no parameter named '%s'", fname, w->value->name);
    return NULL;
  }
  DeriveKind kind = transform_kind(tname);
  char err[512];
  Function *d = ir_derive(c->m, kind, f, k, t->callee->loc, err, sizeof err);
  if (!d) { /* about the parameter (const, i32) or about the function */
    Inst *p = f->params[k];
    ERR(c, p->is_const || !ir_is_float(p->type.dtype) ? w->value->loc : fe->loc, "%s", err);
  }
  return d;
}

Function *lw_function_expr(Ctx *c, Expr *e, const char *role) {
  if (is_transform_call(e))
    return lower_transform(c, e);
  FnInfo *fn = e->kind == EX_NAME ? lw_find_fn(c, e->name) : NULL;
  if (!fn) {
    ERR(c, e->loc, "the first argument of %s must be a function: its name, or a transform of "
                   "one like grad(f, wrt=x)", role);
    return NULL;
  }
  return fn->sig_ok ? fn->ir : NULL;
}

/* The function a call's callee names, for f(args) and grad(f, wrt=x)(args);
 * NULL (quietly) for anything else, and after an error (*bad set). */
Function *lw_callee(Ctx *c, Expr *callee, bool *bad) {
  *bad = false;
  if (is_transform_call(callee)) {
    Function *f = lower_transform(c, callee);
    *bad = !f;
    return f;
  }
  FnInfo *fn = callee->kind == EX_NAME ? lw_find_fn(c, callee->name) : NULL;
  if (fn && !fn->sig_ok)
    *bad = true;
  return fn && fn->sig_ok ? fn->ir : NULL;
}

static Val lower_user_call(Ctx *c, Expr *call, Function *callee) {
  if (callee->nresults > 1) {
    const char *name = ir_func_display(c->m, callee);
    ERR(c, call->loc, "'%s' returns %d results; bind them with let (a, b) = %s(...)", name,
        callee->nresults, name);
    return BAD;
  }
  Val v = BAD;
  if (!lower_user_call_n(c, call, callee, &v, 1))
    return BAD;
  return v;
}

Val lower_call(Ctx *c, Expr *e) {
  Expr *callee = e->callee;
  bool bad;
  Function *fn = lw_callee(c, callee, &bad);
  if (bad)
    return BAD;
  if (fn)
    return lower_user_call(c, e, fn);
  if (callee->kind == EX_DTYPE) {
    const char *name = lw_dtype_word(callee->dtype);
    if (callee->dtype == AST_BOOL) {
      ERR(c, callee->loc, "there is no conversion to bool; compare instead, like x != 0");
      return BAD;
    }
    if (!lw_check_arity(c, e, name, 1, 1, NULL))
      return BAD;
    Val x = lw_value_arg(c, lw_nth_positional(e, 0)->value);
    if (!x.v)
      return BAD;
    DType dt = (DType)callee->dtype;
    /* i32(...) of a literal saturates like any cast (a weak value is held
     * in f64), rather than wrap as an implicit i32 literal would. */
    if (x.weak && dt != DT_I32)
      return lw_concrete(c, x, dt);
    return (Val){.v = ir_convert(&c->b, x.v, dt), .weak = false};
  }
  if (callee->kind != EX_NAME) {
    ERR(c, callee->loc, "only functions can be called");
    return BAD;
  }
  const char *name = callee->name;
  const struct Builtin *bi = lw_find_builtin(name);
  if (!bi) {
    if (lw_lookup(c, name)) {
      ERR(c, callee->loc, "'%s' is a value, not a function", name);
      return BAD;
    }
    const char *near = lw_suggest_function(c, name);
    if (near && strcmp(near, "select") == 0 && strcmp(name, "where") == 0)
      ERR(c, callee->loc, "unknown function 'where'; did you mean 'select'? select(c, a, b) picks "
                          "a where c holds and b elsewhere");
    else if (near)
      ERR(c, callee->loc, "unknown function '%s'; did you mean '%s'?", name, near);
    else
      ERR(c, callee->loc, "unknown function '%s'", name);
    return BAD;
  }
  switch (bi->kind) {
  case B_TRANSFORM:
    ERR(c, e->loc, "%s(f, wrt=x) is a function: apply it to arguments, %s(f, wrt=x)(args...)",
        name, name);
    return BAD;
  case B_UNARY:
  case B_STOP:
  case B_ZEROS:
  case B_ONES: {
    if (!lw_check_arity(c, e, name, 1, 1, NULL))
      return BAD;
    Val x = lw_value_arg(c, lw_nth_positional(e, 0)->value);
    if (!x.v || !lw_not_bool(c, x, e->loc))
      return BAD;
    if (bi->kind == B_ZEROS || bi->kind == B_ONES)
      return (Val){.v = ir_const_like(&c->b, &x.v->type, bi->kind == B_ONES), .weak = x.weak, .integral = x.integral};
    if (bi->kind == B_STOP && x.weak)
      return x; /* a literal is a constant already */
    if (bi->kind == B_UNARY && !ir_op_is(bi->op, F_INT) &&
        !lw_need_float(c, x, e->loc, arena_printf(c->m->arena, "'%s'", name)))
      return BAD;
    /* abs and sign of integers are integers (F_INT): still able to meet an i32 */
    return (Val){.v = ir_unary(&c->b, bi->op, x.v), .weak = x.weak,
                 .integral = x.integral && ir_op_is(bi->op, F_INT), .not_arith = true};
  }
  case B_BINARY: {
    if (!lw_check_arity(c, e, name, 2, 2, NULL))
      return BAD;
    Val a = lw_value_arg(c, lw_nth_positional(e, 0)->value);
    Val b = lw_value_arg(c, lw_nth_positional(e, 1)->value);
    return lw_elementwise2(c, bi->op, a, b, e->loc, arena_printf(c->m->arena, "'%s'", name));
  }
  case B_REDUCE:
  case B_MEAN:
    return lower_reduce(c, e, bi);
  case B_SELECT: {
    if (!lw_check_arity(c, e, name, 3, 3, NULL))
      return BAD;
    Val cond = lower_expr(c, lw_nth_positional(e, 0)->value);
    Val a = lw_value_arg(c, lw_nth_positional(e, 1)->value);
    Val b = lw_value_arg(c, lw_nth_positional(e, 2)->value);
    if (!cond.v || !a.v || !b.v)
      return BAD;
    if (cond.v->type.dtype != DT_BOOL) {
      ERR(c, lw_nth_positional(e, 0)->value->loc,
          "the condition of select must be a comparison, like x > 0");
      return BAD;
    }
    if (!lw_unify_dtypes(c, &a, &b, e->loc, "select") ||
        !lw_broadcast_pair(c, &a, &b, e->loc, "select"))
      return BAD;
    bool integral = a.integral && b.integral;
    Val cv = {.v = cond.v};
    Type ct;
    char err[256];
    if (!ir_broadcast_shapes(c->m, &cv.v->type, &a.v->type, &ct, err, sizeof err)) {
      ERR(c, e->loc, "shapes %s and %s do not broadcast in select", lw_dstr(c, &cv.v->type),
          lw_dstr(c, &a.v->type));
      return BAD;
    }
    ct.dtype = DT_BOOL;
    Type vt = ct;
    vt.dtype = a.v->type.dtype;
    Inst *cb = ir_broadcast(&c->b, cv.v, &ct);
    return (Val){.v = ir_select(&c->b, cb, ir_broadcast(&c->b, a.v, &vt),
                           ir_broadcast(&c->b, b.v, &vt)), .weak = a.weak && b.weak, .integral = integral,
                 .not_arith = true};
  }
  case B_TRANSPOSE:
  case B_RESHAPE:
  case B_BROADCAST:
    return lower_shape_op(c, e, bi);
  case B_TAKE:
  case B_TAKE_ALONG:
    return lower_take(c, e, bi);
  case B_MAKE:
  case B_FULL:
  case B_ARANGE:
  case B_ARG:
  case B_RANDOM:
  case B_SPLIT:
    return lower_ctor(c, e, bi);
  case B_LOGSUMEXP:
  case B_SOFTMAX:
  case B_LOG_SOFTMAX:
  case B_SCAN:
    return lower_along(c, e, bi);
  case B_CLIP:
    return lower_clip(c, e);
  case B_CONCAT:
  case B_STACK:
    return lower_concat(c, e, bi);
  }
  die("unhandled builtin %s", name);
}

/* ---- constructors and positions (spec section 6) ---- */

/* A size written as an expression (the argument of arange, a dim of a type
 * argument `f32[n - 1]`, which the parser reads as an index expression) as
 * the AstDim the type checker takes. NULL after an error. */
static AstDim *expr_dim(Ctx *c, Expr *e) {
  AstDim *d = ARENA_NEW(c->m->arena, AstDim);
  d->loc = e->loc;
  switch (e->kind) {
  case EX_NUMBER:
    d->bad = (e->text && strpbrk(e->text, ".eE")) || e->num != floor(e->num) || e->num > 1e15;
    d->size = d->bad ? 0 : (int64_t)e->num;
    return d;
  case EX_NAME:
    if (lw_size_sym(c, e->name) < 0 && lw_lookup(c, e->name)) {
      ERR(c, e->loc, "'%s' is a value, not a size: sizes are literals, the function's size "
                     "names and size expressions of them, like n - 1", e->name);
      return NULL;
    }
    d->name = e->name;
    return d;
  case EX_BINARY:
    if (e->op == BIN_ADD || e->op == BIN_SUB || e->op == BIN_MUL) {
      d->op = e->op == BIN_ADD ? '+' : e->op == BIN_SUB ? '-' : '*';
      d->lhs = expr_dim(c, e->lhs);
      d->rhs = d->lhs ? expr_dim(c, e->rhs) : NULL;
      return d->rhs ? d : NULL;
    }
    break;
  default:
    break;
  }
  ERR(c, e->loc, "a size must be a literal, a size name or a size expression like n - 1");
  return NULL;
}

/* The type argument of a constructor: `f32` or `f32[n, h]`. */
static bool type_arg(Ctx *c, Expr *e, const char *fname, Type *t) {
  Expr *base = e->kind == EX_INDEX ? e->lhs : e;
  if (base->kind != EX_DTYPE) {
    ERR(c, e->loc, "the %s argument of '%s' must be a type, like f32[n, h] or f32%s",
        strcmp(fname, "uniform") == 0 || strcmp(fname, "normal") == 0 ? "second" : "first", fname,
        strcmp(fname, "zeros") == 0 ? "; zeros_like(x) takes a value"
        : strcmp(fname, "ones") == 0 ? "; ones_like(x) takes a value" : "");
    return false;
  }
  if (base->dtype == AST_BOOL) {
    ERR(c, base->loc, "'%s' makes f32, f64 or i32 values, not bool", fname);
    return false;
  }
  *t = ir_scalar((DType)base->dtype);
  if (e->kind != EX_INDEX)
    return true;
  AstDim *head = NULL, **tail = &head;
  for (Index *ix = e->index; ix; ix = ix->next) {
    if (ix->slice) {
      ERR(c, ix->loc, "a size must be a literal, a size name or a size expression like n - 1");
      return false;
    }
    if (!(*tail = expr_dim(c, ix->pos)))
      return false;
    tail = &(*tail)->next;
  }
  return lower_dims(c, head, e->nindex, e->loc, false, t);
}

/* argmax/argmin (x, axis=K): without an axis, of x flattened. */
static Val lower_argreduce(Ctx *c, Expr *call, const struct Builtin *bi) {
  Val x = lw_reduce_operand(c, call, bi);
  if (!x.v)
    return BAD;
  int rank = x.v->type.rank, k;
  if (!lw_axis_arg(c, call, rank, &k))
    return BAD;
  bool all = k < 0;
  k = all ? 0 : k;
  c->b.loc = call->loc;
  if (rank == 0) /* the one position of a scalar */
    return (Val){.v = ir_const(&c->b, DT_I32, 0), .weak = false};
  Inst *v = lw_concrete(c, x, DT_F32).v;
  if (all && !(v = lw_flatten(c, v, call->loc))) /* the flat row-major position */
    return BAD;
  if (ir_dim_is(v->type.dim[k], 0)) {
    ERR(c, call->loc, "'%s' along an axis of size 0 has no position", bi->name);
    return BAD;
  }
  Type t = ir_reduce_type(&v->type, 1u << k);
  t.dtype = DT_I32;
  Inst *r = ir_new_inst(&c->b, bi->op, t, &v, 1);
  r->axes = 1u << k;
  return (Val){.v = r, .weak = false};
}

/* The key of uniform, normal and split: an i32 value (a literal becomes one). */
static Inst *key_arg(Ctx *c, Expr *e, const char *fname) {
  Val k = lw_value_arg(c, e);
  if (!k.v)
    return NULL;
  if (k.weak && k.integral)
    return lw_concrete(c, k, DT_I32).v;
  if (k.weak || k.v->type.dtype != DT_I32) {
    ERR(c, e->loc, "the key of '%s' must be i32, not %s; convert it with i32(x)", fname,
        k.weak ? "a number with a '.' or an exponent" : ir_dtype_name(k.v->type.dtype));
    return NULL;
  }
  return k.v;
}

static Val lower_ctor(Ctx *c, Expr *call, const struct Builtin *bi) {
  const char *name = bi->name;
  Type t;
  switch (bi->kind) {
  case B_RANDOM: {
    if (!lw_check_arity(c, call, name, 2, 2, NULL))
      return BAD;
    Inst *key = key_arg(c, lw_nth_positional(call, 0)->value, name);
    if (!key || !type_arg(c, lw_nth_positional(call, 1)->value, name, &t))
      return BAD;
    if (!ir_is_float(t.dtype)) {
      Expr *te = lw_nth_positional(call, 1)->value;
      ERR(c, te->kind == EX_INDEX ? te->lhs->loc : te->loc, "'%s' makes f32 or f64 values, not %s",
          name, ir_dtype_name(t.dtype));
      return BAD;
    }
    c->b.loc = call->loc;
    return (Val){.v = ir_new_inst(&c->b, bi->op, t, &key, 1), .weak = false};
  }
  case B_SPLIT: {
    if (!lw_check_arity(c, call, name, 2, 2, NULL))
      return BAD;
    Inst *key = key_arg(c, lw_nth_positional(call, 0)->value, name);
    Expr *ne = lw_nth_positional(call, 1)->value;
    AstDim *d = key ? expr_dim(c, ne) : NULL;
    t = ir_scalar(DT_I32);
    if (!d || !lower_dims(c, d, 1, ne->loc, false, &t))
      return BAD;
    c->b.loc = call->loc;
    return (Val){.v = ir_new_inst(&c->b, OP_split, t, &key, 1), .weak = false};
  }
  case B_MAKE:
    if (!lw_check_arity(c, call, name, 1, 1, NULL) ||
        !type_arg(c, lw_nth_positional(call, 0)->value, name, &t))
      return BAD;
    c->b.loc = call->loc;
    return (Val){.v = ir_const_like(&c->b, &t, strcmp(name, "ones") == 0), .weak = false};
  case B_FULL: {
    if (!lw_check_arity(c, call, name, 2, 2, NULL) ||
        !type_arg(c, lw_nth_positional(call, 0)->value, name, &t))
      return BAD;
    Expr *ve = lw_nth_positional(call, 1)->value;
    Val v = lw_value_arg(c, ve);
    if (!v.v || !lw_not_bool(c, v, ve->loc) || !lw_weak_fits(c, v, t.dtype, ve->loc))
      return BAD;
    v = lw_concrete(c, v, t.dtype);
    if (v.v->type.dtype != t.dtype) {
      ERR(c, ve->loc, "the value of 'full' must be %s like its type, got %s; convert it with "
                      "%s(...)", ir_dtype_name(t.dtype), ir_dtype_name(v.v->type.dtype),
          ir_dtype_name(t.dtype));
      return BAD;
    }
    if (!ir_can_broadcast_to(&v.v->type, &t)) {
      ERR(c, ve->loc, "cannot broadcast %s to %s in 'full'", lw_dstr(c, &v.v->type), lw_dstr(c, &t));
      return BAD;
    }
    c->b.loc = call->loc;
    return (Val){.v = ir_broadcast(&c->b, v.v, &t), .weak = false};
  }
  case B_ARANGE: {
    if (!lw_check_arity(c, call, name, 1, 1, NULL))
      return BAD;
    Expr *ne = lw_nth_positional(call, 0)->value;
    AstDim *d = expr_dim(c, ne);
    t = ir_scalar(DT_I32);
    if (!d || !lower_dims(c, d, 1, ne->loc, false, &t))
      return BAD;
    c->b.loc = call->loc;
    return (Val){.v = ir_new_inst(&c->b, OP_arange, t, NULL, 0), .weak = false};
  }
  default:
    return lower_argreduce(c, call, bi);
  }
}

