/* Driver for straight_through.test: argv gives n.
 *
 * qloss(w, t) = mean((round(4 w) / 4 - t)^2). The forward pass really rounds
 * (quantize(x) = x + stop_gradient(round(x) - x) has the value round(x)), so
 * the computed function is piecewise constant in w and its true derivative
 * is zero almost everywhere. The straight-through estimator instead treats
 * the quantizer as the identity backward: with q = round(4w)/4 and dq/dw = 1,
 * d_w = 2 (q - t) / n. So qloss_grad is compared with that formula, not with
 * finite differences: central differences of the f64 build, with w*4 kept
 * at least 1e-3 away from every half-integer (where round jumps), are exactly
 * zero, and we check that they are while the gradient is not. */
#include "m32.h"
#include "m64.h"
#include "sgtest.h"

/* A value for w whose 4 w is not within 1e-3 of a half-integer. */
static double away_from_kinks(void) {
  for (;;) {
    double v = sgt_uniform(-2, 2);
    double f = 4 * (double)(float)v;
    if (fabs(f - floor(f) - 0.5) > 1e-3)
      return (double)(float)v; /* exactly representable in f32 too */
  }
}

static sg_tensor w64, t64, out64;
static double loss64(void) {
  CHECK_EQ_INT(qloss64(&w64, &t64, &out64), SG_OK);
  return sgt_get(&out64, 0);
}

int main(int argc, char **argv) {
  int64_t n = sgt_arg(argc, argv, 1, 9);
  sg_tensor w = SGT_TENSOR(SG_F32, n), t = SGT_TENSOR(SG_F32, n);
  for (int64_t i = 0; i < n; i++)
    sgt_set(&w, i, away_from_kinks());
  sgt_fill(&t, -2, 2);
  w64 = SGT_TENSOR(SG_F64, n), t64 = SGT_TENSOR(SG_F64, n), out64 = sgt_scalar(SG_F64);
  sgt_copy(&w64, &w);
  sgt_copy(&t64, &t);

  /* Forward and the straight-through gradient, in double. */
  double want = 0, *st = calloc((size_t)n, sizeof(double));
  for (int64_t i = 0; i < n; i++) {
    double q = round(4 * sgt_get(&w, i)) / 4, e = q - sgt_get(&t, i);
    want += e * e / (double)n;
    st[i] = 2 * e / (double)n;
  }

  sg_tensor out = sgt_scalar(SG_F32), d_w = SGT_TENSOR(SG_F32, n);
  CHECK_EQ_INT(qloss(&w, &t, &out), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), want, 1e-5);
  sgt_set(&out, 0, 0);
  CHECK_EQ_INT(qloss_grad(&w, &t, &out, &d_w), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), want, 1e-5);
  CHECK_GRAD_VS(&d_w, st, "straight-through formula", 1e-3);

  sg_tensor d_w64 = SGT_TENSOR(SG_F64, n);
  CHECK_EQ_INT(qloss64(&w64, &t64, &out64), SG_OK);
  CHECK_CLOSE(sgt_get(&out64, 0), want, 1e-12);
  CHECK_EQ_INT(qloss64_grad(&w64, &t64, &out64, &d_w64), SG_OK);
  CHECK_CLOSE(sgt_get(&out64, 0), want, 1e-12);
  CHECK_GRAD_VS(&d_w64, st, "straight-through formula", 1e-7);

  /* The derivative of the computed function is zero here (finite
   * differences do not cross a rounding boundary), but the straight-through
   * gradient is not: every element with q != t has a nonzero gradient. */
  double *fd = calloc((size_t)n, sizeof(double));
  sgt_fd(loss64, &w64, fd);
  int bad = 0;
  for (int64_t i = 0; i < n; i++) {
    CHECK_EXACT(fd[i], 0);
    if (st[i] != 0 && (sgt_get(&d_w, i) == 0 || sgt_get(&d_w64, i) == 0))
      bad++;
  }
  CHECK_EQ_INT(bad, 0);
  if (!bad)
    printf("ok: straight-through gradient is not the (zero) finite-difference derivative\n");

  /* target one element too long: SG_ERR_SHAPE, the message, nothing written. */
  sg_tensor tbad = SGT_TENSOR(SG_F32, n + 1);
  sgt_set(&out, 0, 42);
  sgt_set(&d_w, 0, 42);
  CHECK_EQ_INT(qloss_grad(&w, &tbad, &out, &d_w), SG_ERR_SHAPE);
  char msg[200];
  snprintf(msg, sizeof msg,
           "qloss_grad: argument 'target' has shape [%lld], expected [n] with n = %lld (bound by 'w')",
           (long long)(n + 1), (long long)n);
  CHECK_STR(sg_last_error(), msg);
  CHECK_EXACT(sgt_get(&out, 0), 42);
  CHECK_EXACT(sgt_get(&d_w, 0), 42);
  CHECK_EQ_INT(qloss(&w, &tbad, &out), SG_ERR_SHAPE);
  snprintf(msg, sizeof msg,
           "qloss: argument 'target' has shape [%lld], expected [n] with n = %lld (bound by 'w')",
           (long long)(n + 1), (long long)n);
  CHECK_STR(sg_last_error(), msg);
  CHECK_EXACT(sgt_get(&out, 0), 42);

  /* The gradient output is the input w itself: SG_ERR_ALIAS, w untouched. */
  double w0 = sgt_get(&w, 0);
  sg_tensor alias = w; /* same data pointer */
  CHECK_EQ_INT(qloss_grad(&w, &t, &out, &alias), SG_ERR_ALIAS);
  CHECK_CONTAINS(sg_last_error(), "qloss_grad: ");
  CHECK_CONTAINS(sg_last_error(), "'d_w'");
  CHECK_EXACT(sgt_get(&w, 0), w0);
  CHECK_EXACT(sgt_get(&out, 0), 42);

  free(st), free(fd);
  free(w.data), free(t.data), free(out.data), free(d_w.data), free(tbad.data);
  free(w64.data), free(t64.data), free(out64.data), free(d_w64.data);
  return sgt_finish();
}
