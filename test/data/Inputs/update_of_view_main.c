/* Calls update_of_view.sg's exports and checks their values by hand and
 * that the caller's arrays still hold what they held. */
#include "sgtest.h"
#include "update_of_view.h"

int main(void) {
  sg_tensor p = SGT_TENSOR(SG_F64, 1, 1), out = sgt_scalar(SG_F64);
  sgt_set(&p, 0, 0.5);
  CHECK_EQ_INT(whole(&p, &out), SG_OK);
  CHECK_EXACT(sgt_get(&out, 0), 0.5 + 10 * 1.5);
  CHECK_EXACT(sgt_get(&p, 0), 0.5);

  sg_tensor q = SGT_TENSOR(SG_F64, 3), k = sgt_scalar(SG_I32);
  double qs[3] = {0.5, 0.25, 4};
  for (int i = 0; i < 3; i++)
    sgt_set(&q, i, qs[i]);
  sgt_set(&k, 0, 0);
  CHECK_EQ_INT(rows(&q, &k, &out), SG_OK);
  CHECK_EXACT(sgt_get(&out, 0), 0.5 + 10 * (1.5 + 0.25));
  for (int i = 0; i < 3; i++)
    CHECK_EXACT(sgt_get(&q, i), qs[i]);
  free(p.data);
  free(q.data);
  free(k.data);
  free(out.data);
  return sgt_finish();
}
