/* cg_math.c -- exp, exp_shifted, expm1, log, log1p, tanh, sigmoid, softplus
 * as inline IR.
 *
 * The fused elementwise loops must stay vectorizable, and a libm call per
 * element prevents that, so these emitters expand each function into plain
 * IEEE arithmetic (fadd/fmul/fdiv and llvm.fmuladd), integer bit
 * manipulation of the exponent field, compares and selects. Every
 * operation is emitted on the type of x, so the same code serves float,
 * double and <N x float|double>; constants are splatted for vectors. No
 * fast-math flags are used and nothing relies on them.
 *
 * FMA: polynomials and the reductions use llvm.fmuladd, which LLVM turns
 * into an FMA where the target has one (x86-64-v3 and later, AArch64) and
 * into a rounded multiply plus add elsewhere. Results may therefore differ
 * in the last bit between CPUs (and between a build for a generic x86-64
 * and one for the host); on one target the scalar and the vectorized loop
 * still agree bit for bit, since both lower fmuladd the same way. The
 * error bounds below are measured with FMA; nothing depends on an exact
 * fused result except the sigmoid correction (the residual 1 - z d), which
 * without FMA only gets less effective. Without FMA (gen_math -cpu
 * x86-64, strided float sweep) the maxima are: exp 1.19, expm1 1.38, log
 * 1.06, log1p 1.47, tanh 1.34, sigmoid 1.75, softplus 2.28 (float), all
 * <= 1.77 for double: within the same bounds. Horner's rule is used throughout: the loops are throughput-bound
 * (many independent elements in flight), so Estrin's extra products cost
 * more than its shorter dependency chain saves (measured).
 *
 * Method:
 *  - exp: Cody-Waite reduction x = k*ln2 + r, |r| <= ln2/2, with ln2 split
 *    into hi (few significant bits, so k*hi is exact) and lo; e^r = 1 +
 *    r(1 + r P(r)); the result is scaled by 2^k built directly in the
 *    exponent bits (as two factors, for gradual underflow). k is obtained
 *    by the "magic number" rounding (x*log2e + 1.5*2^p) - 1.5*2^p, which
 *    needs no llvm.floor/fptosi (floor is a libm call on a generic x86-64,
 *    and fptosi of NaN is poison); the integer k is the low bits of the same
 *    sum. exp_shifted, for arguments shifted by their max (x - max(x) <= 0:
 *    a stable softmax, log-sum-exp, an online group's sums), builds 2^k
 *    as one factor and a constant, exp's results bit for bit below its
 *    clamp (43 / 664) for four instructions fewer a vector.
 *  - expm1: the same reduction, with the cancellation at k = +-1 handled
 *    by an exact Fast2Sum (see expm1_core).
 *  - log/log1p: x = 2^e (1+f) with 1+f in [sqrt(1/2), sqrt(2)); float
 *    evaluates log1p(f) = f + f^2(-1/2 + f P(f)) (no division), double the
 *    fdlibm form with s = f/(2+f). log1p feeds the rounding error of 1+x
 *    back into f instead of dividing by 1+x.
 *  - tanh: odd polynomial below 0.55, 1 - 2/(e^2|x| + 1) above, one
 *    division; sigmoid: one exp and one division plus a cheap correction of
 *    the reciprocal; softplus: max(x,0) + log1p(e^-|x|), the log1p for
 *    float a polynomial on [0, 1] (no exponent split). tanh, sigmoid and
 *    softplus take the exp core's pieces (2^k, expm1(r)) rather than a
 *    rounded e^x, so that 1 + e^x is formed with a single rounding.
 *
 * Polynomial coefficients: Chebyshev fits (mpmath.chebyfit, 60 digits,
 * within a small factor of minimax) of the smooth functions named at each
 * table, rounded to the target precision; the quoted fit errors are measured
 * after rounding. For float, the constants are float values.
 *
 * Measured max error, in ulps of the exact value (a correctly rounded
 * result scores <= 0.5), by test/codegen/math_accuracy.c on an AVX-512
 * (FMA) host: float over all 2^32 inputs (--exhaustive), double over ~2.6M
 * random-bit, log-uniform and dense inputs; references from libm in
 * double / long double. The test enforces the bounds in the last columns.
 *              float   double   bound float/double
 *   exp        0.95    0.93     2 / 4
 *   expm1      1.31    1.46     3 / 4
 *   log        0.91    0.75     2 / 4
 *   log1p      1.45    1.26     3 / 4
 *   tanh       1.37    1.35     2 / 4
 *   sigmoid    1.50    1.55     2 / 4
 *   softplus   2.13    1.61     3 / 4
 *
 * Speed (ns/element, 2^20 elements, Zen 4 with 16 float / 8 double lanes;
 * math_accuracy --bench, glibc 2.36 libmvec via libmvec_bench.c there):
 *              this code      libmvec        before (no FMA, compensated)
 *              f32    f64     f32    f64     f32    f64
 *   exp        0.22   0.63    0.31   0.78    0.46   1.28
 *   expm1      0.28   0.72    0.32   0.86    0.45   1.26
 *   log        0.35   0.99    0.31   0.96    0.48   1.22
 *   log1p      0.38   1.06    0.43   0.82    0.50   1.26
 *   tanh       0.37   1.21    0.40   1.82    0.90   2.71
 *   sigmoid    0.40   1.07    0.37   0.91    0.74   1.95   (libmvec: 1/(1+exp(-x)))
 *   softplus   0.67   2.02    0.86   1.99    1.50   4.06   (libmvec: via exp, log1p)
 * softplus f32 since, with its own log1p on [0, 1]: 0.29 against 0.54 for
 * the log_core form in one alternated run (1.70 ulp then).
 *
 * Special values: NaN in gives NaN out; +-inf and overflow give the IEEE
 * limits (exp(+big) = +inf, exp(-big) = +0, log(0) = -inf, log(x<0) = NaN,
 * tanh(+-inf) = +-1, sigmoid(-inf) = 0, softplus(+inf) = +inf). Denormal
 * inputs and results are handled exactly as IEEE gradual underflow (exp of
 * very negative x gives the correctly scaled denormal; log of a denormal is
 * computed after scaling by 2^25 / 2^54); expm1, log1p and tanh of tiny x
 * keep relative accuracy (and the sign of -0). Nothing is flushed to zero
 * unless the CPU runs with FTZ/DAZ.
 */
