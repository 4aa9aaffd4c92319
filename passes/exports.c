/* The derivative entry points of the exports (spec sections 8 and 9): for
 * each exported f, the kinds --exports asks for, each from one entry of
 * the table below: f_grad (scalar result) or f_vjp (reverse mode,
 * passes/ad.c), f_jvp (forward mode, passes/tangent.c) and f_hvp (a scalar
 * result's value, gradient and Hessian-vector products: forward over
 * reverse). Each is an ordinary exported IR function whose parameters are
 * the C inputs and whose results the C outputs, placed right after f.
 *
 * An export gets none when it has no float result or no differentiable
 * parameter (all const or i32: v3). The textual IR does not record
 * FuncKind, so after a round trip a derivative is known by its name (the
 * checker keeps exports from taking such names). Names are looked up in
 * sets: a module of thousands of exports must not take a quadratic number
 * of comparisons. */
#include <string.h>

#include "passes.h"

static bool has_float_result(const Function *f) {
  for (int k = 0; k < f->nresults; k++)
    if (ir_is_float(f->results[k]->type.dtype))
      return true;
  return false;
}

static bool scalar_result(const Function *f) {
  return f->nresults == 1 && f->results[0]->type.rank == 0 && ir_is_float(f->results[0]->type.dtype);
}

static bool differentiable(const Inst *p) { return !p->is_const && ir_is_float(p->type.dtype); }

static bool has_differentiable_param(const Function *f) {
  for (int k = 0; k < f->nparams; k++)
    if (differentiable(f->params[k]))
      return true;
  return false;
}

static Function *build_grad(Module *m, Function *f, const char *name) {
  AdSpec spec = {.only_wrt = -1, .with_value = true, .export_of = f->name};
  return ad_build(m, f, name, &spec);
}

static bool *all_differentiable(const Function *f) {
  bool *wrt = xmalloc(sizeof(bool) * (size_t)(f->nparams + 1));
  for (int k = 0; k < f->nparams; k++)
    wrt[k] = differentiable(f->params[k]);
  return wrt;
}

static Function *build_jvp(Module *m, Function *f, const char *name) {
  bool *wrt = all_differentiable(f);
  Function *g = tg_build(m, f, name, wrt, "t_", true);
  free(wrt);
  return g;
}

/* The tangent of f_grad's results (value, gradients) along v, less the
 * value's: out, d_pa..., hv_pa... */
static Function *build_hvp(Module *m, Function *f, const char *name) {
  AdSpec spec = {.only_wrt = -1, .with_value = true, .export_of = f->name};
  Function *grad = ad_build(m, f, arena_printf(m->arena, "%s.hvp.grad", f->name), &spec);
  bool *wrt = all_differentiable(f);
  Function *h = tg_build(m, grad, name, wrt, "v_", true);
  ir_remove_func(m, grad);
  int nd = (h->nresults - 2) / 2; /* out, d..., t_out, t_d... */
  Inst **res = xmalloc(sizeof(Inst *) * (size_t)(2 * nd + 1));
  const char **names = xmalloc(sizeof(char *) * (size_t)(2 * nd + 1));
  for (int k = 0; k <= nd; k++) {
    res[k] = h->results[k];
    names[k] = h->result_names[k];
  }
  h->nresults = 1 + nd; /* the names below must not clash with t_out & co. */
  for (int k = 0, j = 0; k < f->nparams; k++) {
    if (!wrt[k])
      continue;
    res[1 + nd + j] = h->results[2 + nd + j];
    const char *want = arena_printf(m->arena, "hv_%s", f->params[k]->name);
    names[1 + nd + j] = ir_unique_name(m, h, want, "_out");
    j++;
  }
  ir_set_results(m, h, res, names, 1 + 2 * nd);
  h->kind = FN_HVP;
  free(res);
  free(names);
  free(wrt);
  return h;
}

typedef struct Kind {
  unsigned flag;                    /* EXPORT_* */
  const char *suffix;               /* f_<suffix> */
  bool (*wants)(const Function *f); /* which exports get one */
  Function *(*build)(Module *m, Function *f, const char *name);
} Kind;

static const Kind kinds[] = {
    {EXPORT_GRAD, "grad", has_float_result, build_grad}, /* "vjp" for tensor results */
    {EXPORT_JVP, "jvp", has_float_result, build_jvp},
    {EXPORT_HVP, "hvp", scalar_result, build_hvp},
};
enum { NKINDS = sizeof kinds / sizeof kinds[0] };

static const char *derivative_name(Module *m, const Function *f, const Kind *k) {
  const char *suffix = k->suffix;
  if (k->flag == EXPORT_GRAD && (f->nresults > 1 || f->results[0]->type.rank > 0))
    suffix = "vjp";
  return arena_printf(m->arena, "%s_%s", f->name, suffix);
}

static void add_derivatives(Module *m, unsigned flags) {
  NameSet names = {0}, derived = {0};
  for (Function *f = m->funcs; f; f = f->next) {
    nameset_add(&names, f->name);
    for (int k = 0; k < NKINDS && f->exported && f->nresults > 0; k++)
      nameset_add(&derived, derivative_name(m, f, &kinds[k]));
  }
  PtrVec owners = {0}, made = {0};
  Function *last = m->funcs;
  while (last && last->next)
    last = last->next;
  PtrVec todo = {0};
  for (Function *f = m->funcs; f; f = f->next)
    if (f->exported && f->kind == FN_PLAIN && !nameset_has(&derived, f->name) &&
        has_differentiable_param(f))
      vec_push(&todo, f);
  for (int t = 0; t < todo.len; t++) {
    Function *f = todo.data[t];
    for (int k = 0; k < NKINDS; k++) {
      const char *name = derivative_name(m, f, &kinds[k]);
      if (!(flags & kinds[k].flag) || !kinds[k].wants(f) || nameset_has(&names, name))
        continue;
      Function *g = kinds[k].build(m, f, name);
      g->exported = true;
      g->mark = 1;
      vec_push(&owners, f);
      vec_push(&made, g);
    }
  }
  nameset_free(&names);
  nameset_free(&derived);
  /* The builders appended what they made; each goes right after its f (or
   * after f's previous one), in one pass: moving them one by one would walk
   * the list once per export. */
  if (last) {
    for (Function *a = last->next; a; a = a->next)
      if (!a->mark)
        die("a derivative builder added @%s, which is not a derivative", a->name);
    last->next = NULL;
    Function *after = NULL;
    for (int k = 0; k < made.len; k++) {
      Function *f = owners.data[k], *g = made.data[k];
      if (k == 0 || owners.data[k - 1] != f)
        after = f;
      g->next = after->next;
      after->next = g;
      after = g;
    }
    m->funcs_hint = NULL;
  }
  for (int k = 0; k < made.len; k++)
    ((Function *)made.data[k])->mark = 0;
  vec_free(&owners);
  vec_free(&made);
  vec_free(&todo);
}

void pass_ad(Module *m) { add_derivatives(m, m->exports); }
void pass_jvp(Module *m) { add_derivatives(m, EXPORT_JVP); }
void pass_hvp(Module *m) { add_derivatives(m, EXPORT_HVP); }
