/* math_accuracy.c -- accuracy, special values and speed of codegen/cg_math.c.
 *
 * Links the object written by gen_math.c (kernels sg_test_F_T: scalar
 * emitter in a loop that LLVM vectorized; sg_testv_F_T: emitter on <8 x T>).
 * For every function and type it runs both kernels over
 *   - special values with exact expected results,
 *   - float: a strided sweep of all 2^32 bit patterns (every pattern with
 *     --exhaustive), double: random bit patterns and random values that are
 *     log-uniform over the whole exponent range,
 *   - dense uniform sweeps of each function's interesting ranges,
 * checks that the two kernels agree bit for bit, and measures the error
 * against a reference computed in higher precision (libm's double functions
 * for float, long double for double) as |got - exact| / ulp(exact); a
 * correctly rounded result scores <= 0.5. Fails (exit 1, with file:line,
 * input, got and expected) above each function's bound: float 2 ulp for
 * exp, log, tanh, sigmoid, log2, log10 and 3 ulp for expm1, log1p,
 * softplus, tan, atan, asin, acos, sinh, cosh, erf, atan2; 4 (5 for
 * trigamma, tetragamma) for lgamma and the polygammas; double 4 ulp (5).
 * lgamma and the polygammas below 0 (reflection formulas) are measured in
 * ulps of |f(x)| + |f(1-x)|, the size of the terms that cancel there
 * (absneg). (cg_math.c uses llvm.fmuladd, so the last bit may differ
 * between CPUs with and without FMA; the bounds hold for both.)
 *
 * Usage: math_accuracy [--exhaustive] [--only NAME] [--bench]
 *
 * Built and run by math.test in this directory.
 */
#define _POSIX_C_SOURCE 200809L
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef void (*KernF)(const float *, float *, int64_t);
typedef void (*KernD)(const double *, double *, int64_t);

#define DECL(F)                                                                               \
    void sg_test_##F##_f32(const float *, float *, int64_t);                                 \
    void sg_testv_##F##_f32(const float *, float *, int64_t);                                \
    void sg_test_##F##_f64(const double *, double *, int64_t);                               \
    void sg_testv_##F##_f64(const double *, double *, int64_t);
DECL(exp)
DECL(exp_shifted)
DECL(expm1)
DECL(log)
DECL(log1p)
DECL(tanh)
DECL(sigmoid)
DECL(softplus)
DECL(log2)
DECL(log10)
DECL(tan)
DECL(atan)
DECL(asin)
DECL(acos)
DECL(sinh)
DECL(cosh)
DECL(erf)
DECL(atan2_a)
DECL(atan2_b)
DECL(lgamma)
DECL(digamma)
DECL(trigamma)
DECL(tetragamma)

/* References. exp_shifted is exp below its clamp (43 / 664), a constant
 * above (NaN compares false and stays NaN). */
static double exp_shifted_d(double x) { return exp(x > 43 ? 43 : x); }
static long double exp_shifted_l(long double x) { return expl(x > 664 ? 664 : x); }
static double sigmoid_d(double x)
{
    long double t = expl(-fabsl((long double)x));
    return (double)(x < 0 ? t / (1 + t) : 1 / (1 + t));
}
static double softplus_d(double x)
{
    return (double)(fmaxl(x, 0) + log1pl(expl(-fabsl((long double)x))));
}
static long double sigmoid_l(long double x)
{
    long double t = expl(-fabsl(x));
    return x < 0 ? t / (1 + t) : 1 / (1 + t);
}
static long double softplus_l(long double x)
{
    return (x > 0 ? x : 0) + log1pl(expl(-fabsl(x)));
}

/* tan is NaN beyond TAN_MAX (cg_math.h) */
static double tan_d(double x) { return fabs(x) <= 0x1p17 ? tan(x) : NAN; }
static long double tan_l(long double x) { return fabsl(x) <= 0x1p30 ? tanl(x) : NAN; }
/* atan2 as gen_math.c tests it, in the reference's precision */
static double atan2_a_d(double x) { return atan2(x, (double)(float)(0.6f - (float)x)); }
static long double atan2_a_l(long double x) { return atan2l(x, (long double)(0.6 - (double)x)); }
static double atan2_b_d(double x) { return atan2((double)(float)(0.3f - (float)x), x); }
static long double atan2_b_l(long double x) { return atan2l((long double)(0.3 - (double)x), x); }

