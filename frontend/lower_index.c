/* Indexing (spec section 6): positions, slices with a compile-time length,
 * gathers, take and take_along_axis, each index checked at run time; and
 * indexed assignment to a var, which builds the var's new value. */
#include "lower_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- indexing (spec section 6) ---- */

/* An index: an i32 value (an integer literal becomes one). */
static Val index_value(Ctx *c, Expr *e) {
  Val v = lw_value_arg(c, e);
  if (!v.v)
    return BAD;
  if (v.weak) {
    if (!v.integral) {
      ERR(c, e->loc, "an index must be an integer, not a number with a '.' or an exponent");
      return BAD;
    }
    if (!lw_weak_fits(c, v, DT_I32, e->loc))
      return BAD;
    return lw_concrete(c, v, DT_I32);
  }
  if (v.v->type.dtype != DT_I32) {
    ERR(c, e->loc, "an index must be i32, not %s; convert it with i32(x)",
        ir_dtype_name(v.v->type.dtype));
    return BAD;
  }
  return v;
}

/* A slice bound as (polynomial in sizes) + (one run-time expression). */
typedef struct Bound {
  SizePoly p;
  Expr *atom;
} Bound;

/* Two size expressions of a shape list, written alike. */
static bool same_dim(const AstDim *a, const AstDim *b) {
  if (!a || !b)
    return a == b;
  if (a->op != b->op || !a->name != !b->name || (a->name && strcmp(a->name, b->name) != 0))
    return false;
  return (a->name || a->op || a->size == b->size) && same_dim(a->lhs, b->lhs) && same_dim(a->rhs, b->rhs);
}

static bool same_expr(Expr *a, Expr *b) {
  if (!a || !b || a->kind != b->kind)
    return a == b;
  switch (a->kind) {
  case EX_NUMBER: return a->num == b->num;
  case EX_NAME: return strcmp(a->name, b->name) == 0;
  case EX_DTYPE: return a->dtype == b->dtype; /* the callee of a cast */
  case EX_SHAPE: {
    if (a->ndims != b->ndims)
      return false;
    for (const AstDim *x = a->dims, *y = b->dims; x; x = x->next, y = y->next)
      if (!same_dim(x, y))
        return false;
    return true;
  }
  case EX_NEG:
  case EX_NOT: return same_expr(a->lhs, b->lhs);
  case EX_BINARY: return a->op == b->op && same_expr(a->lhs, b->lhs) && same_expr(a->rhs, b->rhs);
  case EX_INDEX: {
    if (!same_expr(a->lhs, b->lhs) || a->nindex != b->nindex)
      return false;
    for (Index *x = a->index, *y = b->index; x; x = x->next, y = y->next)
      if (x->slice != y->slice || !same_expr(x->pos, y->pos) || !same_expr(x->lo, y->lo) ||
          !same_expr(x->hi, y->hi))
        return false;
    return true;
  }
  case EX_CALL: {
    if (!same_expr(a->callee, b->callee) || a->nargs != b->nargs)
      return false;
    for (Arg *x = a->args, *y = b->args; x; x = x->next, y = y->next)
      if ((x->kw || y->kw) ? !(x->kw && y->kw && strcmp(x->kw, y->kw) == 0) : false)
        return false;
      else if (!same_expr(x->value, y->value))
        return false;
    return true;
  }
  default: return false;
  }
}

