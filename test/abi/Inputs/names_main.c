/* Driver for param_name_clash.test: argument errors on outputs whose
 * generated names collide with parameter names must name the argument as
 * the header does (out_out, d_x_out), never as the parameter. */
#include "names.h"
#include "sgtest.h"

int main(void) {
  sg_tensor a = SGT_TENSOR(SG_F32, 3), b = SGT_TENSOR(SG_F32, 3), c = SGT_TENSOR(SG_F32, 3);
  sg_tensor o = sgt_scalar(SG_F32);
  sg_tensor g1 = SGT_TENSOR(SG_F32, 3), g2 = SGT_TENSOR(SG_F32, 3), g3 = SGT_TENSOR(SG_F32, 3);
  CHECK_EQ_INT(clash_grad(&a, &b, &c, &o, &g1, &g2, &g3), SG_OK);
  o.rank = 1, o.shape[0] = 3;
  printf("%d %s\n", clash_grad(&a, &b, &c, &o, &g1, &g2, &g3), sg_last_error());
  o.rank = 0;
  g2.shape[0] = 2;
  printf("%d %s\n", clash_grad(&a, &b, &c, &o, &g1, &g2, &g3), sg_last_error());
  g2.shape[0] = 3;
  void *keep = g1.data;
  g1.data = a.data;
  printf("%d %s\n", clash_grad(&a, &b, &c, &o, &g1, &g2, &g3), sg_last_error());
  g1.data = keep;
  free(a.data), free(b.data), free(c.data), free(o.data), free(g1.data), free(g2.data);
  free(g3.data);
  return sgt_finish();
}
