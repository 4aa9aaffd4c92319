/* Modules, functions, instructions and the typed builders every stage uses
 * to make new IR. The builders compute result types with the rules of
 * ir/shape.c and die() if a caller asks for something ill-typed: user errors
 * are caught earlier, by the checker in frontend/lower.c. */
#include "ir.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const OpInfo ir_ops[OP_COUNT] = {
#define OP(name, arity, shape, adjoint, tangent, flags) [OP_##name] = {#name, arity, shape, flags},
#include "ops.def"
#undef OP
};

Module *ir_module_new(void) {
  Arena *a = arena_new();
  Module *m = ARENA_NEW(a, Module);
  m->arena = a;
  m->exports = EXPORT_GRAD;
  return m;
}

void ir_module_free(Module *m) {
  if (m) {
    free(m->syms);
    free(m->sym_poly);
    arena_free(m->arena);
  }
}

int ir_sym(Module *m, const char *name) {
  for (int i = 0; i < m->nsyms; i++)
    if (strcmp(m->syms[i], name) == 0)
      return i;
  if (m->nsyms == m->capsyms) {
    m->capsyms = m->capsyms ? 2 * m->capsyms : 16;
    m->syms = xrealloc(m->syms, sizeof(char *) * (size_t)m->capsyms);
    m->sym_poly = xrealloc(m->sym_poly, sizeof(SizePoly *) * (size_t)m->capsyms);
  }
  m->sym_poly[m->nsyms] = NULL;
  m->syms[m->nsyms] = arena_strdup(m->arena, name);
  return m->nsyms++;
}

Function *ir_func_new(Module *m, const char *name) {
  Function *f = ARENA_NEW(m->arena, Function);
  f->name = arena_strdup(m->arena, name);
  /* Appending from the last function appended keeps building a module of
   * n functions linear rather than quadratic. */
  Function **p = m->funcs_hint ? &m->funcs_hint->next : &m->funcs;
  while (*p)
    p = &(*p)->next;
  *p = f;
  m->funcs_hint = f;
  return f;
}

Function *ir_find_func(Module *m, const char *name) {
  for (Function *f = m->funcs; f; f = f->next)
    if (strcmp(f->name, name) == 0)
      return f;
  return NULL;
}

void ir_error(Module *m, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *msg = arena_vprintf(m->arena, fmt, ap);
  va_end(ap);
  /* the same derivative built twice (f_jvp and f_hvp) says it once */
  if (m->last_error && strcmp(m->last_error, msg) == 0 && m->last_error_loc.line == loc.line &&
      m->last_error_loc.col == loc.col)
    return;
  m->last_error = msg;
  m->last_error_loc = loc;
  m->errors++;
  if (m->diag)
    diag_error(m->diag, loc, "%s", msg);
  else
    fprintf(stderr, "error: %s\n", msg);
}

void ir_remove_func(Module *m, Function *f) {
  for (Function **p = &m->funcs; *p; p = &(*p)->next)
    if (*p == f) {
      *p = f->next;
      if (m->funcs_hint == f)
        m->funcs_hint = NULL;
      return;
    }
}

Inst *ir_add_param(Module *m, Function *f, const char *name, Type t, bool is_const) {
  Inst *p = ARENA_NEW(m->arena, Inst);
  p->op = OP_param;
  p->type = t;
  p->name = arena_strdup(m->arena, name);
  p->is_const = is_const;
  p->wrt = f->nparams;
  Inst **ps = ARENA_ARRAY(m->arena, Inst *, f->nparams + 1);
  if (f->nparams)
    memcpy(ps, f->params, sizeof(Inst *) * (size_t)f->nparams);
  ps[f->nparams++] = p;
  f->params = ps;
  return p;
}

void ir_set_results(Module *m, Function *f, Inst **vals, const char **names, int n) {
  f->results = ARENA_ARRAY(m->arena, Inst *, n);
  f->result_names = ARENA_ARRAY(m->arena, const char *, n);
  for (int i = 0; i < n; i++) {
    f->results[i] = vals[i];
    f->result_names[i] = arena_strdup(m->arena, names[i]);
  }
  f->nresults = n;
}

