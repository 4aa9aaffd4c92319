/* cg_math.c -- exp, expm1, log, log1p, tanh, sigmoid, softplus as inline IR.
 *
 * The fused elementwise loops must stay vectorizable, and a libm call per
 * element prevents that, so these emitters expand each function into plain
 * IEEE arithmetic (fadd/fmul/fdiv), integer bit manipulation of the exponent
 * field, compares and selects. Every operation is emitted on the type of x,
 * so the same code serves float, double and <N x float|double>; constants are
 * splatted for vectors. No fast-math flags are used, and no fma: LLVM will
 * not contract the mul/add pairs, so results are bit-identical on every x86
 * CPU and between the scalar and the vectorized loop.
 *
 * Method, shared by all functions:
 *  - exp/expm1: Cody-Waite reduction x = k*ln2 + r, |r| <= ln2/2, with ln2
 *    split into hi (few significant bits, so k*hi is exact) and lo;
 *    expm1(r) = r + r^2*P(r) with a near-minimax P; the result is scaled by
 *    2^k built directly in the exponent bits. k is obtained by the "magic
 *    number" rounding (x*log2e + 1.5*2^p) - 1.5*2^p, which needs no
 *    llvm.floor/fptosi (floor is a libm call on a generic x86-64, and fptosi
 *    of NaN is poison); the integer k is the low bits of the same sum.
 *  - log/log1p: x = 2^e * m with m in [sqrt(1/2), sqrt(2)), f = m-1 (exact),
 *    s = f/(2+f), log(1+f) = f - hfsq + s*(hfsq + R(s^2)) with hfsq = f^2/2
 *    (the fdlibm arrangement: the big terms f and hfsq are exact or nearly so
 *    and R only contributes a tiny correction).
 *  - tanh, sigmoid, softplus are built from the cores above.
 *  - Where a result would otherwise pick up two roundings at its own scale
 *    (expm1 near +-ln2/2, 1+t in sigmoid, 1-t in tanh), the leading sum is
 *    formed exactly with Fast2Sum and the exp/expm1 cores hand back their
 *    rounding error as a low part, so those functions end with one final
 *    rounding plus small terms.
 *
 * Polynomial coefficients: Chebyshev fits (mpmath.chebyfit, 60 digits, which
 * are within a small factor of minimax) of the smooth functions named at each
 * table, rounded to the target precision; the quoted fit errors are measured
 * after rounding. For float, the constants are float values.
 *
 * Measured max error, in ulps of the exact value (a correctly rounded
 * result scores <= 0.5), by test/codegen/math_accuracy.c: float over all
 * 2^32 inputs (--exhaustive; sigmoid/softplus: every 1021st bit pattern
 * plus dense sweeps), double over ~2.6M random-bit, log-uniform and dense
 * inputs; references from libm in double / long double:
 *              float   double
 *   exp        0.78    0.74
 *   expm1      1.06    1.10
 *   log        0.84    0.81
 *   log1p      0.86    0.81
 *   tanh       0.85    0.76
 *   sigmoid    1.09    1.10
 *   softplus   1.16    1.12
 * The test enforces <= 2 ulp (float) and <= 4 ulp (double).
 *
 * Special values: NaN in gives NaN out; +-inf and overflow give the IEEE
 * limits (exp(+big) = +inf, exp(-big) = +0, log(0) = -inf, log(x<0) = NaN,
 * tanh(+-inf) = +-1, sigmoid(-inf) = 0, softplus(+inf) = +inf). Denormal
 * inputs and results are handled exactly as IEEE gradual underflow (exp of
 * very negative x gives the correctly scaled denormal; log of a denormal is
 * computed after scaling by 2^25 / 2^54). Nothing is flushed to zero unless
 * the CPU runs with FTZ/DAZ.
 */
#include "cg_math.h"

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The type of the value being computed and its same-shaped integer type. */
typedef struct {
    LLVMModuleRef m;
    LLVMBuilderRef b;
    LLVMContextRef cx;
    LLVMTypeRef ft, it;   /* float/double (vector) and i32/i64 (vector) */
    LLVMTypeRef fe, ie;   /* element types */
    unsigned lanes;       /* 0 for a scalar */
    int dbl;              /* element is double */
} Ctx;

