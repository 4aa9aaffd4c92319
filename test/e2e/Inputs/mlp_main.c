/* Driver for mlp.test: argv gives n (batch), d (inputs), h (hidden), o
 * (outputs).
 *
 * mlp_loss = mean over the n x o entries of (tanh(x w1 + b1) w2 + b2 - y)^2,
 * a smooth function of all four non-const parameters, so mlp_loss_grad must
 * equal its derivative: central differences of the f64 build are the
 * reference. layer(x, w) = tanh(x w) has a tensor result, so layer_vjp takes
 * a cotangent `seed` shaped [n, h] and returns seed^T J for x and w; the
 * reference is the finite-difference VJP sum(seed * (layer(x + h e) -
 * layer(x - h e))) / 2h for each element e of x and of w. */
#include "m32.h"
#include "m64.h"
#include "sgtest.h"

static sg_tensor w1_64, b1_64, w2_64, b2_64, x64, y64, out64;
static double mlp64(void) {
  CHECK_EQ_INT(mlp_loss64(&w1_64, &b1_64, &w2_64, &b2_64, &x64, &y64, &out64), SG_OK);
  return sgt_get(&out64, 0);
}

static sg_tensor lx64, lw64, seed64, lout64;
static double layer_dot_seed(void) {
  CHECK_EQ_INT(layer64(&lx64, &lw64, &lout64), SG_OK);
  double s = 0;
  for (int64_t i = 0; i < sgt_numel(&lout64); i++)
    s += sgt_get(&seed64, i) * sgt_get(&lout64, i);
  return s;
}

