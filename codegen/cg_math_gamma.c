/* cg_math_gamma.c -- lgamma and the polygammas psi^(n) (digamma for n = 0,
 * the derivative of lgamma; psi^(n+1) the derivative of psi^(n)) as
 * inline IR, by the method of cg_math.c (plain arithmetic, vectorizable).
 *
 * lgamma(y), y > 0 (lgamma_pos): lgamma(1 + t) = t M(t) on [0.75, 1.5)
 * and lgamma(2 + t) = t L(t) on [1.5, 2.5) keep the zeros at 1 and 2
 * relative; elsewhere the recurrence lgamma(y+1) = lgamma(y) + log y, up
 * to two steps up from (0, 0.75) or up to eight down from [2.5, 10), into
 * [1.5, 2.5) (t = y - 1, y or z - 2 exactly), its factors multiplied into
 * one log. From 10 on, Stirling's series in 1/y^2.
 * x in (-1/4, 0) by one step up, lgamma(x) = lgamma(x + 1) - log(-x); below,
 * by reflection, lgamma(x) = log(pi / |sin(pi x)|) - lgamma(1 - x) (sin(pi
 * x) exact at the integers, the poles: +inf there). Where the two terms
 * cancel (near the zeros of lgamma at negative x) the error is relative
 * to the larger term, not to the result.
 *
 * digamma(y), y > 0: psi(z) = (z - x0) D(z) on [1, 2], x0 the root (hi +
 * lo), so it stays relative there; one step up from (0, 1) (-1/y), up to
 * eight down from (2, 10) (the 1/(z+k) summed as one fraction); from 10
 * on, log y - 1/(2y) - sum B_2k / (2k y^2k). psi^(n), n >= 1: all terms of
 * (-1)^(n+1) n! sum_k 1/(y+k)^(n+1) have one sign, so the recurrence steps
 * up to X(n) (10 + 2n) and the asymptotic series takes over there, its
 * coefficients B_2k (2k+n-1)! / (2k)! computed here for each n. x < 0 by
 * reflection (and in (-1/4, 0) one step up, as for lgamma):
 * psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) cot^(n)(pi x),
 * cot^(n) a polynomial in cot (its coefficients by the recurrence
 * P_(k+1)(c) = -(1 + c^2) P_k'(c)).
 *
 * Polynomials: Chebyshev fits (mpmath, 50 digits) rounded to the type.
 * Measured errors: test/codegen/math.test (libm's lgamma; digamma against
 * long double sums). */
#include "cg_math_internal.h"

