/* workloads.c: an expert's C gradients of bench/workloads.sg (W1-W6).
 *
 * Each hand_w* runs the AVX-512 form of workloads_avx512.c when the CPU has
 * AVX-512 and the shape is one it handles (unless hand_portable is set),
 * and otherwise the portable C below. The portable C is the baseline of
 * the runs before issue 30; the smoke test checks that both give sgc's
 * numbers. What the portable C does that a straightforward implementation
 * does not:
 *   - scratch buffers are allocated once and kept between calls (ws_get),
 *     so a repeated call makes no allocation and takes no page fault;
 *   - passes are fused: each streams its data once (W2 reads x once for
 *     both the value and the gradient, W3 makes two passes over z and y,
 *     W6 one pass over x), with the per-row work in registers;
 *   - transcendentals are glibc's libmvec vector functions (vmath.h), and
 *     small-axis reductions (W6's 8 components) are unrolled vector code;
 *   - matrix products call the runtime's packed GEMM, as one calls a BLAS;
 *   - f32 sums are accumulated in blocks of f32 lanes added up in f64, so
 *     they are accurate to a few ulp however long the vector.
 * Each function computes the value and the gradient and returns 0, or -1
 * if its one-time scratch allocation failed. */
#include <string.h>

#include "avx512.h"
#include "hand.h"
#include "vmath.h"
#include "workloads_x.h"

int hand_portable;

/* Whether to try the AVX-512 forms. */
static int use_x(void) { return !hand_portable && hx_avx512(); }

double exp(double) VM_SIMD;

/* Scratch kept between calls (hand_scratch). */
static void *ws_get(int id, size_t bytes) { return hand_scratch(HS_PORTABLE + id, bytes); }

/* Row-wise softmax cross-entropy of z [n,k] against y [n,k], in place:
 * returns sum_i (sy_i lse_i - sum_j y_ij s_ij) and leaves dz = sy p - y in z. */
static double softmax_xent_rows(int64_t n, int64_t k, float *z, const float *y) {
  double loss = 0;
  for (int64_t i = 0; i < n; i++) {
    float *restrict zi = z + i * k;
    const float *restrict yi = y + i * k;
    float m = -INFINITY;
#pragma omp simd reduction(max : m)
    for (int64_t j = 0; j < k; j++)
      m = zi[j] > m ? zi[j] : m;
    float s = 0, sy = 0, ys = 0;
#pragma omp simd reduction(+ : s, sy, ys)
    for (int64_t j = 0; j < k; j++) {
      float t = zi[j] - m;
      ys += yi[j] * t;
      sy += yi[j];
      zi[j] = expf(t);
      s += zi[j];
    }
    loss += (double)sy * log((double)s) - ys;
    const float c = sy / s;
#pragma omp simd
    for (int64_t j = 0; j < k; j++)
      zi[j] = c * zi[j] - yi[j];
  }
  return loss;
}

int hand_w1_xent_grad(int64_t n, int64_t d, int64_t k, const float *w, const float *x,
                      const float *y, float *loss, float *d_w) {
  int done = use_x() ? hx_w1_xent(n, d, k, w, x, y, loss, d_w) : 0;
  if (done)
    return done > 0 ? 0 : -1;
  float *z = ws_get(0, (size_t)(n * k) * sizeof(float));
  if (!z)
    return -1;
  sg_rt_gemm_f32(0, 0, n, k, d, x, d, w, k, z, k, 0, 0);
  *loss = (float)softmax_xent_rows(n, k, z, y);
  sg_rt_gemm_f32(1, 0, d, k, n, x, d, z, k, d_w, k, 0, 0); /* x^T dz */
  return 0;
}

/* W2: for each block of rows, z = x w (one dot product per row, the row
 * in registers), then softplus and sigmoid over the block with vector
 * math, then g += (sigmoid(z) - y) x over the block (still in L1). */
enum { W2_BLOCK = 256 };

