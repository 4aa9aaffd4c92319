/* cg_math_trig.c -- tan, atan, asin, acos, atan2, sinh, cosh and erf as
 * inline IR (the method of cg_math.c: plain arithmetic on the type of x,
 * no libm call, so the fused loops vectorize).
 *
 *  - tan: x = k pi/2 + r, |r| <= pi/4, by Cody-Waite with pi/2 in three
 *    parts (the first product is exact in the fmuladd, the others rounded
 *    once), good to an ulp for |x| <= 2^30 (f64) / 2^17 (f32); beyond,
 *    where working precision no longer pins x down modulo pi/2 (and libm
 *    needs Payne-Hanek), tan is NaN rather than a wrong number. sin(r)
 *    and cos(r) by polynomials, tan = s/c for even k, -c/s for odd.
 *  - atan: fdlibm's reduction to |t| <= 7/16 (atan_pos), then
 *    t + t^3 A(t^2); the constants in hi + lo.
 *    atan2 takes atan(min/max) of |y|, |x| and puts it in its octant, with
 *    C's special cases (signed zeros, infinities). asin(x) is
 *    atan2(x, sqrt((1-x)(1+x))) and acos(x) atan2(sqrt((1-x)(1+x)), x).
 *  - sinh: x + x^3 H(x^2) below 1; above, h - 1/(4h) with h = e^|x|/2 (the
 *    exp core scaled in its exponent: finite up to the overflow of sinh
 *    itself); cosh: h + 1/(4h).
 *  - erf: x E(x^2) below 1; above, 1 - e^(-x^2) Q(|x|) with x^2 split
 *    exactly (fmuladd) and Q ~ erfc(x) e^(x^2) on [1, 6] (f64) / [1, 4]
 *    (f32), beyond which erf rounds to +-1.
 * Polynomials: Chebyshev fits (mpmath.chebyfit, 50 digits) rounded to the
 * type, as in cg_math.c. Measured errors: test/codegen/math.test. */
#include "cg_math_internal.h"

static const double sin_s_f64[] = {
    -0.16666666666666666, 0.008333333333333331, -0.00019841269841265065, 2.7557319219339167e-06,
    -2.5052106232447578e-08, 1.6058531618986147e-10, -7.586697117706918e-13,
};
static const double sin_s_f32[] = {
    -0.1666666716337204, 0.008333331905305386, -0.00019840087043121457, 2.7249925551586784e-06,
};
static const double cos_c_f64[] = {
    0.041666666666666664, -0.0013888888888887398, 2.480158729876569e-05,
    -2.7557317271729793e-07, 2.08761462684032e-09, -1.1382632425521717e-11,
};
static const double cos_c_f32[] = {
    0.0416666679084301, -0.00138888880610466, 2.480059993104078e-05, -2.730095900460583e-07,
};
static const double atan_a_f64[] = {
    -0.3333333333333333, 0.1999999999999941, -0.14285714285566806, 0.11111111096645038,
    -0.09090908355602592, 0.07692285554889286, -0.06666241923359964, 0.05876946456755061,
    -0.05216679739313656, 0.04492259293193656, -0.033128134256069586, 0.014773184616983806,
};
static const double atan_a_f32[] = {
    -0.3333333432674408, 0.1999996304512024, -0.14283399283885956, 0.11058227717876434,
    -0.08532127737998962, 0.04822302982211113,
};

