/* Driver for assign.test: indexed assignment against plain C, and asg_vjp
 * against central differences (f64). The row overwritten by v[i] = y gets
 * gradient only through later uses, never from x's old value there. */
#include "asg.h"
#include "sgtest.h"

enum { N = 5, M = 4, K = 3 };
static sg_tensor x, y, idx, i0, seed, out;

static double loss(void) {
  CHECK_EQ_INT(asg(&x, &y, &idx, &i0, &out), SG_OK);
  double l = 0;
  for (int q = 0; q < N * M; q++)
    l += sgt_get(&seed, q) * sgt_get(&out, q);
  return l;
}

int main(void) {
  x = SGT_TENSOR(SG_F64, N, M), y = SGT_TENSOR(SG_F64, M), idx = SGT_TENSOR(SG_I32, K);
  i0 = sgt_scalar(SG_I32), seed = SGT_TENSOR(SG_F64, N, M), out = SGT_TENSOR(SG_F64, N, M);
  sgt_fill(&x, -1, 1), sgt_fill(&y, -1, 1), sgt_fill(&seed, -1, 1);
  int32_t iv[K] = {4, 0, 4};
  memcpy(idx.data, iv, sizeof iv);
  ((int32_t *)i0.data)[0] = -2; /* row 3 */
  double v[N][M];
  for (int r = 0; r < N; r++)
    for (int c = 0; c < M; c++)
      v[r][c] = 2 * sgt_get(&x, r * M + c);
  for (int c = 0; c < M; c++)
    v[3][c] = sgt_get(&y, c);
  for (int r = 1; r < 3; r++)
    for (int c = 0; c < M; c++)
      v[r][c] += sin(sgt_get(&x, (r - 1) * M + c));
  v[0][1] -= 5;
  for (int r = 0; r < N; r++)
    for (int c = 1; c < 3; c++)
      v[r][c] *= sgt_get(&x, r * M + c - 1);
  for (int q = 0; q < K; q++)
    for (int c = 0; c < M; c++)
      v[iv[q]][c] += sgt_get(&y, c);
  CHECK_EQ_INT(asg(&x, &y, &idx, &i0, &out), SG_OK);
  for (int r = 0; r < N; r++)
    for (int c = 0; c < M; c++)
      CHECK_CLOSE(sgt_get(&out, r * M + c), v[r][c], 1e-14);
  sg_tensor dx = SGT_TENSOR(SG_F64, N, M), dy = SGT_TENSOR(SG_F64, M);
  CHECK_EQ_INT(asg_vjp(&x, &y, &idx, &i0, &seed, &out, &dx, &dy), SG_OK);
  double fdx[N * M], fdy[M];
  sgt_fd(loss, &x, fdx);
  sgt_fd(loss, &y, fdy);
  CHECK_GRAD(&dx, fdx, 1e-7);
  CHECK_GRAD(&dy, fdy, 1e-7);
  /* row 3 of x was overwritten and is read nowhere else after: gradient
   * only from v[:, 1:3] *= x[:, 0:2] (columns 0 and 1) */
  CHECK_EXACT(sgt_get(&dx, 3 * M + 3), 0);
  CHECK_EXACT(sgt_get(&dx, 3 * M + 2), 0);
  if (sgt_failures)
    return 1;
  printf("all checks passed\n");
  return 0;
}
