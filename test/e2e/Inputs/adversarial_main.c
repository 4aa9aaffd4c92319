/* Driver for adversarial.test: argv gives n (examples) and d (features).
 *
 * loss(w, x, y) = mean_i softplus(-y_i x_i.w). Its gradient with respect to
 * x is g_ij = -(1/n) y_i sigmoid(-y_i x_i.w) w_j, so sign(g_ij) =
 * -y_i sign(w_j) and the FGSM example is x_adv = x - 0.1 y sign(w), under
 * stop_gradient. adversarial_loss = (loss(w, x, y) + loss(w, x_adv, y)) / 2
 * and its gradient holds x_adv fixed:
 *   d_w_j = -(1/2n) sum_i y_i (sigmoid(-y_i x_i.w) x_ij + sigmoid(-y_i xa_i.w) xa_ij).
 * References: that formula, central differences of a C re-implementation
 * with x_adv frozen, and central differences of the f64 build, which
 * recomputes x_adv but gets the same one as long as no w_j changes sign
 * (|w_j| >= 0.1 here, the step is ~1e-5). */
#include "m32.h"
#include "m64.h"
#include "sgtest.h"

static int64_t N, D;
static sg_tensor w64, x64, y64, out64;
static double *XA; /* x_adv at the unperturbed w */

static double sigm(double z) { return 1 / (1 + exp(-z)); }
static double softplus(double z) { return z > 0 ? z + log1p(exp(-z)) : log1p(exp(z)); }
static double sgn(double v) { return (v > 0) - (v < 0); }

static double loss_at(const double *x) {
  double l = 0;
  for (int64_t i = 0; i < N; i++) {
    double m = 0;
    for (int64_t j = 0; j < D; j++)
      m += x[i * D + j] * sgt_get(&w64, j);
    l += softplus(-sgt_get(&y64, i) * m) / (double)N;
  }
  return l;
}
static double loss_frozen(void) {
  return 0.5 * loss_at((const double *)x64.data) + 0.5 * loss_at(XA);
}
static double loss_compiled(void) {
  CHECK_EQ_INT(adversarial_loss64(&w64, &x64, &y64, &out64), SG_OK);
  return sgt_get(&out64, 0);
}

