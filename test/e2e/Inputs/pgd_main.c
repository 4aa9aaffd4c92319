/* examples/v2/pgd_adversarial.sg: `steps` projected signed-gradient steps
 * (a for loop with grad inside, its trip count an argument), the
 * adversarial example under stop_gradient. At run-time sizes n, d and
 * several step counts:
 *  - pgd_loss (f32) against a C re-implementation in double (1e-5);
 *  - pgd_loss_grad's d_w (f32) against the formula with the adversarial
 *    example held (0.5 * (dloss(w, x) + dloss(w, x_adv)), 1e-4);
 *  - the f64 build's d_w against central differences of the compiled f64
 *    pgd_loss (sign() has derivative 0, so holding x_adv changes nothing
 *    almost everywhere; 1e-7).
 * Usage: prog N D */
#include <string.h>

#include "sgtest.h"
#include "pgd32.h"
#include "pgd64.h"

enum { MAXN = 256, MAXD = 64 };
static int64_t n, d;
static double W[MAXD], X[MAXN * MAXD], Y[MAXN], XA[MAXN * MAXD];

static double sigmoid(double t) { return 1 / (1 + exp(-t)); }
static double softplus(double t) { return t > 0 ? t + log1p(exp(-t)) : log1p(exp(t)); }

/* loss and its gradient in w at inputs xs */
static double loss(const double *xs, double *dw) {
  double l = 0;
  if (dw)
    memset(dw, 0, (size_t)d * 8);
  for (int64_t i = 0; i < n; i++) {
    double z = 0;
    for (int64_t j = 0; j < d; j++)
      z += xs[i * d + j] * W[j];
    l += softplus(-Y[i] * z);
    for (int64_t j = 0; dw && j < d; j++)
      dw[j] += sigmoid(-Y[i] * z) * -Y[i] * xs[i * d + j] / (double)n;
  }
  return l / (double)n;
}

static double pgd(int steps, double eps, double alpha, double *dw) {
  memcpy(XA, X, (size_t)(n * d) * 8);
  for (int s = 0; s < steps; s++) {
    for (int64_t i = 0; i < n; i++) {
      double z = 0;
      for (int64_t j = 0; j < d; j++)
        z += XA[i * d + j] * W[j];
      double c = sigmoid(-Y[i] * z) * -Y[i];
      for (int64_t j = 0; j < d; j++) {
        double g = c * W[j], v = XA[i * d + j] + alpha * (double)((g > 0) - (g < 0));
        XA[i * d + j] = fmin(fmax(v, X[i * d + j] - eps), X[i * d + j] + eps);
      }
    }
  }
  double d1[MAXD], d2[MAXD];
  double l = 0.5 * loss(X, d1) + 0.5 * loss(XA, d2);
  for (int64_t j = 0; j < d; j++)
    dw[j] = 0.5 * d1[j] + 0.5 * d2[j];
  return l;
}

static sg_tensor w64, x64, y64, eps64, alpha64, st, o64;
static double loss64(void) {
  pgd_loss64(&w64, &x64, &y64, &eps64, &alpha64, &st, &o64);
  return sgt_get(&o64, 0);
}

int main(int argc, char **argv) {
  n = sgt_arg(argc, argv, 1, 16);
  d = sgt_arg(argc, argv, 2, 5);
  sg_tensor w = SGT_TENSOR(SG_F32, d), x = SGT_TENSOR(SG_F32, n, d), y = SGT_TENSOR(SG_F32, n);
  sg_tensor eps = sgt_scalar(SG_F32), alpha = sgt_scalar(SG_F32), out = sgt_scalar(SG_F32);
  sg_tensor dw = SGT_TENSOR(SG_F32, d);
  w64 = SGT_TENSOR(SG_F64, d), x64 = SGT_TENSOR(SG_F64, n, d), y64 = SGT_TENSOR(SG_F64, n);
  eps64 = sgt_scalar(SG_F64), alpha64 = sgt_scalar(SG_F64), o64 = sgt_scalar(SG_F64);
  sg_tensor dw64 = SGT_TENSOR(SG_F64, d);
  st = sgt_scalar(SG_I32);
  sgt_fill(&w, -1, 1);
  sgt_fill(&x, -1, 1);
  for (int64_t i = 0; i < n; i++)
    sgt_set(&y, i, i % 3 ? 1 : -1);
  sgt_set(&eps, 0, 0.1);
  sgt_set(&alpha, 0, 0.03);
  sgt_copy(&w64, &w), sgt_copy(&x64, &x), sgt_copy(&y64, &y);
  sgt_copy(&eps64, &eps), sgt_copy(&alpha64, &alpha);
  for (int64_t j = 0; j < d; j++)
    W[j] = sgt_get(&w, j);
  for (int64_t i = 0; i < n * d; i++)
    X[i] = sgt_get(&x, i);
  for (int64_t i = 0; i < n; i++)
    Y[i] = sgt_get(&y, i);
  static const int steps[] = {0, 1, 3, 10};
  for (int s = 0; s < 4; s++) {
    sgt_set(&st, 0, steps[s]);
    double ref_dw[MAXD], fd[MAXD];
    double ref = pgd(steps[s], (float)0.1, (float)0.03, ref_dw);
    CHECK_EQ_INT(pgd_loss(&w, &x, &y, &eps, &alpha, &st, &out), SG_OK);
    CHECK_CLOSE(sgt_get(&out, 0), ref, 1e-5);
    CHECK_EQ_INT(pgd_loss_grad(&w, &x, &y, &eps, &alpha, &st, &out, &dw), SG_OK);
    CHECK_CLOSE(sgt_get(&out, 0), ref, 1e-5);
    CHECK_GRAD_VS(&dw, ref_dw, "the formula with x_adv held", 1e-4);
    CHECK_EQ_INT(pgd_loss64_grad(&w64, &x64, &y64, &eps64, &alpha64, &st, &o64, &dw64), SG_OK);
    sgt_fd(loss64, &w64, fd);
    CHECK_GRAD(&dw64, fd, 1e-7);
  }
  free(w.data), free(x.data), free(y.data), free(eps.data), free(alpha.data), free(out.data);
  free(dw.data), free(w64.data), free(x64.data), free(y64.data), free(eps64.data);
  free(alpha64.data), free(o64.data), free(dw64.data), free(st.data);
  return sgt_finish();
}