static bool name_taken(const Function *f, const char *name) {
  for (int k = 0; k < f->nparams; k++)
    if (strcmp(f->params[k]->name, name) == 0)
      return true;
  for (int k = 0; k < f->nresults; k++)
    if (strcmp(f->result_names[k], name) == 0)
      return true;
  return false;
}

const char *ir_result_name(Module *m, const Function *f, const char *const *names, int n,
                           const char *want) {
  const char *name = ir_unique_name(m, f, want, "_out");
  for (int j = 0; j < n; j++)
    if (strcmp(names[j], name) == 0)
      name = arena_printf(m->arena, "%s_out", name);
  return name;
}

const char *ir_unique_name(Module *m, const Function *f, const char *want, const char *suffix) {
  const char *name = want;
  while (name_taken(f, name))
    name = arena_printf(m->arena, "%s%s", name, suffix);
  return name;
}

/* ---- types ---- */

Type ir_scalar(DType dt) {
  Type t;
  memset(&t, 0, sizeof t);
  t.dtype = dt;
  return t;
}

Dim ir_lit(int64_t n) { return (Dim){n, -1}; }
bool ir_dim_is(Dim d, int64_t n) { return d.sym < 0 && d.size == n; }
bool ir_is_float(DType dt) { return dt == DT_F32 || dt == DT_F64; }

double ir_wrap_i32(double v) {
  if (!(v - v == 0)) /* NaN or infinite */
    return 0;
  double r = fmod(trunc(v), 4294967296.0); /* exact */
  if (r >= 2147483648.0)
    r -= 4294967296.0;
  else if (r < -2147483648.0)
    r += 4294967296.0;
  return r + 0.0; /* no -0 */
}

bool ir_dim_eq(Dim a, Dim b) {
  return a.sym >= 0 || b.sym >= 0 ? a.sym == b.sym : a.size == b.size;
}

bool ir_shape_eq(const Type *a, const Type *b) {
  if (a->rank != b->rank)
    return false;
  for (int i = 0; i < a->rank; i++)
    if (!ir_dim_eq(a->dim[i], b->dim[i]))
      return false;
  return true;
}

bool ir_type_eq(const Type *a, const Type *b) {
  return a->dtype == b->dtype && ir_shape_eq(a, b);
}

int64_t ir_static_numel(const Type *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++)
    if (t->dim[i].sym >= 0 || __builtin_mul_overflow(n, t->dim[i].size, &n))
      return -1;
  return n;
}

const char *ir_dtype_name(DType dt) {
  switch (dt) {
  case DT_F32: return "f32";
  case DT_F64: return "f64";
  case DT_I32: return "i32";
  case DT_BOOL: return "bool";
  }
  return "?";
}

char *ir_dims_str(const Module *m, const Type *t, char *buf, size_t len) {
  size_t n = 0;
  n += (size_t)snprintf(buf + n, len - n, "[");
  for (int i = 0; i < t->rank && n < len; i++) {
    const char *sep = i ? ", " : "";
    if (t->dim[i].sym >= 0)
      n += (size_t)snprintf(buf + n, len - n, "%s%s", sep, m->syms[t->dim[i].sym]);
    else
      n += (size_t)snprintf(buf + n, len - n, "%s%lld", sep, (long long)t->dim[i].size);
  }
  if (n < len)
    snprintf(buf + n, len - n, "]");
  return buf;
}

char *ir_type_str(const Module *m, const Type *t, char *buf, size_t len) {
  int n = snprintf(buf, len, "%s", ir_dtype_name(t->dtype));
  if (t->rank > 0 && (size_t)n < len)
    ir_dims_str(m, t, buf + n, len - (size_t)n);
  return buf;
}

/* ---- instructions ---- */

/* The list an instruction of block `r` lives in (r NULL: f's body). */
static Inst **block_first(Function *f, Region *r) { return r ? &r->first : &f->first; }
static Inst **block_last(Function *f, Region *r) { return r ? &r->last : &f->last; }

void ir_append(Function *f, Region *r, Inst *i) {
  Inst **first = block_first(f, r), **last = block_last(f, r);
  i->parent = r;
  i->prev = *last;
  i->next = NULL;
  if (*last)
    (*last)->next = i;
  else
    *first = i;
  *last = i;
}

