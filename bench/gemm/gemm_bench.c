/* gemm_bench.c: micro-benchmark of the runtime's sg_rt_gemm_f32/f64 (not
 * part of the test suite). Compares, in GFLOP/s on one thread:
 *   sgrt        sg_rt_gemm_* as generated code calls it (CPU dispatch)
 *   sgrt-avx2 / sgrt-generic   the other kernel variants, forced
 *   blocked     a straightforward cache-blocked i-k-j matmul, the kind an
 *               expert writes by hand; transposed operands are first copied
 *               (that copy is timed)
 *   naive       the plain i-k-j loop
 * Build and run: sh bench/gemm/run.sh (compiles this file with -O3
 * -march=native so the baselines get every instruction the CPU has). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rt_internal.h"
#include "sgrt.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- baselines (row-major, C = op(A) op(B), no accumulate) ---- */

static void naive(int64_t m, int64_t n, int64_t k, const float *a,
                  const float *b, float *c) {
  memset(c, 0, (size_t)(m * n) * sizeof *c);
  for (int64_t i = 0; i < m; i++)
    for (int64_t p = 0; p < k; p++) {
      float x = a[i * k + p];
      for (int64_t j = 0; j < n; j++)
        c[i * n + j] += x * b[p * n + j];
    }
}

/* Blocked for the caches (a BK x BJ panel of B stays in L2) and for the
 * registers: four rows of C share every load of B, and the j loop is left
 * to the auto-vectorizer (-O3 -march=native gives AVX-512 FMAs). */
enum { BI = 64, BK = 256, BJ = 256 };
static void blocked_nn(int64_t m, int64_t n, int64_t k, const float *a,
                       const float *b, float *c) {
  memset(c, 0, (size_t)(m * n) * sizeof *c);
  for (int64_t jj = 0; jj < n; jj += BJ) {
    int64_t je = jj + BJ < n ? jj + BJ : n;
    for (int64_t kk = 0; kk < k; kk += BK) {
      int64_t ke = kk + BK < k ? kk + BK : k;
      for (int64_t ii = 0; ii < m; ii += BI) {
        int64_t ie = ii + BI < m ? ii + BI : m;
        int64_t i = ii;
        for (; i + 4 <= ie; i += 4) {
          float *restrict c0 = c + i * n, *restrict c1 = c0 + n,
                          *restrict c2 = c1 + n, *restrict c3 = c2 + n;
          for (int64_t p = kk; p < ke; p++) {
            float x0 = a[i * k + p], x1 = a[(i + 1) * k + p],
                  x2 = a[(i + 2) * k + p], x3 = a[(i + 3) * k + p];
            const float *restrict bp = b + p * n;
            for (int64_t j = jj; j < je; j++) {
              float y = bp[j];
              c0[j] += x0 * y;
              c1[j] += x1 * y;
              c2[j] += x2 * y;
              c3[j] += x3 * y;
            }
          }
        }
        for (; i < ie; i++) {
          float *restrict ci = c + i * n;
          for (int64_t p = kk; p < ke; p++) {
            float x = a[i * k + p];
            const float *restrict bp = b + p * n;
            for (int64_t j = jj; j < je; j++)
              ci[j] += x * bp[j];
          }
        }
      }
    }
  }
}

static float *transpose(const float *x, int64_t rows, int64_t cols) {
  float *t = malloc((size_t)(rows * cols) * sizeof *t);
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++)
      t[j * rows + i] = x[i * cols + j];
  return t;
}

/* op(A) is m x k, op(B) is k x n; a, b are stored as the flags say. */
static void blocked(int ta, int tb, int64_t m, int64_t n, int64_t k,
                    const float *a, const float *b, float *c) {
  float *at = ta ? transpose(a, k, m) : NULL, *bt = tb ? transpose(b, n, k) : NULL;
  blocked_nn(m, n, k, ta ? at : a, tb ? bt : b, c);
  free(at);
  free(bt);
}

static void naive_t(int ta, int tb, int64_t m, int64_t n, int64_t k,
                    const float *a, const float *b, float *c) {
  float *at = ta ? transpose(a, k, m) : NULL, *bt = tb ? transpose(b, n, k) : NULL;
  naive(m, n, k, ta ? at : a, tb ? bt : b, c);
  free(at);
  free(bt);
}

/* ---- timing ---- */

typedef struct shape {
  const char *name;
  int ta, tb;
  int64_t m, n, k;
} shape;

enum { V_SGRT, V_AVX2, V_GENERIC, V_BLOCKED, V_NAIVE, V_SGRT64, NV };
static const char *vname[NV] = {"sgrt",    "sgrt-avx2", "sgrt-generic",
                                "blocked", "naive",     "sgrt f64"};

