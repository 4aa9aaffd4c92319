/* test_gemvz.c: sg_rt_gemmz's matrix-vector products that sum rows of the
 * matrix (m == 1 with B as is, n == 1 with A transposed: the adjoint of
 * x @ w), which skip gemmz's finiteness scan and apply the zero rule row
 * by row (gemv_tmpl.h's gemv_sum_z). Run by gemvz.test.
 *
 * Against a naive loop that leaves out every term with a zero factor, in
 * f32 and f64, with zeros, infinities and NaNs in the vector and in the
 * matrix (a zero factor against inf or NaN must give 0), accumulating or
 * not, at sizes that take the four-row path, the one-row tail, column
 * blocks wider than the kernel's buffer, and the thread pool's split over
 * rows -- whose bits must not depend on the number of threads -- and
 * rows back to back shorter than a vector (the short-row kernel). Prints
 * "FAIL file:line: ..." per failure (rtcheck.h); exits non-zero on any. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rtcheck.h"
#include "sg_runtime.h"
#include "sgrt.h"

static double rnd(void) { return (double)rand() / RAND_MAX * 2 - 1; }

/* x[k], M[k][nn] (row p at M + p * ld), with specials sprinkled in. */
static void fill(double *x, double *mat, int64_t k, int64_t nn, int64_t ld, int specials) {
  for (int64_t p = 0; p < k; p++) {
    x[p] = rnd();
    for (int64_t j = 0; j < ld; j++)
      mat[p * ld + j] = j < nn ? rnd() : NAN; /* padding must not be read */
  }
  if (!specials)
    return;
  for (int64_t p = 0; p < k; p += 7) {
    x[p] = 0; /* a zero row factor against an infinite entry */
    mat[p * ld + (p % nn)] = INFINITY;
  }
  for (int64_t p = 3; p < k; p += 11) {
    x[p] = p % 2 ? INFINITY : -INFINITY; /* against zero entries */
    mat[p * ld + ((p + 1) % nn)] = 0;
  }
  if (k > 5 && nn > 2) {
    x[5] = NAN;
    mat[5 * ld + 1] = 0;
  }
}

static void one_case(int f64, int64_t nn, int64_t k, int acc, int specials, int rowvec, int64_t pad) {
  int64_t ld = nn + pad;
  double *x = malloc(sizeof(double) * (size_t)k), *mat = malloc(sizeof(double) * (size_t)(k * ld));
  double *want = malloc(sizeof(double) * (size_t)nn);
  fill(x, mat, k, nn, ld, specials);
  for (int64_t j = 0; j < nn; j++) {
    double s = acc ? 0.5 : 0;
    for (int64_t p = 0; p < k; p++)
      if (x[p] != 0 && mat[p * ld + j] != 0)
        s += x[p] * mat[p * ld + j];
    want[j] = s;
  }
  double *yd = malloc(sizeof(double) * (size_t)nn);
  float *xf = malloc(sizeof(float) * (size_t)k), *mf = malloc(sizeof(float) * (size_t)(k * ld));
  float *yf = malloc(sizeof(float) * (size_t)nn);
  for (int64_t p = 0; p < k; p++)
    xf[p] = (float)x[p];
  for (int64_t i = 0; i < k * ld; i++)
    mf[i] = (float)mat[i];
  for (int64_t j = 0; j < nn; j++)
    yd[j] = yf[j] = acc ? 0.5f : 1e30f; /* without acc, y is only written */
  /* rowvec: x (1 x k) @ M (k x nn), m == 1; else M^T (nn x k, M read
   * transposed) @ x (k x 1), n == 1, y strided by ldc = 1. */
  if (f64) {
    if (rowvec)
      sg_rt_gemmz_f64(0, 0, 1, nn, k, x, k, mat, ld, yd, nn, acc, 0);
    else
      sg_rt_gemmz_f64(1, 0, nn, 1, k, mat, ld, x, 1, yd, 1, acc, 0);
  } else {
    if (rowvec)
      sg_rt_gemmz_f32(0, 0, 1, nn, k, xf, k, mf, ld, yf, nn, acc, 0);
    else
      sg_rt_gemmz_f32(1, 0, nn, 1, k, mf, ld, xf, 1, yf, 1, acc, 0);
  }
  double tol = f64 ? 1e-12 : 1e-4;
  int64_t bad = -1;
  for (int64_t j = 0; j < nn && bad < 0; j++)
    if (!rt_same(f64 ? yd[j] : yf[j], want[j], tol * sqrt((double)k)))
      bad = j;
  CHECK(bad < 0, "%s %s nn=%lld k=%lld acc=%d specials=%d: y[%lld] = %.9g, want %.9g",
        f64 ? "f64" : "f32", rowvec ? "x@M" : "M^T@x", (long long)nn, (long long)k, acc, specials,
        (long long)bad, bad < 0 ? 0 : f64 ? yd[bad] : yf[bad], bad < 0 ? 0 : want[bad]);
  free(x), free(mat), free(want), free(yd), free(xf), free(mf), free(yf);
}

