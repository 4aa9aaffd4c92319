/* Random numbers: Philox4x32-10 against the Random123 known answers, the
 * documented mapping from (key, element index) to numbers recomputed here
 * from the bare generator, statistics of 10^6 draws, split, key tensors,
 * zero gradient, and the same bits for 1 and 4 threads. argv[1] names the
 * digest file (compared across -O levels by the test). */
#include "random.h"
#include "sgrt.h"
#include "sgtest.h"

static uint32_t word(uint32_t key, uint64_t b, uint32_t tag, int w) {
  uint32_t c[4] = {(uint32_t)b, (uint32_t)(b >> 32), 0, tag}, k[2] = {key, 0}, y[4];
  sg_rt_philox4x32_10(c, k, y);
  return y[w];
}

static void kat(void) {
  static const uint32_t v[3][10] = {
      {0, 0, 0, 0, 0, 0, 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8},
      {0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff,
       0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd},
      {0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0,
       0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}};
  for (int t = 0; t < 3; t++) {
    uint32_t y[4];
    sg_rt_philox4x32_10(v[t], v[t] + 4, y);
    for (int w = 0; w < 4; w++)
      CHECK_EQ_INT(y[w], v[t][6 + w]);
  }
  printf("ok: Philox4x32-10 known answers\n");
}

typedef int Draw(const sg_tensor *, const sg_tensor *, sg_tensor *);

static sg_tensor draw(Draw *f, int dtype, int32_t key, int64_t n) {
  sg_tensor k = sgt_scalar(SG_I32), like = sgt_tensor(dtype, 1, &n), out = sgt_tensor(dtype, 1, &n);
  *(int32_t *)k.data = key;
  CHECK_EQ_INT(f(&k, &like, &out), SG_OK);
  free(k.data);
  free(like.data);
  return out;
}

static void moments(const sg_tensor *t, double *mean, double *var, double *m4, double *lo, double *hi) {
  int64_t n = sgt_numel(t);
  double s = 0, s2 = 0, s4 = 0;
  *lo = INFINITY, *hi = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    double x = sgt_get(t, i);
    s += x;
    *lo = fmin(*lo, x), *hi = fmax(*hi, x);
  }
  *mean = s / n;
  for (int64_t i = 0; i < n; i++) {
    double d = sgt_get(t, i) - *mean;
    s2 += d * d;
    s4 += d * d * d * d;
  }
  *var = s2 / n;
  *m4 = s4 / n / (*var * *var);
}

