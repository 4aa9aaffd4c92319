/* Inlining: every call disappears.
 *
 * All calls are inlined, by design: the language has no recursion, shapes
 * are symbolic and differ per call site, and a flat body lets the AD pass
 * see one straight-line program and the code generator fuse across what were
 * function boundaries (docs/internals.md).
 *
 * Functions are flattened callees first. A derived function (a transform
 * such as grad(f, wrt=p), ir/derive.c) gets its body from passes/derive.c,
 * built from its flat base, and is then inlined like any function; so a
 * derivative inside a differentiated function is differentiated again by
 * the AD passes, exactly.
 *
 * Requires: an acyclic call graph (the checker rejects recursion).
 * Keeps: types, with each callee's symbolic sizes replaced by the caller's;
 * an argument passed for a const parameter is wrapped in stop_gradient.
 * Afterwards no call remains, and non-exported functions are gone. */
#include <string.h>

#include "passes.h"

enum { NEW = 0, BUSY, FLAT };

/* Size expressions are rebuilt over the caller's sizes (ir/size.c). */
static Type subst(Module *m, const Type *t, const Dim *map) {
  Type r = *t;
  for (int j = 0; j < t->rank; j++)
    if (!ir_subst_dim(m, t->dim[j], map, &r.dim[j]))
      die("size expression too large after inlining");
  return r;
}

/* The .sg function whose code a function holds: a derivative (`loss.grad.w`,
 * made by the AD passes) holds its base's. */
static const char *source_name(Module *m, const Function *f) {
  const char *dot = strchr(f->name, '.');
  return dot ? arena_strndup(m->arena, f->name, (size_t)(dot - f->name)) : f->name;
}

/* Errors at run time point at the call site; -g's line table also needs
 * where the code was written (the innermost function, when inlined twice). */
