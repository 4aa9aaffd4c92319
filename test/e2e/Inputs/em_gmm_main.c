/* Driver for em_gmm.test: argv gives k (components) and n (points).
 *
 * m_step_loss(mu, x) = sum_ij r_ij (x_i - mu_j)^2 / 2 with
 * r_ij = softmax_j(-(x_i - mu_j)^2 / 2), the E-step responsibilities, under
 * stop_gradient. The value is that of the full expression; the gradient
 * treats r as a constant, so d/dmu_j = sum_i r_ij (mu_j - x_i) (the M-step
 * gradient, whose zero is the EM update mu_j = sum_i r_ij x_i / sum_i r_ij).
 * Central differences of the compiled function would move r as well (the
 * total derivative) and are the wrong reference for k >= 2; the reference
 * is central differences of loss_frozen below, with r computed once at the
 * unperturbed mu. For k = 1, r = 1 and both agree. */
#include "m32.h"
#include "m64.h"
#include "sgtest.h"

static int64_t K, N;
static double *X, *R; /* the points; the responsibilities, n x k */

static void responsibilities(const double *mu, double *r) {
  for (int64_t i = 0; i < N; i++) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < K; j++)
      m = fmax(m, -0.5 * (X[i] - mu[j]) * (X[i] - mu[j]));
    for (int64_t j = 0; j < K; j++)
      s += r[i * K + j] = exp(-0.5 * (X[i] - mu[j]) * (X[i] - mu[j]) - m);
    for (int64_t j = 0; j < K; j++)
      r[i * K + j] /= s;
  }
}

static double loss_with(const double *mu, const double *r) {
  double l = 0;
  for (int64_t i = 0; i < N; i++)
    for (int64_t j = 0; j < K; j++)
      l += r[i * K + j] * 0.5 * (X[i] - mu[j]) * (X[i] - mu[j]);
  return l;
}

static sg_tensor mu_ref, mu64, x64, out64;
/* r frozen at the unperturbed mu (R), mu read from mu_ref. */
static double loss_frozen(void) { return loss_with((const double *)mu_ref.data, R); }
/* The compiled function: r recomputed at the perturbed mu. */
static double loss_total(void) {
  CHECK_EQ_INT(m_step_loss(&mu64, &x64, &out64), SG_OK);
  return sgt_get(&out64, 0);
}