int hand_w2_logreg_grad(int64_t n, int64_t d, const float *w, const float *x,
                        const float *y, float *loss, float *d_w) {
  double l, g64[16];
  if (d <= 16 && use_x() && hx_w2_logreg(n, d, w, x, y, &l, g64)) {
    *loss = (float)l;
    for (int64_t j = 0; j < d; j++)
      d_w[j] = (float)g64[j];
    return 0;
  }
  float *g = ws_get(1, (size_t)d * sizeof(float));
  if (!g)
    return -1;
  memset(g, 0, (size_t)d * sizeof(float));
  double total = 0;
  float z[W2_BLOCK], r[W2_BLOCK];
  for (int64_t i0 = 0; i0 < n; i0 += W2_BLOCK) {
    int64_t nb = n - i0 < W2_BLOCK ? n - i0 : W2_BLOCK;
    const float *xb = x + i0 * d;
    if (d == 16) {
      for (int64_t i = 0; i < nb; i++) {
        float acc = 0;
#pragma omp simd reduction(+ : acc)
        for (int j = 0; j < 16; j++)
          acc += xb[i * 16 + j] * w[j];
        z[i] = acc;
      }
    } else {
      for (int64_t i = 0; i < nb; i++) {
        float acc = 0;
#pragma omp simd reduction(+ : acc)
        for (int64_t j = 0; j < d; j++)
          acc += xb[i * d + j] * w[j];
        z[i] = acc;
      }
    }
    float part = 0;
#pragma omp simd reduction(+ : part)
    for (int64_t i = 0; i < nb; i++) {
      float zi = z[i], e = expf(-fabsf(zi));
      float sp = (zi > 0 ? zi : 0) + log1pf(e); /* softplus */
      float inv = 1.0f / (1.0f + e);
      float sig = zi >= 0 ? inv : e * inv;
      part += sp - y[i0 + i] * zi;
      r[i] = sig - y[i0 + i];
    }
    total += part;
    for (int64_t i = 0; i < nb; i++) {
      const float ri = r[i];
#pragma omp simd
      for (int64_t j = 0; j < d; j++)
        g[j] += ri * xb[i * d + j];
    }
  }
  *loss = (float)total;
  memcpy(d_w, g, (size_t)d * sizeof(float));
  return 0;
}

/* W3: pass 1 reads z and y once: per block of 4096 its max, then the sum
 * of exp(z - block max) rescaled into a running total (online softmax),
 * with sum y and sum y z. Pass 2 writes dz = (sy / S) exp(z - m) - y. */
enum { W3_BLOCK = 4096 };

int hand_w3_xent_grad(int64_t n, const float *z, const float *y, float *loss, float *d_z) {
  double l;
  if (use_x() && hx_w3_xent(n, z, y, &l, d_z)) {
    *loss = (float)l;
    return 0;
  }
  double m = -INFINITY, s = 0, sy = 0, yz = 0;
  for (int64_t i0 = 0; i0 < n; i0 += W3_BLOCK) {
    int64_t nb = n - i0 < W3_BLOCK ? n - i0 : W3_BLOCK;
    const float *zb = z + i0, *yb = y + i0;
    float bm = -INFINITY;
#pragma omp simd reduction(max : bm)
    for (int64_t i = 0; i < nb; i++)
      bm = zb[i] > bm ? zb[i] : bm;
    float bs = 0, bsy = 0, byz = 0;
#pragma omp simd reduction(+ : bs, bsy, byz)
    for (int64_t i = 0; i < nb; i++) {
      bs += expf(zb[i] - bm);
      bsy += yb[i];
      byz += yb[i] * zb[i];
    }
    if (bm > m) {
      s = s * exp(m - bm) + bs;
      m = bm;
    } else {
      s += bs * exp(bm - m);
    }
    sy += bsy;
    yz += byz;
  }
  *loss = (float)(sy * (m + log(s)) - yz); /* sum(y) lse - sum(y z) */
  const float c = (float)(sy / s), mf = (float)m;
#pragma omp simd
  for (int64_t i = 0; i < n; i++)
    d_z[i] = c * expf(z[i] - mf) - y[i];
  return 0;
}

/* W4: hid = tanh(x w1 + b1); z = hid w2 + b2; row softmax cross-entropy;
 * back through both layers, column sums for the biases riding along. */
