/* The bodies of derived functions (ir/derive.c gives their signatures):
 * each kind of transform built from its (flat) base by the AD passes, one
 * entry of the table below per kind: grad and vjp by reverse mode
 * (ad_build), jvp by forward mode (tg_build), jacobian and hessian in vector
 * mode (vmap_build over one of them, applied to an identity basis: all
 * columns or rows in one sweep). passes/inline.c calls derive_build when it
 * first inlines a call of a derived function; the body (which may call the
 * flat helper functions made here) is then inlined like any other, and
 * differentiated again like any code where a higher order needs it. */
#include <string.h>

#include "passes.h"

static Function *build_grad(Module *m, Function *d, const char *name) {
  AdSpec spec = {.only_wrt = d->wrt, .at = d->loc};
  return ad_build(m, d->base, name, &spec);
}

static Function *build_vjp(Module *m, Function *d, const char *name) {
  AdSpec spec = {.only_wrt = d->wrt, .seeds = true, .at = d->loc};
  return ad_build(m, d->base, name, &spec);
}

static Function *build_jvp(Module *m, Function *d, const char *name) {
  bool *wrt = xmalloc(sizeof(bool) * (size_t)d->base->nparams);
  for (int k = 0; k < d->base->nparams; k++)
    wrt[k] = k == d->wrt;
  Function *g = tg_build(m, d->base, name, wrt, "t_", false);
  free(wrt);
  return g;
}

/* ---- vector mode: jacobian and hessian ---- */

static int degree(const SizePoly *p) {
  int d = 0;
  for (int k = 0; k < p->nterms; k++)
    d = p->t[k].nvars > d ? p->t[k].nvars : d;
  return d;
}

/* Whether a has fewer elements than b, when the sizes are only known as
 * polynomials: literals compare as numbers; otherwise the lower degree is
 * smaller (n < n * m, 3 < n), and at equal degrees the smaller sum of the
 * top-degree coefficients (n < 2 * n). Equal: not fewer. */
static bool fewer(const SizePoly *a, const SizePoly *b) {
  int da = degree(a), db = degree(b);
  if (da != db)
    return da < db;
  int64_t ca = 0, cb = 0;
  for (int k = 0; k < a->nterms; k++)
    ca += a->t[k].nvars == da ? a->t[k].coef : 0;
  for (int k = 0; k < b->nterms; k++)
    cb += b->t[k].nvars == db ? b->t[k].coef : 0;
  return ca < cb;
}

/* The identity basis of B directions in a space of type t (B its element
 * count): [B, t's dims], row b the b-th unit vector. */
static Inst *basis(Builder *b, Dim B, const Type *t) {
  Type n = ir_scalar(DT_I32), nn = n, col = n;
  n.rank = 1, n.dim[0] = B;
  nn.rank = 2, nn.dim[0] = B, nn.dim[1] = B;
  col.rank = 2, col.dim[0] = B, col.dim[1] = ir_lit(1);
  Inst *ix = ir_new_inst(b, OP_arange, n, NULL, 0);
  Inst *rows = ir_broadcast(b, ir_reshape(b, ix, &col), &nn);
  Inst *eye = ir_convert(b, ir_binary(b, OP_eq, rows, ir_broadcast(b, ix, &nn)), t->dtype);
  Type out = ir_scalar(t->dtype);
  out.rank = 1 + t->rank;
  out.dim[0] = B;
  memcpy(&out.dim[1], t->dim, sizeof(Dim) * (size_t)t->rank);
  return ir_reshape(b, eye, &out);
}

/* The result r of calling v with g's parameters then `extra`. */
static Inst *call(Builder *b, Function *v, Function *g, Inst **extra, int nextra, int r) {
  Inst **args = xmalloc(sizeof(Inst *) * (size_t)(g->nparams + nextra));
  for (int k = 0; k < g->nparams; k++)
    args[k] = g->params[k];
  for (int k = 0; k < nextra; k++)
    args[g->nparams + k] = extra[k];
  Inst *c = ir_new_inst(b, OP_call, v->results[r]->type, args, g->nparams + nextra);
  c->callee = v;
  c->wrt = r;
  free(args);
  return c;
}

/* [B, R...] (column b the derivative along direction b) as [R..., P...]. */
static Inst *columns_last(Builder *b, Inst *t, const Type *want) {
  int perm[IR_MAX_RANK], r = t->type.rank;
  for (int k = 0; k + 1 < r; k++)
    perm[k] = k + 1;
  perm[r - 1] = 0;
  Inst *x = ir_transpose(b, t, perm);
  return ir_reshape(b, ir_convert(b, x, want->dtype), want);
}

/* A new function `name` with f's parameters, its code at *b. */
static Function *shell(Module *m, Function *f, const char *name, Builder *b, Loc at) {
  Function *g = ir_func_new(m, name);
  g->loc = at;
  for (int k = 0; k < f->nparams; k++)
    ir_add_param(m, g, f->params[k]->name, f->params[k]->type, f->params[k]->is_const);
  *b = (Builder){m, g, NULL, at, NULL};
  return g;
}

static bool *only(const Function *f, int k) {
  bool *mask = xmalloc(sizeof(bool) * (size_t)(f->nparams + 1));
  for (int j = 0; j < f->nparams; j++)
    mask[j] = j == k;
  return mask;
}

/* Columns: the tangent of f along B basis directions at once (vmap over
 * jvp), transposed to R's dims then p's. f is the base, or (hessian) its
 * gradient. */
