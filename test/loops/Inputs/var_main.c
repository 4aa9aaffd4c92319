/* vars (var and assignment) against lets (the same function with let):
 * equal values and gradients in f32, and the f64 gradient against central
 * differences. Usage: prog N */
#include "sgtest.h"
#include "var32.h"
#include "var64.h"

static sg_tensor X, W, S, OUT;

static double loss64(void) {
  vars64(&X, &W, &S, &OUT);
  return sgt_get(&OUT, 0);
}

int main(int argc, char **argv) {
  int64_t n = sgt_arg(argc, argv, 1, 5);
  sg_tensor x = SGT_TENSOR(SG_F32, n), w = SGT_TENSOR(SG_F32, n), s = sgt_scalar(SG_F32);
  sgt_fill(&x, -1, 1);
  sgt_fill(&w, -1, 1);
  sgt_set(&s, 0, 0.3);
  sg_tensor o1 = sgt_scalar(SG_F32), o2 = sgt_scalar(SG_F32);
  sg_tensor dx1 = SGT_TENSOR(SG_F32, n), dw1 = SGT_TENSOR(SG_F32, n), ds1 = sgt_scalar(SG_F32);
  sg_tensor dx2 = SGT_TENSOR(SG_F32, n), dw2 = SGT_TENSOR(SG_F32, n), ds2 = sgt_scalar(SG_F32);
  CHECK_EQ_INT(vars_grad(&x, &w, &s, &o1, &dx1, &dw1, &ds1), SG_OK);
  CHECK_EQ_INT(lets_grad(&x, &w, &s, &o2, &dx2, &dw2, &ds2), SG_OK);
  CHECK_CLOSE(sgt_get(&o1, 0), sgt_get(&o2, 0), 1e-6);
  for (int64_t i = 0; i < n; i++) {
    CHECK_CLOSE(sgt_get(&dx1, i), sgt_get(&dx2, i), 1e-6);
    CHECK_CLOSE(sgt_get(&dw1, i), sgt_get(&dw2, i), 1e-6);
  }
  CHECK_CLOSE(sgt_get(&ds1, 0), sgt_get(&ds2, 0), 1e-5);

  X = SGT_TENSOR(SG_F64, n), W = SGT_TENSOR(SG_F64, n), S = sgt_scalar(SG_F64);
  OUT = sgt_scalar(SG_F64);
  sgt_copy(&X, &x);
  sgt_copy(&W, &w);
  sgt_copy(&S, &s);
  sg_tensor o = sgt_scalar(SG_F64), dx = SGT_TENSOR(SG_F64, n), dw = SGT_TENSOR(SG_F64, n),
            ds = sgt_scalar(SG_F64);
  CHECK_EQ_INT(vars64_grad(&X, &W, &S, &o, &dx, &dw, &ds), SG_OK);
  double *fd = malloc(sizeof(double) * (size_t)(n + 1));
  sgt_fd(loss64, &X, fd);
  CHECK_GRAD(&dx, fd, 1e-7);
  sgt_fd(loss64, &W, fd);
  CHECK_GRAD(&dw, fd, 1e-7);
  sgt_fd(loss64, &S, fd);
  CHECK_GRAD(&ds, fd, 1e-7);
  free(fd);
  sg_tensor *all[] = {&x, &w, &s, &o1, &o2, &dx1, &dw1, &ds1, &dx2, &dw2, &ds2,
                      &X, &W, &S, &OUT, &o, &dx, &dw, &ds};
  for (size_t k = 0; k < sizeof all / sizeof all[0]; k++)
    free(all[k]->data);
  return sgt_finish();
}
