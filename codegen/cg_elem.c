/* One element of every elementwise operation: the scalar lowering column of
 * the op table. Values are float, double, i32 or i1 (bool) in registers; the
 * fused loops of cg_func.c call cg_elem once per op per element, and LLVM's
 * loop vectorizer widens the result. Transcendentals come from cg_math.c as
 * plain arithmetic, never a libm call, so those loops vectorize too. */
#include <string.h>

#include "cg_internal.h"
#include "cg_math.h"

LLVMTypeRef cg_elem_type(Cg *g, DType dt) {
  return dt == DT_F32 ? g->f32 : dt == DT_F64 ? g->f64 : dt == DT_I32 ? g->i32 : g->i1;
}

LLVMTypeRef cg_mem_type(Cg *g, DType dt) {
  return dt == DT_F32 ? g->f32 : dt == DT_F64 ? g->f64 : dt == DT_I32 ? g->i32 : g->i8;
}

int64_t cg_elem_size(DType dt) { return dt == DT_F32 || dt == DT_I32 ? 4 : dt == DT_F64 ? 8 : 1; }

LLVMValueRef cg_intrinsic(Cg *g, const char *name, LLVMTypeRef t, LLVMValueRef *args, int n) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  if (!id)
    die("no intrinsic %s", name);
  LLVMTypeRef tys[1] = {t};
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(g->mod, id, tys, 1);
  LLVMTypeRef fty = LLVMIntrinsicGetType(g->ctx, id, tys, 1);
  return LLVMBuildCall2(g->b, fty, fn, args, (unsigned)n, "");
}

static LLVMValueRef fconst(LLVMTypeRef t, double v) { return LLVMConstReal(t, v); }

static LLVMValueRef call1(Cg *g, const char *intr, LLVMValueRef x) {
  return cg_intrinsic(g, intr, LLVMTypeOf(x), &x, 1);
}

static LLVMValueRef cmp(Cg *g, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b) {
  return LLVMBuildFCmp(g->b, p, a, b, "");
}

/* A conversion between any two dtypes (to bool is not one). f32(i) is exact
 * where the value fits; i32(x) rounds toward zero and saturates, NaN giving
 * 0, which is exactly llvm.fptosi.sat. */
static LLVMValueRef convert(Cg *g, const Inst *i, LLVMValueRef x) {
  DType from = i->args[0]->type.dtype, to = i->type.dtype;
  LLVMTypeRef t = cg_elem_type(g, to);
  if (from == to)
    return x;
  if (from == DT_BOOL)
    return to == DT_I32 ? LLVMBuildZExt(g->b, x, t, "") : LLVMBuildUIToFP(g->b, x, t, "");
  if (from == DT_I32)
    return LLVMBuildSIToFP(g->b, x, t, "");
  if (to == DT_I32) {
    const char *name = "llvm.fptosi.sat";
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    LLVMTypeRef tys[2] = {t, LLVMTypeOf(x)};
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(g->mod, id, tys, 2);
    LLVMTypeRef fty = LLVMIntrinsicGetType(g->ctx, id, tys, 2);
    return LLVMBuildCall2(g->b, fty, fn, &x, 1, "");
  }
  return to == DT_F64 ? LLVMBuildFPExt(g->b, x, t, "") : LLVMBuildFPTrunc(g->b, x, t, "");
}

/* i32 arithmetic wraps (no nsw): two's complement, as section 5 says. */
static LLVMValueRef int_elem(Cg *g, const Inst *i, LLVMValueRef *a) {
  LLVMBuilderRef b = g->b;
  LLVMValueRef zero = LLVMConstInt(g->i32, 0, 0);
  switch (i->op) {
  case OP_neg:
    return LLVMBuildSub(b, zero, a[0], "");
  case OP_abs: /* abs(INT_MIN) wraps to INT_MIN */
    return LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, a[0], zero, ""),
                           LLVMBuildSub(b, zero, a[0], ""), a[0], "");
  case OP_sign: {
    LLVMValueRef pos = LLVMBuildZExt(b, LLVMBuildICmp(b, LLVMIntSGT, a[0], zero, ""), g->i32, "");
    LLVMValueRef neg = LLVMBuildZExt(b, LLVMBuildICmp(b, LLVMIntSLT, a[0], zero, ""), g->i32, "");
    return LLVMBuildSub(b, pos, neg, "");
  }
  case OP_stop_gradient:
    return a[0];
  case OP_add:
    return LLVMBuildAdd(b, a[0], a[1], "");
  case OP_sub:
    return LLVMBuildSub(b, a[0], a[1], "");
  case OP_mul:
    return LLVMBuildMul(b, a[0], a[1], "");
  case OP_maximum:
    return cg_intrinsic(g, "llvm.smax", g->i32, a, 2);
  case OP_minimum:
    return cg_intrinsic(g, "llvm.smin", g->i32, a, 2);
  case OP_lt:
    return LLVMBuildICmp(b, LLVMIntSLT, a[0], a[1], "");
  case OP_le:
    return LLVMBuildICmp(b, LLVMIntSLE, a[0], a[1], "");
  case OP_gt:
    return LLVMBuildICmp(b, LLVMIntSGT, a[0], a[1], "");
  case OP_ge:
    return LLVMBuildICmp(b, LLVMIntSGE, a[0], a[1], "");
  case OP_eq:
    return LLVMBuildICmp(b, LLVMIntEQ, a[0], a[1], "");
  case OP_ne:
    return LLVMBuildICmp(b, LLVMIntNE, a[0], a[1], "");
  default:
    die("%s has no i32 form", ir_ops[i->op].name);
  }
}

