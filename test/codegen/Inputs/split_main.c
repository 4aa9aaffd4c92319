/* The gradient of a function big enough to be cut into pieces
 * (Inputs/gen_statements.py 150 --f64) against central finite differences
 * of its own value, for both parameters. */
#include "sgtest.h"

int big(const sg_tensor *w, const sg_tensor *x, sg_tensor *out);
int big_grad(const sg_tensor *w, const sg_tensor *x, sg_tensor *out, sg_tensor *d_w,
             sg_tensor *d_x);

static sg_tensor w, x;

static double loss(void) {
  sg_tensor out = sgt_scalar(SG_F64);
  CHECK_EQ_INT(big(&w, &x, &out), 0);
  double v = sgt_get(&out, 0);
  free(out.data);
  return v;
}

int main(void) {
  w = SGT_TENSOR(SG_F64, 5, 5);
  x = SGT_TENSOR(SG_F64, 3, 5);
  sgt_fill(&w, -0.6, 0.6);
  sgt_fill(&x, -1, 1);
  sg_tensor out = sgt_scalar(SG_F64), d_w = SGT_TENSOR(SG_F64, 5, 5),
            d_x = SGT_TENSOR(SG_F64, 3, 5);
  CHECK_EQ_INT(big_grad(&w, &x, &out, &d_w, &d_x), 0);
  CHECK_CLOSE(sgt_get(&out, 0), loss(), 1e-14);
  double fd_w[25], fd_x[15];
  sgt_fd(loss, &w, fd_w);
  sgt_fd(loss, &x, fd_x);
  CHECK_GRAD(&d_w, fd_w, 1e-7);
  CHECK_GRAD(&d_x, fd_x, 1e-7);
  free(w.data), free(x.data), free(out.data), free(d_w.data), free(d_x.data);
  return sgt_finish();
}