#include "cg_math_internal.h"

/* ---- exp core ----
 *
 * Reduction: k = round(x/ln2), r = (x - k*ln2hi) - k*ln2lo. x - k*ln2hi is
 * exact (k*ln2hi is exact and Sterbenz), so r carries one rounding (at 2^-p
 * relative to r) and the ~2^-p relative error of k*ln2lo, i.e. < 2^-p |r|:
 * e^r then has relative error < 2^-p * 0.35, 0.17 ulp at most. k comes from
 * the "magic number" rounding (x*log2e + 1.5*2^p) - 1.5*2^p, which needs no
 * llvm.floor/fptosi (floor is a libm call on a generic x86-64, and fptosi of
 * NaN is poison); the integer k is the low bits of the same sum.
 *
 * e^r = 1 + r + r^2 P(r), P ~ (e^r - 1 - r)/r^2 on |r| <= ln2/2 = 0.3466:
 *   float:  degree 4, error 6.7e-8 after rounding the coefficients to
 *           float; it enters as r^2*6.7e-8 <= 8e-9 relative (0.14 ulp)
 *   double: degree 9, error 1.2e-16, entering as <= 1.4e-17 (0.13 ulp)
 * (Chebyshev fits, mpmath.chebyfit at 60 digits, within a small factor of
 * minimax; errors measured after rounding.) */
static const double exp_p_f32[] = {
    0.5, 0.16666577756404877, 0.041666556149721146, 0.008363173343241215, 0.0013926175888627768,
};
static const double exp_p_f64[] = {
    0.5000000000000001,     0.16666666666666669,    0.041666666666624164,
    0.008333333333330065,   0.0013888888917196719,  0.00019841269863040545,
    2.4801521322368692e-05, 2.7557268480310024e-06, 2.7620075879983367e-07,
    2.5100375832561234e-08,
};

static LLVMValueRef exp_poly(const Ctx *c, LLVMValueRef r)
{
    return c->dbl ? poly(c, r, exp_p_f64, 10) : poly(c, r, exp_p_f32, 5);
}

/* Reduction: returns r and sets *k (integer vector). x must be clamped so
 * that |k| stays within the exponent range used by the caller. */
static LLVMValueRef exp_reduce(const Ctx *c, LLVMValueRef x, LLVMValueRef *k)
{
    LLVMValueRef t = fma_(c, x, cf(c, 1.4426950408889634), cf(c, magic(c)));
    LLVMValueRef kf = fsub_(c, t, cf(c, magic(c)));
    *k = LLVMBuildSub(c->b, to_int(c, t), ci(c, magic_bits(c)), "");
    LLVMValueRef r = fma_(c, kf, fsub_(c, cf(c, 0.0), ln2_hi(c)), x); /* exact */
    return fma_(c, kf, fsub_(c, cf(c, 0.0), ln2_lo(c)), r);
}

