/* Inputs/row_tape.sg at T = 32, 256 and 2048 steps (h = 16): the tape of
 * the loop holds at most 2 x T x (8 + 8h) bytes plus its first 4096 (it
 * doubles as it grows; one iteration logs a start and the row it
 * overwrote, and records s), where a tape of whole states would hold
 * T x (4 T h + 4 h). A repeated call takes no page fault and gives the
 * same bits. Usage: prog */
#include <string.h>
#include <sys/resource.h>

#include "row_tape.h"
#include "sgrt.h"
#include "sgtest.h"

enum { H = 16 };

static long minflt(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

int main(void) {
  static const int64_t steps[3] = {32, 256, 2048};
  for (int s = 0; s < 3; s++) {
    int64_t T = steps[s];
    sg_tensor w = SGT_TENSOR(SG_F32, H, H), xs = SGT_TENSOR(SG_F32, T, H);
    sg_tensor out = sgt_scalar(SG_F32), dw = SGT_TENSOR(SG_F32, H, H);
    sg_tensor out2 = sgt_scalar(SG_F32), dw2 = SGT_TENSOR(SG_F32, H, H);
    sgt_fill(&w, -0.3, 0.3);
    sgt_fill(&xs, -1, 1);
    CHECK_EQ_INT(rows_grad(&w, &xs, &out, &dw), SG_OK);
    /* one more call, and every library function the loop below uses, before
     * counting: their first calls fault in code and stack pages */
    CHECK_EQ_INT(rows_grad(&w, &xs, &out2, &dw2), SG_OK);
    int same = memcmp(out.data, out2.data, 4) == 0 && memcmp(dw.data, dw2.data, 4 * H * H) == 0;
    sg_rt_saved_bytes_peak(1);
    minflt(); /* getrusage's own first call */
    long f0 = minflt();
    for (int r = 0; r < 20; r++) {
      CHECK_EQ_INT(rows_grad(&w, &xs, &out2, &dw2), SG_OK);
      same &= memcmp(out.data, out2.data, 4) == 0 && memcmp(dw.data, dw2.data, 4 * H * H) == 0;
    }
    long faults = minflt() - f0;
    int64_t peak = sg_rt_saved_bytes_peak(0), bound = 2 * T * (8 + 8 * H) + 4096;
    if (peak > bound) {
      printf("FAIL: T=%lld: the tape held %lld bytes, more than %lld\n", (long long)T,
             (long long)peak, (long long)bound);
      sgt_failures++;
    } else {
      printf("ok: T=%lld: the tape holds at most 2 x T x (8 + 8h) + 4096 bytes\n", (long long)T);
    }
    printf("T=%lld: 20 more calls: %ld minor faults, %s\n", (long long)T, faults,
           same ? "same bits" : "results differ");
    free(w.data), free(xs.data), free(out.data), free(dw.data), free(out2.data), free(dw2.data);
  }
  return sgt_finish();
}
