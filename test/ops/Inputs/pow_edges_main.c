/* Driver for pow_edges.test (pow_edges.sg, f64).
 * x ** 3 + pow(x, 2) at negative x: the value and 3x^2 + 2x, no NaN.
 * sum(x ** y) at x = 0, y > 0: y -> 0^y is constant 0 on y > 0, so d_y = 0
 * exactly (JAX too gives 0: it takes log(x) * x^y as 0 where x = 0), and
 * d_x = y 0^(y-1) = 0 for y > 1; at x = 2, y = 0: d_x = 0, d_y = log 2.
 * At x = inf, y < 0 (x^y = 0 for every y < 0): d_y = 0 exactly too. */
#include "pe.h"
#include "opsutil.h"

int main(void) {
  sg_tensor x = VEC(SG_F64, -2, 0, -0.5, 1.5), s = VEC(SG_F64, 1, 1, 1, 1),
            o = sgo_like(SG_F64, &x), d = sgo_like(SG_F64, &x);
  CHECK_EQ_INT(pe_lit_vjp(&x, &s, &o, &d), SG_OK);
  CHECK_ALL_EXACT(&o, -8 + 4, 0, -0.125 + 0.25, 3.375 + 2.25);
  CHECK_ALL_EXACT(&d, 12 - 4, 0, 0.75 - 1, 6.75 + 3);

  sg_tensor b = VEC(SG_F64, 0, 0, 2), e = VEC(SG_F64, 3, 2, 0), out = SCALAR(SG_F64, 0),
            db = sgo_like(SG_F64, &b), de = sgo_like(SG_F64, &e);
  CHECK_EQ_INT(pe_xy_grad(&b, &e, &out, &db, &de), SG_OK);
  CHECK_EXACT(sgt_get(&out, 0), 1);
  CHECK_ALL_EXACT(&db, 0, 0, 0);
  CHECK_EXACT(sgt_get(&de, 0), 0);
  CHECK_EXACT(sgt_get(&de, 1), 0);
  CHECK_ULPS(&de, 2, log(2.0), 1);

  /* x = 0, y = 0 (0^0 = 1): d_x = 0 where y = 0, since x^0 is 1 for every
   * x (JAX's rule too), not 0 * 0^-1 = NaN; d_y = 0 as at y > 0. Forward
   * mode takes the same rule: with t_x = t_y = 1 the tangent is 0. Found by
   * tools/check_random.py (v3 seed 41041: forward 0, reverse NaN). */
  sg_tensor b0 = VEC(SG_F64, 0, 1), e0 = VEC(SG_F64, 0, 0), out0 = SCALAR(SG_F64, 0),
            db0 = sgo_like(SG_F64, &b0), de0 = sgo_like(SG_F64, &e0),
            t1 = VEC(SG_F64, 1, 1), tout0 = SCALAR(SG_F64, 0);
  CHECK_EQ_INT(pe_xy_grad(&b0, &e0, &out0, &db0, &de0), SG_OK);
  CHECK_EXACT(sgt_get(&out0, 0), 2);
  CHECK_ALL_EXACT(&db0, 0, 0);
  CHECK_ALL_EXACT(&de0, 0, 0);
  CHECK_EQ_INT(pe_xy_jvp(&b0, &e0, &t1, &t1, &out0, &tout0), SG_OK);
  CHECK_EXACT(sgt_get(&tout0, 0), 0);

  /* x = inf: y = -0.5 gives 0 for every y < 0, so d_y = 0 (not
   * 0 * log inf = NaN) and d_x = y inf^(y-1) = -0; y = 2 gives inf, with
   * d_y = inf log inf = inf and d_x = 2 inf = inf. */
  sg_tensor bi = VEC(SG_F64, INFINITY, INFINITY), ei = VEC(SG_F64, -0.5, 2),
            outi = SCALAR(SG_F64, 0), dbi = sgo_like(SG_F64, &bi), dei = sgo_like(SG_F64, &ei);
  CHECK_EQ_INT(pe_xy_grad(&bi, &ei, &outi, &dbi, &dei), SG_OK);
  CHECK_EXACT(sgt_get(&outi, 0), INFINITY);
  CHECK_EXACT(sgt_get(&dei, 0), 0);
  CHECK_EXACT(sgt_get(&dei, 1), INFINITY);
  CHECK_EXACT(sgt_get(&dbi, 0), 0);
  CHECK_EXACT(sgt_get(&dbi, 1), INFINITY);
  sgo_free_all();
  return sgt_finish();
}
