/* Calls f, then f_grad, once each, for gdb to stop in
 * (test/debug/gdb_locals.test). */
#include <stdio.h>

#include "locals.h"

int main(void) {
  float W[3][4], X[4] = {1, 2, 3, 4}, out, dW[3][4], dX[4];
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 4; j++)
      W[i][j] = 0.1f * (float)(i - j);
  sg_tensor w = {W, {3, 4}, 2, SG_F32}, x = {X, {4}, 1, SG_F32};
  sg_tensor o = {&out, {0}, 0, SG_F32}, dw = {dW, {3, 4}, 2, SG_F32}, dx = {dX, {4}, 1, SG_F32};
  int rc = f(&w, &x, &o);
  printf("f: %d, %.4f\n", rc, out);
  rc = f_grad(&w, &x, &o, &dw, &dx);
  printf("f_grad: %d, %.4f\n", rc, out);
  return rc;
}