/* expm1(r) = r + r^2 P(r), rounded once (|result| <= 0.42). */
static LLVMValueRef expm1_r(const Ctx *c, LLVMValueRef r)
{
    return fma_(c, fmul_(c, r, r), exp_poly(c, r), r);
}

/* 2^k as the two normal factors 2^(k>>1) and 2^(k-(k>>1)), valid for
 * |k| <= 2*bias - 2 (exp's clamp keeps k in [-1077, 1025] / [-150, 129]).
 * Multiplying by them in turn is exact up to the last product, which
 * rounds once: correct gradual underflow to denormals and overflow to
 * +inf. */
static void pow2_split(const Ctx *c, LLVMValueRef k, LLVMValueRef *s1, LLVMValueRef *s2)
{
    LLVMValueRef k1 = LLVMBuildAShr(c->b, k, ci(c, 1), "");
    *s1 = pow2i(c, k1);
    *s2 = pow2i(c, LLVMBuildSub(c->b, k, k1, ""));
}

/* x clamped so that exp(hi) overflows and exp(lo) underflows to +0 through
 * the final multiplications (exp(89) > FLT_MAX, exp(-104) < 2^-150;
 * exp(710) > DBL_MAX, exp(-746) < 2^-1075); passes NaN. */
static LLVMValueRef exp_clamp(const Ctx *c, LLVMValueRef x)
{
    return c->dbl ? clamp(c, x, -746.0, 710.0) : clamp(c, x, -104.0, 89.0);
}
static LLVMValueRef exp_clamp_lo(const Ctx *c, LLVMValueRef x)
{
    return c->dbl ? clamp_lo(c, x, -746.0) : clamp_lo(c, x, -104.0);
}

/* exp(x) = 2^k e^r with e^r = 1 + r(1 + r P(r)) by Horner (the last step,
 * an fmuladd with addend 1, rounds once; the rounding of the inner value
 * enters multiplied by |r| <= 0.35). Error: final rounding 0.5 ulp, r
 * 0.17, inner rounding 0.17, P 0.14: <= 1 ulp, measured 0.95 (see top). */
static LLVMValueRef exp_emit(const Ctx *c, LLVMValueRef x)
{
    return cgm_exp_scaled(c, x, 0);
}

/* The same times 2^e (in the exponent: k + e stays within pow2_split's
 * range, and the clamp's upper end moves up by one so that exp(x)/2
 * overflows only where it should). */
LLVMValueRef cgm_exp_scaled(const Ctx *c, LLVMValueRef x, int e)
{
    LLVMValueRef k, s1, s2;
    LLVMValueRef xc = e < 0 ? (c->dbl ? clamp(c, x, -746.0, 711.0) : clamp(c, x, -104.0, 90.0))
                            : exp_clamp(c, x);
    LLVMValueRef r = exp_reduce(c, xc, &k);
    LLVMValueRef one = cf(c, 1.0);
    LLVMValueRef p = fma_(c, r, fma_(c, r, exp_poly(c, r), one), one);
    pow2_split(c, e ? LLVMBuildAdd(c->b, k, ci(c, e), "") : k, &s1, &s2);
    return fmul_(c, fmul_(c, p, s1), s2);
}

/* exp(x) for an x shifted by a max (a softmax's x - max(x) <= 0, an online
 * group's block sum <= its slack): 2^k as the one factor 2^(k+K) times the
 * constant 2^-K, K = 64, instead of pow2_split's two computed factors (four
 * instructions fewer a vector). p 2^(k+K) is exact (k >= -150 / -1077
 * keeps it normal) and the product by 2^-K rounds once, so the result is
 * exp_emit's bit for bit wherever 2^(k+K) is finite: for x <= 43 / 664.
 * Above that, x is clamped there (a finite e^43 / e^664); callers discard
 * such values (an online block whose max exceeds its shift is summed again). */
