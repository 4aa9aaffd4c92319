/* Inlining: every call and every grad(f, wrt=p)(args) disappears.
 *
 * All calls are inlined, by design: the language has no recursion, shapes
 * are symbolic and differ per call site, and a flat body lets the AD pass
 * see one straight-line program and the code generator fuse across what were
 * function boundaries (docs/internals.md).
 *
 * Functions are flattened callees first. A `grad` becomes a call of the
 * gradient function ad_build makes from its (already flat) callee, which is
 * then inlined like any call; so a gradient inside a differentiated function
 * is differentiated again by the AD pass, exactly.
 *
 * Requires: an acyclic call graph (the checker rejects recursion).
 * Keeps: types, with each callee's symbolic sizes replaced by the caller's;
 * an argument passed for a const parameter is wrapped in stop_gradient.
 * Afterwards no call or grad remains, and non-exported functions are gone. */
#include <string.h>

#include "passes.h"

enum { NEW = 0, BUSY, FLAT };

typedef struct GradCache {
  Function *callee;
  int wrt;
  Function *grad;
} GradCache;

typedef struct Inliner {
  Module *m;
  GradCache *cache;
  int ncache, capcache;
} Inliner;

/* Size expressions are rebuilt over the caller's sizes (ir/size.c). */
static Type subst(Module *m, const Type *t, const Dim *map) {
  Type r = *t;
  for (int j = 0; j < t->rank; j++)
    if (!ir_subst_dim(m, t->dim[j], map, &r.dim[j]))
      die("size expression too large after inlining");
  return r;
}

/* Errors at run time point at the call site; -g's line table also needs
 * where the code was written (the innermost function, when inlined twice). */
static Loc inlined_loc(Loc call, Loc at, const Function *callee) {
  Loc l = call;
  if (at.src_line) {
    l.src_line = at.src_line, l.src_col = at.src_col;
    l.inlined = at.inlined, l.inlined_line = at.inlined_line;
  } else {
    l.src_line = at.line, l.src_col = at.col;
    l.inlined = callee->name, l.inlined_line = callee->loc.line;
  }
  return l;
}

typedef struct Retype {
  Module *m;
  const Dim *map;
  Loc call;
  const Function *callee;
} Retype;

/* A copied instruction (or block argument): the callee's sizes become the
 * caller's, and its location the call site's. */
static void retype(Inst *c, void *ctx) {
  Retype *rt = ctx;
  c->type = subst(rt->m, &c->type, rt->map);
  c->attr = subst(rt->m, &c->attr, rt->map);
  c->loc = inlined_loc(rt->call, c->loc, rt->callee);
}

/* Replace `call` by a copy of the callee's body. */
static void inline_call(Inliner *in, Function *f, Inst *call) {
  Module *m = in->m;
  ir_resolve_args(call);
  Function *callee = call->callee;
  Dim *map = xmalloc(sizeof(Dim) * (size_t)(m->nsyms + 1));
  for (int s = 0; s < m->nsyms; s++)
    map[s] = (Dim){-1, -2};
  Builder b = {m, f, call, call->loc, NULL};
  for (int k = 0; k < callee->nparams; k++) {
    const Type *pt = &callee->params[k]->type, *at = &call->args[k]->type;
    for (int j = 0; j < pt->rank; j++)
      if (pt->dim[j].sym >= 0)
        map[pt->dim[j].sym] = at->dim[j];
    /* A const parameter is constant for differentiation (section 7): what
     * is passed for it is, as if wrapped in stop_gradient. */
    Inst *arg = call->args[k];
    if (callee->params[k]->is_const && arg->op != OP_stop_gradient)
      arg = ir_unary(&b, OP_stop_gradient, arg);
    callee->params[k]->aux = arg;
  }
  Retype rt = {m, map, call->loc, callee};
  for (Inst *i = callee->first; i; i = i->next)
    ir_copy_inst(&b, i, retype, &rt);
  /* a call of a function with several results takes result number wrt */
  Inst *result = callee->results[call->op == OP_call && call->wrt > 0 ? call->wrt : 0]->aux;
  for (int k = 0; k < callee->nparams; k++)
    callee->params[k]->aux = NULL;
  for (Inst *i = callee->first; i; i = ir_walk_next(i)) {
    i->aux = NULL;
    for (int r = 0; r < i->nregions; r++)
      for (int k = 0; k < i->regions[r].nparams; k++)
        i->regions[r].params[k]->aux = NULL;
  }
  ir_forward(call, result);
  ir_unlink(f, call);
  free(map);
}

static Function *gradient_of(Inliner *in, Function *callee, int wrt) {
  for (int k = 0; k < in->ncache; k++)
    if (in->cache[k].callee == callee && in->cache[k].wrt == wrt)
      return in->cache[k].grad;
  Function *g = ad_build(in->m, callee,
                     arena_printf(in->m->arena, "%s.grad.%s", callee->name,
                                  callee->params[wrt]->name),
                     wrt, false);
  g->mark = FLAT;
  if (in->ncache == in->capcache) {
    in->capcache = in->capcache ? 2 * in->capcache : 8;
    in->cache = xrealloc(in->cache, sizeof(GradCache) * (size_t)in->capcache);
  }
  in->cache[in->ncache++] = (GradCache){callee, wrt, g};
  return g;
}

static void flatten(Inliner *in, Function *f) {
  if (f->mark == FLAT)
    return;
  if (f->mark == BUSY)
    die("recursive call to @%s reached the inliner", f->name);
  f->mark = BUSY;
  /* The calls, at any depth of regions; what inlining brings in is flat. */
  PtrVec calls = {0};
  for (Inst *i = f->first; i; i = ir_walk_next(i))
    if (i->op == OP_call || i->op == OP_grad)
      vec_push(&calls, i);
  for (int k = 0; k < calls.len; k++)
    flatten(in, ((Inst *)calls.data[k])->callee);
  for (int k = 0; k < calls.len; k++) {
    Inst *i = calls.data[k];
    if (i->op == OP_grad) {
      i->callee = gradient_of(in, i->callee, i->wrt);
      i->op = OP_call;
      i->wrt = 0; /* the gradient function's one result */
    }
    inline_call(in, f, i);
  }
  vec_free(&calls);
  ir_resolve_func(f);
  f->mark = FLAT;
}

void pass_inline(Module *m) {
  Inliner in = {m, NULL, 0, 0};
  for (Function *f = m->funcs; f; f = f->next)
    f->mark = NEW;
  for (Function *f = m->funcs; f; f = f->next)
    flatten(&in, f);
  for (Function *f = m->funcs, *next; f; f = next) {
    next = f->next;
    f->mark = 0;
    if (!f->exported)
      ir_remove_func(m, f);
  }
  free(in.cache);
}
