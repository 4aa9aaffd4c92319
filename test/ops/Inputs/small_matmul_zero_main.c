/* Driver for small_matmul_zero.test. a = [[inf, 1], [1, 1]], x all ones:
 * y = [[inf, inf], [2, 2]], the loss sums the finite row, so the seed is
 * g = [[0, 0], [1, 1]]; d_x = a^T @ g = [[1, 1], [1, 1]] (the terms inf * 0
 * left out, not NaN) and d_a = g @ x^T = [[0, 0], [2, 2]]. The batch case
 * repeats it in both elements of a batch of 2. zr_wide, 4 x 4 with a_00 =
 * inf and the rest ones: row 0 of y is inf, the others 4, so g has row 0
 * zero; d_x = a^T g is 3 everywhere, d_a = g x^T has row 0 zero, then 4.
 * zr_wide_right, the same with x_00 = inf and a all ones: column 0 of y is
 * inf, so g has column 0 zero; d_a = g x^T is 3 everywhere (the term g_i0
 * x_00 is 0), d_x = a^T g has column 0 zero, then 4.
 *
 * The batched cases (D x D matrices, D = 4 in f64 and 8 in f32, batch of
 * 3, ones but for one inf in element 1, batch_case): elements 0 and 2 are
 * finite, y = D, g = 1, d_a = d_x = D, loss D^3; element 1 is zr_wide
 * (inf at a_00: d_x = D - 1, d_a row 0 zero, then D) or zr_wide_right
 * (inf at x_00: d_a = D - 1, d_x column 0 zero, then D), loss D^2 (D - 1). */
#include "zr.h"
#include "sgtest.h"

static void fill(sg_tensor *t, const double *v, int64_t n) {
  for (int64_t i = 0; i < sgt_numel(t); i++)
    sgt_set(t, i, v[i % n]);
}

static const double A[4] = {INFINITY, 1, 1, 1}, X[4] = {1, 1, 1, 1};
static const double DX[4] = {1, 1, 1, 1}, DA[4] = {0, 0, 2, 2};

static void check(const char *name, const sg_tensor *da, const sg_tensor *dx, double loss,
                  double want_loss) {
  printf("%s:\n", name);
  CHECK_CLOSE(loss, want_loss, 0);
  for (int64_t i = 0; i < sgt_numel(dx); i++) {
    CHECK_CLOSE(sgt_get(dx, i), DX[i % 4], 0);
    CHECK_CLOSE(sgt_get(da, i), DA[i % 4], 0);
  }
}

/* One 4 x 4 case: inf at a_00 (right: at x_00), the rest ones. Left:
 * d_x = 3 everywhere, d_a row 0 zero, then 4; right: d_a = 3 everywhere,
 * d_x column 0 zero, then 4; the loss 48 either way. */
static void wide_case(const char *name, int (*grad)(const sg_tensor *, const sg_tensor *, sg_tensor *,
                                                     sg_tensor *, sg_tensor *),
                      int dtype, int right) {
  int64_t s[2] = {4, 4};
  sg_tensor a = sgt_tensor(dtype, 2, s), x = sgt_tensor(dtype, 2, s);
  sg_tensor da = sgt_tensor(dtype, 2, s), dx = sgt_tensor(dtype, 2, s), out = sgt_scalar(dtype);
  for (int64_t i = 0; i < 16; i++) {
    sgt_set(&a, i, i == 0 && !right ? INFINITY : 1);
    sgt_set(&x, i, i == 0 && right ? INFINITY : 1);
  }
  CHECK_EQ_INT(grad(&a, &x, &out, &da, &dx), SG_OK);
  printf("%s:\n", name);
  CHECK_CLOSE(sgt_get(&out, 0), 48, 0);
  for (int64_t i = 0; i < 16; i++) {
    double zero_side = (right ? i % 4 : i / 4) == 0 ? 0 : 4;
    CHECK_CLOSE(sgt_get(&da, i), right ? 3 : zero_side, 0);
    CHECK_CLOSE(sgt_get(&dx, i), right ? zero_side : 3, 0);
  }
  free(a.data), free(x.data), free(da.data), free(dx.data), free(out.data);
}

