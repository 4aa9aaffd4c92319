/* Whole-program checks, after every body is lowered: no recursion, export
 * names that C and the runtime can live with, and programs whose inlined
 * size stays bounded. (A derivative the AD pass cannot take, reverse over
 * reverse through a loop, is reported by that pass: passes/ad_region.c.) */
#include "lower_internal.h"

#include "libc_names.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Calls inside one expression tree, for the recursion check. */
static void collect_calls(Ctx *c, Expr *e, PtrVec *out) {
  if (!e)
    return;
  if (e->kind == EX_CALL) {
    Expr *callee = e->callee;
    if (callee->kind == EX_NAME && lw_find_fn(c, callee->name))
      vec_push(out, e);
    const struct Builtin *bi = callee->kind == EX_NAME ? lw_find_builtin(callee->name) : NULL;
    if (bi && bi->kind == B_TRANSFORM && e->args && e->args->value->kind == EX_NAME &&
        lw_find_fn(c, e->args->value->name))
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
bool lw_find_cycle(Ctx *c, FnInfo *fn) {
  if (fn->state == 2)
    return false;
  fn->state = 1;
  PtrVec calls = {0};
  collect_stmt_calls(c, fn->ast->body, &calls);
  bool found = false;
  /* a rule is used wherever the function is: an edge like a call */
  for (Rule *r = fn->ast->rules; r && !found; r = r->next) {
    FnInfo *g = lw_find_fn(c, r->fn);
    if (!g)
      continue;
    if (g->state == 1) {
      if (g == fn)
        ERR(c, r->fn_loc, "'%s' is its own %s rule; recursion is not allowed", fn->ast->name,
            r->jvp ? "jvp" : "vjp");
      else
        ERR(c, r->fn_loc, "recursive rule: '%s' has the rule '%s', which leads back to '%s'; "
                          "recursion is not allowed", fn->ast->name, g->ast->name, fn->ast->name);
      found = true;
    } else {
      found = lw_find_cycle(c, g);
    }
  }
  for (int i = 0; i < calls.len && !found; i++) {
    Expr *e = calls.data[i];
    FnInfo *g = lw_find_fn(c, callee_name(e));
    if (g->state == 1) {
      if (g == fn)
        ERR(c, e->loc, "'%s' calls itself; recursion is not allowed", fn->ast->name);
      else
        ERR(c, e->loc, "recursive call: '%s' calls '%s', which leads back to '%s'; recursion "
                       "is not allowed", fn->ast->name, g->ast->name, fn->ast->name);
      found = true;
    } else {
      found = lw_find_cycle(c, g);
    }
  }
  vec_free(&calls);
  fn->state = 2;
  return found;
}

/* Exports become C functions: a C keyword, `main` or a name the runtime
 * reserves would not link or not compile in the header. */
bool lw_c_symbol_ok(const char *name) {
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
bool lw_export_clashes_with_libc(Ctx *c, Func *f) {
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

/* A derived function costs a multiple of its base: a primal and a
 * derivative sweep (grad, vjp, jvp; vector mode the same with B columns
 * side by side), two derivative sweeps for a Hessian. */
static const int derived_factor[DV_COUNT] = {1, 4, 3, 4, 4, 12};

static double expanded_size(Function *f) {
  if (f->mark)
    return (double)f->mark;
  double n = 0;
  if (f->derive)
    n = derived_factor[f->derive] * expanded_size(f->base);
  for (Inst *i = f->first; i; i = ir_walk_next(i))
    if (i->op == OP_call)
      n += expanded_size(i->callee);
    else
      n += 1;
  f->mark = n > MAX_EXPANDED_OPS ? MAX_EXPANDED_OPS + 1 : (int)n + 1;
  return n;
}

/* Reports the function where the expansion first goes past the limit: one
 * too large itself whose callees are all within it. */
void lw_check_expansion(Ctx *c) {
  for (Function *f = c->m->funcs; f; f = f->next) /* derived functions too */
    f->mark = 0;
  for (int i = 0; i < c->nfns; i++)
    expanded_size(c->fns[i].ir);
  for (int i = 0; i < c->nfns; i++) {
    Function *f = c->fns[i].ir;
    bool callee_too_large = false;
    for (Inst *k = f->first; k; k = ir_walk_next(k))
      if (k->op == OP_call && !k->callee->derive && k->callee->mark > MAX_EXPANDED_OPS)
        callee_too_large = true; /* (a transform is the caller's: it has no body to blame) */
    if (f->mark > MAX_EXPANDED_OPS && !callee_too_large) {
      ERR(c, c->fns[i].ast->loc,
          "'%s' is too large once its calls are inlined (more than %d operations); every "
          "call is inlined, so calling a function twice doubles its size",
          c->fns[i].ast->name, MAX_EXPANDED_OPS);
      break;
    }
  }
  for (Function *f = c->m->funcs; f; f = f->next)
    f->mark = 0;
}
