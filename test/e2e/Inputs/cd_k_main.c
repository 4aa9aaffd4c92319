/* Driver for cd_k.test (examples/v2/cd_k.sg): CD-k's Gibbs chain is
 * replayed in C from the runtime's own generator (sg_rt_random: split,
 * then uniform f64 or f32), so the loss must agree to rounding -- any
 * sample that differed would move it by O(1/b). The sample is held fixed
 * by stop_gradient, so the gradient is that of mean(F(v0) - F(sample)) at
 * the fixed sample (derived by hand below); it is also checked against
 * central differences of the compiled f64 loss, after checking in C that
 * no perturbation w +- h, a +- h, c +- h flips a comparison of the chain
 * (so the finite differences see the same samples). Arguments: nv nh b
 * steps key. */
#include "cdk32.h"
#include "cdk64.h"
#include "sgrt.h"
#include "sgtest.h"

static int NV, NH, B, STEPS, KEY;
static sg_tensor w, a, c, v0, steps, key, out;

static double loss(void) {
  CHECK_EQ_INT(cdk_loss64(&w, &a, &c, &v0, &steps, &key, &out), SG_OK);
  return sgt_get(&out, 0);
}

static double sigmoid(double x) { return 1 / (1 + exp(-x)); }

/* The chain in C: the final v (b x nv, 0/1) for parameters w, a, c, with
 * uniforms of `dtype` (the build being checked). */
static void chain(int dtype, const double *W, const double *A, const double *C, double *v) {
  double *h = malloc(sizeof(double) * (size_t)(B * NH)), *uh = malloc(sizeof(double) * (size_t)(B * NH));
  double *uv = malloc(sizeof(double) * (size_t)(B * NV));
  float *f = malloc(sizeof(float) * (size_t)(B * (NH > NV ? NH : NV)));
  for (int i = 0; i < B * NV; i++)
    v[i] = sgt_get(&v0, i);
  for (int s = 0; s < STEPS; s++) {
    int32_t k = KEY + s, ks[2];
    sg_rt_random(2, SG_I32, &k, 1, ks, 2);
    double *us[2] = {uh, uv};
    int64_t ns[2] = {B * NH, B * NV};
    for (int t = 0; t < 2; t++) {
      if (dtype == SG_F64)
        sg_rt_random(0, SG_F64, &ks[t], 1, us[t], ns[t]);
      else {
        sg_rt_random(0, SG_F32, &ks[t], 1, f, ns[t]);
        for (int64_t i = 0; i < ns[t]; i++)
          us[t][i] = f[i];
      }
    }
    for (int i = 0; i < B; i++)
      for (int j = 0; j < NH; j++) {
        double z = C[j];
        for (int q = 0; q < NV; q++)
          z += v[i * NV + q] * W[q * NH + j];
        h[i * NH + j] = uh[i * NH + j] < sigmoid(z);
      }
    for (int i = 0; i < B; i++)
      for (int q = 0; q < NV; q++) {
        double z = A[q];
        for (int j = 0; j < NH; j++)
          z += h[i * NH + j] * W[q * NH + j];
        v[i * NV + q] = uv[i * NV + q] < sigmoid(z);
      }
  }
  free(h), free(uh), free(uv), free(f);
}

/* F(v) = -(v @ a) - sum(softplus(v @ w + c), axis=1) summed over rows with
 * weight `sign`, and its gradient added into gw, ga, gc. */
static double free_energy(const double *v, double sign, double *gw, double *ga, double *gc) {
  double total = 0;
  for (int i = 0; i < B; i++) {
    for (int q = 0; q < NV; q++) {
      total -= sign * v[i * NV + q] * sgt_get(&a, q);
      ga[q] -= sign * v[i * NV + q] / B;
    }
    for (int j = 0; j < NH; j++) {
      double z = sgt_get(&c, j);
      for (int q = 0; q < NV; q++)
        z += v[i * NV + q] * sgt_get(&w, q * NH + j);
      total -= sign * (z > 0 ? z + log1p(exp(-z)) : log1p(exp(z)));
      gc[j] -= sign * sigmoid(z) / B;
      for (int q = 0; q < NV; q++)
        gw[q * NH + j] -= sign * v[i * NV + q] * sigmoid(z) / B;
    }
  }
  return total / B;
}

static bool same(const double *x, const double *y) {
  for (int i = 0; i < B * NV; i++)
    if (x[i] != y[i])
      return false;
  return true;
}

