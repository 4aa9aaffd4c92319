/* cg_scan.c -- the ops along one axis K that keep their operand's shape
 * (cumsum, rcumsum, prod_others: ops.def) and concat, each into the
 * value's memory.
 *
 * A scan visits every position of the other axes (the outer ones, then
 * those after K) and runs along K there with its running value in a
 * register, so no position is written before the ones it depends on:
 *   cumsum       out[j] = x[0] + ... + x[j]
 *   rcumsum      out[j] = x[j] + ... + x[n-1]
 *   prod_others  out[j] = x[0] * ... * x[j-1]  (a forward pass), then times
 *                x[j+1] * ... * x[n-1] (a backward pass): exact with any
 *                number of zeros, and no division.
 *   prod_pairs_lo(x, v)  a forward pass with two running values, P the
 *                product before j and dP the sum over i < j of v[i] times
 *                the product of the x's before j but x[i] (dP' = dP x[j] +
 *                P v[j]), out[j] = dP; then a backward pass times the
 *                products after, as prod_others. prod_pairs_hi is the same
 *                with the directions swapped. A zero factor gives an exact
 *                zero term (mulz), so a zero v stays zero beside an inf.
 * concat copies each operand in turn, along its own loop nest, to its
 * offset along K.
 *
 * Requires: the plan (operands evaluated where used). */
#include "cg_internal.h"

