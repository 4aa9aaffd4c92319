/* Driver for contrastive_divergence.test: argv gives nv (visible), nh
 * (hidden), b (batch).
 *
 * F(v) = -v.a - sum_j softplus((v w + c)_j) is the free energy,
 * h = sigmoid(v0 w + c), v1 = sigmoid(h w^T + a) is the mean-field
 * reconstruction under stop_gradient, and cd1_loss = mean_s(F(v0_s) -
 * F(v1_s)). Its gradient holds v1 fixed:
 *   d_w[k][j] = (1/b) sum_s (v1_sk sigmoid(v1 w + c)_sj - v0_sk sigmoid(v0 w + c)_sj)
 *   d_a[k]    = (1/b) sum_s (v1_sk - v0_sk)
 *   d_c[j]    = (1/b) sum_s (sigmoid(v1 w + c)_sj - sigmoid(v0 w + c)_sj)
 * the CD-1 update. Central differences of the compiled function would also
 * move v1 (it depends on w, a, c) and are the wrong reference; the
 * reference is central differences of cd1_frozen below, which takes the v1
 * computed at the unperturbed parameters. */
#include "m32.h"
#include "m64.h"
#include "sgtest.h"

static int64_t NV, NH, B;
static sg_tensor w64, a64, c64, v064, out64;
static double *V1; /* b x nv, at the unperturbed parameters */

static double sigm(double z) { return 1 / (1 + exp(-z)); }
static double softplus(double z) { return z > 0 ? z + log1p(exp(-z)) : log1p(exp(z)); }

/* (v w + c)_sj for one row v. */
static double pre(const double *v, int64_t j) {
  double z = sgt_get(&c64, j);
  for (int64_t k = 0; k < NV; k++)
    z += v[k] * sgt_get(&w64, k * NH + j);
  return z;
}
static double free_energy(const double *v) {
  double f = 0;
  for (int64_t k = 0; k < NV; k++)
    f -= v[k] * sgt_get(&a64, k);
  for (int64_t j = 0; j < NH; j++)
    f -= softplus(pre(v, j));
  return f;
}
static void reconstruct(double *v1) {
  double *h = calloc((size_t)NH, sizeof(double));
  for (int64_t s = 0; s < B; s++) {
    const double *v0 = (const double *)v064.data + s * NV;
    for (int64_t j = 0; j < NH; j++)
      h[j] = sigm(pre(v0, j));
    for (int64_t k = 0; k < NV; k++) {
      double z = sgt_get(&a64, k);
      for (int64_t j = 0; j < NH; j++)
        z += h[j] * sgt_get(&w64, k * NH + j);
      v1[s * NV + k] = sigm(z);
    }
  }
  free(h);
}
static double cd1_with(const double *v1) {
  double l = 0;
  for (int64_t s = 0; s < B; s++)
    l += (free_energy((const double *)v064.data + s * NV) - free_energy(v1 + s * NV)) / (double)B;
  return l;
}
static double cd1_frozen(void) { return cd1_with(V1); }
static double cd1_compiled(void) {
  CHECK_EQ_INT(cd1_loss64(&w64, &a64, &c64, &v064, &out64), SG_OK);
  return sgt_get(&out64, 0);
}