enum { EXP_SHIFT_K = 64 };
static LLVMValueRef exp_shifted_emit(const Ctx *c, LLVMValueRef x)
{
    LLVMValueRef k;
    LLVMValueRef r = exp_reduce(c, c->dbl ? clamp(c, x, -746.0, 664.0) : clamp(c, x, -104.0, 43.0), &k);
    LLVMValueRef one = cf(c, 1.0);
    LLVMValueRef p = fma_(c, r, fma_(c, r, exp_poly(c, r), one), one);
    LLVMValueRef s = pow2i(c, LLVMBuildAdd(c->b, k, ci(c, EXP_SHIFT_K), ""));
    return fmul_(c, fmul_(c, p, s), cf(c, ldexp(1.0, -EXP_SHIFT_K)));
}

/* e^-|x| for sigmoid and softplus, as the pieces they need:
 * e^-|x| = s (1 + rq) with s = 2^k, rq = expm1(r) rounded once. Here
 * k <= 0, so 2^k is built as 2^(k+K) * 2^-K with K = 64 / 512 (both
 * factors normal for k >= -150 / -1077, and the product is exact or
 * rounds once into the denormals). Returns e^-|x| itself, rounded once
 * (s(1 + rq) as fmuladd(2^(k+K), rq, 2^(k+K)), then scaled), and sets
 * *s = 2^k (0 when it underflows) and *srq = s*rq (exact unless it
 * underflows), so that 1 + e^-|x| can be formed as (1 + s) + srq with a
 * single rounding (1 + s is exact while k >= -p, and below that
 * 1 + e^-|x| rounds to 1 anyway). */
static LLVMValueRef exp_neg_abs(const Ctx *c, LLVMValueRef x, LLVMValueRef *s, LLVMValueRef *srq)
{
    LLVMValueRef k;
    LLVMValueRef xn = exp_clamp_lo(c, fsub_(c, cf(c, -0.0), fabs_(c, x)));
    LLVMValueRef r = exp_reduce(c, xn, &k);
    LLVMValueRef rq = expm1_r(c, r);
    int K = c->dbl ? 512 : 64;
    LLVMValueRef sK = pow2i(c, LLVMBuildAdd(c->b, k, ci(c, K), ""));
    LLVMValueRef unK = cf(c, ldexp(1.0, -K));
    *s = fmul_(c, sK, unK);
    *srq = fmul_(c, *s, rq);
    return fmul_(c, fma_(c, sK, rq, sK), unK);
}

/* |x| below which f(x) rounds to x for expm1 (f(x) = x + O(x^2) with the
 * second term < 2^-p |x|): returning x there also keeps the sign of -0 and
 * is exact for denormal x. */
static LLVMValueRef tiny(const Ctx *c, LLVMValueRef x)
{
    return fcmp(c, LLVMRealOLT, fabs_(c, x), cfd(c, 0x1p-25, 0x1p-54));
}

/* a + b as hi + lo exactly (Fast2Sum), valid when |a| >= |b| or a = 0. */
static void fast_two_sum(const Ctx *c, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *hi,
                         LLVMValueRef *lo)
{
    *hi = fadd_(c, a, b);
    *lo = fadd_(c, fsub_(c, a, *hi), b);
}

/* expm1(x) for x in [-40, 710] / [-30, 89] (no clamp, no tiny-x shortcut).
 * rhi = x - k*ln2hi is exact and r = rhi + rl with rl = -k*ln2lo rounded;
 * with s = 2^(k-1): expm1(x) = 2^k (1 + r + r^2 P) - 1
 *                            = 2*((s - 1/2) + s*rhi + s*(rl + r^2 P)).
 * s*rhi and s*tail are exact (power of two, no underflow); s - 1/2 is exact
 * for the k where it matters (for larger |k| the -1 is below the rounding);
 * |s - 1/2| >= |s*rhi| for k != 0, and for k = 0 s - 1/2 = 0, so a
 * Fast2Sum adds the two leading terms exactly. This matters for k = +-1,
 * where (s - 1/2) and s*rhi cancel (expm1(0.35) = 2*(0.5 - 0.29)): the
 * result is rounded once, at its own scale. k-1 <= 1023 / 127 keeps s
 * finite up to the overflow threshold; the final doubling is exact or
 * overflows to +inf. */
