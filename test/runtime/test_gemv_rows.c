/* test_gemv_rows.c: x @ v with a matrix x of many short rows (the forward
 * product of x @ w), whose dot products are reduced VL rows at a time on
 * AVX-512 (gemv_tmpl.h's dot_rows). Each row's result must have exactly
 * the bits of the one-row dot the last, leftover row of the product takes:
 * a 17-row product whose row 16 is a copy of row r gives out[16] == out[r]
 * bit for bit, for every r < 16 and every row length from 1 to 80 (vector
 * parts, scalar tails, both), in f32 and f64, with inf and NaN in some
 * rows. And the row blocks of a fused pair (codegen/cg_gemvpair.c):
 * sg_rt_gemv_rows gives sg_rt_gemm's bits, sg_rt_gemv_acc adds the rows
 * weighted by g under the zero rule (rows whose g is 0 hold NaN and inf),
 * against a sum in f64, with rows in fours, with tails, and at d = VL,
 * with zero factors every fifth row, once mid-way through 16 rows, or never,
 * for every kernel variant this CPU has (generic, AVX2, AVX-512).
 * Run by gemv_rows.test. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rtcheck.h"
#include "sg_runtime.h"
#include "rt_internal.h"
#include "sgrt.h"

static double rnd(void) { return (double)rand() / RAND_MAX * 2 - 1; }

#define ROWS_CASE(T, GEMM, SUF)                                                                  \
  static void rows_case_##SUF(int64_t d, int specials) {                                         \
    T x[17 * 80], v[80], out[17];                                                                \
    for (int64_t j = 0; j < d; j++)                                                              \
      v[j] = (T)rnd();                                                                           \
    for (int64_t i = 0; i < 16 * d; i++)                                                         \
      x[i] = (T)rnd();                                                                           \
    if (specials) {                                                                              \
      x[3 * d] = INFINITY;                                                                       \
      x[5 * d + d / 2] = NAN;                                                                    \
      x[7 * d] = INFINITY, x[7 * d + d - 1] = -INFINITY;                                         \
    }                                                                                            \
    for (int r = 0; r < 16; r++) {                                                               \
      memcpy(x + 16 * d, x + r * d, sizeof(T) * (size_t)d);                                      \
      GEMM(0, 0, 17, 1, d, x, d, v, 1, out, 1, 0, 0);                                             \
      CHECK(memcmp(&out[16], &out[r], sizeof(T)) == 0 || (isnan(out[16]) && isnan(out[r])),     \
            #T " d=%lld row %d: %.9g (16 rows at once) != %.9g (alone)", (long long)d, r,       \
            (double)out[r], (double)out[16]);                                                    \
    }                                                                                            \
  }

ROWS_CASE(float, sg_rt_gemm_f32, f32)
ROWS_CASE(double, sg_rt_gemm_f64, f64)

/* A block of rows through the pair's entry points against the products. */
#define PAIR_CASE(T, SUF)                                                                        \
  static void pair_case_##SUF(int isa, int64_t rows, int64_t d, int64_t zero_at) {              \
    T *x = malloc(sizeof(T) * (size_t)(rows * d)), *v = malloc(sizeof(T) * (size_t)d);           \
    T *z1 = malloc(sizeof(T) * (size_t)rows), *z2 = malloc(sizeof(T) * (size_t)rows);            \
    T *g = malloc(sizeof(T) * (size_t)rows);                                                     \
    T *a1 = malloc(sizeof(T) * (size_t)d), *a2 = malloc(sizeof(T) * (size_t)d);                  \
    for (int64_t j = 0; j < d; j++)                                                              \
      v[j] = (T)rnd();                                                                           \
    for (int64_t i = 0; i < rows * d; i++)                                                       \
      x[i] = (T)rnd();                                                                           \
    for (int64_t i = 0; i < rows; i++)                                                           \
      g[i] = (zero_at < 0 ? i % 5 == 2 : i == zero_at) ? 0 : (T)rnd();                           \
    if (zero_at < 0 && rows > 2)                                                                 \
      x[2 * d] = NAN; /* g[2] == 0: the zero rule leaves the row out */                          \
    if (zero_at < 0 && rows > 7)                                                                 \
      x[7 * d + d - 1] = INFINITY; /* g[7] == 0 too */                                           \
    if (zero_at >= 0 && zero_at < rows) /* the only zero factor, mid-way */                      \
      x[zero_at * d] = NAN, x[zero_at * d + d - 1] = -INFINITY;                                  \
    sg_rt_gemm_##SUF##_isa(isa, 0, 0, rows, 1, d, x, d, v, 1, z1, 1, 0, 0);                         \
    CHECK(sg_rt_gemv_rows_##SUF##_isa(isa, rows, d, x, d, v, z2, (int)(rows & 1)) == 0,          \
          "gemv_rows variant %d missing", isa);                                                  \
    /* (one row: sg_rt_gemm takes its row-vector path, another order) */                      \
    for (int64_t i = 0; i < rows; i++)                                                           \
      CHECK(rows == 1 ? fabs((double)z1[i] - (double)z2[i]) <= 1e-5 * (1 + fabs((double)z1[i]))  \
                      : memcmp(&z1[i], &z2[i], sizeof(T)) == 0,                                  \
            #T " isa %d rows=%lld d=%lld: gemv_rows[%lld] %.9g != %.9g", isa, (long long)rows,    \
            (long long)d, (long long)i, (double)z2[i], (double)z1[i]);                           \
    /* the zero rule, in f64: terms with a zero factor left out */                             \
    for (int64_t j = 0; j < d; j++) {                                                            \
      double want = 0.5, mag = 0; /* acc starts at 0.5 */                                        \
      for (int64_t i = 0; i < rows; i++)                                                         \
        if (g[i] != 0 && x[i * d + j] != 0) {                                                    \
          want += (double)g[i] * (double)x[i * d + j];                                           \
          mag += fabs((double)g[i] * (double)x[i * d + j]);                                      \
        }                                                                                        \
      a1[j] = (T)want;                                                                           \
      a2[j] = (T)(1e-6 * (1 + mag)); /* (the tolerance, for a moment) */                         \
    }                                                                                            \
    T *tol = a2;                                                                                 \
    T *got = malloc(sizeof(T) * (size_t)d);                                                      \
    for (int64_t j = 0; j < d; j++)                                                              \
      got[j] = 0.5;                                                                              \
    sg_rt_gemv_acc_##SUF##_isa(isa, rows, d, g, x, d, got, 1);                                   \
    for (int64_t j = 0; j < d; j++)                                                              \
      CHECK(isfinite(got[j]) && fabs((double)got[j] - (double)a1[j]) <= (double)tol[j] *         \
                                     (sizeof(T) == 4 ? 10 : 1e-6),                               \
            #T " isa %d rows=%lld d=%lld: gemv_acc[%lld] = %.9g, want %.9g (zero rule)", isa,     \
            (long long)rows, (long long)d, (long long)j, (double)got[j], (double)a1[j]);         \
    free(got);                                                                                   \
    free(x), free(v), free(z1), free(z2), free(g), free(a1), free(a2);                           \
  }