/* The polygammas psi^(n) in long double (libm has none): for x < 0 by
 * reflection; for x > 0 the recurrence up to 40, then the asymptotic
 * series; digamma near its positive root x0 by its Taylor series there
 * (coefficients psi^(k)(x0)/k! from mpmath), so that it stays relative. */
static const long double digamma_x0 = 1.46163214496836234128091663864L; /* + x0lo */
static const long double digamma_x0lo = -1.8257096315963484214601e-20L;
static const long double digamma_taylor[] = {
    0.9676722454476211704274448L, -0.4427631689835921060928653L, 0.2584997609556510106244014L,
    -0.1639427054424065275042513L, 0.1078240506912623657571829L, -0.07219956125645471092612178L,
    0.04880428816414310722509253L, -0.0331611264748473592922584L, 0.02259764823221810465962483L,
    -0.01542476590494895913880032L, 0.01053879161661217538812405L, -0.007204534386356868240970474L,
    0.004926781395729853446354266L, -0.003369801655439328082792857L, 0.00230512632673492783693838L,
    -0.001576936771430197259270935L, 0.001078825201916296580691918L,
    -0.0007380709389960051295660474L, 0.0005049532658346020351773982L,
    -0.000345468025106307699555568L,
};
static const long double bern2k[] = {1.0L / 6, -1.0L / 30, 1.0L / 42, -1.0L / 30, 5.0L / 66,
                                     -691.0L / 2730, 7.0L / 6, -3617.0L / 510, 43867.0L / 798,
                                     -174611.0L / 330};
static long double polygamma_l(int n, long double x)
{
    const long double pi = 3.14159265358979323846264338327950288L;
    if (isnan(x) || x == -INFINITY)
        return NAN;
    if (x <= 0 && x == roundl(x)) /* a pole: +inf from both sides for odd n */
        return n % 2 ? INFINITY : NAN;
    if (x < 0) { /* psi^(n)(x) = (-1)^n psi^(n)(1-x) - pi^(n+1) cot^(n)(pi x) */
        long double r = x - roundl(x), der;
        long double c = fabsl(r) == 0.5L ? 0 : 1 / tanl(pi * r); /* cot(pi/2) = 0 exactly */
        der = n == 0 ? c : n == 1 ? -(1 + c * c) : 2 * c * (1 + c * c); /* n <= 2 */
        long double p = powl(pi, n + 1);
        return (n % 2 ? -1 : 1) * polygamma_l(n, 1 - x) - p * der;
    }
    if (n == 0 && fabsl(x - digamma_x0) < 0.1L) {
        long double e = (x - digamma_x0) - digamma_x0lo, s = 0;
        for (int k = 19; k >= 0; k--)
            s = (s + digamma_taylor[k]) * e;
        return s;
    }
    long double nf = 1, acc = 0;
    for (int k = 2; k <= n; k++)
        nf *= k;
    while (x < 40) {
        acc += n == 0 ? -1 / x : nf / powl(x, n + 1) * (n % 2 ? 1 : -1);
        x += 1;
    }
    long double w = 1 / x, s;
    if (n == 0) {
        s = logl(x) - w / 2;
        for (int k = 1; k <= 10; k++)
            s -= bern2k[k - 1] / (2 * k) * powl(w, 2 * k);
    } else {
        s = nf / n * powl(w, n) + nf / 2 * powl(w, n + 1);
        for (int k = 1; k <= 10; k++) {
            long double a = bern2k[k - 1];
            for (int j = 2 * k + n - 1; j > 2 * k; j--)
                a *= j;
            s += a * powl(w, 2 * k + n);
        }
        s *= n % 2 ? 1 : -1;
    }
    return acc + s;
}
static long double digamma_l(long double x) { return polygamma_l(0, x); }
static long double trigamma_l(long double x) { return polygamma_l(1, x); }
static long double tetragamma_l(long double x) { return polygamma_l(2, x); }
static double digamma_d(double x) { return (double)polygamma_l(0, x); }
static double trigamma_d(double x) { return (double)polygamma_l(1, x); }
static double tetragamma_d(double x) { return (double)polygamma_l(2, x); }

