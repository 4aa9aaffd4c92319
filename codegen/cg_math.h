/* cg_math.h -- elementwise transcendental functions emitted as inline LLVM IR.
 *
 * Each emitter inserts, at the builder's position, IR computing the function
 * of x, where x's type is float, double, or a fixed vector of either. The IR
 * contains no calls to libm, only arithmetic, bit operations, compares,
 * selects and the llvm.fabs / llvm.copysign / llvm.fmuladd / llvm.smax
 * intrinsics, so a loop around it vectorizes. The code does not depend on
 * fast-math flags and does not emit them. llvm.fmuladd becomes an FMA
 * where the target has one, so the last bit of a result may differ
 * between CPUs (never between the scalar and the vectorized loop).
 *
 * Accuracy (round-to-nearest, denormals supported, not flushed): see the
 * measured errors in cg_math.c; bounds: float <= 2 ulp for exp, log, tanh,
 * sigmoid and <= 3 ulp for expm1, log1p, softplus; double <= 4 ulp.
 */
#ifndef SGC_CG_MATH_H
#define SGC_CG_MATH_H

#include <llvm-c/Core.h>

LLVMValueRef cg_math_exp(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x);
/* exp(x), bit for bit, for x <= 43 (f32) / 664 (f64), clamped above: for
 * arguments shifted by their max (cheaper than cg_math_exp) */
LLVMValueRef cg_math_exp_shifted(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef cg_math_expm1(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef cg_math_log(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef cg_math_log1p(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef cg_math_tanh(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x);
/* 1/(1+exp(-x)) */
LLVMValueRef cg_math_sigmoid(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x);
/* log(1+exp(x)) */
LLVMValueRef cg_math_softplus(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x);

/* v3 (cg_math.c, cg_math_trig.c, cg_math_gamma.c) */
LLVMValueRef cg_math_log2(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef cg_math_log10(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x);
/* tan: NaN for |x| beyond these (cg_math_trig.c says why) */
#define TAN_MAX_F64 0x1p30
#define TAN_MAX_F32 0x1p17
LLVMValueRef cg_math_tan(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef cg_math_atan(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef cg_math_asin(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef cg_math_acos(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef cg_math_sinh(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef cg_math_cosh(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef cg_math_erf(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x);
LLVMValueRef cg_math_lgamma(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x);
/* psi^(n)(x): digamma for n = 0 */
LLVMValueRef cg_math_polygamma(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x, int n);
/* atan2(y, x), C's (signed zeros and infinities as C99 F.9.1.4) */
LLVMValueRef cg_math_atan2(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef y, LLVMValueRef x);

#endif
