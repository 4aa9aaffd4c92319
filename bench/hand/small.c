/* small.c: an expert's C gradients of bench/small.sg (issue 30, item 6).
 *
 * take3: rotating 3 columns is three moves per row: the expert writes the
 * rotation (and its inverse for the adjoint) as code, with no index array
 * at all, in one pass over a and w.
 *
 * bmmD: a batch of D x D products with D known when the code is written,
 * c = a x, then dc = 2c, d_a = dc x^T, d_x = a^T dc, all in registers and
 * the stack, one pass over the batch, no packing and no call. For D = 2
 * and 3 the loops of constant trip count run across the batch (gcc
 * vectorizes the batch loop); for D = 8 a row is one vector (GCC's
 * vector extensions), each product D^2 broadcast multiply-adds of rows,
 * x^T's rows built once per product by a transpose of shuffles, as an
 * expert writes it with intrinsics: gcc does not vectorize the plain
 * loops there. (Built from x's elements instead, bmm8 took 1.27x as
 * long.) For D = 4 a whole matrix is one vector (bmm4). */
#include <stdint.h>

#include "hand.h"

int hand_take3_grad(int64_t n, const float *a, const float *w, float *loss, float *d_a) {
  double total = 0;
  for (int64_t i0 = 0; i0 < n; i0 += 1024) { /* f32 blocks added in f64 */
    int64_t end = n - i0 < 1024 ? n : i0 + 1024;
    float part = 0;
#pragma omp simd reduction(+ : part)
    for (int64_t i = i0; i < end; i++) {
      const float *ai = a + 3 * i, *wi = w + 3 * i;
      float b0 = ai[1], b1 = ai[2], b2 = ai[0]; /* b_j = a_{(j+1) % 3} */
      part += wi[0] * b0 * b0 + wi[1] * b1 * b1 + wi[2] * b2 * b2;
      float *di = d_a + 3 * i; /* d_a_{(j+1) % 3} = 2 w_j b_j */
      di[1] = 2 * wi[0] * b0, di[2] = 2 * wi[1] * b1, di[0] = 2 * wi[2] * b2;
    }
    total += part;
  }
  *loss = (float)total;
  return 0;
}

#define BMM(D)                                                                               \
  static float bmm##D(int64_t b, const float *a, const float *x, float *d_a, float *d_x) {  \
    double total = 0;                                                                        \
    for (int64_t m0 = 0; m0 < b; m0 += 1024) { /* f32 blocks added in f64 */                 \
      int64_t end = b - m0 < 1024 ? b : m0 + 1024;                                           \
      float part = 0;                                                                        \
      _Pragma("omp simd reduction(+ : part)")                                                \
      for (int64_t m = m0; m < end; m++) {                                                   \
        const float *am = a + m * D * D, *xm = x + m * D * D;                                \
        float c[D][D];                                                                       \
        for (int i = 0; i < D; i++)                                                          \
          for (int j = 0; j < D; j++) {                                                      \
            float s = 0;                                                                     \
            for (int p = 0; p < D; p++)                                                      \
              s += am[i * D + p] * xm[p * D + j];                                            \
            c[i][j] = 2 * s, part += s * s;                                                  \
          }                                                                                  \
        for (int i = 0; i < D; i++)                                                          \
          for (int p = 0; p < D; p++) {                                                      \
            float s = 0, r = 0;                                                              \
            for (int j = 0; j < D; j++) {                                                    \
              s += c[i][j] * xm[p * D + j]; /* (dc x^T)[i][p] */                             \
              r += am[j * D + i] * c[j][p]; /* (a^T dc)[i][p] */                             \
            }                                                                                \
            d_a[m * D * D + i * D + p] = s, d_x[m * D * D + i * D + p] = r;                  \
          }                                                                                  \
      }                                                                                      \
      total += part;                                                                         \
    }                                                                                        \
    return (float)total;                                                                     \
  }
BMM(2)
BMM(3)