/* The max m when v = x - m with m = max(x) broadcast back over the axes it
 * reduced (directly, or reshaped to x's rank with those axes 1), so that
 * no element exceeds 0; NULL otherwise. A stable softmax's exp then takes
 * the cheaper cg_math_exp_shifted, which is exp bit for bit there. (An
 * online group, cg_online.c, evaluates m as a shift that the block exceeds
 * by at most its slack, or sums the block again: still within that
 * function's range.) */
const Inst *cg_shifting_max(const Inst *v) {
  if (v->op != OP_sub || v->args[1]->op != OP_broadcast)
    return NULL;
  const Inst *x = v->args[0], *m = v->args[1]->args[0];
  const Type *kept = NULL; /* the reshape's type, if any */
  if (m->op == OP_reshape) {
    kept = &m->type;
    m = m->args[0];
  }
  if (m->op != OP_max || m->args[0] != x || !ir_is_float(x->type.dtype))
    return NULL;
  if (!kept)
    return m->type.rank == 0 ? m : NULL;
  if (kept->rank != x->type.rank)
    return NULL;
  for (int k = 0; k < x->type.rank; k++)
    if ((m->axes >> k & 1) ? !ir_dim_is(kept->dim[k], 1) : !ir_dim_eq(kept->dim[k], x->type.dim[k]))
      return NULL;
  return m;
}

