/* Driver for i32_grad.test: igrad_grad of the f32 and f64 builds against
 * central differences of the f64 build, and its value against plain C. */
#include "g32.h"
#include "g64.h"
#include "sgtest.h"

enum { N = 7 };
static sg_tensor x, k, s, w, out;

static double loss(void) {
  CHECK_EQ_INT(igrad64(&x, &k, &s, &w, &out), SG_OK);
  return sgt_get(&out, 0);
}

int main(void) {
  x = SGT_TENSOR(SG_F64, N), k = SGT_TENSOR(SG_I32, N), s = sgt_scalar(SG_I32);
  w = sgt_scalar(SG_F64), out = sgt_scalar(SG_F64);
  double want = 0;
  for (int i = 0; i < N; i++) {
    double xi = -0.83 + 0.271 * i; /* x * 10 stays away from integers */
    sgt_set(&x, i, xi);
    ((int32_t *)k.data)[i] = i - 3;
    want += xi * (i - 3) / N + (double)(int32_t)(xi * 10) * xi;
  }
  ((int32_t *)s.data)[0] = 5;
  sgt_set(&w, 0, 0.7);
  want += 5 * 0.7 * 0.7 + (N - 1) * 0.7;
  CHECK_CLOSE(loss(), want, 1e-12);

  sg_tensor dx = SGT_TENSOR(SG_F64, N), dw = sgt_scalar(SG_F64);
  CHECK_EQ_INT(igrad64_grad(&x, &k, &s, &w, &out, &dx, &dw), SG_OK);
  double fdx[N], fdw[1];
  sgt_fd(loss, &x, fdx);
  sgt_fd(loss, &w, fdw);
  CHECK_GRAD(&dx, fdx, 1e-7);
  CHECK_GRAD(&dw, fdw, 1e-7);
  /* by hand: d_x = k / n + i32(10 x), d_w = 2 s w + n - 1 */
  for (int i = 0; i < N; i++)
    CHECK_CLOSE(sgt_get(&dx, i), (i - 3.0) / N + (double)(int32_t)(sgt_get(&x, i) * 10), 1e-14);
  CHECK_CLOSE(sgt_get(&dw, 0), 2 * 5 * 0.7 + N - 1, 1e-14);

  sg_tensor x32 = SGT_TENSOR(SG_F32, N), w32 = sgt_scalar(SG_F32), o32 = sgt_scalar(SG_F32);
  sg_tensor dx32 = SGT_TENSOR(SG_F32, N), dw32 = sgt_scalar(SG_F32);
  sgt_copy(&x32, &x);
  sgt_copy(&w32, &w);
  CHECK_EQ_INT(igrad_grad(&x32, &k, &s, &w32, &o32, &dx32, &dw32), SG_OK);
  CHECK_GRAD(&dx32, fdx, 1e-3);
  CHECK_GRAD(&dw32, fdw, 1e-3);
  if (sgt_failures)
    return 1;
  printf("all checks passed\n");
  return 0;
}
