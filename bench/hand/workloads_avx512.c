/* workloads_avx512.c: the expert's W2, W3, W5 and W6 (bench/workloads.sg)
 * in AVX-512 intrinsics, at the level the issue-30 measurements set:
 *
 *   W2  reads x once, 16 rows at a time: the 16 dot products by the
 *       transpose-and-add tree (hx_hsum16_ps), softplus and sigmoid on one
 *       vector of 16 rows, then dw += g_r x_r from the rows still in
 *       registers. (And rows of 4: four rows per vector, the same tree.)
 *   W3  reads z and y once for the value: per chunk of 2048 elements (16 KB
 *       of z and y, in L1) its max, the running max raised and the running
 *       sum rescaled when the chunk's max is larger, then the chunk's sums
 *       from L1; and once more for dz, written with streaming stores.
 *   W5  everything in registers: the ten 20-element dot products by the
 *       tree, the softmax on one vector, dW by broadcasts; no call, no
 *       memory but the arguments.
 *   W6  8 points per vector with the 8 components unrolled: max and sum
 *       over components are elementwise, nothing of size [n, k] exists.
 *
 *   W1, W4  products by the expert's packed GEMM (gemm.c), each row's
 *       softmax cross-entropy in one pass over the row in L1, the bias and
 *       tanh (and its derivative) in one pass over each product.
 *
 * f32 sums are kept in f32 lanes for a block (at most 1024 terms a lane)
 * and folded into f64 totals, so they are accurate whatever n is.
 * workloads.c calls these when hx_avx512() holds and the shape fits
 * (W2: d = 16 or 4; W5: k <= 16, d <= 32; W6: k = 8). */
#include <math.h>

#include <string.h>

#include "avx512.h"
#include "gemm.h"
#include "hand.h"
#include "workloads_x.h"

#if HX_X86

/* The mask of a vector's first `left` lanes (left may be <= 0 or > 16). */
HX_INLINE __mmask16 first_lanes(int64_t left) {
  return left >= 16 ? (__mmask16)0xFFFF : left <= 0 ? 0 : (__mmask16)((1u << left) - 1);
}

/* Scratch kept between calls (hand_scratch), in floats. */
static float *scratch(int id, int64_t floats) {
  return hand_scratch(HS_X + id, (size_t)floats * sizeof(float));
}

/* ---- W1 and W4: products by gemm.c, the rest in one pass per row ---- */

/* Row-wise softmax cross-entropy of z [n, k] against y [n, k], in place:
 * returns sum_i (sy_i lse_i - sum_j y_ij s_ij) and leaves dz = sy p - y in
 * z. A row (4 KB at k = 1000) stays in L1: its max, then exp(z - m) stored
 * back with the three sums, then dz. */
static HX_TGT double rows_xent(int64_t n, int64_t k, float *z, const float *y) {
  double loss = 0;
  for (int64_t i = 0; i < n; i++) {
    float *zi = z + i * k;
    const float *yi = y + i * k;
    __m512 mx = _mm512_set1_ps(-INFINITY);
    for (int64_t j = 0; j < k; j += 16)
      mx = _mm512_mask_max_ps(mx, first_lanes(k - j), mx,
                              _mm512_maskz_loadu_ps(first_lanes(k - j), zi + j));
    const __m512 mv = _mm512_set1_ps(_mm512_reduce_max_ps(mx));
    __m512 es = _mm512_setzero_ps(), sy = _mm512_setzero_ps(), ys = _mm512_setzero_ps();
    for (int64_t j = 0; j < k; j += 16) {
      __mmask16 m = first_lanes(k - j);
      __m512 t = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, zi + j), mv);
      __m512 yv = _mm512_maskz_loadu_ps(m, yi + j), e = _mm512_maskz_mov_ps(m, hx_exp_ps(t));
      _mm512_mask_storeu_ps(zi + j, m, e);
      es = _mm512_add_ps(es, e);
      sy = _mm512_add_ps(sy, yv);
      ys = _mm512_fmadd_ps(yv, t, ys);
    }
    float s = _mm512_reduce_add_ps(es), syf = _mm512_reduce_add_ps(sy);
    loss += (double)syf * log((double)s) - _mm512_reduce_add_ps(ys);
    const __m512 c = _mm512_set1_ps(syf / s);
    for (int64_t j = 0; j < k; j += 16) {
      __mmask16 m = first_lanes(k - j);
      _mm512_mask_storeu_ps(zi + j, m, _mm512_fmsub_ps(c, _mm512_maskz_loadu_ps(m, zi + j),
                                                       _mm512_maskz_loadu_ps(m, yi + j)));
    }
  }
  return loss;
}

