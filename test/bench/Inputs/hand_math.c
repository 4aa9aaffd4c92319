/* hand_math.c: the vector pieces of bench/hand/avx512.h against libm and
 * plain sums (test/bench/hand_math.test): exp f32 and f64 and log1p f32 in
 * ulps over their ranges and at the ends, and the transpose-and-add tree
 * against each vector's sum in f64. Prints "ok: ..." or "FAIL: ..." with
 * the measured error and its bound. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "avx512.h"

static int failed;

static void report(const char *what, double got, double bound) {
  printf("%s: %s max error %.3g (bound %.3g)\n", got <= bound ? "ok" : "FAIL", what, got, bound);
  failed |= !(got <= bound);
}

/* |got - want| in units of want's last place (f32 or f64). */
static double ulps32(float got, double want) {
  if (want == 0 || !isfinite((float)want)) /* 0, or beyond f32's range */
    return got == (float)want ? 0 : INFINITY;
  int e;
  frexp(want, &e);
  double ulp = ldexp(1.0, (e - 24 > -149 ? e - 24 : -149));
  return fabs((double)got - want) / ulp;
}
static double ulps64(double got, long double want) {
  if (want == 0 || !isfinite((double)want))
    return got == (double)want ? 0 : INFINITY;
  int e;
  frexpl(want, &e);
  long double ulp = ldexpl(1.0L, (e - 53 > -1074 ? e - 53 : -1074));
  return (double)(fabsl((long double)got - want) / ulp);
}

/* The f32 functions under test, as functions of one vector. */
typedef __m512 (*VecFn)(__m512);
static HX_TGT __m512 v_exp(__m512 x) { return hx_exp_ps(x); }
static HX_TGT __m512 v_tanh(__m512 x) { return hx_tanh_ps(x); }
static HX_TGT __m512 v_log1p(__m512 x) {
  return hx_log1p_01_ps(x, _mm512_div_ps(_mm512_set1_ps(1.0f), _mm512_add_ps(x, _mm512_set1_ps(1.0f))));
}

/* The larger of worst and f's error in ulps on the 16 inputs, against ref. */
static HX_TGT double worst16(VecFn f, const float in[16], double (*ref)(double), double worst) {
  float out[16];
  _mm512_storeu_ps(out, f(_mm512_loadu_ps(in)));
  for (int q = 0; q < 16; q++) {
    double u = ulps32(out[q], ref((double)in[q]));
    worst = u > worst ? u : worst;
  }
  return worst;
}

static double check_exp_ps(void) {
  double worst = 0;
  float in[16];
  for (int i = 0; i < 2000000; i += 16) {
    for (int q = 0; q < 16; q++)
      in[q] = -103.0f + 192.0f * (float)(i + q) / 2000000.0f;
    worst = worst16(v_exp, in, exp, worst);
  }
  /* the ends: 0 for -inf and far below, inf for +inf and far above */
  float ends[16] = {-INFINITY, -1e30f, -200.0f, INFINITY, 1e30f, 100.0f, 0.0f, -0.0f,
                    1.0f, -1.0f, 88.0f, -87.0f, 0.5f, -0.5f, 10.0f, -10.0f};
  return worst16(v_exp, ends, exp, worst);
}

static HX_TGT double check_exp_pd(void) {
  double worst = 0, in[8], out[8];
  for (int i = 0; i < 2000000; i += 8) {
    for (int q = 0; q < 8; q++)
      in[q] = -700.0 + 1400.0 * (double)(i + q) / 2000000.0 + 1e-7 * q;
    _mm512_storeu_pd(out, hx_exp_pd(_mm512_loadu_pd(in)));
    for (int q = 0; q < 8; q++) {
      double u = ulps64(out[q], expl((long double)in[q]));
      worst = u > worst ? u : worst;
    }
  }
  double ends[8] = {-INFINITY, -1e300, -800.0, INFINITY, 1e300, 0.0, -1.0, 1.0};
  _mm512_storeu_pd(out, hx_exp_pd(_mm512_loadu_pd(ends)));
  for (int q = 0; q < 8; q++) {
    double u = ulps64(out[q], expl((long double)ends[q]));
    worst = u > worst ? u : worst;
  }
  return worst;
}

static double check_log1p(void) {
  double worst = 0;
  float in[16];
  for (int i = 0; i < 2000000; i += 16) {
    for (int q = 0; q < 16; q++) /* [0, 1], dense near 0 as well */
      in[q] = (i + q) % 2 ? (float)(i + q) / 2000000.0f : ldexpf(1.0f, -((i + q) % 60)) * 0.7f;
    worst = worst16(v_log1p, in, log1p, worst);
  }
  return worst;
}

static double check_tanh(void) {
  double worst = 0;
  float in[16];
  for (int i = 0; i < 2000000; i += 16) {
    for (int q = 0; q < 16; q++) /* [-12, 12], and tiny values of both signs */
      in[q] = (i + q) % 3 ? -12.0f + 24.0f * (float)(i + q) / 2000000.0f
                          : ldexpf((i + q) % 2 ? 1.0f : -1.0f, -((i + q) % 40)) * 0.9f;
    worst = worst16(v_tanh, in, tanh, worst);
  }
  float ends[16] = {INFINITY, -INFINITY, 100.0f, -100.0f, 0.0f, -0.0f, 0.625f, -0.625f,
                    0.62499f, 0.62501f, 9.0f, -9.0f, 1e-30f, -1e-30f, 0.3f, -0.3f};
  return worst16(v_tanh, ends, tanh, worst);
}

static HX_TGT double check_tree(void) {
  double worst = 0;
  srand(1);
  for (int rep = 0; rep < 1000; rep++) {
    float v[16][16], out[16];
    __m512 vv[16];
    for (int q = 0; q < 16; q++) {
      for (int j = 0; j < 16; j++)
        v[q][j] = (float)rand() / RAND_MAX - 0.5f;
      vv[q] = _mm512_loadu_ps(v[q]);
    }
    _mm512_storeu_ps(out, hx_hsum16_ps(vv));
    for (int q = 0; q < 16; q++) {
      double want = 0, mag = 0;
      for (int j = 0; j < 16; j++)
        want += v[q][j], mag += fabs(v[q][j]);
      double rel = fabs(out[q] - want) / mag; /* four roundings of f32 at most */
      worst = rel > worst ? rel : worst;
    }
  }
  return worst;
}

int main(void) {
  if (!hx_avx512()) {
    printf("no AVX-512 on this CPU\n");
    return 1;
  }
  report("exp f32 in ulps over [-103, 89] and the ends", check_exp_ps(), 2);
  report("exp f64 in ulps over [-700, 700] and the ends", check_exp_pd(), 3);
  report("log1p f32 in ulps over [0, 1]", check_log1p(), 2);
  report("tanh f32 in ulps over [-12, 12], tiny values and the ends", check_tanh(), 3);
  report("tree sums relative to the sum of magnitudes", check_tree(), 5 * 0x1p-24);
  return failed;
}
