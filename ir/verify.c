/* The verifier: every invariant the IR promises, checked after each pass
 * when checking is on (sgc --verify, SGC_VERIFY=1, sgc-opt always).
 *   - every operand is a parameter of the same function or an instruction
 *     defined earlier in its block or in an enclosing one (SSA dominance with
 *     structured control flow: what a region defines is not visible after
 *     it, except through its yields);
 *   - region ops have the structure ir.h describes (bounds, block arguments
 *     and yields typed like the carried values), only proj reads them, and
 *     each proj follows its op;
 *   - every instruction's type is the one its shape rule gives;
 *   - the results are defined values, parameters only in Function.params.
 * Errors name the function and print the offending instruction. */
#include <string.h>

#include "ir.h"

enum { MARK_SEEN = 1, MARK_GONE = 2 };

typedef struct Verifier {
  Module *m;
  Function *f;
  const char *after;
  int errors;
} Verifier;

static int report(Module *m, Function *f, Inst *i, const char *after, const char *msg) {
  char buf[256];
  fprintf(stderr, "verifier%s%s: @%s: ", after ? " after " : "", after ? after : "", f->name);
  if (i) {
    fprintf(stderr, "%%%d = %s", i->id, ir_ops[i->op].name);
    for (int k = 0; k < i->nargs; k++)
      if (i->args[k]->op == OP_param)
        fprintf(stderr, "%s%%%s", k ? ", " : " ", i->args[k]->name);
      else
        fprintf(stderr, "%s%%%d", k ? ", " : " ", i->args[k]->id);
    fprintf(stderr, " : %s: ", ir_type_str(m, &i->type, buf, sizeof buf));
  }
  fprintf(stderr, "%s\n", msg);
  return 1;
}

static int by_name(const void *a, const void *b) {
  return strcmp((*(Inst *const *)a)->name, (*(Inst *const *)b)->name);
}

/* Parameter names are unique (sorted, so linear-logarithmic). */
static int check_unique_names(Module *m, Function *f, const char *after) {
  if (f->nparams < 2)
    return 0;
  Inst **sorted = xmalloc(sizeof(Inst *) * (size_t)f->nparams);
  memcpy(sorted, f->params, sizeof(Inst *) * (size_t)f->nparams);
  qsort(sorted, (size_t)f->nparams, sizeof(Inst *), by_name);
  int errors = 0;
  for (int k = 1; k < f->nparams; k++)
    if (strcmp(sorted[k - 1]->name, sorted[k]->name) == 0) {
      char msg[300];
      snprintf(msg, sizeof msg, "duplicate parameter %%%.250s", sorted[k]->name);
      errors += report(m, f, NULL, after, msg);
    }
  free(sorted);
  return errors;
}

static bool is_seen(const Inst *x) { return x && x->aux == (void *)(intptr_t)MARK_SEEN; }

static void check_operand(Verifier *v, Inst *i, Inst *x, const char *what, int k, bool *ok) {
  char msg[256];
  if (is_seen(x)) {
    if (ir_ops[x->op].shape == SH_REGION && i && i->op != OP_proj &&
        !(i->op == OP_unloop && k == 0)) {
      snprintf(msg, sizeof msg, "%s %d is a %s: only proj reads it", what, k,
               ir_ops[x->op].name);
      v->errors += report(v->m, v->f, i, v->after, msg);
      *ok = false;
    }
    return;
  }
  if (x && x->aux == (void *)(intptr_t)MARK_GONE)
    snprintf(msg, sizeof msg, "%s %d is defined inside a region and not visible here", what, k);
  else
    snprintf(msg, sizeof msg, "%s %d is not defined before its use", what, k);
  v->errors += report(v->m, v->f, i, v->after, msg);
  *ok = false;
}

/* Everything a finished region defined goes out of scope. */
static void hide_block(Inst *first) {
  for (Inst *i = first; i; i = i->next) {
    i->aux = (void *)(intptr_t)MARK_GONE;
    for (int r = 0; r < i->nregions; r++) {
      for (int k = 0; k < i->regions[r].nparams; k++)
        i->regions[r].params[k]->aux = (void *)(intptr_t)MARK_GONE;
      hide_block(i->regions[r].first);
    }
  }
}

static bool is_scalar_of(const Inst *x, DType dt) {
  return x->type.rank == 0 && x->type.dtype == dt;
}

/* The rules of a custom op (ir.h) against its callee's signature, as the
 * arguments instantiate it. */