HX_TGT int hx_xent_rows(int64_t n, int64_t k, float *z, const float *y, double *loss) {
  *loss = rows_xent(n, k, z, y);
  return 1;
}

HX_TGT int hx_w1_xent(int64_t n, int64_t d, int64_t k, const float *w, const float *x,
                      const float *y, float *loss, float *d_w) {
  float *z = scratch(0, n * k);
  if (!z)
    return -1;
  hg_gemm(0, 0, n, k, d, x, d, w, k, z, k, 0);
  *loss = (float)rows_xent(n, k, z, y);
  hg_gemm(1, 0, d, k, n, x, d, z, k, d_w, k, 0); /* x^T dz */
  return 1;
}

/* The column sums of the rows of a [n, k] into out (f32 lanes). */
static HX_TGT void col_sums(int64_t n, int64_t k, const float *a, float *out) {
  for (int64_t j = 0; j < k; j += 16) {
    __mmask16 m = first_lanes(k - j);
    __m512 s = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i++)
      s = _mm512_add_ps(s, _mm512_maskz_loadu_ps(m, a + i * k + j));
    _mm512_mask_storeu_ps(out + j, m, s);
  }
}

HX_TGT int hx_w4_mlp(int64_t n, int64_t d, int64_t h, int64_t c, const float *w1,
                     const float *b1, const float *w2, const float *b2, const float *x,
                     const float *y, float *loss, float *d_w1, float *d_b1, float *d_w2,
                     float *d_b2) {
  float *hid = scratch(1, n * h), *z = scratch(2, n * c), *dh = scratch(3, n * h);
  if (!hid || !z || !dh)
    return -1;
  /* hid = tanh(x w1 + b1): the product, then one pass adding the bias */
  hg_gemm(0, 0, n, h, d, x, d, w1, h, hid, h, 0);
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < h; j += 16) {
      __mmask16 m = first_lanes(h - j);
      __m512 v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, hid + i * h + j),
                               _mm512_maskz_loadu_ps(m, b1 + j));
      _mm512_mask_storeu_ps(hid + i * h + j, m, hx_tanh_ps(v));
    }
  for (int64_t i = 0; i < n; i++) /* z = hid w2 + b2 */
    memcpy(z + i * c, b2, (size_t)c * sizeof(float));
  hg_gemm(0, 0, n, c, h, hid, h, w2, c, z, c, 1);
  *loss = (float)rows_xent(n, c, z, y); /* z is now dz */
  hg_gemm(1, 0, h, c, n, hid, h, z, c, d_w2, c, 0);
  col_sums(n, c, z, d_b2);
  hg_gemm(0, 1, n, h, c, z, c, w2, c, dh, h, 0); /* dz w2^T */
  for (int64_t i = 0; i < n; i++) /* dh *= 1 - hid^2 */
    for (int64_t j = 0; j < h; j += 16) {
      __mmask16 m = first_lanes(h - j);
      __m512 t = _mm512_maskz_loadu_ps(m, hid + i * h + j);
      __m512 g = _mm512_maskz_loadu_ps(m, dh + i * h + j);
      _mm512_mask_storeu_ps(dh + i * h + j, m,
                            _mm512_fnmadd_ps(_mm512_mul_ps(g, t), t, g));
    }
  col_sums(n, h, dh, d_b1);
  hg_gemm(1, 0, d, h, n, x, d, dh, h, d_w1, h, 0);
  return 1;
}

