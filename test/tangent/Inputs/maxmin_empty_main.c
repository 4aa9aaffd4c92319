/* Driver for maxmin_empty.test: the tangents of max/min reductions over an
 * empty axis (n = 0), alone and in a product with a mean, are exactly 0, as
 * reverse mode gives nothing to anyone; the values are min of nothing =
 * +inf, max of nothing = -inf, mean of nothing = NaN. */
#include "sgtest.h"
#include "maxmin_empty.h"

int main(void) {
  sg_tensor p0 = sgt_scalar(SG_F64), tp0 = sgt_scalar(SG_F64), d0 = sgt_scalar(SG_F64);
  sg_tensor r32 = SGT_TENSOR(SG_F32, 2, 0), r64 = SGT_TENSOR(SG_F64, 2, 0);
  sg_tensor v32 = SGT_TENSOR(SG_F32, 0), v64 = SGT_TENSOR(SG_F64, 0);
  sg_tensor o32 = sgt_scalar(SG_F32), t32 = sgt_scalar(SG_F32);
  sg_tensor o64 = sgt_scalar(SG_F64), t64 = sgt_scalar(SG_F64);
  sgt_set(&p0, 0, 0.5);
  sgt_set(&tp0, 0, 1);

  CHECK_EQ_INT(min_rows32_jvp(&p0, &r32, &tp0, &r32, &o32, &t32), SG_OK);
  CHECK_CLOSE(sgt_get(&o32, 0), INFINITY, 0);
  CHECK_EXACT(sgt_get(&t32, 0), 0);
  sgt_set(&d0, 0, 7);
  CHECK_EQ_INT(min_rows32_grad(&p0, &r32, &o32, &d0, &r32), SG_OK);
  CHECK_EXACT(sgt_get(&d0, 0), 0);

  CHECK_EQ_INT(max_rows64_jvp(&r64, &r64, &o64, &t64), SG_OK);
  CHECK_CLOSE(sgt_get(&o64, 0), -INFINITY, 0);
  CHECK_EXACT(sgt_get(&t64, 0), 0);

  CHECK_EQ_INT(mean_min32_jvp(&v32, &v32, &o32, &t32), SG_OK);
  CHECK_CLOSE(sgt_get(&o32, 0), NAN, 0);
  CHECK_EXACT(sgt_get(&t32, 0), 0);

  CHECK_EQ_INT(mean_max64_jvp(&v64, &v64, &o64, &t64), SG_OK);
  CHECK_CLOSE(sgt_get(&o64, 0), NAN, 0);
  CHECK_EXACT(sgt_get(&t64, 0), 0);

  sg_tensor *all[] = {&p0, &tp0, &d0, &r32, &r64, &v32, &v64, &o32, &t32, &o64, &t64};
  for (size_t k = 0; k < sizeof all / sizeof *all; k++)
    free(all[k]->data);
  return sgt_finish();
}
