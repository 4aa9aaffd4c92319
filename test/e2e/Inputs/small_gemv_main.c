/* Driver for small_gemv.test: argv gives k and d. w @ x against a product
 * in C (f64 within 1e-13 of the largest term, f32 within 1e-5), a row left
 * over after the groups against the same row in a group, a sum of two
 * products, and the gradients of a loss through the product against
 * central differences. */
#include "sgtest.h"
#include "small_gemv.h"

static int64_t K, D;
static sg_tensor W, X;

/* the reference product of rows of w with x, and the scale of its terms */
static double ref_dot(const sg_tensor *w, const sg_tensor *x, int64_t i, double *mag) {
  double s = 0;
  *mag = 0;
  for (int64_t j = 0; j < D; j++) {
    double t = sgt_get(w, i * D + j) * sgt_get(x, j);
    s += t;
    *mag += fabs(t);
  }
  return s;
}

static double loss_value(void) {
  sg_tensor o = sgt_scalar(SG_F64);
  CHECK_EQ_INT(loss(&W, &X, &o), SG_OK);
  double l = sgt_get(&o, 0);
  free(o.data);
  return l;
}

int main(int argc, char **argv) {
  K = sgt_arg(argc, argv, 1, 10);
  D = sgt_arg(argc, argv, 2, 20);
  W = SGT_TENSOR(SG_F64, K, D), X = SGT_TENSOR(SG_F64, D);
  sg_tensor V = SGT_TENSOR(SG_F64, K, D), U = SGT_TENSOR(SG_F64, D);
  sgt_fill(&W, -1, 1), sgt_fill(&X, -1, 1), sgt_fill(&V, -1, 1), sgt_fill(&U, -1, 1);
  sg_tensor w32 = SGT_TENSOR(SG_F32, K, D), x32 = SGT_TENSOR(SG_F32, D);
  sgt_copy(&w32, &W), sgt_copy(&x32, &X);

  sg_tensor z = SGT_TENSOR(SG_F64, K), z32 = SGT_TENSOR(SG_F32, K), z2 = SGT_TENSOR(SG_F64, K);
  CHECK_EQ_INT(mv(&W, &X, &z), SG_OK);
  CHECK_EQ_INT(mv32(&w32, &x32, &z32), SG_OK);
  CHECK_EQ_INT(mv2(&W, &X, &V, &U, &z2), SG_OK);
  for (int64_t i = 0; i < K; i++) {
    double mag, mag2, want = ref_dot(&W, &X, i, &mag), want32 = ref_dot(&w32, &x32, i, &mag);
    double want2 = want + ref_dot(&V, &U, i, &mag2);
    CHECK_CLOSE(sgt_get(&z, i), want, 1e-13 * (1 + mag));
    CHECK_CLOSE(sgt_get(&z32, i), want32, 1e-5 * (1 + mag));
    CHECK_CLOSE(sgt_get(&z2, i), want2, 1e-13 * (1 + mag + mag2));
  }
  printf("ok: %lld x %lld products\n", (long long)K, (long long)D);

  /* A row is summed in the same order whether it is in a group or left
   * over: the last row made a copy of the first gives the same bits. */
  if (K > 1 && K * D <= 4096) {
    for (int64_t j = 0; j < D; j++)
      sgt_set(&W, (K - 1) * D + j, sgt_get(&W, j)), sgt_set(&w32, (K - 1) * D + j, sgt_get(&w32, j));
    CHECK_EQ_INT(mv(&W, &X, &z), SG_OK);
    CHECK_EQ_INT(mv32(&w32, &x32, &z32), SG_OK);
    CHECK_EXACT(sgt_get(&z, K - 1), sgt_get(&z, 0));
    CHECK_EXACT(sgt_get(&z32, K - 1), sgt_get(&z32, 0));
  }

  /* loss = sum(tanh(w @ x)): d_w and d_x against central differences */
  sg_tensor o = sgt_scalar(SG_F64), dw = SGT_TENSOR(SG_F64, K, D), dx = SGT_TENSOR(SG_F64, D);
  CHECK_EQ_INT(loss_grad(&W, &X, &o, &dw, &dx), SG_OK);
  double *fd = malloc((size_t)(K * D + D + 1) * sizeof(double));
  sgt_fd(loss_value, &W, fd);
  CHECK_GRAD(&dw, fd, 1e-7);
  sgt_fd(loss_value, &X, fd);
  CHECK_GRAD(&dx, fd, 1e-7);
  free(fd);
  return sgt_finish();
}
