/* Driver for stream_stores.test: outputs of 16 MiB and more are written
 * with non-temporal stores where the address allows (codegen/cg_stream.c),
 * smaller ones as before. Every element is checked exactly (the inputs are
 * small multiples of 1/2, so 3x + 1, x^2, 3 s, x + 1 and 2y are exact), for outputs
 * aligned to 64 bytes and 4 bytes past that, sizes just over the threshold
 * with a ragged tail and well under it: f32 affine(x) and its vjp, f64
 * sq(x), and mix(x, y), one loop storing both types. */
#include <stdint.h>

#include "sgtest.h"
#include "stream.h"

static char *raw[16];
static int nraw;

/* A tensor of n elements whose data is `skew` bytes past a 64-byte line. */
static sg_tensor vec(int dtype, int64_t n, int skew) {
  size_t size = (size_t)n * (dtype == SG_F64 ? 8 : 4);
  char *p = aligned_alloc(64, (size + 64 + 63) / 64 * 64);
  raw[nraw++] = p;
  sg_tensor t = {.data = p + skew, .shape = {n}, .rank = 1, .dtype = dtype};
  for (int64_t i = 0; i < n; i++)
    sgt_set(&t, i, 0.5 * (double)(i % 997) - 200);
  return t;
}

static void free_all(void) {
  while (nraw > 0)
    free(raw[--nraw]);
}

/* The first element where got differs from want(x), if any. */
#define CHECK_ALL(got, x, want)                                                         \
  do {                                                                                  \
    for (int64_t i = 0; i < sgt_numel(&(got)); i++) {                                   \
      double x_ = sgt_get(&(x), i);                                                     \
      if (sgt_get(&(got), i) != (want)) {                                               \
        printf("at %lld of %lld:\n", (long long)i, (long long)sgt_numel(&(got)));       \
        CHECK_EXACT(sgt_get(&(got), i), (want));                                        \
        break;                                                                          \
      }                                                                                 \
    }                                                                                   \
  } while (0)

static void f32_case(int64_t n, int skew) {
  sg_tensor x = vec(SG_F32, n, 0), y = vec(SG_F32, n, skew);
  sg_tensor s = vec(SG_F32, n, 0), dx = vec(SG_F32, n, skew), y2 = vec(SG_F32, n, 0);
  CHECK_EQ_INT(affine(&x, &y), SG_OK);
  CHECK_ALL(y, x, 3 * x_ + 1);
  CHECK_EQ_INT(affine_vjp(&x, &s, &y2, &dx), SG_OK);
  CHECK_ALL(y2, x, 3 * x_ + 1);
  CHECK_ALL(dx, s, 3 * x_);
  free_all();
}

static void f64_case(int64_t n, int skew) {
  sg_tensor x = vec(SG_F64, n, 0), y = vec(SG_F64, n, skew);
  CHECK_EQ_INT(sq(&x, &y), SG_OK);
  CHECK_ALL(y, x, x_ * x_);
  free_all();
}

/* One loop writing a float and a double output. */
static void mix_case(int64_t n, int skew) {
  sg_tensor x = vec(SG_F32, n, 0), y = vec(SG_F64, n, 0);
  sg_tensor a = vec(SG_F32, n, skew), b = vec(SG_F64, n, skew);
  CHECK_EQ_INT(mix(&x, &y, &a, &b), SG_OK);
  CHECK_ALL(a, x, x_ + 1);
  CHECK_ALL(b, y, 2 * x_);
  free_all();
}

int main(void) {
  const int64_t f32_min = (16 << 20) / 4, f64_min = (16 << 20) / 8;
  const int skews[] = {0, 4, 32};
  for (int k = 0; k < 3; k++) {
    f32_case(f32_min + 37, skews[k]);
    f32_case(f32_min - 1, skews[k]);
    f32_case(1000, skews[k]);
    f64_case(f64_min + 5, skews[k] * 2);
    f64_case(f64_min - 1, skews[k] * 2);
    mix_case(f32_min + 37, skews[k] * 2);
  }
  printf("ok: affine, its vjp, sq and mix, streamed and not\n");
  return sgt_finish();
}
