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
 * only ever sees elementwise operands of one shape.
 *
 * This file holds names, types, dtypes and broadcasting, expressions, and
 * the entry point; lower_internal.h lists the other files, one construct
 * each. */
#include "lower_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

char *lw_tstr(Ctx *c, const Type *t) {
  char buf[512];
  return arena_strdup(c->m->arena, ir_type_str(c->m, t, buf, sizeof buf));
}
char *lw_dstr(Ctx *c, const Type *t) {
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

FnInfo *lw_find_fn(Ctx *c, const char *name) {
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

void lw_set_value(Ctx *c, Binding *b, Val v) {
  b->val = v;
  /* The value a let or var names carries the name, for -g's variables
   * (codegen/cg_debug.c); a value with a name already (a parameter,
   * another let) keeps its own. */
  if (v.v && !v.v->name && (b->kind == BIND_LET || b->kind == BIND_VAR))
    v.v->name = arena_strdup(c->m->arena, b->name); /* (the AST's is freed) */
}

Binding *lw_bind_kind(Ctx *c, const char *name, BindKind kind, Loc loc, Val v) {
  Binding *b = ARENA_NEW(c->m->arena, Binding);
  b->name = name;
  b->kind = kind;
  b->loc = loc;
  lw_set_value(c, b, v);
  b->up = c->scope;
  c->scope = b;
  Binding **in = innermost_slot(c, name);
  b->shadowed = *in;
  *in = b;
  return b;
}

/* Closes the bindings made since `scope` was the innermost one. */
void lw_close_scope(Ctx *c, Binding *scope) {
  for (; c->scope != scope; c->scope = c->scope->up)
    *innermost_slot(c, c->scope->name) = c->scope->shadowed;
}

Binding *lw_lookup(Ctx *c, const char *name) {
  return *innermost_slot(c, name);
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
bool lower_dims(Ctx *c, AstDim *dims, int n, Loc loc, bool bind, Type *t) {
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
int lw_size_sym(Ctx *c, const char *name) {
  for (int s = 0; s < c->m->nsyms; s++)
    if (strcmp(c->m->syms[s], name) == 0)
      return sym_bound(c, s) ? s : -1;
  return -1;
}

/* The i32 scalar holding size `name`, or NULL if it is not a size. */
static Inst *size_value(Ctx *c, const char *name) {
  int s = lw_size_sym(c, name);
  if (s < 0)
    return NULL;
  Type t = ir_scalar(DT_I32);
  t.rank = 1;
  t.dim[0] = (Dim){0, s};
  return ir_count(&c->b, &t, 1u, DT_I32);
}

bool lower_type(Ctx *c, AstType *at, bool bind, Type *t) {
  *t = ir_scalar((DType)at->dtype);
  return lower_dims(c, at->dims, at->rank, at->loc, bind, t);
}

const char *lw_dtype_word(AstDType dt) { return ir_dtype_name((DType)dt); }

/* ---- values ---- */

/* The weak expression v again, computed in dtype dt: each literal one of
 * dt, each op the same op on dt operands. A bool operand (a select's
 * condition) is not weak and stays; an operand used twice is rebuilt once. */
static Inst *in_dtype(Ctx *c, Inst *v, DType dt, PtrMap *memo) {
  if (v->type.dtype == DT_BOOL)
    return v;
  Inst *r = ptrmap_get(memo, v);
  if (r)
    return r;
  if (v->op == OP_const) {
    r = ir_const(&c->b, dt, dt == DT_I32 ? trunc(v->num) : v->num);
  } else {
    Inst *args[4];
    for (int k = 0; k < v->nargs; k++)
      args[k] = in_dtype(c, v->args[k], dt, memo);
    Type t = v->type;
    t.dtype = dt;
    r = ir_clone_inst(&c->b, v, args);
    r->type = t;
  }
  *ptrmap_slot(memo, v) = r;
  return r;
}

/* Give a weak value the dtype `dt` (section 3): the expression of literals
 * is computed in dt, as if each literal had been written with it, so that
 * `x + 65536 * 65536` wraps as i32 arithmetic does and `0.1 + 0.2` adds two
 * f32 numbers (not f64 ones rounded once). */
Val lw_concrete(Ctx *c, Val x, DType dt) {
  if (!x.v || !x.weak)
    return x;
  PtrMap memo = {0};
  Inst *v = in_dtype(c, x.v, dt, &memo);
  ptrmap_free(&memo);
  if (v->type.dtype != dt) /* a weak bool (1 == 0) converted: f64(1 == 0) */
    v = ir_convert(&c->b, v, dt);
  return (Val){.v = v, .weak = false};
}

bool lw_not_bool(Ctx *c, Val x, Loc loc) {
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
/* The first literal of weak expression v outside i32's range, or NULL. */
static const Inst *too_big(const Inst *v, PtrMap *seen) {
  void **s = ptrmap_slot(seen, v);
  if (*s || v->type.dtype == DT_BOOL)
    return NULL;
  *s = (void *)v;
  if (v->op == OP_const)
    return v->num < -2147483648.0 || v->num > 2147483647.0 ? v : NULL;
  for (int k = 0; k < v->nargs; k++) {
    const Inst *b = too_big(v->args[k], seen);
    if (b)
      return b;
  }
  return NULL;
}

bool lw_weak_fits(Ctx *c, Val x, DType dt, Loc loc) {
  if (!x.weak || dt != DT_I32)
    return true;
  if (!x.integral) {
    ERR(c, loc, "a number with a '.' or an exponent cannot be an i32; write an integer, or "
                "convert the other side with f32(x) or f64(x)");
    return false;
  }
  PtrMap seen = {0};
  const Inst *k = too_big(x.v, &seen);
  ptrmap_free(&seen);
  if (k) {
    ERR(c, loc, "the integer %.0f does not fit in i32 (-2147483648 to 2147483647)", k->num);
    return false;
  }
  return true;
}

/* Make two operands agree on a dtype: weak takes the other's; f32, f64 and
 * i32 never mix implicitly (section 5). */
bool lw_unify_dtypes(Ctx *c, Val *a, Val *b, Loc loc, const char *what) {
  if (!a->v || !b->v || !lw_not_bool(c, *a, loc) || !lw_not_bool(c, *b, loc))
    return false;
  if (a->weak && !b->weak) {
    if (!lw_weak_fits(c, *a, b->v->type.dtype, loc))
      return false;
    *a = lw_concrete(c, *a, b->v->type.dtype);
  } else if (b->weak && !a->weak) {
    if (!lw_weak_fits(c, *b, a->v->type.dtype, loc))
      return false;
    *b = lw_concrete(c, *b, a->v->type.dtype);
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
bool lw_need_float(Ctx *c, Val x, Loc loc, const char *what) {
  if (x.v && x.v->type.dtype == DT_I32) {
    ERR(c, loc, "%s needs a float operand, not i32; convert it with f32(x) or f64(x)", what);
    return false;
  }
  return true;
}

/* Shapes align on the right, so [n] meets the last axis of [n, c]. When
 * the shorter operand's dims are the longer one's leading dims, say how to
 * pair them instead: reshape(y, [n, 1]). */
static const char *reshape_hint(Ctx *c, const Val *a, const Val *b) {
  const Val *lo = a->v->type.rank < b->v->type.rank ? a : b, *hi = lo == a ? b : a;
  const Type *tl = &lo->v->type, *th = &hi->v->type;
  if (tl->rank == 0 || tl->rank == th->rank)
    return "";
  Type want = *tl;
  for (int k = 0; k < tl->rank; k++)
    if (!ir_dim_eq(tl->dim[k], th->dim[k]))
      return "";
  while (want.rank < th->rank)
    want.dim[want.rank++] = ir_lit(1);
  if (lo->name)
    return arena_printf(c->m->arena, "; shapes align on the right: to line %s up with the "
                        "leading axes, write reshape(%s, %s)", lw_dstr(c, tl), lo->name,
                        lw_dstr(c, &want));
  return arena_printf(c->m->arena, "; shapes align on the right: to line %s up with the "
                      "leading axes, reshape it to %s", lw_dstr(c, tl), lw_dstr(c, &want));
}

/* Broadcast both to their common shape, or report why they do not. */
bool lw_broadcast_pair(Ctx *c, Val *a, Val *b, Loc loc, const char *what) {
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
    const char *hint = reshape_hint(c, a, b);
    ERR(c, loc, "shapes %s and %s do not broadcast in %s%s", lw_dstr(c, ta), lw_dstr(c, tb), what,
        *hint ? hint : why);
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

Val lw_elementwise2(Ctx *c, Op op, Val a, Val b, Loc loc, const char *what) {
  if (!lw_unify_dtypes(c, &a, &b, loc, what))
    return BAD;
  if (a.v->type.dtype == DT_I32 && !ir_op_is(op, F_INT)) {
    if (op == OP_div)
      ERR(c, loc, "'/' is not defined on i32; use '//' for floor division, or convert with "
                  "f32(x) or f64(x)");
    else
      ERR(c, loc, "%s needs float operands, not i32; convert them with f32(x) or f64(x)", what);
    return BAD;
  }
  if (ir_is_float(a.v->type.dtype) && ir_op_is(op, F_INTONLY)) {
    ERR(c, loc, "%s needs i32 operands, not %s%s", what, ir_dtype_name(a.v->type.dtype),
        op == OP_idiv ? "; for floats write floor(a / b)" : "");
    return BAD;
  }
  if (!lw_broadcast_pair(c, &a, &b, loc, what))
    return BAD;
  bool integral = a.integral && b.integral && (op == OP_add || op == OP_sub || op == OP_mul);
  return (Val){.v = ir_binary(&c->b, op, a.v, b.v), .weak = a.weak && b.weak, .integral = integral,
               .not_arith = a.not_arith || b.not_arith};
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
    if (!lw_weak_fits(c, a, DT_I32, loc) || !lw_weak_fits(c, b, DT_I32, loc))
      return BAD;
    a = lw_concrete(c, a, DT_I32);
    b = lw_concrete(c, b, DT_I32);
  }
  if (a.weak && b.weak) {
    ERR(c, loc, "%s needs i32 operands, not numbers with a '.' or an exponent", what);
    return BAD;
  }
  return lw_elementwise2(c, op, a, b, loc, what);
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
  if (!lw_broadcast_pair(c, &a, &b, loc, what))
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
  Val a = lw_value_arg(c, e->lhs), b = lw_value_arg(c, e->rhs);
  if (!a.v || !b.v)
    return BAD;
  const char *what = binop_name(e->op);
  if (e->op == BIN_AND || e->op == BIN_OR)
    return lower_logic(c, ops[e->op], a, b, e->loc, what);
  if (e->op == BIN_IDIV || e->op == BIN_MOD)
    return lower_intdiv(c, ops[e->op], a, b, e->loc, what);
  if (e->op != BIN_MATMUL)
    return lw_elementwise2(c, ops[e->op], a, b, e->loc, what);
  if (!lw_unify_dtypes(c, &a, &b, e->loc, what))
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
      ERR(c, e->loc, "'@' needs operands of rank 1 or more, got %s and %s", lw_tstr(c, ta),
          lw_tstr(c, tb));
    else if (!ir_dim_eq(ta->dim[ta->rank - 1], tb->dim[tb->rank < 2 ? 0 : tb->rank - 2]))
      ERR(c, e->loc, "shapes %s and %s do not match in '@': the inner sizes differ",
          lw_dstr(c, ta), lw_dstr(c, tb));
    else
      ERR(c, e->loc, "shapes %s and %s do not match in '@': their batch axes (all but the "
          "last two) do not broadcast", lw_dstr(c, ta), lw_dstr(c, tb));
    return BAD;
  }
  return (Val){.v = lower_matmul(c, a.v, b.v, &t), .weak = a.weak && b.weak};
}

Val lower_expr(Ctx *c, Expr *e) {
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
      Binding *b = lw_lookup(c, e->name);
      if (b) {
        Val v = b->val;
        v.name = b->name;
        return v;
      }
    }
    {
      Inst *sv = size_value(c, e->name); /* a size is an i32 value (section 5) */
      if (sv)
        return (Val){.v = sv, .weak = false};
    }
    if (lw_find_fn(c, e->name) || lw_find_builtin(e->name))
      ERR(c, e->loc, "'%s' is a function; call it with arguments, %s(...)", e->name, e->name);
    else
      ERR(c, e->loc, "unknown name '%s'", e->name);
    return BAD;
  case EX_DTYPE:
    ERR(c, e->loc, "'%s' can only be used as a conversion, like %s(x)", lw_dtype_word(e->dtype),
        lw_dtype_word(e->dtype));
    return BAD;
  case EX_SHAPE:
    ERR(c, e->loc, "a shape list like [2, n] is only valid as the shape argument of "
                   "reshape, broadcast or transpose");
    return BAD;
  case EX_NEG: {
    Val x = lw_value_arg(c, e->lhs);
    if (!x.v || !lw_not_bool(c, x, e->loc))
      return BAD;
    c->b.loc = e->loc;
    if (x.weak && x.v->op == OP_const)
      return (Val){.v = ir_const(&c->b, DT_F64, -x.v->num), .weak = true, .integral = x.integral};
    return (Val){.v = ir_unary(&c->b, OP_neg, x.v), .weak = x.weak, .integral = x.integral, .not_arith = x.not_arith};
  }
  case EX_NOT: {
    Val x = lw_value_arg(c, e->lhs);
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
    FnInfo *prev = lw_find_fn(&c, f->name);
    if (prev) {
      ERR(&c, f->loc, "function '%s' is already defined at line %d", f->name,
          prev->ast->loc.line);
      continue;
    }
    if (lw_find_builtin(f->name)) {
      ERR(&c, f->loc, "'%s' is a built-in operation and cannot be redefined", f->name);
      continue;
    }
    if (f->exported && !lw_c_symbol_ok(f->name)) {
      ERR(&c, f->loc, "cannot export '%s': it is not a valid C function name", f->name);
      continue;
    }
    if (f->exported && lw_export_clashes_with_libc(&c, f))
      continue;
    add_fn(&c, f);
  }
  /* Exports must not collide with the derivative functions generated for
   * them, whichever --exports asks for (one lookup per name: 10,000 exports
   * compared pairwise were 10^8 string comparisons). */
  for (int i = 0; i < c.nfns; i++) {
    Func *a = c.fns[i].ast;
    if (!a->exported)
      continue;
    const char *gens[3] = {a->ret.rank == 0 && a->nrets == 1 ? "_grad" : "_vjp", "_jvp", "_hvp"};
    for (int g = 0; g < 3; g++) {
      char *name = xmalloc(strlen(a->name) + 6);
      strcpy(name, a->name);
      strcat(name, gens[g]);
      FnInfo *b = lw_find_fn(&c, name);
      if (b && b->ast->exported)
        ERR(&c, b->ast->loc, "export '%s' clashes with the %s function generated for '%s'",
            b->ast->name, g ? "derivative" : "gradient", a->name);
      free(name);
    }
  }
  for (int i = 0; i < c.nfns; i++)
    lw_declare_function(&c, &c.fns[i]);
  lw_resolve_rules(&c);
  for (int i = 0; i < c.nfns; i++)
    lw_find_cycle(&c, &c.fns[i]);
  for (int i = 0; i < c.nfns; i++)
    if (c.fns[i].sig_ok)
      lower_body(&c, &c.fns[i]);
  if (diag->errors == 0)
    lw_check_expansion(&c);
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
