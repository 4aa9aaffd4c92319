/* examples/v3/ba_jacobian.sg from C: each observation's residual and its
 * 2 x 15 Jacobian (jacobian by rows, in a loop, of a residual built with
 * concat and stack) against the Jacobian derived by hand
 * (bench/derivs/ba_hand.c) and against central differences of the
 * residuals in every camera, point and weight entry. Camera 0 has no
 * rotation (the first-order branch of rotate's select).
 * Usage: prog P (observations of 3 cameras and 5 points) */
#include <string.h>

#include "ba_hand.h"
#include "ba_jacobian.h"
#include "sgtest.h"

enum { NCAM = 3, NPT = 5 };

int main(int argc, char **argv) {
  int64_t p = sgt_arg(argc, argv, 1, 12);
  sg_tensor cams = SGT_TENSOR(SG_F64, NCAM, 11), pts = SGT_TENSOR(SG_F64, NPT, 3);
  sg_tensor w = SGT_TENSOR(SG_F64, p), obs = SGT_TENSOR(SG_I32, p, 2);
  sg_tensor feats = SGT_TENSOR(SG_F64, p, 2), r = SGT_TENSOR(SG_F64, p, 2);
  sg_tensor J = SGT_TENSOR(SG_F64, p, 2, 15), r2 = SGT_TENSOR(SG_F64, p, 2);
  sg_tensor J2 = SGT_TENSOR(SG_F64, p, 2, 15);
  for (int c = 0; c < NCAM; c++) { /* rotation ~0.3, centre, f, (u0, v0), k1, k2 */
    double cam[11] = {sgt_uniform(-0.3, 0.3), sgt_uniform(-0.3, 0.3), sgt_uniform(-0.3, 0.3),
                      sgt_uniform(-1, 1), sgt_uniform(-1, 1), sgt_uniform(-12, -8),
                      sgt_uniform(400, 600), sgt_uniform(-5, 5), sgt_uniform(-5, 5),
                      sgt_uniform(-0.1, 0.1), sgt_uniform(-0.01, 0.01)};
    if (c == 0)
      cam[0] = cam[1] = cam[2] = 0;
    for (int k = 0; k < 11; k++)
      sgt_set(&cams, c * 11 + k, cam[k]);
  }
  sgt_fill(&pts, -1, 1);
  sgt_fill(&w, 0.5, 1.5);
  sgt_fill(&feats, -50, 50);
  int32_t *o = obs.data;
  for (int64_t i = 0; i < p; i++)
    o[2 * i] = (int32_t)(i % NCAM), o[2 * i + 1] = (int32_t)((i * 2 + i / NCAM) % NPT);
  CHECK_EQ_INT(ba_jacobian(&cams, &pts, &w, &obs, &feats, &r, &J), SG_OK);

  double *hr = malloc(sizeof(double) * (size_t)(2 * p)), *hJ = malloc(sizeof(double) * (size_t)(30 * p));
  ba_hand(p, cams.data, pts.data, w.data, o, feats.data, hr, hJ);
  CHECK_GRAD_VS(&r, hr, "the residuals of bench/derivs/ba_hand.c", 1e-13);
  CHECK_GRAD_VS(&J, hJ, "the Jacobian derived by hand (bench/derivs/ba_hand.c)", 1e-12);

  /* central differences: entry k of observation i's v is a camera, point or
   * weight entry; perturbing it moves r[i] by J[i][:, k] (other observations
   * sharing it move too, and are read in their own turn) */
  double *fd = calloc((size_t)(30 * p), sizeof(double));
  for (int64_t i = 0; i < p; i++)
    for (int k = 0; k < 15; k++) {
      sg_tensor *t = k < 11 ? &cams : k < 14 ? &pts : &w;
      int64_t at = k < 11 ? o[2 * i] * 11 + k : k < 14 ? o[2 * i + 1] * 3 + (k - 11) : i;
      double v = sgt_get(t, at), h = 1e-6 * fmax(1, fabs(v));
      sgt_set(t, at, v + h);
      CHECK_EQ_INT(ba_jacobian(&cams, &pts, &w, &obs, &feats, &r2, &J2), SG_OK);
      double up0 = sgt_get(&r2, 2 * i), up1 = sgt_get(&r2, 2 * i + 1);
      sgt_set(t, at, v - h);
      CHECK_EQ_INT(ba_jacobian(&cams, &pts, &w, &obs, &feats, &r2, &J2), SG_OK);
      sgt_set(t, at, v);
      fd[30 * i + k] = (up0 - sgt_get(&r2, 2 * i)) / (2 * h);
      fd[30 * i + 15 + k] = (up1 - sgt_get(&r2, 2 * i + 1)) / (2 * h);
    }
  CHECK_GRAD_VS(&J, fd, "central differences of the residuals", 1e-6);
  free(hr), free(hJ), free(fd);
  sg_tensor *all[] = {&cams, &pts, &w, &obs, &feats, &r, &J, &r2, &J2};
  for (unsigned i = 0; i < sizeof all / sizeof *all; i++)
    free(all[i]->data);
  return sgt_finish();
}