static Ctx ctx_for(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c;
    c.m = m;
    c.b = b;
    c.ft = LLVMTypeOf(x);
    c.cx = LLVMGetTypeContext(c.ft);
    c.lanes = 0;
    c.fe = c.ft;
    if (LLVMGetTypeKind(c.ft) == LLVMVectorTypeKind) {
        c.lanes = LLVMGetVectorSize(c.ft);
        c.fe = LLVMGetElementType(c.ft);
    }
    assert(LLVMGetTypeKind(c.fe) == LLVMFloatTypeKind ||
           LLVMGetTypeKind(c.fe) == LLVMDoubleTypeKind);
    c.dbl = LLVMGetTypeKind(c.fe) == LLVMDoubleTypeKind;
    c.ie = c.dbl ? LLVMInt64TypeInContext(c.cx) : LLVMInt32TypeInContext(c.cx);
    c.it = c.lanes ? LLVMVectorType(c.ie, c.lanes) : c.ie;
    return c;
}

/* ---- constants and instruction shorthands ---- */

static LLVMValueRef splat(const Ctx *c, LLVMValueRef s)
{
    if (!c->lanes)
        return s;
    LLVMValueRef *v = malloc(c->lanes * sizeof *v);
    if (!v)
        abort();
    for (unsigned i = 0; i < c->lanes; i++)
        v[i] = s;
    LLVMValueRef r = LLVMConstVector(v, c->lanes);
    free(v);
    return r;
}

/* A float constant; for float the value is rounded to float (the tables
 * below only hold values that are exact in the target type). */
static LLVMValueRef cf(const Ctx *c, double v)
{
    return splat(c, LLVMConstReal(c->fe, v));
}

static LLVMValueRef ci(const Ctx *c, int64_t v)
{
    return splat(c, LLVMConstInt(c->ie, (unsigned long long)v, 1));
}

/* Select a float or a double constant. */
static LLVMValueRef cfd(const Ctx *c, double f32val, double f64val)
{
    return cf(c, c->dbl ? f64val : f32val);
}

static LLVMValueRef fadd_(const Ctx *c, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildFAdd(c->b, a, b, "");
}
static LLVMValueRef fsub_(const Ctx *c, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildFSub(c->b, a, b, "");
}
static LLVMValueRef fmul_(const Ctx *c, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildFMul(c->b, a, b, "");
}
static LLVMValueRef fdiv_(const Ctx *c, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildFDiv(c->b, a, b, "");
}
static LLVMValueRef fcmp(const Ctx *c, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildFCmp(c->b, p, a, b, "");
}
static LLVMValueRef sel(const Ctx *c, LLVMValueRef cond, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildSelect(c->b, cond, a, b, "");
}
static LLVMValueRef to_int(const Ctx *c, LLVMValueRef v)
{
    return LLVMBuildBitCast(c->b, v, c->it, "");
}
static LLVMValueRef to_fp(const Ctx *c, LLVMValueRef v)
{
    return LLVMBuildBitCast(c->b, v, c->ft, "");
}

static LLVMValueRef call_intrinsic(const Ctx *c, const char *name, LLVMValueRef a, LLVMValueRef b2)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    assert(id != 0);
    LLVMTypeRef ty = c->ft;
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->m, id, &ty, 1);
    LLVMTypeRef fty = LLVMIntrinsicGetType(c->cx, id, &ty, 1);
    LLVMValueRef args[2] = {a, b2};
    return LLVMBuildCall2(c->b, fty, fn, args, b2 ? 2 : 1, "");
}
static LLVMValueRef fabs_(const Ctx *c, LLVMValueRef a)
{
    return call_intrinsic(c, "llvm.fabs", a, NULL);
}
static LLVMValueRef copysign_(const Ctx *c, LLVMValueRef mag, LLVMValueRef sgn)
{
    return call_intrinsic(c, "llvm.copysign", mag, sgn);
}

/* Horner evaluation of coef[0] + coef[1] t + ... + coef[n-1] t^(n-1). */
static LLVMValueRef horner(const Ctx *c, LLVMValueRef t, const double *coef, int n)
{
    LLVMValueRef acc = cf(c, coef[n - 1]);
    for (int i = n - 2; i >= 0; i--)
        acc = fadd_(c, fmul_(c, acc, t), cf(c, coef[i]));
    return acc;
}

/* Clamp to [lo, hi] with selects: unlike minnum/maxnum a NaN passes through
 * unchanged (both compares are false for NaN). */