/* Rows as vectors (D = 4, 8); may_alias and aligned(4): a row of the
 * arrays read and written in place. x^T's rows come from x's by the
 * usual transpose of shuffles (interleave 32-bit, then 64-bit, then
 * 128-bit halves), not D^2 element moves. */
typedef float row4 __attribute__((vector_size(16), aligned(4), may_alias));
typedef float row8 __attribute__((vector_size(32), aligned(4), may_alias));
#define SHUF __builtin_shufflevector
static inline void transpose4(const row4 *r, row4 *t) {
  row4 a = SHUF(r[0], r[1], 0, 4, 1, 5), b = SHUF(r[0], r[1], 2, 6, 3, 7);
  row4 c = SHUF(r[2], r[3], 0, 4, 1, 5), d = SHUF(r[2], r[3], 2, 6, 3, 7);
  t[0] = SHUF(a, c, 0, 1, 4, 5), t[1] = SHUF(a, c, 2, 3, 6, 7);
  t[2] = SHUF(b, d, 0, 1, 4, 5), t[3] = SHUF(b, d, 2, 3, 6, 7);
}
static inline void transpose8(const row8 *r, row8 *t) {
  row8 a[8], b[8];
  for (int p = 0; p < 8; p += 2) {
    a[p] = SHUF(r[p], r[p + 1], 0, 8, 1, 9, 4, 12, 5, 13);
    a[p + 1] = SHUF(r[p], r[p + 1], 2, 10, 3, 11, 6, 14, 7, 15);
  }
  for (int p = 0; p < 8; p += 4)
    for (int q = 0; q < 2; q++) {
      b[p + 2 * q] = SHUF(a[p + q], a[p + q + 2], 0, 1, 8, 9, 4, 5, 12, 13);
      b[p + 2 * q + 1] = SHUF(a[p + q], a[p + q + 2], 2, 3, 10, 11, 6, 7, 14, 15);
    }
  for (int j = 0; j < 4; j++) {
    t[j] = SHUF(b[j], b[j + 4], 0, 1, 2, 3, 8, 9, 10, 11);
    t[j + 4] = SHUF(b[j], b[j + 4], 4, 5, 6, 7, 12, 13, 14, 15);
  }
}
#define BMM_ROWS(D)                                                                          \
  static float bmm##D(int64_t b, const float *a, const float *x, float *d_a, float *d_x) {  \
    double total = 0;                                                                        \
    for (int64_t m0 = 0; m0 < b; m0 += 1024) { /* f32 blocks added in f64 */                 \
      int64_t end = b - m0 < 1024 ? b : m0 + 1024;                                           \
      row##D acc = {0};                                                                      \
      for (int64_t m = m0; m < end; m++) {                                                   \
        const float *am = a + m * D * D, *xm = x + m * D * D;                                \
        row##D xr[D], xt[D], dc[D];                                                          \
        for (int p = 0; p < D; p++)                                                          \
          xr[p] = *(const row##D *)(xm + p * D);                                             \
        transpose##D(xr, xt);                                                                \
        for (int i = 0; i < D; i++) {                                                        \
          row##D c = {0};                                                                    \
          for (int p = 0; p < D; p++)                                                        \
            c += am[i * D + p] * xr[p];                                                      \
          acc += c * c;                                                                      \
          dc[i] = 2 * c;                                                                     \
        }                                                                                    \
        for (int i = 0; i < D; i++) {                                                        \
          row##D s = {0}, r = {0};                                                           \
          for (int j = 0; j < D; j++) {                                                      \
            s += dc[i][j] * xt[j];  /* (dc x^T)[i] */                                        \
            r += am[j * D + i] * dc[j]; /* (a^T dc)[i] */                                    \
          }                                                                                  \
          *(row##D *)(d_a + m * D * D + i * D) = s;                                          \
          *(row##D *)(d_x + m * D * D + i * D) = r;                                          \
        }                                                                                    \
      }                                                                                      \
      float part = 0;                                                                        \
      for (int j = 0; j < D; j++)                                                            \
        part += acc[j];                                                                      \
      total += part;                                                                         \
    }                                                                                        \
    return (float)total;                                                                     \
  }
BMM_ROWS(8)

/* D = 4: a whole matrix is one 16-lane vector, and each product four
 * terms, each a shuffle of either matrix (lane 4i + j of a term of
 * c = a x holds a_il and x_lj), as an expert writes it with AVX-512's
 * vpermps: a quarter of the row form's operations (which sgc's code beat,
 * 0.79x). */
typedef float mat4 __attribute__((vector_size(64), aligned(4), may_alias));
#define ROWB(m, l) SHUF(m, m, l, l, l, l, 4 + l, 4 + l, 4 + l, 4 + l, 8 + l, 8 + l, 8 + l, 8 + l, \
                        12 + l, 12 + l, 12 + l, 12 + l)     /* lane (i, j): m_il */
#define ROWR(m, l) SHUF(m, m, 4 * l, 4 * l + 1, 4 * l + 2, 4 * l + 3, 4 * l, 4 * l + 1, 4 * l + 2,   \
                        4 * l + 3, 4 * l, 4 * l + 1, 4 * l + 2, 4 * l + 3, 4 * l, 4 * l + 1,          \
                        4 * l + 2, 4 * l + 3)                /* lane (i, j): m_lj */
