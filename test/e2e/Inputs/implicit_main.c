/* examples/v3/implicit_layer.sg from C: the gradient of the loss at the
 * fixed point z = tanh(W z + U x), given by the custom vjp rule (the
 * implicit function theorem: one more fixed-point solve, no stored
 * iterations), against central differences of the converged loss, for
 * every parameter (W, U, V). Usage: prog B H D C */
#include "sgtest.h"
#include "implicit_layer.h"

static sg_tensor W, U, V, x, y, out;

static double loss(void) {
  CHECK_EQ_INT(implicit_loss(&W, &U, &V, &x, &y, &out), SG_OK);
  return sgt_get(&out, 0);
}

int main(int argc, char **argv) {
  int64_t b = sgt_arg(argc, argv, 1, 4), h = sgt_arg(argc, argv, 2, 6);
  int64_t d = sgt_arg(argc, argv, 3, 3), c = sgt_arg(argc, argv, 4, 3);
  W = SGT_TENSOR(SG_F64, h, h), U = SGT_TENSOR(SG_F64, h, d), V = SGT_TENSOR(SG_F64, c, h);
  x = SGT_TENSOR(SG_F64, b, d), y = SGT_TENSOR(SG_F64, b, c), out = sgt_scalar(SG_F64);
  sg_tensor dW = SGT_TENSOR(SG_F64, h, h), dU = SGT_TENSOR(SG_F64, h, d);
  sg_tensor dV = SGT_TENSOR(SG_F64, c, h);
  sgt_fill(&W, -0.4 / (double)h, 0.4 / (double)h); /* a contraction: the iteration converges */
  sgt_fill(&U, -1, 1);
  sgt_fill(&V, -1, 1);
  sgt_fill(&x, -1, 1);
  for (int64_t i = 0; i < b; i++)
    sgt_set(&y, i * c + i % c, 1);
  CHECK_EQ_INT(implicit_loss_grad(&W, &U, &V, &x, &y, &out, &dW, &dU, &dV), SG_OK);
  double l = sgt_get(&out, 0);
  CHECK_EXACT(loss(), l);
  double *fd = malloc(sizeof(double) * (size_t)(h * h + h * d + c * h + 1));
  sgt_fd(loss, &W, fd);
  CHECK_GRAD(&dW, fd, 1e-6);
  sgt_fd(loss, &U, fd);
  CHECK_GRAD(&dU, fd, 1e-6);
  sgt_fd(loss, &V, fd);
  CHECK_GRAD(&dV, fd, 1e-6);
  free(fd);
  sg_tensor *all[] = {&W, &U, &V, &x, &y, &out, &dW, &dU, &dV};
  for (unsigned i = 0; i < sizeof all / sizeof *all; i++)
    free(all[i]->data);
  return sgt_finish();
}
