/* Driver for empty_rewrites.test (Inputs/empty_rewrites.sg): each export at
 * k = 0 (the sum of nothing) and k = 3, in f32 and f64, against exact
 * values (CHECK_CLOSE with tolerance 0 where the result is exact: zeros,
 * NaN; 1e-6 relative otherwise). */
#include "er32.h"
#include "er64.h"
#include "sgtest.h"

typedef int Grad(const sg_tensor *, const sg_tensor *, sg_tensor *, sg_tensor *);

/* f_grad at p (n = np elements, 0 for a scalar) with x of k elements */
static void run(const char *name, int dt, Grad *g, int np, const double *p, int64_t k,
                double want, const double *dwant, double tol) {
  sg_tensor tp = np ? SGT_TENSOR(dt, np) : sgt_scalar(dt), d = np ? SGT_TENSOR(dt, np) : sgt_scalar(dt);
  sg_tensor x = SGT_TENSOR(dt, k), out = sgt_scalar(dt);
  for (int i = 0; i < (np ? np : 1); i++)
    sgt_set(&tp, i, p[i]), sgt_set(&d, i, -7);
  int before = sgt_failures;
  CHECK_EQ_INT(g(&tp, &x, &out, &d), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), want, tol);
  for (int i = 0; i < (np ? np : 1); i++)
    CHECK_CLOSE(sgt_get(&d, i), dwant[i], tol);
  printf("%s %s k=%lld %s\n", sgt_failures == before ? "ok:" : "FAIL", name, (long long)k,
         dt == SG_F64 ? "f64" : "f32");
  free(tp.data), free(d.data), free(x.data), free(out.data);
}

int main(void) {
  const double nan = NAN;
  for (int t = 0; t < 2; t++) {
    int dt = t ? SG_F64 : SG_F32;
    double tol = t ? 1e-12 : 1e-6;
    /* sum(broadcast(log(0), [0])) = 0, not -inf * 0 = NaN */
    run("es_sum", dt, t ? f64_es_sum_grad : es_sum_grad, 0, (double[]){0}, 0, 0, (double[]){0}, 0);
    run("es_sum", dt, t ? f64_es_sum_grad : es_sum_grad, 0, (double[]){2}, 3, 3 * log(2.0),
        (double[]){1.5}, tol);
    /* the mean of nothing is NaN, its gradient 0 (not 1/0 summed over nothing as NaN) */
    run("es_mean", dt, t ? f64_es_mean_grad : es_mean_grad, 0, (double[]){5}, 0, nan, (double[]){0}, 0);
    run("es_mean", dt, t ? f64_es_mean_grad : es_mean_grad, 0, (double[]){5}, 3, 5, (double[]){1}, tol);
    run("es_axis", dt, t ? f64_es_axis_grad : es_axis_grad, 2, (double[]){1000, 1}, 0, 0,
        (double[]){0, 0}, 0);
    run("es_axis", dt, t ? f64_es_axis_grad : es_axis_grad, 2, (double[]){0, 1}, 3,
        3 * (1 + exp(1.0)), (double[]){3, 3 * exp(1.0)}, tol);
    run("es_mean_axis", dt, t ? f64_es_mean_axis_grad : es_mean_axis_grad, 2, (double[]){1, 2}, 0,
        nan, (double[]){0, 0}, 0);
    run("es_mean_axis", dt, t ? f64_es_mean_axis_grad : es_mean_axis_grad, 2, (double[]){1, 2}, 3,
        3, (double[]){1, 1}, tol);
  }
  return sgt_finish();
}