typedef struct {
    const char *name;
    KernF f32, f32v;
    KernD f64, f64v;
    double (*ref32)(double);
    long double (*ref64)(long double);
    double lo32, hi32, lo64, hi64; /* dense sweep, wide range */
    double nlo, nhi;               /* dense sweep near the interesting point */
    double bound32, bound64;       /* max error allowed, ulp */
    double absneg;                 /* if not 0, the bound below 0, where f(x)
                                      comes from f(1-x) and a term about
                                      f(x) -+ f(1-x) (reflection): in ulps
                                      of |f(x)| + |f(1-x)|, the terms' scale
                                      (absolute near the zeros there) */
} Fn;

#define KERNELS(F) sg_test_##F##_f32, sg_testv_##F##_f32, sg_test_##F##_f64, sg_testv_##F##_f64
static const Fn fns[] = {
    {"exp", KERNELS(exp), exp, expl, -110, 90, -750, 712, -2, 2, 2, 4, 0},
    {"exp_shifted", KERNELS(exp_shifted), exp_shifted_d, exp_shifted_l, -110, 50, -750, 670, -2, 2, 2, 4, 0},
    {"expm1", KERNELS(expm1), expm1, expm1l, -20, 90, -40, 712, -1, 1, 3, 4, 0},
    {"log", KERNELS(log), log, logl, 0, 10, 0, 10, 0.5, 2, 2, 4, 0},
    {"log1p", KERNELS(log1p), log1p, log1pl, -1, 10, -1, 10, -0.5, 0.5, 3, 4, 0},
    {"tanh", KERNELS(tanh), tanh, tanhl, -12, 12, -22, 22, -1, 1, 2, 4, 0},
    {"sigmoid", KERNELS(sigmoid), sigmoid_d, sigmoid_l, -110, 30, -750, 40, -5, 5, 2, 4, 0},
    {"softplus", KERNELS(softplus), softplus_d, softplus_l, -110, 100, -750, 750, -5, 5, 3, 4, 0},
    {"log2", KERNELS(log2), log2, log2l, 0, 10, 0, 10, 0.5, 2, 2, 4, 0},
    {"log10", KERNELS(log10), log10, log10l, 0, 10, 0, 10, 0.5, 2, 2, 4, 0},
    {"tan", KERNELS(tan), tan_d, tan_l, -100, 100, -1e5, 1e5, -1.6, 1.6, 3, 4, 0},
    {"atan", KERNELS(atan), atan, atanl, -20, 20, -20, 20, -1.5, 1.5, 3, 4, 0},
    {"asin", KERNELS(asin), asin, asinl, -1, 1, -1, 1, -0.01, 0.01, 3, 4, 0},
    {"acos", KERNELS(acos), acos, acosl, -1, 1, -1, 1, 0.99, 1, 3, 4, 0},
    {"sinh", KERNELS(sinh), sinh, sinhl, -90, 90, -711, 711, -2, 2, 3, 4, 0},
    {"cosh", KERNELS(cosh), cosh, coshl, -90, 90, -711, 711, -2, 2, 3, 4, 0},
    {"erf", KERNELS(erf), erf, erfl, -5, 5, -7, 7, -1.5, 1.5, 3, 4, 0},
    {"atan2_a", KERNELS(atan2_a), atan2_a_d, atan2_a_l, -10, 10, -10, 10, 0.5, 0.7, 3, 4, 0},
    {"atan2_b", KERNELS(atan2_b), atan2_b_d, atan2_b_l, -10, 10, -10, 10, -0.1, 0.4, 3, 4, 0},
    {"lgamma", KERNELS(lgamma), lgamma, lgammal, -30, 1e6, -30, 1e6, 0.5, 3, 4, 4, 6},
    {"digamma", KERNELS(digamma), digamma_d, digamma_l, -30, 1e6, -30, 1e6, 1, 2, 4, 4, 32},
    {"trigamma", KERNELS(trigamma), trigamma_d, trigamma_l, -30, 1e4, -30, 1e4, 0.01, 3, 5, 5, 32},
    {"tetragamma", KERNELS(tetragamma), tetragamma_d, tetragamma_l, -30, 1e4, -30, 1e4, 0.01, 3, 5, 5, 32},
};
enum { NFN = sizeof fns / sizeof fns[0] };
#define CHUNK (1 << 19)

static int failures;

/* ---- error measurement ---- */