static const char *custom_shape_error(const Inst *i) {
  const Region *r = i->regions;
  if (r[0].nparams)
    return "the body of custom takes no arguments";
  int ny = r[0].nyields, nf = 0, nd = i->nargs;
  for (int k = 0; k < ny; k++)
    nf += ir_is_float(r[0].yields[k]->type.dtype);
  for (int k = 0; k < nd; k++)
    if (!ir_is_float(i->args[k]->type.dtype))
      return "custom's arguments are float values";
  for (int q = 1; q <= 2; q++) {
    const Region *g = &r[q];
    if (!(i->index & (q == 1 ? CUSTOM_VJP : CUSTOM_JVP))) {
      if (g->nparams || g->nyields || g->first)
        return "a rule custom does not have must be an empty region";
      continue;
    }
    int want_params = q == 1 ? ny + nf : nd, want_yields = q == 1 ? nd : nf;
    if (g->nparams != want_params || g->nyields != want_yields)
      return q == 1 ? "the vjp rule of custom takes the results and their cotangents and yields "
                      "a cotangent per differentiable argument"
                    : "the jvp rule of custom takes a tangent per differentiable argument and "
                      "yields the results' tangents";
    for (int k = 0; k < nd; k++) {
      const Inst *x = q == 1 ? g->yields[k] : g->params[k];
      if (!ir_type_eq(&x->type, &i->args[k]->type))
        return "a rule's cotangent or tangent is not typed like its argument";
    }
    for (int k = 0, j = 0; k < ny; k++) {
      const Type *t = &r[0].yields[k]->type;
      if (q == 1 && !ir_type_eq(&g->params[k]->type, t))
        return "the vjp rule's results are not typed like the body's";
      if (!ir_is_float(t->dtype))
        continue;
      const Inst *x = q == 1 ? g->params[ny + j] : g->yields[j];
      if (!ir_type_eq(&x->type, t))
        return "a rule's result cotangent or tangent is not typed like the result";
      j++;
    }
  }
  return NULL;
}

/* The shape of a region op (ir.h): a message, or NULL if it is fine. */
static const char *region_shape_error(Verifier *v, const Inst *i, char *msg, size_t len) {
  const Region *r = i->regions;
  int n = i->op == OP_for ? i->nargs - 2 : i->nargs;
  if (i->op == OP_custom)
    return i->nregions == 3 ? custom_shape_error(i) : "custom has three regions";
  if (i->nregions != (i->op == OP_for || i->op == OP_unloop ? 1 : 2))
    return "wrong number of regions";
  if (i->op == OP_unloop) {
    const Inst *l = i->nargs ? i->args[0] : NULL;
    if (!l || (l->op != OP_for && l->op != OP_while))
      return "unloop reverses a for or a while";
    int nc = ir_num_results(l), na = i->nargs - 1;
    if (r->nparams != 1 + nc + na || !is_scalar_of(r->params[0], DT_I32))
      return "unloop's arguments are the index, the loop's carried values, the accumulators";
    for (int k = 0; k < nc; k++) {
      Type t = ir_result_type(l, k);
      if (!ir_type_eq(&r->params[1 + k]->type, &t))
        return "unloop's carried values are not typed like the loop's";
    }
    if (r->nyields != na)
      return "unloop yields one value per accumulator";
    for (int k = 0; k < na; k++)
      if (!ir_type_eq(&r->params[1 + nc + k]->type, &i->args[1 + k]->type) ||
          !ir_type_eq(&r->yields[k]->type, &i->args[1 + k]->type))
        return "unloop's accumulators are not typed like its operands";
    return NULL;
  }
  if (i->op == OP_if) {
    if (i->nargs != 1 || !is_scalar_of(i->args[0], DT_BOOL))
      return "if needs one bool scalar condition";
    if (r[0].nparams || r[1].nparams)
      return "the regions of if take no arguments";
    if (r[0].nyields != r[1].nyields)
      return "the two branches of if yield different numbers of values";
    for (int k = 0; k < r[0].nyields; k++)
      if (!ir_type_eq(&r[0].yields[k]->type, &r[1].yields[k]->type)) {
        snprintf(msg, len, "the branches of if yield different types for result %d", k);
        return msg;
      }
    return NULL;
  }
  if (i->op == OP_for && (n < 0 || !is_scalar_of(i->args[0], DT_I32) ||
                          !is_scalar_of(i->args[1], DT_I32)))
    return "for needs i32 scalar bounds";
  Inst *const *init = i->op == OP_for ? i->args + 2 : i->args;
  for (int k = 0; k < i->nregions; k++) {
    int lead = i->op == OP_for; /* the index */
    const Region *b = &r[k];
    if (b->nparams != n + lead)
      return "a region's arguments do not match the carried values";
    if (lead && !is_scalar_of(b->params[0], DT_I32))
      return "the index of a for is an i32 scalar";
    for (int j = 0; j < n; j++)
      if (!ir_type_eq(&b->params[j + lead]->type, &init[j]->type)) {
        snprintf(msg, len, "block argument %d of region %d is not typed like carried value %d",
                 j + lead, k, j);
        return msg;
      }
    bool cond = i->op == OP_while && k == 0;
    if (cond) {
      if (b->nyields != 1 || !is_scalar_of(b->yields[0], DT_BOOL))
        return "the condition region of while yields one bool scalar";
      continue;
    }
    if (b->nyields != n)
      return "a loop body yields a value per carried value";
    for (int j = 0; j < n; j++)
      if (!ir_type_eq(&b->yields[j]->type, &init[j]->type)) {
        snprintf(msg, len, "yield %d of region %d is not typed like carried value %d", j, k, j);
        return msg;
      }
  }
  (void)v;
  return NULL;
}