int main(int argc, char **argv) {
  N = sgt_arg(argc, argv, 1, 8), D = sgt_arg(argc, argv, 2, 5);
  sg_tensor w = SGT_TENSOR(SG_F32, D), x = SGT_TENSOR(SG_F32, N, D), y = SGT_TENSOR(SG_F32, N);
  for (int64_t j = 0; j < D; j++) { /* |w_j| in [0.1, 1]: away from sign flips */
    double v = sgt_uniform(0.1, 1);
    sgt_set(&w, j, sgt_uniform(0, 1) < 0.5 ? -v : v);
  }
  sgt_fill(&x, -1, 1);
  for (int64_t i = 0; i < N; i++)
    sgt_set(&y, i, sgt_uniform(0, 1) < 0.5 ? -1 : 1);
  w64 = SGT_TENSOR(SG_F64, D), x64 = SGT_TENSOR(SG_F64, N, D), y64 = SGT_TENSOR(SG_F64, N);
  out64 = sgt_scalar(SG_F64);
  sgt_copy(&w64, &w), sgt_copy(&x64, &x), sgt_copy(&y64, &y);

  XA = calloc((size_t)(N * D), sizeof(double));
  for (int64_t i = 0; i < N; i++)
    for (int64_t j = 0; j < D; j++)
      XA[i * D + j] = sgt_get(&x, i * D + j) - 0.1 * sgt_get(&y, i) * sgn(sgt_get(&w, j));
  double want = loss_frozen();

  double *hand = calloc((size_t)D, sizeof(double));
  for (int64_t i = 0; i < N; i++) {
    double yi = sgt_get(&y, i), m = 0, ma = 0;
    for (int64_t j = 0; j < D; j++)
      m += sgt_get(&x, i * D + j) * sgt_get(&w, j), ma += XA[i * D + j] * sgt_get(&w, j);
    for (int64_t j = 0; j < D; j++)
      hand[j] -= yi * (sigm(-yi * m) * sgt_get(&x, i * D + j) + sigm(-yi * ma) * XA[i * D + j]) /
                 (2.0 * (double)N);
  }

  sg_tensor out = sgt_scalar(SG_F32), d_w = SGT_TENSOR(SG_F32, D);
  CHECK_EQ_INT(adversarial_loss(&w, &x, &y, &out), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), want, 1e-5);
  sgt_set(&out, 0, 0);
  CHECK_EQ_INT(adversarial_loss_grad(&w, &x, &y, &out, &d_w), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), want, 1e-5);
  CHECK_CLOSE(loss_compiled(), want, 1e-12);

  double *ff = calloc((size_t)D, sizeof(double)), *fd = calloc((size_t)D, sizeof(double));
  sgt_fd(loss_frozen, &w64, ff);
  sgt_fd(loss_compiled, &w64, fd);
  CHECK_GRAD_VS(&d_w, hand, "hand-derived gradient", 1e-3);
  CHECK_GRAD_VS(&d_w, ff, "finite differences with x_adv frozen", 1e-3);
  CHECK_GRAD(&d_w, fd, 1e-3);

  sg_tensor d_w64 = SGT_TENSOR(SG_F64, D);
  CHECK_EQ_INT(adversarial_loss64_grad(&w64, &x64, &y64, &out64, &d_w64), SG_OK);
  CHECK_CLOSE(sgt_get(&out64, 0), want, 1e-12);
  CHECK_GRAD_VS(&d_w64, hand, "hand-derived gradient", 1e-7);
  CHECK_GRAD_VS(&d_w64, ff, "finite differences with x_adv frozen", 1e-7);
  CHECK_GRAD(&d_w64, fd, 1e-7);

  /* y one element too long (n bound by x): SG_ERR_SHAPE, nothing written. */
  sg_tensor ybad = SGT_TENSOR(SG_F32, N + 1);
  sgt_set(&out, 0, 42), sgt_set(&d_w, 0, 42);
  CHECK_EQ_INT(adversarial_loss_grad(&w, &x, &ybad, &out, &d_w), SG_ERR_SHAPE);
  char msg[300];
  snprintf(msg, sizeof msg,
           "adversarial_loss_grad: argument 'y' has shape [%lld], expected [n] with n = %lld "
           "(bound by 'x')",
           (long long)(N + 1), (long long)N);
  CHECK_STR(sg_last_error(), msg);
  CHECK_EXACT(sgt_get(&out, 0), 42);
  CHECK_EXACT(sgt_get(&d_w, 0), 42);

  /* x with d + 1 columns (d bound by w). */
  sg_tensor xbad = SGT_TENSOR(SG_F32, N, D + 1);
  CHECK_EQ_INT(adversarial_loss(&w, &xbad, &y, &out), SG_ERR_SHAPE);
  snprintf(msg, sizeof msg,
           "adversarial_loss: argument 'x' has shape [%lld, %lld], expected [n, d] with d = %lld "
           "(bound by 'w')",
           (long long)N, (long long)(D + 1), (long long)D);
  CHECK_STR(sg_last_error(), msg);
  CHECK_EXACT(sgt_get(&out, 0), 42);

  /* A NULL gradient output: SG_ERR_NULL, nothing written. */
  CHECK_EQ_INT(adversarial_loss_grad(&w, &x, &y, &out, NULL), SG_ERR_NULL);
  CHECK_CONTAINS(sg_last_error(), "adversarial_loss_grad: ");
  CHECK_CONTAINS(sg_last_error(), "'d_w'");
  CHECK_EXACT(sgt_get(&out, 0), 42);

  free(XA), free(hand), free(ff), free(fd);
  sg_tensor *all[] = {&w, &x, &y, &out, &d_w, &w64, &x64, &y64, &out64, &d_w64, &ybad, &xbad};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    free(all[i]->data);
  return sgt_finish();
}