static bool bound_form(Ctx *c, Expr *e, Bound *b) {
  b->atom = NULL;
  if (e->kind == EX_NUMBER && e->num == floor(e->num) && fabs(e->num) < 1e15) {
    b->p = ir_poly_const((int64_t)e->num);
    return true;
  }
  if (e->kind == EX_NAME && lw_size_sym(c, e->name) >= 0) {
    b->p = ir_poly_of(c->m, (Dim){0, lw_size_sym(c, e->name)});
    return true;
  }
  if (e->kind == EX_NEG) {
    Bound x;
    SizePoly m1 = ir_poly_const(-1);
    if (bound_form(c, e->lhs, &x) && !x.atom && ir_poly_mul(c->m, &x.p, &m1, &b->p))
      return true;
  }
  if (e->kind == EX_BINARY && (e->op == BIN_ADD || e->op == BIN_SUB || e->op == BIN_MUL)) {
    Bound x, y;
    if (bound_form(c, e->lhs, &x) && bound_form(c, e->rhs, &y)) {
      if (e->op == BIN_MUL && !x.atom && !y.atom && ir_poly_mul(c->m, &x.p, &y.p, &b->p))
        return true;
      bool one = !(x.atom && y.atom) && !(e->op == BIN_SUB && y.atom);
      if (e->op != BIN_MUL && one &&
          ir_poly_add(c->m, &x.p, &y.p, e->op == BIN_ADD ? 1 : -1, &b->p)) {
        b->atom = x.atom ? x.atom : y.atom;
        return true;
      }
    }
  }
  b->p = ir_poly_const(0);
  b->atom = e;
  return true;
}

/* A bound that is a negative number counts from the end of the axis. */
static void from_end(Ctx *c, Bound *b, Dim size) {
  if (!b->atom && b->p.nterms == 1 && b->p.t[0].nvars == 0 && b->p.t[0].coef < 0) {
    SizePoly s = ir_poly_of(c->m, size);
    ir_poly_add(c->m, &s, &b->p, 1, &b->p);
  }
}

/* The start (an i32 scalar) and the compile-time length hi - lo of a
 * slice lo:hi of an axis of `size`; false after reporting why not. */
static bool slice_bounds(Ctx *c, Dim size, Index *ix, Inst **start, Dim *len) {
  Bound lo = {ir_poly_const(0), NULL}, hi = {ir_poly_of(c->m, size), NULL};
  if (ix->lo)
    bound_form(c, ix->lo, &lo);
  if (ix->hi)
    bound_form(c, ix->hi, &hi);
  from_end(c, &lo, size);
  from_end(c, &hi, size);
  SizePoly n;
  if (!same_expr(lo.atom, hi.atom) || !ir_poly_add(c->m, &hi.p, &lo.p, -1, &n)) {
    ERR(c, ix->loc, "the length of this slice is not known at compile time; write its end as "
                    "start + length, as in x[i:i+3], or use sizes, as in x[1:n]");
    return false;
  }
  Dim d = ir_poly_dim(c->m, &n);
  if (d.sym < 0 && d.size < 0) {
    ERR(c, ix->loc, "this slice has a negative length (%lld)", (long long)d.size);
    return false;
  }
  Val v = {.v = NULL};
  if (ix->lo)
    v = index_value(c, ix->lo);
  else
    v = (Val){.v = ir_const(&c->b, DT_I32, 0)};
  if (ix->hi && !index_value(c, ix->hi).v) /* checked, though only its length is used */
    return false;
  if (!v.v)
    return false;
  if (v.v->type.rank != 0) {
    ERR(c, ix->lo->loc, "a slice bound must be an i32 scalar");
    return false;
  }
  *start = v.v;
  *len = d;
  return true;
}

/* x[lo:hi] along axis k: a slice of compile-time length hi - lo. */
static Inst *lower_slice(Ctx *c, Inst *x, int k, Index *ix) {
  Inst *start;
  Type t = x->type;
  if (!slice_bounds(c, x->type.dim[k], ix, &start, &t.dim[k]))
    return NULL;
  c->b.loc = ix->loc;
  return ir_index_op(&c->b, OP_slice, x, start, k, &t);
}