static LLVMValueRef clamp(const Ctx *c, LLVMValueRef x, double lo, double hi)
{
    x = sel(c, fcmp(c, LLVMRealOGT, x, cf(c, hi)), cf(c, hi), x);
    return sel(c, fcmp(c, LLVMRealOLT, x, cf(c, lo)), cf(c, lo), x);
}

/* ---- parameters of the two formats ---- */

static int mant_bits(const Ctx *c) { return c->dbl ? 52 : 23; }
static int exp_bias(const Ctx *c) { return c->dbl ? 1023 : 127; }

/* 1.5 * 2^p: adding it to |v| < 2^(p-1) rounds v to an integer (in the
 * default rounding mode) and leaves that integer in the low mantissa bits. */
static double magic(const Ctx *c) { return c->dbl ? 6755399441055744.0 : 12582912.0; }
static int64_t magic_bits(const Ctx *c)
{
    return c->dbl ? INT64_C(0x4338000000000000) : INT64_C(0x4B400000);
}

/* 2^k for an integer vector k with -bias < k <= bias: exponent bits. */
static LLVMValueRef pow2i(const Ctx *c, LLVMValueRef k)
{
    LLVMValueRef e = LLVMBuildAdd(c->b, k, ci(c, exp_bias(c)), "");
    return to_fp(c, LLVMBuildShl(c->b, e, ci(c, mant_bits(c)), ""));
}

/* Exact integer -> float for |k| < 2^(p-1), without sitofp (i64 -> double
 * has no AVX2 instruction): the inverse of the magic-number rounding. */
static LLVMValueRef int_to_fp(const Ctx *c, LLVMValueRef k)
{
    LLVMValueRef t = to_fp(c, LLVMBuildAdd(c->b, k, ci(c, magic_bits(c)), ""));
    return fsub_(c, t, cf(c, magic(c)));
}

/* ---- exp / expm1 core ----
 *
 * Reduction: k = round(x/ln2), r = (x - k*ln2hi) - k*ln2lo.
 *   float:  ln2hi = 0.693359375 (9 significant bits; k*ln2hi is exact for
 *           |k| < 2^15), ln2lo = ln2 - ln2hi rounded to float (cephes).
 *   double: ln2hi = 0x1.62e42fee00000p-1 (low 21 bits zero; exact for
 *           |k| < 2^21), ln2lo = ln2 - ln2hi rounded (fdlibm).
 * x - k*ln2hi is exact (Sterbenz), so r carries only the rounding of the
 * final subtraction and the ~2^-p relative error of k*ln2lo: well below
 * 0.5 ulp of the final result. |r| <= ln2/2 * (1 + 2^-p).
 *
 * expm1(r) = r + r^2 * P(r), P ~ (e^r - 1 - r)/r^2 on |r| <= 0.34695:
 *   float:  degree 5, fit error 4.5e-9  (contributes <= r^2*4.5e-9 = 5e-10)
 *   double: degree 10, fit error 2.4e-18 (contributes <= 3e-19)
 * so the polynomial error is negligible next to the final roundings. The
 * sum r + r^2*P is accurate relative to expm1(r) even for tiny r. */
static const double exp_p_f32[] = {
    0.5, 0.166666672, 0.041666463, 0.00833331048, 0.00139337371, 0.000198910886,
};
static const double exp_p_f64[] = {
    0.5,
    0.16666666666666671,
    0.041666666666666671,
    0.0083333333333260786,
    0.0013888888888883707,
    0.00019841269875017713,
    2.4801587325688482e-05,
    2.7557255150461456e-06,
    2.7557273464765313e-07,
    2.5105320846658709e-08,
    2.0914761122323104e-09,
};

/* Reduction and polynomial. x must already be clamped so that |k| stays
 * small. Returns k and expm1(r) as the unevaluated sum *rhi + *tail, where
 * rhi = x - k*ln2hi is exact and tail = r^2*P(r) - k*ln2lo is small
 * (|tail| < 0.12): the callers add rhi to their leading term with an exact
 * two-sum, so neither the rounding of r nor that of r + r^2*P reaches the
 * result at the scale of the result. */
