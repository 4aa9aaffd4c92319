/* Driver for select_nan_every_op.test. Every export of select_nan.sg is
 * f(x: f[2]) -> scalar, evaluated at x = {unpicked, picked}: element 0 lies
 * in the branch select() does not take, where the forward value is NaN or
 * infinite, so its gradient must be exactly 0; element 1 is checked against
 * central differences of the f64 build (1e-7 in f64, 1e-3 in f32), and the
 * value must be finite. */
#include "sn32.h"
#include "sn64.h"
#include "sgtest.h"

typedef int Fwd(const sg_tensor *, sg_tensor *);
typedef int Grad(const sg_tensor *, sg_tensor *, sg_tensor *);

#define CASES \
  X(sn_exp, -1, 4) \
  X(sn_log, -1, 4) \
  X(sn_log1p, -1, 4) \
  X(sn_expm1, -1, 4) \
  X(sn_sqrt, -1, 4) \
  X(sn_rsqrt, -1, 4) \
  X(sn_square, -1, 4) \
  X(sn_sin, -1, 4) \
  X(sn_cos, -1, 4) \
  X(sn_tanh, -1, 4) \
  X(sn_sigmoid, -1, 4) \
  X(sn_softplus, -1, 4) \
  X(sn_relu, -1, 4) \
  X(sn_abs, -1, 4) \
  X(si_exp, 1000, 1) \
  X(si_log, 1000, 1) \
  X(si_log1p, 1000, 1) \
  X(si_expm1, 1000, 1) \
  X(si_sqrt, 1000, 1) \
  X(si_rsqrt, 1000, 1) \
  X(si_square, 1000, 1) \
  X(si_sin, 1000, 1) \
  X(si_cos, 1000, 1) \
  X(si_tanh, 1000, 1) \
  X(si_sigmoid, 1000, 1) \
  X(si_softplus, 1000, 1) \
  X(si_relu, 1000, 1) \
  X(si_abs, 1000, 1) \
  X(sb_mul, -1, 4) \
  X(sb_mul_r, -1, 4) \
  X(sb_div, -1, 4) \
  X(sb_div_r, -1, 4) \
  X(sb_pow, -1, 4) \
  X(sb_pow_r, -1, 4) \
  X(sb_maximum, -1, 4) \
  X(sb_minimum, -1, 4) \
  X(sb_add, -1, 4) \
  X(sb_sub, -1, 4) \
  X(sb_mulsq, -1, 4) \
  X(sr_t, -1, 4) \
  X(ig_fwd, -1, 4) \
  X(ig_sq, -1, 4) \
  X(ig_sel, 0, 1)

static Fwd *fwd64;
static sg_tensor x64;
static double loss64(void) {
  double out;
  sg_tensor o = {&out, {0}, 0, SG_F64};
  CHECK_EQ_INT(fwd64(&x64, &o), SG_OK);
  return out;
}

static void one(const char *name, Fwd *f64, Grad *g32, Grad *g64, double a, double b) {
  double xv[2] = {a, b}, fd[2];
  fwd64 = f64;
  x64 = (sg_tensor){xv, {2}, 1, SG_F64};
  sgt_fd(loss64, &x64, fd);
  for (int t = 0; t < 2; t++) {
    int dt = t ? SG_F64 : SG_F32;
    sg_tensor x = SGT_TENSOR(dt, 2), d = SGT_TENSOR(dt, 2), out = sgt_scalar(dt);
    sgt_set(&x, 0, a);
    sgt_set(&x, 1, b);
    sgt_set(&d, 0, -7);
    CHECK_EQ_INT((t ? g64 : g32)(&x, &out, &d), SG_OK);
    double v = sgt_get(&out, 0), d0 = sgt_get(&d, 0), d1 = sgt_get(&d, 1);
    double tol = t ? 1e-7 : 1e-3;
    bool ok = d0 == 0 && isfinite(v) && fabs(d1 - fd[1]) <= tol * fmax(1, fabs(fd[1]));
    if (!ok)
      printf("FAIL %s (%s): value %.9g, d = [%.9g, %.9g], expected [0, %.9g]\n", name,
             t ? "f64" : "f32", v, d0, d1, fd[1]);
    else
      printf("ok: %s %s d = [0, %.9g]\n", name, t ? "f64" : "f32", d1);
    sgt_failures += !ok;
    free(x.data), free(d.data), free(out.data);
  }
}

int main(void) {
#define X(name, a, b) one(#name, f64_##name, name##_grad, f64_##name##_grad, a, b);
  CASES
#undef X
  /* the inner gradient's value itself: [0, cos(2)/4] */
  double xv[2] = {-1, 4}, out;
  sg_tensor x = {xv, {2}, 1, SG_F64}, o = {&out, {0}, 0, SG_F64};
  CHECK_EQ_INT(f64_ig_fwd(&x, &o), SG_OK);
  CHECK_CLOSE(out, cos(2.0) / 4, 1e-15);
  CHECK_EQ_INT(f64_ig_sq(&x, &o), SG_OK);
  CHECK_CLOSE(out, cos(2.0) * cos(2.0) / 16, 1e-15);
  return sgt_finish();
}
