/* examples/v3/newton_cg.sg from C (built with --exports=grad,hvp):
 * Newton-CG on an L2-regularised logistic regression converges in a few
 * steps (the gradient's norm falls below 1e-10 from 1e-1); loss_hessian
 * matches central differences of loss_value_grad, and loss_value_hvp
 * matches loss_hessian times v; a Newton step with d CG iterations solves
 * H s = -g (H s + g ~ 0). Usage: prog N D */
#include <string.h>

#include "sgtest.h"
#include "newton_cg.h"

static int64_t n, d;
static sg_tensor w, x, y, lam, out, dw;

static double loss_at(void) {
  CHECK_EQ_INT(loss_value(&w, &x, &y, &lam, &out), SG_OK);
  return sgt_get(&out, 0);
}

static double grad_norm(void) {
  CHECK_EQ_INT(loss_value_grad(&w, &x, &y, &lam, &out, &dw), SG_OK);
  double s = 0;
  for (int64_t i = 0; i < d; i++)
    s += sgt_get(&dw, i) * sgt_get(&dw, i);
  return sqrt(s);
}

int main(int argc, char **argv) {
  n = sgt_arg(argc, argv, 1, 200);
  d = sgt_arg(argc, argv, 2, 5);
  w = SGT_TENSOR(SG_F64, d), x = SGT_TENSOR(SG_F64, n, d), y = SGT_TENSOR(SG_F64, n);
  lam = sgt_scalar(SG_F64), out = sgt_scalar(SG_F64), dw = SGT_TENSOR(SG_F64, d);
  sg_tensor iters = sgt_scalar(SG_I32), next = SGT_TENSOR(SG_F64, d);
  sg_tensor H = SGT_TENSOR(SG_F64, d, d), v = SGT_TENSOR(SG_F64, d), hv = SGT_TENSOR(SG_F64, d);
  sg_tensor w0 = SGT_TENSOR(SG_F64, d);
  /* data from a planted separator, labels +-1 with some noise */
  double truth[64];
  for (int64_t j = 0; j < d; j++)
    truth[j] = sgt_uniform(-2, 2);
  for (int64_t i = 0; i < n; i++) {
    double z = 0;
    for (int64_t j = 0; j < d; j++) {
      double v_ = sgt_uniform(-1, 1);
      sgt_set(&x, i * d + j, v_);
      z += v_ * truth[j];
    }
    sgt_set(&y, i, z + sgt_uniform(-0.5, 0.5) > 0 ? 1 : -1);
  }
  sgt_set(&lam, 0, 0.01);
  sgt_set(&iters, 0, (double)d);

  /* the Hessian against differences of the gradient, H v against it */
  sgt_fill(&w, -0.5, 0.5);
  memcpy(w0.data, w.data, (size_t)d * 8);
  CHECK_EQ_INT(loss_hessian(&w, &x, &y, &lam, &H), SG_OK);
  double fd[64 * 64], g_up[64];
  for (int64_t j = 0; j < d; j++) {
    double wj = sgt_get(&w, j), h = 1e-5;
    sgt_set(&w, j, wj + h);
    grad_norm();
    memcpy(g_up, dw.data, (size_t)d * 8);
    sgt_set(&w, j, wj - h);
    grad_norm();
    for (int64_t i = 0; i < d; i++)
      fd[i * d + j] = (g_up[i] - sgt_get(&dw, i)) / (2 * h);
    sgt_set(&w, j, wj);
  }
  CHECK_GRAD_VS(&H, fd, "differences of loss_value_grad", 1e-6);
  sgt_fill(&v, -1, 1);
  CHECK_EQ_INT(loss_value_hvp(&w, &x, &y, &lam, &v, &out, &dw, &hv), SG_OK);
  double want[64];
  for (int64_t i = 0; i < d; i++) {
    want[i] = 0;
    for (int64_t j = 0; j < d; j++)
      want[i] += sgt_get(&H, i * d + j) * sgt_get(&v, j);
  }
  CHECK_GRAD_VS(&hv, want, "loss_hessian times v", 1e-12);
  /* one Newton-CG step with d CG iterations solves H s = -g */
  grad_norm();
  CHECK_EQ_INT(newton_step(&w, &x, &y, &lam, &iters, &next), SG_OK);
  double worst = 0, gmax = 0;
  for (int64_t i = 0; i < d; i++) {
    double r = sgt_get(&dw, i);
    for (int64_t j = 0; j < d; j++)
      r += sgt_get(&H, i * d + j) * (sgt_get(&next, j) - sgt_get(&w, j));
    worst = fmax(worst, fabs(r));
    gmax = fmax(gmax, fabs(sgt_get(&dw, i)));
  }
  CHECK(worst <= 1e-8 * fmax(1, gmax));
  printf("ok: a step solves H s = -g (residual %.1e)\n", worst);

  /* converges from w = 0 in a few steps */
  memset(w.data, 0, (size_t)d * 8);
  double g0 = grad_norm(), prev = loss_at();
  int steps = 0;
  for (; steps < 8 && grad_norm() > 1e-10; steps++) {
    CHECK_EQ_INT(newton_step(&w, &x, &y, &lam, &iters, &next), SG_OK);
    memcpy(w.data, next.data, (size_t)d * 8);
    double l = loss_at();
    CHECK(l <= prev);
    prev = l;
  }
  double g1 = grad_norm();
  CHECK(g1 < 1e-10 && steps <= 8);
  printf("ok: converged in %d steps, gradient norm %.1e -> %.1e\n", steps <= 6 ? steps : -1, g0,
         g1);
  sg_tensor *all[] = {&w, &x, &y, &lam, &out, &dw, &iters, &next, &H, &v, &hv, &w0};
  for (unsigned i = 0; i < sizeof all / sizeof *all; i++)
    free(all[i]->data);
  return sgt_finish();
}