void ir_insert_before(Function *f, Inst *at, Inst *i) {
  if (!at) {
    ir_append(f, NULL, i);
    return;
  }
  i->parent = at->parent;
  i->next = at;
  i->prev = at->prev;
  if (at->prev)
    at->prev->next = i;
  else
    *block_first(f, at->parent) = i;
  at->prev = i;
}

void ir_unlink(Function *f, Inst *i) {
  if (i->prev)
    i->prev->next = i->next;
  else
    *block_first(f, i->parent) = i->next;
  if (i->next)
    i->next->prev = i->prev;
  else
    *block_last(f, i->parent) = i->prev;
  i->prev = i->next = NULL;
}

Inst *ir_walk_next(const Inst *i) {
  for (int k = 0; k < i->nregions; k++)
    if (i->regions[k].first)
      return i->regions[k].first;
  while (i) {
    if (i->next)
      return i->next;
    Region *r = i->parent;
    if (!r)
      return NULL;
    Inst *op = r->owner;
    for (int k = (int)(r - op->regions) + 1; k < op->nregions; k++)
      if (op->regions[k].first)
        return op->regions[k].first;
    i = op;
  }
  return NULL;
}

/* ---- regions ---- */

Inst *ir_region_op(Builder *b, Op op, Inst **args, int nargs, int nregions) {
  Inst *i = ir_new_inst(b, op, ir_scalar(IR_TUPLE), args, nargs);
  i->nregions = nregions;
  i->regions = ARENA_ARRAY(b->m->arena, Region, nregions);
  for (int k = 0; k < nregions; k++)
    i->regions[k].owner = i;
  return i;
}

Inst *ir_add_region_param(Module *m, Region *r, Type t) {
  Inst *p = ARENA_NEW(m->arena, Inst);
  p->op = OP_arg;
  p->type = t;
  p->index = r->nparams;
  p->parent = r;
  Inst **ps = ARENA_ARRAY(m->arena, Inst *, r->nparams + 1);
  if (r->nparams)
    memcpy(ps, r->params, sizeof(Inst *) * (size_t)r->nparams);
  ps[r->nparams++] = p;
  r->params = ps;
  return p;
}

void ir_set_yields(Module *m, Region *r, Inst **vals, int n) {
  r->yields = ARENA_ARRAY(m->arena, Inst *, n > 0 ? n : 1);
  for (int k = 0; k < n; k++)
    r->yields[k] = vals[k];
  r->nyields = n;
}

int ir_num_results(const Inst *op) {
  switch (op->op) {
  case OP_for: return op->nargs - 2;
  case OP_while: return op->nargs;
  case OP_if:
  case OP_custom: return op->nregions ? op->regions[0].nyields : 0;
  case OP_unloop: return op->nargs - 1;
  default: return 0;
  }
}

Type ir_result_type(const Inst *op, int index) {
  if (op->op == OP_if || op->op == OP_custom)
    return op->regions[0].yields[index]->type;
  return op->args[op->op == OP_for ? index + 2 : op->op == OP_unloop ? index + 1 : index]->type;
}

Inst *ir_proj(Builder *b, Inst *op, int index) {
  Inst *p = ir_new_inst(b, OP_proj, ir_result_type(op, index), &op, 1);
  p->index = index;
  return p;
}

static Inst *mapped(Inst *x) {
  if (!x->aux)
    die("copying: %%%d (%s) has no copy", x->id, ir_ops[x->op].name);
  return x->aux;
}

Inst *ir_copy_inst(Builder *b, Inst *i, void (*retype)(Inst *copy, void *ctx), void *ctx) {
  Inst *argv[8];
  Inst **args = i->nargs <= 8 ? argv : xmalloc(sizeof(Inst *) * (size_t)i->nargs);
  for (int k = 0; k < i->nargs; k++)
    args[k] = mapped(i->args[k]);
  Inst *c = ir_clone_inst(b, i, args);
  if (args != argv)
    free(args);
  if (retype)
    retype(c, ctx);
  i->aux = c;
  if (!i->nregions)
    return c;
  c->nregions = i->nregions;
  c->regions = ARENA_ARRAY(b->m->arena, Region, i->nregions);
  for (int k = 0; k < i->nregions; k++) {
    Region *from = &i->regions[k], *to = &c->regions[k];
    to->owner = c;
    for (int j = 0; j < from->nparams; j++) {
      Inst *p = ir_add_region_param(b->m, to, from->params[j]->type);
      p->name = from->params[j]->name;
      if (retype)
        retype(p, ctx);
      from->params[j]->aux = p;
    }
    Builder inner = *b;
    inner.before = NULL;
    inner.r = to;
    for (Inst *x = from->first; x; x = x->next)
      ir_copy_inst(&inner, x, retype, ctx);
    Inst **ys = xmalloc(sizeof(Inst *) * (size_t)(from->nyields + 1));
    for (int j = 0; j < from->nyields; j++)
      ys[j] = mapped(from->yields[j]);
    ir_set_yields(b->m, to, ys, from->nyields);
    free(ys);
  }
  return c;
}