int main(int argc, char **argv) {
  NV = sgt_arg(argc, argv, 1, 6), NH = sgt_arg(argc, argv, 2, 4), B = sgt_arg(argc, argv, 3, 5);
  sg_tensor w = SGT_TENSOR(SG_F32, NV, NH), a = SGT_TENSOR(SG_F32, NV);
  sg_tensor c = SGT_TENSOR(SG_F32, NH), v0 = SGT_TENSOR(SG_F32, B, NV);
  sgt_fill(&w, -1, 1), sgt_fill(&a, -0.5, 0.5), sgt_fill(&c, -0.5, 0.5), sgt_fill(&v0, 0, 1);
  w64 = SGT_TENSOR(SG_F64, NV, NH), a64 = SGT_TENSOR(SG_F64, NV);
  c64 = SGT_TENSOR(SG_F64, NH), v064 = SGT_TENSOR(SG_F64, B, NV), out64 = sgt_scalar(SG_F64);
  sgt_copy(&w64, &w), sgt_copy(&a64, &a), sgt_copy(&c64, &c), sgt_copy(&v064, &v0);

  V1 = calloc((size_t)(B * NV), sizeof(double));
  reconstruct(V1);
  double want = cd1_with(V1);

  /* The CD-1 gradient by hand. */
  double *hw = calloc((size_t)(NV * NH), sizeof(double));
  double *ha = calloc((size_t)NV, sizeof(double)), *hc = calloc((size_t)NH, sizeof(double));
  for (int64_t s = 0; s < B; s++) {
    const double *p = (const double *)v064.data + s * NV, *q = V1 + s * NV;
    for (int64_t j = 0; j < NH; j++) {
      double sp = sigm(pre(p, j)), sq = sigm(pre(q, j));
      hc[j] += (sq - sp) / (double)B;
      for (int64_t k = 0; k < NV; k++)
        hw[k * NH + j] += (q[k] * sq - p[k] * sp) / (double)B;
    }
    for (int64_t k = 0; k < NV; k++)
      ha[k] += (q[k] - p[k]) / (double)B;
  }

  sg_tensor out = sgt_scalar(SG_F32), d_w = SGT_TENSOR(SG_F32, NV, NH);
  sg_tensor d_a = SGT_TENSOR(SG_F32, NV), d_c = SGT_TENSOR(SG_F32, NH);
  CHECK_EQ_INT(cd1_loss(&w, &a, &c, &v0, &out), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), want, 1e-5);
  sgt_set(&out, 0, 0);
  CHECK_EQ_INT(cd1_loss_grad(&w, &a, &c, &v0, &out, &d_w, &d_a, &d_c), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), want, 1e-5);
  CHECK_CLOSE(cd1_compiled(), want, 1e-12);
  CHECK_GRAD_VS(&d_w, hw, "CD-1 formula", 1e-3);
  CHECK_GRAD_VS(&d_a, ha, "CD-1 formula", 1e-3);
  CHECK_GRAD_VS(&d_c, hc, "CD-1 formula", 1e-3);

  double *fw = calloc((size_t)(NV * NH), sizeof(double));
  double *fa = calloc((size_t)NV, sizeof(double)), *fc = calloc((size_t)NH, sizeof(double));
  sgt_fd(cd1_frozen, &w64, fw);
  sgt_fd(cd1_frozen, &a64, fa);
  sgt_fd(cd1_frozen, &c64, fc);
  CHECK_GRAD_VS(&d_w, fw, "finite differences with v1 frozen", 1e-3);
  CHECK_GRAD_VS(&d_a, fa, "finite differences with v1 frozen", 1e-3);
  CHECK_GRAD_VS(&d_c, fc, "finite differences with v1 frozen", 1e-3);

  sg_tensor d_w64 = SGT_TENSOR(SG_F64, NV, NH), d_a64 = SGT_TENSOR(SG_F64, NV);
  sg_tensor d_c64 = SGT_TENSOR(SG_F64, NH);
  CHECK_EQ_INT(cd1_loss64_grad(&w64, &a64, &c64, &v064, &out64, &d_w64, &d_a64, &d_c64), SG_OK);
  CHECK_CLOSE(sgt_get(&out64, 0), want, 1e-12);
  CHECK_GRAD_VS(&d_w64, hw, "CD-1 formula", 1e-7);
  CHECK_GRAD_VS(&d_a64, ha, "CD-1 formula", 1e-7);
  CHECK_GRAD_VS(&d_c64, hc, "CD-1 formula", 1e-7);
  CHECK_GRAD_VS(&d_w64, fw, "finite differences with v1 frozen", 1e-7);
  CHECK_GRAD_VS(&d_a64, fa, "finite differences with v1 frozen", 1e-7);
  CHECK_GRAD_VS(&d_c64, fc, "finite differences with v1 frozen", 1e-7);

  /* With v1 moving, the derivative is another thing: d_a in particular
   * picks up the v1 terms. */
  double *ta = calloc((size_t)NV, sizeof(double));
  sgt_fd(cd1_compiled, &a64, ta);
  double diff = 0, scale = 0;
  for (int64_t k = 0; k < NV; k++)
    diff = fmax(diff, fabs(ta[k] - ha[k])), scale = fmax(scale, fabs(ha[k]));
  CHECK(diff > 1e-4 * fmax(scale, 1e-3));
  if (diff > 1e-4 * fmax(scale, 1e-3))
    printf("ok: finite differences of the compiled loss (v1 moving) differ from the gradient\n");

  char msg[300];
  /* v0 with nv + 1 columns (nv bound by w): SG_ERR_SHAPE, nothing written. */
  sg_tensor vbad = SGT_TENSOR(SG_F32, B, NV + 1);
  sgt_set(&out, 0, 42), sgt_set(&d_w, 0, 42), sgt_set(&d_a, 0, 42), sgt_set(&d_c, 0, 42);
  CHECK_EQ_INT(cd1_loss_grad(&w, &a, &c, &vbad, &out, &d_w, &d_a, &d_c), SG_ERR_SHAPE);
  snprintf(msg, sizeof msg,
           "cd1_loss_grad: argument 'v0' has shape [%lld, %lld], expected [b, nv] with nv = %lld "
           "(bound by 'w')",
           (long long)B, (long long)(NV + 1), (long long)NV);
  CHECK_STR(sg_last_error(), msg);
  CHECK_EXACT(sgt_get(&out, 0), 42);
  CHECK_EXACT(sgt_get(&d_w, 0), 42);
  CHECK_EXACT(sgt_get(&d_a, 0), 42);
  CHECK_EXACT(sgt_get(&d_c, 0), 42);

  /* c one element short (nh bound by w). */
  sg_tensor cbad = SGT_TENSOR(SG_F32, NH + 1);
  CHECK_EQ_INT(cd1_loss(&w, &a, &cbad, &v0, &out), SG_ERR_SHAPE);
  snprintf(msg, sizeof msg,
           "cd1_loss: argument 'c' has shape [%lld], expected [nh] with nh = %lld (bound by 'w')",
           (long long)(NH + 1), (long long)NH);
  CHECK_STR(sg_last_error(), msg);
  CHECK_EXACT(sgt_get(&out, 0), 42);

  /* The scalar output placed inside d_c's buffer: SG_ERR_ALIAS. */
  sg_tensor inside = out;
  inside.data = (float *)d_c.data + NH - 1;
  sgt_set(&d_c, NH - 1, 42);
  CHECK_EQ_INT(cd1_loss_grad(&w, &a, &c, &v0, &inside, &d_w, &d_a, &d_c), SG_ERR_ALIAS);
  CHECK_CONTAINS(sg_last_error(), "cd1_loss_grad: ");
  CHECK_EXACT(sgt_get(&d_w, 0), 42);
  CHECK_EXACT(sgt_get(&d_a, 0), 42);
  CHECK_EXACT(sgt_get(&d_c, 0), 42);
  CHECK_EXACT(sgt_get(&d_c, NH - 1), 42);

  free(V1), free(hw), free(ha), free(hc), free(fw), free(fa), free(fc), free(ta);
  sg_tensor *all[] = {&w, &a, &c, &v0, &out, &d_w, &d_a, &d_c, &w64, &a64, &c64, &v064,
                      &out64, &d_w64, &d_a64, &d_c64, &vbad, &cbad};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    free(all[i]->data);
  return sgt_finish();
}