static const double sinh_h_f64[] = {
    0.16666666666666666, 0.008333333333333299, 0.00019841269841324198, 2.7557319191381816e-06,
    2.5052117695907823e-08, 1.6057679623801638e-10, 7.746178593018827e-13,
};
static const double sinh_h_f32[] = {
    0.1666666716337204, 0.008333339355885983, 0.00019838102161884308, 2.806280235745362e-06,
};
static const double erf_e_f64[] = {
    1.1283791670955126, -0.3761263890318375, 0.11283791670954879, -0.026866170645076792,
    0.0052239776248180145, -0.000854832698083379, 0.0001205533111164271,
    -1.4925595266831182e-05, 1.6461000484121368e-06, -1.6350312701054695e-07,
    1.4659775274047436e-08, -1.1372848856791674e-09, 5.957176147748911e-11,
};
static const double erf_e_f32[] = {
    1.1283791065216064, -0.3761262595653534, 0.11283594369888306, -0.02685421146452427,
    0.005189087241888046, -0.000801686430349946, 7.875874871388078e-05,
};
static const double erfc_q_f64[] = {
    0.15529365560889427, -0.04132357783325249, 0.010661133192512096, -0.002673074439643901,
    0.0006526863268631046, -0.00015546891822443157, 3.6181704425882654e-05,
    -8.237986571057561e-06, 1.8371877130070437e-06, -4.017397745419514e-07,
    8.621988593239071e-08, -1.8176538231333366e-08, 3.766845456641937e-09,
    -7.67984759983648e-10, 1.5421610720751066e-10, -3.0483305148003255e-11,
    5.905987341200898e-12, -1.1354237935030183e-12, 2.2426405253372822e-13,
    -4.1752020636863686e-14, 5.945515458832548e-15, -1.1131574999538218e-15,
    4.3578322558318107e-16, -7.487257746565831e-17, -7.303080096587135e-18,
    1.1179525844952664e-18, 8.58530668544082e-19, -1.4260366407354937e-19,
};
static const double erfc_q_f32[] = {
    0.21080635488033295, -0.0743473470211029, 0.024938199669122696, -0.008001617155969143,
    0.002465999685227871, -0.0007333448738791049, 0.0002129504719050601, -5.932730346103199e-05,
    1.4364682101586368e-05, -3.83463202524581e-06, 1.6698367062417674e-06,
    -4.123142787193501e-07,
};

/* sin(r) and cos(r) for |r| <= pi/4 */
static LLVMValueRef sin_k(const Ctx *c, LLVMValueRef r, LLVMValueRef r2)
{
    return fma_(c, fmul_(c, r, r2), POLY(c, r2, sin_s), r);
}
static LLVMValueRef cos_k(const Ctx *c, LLVMValueRef r2)
{
    return fma_(c, r2, fma_(c, r2, POLY(c, r2, cos_c), cf(c, -0.5)), cf(c, 1.0));
}

/* sin(pi x) and cos(pi x): x = n + r with n an integer (exactly: every
 * float beyond 2^52 / 2^23 is one) and |r| <= 1/2; pi r, or pi (1/2 - |r|)
 * with sine and cosine swapped, within the kernels' pi/4; the sign of
 * (-1)^n. For lgamma's and the polygammas' reflection formulas. */
void cgm_sincospi(const Ctx *c, LLVMValueRef x, LLVMValueRef *sinv, LLVMValueRef *cosv)
{
    /* x - 2 round(x / 2), exactly (the magic number rounds |x / 2| <= 2^51
     * / 2^22; every float beyond is an integer, so the clamp keeps sin's
     * zeros), then the nearest integer n of that in {-1, 0, 1} */
    LLVMValueRef xc = c->dbl ? clamp(c, x, -0x1p52, 0x1p52) : clamp(c, x, -0x1p23, 0x1p23);
    LLVMValueRef h = fsub_(c, fadd_(c, fmul_(c, xc, cf(c, 0.5)), cf(c, magic(c))), cf(c, magic(c)));
    LLVMValueRef x2 = fma_(c, cf(c, -2.0), h, xc);
    LLVMValueRef t = fadd_(c, x2, cf(c, magic(c)));
    LLVMValueRef n = fsub_(c, t, cf(c, magic(c)));
    LLVMValueRef odd = LLVMBuildAnd(c->b, to_int(c, t), ci(c, 1), "");
    LLVMValueRef r = fsub_(c, x2, n), ar = fabs_(c, r);
    LLVMValueRef swap = fcmp(c, LLVMRealOGT, ar, cf(c, 0.25));
    LLVMValueRef q = sel(c, swap, fsub_(c, cf(c, 0.5), ar), ar);
    LLVMValueRef a = fmul_(c, q, cfd(c, 3.1415927410125732, 3.141592653589793)), a2 = fmul_(c, a, a);
    LLVMValueRef sq = sin_k(c, a, a2), cq = cos_k(c, a2);
    LLVMValueRef s = copysign_(c, sel(c, swap, cq, sq), r), co = sel(c, swap, sq, cq);
    /* (-1)^n: flip the sign bit when n is odd */
    LLVMValueRef flip = LLVMBuildShl(c->b, odd, ci(c, c->dbl ? 63 : 31), "");
    *sinv = to_fp(c, LLVMBuildXor(c->b, to_int(c, s), flip, ""));
    *cosv = to_fp(c, LLVMBuildXor(c->b, to_int(c, co), flip, ""));
}

