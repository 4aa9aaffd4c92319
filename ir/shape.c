/* Shape rules: the one place that decides which shapes go together. The
 * checker (frontend/lower.c) calls them to report user errors, the builders
 * (ir/ir.c) to type new instructions, and the verifier to check the IR.
 *
 * Symbolic sizes are never assumed equal to anything but themselves: `n` and
 * `m`, or `n` and `4`, do not match (spec section 5), except that a literal 1
 * broadcasts against anything. */
#include <string.h>

#include "ir.h"

#define FAIL(...) (snprintf(err, errlen, __VA_ARGS__), false)

bool ir_broadcast_shapes(const Module *m, const Type *a, const Type *b, Type *out,
                         char *err, size_t errlen) {
  int r = a->rank > b->rank ? a->rank : b->rank;
  Type t = ir_scalar(a->dtype);
  t.rank = r;
  for (int i = 0; i < r; i++) {
    int ia = i - (r - a->rank), ib = i - (r - b->rank);
    Dim da = ia >= 0 ? a->dim[ia] : ir_lit(1);
    Dim db = ib >= 0 ? b->dim[ib] : ir_lit(1);
    if (ir_dim_eq(da, db) || ir_dim_is(db, 1))
      t.dim[i] = da;
    else if (ir_dim_is(da, 1))
      t.dim[i] = db;
    else {
      char sa[128], sb[128];
      return FAIL("shapes %s and %s do not broadcast", ir_dims_str(m, a, sa, sizeof sa),
                  ir_dims_str(m, b, sb, sizeof sb));
    }
  }
  *out = t;
  return true;
}

bool ir_can_broadcast_to(const Type *from, const Type *to) {
  if (from->rank > to->rank)
    return false;
  int lead = to->rank - from->rank;
  for (int i = 0; i < from->rank; i++)
    if (!ir_dim_eq(from->dim[i], to->dim[i + lead]) && !ir_dim_is(from->dim[i], 1))
      return false;
  return true;
}

/* NumPy's matmul: a rank-1 operand is a vector ([k] on the left, [k] on the
 * right); operands of rank 2 or more are matrices over their last two axes,
 * batched over the leading ones, which broadcast (right-aligned, as
 * elementwise operands do). */
bool ir_matmul_type(const Module *m, const Type *a, const Type *b, Type *out, char *err,
                    size_t errlen) {
  char sa[128], sb[128];
  if (a->rank < 1 || b->rank < 1)
    return FAIL("'@' needs operands of rank 1 or more, got %s and %s",
                ir_dims_str(m, a, sa, sizeof sa), ir_dims_str(m, b, sb, sizeof sb));
  Dim ka = a->dim[a->rank - 1], kb = b->dim[b->rank < 2 ? 0 : b->rank - 2];
  if (!ir_dim_eq(ka, kb))
    return FAIL("'@' contracts %s with %s: inner sizes differ",
                ir_dims_str(m, a, sa, sizeof sa), ir_dims_str(m, b, sb, sizeof sb));
  Type ba = ir_scalar(a->dtype), bb = ir_scalar(b->dtype), t;
  ba.rank = a->rank > 2 ? a->rank - 2 : 0;
  bb.rank = b->rank > 2 ? b->rank - 2 : 0;
  memcpy(ba.dim, a->dim, sizeof(Dim) * (size_t)ba.rank);
  memcpy(bb.dim, b->dim, sizeof(Dim) * (size_t)bb.rank);
  if (!ir_broadcast_shapes(m, &ba, &bb, &t, err, errlen))
    return false;
  if (a->rank >= 2)
    t.dim[t.rank++] = a->dim[a->rank - 2];
  if (b->rank >= 2)
    t.dim[t.rank++] = b->dim[b->rank - 1];
  *out = t;
  return true;
}

