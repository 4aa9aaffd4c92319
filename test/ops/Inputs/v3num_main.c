/* Driver for v3_numerics.test: exact checks of v3num.sg (see there). */
#include "v3num.h"
#include "opsutil.h"

static sg_tensor glx, glk;
static double loop_loss(void) {
  sg_tensor out = SCALAR(SG_F64, 0);
  n_loop(&glx, &glk, &out);
  return sgt_get(&out, 0);
}

int main(void) {
  /* inputs near +-1e30 in one row: finite, and the gradient is exactly the
   * softmax: 1 at the max, exp(-2e30) = 0 elsewhere */
  sg_tensor x = VEC(SG_F64, 1e30, -1e30, 1e30 - 1e15, 0), out = SCALAR(SG_F64, 0),
            d = sgo_like(SG_F64, &x);
  CHECK_EQ_INT(n_lse_grad(&x, &out, &d), SG_OK);
  CHECK_EXACT(sgt_get(&out, 0), 1e30 + log1p(exp(-1e15)));
  CHECK_ALL_EXACT(&d, 1, 0, 0, 0);
  sg_tensor x32 = VEC(SG_F32, 1e30, -1e30, 3, 1e30), o32 = SCALAR(SG_F32, 0), d32 = sgo_like(SG_F32, &x32);
  CHECK_EQ_INT(n_lse32_grad(&x32, &o32, &d32), SG_OK);
  CHECK_ULPS(&o32, 0, 1e30f, 1);
  CHECK_ALL_EXACT(&d32, 0.5, 0, 0, 0.5);
  /* softmax of a row with +-1e30 and a row of moderate values */
  sg_tensor sx = MAT(SG_F64, 2, 3, 1e30, -1e30, 1e30, 1, 2, 3), so = sgo_like(SG_F64, &sx);
  CHECK_EQ_INT(n_softmax(&sx, &so), SG_OK);
  double e1 = exp(-2.0), e2 = exp(-1.0), den = e1 + e2 + 1;
  CHECK_ALL_EXACT(&so, 0.5, 0, 0.5, e1 / den, e2 / den, 1 / den);
  sg_tensor lx = MAT(SG_F32, 1, 3, 1e30, -1e30, 0), lo = sgo_like(SG_F32, &lx);
  CHECK_EQ_INT(n_log_softmax(&lx, &lo), SG_OK);
  CHECK_ALL_EXACT(&lo, 0, -2e30f, -1e30f);
  /* the gradient of a log-softmax cross-entropy is softmax - y, exactly 0
   * where the softmax underflows and y is 0 */
  sg_tensor xx = MAT(SG_F32, 1, 3, 1e30, -1e30, 0), yy = MAT(SG_F32, 1, 3, 1, 0, 0),
            xo = SCALAR(SG_F32, 0), xd = sgo_like(SG_F32, &xx);
  CHECK_EQ_INT(n_xent_grad(&xx, &yy, &xo, &xd), SG_OK);
  CHECK_EXACT(sgt_get(&xo, 0), 0);
  CHECK_ALL_EXACT(&xd, 0, 0, 0);

  /* prod: the gradient is the product of the others, exactly, with one
   * zero (only the zero's is nonzero) and with two (all zero); no NaN
   * from a division by the product */
  sg_tensor p1 = VEC(SG_F64, 2, 0, 3, 5), pd = sgo_like(SG_F64, &p1), po = SCALAR(SG_F64, 0);
  CHECK_EQ_INT(n_prod_grad(&p1, &po, &pd), SG_OK);
  CHECK_EXACT(sgt_get(&po, 0), 0);
  CHECK_ALL_EXACT(&pd, 0, 30, 0, 0);
  sg_tensor p2 = VEC(SG_F64, 0, 4, 0, 5);
  CHECK_EQ_INT(n_prod_grad(&p2, &po, &pd), SG_OK);
  CHECK_ALL_EXACT(&pd, 0, 0, 0, 0);
  sg_tensor p3 = VEC(SG_F64, 1e200, 1e200, 1e-200, 0.5);
  CHECK_EQ_INT(n_prod_grad(&p3, &po, &pd), SG_OK);
  CHECK_EXACT(sgt_get(&pd, 3), 1e200 * 1e200 * 1e-200); /* inf: the others' product overflows */
  sg_tensor p4 = VEC(SG_F64, 2, -3, 0.25, 7);
  CHECK_EQ_INT(n_prod_grad(&p4, &po, &pd), SG_OK);
  CHECK_EXACT(sgt_get(&po, 0), -10.5);
  CHECK_ALL_EXACT(&pd, -5.25, 3.5, -42, -1.5);

  /* clip: the gradient reaches x where lo <= x <= hi, ends included, and
   * lo or hi outside */
  sg_tensor cx = VEC(SG_F64, -2, -1, 0, 1, 2, 5), clo = VEC(SG_F64, -1, -1, -1, -1, -1, 6),
            chi = VEC(SG_F64, 1, 1, 1, 1, 1, 4), co = SCALAR(SG_F64, 0);
  sg_tensor cdx = sgo_like(SG_F64, &cx), cdl = sgo_like(SG_F64, &cx), cdh = sgo_like(SG_F64, &cx);
  CHECK_EQ_INT(n_clip_grad(&cx, &clo, &chi, &co, &cdx, &cdl, &cdh), SG_OK);
  CHECK_EXACT(sgt_get(&co, 0), -1 - 1 + 0 + 1 + 1 + 4); /* lo > hi gives hi (NumPy) */
  CHECK_ALL_EXACT(&cdx, 0, 1, 1, 1, 0, 0);
  CHECK_ALL_EXACT(&cdl, 1, 0, 0, 0, 0, 0);
  CHECK_ALL_EXACT(&cdh, 0, 0, 0, 0, 1, 1);

  /* i32 cumsum wraps like i32 addition */
  sg_tensor ix = MAT(SG_I32, 3, 2, 1, 2147483647, 2, 1, 3, -5), io = sgo_like(SG_I32, &ix);
  CHECK_EQ_INT(n_cumsum(&ix, &io), SG_OK);
  CHECK_ALL_EXACT(&io, 1, 2147483647, 3, -2147483648.0, 6, 2147483643);

  /* concat over symbolic sizes (n + m + 1), its adjoint the pieces */
  sg_tensor a = VEC(SG_F64, 1, 2), b = VEC(SG_F64, 3, -4, 5), ab = VEC(SG_F64, 0, 0, 0, 0, 0, 0);
  CHECK_EQ_INT(n_concat(&a, &b, &ab), SG_OK);
  CHECK_ALL_EXACT(&ab, 1, 2, 9, 16, 25, 1);
  sg_tensor seed = VEC(SG_F64, 10, 20, 30, 40, 50, 60), da = sgo_like(SG_F64, &a), db = sgo_like(SG_F64, &b);
  CHECK_EQ_INT(n_concat_vjp(&a, &b, &seed, &ab, &da, &db), SG_OK);
  CHECK_ALL_EXACT(&da, 10, 20);
  CHECK_ALL_EXACT(&db, 180, -320, 500);
  sg_tensor ia = MAT(SG_I32, 1, 2, 7, 8), ib = MAT(SG_I32, 2, 2, 1, 2, 3, 4), iab = sgo_new(SG_I32, 2, (int64_t[]){3, 2});
  CHECK_EQ_INT(n_concat_i32(&ia, &ib, &iab), SG_OK);
  CHECK_ALL_EXACT(&iab, 7, 8, 1, 2, 3, 4);
  /* stack of two scalars is a vector of 2 */
  sg_tensor s0 = SCALAR(SG_F64, 3), s1 = SCALAR(SG_F64, -2), sv = VEC(SG_F64, 0, 0);
  CHECK_EQ_INT(n_stack(&s0, &s1, &sv), SG_OK);
  CHECK_ALL_EXACT(&sv, -6, -2);
  sg_tensor ss = VEC(SG_F64, 1, 10), d0 = SCALAR(SG_F64, 0), d1 = SCALAR(SG_F64, 0);
  CHECK_EQ_INT(n_stack_vjp(&s0, &s1, &ss, &sv, &d0, &d1), SG_OK);
  CHECK_EXACT(sgt_get(&d0, 0), -2);
  CHECK_EXACT(sgt_get(&d1, 0), 13);

  /* inside a loop: concat, softmax, cumsum, logsumexp, against central
   * differences */
  glx = VEC(SG_F64, 0.3, -0.7, 1.1);
  glk = SCALAR(SG_I32, 3);
  sg_tensor lo2 = SCALAR(SG_F64, 0), ld = sgo_like(SG_F64, &glx);
  CHECK_EQ_INT(n_loop_grad(&glx, &glk, &lo2, &ld), SG_OK);
  double fd[3];
  sgt_fd(loop_loss, &glx, fd);
  CHECK_GRAD(&ld, fd, 1e-8);
  /* lgamma's derivatives: n_lgamma_d2 is sum(digamma(x)) and its gradient
   * trigamma(x), by the polygamma rules (lgamma -> digamma -> trigamma),
   * against series summed here in long double (reflection below 0) */
  sg_tensor gx = VEC(SG_F64, 0.3, 1.4616321449683622, 2.5, 7.25, -2.5, 40), go = SCALAR(SG_F64, 0),
            gd = sgo_like(SG_F64, &gx);
  CHECK_EQ_INT(n_lgamma_d2_grad(&gx, &go, &gd), SG_OK);
  long double dsum = 0, pi = 3.14159265358979323846264338L;
  for (int64_t i = 0; i < sgt_numel(&gx); i++) {
    double v = sgt_get(&gx, i);
    long double y = v < 0 ? 1 - v : v, tri = 0, dig = 0, z = y;
    for (int k = 0; k < 1000000; k++) /* psi'(y) = sum 1/(y+k)^2, the tail by Euler-Maclaurin */
      tri += 1.0L / ((y + k) * (y + k));
    tri += 1.0L / (y + 1000000) + 0.5L / ((y + 1000000) * (y + 1000000));
    for (; z < 40; z += 1) /* psi(y) = psi(y + m) - sum 1/(y+k), then the asymptotic series */
      dig -= 1 / z;
    long double w = 1 / (z * z);
    dig += logl(z) - 0.5L / z - w * (1.0L / 12 - w * (1.0L / 120 - w * (1.0L / 252 - w / 240)));
    if (v < 0) { /* psi(x) = psi(1-x) - pi cot(pi x); psi'(x) = pi^2 / sin^2(pi x) - psi'(1-x) */
      long double s = sinl(pi * v);
      dig -= pi * cosl(pi * v) / s;
      tri = pi * pi / (s * s) - tri;
    }
    dsum += dig;
    CHECK_ULPS(&gd, i, (double)tri, 8);
  }
  CHECK_CLOSE(sgt_get(&go, 0), (double)dsum, 1e-14);
  sgo_free_all();
  return sgt_finish();
}
