/* Driver for gemv_pair.test: argv gives d and n. The gradients of
 * gemv_pair.sg (x @ w and its adjoint fused per block of rows) against
 * central differences of the compiled f64 functions, the f32 one against
 * the f64 one, the same bits on 1 and 2 threads, and the zero rule: rows
 * whose g is 0 give d_w nothing even where x is inf or NaN. */
#include <string.h>

#include "pair.h"
#include "sgtest.h"

static int64_t D, N;
static sg_tensor w, x, y, m, out, w32, x32, y32, out32;

static double logreg_loss(void) {
  CHECK_EQ_INT(logreg(&w, &x, &y, &out), SG_OK);
  return sgt_get(&out, 0);
}

/* The logistic loss computed here, in long double. */
static double logreg_reference(void) {
  long double total = 0;
  for (int64_t i = 0; i < N; i++) {
    long double z = 0;
    for (int64_t j = 0; j < D; j++)
      z += (long double)sgt_get(&x, i * D + j) * sgt_get(&w, j);
    total += (z > 0 ? z + log1pl(expl(-z)) : log1pl(expl(z))) - sgt_get(&y, i) * z;
  }
  return (double)total;
}

static double lsq_loss(void) {
  CHECK_EQ_INT(lsq(&w, &x, &y, &out), SG_OK);
  return sgt_get(&out, 0);
}

static double masked_loss(void) {
  CHECK_EQ_INT(masked(&w, &x, &m, &out), SG_OK);
  return sgt_get(&out, 0);
}

