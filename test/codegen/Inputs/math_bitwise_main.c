/* Compares inline64/inline32 (exp, log, ... expanded inline: a small body)
 * with calls64/calls32 (the same operations in a body with more than
 * MATH_INLINE_MAX, so called as sg.<op>.<type> functions), bit for bit, on
 * special values and a wide spread of ordinary ones. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bitwise.h"
#include "sgtest.h"

enum { N = 4099, OPS = 7 };
static const char *const names[OPS] = {"exp", "log", "log1p", "expm1", "tanh", "sigmoid", "softplus"};

static double value(int64_t i) {
  static const double special[] = {0.0, -0.0, 1.0, -1.0, INFINITY, -INFINITY, NAN, 1e-310, -1e-310,
                                   1e-40, 88.72, 89.0, -87.3, -104.0, 709.7, 710.0, -745.2, 20.0,
                                   -20.0, 9.0, -9.0, 0.5, 1e-8, -1e-8, 3e38, -3e38};
  int ns = (int)(sizeof special / sizeof *special);
  if (i < ns)
    return special[i];
  double u = sgt_uniform(-1, 1);
  return (i % 3 == 0) ? 800 * u : (i % 3 == 1) ? 30 * u : u * 1e-3;
}

static int compare(int dtype, sg_tensor *a, sg_tensor *b, const char *op) {
  size_t size = dtype == SG_F64 ? 8 : 4;
  int bad = 0;
  for (int64_t i = 0; i < N; i++)
    if (memcmp((char *)a->data + i * size, (char *)b->data + i * size, size) != 0) {
      if (bad++ < 3)
        printf("FAIL %s:%d: %s (%s) at x[%lld]: inline %.17g, call %.17g\n", __FILE__, __LINE__,
               op, dtype == SG_F64 ? "f64" : "f32", (long long)i, sgt_get(a, i), sgt_get(b, i));
    }
  sgt_failures += bad;
  return bad;
}

static void run(int dtype) {
  sg_tensor x = SGT_TENSOR(dtype, N), k = SGT_TENSOR(dtype, 5), in[OPS], out[OPS];
  for (int64_t i = 0; i < N; i++)
    sgt_set(&x, i, value(i));
  sgt_fill(&k, -1, 1);
  for (int j = 0; j < OPS; j++)
    in[j] = SGT_TENSOR(dtype, N), out[j] = SGT_TENSOR(dtype, N);
  sg_tensor filler = sgt_scalar(dtype);
  int rc1, rc2;
  if (dtype == SG_F64) {
    rc1 = inline64(&x, &in[0], &in[1], &in[2], &in[3], &in[4], &in[5], &in[6]);
    rc2 = calls64(&x, &k, &out[0], &out[1], &out[2], &out[3], &out[4], &out[5], &out[6], &filler);
  } else {
    rc1 = inline32(&x, &in[0], &in[1], &in[2], &in[3], &in[4], &in[5], &in[6]);
    rc2 = calls32(&x, &k, &out[0], &out[1], &out[2], &out[3], &out[4], &out[5], &out[6], &filler);
  }
  CHECK_EQ_INT(rc1, SG_OK);
  CHECK_EQ_INT(rc2, SG_OK);
  int bad = 0;
  for (int j = 0; j < OPS; j++)
    bad += compare(dtype, &in[j], &out[j], names[j]);
  if (!bad)
    printf("ok: %s: inline and called forms agree bit for bit on %d values\n",
           dtype == SG_F64 ? "f64" : "f32", (int)N);
  for (int j = 0; j < OPS; j++)
    free(in[j].data), free(out[j].data);
  free(x.data), free(k.data), free(filler.data);
}

int main(void) {
  run(SG_F64);
  run(SG_F32);
  return sgt_finish();
}