/* ---- W2: logistic regression ---- */

/* The per-row math of 16 rows on one vector (lane q: row q's z = x.w and
 * y; valid: the rows that exist): adds the rows' softplus(z) - y z to
 * *loss and returns g = sigmoid(z) - y, zero where no row is. */
HX_INLINE __m512 w2_math(__m512 z, __m512 yv, __mmask16 valid, __m512 *loss) {
  __m512 e = hx_exp_ps(_mm512_sub_ps(_mm512_setzero_ps(), _mm512_abs_ps(z))); /* exp(-|z|) */
  __m512 inv = hx_rcp_ps(_mm512_add_ps(e, _mm512_set1_ps(1.0f)));
  __m512 sp = _mm512_add_ps(_mm512_max_ps(z, _mm512_setzero_ps()), hx_log1p_01_ps(e, inv));
  __mmask16 neg = _mm512_cmp_ps_mask(z, _mm512_setzero_ps(), _CMP_LT_OQ);
  __m512 sig = _mm512_mask_mul_ps(inv, neg, inv, e); /* z < 0: e / (1 + e) */
  *loss = _mm512_add_ps(*loss, _mm512_maskz_sub_ps(valid, sp, _mm512_mul_ps(yv, z)));
  return _mm512_maskz_sub_ps(valid, sig, yv);
}

/* 16 rows of 16 (rows q >= valid rows are zero): the dot products by the
 * tree, the math on one vector, dw += g_q r_q from the rows in registers. */
HX_INLINE void w2_rows16(const __m512 r[16], __m512 wv, __m512 yv, __mmask16 valid, __m512 *loss,
                         __m512 acc[4]) {
  __m512 p[16];
  for (int q = 0; q < 16; q++)
    p[q] = _mm512_mul_ps(r[q], wv);
  float g[16]; /* broadcast from memory: a load each, no shuffle */
  _mm512_storeu_ps(g, w2_math(hx_hsum16_ps(p), yv, valid, loss));
  for (int q = 0; q < 16; q++)
    acc[q & 3] = _mm512_fmadd_ps(_mm512_set1_ps(g[q]), r[q], acc[q & 3]);
}

/* d = 16: one row is one vector, 16 rows a step. Each line of x is
 * prefetched W2_AHEAD bytes ahead, and once a step one line W2_KICK bytes
 * ahead is touched, so that the hardware's prefetcher is already running
 * on the page the software prefetches reach next. (Measured alternated in
 * one process, from memory: 16-row steps with these prefetches 5.4 ns a
 * row; no prefetch 12.3; 4 KB without the kick 7.6; blocks of 64-128 rows
 * with the math of several vectors together and the block after next
 * prefetched through both phases 5.9-6.8; sgc 5.9.) */
enum { W2_AHEAD = 4096, W2_KICK = 24576 };

static HX_TGT void w2_d16(int64_t n, const float *w, const float *x, const float *y, double *loss,
                          double dw[16]) {
  const __m512 wv = _mm512_loadu_ps(w);
  __m512d dlo = _mm512_setzero_pd(), dhi = _mm512_setzero_pd();
  double total = 0;
  int64_t i = 0;
  while (i < n) {
    /* a stretch of up to 1024 rows summed in f32 lanes */
    __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                     _mm512_setzero_ps()};
    __m512 lv = _mm512_setzero_ps();
    int64_t end = n - i < 1024 ? n : i + 1024;
    for (; i + 16 <= end; i += 16) {
      const float *xb = x + i * 16;
      _mm_prefetch((const char *)xb + W2_KICK, _MM_HINT_T0);
      _mm_prefetch((const char *)(y + i) + W2_AHEAD / 4, _MM_HINT_T0);
      __m512 r[16];
      for (int q = 0; q < 16; q++) {
        _mm_prefetch((const char *)(xb + 16 * q) + W2_AHEAD, _MM_HINT_T0);
        r[q] = _mm512_loadu_ps(xb + 16 * q);
      }
      w2_rows16(r, wv, _mm512_loadu_ps(y + i), 0xFFFF, &lv, acc);
    }
    if (i < end) { /* the last rows: missing ones are zero and masked out */
      int left = (int)(end - i);
      __m512 r[16];
      for (int q = 0; q < 16; q++)
        r[q] = q < left ? _mm512_loadu_ps(x + (i + q) * 16) : _mm512_setzero_ps();
      __mmask16 m = first_lanes(left);
      w2_rows16(r, wv, _mm512_maskz_loadu_ps(m, y + i), m, &lv, acc);
      i = end;
    }
    __m512 a = _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3]));
    dlo = _mm512_add_pd(dlo, _mm512_cvtps_pd(_mm512_castps512_ps256(a)));
    dhi = _mm512_add_pd(dhi, _mm512_cvtps_pd(_mm256_castpd_ps(
                                 _mm512_extractf64x4_pd(_mm512_castps_pd(a), 1))));
    total += hx_sum_pd_of_ps(lv);
  }
  _mm512_storeu_pd(dw, dlo);
  _mm512_storeu_pd(dw + 8, dhi);
  *loss = total;
}