/* x[idx] along axis k: the axis replaced by idx's axes. */
static Inst *gather_along(Ctx *c, Inst *x, Inst *idx, int k, Loc loc) {
  if (x->type.rank - 1 + idx->type.rank > IR_MAX_RANK) {
    ERR(c, loc, "result would have more than %d dimensions", IR_MAX_RANK);
    return NULL;
  }
  Type t = x->type;
  t.rank = 0;
  for (int j = 0; j < x->type.rank; j++)
    if (j != k)
      t.dim[t.rank++] = x->type.dim[j];
    else
      for (int a = 0; a < idx->type.rank; a++)
        t.dim[t.rank++] = idx->type.dim[a];
  c->b.loc = loc;
  return ir_index_op(&c->b, OP_gather, x, idx, k, &t);
}

Val lower_index(Ctx *c, Expr *e) {
  if (e->lhs->kind == EX_DTYPE) {
    ERR(c, e->loc, "a type like %s[n] is only valid as the first argument of zeros, ones, full, "
                   "uniform or normal", lw_dtype_word(e->lhs->dtype));
    return BAD;
  }
  Val base = lw_value_arg(c, e->lhs);
  if (!base.v)
    return BAD;
  Inst *x = base.v;
  if (base.weak || x->type.dtype == DT_BOOL || e->nindex > x->type.rank) {
    if (base.weak || x->type.dtype == DT_BOOL)
      ERR(c, e->loc, "only f32, f64 and i32 tensors can be indexed");
    else
      ERR(c, e->loc, "too many indices: %d for a tensor of rank %d", e->nindex, x->type.rank);
    return BAD;
  }
  unsigned drop = 0;
  int gk = -1;
  Inst *gidx = NULL;
  int k = 0;
  for (Index *ix = e->index; ix; ix = ix->next, k++) {
    if (ix->slice) {
      x = lower_slice(c, x, k, ix);
      if (!x)
        return BAD;
      continue;
    }
    Val v = index_value(c, ix->pos);
    if (!v.v)
      return BAD;
    if (v.v->type.rank > 0) {
      if (gidx) {
        ERR(c, ix->loc, "at most one index of an indexing expression may be a tensor; use "
                        "take() for another gather");
        return BAD;
      }
      gidx = v.v;
      gk = k;
      continue;
    }
    Type t = x->type; /* a position: a slice of one, whose axis goes */
    t.dim[k] = ir_lit(1);
    c->b.loc = ix->loc;
    x = ir_index_op(&c->b, OP_slice, x, v.v, k, &t);
    drop |= 1u << k;
  }
  if (drop) {
    Type t = x->type;
    t.rank = 0;
    for (int j = 0; j < x->type.rank; j++)
      if (!(drop & (1u << j)))
        t.dim[t.rank++] = x->type.dim[j];
    x = ir_reshape(&c->b, x, &t);
  }
  if (gidx) {
    int before = __builtin_popcount(drop & ((1u << gk) - 1));
    x = gather_along(c, x, gidx, gk - before, e->loc);
    if (!x)
      return BAD;
  }
  return (Val){.v = x, .weak = false};
}

