/* Driver for column_sums.test: argv gives n and k. Each sum of
 * column_sums.sg against the same sum in C, in row order in double;
 * bias's gradient against its formula 2 * sum_i (x_ij + b_j), and the
 * sums' bits on 1 and 2 threads. */
#include "cs.h"
#include "sgtest.h"

static int64_t N, K;

/* The column sums of an n x k array (element (i, j) by get(i, j)). */
static void ref_cols(int64_t n, int64_t k, double (*get)(int64_t, int64_t), double *out) {
  for (int64_t j = 0; j < k; j++) {
    out[j] = 0;
    for (int64_t i = 0; i < n; i++)
      out[j] += get(i, j);
  }
}

static sg_tensor z, z64, w, z3, zr3, zl, x, b;
static double gz(int64_t i, int64_t j) { return sgt_get(&z, i * K + j); }
static double gz64(int64_t i, int64_t j) { return sgt_get(&z64, i * K + j); }
static double gexpr(int64_t i, int64_t j) {
  return (double)((float)sgt_get(&z, i * K + j) * (float)sgt_get(&w, i * K + j)) + 1.5;
}
static double gr3(int64_t i, int64_t j) { return sgt_get(&zr3, i * 3 + j); }
static double gl(int64_t i, int64_t j) { return sgt_get(&zl, i * 6 + j); }
static double gsteps(int64_t i, int64_t j) {
  double v = sgt_get(&z3, i * K + j); /* step 0, then the squares of steps 1 and 2 */
  double a = sgt_get(&z3, (N + i) * K + j), c = sgt_get(&z3, (2 * N + i) * K + j);
  return v + a * a + c * c;
}
static double gbias(int64_t i, int64_t j) { return 2 * (sgt_get(&x, i * K + j) + sgt_get(&b, j)); }

int main(int argc, char **argv) {
  N = sgt_arg(argc, argv, 1, 100), K = sgt_arg(argc, argv, 2, 3);
  z = SGT_TENSOR(SG_F32, N, K), z64 = SGT_TENSOR(SG_F64, N, K), w = SGT_TENSOR(SG_F32, N, K);
  z3 = SGT_TENSOR(SG_F32, 3, N, K), zr3 = SGT_TENSOR(SG_F64, 2, N, 3), zl = SGT_TENSOR(SG_F32, N, 2, 3);
  x = SGT_TENSOR(SG_F32, N, K), b = SGT_TENSOR(SG_F32, K);
  sg_tensor *in[] = {&z, &z64, &w, &z3, &zr3, &zl, &x, &b};
  for (size_t i = 0; i < sizeof in / sizeof *in; i++)
    sgt_fill(in[i], -1, 1);
  double *want = calloc((size_t)(K > 6 ? K : 6), sizeof(double));
  sg_tensor o = SGT_TENSOR(SG_F32, K), o2 = SGT_TENSOR(SG_F32, K), o64 = SGT_TENSOR(SG_F64, K);
  sg_tensor o3 = SGT_TENSOR(SG_F64, 3), o6 = SGT_TENSOR(SG_F32, 2, 3), loss = sgt_scalar(SG_F32);

  sg_set_num_threads(1);
  CHECK_EQ_INT(colsum(&z, &o), SG_OK);
  ref_cols(N, K, gz, want);
  CHECK_GRAD_VS(&o, want, "the column sums (f32)", 1e-5);
  sg_set_num_threads(2);
  CHECK_EQ_INT(colsum(&z, &o2), SG_OK);
  CHECK_SAME_BITS(&o, &o2, "colsum");
  sg_set_num_threads(1);
  CHECK_EQ_INT(colsum64(&z64, &o64), SG_OK);
  ref_cols(N, K, gz64, want);
  CHECK_GRAD_VS(&o64, want, "the column sums (f64)", 1e-13);
  CHECK_EQ_INT(colsum_expr(&z, &w, &o), SG_OK);
  ref_cols(N, K, gexpr, want);
  CHECK_GRAD_VS(&o, want, "the column sums of z * w + 1.5", 1e-5);
  CHECK_EQ_INT(lead2(&zr3, &o3), SG_OK);
  ref_cols(2 * N, 3, gr3, want);
  CHECK_GRAD_VS(&o3, want, "the sums over two leading axes", 1e-13);
  CHECK_EQ_INT(lead1(&zl, &o6), SG_OK);
  ref_cols(N, 6, gl, want);
  CHECK_GRAD_VS(&o6, want, "the sums of [n, 2, 3] over n", 1e-5);
  CHECK_EQ_INT(steps(&z3, &o), SG_OK);
  ref_cols(N, K, gsteps, want);
  CHECK_GRAD_VS(&o, want, "the sums of a 3-step loop", 1e-5);
  sg_tensor d_b = SGT_TENSOR(SG_F32, K);
  CHECK_EQ_INT(bias_grad(&x, &b, &loss, &d_b), SG_OK);
  ref_cols(N, K, gbias, want);
  CHECK_GRAD_VS(&d_b, want, "2 * sum_i (x_ij + b_j)", 1e-5);

  sg_tensor *all[] = {&z, &z64, &w, &z3, &zr3, &zl, &x, &b, &o, &o2, &o64, &o3, &o6, &loss, &d_b};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    free(all[i]->data);
  free(want);
  return sgt_finish();
}
