/* examples/lstm.sg against a reference computed independently: the loss
 * and gradient written by hand in C (bench/lstm/lstm_hand.c, f64), and f64
 * central differences of the compiled loss. The f64 build (lstm64) is
 * checked to 1e-12 (loss) and 1e-10 (gradient) against the hand-written
 * code; the f32 build against it to 1e-4; a build with --ad-memory
 * (lstm_ck, f64) gives the same bits as the tape.
 * Usage: prog B C [fd]   (fd: also central differences, for small sizes) */
#include <string.h>

#include "sgtest.h"
#include "lstm_hand.h"
#include "lstm32.h"
#include "lstm64.h"
#include "lstm_ck.h"

static sg_tensor m64, e64, s64, q64, o64;
static double loss64(void) {
  lstm_loss64(&m64, &e64, &s64, &q64, &o64);
  return sgt_get(&o64, 0);
}

int main(int argc, char **argv) {
  int64_t b = sgt_arg(argc, argv, 1, 5), c = sgt_arg(argc, argv, 2, 8);
  int fd = argc > 3;
  m64 = SGT_TENSOR(SG_F64, 4, 4, b), e64 = SGT_TENSOR(SG_F64, 3, b);
  s64 = SGT_TENSOR(SG_F64, 4, b), q64 = SGT_TENSOR(SG_F64, c, b), o64 = sgt_scalar(SG_F64);
  sgt_fill(&m64, -0.7, 0.7);
  sgt_fill(&e64, -1, 1);
  sgt_fill(&s64, -0.5, 0.5);
  for (int64_t t = 0; t < c; t++) /* one-hot characters, as in ADBench */
    for (int64_t j = 0; j < b; j++)
      sgt_set(&q64, t * b + j, j == (t * 7 + 3) % b);
  sg_tensor dm = SGT_TENSOR(SG_F64, 4, 4, b), de = SGT_TENSOR(SG_F64, 3, b);
  sg_tensor dm2 = SGT_TENSOR(SG_F64, 4, 4, b), de2 = SGT_TENSOR(SG_F64, 3, b), o2 = sgt_scalar(SG_F64);
  double *hm = calloc((size_t)(16 * b), 8), *he = calloc((size_t)(3 * b), 8), hl;

  CHECK_EQ_INT(lstm_hand_f64(b, c, m64.data, e64.data, s64.data, q64.data, &hl, hm, he), 0);
  CHECK_EQ_INT(lstm_loss64(&m64, &e64, &s64, &q64, &o64), SG_OK);
  CHECK_CLOSE(sgt_get(&o64, 0), hl, 1e-12);
  CHECK_EQ_INT(lstm_loss64_grad(&m64, &e64, &s64, &q64, &o64, &dm, &de), SG_OK);
  CHECK_CLOSE(sgt_get(&o64, 0), hl, 1e-12);
  double value = sgt_get(&o64, 0);
  CHECK_GRAD_VS(&dm, hm, "the hand-written gradient", 1e-10);
  CHECK_GRAD_VS(&de, he, "the hand-written gradient", 1e-10);
  if (fd) {
    double *g = malloc((size_t)(16 * b) * 8);
    sgt_fd(loss64, &m64, g);
    CHECK_GRAD(&dm, g, 1e-7);
    sgt_fd(loss64, &e64, g);
    CHECK_GRAD(&de, g, 1e-7);
    free(g);
  }
  CHECK_EQ_INT(lstm_loss_ck_grad(&m64, &e64, &s64, &q64, &o2, &dm2, &de2), SG_OK);
  CHECK(memcmp(dm.data, dm2.data, (size_t)(16 * b) * 8) == 0 &&
        memcmp(de.data, de2.data, (size_t)(3 * b) * 8) == 0 && memcmp(&value, o2.data, 8) == 0);

  /* f32 */
  sg_tensor m = SGT_TENSOR(SG_F32, 4, 4, b), e = SGT_TENSOR(SG_F32, 3, b), s = SGT_TENSOR(SG_F32, 4, b);
  sg_tensor q = SGT_TENSOR(SG_F32, c, b), o = sgt_scalar(SG_F32);
  sg_tensor dm32 = SGT_TENSOR(SG_F32, 4, 4, b), de32 = SGT_TENSOR(SG_F32, 3, b);
  sgt_copy(&m, &m64), sgt_copy(&e, &e64), sgt_copy(&s, &s64), sgt_copy(&q, &q64);
  CHECK_EQ_INT(lstm_loss_grad(&m, &e, &s, &q, &o, &dm32, &de32), SG_OK);
  CHECK_CLOSE(sgt_get(&o, 0), hl, 1e-4);
  CHECK_GRAD_VS(&dm32, hm, "the hand-written gradient (f64)", 1e-4);
  CHECK_GRAD_VS(&de32, he, "the hand-written gradient (f64)", 1e-4);
  printf("b=%lld c=%lld: loss %.6f\n", (long long)b, (long long)c, hl);
  free(m64.data), free(e64.data), free(s64.data), free(q64.data), free(o64.data);
  free(dm.data), free(de.data), free(dm2.data), free(de2.data), free(o2.data), free(hm), free(he);
  free(m.data), free(e.data), free(s.data), free(q.data), free(o.data), free(dm32.data), free(de32.data);
  return sgt_finish();
}