static double ulp32(double ref)
{
    double a = fabs(ref);
    if (a < FLT_MIN)
        return 0x1p-149;
    return ldexp(1.0, ilogb(a) - 23);
}
static long double ulp64(long double ref)
{
    long double a = fabsl(ref);
    if (a < DBL_MIN)
        return 0x1p-1074L;
    return ldexpl(1.0L, ilogbl(a) - 52);
}

/* Error in ulps of got against the exact value ref; inf for a wrong special
 * value (NaN vs number, inf vs finite). */
static double err32(float got, double ref)
{
    float rr = (float)ref;
    if (isnan(ref) || isnan(got))
        return isnan(ref) && isnan(got) ? 0 : INFINITY;
    if (isinf(rr) || isinf(got))
        return rr == got ? 0 : INFINITY;
    return fabs((double)got - ref) / ulp32(ref);
}
static double err64(double got, long double ref)
{
    double rr = (double)ref;
    if (isnan(ref) || isnan(got))
        return isnan(ref) && isnan(got) ? 0 : INFINITY;
    if (isinf(rr) || isinf(got))
        return rr == got ? 0 : INFINITY;
    return (double)(fabsl((long double)got - ref) / ulp64(ref));
}

typedef struct {
    double max;
    double at, got, want;
    long n;
    double negmax; /* below 0, for the functions with absneg */
} Stat;

static int same32(float a, float b)
{
    uint32_t x, y;
    memcpy(&x, &a, 4);
    memcpy(&y, &b, 4);
    return x == y || (isnan(a) && isnan(b));
}
static int same64(double a, double b)
{
    uint64_t x, y;
    memcpy(&x, &a, 8);
    memcpy(&y, &b, 8);
    return x == y || (isnan(a) && isnan(b));
}

/* Run both kernels on n inputs and accumulate the error. */
static void check32(const Fn *f, const float *x, long n, Stat *st, float *y, float *yv, int line)
{
    f->f32(x, y, n);
    f->f32v(x, yv, n);
    for (long i = 0; i < n; i++) {
        if (!same32(y[i], yv[i])) {
            if (failures++ < 10)
                printf("%s:%d: %s f32: vector and scalar kernels differ at x=%a: %a vs %a\n",
                       __FILE__, line, f->name, x[i], yv[i], y[i]);
        }
        double ref = f->ref32(x[i]);
        double e = err32(y[i], ref);
        double sc = f->absneg && x[i] < 0 ? fabs(ref) + fabs(f->ref32(1 - (double)x[i])) : NAN;
        double bound = f->bound32;
        if (isfinite(sc) && isfinite(y[i]) && isfinite((float)ref)) { /* the terms' ulps */
            e = fabs((double)y[i] - ref) / ulp32(sc);
            bound = f->absneg;
            st->negmax = fmax(st->negmax, e);
            e = 0; /* not in the max over x >= 0 */
            if (!(fabs((double)y[i] - ref) / ulp32(sc) <= bound) && failures++ < 10)
                printf("%s:%d: %s f32: x=%a: got %a, expected %.17g: %.3g ulp of the terms > %g\n",
                       __FILE__, line, f->name, x[i], y[i], ref, fabs((double)y[i] - ref) / ulp32(sc), bound);
        }
        if (e > st->max || (isnan(e) && !isnan(st->max))) {
            st->max = e;
            st->at = x[i];
            st->got = y[i];
            st->want = ref;
        }
        if (!(e <= f->bound32) && failures++ < 10)
            printf("%s:%d: %s f32: x=%a (%.9g): got %a (%.9g), expected %.17g: %.3g ulp > %g\n",
                   __FILE__, line, f->name, x[i], x[i], y[i], y[i], ref, e, f->bound32);
    }
    st->n += n;
}

