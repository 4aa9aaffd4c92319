/* make demo: compile examples/stable_softmax.sg, then call xent and
 * xent_grad from C on a small problem and check the gradient against
 * central differences. */
#include <math.h>
#include <stdio.h>

#include "stable_softmax.h"

enum { K = 3, D = 4 };

static float W[K][D] = {{0.5f, -1.0f, 0.25f, 2.0f}, {1.5f, 0.0f, -0.5f, 1.0f}, {-1.0f, 0.75f, 1.0f, 0.5f}};
static float X[D] = {1.0f, 2.0f, -1.0f, 0.5f};
static float Y[K] = {0.0f, 1.0f, 0.0f}; /* the true class is 1 */

static sg_tensor w = {W, {K, D}, 2, SG_F32}, x = {X, {D}, 1, SG_F32}, y = {Y, {K}, 1, SG_F32};

static float loss(void) {
  float v;
  sg_tensor out = {&v, {0}, 0, SG_F32};
  if (xent(&w, &x, &y, &out) != SG_OK)
    printf("xent failed: %s\n", sg_last_error());
  return v;
}

int main(void) {
  float value, grad[K][D];
  sg_tensor out = {&value, {0}, 0, SG_F32}, d_w = {grad, {K, D}, 2, SG_F32};
  if (xent_grad(&w, &x, &y, &out, &d_w) != SG_OK) {
    printf("xent_grad failed: %s\n", sg_last_error());
    return 1;
  }
  printf("loss xent(w, x, y) = %.6f\n\nd loss / d w (xent_grad):\n", value);
  double worst = 0;
  for (int i = 0; i < K; i++) {
    for (int j = 0; j < D; j++) {
      float keep = W[i][j], h = 1e-2f;
      W[i][j] = keep + h;
      float up = loss();
      W[i][j] = keep - h;
      float down = loss();
      W[i][j] = keep;
      double fd = (up - down) / (2.0 * h);
      worst = fmax(worst, fabs(fd - grad[i][j]));
      printf("  %+9.5f", grad[i][j]);
    }
    printf("\n");
  }
  printf("\nlargest difference from central differences: %.2g %s\n", worst,
         worst < 1e-3 ? "(ok)" : "(TOO LARGE)");
  /* A misshaped argument is refused, with a message. */
  sg_tensor bad = {X, {D - 1}, 1, SG_F32};
  int rc = xent_grad(&w, &bad, &y, &out, &d_w);
  printf("\nwith x of shape [%d]: error %d: %s\n", D - 1, rc, sg_last_error());
  return worst < 1e-3 && rc == SG_ERR_SHAPE ? 0 : 1;
}