int hand_w4_mlp_grad(int64_t n, int64_t d, int64_t h, int64_t c, const float *w1,
                     const float *b1, const float *w2, const float *b2, const float *x,
                     const float *y, float *loss, float *d_w1, float *d_b1, float *d_w2,
                     float *d_b2) {
  int done = use_x() ? hx_w4_mlp(n, d, h, c, w1, b1, w2, b2, x, y, loss, d_w1, d_b1, d_w2, d_b2)
                     : 0;
  if (done)
    return done > 0 ? 0 : -1;
  float *hid = ws_get(2, (size_t)(n * h) * sizeof(float));
  float *z = ws_get(3, (size_t)(n * c) * sizeof(float));
  float *dh = ws_get(4, (size_t)(n * h) * sizeof(float));
  if (!hid || !z || !dh)
    return -1;
  for (int64_t i = 0; i < n; i++)
    memcpy(hid + i * h, b1, (size_t)h * sizeof(float));
  sg_rt_gemm_f32(0, 0, n, h, d, x, d, w1, h, hid, h, 1, 0);
#pragma omp simd
  for (int64_t i = 0; i < n * h; i++)
    hid[i] = tanhf(hid[i]);
  for (int64_t i = 0; i < n; i++)
    memcpy(z + i * c, b2, (size_t)c * sizeof(float));
  sg_rt_gemm_f32(0, 0, n, c, h, hid, h, w2, c, z, c, 1, 0);
  *loss = (float)softmax_xent_rows(n, c, z, y); /* z is now dz */
  sg_rt_gemm_f32(1, 0, h, c, n, hid, h, z, c, d_w2, c, 0, 0);
  memset(d_b2, 0, (size_t)c * sizeof(float));
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < c; j++)
      d_b2[j] += z[i * c + j];
  sg_rt_gemm_f32(0, 1, n, h, c, z, c, w2, c, dh, h, 0, 0); /* dz w2^T */
  memset(d_b1, 0, (size_t)h * sizeof(float));
  for (int64_t i = 0; i < n; i++) {
    float *restrict di = dh + i * h;
    const float *restrict hi = hid + i * h;
#pragma omp simd
    for (int64_t j = 0; j < h; j++) {
      di[j] *= 1.0f - hi[j] * hi[j];
      d_b1[j] += di[j];
    }
  }
  sg_rt_gemm_f32(1, 0, d, h, n, x, d, dh, h, d_w1, h, 0, 0);
  return 0;
}

/* W5: z = w x, softmax, dW = dz x^T; no allocation at all (k is small). */
int hand_w5_tiny_grad(int64_t k, int64_t d, const float *w, const float *x, const float *y,
                      float *loss, float *d_w) {
  if (!w || !x || !y || !loss || !d_w || k < 0 || d < 0)
    return -2; /* a C API checks its arguments too */
  if (use_x() && hx_w5_tiny(k, d, w, x, y, loss, d_w))
    return 0;
  float zbuf[64];
  float *z = k <= 64 ? zbuf : ws_get(5, (size_t)k * sizeof(float));
  if (!z)
    return -1;
  for (int64_t r = 0; r < k; r++) {
    float acc = 0;
#pragma omp simd reduction(+ : acc)
    for (int64_t j = 0; j < d; j++)
      acc += w[r * d + j] * x[j];
    z[r] = acc;
  }
  float m = -INFINITY;
  for (int64_t r = 0; r < k; r++)
    m = z[r] > m ? z[r] : m;
  float s = 0, sy = 0, ys = 0;
  for (int64_t r = 0; r < k; r++) {
    float t = z[r] - m;
    ys += y[r] * t;
    sy += y[r];
    z[r] = expf(t);
    s += z[r];
  }
  *loss = sy * logf(s) - ys;
  const float c = sy / s;
  for (int64_t r = 0; r < k; r++) {
    const float g = c * z[r] - y[r];
#pragma omp simd
    for (int64_t j = 0; j < d; j++)
      d_w[r * d + j] = g * x[j];
  }
  return 0;
}

