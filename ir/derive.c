/* Derived functions: the signatures of the transforms of spec 6b. Let f
 * have parameters p1..pn and results R, and p = pk a non-const float
 * parameter:
 *
 *   grad(f, wrt=p)      (p1..pn)          -> p's type       f: one float scalar
 *   jvp(f, wrt=p)       (p1..pn, t_p)     -> a tangent per float result
 *   vjp(f, wrt=p)       (p1..pn, s...)    -> p's type       one s per float result
 *   jacobian(f, wrt=p)  (p1..pn)          -> R's dims then p's, per float result
 *   hessian(f, wrt=p)   (p1..pn)          -> p's dims twice  f: one float scalar
 *
 * A Jacobian is in its result's dtype, a gradient and a Hessian in p's.
 * The frontend makes one derived function per (kind, base, wrt) with
 * ir_derive and calls it like any function; the textual IR prints one as
 * `func @loss.grad.w = grad @loss {wrt=0}` and ir/parse.c remakes it with
 * ir_derive. passes/derive.c builds the body. */
#include <string.h>

#include "ir.h"

const char *const ir_derive_names[DV_COUNT] = {"", "grad", "jvp", "vjp", "jacobian", "hessian"};

const char *ir_func_display(Module *m, const Function *f) {
  if (!f->derive)
    return f->name;
  return arena_printf(m->arena, "%s(%s, wrt=%s)", ir_derive_names[f->derive],
                      ir_func_display(m, f->base), f->base->params[f->wrt]->name);
}

static bool float_scalar_result(Module *m, const Function *f, const char *what, char *err,
                                size_t len) {
  char buf[256];
  const char *name = ir_func_display(m, f);
  if (f->nresults != 1)
    snprintf(err, len, "%s needs a function with one float scalar result; '%s' returns %d "
                       "results", what, name, f->nresults);
  else if (!ir_is_float(f->results[0]->type.dtype))
    snprintf(err, len, "%s needs a function with a float scalar result; '%s' returns %s", what,
             name, ir_type_str(m, &f->results[0]->type, buf, sizeof buf));
  else if (f->results[0]->type.rank != 0)
    snprintf(err, len, "%s needs a function with a scalar result; '%s' returns %s", what, name,
             ir_type_str(m, &f->results[0]->type, buf, sizeof buf));
  else
    return true;
  return false;
}

static int float_results(const Function *f) {
  int n = 0;
  for (int k = 0; k < f->nresults; k++)
    n += ir_is_float(f->results[k]->type.dtype);
  return n;
}

/* t's dims followed by u's, in dtype dt; false if the rank passes 8. */
static bool concat_dims(const Type *t, const Type *u, DType dt, Type *out) {
  if (t->rank + u->rank > IR_MAX_RANK)
    return false;
  *out = *t;
  out->dtype = dt;
  for (int k = 0; k < u->rank; k++)
    out->dim[out->rank++] = u->dim[k];
  return true;
}

bool ir_derive_signature(Module *m, Function *d, char *err, size_t errlen) {
  DeriveKind kind = d->derive;
  Function *base = d->base;
  const char *what = ir_derive_names[kind];
  if (d->wrt < 0 || d->wrt >= base->nparams) {
    snprintf(err, errlen, "'%s' has no parameter number %d", ir_func_display(m, base), d->wrt);
    return false;
  }
  Inst *p = base->params[d->wrt];
  if (p->is_const) {
    snprintf(err, errlen, "cannot differentiate with respect to '%s': it is declared const",
             p->name);
    return false;
  }
  if (!ir_is_float(p->type.dtype)) {
    snprintf(err, errlen, "cannot differentiate with respect to '%s': i32 values have no "
                          "gradient", p->name);
    return false;
  }
  if ((kind == DV_GRAD || kind == DV_HESSIAN) && !float_scalar_result(m, base, what, err, errlen))
    return false;
  int nf = float_results(base);
  if (nf == 0) {
    snprintf(err, errlen, "%s needs a function with a float result; '%s' returns only i32 values",
             what, ir_func_display(m, base));
    return false;
  }
  /* the results' types */
  Type *rt = xmalloc(sizeof(Type) * (size_t)(base->nresults + 1));
  int nr = 0;
  for (int r = 0; r < base->nresults; r++) {
    const Type *y = &base->results[r]->type;
    if (kind == DV_GRAD || kind == DV_VJP) {
      rt[nr++] = p->type;
      break;
    }
    bool fits = true;
    if (kind == DV_HESSIAN)
      fits = concat_dims(&p->type, &p->type, p->type.dtype, &rt[nr++]);
    else if (kind == DV_JVP && ir_is_float(y->dtype))
      rt[nr++] = *y;
    else if (kind == DV_JACOBIAN && ir_is_float(y->dtype))
      fits = concat_dims(y, &p->type, y->dtype, &rt[nr++]);
    if (!fits) {
      snprintf(err, errlen, "%s(%s, wrt=%s) would have rank %d, more than %d", what,
               ir_func_display(m, base), p->name,
               (kind == DV_HESSIAN ? p->type.rank : y->rank) + p->type.rank, IR_MAX_RANK);
      free(rt);
      return false;
    }
  }

  for (int k = 0; k < base->nparams; k++)
    ir_add_param(m, d, base->params[k]->name, base->params[k]->type, base->params[k]->is_const);
  if (kind == DV_JVP)
    ir_add_param(m, d, ir_unique_name(m, d, arena_printf(m->arena, "t_%s", p->name), "_t"),
                 p->type, false);
  for (int r = 0; kind == DV_VJP && r < base->nresults; r++) {
    if (!ir_is_float(base->results[r]->type.dtype))
      continue;
    const char *want = nf == 1 ? "s" : arena_printf(m->arena, "s%d", r);
    ir_add_param(m, d, ir_unique_name(m, d, want, "_s"), base->results[r]->type, false);
  }
  Inst **ph = xmalloc(sizeof(Inst *) * (size_t)(nr + 1));
  const char **names = xmalloc(sizeof(char *) * (size_t)(nr + 1));
  for (int r = 0; r < nr; r++) {
    Builder b = {m, d, NULL, base->loc, NULL};
    ph[r] = ir_new_inst(&b, OP_param, rt[r], NULL, 0);
    ir_unlink(d, ph[r]);
    names[r] = ir_unique_name(m, d, nr == 1 ? "out" : arena_printf(m->arena, "out%d", r), "_out");
  }
  ir_set_results(m, d, ph, names, nr);
  free(ph);
  free(names);
  free(rt);
  return true;
}

Function *ir_derive(Module *m, DeriveKind kind, Function *base, int wrt, Loc at, char *err,
                    size_t errlen) {
  const char *name = arena_printf(m->arena, "%s.%s.%s", base->name, ir_derive_names[kind],
                                  wrt >= 0 && wrt < base->nparams ? base->params[wrt]->name : "?");
  Function *d = ir_find_func(m, name);
  if (d)
    return d;
  d = ir_func_new(m, name);
  d->derive = kind;
  d->base = base;
  d->wrt = wrt;
  d->loc = at;
  if (!ir_derive_signature(m, d, err, errlen)) {
    ir_remove_func(m, d);
    return NULL;
  }
  return d;
}
