#define _POSIX_C_SOURCE 200809L
/* Times gmm_grad (factors unpacked with take) against gmm_onehot_grad (the
 * same objective with a one-hot product), ADBench-style sizes, one thread,
 * and checks that both give the same value and gradients.
 * Usage: gmm_bench [n d k [repeats]] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gmm_onehot.h"
#include "gmm_take.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t); /* CPU time: the machine may be shared */
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static sg_tensor tensor(int rank, const int64_t *shape, int dtype, size_t esize) {
  sg_tensor t;
  memset(&t, 0, sizeof t);
  t.rank = rank;
  t.dtype = dtype;
  int64_t n = 1;
  for (int i = 0; i < rank; i++)
    n *= t.shape[i] = shape[i];
  t.data = calloc((size_t)(n ? n : 1), esize);
  return t;
}
#define T(dt, es, ...) tensor((int)(sizeof((int64_t[]){__VA_ARGS__}) / 8), (int64_t[]){__VA_ARGS__}, dt, es)
static double *D(sg_tensor *t) { return t->data; }

static double urand(void) { return (double)rand() / RAND_MAX - 0.5; }

int main(int argc, char **argv) {
  int n = argc > 3 ? atoi(argv[1]) : 1000, d = argc > 3 ? atoi(argv[2]) : 32,
      k = argc > 3 ? atoi(argv[3]) : 10, reps = argc > 4 ? atoi(argv[4]) : 5;
  int e = d * (d - 1) / 2;
  sg_tensor alphas = T(SG_F64, 8, k), means = T(SG_F64, 8, k, d), qs = T(SG_F64, 8, k, d);
  sg_tensor ls = T(SG_F64, 8, k, e), x = T(SG_F64, 8, n, d), eye = T(SG_F64, 8, d, d);
  sg_tensor tri = T(SG_I32, 4, d, d), mask = T(SG_F64, 8, d, d), onehot = T(SG_F64, 8, e, d, d);
  srand(1);
  for (int i = 0; i < k; i++)
    D(&alphas)[i] = urand();
  for (int i = 0; i < k * d; i++)
    D(&means)[i] = urand(), D(&qs)[i] = 0.1 * urand();
  for (int i = 0; i < k * e; i++)
    D(&ls)[i] = 0.1 * urand();
  for (int i = 0; i < n * d; i++)
    D(&x)[i] = urand();
  int p = 0;
  for (int i = 0; i < d; i++) {
    D(&eye)[i * d + i] = 1;
    for (int j = 0; j < i; j++, p++) { /* ADBench's column-major packing order aside: row by row */
      ((int *)tri.data)[i * d + j] = p;
      D(&mask)[i * d + j] = 1;
      D(&onehot)[(size_t)p * d * d + i * d + j] = 1;
    }
  }
  sg_tensor out1 = T(SG_F64, 8, 0), out2 = T(SG_F64, 8, 0);
  out1.rank = out2.rank = 0;
  sg_tensor g1[4] = {T(SG_F64, 8, k), T(SG_F64, 8, k, d), T(SG_F64, 8, k, d), T(SG_F64, 8, k, e)};
  sg_tensor g2[4] = {T(SG_F64, 8, k), T(SG_F64, 8, k, d), T(SG_F64, 8, k, d), T(SG_F64, 8, k, e)};
  double best1 = 1e30, best2 = 1e30;
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    if (gmm_grad(&alphas, &means, &qs, &ls, &x, &tri, &mask, &eye, &out1, &g1[0], &g1[1], &g1[2], &g1[3]) != SG_OK)
      return fprintf(stderr, "%s\n", sg_last_error()), 1;
    double t1 = now();
    if (gmm_onehot_grad(&alphas, &means, &qs, &ls, &x, &onehot, &eye, &out2, &g2[0], &g2[1], &g2[2], &g2[3]) != SG_OK)
      return fprintf(stderr, "%s\n", sg_last_error()), 1;
    double t2 = now();
    best1 = fmin(best1, t1 - t0);
    best2 = fmin(best2, t2 - t1);
  }
  double err = fabs(D(&out1)[0] - D(&out2)[0]) / fmax(1, fabs(D(&out2)[0]));
  for (int a = 0; a < 4; a++)
    for (int64_t i = 0, m = g1[a].rank == 1 ? g1[a].shape[0] : g1[a].shape[0] * g1[a].shape[1]; i < m; i++)
      err = fmax(err, fabs(D(&g1[a])[i] - D(&g2[a])[i]) / fmax(1, fabs(D(&g2[a])[i])));
  /* What the one-hot version adds is flops: ls @ onehot and its adjoint,
   * 4 k e d^2, on top of the 3 products of 2 k n d^2 that both versions
   * compute. At equal GEMM speed its time over take's is at most this. */
  double flops = 1 + 4.0 * e / (6.0 * n);
  printf("gmm n=%d d=%d k=%d: take %.2f ms, one-hot %.2f ms, speedup %.1fx, one-hot/take flops %.2fx "
         "(max relative difference %.1e)\n",
         n, d, k, 1e3 * best1, 1e3 * best2, best2 / best1, flops, err);
  return err < 1e-9 ? 0 : 1;
}
