/* Driver for edge_rules.test. */
#include "edge.h"
#include "sgtest.h"

int main(void) {
  double a = 1, b = 1000, out, da = -1, db = -1;
  sg_tensor ta = {&a, {1, 1}, 2, SG_F64}, tb = {&b, {1, 1}, 2, SG_F64};
  sg_tensor to = {&out, {0}, 0, SG_F64}, tda = {&da, {1, 1}, 2, SG_F64}, tdb = {&db, {1, 1}, 2, SG_F64};
  CHECK_EQ_INT(mm_grad(&ta, &tb, &to, &tda, &tdb), SG_OK);
  CHECK_EXACT(out, 0);
  CHECK_EXACT(da, 0);
  CHECK_EXACT(db, 0);

  double va[2] = {1, 2}, vb[2] = {1000, 1}, vda[2] = {-1, -1}, vdb[2] = {-1, -1};
  sg_tensor tva = {va, {2}, 1, SG_F64}, tvb = {vb, {2}, 1, SG_F64};
  sg_tensor tvda = {vda, {2}, 1, SG_F64}, tvdb = {vdb, {2}, 1, SG_F64};
  CHECK_EQ_INT(vv_grad(&tva, &tvb, &to, &tvda, &tvdb), SG_OK);
  for (int i = 0; i < 2; i++) {
    CHECK_EXACT(vda[i], 0);
    CHECK_EXACT(vdb[i], 0);
  }

  double w[2] = {1, 3}, dw[2];
  sg_tensor tw = {w, {2}, 1, SG_F64}, tdw = {dw, {2}, 1, SG_F64};
  CHECK_EQ_INT(viaconst_grad(&tw, &to, &tdw), SG_OK);
  CHECK_EXACT(out, 10);
  CHECK_EXACT(dw[0], 1); /* w, not 2w: x is const in helper */
  CHECK_EXACT(dw[1], 3);
  return sgt_finish();
}
