/* Inputs/stopped_grad.sg: outer's gradient, where each step uses
 * stop_gradient(grad(inner)(z, 0.7)) and inner has a loop, against central
 * differences of a C re-implementation with those inner gradients held at
 * their unperturbed values (what stop_gradient means), at several trip
 * counts; the --ad-memory build (outer_ck) gives the same bits. */
#include <string.h>

#include "sgtest.h"
#include "sg.h"
#include "sgck.h"

enum { N = 5, MAXS = 64 };
static double G[MAXS][N]; /* the inner gradients of the unperturbed run */
static int steps;

/* d inner / d x at x: h_{j+1} = tanh(0.7 h_j), four times */
static void inner_grad(const double *x, double *g) {
  for (int i = 0; i < N; i++) {
    double h = x[i], d = 1;
    for (int j = 0; j < 4; j++) {
      h = tanh(h * 0.7);
      d *= 0.7 * (1 - h * h);
    }
    g[i] = d;
  }
}

static double outer_ref(const double *x, double w, int record) {
  double z[N];
  memcpy(z, x, sizeof z);
  for (int s = 0; s < steps; s++) {
    if (record)
      inner_grad(z, G[s]);
    for (int i = 0; i < N; i++)
      z[i] = z[i] * w + 0.1 * G[s][i];
  }
  double l = 0;
  for (int i = 0; i < N; i++)
    l += z[i] * z[i];
  return l;
}

static sg_tensor x, w;
static double held(void) { return outer_ref(x.data, sgt_get(&w, 0), 0); }

int main(void) {
  x = SGT_TENSOR(SG_F64, N), w = sgt_scalar(SG_F64);
  sg_tensor st = sgt_scalar(SG_I32), o = sgt_scalar(SG_F64), dx = SGT_TENSOR(SG_F64, N);
  sg_tensor dw = sgt_scalar(SG_F64), o2 = sgt_scalar(SG_F64), dx2 = SGT_TENSOR(SG_F64, N);
  sg_tensor dw2 = sgt_scalar(SG_F64);
  sgt_fill(&x, -1, 1);
  sgt_set(&w, 0, 0.9);
  static const int trips[] = {0, 1, 6, 40};
  for (int t = 0; t < 4; t++) {
    steps = trips[t];
    sgt_set(&st, 0, steps);
    double ref = outer_ref(x.data, 0.9, 1), fd[N];
    CHECK_EQ_INT(outer_grad(&x, &w, &st, &o, &dx, &dw), SG_OK);
    CHECK_CLOSE(sgt_get(&o, 0), ref, 1e-12);
    sgt_fd(held, &x, fd);
    CHECK_GRAD(&dx, fd, 1e-7);
    sgt_fd(held, &w, fd);
    CHECK_GRAD(&dw, fd, 1e-7);
    CHECK_EQ_INT(outer_ck_grad(&x, &w, &st, &o2, &dx2, &dw2), SG_OK);
    CHECK(memcmp(o.data, o2.data, 8) == 0 && memcmp(dx.data, dx2.data, N * 8) == 0 &&
          memcmp(dw.data, dw2.data, 8) == 0);
  }
  free(x.data), free(w.data), free(st.data), free(o.data), free(dx.data), free(dw.data);
  free(o2.data), free(dx2.data), free(dw2.data);
  return sgt_finish();
}
