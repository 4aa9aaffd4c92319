/* Gradients through for, while and if (Inputs/loops.sg): each against the
 * same program unrolled by hand (f32, to 1e-6) and against central
 * differences of the f64 build (1e-7). Usage: prog N */
#include "sgtest.h"
#include "loops32.h"
#include "loops64.h"

static int (*fn3)(const sg_tensor *, const sg_tensor *, const sg_tensor *, sg_tensor *);
static int (*fn2)(const sg_tensor *, const sg_tensor *, sg_tensor *);
static sg_tensor A, B, C, O;

static double loss(void) {
  if (fn2)
    fn2(&A, &B, &O);
  else
    fn3(&A, &B, &C, &O);
  return sgt_get(&O, 0);
}

/* Every tensor's memory, freed at the end (the test runs under valgrind). */
static void *kept[64];
static int nkept;
static sg_tensor keep(sg_tensor t) {
  if (nkept < 64)
    kept[nkept++] = t.data;
  return t;
}

static void close_all(const sg_tensor *g, const sg_tensor *h, double tol) {
  for (int64_t i = 0; i < sgt_numel(g); i++)
    CHECK_CLOSE(sgt_get(g, i), sgt_get(h, i), tol);
}

int main(int argc, char **argv) {
  int64_t n = sgt_arg(argc, argv, 1, 5);
  sg_tensor x = keep(SGT_TENSOR(SG_F32, n)), b = keep(SGT_TENSOR(SG_F32, n)), w = keep(sgt_scalar(SG_F32));
  sgt_fill(&x, -1, 1);
  sgt_fill(&b, -0.5, 0.5);
  sgt_set(&w, 0, 0.8);
  sg_tensor o1 = keep(sgt_scalar(SG_F32)), o2 = keep(sgt_scalar(SG_F32));
  sg_tensor dx1 = keep(SGT_TENSOR(SG_F32, n)), dx2 = keep(SGT_TENSOR(SG_F32, n));
  sg_tensor db1 = keep(SGT_TENSOR(SG_F32, n)), db2 = keep(SGT_TENSOR(SG_F32, n));
  sg_tensor dw1 = keep(sgt_scalar(SG_F32)), dw2 = keep(sgt_scalar(SG_F32));

  /* for, against the unrolled loop */
  CHECK_EQ_INT(rec_grad(&x, &w, &b, &o1, &dx1, &dw1, &db1), SG_OK);
  CHECK_EQ_INT(rec_unrolled_grad(&x, &w, &b, &o2, &dx2, &dw2, &db2), SG_OK);
  CHECK_CLOSE(sgt_get(&o1, 0), sgt_get(&o2, 0), 1e-6);
  close_all(&dx1, &dx2, 1e-6);
  close_all(&db1, &db2, 1e-6);
  CHECK_CLOSE(sgt_get(&dw1, 0), sgt_get(&dw2, 0), 1e-5);

  /* while: a limit between the norms after 2 and 3 steps gives 3 steps */
  double y[64], nrm[4] = {0};
  for (int64_t i = 0; i < n; i++)
    y[i] = sgt_get(&x, i);
  for (int s = 0; s < 4; s++) {
    for (int64_t i = 0; i < n; i++)
      nrm[s] += y[i] * y[i];
    for (int64_t i = 0; i < n; i++)
      y[i] = y[i] * 0.5 + 0.01 * sin(y[i]);
  }
  sg_tensor lim = keep(sgt_scalar(SG_F32)), dl1 = keep(sgt_scalar(SG_F32)), dl2 = keep(sgt_scalar(SG_F32));
  sgt_set(&lim, 0, sqrt(nrm[2] * nrm[3]));
  CHECK_EQ_INT(halve_grad(&x, &lim, &o1, &dx1, &dl1), SG_OK);
  CHECK_EQ_INT(halve3_grad(&x, &lim, &o2, &dx2, &dl2), SG_OK);
  CHECK_CLOSE(sgt_get(&o1, 0), sgt_get(&o2, 0), 1e-6);
  close_all(&dx1, &dx2, 1e-6);
  CHECK_EXACT(sgt_get(&dl1, 0), 0);

  /* if: the gradient of the block that ran, whichever it is */
  for (int side = 0; side < 2; side++) {
    sg_tensor t = keep(sgt_scalar(SG_F32));
    sgt_set(&t, 0, side == 0 ? -100 : 200.0 * (double)n);
    sg_tensor dt1 = keep(sgt_scalar(SG_F32)), dt2 = keep(sgt_scalar(SG_F32));
    sg_tensor xs = keep(SGT_TENSOR(SG_F32, n));
    for (int64_t i = 0; i < n; i++)
      sgt_set(&xs, i, sgt_get(&x, i) + (side == 0 ? 0 : 150));
    CHECK_EQ_INT(branch_grad(&xs, &t, &o1, &dx1, &dt1), SG_OK);
    if (side == 0)
      CHECK_EQ_INT(branch_then_grad(&xs, &t, &o2, &dx2, &dt2), SG_OK);
    else
      CHECK_EQ_INT(branch_else_grad(&xs, &t, &o2, &dx2, &dt2), SG_OK);
    CHECK_CLOSE(sgt_get(&o1, 0), sgt_get(&o2, 0), 1e-6);
    close_all(&dx1, &dx2, 1e-6);
    CHECK_CLOSE(sgt_get(&dt1, 0), sgt_get(&dt2, 0), 1e-6);
  }

  /* every function in f64 against central differences */
  A = keep(SGT_TENSOR(SG_F64, n)), B = keep(SGT_TENSOR(SG_F64, n)), C = keep(SGT_TENSOR(SG_F64, n));
  O = keep(sgt_scalar(SG_F64));
  sg_tensor s64 = keep(sgt_scalar(SG_F64)), o = keep(sgt_scalar(SG_F64));
  sg_tensor da = keep(SGT_TENSOR(SG_F64, n)), dc = keep(SGT_TENSOR(SG_F64, n)), ds = keep(sgt_scalar(SG_F64));
  double *fd = malloc(sizeof(double) * (size_t)(n + 1));
  sgt_copy(&A, &x);
  sgt_set(&s64, 0, 0.8);
  sgt_copy(&C, &b);
  fn3 = rec64;
  sg_tensor saveB = B;
  B = s64;
  CHECK_EQ_INT(rec64_grad(&A, &B, &C, &o, &da, &ds, &dc), SG_OK);
  sgt_fd(loss, &A, fd);
  CHECK_GRAD(&da, fd, 1e-7);
  sgt_fd(loss, &B, fd);
  CHECK_GRAD(&ds, fd, 1e-7);
  sgt_fd(loss, &C, fd);
  CHECK_GRAD(&dc, fd, 1e-7);

  fn2 = halve64;
  sgt_set(&B, 0, 0.05);
  CHECK_EQ_INT(halve64_grad(&A, &B, &o, &da, &ds), SG_OK);
  sgt_fd(loss, &A, fd);
  CHECK_GRAD(&da, fd, 1e-7);

  fn2 = nested64;
  CHECK_EQ_INT(nested64_grad(&A, &B, &o, &da, &ds), SG_OK);
  sgt_fd(loss, &A, fd);
  CHECK_GRAD(&da, fd, 1e-7);
  sgt_fd(loss, &B, fd);
  CHECK_GRAD(&ds, fd, 1e-7);

  fn2 = branch64;
  for (int side = 0; side < 2; side++) {
    sgt_set(&B, 0, side == 0 ? -100 : 200.0 * (double)n);
    for (int64_t i = 0; i < n; i++)
      sgt_set(&A, i, sgt_get(&x, i) + (side == 0 ? 0 : 150));
    CHECK_EQ_INT(branch64_grad(&A, &B, &o, &da, &ds), SG_OK);
    sgt_fd(loss, &A, fd);
    CHECK_GRAD(&da, fd, 1e-7);
    sgt_fd(loss, &B, fd);
    CHECK_GRAD(&ds, fd, 1e-7);
  }
  (void)saveB;
  free(fd);
  for (int k = 0; k < nkept; k++)
    free(kept[k]);
  return sgt_finish();
}
