/* Functions and statements: a function's signature, let, var, assignment,
 * return, and the loops and branches, each a region instruction carrying
 * the vars its body assigns (spec section 8). */
#include "lower_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- functions ---- */

/* Check the signature and create the IR function with its parameters. */
void lw_declare_function(Ctx *c, FnInfo *fn) {
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
    if (lw_size_sym(c, p->name) >= 0) {
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
        lw_tstr(c, t));
    return NULL;
  }
  if (v.weak && !lw_weak_fits(c, v, t->dtype, loc))
    return NULL;
  if (v.weak && t->dtype != DT_BOOL && v.v->type.dtype != DT_BOOL)
    v = lw_concrete(c, v, t->dtype);
  if (v.v->type.dtype != t->dtype || !ir_can_broadcast_to(&v.v->type, t)) {
    if (init)
      ERR(c, loc, "cannot initialise '%s', declared %s, with %s", name, lw_tstr(c, t),
          lw_tstr(c, &v.v->type));
    else
      ERR(c, loc, "cannot assign %s to '%s', a var of type %s; a var keeps the type it is "
                  "declared with", lw_tstr(c, &v.v->type), name, lw_tstr(c, t));
    return NULL;
  }
  return ir_broadcast(&c->b, v.v, t);
}

/* var x [: T] = e; fixes x's type: T if given (e is broadcast to it),
 * else e's; literals alone give f32, or i32 if all are integers (and a
 * comparison of them a bool). */
static void lower_var(Ctx *c, Stmt *s) {
  Val v = lower_expr(c, s->value);
  Type t = ir_scalar(DT_F32);
  bool ok = v.v != NULL;
  if (s->type && !lower_type(c, s->type, false, &t))
    ok = false;
  if (lw_size_sym(c, s->name) >= 0) {
    ERR(c, s->name_loc, "'%s' is a size of '%s' and cannot be redefined; choose another name",
        s->name, c->cur->ast->name);
    ok = false;
  }
  if (ok && s->type) {
    Inst *x = coerce_to_var(c, v, &t, s->name, s->value->loc, true);
    v = (Val){.v = x};
    ok = x != NULL;
  } else if (ok) {
    DType dt = v.integral && !v.not_arith ? DT_I32 : DT_F32;
    ok = !v.weak || lw_weak_fits(c, v, dt, s->value->loc);
    if (ok && v.weak && v.v->type.dtype != DT_BOOL) /* 0.5 > 0.1 stays a bool */
      v = lw_concrete(c, v, dt);
    v.weak = v.integral = false;
    t = v.v->type;
  }
  Binding *b = lw_bind_kind(c, s->name, BIND_VAR, s->name_loc, ok ? v : BAD);
  b->type = t;
}

static void lower_assign(Ctx *c, Stmt *s) {
  Binding *b = lw_lookup(c, s->name);
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
      lw_set_value(c, b, (Val){.v = x});
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
    v = lw_elementwise2(c, ops[s->op], b->val, v, s->loc, names[s->op]);
    if (!v.v)
      return;
  }
  c->b.loc = s->loc;
  Inst *x = coerce_to_var(c, v, &b->type, s->name, s->compound ? s->loc : s->value->loc,
                          false);
  if (x)
    lw_set_value(c, b, (Val){.v = x});
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
      Binding *b = lw_lookup(c, s->name);
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
  lw_close_scope(c, scope);
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
    lw_set_value(c, vars[k], (Val){.v = ir_proj(&c->b, op, k)});
}

/* A scalar condition of while or if; a literal false stands in after an
 * error so that the body is still checked. */
