/* examples/v3/spring_sensitivity.sg from C: the trajectory's Jacobian with
 * respect to (k, c, m) (jacobian by columns through the loop) against
 * central differences of a C simulation of the same steps, and the fitting
 * loss's Hessian (hessian through the loop, forward over reverse) against
 * central differences of fit_grad. Usage: prog T */
#include <string.h>

#include "sgtest.h"
#include "spring_sensitivity.h"

static void simulate(const double *p, double x0, double v0, double dt, int64_t t, double *traj) {
  double x = x0, v = v0;
  for (int64_t i = 0; i < t; i++) {
    v += dt * (-p[0] * x - p[1] * v) / p[2];
    x += dt * v;
    traj[i] = x;
  }
}

int main(int argc, char **argv) {
  int64_t t = sgt_arg(argc, argv, 1, 50);
  sg_tensor params = SGT_TENSOR(SG_F64, 3), x0 = sgt_scalar(SG_F64), v0 = sgt_scalar(SG_F64);
  sg_tensor dt = sgt_scalar(SG_F64), times = SGT_TENSOR(SG_F64, t), J = SGT_TENSOR(SG_F64, t, 3);
  sg_tensor H = SGT_TENSOR(SG_F64, 3, 3), out = sgt_scalar(SG_F64), g = SGT_TENSOR(SG_F64, 3);
  double p[3] = {4.0, 0.3, 1.5};
  for (int k = 0; k < 3; k++)
    sgt_set(&params, k, p[k]);
  sgt_set(&x0, 0, 1.0);
  sgt_set(&v0, 0, -0.5);
  sgt_set(&dt, 0, 0.05);
  for (int64_t i = 0; i < t; i++)
    sgt_set(&times, i, 0.05 * (double)i);
  CHECK_EQ_INT(trajectory_jacobian(&params, &x0, &v0, &dt, &times, &J), SG_OK);
  double *fd = malloc(sizeof(double) * (size_t)(3 * t)), *up = malloc(sizeof(double) * (size_t)t),
         *dn = malloc(sizeof(double) * (size_t)t);
  for (int k = 0; k < 3; k++) {
    double q[3] = {p[0], p[1], p[2]}, h = 1e-6 * p[k];
    q[k] = p[k] + h;
    simulate(q, 1.0, -0.5, 0.05, t, up);
    q[k] = p[k] - h;
    simulate(q, 1.0, -0.5, 0.05, t, dn);
    for (int64_t i = 0; i < t; i++)
      fd[i * 3 + k] = (up[i] - dn[i]) / (2 * h);
  }
  CHECK_GRAD_VS(&J, fd, "central differences of the simulation", 1e-7);

  /* the observations: a trajectory of other parameters */
  double other[3] = {3.5, 0.2, 1.2};
  simulate(other, 1.0, -0.5, 0.05, t, up);
  sg_tensor obs = SGT_TENSOR(SG_F64, t);
  for (int64_t i = 0; i < t; i++)
    sgt_set(&obs, i, up[i]);
  CHECK_EQ_INT(fit_hessian(&params, &obs, &x0, &v0, &dt, &H), SG_OK);
  double hfd[9], gu[3];
  for (int k = 0; k < 3; k++) {
    double h = 1e-5 * p[k];
    sgt_set(&params, k, p[k] + h);
    CHECK_EQ_INT(fit_grad(&params, &obs, &x0, &v0, &dt, &out, &g), SG_OK);
    memcpy(gu, g.data, 24);
    sgt_set(&params, k, p[k] - h);
    CHECK_EQ_INT(fit_grad(&params, &obs, &x0, &v0, &dt, &out, &g), SG_OK);
    sgt_set(&params, k, p[k]);
    for (int i = 0; i < 3; i++)
      hfd[i * 3 + k] = (gu[i] - sgt_get(&g, i)) / (2 * h);
  }
  CHECK_GRAD_VS(&H, hfd, "differences of fit_grad", 1e-6);
  double asym = 0;
  for (int i = 0; i < 3; i++)
    for (int k = 0; k < 3; k++)
      asym = fmax(asym, fabs(sgt_get(&H, i * 3 + k) - sgt_get(&H, k * 3 + i)));
  CHECK(asym <= 1e-9 * fabs(sgt_get(&H, 0)));
  free(fd), free(up), free(dn);
  sg_tensor *all[] = {&params, &x0, &v0, &dt, &times, &J, &H, &out, &g, &obs};
  for (unsigned i = 0; i < sizeof all / sizeof *all; i++)
    free(all[i]->data);
  return sgt_finish();
}
