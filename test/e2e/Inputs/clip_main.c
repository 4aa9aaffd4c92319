/* examples/v3/clip_gradient.sg from C: quantized_loss_grad against the
 * gradient worked out by hand with the two custom rules: the cotangent of
 * clip_gradient's output clipped to [-clip, clip] (clip_vjp), and round's
 * straight-through estimator (round_vjp passes dy) instead of round's zero
 * derivative. The clip is small enough that some entries are clipped; f32,
 * compared to 1e-5 relative. Usage: prog B D H C */
#include "sgtest.h"
#include "clip_gradient.h"

int main(int argc, char **argv) {
  int64_t b = sgt_arg(argc, argv, 1, 8), d = sgt_arg(argc, argv, 2, 5);
  int64_t h = sgt_arg(argc, argv, 3, 7), c = sgt_arg(argc, argv, 4, 4);
  sg_tensor w1 = SGT_TENSOR(SG_F32, d, h), w2 = SGT_TENSOR(SG_F32, h, c);
  sg_tensor x = SGT_TENSOR(SG_F32, b, d), y = SGT_TENSOR(SG_F32, b, c);
  sg_tensor clip = sgt_scalar(SG_F32), out = sgt_scalar(SG_F32);
  sg_tensor dw1 = SGT_TENSOR(SG_F32, d, h), dw2 = SGT_TENSOR(SG_F32, h, c);
  sgt_fill(&w1, -1, 1);
  sgt_fill(&w2, -1, 1);
  sgt_fill(&x, -1, 1);
  for (int64_t i = 0; i < b; i++)
    sgt_set(&y, i * c + (i * 7) % c, 1);
  double cl = 0.05;
  sgt_set(&clip, 0, cl);
  CHECK_EQ_INT(quantized_loss_grad(&w1, &w2, &x, &y, &clip, &out, &dw1, &dw2), SG_OK);

  /* by hand, in double from the same f32 inputs */
  double *pre = calloc((size_t)(b * h), 8), *hid = calloc((size_t)(b * h), 8);
  double *lg = calloc((size_t)(b * c), 8), *dl = calloc((size_t)(b * c), 8);
  double *dh = calloc((size_t)(b * h), 8), *rw1 = calloc((size_t)(d * h), 8);
  double *rw2 = calloc((size_t)(h * c), 8), loss = 0;
  int clipped = 0;
  for (int64_t i = 0; i < b; i++)
    for (int64_t k = 0; k < h; k++) {
      double s = 0;
      for (int64_t j = 0; j < d; j++)
        s += sgt_get(&x, i * d + j) * sgt_get(&w1, j * h + k);
      pre[i * h + k] = s;
      double r = s > 0 ? s : 0;
      hid[i * h + k] = nearbyint(r * 4) / 4; /* round: ties to even */
    }
  for (int64_t i = 0; i < b; i++) {
    double m = -INFINITY, z = 0, yl = 0;
    for (int64_t q = 0; q < c; q++) {
      double s = 0;
      for (int64_t k = 0; k < h; k++)
        s += hid[i * h + k] * sgt_get(&w2, k * c + q);
      lg[i * c + q] = s;
      m = fmax(m, s);
    }
    for (int64_t q = 0; q < c; q++) {
      z += exp(lg[i * c + q] - m);
      yl += sgt_get(&y, i * c + q) * lg[i * c + q];
    }
    loss += (log(z) + m - yl) / (double)b;
    for (int64_t q = 0; q < c; q++) /* d loss / d logits: softmax - y, over b */
      dl[i * c + q] = (exp(lg[i * c + q] - m) / z - sgt_get(&y, i * c + q)) / (double)b;
  }
  for (int64_t i = 0; i < b; i++)
    for (int64_t k = 0; k < h; k++) {
      double s = 0;
      for (int64_t q = 0; q < c; q++)
        s += dl[i * c + q] * sgt_get(&w2, k * c + q);
      /* /4 after round, round's rule passes it, *4 before: the same; then
       * clip_vjp clips it; relu passes where pre > 0 */
      double g = fmin(fmax(s, -cl), cl);
      clipped += g != s;
      dh[i * h + k] = pre[i * h + k] > 0 ? g : 0;
    }
  for (int64_t k = 0; k < h; k++)
    for (int64_t q = 0; q < c; q++)
      for (int64_t i = 0; i < b; i++)
        rw2[k * c + q] += hid[i * h + k] * dl[i * c + q];
  for (int64_t j = 0; j < d; j++)
    for (int64_t k = 0; k < h; k++)
      for (int64_t i = 0; i < b; i++)
        rw1[j * h + k] += sgt_get(&x, i * d + j) * dh[i * h + k];
  CHECK_CLOSE(sgt_get(&out, 0), loss, 1e-5);
  CHECK_GRAD_VS(&dw1, rw1, "the rules by hand", 1e-5);
  CHECK_GRAD_VS(&dw2, rw2, "the rules by hand", 1e-5);
  CHECK(clipped > 0);
  printf("%d of %lld cotangents clipped\n", clipped, (long long)(b * h));
  free(pre), free(hid), free(lg), free(dl), free(dh), free(rw1), free(rw2);
  sg_tensor *all[] = {&w1, &w2, &x, &y, &clip, &out, &dw1, &dw2};
  for (unsigned i = 0; i < sizeof all / sizeof *all; i++)
    free(all[i]->data);
  return sgt_finish();
}