/* d = 4: four rows to a vector, 16 rows in four vectors. The products
 * x * (w w w w) go through the first two stages of the tree, which leave
 * lane 4k + j holding row 4j + k's dot product; the per-row math runs in
 * that order (y is permuted to match), and g is spread back over the rows'
 * four lanes by one permute per vector. */
static HX_TGT void w2_d4(int64_t n, const float *w, const float *x, const float *y, double *loss,
                         double dw[4]) {
  const __m512 wv = _mm512_broadcast_f32x4(_mm_loadu_ps(w));
  /* lane 4k + j <- row 4j + k, and its inverse for spreading g */
  const __m512i to_tree = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  __m512i spread[4];
  for (int v = 0; v < 4; v++) /* vector v holds rows 4v..4v+3; row 4v+k is lane 4k+v */
    spread[v] = _mm512_setr_epi32(v, v, v, v, 4 + v, 4 + v, 4 + v, 4 + v, 8 + v, 8 + v, 8 + v,
                                  8 + v, 12 + v, 12 + v, 12 + v, 12 + v);
  __m512d dacc = _mm512_setzero_pd();
  double total = 0;
  int64_t i = 0;
  while (i < n) {
    __m512 acc[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
    __m512 lv = _mm512_setzero_ps();
    int64_t end = n - i < 1024 ? n : i + 1024;
    for (; i < end; i += 16) {
      int left = end - i < 16 ? (int)(end - i) : 16;
      __mmask16 m = first_lanes(left);
      __m512 r[4], p[4];
      const float *xb = x + i * 4;
      if (left == 16) { /* every step but the last */
        _mm_prefetch((const char *)xb + W2_KICK, _MM_HINT_T0);
        _mm_prefetch((const char *)(y + i) + W2_AHEAD / 4, _MM_HINT_T0);
        for (int v = 0; v < 4; v++) {
          _mm_prefetch((const char *)(xb + 16 * v) + W2_AHEAD, _MM_HINT_T0);
          r[v] = _mm512_loadu_ps(xb + 16 * v);
        }
      } else {
        for (int v = 0; v < 4; v++) /* the rows of vector v that exist: left - 4v */
          r[v] = _mm512_maskz_loadu_ps(first_lanes(4 * (left - 4 * v)), xb + 16 * v);
      }
      for (int v = 0; v < 4; v++)
        p[v] = _mm512_mul_ps(r[v], wv);
      __m512 u0 = _mm512_add_ps(_mm512_unpacklo_ps(p[0], p[1]), _mm512_unpackhi_ps(p[0], p[1]));
      __m512 u1 = _mm512_add_ps(_mm512_unpacklo_ps(p[2], p[3]), _mm512_unpackhi_ps(p[2], p[3]));
      __m512d a = _mm512_castps_pd(u0), b = _mm512_castps_pd(u1);
      __m512 z = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)),
                               _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
      /* lane 4k + j is row 4j + k: its y, and whether it exists */
      __m512 yv = _mm512_permutexvar_ps(to_tree, _mm512_maskz_loadu_ps(m, y + i));
      __mmask16 vt = _mm512_cmp_epi32_mask(to_tree, _mm512_set1_epi32(left), _MM_CMPINT_LT);
      __m512 g = w2_math(z, yv, vt, &lv);
      for (int v = 0; v < 4; v++)
        acc[v & 1] = _mm512_fmadd_ps(_mm512_permutexvar_ps(spread[v], g), r[v], acc[v & 1]);
    }
    __m512 s = _mm512_add_ps(acc[0], acc[1]); /* four copies of dw, one per block */
    __m128 d4 = _mm_add_ps(_mm_add_ps(_mm512_castps512_ps128(s), _mm512_extractf32x4_ps(s, 1)),
                           _mm_add_ps(_mm512_extractf32x4_ps(s, 2), _mm512_extractf32x4_ps(s, 3)));
    dacc = _mm512_add_pd(dacc, _mm512_castpd256_pd512(_mm256_cvtps_pd(d4)));
    total += hx_sum_pd_of_ps(lv);
  }
  double out[8];
  _mm512_storeu_pd(out, dacc);
  for (int j = 0; j < 4; j++)
    dw[j] = out[j];
  *loss = total;
}

