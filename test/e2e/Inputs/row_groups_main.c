/* Driver for row_groups.test: argv gives k and n. Each function of
 * row_groups.sg against a direct C computation (value), its gradient
 * against central differences of the compiled function or, for the M-step
 * (stop_gradient on r), the hand-derived sum_i r_ij (mu_j - x_i); and the
 * gradients must be the same bits on 1 and 2 threads. k above 32 takes the
 * members' own loops (cg_rows.c's fallback), from 128 on row by row (or
 * the own loops when the group has a column sum), n not a multiple of 64 a
 * partial last block. With k = 200, xent200 (k literal) too. xent_steps,
 * the same loss over 3 steps of a loop, against xent over the 3n rows.
 * bumps (a column sum, no row reduction) against its hand gradient. */
#include <stdbool.h>
#include <string.h>

#include "rows.h"
#include "sgtest.h"

static int64_t K, N;
static sg_tensor z, y, mu, mu5, x, out, outn;

static double xent_ref(void) {
  const double *Z = z.data, *Y = y.data;
  double l = 0;
  for (int64_t i = 0; i < N; i++) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < K; j++)
      m = fmax(m, Z[i * K + j]);
    for (int64_t j = 0; j < K; j++)
      s += exp(Z[i * K + j] - m);
    for (int64_t j = 0; j < K; j++)
      l += Y[i * K + j] * (log(s) - (Z[i * K + j] - m));
  }
  return l;
}

/* The M-step's value and hand gradient for k components at means m. */
static double mstep_ref(const double *m, int64_t k, double *grad) {
  const double *X = x.data;
  double l = 0, *r = calloc((size_t)k, sizeof(double));
  for (int64_t j = 0; j < k; j++)
    grad[j] = 0;
  for (int64_t i = 0; i < N; i++) {
    double mx = -INFINITY, s = 0;
    for (int64_t j = 0; j < k; j++)
      mx = fmax(mx, -0.5 * (X[i] - m[j]) * (X[i] - m[j]));
    for (int64_t j = 0; j < k; j++)
      s += r[j] = exp(-0.5 * (X[i] - m[j]) * (X[i] - m[j]) - mx);
    for (int64_t j = 0; j < k; j++) {
      l += r[j] / s * 0.5 * (X[i] - m[j]) * (X[i] - m[j]);
      grad[j] += r[j] / s * (m[j] - X[i]);
    }
  }
  free(r);
  return l;
}

static double xent_loss(void) {
  CHECK_EQ_INT(xent(&z, &y, &out), SG_OK);
  return sgt_get(&out, 0);
}

static double lse_ref(void) {
  const double *Z = z.data;
  double l = 0;
  for (int64_t i = 0; i < N; i++) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < K; j++)
      m = fmax(m, Z[i * K + j]);
    for (int64_t j = 0; j < K; j++)
      s += exp(Z[i * K + j] - m);
    l += log(s) + m;
  }
  return l;
}

static double lse_loss(void) {
  CHECK_EQ_INT(lse(&z, &out), SG_OK);
  return sgt_get(&out, 0);
}

static sg_tensor cot; /* rowmin's cotangent */
static double rowmin_loss(void) {
  CHECK_EQ_INT(rowmin(&z, &outn), SG_OK);
  double l = 0;
  for (int64_t i = 0; i < N; i++)
    l += sgt_get(&cot, i) * sgt_get(&outn, i);
  return l;
}