static LLVMValueRef expm1_core(const Ctx *c, LLVMValueRef x)
{
    LLVMValueRef t = fma_(c, x, cf(c, 1.4426950408889634), cf(c, magic(c)));
    LLVMValueRef kf = fsub_(c, t, cf(c, magic(c)));
    LLVMValueRef k = LLVMBuildSub(c->b, to_int(c, t), ci(c, magic_bits(c)), "");
    LLVMValueRef rh = fma_(c, kf, fsub_(c, cf(c, 0.0), ln2_hi(c)), x); /* exact */
    LLVMValueRef rl = fmul_(c, kf, fsub_(c, cf(c, 0.0), ln2_lo(c)));
    LLVMValueRef r = fadd_(c, rh, rl);
    LLVMValueRef tail = fma_(c, fmul_(c, r, r), exp_poly(c, r), rl);
    LLVMValueRef hi, lo;
    LLVMValueRef s = pow2i(c, LLVMBuildSub(c->b, k, ci(c, 1), ""));
    fast_two_sum(c, fsub_(c, s, cf(c, 0.5)), fmul_(c, s, rh), &hi, &lo);
    LLVMValueRef y = fadd_(c, hi, fma_(c, s, tail, lo));
    return fmul_(c, y, cf(c, 2.0));
}

/* ---- log core ----
 *
 * x = 2^e (1+f) with 1+f in [sqrt(1/2), sqrt(2)), f = m - 1 exact.
 *   float:  log(x) = e*ln2 + (f + f^2 (-1/2 + f P(f))), P ~ (log1p(f) - f +
 *           f^2/2)/f^3 on [sqrt(1/2)-1, sqrt(2)-1], degree 8, error 3.1e-8
 *           after rounding; it enters as |f^3| * 3.1e-8 <= 2.2e-9 against
 *           |log(x)| >= 0.34 (0.1 ulp). The inner sum is one fmuladd
 *           rounding at the scale of log1p(f), the outer one more. No
 *           division: 10 fmuladds measured faster than the division form.
 *   double: the fdlibm arrangement log(x) = e*ln2hi + (f - (f^2/2 - (T +
 *           e*ln2lo))), with s = f/(2+f), z = s^2, T = s (f^2/2 + z H(z)),
 *           H ~ (2 atanh(s)/s - 2)/z on 0 <= z <= ((sqrt2-1)/(sqrt2+1))^2,
 *           degree 6, error 3.2e-16 entering multiplied by s*z <= 0.0051
 *           (fdlibm's Lg1..Lg7, refit): f and e*ln2hi are exact, f^2/2 is
 *           rounded at a quarter of the result's scale or less, T is a
 *           small correction. A polynomial in f would need degree ~20. */
static const double log_p_f32[] = {
    0.3333333134651184,   -0.2499999701976776,  0.20000715553760529,
    -0.1666780263185501,  0.14249058067798615,  -0.12425687164068222,
    0.11685419827699661,  -0.11479733884334564, 0.06971611827611923,
};
static const double log_h_f64[] = {
    0.666666666666667,   0.39999999999899505, 0.28571428625975487, 0.2222221113479508,
    0.18182889125261723, 0.15331721600556042, 0.14616449685043406,
};

enum { LOG_PLAIN, LOG_DENORMALS, LOG1P, LOG1P_01 };

/* mode LOG_PLAIN: log(x) for normal x; LOG_DENORMALS: also denormal x
 * (scaled by 2^25 / 2^54 first); LOG1P: log1p(x), LOG1P_01: log1p(x) for x
 * in [0, 1] or NaN (no special cases). Special inputs (0, <0, inf, NaN)
 * are handled by selects except for LOG1P_01. */
static LLVMValueRef log_core_base(const Ctx *c, LLVMValueRef x, int mode, int base);
static LLVMValueRef log_core(const Ctx *c, LLVMValueRef x, int mode)
{
    return log_core_base(c, x, mode, CGM_LN);
}

LLVMValueRef cgm_log(const Ctx *c, LLVMValueRef x, int base)
{
    return log_core_base(c, x, LOG_DENORMALS, base);
}

/* log2 and log10 take the same pieces: log_b(x) = e log_b(2) + L log_b(e)
 * with L = log1p(f) (no e terms). log2 adds the exact e last, so a power
 * of two gives its exponent exactly; log10 splits log10(2) into hi + lo
 * as log does ln 2. */
static LLVMValueRef log_other_base(const Ctx *c, LLVMValueRef ef, LLVMValueRef L, int base)
{
    if (base == CGM_LOG2)
        return fma_(c, L, cfd(c, 1.4426950408889634, 1.4426950408889634), ef);
    LLVMValueRef lo = fmul_(c, ef, cfd(c, -1.4320988897559699e-08, -2.8037281277851704e-18));
    return fma_(c, ef, cfd(c, 0.3010300099849701, 0.3010299956639812),
                fma_(c, L, cfd(c, 0.4342944819032518, 0.4342944819032518), lo));
}

