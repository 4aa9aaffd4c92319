/* test_gemmz.c: sg_rt_gemmz's matrix-matrix products, under the zero rule
 * (a term with a zero factor is 0 even against inf or NaN), on both of its
 * ways to decide between the plain GEMM and the direct loop: scanning C
 * after the product (C smaller than A and B together: a long k) or A and B
 * before it (a short k, or accumulating into C). Each case against a naive
 * loop that leaves out zero factors, with zeros, infinities and NaNs on
 * both sides, and without them; large enough for the scans to run on the
 * thread pool, on 1, 2 and 3 threads. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "rtcheck.h"
#include "sg_runtime.h"
#include "sgrt.h"

static double rnd(void) { return (double)rand() / RAND_MAX * 2 - 1; }

/* C[m][n] (+)= A[m][k] B[k][n], both stored row-major (no transposes: the
 * decision does not depend on them). specials 1: A has zeros where B has
 * inf, an inf where B has zeros, and one NaN against a zero; specials 2:
 * one NaN in A's last row, against a zero row of B. Either way the right
 * answer is finite everywhere. */
static void one_case(int f64, int64_t m, int64_t n, int64_t k, int acc, int specials) {
  double *a = malloc(sizeof(double) * (size_t)(m * k)), *b = malloc(sizeof(double) * (size_t)(k * n));
  double *c0 = malloc(sizeof(double) * (size_t)(m * n)), *want = malloc(sizeof(double) * (size_t)(m * n));
  for (int64_t i = 0; i < m * k; i++)
    a[i] = rnd();
  for (int64_t i = 0; i < k * n; i++)
    b[i] = rnd();
  for (int64_t i = 0; i < m * n; i++)
    c0[i] = rnd();
  if (specials == 1)
    for (int64_t p = 0; p < k; p++) {
      int64_t i = p % m, j = p % n;
      if (p % 3 == 0) { /* a zero in A against an inf in B */
        for (int64_t r = 0; r < m; r++)
          a[r * k + p] = 0;
        b[p * n + j] = INFINITY;
      } else if (p % 3 == 1) { /* an inf or NaN in A against a zero row of B */
        a[i * k + p] = p % 2 ? NAN : -INFINITY;
        for (int64_t q = 0; q < n; q++)
          b[p * n + q] = 0;
      }
    }
  if (specials == 2 && k > 1) { /* only a NaN in A's last row, against a zero row of B:
                                 * the last chunk of a parallel scan must see it */
    a[(m - 1) * k + 1] = NAN;
    for (int64_t q = 0; q < n; q++)
      b[n + q] = 0;
  }
  for (int64_t i = 0; i < m; i++)
    for (int64_t j = 0; j < n; j++) {
      double s = acc ? c0[i * n + j] : 0;
      for (int64_t p = 0; p < k; p++)
        if (a[i * k + p] != 0 && b[p * n + j] != 0)
          s += a[i * k + p] * b[p * n + j];
      want[i * n + j] = s;
    }
  int64_t bad = -1;
  double got = 0;
  if (f64) {
    double *c = malloc(sizeof(double) * (size_t)(m * n));
    memcpy(c, c0, sizeof(double) * (size_t)(m * n));
    sg_rt_gemmz_f64(0, 0, m, n, k, a, k, b, n, c, n, acc, 0);
    for (int64_t e = 0; e < m * n && bad < 0; e++)
      if (!rt_same(c[e], want[e], 1e-12 * (double)k))
        bad = e, got = c[e];
    free(c);
  } else {
    float *af = malloc(sizeof(float) * (size_t)(m * k)), *bf = malloc(sizeof(float) * (size_t)(k * n));
    float *c = malloc(sizeof(float) * (size_t)(m * n));
    for (int64_t i = 0; i < m * k; i++)
      af[i] = (float)a[i];
    for (int64_t i = 0; i < k * n; i++)
      bf[i] = (float)b[i];
    for (int64_t i = 0; i < m * n; i++)
      c[i] = (float)c0[i];
    sg_rt_gemmz_f32(0, 0, m, n, k, af, k, bf, n, c, n, acc, 0);
    for (int64_t e = 0; e < m * n && bad < 0; e++)
      if (!rt_same(c[e], want[e], 1e-5 * (double)k))
        bad = e, got = c[e];
    free(af), free(bf), free(c);
  }
  CHECK(bad < 0, "%s %lldx%lldx%lld acc=%d specials=%d: c[%lld] = %.9g, want %.9g",
        f64 ? "f64" : "f32", (long long)m, (long long)n, (long long)k, acc, specials,
        (long long)bad, got, bad >= 0 ? want[bad] : 0.0);
  free(a), free(b), free(c0), free(want);
}

int main(void) {
  /* m x n against k (m + n): the first two scan C, the others A and B */
  static const int64_t shapes[][3] = {{3, 4, 500}, {17, 33, 64}, {50, 60, 2}, {40, 40, 16}};
  for (int f64 = 0; f64 <= 1; f64++)
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
      for (int acc = 0; acc <= 1; acc++)
        for (int specials = 0; specials <= 1; specials++)
          one_case(f64, shapes[s][0], shapes[s][1], shapes[s][2], acc, specials);
  /* Scans of 64K elements or more run on the pool in chunks of rows: C
   * after the product (256x300, k = 600), A and B before it (400x400,
   * k = 200), on 1, 2 and 3 threads. */
  static const int64_t big[][3] = {{256, 300, 600}, {400, 400, 200}};
  for (int threads = 1; threads <= 3; threads++) {
    sg_set_num_threads(threads);
    for (size_t s = 0; s < sizeof big / sizeof *big; s++)
      for (int specials = 0; specials <= 2; specials++)
        one_case(0, big[s][0], big[s][1], big[s][2], 0, specials);
  }
  sg_set_num_threads(0);
  /* a sum that overflows with finite factors: inf either way */
  double a[2] = {1e308, 1e308}, b[2] = {10, 10}, c = 0;
  sg_rt_gemmz_f64(0, 0, 1, 1, 2, a, 2, b, 1, &c, 1, 0, 0);
  CHECK(isinf(c) && c > 0, "overflow: c = %g, want +inf", c);
  printf("PASSED: %d checks, %d failures\n", nchecks, nfails);
  return nfails != 0;
}