int main(int argc, char **argv) {
  K = sgt_arg(argc, argv, 1, 3), N = sgt_arg(argc, argv, 2, 20);
  mu64 = SGT_TENSOR(SG_F64, K), x64 = SGT_TENSOR(SG_F64, N), out64 = sgt_scalar(SG_F64);
  sgt_fill(&mu64, -2, 2);
  sgt_fill(&x64, -3, 3);
  /* Round the data to f32 so the f32 copy sees exactly the same values. */
  for (int64_t i = 0; i < K; i++)
    sgt_set(&mu64, i, (float)sgt_get(&mu64, i));
  for (int64_t i = 0; i < N; i++)
    sgt_set(&x64, i, (float)sgt_get(&x64, i));
  mu_ref = SGT_TENSOR(SG_F64, K);
  sgt_copy(&mu_ref, &mu64);
  X = (double *)x64.data;
  R = calloc((size_t)(N * K), sizeof(double));
  responsibilities((const double *)mu64.data, R);
  double want = loss_with((const double *)mu64.data, R);

  /* The M-step gradient by hand. */
  double *hand = calloc((size_t)K, sizeof(double));
  for (int64_t j = 0; j < K; j++)
    for (int64_t i = 0; i < N; i++)
      hand[j] += R[i * K + j] * (sgt_get(&mu64, j) - X[i]);

  sg_tensor d_mu = SGT_TENSOR(SG_F64, K);
  CHECK_EQ_INT(m_step_loss(&mu64, &x64, &out64), SG_OK);
  CHECK_CLOSE(sgt_get(&out64, 0), want, 1e-12);
  sgt_set(&out64, 0, 0);
  CHECK_EQ_INT(m_step_loss_grad(&mu64, &x64, &out64, &d_mu), SG_OK);
  CHECK_CLOSE(sgt_get(&out64, 0), want, 1e-12);
  CHECK_GRAD_VS(&d_mu, hand, "M-step formula", 1e-7);

  double *fd = calloc((size_t)K, sizeof(double));
  sgt_fd(loss_frozen, &mu_ref, fd);
  CHECK_GRAD_VS(&d_mu, fd, "finite differences with r frozen", 1e-7);

  /* The total derivative (r moving with mu) is something else when k >= 2. */
  double *total = calloc((size_t)K, sizeof(double));
  sgt_fd(loss_total, &mu64, total);
  double diff = 0, scale = 0;
  for (int64_t j = 0; j < K; j++)
    diff = fmax(diff, fabs(total[j] - sgt_get(&d_mu, j))), scale = fmax(scale, fabs(hand[j]));
  if (K == 1)
    CHECK(diff <= 1e-7 * fmax(scale, 1));
  else
    CHECK(diff > 1e-4 * fmax(scale, 1));

  /* The f32 copy, same data. */
  sg_tensor mu32 = SGT_TENSOR(SG_F32, K), x32 = SGT_TENSOR(SG_F32, N);
  sg_tensor out32 = sgt_scalar(SG_F32), d_mu32 = SGT_TENSOR(SG_F32, K);
  sgt_copy(&mu32, &mu64);
  sgt_copy(&x32, &x64);
  CHECK_EQ_INT(m_step_loss32(&mu32, &x32, &out32), SG_OK);
  CHECK_CLOSE(sgt_get(&out32, 0), want, 1e-5);
  CHECK_EQ_INT(m_step_loss32_grad(&mu32, &x32, &out32, &d_mu32), SG_OK);
  CHECK_CLOSE(sgt_get(&out32, 0), want, 1e-5);
  CHECK_GRAD_VS(&d_mu32, fd, "finite differences with r frozen", 1e-3);

  /* x as an [n, 1] matrix: SG_ERR_RANK, nothing written. */
  sg_tensor xbad = SGT_TENSOR(SG_F64, N, 1);
  sgt_copy(&xbad, &x64);
  sgt_set(&out64, 0, 42);
  sgt_set(&d_mu, 0, 42);
  CHECK_EQ_INT(m_step_loss_grad(&mu64, &xbad, &out64, &d_mu), SG_ERR_RANK);
  CHECK_CONTAINS(sg_last_error(), "m_step_loss_grad: ");
  CHECK_CONTAINS(sg_last_error(), "'x'");
  CHECK_EXACT(sgt_get(&out64, 0), 42);
  CHECK_EXACT(sgt_get(&d_mu, 0), 42);

  /* An f32 mu for the f64 function: SG_ERR_DTYPE, nothing written. */
  CHECK_EQ_INT(m_step_loss_grad(&mu32, &x64, &out64, &d_mu), SG_ERR_DTYPE);
  CHECK_CONTAINS(sg_last_error(), "m_step_loss_grad: ");
  CHECK_CONTAINS(sg_last_error(), "'mu'");
  CHECK_EXACT(sgt_get(&out64, 0), 42);
  CHECK_EXACT(sgt_get(&d_mu, 0), 42);
  CHECK_EQ_INT(m_step_loss(&mu64, &x64, &out32), SG_ERR_DTYPE);
  CHECK_CONTAINS(sg_last_error(), "m_step_loss: ");
  CHECK_CONTAINS(sg_last_error(), "'out'");

  free(R), free(hand), free(fd), free(total);
  free(mu_ref.data), free(mu64.data), free(x64.data), free(out64.data), free(d_mu.data);
  free(mu32.data), free(x32.data), free(out32.data), free(d_mu32.data), free(xbad.data);
  return sgt_finish();
}