int hx_w2_logreg(int64_t n, int64_t d, const float *w, const float *x, const float *y,
                 double *loss, double *dw) {
  if (d == 16)
    return w2_d16(n, w, x, y, loss, dw), 1;
  if (d == 4)
    return w2_d4(n, w, x, y, loss, dw), 1;
  return 0;
}

/* ---- W3: softmax cross-entropy over one long vector ---- */

/* Pass 1 reads z and y once, in chunks of W3_CHUNK elements (16 KB of z
 * and y, which stay in L1 or L2 while the chunk is worked on): one loop
 * per chunk computes its max, the sum of exp(z - m) shifted by the running
 * max m of the chunks before, sum(y) and sum(y z), so the exponentials
 * overlap the loads. When the chunk's max exceeds m, the running sum and
 * the chunk's are rescaled by exp(m - max) and m grows; if it exceeds m by
 * more than W3_SLACK (an exp that could overflow f32), the chunk's sum is
 * taken again from cache with its own max as the shift. The first chunk's
 * max comes from a loop of its own. Pass 2 reads z and y again and streams
 * dz out. Every line is prefetched W3_AHEAD bytes ahead in both passes. */
enum { W3_CHUNK = 2048, W3_AHEAD = 4096 };
#define W3_SLACK 64.0f

/* The max of z[0..len). */
HX_INLINE float w3_max(const float *z, int64_t len) {
  __m512 mx[4];
  for (int u = 0; u < 4; u++)
    mx[u] = _mm512_set1_ps(-INFINITY);
  int64_t i = 0;
  for (; i + 64 <= len; i += 64)
    for (int u = 0; u < 4; u++)
      mx[u] = _mm512_max_ps(mx[u], _mm512_loadu_ps(z + i + 16 * u));
  for (; i < len; i += 16)
    mx[0] = _mm512_mask_max_ps(mx[0], first_lanes(len - i), mx[0],
                               _mm512_maskz_loadu_ps(first_lanes(len - i), z + i));
  return _mm512_reduce_max_ps(
      _mm512_max_ps(_mm512_max_ps(mx[0], mx[1]), _mm512_max_ps(mx[2], mx[3])));
}

/* sum(exp(z - shift)) over z[0..len) (in f32 lanes, added in f64). */
HX_INLINE double w3_expsum(const float *z, int64_t len, float shift) {
  const __m512 mv = _mm512_set1_ps(shift);
  __m512 es[2] = {_mm512_setzero_ps(), _mm512_setzero_ps()};
  for (int64_t i = 0; i < len; i += 16)
    es[(i >> 4) & 1] = _mm512_add_ps(
        es[(i >> 4) & 1],
        _mm512_maskz_mov_ps(first_lanes(len - i),
                            hx_exp_ps(_mm512_sub_ps(_mm512_loadu_ps(z + i), mv))));
  return hx_sum_pd_of_ps(_mm512_add_ps(es[0], es[1]));
}