/* W6: one pass over x. Per point, the 8 log-densities, their max, the
 * exponentials (vector exp over the 8 lanes), one reciprocal of their sum;
 * then loss += sum_j r_j d_j^2 / 2 and g_j -= r_j d_j. Points are handled
 * 8 at a time so the vectorizer sees whole vectors across points. */
int hand_w6_mstep_grad(int64_t n, int64_t k, const double *mu, const double *x,
                       double *loss, double *d_mu) {
  if (use_x() && hx_w6_mstep(n, k, mu, x, loss, d_mu))
    return 0;
  if (k != 8) { /* the general case: the same, with a runtime loop bound */
    double total = 0;
    double *g = ws_get(6, (size_t)k * sizeof(double));
    double *e = ws_get(7, (size_t)k * sizeof(double));
    if (!g || !e)
      return -1;
    memset(g, 0, (size_t)k * sizeof(double));
    for (int64_t i = 0; i < n; i++) {
      double m = -INFINITY, s = 0;
      for (int64_t j = 0; j < k; j++) {
        double dd = x[i] - mu[j];
        e[j] = -0.5 * dd * dd;
        m = e[j] > m ? e[j] : m;
      }
      for (int64_t j = 0; j < k; j++)
        s += e[j] = exp(e[j] - m);
      double inv = 1.0 / s;
      for (int64_t j = 0; j < k; j++) {
        double dd = x[i] - mu[j], r = e[j] * inv;
        total += r * 0.5 * dd * dd;
        g[j] -= r * dd;
      }
    }
    *loss = total;
    memcpy(d_mu, g, (size_t)k * sizeof(double));
    return 0;
  }
  double g[8] = {0}, total = 0;
  enum { B = 8 };
  int64_t i = 0;
  for (; i + B <= n; i += B) {
    double lp[8][B], m[B], s[B];
#pragma omp simd
    for (int p = 0; p < B; p++)
      m[p] = -INFINITY, s[p] = 0;
    for (int j = 0; j < 8; j++)
#pragma omp simd
      for (int p = 0; p < B; p++) {
        double dd = x[i + p] - mu[j];
        lp[j][p] = -0.5 * dd * dd;
        m[p] = lp[j][p] > m[p] ? lp[j][p] : m[p];
      }
    for (int j = 0; j < 8; j++)
#pragma omp simd
      for (int p = 0; p < B; p++) {
        lp[j][p] = exp(lp[j][p] - m[p]);
        s[p] += lp[j][p];
      }
#pragma omp simd
    for (int p = 0; p < B; p++)
      s[p] = 1.0 / s[p];
    for (int j = 0; j < 8; j++) {
      double gj = 0, tj = 0;
#pragma omp simd reduction(+ : gj, tj)
      for (int p = 0; p < B; p++) {
        double dd = x[i + p] - mu[j], r = lp[j][p] * s[p];
        tj += r * 0.5 * dd * dd;
        gj -= r * dd;
      }
      g[j] += gj;
      total += tj;
    }
  }
  for (; i < n; i++) {
    double e[8], m = -INFINITY, s = 0;
    for (int j = 0; j < 8; j++) {
      double dd = x[i] - mu[j];
      e[j] = -0.5 * dd * dd;
      m = e[j] > m ? e[j] : m;
    }
    for (int j = 0; j < 8; j++)
      s += e[j] = exp(e[j] - m);
    for (int j = 0; j < 8; j++) {
      double dd = x[i] - mu[j], r = e[j] / s;
      total += r * 0.5 * dd * dd;
      g[j] -= r * dd;
    }
  }
  *loss = total;
  memcpy(d_mu, g, sizeof g);
  return 0;
}

/* The softmax cross-entropy of bench/xent_loop.sg's steps, all rows at
 * once (the steps are independent): dz computed in place in d_z. */
int hand_xent_rows_grad(int64_t rows, int64_t k, const float *z, const float *y, float *loss,
                        float *d_z) {
  memcpy(d_z, z, (size_t)(rows * k) * sizeof(float));
  double l;
  if (use_x() && hx_xent_rows(rows, k, d_z, y, &l)) {
    *loss = (float)l;
    return 0;
  }
  *loss = (float)softmax_xent_rows(rows, k, d_z, y);
  return 0;
}
