/* cg_math_internal.h -- what the transcendental emitters share (cg_math.c:
 * exp, log and the functions built on them; cg_math_trig.c; cg_math_gamma.c):
 * the type being computed, constants splatted to it, instruction
 * shorthands, Horner's rule, and the exp and log cores. Every emitter is
 * plain IEEE arithmetic on the type of x (scalar or vector, float or
 * double), with llvm.fmuladd, bit operations, compares and selects: no
 * libm call, so the loops around it vectorize (cg_math.c says more). */
#ifndef SGC_CG_MATH_INTERNAL_H
#define SGC_CG_MATH_INTERNAL_H

#include <assert.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cg_math.h"

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

static inline Ctx ctx_for(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
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

static inline LLVMValueRef splat(const Ctx *c, LLVMValueRef s)
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
static inline LLVMValueRef cf(const Ctx *c, double v)
{
    return splat(c, LLVMConstReal(c->fe, v));
}

static inline LLVMValueRef ci(const Ctx *c, int64_t v)
{
    return splat(c, LLVMConstInt(c->ie, (unsigned long long)v, 1));
}

/* Select a float or a double constant. */
static inline LLVMValueRef cfd(const Ctx *c, double f32val, double f64val)
{
    return cf(c, c->dbl ? f64val : f32val);
}

static inline LLVMValueRef fadd_(const Ctx *c, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildFAdd(c->b, a, b, "");
}
static inline LLVMValueRef fsub_(const Ctx *c, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildFSub(c->b, a, b, "");
}
static inline LLVMValueRef fmul_(const Ctx *c, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildFMul(c->b, a, b, "");
}
static inline LLVMValueRef fdiv_(const Ctx *c, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildFDiv(c->b, a, b, "");
}
static inline LLVMValueRef fcmp(const Ctx *c, LLVMRealPredicate p, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildFCmp(c->b, p, a, b, "");
}
static inline LLVMValueRef sel(const Ctx *c, LLVMValueRef cond, LLVMValueRef a, LLVMValueRef b)
{
    return LLVMBuildSelect(c->b, cond, a, b, "");
}
static inline LLVMValueRef to_int(const Ctx *c, LLVMValueRef v)
{
    return LLVMBuildBitCast(c->b, v, c->it, "");
}
static inline LLVMValueRef to_fp(const Ctx *c, LLVMValueRef v)
{
    return LLVMBuildBitCast(c->b, v, c->ft, "");
}

/* Call the overloaded intrinsic NAME on type ty with nargs arguments. */
static inline LLVMValueRef call_intrinsic_t(const Ctx *c, const char *name, LLVMTypeRef ty,
                                     LLVMValueRef *args, unsigned nargs)
{
    unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
    assert(id != 0);
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(c->m, id, &ty, 1);
    LLVMTypeRef fty = LLVMIntrinsicGetType(c->cx, id, &ty, 1);
    return LLVMBuildCall2(c->b, fty, fn, args, nargs, "");
}
static inline LLVMValueRef call_intrinsic(const Ctx *c, const char *name, LLVMValueRef a, LLVMValueRef b2)
{
    LLVMValueRef args[2] = {a, b2};
    return call_intrinsic_t(c, name, c->ft, args, b2 ? 2 : 1);
}
static inline LLVMValueRef fabs_(const Ctx *c, LLVMValueRef a)
{
    return call_intrinsic(c, "llvm.fabs", a, NULL);
}
static inline LLVMValueRef copysign_(const Ctx *c, LLVMValueRef mag, LLVMValueRef sgn)
{
    return call_intrinsic(c, "llvm.copysign", mag, sgn);
}
/* a*b + d, fused where the target has an FMA (llvm.fmuladd). */
static inline LLVMValueRef fma_(const Ctx *c, LLVMValueRef a, LLVMValueRef b, LLVMValueRef d)
{
    LLVMValueRef args[3] = {a, b, d};
    return call_intrinsic_t(c, "llvm.fmuladd", c->ft, args, 3);
}
/* Signed integer max of an integer (vector) and a constant. */
static inline LLVMValueRef smax_(const Ctx *c, LLVMValueRef a, int64_t v)
{
    LLVMValueRef args[2] = {a, ci(c, v)};
    return call_intrinsic_t(c, "llvm.smax", c->it, args, 2);
}

/* Horner evaluation of coef[0] + coef[1] t + ... + coef[n-1] t^(n-1), one
 * fmuladd per coefficient. If neg, the negated polynomial (the table is
 * negated while emitting, which costs nothing at run time). */
static inline LLVMValueRef poly_s(const Ctx *c, LLVMValueRef t, const double *coef, int n, int neg)
{
    double s = neg ? -1.0 : 1.0;
    LLVMValueRef acc = cf(c, s * coef[n - 1]);
    for (int i = n - 2; i >= 0; i--)
        acc = fma_(c, acc, t, cf(c, s * coef[i]));
    return acc;
}
static inline LLVMValueRef poly(const Ctx *c, LLVMValueRef t, const double *coef, int n)
{
    return poly_s(c, t, coef, n, 0);
}
/* The same polynomial as E(t^2) + t O(t^2), its even and odd halves by
 * Horner side by side (t2 = t*t): as many fmuladds, half as deep a chain
 * of them, for where the latency shows (a scalar log at the end of a
 * loss). */
static inline LLVMValueRef poly_even_odd(const Ctx *c, LLVMValueRef t, LLVMValueRef t2,
                                         const double *coef, int n)
{
    int ne = (n + 1) / 2, no = n / 2;
    LLVMValueRef e = cf(c, coef[2 * (ne - 1)]), o = cf(c, coef[2 * no - 1]);
    for (int i = ne - 2; i >= 0; i--)
        e = fma_(c, e, t2, cf(c, coef[2 * i]));
    for (int i = no - 2; i >= 0; i--)
        o = fma_(c, o, t2, cf(c, coef[2 * i + 1]));
    return fma_(c, o, t, e);
}

/* Clamp to [lo, hi] with selects: unlike minnum/maxnum a NaN passes through
 * unchanged (both compares are false for NaN); on x86 each select is one
 * min/max instruction. */
static inline LLVMValueRef clamp_hi(const Ctx *c, LLVMValueRef x, double hi)
{
    return sel(c, fcmp(c, LLVMRealOGT, x, cf(c, hi)), cf(c, hi), x);
}
static inline LLVMValueRef clamp_lo(const Ctx *c, LLVMValueRef x, double lo)
{
    return sel(c, fcmp(c, LLVMRealOLT, x, cf(c, lo)), cf(c, lo), x);
}
static inline LLVMValueRef clamp(const Ctx *c, LLVMValueRef x, double lo, double hi)
{
    return clamp_lo(c, clamp_hi(c, x, hi), lo);
}

/* ---- parameters of the two formats ---- */

static inline int mant_bits(const Ctx *c) { return c->dbl ? 52 : 23; }
static inline int exp_bias(const Ctx *c) { return c->dbl ? 1023 : 127; }

/* 1.5 * 2^p: adding it to |v| < 2^(p-1) rounds v to an integer (in the
 * default rounding mode) and leaves that integer in the low mantissa bits. */
static inline double magic(const Ctx *c) { return c->dbl ? 6755399441055744.0 : 12582912.0; }
static inline int64_t magic_bits(const Ctx *c)
{
    return c->dbl ? INT64_C(0x4338000000000000) : INT64_C(0x4B400000);
}

/* 2^k for an integer vector k with -bias < k <= bias: exponent bits. */
static inline LLVMValueRef pow2i(const Ctx *c, LLVMValueRef k)
{
    LLVMValueRef e = LLVMBuildAdd(c->b, k, ci(c, exp_bias(c)), "");
    return to_fp(c, LLVMBuildShl(c->b, e, ci(c, mant_bits(c)), ""));
}

/* Exact integer -> float for |k| < 2^(p-1). float: sitofp (one instruction
 * everywhere); double: the inverse of the magic-number rounding, since
 * i64 -> double has no instruction before AVX-512DQ. */
static inline LLVMValueRef int_to_fp(const Ctx *c, LLVMValueRef k)
{
    if (!c->dbl)
        return LLVMBuildSIToFP(c->b, k, c->ft, "");
    LLVMValueRef t = to_fp(c, LLVMBuildAdd(c->b, k, ci(c, magic_bits(c)), ""));
    return fsub_(c, t, cf(c, magic(c)));
}

/* ln2 split for Cody-Waite: k*LN2_HI is exact for |k| < 2^15 (float: 9
 * significant bits, cephes) / 2^21 (double: low 32 bits zero, fdlibm). */
static inline LLVMValueRef ln2_hi(const Ctx *c) { return cfd(c, 0.693359375, 0.6931471803691238); }
static inline LLVMValueRef ln2_lo(const Ctx *c)
{
    return cfd(c, -0.00021219444170128554, 1.9082149292705877e-10);
}


/* A coefficient table of the type being computed: name_f32 or name_f64,
 * by Horner's rule. */
#define TABLE(c, name) ((c)->dbl ? name##_f64 : name##_f32)
#define TABLE_N(c, name)                                                                        \
    ((c)->dbl ? (int)(sizeof name##_f64 / sizeof(double)) : (int)(sizeof name##_f32 / sizeof(double)))
#define POLY(c, t, name) poly((c), (t), TABLE(c, name), TABLE_N(c, name))

/* ---- the cores (cg_math.c) ---- */

/* exp(x) * 2^e for a small e (-2 <= e <= 1): the scaling is in the
 * exponent, so exp(x)/2 is finite up to x = 710.47 (f64) */
LLVMValueRef cgm_exp_scaled(const Ctx *c, LLVMValueRef x, int e);
/* log_b(x) for b = e, 2 or 10 (denormals included, the special values of log) */
enum { CGM_LN, CGM_LOG2, CGM_LOG10 };
LLVMValueRef cgm_log(const Ctx *c, LLVMValueRef x, int base);
/* sin(pi x) and cos(pi x), exact at the integers (cg_math_trig.c) */
void cgm_sincospi(const Ctx *c, LLVMValueRef x, LLVMValueRef *sinv, LLVMValueRef *cosv);

#endif