int main(int argc, char **argv) {
  D = sgt_arg(argc, argv, 1, 16), N = sgt_arg(argc, argv, 2, 300);
  w = SGT_TENSOR(SG_F64, D), x = SGT_TENSOR(SG_F64, N, D), y = SGT_TENSOR(SG_F64, N);
  m = SGT_TENSOR(SG_F64, N), out = sgt_scalar(SG_F64);
  sgt_fill(&w, -0.5, 0.5);
  sgt_fill(&x, -1, 1);
  for (int64_t i = 0; i < N; i++) {
    sgt_set(&y, i, i % 3 == 0);
    sgt_set(&m, i, i % 4 != 1);
  }
  bool small = N * D <= 20000 && N <= 2000;
  double *fd = calloc((size_t)(N * D + D + 1), sizeof(double));
  sg_tensor d_w = SGT_TENSOR(SG_F64, D), d_w2 = SGT_TENSOR(SG_F64, D);
  sg_tensor d_x = SGT_TENSOR(SG_F64, N, D);

  /* logreg: the forward function (its product a block of rows at a time,
   * beside the loss's loop) against the loss computed here, the same bits
   * on 1 and 2 threads; the gradient's value as the forward's, d_w against
   * differences, bits */
  sg_set_num_threads(2);
  double want2 = logreg_loss();
  sg_set_num_threads(1);
  double want = logreg_loss();
  CHECK_CLOSE(want, logreg_reference(), 1e-12);
  sg_tensor v1 = {&want, {0}, 0, SG_F64}, v2 = {&want2, {0}, 0, SG_F64};
  CHECK_SAME_BITS(&v1, &v2, "logreg's value");
  CHECK_EQ_INT(logreg_grad(&w, &x, &y, &out, &d_w), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), want, 1e-12);
  if (small) {
    sgt_fd(logreg_loss, &w, fd);
    CHECK_GRAD(&d_w, fd, 1e-6);
  }
  sg_set_num_threads(2);
  CHECK_EQ_INT(logreg_grad(&w, &x, &y, &out, &d_w2), SG_OK);
  CHECK_SAME_BITS(&d_w, &d_w2, "logreg d_w");
  sg_set_num_threads(1);

  /* the f32 version against the f64 gradient */
  w32 = SGT_TENSOR(SG_F32, D), x32 = SGT_TENSOR(SG_F32, N, D), y32 = SGT_TENSOR(SG_F32, N);
  out32 = sgt_scalar(SG_F32);
  sgt_copy(&w32, &w);
  sgt_copy(&x32, &x);
  sgt_copy(&y32, &y);
  sg_tensor d_w32 = SGT_TENSOR(SG_F32, D);
  CHECK_EQ_INT(logreg32_grad(&w32, &x32, &y32, &out32, &d_w32), SG_OK);
  CHECK_CLOSE(sgt_get(&out32, 0), want, 1e-5);
  double *g64 = calloc((size_t)D + 1, sizeof(double));
  for (int64_t j = 0; j < D; j++)
    g64[j] = sgt_get(&d_w, j);
  CHECK_GRAD_VS(&d_w32, g64, "the f64 gradient", 1e-4);

  /* lsq: d_w and d_x against differences */
  sg_tensor d_wl = SGT_TENSOR(SG_F64, D);
  CHECK_EQ_INT(lsq_grad(&w, &x, &y, &out, &d_wl, &d_x), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), lsq_loss(), 1e-12);
  if (small) {
    sgt_fd(lsq_loss, &w, fd);
    CHECK_GRAD(&d_wl, fd, 1e-6);
    sgt_fd(lsq_loss, &x, fd);
    CHECK_GRAD(&d_x, fd, 1e-6);
  }

  /* expsum: row 0 of x is (1000, 0, ..., 0) and w[0] = 1, so g[0] =
   * exp(1000) = inf: d_w[0] is inf, and every other d_w[j] is the other
   * rows' terms alone (inf * 0 adds nothing), computed here (no rows:
   * all 0) */
  if (D > 0) {
    sg_tensor we = SGT_TENSOR(SG_F64, D), xe = SGT_TENSOR(SG_F64, N, D), d_we = SGT_TENSOR(SG_F64, D);
    sgt_copy(&we, &w);
    sgt_copy(&xe, &x);
    sgt_set(&we, 0, 1);
    for (int64_t j = 0; j < D && N > 0; j++)
      sgt_set(&xe, j, j == 0 ? 1000 : 0);
    CHECK_EQ_INT(expsum_grad(&we, &xe, &out, &d_we), SG_OK);
    CHECK_CLOSE(sgt_get(&d_we, 0), N > 0 ? INFINITY : 0, 0);
    for (int64_t j = 1; j < D; j++) {
      double want_j = 0;
      for (int64_t i = 1; i < N; i++) {
        double z = 0;
        for (int64_t k = 0; k < D; k++)
          z += sgt_get(&xe, i * D + k) * sgt_get(&we, k);
        want_j += exp(z) * sgt_get(&xe, i * D + j);
      }
      CHECK_CLOSE(sgt_get(&d_we, j), want_j, 1e-12);
    }
    printf("ok: expsum d_w with an infinite weight\n");
  }

  /* masked: d_w against differences with finite x, then with inf and NaN
   * in masked-out rows: d_w must not change at all */
  sg_tensor d_wm = SGT_TENSOR(SG_F64, D), d_wm2 = SGT_TENSOR(SG_F64, D);
  CHECK_EQ_INT(masked_grad(&w, &x, &m, &out, &d_wm), SG_OK);
  if (small) {
    sgt_fd(masked_loss, &w, fd);
    CHECK_GRAD(&d_wm, fd, 1e-6);
  }
  for (int64_t i = 1; i < N && D > 0; i += 4) { /* m[i] == 0 (rows of no elements: nothing to poison) */
    sgt_set(&x, i * D, i % 8 == 1 ? INFINITY : NAN);
    sgt_set(&x, i * D + D - 1, -INFINITY);
  }
  CHECK_EQ_INT(masked_grad(&w, &x, &m, &out, &d_wm2), SG_OK);
  if (memcmp(d_wm.data, d_wm2.data, (size_t)D * sizeof(double))) {
    printf("FAIL %s:%d: masked d_w changed with inf/NaN in rows whose g is 0\n", __FILE__, __LINE__);
    sgt_failures++;
  } else {
    printf("ok: masked d_w unchanged by inf/NaN in rows whose g is 0\n");
  }
  free(fd);
  free(g64);
  return sgt_finish();
}