static void check64(const Fn *f, const double *x, long n, Stat *st, double *y, double *yv, int line)
{
    f->f64(x, y, n);
    f->f64v(x, yv, n);
    for (long i = 0; i < n; i++) {
        if (!same64(y[i], yv[i])) {
            if (failures++ < 10)
                printf("%s:%d: %s f64: vector and scalar kernels differ at x=%a: %a vs %a\n",
                       __FILE__, line, f->name, x[i], yv[i], y[i]);
        }
        long double ref = f->ref64(x[i]);
        double e = err64(y[i], ref);
        long double sc = f->absneg && x[i] < 0 ? fabsl(ref) + fabsl(f->ref64(1 - (long double)x[i])) : NAN;
        if (isfinite(sc) && isfinite(y[i]) && isfinite((double)ref)) { /* the terms' ulps */
            double en = (double)(fabsl((long double)y[i] - ref) / ulp64(sc));
            st->negmax = fmax(st->negmax, en);
            e = 0; /* not in the max over x >= 0 */
            if (!(en <= f->absneg) && failures++ < 10)
                printf("%s:%d: %s f64: x=%a: got %a, expected %.21Lg: %.3g ulp of the terms > %g\n",
                       __FILE__, line, f->name, x[i], y[i], ref, en, f->absneg);
        }
        if (e > st->max) {
            st->max = e;
            st->at = x[i];
            st->got = y[i];
            st->want = (double)ref;
        }
        if (!(e <= f->bound64) && failures++ < 10)
            printf("%s:%d: %s f64: x=%a (%.17g): got %a (%.17g), expected %.21Lg: %.3g ulp > %g\n",
                   __FILE__, line, f->name, x[i], x[i], y[i], y[i], ref, e, f->bound64);
    }
    st->n += n;
}

/* ---- inputs ---- */

static uint64_t rng = 0x9E3779B97F4A7C15u;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const double specials[] = {
    0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN, 1, -1, 2, -2, 0.5, -0.5, 1e-10, -1e-10,
    1e-30, -1e-30, 0x1p-25, 0x1p-24, -0x1p-25, 0x1p-54, 0.55, -0.55, 0.5499999, 9, 10, 20, 88.72,
    88.7228, 88.7229, 89, 100, -87.3, -100, -103, -103.9, -104, -110, 709.78, 709.79, 710,
    -745, -745.2, -746, -1000, 1000, 1e30, -1e30, 1e300, -1e300, 0.9999999, 1.0000001,
    -0.9999999, -0.99999994, 0x1p-126, 0x1p-149, 0x1p-1022, 0x1p-1074, 3.4e38, -3.4e38,
    FLT_MAX, -FLT_MAX, DBL_MAX, -DBL_MAX,
};
enum { NSPEC = sizeof specials / sizeof specials[0] };

static void sweep32(const Fn *f, Stat *st, int exhaustive)
{
    float *x = malloc(CHUNK * sizeof *x), *y = malloc(CHUNK * sizeof *y);
    float *yv = malloc(CHUNK * sizeof *yv);
    if (!x || !y || !yv)
        abort();
    long n = 0;
    for (int i = 0; i < NSPEC; i++)
        x[n++] = (float)specials[i];
    check32(f, x, n, st, y, yv, __LINE__);

    /* All bit patterns (strided unless exhaustive). */
    uint64_t stride = exhaustive ? 1 : 1021;
    n = 0;
    for (uint64_t u = next_rand() % stride; u < (UINT64_C(1) << 32); u += stride) {
        uint32_t bits = (uint32_t)u;
        memcpy(&x[n++], &bits, 4);
        if (n == CHUNK) {
            check32(f, x, n, st, y, yv, __LINE__);
            n = 0;
        }
    }
    check32(f, x, n, st, y, yv, __LINE__);

    /* Dense sweeps. */
    double r[2][2] = {{f->lo32, f->hi32}, {f->nlo, f->nhi}};
    for (int k = 0; k < 2; k++) {
        for (long i = 0; i < CHUNK; i++)
            x[i] = (float)(r[k][0] + (r[k][1] - r[k][0]) * (double)i / (CHUNK - 1));
        check32(f, x, CHUNK, st, y, yv, __LINE__);
    }
    /* Small magnitudes, both signs: the relative-accuracy region. */
    for (long i = 0; i < CHUNK; i++) {
        x[i] = (float)ldexp(1.0 + (double)(next_rand() >> 11) * 0x1p-53, -(int)(i % 40) - 1);
        if (i & 1)
            x[i] = -x[i];
    }
    check32(f, x, CHUNK, st, y, yv, __LINE__);
    free(x);
    free(y);
    free(yv);
}