Inst *ir_new_inst(Builder *b, Op op, Type type, Inst **args, int nargs) {
  Inst *i = ARENA_NEW(b->m->arena, Inst);
  i->op = op;
  i->type = type;
  i->nargs = nargs;
  i->args = ARENA_ARRAY(b->m->arena, Inst *, nargs > 0 ? nargs : 1);
  for (int k = 0; k < nargs; k++) {
    if (!args[k])
      die("%s: operand %d is NULL", ir_ops[op].name, k);
    i->args[k] = args[k];
  }
  i->loc = b->loc;
  if (b->before)
    ir_insert_before(b->f, b->before, i);
  else
    ir_append(b->f, b->r, i);
  return i;
}

Inst *ir_clone_inst(Builder *b, const Inst *i, Inst **args) {
  Inst *c = ir_new_inst(b, i->op, i->type, args, i->nargs);
  c->num = i->num;
  c->axes = i->axes;
  memcpy(c->perm, i->perm, sizeof c->perm);
  c->attr = i->attr;
  c->callee = i->callee;
  c->wrt = i->wrt;
  c->index = i->index;
  c->name = i->name;
  c->loc = i->loc;
  c->rechecks = i->rechecks;
  return c;
}

void ir_replace_uses(Function *f, Inst *old, Inst *with) {
  for (Inst *i = f->first; i; i = ir_walk_next(i)) {
    for (int k = 0; k < i->nargs; k++)
      if (i->args[k] == old)
        i->args[k] = with;
    for (int r = 0; r < i->nregions; r++)
      for (int k = 0; k < i->regions[r].nyields; k++)
        if (i->regions[r].yields[k] == old)
          i->regions[r].yields[k] = with;
  }
  for (int k = 0; k < f->nresults; k++)
    if (f->results[k] == old)
      f->results[k] = with;
}

void ir_forward(Inst *old, Inst *with) { old->fwd = with; }

static Inst *resolved(Inst *x) {
  while (x->fwd)
    x = x->fwd;
  return x;
}

void ir_resolve_args(Inst *i) {
  for (int k = 0; k < i->nargs; k++)
    i->args[k] = resolved(i->args[k]);
}

void ir_resolve_func(Function *f) {
  for (Inst *i = f->first; i; i = ir_walk_next(i)) {
    ir_resolve_args(i);
    for (int r = 0; r < i->nregions; r++)
      for (int k = 0; k < i->regions[r].nyields; k++)
        i->regions[r].yields[k] = resolved(i->regions[r].yields[k]);
  }
  for (int k = 0; k < f->nresults; k++)
    f->results[k] = resolved(f->results[k]);
}

void ir_count_uses(Function *f) {
  for (int k = 0; k < f->nparams; k++)
    f->params[k]->nuses = 0;
  for (Inst *i = f->first; i; i = ir_walk_next(i)) {
    i->nuses = 0;
    for (int r = 0; r < i->nregions; r++)
      for (int k = 0; k < i->regions[r].nparams; k++)
        i->regions[r].params[k]->nuses = 0;
  }
  for (Inst *i = f->first; i; i = ir_walk_next(i)) {
    for (int k = 0; k < i->nargs; k++)
      i->args[k]->nuses++;
    for (int r = 0; r < i->nregions; r++)
      for (int k = 0; k < i->regions[r].nyields; k++)
        i->regions[r].yields[k]->nuses++;
  }
  for (int k = 0; k < f->nresults; k++)
    f->results[k]->nuses++;
}

