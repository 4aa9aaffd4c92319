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
} Scan;

static LLVMValueRef combine(Cg *g, Op op, LLVMValueRef a, LLVMValueRef b) {
  if (LLVMGetTypeKind(LLVMTypeOf(a)) == LLVMIntegerTypeKind) /* i32 wraps */
    return op == OP_prod_others ? LLVMBuildMul(g->b, a, b, "") : LLVMBuildAdd(g->b, a, b, "");
  return op == OP_prod_others ? LLVMBuildFMul(g->b, a, b, "") : LLVMBuildFAdd(g->b, a, b, "");
}

static LLVMValueRef identity(Cg *g, Op op, DType dt) {
  LLVMTypeRef t = cg_elem_type(g, dt);
  double v = op == OP_prod_others ? 1 : 0;
  return ir_is_float(dt) ? LLVMConstReal(t, v) : LLVMConstInt(t, (unsigned long long)v, 1);
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
  LLVMValueRef i = cg_loop_begin(B, n, &loop);
  LLVMValueRef j = back ? LLVMBuildNSWSub(g->b, LLVMBuildNSWSub(g->b, n, i, ""), i64c(g, 1), "") : i;
  Idx at = {v->type.rank, {0}, NULL};
  for (int k = 0, m = 0; k < v->type.rank; k++)
    at.i[k] = k == s->axis ? j : o->i[m++];
  LLVMValueRef lin = cg_lin(B, &at, &v->type);
  at.lin = NULL;
  LLVMValueRef e = cg_eval(B, x, &at);
  LLVMValueRef acc = LLVMBuildLoad2(g->b, et, s->acc, "");
  LLVMValueRef next = combine(g, v->op, acc, e);
  LLVMValueRef put = before ? acc : next;
  if (scale)
    put = combine(g, v->op, cg_load(B, dt, s->out, lin), put);
  cg_store(B, dt, s->out, lin, put);
  LLVMBuildStore(g->b, next, s->acc);
  cg_loop_end(B, loop);
}

static void scan_at(Body *B, Idx *o, void *ctx) {
  Scan *s = ctx;
  o->lin = NULL;
  if (s->v->op == OP_prod_others) {
    run_along(B, s, o, false, true, false); /* the products before */
    run_along(B, s, o, true, true, true);   /* times the products after */
  } else {
    run_along(B, s, o, s->v->op == OP_rcumsum, false, false);
  }
}

void cg_emit_scan(Body *B, const Inst *v, LLVMValueRef out) {
  Cg *g = B->g;
  Scan s = {v, __builtin_ctz(v->axes), out, cg_entry_alloca(B, cg_elem_type(g, v->type.dtype))};
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