/* The IR's matmul: NumPy's rule for ranks 1 and 2; a batched product (a rank
 * above 2) takes two operands of rank 2 or more (the frontend reshapes a
 * vector), and its result may leave out or shrink to 1 batch axes that the
 * operands' batches broadcast over: those products are summed (the adjoint
 * of a broadcast batch axis). `given` is the instruction's own type. */
static bool matmul_ir_type(const Module *m, const Type *a, const Type *b, const Type *given,
                           Type *out, char *err, size_t errlen) {
  if ((a->rank > 2 || b->rank > 2) && (a->rank < 2 || b->rank < 2))
    return FAIL("a batched matmul takes operands of rank 2 or more");
  if (!ir_matmul_type(m, a, b, out, err, errlen))
    return false;
  if (given->dtype != out->dtype || given->rank < 2 || out->rank < 2 ||
      ir_type_eq(given, out))
    return true;
  Type gb = *given, ob = *out;
  gb.rank -= 2;
  ob.rank -= 2;
  if (ir_dim_eq(given->dim[given->rank - 2], out->dim[out->rank - 2]) &&
      ir_dim_eq(given->dim[given->rank - 1], out->dim[out->rank - 1]) &&
      ir_can_broadcast_to(&gb, &ob))
    *out = *given;
  return true;
}

Type ir_reduce_type(const Type *x, unsigned axes) {
  Type t = ir_scalar(x->dtype);
  for (int i = 0; i < x->rank; i++)
    if (!(axes & (1u << i)))
      t.dim[t.rank++] = x->dim[i];
  return t;
}

Type ir_transpose_type(const Type *x, const int *perm) {
  Type t = *x;
  for (int i = 0; i < x->rank; i++)
    t.dim[i] = x->dim[perm[i]];
  return t;
}

bool ir_numel_poly(const Module *m, const Type *t, SizePoly *out) {
  SizePoly p = ir_poly_const(1);
  for (int i = 0; i < t->rank; i++) {
    SizePoly d = ir_poly_of(m, t->dim[i]);
    if (!ir_poly_mul(m, &p, &d, &p))
      return false;
  }
  *out = p;
  return true;
}

/* Element counts agree as polynomials (section 5): [k, d] holds as many
 * elements as [d * k] or [2, n] as [n, 2]. */
bool ir_reshape_ok(const Module *m, const Type *from, const Type *to) {
  if (ir_shape_eq(from, to))
    return true;
  SizePoly a, b;
  return ir_numel_poly(m, from, &a) && ir_numel_poly(m, to, &b) && ir_poly_eq(&a, &b);
}

static bool is_perm(const int *perm, int rank) {
  unsigned seen = 0;
  for (int i = 0; i < rank; i++) {
    if (perm[i] < 0 || perm[i] >= rank || (seen & (1u << perm[i])))
      return false;
    seen |= 1u << perm[i];
  }
  return true;
}

/* The indexing ops (ops.def): one axis K; operand 1 i32; shapes as listed
 * there. */