static uint64_t digest(const sg_tensor *t) {
  uint64_t h = 1469598103934665603ull;
  const unsigned char *p = t->data;
  size_t bytes = (size_t)sgt_numel(t) * (t->dtype == SG_F64 ? 8 : 4);
  for (size_t i = 0; i < bytes; i++)
    h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

int main(int argc, char **argv) {
  kat();
  const int64_t N = 1000000;
  const int32_t K = 20261123;
  FILE *dig = argc > 1 ? fopen(argv[1], "w") : NULL;

  /* the mapping of docs/language.md 2.11, from the bare generator */
  sg_tensor u = draw(uni32, SG_F32, K, 9), d = draw(uni64, SG_F64, K, 5);
  sg_tensor z = draw(nrm32, SG_F32, K, 8), w = draw(nrm64, SG_F64, K, 4);
  for (int j = 0; j < 9; j++)
    CHECK_EXACT(sgt_get(&u, j), (word(K, j / 4, 0, j % 4) >> 8) * 0x1p-24);
  for (int j = 0; j < 5; j++) {
    uint64_t b = ((uint64_t)word(K, j / 2, 0, 2 * (j % 2)) << 32) | word(K, j / 2, 0, 2 * (j % 2) + 1);
    CHECK_EXACT(sgt_get(&d, j), (b >> 11) * 0x1p-53);
  }
  for (int j = 0; j < 8; j++) { /* Box-Muller with libm: agrees to rounding */
    int p = (j % 4) / 2;
    double u1 = (word(K, j / 4, 0, 2 * p) + 0.5) * 0x1p-32, u2 = word(K, j / 4, 0, 2 * p + 1) * 0x1p-32;
    double r = sqrt(-2 * log(u1)), a = 6.283185307179586477 * u2;
    CHECK_CLOSE(sgt_get(&z, j), r * (j % 2 ? sin(a) : cos(a)), 1e-6);
  }
  for (int j = 0; j < 4; j++) {
    uint64_t b1 = ((uint64_t)word(K, j / 2, 0, 0) << 32) | word(K, j / 2, 0, 1);
    uint64_t b2 = ((uint64_t)word(K, j / 2, 0, 2) << 32) | word(K, j / 2, 0, 3);
    double u1 = (b1 >> 11) * 0x1p-53 + 0x1p-54, u2 = (b2 >> 11) * 0x1p-53;
    double r = sqrt(-2 * log(u1)), a = 6.283185307179586477 * u2;
    CHECK_CLOSE(sgt_get(&w, j), r * (j % 2 ? sin(a) : cos(a)), 1e-14);
  }
  printf("ok: uniform and normal follow the documented mapping\n");
  free(u.data), free(d.data), free(z.data), free(w.data);

  /* statistics of 10^6 draws (bounds at about 5 standard errors) */
  Draw *fs[4] = {uni32, uni64, nrm32, nrm64};
  const char *names[4] = {"uniform f32", "uniform f64", "normal f32", "normal f64"};
  for (int t = 0; t < 4; t++) {
    int dt = t % 2 ? SG_F64 : SG_F32;
    sg_set_num_threads(1);
    sg_tensor one = draw(fs[t], dt, K + t, N);
    sg_set_num_threads(4);
    sg_tensor four = draw(fs[t], dt, K + t, N);
    sg_set_num_threads(0);
    CHECK(memcmp(one.data, four.data, (size_t)N * (dt == SG_F64 ? 8 : 4)) == 0);
    double mean, var, m4, lo, hi;
    moments(&one, &mean, &var, &m4, &lo, &hi);
    if (t < 2) {
      CHECK_CLOSE(mean, 0.5, 0.0015);
      CHECK_CLOSE(var, 1.0 / 12, 0.0007);
      CHECK(lo >= 0 && hi < 1);
    } else {
      CHECK_CLOSE(mean, 0, 0.005);
      CHECK_CLOSE(var, 1, 0.007);
      CHECK_CLOSE(m4, 3, 0.05);
      CHECK(lo > -7 && hi < 7);
    }
    printf("ok: %s: mean %.4f, variance %.4f, range [%.3g, %.3g], same bits for 1 and 4 threads\n",
           names[t], mean, var, lo, hi);
    if (dig)
      fprintf(dig, "%s %016llx\n", names[t], (unsigned long long)digest(&one));
    sg_tensor again = draw(fs[t], dt, K + t, N), other = draw(fs[t], dt, K + t + 100, N);
    CHECK(memcmp(one.data, again.data, (size_t)N * (dt == SG_F64 ? 8 : 4)) == 0);
    CHECK(memcmp(one.data, other.data, (size_t)N * (dt == SG_F64 ? 8 : 4)) != 0);
    free(one.data), free(four.data), free(again.data), free(other.data);
  }

  /* split: keys from counter tag 1, distinct, none equal to the key */
  sg_tensor k = sgt_scalar(SG_I32), ks = SGT_TENSOR(SG_I32, 4);
  *(int32_t *)k.data = K;
  CHECK_EQ_INT(keys(&k, &ks), SG_OK);
  for (int j = 0; j < 4; j++) {
    CHECK_EQ_INT(((int32_t *)ks.data)[j], (int32_t)word(K, j, 1, 0));
    CHECK(((int32_t *)ks.data)[j] != K);
    for (int i = 0; i < j; i++)
      CHECK(((int32_t *)ks.data)[i] != ((int32_t *)ks.data)[j]);
  }
  printf("ok: split(key, 4) = word 0 of Philox((j, 0, 0, 1), (key, 0))\n");

  /* key tensors */
  sg_tensor kt = SGT_TENSOR(SG_I32, 2), a = SGT_TENSOR(SG_F32, 2, 3), b = SGT_TENSOR(SG_F32, 2, 3),
            c = SGT_TENSOR(SG_F32, 2, 3);
  ((int32_t *)kt.data)[0] = K, ((int32_t *)kt.data)[1] = 7;
  CHECK_EQ_INT(tkey(&kt, &a, &b, &c), SG_OK);
  CHECK(memcmp(b.data, c.data, 24) == 0);
  CHECK(memcmp(a.data, b.data, 24) != 0);
  uint32_t k2[2] = {(uint32_t)K, 0}, c2[4] = {7, 1, 0, 2}, y[4];
  sg_rt_philox4x32_10(c2, k2, y); /* the folded key */
  uint32_t c0[4] = {0, 0, 0, 0}, y0[4];
  sg_rt_philox4x32_10(c0, y, y0);
  CHECK_EXACT(sgt_get(&a, 1), (y0[1] >> 8) * 0x1p-24);
  printf("ok: a key tensor folds its elements; [k] is the key k\n");

  /* no gradient through the numbers: d/dx sum(x * z + u) = z */
  int64_t n = 6;
  sg_tensor x = sgt_tensor(SG_F32, 1, &n), out = sgt_scalar(SG_F32), dx = sgt_tensor(SG_F32, 1, &n);
  sgt_fill(&x, -1, 1);
  CHECK_EQ_INT(noisy_grad(&x, &k, &out, &dx), SG_OK);
  sg_tensor zz = draw(nrm32, SG_F32, K, n);
  for (int j = 0; j < n; j++)
    CHECK_EXACT(sgt_get(&dx, j), sgt_get(&zz, j));
  printf("ok: d/dx sum(x * normal(key) + uniform(key + 1)) = normal(key)\n");
  if (dig)
    fclose(dig);
  sg_tensor *all[] = {&k, &ks, &kt, &a, &b, &c, &x, &out, &dx, &zz};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    free(all[i]->data);
  return sgt_finish();
}
