/* f_hvp through loops (test/loops/Inputs/ckpt.sg, built three times with
 * --exports=grad,hvp: a full tape, and with two --ad-memory budgets, the
 * exports renamed *_ck and *_cm): forward over reverse goes through each
 * loop's unloop, whose tape or checkpoints hold the loop's values and
 * tangents. Every output (value, gradient, Hessian-vector product) of the
 * checkpointed builds is bit for bit the tape's, at several trip counts,
 * and the tape's H v matches central differences of f_grad along v.
 * Usage: prog N */
#include <string.h>

#include "sgtest.h"
#include "tape.h"
#include "ck.h"
#include "cm.h"

typedef int RnnH(const sg_tensor *, const sg_tensor *, const sg_tensor *, const sg_tensor *,
                 const sg_tensor *, const sg_tensor *, const sg_tensor *, sg_tensor *, sg_tensor *,
                 sg_tensor *, sg_tensor *, sg_tensor *, sg_tensor *, sg_tensor *);
typedef int DecayH(const sg_tensor *, const sg_tensor *, const sg_tensor *, const sg_tensor *,
                   const sg_tensor *, sg_tensor *, sg_tensor *, sg_tensor *, sg_tensor *,
                   sg_tensor *);
typedef int NestH(const sg_tensor *, const sg_tensor *, const sg_tensor *, const sg_tensor *,
                  const sg_tensor *, const sg_tensor *, sg_tensor *, sg_tensor *, sg_tensor *,
                  sg_tensor *, sg_tensor *);
static RnnH *const rnns[3] = {rnn_hvp, rnn_ck_hvp, rnn_cm_hvp};
static DecayH *const decays[3] = {decay_hvp, decay_ck_hvp, decay_cm_hvp};
static NestH *const nests[3] = {nest_hvp, nest_ck_hvp, nest_cm_hvp};
static const char *const names[3] = {"tape", "ck", "cm"};

static int64_t n;
/* the outputs: out, d_x, d_w, d_b, hv_x, hv_w, hv_b (unused ones stay 0) */
static sg_tensor o[7];
static double kept[7][64];

static size_t bytes(int k) { return (size_t)sgt_numel(&o[k]) * 8; }

static void keep(void) {
  for (int k = 0; k < 7; k++)
    memcpy(kept[k], o[k].data, bytes(k));
}

static int compared;
static void same_bits(const char *what, int variant, int trips) {
  for (int k = 0; k < 7; k++)
    if (memcmp(kept[k], o[k].data, bytes(k)) != 0) {
      printf("FAIL %s_%s at %d iterations: output %d not bit-identical to the tape's "
             "(%.17g vs %.17g)\n", what, names[variant], trips, k, sgt_get(&o[k], 0), kept[k][0]);
      sgt_failures++;
      return;
    }
  compared++;
}

static sg_tensor x, w, b, steps, inner, rate, limit, vx, vw, vb;
static sg_tensor gout, gx, gw, gb;

/* central differences of the gradient along v, into fd[] per parameter */
static void fd_of_grad(int which, double *fdx, double *fdw, double *fdb) {
  double h = 1e-5, up[3][64], dn[3][64];
  for (int s = 0; s < 2; s++) {
    double sg = s ? -1 : 1;
    sg_tensor xs = SGT_TENSOR(SG_F64, n), bs = SGT_TENSOR(SG_F64, n), ws = sgt_scalar(SG_F64);
    for (int64_t i = 0; i < n; i++) {
      sgt_set(&xs, i, sgt_get(&x, i) + sg * h * sgt_get(&vx, i));
      sgt_set(&bs, i, sgt_get(&b, i) + sg * h * sgt_get(&vb, i));
    }
    sgt_set(&ws, 0, sgt_get(&w, 0) + sg * h * sgt_get(&vw, 0));
    double (*dst)[64] = s ? dn : up;
    if (which == 0) {
      CHECK_EQ_INT(rnn_grad(&xs, &ws, &bs, &steps, &gout, &gx, &gw, &gb), SG_OK);
    } else if (which == 1) {
      sg_tensor rs = sgt_scalar(SG_F64);
      sgt_set(&rs, 0, sgt_get(&rate, 0) + sg * h * sgt_get(&vw, 0));
      CHECK_EQ_INT(decay_grad(&xs, &rs, &limit, &gout, &gx, &gw), SG_OK);
      free(rs.data);
    } else {
      CHECK_EQ_INT(nest_grad(&xs, &ws, &steps, &inner, &gout, &gx, &gw), SG_OK);
    }
    memcpy(dst[0], gx.data, (size_t)n * 8);
    dst[1][0] = sgt_get(&gw, 0);
    memcpy(dst[2], gb.data, (size_t)n * 8);
    free(xs.data), free(bs.data), free(ws.data);
  }
  for (int64_t i = 0; i < n; i++) {
    fdx[i] = (up[0][i] - dn[0][i]) / (2 * h);
    fdb[i] = (up[2][i] - dn[2][i]) / (2 * h);
  }
  fdw[0] = (up[1][0] - dn[1][0]) / (2 * h);
}

