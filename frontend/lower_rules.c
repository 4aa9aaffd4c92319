/* Custom derivative rules (spec 6b, v3): `@vjp(g)` and `@jvp(h)` lines
 * before a function. Each names a user function whose signature must be the
 * one the rule implies, checked here with the expected signature in the
 * message; the IR function then points at its rules (Function.vjp_rule,
 * jvp_rule), and passes/inline.c inlines each call of it as a `custom` op
 * carrying them. The recursion check (lower_check.c) follows rules like
 * calls. For f(p1..pn) -> (R0..Rm):
 *
 *   vjp rule  g(p1..pn, y0..ym, dy...) -> a cotangent per non-const float p
 *             (the dy for the float results only)
 *   jvp rule  h(p1..pn, t...) -> a tangent per float result
 *             (a t per non-const float parameter) */
#include "lower_internal.h"

#include <string.h>

/* The rule's parameter and result types, as f implies them. */
typedef struct Expected {
  Type *params, *results;
  const char **names;
  int nparams, nresults;
} Expected;

static bool differentiable(const Inst *p) { return !p->is_const && ir_is_float(p->type.dtype); }

static Expected expect_rule(Ctx *c, Function *f, bool jvp) {
  Expected e;
  int n = f->nparams, m = f->nresults;
  e.params = ARENA_ARRAY(c->m->arena, Type, 2 * (n + m) + 1);
  e.results = ARENA_ARRAY(c->m->arena, Type, n + m + 1);
  e.names = ARENA_ARRAY(c->m->arena, const char *, 2 * (n + m) + 1);
  e.nparams = e.nresults = 0;
  for (int k = 0; k < n; k++) {
    e.names[e.nparams] = f->params[k]->name;
    e.params[e.nparams++] = f->params[k]->type;
  }
  if (jvp) {
    for (int k = 0; k < n; k++)
      if (differentiable(f->params[k])) {
        e.names[e.nparams] = arena_printf(c->m->arena, "t_%s", f->params[k]->name);
        e.params[e.nparams++] = f->params[k]->type;
      }
    for (int r = 0; r < m; r++)
      if (ir_is_float(f->results[r]->type.dtype))
        e.results[e.nresults++] = f->results[r]->type;
    return e;
  }
  for (int r = 0; r < m; r++) {
    e.names[e.nparams] = m == 1 ? "y" : arena_printf(c->m->arena, "y%d", r);
    e.params[e.nparams++] = f->results[r]->type;
  }
  for (int r = 0; r < m; r++)
    if (ir_is_float(f->results[r]->type.dtype)) {
      e.names[e.nparams] = m == 1 ? "dy" : arena_printf(c->m->arena, "dy%d", r);
      e.params[e.nparams++] = f->results[r]->type;
    }
  for (int k = 0; k < n; k++)
    if (differentiable(f->params[k]))
      e.results[e.nresults++] = f->params[k]->type;
  return e;
}

/* "g(x: f32[n], y: f32[n], dy: f32[n]) -> f32[n]" */
static const char *signature(Ctx *c, const char *name, const Expected *e) {
  char buf[256];
  const char *s = arena_printf(c->m->arena, "%s(", name);
  for (int k = 0; k < e->nparams; k++)
    s = arena_printf(c->m->arena, "%s%s%s: %s", s, k ? ", " : "", e->names[k],
                     ir_type_str(c->m, &e->params[k], buf, sizeof buf));
  s = arena_printf(c->m->arena, "%s) -> %s", s, e->nresults == 1 ? "" : "(");
  for (int r = 0; r < e->nresults; r++)
    s = arena_printf(c->m->arena, "%s%s%s", s, r ? ", " : "",
                     ir_type_str(c->m, &e->results[r], buf, sizeof buf));
  return e->nresults == 1 ? s : arena_printf(c->m->arena, "%s)", s);
}

/* Whether t (a type of the rule, over its own size names) is `want` (over
 * f's), binding the rule's names in map as they first appear. */
static bool same_type(Module *m, const Type *t, const Type *want, Dim *map, bool bind) {
  if (t->dtype != want->dtype || t->rank != want->rank)
    return false;
  for (int j = 0; j < t->rank; j++) {
    Dim d = t->dim[j];
    if (d.sym >= 0 && !ir_sym_derived(m, d.sym) && bind && map[d.sym].sym == -2)
      map[d.sym] = want->dim[j];
    Dim got;
    if (!ir_subst_dim(m, d, map, &got) || !ir_dim_eq(got, want->dim[j]))
      return false;
  }
  return true;
}

/* The mismatch between rule g and what f implies, or NULL. */
static const char *mismatch(Ctx *c, Function *g, const Expected *e) {
  char buf[256];
  if (g->nparams != e->nparams)
    return arena_printf(c->m->arena, "it takes %d parameter%s", g->nparams,
                        g->nparams == 1 ? "" : "s");
  if (g->nresults != e->nresults)
    return arena_printf(c->m->arena, "it returns %d result%s", g->nresults,
                        g->nresults == 1 ? "" : "s");
  Dim *map = ARENA_ARRAY(c->m->arena, Dim, c->m->nsyms + 1);
  for (int s = 0; s < c->m->nsyms; s++)
    map[s] = (Dim){-1, -2};
  for (int k = 0; k < g->nparams; k++)
    if (!same_type(c->m, &g->params[k]->type, &e->params[k], map, true))
      return arena_printf(c->m->arena, "its parameter '%s' is %s", g->params[k]->name,
                          ir_type_str(c->m, &g->params[k]->type, buf, sizeof buf));
  for (int r = 0; r < g->nresults; r++)
    if (!same_type(c->m, &g->results[r]->type, &e->results[r], map, false))
      return arena_printf(c->m->arena, "its result %d is %s", r,
                          ir_type_str(c->m, &g->results[r]->type, buf, sizeof buf));
  return NULL;
}

static void resolve_rules(Ctx *c, FnInfo *fn) {
  Function *f = fn->ir;
  for (Rule *r = fn->ast->rules; r; r = r->next) {
    const char *kind = r->jvp ? "jvp" : "vjp";
    Function **slot = r->jvp ? &f->jvp_rule : &f->vjp_rule;
    FnInfo *g = lw_find_fn(c, r->fn);
    if (*slot) {
      ERR(c, r->loc, "'%s' has two %s rules", fn->ast->name, kind);
      continue;
    }
    if (!g) {
      ERR(c, r->fn_loc, "unknown function '%s' in @%s(...): a rule names a function of the "
                        "program", r->fn, kind);
      continue;
    }
    if (!g->sig_ok || !fn->sig_ok)
      continue;
    Expected e = expect_rule(c, f, r->jvp);
    const char *why = mismatch(c, g->ir, &e);
    if (why) {
      ERR(c, r->fn_loc, "the %s rule of '%s' must be %s; %s", kind, fn->ast->name,
          signature(c, r->fn, &e), why);
      continue;
    }
    *slot = g->ir;
  }
}

void lw_resolve_rules(Ctx *c) {
  for (int i = 0; i < c->nfns; i++)
    if (c->fns[i].ast->rules)
      resolve_rules(c, &c->fns[i]);
}