static void sweep64(const Fn *f, Stat *st)
{
    double *x = malloc(CHUNK * sizeof *x), *y = malloc(CHUNK * sizeof *y);
    double *yv = malloc(CHUNK * sizeof *yv);
    if (!x || !y || !yv)
        abort();
    long n = 0;
    for (int i = 0; i < NSPEC; i++)
        x[n++] = specials[i];
    check64(f, x, n, st, y, yv, __LINE__);

    /* Random bit patterns. */
    for (long i = 0; i < CHUNK; i++) {
        uint64_t b = next_rand();
        memcpy(&x[i], &b, 8);
    }
    check64(f, x, CHUNK, st, y, yv, __LINE__);
    /* Log-uniform over all exponents, both signs. */
    for (long i = 0; i < CHUNK; i++) {
        uint64_t b = next_rand();
        int e = (int)(b % 2100) - 1075;
        x[i] = ldexp(1.0 + (double)(next_rand() >> 11) * 0x1p-53, e);
        if (b & (UINT64_C(1) << 40))
            x[i] = -x[i];
    }
    check64(f, x, CHUNK, st, y, yv, __LINE__);
    /* Small magnitudes, both signs. */
    for (long i = 0; i < CHUNK; i++) {
        x[i] = ldexp(1.0 + (double)(next_rand() >> 11) * 0x1p-53, -(int)(i % 70) - 1);
        if (i & 1)
            x[i] = -x[i];
    }
    check64(f, x, CHUNK, st, y, yv, __LINE__);
    /* Dense sweeps, with random low bits. */
    double r[2][2] = {{f->lo64, f->hi64}, {f->nlo, f->nhi}};
    for (int k = 0; k < 2; k++) {
        for (long i = 0; i < CHUNK; i++)
            x[i] = r[k][0] + (r[k][1] - r[k][0]) * ((double)i + (double)(next_rand() >> 11) *
                                                                   0x1p-53) / CHUNK;
        check64(f, x, CHUNK, st, y, yv, __LINE__);
    }
    free(x);
    free(y);
    free(yv);
}

/* exp_shifted is exp bit for bit wherever it is not clamped (x <= 43 /
 * 664): the float bit patterns strided (all with --exhaustive), random
 * doubles below the clamp. */
static void shifted_is_exp(int exhaustive)
{
    float *x = malloc(CHUNK * sizeof *x), *y = malloc(CHUNK * sizeof *y), *e = malloc(CHUNK * sizeof *e);
    double *xd = malloc(CHUNK * sizeof *xd), *yd = malloc(CHUNK * sizeof *yd);
    double *ed = malloc(CHUNK * sizeof *ed);
    if (!x || !y || !e || !xd || !yd || !ed)
        abort();
    uint64_t stride = exhaustive ? 1 : 1021;
    long n = 0, checked = 0;
    for (uint64_t u = next_rand() % stride; u < (UINT64_C(1) << 32); u += stride) {
        uint32_t bits = (uint32_t)u;
        memcpy(&x[n], &bits, 4);
        n += !(x[n] > 43.0f);
        if (n == CHUNK || u + stride >= (UINT64_C(1) << 32)) {
            sg_test_exp_shifted_f32(x, y, n);
            sg_test_exp_f32(x, e, n);
            for (long i = 0; i < n; i++)
                if (!same32(y[i], e[i]) && failures++ < 10)
                    printf("%s:%d: exp_shifted f32: x=%a: got %a, exp gives %a\n", __FILE__, __LINE__,
                           x[i], y[i], e[i]);
            checked += n;
            n = 0;
        }
    }
    for (long i = 0; i < CHUNK; i++) {
        uint64_t b = next_rand();
        xd[i] = -750.0 + 1414.0 * (double)(b >> 11) * 0x1p-53; /* [-750, 664) */
    }
    sg_test_exp_shifted_f64(xd, yd, CHUNK);
    sg_test_exp_f64(xd, ed, CHUNK);
    for (long i = 0; i < CHUNK; i++)
        if (!same64(yd[i], ed[i]) && failures++ < 10)
            printf("%s:%d: exp_shifted f64: x=%a: got %a, exp gives %a\n", __FILE__, __LINE__, xd[i],
                   yd[i], ed[i]);
    printf("exp_shifted is exp bit for bit: %ld f32, %d f64 inputs\n", checked, CHUNK);
    free(x);
    free(y);
    free(e);
    free(xd);
    free(yd);
    free(ed);
}

/* ---- exact special values ---- */