static bool index_type_ok(const Module *m, const Inst *i, char *err, size_t errlen) {
  (void)m;
  Inst *const *a = i->args;
  const Type *x = &a[0]->type, *ix = &a[1]->type, *t = &i->type;
  int k = __builtin_ctz(i->axes | 0x100u);
  if (ix->dtype != DT_I32 || t->dtype != x->dtype || (i->axes & (i->axes - 1)) || !i->axes)
    return FAIL("%s: one axis, an i32 index and the data's dtype", ir_ops[i->op].name);
  switch (i->op) {
  case OP_gather:
  case OP_scatter_add: { /* big = small with axis K replaced by idx's axes */
    const Type *small = i->op == OP_gather ? x : t, *big = i->op == OP_gather ? t : x;
    if (k >= small->rank || big->rank != small->rank - 1 + ix->rank)
      return FAIL("%s: bad ranks", ir_ops[i->op].name);
    for (int j = 0; j < big->rank; j++) {
      Dim want = j < k ? small->dim[j] : j < k + ix->rank ? ix->dim[j - k] : small->dim[j - ix->rank + 1];
      if (!ir_dim_eq(want, big->dim[j]))
        return FAIL("%s: bad shape", ir_ops[i->op].name);
    }
    return true;
  }
  case OP_take_along:
  case OP_scatter_along: { /* data, index and result: one rank; index = result */
    const Type *res = i->op == OP_take_along ? t : x, *data = i->op == OP_take_along ? x : t;
    if (k >= data->rank || data->rank != res->rank || !ir_shape_eq(ix, res))
      return FAIL("%s: bad shapes", ir_ops[i->op].name);
    for (int j = 0; j < res->rank; j++)
      if (j != k && !ir_dim_eq(res->dim[j], data->dim[j]))
        return FAIL("%s: shapes differ off the axis", ir_ops[i->op].name);
    return true;
  }
  default: { /* slice / unslice: equal but along K; a scalar start */
    if (ix->rank != 0 || k >= x->rank || x->rank != t->rank)
      return FAIL("%s: bad operands", ir_ops[i->op].name);
    for (int j = 0; j < t->rank; j++)
      if (j != k && !ir_dim_eq(t->dim[j], x->dim[j]))
        return FAIL("%s: shapes differ off the axis", ir_ops[i->op].name);
    return true;
  }
  }
}

/* One axis K of a rank-`rank` value in `axes`. */
static bool one_axis(unsigned axes, int rank) {
  return axes && !(axes & (axes - 1)) && (axes >> rank) == 0;
}

/* concat: operands of the result's rank and dtype, equal to it off axis K;
 * along K the result's size is the sum of theirs (as polynomials). */
static bool concat_type_ok(const Module *m, const Inst *i, char *err, size_t errlen) {
  const Type *t = &i->type;
  int k = __builtin_ctz(i->axes | 0x100u);
  if (i->nargs < 1 || !one_axis(i->axes, t->rank))
    return FAIL("concat: one or more operands and one axis of the result");
  SizePoly len = ir_poly_const(0);
  for (int a = 0; a < i->nargs; a++) {
    const Type *x = &i->args[a]->type;
    if (x->dtype != t->dtype || x->rank != t->rank)
      return FAIL("concat: operand %d differs from the result in dtype or rank", a);
    for (int j = 0; j < t->rank; j++)
      if (j != k && !ir_dim_eq(x->dim[j], t->dim[j]))
        return FAIL("concat: operand %d differs from the result off the axis", a);
    SizePoly d = ir_poly_of(m, x->dim[k]);
    if (!ir_poly_add(m, &len, &d, 1, &len))
      return FAIL("concat: the length is too large a size expression");
  }
  SizePoly want = ir_poly_of(m, t->dim[k]);
  if (!ir_poly_eq(&len, &want))
    return FAIL("concat: the result's length along the axis is not the sum of the operands'");
  return true;
}

/* update / update_add (ops.def): v, u, then one i32 index per axis in
 * `axes`; u is v with each such axis replaced by its box (any length) or,
 * for a tensor index, by the tensor's axes. */
