/* Calls xent_grad once, for gdb to stop in (test/debug/gdb_break.test). */
#include <stdio.h>

#include "softmax.h"

int main(void) {
  float W[3][4], X[4] = {1, 2, 3, 4}, Y[3] = {0.2f, 0.3f, 0.5f}, loss, dW[3][4];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++)
      W[i][j] = 0.1f * (float)(i - j);
  sg_tensor w = {W, {3, 4}, 2, SG_F32}, x = {X, {4}, 1, SG_F32}, y = {Y, {3}, 1, SG_F32};
  sg_tensor out = {&loss, {0}, 0, SG_F32}, d_w = {dW, {3, 4}, 2, SG_F32};
  int rc = xent_grad(&w, &x, &y, &out, &d_w);
  printf("xent_grad: %d, loss %.4f\n", rc, loss);
  return rc;
}
