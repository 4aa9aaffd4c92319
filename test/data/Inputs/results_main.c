/* Driver for results.test: functions with several results. both_vjp takes
 * one seed per float result (seed0, seed1; none for the i32 out2) and
 * returns every result; its gradient is checked against central
 * differences of sum(seed0 * out0) + sum(seed1 * out1) in f64, and the f32
 * build against the same to 1e-3. */
#include "r32.h"
#include "r64.h"
#include "sgtest.h"

enum { N = 5 };
static sg_tensor x, w, s0, s1, o0, o1, o2;

static double loss(void) {
  CHECK_EQ_INT(both64(&x, &w, &o0, &o1, &o2), SG_OK);
  double l = sgt_get(&s0, 0) * sgt_get(&o0, 0);
  for (int i = 0; i < N; i++)
    l += sgt_get(&s1, i) * sgt_get(&o1, i);
  return l;
}

int main(void) {
  x = SGT_TENSOR(SG_F64, N), w = SGT_TENSOR(SG_F64, N), s0 = sgt_scalar(SG_F64);
  s1 = SGT_TENSOR(SG_F64, N), o0 = sgt_scalar(SG_F64), o1 = SGT_TENSOR(SG_F64, N);
  o2 = sgt_scalar(SG_I32);
  sgt_fill(&x, -1, 1);
  sgt_fill(&w, -1, 1);
  sgt_fill(&s0, -1, 1);
  sgt_fill(&s1, -1, 1);
  /* values: m = mean(x w); out0 = m^2, out1 = (x w - m) n, out2 = n + 1 */
  CHECK_EQ_INT(both64(&x, &w, &o0, &o1, &o2), SG_OK);
  double m = 0;
  for (int i = 0; i < N; i++)
    m += sgt_get(&x, i) * sgt_get(&w, i) / N;
  CHECK_CLOSE(sgt_get(&o0, 0), m * m, 1e-14);
  for (int i = 0; i < N; i++)
    CHECK_CLOSE(sgt_get(&o1, i), (sgt_get(&x, i) * sgt_get(&w, i) - m) * N, 1e-13);
  CHECK_EQ_INT(((int32_t *)o2.data)[0], N + 1);

  sg_tensor dx = SGT_TENSOR(SG_F64, N), dw = SGT_TENSOR(SG_F64, N);
  CHECK_EQ_INT(both64_vjp(&x, &w, &s0, &s1, &o0, &o1, &o2, &dx, &dw), SG_OK);
  CHECK_EQ_INT(((int32_t *)o2.data)[0], N + 1);
  double fdx[N], fdw[N];
  sgt_fd(loss, &x, fdx);
  sgt_fd(loss, &w, fdw);
  CHECK_GRAD(&dx, fdx, 1e-7);
  CHECK_GRAD(&dw, fdw, 1e-7);

  sg_tensor x32 = SGT_TENSOR(SG_F32, N), w32 = SGT_TENSOR(SG_F32, N), s032 = sgt_scalar(SG_F32);
  sg_tensor s132 = SGT_TENSOR(SG_F32, N), a = sgt_scalar(SG_F32), b = SGT_TENSOR(SG_F32, N);
  sg_tensor dx32 = SGT_TENSOR(SG_F32, N), dw32 = SGT_TENSOR(SG_F32, N);
  sgt_copy(&x32, &x), sgt_copy(&w32, &w), sgt_copy(&s032, &s0), sgt_copy(&s132, &s1);
  CHECK_EQ_INT(both_vjp(&x32, &w32, &s032, &s132, &a, &b, &o2, &dx32, &dw32), SG_OK);
  CHECK_GRAD(&dx32, fdx, 1e-3);
  CHECK_GRAD(&dw32, fdw, 1e-3);

  /* two scalar results: a vjp with seed0 and seed1 */
  sg_tensor p0 = sgt_scalar(SG_F32), p1 = sgt_scalar(SG_F32), pd = SGT_TENSOR(SG_F32, N);
  CHECK_EQ_INT(pair_vjp(&x32, &s032, &s032, &p0, &p1, &pd), SG_OK);
  for (int i = 0; i < N; i++) /* d/dx (s0 sum x + s0 sum x^2) = s0 (1 + 2x) */
    CHECK_CLOSE(sgt_get(&pd, i), sgt_get(&s032, 0) * (1 + 2 * sgt_get(&x32, i)), 1e-6);
  /* a wrong seed shape names it */
  CHECK_EQ_INT(both_vjp(&x32, &w32, &s132, &s132, &a, &b, &o2, &dx32, &dw32), SG_ERR_RANK);
  CHECK_STR(sg_last_error(), "both_vjp: argument 'seed0' has rank 1, expected 0");
  if (sgt_failures)
    return 1;
  printf("all checks passed\n");
  return 0;
}
