/* philox.c: the random numbers of uniform(key, T), normal(key, T) and
 * split(key, n) (spec section 6; docs/language.md 2.11 states the exact
 * mapping). Counter-based: element j of a result is a pure function of the
 * key and j, computed with Philox4x32-10 (Salmon, Moraes, Dror and Shaw,
 * "Parallel random numbers: as easy as 1, 2, 3", SC11) and integer and
 * IEEE double arithmetic only (+ - * / sqrt, frexp/ldexp, no libm
 * transcendentals, no contraction: -std=c11 keeps GCC from fusing
 * multiply-adds). So the same key gives the same bits on every machine, for
 * any thread count (the pool's chunks only decide who computes which j)
 * and at every -O level (this code is compiled once, into libsgrt). */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "sgrt.h"

/* ---- Philox4x32-10 ---- */

static void philox(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  uint32_t x0 = ctr[0], x1 = ctr[1], x2 = ctr[2], x3 = ctr[3];
  uint32_t k0 = key[0], k1 = key[1];
  for (int r = 0; r < 10; r++) {
    if (r) {
      k0 += 0x9E3779B9u;
      k1 += 0xBB67AE85u;
    }
    uint64_t p0 = (uint64_t)0xD2511F53u * x0, p1 = (uint64_t)0xCD9E8D57u * x2;
    uint32_t y0 = (uint32_t)(p1 >> 32) ^ x1 ^ k0, y2 = (uint32_t)(p0 >> 32) ^ x3 ^ k1;
    x0 = y0;
    x1 = (uint32_t)p1;
    x2 = y2;
    x3 = (uint32_t)p0;
  }
  out[0] = x0, out[1] = x1, out[2] = x2, out[3] = x3;
}

void sg_rt_philox4x32_10(const uint32_t ctr[4], const uint32_t key[2], uint32_t out[4]) {
  philox(ctr, key, out);
}

/* The Philox key of an sg key: (e0, 0) for one element e0; each further
 * element e_i folds in as key = first two words of
 * Philox((e_i, i, 0, 2), key). No element: (0, 0). */
static void derive_key(const int32_t *key, int64_t nkey, uint32_t k[2]) {
  k[0] = nkey > 0 ? (uint32_t)key[0] : 0;
  k[1] = 0;
  for (int64_t i = 1; i < nkey; i++) {
    uint32_t c[4] = {(uint32_t)key[i], (uint32_t)i, 0, 2}, y[4];
    philox(c, k, y);
    k[0] = y[0], k[1] = y[1];
  }
}

/* ---- log and sin/cos of 2 pi t, in double, deterministic ---- */

/* ln u for 0 < u <= 1: u = m 2^e with m in [sqrt(1/2), sqrt(2)),
 * ln m = 2 atanh(s), s = (m - 1)/(m + 1), |s| < 0.172, by its series to
 * s^23 (the next term is below 1e-18 relative). */
static double det_log(double u) {
  int e;
  double m = frexp(u, &e);
  if (m < 0.70710678118654752) {
    m *= 2;
    e--;
  }
  double s = (m - 1) / (m + 1), z = s * s;
  double p = 1.0 / 23;
  for (int k = 21; k >= 1; k -= 2)
    p = p * z + 1.0 / k;
  return e * 0.69314718055994531 + 2 * s * p;
}

/* cos and sin of 2 pi t for 0 <= t < 1: t = q/4 + r exactly (q the nearest
 * quarter, |r| <= 1/8), then Taylor series of a = 2 pi r, |a| <= pi/4, to
 * a^18 / a^19 (next terms below 1e-19), rotated by q quarter turns. */
static void det_cossin(double t, double *c, double *s) {
  double q = floor(4 * t + 0.5);
  double a = (t - q * 0.25) * 6.2831853071795865, z = a * a;
  double cs = 1, sn = 1;
  for (int k = 18; k >= 2; k -= 2) {
    cs = 1 - z / (double)(k * (k - 1)) * cs;
    sn = 1 - z / (double)((k + 1) * k) * sn;
  }
  sn *= a;
  switch ((int)q & 3) {
  case 0: *c = cs, *s = sn; break;
  case 1: *c = -sn, *s = cs; break;
  case 2: *c = -cs, *s = -sn; break;
  default: *c = sn, *s = -cs; break;
  }
}

/* ---- element j of each kind ---- */

enum { RANDOM_UNIFORM = 0, RANDOM_NORMAL = 1, RANDOM_SPLIT = 2 };

typedef struct Fill {
  int kind, dtype;
  uint32_t key[2];
  void *out;
} Fill;

static void block(const Fill *f, uint64_t b, uint32_t tag, uint32_t y[4]) {
  uint32_t c[4] = {(uint32_t)b, (uint32_t)(b >> 32), 0, tag};
  philox(c, f->key, y);
}

static double u53(uint32_t hi, uint32_t lo) {
  return (double)((((uint64_t)hi << 32) | lo) >> 11) * 0x1p-53;
}

static void fill_range(void *ctx, int64_t begin, int64_t end) {
  const Fill *f = ctx;
  uint32_t y[4];
  uint64_t have = UINT64_MAX; /* the block in y */
  for (int64_t j = begin; j < end; j++) {
    uint64_t u = (uint64_t)j;
    if (f->kind == RANDOM_SPLIT) {
      block(f, u, 1, y);
      ((int32_t *)f->out)[j] = (int32_t)y[0];
      continue;
    }
    bool f32 = f->dtype == SG_F32;
    uint64_t b = f32 ? u / 4 : u / 2;
    if (b != have) {
      block(f, b, 0, y);
      have = b;
    }
    double v;
    if (f->kind == RANDOM_UNIFORM) {
      v = f32 ? (double)(y[u % 4] >> 8) * 0x1p-24 : u53(y[2 * (u % 2)], y[2 * (u % 2) + 1]);
    } else { /* Box-Muller on the pair (u1, u2); even j: cos, odd j: sin */
      double u1, u2;
      if (f32) {
        int p = (int)(u % 4) / 2;
        u1 = ((double)y[2 * p] + 0.5) * 0x1p-32;
        u2 = (double)y[2 * p + 1] * 0x1p-32;
      } else {
        u1 = u53(y[0], y[1]) + 0x1p-54;
        u2 = u53(y[2], y[3]);
      }
      double r = sqrt(-2 * det_log(u1)), c, s;
      det_cossin(u2, &c, &s);
      v = r * (u % 2 ? s : c);
    }
    if (f32)
      ((float *)f->out)[j] = (float)v;
    else
      ((double *)f->out)[j] = v;
  }
}

void sg_rt_random(int kind, int dtype, const int32_t *key, int64_t nkey, void *out, int64_t n) {
  Fill f = {kind, dtype, {0, 0}, out};
  derive_key(key, nkey, f.key);
  enum { CHUNK = 16384 }; /* a multiple of 4: chunks never split a block */
  if (n <= 2 * CHUNK)
    fill_range(&f, 0, n);
  else
    sg_rt_parallel_for(n, CHUNK, fill_range, &f);
}
