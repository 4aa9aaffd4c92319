/* The bundle-adjustment reprojection error and its 2 x 15 Jacobian per
 * observation, derived by hand and kept in registers (the expert's C that
 * examples/v3/ba_jacobian.sg is measured against; ADBench's manual
 * derivatives do the same math). For v = [r (3), C (3), f, u0, v0, k1, k2,
 * X (3), w]: p = X - C, pr = R(r) p (Rodrigues; p + r x p at r = 0),
 * proj = pr[0:2] / pr[2], res = w (proj (1 + k1 s + k2 s^2) f + (u0, v0) -
 * feat) with s = |proj|^2. Row-major J[i][2][15]. */
#include <math.h>
#include <stdint.h>

#include "ba_hand.h"

static void cross(const double *a, const double *b, double *o) {
  o[0] = a[1] * b[2] - a[2] * b[1];
  o[1] = a[2] * b[0] - a[0] * b[2];
  o[2] = a[0] * b[1] - a[1] * b[0];
}

/* res[2] and J[2][15] of one observation */
static void one(const double *cam, const double *X, double w, const double *feat, double *res,
                double *J) {
  const double *r = cam;
  double p[3] = {X[0] - cam[3], X[1] - cam[4], X[2] - cam[5]};
  double pr[3], R[3][3], Jr[3][3];
  double sq = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
  if (sq != 0) {
    double th = sqrt(sq), ith = 1 / th, ct = cos(th), st = sin(th);
    double u[3] = {r[0] * ith, r[1] * ith, r[2] * ith};
    double uxp[3], up = u[0] * p[0] + u[1] * p[1] + u[2] * p[2];
    cross(u, p, uxp);
    for (int i = 0; i < 3; i++)
      pr[i] = p[i] * ct + uxp[i] * st + u[i] * up * (1 - ct);
    /* R = ct I + st [u]x + (1 - ct) u u^T */
    double ux[3][3] = {{0, -u[2], u[1]}, {u[2], 0, -u[0]}, {-u[1], u[0], 0}};
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++)
        R[i][j] = (i == j) * ct + st * ux[i][j] + (1 - ct) * u[i] * u[j];
    /* d pr / d r = a u^T + st (-[p]x) P + (1 - ct)(u p^T P + (u.p) P), with
     * a = -st p + ct (u x p) + st (u.p) u and P = (I - u u^T) / th */
    double a[3], P[3][3], px[3][3] = {{0, -p[2], p[1]}, {p[2], 0, -p[0]}, {-p[1], p[0], 0}};
    for (int i = 0; i < 3; i++)
      a[i] = -st * p[i] + ct * uxp[i] + st * up * u[i];
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++)
        P[i][j] = ((i == j) - u[i] * u[j]) * ith;
    double pP[3];
    for (int j = 0; j < 3; j++)
      pP[j] = p[0] * P[0][j] + p[1] * P[1][j] + p[2] * P[2][j];
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) {
        double pxP = px[i][0] * P[0][j] + px[i][1] * P[1][j] + px[i][2] * P[2][j];
        Jr[i][j] = a[i] * u[j] - st * pxP + (1 - ct) * (u[i] * pP[j] + up * P[i][j]);
      }
  } else { /* pr = p + r x p */
    double rxp[3];
    cross(r, p, rxp);
    for (int i = 0; i < 3; i++)
      pr[i] = p[i] + rxp[i];
    double rx[3][3] = {{0, -r[2], r[1]}, {r[2], 0, -r[0]}, {-r[1], r[0], 0}};
    double px[3][3] = {{0, -p[2], p[1]}, {p[2], 0, -p[0]}, {-p[1], p[0], 0}};
    for (int i = 0; i < 3; i++)
      for (int j = 0; j < 3; j++) {
        R[i][j] = (i == j) + rx[i][j];
        Jr[i][j] = -px[i][j];
      }
  }
  double z = pr[2], iz = 1 / z, pj[2] = {pr[0] * iz, pr[1] * iz};
  double s = pj[0] * pj[0] + pj[1] * pj[1];
  double f = cam[6], k1 = cam[9], k2 = cam[10], dist = 1 + k1 * s + k2 * s * s;
  for (int i = 0; i < 2; i++)
    res[i] = w * (pj[i] * dist * f + cam[7 + i] - feat[i]);
  /* d res / d proj = w f (dist I + 2 (k1 + 2 k2 s) proj proj^T), then
   * d proj / d pr = [[1/z, 0, -x/z^2], [0, 1/z, -y/z^2]] */
  double g = 2 * (k1 + 2 * k2 * s), M[2][2], D[2][3];
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      M[i][j] = w * f * ((i == j) * dist + g * pj[i] * pj[j]);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 3; j++) {
      double dp0 = j == 0 ? iz : j == 2 ? -pj[0] * iz : 0;
      double dp1 = j == 1 ? iz : j == 2 ? -pj[1] * iz : 0;
      D[i][j] = M[i][0] * dp0 + M[i][1] * dp1;
    }
  for (int i = 0; i < 2; i++) {
    double *row = J + 15 * i;
    for (int j = 0; j < 3; j++) {
      double dr = 0, dx = 0;
      for (int k = 0; k < 3; k++) {
        dr += D[i][k] * Jr[k][j];
        dx += D[i][k] * R[k][j];
      }
      row[j] = dr;       /* rotation */
      row[3 + j] = -dx;  /* camera centre */
      row[11 + j] = dx;  /* point */
    }
    row[6] = w * pj[i] * dist;          /* f */
    row[7] = i == 0 ? w : 0;            /* u0 */
    row[8] = i == 1 ? w : 0;            /* v0 */
    row[9] = w * pj[i] * f * s;         /* k1 */
    row[10] = w * pj[i] * f * s * s;    /* k2 */
    row[14] = pj[i] * dist * f + cam[7 + i] - feat[i]; /* w */
  }
}

void ba_hand(int64_t p, const double *cams, const double *pts, const double *w,
             const int32_t *obs, const double *feats, double *res, double *J) {
  for (int64_t i = 0; i < p; i++)
    one(cams + 11 * obs[2 * i], pts + 3 * obs[2 * i + 1], w[i], feats + 2 * i, res + 2 * i,
        J + 30 * i);
}