static const double lgamma2_f64[] = {
    0.42278433509846713, 0.3224670334241132, -0.06735230105319563, 0.02058080842778338,
    -0.007385551028935545, 0.002890510330865901, -0.0011927539009983087, 0.0005096695196526673,
    -0.00022315497746292723, 9.945761692157133e-05, -4.4923727564247656e-05,
    2.050601970174762e-05, -9.45628851510172e-06, 4.3828545383846665e-06,
    -1.9743106888421067e-06, 9.242852225162277e-07, -5.811277768921246e-07,
    2.7475390051909663e-07,
};
static const double lgamma2_f32[] = {
    0.42278432846069336, 0.32246702909469604, -0.0673532634973526, 0.020581239834427834,
    -0.0073664216324687, 0.0028819655999541283, -0.0013125623809173703, 0.0005631591775454581,
};
static const double lgamma1_f64[] = {
    -0.48018547300831665, 0.7335424776996939, -0.3158060416454167, 0.18866417564930277,
    -0.12817371733751493, 0.09302766774748719, -0.07022575725787633, 0.05439836830466354,
    -0.04291278430215281, 0.034315669453522296, -0.027733319932866547, 0.022607796828520293,
    -0.018558424226654466, 0.015295358153790527, -0.012694555619629323, 0.010858153110519972,
    -0.009091250442002657, 0.006082523447166723, -0.005110876646401692, 0.009222478052835367,
    -0.007827903758187479,
};
static const double lgamma1_f32[] = {
    -0.48018547892570496, 0.7335425019264221, -0.3158060610294342, 0.18866169452667236,
    -0.1281716674566269, 0.0931253582239151, -0.07030617445707321, 0.05284956470131874,
    -0.04163810983300209, 0.04474789649248123, -0.03631415218114853,
};
static const double digamma_d_f64[] = {
    0.951055876031833, -0.4236274212814605, 0.2405424842407742, -0.14840492305390884,
    0.09498872445494122, -0.061922133273064534, 0.04076083381242074, -0.02697579675613825,
    0.0179072524394512, -0.011908218001568644, 0.007926944646403797, -0.005279964873257405,
    0.003519006401502276, -0.002345267632540769, 0.0015566317474486838, -0.0010376374098418604,
    0.0007233266279287554, -0.0004821990530566789, 0.0002272331660987376,
    -0.00015148586836773365, 0.00025968482126430747, -0.00017312261802727394,
};
static const double digamma_d_f32[] = {
    0.9510558843612671, -0.42362749576568604, 0.24054253101348877, -0.14839886128902435,
    0.09498468786478043, -0.062055978924036026, 0.04085002839565277, -0.025786884129047394,
    0.017114989459514618, -0.016373619437217712, 0.01090258825570345,
};
/* the positive root of digamma, hi + lo */
static const double digamma_root[2][2] = {{1.4616321325302124, 1.243815006546356e-08}, {1.4616321449683622, 9.549995429965697e-17}};

/* Bernoulli numbers B_2k, k = 1..15 */
static const double bernoulli2k[] = {
    1.0 / 6,         -1.0 / 30,          1.0 / 42,        -1.0 / 30,
    5.0 / 66,        -691.0 / 2730,      7.0 / 6,         -3617.0 / 510,
    43867.0 / 798,   -174611.0 / 330,    854513.0 / 138,  -236364091.0 / 2730,
    8553103.0 / 6,   -23749461029.0 / 870, 8615841276005.0 / 14322,
};
enum { RECUR_FROM = 10 }; /* where the asymptotic series take over */

/* lgamma(y) for y > 0 (inf, NaN too) */
static LLVMValueRef lgamma_pos(const Ctx *c, LLVMValueRef y)
{
    LLVMValueRef one = cf(c, 1.0);
    LLVMValueRef up2 = fcmp(c, LLVMRealOLT, y, cf(c, 0.5));
    LLVMValueRef up1 = fcmp(c, LLVMRealOLT, y, cf(c, 0.75));
    LLVMValueRef near1 = LLVMBuildAnd(c->b, fcmp(c, LLVMRealOGE, y, cf(c, 0.75)),
                                      fcmp(c, LLVMRealOLT, y, cf(c, 1.5)), "");
    LLVMValueRef big = fcmp(c, LLVMRealOGE, y, cf(c, RECUR_FROM));
    /* down: z from y by steps of 1 while z >= 2.5, the factors z - 1 into p */
    LLVMValueRef z = sel(c, big, cf(c, 2.0), y), p = one;
    for (int k = 0; k < RECUR_FROM - 2; k++) {
        LLVMValueRef more = fcmp(c, LLVMRealOGE, z, cf(c, 2.5));
        z = sel(c, more, fsub_(c, z, one), z);
        p = sel(c, more, fmul_(c, p, z), p);
    }
    /* lgamma(2 + t), t = y - 1 or y up, z - 2 down, all exact */
    LLVMValueRef t = sel(c, up2, y, sel(c, up1, fsub_(c, y, one), fsub_(c, z, cf(c, 2.0))));
    LLVMValueRef central = fmul_(c, t, POLY(c, t, lgamma2));
    /* lgamma(1 + t) near 1, t = y - 1: the zero at 1 without the
     * cancellation of lgamma(y + 1) - log y */
    LLVMValueRef t1 = fsub_(c, y, one);
    LLVMValueRef at1 = fmul_(c, t1, POLY(c, fsub_(c, t1, cf(c, 0.125)), lgamma1));
    /* up: lgamma(y) = lgamma(y + m) - log(y (y + 1) ...) */
    LLVMValueRef pup = sel(c, up2, fmul_(c, y, fadd_(c, y, one)), y);
    p = sel(c, up1, pup, sel(c, near1, one, p));
    LLVMValueRef l = cgm_log(c, sel(c, big, y, p), CGM_LN);
    LLVMValueRef rec = sel(c, near1, at1, sel(c, up1, fsub_(c, central, l), fadd_(c, central, l)));
    /* Stirling: (y - 1/2)(log y - 1) + (log(2 pi) - 1)/2 + sum B_2k / (2k (2k-1) y^(2k-1)) */
    LLVMValueRef w = fdiv_(c, one, y), w2 = fmul_(c, w, w);
    int nterms = c->dbl ? 8 : 3;
    double coef[8];
    for (int k = 1; k <= nterms; k++)
        coef[k - 1] = bernoulli2k[k - 1] / (2.0 * k * (2 * k - 1));
    LLVMValueRef series = fmul_(c, w, poly(c, w2, coef, nterms));
    LLVMValueRef st = fma_(c, fsub_(c, y, cf(c, 0.5)), fsub_(c, l, one),
                           fadd_(c, cf(c, 0.4189385332046727), series));
    return sel(c, big, st, rec);
}