int main(int argc, char **argv) {
  int64_t n = sgt_arg(argc, argv, 1, 5), d = sgt_arg(argc, argv, 2, 4);
  int64_t h = sgt_arg(argc, argv, 3, 6), o = sgt_arg(argc, argv, 4, 3);
  sg_tensor w1 = SGT_TENSOR(SG_F32, d, h), b1 = SGT_TENSOR(SG_F32, h);
  sg_tensor w2 = SGT_TENSOR(SG_F32, h, o), b2 = SGT_TENSOR(SG_F32, o);
  sg_tensor x = SGT_TENSOR(SG_F32, n, d), y = SGT_TENSOR(SG_F32, n, o);
  sgt_fill(&w1, -1, 1), sgt_fill(&b1, -0.5, 0.5), sgt_fill(&w2, -1, 1);
  sgt_fill(&b2, -0.5, 0.5), sgt_fill(&x, -1, 1), sgt_fill(&y, -1, 1);
  w1_64 = SGT_TENSOR(SG_F64, d, h), b1_64 = SGT_TENSOR(SG_F64, h);
  w2_64 = SGT_TENSOR(SG_F64, h, o), b2_64 = SGT_TENSOR(SG_F64, o);
  x64 = SGT_TENSOR(SG_F64, n, d), y64 = SGT_TENSOR(SG_F64, n, o), out64 = sgt_scalar(SG_F64);
  sgt_copy(&w1_64, &w1), sgt_copy(&b1_64, &b1), sgt_copy(&w2_64, &w2);
  sgt_copy(&b2_64, &b2), sgt_copy(&x64, &x), sgt_copy(&y64, &y);

  /* The loss in double, written out. */
  double want = 0;
  double *hid = calloc((size_t)h, sizeof(double));
  for (int64_t s = 0; s < n; s++) {
    for (int64_t j = 0; j < h; j++) {
      double z = sgt_get(&b1, j);
      for (int64_t i = 0; i < d; i++)
        z += sgt_get(&x, s * d + i) * sgt_get(&w1, i * h + j);
      hid[j] = tanh(z);
    }
    for (int64_t k = 0; k < o; k++) {
      double z = sgt_get(&b2, k);
      for (int64_t j = 0; j < h; j++)
        z += hid[j] * sgt_get(&w2, j * o + k);
      double e = z - sgt_get(&y, s * o + k);
      want += e * e / (double)(n * o);
    }
  }

  sg_tensor out = sgt_scalar(SG_F32);
  sg_tensor d_w1 = SGT_TENSOR(SG_F32, d, h), d_b1 = SGT_TENSOR(SG_F32, h);
  sg_tensor d_w2 = SGT_TENSOR(SG_F32, h, o), d_b2 = SGT_TENSOR(SG_F32, o);
  CHECK_EQ_INT(mlp_loss(&w1, &b1, &w2, &b2, &x, &y, &out), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), want, 1e-5);
  sgt_set(&out, 0, 0);
  CHECK_EQ_INT(mlp_loss_grad(&w1, &b1, &w2, &b2, &x, &y, &out, &d_w1, &d_b1, &d_w2, &d_b2),
               SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), want, 1e-5);
  CHECK_CLOSE(mlp64(), want, 1e-12);

  double *fd_w1 = calloc((size_t)(d * h), sizeof(double)), *fd_b1 = calloc((size_t)h, 8);
  double *fd_w2 = calloc((size_t)(h * o), sizeof(double)), *fd_b2 = calloc((size_t)o, 8);
  sgt_fd(mlp64, &w1_64, fd_w1);
  sgt_fd(mlp64, &b1_64, fd_b1);
  sgt_fd(mlp64, &w2_64, fd_w2);
  sgt_fd(mlp64, &b2_64, fd_b2);
  CHECK_GRAD(&d_w1, fd_w1, 1e-3);
  CHECK_GRAD(&d_b1, fd_b1, 1e-3);
  CHECK_GRAD(&d_w2, fd_w2, 1e-3);
  CHECK_GRAD(&d_b2, fd_b2, 1e-3);
  sg_tensor d_w1_64 = SGT_TENSOR(SG_F64, d, h), d_b1_64 = SGT_TENSOR(SG_F64, h);
  sg_tensor d_w2_64 = SGT_TENSOR(SG_F64, h, o), d_b2_64 = SGT_TENSOR(SG_F64, o);
  CHECK_EQ_INT(mlp_loss64_grad(&w1_64, &b1_64, &w2_64, &b2_64, &x64, &y64, &out64, &d_w1_64,
                               &d_b1_64, &d_w2_64, &d_b2_64),
               SG_OK);
  CHECK_CLOSE(sgt_get(&out64, 0), want, 1e-12);
  CHECK_GRAD(&d_w1_64, fd_w1, 1e-7);
  CHECK_GRAD(&d_b1_64, fd_b1, 1e-7);
  CHECK_GRAD(&d_w2_64, fd_w2, 1e-7);
  CHECK_GRAD(&d_b2_64, fd_b2, 1e-7);

  /* layer and layer_vjp, on x and w1. */
  sg_tensor lout = SGT_TENSOR(SG_F32, n, h), seed = SGT_TENSOR(SG_F32, n, h);
  sg_tensor v_x = SGT_TENSOR(SG_F32, n, d), v_w = SGT_TENSOR(SG_F32, d, h);
  sgt_fill(&seed, -1, 1);
  lx64 = SGT_TENSOR(SG_F64, n, d), lw64 = SGT_TENSOR(SG_F64, d, h);
  seed64 = SGT_TENSOR(SG_F64, n, h), lout64 = SGT_TENSOR(SG_F64, n, h);
  sgt_copy(&lx64, &x), sgt_copy(&lw64, &w1), sgt_copy(&seed64, &seed);
  CHECK_EQ_INT(layer(&x, &w1, &lout), SG_OK);
  for (int64_t s = 0; s < n; s++)
    for (int64_t j = 0; j < h; j++) {
      double z = 0;
      for (int64_t i = 0; i < d; i++)
        z += sgt_get(&x, s * d + i) * sgt_get(&w1, i * h + j);
      CHECK_CLOSE(sgt_get(&lout, s * h + j), tanh(z), 1e-5);
      sgt_set(&lout, s * h + j, 0);
    }
  CHECK_EQ_INT(layer_vjp(&x, &w1, &seed, &lout, &v_x, &v_w), SG_OK);
  for (int64_t s = 0; s < n; s++)
    for (int64_t j = 0; j < h; j++) {
      double z = 0;
      for (int64_t i = 0; i < d; i++)
        z += sgt_get(&x, s * d + i) * sgt_get(&w1, i * h + j);
      CHECK_CLOSE(sgt_get(&lout, s * h + j), tanh(z), 1e-5);
    }
  double *fv_x = calloc((size_t)(n * d), sizeof(double));
  double *fv_w = calloc((size_t)(d * h), sizeof(double));
  sgt_fd(layer_dot_seed, &lx64, fv_x);
  sgt_fd(layer_dot_seed, &lw64, fv_w);
  CHECK_GRAD_VS(&v_x, fv_x, "finite-difference VJP", 1e-3);
  CHECK_GRAD_VS(&v_w, fv_w, "finite-difference VJP", 1e-3);
  sg_tensor v_x64 = SGT_TENSOR(SG_F64, n, d), v_w64 = SGT_TENSOR(SG_F64, d, h);
  CHECK_EQ_INT(layer64_vjp(&lx64, &lw64, &seed64, &lout64, &v_x64, &v_w64), SG_OK);
  CHECK_GRAD_VS(&v_x64, fv_x, "finite-difference VJP", 1e-7);
  CHECK_GRAD_VS(&v_w64, fv_w, "finite-difference VJP", 1e-7);

  char msg[300];
  /* x with d + 1 columns: d is bound by w1. SG_ERR_SHAPE, nothing written. */
  sg_tensor xbad = SGT_TENSOR(SG_F32, n, d + 1);
  sgt_set(&out, 0, 42), sgt_set(&d_w1, 0, 42), sgt_set(&d_b2, 0, 42);
  CHECK_EQ_INT(mlp_loss_grad(&w1, &b1, &w2, &b2, &xbad, &y, &out, &d_w1, &d_b1, &d_w2, &d_b2),
               SG_ERR_SHAPE);
  snprintf(msg, sizeof msg,
           "mlp_loss_grad: argument 'x' has shape [%lld, %lld], expected [n, d] with d = %lld "
           "(bound by 'w1')",
           (long long)n, (long long)(d + 1), (long long)d);
  CHECK_STR(sg_last_error(), msg);
  CHECK_EXACT(sgt_get(&out, 0), 42);
  CHECK_EXACT(sgt_get(&d_w1, 0), 42);
  CHECK_EXACT(sgt_get(&d_b2, 0), 42);

  /* A seed with h + 1 columns. */
  sg_tensor seedbad = SGT_TENSOR(SG_F32, n, h + 1);
  sgt_set(&lout, 0, 42), sgt_set(&v_x, 0, 42), sgt_set(&v_w, 0, 42);
  CHECK_EQ_INT(layer_vjp(&x, &w1, &seedbad, &lout, &v_x, &v_w), SG_ERR_SHAPE);
  CHECK_CONTAINS(sg_last_error(), "layer_vjp: argument 'seed' has shape");
  CHECK_EXACT(sgt_get(&lout, 0), 42);
  CHECK_EXACT(sgt_get(&v_x, 0), 42);
  CHECK_EXACT(sgt_get(&v_w, 0), 42);

  /* v_w's buffer overlapping the output's: SG_ERR_ALIAS. */
  sg_tensor big = SGT_TENSOR(SG_F32, n * h + d * h);
  sg_tensor o1 = lout, o2 = v_w;
  o1.data = big.data;
  o2.data = (float *)big.data + n * h - 1; /* one element shared */
  sgt_set(&big, 0, 42), sgt_set(&big, n * h + d * h - 1, 42);
  CHECK_EQ_INT(layer_vjp(&x, &w1, &seed, &o1, &v_x, &o2), SG_ERR_ALIAS);
  CHECK_CONTAINS(sg_last_error(), "layer_vjp: ");
  CHECK_EXACT(sgt_get(&big, 0), 42);
  CHECK_EXACT(sgt_get(&big, n * h + d * h - 1), 42);
  CHECK_EXACT(sgt_get(&v_x, 0), 42);

  free(hid), free(fd_w1), free(fd_b1), free(fd_w2), free(fd_b2), free(fv_x), free(fv_w);
  sg_tensor *all[] = {&w1, &b1, &w2, &b2, &x, &y, &out, &d_w1, &d_b1, &d_w2, &d_b2,
                      &w1_64, &b1_64, &w2_64, &b2_64, &x64, &y64, &out64, &d_w1_64,
                      &d_b1_64, &d_w2_64, &d_b2_64, &lout, &seed, &v_x, &v_w, &lx64, &lw64,
                      &seed64, &lout64, &v_x64, &v_w64, &xbad, &seedbad, &big};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    free(all[i]->data);
  return sgt_finish();
}
