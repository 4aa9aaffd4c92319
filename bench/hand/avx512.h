/* avx512.h: the AVX-512 pieces an expert writes once and reuses in the
 * hand-written baselines (workloads_avx512.c, rnn.c, small.c, gemm.c).
 *
 * Everything here is `static inline` and compiled with HX_TGT, a target
 * attribute, so the files that include it build with any flags on any x86
 * compiler (the lit test builds them without -march); the callers run it
 * only when hx_avx512() says the CPU has the instructions, and otherwise
 * take the portable C of workloads.c. On other architectures HX_X86 is 0
 * and nothing here is defined.
 *
 * The transcendentals are the textbook vector forms: exp by Cody-Waite
 * reduction (x = n ln2 + r), a polynomial for exp(r) and `vscalefps` for
 * the 2^n (which also gives 0 and infinity past the ends, so no clamping
 * beyond keeping n finite); log by `vgetexpps`/`vgetmantps` and Cephes'
 * polynomial on [sqrt(1/2), sqrt(2)); tanh from exp, or Cephes' odd
 * polynomial near 0. Accuracy: exp f32 within 2 ulp, exp f64 within 3 ulp,
 * log1p f32 within 2 ulp on [0, 1], tanh f32 within 3 ulp (checked against
 * libm by test/bench/hand_math.test). */
#ifndef BENCH_HAND_AVX512_H
#define BENCH_HAND_AVX512_H

#include <stdint.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HX_X86 1
#include <immintrin.h>
#define HX_TGT __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,fma")))
#define HX_INLINE static inline __attribute__((always_inline)) HX_TGT
#else
#define HX_X86 0
#endif

/* Whether this CPU runs the AVX-512 kernels (tested once). */
int hx_avx512(void);

#if HX_X86

/* exp(x), f32, 16 lanes. exp(r) on |r| <= ln2/2 by Cephes' expf
 * polynomial (1 + r + r^2 P(r)); -inf gives 0, +inf gives +inf. */
HX_INLINE __m512 hx_exp_ps(__m512 x) {
  x = _mm512_max_ps(_mm512_min_ps(x, _mm512_set1_ps(89.0f)), _mm512_set1_ps(-104.0f));
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  return _mm512_scalef_ps(p, n);
}

/* exp(x), f64, 8 lanes: the Taylor series to r^12 on |r| <= ln2/2
 * (truncation below 2e-16 relative), n ln2 split in three parts. */
HX_INLINE __m512d hx_exp_pd(__m512d x) {
  x = _mm512_max_pd(_mm512_min_pd(x, _mm512_set1_pd(710.0)), _mm512_set1_pd(-746.0));
  __m512d n = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(1.4426950408889634074)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512d r = _mm512_fnmadd_pd(n, _mm512_set1_pd(6.93145751953125e-1), x);
  r = _mm512_fnmadd_pd(n, _mm512_set1_pd(1.42860682030941723212e-6), r);
  static const double inv_fact[13] = {1.0,
                                      1.0,
                                      1.0 / 2,
                                      1.0 / 6,
                                      1.0 / 24,
                                      1.0 / 120,
                                      1.0 / 720,
                                      1.0 / 5040,
                                      1.0 / 40320,
                                      1.0 / 362880,
                                      1.0 / 3628800,
                                      1.0 / 39916800,
                                      1.0 / 479001600};
  __m512d p = _mm512_set1_pd(inv_fact[12]);
  for (int i = 11; i >= 0; i--)
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(inv_fact[i]));
  return _mm512_scalef_pd(p, n);
}

/* tanh(x), f32: below |x| = 0.625 Cephes' tanhf polynomial (x + x^3 P(x^2),
 * no cancellation near 0), above it 1 - 2 / (1 + exp(2|x|)) with x's
 * sign; saturates to +-1. */
HX_INLINE __m512 hx_tanh_ps(__m512 x) {
  __m512 ax = _mm512_abs_ps(x), z = _mm512_mul_ps(x, x);
  __m512 p = _mm512_set1_ps(-5.70498872745e-3f);
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(2.06390887954e-2f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-5.37397155531e-2f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.33314422036e-1f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-3.33332819422e-1f));
  __m512 small = _mm512_fmadd_ps(_mm512_mul_ps(p, z), x, x);
  __m512 e = hx_exp_ps(_mm512_add_ps(ax, ax));
  __m512 big = _mm512_sub_ps(_mm512_set1_ps(1.0f),
                             _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f))));
  big = _mm512_castsi512_ps(_mm512_or_si512(
      _mm512_castps_si512(big),
      _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u))));
  __mmask16 is_small = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.625f), _CMP_LT_OQ);
  return _mm512_mask_blend_ps(is_small, big, small);
}

/* log(u) for u in [1, 2], f32: below sqrt(2) f = u - 1, above it
 * f = u/2 - 1 and ln2 added; then Cephes' logf polynomial for log(1 + f). */