/* Below 0: in (-1/4, 0) one step of the recurrence up, f(x) = f(x + 1)
 * - term(x) (no cancellation there, and no sin(pi x) underflowing for a
 * tiny x); further down the reflection formula, from f(1 - x). */
static LLVMValueRef shifted_arg(const Ctx *c, LLVMValueRef x, LLVMValueRef *neg, LLVMValueRef *near0)
{
    LLVMValueRef one = cf(c, 1.0);
    *neg = fcmp(c, LLVMRealOLT, x, cf(c, 0.0));
    *near0 = LLVMBuildAnd(c->b, *neg, fcmp(c, LLVMRealOGT, x, cf(c, -0.25)), "");
    return sel(c, *near0, fadd_(c, x, one), sel(c, *neg, fsub_(c, one, x), x));
}

LLVMValueRef cg_math_lgamma(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x)
{
    Ctx c = ctx_for(m, b, x);
    LLVMValueRef neg, near0;
    LLVMValueRef g = lgamma_pos(&c, shifted_arg(&c, x, &neg, &near0));
    LLVMValueRef s, co;
    cgm_sincospi(&c, x, &s, &co);
    /* lgamma(x + 1) - log(-x), or log(pi / |sin(pi x)|) - lgamma(1 - x) */
    LLVMValueRef l = cgm_log(&c, sel(&c, near0, fsub_(&c, cf(&c, -0.0), x), fabs_(&c, s)), CGM_LN);
    LLVMValueRef refl = sel(&c, near0, fsub_(&c, g, l),
                            fsub_(&c, fsub_(&c, cf(&c, 1.1447298858494002), l), g));
    /* the poles (where lgamma(1 - x) may overflow too) and -inf: +inf, as C's */
    refl = sel(&c, fcmp(&c, LLVMRealOEQ, s, cf(&c, 0.0)), cf(&c, INFINITY), refl);
    return sel(&c, neg, refl, g);
}

