/* xent.c: hand-written gradient of examples/stable_softmax.sg.
 *
 * xent(W) = -sum(y * log(softmax(W x))) for W [k,d]. With z = W x,
 * m = max z, s = sum exp(z - m) and sy = sum y:
 *   loss = -sum(y (z - m)) + sy log s        (log-sum-exp, no log of p)
 *   dz   = sy exp(z - m) / s - y              (softmax gradient, closed form)
 *   dW   = dz x^T                             (an outer product)
 * Two passes over the k x d matrix, both bound by memory bandwidth: the
 * matrix-vector product reads W, the outer product writes dW; the vector
 * work in between is O(k). The product goes to the runtime's GEMM, which
 * hands n == 1 to its matrix-vector kernel (a BLAS sgemv's job). */
#include "hand.h"
#include "vmath.h"

int hand_xent_grad(int64_t k, int64_t d, const float *w, const float *x,
                   const float *y, float *loss, float *d_w) {
  float *z = vm_alloc(k);
  if (!z)
    return -1;

  /* z = W x: a k x 1 product. */
  sg_rt_gemm_f32(0, 0, k, 1, d, w, d, x, 1, z, 1, 0, 0);

  /* Max, then one pass for the exponentials (kept in z) and the sums. */
  float m = -INFINITY;
#pragma omp simd reduction(max : m)
  for (int64_t j = 0; j < k; j++)
    m = z[j] > m ? z[j] : m;
  float s = 0, sy = 0, yz = 0;
#pragma omp simd reduction(+ : s, sy, yz)
  for (int64_t j = 0; j < k; j++) {
    float t = z[j] - m;
    yz += y[j] * t;
    sy += y[j];
    z[j] = expf(t);
    s += z[j];
  }
  *loss = sy * logf(s) - yz;

  /* dW = dz x^T with dz = sy p - y, one row at a time. */
  const float c = sy / s;
  for (int64_t r = 0; r < k; r++) {
    const float g = c * z[r] - y[r];
    float *restrict out = d_w + r * d;
#pragma omp simd
    for (int64_t j = 0; j < d; j++)
      out[j] = g * x[j];
  }

  free(z);
  return 0;
}
