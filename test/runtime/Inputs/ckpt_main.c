/* The checkpoint schedule of runtime/checkpoint.c on a simulated loop whose
 * state is its own position: every reverse step must see the state
 * entering it, in the order n-1 .. 0, each exactly once, with no more
 * snapshot bytes than the budget; a for loop within the binomial bound of
 * recomputation. Prints the advances per step for a few cases. */
#include <stdio.h>
#include <stdint.h>
#include <string.h>

#include "sgrt.h"

static int failures;
#define EXPECT(c, ...) do { if (!(c)) { failures++; printf("FAIL %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

/* Runs n iterations forward and the whole reverse; returns the advances. */
static int64_t run(int64_t n, int64_t budget, int is_for, int64_t stride) {
  sg_rt_ckpt *c = NULL;
  int64_t state[64], scratch[64];
  sg_rt_saved_bytes_peak(1);
  int rc = sg_rt_ckpt_begin(&c, stride, budget, is_for ? n : -1, "f", "m.sg:1");
  EXPECT(rc == SG_OK, "begin n=%lld budget=%lld: %d", (long long)n, (long long)budget, rc);
  if (rc)
    return -1;
  state[0] = 0;
  for (int64_t i = 0; i < n; i++) {
    void *slot;
    EXPECT(sg_rt_ckpt_fwd(c, &slot) == SG_OK, "fwd");
    if (slot)
      memcpy(slot, state, (size_t)stride);
    state[0] = i + 1;
  }
  EXPECT(sg_rt_ckpt_reverse(c, "f", "m.sg:1") == SG_OK, "reverse");
  int64_t expect = n - 1, adv = 0, pos;
  void *slot;
  memset(state, 0xff, sizeof state);
  for (int act; (act = sg_rt_ckpt_next(c, &pos, &slot)) != SG_RT_CK_DONE;) {
    if (act == SG_RT_CK_ADVANCE) {
      EXPECT(state[0] == pos, "advance at %lld from state %lld", (long long)pos, (long long)state[0]);
      state[0] = pos + 1;
      adv++;
    } else if (act == SG_RT_CK_STORE) {
      memcpy(slot, state, (size_t)stride);
    } else if (act == SG_RT_CK_RESTORE) {
      memcpy(state, slot, (size_t)stride);
    } else if (act == SG_RT_CK_REVERSE) {
      EXPECT(pos == expect, "reverse %lld, expected %lld", (long long)pos, (long long)expect);
      EXPECT(state[0] == pos, "reverse %lld sees state %lld", (long long)pos, (long long)state[0]);
      expect--;
    }
    memcpy(scratch, state, sizeof scratch);
  }
  EXPECT(expect == -1, "n=%lld: stopped at %lld", (long long)n, (long long)expect);
  int64_t peak = sg_rt_saved_bytes_peak(1);
  EXPECT(peak <= budget, "n=%lld budget=%lld: peak %lld", (long long)n, (long long)budget, (long long)peak);
  sg_rt_ckpt_free(&c);
  EXPECT(sg_rt_saved_bytes_peak(1) <= budget, "after free");
  return adv;
}

int main(void) {
  int64_t per = 8 + sg_rt_ckpt_overhead();
  for (int is_for = 0; is_for < 2; is_for++)
    for (int64_t n = 0; n < 200; n += 1 + n / 7)
      for (int64_t snaps = 1; snaps < 12; snaps++)
        run(n, snaps * per + 3, is_for, 8);
  /* Revolve's bound: s snapshots reverse binomial(s + r, s) steps with no
   * step advanced more than r times; 10000 steps, 10 snapshots:
   * binomial(16, 10) = 8008 < 10000 <= binomial(17, 10), so r = 7, and
   * the reverse sweep advances fewer than 7 n steps */
  int64_t a = run(10000, 10 * per, 1, 8);
  printf("for n=10000 snapshots=10: %.2f advances per step\n", (double)a / 10000);
  EXPECT(a < 7 * 10000, "too many advances: %lld", (long long)a);
  a = run(10000, 10 * per, 0, 8);
  printf("while n=10000 snapshots=10: %.2f advances per step\n", (double)a / 10000);
  a = run(100000, 100 * per, 1, 8);
  printf("for n=100000 snapshots=100: %.2f advances per step\n", (double)a / 100000);
  a = run(100000, 100 * per, 0, 8);
  printf("while n=100000 snapshots=100: %.2f advances per step\n", (double)a / 100000);
  /* one state that does not fit */
  sg_rt_ckpt *c = NULL;
  EXPECT(sg_rt_ckpt_begin(&c, 1000, 999, 5, "f_grad", "m.sg:3") == SG_ERR_ALLOC, "too big");
  printf("%s\n", sg_last_error());
  sg_rt_ckpt_free(&c);
  printf(failures ? "FAILED\n" : "all checks passed\n");
  return failures != 0;
}
