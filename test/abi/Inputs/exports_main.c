/* Driver for exports.test: f_jvp and f_hvp of Inputs/exports.sg against
 * values derived by hand, their argument checks (nothing written on
 * failure), and the entry points the header and sgc_lookup give. */
#include <string.h>

#include "sgtest.h"
#include "exports.h"

#define N 3

static void nothing_written(const sg_tensor *t, double v) {
  for (int64_t i = 0; i < sgt_numel(t); i++)
    if (sgt_get(t, i) != v) {
      printf("FAIL: output written after an error\n");
      sgt_failures++;
      return;
    }
  printf("nothing written\n");
}

int main(void) {
  sg_tensor x = SGT_TENSOR(SG_F64, N), c = SGT_TENSOR(SG_F64, N), tx = SGT_TENSOR(SG_F64, N);
  sg_tensor w = sgt_scalar(SG_F64), tw = sgt_scalar(SG_F64), out = sgt_scalar(SG_F64);
  sg_tensor tout = sgt_scalar(SG_F64), dx = SGT_TENSOR(SG_F64, N), dw = sgt_scalar(SG_F64);
  sg_tensor hx = SGT_TENSOR(SG_F64, N), hw = sgt_scalar(SG_F64);
  double xs[N] = {1, -2, 0.5}, cs[N] = {0.5, 1, -1}, ts[N] = {0.25, 1, -2};
  for (int i = 0; i < N; i++) {
    sgt_set(&x, i, xs[i]);
    sgt_set(&c, i, cs[i]);
    sgt_set(&tx, i, ts[i]);
  }
  double wv = 1.5, twv = -0.5;
  sgt_set(&w, 0, wv);
  sgt_set(&tw, 0, twv);

  /* loss = 0.5 sum (x w - c)^2: its tangent is sum (x w - c)(tx w + x tw) */
  CHECK_EQ_INT(loss_jvp(&x, &w, &c, &tx, &tw, &out, &tout), SG_OK);
  double want = 0, val = 0;
  for (int i = 0; i < N; i++) {
    double r = xs[i] * wv - cs[i];
    val += 0.5 * r * r;
    want += r * (ts[i] * wv + xs[i] * twv);
  }
  CHECK_CLOSE(sgt_get(&out, 0), val, 1e-14);
  CHECK_CLOSE(sgt_get(&tout, 0), want, 1e-14);

  /* f_hvp: value, gradient, and H v with H = [[w^2 I, (2 x w - c)], [.., sum x^2]] */
  CHECK_EQ_INT(loss_hvp(&x, &w, &c, &tx, &tw, &out, &dx, &dw, &hx, &hw), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), val, 1e-14);
  double sxx = 0, dwv = 0, hwv = 0;
  for (int i = 0; i < N; i++) {
    double r = xs[i] * wv - cs[i];
    CHECK_CLOSE(sgt_get(&dx, i), r * wv, 1e-14);
    dwv += r * xs[i];
    sxx += xs[i] * xs[i];
    double cross = 2 * xs[i] * wv - cs[i];
    CHECK_CLOSE(sgt_get(&hx, i), wv * wv * ts[i] + cross * twv, 1e-14);
    hwv += cross * ts[i];
  }
  hwv += sxx * twv;
  CHECK_CLOSE(sgt_get(&dw, 0), dwv, 1e-14);
  CHECK_CLOSE(sgt_get(&hw, 0), hwv, 1e-14);

  /* several results: out0..out2, then t_out0 and t_out2 (no tangent of the
   * i32 result) */
  sg_tensor k = sgt_scalar(SG_I32), o0 = SGT_TENSOR(SG_F64, N), o1 = sgt_scalar(SG_I32);
  sg_tensor o2 = sgt_scalar(SG_F64), t0 = SGT_TENSOR(SG_F64, N), t2 = sgt_scalar(SG_F64);
  sgt_set(&k, 0, 4);
  CHECK_EQ_INT(layer_jvp(&x, &k, &tx, &o0, &o1, &o2, &t0, &t2), SG_OK);
  CHECK_EQ_INT((int)sgt_get(&o1, 0), 5);
  double st = 0;
  for (int i = 0; i < N; i++) {
    CHECK_CLOSE(sgt_get(&t0, i), ts[i] * (1 - tanh(xs[i]) * tanh(xs[i])), 1e-14);
    st += ts[i];
  }
  CHECK_EXACT(sgt_get(&t2, 0), st);

  /* argument checks: a misshaped tangent, a tangent of the wrong dtype, an
   * output overlapping an input; nothing written */
  sg_tensor bad = SGT_TENSOR(SG_F64, N + 1);
  sgt_set(&tout, 0, 7);
  int rc = loss_jvp(&x, &w, &c, &bad, &tw, &out, &tout);
  printf("rc=%s\nmsg=%s\n", rc == SG_ERR_SHAPE ? "SG_ERR_SHAPE" : "?", sg_last_error());
  nothing_written(&tout, 7);
  sg_tensor tw32 = sgt_scalar(SG_F32);
  rc = loss_jvp(&x, &w, &c, &tx, &tw32, &out, &tout);
  printf("rc=%s\nmsg=%s\n", rc == SG_ERR_DTYPE ? "SG_ERR_DTYPE" : "?", sg_last_error());
  nothing_written(&tout, 7);
  for (int i = 0; i < N; i++)
    sgt_set(&dx, i, 9);
  rc = loss_hvp(&x, &w, &c, &tx, &tw, &out, &dx, &dw, &dx, &hw);
  printf("rc=%s\nmsg=%s\n", rc == SG_ERR_ALIAS ? "SG_ERR_ALIAS" : "?", sg_last_error());
  nothing_written(&dx, 9);

  sg_tensor *all[] = {&x, &c, &tx, &w, &tw, &out, &tout, &dx, &dw, &hx, &hw, &k, &o0, &o1, &o2,
                      &t0, &t2, &bad, &tw32};
  for (unsigned i = 0; i < sizeof all / sizeof *all; i++)
    free(all[i]->data);
  return sgt_finish();
}
