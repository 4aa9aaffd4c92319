/* cd1.c: hand-written gradient of examples/contrastive_divergence.sg.
 *
 * CD-1 for an RBM with weights W [nv,nh], visible bias a, hidden bias c and
 * a batch v0 [b,nv]. Free energy F(v) = -v a - sum_j softplus(v W + c)_j.
 *   h  = sigmoid(v0 W + c)
 *   v1 = sigmoid(h W^T + a)                (a constant: stop_gradient)
 *   loss = mean(F(v0) - F(v1))
 * and, since softplus' = sigmoid, with P = v0 W + c and Q = v1 W + c:
 *   dW = (v1^T sigmoid(Q) - v0^T sigmoid(P)) / b
 *   da = (colsum v1 - colsum v0) / b
 *   dc = (colsum sigmoid(Q) - colsum sigmoid(P)) / b
 * sigmoid(P) is h itself, so the forward pass's h is reused. Three GEMMs
 * forward, and dW is one GEMM plus one accumulating GEMM. Each elementwise
 * step is a single pass fused onto a GEMM's output: softplus and sigmoid
 * share one exp, and the column sums ride along. */
#include <string.h>

#include "hand.h"
#include "vmath.h"

int hand_cd1_loss_grad(int64_t nv, int64_t nh, int64_t b, const float *w,
                       const float *a, const float *c, const float *v0,
                       float *loss, float *d_w, float *d_a, float *d_c) {
  /* Scratch, one allocation: h [b,nh], v1 [b,nv], sigmoid(Q) [b,nh], and
   * the column sums [nv]. */
  float *Hb = vm_alloc(2 * b * nh + b * nv + nv);
  if (!Hb)
    return -1;
  float *Sq = Hb + b * nh, *V1 = Sq + b * nh, *cs = V1 + b * nv;
  const float inv_b = 1.0f / (float)b;

  /* P = v0 W + c; accumulate sum softplus(P) and keep h = sigmoid(P). */
  sg_rt_gemm_f32(0, 0, b, nh, nv, v0, nv, w, nh, Hb, nh, 0, 0);
  float sp0 = 0.0f;
  for (int64_t i = 0; i < b; i++) {
    float *restrict hr = Hb + i * nh;
#pragma omp simd reduction(+ : sp0)
    for (int64_t j = 0; j < nh; j++) {
      float p = hr[j] + c[j];
      float e = expf(-fabsf(p));
      float r = 1.0f / (1.0f + e);
      sp0 += (p > 0.0f ? p : 0.0f) + log1pf(e);
      hr[j] = p >= 0.0f ? r : e * r;
    }
  }

  /* v1 = sigmoid(h W^T + a); cs = colsum(v1) - colsum(v0) in the same pass
   * (both are b x nv). */
  sg_rt_gemm_f32(0, 1, b, nv, nh, Hb, nh, w, nh, V1, nv, 0, 0);
  memset(cs, 0, (size_t)nv * sizeof *cs);
  for (int64_t i = 0; i < b; i++) {
    float *restrict vr = V1 + i * nv;
    const float *restrict v0r = v0 + i * nv;
#pragma omp simd
    for (int64_t j = 0; j < nv; j++) {
      vr[j] = vm_sigmoid(vr[j] + a[j]);
      cs[j] += vr[j] - v0r[j];
    }
  }

  /* Q = v1 W + c; accumulate sum softplus(Q); Sq = sigmoid(Q) / b, and in
   * the same pass (same shape) h becomes -h / b, the two cotangents that
   * dW needs; dc is their column sum. */
  sg_rt_gemm_f32(0, 0, b, nh, nv, V1, nv, w, nh, Sq, nh, 0, 0);
  float sp1 = 0.0f;
  memset(d_c, 0, (size_t)nh * sizeof *d_c);
  for (int64_t i = 0; i < b; i++) {
    float *restrict sr = Sq + i * nh, *restrict hr = Hb + i * nh;
#pragma omp simd reduction(+ : sp1)
    for (int64_t j = 0; j < nh; j++) {
      float q = sr[j] + c[j];
      float e = expf(-fabsf(q));
      float r = 1.0f / (1.0f + e);
      sp1 += (q > 0.0f ? q : 0.0f) + log1pf(e);
      sr[j] = (q >= 0.0f ? r : e * r) * inv_b;
      hr[j] *= -inv_b;
      d_c[j] += sr[j] + hr[j];
    }
  }

  /* loss = (sum(v1 a) - sum(v0 a) + sp1 - sp0) / b; da = cs / b. */
  float va = 0.0f;
#pragma omp simd reduction(+ : va)
  for (int64_t j = 0; j < nv; j++) {
    va += cs[j] * a[j];
    d_a[j] = cs[j] * inv_b;
  }
  *loss = (va + sp1 - sp0) * inv_b;

  /* dW = v1^T Sq + v0^T (-h / b). */
  sg_rt_gemm_f32(1, 0, nv, nh, b, V1, nv, Sq, nh, d_w, nh, 0, 0);
  sg_rt_gemm_f32(1, 0, nv, nh, b, v0, nv, Hb, nh, d_w, nh, 1, 0);

  free(Hb);
  return 0;
}
