/* examples/v2/em_fit.sg: EM run until no mean moves by more than tol (a
 * while loop with a data-dependent trip count, grad inside the loop, two
 * results). Checked at run-time sizes n, k against a C re-implementation:
 *  - em_fit's means (1e-12) and step count (exactly);
 *  - em_fit_vjp's results equal em_fit's, and d_mu0 equals central
 *    differences of the C re-implementation with every step's
 *    responsibilities held at their unperturbed values (the meaning of
 *    stop_gradient: each M-step is then the weighted mean of x, so the
 *    derivative is 0 up to rounding);
 *  - for k >= 2, the total derivative (central differences of the compiled
 *    em_fit, which moves the responsibilities) is not that;
 *  - the build with --ad-memory (em_fit_ck) gives the same bits.
 * Usage: prog N K */
#include <string.h>

#include "sgtest.h"
#include "em.h"
#include "em_ck.h"

enum { MAXN = 512, MAXK = 8, MAXSTEPS = 500 };
static int64_t n, k;
static double X[MAXN], TOL;
static double R[MAXSTEPS][MAXN * MAXK]; /* the unperturbed run's responsibilities */
static int ref_steps;

static void responsibilities(const double *mu, double *r) {
  for (int64_t i = 0; i < n; i++) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < k; j++)
      m = fmax(m, -0.5 * (X[i] - mu[j]) * (X[i] - mu[j]));
    for (int64_t j = 0; j < k; j++)
      s += r[i * k + j] = exp(-0.5 * (X[i] - mu[j]) * (X[i] - mu[j]) - m);
    for (int64_t j = 0; j < k; j++)
      r[i * k + j] /= s;
  }
}

/* EM from mu0; frozen: use R[t] instead of recomputing (and run as many
 * steps as the unperturbed run did); else record R[t]. Returns steps. */
static int em(const double *mu0, double *mu, int frozen) {
  memcpy(mu, mu0, (size_t)k * sizeof *mu);
  double moved = TOL + 1, next[MAXK];
  int steps = 0;
  while (frozen ? steps < ref_steps : moved > TOL && steps < MAXSTEPS) {
    double *r = R[steps];
    if (!frozen)
      responsibilities(mu, r);
    moved = 0;
    for (int64_t j = 0; j < k; j++) {
      double g = 0, rs = 0;
      for (int64_t i = 0; i < n; i++) {
        g += r[i * k + j] * (mu[j] - X[i]);
        rs += r[i * k + j];
      }
      next[j] = mu[j] - g / rs;
      moved = fmax(moved, fabs(next[j] - mu[j]));
    }
    memcpy(mu, next, (size_t)k * sizeof *mu);
    steps++;
  }
  return steps;
}

static double seedv[MAXK];
static sg_tensor mu0, x, tol, out0, out1;
static double frozen_loss(void) {
  double mu[MAXK], s = 0;
  em(mu0.data, mu, 1);
  for (int64_t j = 0; j < k; j++)
    s += seedv[j] * mu[j];
  return s;
}
static double total_loss(void) {
  em_fit(&mu0, &x, &tol, &out0, &out1);
  double s = 0;
  for (int64_t j = 0; j < k; j++)
    s += seedv[j] * sgt_get(&out0, j);
  return s;
}

int main(int argc, char **argv) {
  n = sgt_arg(argc, argv, 1, 60);
  k = sgt_arg(argc, argv, 2, 3);
  mu0 = SGT_TENSOR(SG_F64, k), x = SGT_TENSOR(SG_F64, n), tol = sgt_scalar(SG_F64);
  out0 = SGT_TENSOR(SG_F64, k), out1 = sgt_scalar(SG_I32);
  sg_tensor seed = SGT_TENSOR(SG_F64, k), o0 = SGT_TENSOR(SG_F64, k), o1 = sgt_scalar(SG_I32);
  sg_tensor d = SGT_TENSOR(SG_F64, k), d2 = SGT_TENSOR(SG_F64, k);
  for (int64_t i = 0; i < n; i++) /* clusters around -3, 0, 3, ... */
    X[i] = 3.0 * (double)(i % k) - 1.5 * (double)(k - 1) + sgt_uniform(-1, 1);
  memcpy(x.data, X, (size_t)n * 8);
  for (int64_t j = 0; j < k; j++) {
    sgt_set(&mu0, j, -1 + 2.0 * (double)j / (double)(k > 1 ? k - 1 : 1) + 0.1 * (double)j);
    seedv[j] = sgt_uniform(-1, 1);
    sgt_set(&seed, j, seedv[j]);
  }
  TOL = 1e-2;
  sgt_set(&tol, 0, TOL);

  double mu[MAXK];
  ref_steps = em(mu0.data, mu, 0);
  CHECK_EQ_INT(em_fit(&mu0, &x, &tol, &out0, &out1), SG_OK);
  for (int64_t j = 0; j < k; j++)
    CHECK_CLOSE(sgt_get(&out0, j), mu[j], 1e-12);
  CHECK_EQ_INT((int)sgt_get(&out1, 0), ref_steps);
  printf("n=%lld k=%lld: %d EM steps\n", (long long)n, (long long)k, ref_steps);

  CHECK_EQ_INT(em_fit_vjp(&mu0, &x, &tol, &seed, &o0, &o1, &d), SG_OK);
  CHECK(memcmp(o0.data, out0.data, (size_t)k * 8) == 0);
  CHECK_EQ_INT((int)sgt_get(&o1, 0), ref_steps);
  double fd[MAXK], tot[MAXK];
  sgt_fd(frozen_loss, &mu0, fd);
  for (int64_t j = 0; j < k; j++)
    CHECK_CLOSE(sgt_get(&d, j), fd[j], 1e-7);
  printf("ok: d_mu0 matches central differences with the responsibilities held\n");
  sgt_fd(total_loss, &mu0, tot);
  double diff = 0;
  for (int64_t j = 0; j < k; j++)
    diff = fmax(diff, fabs(tot[j] - sgt_get(&d, j)));
  if (k >= 2) {
    CHECK(diff > 1e-4);
    printf("ok: the total derivative differs (by %.2g)\n", diff);
  }

  double keep0[MAXK];
  memcpy(keep0, o0.data, (size_t)k * 8);
  CHECK_EQ_INT(em_fit_ck_vjp(&mu0, &x, &tol, &seed, &o0, &o1, &d2), SG_OK);
  CHECK(memcmp(d.data, d2.data, (size_t)k * 8) == 0 && memcmp(o0.data, keep0, (size_t)k * 8) == 0);
  printf("ok: --ad-memory gives the same bits\n");
  free(mu0.data), free(x.data), free(tol.data), free(out0.data), free(out1.data);
  free(seed.data), free(o0.data), free(o1.data), free(d.data), free(d2.data);
  return sgt_finish();
}
