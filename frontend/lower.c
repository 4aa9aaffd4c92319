/* The checker and the lowering to IR, in one walk over the AST.
 *
 * Every function is lowered once, with its own symbolic sizes, into an IR
 * function of the same name; a call stays a `call` whose result type is the
 * callee's return type with the callee's sizes replaced by the caller's (the
 * sizes are unified argument by argument, which is where mismatched symbolic
 * sizes are caught). Checking as we lower means every rule is applied exactly
 * where the IR is built, with the AST node's location at hand for the caret.
 *
 * Number literals are weak scalars (spec section 3): a Val carries `weak`,
 * is built in f64, and takes the dtype of whatever typed value it meets.
 * NumPy broadcasting becomes explicit `broadcast` instructions here, so the IR
 * only ever sees elementwise operands of one shape. */
#include "lower.h"

#include "libc_names.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct Val {
  Inst *v;   /* NULL: an error was already reported; stay quiet */
  bool weak; /* a literal (or made only of literals): dtype not fixed */
  bool integral; /* weak and made only of integer literals: may meet i32 */
} Val;

/* What a name is bound to. Assignment rebinds a `var` in place: the
 * lowering does SSA renaming, so `x = e;` only changes which value the
 * name stands for from then on. */
typedef enum { BIND_PARAM, BIND_LET, BIND_VAR, BIND_INDEX } BindKind;

typedef struct Binding {
  const char *name;
  BindKind kind;
  Loc loc;   /* the declaration */
  Val val;
  Type type; /* BIND_VAR: the declared type every assignment must give */
  struct Binding *up;       /* the binding made before this one */
  struct Binding *shadowed; /* the binding of the same name this one hides */
} Binding;

/* The innermost binding of each name in scope, so that a lookup is one
 * probe instead of a walk over every binding (a body of 38,000 lets spent
 * most of its time in strcmp). Open addressing; a name, once in, stays,
 * with a NULL binding when nothing binds it. */
typedef struct Names {
  const char **key;
  Binding **innermost;
  size_t cap, len;
} Names;

typedef struct FnInfo {
  Func *ast;
  Function *ir; /* the IR function (params typed once the signature is ok) */
  bool sig_ok;
  int state; /* recursion check: 0 new, 1 on the DFS stack, 2 done */
} FnInfo;

typedef struct Ctx {
  Module *m;
  Diag *d;
  FnInfo *fns;
  int nfns;
  int *fn_index; /* open addressing by name: index into fns + 1, 0 empty */
  size_t fn_cap;
  FnInfo *cur;
  Builder b;
  Binding *scope; /* every binding in scope, innermost first (via up) */
  Names names;
} Ctx;

static const Val BAD = {.v = NULL};

#define ERR(c, loc, ...) diag_error((c)->d, (loc), __VA_ARGS__)

static char *tstr(Ctx *c, const Type *t) {
  char buf[512];
  return arena_strdup(c->m->arena, ir_type_str(c->m, t, buf, sizeof buf));
}
static char *dstr(Ctx *c, const Type *t) {
  char buf[512];
  return arena_strdup(c->m->arena, ir_dims_str(c->m, t, buf, sizeof buf));
}

/* Functions are looked up by name at every call and for every definition:
 * a hash table, so a file of 100,000 functions is not 10^10 comparisons. */