static void run(int v, const shape *s, const float *a, const float *b,
                float *c, const double *ad, const double *bd, double *cd) {
  int64_t lda = s->ta ? s->m : s->k, ldb = s->tb ? s->k : s->n;
  switch (v) {
  case V_SGRT:
    sg_rt_gemm_f32(s->ta, s->tb, s->m, s->n, s->k, a, lda, b, ldb, c, s->n, 0, 0);
    break;
  case V_AVX2:
    sg_rt_gemm_f32_isa(SG_RT_ISA_AVX2, s->ta, s->tb, s->m, s->n, s->k, a, lda,
                       b, ldb, c, s->n, 0, 0);
    break;
  case V_GENERIC:
    sg_rt_gemm_f32_isa(SG_RT_ISA_GENERIC, s->ta, s->tb, s->m, s->n, s->k, a,
                       lda, b, ldb, c, s->n, 0, 0);
    break;
  case V_BLOCKED:
    blocked(s->ta, s->tb, s->m, s->n, s->k, a, b, c);
    break;
  case V_NAIVE:
    naive_t(s->ta, s->tb, s->m, s->n, s->k, a, b, c);
    break;
  case V_SGRT64:
    sg_rt_gemm_f64(s->ta, s->tb, s->m, s->n, s->k, ad, lda, bd, ldb, cd, s->n,
                   0, 0);
    break;
  }
}

int main(int argc, char **argv) {
  double min_time = argc > 1 ? atof(argv[1]) : 0.25;
  static const shape shapes[] = {
      {"16^3", 0, 0, 16, 16, 16},
      {"32^3", 0, 0, 32, 32, 32},
      {"64^3", 0, 0, 64, 64, 64},
      {"100^3 A B^T", 0, 1, 100, 100, 100},
      {"128^3", 0, 0, 128, 128, 128},
      {"256^3", 0, 0, 256, 256, 256},
      {"512^3", 0, 0, 512, 512, 512},
      {"1024^3", 0, 0, 1024, 1024, 1024},
      {"1024^3 A^T B", 1, 0, 1024, 1024, 1024},
      {"1024^3 A B^T", 0, 1, 1024, 1024, 1024},
      {"1024^3 A^T B^T", 1, 1, 1024, 1024, 1024},
      {"mlp X W  1024x256@256x128", 0, 0, 1024, 128, 256},
      {"mlp X^T G  (256x1024@1024x128)", 1, 0, 256, 128, 1024},
      {"mlp G W^T  (1024x128@128x256)", 0, 1, 1024, 256, 128},
      {"gemv 1024x1024 @ 1024x1", 0, 0, 1024, 1, 1024},
      {"gemv^T 1x1024 @ 1024x1024", 0, 0, 1, 1024, 1024},
  };
  printf("%-34s", "GFLOP/s");
  for (int v = 0; v < NV; v++)
    printf(" %12s", vname[v]);
  printf("\n");
  for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
    const shape *s = &shapes[si];
    size_t na = (size_t)(s->m * s->k), nb = (size_t)(s->k * s->n),
           nc = (size_t)(s->m * s->n);
    float *a = malloc(na * sizeof *a), *b = malloc(nb * sizeof *b),
          *c = malloc(nc * sizeof *c);
    double *ad = malloc(na * sizeof *ad), *bd = malloc(nb * sizeof *bd),
           *cd = malloc(nc * sizeof *cd);
    for (size_t i = 0; i < na; i++)
      ad[i] = a[i] = (float)((i * 7919 % 1000) / 500.0 - 1.0);
    for (size_t i = 0; i < nb; i++)
      bd[i] = b[i] = (float)((i * 104729 % 1000) / 500.0 - 1.0);
    printf("%-34s", s->name);
    for (int v = 0; v < NV; v++) {
      double flops = 2.0 * (double)s->m * (double)s->n * (double)s->k;
      if (v == V_NAIVE && flops > 3e9) { /* too slow to bother */
        printf(" %12s", "-");
        continue;
      }
      double best = 1e30, total = 0;
      int reps = 0;
      run(v, s, a, b, c, ad, bd, cd); /* warm up */
      while (total < min_time || reps < 3) {
        double t0 = now();
        run(v, s, a, b, c, ad, bd, cd);
        double t = now() - t0;
        total += t;
        reps++;
        if (t < best)
          best = t;
      }
      printf(" %12.1f", flops / best * 1e-9);
      fflush(stdout);
    }
    printf("\n");
    free(a);
    free(b);
    free(c);
    free(ad);
    free(bd);
    free(cd);
  }
  return 0;
}
