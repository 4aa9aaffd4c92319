/* Accumulators of the reductions that keep a running value in a register
 * (a whole-operand or trailing-axes reduction, a loop group's, an online
 * group's block max): sums and integer max/min combine as usual, a float
 * max or min through integer keys.
 *
 * `llvm.maximum` (NaN wins, -0 < +0) has no x86 instruction: each step is
 * a sign test, two blends, vmaxps and a NaN fix-up in one dependent chain,
 * and the vector loop's result is reduced by a tree of such steps. On a
 * 10-element row (bench W5) that chain was 15% of the whole gradient.
 * Instead, each element's bits become a signed integer key ordered as the
 * floats are (non-negative: the bits; negative: the bits with the low 31
 * flipped, so -0 < +0 and -inf is the least), and the loop keeps the
 * largest and the smallest key (`llvm.smax`/`llvm.smin`: one instruction
 * each, vectorized and reduced like any integer max). A NaN has a key
 * above +inf's (sign clear) or below -inf's (sign set), so the result is
 * NaN exactly when one of the two is outside [key(-inf), key(+inf)];
 * otherwise the max (min) is the float of the largest (smallest) key.
 * Both are exact in any order, like `llvm.maximum`, so the vectorizer's
 * reassociation changes no bit; the NaN returned is the default quiet NaN. */
#include "cg_internal.h"

static bool keyed(Op op, LLVMTypeRef t) {
  return (op == OP_max || op == OP_min) && LLVMGetTypeKind(t) != LLVMIntegerTypeKind;
}

static LLVMTypeRef key_type(Cg *g, LLVMTypeRef t) {
  return LLVMGetTypeKind(t) == LLVMDoubleTypeKind ? g->i64 : g->i32;
}

static unsigned key_bits(LLVMTypeRef t) { return LLVMGetTypeKind(t) == LLVMDoubleTypeKind ? 64 : 32; }

/* The key of x (float bits b): b ^ ((b >>s (w-1)) & low w-1 bits). The
 * same map turns a key back into the bits. Written with `and` rather than
 * a second shift, LLVM turns it into a select on the sign, which AVX-512
 * does in two instructions (vpmovd2m, a masked vpxord) instead of three. */
static LLVMValueRef flip(Cg *g, LLVMTypeRef it, unsigned w, LLVMValueRef b) {
  LLVMValueRef sign = LLVMBuildAShr(g->b, b, LLVMConstInt(it, w - 1, 0), "");
  LLVMValueRef low = LLVMConstInt(it, (~0ULL) >> (65 - w), 0);
  return LLVMBuildXor(g->b, b, LLVMBuildAnd(g->b, sign, low, ""), "");
}

static LLVMValueRef key_of(Cg *g, LLVMTypeRef it, unsigned w, LLVMValueRef x) {
  return flip(g, it, w, LLVMBuildBitCast(g->b, x, it, ""));
}

static LLVMValueRef inf_key(Cg *g, CgAcc *a, double sign) {
  LLVMValueRef inf = LLVMConstReal(a->t, sign * __builtin_inf());
  return flip(g, a->it, key_bits(a->t), LLVMConstBitCast(inf, a->it));
}

void cg_acc_init(Body *B, CgAcc *a, Op op, LLVMTypeRef t) {
  Cg *g = B->g;
  a->op = op;
  a->t = t;
  if (!keyed(op, t)) {
    a->it = NULL;
    a->lo = NULL;
    a->hi = cg_entry_alloca(B, t);
    LLVMBuildStore(g->b, cg_reduce_init(op, t), a->hi);
    return;
  }
  a->it = key_type(g, t);
  a->hi = cg_entry_alloca(B, a->it);
  a->lo = cg_entry_alloca(B, a->it);
  LLVMBuildStore(g->b, inf_key(g, a, -1), a->hi);
  LLVMBuildStore(g->b, inf_key(g, a, 1), a->lo);
}

void cg_acc_add(Cg *g, CgAcc *a, LLVMValueRef x) {
  if (!a->it) {
    LLVMValueRef cur = LLVMBuildLoad2(g->b, a->t, a->hi, "");
    LLVMBuildStore(g->b, cg_combine(g, a->op, cur, x), a->hi);
    return;
  }
  LLVMValueRef k = key_of(g, a->it, key_bits(a->t), x);
  LLVMValueRef hi[2] = {LLVMBuildLoad2(g->b, a->it, a->hi, ""), k};
  LLVMBuildStore(g->b, cg_intrinsic(g, "llvm.smax", a->it, hi, 2), a->hi);
  LLVMValueRef lo[2] = {LLVMBuildLoad2(g->b, a->it, a->lo, ""), k};
  LLVMBuildStore(g->b, cg_intrinsic(g, "llvm.smin", a->it, lo, 2), a->lo);
}

LLVMValueRef cg_acc_value(Cg *g, CgAcc *a) {
  if (!a->it)
    return LLVMBuildLoad2(g->b, a->t, a->hi, "");
  LLVMValueRef hi = LLVMBuildLoad2(g->b, a->it, a->hi, "");
  LLVMValueRef lo = LLVMBuildLoad2(g->b, a->it, a->lo, "");
  LLVMValueRef above = LLVMBuildICmp(g->b, LLVMIntSGT, hi, inf_key(g, a, 1), "");
  LLVMValueRef below = LLVMBuildICmp(g->b, LLVMIntSLT, lo, inf_key(g, a, -1), "");
  LLVMValueRef nan = LLVMBuildOr(g->b, above, below, "");
  LLVMValueRef k = a->op == OP_max ? hi : lo;
  LLVMValueRef v = LLVMBuildBitCast(g->b, flip(g, a->it, key_bits(a->t), k), a->t, "");
  return LLVMBuildSelect(g->b, nan, LLVMConstReal(a->t, __builtin_nan("")), v, "minmax");
}