int main(int argc, char **argv) {
  if (argc != 6)
    return 2;
  NV = atoi(argv[1]), NH = atoi(argv[2]), B = atoi(argv[3]), STEPS = atoi(argv[4]), KEY = atoi(argv[5]);
  w = SGT_TENSOR(SG_F64, NV, NH), a = SGT_TENSOR(SG_F64, NV), c = SGT_TENSOR(SG_F64, NH);
  v0 = SGT_TENSOR(SG_F64, B, NV), steps = sgt_scalar(SG_I32), key = sgt_scalar(SG_I32), out = sgt_scalar(SG_F64);
  sgt_fill(&w, -1, 1);
  sgt_fill(&a, -0.5, 0.5);
  sgt_fill(&c, -0.5, 0.5);
  for (int i = 0; i < B * NV; i++)
    sgt_set(&v0, i, sgt_uniform(0, 1) < 0.5);
  *(int32_t *)steps.data = STEPS, *(int32_t *)key.data = KEY;
  int nw = NV * NH;
  double *W = w.data, *A = a.data, *C = c.data;
  double *sample = malloc(sizeof(double) * (size_t)(B * NV)), *other = malloc(sizeof(double) * (size_t)(B * NV));
  double *gw = calloc((size_t)nw, sizeof(double)), *ga = calloc((size_t)NV, sizeof(double)),
         *gc = calloc((size_t)NH, sizeof(double));
  chain(SG_F64, W, A, C, sample);
  double want = free_energy(v0.data, 1, gw, ga, gc) + free_energy(sample, -1, gw, ga, gc);
  CHECK_CLOSE(loss(), want, 1e-12);
  printf("ok: the f64 loss replays the chain (%d steps, loss %.6f)\n", STEPS, want);

  sg_tensor dw = SGT_TENSOR(SG_F64, NV, NH), da = SGT_TENSOR(SG_F64, NV), dc = SGT_TENSOR(SG_F64, NH);
  CHECK_EQ_INT(cdk_loss64_grad(&w, &a, &c, &v0, &steps, &key, &out, &dw, &da, &dc), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), want, 1e-12);
  CHECK_GRAD_VS(&dw, gw, "the gradient at the fixed sample", 1e-12);
  CHECK_GRAD_VS(&da, ga, "the gradient at the fixed sample", 1e-12);
  CHECK_GRAD_VS(&dc, gc, "the gradient at the fixed sample", 1e-12);

  /* no perturbation the finite differences make flips a sample */
  double *ps[3] = {W, A, C};
  int np[3] = {nw, NV, NH}, flips = 0;
  for (int t = 0; t < 3; t++)
    for (int i = 0; i < np[t]; i++)
      for (int sgn = -1; sgn <= 1; sgn += 2) {
        double keep = ps[t][i];
        ps[t][i] = keep + sgn * 1e-5 * fmax(1.0, fabs(keep));
        chain(SG_F64, W, A, C, other);
        flips += !same(sample, other);
        ps[t][i] = keep;
      }
  CHECK_EQ_INT(flips, 0);
  printf("ok: no perturbation flips a sample\n");
  double *fw = malloc(sizeof(double) * (size_t)nw), *fa = malloc(sizeof(double) * (size_t)NV),
         *fc = malloc(sizeof(double) * (size_t)NH);
  sgt_fd(loss, &w, fw);
  sgt_fd(loss, &a, fa);
  sgt_fd(loss, &c, fc);
  CHECK_GRAD(&dw, fw, 1e-7);
  CHECK_GRAD(&da, fa, 1e-7);
  CHECK_GRAD(&dc, fc, 1e-7);

  /* the f32 build: its own (f32) uniforms, the same replay */
  sg_tensor w32 = SGT_TENSOR(SG_F32, NV, NH), a32 = SGT_TENSOR(SG_F32, NV), c32 = SGT_TENSOR(SG_F32, NH),
            v32 = SGT_TENSOR(SG_F32, B, NV), o32 = sgt_scalar(SG_F32);
  sg_tensor dw32 = SGT_TENSOR(SG_F32, NV, NH), da32 = SGT_TENSOR(SG_F32, NV), dc32 = SGT_TENSOR(SG_F32, NH);
  sgt_copy(&w32, &w), sgt_copy(&a32, &a), sgt_copy(&c32, &c), sgt_copy(&v32, &v0);
  memset(gw, 0, sizeof(double) * (size_t)nw), memset(ga, 0, sizeof(double) * (size_t)NV),
      memset(gc, 0, sizeof(double) * (size_t)NH);
  chain(SG_F32, W, A, C, sample);
  want = free_energy(v0.data, 1, gw, ga, gc) + free_energy(sample, -1, gw, ga, gc);
  CHECK_EQ_INT(cdk_loss_grad(&w32, &a32, &c32, &v32, &steps, &key, &o32, &dw32, &da32, &dc32), SG_OK);
  CHECK_CLOSE(sgt_get(&o32, 0), want, 1e-5);
  CHECK_GRAD_VS(&dw32, gw, "the f32 gradient at the fixed sample", 1e-5);
  CHECK_GRAD_VS(&da32, ga, "the f32 gradient at the fixed sample", 1e-5);
  CHECK_GRAD_VS(&dc32, gc, "the f32 gradient at the fixed sample", 1e-5);

  /* zero steps: the sample is the data, the loss and gradient exactly 0 */
  *(int32_t *)steps.data = 0;
  CHECK_EQ_INT(cdk_loss64_grad(&w, &a, &c, &v0, &steps, &key, &out, &dw, &da, &dc), SG_OK);
  CHECK_EXACT(sgt_get(&out, 0), 0);
  for (int i = 0; i < nw; i++)
    CHECK_CLOSE(sgt_get(&dw, i), 0, 1e-15); /* two GEMM paths: rounding only */
  printf("ok: zero steps give loss 0 and gradient 0 (to rounding)\n");
  free(sample), free(other), free(gw), free(ga), free(gc), free(fw), free(fa), free(fc);
  sg_tensor *all[] = {&w, &a, &c, &v0, &steps, &key, &out, &dw, &da, &dc, &w32, &a32, &c32, &v32,
                      &o32, &dw32, &da32, &dc32};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    free(all[i]->data);
  return sgt_finish();
}
