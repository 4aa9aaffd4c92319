/* Driver for mpi_model.test (test/e2e): the gradient of examples/mpi/model.sg against
 * the hand-derived one (d_w = x^T (p - y), d_b = sum over rows of p - y,
 * with p the softmax of the logits) and against f64 central differences.
 * argv gives n, d and c. */
#include "m32.h"
#include "m64.h"
#include "sgtest.h"

static sg_tensor w64, b64, x64, y64, out64;

static double loss64(void) {
  CHECK_EQ_INT(shard_loss64(&w64, &b64, &x64, &y64, &out64), SG_OK);
  return sgt_get(&out64, 0);
}

int main(int argc, char **argv) {
  int64_t n = sgt_arg(argc, argv, 1, 9), d = sgt_arg(argc, argv, 2, 5), c = sgt_arg(argc, argv, 3, 3);
  sg_tensor w = SGT_TENSOR(SG_F32, d, c), b = SGT_TENSOR(SG_F32, c);
  sg_tensor x = SGT_TENSOR(SG_F32, n, d), y = SGT_TENSOR(SG_F32, n, c);
  sgt_fill(&w, -2, 2);
  sgt_fill(&b, -1, 1);
  sgt_fill(&x, -1, 1);
  for (int64_t r = 0; r < n; r++) /* one-hot labels */
    sgt_set(&y, r * c + r % c, 1);
  w64 = SGT_TENSOR(SG_F64, d, c), b64 = SGT_TENSOR(SG_F64, c);
  x64 = SGT_TENSOR(SG_F64, n, d), y64 = SGT_TENSOR(SG_F64, n, c);
  out64 = sgt_scalar(SG_F64);
  sgt_copy(&w64, &w), sgt_copy(&b64, &b), sgt_copy(&x64, &x), sgt_copy(&y64, &y);

  /* The loss and its gradient, computed directly in double. */
  double want = 0, *dw = calloc((size_t)(d * c), sizeof(double));
  double *db = calloc((size_t)c, sizeof(double)), *p = calloc((size_t)c, sizeof(double));
  for (int64_t r = 0; r < n; r++) {
    double m = -INFINITY, se = 0;
    for (int64_t k = 0; k < c; k++) {
      p[k] = sgt_get(&b, k);
      for (int64_t i = 0; i < d; i++)
        p[k] += sgt_get(&x, r * d + i) * sgt_get(&w, i * c + k);
      m = fmax(m, p[k]);
    }
    for (int64_t k = 0; k < c; k++)
      se += exp(p[k] - m);
    for (int64_t k = 0; k < c; k++) {
      double yk = sgt_get(&y, r * c + k);
      want -= yk * (p[k] - m - log(se));
      p[k] = exp(p[k] - m) / se - yk;
      db[k] += p[k];
      for (int64_t i = 0; i < d; i++)
        dw[i * c + k] += sgt_get(&x, r * d + i) * p[k];
    }
  }

  sg_tensor out = sgt_scalar(SG_F32), d_w = SGT_TENSOR(SG_F32, d, c), d_b = SGT_TENSOR(SG_F32, c);
  CHECK_EQ_INT(shard_loss_grad(&w, &b, &x, &y, &out, &d_w, &d_b), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), want, 1e-5);
  CHECK_GRAD_VS(&d_w, dw, "x^T (softmax - y)", 1e-5);
  CHECK_GRAD_VS(&d_b, db, "sum of softmax - y", 1e-5);

  double *fdw = calloc((size_t)(d * c), sizeof(double)), *fdb = calloc((size_t)c, sizeof(double));
  sgt_fd(loss64, &w64, fdw);
  sgt_fd(loss64, &b64, fdb);
  CHECK_GRAD(&d_w, fdw, 1e-3);
  CHECK_GRAD(&d_b, fdb, 1e-3);
  sg_tensor d_w64 = SGT_TENSOR(SG_F64, d, c), d_b64 = SGT_TENSOR(SG_F64, c);
  CHECK_EQ_INT(shard_loss64_grad(&w64, &b64, &x64, &y64, &out64, &d_w64, &d_b64), SG_OK);
  CHECK_GRAD(&d_w64, fdw, 1e-7);
  CHECK_GRAD(&d_b64, fdb, 1e-7);

  free(dw), free(db), free(p), free(fdw), free(fdb);
  free(w.data), free(b.data), free(x.data), free(y.data), free(out.data), free(d_w.data),
      free(d_b.data);
  free(w64.data), free(b64.data), free(x64.data), free(y64.data), free(out64.data),
      free(d_w64.data), free(d_b64.data);
  return sgt_finish();
}