HX_TGT int hx_w3_xent(int64_t n, const float *z, const float *y, double *loss, float *dz) {
  float m = n > 0 ? w3_max(z, n < W3_CHUNK ? n : W3_CHUNK) : -INFINITY; /* running max */
  double s = 0, sy = 0, yz = 0;
  for (int64_t c0 = 0; c0 < n; c0 += W3_CHUNK) {
    int64_t len = n - c0 < W3_CHUNK ? n - c0 : W3_CHUNK;
    const float *zc = z + c0, *yc = y + c0;
    const __m512 mv = _mm512_set1_ps(m);
    __m512 mx[2], es[2], ys[2], yzs[2];
    for (int u = 0; u < 2; u++) {
      mx[u] = _mm512_set1_ps(-INFINITY);
      es[u] = ys[u] = yzs[u] = _mm512_setzero_ps();
    }
    int64_t i = 0;
    for (; i + 32 <= len; i += 32)
      for (int u = 0; u < 2; u++) {
        _mm_prefetch((const char *)(zc + i + 16 * u) + W3_AHEAD, _MM_HINT_T0);
        _mm_prefetch((const char *)(yc + i + 16 * u) + W3_AHEAD, _MM_HINT_T0);
        __m512 zv = _mm512_loadu_ps(zc + i + 16 * u), yv = _mm512_loadu_ps(yc + i + 16 * u);
        mx[u] = _mm512_max_ps(mx[u], zv);
        es[u] = _mm512_add_ps(es[u], hx_exp_ps(_mm512_sub_ps(zv, mv)));
        ys[u] = _mm512_add_ps(ys[u], yv);
        yzs[u] = _mm512_fmadd_ps(yv, zv, yzs[u]);
      }
    for (; i < len; i += 16) {
      __mmask16 k = first_lanes(len - i);
      __m512 zv = _mm512_mask_loadu_ps(_mm512_set1_ps(-INFINITY), k, zc + i);
      __m512 yv = _mm512_maskz_loadu_ps(k, yc + i);
      mx[0] = _mm512_max_ps(mx[0], zv);
      es[0] = _mm512_add_ps(es[0], _mm512_maskz_mov_ps(k, hx_exp_ps(_mm512_sub_ps(zv, mv))));
      ys[0] = _mm512_add_ps(ys[0], yv);
      yzs[0] = _mm512_add_ps(yzs[0], _mm512_maskz_mul_ps(k, yv, zv));
    }
    float bm = _mm512_reduce_max_ps(_mm512_max_ps(mx[0], mx[1]));
    double cs = hx_sum_pd_of_ps(_mm512_add_ps(es[0], es[1]));
    if (bm > m + W3_SLACK) /* the shifted sum may have overflowed: again, from cache */
      s = s * exp((double)m - (double)bm) + w3_expsum(zc, len, bm), m = bm;
    else if (bm > m)
      s = (s + cs) * exp((double)m - (double)bm), m = bm;
    else
      s += cs;
    sy += hx_sum_pd_of_ps(_mm512_add_ps(ys[0], ys[1]));
    yz += hx_sum_pd_of_ps(_mm512_add_ps(yzs[0], yzs[1]));
  }
  *loss = sy * ((double)m + log(s)) - yz; /* sum(y) lse - sum(y z) */
  /* dz = (sum(y) / S) exp(z - m) - y: the second read, dz streamed out
   * (its lines are not read first) once dz is 64-byte aligned */
  const __m512 c = _mm512_set1_ps((float)(sy / s)), mv = _mm512_set1_ps(m);
  int64_t head = (uintptr_t)dz % 4 != 0 ? n : (int64_t)((64 - ((uintptr_t)dz & 63)) & 63) / 4;
  head = head < n ? head : n;
  int64_t i = 0;
  for (; i < head; i += 16) {
    __mmask16 k = first_lanes(head - i);
    __m512 zv = _mm512_maskz_loadu_ps(k, z + i), yv = _mm512_maskz_loadu_ps(k, y + i);
    _mm512_mask_storeu_ps(dz + i, k, _mm512_fmsub_ps(c, hx_exp_ps(_mm512_sub_ps(zv, mv)), yv));
  }
  i = head;
  for (; i + 32 <= n; i += 32)
    for (int u = 0; u < 2; u++) {
      _mm_prefetch((const char *)(z + i + 16 * u) + W3_AHEAD, _MM_HINT_T0);
      _mm_prefetch((const char *)(y + i + 16 * u) + W3_AHEAD, _MM_HINT_T0);
      __m512 zv = _mm512_loadu_ps(z + i + 16 * u), yv = _mm512_loadu_ps(y + i + 16 * u);
      _mm512_stream_ps(dz + i + 16 * u, _mm512_fmsub_ps(c, hx_exp_ps(_mm512_sub_ps(zv, mv)), yv));
    }
  for (; i < n; i += 16) {
    __mmask16 k = first_lanes(n - i);
    __m512 zv = _mm512_maskz_loadu_ps(k, z + i), yv = _mm512_maskz_loadu_ps(k, y + i);
    _mm512_mask_storeu_ps(dz + i, k, _mm512_fmsub_ps(c, hx_exp_ps(_mm512_sub_ps(zv, mv)), yv));
  }
  _mm_sfence();
  return 1;
}

