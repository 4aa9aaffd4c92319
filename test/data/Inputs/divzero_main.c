/* Driver for divzero.test: a // or % by zero returns SG_ERR_INDEX with the
 * function, file and line in the message, and leaves every output as it
 * was (value and gradient). */
#include "divzero.h"
#include "sgtest.h"

int main(void) {
  sg_tensor a = SGT_TENSOR(SG_I32, 4), b = SGT_TENSOR(SG_I32, 4), x = SGT_TENSOR(SG_F32, 4);
  sg_tensor out = sgt_scalar(SG_F32), dx = SGT_TENSOR(SG_F32, 4), o4 = SGT_TENSOR(SG_I32, 4);
  for (int i = 0; i < 4; i++) {
    ((int32_t *)a.data)[i] = 10 + i;
    ((int32_t *)b.data)[i] = i == 2 ? 0 : 3;
    sgt_set(&x, i, 1.5);
    sgt_set(&dx, i, -42);
    ((int32_t *)o4.data)[i] = -42;
  }
  sgt_set(&out, 0, -42);
  CHECK_EQ_INT(idiv(&a, &b, &x, &out), SG_ERR_INDEX);
  CHECK_STR(sg_last_error(), "idiv: divzero.sg:3: integer division by zero");
  CHECK_EQ_INT(idiv_grad(&a, &b, &x, &out, &dx), SG_ERR_INDEX);
  CHECK_STR(sg_last_error(), "idiv_grad: divzero.sg:3: integer division by zero");
  CHECK_EQ_INT(imod(&a, &b, &o4), SG_ERR_INDEX);
  CHECK_STR(sg_last_error(), "imod: divzero.sg:7: integer division by zero");
  CHECK_EXACT(sgt_get(&out, 0), -42);
  for (int i = 0; i < 4; i++) {
    CHECK_EXACT(sgt_get(&dx, i), -42);
    CHECK_EQ_INT(((int32_t *)o4.data)[i], -42);
  }
  /* without the zero, the same calls succeed: q = [3, 3, 4, 4] */
  ((int32_t *)b.data)[2] = 3;
  CHECK_EQ_INT(idiv_grad(&a, &b, &x, &out, &dx), SG_OK);
  CHECK_EXACT(sgt_get(&out, 0), 1.5 * (3 + 3 + 4 + 4));
  CHECK_EXACT(sgt_get(&dx, 0), 3);
  CHECK_EXACT(sgt_get(&dx, 3), 4);
  CHECK_EQ_INT(imod(&a, &b, &o4), SG_OK);
  CHECK_EQ_INT(((int32_t *)o4.data)[3], 13 % 3 + 1);
  if (sgt_failures)
    return 1;
  printf("all checks passed\n");
  return 0;
}