static LLVMValueRef log_core_base(const Ctx *c, LLVMValueRef x, int mode, int base)
{
    LLVMValueRef xs = x, eadj = NULL, u = x, cerr = NULL;
    if (mode == LOG_DENORMALS) {
        /* Denormals (and 0, negatives: fixed by the selects at the end)
         * are scaled by 2^25 / 2^54 into the normal range. */
        LLVMValueRef sub = fcmp(c, LLVMRealOLT, x, cfd(c, 0x1p-126, 0x1p-1022));
        xs = sel(c, sub, fmul_(c, x, cfd(c, 0x1p25, 0x1p54)), x);
        eadj = sel(c, sub, ci(c, c->dbl ? -54 : -25), ci(c, 0));
    } else if (mode == LOG1P || mode == LOG1P_01) {
        /* u = fl(1+x) and its rounding error cerr = x - (u - 1), exact
         * (u - 1 is exact, and so is the error of a sum) while |x| < 2^p;
         * for larger x both u - 1 and cerr are x and 0. */
        u = fadd_(c, cf(c, 1.0), x);
        cerr = fsub_(c, x, fsub_(c, u, cf(c, 1.0)));
        xs = u;
    }
    /* m in [sqrt(1/2), sqrt(2)): shift the bit pattern by (1.0 - sqrt(1/2))
     * so the exponent field increments exactly when the mantissa reaches
     * sqrt(1/2), then rebuild m from the mantissa bits. */
    int64_t one = c->dbl ? INT64_C(0x3ff0000000000000) : INT64_C(0x3f800000);
    int64_t rsq = c->dbl ? INT64_C(0x3fe6a09e667f3bcd) : INT64_C(0x3f3504f3);
    int64_t mmask = c->dbl ? INT64_C(0x000fffffffffffff) : INT64_C(0x007fffff);
    LLVMValueRef ix = LLVMBuildAdd(c->b, to_int(c, xs), ci(c, one - rsq), "");
    LLVMValueRef eb = LLVMBuildLShr(c->b, ix, ci(c, mant_bits(c)), ""); /* e + bias */
    LLVMValueRef e = LLVMBuildSub(c->b, eb, ci(c, exp_bias(c)), "");
    if (eadj)
        e = LLVMBuildAdd(c->b, e, eadj, "");
    LLVMValueRef mb = LLVMBuildAdd(c->b, LLVMBuildAnd(c->b, ix, ci(c, mmask), ""), ci(c, rsq), "");
    LLVMValueRef f = fsub_(c, to_fp(c, mb), cf(c, 1.0)); /* exact */
    if (cerr) {
        /* log1p(x) = log(2^e (1+f) + cerr): f += cerr * 2^-e (rounded
         * once; exact for e = 0 where f = x). 2^-e is built from the biased
         * exponent 2*bias - eb, kept >= 0 (2^-e would be denormal for the
         * largest u, where cerr = 0 anyway). */
        LLVMValueRef nb = smax_(c, LLVMBuildSub(c->b, ci(c, 2 * exp_bias(c)), eb, ""), 0);
        LLVMValueRef scale = to_fp(c, LLVMBuildShl(c->b, nb, ci(c, mant_bits(c)), ""));
        f = fma_(c, cerr, scale, f);
    }

    LLVMValueRef ef = int_to_fp(c, e), y;
    if (c->dbl) {
        /* y = e*ln2hi + (f - (f*f/2 - T - e*ln2lo)) */
        LLVMValueRef hf = fmul_(c, cf(c, 0.5), f);
        LLVMValueRef s = fdiv_(c, f, fadd_(c, cf(c, 2.0), f));
        LLVMValueRef z = fmul_(c, s, s);
        LLVMValueRef R = fmul_(c, z, poly(c, z, log_h_f64, 7));
        LLVMValueRef hfsq = fmul_(c, hf, f);
        if (base != CGM_LN) {
            LLVMValueRef T = fmul_(c, s, fadd_(c, hfsq, R));
            y = log_other_base(c, ef, fsub_(c, f, fsub_(c, hfsq, T)), base);
        } else {
            LLVMValueRef nt = fma_(c, fsub_(c, cf(c, 0.0), s), fadd_(c, hfsq, R),
                                   fmul_(c, ef, fsub_(c, cf(c, 0.0), ln2_lo(c))));
            y = fma_(c, ef, ln2_hi(c), fsub_(c, f, fma_(c, hf, f, nt)));
        }
    } else {
        /* e*ln2 is added by one more fmuladd. With an FMA the product is
         * exact, and float(ln2) = 0.693147182464599609375 is within 2.8e-9
         * relative of ln2 (0.05 ulp), so no hi/lo split is needed; without
         * an FMA it rounds once more. */
        LLVMValueRef f2 = fmul_(c, f, f);
        LLVMValueRef pm = fma_(c, poly_even_odd(c, f, f2, log_p_f32, 9), f, cf(c, -0.5));
        LLVMValueRef L = fma_(c, f2, pm, f);
        y = base != CGM_LN ? log_other_base(c, ef, L, base)
                           : fma_(c, ef, cf(c, 0.693147182464599609375), L);
    }

    if (mode == LOG1P_01)
        return y;
    /* Special inputs (the bit manipulation above gives garbage for them). */
    y = sel(c, fcmp(c, LLVMRealOEQ, u, cf(c, 0.0)), cf(c, -INFINITY), y);
    y = sel(c, fcmp(c, LLVMRealULT, u, cf(c, 0.0)), cf(c, NAN), y); /* u<0, NaN */
    y = sel(c, fcmp(c, LLVMRealOEQ, u, cf(c, INFINITY)), cf(c, INFINITY), y);
    return y;
}