static void verify_block(Verifier *v, Inst *first) {
  char msg[512];
  Module *m = v->m;
  Function *f = v->f;
  for (Inst *i = first; i; i = i->next) {
    if (i->op == OP_param || i->op == OP_arg) {
      v->errors += report(m, f, i, v->after, "parameter or block argument in a body");
      continue;
    }
    bool ok = true;
    for (int k = 0; k < i->nargs; k++)
      check_operand(v, i, i->args[k], "operand", k, &ok);
    if (ir_ops[i->op].shape == SH_REGION) {
      const char *err = ok ? region_shape_error(v, i, msg, sizeof msg) : NULL;
      if (!i->regions || i->nregions < 1)
        err = "a region op without regions";
      if (err) {
        v->errors += report(m, f, i, v->after, err);
        ok = false;
      }
      for (int r = 0; r < i->nregions && i->regions; r++) {
        Region *b = &i->regions[r];
        if (b->owner != i)
          v->errors += report(m, f, i, v->after, "a region does not point back at its op");
        for (int k = 0; k < b->nparams; k++)
          b->params[k]->aux = (void *)(intptr_t)MARK_SEEN;
        for (Inst *x = b->first; x; x = x->next)
          if (x->parent != b)
            v->errors += report(m, f, x, v->after, "an instruction's parent is not its region");
        verify_block(v, b->first);
        for (int k = 0; k < b->nyields; k++)
          check_operand(v, i, b->yields[k], "yield", k, &ok);
        for (int k = 0; k < b->nparams; k++)
          b->params[k]->aux = (void *)(intptr_t)MARK_GONE;
        hide_block(b->first);
      }
      i->aux = (void *)(intptr_t)MARK_SEEN;
      continue;
    }
    if (i->nregions)
      v->errors += report(m, f, i, v->after, "only for, while and if hold regions");
    if (i->op == OP_proj && ok && i->nargs == 1 && i->prev != i->args[0] &&
        !(i->prev && i->prev->op == OP_proj && i->prev->args[0] == i->args[0]))
      v->errors += report(m, f, i, v->after, "a proj must follow its op (or its op's projs)");
    if (ok) {
      Type t;
      char err[256];
      if (!ir_infer_type(m, i, &t, err, sizeof err))
        v->errors += report(m, f, i, v->after, err);
      else if (!ir_type_eq(&t, &i->type)) {
        char buf[256];
        snprintf(msg, sizeof msg, "result type should be %s", ir_type_str(m, &t, buf, sizeof buf));
        v->errors += report(m, f, i, v->after, msg);
      }
    }
    if (i->op == OP_call && (!i->callee || i->callee->nparams != i->nargs ||
                             (i->wrt > 0 && i->wrt >= i->callee->nresults)))
      v->errors += report(m, f, i, v->after, "call without a matching callee");
    i->aux = (void *)(intptr_t)MARK_SEEN;
  }
}

static void clear_marks(Function *f) {
  for (int k = 0; k < f->nparams; k++)
    f->params[k]->aux = NULL;
  for (Inst *i = f->first; i; i = ir_walk_next(i)) {
    i->aux = NULL;
    for (int r = 0; r < i->nregions; r++)
      for (int k = 0; k < i->regions[r].nparams; k++)
        i->regions[r].params[k]->aux = NULL;
  }
}

static int verify_func(Module *m, Function *f, const char *after) {
  if (f->derive) /* a signature alone (ir/derive.c), checked when it was made */
    return f->base ? 0 : report(m, f, NULL, after, "a derived function without a base");
  Verifier v = {m, f, after, 0};
  char msg[512];
  ir_renumber(f);
  clear_marks(f);
  for (int k = 0; k < f->nparams; k++) {
    Inst *p = f->params[k];
    if (p->op != OP_param)
      v.errors += report(m, f, NULL, after, "a parameter is not an OP_param");
    p->aux = (void *)(intptr_t)MARK_SEEN;
  }
  v.errors += check_unique_names(m, f, after);
  for (Inst *x = f->first; x; x = x->next)
    if (x->parent)
      v.errors += report(m, f, x, after, "an instruction of the body has a parent region");
  verify_block(&v, f->first);
  if (f->nresults < 1)
    v.errors += report(m, f, NULL, after, "no results");
  for (int k = 0; k < f->nresults; k++)
    if (!is_seen(f->results[k])) {
      snprintf(msg, sizeof msg, "result %d is not a defined value", k);
      v.errors += report(m, f, NULL, after, msg);
    }
  clear_marks(f);
  return v.errors;
}

int ir_verify(Module *m, const char *after_pass) {
  int errors = 0;
  for (Function *f = m->funcs; f; f = f->next)
    errors += verify_func(m, f, after_pass);
  return errors;
}
