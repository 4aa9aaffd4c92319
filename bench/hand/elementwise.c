/* elementwise.c: hand-written gradient of bench/elementwise.sg,
 *   f(x) = sum(tanh(x) sigmoid(x) + exp(-x^2)),
 *   f'(x) = (1 - t^2) s + t s (1 - s) - 2 x e,  t = tanh x, s = sigmoid x,
 *                                               e = exp(-x^2).
 * One fused pass: read x, three vector transcendental calls (libmvec's
 * tanhf and expf twice), accumulate the value, write d_x. No scratch. */
#include "hand.h"
#include "vmath.h"

int hand_ew_grad(int64_t n, const float *x, float *out, float *d_x) {
  float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
  for (int64_t i = 0; i < n; i++) {
    float xi = x[i];
    float t = tanhf(xi);
    float s = vm_sigmoid(xi);
    float e = expf(-xi * xi);
    acc += t * s + e;
    d_x[i] = (1.0f - t * t) * s + t * s * (1.0f - s) - 2.0f * xi * e;
  }
  *out = acc;
  return 0;
}