/* take(x, idx, axis=K) and take_along_axis(x, idx, axis=K) */
Val lower_take(Ctx *c, Expr *call, const struct Builtin *bi) {
  static const char *const kws[] = {"axis", NULL};
  if (!lw_check_arity(c, call, bi->name, 2, 2, kws))
    return BAD;
  Val x = lw_value_arg(c, lw_nth_positional(call, 0)->value);
  Val idx = index_value(c, lw_nth_positional(call, 1)->value);
  if (!x.v || !idx.v)
    return BAD;
  if (x.weak || x.v->type.dtype == DT_BOOL || x.v->type.rank == 0) {
    ERR(c, call->loc, "'%s' needs an f32, f64 or i32 tensor of rank 1 or more", bi->name);
    return BAD;
  }
  Arg *ax = lw_keyword(call, "axis");
  int rank = x.v->type.rank;
  int64_t k = 0;
  if (!ax) {
    if (bi->kind == B_TAKE_ALONG) {
      ERR(c, call->loc, "take_along_axis needs axis=K");
      return BAD;
    }
    /* NumPy: without an axis, take indexes the flattened tensor */
    Type flat = x.v->type;
    flat.rank = 1;
    SizePoly p = ir_poly_const(1);
    for (int j = 0; j < rank; j++) {
      SizePoly d = ir_poly_of(c->m, x.v->type.dim[j]);
      ir_poly_mul(c->m, &p, &d, &p);
    }
    flat.dim[0] = ir_poly_dim(c->m, &p);
    x.v = ir_reshape(&c->b, x.v, &flat);
    rank = 1;
  } else if (!lw_int_literal(ax->value, &k) || k < -rank || k >= rank) {
    ERR(c, ax->value->loc, "axis must be an integer literal from %d to %d", -rank, rank - 1);
    return BAD;
  }
  if (k < 0)
    k += rank;
  if (bi->kind == B_TAKE) {
    Inst *r = gather_along(c, x.v, idx.v, (int)k, call->loc);
    return r ? (Val){.v = r, .weak = false} : BAD;
  }
  const Type *xt = &x.v->type, *it = &idx.v->type;
  if (it->rank != rank) {
    ERR(c, call->loc, "take_along_axis needs an index of the same rank as the tensor (%d), "
                      "got %s", rank, lw_dstr(c, it));
    return BAD;
  }
  Type out = *xt, xb = *xt, ib = *it;
  for (int j = 0; j < rank; j++) {
    if (j == k) {
      out.dim[j] = it->dim[j];
      continue;
    }
    Dim a = xt->dim[j], b = it->dim[j];
    if (ir_dim_eq(a, b) || ir_dim_is(b, 1))
      out.dim[j] = a;
    else if (ir_dim_is(a, 1))
      out.dim[j] = b;
    else {
      ERR(c, call->loc, "shapes %s and %s do not broadcast in take_along_axis (off axis %d)",
          lw_dstr(c, xt), lw_dstr(c, it), (int)k);
      return BAD;
    }
    xb.dim[j] = ib.dim[j] = out.dim[j];
  }
  Inst *xv = ir_broadcast(&c->b, x.v, &xb), *iv = ir_broadcast(&c->b, idx.v, &ib);
  c->b.loc = call->loc;
  return (Val){.v = ir_index_op(&c->b, OP_take_along, xv, iv, (int)k, &out), .weak = false};
}

/* v[...] = e, += e, -= e, *= e (spec section 6): the var gets a new value,
 * v with the selected positions updated: update(v, E, ...) for `=`,
 * update_add(v, E) for `+=` (repeated positions accumulate) and
 * update_add(v, -E) for `-=`, update(v, v[...] * E) for `*=` (ops.def),
 * with one index per indexed axis: a start for a position or a slice, the
 * tensor for a gather; E is e broadcast to the selected positions (a
 * position's axis kept as 1). The positions are those v[...] reads: a
 * gather replaces its axis in place. */
