/* Driver for derivative_tails.test: the derivatives of sigmoid, tanh,
 * softplus, expm1, exp and log1p (through the f_vjp of the rules.sg
 * exports, seed 1) against the derivative computed here in double, to
 * relative 1e-5 (f32) and 1e-12 (f64) at every x of a grid over [-40, 40]
 * where the true derivative is a normal number of the dtype, saturated
 * tails included. */
#include <float.h>

#include "rules32.h"
#include "rules64.h"
#include "opsutil.h"

typedef int (*vjp_t)(const sg_tensor *, const sg_tensor *, sg_tensor *, sg_tensor *);
static double d_sigmoid(double x) { double e = exp(-fabs(x)); return e / ((1 + e) * (1 + e)); }
static double d_tanh(double x) { double c = cosh(x); return 1 / (c * c); }
static double d_softplus(double x) { return 1 / (1 + exp(-x)); }
static double d_log1p(double x) { return 1 / (1 + x); }

static const struct {
  const char *name;
  vjp_t f32, f64;
  double (*d)(double);
  double lo;
  double peak; /* > 0: error relative to the derivative's maximum, not its value */
} fns[] = {
    /* sigmoid' = s(1 - s) and tanh' = 1 - t^2 reuse the forward value, as
     * hand-written backward passes (and JAX, PyTorch) do; in the saturated
     * tails their error is then a few ulp of the peak, not of the value. */
    {"sigmoid", ru_sigmoid_vjp, ru64_sigmoid_vjp, d_sigmoid, -40, 0.25},
    {"tanh", ru_tanh_vjp, ru64_tanh_vjp, d_tanh, -40, 1},
    {"softplus", ru_softplus_vjp, ru64_softplus_vjp, d_softplus, -40, 0},
    {"expm1", ru_expm1_vjp, ru64_expm1_vjp, exp, -40, 0},
    {"exp", ru_exp_vjp, ru64_exp_vjp, exp, -40, 0},
    {"log1p", ru_log1p_vjp, ru64_log1p_vjp, d_log1p, -0.75, 0},
};

int main(void) {
  enum { G = 161 }; /* x = -40, -39.5, ..., 40 */
  for (size_t f = 0; f < sizeof fns / sizeof *fns; f++)
    for (int dt = SG_F32; dt <= SG_F64; dt++) {
      double tol = dt == SG_F32 ? 1e-5 : 1e-12, tiny = dt == SG_F32 ? FLT_MIN : DBL_MIN;
      double big = dt == SG_F32 ? 80 : 700; /* keep exp(x) finite */
      int64_t n = G;
      sg_tensor x = sgo_new(dt, 1, &n), s = sgo_new(dt, 1, &n), o = sgo_new(dt, 1, &n),
                d = sgo_new(dt, 1, &n);
      for (int64_t i = 0; i < n; i++)
        sgt_set(&x, i, fmax(fns[f].lo, -40 + 0.5 * (double)i)), sgt_set(&s, i, 1);
      CHECK_EQ_INT((dt == SG_F32 ? fns[f].f32 : fns[f].f64)(&x, &s, &o, &d), SG_OK);
      double worst = 0, wx = 0, wgot = 0, wwant = 0, first = INFINITY;
      for (int64_t i = 0; i < n; i++) {
        double xi = sgt_get(&x, i), want = fns[f].d(xi), got = sgt_get(&d, i);
        if (!(want >= tiny) || fabs(xi) > big)
          continue;
        double rel = fabs(got - want) / fmax(want, fns[f].peak);
        if (!(rel <= tol) && fabs(xi) < fabs(first))
          first = xi;
        if (!(rel <= worst))
          worst = rel, wx = xi, wgot = got, wwant = want;
      }
      const char *dn = dt == SG_F32 ? "f32" : "f64";
      if (!(worst <= tol)) {
        printf("FAIL %s' (%s): relative error %.3g > %g at x = %g: %.10g, expected %.10g "
               "(beyond tolerance from x = %g)\n",
               fns[f].name, dn, worst, tol, wx, wgot, wwant, first);
        sgt_failures++;
      } else {
        printf("ok: %s' (%s) relative error %.2g\n", fns[f].name, dn, worst);
      }
    }
  sgo_free_all();
  return sgt_finish();
}