/* ---- W5: a tiny softmax cross-entropy, all in registers ---- */

/* The time is the chain of latencies: dot products, the tree, the max,
 * exp, the sums, g, the stores. (Tried: dW written as flat whole vectors
 * through permute tables instead of two masked stores per row, and the
 * three sums by one shared tree with a vector log: no faster, alternated in
 * one process.) */
HX_TGT int hx_w5_tiny(int64_t k, int64_t d, const float *w, const float *x, const float *y,
                      float *loss, float *dw) {
  if (k < 1 || k > 16 || d < 1 || d > 32)
    return 0;
  const __mmask16 lo = first_lanes(d), hi = first_lanes(d - 16), km = first_lanes(k);
  const __m512 x0 = _mm512_maskz_loadu_ps(lo, x), x1 = _mm512_maskz_loadu_ps(hi, x + 16);
  __m512 p[16];
  for (int r = 0; r < 16; r++)
    p[r] = r < k ? _mm512_fmadd_ps(_mm512_maskz_loadu_ps(hi, w + r * d + 16), x1,
                                   _mm512_mul_ps(_mm512_maskz_loadu_ps(lo, w + r * d), x0))
                 : _mm512_setzero_ps();
  __m512 z = hx_hsum16_ps(p); /* lane r: row r's dot product */
  __m512 s = _mm512_sub_ps(z, _mm512_set1_ps(_mm512_mask_reduce_max_ps(km, z)));
  __m512 e = _mm512_maskz_mov_ps(km, hx_exp_ps(s));
  __m512 yv = _mm512_maskz_loadu_ps(km, y);
  float se = _mm512_reduce_add_ps(e), sy = _mm512_reduce_add_ps(yv);
  *loss = sy * logf(se) - _mm512_reduce_add_ps(_mm512_mul_ps(yv, s));
  __m512 g = _mm512_fmsub_ps(_mm512_set1_ps(sy / se), e, yv);
  for (int r = 0; r < 16; r++)
    if (r < k) {
      __m512 gr = hx_lane_ps(g, r);
      _mm512_mask_storeu_ps(dw + r * d, lo, _mm512_mul_ps(gr, x0));
      _mm512_mask_storeu_ps(dw + r * d + 16, hi, _mm512_mul_ps(gr, x1));
    }
  return 1;
}

/* ---- W6: the EM M-step objective, 8 components ---- */