HX_INLINE __m512 hx_log_1_2_ps(__m512 u) {
  __mmask16 big = _mm512_cmp_ps_mask(u, _mm512_set1_ps(1.41421356f), _CMP_GT_OQ);
  __m512 f = _mm512_sub_ps(_mm512_mask_mul_ps(u, big, u, _mm512_set1_ps(0.5f)),
                           _mm512_set1_ps(1.0f));
  __m512 z = _mm512_mul_ps(f, f);
  __m512 p = _mm512_set1_ps(7.0376836292e-2f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(-1.1514610310e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.1676998740e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(-1.2420140846e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.4249322787e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(-1.6668057665e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.0000714765e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(-2.4999993993e-1f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(3.3333331174e-1f));
  __m512 y = _mm512_mul_ps(_mm512_mul_ps(p, z), f);
  y = _mm512_fnmadd_ps(z, _mm512_set1_ps(0.5f), y);
  __m512 lg = _mm512_add_ps(f, y);
  return _mm512_mask_add_ps(lg, big, lg, _mm512_set1_ps(0.693147180559945f));
}

/* 1 / x to full f32 precision: the 14-bit estimate and one Newton step. */
HX_INLINE __m512 hx_rcp_ps(__m512 x) {
  __m512 r = _mm512_rcp14_ps(x);
  return _mm512_fmadd_ps(r, _mm512_fnmadd_ps(x, r, _mm512_set1_ps(1.0f)), r);
}

/* log1p(e) for e in [0, 1], f32, given inv = 1 / (1 + e) (the sigmoid's
 * reciprocal, which the callers have): u = 1 + e rounded, and its rounding
 * error c = e - (u - 1) added back as c / u, so tiny e keep their digits. */
HX_INLINE __m512 hx_log1p_01_ps(__m512 e, __m512 inv) {
  __m512 u = _mm512_add_ps(e, _mm512_set1_ps(1.0f));
  __m512 c = _mm512_sub_ps(e, _mm512_sub_ps(u, _mm512_set1_ps(1.0f)));
  return _mm512_fmadd_ps(c, inv, hx_log_1_2_ps(u));
}

/* The transpose-and-add tree: lane q of the result is the sum of the 16
 * lanes of v[q]. Pairs are folded by unpacks (two-lane, then four-lane
 * interleaves within 128-bit blocks), then the 128-bit blocks by two
 * rounds of shuffle_f32x4; 15 additions and 30 shuffles for 16 sums. */
HX_INLINE __m512 hx_hsum16_ps(const __m512 v[16]) {
  __m512 u[8], w[4];
  for (int i = 0; i < 8; i++)
    u[i] = _mm512_add_ps(_mm512_unpacklo_ps(v[2 * i], v[2 * i + 1]),
                         _mm512_unpackhi_ps(v[2 * i], v[2 * i + 1]));
  for (int j = 0; j < 4; j++) {
    __m512d a = _mm512_castps_pd(u[2 * j]), b = _mm512_castps_pd(u[2 * j + 1]);
    w[j] = _mm512_add_ps(_mm512_castpd_ps(_mm512_unpacklo_pd(a, b)),
                         _mm512_castpd_ps(_mm512_unpackhi_pd(a, b)));
  }
  __m512 x0 = _mm512_add_ps(_mm512_shuffle_f32x4(w[0], w[1], 0x88),
                            _mm512_shuffle_f32x4(w[0], w[1], 0xDD));
  __m512 x1 = _mm512_add_ps(_mm512_shuffle_f32x4(w[2], w[3], 0x88),
                            _mm512_shuffle_f32x4(w[2], w[3], 0xDD));
  return _mm512_add_ps(_mm512_shuffle_f32x4(x0, x1, 0x88), _mm512_shuffle_f32x4(x0, x1, 0xDD));
}

/* Transposes the 16 x 16 floats of r in place (r[q] lane j <- r[j] lane
 * q): pairs of rows interleaved by two-lane, then four-lane unpacks, then
 * 128-bit blocks exchanged by two rounds of shuffle_f32x4. */
HX_INLINE void hx_transpose16_ps(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; i++) {
    __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 2]);
    __m512d e = _mm512_castps_pd(t[4 * i + 1]), f = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(e, f));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(e, f));
  }
  for (int h = 0; h < 2; h++)
    for (int j = 0; j < 4; j++) {
      t[8 * h + j] = _mm512_shuffle_f32x4(r[8 * h + j], r[8 * h + 4 + j], 0x88);
      t[8 * h + 4 + j] = _mm512_shuffle_f32x4(r[8 * h + j], r[8 * h + 4 + j], 0xdd);
    }
  for (int j = 0; j < 8; j++) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
  }
}

/* Lane q of v, in every lane. */
HX_INLINE __m512 hx_lane_ps(__m512 v, int q) {
  return _mm512_permutexvar_ps(_mm512_set1_epi32(q), v);
}

/* The 16 f32 lanes of v added in f64 (a block sum folded into an f64 total). */
HX_INLINE double hx_sum_pd_of_ps(__m512 v) {
  __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(v));
  __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  return _mm512_reduce_add_pd(_mm512_add_pd(lo, hi));
}

#endif /* HX_X86 */
#endif