static void exp_reduce(const Ctx *c, LLVMValueRef x, LLVMValueRef *k, LLVMValueRef *rhi,
                       LLVMValueRef *tail)
{
    LLVMValueRef t = fadd_(c, fmul_(c, x, cf(c, 1.4426950408889634)), cf(c, magic(c)));
    LLVMValueRef kf = fsub_(c, t, cf(c, magic(c)));
    *k = LLVMBuildSub(c->b, to_int(c, t), ci(c, magic_bits(c)), "");
    LLVMValueRef hi = cfd(c, 0.693359375, 0.6931471803691238);
    LLVMValueRef lo = cfd(c, -0.00021219444170128554, 1.9082149292705877e-10);
    LLVMValueRef rh = fsub_(c, x, fmul_(c, kf, hi));          /* exact */
    LLVMValueRef rl = fsub_(c, cf(c, 0.0), fmul_(c, kf, lo)); /* -k*ln2lo */
    LLVMValueRef r = fadd_(c, rh, rl);
    LLVMValueRef p = c->dbl ? horner(c, r, exp_p_f64, 11) : horner(c, r, exp_p_f32, 6);
    *rhi = rh;
    *tail = fadd_(c, rl, fmul_(c, fmul_(c, r, r), p));
}

/* a + b as hi + lo exactly (Fast2Sum), valid when |a| >= |b| or a = 0. */
static void fast_two_sum(const Ctx *c, LLVMValueRef a, LLVMValueRef b, LLVMValueRef *hi,
                         LLVMValueRef *lo)
{
    *hi = fadd_(c, a, b);
    *lo = fadd_(c, fsub_(c, a, *hi), b);
}

/* exp(x); if lo_out is given, also the rounding error of the result, so
 * that exp(x) ~ result + *lo_out to ~2^-2p relative (until it underflows),
 * for callers that would otherwise amplify the error of exp. */
static LLVMValueRef exp_emit(const Ctx *c, LLVMValueRef x, LLVMValueRef *lo_out)
{
    /* Clamp so that exp(hi) overflows and exp(lo) underflows to +0 through
     * the final multiplications themselves (exp(89) > FLT_MAX,
     * exp(-104) < 2^-150; exp(710) > DBL_MAX, exp(-746) < 2^-1075); the
     * clamp keeps k in [-1077, 1025] so the exponent fields below are valid,
     * and passes NaN through. */
    x = c->dbl ? clamp(c, x, -746.0, 710.0) : clamp(c, x, -104.0, 89.0);
    LLVMValueRef k, rhi, tail, hi, lo;
    exp_reduce(c, x, &k, &rhi, &tail);
    /* e^r = 1 + rhi + tail; |rhi| < 0.38 < 1 so the two-sum is exact. */
    fast_two_sum(c, cf(c, 1.0), rhi, &hi, &lo);
    LLVMValueRef low = fadd_(c, lo, tail);
    LLVMValueRef p = fadd_(c, hi, low);
    /* 2^k = 2^k1 * 2^k2 with k1 = floor(k/2): each factor is a normal number,
     * so p*2^k1 is exact and the second product rounds once, giving correct
     * gradual underflow to denormals and overflow to +inf. */
    LLVMValueRef k1 = LLVMBuildAShr(c->b, k, ci(c, 1), "");
    LLVMValueRef k2 = LLVMBuildSub(c->b, k, k1, "");
    LLVMValueRef s1 = pow2i(c, k1), s2 = pow2i(c, k2);
    if (lo_out) {
        LLVMValueRef pl = fadd_(c, fsub_(c, hi, p), low); /* |hi| >= |low| */
        *lo_out = fmul_(c, fmul_(c, pl, s1), s2);
    }
    return fmul_(c, fmul_(c, p, s1), s2);
}

/* expm1(x) for x in [-40, 710] / [-30, 89] (no clamp, no tiny-x shortcut).
 * With s = 2^(k-1): expm1(x) = 2^k (1 + rhi + tail) - 1
 *                            = 2*((s - 1/2) + s*rhi + s*tail).
 * s*rhi and s*tail are exact (power of two, no underflow); s - 1/2 is exact
 * for the k where it matters (for larger |k| the -1 is below the rounding);
 * |s - 1/2| >= |s*rhi| for k != 0, and for k = 0 s - 1/2 = 0, so a
 * Fast2Sum adds the two leading terms exactly. This matters for k = +-1,
 * where (s - 1/2) and s*rhi cancel (expm1(0.35) = 2*(0.5 - 0.29)): the
 * result is rounded once, at its own scale. k-1 <= 1023 / 127 keeps s
 * finite up to the overflow threshold; the final doubling is exact or
 * overflows to +inf. */