/* digamma(y) for y > 0 */
static LLVMValueRef digamma_pos(const Ctx *c, LLVMValueRef y)
{
    LLVMValueRef one = cf(c, 1.0);
    LLVMValueRef up = fcmp(c, LLVMRealOLT, y, one);
    LLVMValueRef big = fcmp(c, LLVMRealOGE, y, cf(c, RECUR_FROM));
    /* down: psi(y) = psi(z) + sum 1/(z + k), the sum as num / den */
    LLVMValueRef z = sel(c, big, cf(c, 1.5), y), num = cf(c, 0.0), den = one;
    for (int k = 0; k < RECUR_FROM - 2; k++) {
        LLVMValueRef more = fcmp(c, LLVMRealOGT, z, cf(c, 2.0));
        z = sel(c, more, fsub_(c, z, one), z);
        num = sel(c, more, fma_(c, num, z, den), num);
        den = sel(c, more, fmul_(c, den, z), den);
    }
    z = sel(c, up, fadd_(c, y, one), z);
    const double *root = digamma_root[c->dbl];
    LLVMValueRef d = fsub_(c, fsub_(c, z, cf(c, root[0])), cf(c, root[1]));
    LLVMValueRef central = fmul_(c, d, POLY(c, fsub_(c, z, cf(c, 1.5)), digamma_d));
    LLVMValueRef rec = sel(c, up, fsub_(c, central, fdiv_(c, one, y)), fadd_(c, central, fdiv_(c, num, den)));
    /* log y - 1/(2y) - sum B_2k / (2k y^2k) */
    LLVMValueRef w = fdiv_(c, one, y), w2 = fmul_(c, w, w);
    int nterms = c->dbl ? 8 : 4;
    double coef[8];
    for (int k = 1; k <= nterms; k++)
        coef[k - 1] = -bernoulli2k[k - 1] / (2.0 * k);
    LLVMValueRef series = fma_(c, w2, poly(c, w2, coef, nterms), fmul_(c, cf(c, -0.5), w));
    LLVMValueRef as = fadd_(c, cgm_log(c, y, CGM_LN), series);
    return sel(c, big, as, rec);
}

/* psi^(n)(y) for y > 0, n >= 1: (-1)^(n+1) times
 *   n! sum_(k<m) 1/(y+k)^(n+1) + (n-1)!/z^n + n!/(2 z^(n+1))
 *   + sum_k B_2k (2k+n-1)!/(2k)! / z^(2k+n),   z = y + m >= X(n) */
static LLVMValueRef polygamma_pos(const Ctx *c, LLVMValueRef y, int n)
{
    LLVMValueRef one = cf(c, 1.0);
    int from = RECUR_FROM + 2 * n;
    double nfact = 1;
    for (int k = 2; k <= n; k++)
        nfact *= k;
    /* the terms 1/(y + k)^(n+1) for the k with y + k < X(n), the smallest
     * (largest k) first; z = y + m, the first y + k past X(n) */
    LLVMValueRef z = y, acc = cf(c, 0.0);
    for (int k = 0; k < from; k++)
        z = sel(c, fcmp(c, LLVMRealOLT, z, cf(c, from)), fadd_(c, z, one), z);
    for (int k = from - 1; k >= 0; k--) { /* (1/v)^(n+1): no denormal v^(n+1) for a tiny v */
        LLVMValueRef v = fadd_(c, y, cf(c, k)), w = fdiv_(c, one, v), wp = w;
        for (int j = 0; j < n; j++)
            wp = fmul_(c, wp, w);
        acc = sel(c, fcmp(c, LLVMRealOLT, v, cf(c, from)), fadd_(c, acc, wp), acc);
    }
    /* the series in w = 1/z: w^n ((n-1)! + n! w / 2 + sum_k a_k w^(2k)) */
    LLVMValueRef w = fdiv_(c, one, z), w2 = fmul_(c, w, w), wn = w;
    for (int j = 1; j < n; j++)
        wn = fmul_(c, wn, w);
    double coef[16], zk = 1;
    int nterms = 0;
    for (int k = 1; k <= 15; k++) {
        double a = bernoulli2k[k - 1];
        for (int j = 2 * k + n - 1; j > 2 * k; j--) /* (2k+n-1)! / (2k)! */
            a *= j;
        coef[nterms++] = a;
        /* stop once the term is below the type's precision at z = from */
        zk *= (double)from * from;
        if (fabs(a) / zk < (c->dbl ? 0x1p-60 : 0x1p-30) * nfact / n)
            break;
    }
    LLVMValueRef s = fmul_(c, w2, poly(c, w2, coef, nterms));
    s = fma_(c, fmul_(c, cf(c, nfact / 2), w), one, s);
    s = fadd_(c, cf(c, nfact / n), s); /* (n-1)! */
    LLVMValueRef total = fma_(c, cf(c, nfact), acc, fmul_(c, wn, s));
    return n % 2 ? total : fsub_(c, cf(c, -0.0), total);
}