/* One batched case: inf at element 1's a_00 (right: its x_00). */
static void batch_case(const char *name, int (*grad)(const sg_tensor *, const sg_tensor *, sg_tensor *,
                                                      sg_tensor *, sg_tensor *),
                       int dtype, int64_t D, int right) {
  int64_t s[3] = {3, D, D}, n = D * D;
  sg_tensor a = sgt_tensor(dtype, 3, s), x = sgt_tensor(dtype, 3, s);
  sg_tensor da = sgt_tensor(dtype, 3, s), dx = sgt_tensor(dtype, 3, s), out = sgt_scalar(dtype);
  for (int64_t i = 0; i < 3 * n; i++) {
    sgt_set(&a, i, i == n && !right ? INFINITY : 1);
    sgt_set(&x, i, i == n && right ? INFINITY : 1);
  }
  CHECK_EQ_INT(grad(&a, &x, &out, &da, &dx), SG_OK);
  printf("%s:\n", name);
  CHECK_CLOSE(sgt_get(&out, 0), (double)(2 * D * D * D + D * D * (D - 1)), 0);
  for (int64_t i = 0; i < 3 * n; i++) {
    int64_t e = i / n, r = i % n / D, c = i % D;
    double inf_side = D - 1, zero_side = (right ? c : r) == 0 ? 0 : D;
    CHECK_CLOSE(sgt_get(&da, i), e != 1 ? D : right ? inf_side : zero_side, 0);
    CHECK_CLOSE(sgt_get(&dx, i), e != 1 ? D : right ? zero_side : inf_side, 0);
  }
  free(a.data), free(x.data), free(da.data), free(dx.data), free(out.data);
}

int main(void) {
  int64_t s2[2] = {2, 2}, s3[3] = {2, 2, 2};
  sg_tensor a = sgt_tensor(SG_F64, 2, s2), x = sgt_tensor(SG_F64, 2, s2);
  sg_tensor da = sgt_tensor(SG_F64, 2, s2), dx = sgt_tensor(SG_F64, 2, s2);
  sg_tensor out = sgt_scalar(SG_F64);
  fill(&a, A, 4), fill(&x, X, 4);
  CHECK_EQ_INT(zr_plain_grad(&a, &x, &out, &da, &dx), SG_OK);
  check("zr_plain", &da, &dx, sgt_get(&out, 0), 4);
  sg_tensor ab = sgt_tensor(SG_F64, 3, s3), xb = sgt_tensor(SG_F64, 3, s3);
  sg_tensor dab = sgt_tensor(SG_F64, 3, s3), dxb = sgt_tensor(SG_F64, 3, s3);
  fill(&ab, A, 4), fill(&xb, X, 4);
  CHECK_EQ_INT(zr_batch_grad(&ab, &xb, &out, &dab, &dxb), SG_OK);
  check("zr_batch", &dab, &dxb, sgt_get(&out, 0), 8);
  free(a.data), free(x.data), free(da.data), free(dx.data);
  free(ab.data), free(xb.data), free(dab.data), free(dxb.data);
  wide_case("zr_wide", zr_wide_grad, SG_F64, 0);
  wide_case("zr_wide_right", zr_wide_right_grad, SG_F64, 1);
  batch_case("zr_batch_wide", zr_batch_wide_grad, SG_F64, 4, 0);
  batch_case("zr_batch_wide_right", zr_batch_wide_right_grad, SG_F64, 4, 1);
  batch_case("zr_batch8", zr_batch8_grad, SG_F32, 8, 0);
  batch_case("zr_batch_whole", zr_batch_whole_grad, SG_F32, 4, 1);
  wide_case("zr_whole", zr_whole_grad, SG_F32, 0); /* zr_wide in f32 */
  return sgt_finish();
}