static size_t name_hash(const char *s) {
  size_t h = 14695981039346656037u;
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

static int *fn_slot(Ctx *c, const char *name) {
  size_t h = name_hash(name) & (c->fn_cap - 1);
  while (c->fn_index[h] && strcmp(c->fns[c->fn_index[h] - 1].ast->name, name) != 0)
    h = (h + 1) & (c->fn_cap - 1);
  return &c->fn_index[h];
}

static FnInfo *find_fn(Ctx *c, const char *name) {
  int *slot = fn_slot(c, name);
  return *slot ? &c->fns[*slot - 1] : NULL;
}

static void add_fn(Ctx *c, Func *f) {
  c->fns[c->nfns++] = (FnInfo){.ast = f};
  *fn_slot(c, f->name) = c->nfns;
}

/* ---- names in scope ---- */

static Binding **innermost_slot(Ctx *c, const char *name) {
  Names *n = &c->names;
  if (2 * (n->len + 1) > n->cap) { /* grow: rehash every name */
    Names old = *n;
    n->cap = old.cap ? 2 * old.cap : 64;
    n->key = xmalloc(sizeof *n->key * n->cap);
    n->innermost = xmalloc(sizeof *n->innermost * n->cap);
    memset(n->key, 0, sizeof *n->key * n->cap);
    for (size_t k = 0; k < old.cap; k++)
      if (old.key[k]) {
        size_t h = name_hash(old.key[k]) & (n->cap - 1);
        while (n->key[h])
          h = (h + 1) & (n->cap - 1);
        n->key[h] = old.key[k];
        n->innermost[h] = old.innermost[k];
      }
    free(old.key);
    free(old.innermost);
  }
  size_t h = name_hash(name) & (n->cap - 1);
  while (n->key[h] && strcmp(n->key[h], name) != 0)
    h = (h + 1) & (n->cap - 1);
  if (!n->key[h]) {
    n->key[h] = name;
    n->innermost[h] = NULL;
    n->len++;
  }
  return &n->innermost[h];
}

static Binding *bind_kind(Ctx *c, const char *name, BindKind kind, Loc loc, Val v) {
  Binding *b = ARENA_NEW(c->m->arena, Binding);
  b->name = name;
  b->kind = kind;
  b->loc = loc;
  b->val = v;
  b->up = c->scope;
  c->scope = b;
  Binding **in = innermost_slot(c, name);
  b->shadowed = *in;
  *in = b;
  return b;
}

/* Closes the bindings made since `scope` was the innermost one. */
static void close_scope(Ctx *c, Binding *scope) {
  for (; c->scope != scope; c->scope = c->scope->up)
    *innermost_slot(c, c->scope->name) = c->scope->shadowed;
}

static Binding *lookup(Ctx *c, const char *name) {
  return *innermost_slot(c, name);
}

/* ---- builtins ---- */

typedef enum {
  B_UNARY, B_BINARY, B_REDUCE, B_MEAN, B_SELECT, B_TRANSPOSE, B_RESHAPE,
  B_BROADCAST, B_ZEROS, B_ONES, B_STOP, B_GRAD, B_TAKE, B_TAKE_ALONG,
  B_MAKE, B_FULL, B_ARANGE, B_ARG, B_RANDOM, B_SPLIT,
} BuiltinKind;

static const struct Builtin {
  const char *name;
  BuiltinKind kind;
  Op op;
} builtins[] = {
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
    {"stop_gradient", B_STOP, OP_stop_gradient}, {"grad", B_GRAD, OP_grad},
    {"take", B_TAKE, OP_gather}, {"take_along_axis", B_TAKE_ALONG, OP_take_along},
    {"zeros", B_MAKE, OP_const},      {"ones", B_MAKE, OP_const},
    {"full", B_FULL, OP_broadcast},   {"arange", B_ARANGE, OP_arange},
    {"argmax", B_ARG, OP_argmax},     {"argmin", B_ARG, OP_argmin},
    {"uniform", B_RANDOM, OP_uniform}, {"normal", B_RANDOM, OP_normal},
    {"split", B_SPLIT, OP_split},
};

static const struct Builtin *find_builtin(const char *name) {
  for (size_t i = 0; i < sizeof builtins / sizeof builtins[0]; i++)
    if (strcmp(builtins[i].name, name) == 0)
      return &builtins[i];
  return NULL;
}

/* ---- types ---- */

static bool sym_bound(Ctx *c, int sym) {
  Function *f = c->cur->ir;
  for (int k = 0; k < f->nparams; k++)
    for (int j = 0; j < f->params[k]->type.rank; j++)
      if (f->params[k]->type.dim[j].sym == sym)
        return true;
  return false;
}

/* The polynomial of a size expression; its names must be bound. */
static bool size_poly(Ctx *c, AstDim *d, SizePoly *out) {
  if (d->bad) {
    ERR(c, d->loc, "sizes must be non-negative integers");
    return false;
  }
  if (!d->op && !d->name) {
    *out = ir_poly_const(d->size);
    return true;
  }
  if (!d->op) {
    int s = ir_sym(c->m, d->name);
    if (!sym_bound(c, s)) {
      ERR(c, d->loc, "size '%s' is not bound by any parameter of '%s'", d->name,
          c->cur->ast->name);
      return false;
    }
    *out = ir_poly_of(c->m, (Dim){0, s});
    return true;
  }
  SizePoly a, b;
  if (!size_poly(c, d->lhs, &a) || !size_poly(c, d->rhs, &b))
    return false;
  bool ok = d->op == '*' ? ir_poly_mul(c->m, &a, &b, out)
                         : ir_poly_add(c->m, &a, &b, d->op == '+' ? 1 : -1, out);
  if (!ok)
    ERR(c, d->loc, "this size expression is too large (more than %d terms, a degree above %d, "
                   "or coefficients beyond 64 bits)", IR_POLY_TERMS, IR_POLY_DEGREE);
  return ok;
}

/* Dims of a type or shape list. `bind`: names are introduced (parameter
 * types); otherwise each must be bound by a parameter of the function. */
static bool lower_dims(Ctx *c, AstDim *dims, int n, Loc loc, bool bind, Type *t) {
  if (n > IR_MAX_RANK) {
    ERR(c, loc, "tensors have at most %d dimensions; this one has %d", IR_MAX_RANK, n);
    return false;
  }
  t->rank = n;
  int k = 0;
  for (AstDim *d = dims; d; d = d->next, k++) {
    if (d->op) {
      if (bind) {
        ERR(c, d->loc, "parameter types use only literal sizes and plain names; give the "
                       "parameter its own size name");
        return false;
      }
      SizePoly p;
      if (!size_poly(c, d, &p))
        return false;
      Dim r = ir_poly_dim(c->m, &p);
      if (r.sym < 0 && r.size < 0) {
        ERR(c, d->loc, "this size is %lld: sizes cannot be negative", (long long)r.size);
        return false;
      }
      t->dim[k] = r;
    } else if (d->name) {
      int s = ir_sym(c->m, d->name);
      if (!bind && !sym_bound(c, s)) {
        ERR(c, d->loc, "size '%s' is not bound by any parameter of '%s'", d->name,
            c->cur->ast->name);
        return false;
      }
      t->dim[k] = (Dim){0, s};
    } else {
      if (d->bad || d->size < 0) {
        ERR(c, d->loc, "sizes must be non-negative integers");
        return false;
      }
      t->dim[k] = ir_lit(d->size);
    }
  }
  return true;
}

/* The size `name` of the current function, or -1 if it is not one. */
static int size_sym(Ctx *c, const char *name) {
  for (int s = 0; s < c->m->nsyms; s++)
    if (strcmp(c->m->syms[s], name) == 0)
      return sym_bound(c, s) ? s : -1;
  return -1;
}

/* The i32 scalar holding size `name`, or NULL if it is not a size. */
static Inst *size_value(Ctx *c, const char *name) {
  int s = size_sym(c, name);
  if (s < 0)
    return NULL;
  Type t = ir_scalar(DT_I32);
  t.rank = 1;
  t.dim[0] = (Dim){0, s};
  return ir_count(&c->b, &t, 1u, DT_I32);
}

static bool lower_type(Ctx *c, AstType *at, bool bind, Type *t) {
  *t = ir_scalar((DType)at->dtype);
  return lower_dims(c, at->dims, at->rank, at->loc, bind, t);
}

static const char *dtype_word(AstDType dt) { return ir_dtype_name((DType)dt); }

/* ---- values ---- */

/* Give a weak value the dtype `dt`. A literal becomes a literal of that
 * dtype (rather than a conversion) so the IR reads naturally. */
static Val concrete(Ctx *c, Val x, DType dt) {
  if (!x.v || !x.weak)
    return x;
  Inst *v = x.v;
  if (v->op == OP_const)
    return (Val){.v = ir_const(&c->b, dt, dt == DT_I32 ? trunc(v->num) : v->num), .weak = false};
  if (v->op == OP_broadcast && v->args[0]->op == OP_const) {
    Inst *k = ir_const(&c->b, dt, v->args[0]->num);
    return (Val){.v = ir_broadcast(&c->b, k, &v->type), .weak = false};
  }
  return (Val){.v = ir_convert(&c->b, v, dt), .weak = false};
}

static bool not_bool(Ctx *c, Val x, Loc loc) {
  if (x.v && x.v->type.dtype == DT_BOOL) {
    ERR(c, loc, "a bool value can only be combined with &&, || and !, be the condition of "
                "select(), or be converted with f32(c), f64(c) or i32(c)");
    return false;
  }
  return true;
}

/* A weak value may take dtype dt: a literal with a '.' or an exponent is
 * never an i32 (section 3), and an integer literal becomes one only if it
 * fits (it would wrap silently otherwise). */
static bool weak_fits(Ctx *c, Val x, DType dt, Loc loc) {
  if (!x.weak || dt != DT_I32)
    return true;
  if (!x.integral) {
    ERR(c, loc, "a number with a '.' or an exponent cannot be an i32; write an integer, or "
                "convert the other side with f32(x) or f64(x)");
    return false;
  }
  const Inst *k = x.v;
  while (k->op == OP_broadcast)
    k = k->args[0];
  if (k->op == OP_const && (k->num < -2147483648.0 || k->num > 2147483647.0)) {
    ERR(c, loc, "the integer %.0f does not fit in i32 (-2147483648 to 2147483647)", k->num);
    return false;
  }
  return true;
}

/* Make two operands agree on a dtype: weak takes the other's; f32, f64 and
 * i32 never mix implicitly (section 5). */
static bool unify_dtypes(Ctx *c, Val *a, Val *b, Loc loc, const char *what) {
  if (!a->v || !b->v || !not_bool(c, *a, loc) || !not_bool(c, *b, loc))
    return false;
  if (a->weak && !b->weak) {
    if (!weak_fits(c, *a, b->v->type.dtype, loc))
      return false;
    *a = concrete(c, *a, b->v->type.dtype);
  } else if (b->weak && !a->weak) {
    if (!weak_fits(c, *b, a->v->type.dtype, loc))
      return false;
    *b = concrete(c, *b, a->v->type.dtype);
  }
  DType da = a->v->type.dtype, db = b->v->type.dtype;
  if (da != db) {
    if (ir_is_float(da) && ir_is_float(db))
      ERR(c, loc, "cannot mix f32 and f64 in %s; convert one side with f64(x) or f32(x)", what);
    else
      ERR(c, loc, "cannot mix %s and %s in %s; convert one side with %s(x) or %s(x)",
          ir_dtype_name(da), ir_dtype_name(db), what, ir_dtype_name(db), ir_dtype_name(da));
    return false;
  }
  return true;
}

/* Operations that need float operands reject i32 with a hint. */
static bool need_float(Ctx *c, Val x, Loc loc, const char *what) {
  if (x.v && x.v->type.dtype == DT_I32) {
    ERR(c, loc, "%s needs a float operand, not i32; convert it with f32(x) or f64(x)", what);
    return false;
  }
  return true;
}

/* Broadcast both to their common shape, or report why they do not. */
static bool broadcast_pair(Ctx *c, Val *a, Val *b, Loc loc, const char *what) {
  Type t;
  char err[256];
  if (!ir_broadcast_shapes(c->m, &a->v->type, &b->v->type, &t, err, sizeof err)) {
    const Type *ta = &a->v->type, *tb = &b->v->type;
    /* Say so when the clash is between different names: that is the
     * surprising case (section 5: names are never assumed equal). */
    const char *why = "";
    int r = ta->rank > tb->rank ? ta->rank : tb->rank;
    for (int i = 0; i < r; i++) {
      int ia = i - (r - ta->rank), ib = i - (r - tb->rank);
      if (ia < 0 || ib < 0)
        continue;
      Dim da = ta->dim[ia], db = tb->dim[ib];
      if (!ir_dim_eq(da, db) && !ir_dim_is(da, 1) && !ir_dim_is(db, 1) &&
          (da.sym >= 0 || db.sym >= 0)) {
        why = "; sizes with different names are never assumed equal";
        break;
      }
    }
    ERR(c, loc, "shapes %s and %s do not broadcast in %s%s", dstr(c, ta), dstr(c, tb), what,
        why);
    return false;
  }
  if (t.rank > IR_MAX_RANK) {
    ERR(c, loc, "result would have more than %d dimensions", IR_MAX_RANK);
    return false;
  }
  a->v = ir_broadcast(&c->b, a->v, &t);
  b->v = ir_broadcast(&c->b, b->v, &t);
  return true;
}

static Val elementwise2(Ctx *c, Op op, Val a, Val b, Loc loc, const char *what) {
  if (!unify_dtypes(c, &a, &b, loc, what))
    return BAD;
  if (a.v->type.dtype == DT_I32 && !(ir_ops[op].flags & F_INT)) {
    if (op == OP_div)
      ERR(c, loc, "'/' is not defined on i32; use '//' for floor division, or convert with "
                  "f32(x) or f64(x)");
    else
      ERR(c, loc, "%s needs float operands, not i32; convert them with f32(x) or f64(x)", what);
    return BAD;
  }
  if (ir_is_float(a.v->type.dtype) && (ir_ops[op].flags & F_INTONLY)) {
    ERR(c, loc, "%s needs i32 operands, not %s%s", what, ir_dtype_name(a.v->type.dtype),
        op == OP_idiv ? "; for floats write floor(a / b)" : "");
    return BAD;
  }
  if (!broadcast_pair(c, &a, &b, loc, what))
    return BAD;
  bool integral = a.integral && b.integral && (op == OP_add || op == OP_sub || op == OP_mul);
  return (Val){.v = ir_binary(&c->b, op, a.v, b.v), .weak = a.weak && b.weak, .integral = integral};
}

/* a // b and a % b. Two integer literals fold (Python's rules, a weak
 * result); other weak integral operands become i32. */
static Val lower_intdiv(Ctx *c, Op op, Val a, Val b, Loc loc, const char *what) {
  if (a.weak && b.weak && a.integral && b.integral) {
    if (a.v->op == OP_const && b.v->op == OP_const) {
      double x = a.v->num, y = b.v->num;
      if (y == 0) {
        ERR(c, loc, "integer division by zero");
        return BAD;
      }
      double q = floor(x / y), r = x - q * y;
      return (Val){.v = ir_const(&c->b, DT_F64, op == OP_idiv ? q : r), .weak = true, .integral = true};
    }
    if (!weak_fits(c, a, DT_I32, loc) || !weak_fits(c, b, DT_I32, loc))
      return BAD;
    a = concrete(c, a, DT_I32);
    b = concrete(c, b, DT_I32);
  }
  if (a.weak && b.weak) {
    ERR(c, loc, "%s needs i32 operands, not numbers with a '.' or an exponent", what);
    return BAD;
  }
  return elementwise2(c, op, a, b, loc, what);
}

static Val lower_expr(Ctx *c, Expr *e);
static Val lower_ctor(Ctx *c, Expr *call, const struct Builtin *bi);
static Val lower_take(Ctx *c, Expr *call, const struct Builtin *bi);
static Val lower_index(Ctx *c, Expr *e);

/* ---- calls ---- */

static int count_positional(Expr *call) {
  int n = 0;
  for (Arg *a = call->args; a; a = a->next)
    n += a->kw == NULL;
  return n;
}

static Arg *nth_positional(Expr *call, int n) {
  for (Arg *a = call->args; a; a = a->next)
    if (!a->kw && n-- == 0)
      return a;
  return NULL;
}

/* Positional count in [lo, hi], keywords from `kws` (NULL-terminated) only,
 * no keyword twice, positionals before keywords. */
static bool check_arity(Ctx *c, Expr *call, const char *fname, int lo, int hi,
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

static Arg *keyword(Expr *call, const char *kw) {
  for (Arg *a = call->args; a; a = a->next)
    if (a->kw && strcmp(a->kw, kw) == 0)
      return a;
  return NULL;
}

/* A tensor-valued argument (not a shape list, not a function name). */
static Val value_arg(Ctx *c, Expr *e) {
  if (e->kind == EX_SHAPE) {
    ERR(c, e->loc, "a shape list like [2, n] is only valid as the shape argument of "
                   "reshape, broadcast or transpose");
    return BAD;
  }
  return lower_expr(c, e);
}

/* An integer literal, possibly negated: axis=-1. */
static bool int_literal(Expr *e, int64_t *out) {
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
static bool axis_arg(Ctx *c, Expr *call, int rank, int *k) {
  Arg *ax = keyword(call, "axis");
  *k = -1;
  if (!ax)
    return true;
  int64_t v;
  if (!int_literal(ax->value, &v)) {
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

/* The operand of a reduction along an optional axis, f(x, axis=K): one
 * value, not bool (BAD after saying why). */
static Val reduce_operand(Ctx *c, Expr *call, const struct Builtin *bi) {
  static const char *const kws[] = {"axis", NULL};
  if (!check_arity(c, call, bi->name, 1, 1, kws))
    return BAD;
  Val x = value_arg(c, nth_positional(call, 0)->value);
  if (x.v && !not_bool(c, x, call->loc))
    return BAD;
  return x;
}

static Val lower_reduce(Ctx *c, Expr *call, const struct Builtin *bi) {
  Val x = reduce_operand(c, call, bi);
  if (!x.v)
    return BAD;
  if (bi->kind == B_MEAN && !need_float(c, x, call->loc, "'mean'"))
    return BAD;
  int rank = x.v->type.rank, k;
  if (!axis_arg(c, call, rank, &k))
    return BAD;
  unsigned axes = k < 0 ? (1u << rank) - 1 : 1u << k;
  if (rank == 0)
    return x;
  Inst *r = ir_reduce(&c->b, bi->op, x.v, axes);
  if (bi->kind == B_MEAN) {
    Inst *n = ir_count(&c->b, &x.v->type, axes, x.v->type.dtype);
    r = ir_binary(&c->b, OP_div, r, ir_broadcast(&c->b, n, &r->type));
  }
  return (Val){.v = r, .weak = x.weak};
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
  if (!check_arity(c, call, bi->name, is_t ? 1 : 2, 2, NULL))
    return BAD;
  Val x = value_arg(c, nth_positional(call, 0)->value);
  if (!x.v || !not_bool(c, x, call->loc))
    return BAD;
  const Type *xt = &x.v->type;
  Expr *list = NULL;
  if (count_positional(call) == 2 && !shape_list(c, nth_positional(call, 1), bi->name, &list))
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
    return (Val){.v = xt->rank < 2 ? x.v : ir_transpose(&c->b, x.v, perm), .weak = x.weak};
  }
  Type to = ir_scalar(xt->dtype);
  if (!lower_dims(c, list->dims, list->ndims, list->loc, false, &to))
    return BAD;
  if (bi->kind == B_RESHAPE) {
    if (!ir_reshape_ok(c->m, xt, &to)) {
      ERR(c, call->loc, "cannot reshape %s to %s: the number of elements differs", dstr(c, xt),
          dstr(c, &to));
      return BAD;
    }
    return (Val){.v = ir_reshape(&c->b, x.v, &to), .weak = x.weak};
  }
  if (!ir_can_broadcast_to(xt, &to)) {
    ERR(c, call->loc, "cannot broadcast %s to %s", dstr(c, xt), dstr(c, &to));
    return BAD;
  }
  return (Val){.v = ir_broadcast(&c->b, x.v, &to), .weak = x.weak};
}

/* Bind the callee's sizes to the caller's, argument by argument. */
static bool unify_call(Ctx *c, Expr *call, FnInfo *fn, Val *args, Dim *map) {
  Function *callee = fn->ir;
  for (int s = 0; s < c->m->nsyms; s++)
    map[s] = (Dim){-1, -2}; /* unbound */
  bool ok = true;
  int *binder = xmalloc(sizeof(int) * (size_t)(c->m->nsyms + 1));
  for (int k = 0; k < callee->nparams; k++) {
    Inst *p = callee->params[k];
    Loc loc = nth_positional(call, k)->value->loc;
    if (!args[k].v || !not_bool(c, args[k], loc)) {
      ok = false;
      continue;
    }
    if (!weak_fits(c, args[k], p->type.dtype, loc)) {
      ok = false;
      continue;
    }
    args[k] = concrete(c, args[k], p->type.dtype);
    const Type *at = &args[k].v->type;
    if (at->dtype != p->type.dtype) {
      ERR(c, loc, "argument '%s' of '%s' must be %s, got %s; convert it with %s(...)", p->name,
          callee->name, ir_dtype_name(p->type.dtype), ir_dtype_name(at->dtype),
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
          callee->name, dstr(c, at), ir_dims_str(c->m, &p->type, buf, sizeof buf), with, hint);
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

/* f(args) for a user function, or grad(f, wrt=p)(args) when wrt >= 0. */
/* f(args) for a user function: one `call` per result wanted (result k is
 * call {result=k}; inlining makes them one copy again, through CSE), into
 * outs[0..nouts); or grad(f, wrt=p)(args) when wrt >= 0. */
static bool lower_user_call_n(Ctx *c, Expr *call, FnInfo *fn, int wrt, Val *outs, int nouts) {
  if (!check_arity(c, call, fn->ast->name, fn->ast->nparams, fn->ast->nparams, NULL))
    return false;
  if (!fn->sig_ok)
    return false;
  int n = fn->ast->nparams;
  Val *args = ARENA_ARRAY(c->m->arena, Val, n > 0 ? n : 1);
  bool ok = true;
  for (int k = 0; k < n; k++) {
    args[k] = value_arg(c, nth_positional(call, k)->value);
    ok &= args[k].v != NULL;
  }
  Dim *map = ARENA_ARRAY(c->m->arena, Dim, c->m->nsyms + 1);
  if (!ok || !unify_call(c, call, fn, args, map))
    return false;
  Inst **vs = ARENA_ARRAY(c->m->arena, Inst *, n > 0 ? n : 1);
  for (int k = 0; k < n; k++)
    vs[k] = args[k].v;
  for (int r = 0; r < nouts; r++) {
    const Type *rt = wrt >= 0 ? &fn->ir->params[wrt]->type : &fn->ir->results[r]->type;
    Type t = subst_type(c->m, rt, map);
    Inst *i = ir_new_inst(&c->b, wrt >= 0 ? OP_grad : OP_call, t, vs, n);
    i->callee = fn->ir;
    i->wrt = wrt >= 0 ? wrt : r;
    outs[r] = (Val){.v = i, .weak = false};
  }
  return true;
}

static Val lower_user_call(Ctx *c, Expr *call, FnInfo *fn, int wrt) {
  if (wrt < 0 && fn->ast->nrets > 1) {
    ERR(c, call->loc, "'%s' returns %d results; bind them with let (a, b) = %s(...)",
        fn->ast->name, fn->ast->nrets, fn->ast->name);
    return BAD;
  }
  Val v = BAD;
  if (!lower_user_call_n(c, call, fn, wrt, &v, 1))
    return BAD;
  return v;
}

/* grad(f, wrt=p)(args...) */
static Val lower_grad_call(Ctx *c, Expr *outer) {
  Expr *g = outer->callee;
  static const char *const kws[] = {"wrt", NULL};
  if (!check_arity(c, g, "grad", 1, 1, kws))
    return BAD;
  Arg *w = keyword(g, "wrt");
  Expr *fe = nth_positional(g, 0)->value;
  if (!w) {
    ERR(c, g->loc, "grad needs the parameter to differentiate with respect to: "
                   "grad(f, wrt=x)");
    return BAD;
  }
  if (fe->kind != EX_NAME || !find_fn(c, fe->name)) {
    ERR(c, fe->loc, "the first argument of grad must be the name of a function");
    return BAD;
  }
  FnInfo *fn = find_fn(c, fe->name);
  if (w->value->kind != EX_NAME) {
    ERR(c, w->value->loc, "wrt= must name a parameter of '%s'", fn->ast->name);
    return BAD;
  }
  int k = 0;
  Param *p = fn->ast->params;
  for (; p && strcmp(p->name, w->value->name) != 0; p = p->next)
    k++;
  if (!p) {
    ERR(c, w->value->loc, "'%s' has no parameter named '%s'", fn->ast->name, w->value->name);
    return BAD;
  }
  if (p->is_const) {
    ERR(c, w->value->loc, "cannot differentiate with respect to '%s': it is declared const",
        p->name);
    return BAD;
  }
  if (p->type.dtype == AST_I32) {
    ERR(c, w->value->loc, "cannot differentiate with respect to '%s': i32 values have no "
                          "gradient", p->name);
    return BAD;
  }
  if (fn->ast->nrets > 1) {
    ERR(c, fe->loc, "grad needs a function with one float scalar result; '%s' returns %d "
                    "results", fn->ast->name, fn->ast->nrets);
    return BAD;
  }
  if (fn->sig_ok && fn->ast->ret.dtype == AST_I32) {
    ERR(c, fe->loc, "grad needs a function with a float scalar result; '%s' returns %s",
        fn->ast->name, tstr(c, &fn->ir->results[0]->type));
    return BAD;
  }
  if (fn->sig_ok && fn->ast->ret.rank != 0) {
    ERR(c, fe->loc, "grad needs a function with a scalar result; '%s' returns %s",
        fn->ast->name, tstr(c, &fn->ir->results[0]->type));
    return BAD;
  }
  return lower_user_call(c, outer, fn, k);
}

static Val lower_call(Ctx *c, Expr *e) {
  Expr *callee = e->callee;
  if (callee->kind == EX_CALL && callee->callee->kind == EX_NAME &&
      strcmp(callee->callee->name, "grad") == 0)
    return lower_grad_call(c, e);
  if (callee->kind == EX_DTYPE) {
    const char *name = dtype_word(callee->dtype);
    if (callee->dtype == AST_BOOL) {
      ERR(c, callee->loc, "there is no conversion to bool; compare instead, like x != 0");
      return BAD;
    }
    if (!check_arity(c, e, name, 1, 1, NULL))
      return BAD;
    Val x = value_arg(c, nth_positional(e, 0)->value);
    if (!x.v)
      return BAD;
    DType dt = (DType)callee->dtype;
    /* i32(...) of a literal saturates like any cast (a weak value is held
     * in f64), rather than wrap as an implicit i32 literal would. */
    if (x.weak && dt != DT_I32)
      return concrete(c, x, dt);
    return (Val){.v = ir_convert(&c->b, x.v, dt), .weak = false};
  }
  if (callee->kind != EX_NAME) {
    ERR(c, callee->loc, "only functions can be called");
    return BAD;
  }
  const char *name = callee->name;
  FnInfo *fn = find_fn(c, name);
  if (fn)
    return lower_user_call(c, e, fn, -1);
  const struct Builtin *bi = find_builtin(name);
  if (!bi) {
    if (lookup(c, name)) {
      ERR(c, callee->loc, "'%s' is a value, not a function", name);
      return BAD;
    }
    ERR(c, callee->loc, "unknown function '%s'", name);
    return BAD;
  }
  switch (bi->kind) {
  case B_GRAD:
    ERR(c, e->loc, "grad(f, wrt=x) is a function: apply it to arguments, "
                   "grad(f, wrt=x)(args...)");
    return BAD;
  case B_UNARY:
  case B_STOP:
  case B_ZEROS:
  case B_ONES: {
    if (!check_arity(c, e, name, 1, 1, NULL))
      return BAD;
    Val x = value_arg(c, nth_positional(e, 0)->value);
    if (!x.v || !not_bool(c, x, e->loc))
      return BAD;
    if (bi->kind == B_ZEROS || bi->kind == B_ONES)
      return (Val){.v = ir_const_like(&c->b, &x.v->type, bi->kind == B_ONES), .weak = x.weak, .integral = x.integral};
    if (bi->kind == B_STOP && x.weak)
      return x; /* a literal is a constant already */
    if (bi->kind == B_UNARY && !(ir_ops[bi->op].flags & F_INT) &&
        !need_float(c, x, e->loc, arena_printf(c->m->arena, "'%s'", name)))
      return BAD;
    return (Val){.v = ir_unary(&c->b, bi->op, x.v), .weak = x.weak};
  }
  case B_BINARY: {
    if (!check_arity(c, e, name, 2, 2, NULL))
      return BAD;
    Val a = value_arg(c, nth_positional(e, 0)->value);
    Val b = value_arg(c, nth_positional(e, 1)->value);
    return elementwise2(c, bi->op, a, b, e->loc, arena_printf(c->m->arena, "'%s'", name));
  }
  case B_REDUCE:
  case B_MEAN:
    return lower_reduce(c, e, bi);
  case B_SELECT: {
    if (!check_arity(c, e, name, 3, 3, NULL))
      return BAD;
    Val cond = lower_expr(c, nth_positional(e, 0)->value);
    Val a = value_arg(c, nth_positional(e, 1)->value);
    Val b = value_arg(c, nth_positional(e, 2)->value);
    if (!cond.v || !a.v || !b.v)
      return BAD;
    if (cond.v->type.dtype != DT_BOOL) {
      ERR(c, nth_positional(e, 0)->value->loc,
          "the condition of select must be a comparison, like x > 0");
      return BAD;
    }
    if (!unify_dtypes(c, &a, &b, e->loc, "select") ||
        !broadcast_pair(c, &a, &b, e->loc, "select"))
      return BAD;
    bool integral = a.integral && b.integral;
    Val cv = {.v = cond.v};
    Type ct;
    char err[256];
    if (!ir_broadcast_shapes(c->m, &cv.v->type, &a.v->type, &ct, err, sizeof err)) {
      ERR(c, e->loc, "shapes %s and %s do not broadcast in select", dstr(c, &cv.v->type),
          dstr(c, &a.v->type));
      return BAD;
    }
    ct.dtype = DT_BOOL;
    Type vt = ct;
    vt.dtype = a.v->type.dtype;
    Inst *cb = ir_broadcast(&c->b, cv.v, &ct);
    return (Val){.v = ir_select(&c->b, cb, ir_broadcast(&c->b, a.v, &vt),
                           ir_broadcast(&c->b, b.v, &vt)), .weak = a.weak && b.weak, .integral = integral};
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
    if (size_sym(c, e->name) < 0 && lookup(c, e->name)) {
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
  Val x = reduce_operand(c, call, bi);
  if (!x.v)
    return BAD;
  int rank = x.v->type.rank, k;
  if (!axis_arg(c, call, rank, &k))
    return BAD;
  bool all = k < 0;
  k = all ? 0 : k;
  c->b.loc = call->loc;
  if (rank == 0) /* the one position of a scalar */
    return (Val){.v = ir_const(&c->b, DT_I32, 0), .weak = false};
  Inst *v = concrete(c, x, DT_F32).v;
  if (all && rank > 1) { /* the flat row-major position */
    SizePoly n = ir_poly_const(1);
    for (int j = 0; j < rank; j++) {
      SizePoly d = ir_poly_of(c->m, v->type.dim[j]);
      if (!ir_poly_mul(c->m, &n, &d, &n)) {
        ERR(c, call->loc, "the element count of this tensor is too large a size expression");
        return BAD;
      }
    }
    Type flat = ir_scalar(v->type.dtype);
    flat.rank = 1;
    flat.dim[0] = ir_poly_dim(c->m, &n);
    v = ir_reshape(&c->b, v, &flat);
  }
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
  Val k = value_arg(c, e);
  if (!k.v)
    return NULL;
  if (k.weak && k.integral)
    return concrete(c, k, DT_I32).v;
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
    if (!check_arity(c, call, name, 2, 2, NULL))
      return BAD;
    Inst *key = key_arg(c, nth_positional(call, 0)->value, name);
    if (!key || !type_arg(c, nth_positional(call, 1)->value, name, &t))
      return BAD;
    if (!ir_is_float(t.dtype)) {
      Expr *te = nth_positional(call, 1)->value;
      ERR(c, te->kind == EX_INDEX ? te->lhs->loc : te->loc, "'%s' makes f32 or f64 values, not %s",
          name, ir_dtype_name(t.dtype));
      return BAD;
    }
    c->b.loc = call->loc;
    return (Val){.v = ir_new_inst(&c->b, bi->op, t, &key, 1), .weak = false};
  }
  case B_SPLIT: {
    if (!check_arity(c, call, name, 2, 2, NULL))
      return BAD;
    Inst *key = key_arg(c, nth_positional(call, 0)->value, name);
    Expr *ne = nth_positional(call, 1)->value;
    AstDim *d = key ? expr_dim(c, ne) : NULL;
    t = ir_scalar(DT_I32);
    if (!d || !lower_dims(c, d, 1, ne->loc, false, &t))
      return BAD;
    c->b.loc = call->loc;
    return (Val){.v = ir_new_inst(&c->b, OP_split, t, &key, 1), .weak = false};
  }
  case B_MAKE:
    if (!check_arity(c, call, name, 1, 1, NULL) ||
        !type_arg(c, nth_positional(call, 0)->value, name, &t))
      return BAD;
    c->b.loc = call->loc;
    return (Val){.v = ir_const_like(&c->b, &t, strcmp(name, "ones") == 0), .weak = false};
  case B_FULL: {
    if (!check_arity(c, call, name, 2, 2, NULL) ||
        !type_arg(c, nth_positional(call, 0)->value, name, &t))
      return BAD;
    Expr *ve = nth_positional(call, 1)->value;
    Val v = value_arg(c, ve);
    if (!v.v || !not_bool(c, v, ve->loc) || !weak_fits(c, v, t.dtype, ve->loc))
      return BAD;
    v = concrete(c, v, t.dtype);
    if (v.v->type.dtype != t.dtype) {
      ERR(c, ve->loc, "the value of 'full' must be %s like its type, got %s; convert it with "
                      "%s(...)", ir_dtype_name(t.dtype), ir_dtype_name(v.v->type.dtype),
          ir_dtype_name(t.dtype));
      return BAD;
    }
    if (!ir_can_broadcast_to(&v.v->type, &t)) {
      ERR(c, ve->loc, "cannot broadcast %s to %s in 'full'", dstr(c, &v.v->type), dstr(c, &t));
      return BAD;
    }
    c->b.loc = call->loc;
    return (Val){.v = ir_broadcast(&c->b, v.v, &t), .weak = false};
  }
  case B_ARANGE: {
    if (!check_arity(c, call, name, 1, 1, NULL))
      return BAD;
    Expr *ne = nth_positional(call, 0)->value;
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

/* ---- indexing (spec section 6) ---- */

/* An index: an i32 value (an integer literal becomes one). */
static Val index_value(Ctx *c, Expr *e) {
  Val v = value_arg(c, e);
  if (!v.v)
    return BAD;
  if (v.weak) {
    if (!v.integral) {
      ERR(c, e->loc, "an index must be an integer, not a number with a '.' or an exponent");
      return BAD;
    }
    if (!weak_fits(c, v, DT_I32, e->loc))
      return BAD;
    return concrete(c, v, DT_I32);
  }
  if (v.v->type.dtype != DT_I32) {
    ERR(c, e->loc, "an index must be i32, not %s; convert it with i32(x)",
        ir_dtype_name(v.v->type.dtype));
    return BAD;
  }
  return v;
}

/* A slice bound as (polynomial in sizes) + (one run-time expression). */
typedef struct Bound {
  SizePoly p;
  Expr *atom;
} Bound;

static bool same_expr(Expr *a, Expr *b) {
  if (!a || !b || a->kind != b->kind)
    return a == b;
  switch (a->kind) {
  case EX_NUMBER: return a->num == b->num;
  case EX_NAME: return strcmp(a->name, b->name) == 0;
  case EX_NEG:
  case EX_NOT: return same_expr(a->lhs, b->lhs);
  case EX_BINARY: return a->op == b->op && same_expr(a->lhs, b->lhs) && same_expr(a->rhs, b->rhs);
  case EX_INDEX: {
    if (!same_expr(a->lhs, b->lhs) || a->nindex != b->nindex)
      return false;
    for (Index *x = a->index, *y = b->index; x; x = x->next, y = y->next)
      if (x->slice || y->slice || !same_expr(x->pos, y->pos))
        return false;
    return true;
  }
  case EX_CALL: {
    if (!same_expr(a->callee, b->callee) || a->nargs != b->nargs)
      return false;
    for (Arg *x = a->args, *y = b->args; x; x = x->next, y = y->next)
      if ((x->kw || y->kw) ? !(x->kw && y->kw && strcmp(x->kw, y->kw) == 0) : false)
        return false;
      else if (!same_expr(x->value, y->value))
        return false;
    return true;
  }
  default: return false;
  }
}

static bool bound_form(Ctx *c, Expr *e, Bound *b) {
  b->atom = NULL;
  if (e->kind == EX_NUMBER && e->num == floor(e->num) && fabs(e->num) < 1e15) {
    b->p = ir_poly_const((int64_t)e->num);
    return true;
  }
  if (e->kind == EX_NAME && size_sym(c, e->name) >= 0) {
    b->p = ir_poly_of(c->m, (Dim){0, size_sym(c, e->name)});
    return true;
  }
  if (e->kind == EX_NEG) {
    Bound x;
    SizePoly m1 = ir_poly_const(-1);
    if (bound_form(c, e->lhs, &x) && !x.atom && ir_poly_mul(c->m, &x.p, &m1, &b->p))
      return true;
  }
  if (e->kind == EX_BINARY && (e->op == BIN_ADD || e->op == BIN_SUB || e->op == BIN_MUL)) {
    Bound x, y;
    if (bound_form(c, e->lhs, &x) && bound_form(c, e->rhs, &y)) {
      if (e->op == BIN_MUL && !x.atom && !y.atom && ir_poly_mul(c->m, &x.p, &y.p, &b->p))
        return true;
      bool one = !(x.atom && y.atom) && !(e->op == BIN_SUB && y.atom);
      if (e->op != BIN_MUL && one &&
          ir_poly_add(c->m, &x.p, &y.p, e->op == BIN_ADD ? 1 : -1, &b->p)) {
        b->atom = x.atom ? x.atom : y.atom;
        return true;
      }
    }
  }
  b->p = ir_poly_const(0);
  b->atom = e;
  return true;
}

/* A bound that is a negative number counts from the end of the axis. */
static void from_end(Ctx *c, Bound *b, Dim size) {
  if (!b->atom && b->p.nterms == 1 && b->p.t[0].nvars == 0 && b->p.t[0].coef < 0) {
    SizePoly s = ir_poly_of(c->m, size);
    ir_poly_add(c->m, &s, &b->p, 1, &b->p);
  }
}

/* x[lo:hi] along axis k: a slice of compile-time length hi - lo. */
static Inst *lower_slice(Ctx *c, Inst *x, int k, Index *ix) {
  Dim size = x->type.dim[k];
  Bound lo = {ir_poly_const(0), NULL}, hi = {ir_poly_of(c->m, size), NULL};
  if (ix->lo)
    bound_form(c, ix->lo, &lo);
  if (ix->hi)
    bound_form(c, ix->hi, &hi);
  from_end(c, &lo, size);
  from_end(c, &hi, size);
  SizePoly len;
  if (!same_expr(lo.atom, hi.atom) || !ir_poly_add(c->m, &hi.p, &lo.p, -1, &len)) {
    ERR(c, ix->loc, "the length of this slice is not known at compile time; write its end as "
                    "start + length, as in x[i:i+3], or use sizes, as in x[1:n]");
    return NULL;
  }
  Dim d = ir_poly_dim(c->m, &len);
  if (d.sym < 0 && d.size < 0) {
    ERR(c, ix->loc, "this slice has a negative length (%lld)", (long long)d.size);
    return NULL;
  }
  Val start = {.v = NULL};
  if (ix->lo)
    start = index_value(c, ix->lo);
  else
    start = (Val){.v = ir_const(&c->b, DT_I32, 0)};
  if (ix->hi && !index_value(c, ix->hi).v) /* checked, though only its length is used */
    return NULL;
  if (!start.v)
    return NULL;
  if (start.v->type.rank != 0) {
    ERR(c, ix->lo->loc, "a slice bound must be an i32 scalar");
    return NULL;
  }
  Type t = x->type;
  t.dim[k] = d;
  c->b.loc = ix->loc;
  return ir_index_op(&c->b, OP_slice, x, start.v, k, &t);
}

/* x[idx] along axis k: the axis replaced by idx's axes. */
static Inst *gather_along(Ctx *c, Inst *x, Inst *idx, int k, Loc loc) {
  if (x->type.rank - 1 + idx->type.rank > IR_MAX_RANK) {
    ERR(c, loc, "result would have more than %d dimensions", IR_MAX_RANK);
    return NULL;
  }
  Type t = x->type;
  t.rank = 0;
  for (int j = 0; j < x->type.rank; j++)
    if (j != k)
      t.dim[t.rank++] = x->type.dim[j];
    else
      for (int a = 0; a < idx->type.rank; a++)
        t.dim[t.rank++] = idx->type.dim[a];
  c->b.loc = loc;
  return ir_index_op(&c->b, OP_gather, x, idx, k, &t);
}

static Val lower_index(Ctx *c, Expr *e) {
  if (e->lhs->kind == EX_DTYPE) {
    ERR(c, e->loc, "a type like %s[n] is only valid as the first argument of zeros, ones, full, "
                   "uniform or normal", dtype_word(e->lhs->dtype));
    return BAD;
  }
  Val base = value_arg(c, e->lhs);
  if (!base.v)
    return BAD;
  Inst *x = base.v;
  if (base.weak || x->type.dtype == DT_BOOL || e->nindex > x->type.rank) {
    if (base.weak || x->type.dtype == DT_BOOL)
      ERR(c, e->loc, "only f32, f64 and i32 tensors can be indexed");
    else
      ERR(c, e->loc, "too many indices: %d for a tensor of rank %d", e->nindex, x->type.rank);
    return BAD;
  }
  unsigned drop = 0;
  int gk = -1;
  Inst *gidx = NULL;
  int k = 0;
  for (Index *ix = e->index; ix; ix = ix->next, k++) {
    if (ix->slice) {
      x = lower_slice(c, x, k, ix);
      if (!x)
        return BAD;
      continue;
    }
    Val v = index_value(c, ix->pos);
    if (!v.v)
      return BAD;
    if (v.v->type.rank > 0) {
      if (gidx) {
        ERR(c, ix->loc, "at most one index of an indexing expression may be a tensor; use "
                        "take() for another gather");
        return BAD;
      }
      gidx = v.v;
      gk = k;
      continue;
    }
    Type t = x->type; /* a position: a slice of one, whose axis goes */
    t.dim[k] = ir_lit(1);
    c->b.loc = ix->loc;
    x = ir_index_op(&c->b, OP_slice, x, v.v, k, &t);
    drop |= 1u << k;
  }
  if (drop) {
    Type t = x->type;
    t.rank = 0;
    for (int j = 0; j < x->type.rank; j++)
      if (!(drop & (1u << j)))
        t.dim[t.rank++] = x->type.dim[j];
    x = ir_reshape(&c->b, x, &t);
  }
  if (gidx) {
    int before = __builtin_popcount(drop & ((1u << gk) - 1));
    x = gather_along(c, x, gidx, gk - before, e->loc);
    if (!x)
      return BAD;
  }
  return (Val){.v = x, .weak = false};
}

/* take(x, idx, axis=K) and take_along_axis(x, idx, axis=K) */
static Val lower_take(Ctx *c, Expr *call, const struct Builtin *bi) {
  static const char *const kws[] = {"axis", NULL};
  if (!check_arity(c, call, bi->name, 2, 2, kws))
    return BAD;
  Val x = value_arg(c, nth_positional(call, 0)->value);
  Val idx = index_value(c, nth_positional(call, 1)->value);
  if (!x.v || !idx.v)
    return BAD;
  if (x.weak || x.v->type.dtype == DT_BOOL || x.v->type.rank == 0) {
    ERR(c, call->loc, "'%s' needs an f32, f64 or i32 tensor of rank 1 or more", bi->name);
    return BAD;
  }
  Arg *ax = keyword(call, "axis");
  int rank = x.v->type.rank;
  int64_t k = 0;
  if (!ax) {
    if (bi->kind == B_TAKE_ALONG) {
      ERR(c, call->loc, "take_along_axis needs axis=K");
      return BAD;
    }
    /* NumPy: without an axis, take indexes the flattened tensor */
    Type flat = x.v->type;
    flat.rank = 1;
    SizePoly p = ir_poly_const(1);
    for (int j = 0; j < rank; j++) {
      SizePoly d = ir_poly_of(c->m, x.v->type.dim[j]);
      ir_poly_mul(c->m, &p, &d, &p);
    }
    flat.dim[0] = ir_poly_dim(c->m, &p);
    x.v = ir_reshape(&c->b, x.v, &flat);
    rank = 1;
  } else if (!int_literal(ax->value, &k) || k < -rank || k >= rank) {
    ERR(c, ax->value->loc, "axis must be an integer literal from %d to %d", -rank, rank - 1);
    return BAD;
  }
  if (k < 0)
    k += rank;
  if (bi->kind == B_TAKE) {
    Inst *r = gather_along(c, x.v, idx.v, (int)k, call->loc);
    return r ? (Val){.v = r, .weak = false} : BAD;
  }
  const Type *xt = &x.v->type, *it = &idx.v->type;
  if (it->rank != rank) {
    ERR(c, call->loc, "take_along_axis needs an index of the same rank as the tensor (%d), "
                      "got %s", rank, dstr(c, it));
    return BAD;
  }
  Type out = *xt, xb = *xt, ib = *it;
  for (int j = 0; j < rank; j++) {
    if (j == k) {
      out.dim[j] = it->dim[j];
      continue;
    }
    Dim a = xt->dim[j], b = it->dim[j];
    if (ir_dim_eq(a, b) || ir_dim_is(b, 1))
      out.dim[j] = a;
    else if (ir_dim_is(a, 1))
      out.dim[j] = b;
    else {
      ERR(c, call->loc, "shapes %s and %s do not broadcast in take_along_axis (off axis %d)",
          dstr(c, xt), dstr(c, it), (int)k);
      return BAD;
    }
    xb.dim[j] = ib.dim[j] = out.dim[j];
  }
  Inst *xv = ir_broadcast(&c->b, x.v, &xb), *iv = ir_broadcast(&c->b, idx.v, &ib);
  c->b.loc = call->loc;
  return (Val){.v = ir_index_op(&c->b, OP_take_along, xv, iv, (int)k, &out), .weak = false};
}

static const char *binop_name(BinOp op) {
  static const char *names[] = {"'+'", "'-'", "'*'", "'/'", "'@'", "'**'",
                                "'<'", "'<='", "'>'", "'>='", "'=='", "'!='",
                                "'//'", "'%'", "'&&'", "'||'"};
  return names[op];
}

/* a && b, a || b: bool operands, broadcast. */
static Val lower_logic(Ctx *c, Op op, Val a, Val b, Loc loc, const char *what) {
  Val *v[2] = {&a, &b};
  for (int k = 0; k < 2; k++)
    if (v[k]->v->type.dtype != DT_BOOL) {
      ERR(c, loc, "%s needs bool operands (comparisons, like x > 0), not %s", what,
          v[k]->weak ? "a number" : ir_dtype_name(v[k]->v->type.dtype));
      return BAD;
    }
  if (!broadcast_pair(c, &a, &b, loc, what))
    return BAD;
  return (Val){.v = ir_binary(&c->b, op, a.v, b.v), .weak = false};
}

/* a @ b of NumPy type t. The IR's batched matmul takes matrices only, so a
 * vector against a batch of matrices becomes a one-row (or one-column)
 * matrix and the result is reshaped back. */
static Inst *lower_matmul(Ctx *c, Inst *a, Inst *b, const Type *t) {
  if ((a->type.rank > 2 || b->type.rank > 2) && (a->type.rank == 1 || b->type.rank == 1)) {
    Type m = ir_scalar(a->type.dtype);
    m.rank = 2;
    m.dim[0] = m.dim[1] = ir_lit(1);
    if (a->type.rank == 1) {
      m.dim[1] = a->type.dim[0];
      a = ir_reshape(&c->b, a, &m);
    } else {
      m.dim[0] = b->type.dim[0];
      b = ir_reshape(&c->b, b, &m);
    }
    return ir_reshape(&c->b, ir_matmul(&c->b, a, b), t);
  }
  return ir_matmul(&c->b, a, b);
}

static Val lower_binary(Ctx *c, Expr *e) {
  static const Op ops[] = {OP_add, OP_sub, OP_mul, OP_div, OP_matmul, OP_pow,
                           OP_lt,  OP_le,  OP_gt,  OP_ge,  OP_eq,     OP_ne,
                           OP_idiv, OP_mod, OP_and, OP_or};
  Val a = value_arg(c, e->lhs), b = value_arg(c, e->rhs);
  if (!a.v || !b.v)
    return BAD;
  const char *what = binop_name(e->op);
  if (e->op == BIN_AND || e->op == BIN_OR)
    return lower_logic(c, ops[e->op], a, b, e->loc, what);
  if (e->op == BIN_IDIV || e->op == BIN_MOD)
    return lower_intdiv(c, ops[e->op], a, b, e->loc, what);
  if (e->op != BIN_MATMUL)
    return elementwise2(c, ops[e->op], a, b, e->loc, what);
  if (!unify_dtypes(c, &a, &b, e->loc, what))
    return BAD;
  if (a.v->type.dtype == DT_I32) {
    ERR(c, e->loc, "'@' needs float operands, not i32; convert them with f32(x) or f64(x)");
    return BAD;
  }
  Type t;
  char err[256];
  const Type *ta = &a.v->type, *tb = &b.v->type;
  if (!ir_matmul_type(c->m, ta, tb, &t, err, sizeof err)) {
    if (ta->rank < 1 || tb->rank < 1)
      ERR(c, e->loc, "'@' needs operands of rank 1 or more, got %s and %s", tstr(c, ta),
          tstr(c, tb));
    else if (!ir_dim_eq(ta->dim[ta->rank - 1], tb->dim[tb->rank < 2 ? 0 : tb->rank - 2]))
      ERR(c, e->loc, "shapes %s and %s do not match in '@': the inner sizes differ",
          dstr(c, ta), dstr(c, tb));
    else
      ERR(c, e->loc, "shapes %s and %s do not match in '@': their batch axes (all but the "
          "last two) do not broadcast", dstr(c, ta), dstr(c, tb));
    return BAD;
  }
  return (Val){.v = lower_matmul(c, a.v, b.v, &t), .weak = a.weak && b.weak};
}

static Val lower_expr(Ctx *c, Expr *e) {
  c->b.loc = e->loc;
  switch (e->kind) {
  case EX_NUMBER:
    if (!isfinite(e->num)) {
      ERR(c, e->loc, "number '%s' is out of range", e->text ? e->text : "?");
      return BAD;
    }
    return (Val){.v = ir_const(&c->b, DT_F64, e->num), .weak = true, .integral = e->text && !strpbrk(e->text, ".eE")};
  case EX_NAME:
    {
      Binding *b = lookup(c, e->name);
      if (b)
        return b->val;
    }
    {
      Inst *sv = size_value(c, e->name); /* a size is an i32 value (section 5) */
      if (sv)
        return (Val){.v = sv, .weak = false};
    }
    if (find_fn(c, e->name) || find_builtin(e->name))
      ERR(c, e->loc, "'%s' is a function; call it with arguments, %s(...)", e->name, e->name);
    else
      ERR(c, e->loc, "unknown name '%s'", e->name);
    return BAD;
  case EX_DTYPE:
    ERR(c, e->loc, "'%s' can only be used as a conversion, like %s(x)", dtype_word(e->dtype),
        dtype_word(e->dtype));
    return BAD;
  case EX_SHAPE:
    ERR(c, e->loc, "a shape list like [2, n] is only valid as the shape argument of "
                   "reshape, broadcast or transpose");
    return BAD;
  case EX_NEG: {
    Val x = value_arg(c, e->lhs);
    if (!x.v || !not_bool(c, x, e->loc))
      return BAD;
    c->b.loc = e->loc;
    if (x.weak && x.v->op == OP_const)
      return (Val){.v = ir_const(&c->b, DT_F64, -x.v->num), .weak = true, .integral = x.integral};
    return (Val){.v = ir_unary(&c->b, OP_neg, x.v), .weak = x.weak, .integral = x.integral};
  }
  case EX_NOT: {
    Val x = value_arg(c, e->lhs);
    if (!x.v)
      return BAD;
    if (x.v->type.dtype != DT_BOOL) {
      ERR(c, e->loc, "'!' needs a bool operand (a comparison, like x > 0), not %s",
          x.weak ? "a number" : ir_dtype_name(x.v->type.dtype));
      return BAD;
    }
    c->b.loc = e->loc;
    return (Val){.v = ir_unary(&c->b, OP_not, x.v), .weak = false};
  }
  case EX_BINARY:
    return lower_binary(c, e);
  case EX_CALL:
    return lower_call(c, e);
  case EX_INDEX:
    return lower_index(c, e);
  case EX_TUPLE:
    ERR(c, e->loc, "a parenthesised list (a, b) is only valid after return in a function "
                   "with several results");
    return BAD;
  }
  die("bad expression kind %d", e->kind);
}

/* ---- functions ---- */

/* Check the signature and create the IR function with its parameters. */
static void declare_function(Ctx *c, FnInfo *fn) {
  Func *af = fn->ast;
  c->cur = fn;
  fn->ir = ir_func_new(c->m, af->name);
  fn->ir->exported = af->exported;
  fn->ir->loc = af->loc;
  bool ok = true;
  for (Param *p = af->params; p; p = p->next) {
    for (Param *q = af->params; q != p; q = q->next)
      if (strcmp(q->name, p->name) == 0) {
        ERR(c, p->loc, "duplicate parameter '%s' (first declared at line %d)", p->name,
            q->loc.line);
        ok = false;
      }
    Type t;
    if (p->type.dtype == AST_BOOL) {
      ERR(c, p->type.loc, "bool is not a parameter type; pass an i32 or a float and compare it");
      ok = false;
      continue;
    }
    if (!lower_type(c, &p->type, true, &t)) {
      ok = false;
      continue;
    }
    ir_add_param(c->m, fn->ir, p->name, t, p->is_const);
  }
  /* Sizes are values (section 5): a parameter may not take a size's name. */
  for (Param *p = af->params; p && ok; p = p->next)
    if (size_sym(c, p->name) >= 0) {
      ERR(c, p->loc, "parameter '%s' has the name of a size of '%s'; sizes are values, so "
                     "rename one of them", p->name, af->name);
      ok = false;
    }
  for (int r = 0; r < af->nrets; r++)
    if (af->rets[r].dtype == AST_BOOL) {
      ERR(c, af->rets[r].loc, "bool is not a result type; return i32(c) or f32(c) instead");
      ok = false;
    }
  /* Placeholder results carry the declared types until the body is lowered
   * (callers need them to type their calls). Several results are named
   * out0..outm in the C ABI (spec section 9). */
  Inst **phs = ARENA_ARRAY(c->m->arena, Inst *, af->nrets);
  const char **names = ARENA_ARRAY(c->m->arena, const char *, af->nrets);
  for (int r = 0; r < af->nrets && ok; r++) {
    Type rt;
    if (!lower_type(c, &af->rets[r], false, &rt)) {
      ok = false;
      break;
    }
    Builder b = {c->m, fn->ir, NULL, af->loc, NULL};
    phs[r] = ir_new_inst(&b, OP_param, rt, NULL, 0);
    ir_unlink(fn->ir, phs[r]);
    names[r] = af->nrets == 1 ? "out" : arena_printf(c->m->arena, "out%d", r);
    names[r] = ir_unique_name(c->m, fn->ir, names[r], "_out");
  }
  if (ok) {
    ir_set_results(c->m, fn->ir, phs, names, af->nrets);
    fn->sig_ok = true;
  }
}

/* v as a value of type t, for a var's declaration or assignment: a weak
 * value takes t's dtype, a scalar or broadcastable value is broadcast to
 * t's shape. NULL after reporting why it cannot be. */
static Inst *coerce_to_var(Ctx *c, Val v, const Type *t, const char *name, Loc loc,
                           bool init) {
  if (v.weak && t->dtype == DT_I32 && !v.integral) {
    ERR(c, loc, "a number with '.' or an exponent cannot be i32; '%s' is %s", name,
        tstr(c, t));
    return NULL;
  }
  if (v.weak && !weak_fits(c, v, t->dtype, loc))
    return NULL;
  if (v.weak && t->dtype != DT_BOOL && v.v->type.dtype != DT_BOOL)
    v = concrete(c, v, t->dtype);
  if (v.v->type.dtype != t->dtype || !ir_can_broadcast_to(&v.v->type, t)) {
    if (init)
      ERR(c, loc, "cannot initialise '%s', declared %s, with %s", name, tstr(c, t),
          tstr(c, &v.v->type));
    else
      ERR(c, loc, "cannot assign %s to '%s', a var of type %s; a var keeps the type it is "
                  "declared with", tstr(c, &v.v->type), name, tstr(c, t));
    return NULL;
  }
  return ir_broadcast(&c->b, v.v, t);
}

/* v[...] = e, += e, -= e, *= e (spec section 6): the var gets a new value,
 * equal to v off the selected positions. With positions and slices the
 * update u is e placed back with nested unslices (zeros elsewhere): `+=` is
 * v + u, `-=` v - u, `*=` v * (u + 1 - m) and `=` select(m, u, v), m the
 * same placement of ones; so an overwritten position gets no gradient from
 * its old value (section 7). With one tensor index, `+=` and `-=` add a
 * scatter-add (repeated positions accumulate). */
static Inst *lower_index_assign(Ctx *c, Stmt *s, Binding *b) {
  Inst *v = b->val.v;
  Val e = lower_expr(c, s->value);
  if (!v || !e.v)
    return NULL;
  const Type *vt = &v->type;
  if (s->nindex > vt->rank) {
    ERR(c, s->name_loc, "too many indices: %d for '%s' of rank %d", s->nindex, s->name, vt->rank);
    return NULL;
  }
  if (!weak_fits(c, e, vt->dtype, s->value->loc))
    return NULL;
  e = concrete(c, e, vt->dtype);
  if (e.v->type.dtype != vt->dtype) {
    ERR(c, s->value->loc, "cannot assign %s into '%s', a var of type %s", tstr(c, &e.v->type),
        s->name, tstr(c, vt));
    return NULL;
  }
  c->b.loc = s->loc;
  if (s->nindex == 1 && !s->index->slice) {
    Val iv = index_value(c, s->index->pos);
    if (!iv.v)
      return NULL;
    if (iv.v->type.rank > 0) { /* v[idx] += e */
      if (!s->compound || s->op == BIN_MUL) {
        ERR(c, s->loc, "with a tensor index only += and -= are supported");
        return NULL;
      }
      Inst *g = gather_along(c, v, iv.v, 0, s->loc);
      if (!g || !ir_can_broadcast_to(&e.v->type, &g->type)) {
        if (g)
          ERR(c, s->value->loc, "%s does not broadcast to the selected %s", dstr(c, &e.v->type),
              dstr(c, &g->type));
        return NULL;
      }
      Inst *u = ir_index_op(&c->b, OP_scatter_add, ir_broadcast(&c->b, e.v, &g->type), iv.v, 0, vt);
      return ir_binary(&c->b, s->op == BIN_ADD ? OP_add : OP_sub, v, u);
    }
  }
  Inst *starts[IR_MAX_RANK];
  Type before[IR_MAX_RANK];
  Inst *sel = v;
  unsigned drop = 0;
  int k = 0;
  for (Index *ix = s->index; ix; ix = ix->next, k++) {
    before[k] = sel->type;
    if (ix->slice) {
      sel = lower_slice(c, sel, k, ix);
      if (!sel)
        return NULL;
      starts[k] = sel->args[1];
      continue;
    }
    Val iv = index_value(c, ix->pos);
    if (!iv.v)
      return NULL;
    if (iv.v->type.rank > 0) {
      ERR(c, ix->loc, "a tensor index must be the only index of an assignment");
      return NULL;
    }
    Type t = sel->type;
    t.dim[k] = ir_lit(1);
    sel = ir_index_op(&c->b, OP_slice, sel, iv.v, k, &t);
    starts[k] = iv.v;
    drop |= 1u << k;
  }
  Type target = sel->type;
  target.rank = 0;
  for (int j = 0; j < sel->type.rank; j++)
    if (!(drop & (1u << j)))
      target.dim[target.rank++] = sel->type.dim[j];
  if (!ir_can_broadcast_to(&e.v->type, &target)) {
    ERR(c, s->value->loc, "%s does not broadcast to the selected %s", dstr(c, &e.v->type),
        dstr(c, &target));
    return NULL;
  }
  Inst *u = ir_reshape(&c->b, ir_broadcast(&c->b, e.v, &target), &sel->type);
  Inst *m = ir_const_like(&c->b, &sel->type, 1);
  for (int j = k - 1; j >= 0; j--) {
    u = ir_index_op(&c->b, OP_unslice, u, starts[j], j, &before[j]);
    m = ir_index_op(&c->b, OP_unslice, m, starts[j], j, &before[j]);
  }
  if (!s->compound) {
    Inst *cond = ir_binary(&c->b, OP_ne, m, ir_const_like(&c->b, vt, 0));
    return ir_select(&c->b, cond, u, v);
  }
  if (s->op == BIN_MUL)
    return ir_binary(&c->b, OP_mul, v,
                     ir_binary(&c->b, OP_add, u, ir_binary(&c->b, OP_sub, ir_const_like(&c->b, vt, 1), m)));
  return ir_binary(&c->b, s->op == BIN_ADD ? OP_add : OP_sub, v, u);
}

/* var x [: T] = e; fixes x's type: T if given (e is broadcast to it),
 * else e's; literals alone give f32, or i32 if all are integers. */
static void lower_var(Ctx *c, Stmt *s) {
  Val v = lower_expr(c, s->value);
  Type t = ir_scalar(DT_F32);
  bool ok = v.v != NULL;
  if (s->type && !lower_type(c, s->type, false, &t))
    ok = false;
  if (size_sym(c, s->name) >= 0) {
    ERR(c, s->name_loc, "'%s' is a size of '%s' and cannot be redefined; choose another name",
        s->name, c->cur->ast->name);
    ok = false;
  }
  if (ok && s->type) {
    Inst *x = coerce_to_var(c, v, &t, s->name, s->value->loc, true);
    v = (Val){.v = x};
    ok = x != NULL;
  } else if (ok) {
    DType dt = v.integral ? DT_I32 : DT_F32;
    ok = !v.weak || weak_fits(c, v, dt, s->value->loc);
    if (ok && v.weak)
      v = concrete(c, v, dt);
    v.weak = v.integral = false;
    t = v.v->type;
  }
  Binding *b = bind_kind(c, s->name, BIND_VAR, s->name_loc, ok ? v : BAD);
  b->type = t;
}

static void lower_assign(Ctx *c, Stmt *s) {
  Binding *b = lookup(c, s->name);
  if (!b) {
    ERR(c, s->name_loc, "unknown name '%s'", s->name);
    return;
  }
  switch (b->kind) {
  case BIND_VAR:
    break;
  case BIND_PARAM:
    ERR(c, s->name_loc, "cannot assign to '%s': it is a parameter; only a var can be "
                        "assigned (copy it into one first: var %s2 = %s;)", s->name, s->name,
        s->name);
    return;
  case BIND_LET:
    ERR(c, s->name_loc, "cannot assign to '%s': it is declared with 'let' (line %d); "
                        "declare it with 'var' to assign it", s->name, b->loc.line);
    return;
  case BIND_INDEX:
    ERR(c, s->name_loc, "cannot assign to '%s': it is the index of the loop at line %d",
        s->name, b->loc.line);
    return;
  }
  if (s->index) {
    Inst *x = lower_index_assign(c, s, b);
    if (x)
      b->val = (Val){.v = x};
    return;
  }
  Val v = lower_expr(c, s->value);
  if (!v.v || !b->val.v)
    return;
  if (s->compound) {
    static const char *const names[] = {[BIN_ADD] = "'+='", [BIN_SUB] = "'-='",
                                        [BIN_MUL] = "'*='"};
    static const Op ops[] = {[BIN_ADD] = OP_add, [BIN_SUB] = OP_sub, [BIN_MUL] = OP_mul};
    c->b.loc = s->loc;
    v = elementwise2(c, ops[s->op], b->val, v, s->loc, names[s->op]);
    if (!v.v)
      return;
  }
  c->b.loc = s->loc;
  Inst *x = coerce_to_var(c, v, &b->type, s->name, s->compound ? s->loc : s->value->loc,
                          false);
  if (x)
    b->val = (Val){.v = x};
}

/* ---- loops and branches ----
 *
 * A loop carries every var of an enclosing block that its body assigns, and
 * an `if` yields every such var either branch assigns. Which vars those are
 * is found before the body is lowered (the body must read them from the
 * region's block arguments), by a scan of the statements that skips names
 * the body itself declares. */

static bool lower_stmts(Ctx *c, Stmt *list, bool top);

typedef struct Scan {
  PtrVec inner;   /* names declared inside, innermost last */
  PtrVec vars;    /* Binding*: outer vars assigned, each once */
} Scan;

static bool declared_inside(Scan *sc, const char *name) {
  for (int k = sc->inner.len - 1; k >= 0; k--)
    if (strcmp(sc->inner.data[k], name) == 0)
      return true;
  return false;
}

static void scan_assigned(Ctx *c, Stmt *list, Scan *sc) {
  int mark = sc->inner.len;
  for (Stmt *s = list; s; s = s->next) {
    switch (s->kind) {
    case ST_LET:
    case ST_VAR:
      if (s->name)
        vec_push(&sc->inner, (void *)s->name);
      for (Arg *a = s->names; a; a = a->next) /* let (a, b) = ... */
        vec_push(&sc->inner, (void *)a->kw);
      break;
    case ST_ASSIGN: {
      if (declared_inside(sc, s->name))
        break;
      Binding *b = lookup(c, s->name);
      if (!b || b->kind != BIND_VAR || !b->val.v)
        break; /* reported when the assignment is lowered */
      bool seen = false;
      for (int k = 0; k < sc->vars.len && !seen; k++)
        seen = sc->vars.data[k] == b;
      if (!seen)
        vec_push(&sc->vars, b);
      break;
    }
    case ST_FOR: {
      int m = sc->inner.len;
      vec_push(&sc->inner, (void *)s->name);
      scan_assigned(c, s->body, sc);
      sc->inner.len = m;
      break;
    }
    case ST_WHILE:
      scan_assigned(c, s->body, sc);
      break;
    case ST_IF:
      scan_assigned(c, s->body, sc);
      scan_assigned(c, s->orelse, sc);
      break;
    case ST_RETURN:
      break;
    }
  }
  sc->inner.len = mark;
}

/* The carried vars of a loop or branch over these blocks. */
static int carried_vars(Ctx *c, Stmt *a, Stmt *b, Binding ***out) {
  Scan sc = {{0}, {0}};
  scan_assigned(c, a, &sc);
  scan_assigned(c, b, &sc);
  vec_free(&sc.inner);
  *out = ARENA_ARRAY(c->m->arena, Binding *, sc.vars.len + 1);
  for (int k = 0; k < sc.vars.len; k++)
    (*out)[k] = sc.vars.data[k];
  int n = sc.vars.len;
  vec_free(&sc.vars);
  return n;
}

/* Lower `list` as a block into region r: its own scope, appended to r. */
static void lower_region_block(Ctx *c, Region *r, Stmt *list) {
  Builder saved = c->b;
  Binding *scope = c->scope;
  c->b.before = NULL;
  c->b.r = r;
  lower_stmts(c, list, false);
  close_scope(c, scope);
  c->b = saved;
}

static void set_yields(Ctx *c, Region *r, Binding **vars, int n) {
  Inst **ys = ARENA_ARRAY(c->m->arena, Inst *, n + 1);
  for (int k = 0; k < n; k++)
    ys[k] = vars[k]->val.v;
  ir_set_yields(c->m, r, ys, n);
}

/* After the op: each carried var is the op's result. */
static void bind_results(Ctx *c, Inst *op, Binding **vars, int n) {
  for (int k = 0; k < n; k++)
    vars[k]->val = (Val){.v = ir_proj(&c->b, op, k)};
}

/* A scalar condition of while or if; a literal false stands in after an
 * error so that the body is still checked. */
static Inst *lower_cond(Ctx *c, Expr *e, const char *what) {
  Val v = lower_expr(c, e);
  if (v.v && (v.v->type.dtype != DT_BOOL || v.v->type.rank != 0)) {
    ERR(c, e->loc, "the condition of %s must be a bool scalar (a comparison such as x > 0), "
                   "not %s", what, tstr(c, &v.v->type));
    v = BAD;
  }
  if (v.v)
    return v.v;
  Inst *z = ir_const(&c->b, DT_F32, 0);
  return ir_binary(&c->b, OP_lt, z, z);
}

/* An i32 scalar bound of a for loop. */
static Inst *lower_bound(Ctx *c, Expr *e) {
  Val v = lower_expr(c, e);
  if (v.v && v.weak && v.integral)
    v = weak_fits(c, v, DT_I32, e->loc) ? concrete(c, v, DT_I32) : BAD;
  if (v.v && (v.v->type.dtype != DT_I32 || v.v->type.rank != 0)) {
    ERR(c, e->loc, "the bounds of a for loop must be i32 scalars, not %s",
        v.weak ? "a number with '.' or an exponent" : tstr(c, &v.v->type));
    v = BAD;
  }
  return v.v ? v.v : ir_const(&c->b, DT_I32, 0);
}

static void lower_for(Ctx *c, Stmt *s) {
  Inst *lo = lower_bound(c, s->value), *hi = lower_bound(c, s->hi);
  Binding **vars;
  int n = carried_vars(c, s->body, NULL, &vars);
  Inst **args = ARENA_ARRAY(c->m->arena, Inst *, n + 2);
  args[0] = lo;
  args[1] = hi;
  for (int k = 0; k < n; k++)
    args[k + 2] = vars[k]->val.v;
  c->b.loc = s->loc;
  Inst *op = ir_region_op(&c->b, OP_for, args, n + 2, 1);
  Region *r = &op->regions[0];
  Inst *i = ir_add_region_param(c->m, r, ir_scalar(DT_I32));
  i->name = s->name;
  for (int k = 0; k < n; k++)
    vars[k]->val.v = ir_add_region_param(c->m, r, vars[k]->type);
  Binding *scope = c->scope;
  bind_kind(c, s->name, BIND_INDEX, s->name_loc, (Val){.v = i});
  lower_region_block(c, r, s->body);
  close_scope(c, scope);
  set_yields(c, r, vars, n);
  c->b.loc = s->loc;
  bind_results(c, op, vars, n);
}

static void lower_while(Ctx *c, Stmt *s) {
  Binding **vars;
  int n = carried_vars(c, s->body, NULL, &vars);
  Inst **args = ARENA_ARRAY(c->m->arena, Inst *, n + 1);
  for (int k = 0; k < n; k++)
    args[k] = vars[k]->val.v;
  c->b.loc = s->loc;
  Inst *op = ir_region_op(&c->b, OP_while, args, n, 2);
  /* the condition, evaluated before each iteration */
  Region *cond = &op->regions[0];
  for (int k = 0; k < n; k++)
    vars[k]->val.v = ir_add_region_param(c->m, cond, vars[k]->type);
  Builder saved = c->b;
  c->b.before = NULL;
  c->b.r = cond;
  Inst *cv = lower_cond(c, s->value, "while");
  c->b = saved;
  ir_set_yields(c->m, cond, &cv, 1);
  Region *body = &op->regions[1];
  for (int k = 0; k < n; k++)
    vars[k]->val.v = ir_add_region_param(c->m, body, vars[k]->type);
  lower_region_block(c, body, s->body);
  set_yields(c, body, vars, n);
  c->b.loc = s->loc;
  bind_results(c, op, vars, n);
}

static void lower_if(Ctx *c, Stmt *s) {
  Inst *cond = lower_cond(c, s->value, "if");
  Binding **vars;
  int n = carried_vars(c, s->body, s->orelse, &vars);
  c->b.loc = s->loc;
  Inst *op = ir_region_op(&c->b, OP_if, &cond, 1, 2);
  Val *before = ARENA_ARRAY(c->m->arena, Val, n + 1);
  for (int k = 0; k < n; k++)
    before[k] = vars[k]->val;
  for (int r = 0; r < 2; r++) {
    lower_region_block(c, &op->regions[r], r == 0 ? s->body : s->orelse);
    set_yields(c, &op->regions[r], vars, n);
    for (int k = 0; k < n; k++)
      vars[k]->val = before[k];
  }
  c->b.loc = s->loc;
  bind_results(c, op, vars, n);
}

/* A let may not rebind a size of its function (sizes are values). */
static bool let_name_ok(Ctx *c, const char *name, Loc loc) {
  if (size_sym(c, name) < 0)
    return true;
  ERR(c, loc, "'%s' is a size of '%s' and cannot be redefined; choose another name", name,
      c->cur->ast->name);
  return false;
}

/* let (a, b) = f(x); binds each result of a user function of as many. */
static void lower_let_names(Ctx *c, Stmt *s) {
  Val *vals = ARENA_ARRAY(c->m->arena, Val, s->nnames);
  for (int k = 0; k < s->nnames; k++)
    vals[k] = BAD;
  Expr *e = s->value;
  FnInfo *fn = e->kind == EX_CALL && e->callee->kind == EX_NAME ? find_fn(c, e->callee->name) : NULL;
  if (s->type) {
    ERR(c, s->type->loc, "a type annotation cannot follow a list of names");
  } else if (!fn) {
    ERR(c, e->loc, "let (a, b) = ... needs a call of a function with several results");
  } else if (fn->ast->nrets != s->nnames) {
    ERR(c, e->loc, "'%s' returns %d result%s, but %d names are bound", fn->ast->name,
        fn->ast->nrets, fn->ast->nrets == 1 ? "" : "s", s->nnames);
  } else if (!lower_user_call_n(c, e, fn, -1, vals, s->nnames)) {
    for (int k = 0; k < s->nnames; k++)
      vals[k] = BAD;
  }
  int k = 0;
  for (Arg *a = s->names; a; a = a->next, k++) {
    for (Arg *b = s->names; b != a; b = b->next)
      if (strcmp(a->kw, b->kw) == 0)
        ERR(c, a->loc, "'%s' is bound twice in this let", a->kw);
    bind_kind(c, a->kw, BIND_LET, a->loc, let_name_ok(c, a->kw, a->loc) ? vals[k] : BAD);
  }
}

/* The value returned as result r (checked against its declared type). */
static Inst *return_value(Ctx *c, int r, Expr *e) {
  Func *af = c->cur->ast;
  Type want = c->cur->ir->results[r]->type;
  Val v = lower_expr(c, e);
  if (!v.v)
    return NULL;
  if (v.v->type.dtype == DT_BOOL) {
    not_bool(c, v, e->loc);
    return NULL;
  }
  if (!weak_fits(c, v, want.dtype, e->loc))
    return NULL;
  v = concrete(c, v, want.dtype);
  if (ir_type_eq(&want, &v.v->type))
    return v.v;
  if (af->nrets == 1)
    ERR(c, e->loc, "'%s' is declared to return %s but this is %s", af->name, tstr(c, &want),
        tstr(c, &v.v->type));
  else
    ERR(c, e->loc, "result %d of '%s' is declared %s but this is %s", r, af->name,
        tstr(c, &want), tstr(c, &v.v->type));
  return NULL;
}

static void lower_return(Ctx *c, Stmt *s) {
  Func *af = c->cur->ast;
  Function *f = c->cur->ir;
  Inst **got = ARENA_ARRAY(c->m->arena, Inst *, af->nrets);
  if (af->nrets == 1) {
    got[0] = return_value(c, 0, s->value);
  } else if (s->value->kind != EX_TUPLE || s->value->nargs != af->nrets) {
    int n = s->value->kind == EX_TUPLE ? s->value->nargs : 1;
    ERR(c, s->value->loc, "'%s' returns %d results: return (a, b%s) with one value for each; "
                          "this gives %d", af->name, af->nrets, af->nrets > 2 ? ", ..." : "", n);
    return;
  } else {
    int r = 0;
    for (Arg *a = s->value->args; a; a = a->next, r++)
      got[r] = return_value(c, r, a->value);
  }
  for (int r = 0; r < af->nrets; r++)
    if (!got[r])
      return;
  for (int r = 0; r < af->nrets; r++)
    f->results[r] = got[r];
}

/* let x [: T] = e;  or  let (a, b) = f(x); */
static void lower_let(Ctx *c, Stmt *s) {
  if (s->names) {
    lower_let_names(c, s);
    return;
  }
  Val v = lower_expr(c, s->value);
  if (!let_name_ok(c, s->name, s->name_loc))
    v = BAD;
  if (s->type && v.v) {
    Type t;
    if (!lower_type(c, s->type, false, &t)) {
      /* reported */
    } else if (!weak_fits(c, v, t.dtype, s->value->loc)) {
      v = BAD;
    } else {
      v = concrete(c, v, t.dtype);
      if (!ir_type_eq(&t, &v.v->type)) {
        ERR(c, s->value->loc, "'%s' is declared %s but the expression is %s", s->name,
            tstr(c, &t), tstr(c, &v.v->type));
        v = BAD;
      }
    }
  }
  bind_kind(c, s->name, BIND_LET, s->name_loc, v);
}

/* The statements of a block; `top`: the function body, which alone may
 * (and must) end with the return. Returns whether it saw the return. */
static bool lower_stmts(Ctx *c, Stmt *list, bool top) {
  for (Stmt *s = list; s; s = s->next) {
    switch (s->kind) {
    case ST_LET: lower_let(c, s); break;
    case ST_VAR: lower_var(c, s); break;
    case ST_ASSIGN: lower_assign(c, s); break;
    case ST_FOR: lower_for(c, s); break;
    case ST_WHILE: lower_while(c, s); break;
    case ST_IF: lower_if(c, s); break;
    case ST_RETURN:
      if (!top) {
        ERR(c, s->loc, "'return' cannot be inside a loop or a branch; a function body ends "
                       "with its only return");
        break;
      }
      if (s->next)
        ERR(c, s->next->loc, "nothing may follow the return statement; a function body ends "
                             "with its only return");
      else
        lower_return(c, s);
      return true;
    }
  }
  return false;
}

static void lower_body(Ctx *c, FnInfo *fn) {
  Func *af = fn->ast;
  c->cur = fn;
  c->b = (Builder){c->m, fn->ir, NULL, af->loc, NULL};
  close_scope(c, NULL);
  for (int k = 0; k < fn->ir->nparams; k++)
    bind_kind(c, fn->ir->params[k]->name, BIND_PARAM, fn->ir->params[k]->loc,
              (Val){.v = fn->ir->params[k]});
  if (!lower_stmts(c, af->body, true))
    ERR(c, af->end_loc, "'%s' does not end with a return statement", af->name);
}

/* Calls inside one expression tree, for the recursion check. */
static void collect_calls(Ctx *c, Expr *e, PtrVec *out) {
  if (!e)
    return;
  if (e->kind == EX_CALL) {
    Expr *callee = e->callee;
    if (callee->kind == EX_NAME && find_fn(c, callee->name))
      vec_push(out, e);
    if (callee->kind == EX_NAME && strcmp(callee->name, "grad") == 0 && e->args &&
        e->args->value->kind == EX_NAME && find_fn(c, e->args->value->name))
      vec_push(out, e->args->value);
    collect_calls(c, callee, out);
    for (Arg *a = e->args; a; a = a->next)
      collect_calls(c, a->value, out);
  }
  collect_calls(c, e->lhs, out);
  collect_calls(c, e->rhs, out);
}

static void collect_stmt_calls(Ctx *c, Stmt *list, PtrVec *out) {
  for (Stmt *s = list; s; s = s->next) {
    collect_calls(c, s->value, out);
    collect_calls(c, s->hi, out);
    collect_stmt_calls(c, s->body, out);
    collect_stmt_calls(c, s->orelse, out);
  }
}

static const char *callee_name(Expr *e) { return e->kind == EX_CALL ? e->callee->name : e->name; }

/* Depth-first search for a cycle through fn; reports the call that closes
 * it. Returns true if one was found. */
static bool find_cycle(Ctx *c, FnInfo *fn) {
  if (fn->state == 2)
    return false;
  fn->state = 1;
  PtrVec calls = {0};
  collect_stmt_calls(c, fn->ast->body, &calls);
  bool found = false;
  for (int i = 0; i < calls.len && !found; i++) {
    Expr *e = calls.data[i];
    FnInfo *g = find_fn(c, callee_name(e));
    if (g->state == 1) {
      if (g == fn)
        ERR(c, e->loc, "'%s' calls itself; recursion is not allowed", fn->ast->name);
      else
        ERR(c, e->loc, "recursive call: '%s' calls '%s', which leads back to '%s'; recursion "
                       "is not allowed", fn->ast->name, g->ast->name, fn->ast->name);
      found = true;
    } else {
      found = find_cycle(c, g);
    }
  }
  vec_free(&calls);
  fn->state = 2;
  return found;
}

/* Exports become C functions: a C keyword, `main` or a name the runtime
 * reserves would not link or not compile in the header. */
static bool c_symbol_ok(const char *name) {
  static const char *const reserved[] = {
      "auto", "break", "case", "char", "const", "continue", "default", "do", "double",
      "else", "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long",
      "register", "restrict", "return", "short", "signed", "sizeof", "static", "struct",
      "switch", "typedef", "union", "unsigned", "void", "volatile", "while", "main",
      "bool", "true", "false", "alignas", "alignof", "static_assert", "thread_local", NULL};
  for (int k = 0; reserved[k]; k++)
    if (strcmp(reserved[k], name) == 0)
      return false;
  return strncmp(name, "sg_", 3) != 0 && name[0] != '_';
}

/* An export named like a C library function would replace it in the whole
 * program (frontend/libc_names.c). Its gradient's name cannot clash: no
 * C library symbol ends in _grad or _vjp. */
static bool export_clashes_with_libc(Ctx *c, Func *f) {
  const char *lib = libc_defines(f->name);
  if (lib)
    ERR(c, f->loc, "cannot export '%s': %s has a function of that name, which the export would "
                   "replace in the whole program", f->name, lib);
  return lib != NULL;
}

/* Calls are inlined everywhere (docs/internals.md), so a chain of functions
 * that each call the next twice doubles per level. Programs whose expansion
 * would not fit are rejected here, with the function where it happens,
 * rather than exhausting memory in the inliner. */
enum { MAX_EXPANDED_OPS = 200000 };

static double expanded_size(Function *f) {
  if (f->mark)
    return (double)f->mark;
  double n = 0;
  for (Inst *i = f->first; i; i = ir_walk_next(i))
    if (i->op == OP_call)
      n += expanded_size(i->callee);
    else if (i->op == OP_grad) /* its primal and adjoint sweeps */
      n += 4 * expanded_size(i->callee);
    else
      n += 1;
  f->mark = n > MAX_EXPANDED_OPS ? MAX_EXPANDED_OPS + 1 : (int)n + 1;
  return n;
}

/* Reports the function where the expansion first goes past the limit: one
 * too large itself whose callees are all within it. */
static void check_expansion(Ctx *c) {
  for (int i = 0; i < c->nfns; i++)
    c->fns[i].ir->mark = 0;
  for (int i = 0; i < c->nfns; i++)
    expanded_size(c->fns[i].ir);
  for (int i = 0; i < c->nfns; i++) {
    Function *f = c->fns[i].ir;
    bool callee_too_large = false;
    for (Inst *k = f->first; k; k = ir_walk_next(k))
      if ((k->op == OP_call || k->op == OP_grad) && k->callee->mark > MAX_EXPANDED_OPS)
        callee_too_large = true;
    if (f->mark > MAX_EXPANDED_OPS && !callee_too_large) {
      ERR(c, c->fns[i].ast->loc,
          "'%s' is too large once its calls are inlined (more than %d operations); every "
          "call is inlined, so calling a function twice doubles its size",
          c->fns[i].ast->name, MAX_EXPANDED_OPS);
      break;
    }
  }
  for (int i = 0; i < c->nfns; i++)
    c->fns[i].ir->mark = 0;
}

/* Whether f or a function it calls has a loop or a branch (memoized in
 * Function.mark: 1 no, 2 yes). */
static bool has_regions(Function *f) {
  if (f->mark)
    return f->mark == 2;
  f->mark = 1;
  for (Inst *i = f->first; i; i = ir_walk_next(i))
    if (i->nregions || ((i->op == OP_call || i->op == OP_grad) && has_regions(i->callee))) {
      f->mark = 2;
      break;
    }
  return f->mark == 2;
}

/* The AD pass cannot differentiate the adjoint of a loop again (the unloop
 * op has no adjoint yet), so a gradient of such a function inside a
 * program, which is itself differentiated, is rejected rather than risk a
 * wrong second-order number, unless its value is only ever used under
 * stop_gradient (then no derivative flows through it). */
static void mark_unstopped(PtrMap *used, Inst *x, const Inst *user) {
  if (x->op == OP_grad && (!user || user->op != OP_stop_gradient))
    *ptrmap_slot(used, x) = x;
}

static void check_grad_of_loops(Ctx *c) {
  for (int i = 0; i < c->nfns; i++)
    c->fns[i].ir->mark = 0;
  for (int i = 0; i < c->nfns; i++) {
    Function *f = c->fns[i].ir;
    PtrMap used = {0}; /* grads with a use not under stop_gradient */
    for (Inst *k = f->first; k; k = ir_walk_next(k)) {
      for (int a = 0; a < k->nargs; a++)
        mark_unstopped(&used, k->args[a], k);
      for (int r = 0; r < k->nregions; r++)
        for (int y = 0; y < k->regions[r].nyields; y++)
          mark_unstopped(&used, k->regions[r].yields[y], NULL);
    }
    for (int r = 0; r < f->nresults; r++)
      mark_unstopped(&used, f->results[r], NULL);
    for (Inst *k = f->first; k; k = ir_walk_next(k))
      if (k->op == OP_grad && ptrmap_get(&used, k) && has_regions(k->callee))
        ERR(c, k->loc, "grad(%s, ...) is not supported yet: '%s' has loops or branches, and "
                       "differentiating their gradient again (second order) is not implemented",
            k->callee->name, k->callee->name);
    ptrmap_free(&used);
  }
  for (int i = 0; i < c->nfns; i++)
    c->fns[i].ir->mark = 0;
}

Module *lower_program(Program *prog, Diag *diag) {
  Ctx c = {0};
  c.m = ir_module_new();
  c.m->file = diag->file ? arena_strdup(c.m->arena, diag->file) : NULL;
  c.d = diag;
  c.fns = xmalloc(sizeof(FnInfo) * (size_t)(prog->nfuncs + 1));
  for (c.fn_cap = 16; c.fn_cap < 2 * (size_t)prog->nfuncs; c.fn_cap *= 2)
    ;
  c.fn_index = xmalloc(sizeof(int) * c.fn_cap);
  memset(c.fn_index, 0, sizeof(int) * c.fn_cap);
  for (Func *f = prog->funcs; f; f = f->next) {
    FnInfo *prev = find_fn(&c, f->name);
    if (prev) {
      ERR(&c, f->loc, "function '%s' is already defined at line %d", f->name,
          prev->ast->loc.line);
      continue;
    }
    if (find_builtin(f->name)) {
      ERR(&c, f->loc, "'%s' is a built-in operation and cannot be redefined", f->name);
      continue;
    }
    if (f->exported && !c_symbol_ok(f->name)) {
      ERR(&c, f->loc, "cannot export '%s': it is not a valid C function name", f->name);
      continue;
    }
    if (f->exported && export_clashes_with_libc(&c, f))
      continue;
    add_fn(&c, f);
  }
  /* Exports must not collide with the gradient functions generated for them. */
  for (int i = 0; i < c.nfns; i++)
    for (int j = 0; j < c.nfns; j++) {
      Func *a = c.fns[i].ast, *b = c.fns[j].ast;
      size_t la = strlen(a->name);
      const char *gen = a->ret.rank == 0 && a->nrets == 1 ? "_grad" : "_vjp";
      if (i != j && a->exported && b->exported && strncmp(a->name, b->name, la) == 0 &&
          strcmp(b->name + la, gen) == 0)
        ERR(&c, b->loc, "export '%s' clashes with the gradient function generated for '%s'",
            b->name, a->name);
    }
  for (int i = 0; i < c.nfns; i++)
    declare_function(&c, &c.fns[i]);
  for (int i = 0; i < c.nfns; i++)
    find_cycle(&c, &c.fns[i]);
  for (int i = 0; i < c.nfns; i++)
    if (c.fns[i].sig_ok)
      lower_body(&c, &c.fns[i]);
  if (diag->errors == 0)
    check_expansion(&c);
  if (diag->errors == 0)
    check_grad_of_loops(&c);
  free(c.fns);
  free(c.fn_index);
  free(c.names.key);
  free(c.names.innermost);
  if (diag->errors) {
    ir_module_free(c.m);
    return NULL;
  }
  return c.m;
}
