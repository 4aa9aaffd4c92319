/* Driver for stable_softmax.test: argv gives k and d. */
#include "m32.h"
#include "m64.h"
#include "sgtest.h"

static sg_tensor w64, x64, y64, out64;

static double loss64(void) {
  int rc = xent64(&w64, &x64, &y64, &out64);
  CHECK_EQ_INT(rc, SG_OK);
  return sgt_get(&out64, 0);
}

int main(int argc, char **argv) {
  int64_t k = argc > 2 ? atoll(argv[1]) : 7, d = argc > 2 ? atoll(argv[2]) : 5;
  sg_tensor w = SGT_TENSOR(SG_F32, k, d), x = SGT_TENSOR(SG_F32, d), y = SGT_TENSOR(SG_F32, k);
  sgt_fill(&w, -2, 2);
  sgt_fill(&x, -1, 1);
  sgt_fill(&y, 0, 1);
  w64 = SGT_TENSOR(SG_F64, k, d), x64 = SGT_TENSOR(SG_F64, d), y64 = SGT_TENSOR(SG_F64, k);
  out64 = sgt_scalar(SG_F64);
  sgt_copy(&w64, &w);
  sgt_copy(&x64, &x);
  sgt_copy(&y64, &y);

  /* The loss and its gradient, computed directly in double. */
  double *z = calloc((size_t)k, sizeof(double)), zmax = -INFINITY, se = 0, sy = 0, want = 0;
  for (int64_t i = 0; i < k; i++) {
    for (int64_t j = 0; j < d; j++)
      z[i] += sgt_get(&w, i * d + j) * sgt_get(&x, j);
    zmax = fmax(zmax, z[i]);
  }
  for (int64_t i = 0; i < k; i++)
    se += exp(z[i] - zmax), sy += sgt_get(&y, i);
  for (int64_t i = 0; i < k; i++)
    want -= sgt_get(&y, i) * (z[i] - zmax - log(se));

  sg_tensor out = sgt_scalar(SG_F32), d_w = SGT_TENSOR(SG_F32, k, d);
  CHECK_EQ_INT(xent(&w, &x, &y, &out), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), want, 1e-5);
  sgt_set(&out, 0, 0);
  CHECK_EQ_INT(xent_grad(&w, &x, &y, &out, &d_w), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), want, 1e-5);
  for (int64_t i = 0; i < k; i++)
    for (int64_t j = 0; j < d; j++) {
      double p = exp(z[i] - zmax) / se;
      CHECK_CLOSE(sgt_get(&d_w, i * d + j), (p * sy - sgt_get(&y, i)) * sgt_get(&x, j), 1e-5);
    }

  double *fd = calloc((size_t)(k * d), sizeof(double));
  sgt_fd(loss64, &w64, fd);
  CHECK_GRAD(&d_w, fd, 1e-3);
  sg_tensor d_w64 = SGT_TENSOR(SG_F64, k, d);
  CHECK_EQ_INT(xent64_grad(&w64, &x64, &y64, &out64, &d_w64), SG_OK);
  CHECK_GRAD(&d_w64, fd, 1e-7);

  /* x one element too long: SG_ERR_SHAPE, the message, no output written. */
  sg_tensor xbad = SGT_TENSOR(SG_F32, d + 1);
  sgt_set(&out, 0, 42);
  sgt_set(&d_w, 0, 42);
  CHECK_EQ_INT(xent_grad(&w, &xbad, &y, &out, &d_w), SG_ERR_SHAPE);
  char msg[200];
  snprintf(msg, sizeof msg,
           "xent_grad: argument 'x' has shape [%lld], expected [d] with d = %lld (bound by 'w')",
           (long long)(d + 1), (long long)d);
  CHECK_STR(sg_last_error(), msg);
  CHECK_EXACT(sgt_get(&out, 0), 42);
  CHECK_EXACT(sgt_get(&d_w, 0), 42);

  free(z);
  free(fd);
  free(w.data), free(x.data), free(y.data), free(out.data), free(d_w.data), free(xbad.data);
  free(w64.data), free(x64.data), free(y64.data), free(out64.data), free(d_w64.data);
  return sgt_finish();
}