/* ---- public entry points ---- */

LLVMValueRef cg_math_exp(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    return exp_emit(&c, x);
}

LLVMValueRef cg_math_exp_shifted(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    return exp_shifted_emit(&c, x);
}

LLVMValueRef cg_math_expm1(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    /* Below -30 / -40, expm1 rounds to -1 (e^x < 2^-(p+1)); above 89 / 710 it
     * overflows (the clamp keeps k-1 <= 127 / 1023). NaN passes. */
    LLVMValueRef xc = c.dbl ? clamp(&c, x, -40.0, 710.0) : clamp(&c, x, -30.0, 89.0);
    return sel(&c, tiny(&c, x), x, expm1_core(&c, xc));
}

LLVMValueRef cg_math_log2(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    return cgm_log(&c, x, CGM_LOG2);
}

LLVMValueRef cg_math_log10(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    return cgm_log(&c, x, CGM_LOG10);
}

LLVMValueRef cg_math_log(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    return log_core(&c, x, LOG_DENORMALS);
}

/* log1p(x) has the sign of x (also for -0, which the arithmetic above
 * turns into +0, and for -1 -> -inf); copysign keeps NaN a NaN. */
LLVMValueRef cg_math_log1p(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    return copysign_(&c, log_core(&c, x, LOG1P), x);
}

/* tanh(x) = sign(x) tanh(|x|):
 *  - |x| < 0.55: |x| + |x| w Q(w), w = x^2, Q ~ (tanh(w^.5)/w^.5 - 1)/w on
 *    [0, 0.3025]: float degree 4, error 2.0e-8; double degree 10, error
 *    1.9e-17; both enter multiplied by w <= 0.3 (<= 0.1 ulp). Relative
 *    accuracy down to denormal x (|x| w underflows and |x| is returned).
 *  - above: 1 - 2/(e^2|x| + 1), |x| clamped to 10 / 20 where tanh rounds to
 *    1 (2e^-2|x| < 2^-(p+1)). With e^2|x| = s (1 + rq) (exp core, s = 2^k,
 *    k <= 29 / 58), the denominator (s + 1) + s*rq rounds once (s + 1 and
 *    s*rq are exact), then the division and 1 - t round; t <= 1 -
 *    tanh(0.55) = 0.5, so the two roundings of t cost <= 1 ulp of the
 *    result at the worst case of the bound (measured 1.37, see top). */
static const double tanh_q_f32[] = {
    -0.333333313, 0.133331135, -0.0539094284, 0.0213093888, -0.00661022775,
};
static const double tanh_q_f64[] = {
    -0.33333333333333331,   0.13333333333332714,    -0.053968253967434016,
    0.021869488493666944,   -0.0088632343978143555, 0.0035921103786890241,
    -0.0014556618301007161, 0.00058893605200740573, -0.0002346347410887237,
    8.5113136855776721e-05, -2.060276537636634e-05,
};

