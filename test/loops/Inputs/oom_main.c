/* A gradient whose loop's tape (or checkpoints) runs out of memory
 * (Inputs/long.sg; the runtime's failure hook makes the k-th allocation
 * fail, for every k until the call succeeds): SG_ERR_ALLOC, a message
 * naming the function and the loop, no output written, nothing leaked (the
 * test runs under valgrind too), and the next call gives the right answer.
 * Usage: prog STEPS (the tape build is tape.h, the checkpointed one ck.h). */
#include <string.h>

#include "sgtest.h"
#include "rt_internal.h"
#include "sgrt.h"
#include "tape.h"
#include "ck.h"

typedef int Grad(const sg_tensor *, const sg_tensor *, const sg_tensor *, sg_tensor *,
                 sg_tensor *, sg_tensor *);

int main(int argc, char **argv) {
  enum { N = 64 };
  sg_tensor x = SGT_TENSOR(SG_F64, N), w = sgt_scalar(SG_F64), steps = sgt_scalar(SG_I32);
  sg_tensor out = sgt_scalar(SG_F64), dx = SGT_TENSOR(SG_F64, N), dw = sgt_scalar(SG_F64);
  sg_tensor rout = sgt_scalar(SG_F64), rdx = SGT_TENSOR(SG_F64, N), rdw = sgt_scalar(SG_F64);
  sgt_fill(&x, -1, 1);
  sgt_set(&w, 0, 0.7);
  sgt_set(&steps, 0, (double)sgt_arg(argc, argv, 1, 1000));
  static const char *const names[4] = {"long_for_grad", "long_while_grad", "long_for_ck_grad",
                                       "long_while_ck_grad"};
  Grad *const fs[4] = {long_for_grad, long_while_grad, long_for_ck_grad, long_while_ck_grad};
  for (int f = 0; f < 4; f++) {
    CHECK_EQ_INT(fs[f](&x, &w, &steps, &rout, &rdx, &rdw), SG_OK);
    int failed = 0, loop_msgs = 0, rc;
    for (int k = 0;; k++) {
      sgt_set(&out, 0, 42);
      sgt_set(&dw, 0, 42);
      for (int i = 0; i < N; i++)
        sgt_set(&dx, i, 42);
      sg_rt_set_error("stale");
      sg_rt_fail_alloc_after(k);
      rc = fs[f](&x, &w, &steps, &out, &dx, &dw);
      sg_rt_fail_alloc_after(-1);
      if (rc == SG_OK)
        break;
      CHECK_EQ_INT(rc, SG_ERR_ALLOC);
      failed++;
      int untouched = sgt_get(&out, 0) == 42 && sgt_get(&dw, 0) == 42;
      for (int i = 0; i < N; i++)
        untouched &= sgt_get(&dx, i) == 42;
      if (!untouched) {
        printf("FAIL %s: allocation %d failed and an output was written\n", names[f], k);
        sgt_failures++;
      }
      const char *msg = sg_last_error();
      CHECK(strncmp(msg, names[f], strlen(names[f])) == 0);
      if (strstr(msg, "long.sg:"))
        loop_msgs++, printf("%s: %s\n", names[f], msg);
      if (k > 1000)
        break;
    }
    CHECK_EQ_INT(rc, SG_OK);
    CHECK(memcmp(out.data, rout.data, 8) == 0 && memcmp(dx.data, rdx.data, N * 8) == 0 &&
          memcmp(dw.data, rdw.data, 8) == 0);
    CHECK(loop_msgs > 0);
    printf("%s: %d allocation(s) failed in turn, %d of them the loop's\n", names[f], failed, loop_msgs);
  }
  free(x.data), free(w.data), free(steps.data), free(out.data), free(dx.data), free(dw.data);
  free(rout.data), free(rdx.data), free(rdw.data);
  return sgt_finish();
}