/* the coefficients of P_n, cot^(n)(u) = P_n(cot u): degree n + 1 */
static void cot_derivative(int n, double *p)
{
    for (int j = 0; j <= n + 1; j++)
        p[j] = 0;
    p[1] = 1; /* P_0(c) = c */
    for (int k = 0; k < n; k++) {
        double d[24] = {0}, q[24] = {0};
        for (int j = 1; j <= k + 1; j++)
            d[j - 1] = j * p[j];           /* P' */
        for (int j = 0; j <= k; j++) {     /* -(1 + c^2) P' */
            q[j] -= d[j];
            q[j + 2] -= d[j];
        }
        for (int j = 0; j <= k + 2; j++)
            p[j] = q[j];
    }
}

LLVMValueRef cg_math_polygamma(LLVMModuleRef m, LLVMBuilderRef b, LLVMValueRef x, int n)
{
    Ctx c = ctx_for(m, b, x);
    if (n > 20)
        n = 20; /* the frontend never asks beyond; the coefficients stay exact */
    LLVMValueRef neg, near0;
    LLVMValueRef y = shifted_arg(&c, x, &neg, &near0);
    LLVMValueRef g = n == 0 ? digamma_pos(&c, y) : polygamma_pos(&c, y, n);
    LLVMValueRef s, co;
    cgm_sincospi(&c, x, &s, &co);
    double p[24];
    cot_derivative(n, p);
    const double pi = 3.14159265358979323846;
    double pin = pi;
    for (int k = 0; k < n; k++)
        pin *= pi;
    LLVMValueRef cot = fdiv_(&c, co, s);
    LLVMValueRef refl = fmul_(&c, cf(&c, pin), poly(&c, cot, p, n + 2));
    LLVMValueRef gs = n % 2 ? fsub_(&c, cf(&c, -0.0), g) : g;
    /* psi^(n)(x) = psi^(n)(x + 1) - (-1)^n n! / x^(n+1) */
    double nfact = 1;
    for (int k = 2; k <= n; k++)
        nfact *= k;
    LLVMValueRef w = fdiv_(&c, cf(&c, 1.0), x), wp = w;
    for (int k = 0; k < n; k++)
        wp = fmul_(&c, wp, w);
    LLVMValueRef up = fsub_(&c, g, fmul_(&c, cf(&c, n % 2 ? -nfact : nfact), wp));
    LLVMValueRef r = sel(&c, near0, up, sel(&c, neg, fsub_(&c, gs, refl), g));
    /* the poles 0, -1, -2, ...: +inf where both sides tend to it (odd n),
     * NaN where they differ in sign (even n); and NaN at -inf */
    LLVMValueRef pole = LLVMBuildAnd(b, fcmp(&c, LLVMRealOLE, x, cf(&c, 0.0)),
                                     fcmp(&c, LLVMRealOEQ, s, cf(&c, 0.0)), "");
    r = sel(&c, pole, cf(&c, n % 2 ? INFINITY : NAN), r);
    return sel(&c, fcmp(&c, LLVMRealOEQ, x, cf(&c, -INFINITY)), cf(&c, NAN), r);
}