HX_TGT int hx_w6_mstep(int64_t n, int64_t k, const double *mu, const double *x, double *loss,
                double *dmu) {
  if (k != 8)
    return 0;
  __m512d muv[8], g[8], lacc = _mm512_setzero_pd();
  for (int j = 0; j < 8; j++)
    muv[j] = _mm512_set1_pd(mu[j]), g[j] = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 8) {
    __mmask8 valid = n - i >= 8 ? 0xFF : (__mmask8)((1u << (n - i)) - 1);
    __m512d xv = _mm512_maskz_loadu_pd(valid, x + i), dd[8], sq[8], e[8];
    for (int j = 0; j < 8; j++) {
      dd[j] = _mm512_sub_pd(xv, muv[j]);
      sq[j] = _mm512_mul_pd(dd[j], dd[j]);
    }
    /* the largest log-density -sq/2 is the smallest sq */
    __m512d mn = _mm512_min_pd(_mm512_min_pd(_mm512_min_pd(sq[0], sq[1]), _mm512_min_pd(sq[2], sq[3])),
                               _mm512_min_pd(_mm512_min_pd(sq[4], sq[5]), _mm512_min_pd(sq[6], sq[7])));
    __m512d sum = _mm512_setzero_pd(), t = _mm512_setzero_pd();
    for (int j = 0; j < 8; j++) {
      e[j] = hx_exp_pd(_mm512_mul_pd(_mm512_sub_pd(mn, sq[j]), _mm512_set1_pd(0.5)));
      sum = _mm512_add_pd(sum, e[j]);
      t = _mm512_fmadd_pd(e[j], sq[j], t);
    }
    __m512d inv = _mm512_maskz_div_pd(valid, _mm512_set1_pd(1.0), sum);
    lacc = _mm512_fmadd_pd(t, inv, lacc);
    for (int j = 0; j < 8; j++)
      g[j] = _mm512_fnmadd_pd(_mm512_mul_pd(e[j], inv), dd[j], g[j]);
  }
  *loss = 0.5 * _mm512_reduce_add_pd(lacc);
  for (int j = 0; j < 8; j++)
    dmu[j] = _mm512_reduce_add_pd(g[j]);
  return 1;
}

#else /* not x86: the portable C runs everywhere */

int hx_xent_rows(int64_t n, int64_t k, float *z, const float *y, double *loss) {
  return (void)n, (void)k, (void)z, (void)y, (void)loss, 0;
}

int hx_w1_xent(int64_t n, int64_t d, int64_t k, const float *w, const float *x, const float *y,
               float *loss, float *d_w) {
  return (void)n, (void)d, (void)k, (void)w, (void)x, (void)y, (void)loss, (void)d_w, 0;
}
int hx_w4_mlp(int64_t n, int64_t d, int64_t h, int64_t c, const float *w1, const float *b1,
              const float *w2, const float *b2, const float *x, const float *y, float *loss,
              float *d_w1, float *d_b1, float *d_w2, float *d_b2) {
  return (void)n, (void)d, (void)h, (void)c, (void)w1, (void)b1, (void)w2, (void)b2, (void)x,
         (void)y, (void)loss, (void)d_w1, (void)d_b1, (void)d_w2, (void)d_b2, 0;
}

int hx_w2_logreg(int64_t n, int64_t d, const float *w, const float *x, const float *y,
                 double *loss, double *dw) {
  return (void)n, (void)d, (void)w, (void)x, (void)y, (void)loss, (void)dw, 0;
}
int hx_w3_xent(int64_t n, const float *z, const float *y, double *loss, float *dz) {
  return (void)n, (void)z, (void)y, (void)loss, (void)dz, 0;
}
int hx_w5_tiny(int64_t k, int64_t d, const float *w, const float *x, const float *y, float *loss,
               float *dw) {
  return (void)k, (void)d, (void)w, (void)x, (void)y, (void)loss, (void)dw, 0;
}
int hx_w6_mstep(int64_t n, int64_t k, const double *mu, const double *x, double *loss,
                double *dmu) {
  return (void)n, (void)k, (void)mu, (void)x, (void)loss, (void)dmu, 0;
}

#endif /* HX_X86 */