static LLVMValueRef expm1_core(const Ctx *c, LLVMValueRef x, LLVMValueRef *lo_out)
{
    LLVMValueRef k, rhi, tail, hi, lo;
    exp_reduce(c, x, &k, &rhi, &tail);
    LLVMValueRef s = pow2i(c, LLVMBuildSub(c->b, k, ci(c, 1), ""));
    fast_two_sum(c, fsub_(c, s, cf(c, 0.5)), fmul_(c, s, rhi), &hi, &lo);
    LLVMValueRef low = fadd_(c, lo, fmul_(c, s, tail));
    LLVMValueRef y = fadd_(c, hi, low);
    if (lo_out) /* rounding error of y, as for exp_emit */
        *lo_out = fmul_(c, fadd_(c, fsub_(c, hi, y), low), cf(c, 2.0));
    return fmul_(c, y, cf(c, 2.0));
}

/* |x| below which f(x) rounds to x for expm1, log1p, tanh (f(x) = x +
 * O(x^2) with the second term < 2^-p |x|): returning x there also keeps the
 * sign of -0 and is exact for denormal x. */
static LLVMValueRef tiny(const Ctx *c, LLVMValueRef x)
{
    return fcmp(c, LLVMRealOLT, fabs_(c, x), cfd(c, 0x1p-25, 0x1p-54));
}

/* ---- log core ----
 *
 * R(z) = z * H(z), H ~ (2 atanh(s)/s - 2)/z with z = s^2, on
 * 0 <= z <= ((sqrt2-1)/(sqrt2+1))^2 = 0.029437:
 *   float:  degree 3, error 2.2e-8 after rounding to float (it enters the
 *           result multiplied by s*z <= 0.0051: 1e-10 absolute)
 *   double: degree 6, error 3.2e-16 (times 0.0051: 1.6e-18)
 * (these are close to fdlibm's Lg1..Lg4 / Lg1..Lg7, as they should be). */
static const double log_h_f32[] = {0.666666687, 0.400001228, 0.285508156, 0.233305827};
static const double log_h_f64[] = {
    0.66666666666666696,  0.39999999999899444, 0.2857142862600327,
    0.22222211130259878,  0.18182889455674947, 0.15331710618210773,
    0.14616585424888623,
};

/* log(x) (+ extra, a small correction added at the lowest-order step, for
 * log1p). Handles x = 0, x < 0, NaN, +inf; scales denormals when
 * denormals != 0. */
static LLVMValueRef log_core(const Ctx *c, LLVMValueRef x, LLVMValueRef extra, int denormals)
{
    LLVMValueRef xs = x, eadj = NULL;
    if (denormals) {
        /* Denormals (and 0, negatives: fixed by the selects at the end)
         * are scaled by 2^25 / 2^54 into the normal range. */
        LLVMValueRef sub = fcmp(c, LLVMRealOLT, x, cfd(c, 0x1p-126, 0x1p-1022));
        xs = sel(c, sub, fmul_(c, x, cfd(c, 0x1p25, 0x1p54)), x);
        eadj = sel(c, sub, ci(c, c->dbl ? -54 : -25), ci(c, 0));
    }
    /* m in [sqrt(1/2), sqrt(2)): shift the bit pattern by (1.0 - sqrt(1/2))
     * so the exponent field increments exactly when the mantissa reaches
     * sqrt(1/2), then rebuild m from the mantissa bits. */
    int64_t one = c->dbl ? INT64_C(0x3ff0000000000000) : INT64_C(0x3f800000);
    int64_t rsq = c->dbl ? INT64_C(0x3fe6a09e667f3bcd) : INT64_C(0x3f3504f3);
    int64_t mmask = c->dbl ? INT64_C(0x000fffffffffffff) : INT64_C(0x007fffff);
    LLVMValueRef ix = LLVMBuildAdd(c->b, to_int(c, xs), ci(c, one - rsq), "");
    LLVMValueRef e = LLVMBuildSub(c->b, LLVMBuildLShr(c->b, ix, ci(c, mant_bits(c)), ""),
                                  ci(c, exp_bias(c)), "");
    if (eadj)
        e = LLVMBuildAdd(c->b, e, eadj, "");
    LLVMValueRef mb = LLVMBuildAdd(c->b, LLVMBuildAnd(c->b, ix, ci(c, mmask), ""), ci(c, rsq), "");
    LLVMValueRef f = fsub_(c, to_fp(c, mb), cf(c, 1.0)); /* exact */

    LLVMValueRef s = fdiv_(c, f, fadd_(c, cf(c, 2.0), f));
    LLVMValueRef z = fmul_(c, s, s);
    LLVMValueRef R = fmul_(c, z, c->dbl ? horner(c, z, log_h_f64, 7) : horner(c, z, log_h_f32, 4));
    LLVMValueRef hfsq = fmul_(c, cf(c, 0.5), fmul_(c, f, f));
    LLVMValueRef ef = int_to_fp(c, e);
    /* e*ln2hi is exact (same splits as for exp); the low-order pieces are
     * summed first, and f - hfsq is formed last so only the final additions
     * round at the scale of the result. */
    LLVMValueRef hi = cfd(c, 0.693359375, 0.6931471803691238);
    LLVMValueRef lo = cfd(c, -0.00021219444170128554, 1.9082149292705877e-10);
    LLVMValueRef low = fmul_(c, ef, lo);
    if (extra)
        low = fadd_(c, low, extra);
    LLVMValueRef t = fadd_(c, fmul_(c, s, fadd_(c, hfsq, R)), low);
    LLVMValueRef y = fadd_(c, fmul_(c, ef, hi), fsub_(c, f, fsub_(c, hfsq, t)));

    /* Special inputs (the bit manipulation above gives garbage for them). */
    y = sel(c, fcmp(c, LLVMRealOEQ, x, cf(c, 0.0)), cf(c, -INFINITY), y);
    y = sel(c, fcmp(c, LLVMRealULT, x, cf(c, 0.0)), cf(c, NAN), y); /* x<0, NaN */
    y = sel(c, fcmp(c, LLVMRealOEQ, x, cf(c, INFINITY)), cf(c, INFINITY), y);
    return y;
}