static Inst *lower_cond(Ctx *c, Expr *e, const char *what) {
  Val v = lower_expr(c, e);
  if (v.v && (v.v->type.dtype != DT_BOOL || v.v->type.rank != 0)) {
    ERR(c, e->loc, "the condition of %s must be a bool scalar (a comparison such as x > 0), "
                   "not %s", what, lw_tstr(c, &v.v->type));
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
    v = lw_weak_fits(c, v, DT_I32, e->loc) ? lw_concrete(c, v, DT_I32) : BAD;
  if (v.v && (v.v->type.dtype != DT_I32 || v.v->type.rank != 0)) {
    ERR(c, e->loc, "the bounds of a for loop must be i32 scalars, not %s",
        v.weak ? "a number with '.' or an exponent" : lw_tstr(c, &v.v->type));
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
  i->name = arena_strdup(c->m->arena, s->name); /* (the AST's is freed) */
  for (int k = 0; k < n; k++)
    lw_set_value(c, vars[k], (Val){.v = ir_add_region_param(c->m, r, vars[k]->type)});
  Binding *scope = c->scope;
  lw_bind_kind(c, s->name, BIND_INDEX, s->name_loc, (Val){.v = i});
  lower_region_block(c, r, s->body);
  lw_close_scope(c, scope);
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
    lw_set_value(c, vars[k], (Val){.v = ir_add_region_param(c->m, cond, vars[k]->type)});
  Builder saved = c->b;
  c->b.before = NULL;
  c->b.r = cond;
  Inst *cv = lower_cond(c, s->value, "while");
  c->b = saved;
  ir_set_yields(c->m, cond, &cv, 1);
  Region *body = &op->regions[1];
  for (int k = 0; k < n; k++)
    lw_set_value(c, vars[k], (Val){.v = ir_add_region_param(c->m, body, vars[k]->type)});
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
  if (lw_size_sym(c, name) < 0)
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
  bool bad = false;
  Function *fn = e->kind == EX_CALL ? lw_callee(c, e->callee, &bad) : NULL;
  if (s->type) {
    ERR(c, s->type->loc, "a type annotation cannot follow a list of names");
  } else if (bad) {
    /* reported */
  } else if (!fn) {
    ERR(c, e->loc, "let (a, b) = ... needs a call of a function with several results");
  } else if (fn->nresults != s->nnames) {
    ERR(c, e->loc, "'%s' returns %d result%s, but %d names are bound",
        ir_func_display(c->m, fn), fn->nresults, fn->nresults == 1 ? "" : "s", s->nnames);
  } else if (!lower_user_call_n(c, e, fn, vals, s->nnames)) {
    for (int k = 0; k < s->nnames; k++)
      vals[k] = BAD;
  }
  int k = 0;
  for (Arg *a = s->names; a; a = a->next, k++) {
    for (Arg *b = s->names; b != a; b = b->next)
      if (strcmp(a->kw, b->kw) == 0)
        ERR(c, a->loc, "'%s' is bound twice in this let", a->kw);
    lw_bind_kind(c, a->kw, BIND_LET, a->loc, let_name_ok(c, a->kw, a->loc) ? vals[k] : BAD);
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
    lw_not_bool(c, v, e->loc);
    return NULL;
  }
  if (!lw_weak_fits(c, v, want.dtype, e->loc))
    return NULL;
  v = lw_concrete(c, v, want.dtype);
  if (ir_type_eq(&want, &v.v->type))
    return v.v;
  if (af->nrets == 1)
    ERR(c, e->loc, "'%s' is declared to return %s but this is %s", af->name, lw_tstr(c, &want),
        lw_tstr(c, &v.v->type));
  else
    ERR(c, e->loc, "result %d of '%s' is declared %s but this is %s", r, af->name,
        lw_tstr(c, &want), lw_tstr(c, &v.v->type));
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
    } else if (!lw_weak_fits(c, v, t.dtype, s->value->loc)) {
      v = BAD;
    } else {
      v = lw_concrete(c, v, t.dtype);
      if (!ir_type_eq(&t, &v.v->type)) {
        ERR(c, s->value->loc, "'%s' is declared %s but the expression is %s", s->name,
            lw_tstr(c, &t), lw_tstr(c, &v.v->type));
        v = BAD;
      }
    }
  }
  lw_bind_kind(c, s->name, BIND_LET, s->name_loc, v);
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

void lower_body(Ctx *c, FnInfo *fn) {
  Func *af = fn->ast;
  c->cur = fn;
  c->b = (Builder){c->m, fn->ir, NULL, af->loc, NULL};
  lw_close_scope(c, NULL);
  for (int k = 0; k < fn->ir->nparams; k++)
    lw_bind_kind(c, fn->ir->params[k]->name, BIND_PARAM, fn->ir->params[k]->loc,
              (Val){.v = fn->ir->params[k]});
  if (!lower_stmts(c, af->body, true))
    ERR(c, af->end_loc, "'%s' does not end with a return statement", af->name);
}

