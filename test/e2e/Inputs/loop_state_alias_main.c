/* Driver for loop_state_alias.test: steps(p1, p2) with p2 of d x d x 3 is
 * mean(p1) - d when d != 1 (the branch is not taken, the loop subtracts 1
 * d times). */
#include "lsa.h"
#include "sgtest.h"

int main(int argc, char **argv) {
  int64_t d = argc > 1 ? atoi(argv[1]) : 2;
  int64_t s1[3] = {8, 4, 3}, s2[3] = {d, d, 3};
  sg_tensor p1 = sgt_tensor(SG_F64, 3, s1), p2 = sgt_tensor(SG_F64, 3, s2), out = sgt_scalar(SG_F64);
  double mean = 0;
  for (int64_t i = 0; i < 96; i++) {
    double x = 0.01 * (double)((i * 37) % 101) - 0.4;
    sgt_set(&p1, i, x);
    mean += x / 96;
  }
  for (int64_t i = 0; i < sgt_numel(&p2); i++)
    sgt_set(&p2, i, 0.5);
  CHECK_EQ_INT(steps(&p1, &p2, &out), SG_OK);
  printf("steps d=%ld:\n", (long)d);
  CHECK_CLOSE(sgt_get(&out, 0), mean - (double)d, 1e-14);
  free(p1.data), free(p2.data), free(out.data);
  return sgt_finish();
}
