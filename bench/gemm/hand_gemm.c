/* hand_gemm.c: the expert baselines' GEMM (bench/hand/gemm.c) against the
 * runtime's sg_rt_gemm_f32 on the shapes of bench W1, W4 and the RNN, one
 * thread, alternated in one process: per shape the median of the rounds'
 * time ratios hand/runtime (below 1: the hand GEMM is faster), its GFLOP/s
 * and the largest difference of the two results. Built and run by
 * bench/gemm/run.sh. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../hand/gemm.h"
#include "sgrt.h"

void sg_set_num_threads(int);

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *random_floats(int64_t n) {
  float *p = NULL;
  if (posix_memalign((void **)&p, 64, (size_t)n * sizeof(float) + 64) != 0)
    exit(2);
  for (int64_t i = 0; i < n; i++)
    p[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  return p;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(void) {
  sg_set_num_threads(1);
  static const struct {
    const char *what;
    int ta, tb;
    int64_t m, n, k;
    int beta;
  } s[] = {
      {"W1 x w", 0, 0, 256, 1000, 512, 0},     {"W1 x^T dz", 1, 0, 512, 1000, 256, 0},
      {"W4 x w1", 0, 0, 64, 256, 784, 0},      {"W4 hid w2", 0, 0, 64, 10, 256, 0},
      {"W4 hid^T dz", 1, 0, 256, 10, 64, 0},   {"W4 dz w2^T", 0, 1, 64, 256, 10, 0},
      {"W4 x^T dh", 1, 0, 784, 256, 64, 0},    {"RNN h V", 0, 0, 32, 1000, 256, 1},
      {"RNN [x h] [U; W]", 0, 0, 32, 256, 384, 1}, {"RNN dl V^T", 0, 1, 32, 256, 1000, 0},
      {"RNN dV += h^T dl", 1, 0, 256, 1000, 32, 1}, {"RNN dW += h^T da", 1, 0, 256, 256, 32, 1},
      {"odd sizes", 0, 0, 37, 45, 29, 1},      {"odd, both transposed", 1, 1, 13, 70, 33, 0}};
  printf("%-22s %-22s %8s %10s %9s\n", "product", "ta tb m n k beta", "hand/rt", "hand GF/s",
         "max diff");
  for (unsigned q = 0; q < sizeof s / sizeof s[0]; q++) {
    int ta = s[q].ta, tb = s[q].tb, beta = s[q].beta;
    int64_t m = s[q].m, n = s[q].n, k = s[q].k, lda = ta ? m : k, ldb = tb ? k : n;
    float *a = random_floats(m * k), *b = random_floats(k * n), *c1 = random_floats(m * n);
    float *c2 = random_floats(m * n);
    for (int64_t i = 0; i < m * n; i++)
      c2[i] = c1[i];
    hg_gemm(ta, tb, m, n, k, a, lda, b, ldb, c1, n, beta);
    sg_rt_gemm_f32(ta, tb, m, n, k, a, lda, b, ldb, c2, n, beta, 0);
    double diff = 0;
    for (int64_t i = 0; i < m * n; i++)
      diff = fmax(diff, fabs((double)c1[i] - (double)c2[i]));
    enum { R = 31 };
    double th[R], ratio[R];
    int iters = (int)(4e6 / (double)(m * n * k)) + 1;
    for (int r = 0; r < R; r++) {
      double t0 = now();
      for (int i = 0; i < iters; i++)
        hg_gemm(ta, tb, m, n, k, a, lda, b, ldb, c1, n, beta);
      double t1 = now();
      for (int i = 0; i < iters; i++)
        sg_rt_gemm_f32(ta, tb, m, n, k, a, lda, b, ldb, c2, n, beta, 0);
      th[r] = (t1 - t0) / iters, ratio[r] = (t1 - t0) / (now() - t1);
    }
    qsort(th, R, sizeof *th, cmp);
    qsort(ratio, R, sizeof *ratio, cmp);
    char shape[64];
    snprintf(shape, sizeof shape, "%d %d %lld %lld %lld %d", ta, tb, (long long)m, (long long)n,
             (long long)k, beta);
    printf("%-22s %-22s %8.2f %10.1f %9.1e\n", s[q].what, shape, ratio[R / 2],
           2.0 * (double)(m * n * k) / th[R / 2] / 1e9, diff);
    free(a), free(b), free(c1), free(c2);
  }
  return 0;
}
