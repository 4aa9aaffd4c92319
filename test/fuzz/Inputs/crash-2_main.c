/* Driver of crash-2.sg: calls f with n = 1 and n = 65536, where the
 * element count of a temporary overflows 64 bits; each call must fail
 * cleanly (an error code and a message), not crash. */
#include <stdio.h>
#include <stdlib.h>

#include "sg_runtime.h"

int f(const sg_tensor *x, sg_tensor *out);

static void call(int64_t n) {
  float *data = calloc((size_t)n, sizeof *data), result = 0;
  sg_tensor x = {data, {n}, 1, SG_F32}, out = {&result, {0}, 0, SG_F32};
  int rc = f(&x, &out);
  printf("n=%lld: f returned %d: %s\n", (long long)n, rc, rc ? sg_last_error() : "");
  fflush(stdout);
  free(data);
}

int main(void) {
  call(1);
  call(65536);
  return 0;
}