LLVMValueRef cg_math_tanh(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    LLVMValueRef ax = fabs_(&c, x);
    LLVMValueRef w = fmul_(&c, x, x);
    LLVMValueRef q = c.dbl ? poly(&c, w, tanh_q_f64, 11) : poly(&c, w, tanh_q_f32, 5);
    LLVMValueRef small = fma_(&c, fmul_(&c, ax, w), q, ax);

    LLVMValueRef k;
    LLVMValueRef a2 = fmul_(&c, clamp_hi(&c, ax, c.dbl ? 20.0 : 10.0), cf(&c, 2.0));
    LLVMValueRef rq = expm1_r(&c, exp_reduce(&c, a2, &k));
    LLVMValueRef s = pow2i(&c, k);
    LLVMValueRef d = fma_(&c, s, rq, fadd_(&c, s, cf(&c, 1.0)));
    LLVMValueRef big = fsub_(&c, cf(&c, 1.0), fdiv_(&c, cf(&c, 2.0), d));
    LLVMValueRef y = sel(&c, fcmp(&c, LLVMRealOLT, ax, cf(&c, 0.55)), small, big);
    return copysign_(&c, y, x); /* NaN stays NaN */
}

/* sigmoid: with T = e^-|x| <= 1 (nothing overflows), 1/(1+T) is
 * sigmoid(|x|) and T/(1+T) is sigmoid(-|x|). T = s + srq and D = 1 + T =
 * (1 + s) + srq come from exp_neg_abs; D rounds once to d with error de,
 * recovered exactly by Fast2Sum. z0 = 1/d, and z0 + zc, zc =
 * z0 (1 - z0 d - z0 de) (the residual 1 - z0 d is exact with an FMA), is
 * 1/D to ~2^-2p: sigmoid(|x|) is rounded once from it, and sigmoid(-|x|)
 * = s z + srq z with z = fl(z0 + zc) is rounded once by an fmuladd (s z is
 * exact, s being a power of two), so only the rounding of z (<= 2^-p
 * relative) and of the result remain: <= 1.5 ulp, measured 1.5 (without
 * the correction: 2.4 ulp). The result keeps full relative accuracy as it
 * underflows (sigmoid(-100) = 3.7e-44 is the float denormal 3.78e-44,
 * correctly rounded; it is 0 only below -103.3 / -745.1). */
LLVMValueRef cg_math_sigmoid(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    LLVMValueRef s, srq, d, de;
    exp_neg_abs(&c, x, &s, &srq);
    fast_two_sum(&c, fadd_(&c, cf(&c, 1.0), s), srq, &d, &de);
    LLVMValueRef z0 = fdiv_(&c, cf(&c, 1.0), d);
    LLVMValueRef res = fma_(&c, fsub_(&c, cf(&c, 0.0), z0), d, cf(&c, 1.0)); /* exact */
    LLVMValueRef zc = fmul_(&c, fma_(&c, fsub_(&c, cf(&c, 0.0), z0), de, res), z0);
    LLVMValueRef z = fadd_(&c, z0, zc);
    LLVMValueRef yneg = fma_(&c, srq, z, fmul_(&c, s, z));
    return sel(&c, fcmp(&c, LLVMRealOLT, x, cf(&c, 0.0)), yneg, z);
}

/* softplus(x) = max(x, 0) + log1p(e^-|x|): the log1p argument is in
 * [0, 1], so nothing overflows; for large x the correction is below an ulp
 * of x (softplus(1000) = 1000), for very negative x the result is
 * log1p(t) ~ t, accurate relative to e^x until it underflows. max(x, 0) is
 * written so that a NaN x passes (and NaN + anything is NaN). */
/* log1p(t) for t in [0, 1] (float): t + t^2 Q(t), Q ~ (log1p(t) - t)/t^2,
 * degree 8, error 2.9e-8 after rounding (against Q >= -1/2); the leading
 * t is exact and the correction at most 0.31 of the result. Half the
 * operations of log_core, which must first split 1 + t into exponent and
 * mantissa: the sum of softplus (bench W2) was bound by them. */
static const double log1p01_q_f32[] = {
    -0.4999999701976776,  0.3333284258842468,   -0.24986526370048523,
    0.198541060090065,    -0.15847565233707428, 0.11561845242977142,
    -0.06675772368907928, 0.025224054232239723, -0.004466211423277855,
};

LLVMValueRef cg_math_softplus(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    LLVMValueRef s, srq;
    LLVMValueRef t = exp_neg_abs(&c, x, &s, &srq);
    LLVMValueRef l = c.dbl ? log_core(&c, t, LOG1P_01)
                           : fma_(&c, fmul_(&c, t, t), poly(&c, t, log1p01_q_f32, 9), t);
    LLVMValueRef pos = sel(&c, fcmp(&c, LLVMRealOLE, x, cf(&c, 0.0)), cf(&c, 0.0), x);
    return fadd_(&c, pos, l);
}