/* Ids in printing order: an op, then each region's arguments and body. */
static int number_block(Inst *first, int n) {
  for (Inst *i = first; i; i = i->next) {
    i->id = n++;
    for (int r = 0; r < i->nregions; r++) {
      for (int k = 0; k < i->regions[r].nparams; k++)
        i->regions[r].params[k]->id = n++;
      n = number_block(i->regions[r].first, n);
    }
  }
  return n;
}

int ir_renumber(Function *f) {
  for (int k = 0; k < f->nparams; k++)
    f->params[k]->id = -1;
  return number_block(f->first, 0);
}

int ir_num_insts(const Function *f) {
  int n = 0;
  for (const Inst *i = f->first; i; i = ir_walk_next(i))
    n++;
  return n;
}

/* ---- typed builders ---- */

static Inst *build(Builder *b, Op op, Inst **args, int nargs, Inst proto) {
  Inst tmp = proto;
  tmp.op = op;
  tmp.args = args;
  tmp.nargs = nargs;
  char err[256];
  Type t;
  if (!ir_infer_type(b->m, &tmp, &t, err, sizeof err))
    die("building %s: %s", ir_ops[op].name, err);
  Inst *i = ir_new_inst(b, op, t, args, nargs);
  i->axes = proto.axes;
  memcpy(i->perm, proto.perm, sizeof i->perm);
  i->num = proto.num;
  i->attr = proto.attr;
  i->index = proto.index;
  return i;
}

Inst *ir_const(Builder *b, DType dt, double v) {
  if (dt == DT_F32) /* the literal is the f32 value the code will compute with */
    v = (float)v;
  else if (dt == DT_I32) /* an integer literal: wraps as the arithmetic does */
    v = ir_wrap_i32(v);
  Inst *i = ir_new_inst(b, OP_const, ir_scalar(dt), NULL, 0);
  i->num = v;
  return i;
}

Inst *ir_const_like(Builder *b, const Type *t, double v) {
  return ir_broadcast(b, ir_const(b, t->dtype, v), t);
}

Inst *ir_unary(Builder *b, Op op, Inst *x) {
  Inst proto = {0};
  return build(b, op, &x, 1, proto);
}

Inst *ir_binary(Builder *b, Op op, Inst *x, Inst *y) {
  Inst *args[2] = {x, y};
  Inst proto = {0};
  return build(b, op, args, 2, proto);
}

Inst *ir_select(Builder *b, Inst *c, Inst *x, Inst *y) {
  Inst *args[3] = {c, x, y};
  Inst proto = {0};
  return build(b, OP_select, args, 3, proto);
}

Inst *ir_convert(Builder *b, Inst *x, DType dt) {
  if (x->type.dtype == dt)
    return x;
  Type t = x->type;
  t.dtype = dt;
  return ir_new_inst(b, OP_convert, t, &x, 1);
}

Inst *ir_broadcast(Builder *b, Inst *x, const Type *to) {
  if (ir_shape_eq(&x->type, to))
    return x;
  if (!ir_can_broadcast_to(&x->type, to))
    die("cannot broadcast");
  Type t = *to;
  t.dtype = x->type.dtype;
  return ir_new_inst(b, OP_broadcast, t, &x, 1);
}

Inst *ir_reshape(Builder *b, Inst *x, const Type *to) {
  if (ir_shape_eq(&x->type, to))
    return x;
  if (!ir_reshape_ok(b->m, &x->type, to))
    die("bad reshape");
  Type t = *to;
  t.dtype = x->type.dtype;
  return ir_new_inst(b, OP_reshape, t, &x, 1);
}

Inst *ir_transpose(Builder *b, Inst *x, const int *perm) {
  Inst proto = {0};
  memcpy(proto.perm, perm, sizeof(int) * (size_t)x->type.rank);
  return build(b, OP_transpose, &x, 1, proto);
}

Inst *ir_reduce(Builder *b, Op op, Inst *x, unsigned axes) {
  if (axes == 0)
    return x;
  Inst proto = {0};
  proto.axes = axes;
  return build(b, op, &x, 1, proto);
}

Inst *ir_along(Builder *b, Op op, Inst *x, int axis) {
  Inst proto = {0};
  proto.axes = 1u << axis;
  return build(b, op, &x, 1, proto);
}

