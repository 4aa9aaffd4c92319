/* libmvec_bench.c -- the glibc libmvec baseline for math_accuracy --bench.
 *
 * Times plain C loops over the same inputs as math_accuracy's --bench, with
 * expf/tanhf/logf/expm1f/log1pf (and the double versions) declared
 * __attribute__((simd("notinbranch"))) so that GCC vectorizes them into
 * calls to glibc's libmvec (_ZGVeN16v_expf etc.). sigmoid and softplus are
 * composed the usual way: 1/(1+exp(-x)) and max(x,0) + log1p(exp(-|x|)).
 * Not part of the lit suite (it needs GCC and libmvec); build by hand:
 *
 *   gcc -std=gnu11 -O3 -march=native -fno-math-errno \
 *       -mprefer-vector-width=512 test/codegen/libmvec_bench.c \
 *       -o libmvec_bench -lmvec -lm
 *
 * (-fno-math-errno is needed: otherwise GCC keeps the errno-setting scalar
 * calls for all but tanh) and check with objdump -d that the loops call
 * _ZGVeN16v_expf and friends.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define SIMD __attribute__((simd("notinbranch")))
float expf(float) SIMD;
float expm1f(float) SIMD;
float logf(float) SIMD;
float log1pf(float) SIMD;
float tanhf(float) SIMD;
double exp(double) SIMD;
double expm1(double) SIMD;
double log(double) SIMD;
double log1p(double) SIMD;
double tanh(double) SIMD;

#define LOOPS(T, S, EXP, EXPM1, LOG, LOG1P, TANH)                                             \
    __attribute__((noinline)) static void exp_##S(const T *x, T *y, int64_t n)                \
    {                                                                                         \
        for (int64_t i = 0; i < n; i++)                                                       \
            y[i] = EXP(x[i]);                                                                 \
    }                                                                                         \
    __attribute__((noinline)) static void expm1_##S(const T *x, T *y, int64_t n)              \
    {                                                                                         \
        for (int64_t i = 0; i < n; i++)                                                       \
            y[i] = EXPM1(x[i]);                                                               \
    }                                                                                         \
    __attribute__((noinline)) static void log_##S(const T *x, T *y, int64_t n)                \
    {                                                                                         \
        for (int64_t i = 0; i < n; i++)                                                       \
            y[i] = LOG(x[i]);                                                                 \
    }                                                                                         \
    __attribute__((noinline)) static void log1p_##S(const T *x, T *y, int64_t n)              \
    {                                                                                         \
        for (int64_t i = 0; i < n; i++)                                                       \
            y[i] = LOG1P(x[i]);                                                               \
    }                                                                                         \
    __attribute__((noinline)) static void tanh_##S(const T *x, T *y, int64_t n)               \
    {                                                                                         \
        for (int64_t i = 0; i < n; i++)                                                       \
            y[i] = TANH(x[i]);                                                                \
    }                                                                                         \
    __attribute__((noinline)) static void sigmoid_##S(const T *x, T *y, int64_t n)            \
    {                                                                                         \
        for (int64_t i = 0; i < n; i++)                                                       \
            y[i] = (T)1 / ((T)1 + EXP(-x[i]));                                                \
    }                                                                                         \
    __attribute__((noinline)) static void softplus_##S(const T *x, T *y, int64_t n)           \
    {                                                                                         \
        for (int64_t i = 0; i < n; i++) {                                                     \
            T a = x[i] < 0 ? -x[i] : x[i];                                                    \
            y[i] = (x[i] > 0 ? x[i] : (T)0) + LOG1P(EXP(-a));                                 \
        }                                                                                     \
    }
LOOPS(float, f32, expf, expm1f, logf, log1pf, tanhf)
LOOPS(double, f64, exp, expm1, log, log1p, tanh)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

enum { N = 1 << 20, REPS = 30 };

#define BEST(fn, x, y)                                                                        \
    ({                                                                                        \
        double best_ = 1e30;                                                                  \
        for (int r_ = 0; r_ < REPS; r_++) {                                                   \
            double t0_ = now();                                                               \
            fn(x, y, N);                                                                      \
            double t_ = now() - t0_;                                                          \
            if (t_ < best_)                                                                   \
                best_ = t_;                                                                   \
        }                                                                                     \
        best_ / N * 1e9;                                                                      \
    })

int main(void)
{
    float *xf = malloc(N * sizeof *xf), *xlf = malloc(N * sizeof *xlf);
    float *yf = malloc(N * sizeof *yf);
    double *xd = malloc(N * sizeof *xd), *xld = malloc(N * sizeof *xld);
    double *yd = malloc(N * sizeof *yd);
    if (!xf || !xlf || !yf || !xd || !xld || !yd)
        abort();
    /* The inputs of math_accuracy --bench. */
    for (int i = 0; i < N; i++) {
        xf[i] = -10.0f + 20.0f * (float)i / N;
        xlf[i] = 100.0f * (float)(i + 1) / N;
        xd[i] = xf[i];
        xld[i] = xlf[i];
    }
    printf("libmvec, 2^20 elements, best of %d (ns/element):\n", REPS);
    printf("  %-8s %8s %8s\n", "", "f32", "f64");
    printf("  %-8s %8.3f %8.3f\n", "exp", BEST(exp_f32, xf, yf), BEST(exp_f64, xd, yd));
    printf("  %-8s %8.3f %8.3f\n", "expm1", BEST(expm1_f32, xf, yf), BEST(expm1_f64, xd, yd));
    printf("  %-8s %8.3f %8.3f\n", "log", BEST(log_f32, xlf, yf), BEST(log_f64, xld, yd));
    printf("  %-8s %8.3f %8.3f\n", "log1p", BEST(log1p_f32, xlf, yf), BEST(log1p_f64, xld, yd));
    printf("  %-8s %8.3f %8.3f\n", "tanh", BEST(tanh_f32, xf, yf), BEST(tanh_f64, xd, yd));
    printf("  %-8s %8.3f %8.3f\n", "sigmoid", BEST(sigmoid_f32, xf, yf), BEST(sigmoid_f64, xd, yd));
    printf("  %-8s %8.3f %8.3f\n", "softplus", BEST(softplus_f32, xf, yf),
           BEST(softplus_f64, xd, yd));
    free(xf);
    free(xlf);
    free(yf);
    free(xd);
    free(xld);
    free(yd);
    return 0;
}