int main(int argc, char **argv) {
  K = sgt_arg(argc, argv, 1, 3), N = sgt_arg(argc, argv, 2, 200);
  z = SGT_TENSOR(SG_F64, N, K), y = SGT_TENSOR(SG_F64, N, K);
  mu = SGT_TENSOR(SG_F64, K), mu5 = SGT_TENSOR(SG_F64, 5), x = SGT_TENSOR(SG_F64, N);
  out = sgt_scalar(SG_F64), outn = SGT_TENSOR(SG_F64, N), cot = SGT_TENSOR(SG_F64, N);
  sgt_fill(&z, -3, 3);
  sgt_fill(&y, 0, 1);
  sgt_fill(&mu, -2, 2);
  sgt_fill(&mu5, -2, 2);
  sgt_fill(&x, -3, 3);
  sgt_fill(&cot, -1, 1);

  /* xent: value, d_z against central differences, thread bits */
  sg_tensor d_z = SGT_TENSOR(SG_F64, N, K), d_z2 = SGT_TENSOR(SG_F64, N, K);
  CHECK_CLOSE(xent_loss(), xent_ref(), 1e-12);
  sg_set_num_threads(1);
  CHECK_EQ_INT(xent_grad(&z, &y, &out, &d_z), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), xent_ref(), 1e-12);
  sg_set_num_threads(2);
  CHECK_EQ_INT(xent_grad(&z, &y, &out, &d_z2), SG_OK);
  CHECK_SAME_BITS(&d_z, &d_z2, "xent d_z");
  /* (central differences only at small sizes: two calls per element) */
  bool small = N * K <= 8192;
  double *fd = calloc((size_t)(N * K), sizeof(double));
  if (small) {
    sgt_fd(xent_loss, &z, fd);
    CHECK_GRAD(&d_z, fd, 1e-6);
  }

  /* xent200: the same function with k literal, against xent */
  if (K == 200) {
    sg_tensor d_z200 = SGT_TENSOR(SG_F64, N, K);
    CHECK_EQ_INT(xent200(&z, &y, &out), SG_OK);
    CHECK_CLOSE(sgt_get(&out, 0), xent_ref(), 1e-12);
    CHECK_EQ_INT(xent200_grad(&z, &y, &out, &d_z200), SG_OK);
    CHECK_CLOSE(sgt_get(&out, 0), xent_ref(), 1e-12);
    CHECK_GRAD_VS(&d_z200, d_z.data, "xent's d_z (k = 200)", 1e-12);
    free(d_z200.data);
  }

  /* xent_steps: 3 steps of [n, k] in a loop, against xent over the 3n rows */
  {
    sg_tensor z3 = SGT_TENSOR(SG_F64, 3, N, K), y3 = SGT_TENSOR(SG_F64, 3, N, K);
    sg_tensor zz = SGT_TENSOR(SG_F64, 3 * N, K), yy = SGT_TENSOR(SG_F64, 3 * N, K);
    sg_tensor d_z3 = SGT_TENSOR(SG_F64, 3, N, K), d_z3b = SGT_TENSOR(SG_F64, 3, N, K);
    sg_tensor d_zz = SGT_TENSOR(SG_F64, 3 * N, K);
    sgt_fill(&z3, -3, 3);
    sgt_fill(&y3, 0, 1);
    memcpy(zz.data, z3.data, sizeof(double) * (size_t)(3 * N * K));
    memcpy(yy.data, y3.data, sizeof(double) * (size_t)(3 * N * K));
    CHECK_EQ_INT(xent_grad(&zz, &yy, &out, &d_zz), SG_OK);
    double whole = sgt_get(&out, 0);
    sg_set_num_threads(1);
    CHECK_EQ_INT(xent_steps(&z3, &y3, &out), SG_OK);
    CHECK_CLOSE(sgt_get(&out, 0), whole, 1e-12);
    CHECK_EQ_INT(xent_steps_grad(&z3, &y3, &out, &d_z3), SG_OK);
    CHECK_CLOSE(sgt_get(&out, 0), whole, 1e-12);
    CHECK_GRAD_VS(&d_z3, d_zz.data, "xent's d_z over the 3n rows", 1e-12);
    sg_set_num_threads(2);
    CHECK_EQ_INT(xent_steps_grad(&z3, &y3, &out, &d_z3b), SG_OK);
    CHECK_SAME_BITS(&d_z3, &d_z3b, "xent_steps d_z");
    sg_tensor *steps[] = {&z3, &y3, &zz, &yy, &d_z3, &d_z3b, &d_zz};
    for (size_t i = 0; i < sizeof steps / sizeof *steps; i++)
      free(steps[i]->data);
  }

  /* lse: value, d_z against central differences */
  CHECK_CLOSE(lse_loss(), lse_ref(), 1e-12);
  CHECK_EQ_INT(lse_grad(&z, &out, &d_z), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), lse_ref(), 1e-12);
  if (small) {
    sgt_fd(lse_loss, &z, fd);
    CHECK_GRAD_VS(&d_z, fd, "finite differences (lse)", 1e-6);
  }

  /* mstep, symbolic and literal k: value and the M-step gradient */
  double *hand = calloc((size_t)(K > 5 ? K : 5), sizeof(double));
  sg_tensor d_mu = SGT_TENSOR(SG_F64, K), d_mu2 = SGT_TENSOR(SG_F64, K);
  sg_set_num_threads(1);
  double want = mstep_ref(mu.data, K, hand);
  CHECK_EQ_INT(mstep(&mu, &x, &out), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), want, 1e-12);
  CHECK_EQ_INT(mstep_grad(&mu, &x, &out, &d_mu), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), want, 1e-12);
  CHECK_GRAD_VS(&d_mu, hand, "M-step formula", 1e-10);
  sg_set_num_threads(2);
  CHECK_EQ_INT(mstep_grad(&mu, &x, &out, &d_mu2), SG_OK);
  CHECK_SAME_BITS(&d_mu, &d_mu2, "mstep d_mu");
  sg_set_num_threads(1);
  sg_tensor d_mu5 = SGT_TENSOR(SG_F64, 5);
  want = mstep_ref(mu5.data, 5, hand);
  CHECK_EQ_INT(mstep5_grad(&mu5, &x, &out, &d_mu5), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), want, 1e-12);
  CHECK_GRAD_VS(&d_mu5, hand, "M-step formula (k = 5)", 1e-10);

  /* bumps: value and gradient, sum_i exp(-d^2 / 2) d with d = x_i - mu_j */
  sg_tensor d_mub = SGT_TENSOR(SG_F64, K), d_mub2 = SGT_TENSOR(SG_F64, K);
  want = 0;
  for (int64_t j = 0; j < K; j++) {
    hand[j] = 0;
    for (int64_t i = 0; i < N; i++) {
      double d = sgt_get(&x, i) - sgt_get(&mu, j), e = exp(-0.5 * d * d);
      want += e;
      hand[j] += e * d;
    }
  }
  CHECK_EQ_INT(bumps(&mu, &x, &out), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), want, 1e-12);
  CHECK_EQ_INT(bumps_grad(&mu, &x, &out, &d_mub), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), want, 1e-12);
  CHECK_GRAD_VS(&d_mub, hand, "sum of exp(-d^2 / 2) d", 1e-10);
  sg_set_num_threads(2);
  CHECK_EQ_INT(bumps_grad(&mu, &x, &out, &d_mub2), SG_OK);
  CHECK_SAME_BITS(&d_mub, &d_mub2, "bumps d_mu");
  sg_set_num_threads(1);

  /* rowmin: value by rows, its VJP against central differences */
  CHECK_EQ_INT(rowmin(&z, &outn), SG_OK);
  for (int64_t i = 0; i < N; i++) {
    double mn = INFINITY, s = 0;
    for (int64_t j = 0; j < K; j++) {
      double v = sgt_get(&z, i * K + j), q = v * v + v;
      mn = fmin(mn, q);
      s += q;
    }
    CHECK_CLOSE(sgt_get(&outn, i), mn + s, 1e-12);
  }
  sg_tensor d_zr = SGT_TENSOR(SG_F64, N, K);
  CHECK_EQ_INT(rowmin_vjp(&z, &cot, &outn, &d_zr), SG_OK);
  if (small) {
    sgt_fd(rowmin_loss, &z, fd);
    CHECK_GRAD(&d_zr, fd, 1e-6);
  }

  /* cross: sum_ij q_ij - k * sum_i m_i (every row's max, read reversed) */
  sg_tensor rev = SGT_TENSOR(SG_I32, N);
  for (int64_t i = 0; i < N; i++)
    ((int32_t *)rev.data)[i] = (int32_t)(N - 1 - i);
  double cw = 0;
  for (int64_t i = 0; i < N; i++) {
    double m = -INFINITY;
    for (int64_t j = 0; j < K; j++) {
      double v = sgt_get(&z, i * K + j);
      m = fmax(m, v * v);
      cw += v * v;
    }
    cw -= (double)K * m;
  }
  CHECK_EQ_INT(cross(&z, &rev, &out), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), cw, 1e-12);
  free(rev.data);

  free(fd);
  free(hand);
  sg_tensor *all[] = {&z, &y, &mu, &mu5, &x, &out, &outn, &cot, &d_z, &d_z2, &d_mu, &d_mu2, &d_mu5, &d_mub, &d_mub2, &d_zr};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    free(all[i]->data);
  return sgt_finish();
}
