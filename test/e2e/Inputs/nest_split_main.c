/* Driver for nest_split.test: argv gives k and d. The rows of [k, d]
 * fills (the outer product of a matrix-vector product's adjoint; a
 * broadcast product) against C: values exactly, the f64 softmax
 * cross-entropy's gradient against central differences, the f32 one
 * against the f64 one, and the zero rule of d_w = outer(y, x) bit for bit
 * with infinities in x and y against zeros in the other. */
#include <string.h>

#include "nest.h"
#include "sgtest.h"

static int64_t K, D;
static sg_tensor w64, x64, y64;

static double xent64_loss(void) {
  sg_tensor o = sgt_scalar(SG_F64);
  CHECK_EQ_INT(xent64(&w64, &x64, &y64, &o), SG_OK);
  double l = sgt_get(&o, 0);
  free(o.data);
  return l;
}

/* +0 or -0 or a value: the same bits (NaN as NaN). */
static bool same_bits(float a, float b) {
  if (isnan(a) || isnan(b))
    return isnan(a) && isnan(b);
  return memcmp(&a, &b, sizeof a) == 0;
}

/* lin64's d_w = outer(y, x) under the zero rule, bit for bit, with
 * zeros, -0, infinities and a NaN among both factors. */
static void zero_rule_f64(void) {
  sg_tensor w = SGT_TENSOR(SG_F64, K, D), x = SGT_TENSOR(SG_F64, D), y = SGT_TENSOR(SG_F64, K);
  sg_tensor o = sgt_scalar(SG_F64), dw = SGT_TENSOR(SG_F64, K, D);
  sgt_fill(&w, -1, 1), sgt_fill(&x, -1, 1), sgt_fill(&y, -1, 1);
  double *X = x.data, *Y = y.data;
  if (D > 0)
    X[D - 1] = -INFINITY;
  if (D > 1)
    X[D / 2] = -0.0;
  if (D > 2)
    X[1] = NAN;
  if (K > 0)
    Y[0] = INFINITY;
  if (K > 1)
    Y[K - 1] = 0.0;
  if (K > 2)
    Y[K / 2] = NAN;
  if (K > 3)
    Y[1] = -0.0;
  CHECK_EQ_INT(lin64_grad(&w, &x, &y, &o, &dw), SG_OK);
  int bad = 0;
  for (int64_t i = 0; i < K; i++)
    for (int64_t j = 0; j < D; j++) {
      double want = Y[i] == 0 || X[j] == 0 ? 0.0 : Y[i] * X[j], got = ((double *)dw.data)[i * D + j];
      bool same = isnan(want) || isnan(got) ? isnan(want) && isnan(got)
                                            : memcmp(&want, &got, sizeof got) == 0;
      if (!same && bad++ < 5)
        printf("FAIL d_w64[%lld][%lld] = %g, expected %g\n", (long long)i, (long long)j, got,
               want);
    }
  sgt_failures += bad > 0;
  printf("%s: lin64 d_w under the zero rule, bit for bit\n", bad ? "FAIL" : "ok");
  free(w.data), free(x.data), free(y.data), free(o.data), free(dw.data);
}

int main(int argc, char **argv) {
  K = sgt_arg(argc, argv, 1, 10);
  D = sgt_arg(argc, argv, 2, 20);
  sg_tensor w = SGT_TENSOR(SG_F32, K, D), x = SGT_TENSOR(SG_F32, D), y = SGT_TENSOR(SG_F32, K);
  w64 = SGT_TENSOR(SG_F64, K, D), x64 = SGT_TENSOR(SG_F64, D), y64 = SGT_TENSOR(SG_F64, K);
  sgt_fill(&w, -1, 1);
  sgt_fill(&x, -1, 1);
  sgt_fill(&y, 0, 1);
  sgt_copy(&w64, &w), sgt_copy(&x64, &x), sgt_copy(&y64, &y);

  /* the softmax cross-entropy: f64 gradient against central differences,
   * f32 against f64 */
  sg_tensor o = sgt_scalar(SG_F32), o64 = sgt_scalar(SG_F64);
  sg_tensor dw = SGT_TENSOR(SG_F32, K, D), dw64 = SGT_TENSOR(SG_F64, K, D);
  CHECK_EQ_INT(xent64_grad(&w64, &x64, &y64, &o64, &dw64), SG_OK);
  CHECK_EQ_INT(xent_grad(&w, &x, &y, &o, &dw), SG_OK);
  double *fd = malloc((size_t)(K * D + 1) * sizeof(double));
  sgt_fd(xent64_loss, &w64, fd);
  CHECK_GRAD(&dw64, fd, 1e-7);
  double *want = malloc((size_t)(K * D + 1) * sizeof(double));
  for (int64_t i = 0; i < K * D; i++)
    want[i] = sgt_get(&dw64, i);
  CHECK_GRAD_VS(&dw, want, "the f64 gradient", 1e-5);

  /* d_w = outer(y, x) with the zero rule: an infinite x_j against y_i = 0
   * and an infinite y_i against x_j = 0 give +0; -0 factors give +0 */
  float *X = x.data, *Y = y.data;
  if (D > 0)
    X[D - 1] = INFINITY;
  if (D > 1)
    X[D / 2] = 0.0f;
  if (D > 2)
    X[0] = -0.0f;
  if (K > 0)
    Y[0] = 0.0f;
  if (K > 1)
    Y[K - 1] = -INFINITY;
  if (K > 2)
    Y[K / 2] = -0.0f;
  CHECK_EQ_INT(lin_grad(&w, &x, &y, &o, &dw), SG_OK);
  int bad = 0;
  for (int64_t i = 0; i < K; i++)
    for (int64_t j = 0; j < D; j++) {
      float want_ij = Y[i] == 0 || X[j] == 0 ? 0.0f : Y[i] * X[j];
      float got = ((float *)dw.data)[i * D + j];
      if (!same_bits(got, want_ij) && bad++ < 5)
        printf("FAIL d_w[%lld][%lld] = %g, expected %g\n", (long long)i, (long long)j, got,
               want_ij);
    }
  sgt_failures += bad > 0;
  printf("%s: lin d_w under the zero rule, bit for bit\n", bad ? "FAIL" : "ok");
  zero_rule_f64();

  /* the forward fill a * b + 1 */
  sg_tensor s = SGT_TENSOR(SG_F32, K, D);
  sgt_fill(&x, -1, 1);
  CHECK_EQ_INT(scale(&w, &x, &s), SG_OK);
  bad = 0;
  for (int64_t i = 0; i < K; i++)
    for (int64_t j = 0; j < D; j++) {
      volatile float p = ((float *)w.data)[i * D + j] * X[j];
      float want_ij = p + 1.0f, got = ((float *)s.data)[i * D + j];
      if (!same_bits(got, want_ij) && bad++ < 5)
        printf("FAIL scale[%lld][%lld] = %g, expected %g\n", (long long)i, (long long)j, got,
               want_ij);
    }
  sgt_failures += bad > 0;
  printf("%s: scale, bit for bit\n", bad ? "FAIL" : "ok");
  free(fd), free(want);
  free(w.data), free(x.data), free(y.data), free(w64.data), free(x64.data), free(y64.data);
  free(o.data), free(o64.data), free(dw.data), free(dw64.data), free(s.data);
  return sgt_finish();
}
