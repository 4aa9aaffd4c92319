/* rnn.c: an expert's C gradient of bench/rnn/rnn_lm.sg, the RNN language
 * model (issue 30, item 3), step by step as the loop is written:
 *
 *   forward, t = 0..T-1:   z_t = [x_t | h_{t-1}]     (x_t = emb[tokens[t]])
 *                          h_t = tanh(z_t [U; W] + bh)
 *                          l_t = h_t V + bo, loss += sum_b lse - l[target]
 *                          dl_t = (softmax(l_t) - onehot) / (T B)
 *                          dV += h_t^T dl_t, dbo += colsum dl_t
 *                          g_t = dl_t V^T           (dloss/dh_t from l_t)
 *   backward, t = T-1..0:  da_t = (g_t + r_{t+1}) (1 - h_t^2)
 *                          d[U; W] += z_t^T da_t, dbh += colsum da_t
 *                          [dx_t | r_t] = da_t [U; W]^T
 *                          d_emb[tokens[t]] += dx_t (row by row)
 *
 * What makes it an expert's: the loop-invariant weights are packed once
 * per call for the products that reuse them ([U; W], V, V^T, [U; W]^T:
 * gemm.h's hg_pack_b), not at every step; the gradients accumulate through
 * the products (beta = 1), never through a product and a separate add; U
 * and W are one stacked weight, so a step's input and recurrent products
 * are one product (and their adjoints one more); everything a step's
 * backward needs from its forward is kept (z_t, h_t, g_t: 2.5 MB at the
 * bench's sizes), nothing is recomputed, and the softmax's gradient is
 * taken while its row is in cache (so the logits are never stored); the
 * scratch memory is kept between calls. Elementwise work (tanh, the row
 * softmax, 1 - h^2) is AVX-512 where the CPU has it, plain C otherwise. */
#include <math.h>
#include <string.h>

#include "avx512.h"
#include "gemm.h"
#include "hand.h"

/* Scratch kept between calls (hand_scratch), in floats. */
static float *scratch(int id, int64_t floats) {
  return hand_scratch(HS_RNN + id, (size_t)floats * sizeof(float));
}

/* ---- elementwise pieces: AVX-512 and plain C ---- */

#if HX_X86
static HX_TGT void tanh_rows_x(int64_t n, float *a) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(a + i, hx_tanh_ps(_mm512_loadu_ps(a + i)));
  if (i < n) {
    __mmask16 m = (__mmask16)((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(a + i, m, hx_tanh_ps(_mm512_maskz_loadu_ps(m, a + i)));
  }
}

/* One row of logits l [k] in place -> (softmax - onehot(target)) scale;
 * returns lse - l[target]. */
static HX_TGT double xent_row_x(int64_t k, float *l, int32_t target, float scale) {
  __m512 mx = _mm512_set1_ps(-INFINITY);
  for (int64_t j = 0; j < k; j += 16) {
    __mmask16 m = k - j >= 16 ? 0xFFFF : (__mmask16)((1u << (k - j)) - 1);
    mx = _mm512_mask_max_ps(mx, m, mx, _mm512_maskz_loadu_ps(m, l + j));
  }
  float mf = _mm512_reduce_max_ps(mx);
  const __m512 mv = _mm512_set1_ps(mf);
  float picked = l[target] - mf;
  __m512 es = _mm512_setzero_ps();
  for (int64_t j = 0; j < k; j += 16) {
    __mmask16 m = k - j >= 16 ? 0xFFFF : (__mmask16)((1u << (k - j)) - 1);
    __m512 e = _mm512_maskz_mov_ps(m, hx_exp_ps(_mm512_sub_ps(_mm512_maskz_loadu_ps(m, l + j), mv)));
    _mm512_mask_storeu_ps(l + j, m, e);
    es = _mm512_add_ps(es, e);
  }
  float s = _mm512_reduce_add_ps(es);
  const __m512 c = _mm512_set1_ps(scale / s);
  for (int64_t j = 0; j < k; j += 16) {
    __mmask16 m = k - j >= 16 ? 0xFFFF : (__mmask16)((1u << (k - j)) - 1);
    _mm512_mask_storeu_ps(l + j, m, _mm512_mul_ps(c, _mm512_maskz_loadu_ps(m, l + j)));
  }
  l[target] -= scale;
  return log((double)s) - picked;
}

/* g [n] <- g (1 - h^2) */
static HX_TGT void tanh_adjoint_x(int64_t n, float *g, const float *h) {
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 m = n - i >= 16 ? 0xFFFF : (__mmask16)((1u << (n - i)) - 1);
    __m512 hv = _mm512_maskz_loadu_ps(m, h + i), gv = _mm512_maskz_loadu_ps(m, g + i);
    _mm512_mask_storeu_ps(g + i, m, _mm512_fnmadd_ps(_mm512_mul_ps(gv, hv), hv, gv));
  }
}
#endif

static void tanh_rows(int64_t n, float *a) {
#if HX_X86
  if (hx_avx512()) {
    tanh_rows_x(n, a);
    return;
  }
#endif
  for (int64_t i = 0; i < n; i++)
    a[i] = tanhf(a[i]);
}

static double xent_row(int64_t k, float *l, int32_t target, float scale) {
#if HX_X86
  if (hx_avx512())
    return xent_row_x(k, l, target, scale);
#endif
  float m = -INFINITY, s = 0;
  for (int64_t j = 0; j < k; j++)
    m = l[j] > m ? l[j] : m;
  float picked = l[target] - m;
  for (int64_t j = 0; j < k; j++)
    s += l[j] = expf(l[j] - m);
  for (int64_t j = 0; j < k; j++)
    l[j] *= scale / s;
  l[target] -= scale;
  return log((double)s) - picked;
}