/* log1p(x + xlo) (xlo: optional low part of the argument).
 * log1p(x) = log(u) + log(1 + c/u) with u = fl(1+x) and c = x - (u-1) the
 * rounding error of 1+x (exact: u-1 is exact for u < 2^p, and the error of a
 * sum is representable); log(1 + c/u) ~ c/u is below an ulp of log(u) unless
 * x is small, where it is added with the low-order terms. For u = 0 or inf
 * c/u is NaN but the special-value selects of log_core override it. */
static LLVMValueRef log1p_core(const Ctx *c, LLVMValueRef x, LLVMValueRef xlo)
{
    LLVMValueRef u = fadd_(c, cf(c, 1.0), x);
    LLVMValueRef err = fsub_(c, x, fsub_(c, u, cf(c, 1.0)));
    if (xlo)
        err = fadd_(c, err, xlo);
    LLVMValueRef corr = fdiv_(c, err, u);
    return log_core(c, u, corr, 0);
}

/* ---- public entry points ---- */

LLVMValueRef cg_math_exp(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    return exp_emit(&c, x, NULL);
}

LLVMValueRef cg_math_expm1(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    /* Below -30 / -40, expm1 rounds to -1 (e^x < 2^-(p+1)); above 89 / 710 it
     * overflows (the clamp keeps k-1 <= 127 / 1023). NaN passes. */
    LLVMValueRef xc = c.dbl ? clamp(&c, x, -40.0, 710.0) : clamp(&c, x, -30.0, 89.0);
    return sel(&c, tiny(&c, x), x, expm1_core(&c, xc, NULL));
}

LLVMValueRef cg_math_log(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    return log_core(&c, x, NULL, 1);
}

LLVMValueRef cg_math_log1p(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    return sel(&c, tiny(&c, x), x, log1p_core(&c, x, NULL));
}

