/* Driver for values.test: the transforms of Inputs/transforms.sg against
 * values derived by hand (f64, at a few points, to 1e-12 relative). */
#include "sgtest.h"
#include "transforms.h"

#define N 4

int main(void) {
  sg_tensor w = SGT_TENSOR(SG_F64, N), x = SGT_TENSOR(SG_F64, N), v = SGT_TENSOR(SG_F64, N);
  sg_tensor u = SGT_TENSOR(SG_F64, N), o = SGT_TENSOR(SG_F64, N), s = sgt_scalar(SG_F64);
  sg_tensor d = SGT_TENSOR(SG_F64, N);
  double W[N] = {0.5, -1.25, 2, 0.1}, X[N] = {1.5, -0.5, 0.25, 3}, V[N] = {1, -2, 0.5, 0.75};
  double U[N] = {-1, 0.5, 2, 0.25};
  for (int i = 0; i < N; i++) {
    sgt_set(&w, i, W[i]);
    sgt_set(&x, i, X[i]);
    sgt_set(&v, i, V[i]);
    sgt_set(&u, i, U[i]);
  }
  CHECK_EQ_INT(e_grad(&w, &x, &o), SG_OK);
  for (int i = 0; i < N; i++)
    CHECK_CLOSE(sgt_get(&o, i), W[i] * W[i] * W[i] + cos(W[i]) * X[i], 1e-12);
  CHECK_EQ_INT(e_hv(&w, &x, &v, &o), SG_OK);
  for (int i = 0; i < N; i++)
    CHECK_CLOSE(sgt_get(&o, i), (3 * W[i] * W[i] - sin(W[i]) * X[i]) * V[i], 1e-12);
  CHECK_EQ_INT(e_third(&w, &x, &v, &o), SG_OK);
  for (int i = 0; i < N; i++)
    CHECK_CLOSE(sgt_get(&o, i), (6 * W[i] - cos(W[i]) * X[i]) * V[i] * V[i], 1e-12);
  CHECK_EQ_INT(e_jvp(&w, &x, &v, &o), SG_OK);
  for (int i = 0; i < N; i++) {
    double y = tanh(X[i] * W[i]);
    CHECK_CLOSE(sgt_get(&o, i), (1 - y * y) * X[i] * V[i], 1e-12);
  }
  CHECK_EQ_INT(e_vjp(&w, &x, &u, &o), SG_OK);
  for (int i = 0; i < N; i++) {
    double y = tanh(X[i] * W[i]);
    CHECK_CLOSE(sgt_get(&o, i), (1 - y * y) * X[i] * U[i], 1e-12);
  }
  CHECK_EQ_INT(e_jvp_of_vjp(&w, &x, &u, &v, &o), SG_OK);
  for (int i = 0; i < N; i++) {
    double y = tanh(X[i] * W[i]);
    CHECK_CLOSE(sgt_get(&o, i), (1 - y * y) * X[i] * V[i], 1e-12);
  }
  CHECK_EQ_INT(e_multi(&w, &x, &v, &o, &s), SG_OK);
  double sv = 0;
  for (int i = 0; i < N; i++) {
    CHECK_CLOSE(sgt_get(&o, i), exp(W[i]) * V[i], 1e-12);
    sv += V[i] * X[i];
  }
  CHECK_CLOSE(sgt_get(&s, 0), sv, 1e-12);
  /* reverse over forward: d/dw_i of sum((1 - tanh(x w)^2) x t) */
  CHECK_EQ_INT(e_rev_fwd_grad(&w, &x, &v, &s, &d), SG_OK);
  for (int i = 0; i < N; i++) {
    double y = tanh(X[i] * W[i]);
    CHECK_CLOSE(sgt_get(&d, i), -2 * y * (1 - y * y) * X[i] * X[i] * V[i], 1e-12);
  }
  /* through a while loop: h3 = w (x^3 + x^2 + x + 1), loss = sum h3^2 / 2,
   * so H = diag((x^3 + x^2 + x + 1)^2) */
  CHECK_EQ_INT(e_loop_hv(&w, &x, &v, &o), SG_OK);
  for (int i = 0; i < N; i++) {
    double c = X[i] * X[i] * X[i] + X[i] * X[i] + X[i] + 1;
    CHECK_CLOSE(sgt_get(&o, i), c * c * V[i], 1e-12);
  }
  sg_tensor *all[] = {&w, &x, &v, &u, &o, &s, &d};
  for (unsigned i = 0; i < sizeof all / sizeof *all; i++)
    free(all[i]->data);
  return sgt_finish();
}