LLVMValueRef cg_elem(Cg *g, const Inst *i, LLVMValueRef *a) {
  LLVMBuilderRef b = g->b;
  LLVMTypeRef t = cg_elem_type(g, i->type.dtype);
  LLVMValueRef zero = ir_is_float(i->type.dtype) ? fconst(t, 0) : NULL;
  switch (i->op) {
  case OP_const:
    if (i->type.dtype == DT_I32)
      return LLVMConstInt(g->i32, (unsigned long long)(int64_t)i->num, 1);
    return fconst(t, i->num);
  case OP_convert:
    return convert(g, i, a[0]);
  case OP_select:
    return LLVMBuildSelect(b, a[0], a[1], a[2], "");
  case OP_and:
    return LLVMBuildAnd(b, a[0], a[1], "");
  case OP_or:
    return LLVMBuildOr(b, a[0], a[1], "");
  case OP_not:
    return LLVMBuildNot(b, a[0], "");
  default:
    break;
  }
  if (i->nargs > 0 && i->args[0]->type.dtype == DT_I32)
    return int_elem(g, i, a);
  switch (i->op) {
  case OP_neg:
    return LLVMBuildFNeg(b, a[0], "");
  case OP_exp:
    if (cg_shifting_max(i->args[0]))
      return cg_math_call(g, "exp_shifted", cg_math_exp_shifted, a[0]);
    return cg_math_call(g, "exp", cg_math_exp, a[0]);
  case OP_log:
    return cg_math_call(g, "log", cg_math_log, a[0]);
  case OP_log1p:
    return cg_math_call(g, "log1p", cg_math_log1p, a[0]);
  case OP_expm1:
    return cg_math_call(g, "expm1", cg_math_expm1, a[0]);
  case OP_tanh:
    return cg_math_call(g, "tanh", cg_math_tanh, a[0]);
  case OP_sigmoid:
    return cg_math_call(g, "sigmoid", cg_math_sigmoid, a[0]);
  case OP_softplus:
    return cg_math_call(g, "softplus", cg_math_softplus, a[0]);
  case OP_log2:
    return cg_math_call(g, "log2", cg_math_log2, a[0]);
  case OP_log10:
    return cg_math_call(g, "log10", cg_math_log10, a[0]);
  case OP_tan:
    return cg_math_call(g, "tan", cg_math_tan, a[0]);
  case OP_atan:
    return cg_math_call(g, "atan", cg_math_atan, a[0]);
  case OP_asin:
    return cg_math_call(g, "asin", cg_math_asin, a[0]);
  case OP_acos:
    return cg_math_call(g, "acos", cg_math_acos, a[0]);
  case OP_sinh:
    return cg_math_call(g, "sinh", cg_math_sinh, a[0]);
  case OP_cosh:
    return cg_math_call(g, "cosh", cg_math_cosh, a[0]);
  case OP_erf:
    return cg_math_call(g, "erf", cg_math_erf, a[0]);
  case OP_lgamma:
    return cg_math_call(g, "lgamma", cg_math_lgamma, a[0]);
  case OP_polygamma: /* one emitter per order: inline */
    return cg_math_polygamma(g->mod, b, a[0], i->index);
  case OP_atan2: /* two operands: always inline */
    return cg_math_atan2(g->mod, b, a[0], a[1]);
  case OP_sqrt:
    return call1(g, "llvm.sqrt", a[0]);
  case OP_rsqrt:
    return LLVMBuildFDiv(b, fconst(t, 1), call1(g, "llvm.sqrt", a[0]), "");
  case OP_square:
    return LLVMBuildFMul(b, a[0], a[0], "");
  case OP_sin:
    return call1(g, "llvm.sin", a[0]);
  case OP_cos:
    return call1(g, "llvm.cos", a[0]);
  case OP_relu: /* NaN stays NaN */
    return LLVMBuildSelect(b, cmp(g, LLVMRealOLT, a[0], zero), zero, a[0], "");
  case OP_abs:
    return call1(g, "llvm.fabs", a[0]);
  case OP_sign: { /* -1, +1, and x itself for +-0 and NaN */
    LLVMValueRef neg = LLVMBuildSelect(b, cmp(g, LLVMRealOLT, a[0], zero), fconst(t, -1), a[0], "");
    return LLVMBuildSelect(b, cmp(g, LLVMRealOGT, a[0], zero), fconst(t, 1), neg, "");
  }
  case OP_floor:
    return call1(g, "llvm.floor", a[0]);
  case OP_ceil:
    return call1(g, "llvm.ceil", a[0]);
  case OP_round: /* half to even, as NumPy and JAX round */
    return call1(g, "llvm.roundeven", a[0]);
  case OP_stop_gradient:
    return a[0];
  case OP_add:
    return LLVMBuildFAdd(b, a[0], a[1], "");
  case OP_sub:
    return LLVMBuildFSub(b, a[0], a[1], "");
  case OP_mul:
    return LLVMBuildFMul(b, a[0], a[1], "");
  case OP_div:
    return LLVMBuildFDiv(b, a[0], a[1], "");
  case OP_pow:
    return cg_intrinsic(g, "llvm.pow", t, a, 2);
  case OP_maximum:
    return cg_intrinsic(g, "llvm.maximum", t, a, 2);
  case OP_minimum:
    return cg_intrinsic(g, "llvm.minimum", t, a, 2);
  case OP_mulz:
    return LLVMBuildSelect(b, cmp(g, LLVMRealOEQ, a[0], zero), zero,
                           LLVMBuildFMul(b, a[0], a[1], ""), "");
  case OP_mul0:
    return LLVMBuildSelect(b, LLVMBuildOr(b, cmp(g, LLVMRealOEQ, a[0], zero),
                                          cmp(g, LLVMRealOEQ, a[1], zero), ""),
                           zero, LLVMBuildFMul(b, a[0], a[1], ""), "");
  case OP_lt:
    return cmp(g, LLVMRealOLT, a[0], a[1]);
  case OP_le:
    return cmp(g, LLVMRealOLE, a[0], a[1]);
  case OP_gt:
    return cmp(g, LLVMRealOGT, a[0], a[1]);
  case OP_ge:
    return cmp(g, LLVMRealOGE, a[0], a[1]);
  case OP_eq:
    return cmp(g, LLVMRealOEQ, a[0], a[1]);
  case OP_ne:
    return cmp(g, LLVMRealUNE, a[0], a[1]);
  default:
    die("%s is not elementwise", ir_ops[i->op].name);
  }
}