/* The pool's split over rows (few columns, many rows): 1 and 2 threads. */
static void same_bits_on_threads(int64_t nn) {
  int64_t k = 300000, ld = nn;
  float *x = malloc(sizeof(float) * (size_t)k), *m = malloc(sizeof(float) * (size_t)(k * ld));
  float y1[16], y2[16];
  for (int64_t p = 0; p < k; p++) {
    x[p] = p % 13 ? (float)rnd() : 0;
    for (int64_t j = 0; j < ld; j++)
      m[p * ld + j] = (float)rnd();
  }
  m[13 * ld + 2] = INFINITY; /* x[13] == 0: that term is 0 */
  sg_set_num_threads(1);
  sg_rt_gemmz_f32(1, 0, nn, 1, k, m, ld, x, 1, y1, 1, 0, 0);
  sg_set_num_threads(2);
  sg_rt_gemmz_f32(1, 0, nn, 1, k, m, ld, x, 1, y2, 1, 0, 0);
  size_t bytes = sizeof(float) * (size_t)nn;
  CHECK(!memcmp(y1, y2, bytes) && isfinite(y1[2]),
        "nn=%lld: 1 and 2 threads differ, or the zero rule failed (y[2] = %g)", (long long)nn, y1[2]);
  if (!memcmp(y1, y2, bytes))
    printf("x^T g over 300000 rows of %lld: 1 and 2 threads agree bit for bit\n", (long long)nn);
  free(x), free(m);
}

int main(void) {
  srand(7);
  static const int64_t nns[] = {1, 2, 16, 17, 33, 600};
  static const int64_t ks[] = {1, 3, 4, 5, 9, 64, 1001};
  for (int f64 = 0; f64 < 2; f64++)
    for (size_t a = 0; a < sizeof nns / sizeof *nns; a++)
      for (size_t b = 0; b < sizeof ks / sizeof *ks; b++)
        for (int acc = 0; acc < 2; acc++)
          for (int sp = 0; sp < 2; sp++)
            for (int rv = 0; rv < 2; rv++)
              one_case(f64, nns[a], ks[b], acc, sp, rv, 3);
  /* rows back to back and shorter than a vector: AVX-512's short-row
   * kernel in 16-row steps, those with a zero-rule factor and the tail
   * row by row */
  static const int64_t short_nns[] = {1, 3, 4, 7, 10, 15};
  static const int64_t short_ks[] = {1, 17, 64, 1001};
  for (int f64 = 0; f64 < 2; f64++)
    for (size_t a = 0; a < sizeof short_nns / sizeof *short_nns; a++)
      for (size_t b = 0; b < sizeof short_ks / sizeof *short_ks; b++)
        for (int acc = 0; acc < 2; acc++)
          for (int sp = 0; sp < 2; sp++)
            for (int rv = 0; rv < 2; rv++)
              one_case(f64, short_nns[a], short_ks[b], acc, sp, rv, 0);
  one_case(0, 16, 40000, 0, 1, 0, 3); /* the pool's split over rows */
  one_case(1, 8, 40000, 1, 1, 0, 3);
  one_case(0, 5, 40000, 1, 1, 0, 0);
  same_bits_on_threads(16);
  same_bits_on_threads(4);
  printf("%s: %d checks, %d failures\n", nfails ? "FAILED" : "PASSED", nchecks, nfails);
  return nfails != 0;
}