/* tanh: odd polynomial for |x| < 0.55 (relative accuracy near 0 without the
 * cancellation of the exp-based form), 1 - 2/(expm1(2|x|) + 2) above.
 * Q ~ (tanh(w^.5)/w^.5 - 1)/w on 0 <= w = x^2 <= 0.3025,
 * tanh(x) = x + x*w*Q(w):
 *   float:  degree 4, error 2.0e-8 (times w <= 0.3: 0.1 ulp)
 *   double: degree 10, error 1.9e-17 (times 0.3: 0.05 ulp)
 * The exp form: e = expm1(2|x|) >= 2 is used as hi + lo, e + 2 as an exact
 * two-sum, 2/(e+2) ~ t - t*(t*Dlo/2) with t = 2/Dhi, and 1 - t again as a
 * two-sum, so the only roundings at the scale of the result are the division
 * (t <= 0.5, half weight) and the final addition: 1.5 ulp without these
 * corrections, 0.8 ulp with them (measured). |x| is clamped to
 * 10 / 20 where tanh rounds to 1 (2e^-2|x| < 2^-(p+1)), so e stays finite. */
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
    LLVMValueRef q = c.dbl ? horner(&c, w, tanh_q_f64, 11) : horner(&c, w, tanh_q_f32, 5);
    LLVMValueRef small = fadd_(&c, x, fmul_(&c, fmul_(&c, x, w), q));

    LLVMValueRef axc = c.dbl ? clamp(&c, ax, 0.0, 20.0) : clamp(&c, ax, 0.0, 10.0);
    LLVMValueRef elo, dhi, dlo, h, l;
    LLVMValueRef e = expm1_core(&c, fmul_(&c, axc, cf(&c, 2.0)), &elo);
    fast_two_sum(&c, e, cf(&c, 2.0), &dhi, &dlo);
    dlo = fadd_(&c, dlo, elo);
    LLVMValueRef t = fdiv_(&c, cf(&c, 2.0), dhi);
    LLVMValueRef corr = fmul_(&c, t, fmul_(&c, t, fmul_(&c, dlo, cf(&c, 0.5))));
    fast_two_sum(&c, cf(&c, 1.0), fsub_(&c, cf(&c, 0.0), t), &h, &l);
    LLVMValueRef big = fadd_(&c, h, fadd_(&c, l, corr));
    big = copysign_(&c, big, x); /* NaN stays NaN */
    LLVMValueRef y = sel(&c, fcmp(&c, LLVMRealOLT, ax, cf(&c, 0.55)), small, big);
    return sel(&c, tiny(&c, x), x, y);
}

/* sigmoid: with t = exp(-|x|) <= 1 nothing overflows; x >= 0 gives
 * 1/(1+t), x < 0 gives t/(1+t), which keeps full relative accuracy as the
 * result underflows (sigmoid(-100) = 3.7e-44 is returned as the float
 * denormal 3.78e-44, correctly rounded; it is 0 only below -103.3 / -745.1).
 * exp returns t as hi + lo, and the rounding error d of 1+t is exact by
 * Fast2Sum (t <= 1), so with q = num/s, s = fl(1+t), e = d + tlo:
 * (num + nlo)/(s + e) ~ q + (nlo - q*e)/s, and 1/s is q itself for x >= 0
 * and 1-q for x < 0. Only the division then rounds at the result's scale
 * (plus the residual error of exp): 2.4 ulp without the corrections, 1.1
 * with them (measured). */
LLVMValueRef cg_math_sigmoid(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    LLVMValueRef tlo, s, d;
    LLVMValueRef t = exp_emit(&c, fsub_(&c, cf(&c, -0.0), fabs_(&c, x)), &tlo);
    fast_two_sum(&c, cf(&c, 1.0), t, &s, &d);
    LLVMValueRef e = fadd_(&c, d, tlo);
    LLVMValueRef neg = fcmp(&c, LLVMRealOLT, x, cf(&c, 0.0));
    LLVMValueRef q = fdiv_(&c, sel(&c, neg, t, cf(&c, 1.0)), s);
    LLVMValueRef inv = sel(&c, neg, fsub_(&c, cf(&c, 1.0), q), q);
    LLVMValueRef nlo = sel(&c, neg, tlo, cf(&c, 0.0));
    return fadd_(&c, q, fmul_(&c, fsub_(&c, nlo, fmul_(&c, q, e)), inv));
}

/* softplus(x) = max(x, 0) + log1p(exp(-|x|)): the log1p argument is in
 * [0, 1], so nothing overflows; for large x the correction is below an ulp
 * of x (softplus(1000) = 1000), for very negative x the result is
 * log1p(t) ~ t, accurate relative to e^x until it underflows. NaN
 * propagates through t. */
LLVMValueRef cg_math_softplus(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    LLVMValueRef tlo;
    LLVMValueRef t = exp_emit(&c, fsub_(&c, cf(&c, -0.0), fabs_(&c, x)), &tlo);
    LLVMValueRef l = sel(&c, tiny(&c, t), t, log1p_core(&c, t, tlo));
    LLVMValueRef pos = sel(&c, fcmp(&c, LLVMRealOGT, x, cf(&c, 0.0)), x, cf(&c, 0.0));
    return fadd_(&c, pos, l);
}