PAIR_CASE(float, f32)
PAIR_CASE(double, f64)

int main(void) {
  for (int64_t d = 1; d <= 80; d++)
    for (int sp = 0; sp < 2; sp++) {
      rows_case_f32(d, sp);
      rows_case_f64(d, sp);
    }
  /* every variant up to the one this CPU runs (generic, AVX2, AVX-512):
   * d = 2, 4, 8, 16 are one vector's width in one of them (their rows back
   * to back take gemv_acc's contiguous path), 1, 2, 4, 7 and 8 rows
   * shorter than AVX-512's vector (its short-row kernels: permutes for
   * powers of two, a transpose otherwise), 48 and 64 several vectors in each
   * (accumulators in registers) */
  int64_t rows[] = {1, 3, 4, 17, 256, 1000};
  int64_t ds[] = {1, 2, 4, 7, 8, 16, 33, 48, 64, 600};
  for (int isa = SG_RT_ISA_GENERIC; isa <= sg_rt_gemm_isa(); isa++) {
    for (int a = 0; a < 6; a++)
      for (int b = 0; b < 10; b++) {
        pair_case_f32(isa, rows[a], ds[b], -1);
        pair_case_f64(isa, rows[a], ds[b], -1);
        /* runs of nonzero factors (gemv_acc's 16-row steps at d = VL), the
         * one zero in the middle of a step, or none */
        for (int64_t z = 37; z <= 1000; z += 963) {
          pair_case_f32(isa, rows[a], ds[b], z);
          pair_case_f64(isa, rows[a], ds[b], z);
        }
      }
    printf("pair kernels: variant %d checked\n", isa);
  }
  printf("PASSED: %d checks, %d failures\n", nchecks, nfails);
  return nfails != 0;
}