static bool update_type_ok(const Module *m, const Inst *i, char *err, size_t errlen) {
  (void)m;
  const char *name = ir_ops[i->op].name;
  if (i->nargs < 3)
    return FAIL("%s takes the old value, the new data and at least one index", name);
  const Type *v = &i->args[0]->type, *u = &i->args[1]->type;
  if (!i->axes || i->axes >> v->rank || i->nargs != 2 + __builtin_popcount(i->axes))
    return FAIL("%s: one index per axis in axes, of the old value's axes", name);
  if (u->dtype != v->dtype || !ir_type_eq(&i->type, v) || v->dtype == DT_BOOL)
    return FAIL("%s: the old value, the new data and the result share one dtype", name);
  int j = 0, at = 2, tensors = 0; /* j: u's axis */
  for (int k = 0; k < v->rank; k++) {
    if (!(i->axes & (1u << k))) {
      if (j >= u->rank || !ir_dim_eq(u->dim[j++], v->dim[k]))
        return FAIL("%s: the new data differs from the old value off the indexed axes", name);
      continue;
    }
    const Type *ix = &i->args[at++]->type;
    if (ix->dtype != DT_I32)
      return FAIL("%s: indices are i32", name);
    if (ix->rank == 0) {
      if (j++ >= u->rank)
        return FAIL("%s: the new data has too few axes", name);
      continue;
    }
    if (++tensors > 1)
      return FAIL("%s: at most one index is a tensor", name);
    for (int a = 0; a < ix->rank; a++)
      if (j >= u->rank || !ir_dim_eq(u->dim[j++], ix->dim[a]))
        return FAIL("%s: the new data does not have the index tensor's axes in its place", name);
  }
  if (j != u->rank)
    return FAIL("%s: the new data has too many axes", name);
  return true;
}

/* Whether an op of this table entry takes operands of dtype dt. */
static bool dtype_ok(const OpInfo *info, DType dt) {
  if (dt == DT_BOOL)
    return false;
  if (dt == DT_I32)
    return (info->flags & F_INT) != 0;
  return (info->flags & F_INTONLY) == 0;
}