#define COLT(m, l) SHUF(m, m, l, 4 + l, 8 + l, 12 + l, l, 4 + l, 8 + l, 12 + l, l, 4 + l, 8 + l,      \
                        12 + l, l, 4 + l, 8 + l, 12 + l)     /* lane (i, j): m_jl */
#define ROWT(m, l) SHUF(m, m, 4 * l, 4 * l, 4 * l, 4 * l, 4 * l + 1, 4 * l + 1, 4 * l + 1, 4 * l + 1, \
                        4 * l + 2, 4 * l + 2, 4 * l + 2, 4 * l + 2, 4 * l + 3, 4 * l + 3, 4 * l + 3,  \
                        4 * l + 3)                           /* lane (i, j): m_li */
static float bmm4(int64_t b, const float *a, const float *x, float *d_a, float *d_x) {
  double total = 0;
  for (int64_t m0 = 0; m0 < b; m0 += 1024) { /* f32 blocks added in f64 */
    int64_t end = b - m0 < 1024 ? b : m0 + 1024;
    mat4 acc = {0};
    for (int64_t m = m0; m < end; m++) {
      mat4 A = *(const mat4 *)(a + 16 * m), X = *(const mat4 *)(x + 16 * m);
      mat4 c = ROWB(A, 0) * ROWR(X, 0) + ROWB(A, 1) * ROWR(X, 1) + ROWB(A, 2) * ROWR(X, 2) +
               ROWB(A, 3) * ROWR(X, 3);
      acc += c * c;
      mat4 dc = 2 * c; /* d_a = dc x^T, d_x = a^T dc */
      *(mat4 *)(d_a + 16 * m) = ROWB(dc, 0) * COLT(X, 0) + ROWB(dc, 1) * COLT(X, 1) +
                                ROWB(dc, 2) * COLT(X, 2) + ROWB(dc, 3) * COLT(X, 3);
      *(mat4 *)(d_x + 16 * m) = ROWT(A, 0) * ROWR(dc, 0) + ROWT(A, 1) * ROWR(dc, 1) +
                                ROWT(A, 2) * ROWR(dc, 2) + ROWT(A, 3) * ROWR(dc, 3);
    }
    float part = 0;
    for (int j = 0; j < 16; j++)
      part += acc[j];
    total += part;
  }
  return (float)total;
}

int hand_bmm_grad(int64_t b, int d, const float *a, const float *x, float *loss, float *d_a,
                  float *d_x) {
  switch (d) {
  case 2: *loss = bmm2(b, a, x, d_a, d_x); return 0;
  case 3: *loss = bmm3(b, a, x, d_a, d_x); return 0;
  case 4: *loss = bmm4(b, a, x, d_a, d_x); return 0;
  case 8: *loss = bmm8(b, a, x, d_a, d_x); return 0;
  default: return -1;
  }
}