Inst *lower_index_assign(Ctx *c, Stmt *s, Binding *b) {
  Inst *v = b->val.v;
  Val e = lower_expr(c, s->value);
  if (!v || !e.v)
    return NULL;
  const Type *vt = &v->type;
  if (s->nindex > vt->rank) {
    ERR(c, s->name_loc, "too many indices: %d for '%s' of rank %d", s->nindex, s->name, vt->rank);
    return NULL;
  }
  if (!lw_weak_fits(c, e, vt->dtype, s->value->loc))
    return NULL;
  bool flags = vt->dtype == DT_BOOL;
  if (flags && s->compound) {
    ERR(c, s->name_loc, "'%s' is a var of type %s: a bool value can only be combined with &&, "
        "|| and !; assign its positions with '='", s->name, lw_tstr(c, vt));
    return NULL;
  }
  if (flags && e.weak && e.v->type.dtype != DT_BOOL) {
    ERR(c, s->value->loc, "cannot assign a number into '%s', a var of type %s; a bool is a "
        "comparison's result (x > 0)", s->name, lw_tstr(c, vt));
    return NULL;
  }
  e = lw_concrete(c, e, vt->dtype);
  if (e.v->type.dtype != vt->dtype) {
    ERR(c, s->value->loc, "cannot assign %s into '%s', a var of type %s", lw_tstr(c, &e.v->type),
        s->name, lw_tstr(c, vt));
    return NULL;
  }
  Inst *ix[IR_MAX_RANK];
  int nix = 0, gather = -1;
  unsigned axes = 0;
  Type u = *vt, sel = *vt; /* the new data's type; the selection's, as v[...] reads it */
  u.rank = sel.rank = 0;
  int k = 0;
  for (Index *x = s->index; x; x = x->next, k++) {
    if (x->slice && !x->lo && !x->hi) { /* `:`, the whole axis */
      sel.dim[sel.rank++] = u.dim[u.rank++] = vt->dim[k];
      continue;
    }
    axes |= 1u << k;
    if (x->slice) {
      if (!slice_bounds(c, vt->dim[k], x, &ix[nix], &u.dim[u.rank]))
        return NULL;
      sel.dim[sel.rank++] = u.dim[u.rank++];
      nix++;
      continue;
    }
    Val iv = index_value(c, x->pos);
    if (!iv.v)
      return NULL;
    ix[nix++] = iv.v;
    if (iv.v->type.rank == 0) { /* a position: a box of one, whose axis goes */
      u.dim[u.rank++] = ir_lit(1);
      continue;
    }
    if (gather >= 0) {
      ERR(c, x->loc, "at most one index of an indexing expression may be a tensor");
      return NULL;
    }
    if (vt->rank - 1 + iv.v->type.rank > IR_MAX_RANK) {
      ERR(c, x->loc, "the selected positions would have more than %d dimensions", IR_MAX_RANK);
      return NULL;
    }
    gather = k;
    for (int a = 0; a < iv.v->type.rank; a++)
      sel.dim[sel.rank++] = u.dim[u.rank++] = iv.v->type.dim[a];
  }
  for (; k < vt->rank; k++)
    sel.dim[sel.rank++] = u.dim[u.rank++] = vt->dim[k];
  if (!ir_can_broadcast_to(&e.v->type, &sel)) {
    ERR(c, s->value->loc, "%s does not broadcast to the selected %s", lw_dstr(c, &e.v->type),
        lw_dstr(c, &sel));
    return NULL;
  }
  c->b.loc = s->loc;
  if (flags && axes) { /* update takes no bool: the positions as i32 0 or 1, then != 0 again */
    v = ir_convert(&c->b, v, DT_I32);
    e.v = ir_convert(&c->b, e.v, DT_I32);
    u.dtype = sel.dtype = DT_I32;
  }
  Inst *E = ir_reshape(&c->b, ir_broadcast(&c->b, e.v, &sel), &u);
  if (!axes) /* v[:, :] = e: every position */
    return !s->compound ? E : ir_binary(&c->b, s->op == BIN_MUL ? OP_mul : s->op == BIN_SUB ? OP_sub : OP_add, v, E);
  if (flags) {
    Inst *r = ir_update(&c->b, OP_update, v, E, ix, axes);
    return ir_binary(&c->b, OP_ne, r, ir_const_like(&c->b, &r->type, 0));
  }
  if (s->compound && s->op == BIN_MUL)
    return ir_update(&c->b, OP_update, v, ir_binary(&c->b, OP_mul, ir_positions(&c->b, v, ix, axes, &u), E),
                     ix, axes);
  if (s->compound)
    return ir_update(&c->b, OP_update_add, v, s->op == BIN_SUB ? ir_unary(&c->b, OP_neg, E) : E, ix, axes);
  return ir_update(&c->b, OP_update, v, E, ix, axes);
}
