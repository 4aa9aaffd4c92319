/* Driver for maxmin_nan_adjoint.test (Inputs/maxmin_adjoint.sg): each
 * export at chosen points x, y (n = 2), in f32 and f64, against exact
 * expected gradients (CHECK_CLOSE with tolerance 0: zeros exact, NaN and
 * infinities matching). */
#include "mm32.h"
#include "mm64.h"
#include "sgtest.h"

typedef int Grad2(const sg_tensor *, const sg_tensor *, sg_tensor *, sg_tensor *, sg_tensor *);
typedef int Grad1(const sg_tensor *, const sg_tensor *, sg_tensor *, sg_tensor *);

/* f's gradient at (x, y) must be (dx, dy); g1 for exports with a const y */
static void check(const char *name, int dt, Grad2 *g2, Grad1 *g1, const double *x,
                  const double *y, const double *dx, const double *dy) {
  sg_tensor tx = SGT_TENSOR(dt, 2), ty = SGT_TENSOR(dt, 2), out = sgt_scalar(dt);
  sg_tensor gx = SGT_TENSOR(dt, 2), gy = SGT_TENSOR(dt, 2);
  for (int i = 0; i < 2; i++) {
    sgt_set(&tx, i, x[i]), sgt_set(&ty, i, y[i]);
    sgt_set(&gx, i, -7), sgt_set(&gy, i, -7);
  }
  int before = sgt_failures;
  CHECK_EQ_INT(g2 ? g2(&tx, &ty, &out, &gx, &gy) : g1(&tx, &ty, &out, &gx), SG_OK);
  for (int i = 0; i < 2; i++) {
    CHECK_CLOSE(sgt_get(&gx, i), dx[i], 0);
    if (g2)
      CHECK_CLOSE(sgt_get(&gy, i), dy[i], 0);
  }
  printf("%s %s %s\n", sgt_failures == before ? "ok:" : "FAIL", name, dt == SG_F64 ? "f64" : "f32");
  free(tx.data), free(ty.data), free(out.data), free(gx.data), free(gy.data);
}

int main(void) {
  const double inf = INFINITY, nan = NAN;
  for (int t = 0; t < 2; t++) {
    int dt = t ? SG_F64 : SG_F32;
    /* NaN adjoint: maximum is -1 at both elements, sqrt(-1) = NaN */
    check("mx nan", dt, t ? f64_mx_grad : mx_grad, NULL, (double[]){-4, -1}, (double[]){-1, -4},
          (double[]){0, nan}, (double[]){nan, 0});
    /* infinite adjoint: maximum is 0, sqrt'(0) = +inf */
    check("mx inf", dt, t ? f64_mx_grad : mx_grad, NULL, (double[]){-1, 0}, (double[]){0, -1},
          (double[]){0, inf}, (double[]){inf, 0});
    check("mn nan", dt, t ? f64_mn_grad : mn_grad, NULL, (double[]){-1, -4}, (double[]){-4, -1},
          (double[]){0, nan}, (double[]){nan, 0});
    check("mn inf", dt, t ? f64_mn_grad : mn_grad, NULL, (double[]){1, 0}, (double[]){0, 1},
          (double[]){0, inf}, (double[]){inf, 0});
    /* a NaN operand (sqrt(-1)): neither side gets a gradient; a tie gives half */
    check("mx_nanop", dt, t ? f64_mx_nanop_grad : mx_nanop_grad, NULL, (double[]){-1, 4},
          (double[]){1, 2}, (double[]){0, 0.125}, (double[]){0, 0.5});
    /* relu and max agree: the loser gets 0 from an infinite adjoint */
    check("rl inf", dt, NULL, t ? f64_rl_grad : rl_grad, (double[]){-1, 0}, (double[]){0, 0},
          (double[]){0, 0}, NULL);
    check("mr inf", dt, NULL, t ? f64_mr_grad : mr_grad, (double[]){-1, 0}, (double[]){0, 0},
          (double[]){0, inf}, NULL);
  }
  return sgt_finish();
}