static Loc inlined_loc(Module *m, Loc call, Loc at, const Function *callee) {
  Loc l = call;
  if (at.src_line) {
    l.src_line = at.src_line, l.src_col = at.src_col;
    l.inlined = at.inlined, l.inlined_line = at.inlined_line;
  } else {
    l.src_line = at.line, l.src_col = at.col;
    l.inlined = source_name(m, callee), l.inlined_line = callee->loc.line;
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
  c->loc = inlined_loc(rt->m, rt->call, c->loc, rt->callee);
}

/* A copy of callee's body at b, its parameters bound to vals[k] (whose
 * types give the callee's sizes); its results are then callee->results[r]
 * ->aux, until unbind. */
static void copy_body(Module *m, Builder *b, Function *callee, Inst *const *vals, Loc call) {
  Dim *map = xmalloc(sizeof(Dim) * (size_t)(m->nsyms + 1));
  for (int s = 0; s < m->nsyms; s++)
    map[s] = (Dim){-1, -2};
  for (int k = 0; k < callee->nparams; k++) {
    const Type *pt = &callee->params[k]->type, *at = &vals[k]->type;
    for (int j = 0; j < pt->rank; j++)
      if (pt->dim[j].sym >= 0)
        map[pt->dim[j].sym] = at->dim[j];
    callee->params[k]->aux = vals[k];
  }
  Retype rt = {m, map, call, callee};
  for (Inst *i = callee->first; i; i = i->next)
    ir_copy_inst(b, i, retype, &rt);
  free(map);
}

static void unbind(Function *callee) {
  for (int k = 0; k < callee->nparams; k++)
    callee->params[k]->aux = NULL;
  for (Inst *i = callee->first; i; i = ir_walk_next(i)) {
    i->aux = NULL;
    for (int r = 0; r < i->nregions; r++)
      for (int k = 0; k < i->regions[r].nparams; k++)
        i->regions[r].params[k]->aux = NULL;
  }
}

/* The call's arguments, each one passed for a const parameter wrapped in
 * stop_gradient: it is constant for differentiation (section 7). */
static Inst **arguments(Builder *b, Inst *call) {
  Function *callee = call->callee;
  Inst **args = xmalloc(sizeof(Inst *) * (size_t)(call->nargs + 1));
  for (int k = 0; k < call->nargs; k++) {
    args[k] = call->args[k];
    if (callee->params[k]->is_const && args[k]->op != OP_stop_gradient)
      args[k] = ir_unary(b, OP_stop_gradient, args[k]);
  }
  return args;
}

/* Replace `call` by a copy of the callee's body. */
static void inline_call(Module *m, Function *f, Inst *call) {
  ir_resolve_args(call);
  Builder b = {m, f, call, call->loc, NULL};
  Inst **args = arguments(&b, call);
  copy_body(m, &b, call->callee, args, call->loc);
  /* a call of a function with several results takes result number wrt */
  ir_forward(call, call->callee->results[call->wrt]->aux);
  unbind(call->callee);
  ir_unlink(f, call);
  free(args);
}

/* Region q of a custom op: a copy of rule g's body, its first parameters
 * bound to the arguments, the others to new block arguments typed like
 * `more` (the results and their cotangents, or the tangents); it yields
 * g's results. args: the call's nargs arguments. */
static void custom_rule(Module *m, Function *f, Inst *op, int q, Function *g, Inst **args,
                        int nargs, const Type *more, int nmore, Loc call) {
  Region *r = &op->regions[q];
  Inst **vals = xmalloc(sizeof(Inst *) * (size_t)(g->nparams + 1));
  for (int k = 0; k < nargs; k++)
    vals[k] = args[k];
  for (int k = 0; k < nmore; k++)
    vals[nargs + k] = ir_add_region_param(m, r, more[k]);
  Builder b = {m, f, NULL, call, r};
  copy_body(m, &b, g, vals, call);
  Inst **ys = xmalloc(sizeof(Inst *) * (size_t)(g->nresults + 1));
  for (int k = 0; k < g->nresults; k++)
    ys[k] = g->results[k]->aux;
  ir_set_yields(m, r, ys, g->nresults);
  unbind(g);
  free(ys);
  free(vals);
}

/* A call of a function with derivative rules (spec 6b): a custom op whose
 * regions are the inlined body and rules (ir.h). The calls of one
 * `let (a, b) = f(x)`, one per result with the same arguments, share one
 * op, so that a rule sees every result's cotangent at once. */
static Inst *inline_custom(Module *m, Function *f, Inst *call, Inst *prev_call, Inst *prev_op) {
  ir_resolve_args(call);
  Function *callee = call->callee;
  bool same = prev_call && prev_call->callee == callee;
  for (int k = 0; same && k < call->nargs; k++)
    same = prev_call->args[k] == call->args[k];
  if (same) {
    Inst *p = prev_op->next;
    while (p->index != call->wrt)
      p = p->next;
    ir_forward(call, p);
    ir_unlink(f, call);
    return prev_op;
  }
  Builder b = {m, f, call, call->loc, NULL};
  Inst **args = arguments(&b, call);
  Inst **diff = xmalloc(sizeof(Inst *) * (size_t)(call->nargs + 1));
  int nd = 0;
  for (int k = 0; k < call->nargs; k++)
    if (!callee->params[k]->is_const && ir_is_float(args[k]->type.dtype))
      diff[nd++] = args[k];
  Inst *op = ir_region_op(&b, OP_custom, diff, nd, 3);
  op->name = callee->name;
  op->index = (callee->vjp_rule ? CUSTOM_VJP : 0) | (callee->jvp_rule ? CUSTOM_JVP : 0);
  Builder body = {m, f, NULL, call->loc, &op->regions[0]};
  copy_body(m, &body, callee, args, call->loc);
  int n = callee->nresults;
  Inst **ys = xmalloc(sizeof(Inst *) * (size_t)(n + 1));
  Type *more = xmalloc(sizeof(Type) * (size_t)(2 * n + call->nargs + 1));
  for (int r = 0; r < n; r++)
    ys[r] = callee->results[r]->aux;
  unbind(callee);
  ir_set_yields(m, &op->regions[0], ys, n);
  if (callee->vjp_rule) { /* y..., then dy per float result */
    int nm = 0;
    for (int r = 0; r < n; r++)
      more[nm++] = ys[r]->type;
    for (int r = 0; r < n; r++)
      if (ir_is_float(ys[r]->type.dtype))
        more[nm++] = ys[r]->type;
    custom_rule(m, f, op, 1, callee->vjp_rule, args, call->nargs, more, nm, call->loc);
  }
  for (int k = 0; k < nd; k++)
    more[k] = diff[k]->type;
  if (callee->jvp_rule)
    custom_rule(m, f, op, 2, callee->jvp_rule, args, call->nargs, more, nd, call->loc);
  Inst *res = NULL;
  for (int r = 0; r < n; r++) { /* the projs right after the op */
    Inst *p = ir_proj(&b, op, r);
    if (r == call->wrt)
      res = p;
  }
  ir_forward(call, res);
  ir_unlink(f, call);
  free(ys);
  free(more);
  free(diff);
  free(args);
  return op;
}

Function *inline_ruled(Module *m, Function *f, Loc at) {
  Function *w = ir_func_new(m, arena_printf(m->arena, "%s.ruled", f->name));
  w->loc = at;
  for (int k = 0; k < f->nparams; k++)
    ir_add_param(m, w, f->params[k]->name, f->params[k]->type, f->params[k]->is_const);
  Builder b = {m, w, NULL, at, NULL};
  Inst **calls = xmalloc(sizeof(Inst *) * (size_t)(f->nresults + 1));
  for (int r = 0; r < f->nresults; r++) {
    calls[r] = ir_new_inst(&b, OP_call, f->results[r]->type, w->params, w->nparams);
    calls[r]->callee = f;
    calls[r]->wrt = r;
  }
  Inst *op = NULL;
  for (int r = 0; r < f->nresults; r++)
    op = inline_custom(m, w, calls[r], r ? calls[r - 1] : NULL, op);
  ir_set_results(m, w, calls, f->result_names, f->nresults);
  ir_resolve_func(w);
  free(calls);
  return w;
}

static void flatten(Module *m, Function *f) {
  if (f->mark == FLAT)
    return;
  if (f->mark == BUSY)
    die("recursive call to @%s reached the inliner", f->name);
  f->mark = BUSY;
  if (f->vjp_rule)
    flatten(m, f->vjp_rule);
  if (f->jvp_rule)
    flatten(m, f->jvp_rule);
  if (f->derive) { /* its body, built from its flat base, calls flat functions at most */
    flatten(m, f->base);
    derive_build(m, f);
  }
  /* The calls, at any depth of regions; what inlining brings in is flat. */
  PtrVec calls = {0};
  for (Inst *i = f->first; i; i = ir_walk_next(i))
    if (i->op == OP_call)
      vec_push(&calls, i);
  for (int k = 0; k < calls.len; k++)
    flatten(m, ((Inst *)calls.data[k])->callee);
  /* calls of a ruled function right after one another (let (a, b) = f(x)) */
  bool *adjacent = xmalloc(sizeof(bool) * (size_t)(calls.len + 1));
  for (int k = 0; k < calls.len; k++)
    adjacent[k] = k > 0 && ((Inst *)calls.data[k - 1])->next == calls.data[k];
  Inst *prev = NULL, *prev_op = NULL;
  for (int k = 0; k < calls.len; k++) {
    Inst *call = calls.data[k];
    if (call->callee->vjp_rule || call->callee->jvp_rule) {
      prev_op = inline_custom(m, f, call, adjacent[k] ? prev : NULL, prev_op);
      prev = call;
    } else {
      inline_call(m, f, call);
      prev = NULL;
    }
  }
  free(adjacent);
  vec_free(&calls);
  ir_resolve_func(f);
  f->mark = FLAT;
}

void pass_inline(Module *m) {
  for (Function *f = m->funcs; f; f = f->next)
    f->mark = NEW;
  for (Function *f = m->funcs; f; f = f->next)
    flatten(m, f);
  /* An export with rules: its own derivatives use them too, so its body
   * becomes the custom op a call of it would be. */
  for (Function *f = m->funcs; f; f = f->next)
    if (f->exported && (f->vjp_rule || f->jvp_rule)) {
      Function *w = inline_ruled(m, f, f->loc);
      f->params = w->params;
      f->first = w->first;
      f->last = w->last;
      f->results = w->results;
      f->vjp_rule = f->jvp_rule = NULL;
      ir_remove_func(m, w);
    }
  for (Function *f = m->funcs, *next; f; f = next) {
    next = f->next;
    f->mark = 0;
    if (!f->exported)
      ir_remove_func(m, f);
  }
}
