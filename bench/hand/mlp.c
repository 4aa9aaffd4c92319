/* mlp.c: hand-written gradients of examples/mlp.sg.
 *
 * mlp_loss = mean((tanh(x W1 + b1) W2 + b2 - y)^2) and its gradient with
 * respect to W1, b1, W2, b2; layer = tanh(x W) and its vector-Jacobian
 * product. The matrix products go to the runtime's blocked GEMM
 * (sg_rt_gemm_f32, see vmath.h); everything between two products is one
 * fused, vectorized pass over the GEMM's output, done in place, and the
 * backward pass reuses the forward activations (tanh' = 1 - tanh^2) instead
 * of recomputing them. Scratch: H and dZ (n x h) and G (n x o), carved
 * out of one allocation (separate multi-megabyte blocks would make glibc
 * return memory to the kernel on every free and fault it back in on the
 * next call). */
#include <string.h>

#include "hand.h"
#include "vmath.h"

int hand_mlp_loss_grad(int64_t n, int64_t d, int64_t h, int64_t o,
                       const float *w1, const float *b1, const float *w2,
                       const float *b2, const float *x, const float *y,
                       float *loss, float *d_w1, float *d_b1, float *d_w2,
                       float *d_b2) {
  float *H = vm_alloc(2 * n * h + n * o);
  if (!H)
    return -1;
  float *dZ = H + n * h, *G = dZ + n * h;

  /* Forward, layer 1: H = tanh(x W1 + b1), bias and tanh fused in place. */
  sg_rt_gemm_f32(0, 0, n, h, d, x, d, w1, h, H, h, 0, 0);
  for (int64_t i = 0; i < n; i++) {
    float *restrict hr = H + i * h;
#pragma omp simd
    for (int64_t j = 0; j < h; j++)
      hr[j] = tanhf(hr[j] + b1[j]);
  }

  /* Forward, layer 2 and the loss; in the same pass the residual becomes the
   * output gradient G = 2 (out - y) / (n o), and d_b2 = column sums of G. */
  sg_rt_gemm_f32(0, 0, n, o, h, H, h, w2, o, G, o, 0, 0);
  const float scale = 2.0f / (float)(n * o);
  float sq = 0.0f;
  memset(d_b2, 0, (size_t)o * sizeof *d_b2);
  for (int64_t i = 0; i < n; i++) {
    float *restrict g = G + i * o;
    const float *restrict yr = y + i * o;
#pragma omp simd reduction(+ : sq)
    for (int64_t j = 0; j < o; j++) {
      float r = g[j] + b2[j] - yr[j];
      sq += r * r;
      g[j] = scale * r;
      d_b2[j] += g[j];
    }
  }
  *loss = sq / (float)(n * o);

  /* Backward through layer 2: d_W2 = H^T G, dH = G W2^T. */
  sg_rt_gemm_f32(1, 0, h, o, n, H, h, G, o, d_w2, o, 0, 0);
  sg_rt_gemm_f32(0, 1, n, h, o, G, o, w2, o, dZ, h, 0, 0);

  /* Through tanh, reusing the forward H: dZ = dH (1 - H^2); d_b1 = column
   * sums of dZ, in the same pass. */
  memset(d_b1, 0, (size_t)h * sizeof *d_b1);
  for (int64_t i = 0; i < n; i++) {
    float *restrict dz = dZ + i * h;
    const float *restrict hr = H + i * h;
#pragma omp simd
    for (int64_t j = 0; j < h; j++) {
      dz[j] *= 1.0f - hr[j] * hr[j];
      d_b1[j] += dz[j];
    }
  }

  /* Through layer 1: d_W1 = x^T dZ (x is constant: no d_x). */
  sg_rt_gemm_f32(1, 0, d, h, n, x, d, dZ, h, d_w1, h, 0, 0);

  free(H);
  return 0;
}

int hand_layer_vjp(int64_t n, int64_t d, int64_t h, const float *x,
                   const float *w, const float *seed, float *out, float *d_x,
                   float *d_w) {
  float *G = vm_alloc(n * h);
  if (!G)
    return -1;

  /* out = tanh(x W), in place in the caller's buffer; in the same pass the
   * cotangent of the pre-activation, G = seed (1 - out^2). */
  sg_rt_gemm_f32(0, 0, n, h, d, x, d, w, h, out, h, 0, 0);
#pragma omp simd
  for (int64_t i = 0; i < n * h; i++) {
    float t = tanhf(out[i]);
    out[i] = t;
    G[i] = seed[i] * (1.0f - t * t);
  }

  /* d_x = G W^T, d_W = x^T G. */
  sg_rt_gemm_f32(0, 1, n, d, h, G, h, w, h, d_x, d, 0, 0);
  sg_rt_gemm_f32(1, 0, d, h, n, x, d, G, h, d_w, h, 0, 0);

  free(G);
  return 0;
}