LLVMValueRef cg_math_tan(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    /* Beyond TAN_MAX the reduction by pi/2 in working precision is no
     * longer good to an ulp: NaN there, rather than a wrong number. */
    double lim = c.dbl ? TAN_MAX_F64 : TAN_MAX_F32;
    LLVMValueRef xc = clamp(&c, x, -lim, lim);
    LLVMValueRef t = fma_(&c, xc, cfd(&c, 0.6366197466850281, 0.6366197723675814), cf(&c, magic(&c)));
    LLVMValueRef kf = fsub_(&c, t, cf(&c, magic(&c)));
    LLVMValueRef odd = LLVMBuildTrunc(b, LLVMBuildAnd(b, to_int(&c, t), ci(&c, 1), ""),
                                      c.lanes ? LLVMVectorType(LLVMInt1TypeInContext(c.cx), c.lanes)
                                              : LLVMInt1TypeInContext(c.cx), "");
    LLVMValueRef nk = fsub_(&c, cf(&c, -0.0), kf);
    LLVMValueRef r = fma_(&c, nk, cfd(&c, 1.5707963705062866, 1.5707963267948966), xc);
    r = fma_(&c, nk, cfd(&c, -4.371138828673793e-08, 6.123233995736766e-17), r);
    r = fma_(&c, nk, cfd(&c, -1.7151245100058819e-15, -1.4973849048591698e-33), r);
    LLVMValueRef r2 = fmul_(&c, r, r);
    LLVMValueRef s = sin_k(&c, r, r2), co = cos_k(&c, r2);
    LLVMValueRef y = sel(&c, odd, fdiv_(&c, fsub_(&c, cf(&c, -0.0), co), s), fdiv_(&c, s, co));
    return sel(&c, fcmp(&c, LLVMRealOLE, fabs_(&c, x), cf(&c, lim)), y, cf(&c, NAN));
}

/* atan(u) for u >= 0 (inf, NaN too), fdlibm's reduction: by the interval
 * of u, t = (u - a) / (1 + a u) for a = 0, 0.5, 1, 1.5 (u - a exact,
 * Sterbenz) or t = -1/u, so that |t| <= 7/16, and atan(u) = atan(a) +
 * atan(t), atan(a) in hi + lo. */
static LLVMValueRef atan_pos(const Ctx *c, LLVMValueRef u)
{
    static const double cut[4] = {0.4375, 0.6875, 1.1875, 2.4375};
    static const double a[4] = {0.5, 1.0, 1.5, 0.0};
    static const double hi64[4] = {0.4636476090008061, 0.7853981633974483, 0.982793723247329,
                                   1.5707963267948966};
    static const double lo64[4] = {2.2698777452961687e-17, 3.061616997868383e-17,
                                   1.3903311031230998e-17, 6.123233995736766e-17};
    static const double hi32[4] = {0.46364760398864746, 0.7853981852531433, 0.9827937483787537,
                                   1.5707963705062866};
    static const double lo32[4] = {5.01215868808913e-09, -2.1855694143368964e-08,
                                   -2.5131424052915463e-08, -4.371138828673793e-08};
    LLVMValueRef num = u, den = cf(c, 1.0), hi = cf(c, 0.0), lo = cf(c, 0.0);
    for (int k = 0; k < 4; k++) {
        LLVMValueRef in = fcmp(c, LLVMRealOGE, u, cf(c, cut[k]));
        num = sel(c, in, k == 3 ? cf(c, -1.0) : fsub_(c, u, cf(c, a[k])), num);
        den = sel(c, in, k == 3 ? u : fma_(c, cf(c, a[k]), u, cf(c, 1.0)), den);
        hi = sel(c, in, cfd(c, hi32[k], hi64[k]), hi);
        lo = sel(c, in, cfd(c, lo32[k], lo64[k]), lo);
    }
    LLVMValueRef t = fdiv_(c, num, den), t2 = fmul_(c, t, t);
    LLVMValueRef p = fma_(c, fmul_(c, t, t2), POLY(c, t2, atan_a), t);
    return fadd_(c, hi, fadd_(c, p, lo));
}

/* hi + lo - a for the constants pi/2 and pi */
static LLVMValueRef const_minus(const Ctx *c, double hi32, double lo32, double hi64, double lo64,
                                LLVMValueRef a)
{
    return fadd_(c, cfd(c, hi32, hi64), fsub_(c, cfd(c, lo32, lo64), a));
}
static LLVMValueRef pio2_minus(const Ctx *c, LLVMValueRef a)
{
    return const_minus(c, 1.5707963705062866, -4.371138828673793e-08, 1.5707963267948966,
                       6.123233995736766e-17, a);
}