static void expect32(const char *what, KernF k, float x, float want, int line)
{
    float y;
    k(&x, &y, 1);
    if (!(same32(y, want) || (y == want && want != 0))) {
        failures++;
        printf("%s:%d: %s(%a) f32: got %a, expected %a\n", __FILE__, line, what, x, y, want);
    }
}
static void expect64(const char *what, KernD k, double x, double want, int line)
{
    double y;
    k(&x, &y, 1);
    if (!(same64(y, want) || (y == want && want != 0))) {
        failures++;
        printf("%s:%d: %s(%a) f64: got %a, expected %a\n", __FILE__, line, what, x, y, want);
    }
}
#define EXPECT(F, x, want)                                                                    \
    do {                                                                                      \
        expect32(#F, sg_test_##F##_f32, (float)(x), (float)(want), __LINE__);                \
        expect32(#F, sg_testv_##F##_f32, (float)(x), (float)(want), __LINE__);               \
        expect64(#F, sg_test_##F##_f64, (x), (want), __LINE__);                              \
        expect64(#F, sg_testv_##F##_f64, (x), (want), __LINE__);                             \
    } while (0)

static void special_values(void)
{
    EXPECT(exp, -INFINITY, 0.0);
    EXPECT(exp, INFINITY, INFINITY);
    EXPECT(exp, 1e30, INFINITY);
    EXPECT(exp, -1e30, 0.0);
    EXPECT(exp, NAN, NAN);
    EXPECT(exp, 0.0, 1.0);
    EXPECT(exp, -0.0, 1.0);
    EXPECT(expm1, -INFINITY, -1.0);
    EXPECT(expm1, INFINITY, INFINITY);
    EXPECT(expm1, 1e30, INFINITY);
    EXPECT(expm1, NAN, NAN);
    EXPECT(expm1, -0.0, -0.0);
    EXPECT(expm1, 0x1p-149, 0x1p-149);
    EXPECT(log, 0.0, -INFINITY);
    EXPECT(log, -0.0, -INFINITY);
    EXPECT(log, -1.0, NAN);
    EXPECT(log, -INFINITY, NAN);
    EXPECT(log, INFINITY, INFINITY);
    EXPECT(log, NAN, NAN);
    EXPECT(log, 1.0, 0.0);
    EXPECT(log1p, -1.0, -INFINITY);
    EXPECT(log1p, -2.0, NAN);
    EXPECT(log1p, INFINITY, INFINITY);
    EXPECT(log1p, NAN, NAN);
    EXPECT(log1p, -0.0, -0.0);
    EXPECT(log1p, 0x1p-149, 0x1p-149);
    EXPECT(tanh, INFINITY, 1.0);
    EXPECT(tanh, -INFINITY, -1.0);
    EXPECT(tanh, 1e30, 1.0);
    EXPECT(tanh, -1e30, -1.0);
    EXPECT(tanh, -0.0, -0.0);
    EXPECT(tanh, NAN, NAN);
    EXPECT(sigmoid, INFINITY, 1.0);
    EXPECT(sigmoid, -INFINITY, 0.0);
    EXPECT(sigmoid, 1e30, 1.0);
    EXPECT(sigmoid, -1e30, 0.0);
    EXPECT(sigmoid, 0.0, 0.5);
    EXPECT(sigmoid, NAN, NAN);
    EXPECT(softplus, 1000.0, 1000.0);
    EXPECT(softplus, -1000.0, 0.0);
    EXPECT(softplus, INFINITY, INFINITY);
    EXPECT(softplus, -INFINITY, 0.0);
    EXPECT(softplus, 1e30, 1e30);
    EXPECT(softplus, NAN, NAN);
    /* Relative accuracy in the underflowing tail, checked against the
     * references with the ulp bound by the sweeps: just report them. */
    float xs = -100.0f, ys;
    sg_test_sigmoid_f32(&xs, &ys, 1);
    printf("sigmoid(-100) f32 = %a (%.9g), reference %.9g\n", ys, ys, sigmoid_d(-100));
    double xd = 1e-10, yd;
    sg_test_expm1_f64(&xd, &yd, 1);
    printf("expm1(1e-10) f64 = %.17g, reference %.17Lg\n", yd, expm1l(1e-10L));
    sg_test_log1p_f64(&xd, &yd, 1);
    printf("log1p(1e-10) f64 = %.17g, reference %.17Lg\n", yd, log1pl(1e-10L));
}

/* ---- speed ---- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Best of 30 runs over n elements, in ns per element. */
static double best_time(void (*run)(const Fn *, int, const void *, void *, int64_t), const Fn *f,
                        int dbl, const void *x, void *y, int64_t n)
{
    double best = 1e30;
    for (int r = 0; r < 30; r++) {
        double t0 = now();
        run(f, dbl, x, y, n);
        double t = now() - t0;
        if (t < best)
            best = t;
    }
    return best / (double)n * 1e9;
}
static void run_kernel(const Fn *f, int dbl, const void *x, void *y, int64_t n)
{
    if (dbl)
        f->f64((const double *)x, (double *)y, n);
    else
        f->f32((const float *)x, (float *)y, n);
}

/* The scalar-loop kernels (vectorized by LLVM) on 2^20 elements: x in
 * [-10, 10), and (0, 100] for log and log1p. test/codegen/libmvec_bench.c
 * times glibc's libmvec on the same inputs. */
static void bench(void)
{
    enum { N = 1 << 20 };
    float *xf = malloc(N * sizeof *xf), *xlf = malloc(N * sizeof *xlf);
    float *yf = malloc(N * sizeof *yf);
    double *xd = malloc(N * sizeof *xd), *xld = malloc(N * sizeof *xld);
    double *yd = malloc(N * sizeof *yd);
    if (!xf || !xlf || !yf || !xd || !xld || !yd)
        abort();
    for (int i = 0; i < N; i++) {
        xf[i] = -10.0f + 20.0f * (float)i / N;
        xlf[i] = 100.0f * (float)(i + 1) / N;
        xd[i] = xf[i];
        xld[i] = xlf[i];
    }
    printf("speed, 2^20 elements, best of 30 (ns/element):\n");
    printf("  %-8s %8s %8s\n", "", "f32", "f64");
    for (int i = 0; i < NFN; i++) {
        int lg = strncmp(fns[i].name, "log", 3) == 0;
        double t32 = best_time(run_kernel, &fns[i], 0, lg ? xlf : xf, yf, N);
        double t64 = best_time(run_kernel, &fns[i], 1, lg ? xld : xd, yd, N);
        printf("  %-8s %8.3f %8.3f\n", fns[i].name, t32, t64);
    }
    free(xf);
    free(xlf);
    free(yf);
    free(xd);
    free(xld);
    free(yd);
}

int main(int argc, char **argv)
{
    int exhaustive = 0, do_bench = 0;
    const char *only = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--exhaustive") == 0)
            exhaustive = 1;
        else if (strcmp(argv[i], "--bench") == 0)
            do_bench = 1;
        else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
            only = argv[++i];
        else {
            fprintf(stderr, "usage: %s [--exhaustive] [--only NAME] [--bench]\n", argv[0]);
            return 2;
        }
    }
    special_values();
    if (!only || strcmp(only, "exp_shifted") == 0)
        shifted_is_exp(exhaustive);
    for (int i = 0; i < NFN; i++) {
        if (only && strcmp(only, fns[i].name) != 0)
            continue;
        Stat s32 = {0, 0, 0, 0, 0, 0}, s64 = {0, 0, 0, 0, 0, 0};
        sweep32(&fns[i], &s32, exhaustive);
        sweep64(&fns[i], &s64);
        printf("%-8s f32: max %.3f ulp <= %g (x=%.9g got %.9g want %.9g, %ld inputs)\n",
               fns[i].name, s32.max, fns[i].bound32, s32.at, s32.got, s32.want, s32.n);
        printf("%-8s f64: max %.3f ulp <= %g (x=%.17g got %.17g want %.17g, %ld inputs)\n",
               fns[i].name, s64.max, fns[i].bound64, s64.at, s64.got, s64.want, s64.n);
        if (fns[i].absneg)
            printf("%-8s below 0: max %.3f (f32), %.3f (f64) ulp of the terms <= %g\n", fns[i].name,
                   s32.negmax, s64.negmax, fns[i].absneg);
    }
    if (do_bench)
        bench();
    if (failures) {
        printf("FAIL: %d failures\n", failures);
        return 1;
    }
    printf("PASS\n");
    return 0;
}