static LLVMValueRef i64c(Cg *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

typedef struct Scan {
  const Inst *v;
  int axis;
  LLVMValueRef out, acc; /* the value's memory; the running value (alloca) */
  LLVMValueRef dacc;     /* prod_pairs' second running value (alloca) */
} Scan;

/* The scans that multiply (the others add: cumsum, rcumsum). */
static bool multiplies(Op op) { return op != OP_cumsum && op != OP_rcumsum; }

static LLVMValueRef combine(Cg *g, Op op, LLVMValueRef a, LLVMValueRef b) {
  if (LLVMGetTypeKind(LLVMTypeOf(a)) == LLVMIntegerTypeKind) /* i32 wraps */
    return multiplies(op) ? LLVMBuildMul(g->b, a, b, "") : LLVMBuildAdd(g->b, a, b, "");
  return multiplies(op) ? LLVMBuildFMul(g->b, a, b, "") : LLVMBuildFAdd(g->b, a, b, "");
}

static LLVMValueRef identity(Cg *g, Op op, DType dt) {
  LLVMTypeRef t = cg_elem_type(g, dt);
  double v = multiplies(op) ? 1 : 0;
  return ir_is_float(dt) ? LLVMConstReal(t, v) : LLVMConstInt(t, (unsigned long long)v, 1);
}

/* a * b, exactly 0 where a is 0 (IR mulz) */
static LLVMValueRef mulz(Cg *g, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef z = LLVMConstNull(LLVMTypeOf(a));
  return LLVMBuildSelect(g->b, LLVMBuildFCmp(g->b, LLVMRealOEQ, a, z, ""), z, LLVMBuildFMul(g->b, a, b, ""), "");
}

/* Step i of a pass along K (from the end when `back`) at the position o
 * of the other axes: its index in at (without a linear position, for
 * cg_eval) and its linear position in out. */
static LLVMValueRef step_at(Body *B, Scan *s, Idx *o, LLVMValueRef n, LLVMValueRef i, bool back,
                            Idx *at) {
  Cg *g = B->g;
  const Type *t = &s->v->type;
  LLVMValueRef j = back ? LLVMBuildNSWSub(g->b, LLVMBuildNSWSub(g->b, n, i, ""), i64c(g, 1), "") : i;
  *at = (Idx){t->rank, {0}, NULL};
  for (int k = 0, m = 0; k < t->rank; k++)
    at->i[k] = k == s->axis ? j : o->i[m++];
  LLVMValueRef lin = cg_lin(B, at, t);
  at->lin = NULL;
  return lin;
}

/* One pass along K at the position o of the other axes, forward or back:
 * with `before`, out[j] = acc (times out[j] when `scale`), then acc
 * combines x[j]; without, acc combines x[j] first. */
static void run_along(Body *B, Scan *s, Idx *o, bool back, bool before, bool scale) {
  Cg *g = B->g;
  const Inst *v = s->v, *x = v->args[0];
  DType dt = v->type.dtype;
  LLVMTypeRef et = cg_elem_type(g, dt);
  LLVMValueRef n = cg_dim(B, v->type.dim[s->axis]);
  LLVMBuildStore(g->b, identity(g, v->op, dt), s->acc);
  void *loop;
  Idx at;
  LLVMValueRef lin = step_at(B, s, o, n, cg_loop_begin(B, n, &loop), back, &at);
  LLVMValueRef e = cg_eval(B, x, &at);
  LLVMValueRef acc = LLVMBuildLoad2(g->b, et, s->acc, "");
  LLVMValueRef next = combine(g, v->op, acc, e);
  LLVMValueRef put = before ? acc : next;
  if (scale) {
    LLVMValueRef was = cg_load(B, dt, s->out, lin);
    put = v->op == OP_prod_others ? combine(g, v->op, was, put) : mulz(g, was, put); /* prod_pairs */
  }
  cg_store(B, dt, s->out, lin, put);
  LLVMBuildStore(g->b, next, s->acc);
  cg_loop_end(B, loop);
}

/* prod_pairs' first pass (forward for lo, backward for hi): out[j] = dP,
 * then dP = dP x[j] + P v[j] and P = P x[j] (acc holds P, dacc dP). */
static void pairs_along(Body *B, Scan *s, Idx *o, bool back) {
  Cg *g = B->g;
  const Inst *v = s->v;
  DType dt = v->type.dtype;
  LLVMTypeRef et = cg_elem_type(g, dt);
  LLVMValueRef n = cg_dim(B, v->type.dim[s->axis]);
  LLVMBuildStore(g->b, identity(g, v->op, dt), s->acc);
  LLVMBuildStore(g->b, LLVMConstNull(et), s->dacc);
  void *loop;
  Idx at;
  LLVMValueRef lin = step_at(B, s, o, n, cg_loop_begin(B, n, &loop), back, &at);
  LLVMValueRef x = cg_eval(B, v->args[0], &at);
  at.lin = NULL;
  LLVMValueRef t = cg_eval(B, v->args[1], &at);
  LLVMValueRef p = LLVMBuildLoad2(g->b, et, s->acc, ""), dp = LLVMBuildLoad2(g->b, et, s->dacc, "");
  cg_store(B, dt, s->out, lin, dp);
  LLVMBuildStore(g->b, LLVMBuildFAdd(g->b, mulz(g, dp, x), mulz(g, t, p), ""), s->dacc);
  LLVMBuildStore(g->b, LLVMBuildFMul(g->b, p, x, ""), s->acc);
  cg_loop_end(B, loop);
}

static void scan_at(Body *B, Idx *o, void *ctx) {
  Scan *s = ctx;
  o->lin = NULL;
  if (s->v->op == OP_prod_pairs_lo || s->v->op == OP_prod_pairs_hi) {
    bool hi = s->v->op == OP_prod_pairs_hi;
    pairs_along(B, s, o, hi);
    run_along(B, s, o, !hi, true, true); /* times the products on the other side */
  } else if (s->v->op == OP_prod_others) {
    run_along(B, s, o, false, true, false); /* the products before */
    run_along(B, s, o, true, true, true);   /* times the products after */
  } else {
    run_along(B, s, o, s->v->op == OP_rcumsum, false, false);
  }
}

void cg_emit_scan(Body *B, const Inst *v, LLVMValueRef out) {
  Cg *g = B->g;
  LLVMTypeRef et = cg_elem_type(g, v->type.dtype);
  Scan s = {v, __builtin_ctz(v->axes), out, cg_entry_alloca(B, et), cg_entry_alloca(B, et)};
  Type rest = v->type; /* the other axes */
  for (int k = s.axis; k + 1 < rest.rank; k++)
    rest.dim[k] = rest.dim[k + 1];
  rest.rank--;
  Idx o = {rest.rank, {0}, NULL};
  cg_loop_all(B, &rest, &o, scan_at, &s);
}

typedef struct Piece {
  const Inst *x;
  int axis;
  LLVMValueRef at; /* its offset along the axis */
  const Type *t;   /* the result's type */
  LLVMValueRef out;
} Piece;

static void copy_one(Body *B, Idx *x, void *ctx) {
  Piece *p = ctx;
  x->lin = NULL;
  LLVMValueRef e = cg_eval(B, p->x, x);
  Idx o = *x;
  o.lin = NULL;
  o.i[p->axis] = LLVMBuildNSWAdd(B->g->b, x->i[p->axis], p->at, "");
  cg_store(B, p->t->dtype, p->out, cg_lin(B, &o, p->t), e);
}

void cg_emit_concat(Body *B, const Inst *v, LLVMValueRef out) {
  Cg *g = B->g;
  int axis = __builtin_ctz(v->axes);
  LLVMValueRef at = i64c(g, 0);
  for (int k = 0; k < v->nargs; k++) {
    const Inst *x = v->args[k];
    Piece p = {x, axis, at, &v->type, out};
    Idx i = {x->type.rank, {0}, NULL};
    cg_loop_all(B, &x->type, &i, copy_one, &p);
    at = cg_add64(g, at, cg_dim(B, x->type.dim[axis]));
  }
}
