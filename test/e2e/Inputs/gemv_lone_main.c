/* Driver for gemv_lone.test: later(p) is 1 / sqrt(2 + p^2) (the product
 * is of zeros), for the function and for its gradient's value, and
 * d/dp = -p (2 + p^2)^(-3/2); two(x, w, u) against tanh(x w) and
 * sigmoid(x u) computed here (n = 300 rows: two blocks). */
#include "gemv_lone.h"
#include "sgtest.h"

int main(void) {
  const double ps[] = {0.9, -0.5, 0.3, 1.7};
  sg_tensor p = sgt_scalar(SG_F64), out = sgt_scalar(SG_F64), gout = sgt_scalar(SG_F64);
  sg_tensor d_p = sgt_scalar(SG_F64);
  for (int k = 0; k < 4; k++) {
    double x = ps[k];
    sgt_set(&p, 0, x);
    CHECK_EQ_INT(later(&p, &out), SG_OK);
    CHECK_CLOSE(sgt_get(&out, 0), 1 / sqrt(2 + x * x), 1e-15);
    CHECK_EQ_INT(later_grad(&p, &gout, &d_p), SG_OK);
    CHECK_CLOSE(sgt_get(&gout, 0), 1 / sqrt(2 + x * x), 1e-15);
    CHECK_CLOSE(sgt_get(&d_p, 0), -x * pow(2 + x * x, -1.5), 1e-14);
  }
  printf("ok: later(p) and its gradient\n");

  enum { N = 300, D = 5 };
  sg_tensor x = SGT_TENSOR(SG_F64, N, D), w = SGT_TENSOR(SG_F64, D), u = SGT_TENSOR(SG_F64, D);
  sg_tensor t = SGT_TENSOR(SG_F64, N), s = SGT_TENSOR(SG_F64, N);
  sgt_fill(&x, -1, 1);
  sgt_fill(&w, -1, 1);
  sgt_fill(&u, -1, 1);
  CHECK_EQ_INT(two(&x, &w, &u, &t, &s), SG_OK);
  for (int64_t i = 0; i < N; i++) {
    double zw = 0, zu = 0;
    for (int64_t j = 0; j < D; j++) {
      zw += sgt_get(&x, i * D + j) * sgt_get(&w, j);
      zu += sgt_get(&x, i * D + j) * sgt_get(&u, j);
    }
    CHECK_CLOSE(sgt_get(&t, i), tanh(zw), 1e-14);
    CHECK_CLOSE(sgt_get(&s, i), 1 / (1 + exp(-zu)), 1e-14);
  }
  printf("ok: two products in one group\n");
  free(x.data);
  free(w.data);
  free(u.data);
  free(t.data);
  free(s.data);
  free(p.data);
  free(out.data);
  free(gout.data);
  free(d_p.data);
  return sgt_finish();
}
