/* --ad-memory (Inputs/ckpt.sg, built three times: a full tape, and with two
 * budgets, its exports renamed *_ck and *_cm): every gradient bit for bit
 * the same as the tape's (memcmp), at several trip counts, and the tape's
 * against f64 central differences. Usage: prog N */
#include <string.h>

#include "sgtest.h"
#include "tape.h"
#include "ck.h"
#include "cm.h"

typedef int Rnn(const sg_tensor *, const sg_tensor *, const sg_tensor *, const sg_tensor *,
                sg_tensor *, sg_tensor *, sg_tensor *, sg_tensor *);
typedef int Decay(const sg_tensor *, const sg_tensor *, const sg_tensor *, sg_tensor *,
                  sg_tensor *, sg_tensor *);
typedef int Nest(const sg_tensor *, const sg_tensor *, const sg_tensor *, const sg_tensor *,
                 sg_tensor *, sg_tensor *, sg_tensor *);
static Rnn *const rnns[3] = {rnn_grad, rnn_ck_grad, rnn_cm_grad};
static Decay *const decays[3] = {decay_grad, decay_ck_grad, decay_cm_grad};
static Nest *const nests[3] = {nest_grad, nest_ck_grad, nest_cm_grad};
static const char *const names[3] = {"tape", "ck", "cm"};

static int64_t n;
static sg_tensor x, w, b, steps, inner, out, dx, dw, db, rate, limit;
/* outputs of the tape build, to compare with */
static double o0, dx0[64], dw0, db0[64];

static void keep_tape(void) {
  o0 = sgt_get(&out, 0);
  memcpy(dx0, dx.data, (size_t)n * 8);
  dw0 = sgt_get(&dw, 0);
  memcpy(db0, db.data, (size_t)n * 8);
}

static void same_bits(const char *what, int variant, int trips, int with_b) {
  double o = sgt_get(&out, 0), d = sgt_get(&dw, 0);
  int same = memcmp(&o, &o0, 8) == 0 && memcmp(dx.data, dx0, (size_t)n * 8) == 0 &&
             memcmp(&d, &dw0, 8) == 0 && (!with_b || memcmp(db.data, db0, (size_t)n * 8) == 0);
  if (!same) {
    printf("FAIL %s_%s at %d iterations: not bit-identical to the tape (out %.17g vs %.17g, "
           "d[0] %.17g vs %.17g)\n", what, names[variant], trips, o, o0, sgt_get(&dx, 0), dx0[0]);
    sgt_failures++;
  }
}

static double rnn_loss(void) {
  rnn(&x, &w, &b, &steps, &out);
  return sgt_get(&out, 0);
}
static double decay_loss(void) {
  decay(&x, &rate, &limit, &out);
  return sgt_get(&out, 0);
}
static double nest_loss(void) {
  nest(&x, &w, &steps, &inner, &out);
  return sgt_get(&out, 0);
}

int main(int argc, char **argv) {
  n = sgt_arg(argc, argv, 1, 6);
  x = SGT_TENSOR(SG_F64, n), b = SGT_TENSOR(SG_F64, n), dx = SGT_TENSOR(SG_F64, n), db = SGT_TENSOR(SG_F64, n);
  w = sgt_scalar(SG_F64), dw = sgt_scalar(SG_F64), out = sgt_scalar(SG_F64);
  rate = sgt_scalar(SG_F64), limit = sgt_scalar(SG_F64);
  steps = sgt_scalar(SG_I32), inner = sgt_scalar(SG_I32);
  sgt_fill(&x, -1, 1);
  sgt_fill(&b, -0.5, 0.5);
  sgt_set(&w, 0, 0.9);
  double fd[64];
  int compared = 0;

  static const int trips[] = {0, 1, 2, 7, 50, 333};
  for (unsigned t = 0; t < sizeof trips / sizeof *trips; t++) {
    sgt_set(&steps, 0, trips[t]);
    for (int v = 0; v < 3; v++) {
      CHECK_EQ_INT(rnns[v](&x, &w, &b, &steps, &out, &dx, &dw, &db), SG_OK);
      if (v == 0)
        keep_tape();
      else
        same_bits("rnn", v, trips[t], 1), compared++;
    }
    if (trips[t] == 7) {
      sgt_fd(rnn_loss, &x, fd);
      CHECK_GRAD(&dx, fd, 1e-7);
      sgt_fd(rnn_loss, &b, fd);
      CHECK_GRAD(&db, fd, 1e-7);
      sgt_fd(rnn_loss, &w, fd);
      CHECK_GRAD(&dw, fd, 1e-7);
    }
  }

  /* while: rates giving from 0 to a few hundred iterations */
  static const double rates[] = {0.5, 0.9, 0.99};
  sgt_set(&limit, 0, 0.05 * (double)n);
  for (int r = 0; r < 3; r++) {
    sgt_set(&rate, 0, rates[r]);
    for (int v = 0; v < 3; v++) {
      CHECK_EQ_INT(decays[v](&x, &rate, &limit, &out, &dx, &dw), SG_OK);
      if (v == 0)
        keep_tape();
      else
        same_bits("decay", v, r, 0), compared++;
    }
    if (r == 1) {
      sgt_fd(decay_loss, &x, fd);
      CHECK_GRAD(&dx, fd, 1e-6);
      sgt_fd(decay_loss, &rate, fd);
      CHECK_GRAD(&dw, fd, 1e-6);
    }
  }

  static const int outer_inner[][2] = {{0, 3}, {1, 1}, {5, 4}, {30, 20}};
  for (int c = 0; c < 4; c++) {
    sgt_set(&steps, 0, outer_inner[c][0]);
    sgt_set(&inner, 0, outer_inner[c][1]);
    for (int v = 0; v < 3; v++) {
      CHECK_EQ_INT(nests[v](&x, &w, &steps, &inner, &out, &dx, &dw), SG_OK);
      if (v == 0)
        keep_tape();
      else
        same_bits("nest", v, outer_inner[c][0], 0), compared++;
    }
    if (c == 2) {
      sgt_fd(nest_loss, &x, fd);
      CHECK_GRAD(&dx, fd, 1e-7);
      sgt_fd(nest_loss, &w, fd);
      CHECK_GRAD(&dw, fd, 1e-7);
    }
  }
  printf("%d checkpointed gradients bit-identical to the tape's\n", sgt_failures ? 0 : compared);
  free(x.data), free(b.data), free(dx.data), free(db.data), free(w.data), free(dw.data);
  free(out.data), free(rate.data), free(limit.data), free(steps.data), free(inner.data);
  return sgt_finish();
}
