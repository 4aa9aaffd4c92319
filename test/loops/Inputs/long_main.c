/* --ad-memory bounds the saved loop state (Inputs/long.sg, built with a
 * full tape and, exports renamed *_ck, with --ad-memory=BUDGET):
 *   prog peak BUDGET STEPS  the bytes the runtime holds in tapes and
 *                           checkpoints at their peak, tape vs budget, and
 *                           the gradients bit for bit the same;
 *   prog refuse             a budget one state does not fit: SG_ERR_ALLOC,
 *                           the message, no output written. */
#define _POSIX_C_SOURCE 200809L
#include <string.h>
#include <time.h>

#include "sgtest.h"
#include "sgrt.h"
#include "tape.h"
#include "ck.h"

typedef int Grad(const sg_tensor *, const sg_tensor *, const sg_tensor *, sg_tensor *,
                 sg_tensor *, sg_tensor *);

static double seconds(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv) {
  enum { N = 64 };
  sg_tensor x = SGT_TENSOR(SG_F64, N), w = sgt_scalar(SG_F64), steps = sgt_scalar(SG_I32);
  sg_tensor out[2], dx[2], dw[2];
  for (int v = 0; v < 2; v++)
    out[v] = sgt_scalar(SG_F64), dx[v] = SGT_TENSOR(SG_F64, N), dw[v] = sgt_scalar(SG_F64);
  sgt_fill(&x, -1, 1);
  sgt_set(&w, 0, 0.7);
  if (argc > 1 && strcmp(argv[1], "refuse") == 0) {
    sgt_set(&steps, 0, 10);
    for (int k = 0; k < N; k++)
      sgt_set(&dx[1], k, 42);
    sgt_set(&out[1], 0, 42);
    sgt_set(&dw[1], 0, 42);
    int rc = long_for_ck_grad(&x, &w, &steps, &out[1], &dx[1], &dw[1]);
    CHECK_EQ_INT(rc, SG_ERR_ALLOC);
    printf("%s\n", sg_last_error());
    int untouched = sgt_get(&out[1], 0) == 42 && sgt_get(&dw[1], 0) == 42;
    for (int k = 0; k < N; k++)
      untouched &= sgt_get(&dx[1], k) == 42;
    CHECK(untouched);
    /* the plain function has no gradient loop: it runs */
    CHECK_EQ_INT(long_for_ck(&x, &w, &steps, &out[1]), SG_OK);
    return sgt_finish();
  }
  int64_t budget = sgt_arg(argc, argv, 2, 1 << 20);
  sgt_set(&steps, 0, (double)sgt_arg(argc, argv, 3, 100000));
  static const char *const loop[2] = {"for", "while"};
  for (int l = 0; l < 2; l++) {
    Grad *f[2] = {l ? long_while_grad : long_for_grad, l ? long_while_ck_grad : long_for_ck_grad};
    int64_t peak[2];
    double t[2];
    for (int v = 0; v < 2; v++) {
      sg_rt_saved_bytes_peak(1);
      t[v] = seconds();
      CHECK_EQ_INT(f[v](&x, &w, &steps, &out[v], &dx[v], &dw[v]), SG_OK);
      t[v] = seconds() - t[v];
      peak[v] = sg_rt_saved_bytes_peak(1);
    }
    int64_t need = (int64_t)sgt_get(&steps, 0) * N * 8;
    printf("%s: %lld iterations, tape %lld bytes, --ad-memory=%lld: %lld bytes, %.1fx the time\n",
           loop[l], (long long)sgt_get(&steps, 0), (long long)peak[0], (long long)budget,
           (long long)peak[1], t[1] / t[0]);
    CHECK(peak[0] >= need);
    CHECK(peak[1] <= budget);
    CHECK(peak[1] > 0);
    CHECK(memcmp(out[0].data, out[1].data, 8) == 0);
    CHECK(memcmp(dx[0].data, dx[1].data, N * 8) == 0);
    CHECK(memcmp(dw[0].data, dw[1].data, 8) == 0);
  }
  return sgt_finish();
}