LLVMValueRef cg_math_atan(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    return copysign_(&c, atan_pos(&c, fabs_(&c, x)), x);
}

/* atan2(y, x), C's: the angle of (x, y) in (-pi, pi], with the signs of
 * zeros and the infinities as C99 F.9.1.4 lists them */
static LLVMValueRef atan2_emit(const Ctx *c, LLVMValueRef y, LLVMValueRef x)
{
    LLVMValueRef ax = fabs_(c, x), ay = fabs_(c, y);
    LLVMValueRef swap = fcmp(c, LLVMRealOGT, ay, ax);
    LLVMValueRef big = sel(c, swap, ay, ax), small = sel(c, swap, ax, ay);
    LLVMValueRef u = fdiv_(c, small, big);
    u = sel(c, fcmp(c, LLVMRealOEQ, big, cf(c, 0.0)), cf(c, 0.0), u);           /* 0 / 0 */
    LLVMValueRef infs = LLVMBuildAnd(c->b, fcmp(c, LLVMRealOEQ, small, cf(c, INFINITY)),
                                     fcmp(c, LLVMRealOEQ, big, cf(c, INFINITY)), "");
    u = sel(c, infs, cf(c, 1.0), u); /* inf / inf */
    LLVMValueRef a = atan_pos(c, u);
    a = sel(c, swap, pio2_minus(c, a), a);
    LLVMValueRef neg = LLVMBuildICmp(c->b, LLVMIntSLT, to_int(c, x), ci(c, 0), ""); /* -0 too */
    a = sel(c, neg, const_minus(c, 3.1415927410125732, -8.742277657347586e-08, 3.141592653589793,
                                1.2246467991473532e-16, a), a);
    return copysign_(c, a, y);
}

LLVMValueRef cg_math_atan2(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef y, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, y);
    return atan2_emit(&c, y, x);
}

/* sqrt((1 - x)(1 + x)): sqrt(1 - x^2) without the cancellation near |x| = 1 */
static LLVMValueRef cos_of_asin(const Ctx *c, LLVMValueRef x)
{
    LLVMValueRef p = fmul_(c, fsub_(c, cf(c, 1.0), x), fadd_(c, cf(c, 1.0), x));
    return call_intrinsic(c, "llvm.sqrt", p, NULL);
}

LLVMValueRef cg_math_asin(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    return atan2_emit(&c, x, cos_of_asin(&c, x));
}

LLVMValueRef cg_math_acos(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    return atan2_emit(&c, cos_of_asin(&c, x), x);
}

LLVMValueRef cg_math_sinh(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    LLVMValueRef ax = fabs_(&c, x), x2 = fmul_(&c, x, x);
    LLVMValueRef small = fma_(&c, fmul_(&c, x, x2), POLY(&c, x2, sinh_h), x);
    LLVMValueRef h = cgm_exp_scaled(&c, ax, -1);
    LLVMValueRef big = fsub_(&c, h, fdiv_(&c, cf(&c, 0.25), h));
    return sel(&c, fcmp(&c, LLVMRealOLT, ax, cf(&c, 1.0)), small, copysign_(&c, big, x));
}

LLVMValueRef cg_math_cosh(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    LLVMValueRef h = cgm_exp_scaled(&c, fabs_(&c, x), -1);
    return fadd_(&c, h, fdiv_(&c, cf(&c, 0.25), h));
}

LLVMValueRef cg_math_erf(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    LLVMValueRef ax = fabs_(&c, x), x2 = fmul_(&c, x, x);
    LLVMValueRef small = fmul_(&c, x, POLY(&c, x2, erf_e));
    LLVMValueRef a = clamp(&c, ax, 1.0, c.dbl ? 6.0 : 4.0);
    LLVMValueRef h = fmul_(&c, a, a), l = fma_(&c, a, a, fsub_(&c, cf(&c, -0.0), h)); /* a^2 = h + l */
    LLVMValueRef e = fmul_(&c, cgm_exp_scaled(&c, fsub_(&c, cf(&c, -0.0), h), 0),
                           fsub_(&c, cf(&c, 1.0), l));
    LLVMValueRef q = POLY(&c, fsub_(&c, a, cfd(&c, 2.5, 3.5)), erfc_q);
    LLVMValueRef big = fsub_(&c, cf(&c, 1.0), fmul_(&c, e, q));
    return sel(&c, fcmp(&c, LLVMRealOLT, ax, cf(&c, 1.0)), small, copysign_(&c, big, x));
}