static Function *by_columns(Module *m, Function *d, Function *f, const char *name,
                            const SizePoly *np) {
  Function *g;
  Builder b;
  Inst *p = f->params[d->wrt];
  bool *mask = only(f, d->wrt);
  Function *j = tg_build(m, f, arena_printf(m->arena, "%s.jvp", name), mask, "t_", false);
  free(mask);
  mask = only(j, j->nparams - 1);
  Dim B = ir_poly_dim(m, np);
  Function *v = vmap_build(m, j, arena_printf(m->arena, "%s.columns", name), mask, B, d->loc);
  free(mask);
  g = shell(m, f, name, &b, d->loc);
  Inst *e = basis(&b, B, &p->type);
  Inst **res = xmalloc(sizeof(Inst *) * (size_t)(d->nresults + 1));
  for (int r = 0; r < d->nresults; r++)
    res[r] = columns_last(&b, call(&b, v, g, &e, 1, r), &d->results[r]->type);
  ir_set_results(m, g, res, d->result_names, d->nresults);
  free(res);
  return g;
}

/* Rows: per float result, the cotangent of p for B basis seeds at once
 * (vmap over vjp, the other results' seeds zero). */
static Function *by_rows(Module *m, Function *d, const char *name) {
  Function *f = d->base, *g;
  Builder b;
  AdSpec spec = {.only_wrt = d->wrt, .seeds = true, .at = d->loc};
  Function *a = ad_build(m, f, arena_printf(m->arena, "%s.vjp", name), &spec);
  int ns = a->nparams - f->nparams;
  Inst **res = xmalloc(sizeof(Inst *) * (size_t)(d->nresults + 1));
  Inst **seeds = xmalloc(sizeof(Inst *) * (size_t)(ns + 1));
  g = shell(m, f, name, &b, d->loc);
  for (int q = 0; q < ns; q++) {
    Inst *s = a->params[f->nparams + q];
    SizePoly n;
    if (!ir_numel_poly(m, &s->type, &n))
      die("jacobian: a result's size does not fit");
    Dim B = ir_poly_dim(m, &n);
    bool *mask = only(a, f->nparams + q);
    Function *v = vmap_build(m, a, arena_printf(m->arena, "%s.rows%d", name, q), mask, B, d->loc);
    free(mask);
    for (int k = 0; k < ns; k++)
      seeds[k] = k == q ? basis(&b, B, &s->type)
                        : ir_const_like(&b, &a->params[f->nparams + k]->type, 0);
    Inst *rows = call(&b, v, g, seeds, ns, 0);
    res[q] = ir_reshape(&b, ir_convert(&b, rows, d->results[q]->type.dtype), &d->results[q]->type);
  }
  ir_set_results(m, g, res, d->result_names, d->nresults);
  free(res);
  free(seeds);
  return g;
}

/* jacobian: by columns (forward) when p has fewer elements than the float
 * results together, by rows (reverse) otherwise (spec 6b). */
static Function *build_jacobian(Module *m, Function *d, const char *name) {
  Function *f = d->base;
  SizePoly np, nr = ir_poly_const(0), n;
  bool ok = ir_numel_poly(m, &f->params[d->wrt]->type, &np);
  for (int r = 0; r < f->nresults && ok; r++)
    if (ir_is_float(f->results[r]->type.dtype))
      ok = ir_numel_poly(m, &f->results[r]->type, &n) && ir_poly_add(m, &nr, &n, 1, &nr);
  if (!ok)
    die("jacobian: the sizes do not fit");
  return fewer(&np, &nr) ? by_columns(m, d, f, name, &np) : by_rows(m, d, name);
}

/* hessian: jacobian(grad(f, wrt=p), wrt=p) by columns, forward over
 * reverse, whatever the sizes (spec 6b). */
static Function *build_hessian(Module *m, Function *d, const char *name) {
  AdSpec spec = {.only_wrt = d->wrt, .at = d->loc};
  Function *gr = ad_build(m, d->base, arena_printf(m->arena, "%s.grad", name), &spec);
  SizePoly np;
  if (!ir_numel_poly(m, &d->base->params[d->wrt]->type, &np))
    die("hessian: the size does not fit");
  return by_columns(m, d, gr, name, &np);
}

static Function *(*const builders[DV_COUNT])(Module *m, Function *d, const char *name) = {
    [DV_GRAD] = build_grad,
    [DV_JVP] = build_jvp,
    [DV_VJP] = build_vjp,
    [DV_JACOBIAN] = build_jacobian,
    [DV_HESSIAN] = build_hessian,
};

void derive_build(Module *m, Function *d) {
  if (!builders[d->derive])
    die("no builder for %s", ir_derive_names[d->derive]);
  /* a base with rules is differentiated through them: through a call */
  Function *ruled = d->base->vjp_rule || d->base->jvp_rule ? inline_ruled(m, d->base, d->loc) : NULL;
  if (ruled)
    d->base = ruled;
  Function *g = builders[d->derive](m, d, arena_printf(m->arena, "%s.body", d->name));
  if (ruled)
    ir_remove_func(m, ruled);
  /* d takes g's body: its parameters and results are d's signature */
  bool same = g->nparams == d->nparams && g->nresults == d->nresults;
  for (int k = 0; same && k < d->nparams; k++)
    same = ir_type_eq(&g->params[k]->type, &d->params[k]->type);
  for (int k = 0; same && k < d->nresults; k++)
    same = ir_type_eq(&g->results[k]->type, &d->results[k]->type);
  if (!same)
    die("the body built for @%s does not have its signature", d->name);
  d->params = g->params;
  d->first = g->first;
  d->last = g->last;
  d->results = g->results;
  d->derive = DV_NONE;
  d->base = NULL;
  ir_remove_func(m, g);
}
