/* steps(x) and its gradient after N iterations of s = s * a + 0.5, against
 * the same recurrence in C (the gradient is a^N). Usage: prog N */
#include "sgtest.h"
#include "trip.h"

int main(int argc, char **argv) {
  int64_t n = sgt_arg(argc, argv, 1, 1000000);
  double x = 0.25, s = x, d = 1, a = 1.0000001;
  for (int64_t i = 0; i < n; i++) {
    s = s * a + 0.5;
    d *= a;
  }
  sg_tensor in = sgt_scalar(SG_F64), out = sgt_scalar(SG_F64), dx = sgt_scalar(SG_F64);
  sgt_set(&in, 0, x);
  CHECK_EQ_INT(steps_grad(&in, &out, &dx), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), s, 1e-12);
  CHECK_CLOSE(sgt_get(&dx, 0), d, 1e-12);
  free(in.data), free(out.data), free(dx.data);
  return sgt_finish();
}