int main(int argc, char **argv) {
  n = sgt_arg(argc, argv, 1, 6);
  x = SGT_TENSOR(SG_F64, n), b = SGT_TENSOR(SG_F64, n), vx = SGT_TENSOR(SG_F64, n);
  vb = SGT_TENSOR(SG_F64, n), gx = SGT_TENSOR(SG_F64, n), gb = SGT_TENSOR(SG_F64, n);
  w = sgt_scalar(SG_F64), vw = sgt_scalar(SG_F64), gw = sgt_scalar(SG_F64);
  gout = sgt_scalar(SG_F64), rate = sgt_scalar(SG_F64), limit = sgt_scalar(SG_F64);
  steps = sgt_scalar(SG_I32), inner = sgt_scalar(SG_I32);
  for (int k = 0; k < 7; k++)
    o[k] = k == 0 || k == 2 || k == 5 ? sgt_scalar(SG_F64) : SGT_TENSOR(SG_F64, n);
  sgt_fill(&x, -1, 1);
  sgt_fill(&b, -0.5, 0.5);
  sgt_fill(&vx, -1, 1);
  sgt_fill(&vb, -1, 1);
  sgt_set(&vw, 0, 0.7);
  sgt_set(&w, 0, 0.9);
  double fdx[64], fdw[1], fdb[64];

  static const int trips[] = {0, 1, 2, 7, 50, 333};
  for (unsigned t = 0; t < sizeof trips / sizeof *trips; t++) {
    sgt_set(&steps, 0, trips[t]);
    for (int v = 0; v < 3; v++) {
      CHECK_EQ_INT(rnns[v](&x, &w, &b, &steps, &vx, &vw, &vb, &o[0], &o[1], &o[2], &o[3], &o[4],
                           &o[5], &o[6]), SG_OK);
      if (v == 0)
        keep();
      else
        same_bits("rnn", v, trips[t]);
    }
    if (trips[t] == 7) {
      fd_of_grad(0, fdx, fdw, fdb);
      CHECK_GRAD_VS(&o[4], fdx, "differences of rnn_grad", 1e-6);
      CHECK_GRAD_VS(&o[5], fdw, "differences of rnn_grad", 1e-6);
      CHECK_GRAD_VS(&o[6], fdb, "differences of rnn_grad", 1e-6);
    }
  }

  static const double rates[] = {0.5, 0.9, 0.99};
  sgt_set(&limit, 0, 0.05 * (double)n);
  for (int r = 0; r < 3; r++) {
    sgt_set(&rate, 0, rates[r]);
    for (int v = 0; v < 3; v++) {
      CHECK_EQ_INT(decays[v](&x, &rate, &limit, &vx, &vw, &o[0], &o[1], &o[2], &o[4], &o[5]),
                   SG_OK);
      if (v == 0)
        keep();
      else
        same_bits("decay", v, r);
    }
    if (r == 1) {
      fd_of_grad(1, fdx, fdw, fdb);
      CHECK_GRAD_VS(&o[4], fdx, "differences of decay_grad", 1e-5);
      CHECK_GRAD_VS(&o[5], fdw, "differences of decay_grad", 1e-5);
    }
  }

  static const int outer_inner[][2] = {{0, 3}, {1, 1}, {5, 4}, {30, 20}};
  for (int c = 0; c < 4; c++) {
    sgt_set(&steps, 0, outer_inner[c][0]);
    sgt_set(&inner, 0, outer_inner[c][1]);
    for (int v = 0; v < 3; v++) {
      CHECK_EQ_INT(nests[v](&x, &w, &steps, &inner, &vx, &vw, &o[0], &o[1], &o[2], &o[4], &o[5]),
                   SG_OK);
      if (v == 0)
        keep();
      else
        same_bits("nest", v, outer_inner[c][0]);
    }
    if (c == 2) {
      fd_of_grad(2, fdx, fdw, fdb);
      CHECK_GRAD_VS(&o[4], fdx, "differences of nest_grad", 1e-6);
      CHECK_GRAD_VS(&o[5], fdw, "differences of nest_grad", 1e-6);
    }
  }
  printf("%d checkpointed Hessian-vector products bit-identical to the tape's\n",
         sgt_failures ? 0 : compared);
  sg_tensor *all[] = {&x, &b, &vx, &vb, &gx, &gb, &w, &vw, &gw, &gout, &rate, &limit, &steps, &inner};
  for (unsigned k = 0; k < sizeof all / sizeof *all; k++)
    free(all[k]->data);
  for (int k = 0; k < 7; k++)
    free(o[k].data);
  return sgt_finish();
}