bool ir_infer_type(const Module *m, const Inst *i, Type *out, char *err, size_t errlen) {
  const OpInfo *info = &ir_ops[i->op];
  if (info->arity >= 0 && i->nargs != info->arity)
    return FAIL("%s takes %d operands, got %d", info->name, info->arity, i->nargs);
  Inst *const *a = i->args;
  char s1[128], s2[128];
  switch (info->shape) {
  case SH_GIVEN:
    *out = i->type;
    if (i->op == OP_const || i->op == OP_count) {
      if (i->type.rank != 0 || i->type.dtype == DT_BOOL)
        return FAIL("%s must be a number scalar", info->name);
    } else if (i->op == OP_convert) {
      if (!ir_shape_eq(&a[0]->type, &i->type) || i->type.dtype == DT_BOOL)
        return FAIL("convert changes only the dtype, to f32, f64 or i32");
    } else if (i->op == OP_proj) {
      if (ir_ops[a[0]->op].shape != SH_REGION)
        return FAIL("proj reads the result of a for, while or if");
      if (i->index < 0 || i->index >= ir_num_results(a[0]))
        return FAIL("proj index %d is out of range (%d results)", i->index,
                    ir_num_results(a[0]));
      *out = ir_result_type(a[0], i->index);
    } else if (i->op == OP_broadcast) {
      if (!ir_can_broadcast_to(&a[0]->type, &i->type) || a[0]->type.dtype != i->type.dtype)
        return FAIL("cannot broadcast %s to %s", ir_type_str(m, &a[0]->type, s1, sizeof s1),
                    ir_type_str(m, &i->type, s2, sizeof s2));
    } else if (i->op == OP_uniform || i->op == OP_normal) {
      if (a[0]->type.dtype != DT_I32 || !ir_is_float(i->type.dtype))
        return FAIL("%s takes an i32 key and gives f32 or f64", info->name);
    } else if (i->op == OP_split) {
      if (a[0]->type.dtype != DT_I32 || i->type.dtype != DT_I32 || i->type.rank != 1)
        return FAIL("split takes an i32 key and gives an i32 vector");
    } else if (i->op == OP_arange) {
      if (i->type.rank != 1 || i->type.dtype != DT_I32)
        return FAIL("arange gives an i32 vector");
    } else if (i->op == OP_concat) {
      return concat_type_ok(m, i, err, errlen);
    } else if (i->op == OP_update || i->op == OP_update_add) {
      return update_type_ok(m, i, err, errlen);
    } else if (ir_op_is(i->op, F_AXIS)) {
      return index_type_ok(m, i, err, errlen);
    } else if (i->op == OP_reshape) {
      if (!ir_reshape_ok(m, &a[0]->type, &i->type) || a[0]->type.dtype != i->type.dtype)
        return FAIL("cannot reshape %s to %s", ir_type_str(m, &a[0]->type, s1, sizeof s1),
                    ir_type_str(m, &i->type, s2, sizeof s2));
    }
    return true;
  case SH_SAME:
  case SH_CMP:
    for (int k = 0; k < i->nargs; k++) {
      if (!dtype_ok(info, a[k]->type.dtype))
        return FAIL("%s is not defined on %s", info->name, ir_dtype_name(a[k]->type.dtype));
      if (!ir_type_eq(&a[k]->type, &a[0]->type))
        return FAIL("%s operands differ: %s and %s", info->name,
                    ir_type_str(m, &a[0]->type, s1, sizeof s1),
                    ir_type_str(m, &a[k]->type, s2, sizeof s2));
    }
    if ((info->flags & F_AXIS) && !one_axis(i->axes, a[0]->type.rank))
      return FAIL("%s: one axis of the operand's %d", info->name, a[0]->type.rank);
    *out = a[0]->type;
    if (info->shape == SH_CMP)
      out->dtype = DT_BOOL;
    return true;
  case SH_SELECT:
    if (a[0]->type.dtype != DT_BOOL)
      return FAIL("select needs a bool condition");
    if (!ir_shape_eq(&a[0]->type, &a[1]->type) || !ir_type_eq(&a[1]->type, &a[2]->type))
      return FAIL("select operands differ");
    if (a[1]->type.dtype == DT_BOOL)
      return FAIL("select picks numbers, not bool values");
    *out = a[1]->type;
    return true;
  case SH_REDUCE:
    if (!dtype_ok(info, a[0]->type.dtype))
      return FAIL("%s is not defined on %s", info->name, ir_dtype_name(a[0]->type.dtype));
    if (i->axes == 0 || (i->axes >> a[0]->type.rank) != 0 ||
        ((info->flags & F_AXIS) && !one_axis(i->axes, a[0]->type.rank)))
      return FAIL("%s: bad axes for rank %d", info->name, a[0]->type.rank);
    *out = ir_reduce_type(&a[0]->type, i->axes);
    return true;
  case SH_TRANSPOSE:
    if (!is_perm(i->perm, a[0]->type.rank))
      return FAIL("transpose: not a permutation of %d axes", a[0]->type.rank);
    *out = ir_transpose_type(&a[0]->type, i->perm);
    return true;
  case SH_REGION: /* the structure is checked by ir/verify.c */
    *out = ir_scalar(IR_TUPLE);
    return true;
  case SH_MATMUL:
    if (a[0]->type.dtype != a[1]->type.dtype || !ir_is_float(a[0]->type.dtype))
      return FAIL("matmul operands must have one float dtype");
    return matmul_ir_type(m, &a[0]->type, &a[1]->type, &i->type, out, err, errlen);
  case SH_ARG:
    if (!dtype_ok(info, a[0]->type.dtype))
      return FAIL("%s is not defined on %s", info->name, ir_dtype_name(a[0]->type.dtype));
    if (i->axes == 0 || (i->axes & (i->axes - 1)) || (i->axes >> a[0]->type.rank) != 0)
      return FAIL("%s: one axis of the operand's %d", info->name, a[0]->type.rank);
    *out = ir_reduce_type(&a[0]->type, i->axes);
    out->dtype = DT_I32;
    return true;
  case SH_LOGIC:
    for (int k = 0; k < i->nargs; k++)
      if (a[k]->type.dtype != DT_BOOL || !ir_shape_eq(&a[k]->type, &a[0]->type))
        return FAIL("%s needs bool operands of one shape", info->name);
    *out = a[0]->type;
    return true;
  }
  return FAIL("unknown op");
}
