/* Code for the constructors and position ops of language version 2 that
 * are not element by element: argmax/argmin along one axis (a loop per
 * kept position, keeping the first best), and the random numbers of
 * runtime/philox.c (uniform, normal, split: one runtime call that fills
 * the value's memory). arange is elementwise (cg_func.c's eval_def). */
#include "cg_internal.h"

static LLVMValueRef i64c(Cg *g, int64_t v) { return LLVMConstInt(g->i64, (unsigned long long)v, 1); }

typedef struct ArgRed {
  const Inst *v;
  int axis;
  LLVMValueRef n;          /* the axis size */
  LLVMValueRef best, pos;  /* allocas: the best element so far, its position */
  LLVMValueRef out;
} ArgRed;

/* Whether element e beats the best so far: larger (smaller), or the first
 * NaN (NumPy's rule: NaN wins, and then nothing beats it). */
static LLVMValueRef beats(Cg *g, Op op, LLVMValueRef e, LLVMValueRef best) {
  if (LLVMGetTypeKind(LLVMTypeOf(e)) == LLVMIntegerTypeKind)
    return LLVMBuildICmp(g->b, op == OP_argmax ? LLVMIntSGT : LLVMIntSLT, e, best, "");
  LLVMValueRef better = LLVMBuildFCmp(g->b, op == OP_argmax ? LLVMRealOGT : LLVMRealOLT, e, best, "");
  LLVMValueRef nan = LLVMBuildAnd(g->b, LLVMBuildFCmp(g->b, LLVMRealUNO, e, e, ""),
                                  LLVMBuildFCmp(g->b, LLVMRealORD, best, best, ""), "");
  return LLVMBuildOr(g->b, better, nan, "");
}

/* The operand's element at kept position o with position j along the axis. */
static LLVMValueRef element(Body *B, ArgRed *a, Idx *o, LLVMValueRef j) {
  const Inst *src = a->v->args[0];
  Idx x = {src->type.rank, {0}, NULL};
  for (int k = 0, m = 0; k < src->type.rank; k++)
    x.i[k] = k == a->axis ? j : o->i[m++];
  return cg_eval(B, src, &x);
}

static void arg_at(Body *B, Idx *o, void *ctx) {
  ArgRed *a = ctx;
  Cg *g = B->g;
  o->lin = NULL;
  LLVMTypeRef et = cg_elem_type(g, a->v->args[0]->type.dtype);
  LLVMBuildStore(g->b, element(B, a, o, i64c(g, 0)), a->best);
  LLVMBuildStore(g->b, i64c(g, 0), a->pos);
  void *loop;
  LLVMValueRef j = LLVMBuildNSWAdd(g->b, cg_loop_begin(B, LLVMBuildNSWSub(g->b, a->n, i64c(g, 1), ""), &loop),
                                   i64c(g, 1), "");
  LLVMValueRef e = element(B, a, o, j);
  LLVMValueRef best = LLVMBuildLoad2(g->b, et, a->best, "");
  LLVMValueRef take = beats(g, a->v->op, e, best);
  LLVMBuildStore(g->b, LLVMBuildSelect(g->b, take, e, best, ""), a->best);
  LLVMBuildStore(g->b, LLVMBuildSelect(g->b, take, j, LLVMBuildLoad2(g->b, g->i64, a->pos, ""), ""), a->pos);
  cg_loop_end(B, loop);
  LLVMValueRef p = LLVMBuildTrunc(g->b, LLVMBuildLoad2(g->b, g->i64, a->pos, ""), g->i32, "");
  cg_store(B, DT_I32, a->out, cg_lin(B, o, &a->v->type), p);
}

void cg_emit_argreduce(Body *B, const Inst *v, LLVMValueRef out) {
  Cg *g = B->g;
  const Type *st = &v->args[0]->type;
  ArgRed a = {v, __builtin_ctz(v->axes), NULL, NULL, NULL, out};
  Dim d = st->dim[a.axis];
  a.n = cg_dim(B, d);
  /* Written as a literal 0 it is a compile-time error (frontend/lower.c);
   * a size that becomes 0 when a call is inlined (f(x: f64[d]) reading
   * ones([d - 1]), called with d = 1) fails at run time, as a symbolic
   * one would. A literal other than 0 folds the test away. */
  cg_fail_if(B, LLVMBuildICmp(g->b, LLVMIntEQ, a.n, i64c(g, 0), ""), v, RT_empty_axis, NULL, 0);
  a.best = cg_entry_alloca(B, cg_elem_type(g, st->dtype));
  a.pos = cg_entry_alloca(B, g->i64);
  Idx o;
  cg_loop_all(B, &v->type, &o, arg_at, &a);
}

/* sg_rt_random(kind, dtype, key, nkey, out, n): a scalar key is passed
 * through a one-element array. */
void cg_emit_random(Body *B, const Inst *v, LLVMValueRef out) {
  Cg *g = B->g;
  const Inst *key = v->args[0];
  LLVMValueRef kp, nk;
  if (key->type.rank == 0) {
    kp = cg_entry_alloca(B, g->i32);
    LLVMBuildStore(g->b, cg_eval_scalar(B, key), kp);
    nk = i64c(g, 1);
  } else {
    kp = cg_slot(B, key)->buf;
    nk = cg_numel(B, &key->type);
  }
  int kind = v->op == OP_uniform ? 0 : v->op == OP_normal ? 1 : 2;
  LLVMTypeRef fty;
  LLVMValueRef fn = cg_rt(g, RT_random, &fty);
  LLVMValueRef args[6] = {LLVMConstInt(g->i32, (unsigned)kind, 0),
                          LLVMConstInt(g->i32, (unsigned)v->type.dtype, 0), kp, nk, out,
                          cg_numel(B, &v->type)};
  LLVMBuildCall2(g->b, fty, fn, args, 6, "");
}
