/* Driver for sizes.test: size expressions at run time. */
#include "sizes.h"
#include "sgtest.h"

int main(void) {
  /* flat: y (row-major) and z (column-major) with the factor k*d - 1 */
  sg_tensor x = SGT_TENSOR(SG_F32, 2, 3), out = SGT_TENSOR(SG_F32, 6), seed = SGT_TENSOR(SG_F32, 6);
  sg_tensor dx = SGT_TENSOR(SG_F32, 2, 3);
  for (int i = 0; i < 6; i++) {
    sgt_set(&x, i, i + 1);
    sgt_set(&seed, i, i == 1 ? 1 : 0);
  }
  CHECK_EQ_INT(flat(&x, &out), SG_OK);
  /* x = [[1,2,3],[4,5,6]]; transpose flattened = [1,4,2,5,3,6] */
  const double zt[6] = {1, 4, 2, 5, 3, 6};
  for (int i = 0; i < 6; i++)
    CHECK_EXACT(sgt_get(&out, i), 2 * (i + 1) + 5 * zt[i]);
  CHECK_EQ_INT(flat_vjp(&x, &seed, &out, &dx), SG_OK);
  /* out[1] = 2 x[1] + 5 x^T[1] = 2 x[0,1] + 5 x[1,0] */
  for (int i = 0; i < 6; i++)
    CHECK_EXACT(sgt_get(&dx, i), i == 1 ? 2 : i == 3 ? 5 : 0);
  /* an output of the wrong size names the expression and its value */
  sg_tensor bad = SGT_TENSOR(SG_F32, 5);
  CHECK_EQ_INT(flat(&x, &bad), SG_ERR_SHAPE);
  CHECK_STR(sg_last_error(), "flat: argument 'out' has shape [5], expected [d * k] with d * k = 6");

  /* tail: [n - 1] */
  sg_tensor s = sgt_scalar(SG_F32), x4 = SGT_TENSOR(SG_F32, 4), o3 = SGT_TENSOR(SG_F32, 3);
  sg_tensor sd = SGT_TENSOR(SG_F32, 3), ds = sgt_scalar(SG_F32), dx4 = SGT_TENSOR(SG_F32, 4);
  sgt_set(&s, 0, 0.5);
  for (int i = 0; i < 4; i++)
    sgt_set(&x4, i, i);
  for (int i = 0; i < 3; i++)
    sgt_set(&sd, i, i + 1);
  CHECK_EQ_INT(tail(&s, &x4, &o3), SG_OK);
  for (int i = 0; i < 3; i++)
    CHECK_EXACT(sgt_get(&o3, i), 0.5 * 4 + 6);
  CHECK_EQ_INT(tail_vjp(&s, &x4, &sd, &o3, &ds, &dx4), SG_OK);
  CHECK_EXACT(sgt_get(&ds, 0), 4 * (1 + 2 + 3));
  for (int i = 0; i < 4; i++)
    CHECK_EXACT(sgt_get(&dx4, i), 1 + 2 + 3);
  /* n = 0: the output [n - 1] cannot exist; the size is reported negative */
  sg_tensor x0 = SGT_TENSOR(SG_F32, 0), o0 = SGT_TENSOR(SG_F32, 0);
  sgt_set(&o0, 0, 42); /* (the buffer has one float of room) */
  CHECK_EQ_INT(tail(&s, &x0, &o0), SG_ERR_SHAPE);
  CHECK_STR(sg_last_error(), "tail: size n - 1 is -1 for these arguments; sizes cannot be negative");
  CHECK_EXACT(((float *)o0.data)[0], 42);
  /* inner: a size only the body uses, 2 * n - 3 */
  sg_tensor o = sgt_scalar(SG_F32), x1 = SGT_TENSOR(SG_F32, 1);
  sgt_set(&x1, 0, 7);
  CHECK_EQ_INT(inner(&s, &x4, &o), SG_OK);
  CHECK_EXACT(sgt_get(&o, 0), 0.5 * 5 + 6);
  sgt_set(&o, 0, 42);
  CHECK_EQ_INT(inner(&s, &x1, &o), SG_ERR_SHAPE);
  CHECK_STR(sg_last_error(), "inner: size 2 * n - 3 is -1 for these arguments; sizes cannot be negative");
  CHECK_EXACT(sgt_get(&o, 0), 42);
  if (sgt_failures)
    return 1;
  printf("all checks passed\n");
  return 0;
}