Inst *ir_along2(Builder *b, Op op, Inst *x, Inst *v, int axis) {
  Inst proto = {0}, *args[2] = {x, v};
  proto.axes = 1u << axis;
  return build(b, op, args, 2, proto);
}

Inst *ir_polygamma(Builder *b, int order, Inst *x) {
  Inst proto = {0};
  proto.index = order;
  return build(b, OP_polygamma, &x, 1, proto);
}

Inst *ir_concat(Builder *b, Inst **xs, int n, int axis, const Type *t) {
  Inst proto = {0};
  proto.axes = 1u << axis;
  proto.type = *t;
  return build(b, OP_concat, xs, n, proto);
}

Inst *ir_size_value(Builder *b, Dim d) {
  Type one = ir_scalar(DT_I32);
  one.rank = 1;
  one.dim[0] = d;
  return ir_count(b, &one, 1u, DT_I32);
}

Inst *ir_count(Builder *b, const Type *x, unsigned axes, DType dt) {
  Inst *i = ir_new_inst(b, OP_count, ir_scalar(dt), NULL, 0);
  for (int k = 0; k < x->rank; k++)
    if (axes & (1u << k))
      i->attr.dim[i->attr.rank++] = x->dim[k];
  i->attr.dtype = dt;
  return i;
}

Inst *ir_matmul(Builder *b, Inst *x, Inst *y) {
  Inst *args[2] = {x, y};
  Inst proto = {0};
  return build(b, OP_matmul, args, 2, proto);
}

Inst *ir_matmulz(Builder *b, Inst *x, Inst *y) {
  Inst *args[2] = {x, y};
  Inst proto = {0};
  return build(b, OP_matmulz, args, 2, proto);
}

Inst *ir_matmulz_into(Builder *b, Inst *x, Inst *y, const Type *to) {
  Inst *args[2] = {x, y};
  Inst proto = {0};
  proto.type = *to;
  Inst *i = build(b, OP_matmulz, args, 2, proto);
  if (!ir_type_eq(&i->type, to))
    die("matmulz cannot sum its batch into the given type");
  return i;
}

Inst *ir_index_op(Builder *b, Op op, Inst *x, Inst *idx, int axis, const Type *t) {
  Inst *args[2] = {x, idx};
  Inst proto = {0};
  proto.axes = 1u << axis;
  proto.type = *t;
  proto.type.dtype = x->type.dtype;
  return build(b, op, args, 2, proto);
}

Inst *ir_update(Builder *b, Op op, Inst *v, Inst *u, Inst *const *ix, unsigned axes) {
  int n = __builtin_popcount(axes);
  Inst *args[2 + IR_MAX_RANK] = {v, u};
  for (int k = 0; k < n; k++)
    args[2 + k] = ix[k];
  Inst proto = {0};
  proto.axes = axes;
  proto.type = v->type;
  return build(b, op, args, 2 + n, proto);
}

Inst *ir_positions(Builder *b, Inst *x, Inst *const *ix, unsigned axes, const Type *u) {
  int gather = -1, j = 0, shift = 0;
  for (int k = 0; k < x->type.rank; k++)
    if (axes & (1u << k)) {
      Inst *at = ix[j++];
      if (at->type.rank > 0) {
        gather = k;
        shift = at->type.rank - 1;
        continue;
      }
      Type t = x->type; /* the box along k: u's length there */
      t.dim[k] = u->dim[gather >= 0 ? k + shift : k];
      x = ir_index_op(b, OP_slice, x, at, k, &t);
    }
  if (gather >= 0) {
    Inst *at = ix[__builtin_popcount(axes & ((1u << gather) - 1))];
    x = ir_index_op(b, OP_gather, x, at, gather, u);
  }
  return x;
}

Inst *ir_unbroadcast(Builder *b, Inst *x, const Type *to) {
  if (ir_shape_eq(&x->type, to))
    return x;
  /* Axes broadcasting added on the left, and literal-1 axes it stretched. */
  int lead = x->type.rank - to->rank;
  unsigned axes = 0;
  for (int k = 0; k < x->type.rank; k++)
    if (k < lead || (ir_dim_is(to->dim[k - lead], 1) && !ir_dim_is(x->type.dim[k], 1)))
      axes |= 1u << k;
  Inst *s = ir_reduce(b, OP_sum, x, axes);
  return ir_reshape(b, s, to);
}