static void tanh_adjoint(int64_t n, float *g, const float *h) {
#if HX_X86
  if (hx_avx512()) {
    tanh_adjoint_x(n, g, h);
    return;
  }
#endif
  for (int64_t i = 0; i < n; i++)
    g[i] -= g[i] * h[i] * h[i];
}

/* out [k] += the column sums of a [n, k] */
static void add_col_sums(int64_t n, int64_t k, const float *a, float *out) {
  for (int64_t i = 0; i < n; i++)
    for (int64_t j = 0; j < k; j++)
      out[j] += a[i * k + j];
}

int hand_rnn_lm_grad(int64_t v, int64_t e, int64_t h, int64_t t, int64_t b, const float *emb,
                     const float *u, const float *w, const float *bh, const float *vo,
                     const float *bo, const int32_t *tokens, const int32_t *targets, float *loss,
                     float *d_emb, float *d_u, float *d_w, float *d_bh, float *d_vo, float *d_bo) {
  const int64_t zw = e + h; /* a row of z_t = [x_t | h_{t-1}] */
  float *uw = scratch(0, zw * h);                    /* [U; W], then d[U; W] */
  float *p_uw = scratch(1, hg_packed_size(zw, h));   /* [U; W] packed */
  float *p_uwt = scratch(2, hg_packed_size(h, zw));  /* [U; W]^T packed */
  float *p_v = scratch(3, hg_packed_size(h, v));     /* V packed */
  float *p_vt = scratch(4, hg_packed_size(v, h));    /* V^T packed */
  float *z = scratch(5, (t + 1) * b * zw);           /* z_t, and h_{T-1} after them */
  float *g = scratch(6, t * b * h + b * v + b * zw); /* g_t, then a step's logits and dz */
  if (!uw || !p_uw || !p_uwt || !p_v || !p_vt || !z || !g)
    return -1;
  float *logits = g + t * b * h, *dz = logits + b * v;

  /* the weights, packed once for the whole call */
  memcpy(uw, u, (size_t)(e * h) * sizeof(float));
  memcpy(uw + e * h, w, (size_t)(h * h) * sizeof(float));
  hg_pack_b(0, zw, h, uw, h, p_uw);
  hg_pack_b(1, h, zw, uw, h, p_uwt);
  hg_pack_b(0, h, v, vo, v, p_v);
  hg_pack_b(1, v, h, vo, v, p_vt);

  memset(d_vo, 0, (size_t)(h * v) * sizeof(float));
  memset(d_bo, 0, (size_t)v * sizeof(float));
  const float scale = 1.0f / (float)(t * b);
  double total = 0;
  for (int64_t s = 0; s < t; s++) {
    float *zs = z + s * b * zw, *hs = zs + b * zw + e; /* h_s lives in z_{s+1} */
    for (int64_t r = 0; r < b; r++) {
      memcpy(zs + r * zw, emb + (int64_t)tokens[s * b + r] * e, (size_t)e * sizeof(float));
      if (s == 0)
        memset(zs + r * zw + e, 0, (size_t)h * sizeof(float));
      memcpy(hs + r * zw, bh, (size_t)h * sizeof(float));
    }
    hg_gemm_packed(0, b, h, zw, zs, zw, p_uw, hs, zw, 1); /* bh + z_s [U; W] */
    for (int64_t r = 0; r < b; r++)
      tanh_rows(h, hs + r * zw);
    for (int64_t r = 0; r < b; r++)
      memcpy(logits + r * v, bo, (size_t)v * sizeof(float));
    hg_gemm_packed(0, b, v, h, hs, zw, p_v, logits, v, 1);
    for (int64_t r = 0; r < b; r++)
      total += xent_row(v, logits + r * v, targets[s * b + r], scale);
    hg_gemm(1, 0, h, v, b, hs, zw, logits, v, d_vo, v, 1); /* dV += h_s^T dl_s */
    add_col_sums(b, v, logits, d_bo);
    hg_gemm_packed(0, b, h, v, logits, v, p_vt, g + s * b * h, h, 0); /* g_s = dl_s V^T */
  }
  *loss = (float)(total * scale);

  memset(uw, 0, (size_t)(zw * h) * sizeof(float)); /* now d[U; W] */
  memset(d_bh, 0, (size_t)h * sizeof(float));
  memset(d_emb, 0, (size_t)(v * e) * sizeof(float));
  for (int64_t s = t - 1; s >= 0; s--) {
    float *zs = z + s * b * zw, *hs = zs + b * zw + e, *da = g + s * b * h;
    if (s < t - 1) /* + r_{s+1}, the recurrent part of the last [dx | r] */
      for (int64_t r = 0; r < b; r++)
        for (int64_t j = 0; j < h; j++)
          da[r * h + j] += dz[r * zw + e + j];
    for (int64_t r = 0; r < b; r++)
      tanh_adjoint(h, da + r * h, hs + r * zw);
    hg_gemm(1, 0, zw, h, b, zs, zw, da, h, uw, h, 1); /* d[U; W] += z_s^T da_s */
    add_col_sums(b, h, da, d_bh);
    hg_gemm_packed(0, b, zw, h, da, h, p_uwt, dz, zw, 0); /* [dx_s | r_s] = da_s [U; W]^T */
    for (int64_t r = 0; r < b; r++) {
      float *row = d_emb + (int64_t)tokens[s * b + r] * e;
      for (int64_t j = 0; j < e; j++)
        row[j] += dz[r * zw + j];
    }
  }
  memcpy(d_u, uw, (size_t)(e * h) * sizeof(float));
  memcpy(d_w, uw + e * h, (size_t)(h * h) * sizeof(float));
  return 0;
}
