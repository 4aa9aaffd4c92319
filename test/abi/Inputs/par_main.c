/* Driver for thread_invariance.test and the speed-up measurement.
 *
 * invariance: xentv/xentv_grad (Inputs/xentv.sg: the gradient's loops flat and large,
 *   so run on the thread pool, with chunked reductions) on n = 1,000,003,
 *   and mlp_loss_grad (examples/mlp.sg) at a size where its GEMMs are split,
 *   give the same bits with 1, 2 and 3 threads; xentv's loss and gradient
 *   match a double-precision reference (d_x = softmax(x) * sum(y) - y).
 * speed N: best-of-5 wall time of xentv_grad on n = N with 1 and 2 threads
 *   (printed, not checked: the machine may be busy). */
#define _POSIX_C_SOURCE 200809L
#include <time.h>

#include "mlp.h"
#include "sgtest.h"
#include "xentv.h"

static size_t nbytes(const sg_tensor *t) { return (size_t)sgt_numel(t) * 4; }

static void run_xent(int64_t n, sg_tensor *x, sg_tensor *y, sg_tensor *out, sg_tensor *dx,
                     sg_tensor *fwd) {
  CHECK_EQ_INT(xentv_grad(x, y, out, dx), SG_OK);
  CHECK_EQ_INT(xentv(x, y, fwd), SG_OK);
  (void)n;
}

static void invariance(void) {
  int64_t n = 1000003;
  sg_tensor x = SGT_TENSOR(SG_F32, n), y = SGT_TENSOR(SG_F32, n);
  sgt_fill(&x, -3, 3);
  sgt_fill(&y, 0, 1);
  sg_tensor out[3], dx[3], fwd[3];
  for (int t = 0; t < 3; t++) {
    out[t] = sgt_scalar(SG_F32), fwd[t] = sgt_scalar(SG_F32), dx[t] = SGT_TENSOR(SG_F32, n);
    sg_set_num_threads(t + 1);
    run_xent(n, &x, &y, &out[t], &dx[t], &fwd[t]);
  }
  for (int t = 1; t < 3; t++) {
    CHECK(memcmp(out[0].data, out[t].data, 4) == 0);
    CHECK(memcmp(fwd[0].data, fwd[t].data, 4) == 0);
    CHECK(memcmp(dx[0].data, dx[t].data, nbytes(&dx[0])) == 0);
  }
  double mx = -1e300, se = 0, sy = 0, loss = 0;
  for (int64_t i = 0; i < n; i++)
    mx = fmax(mx, sgt_get(&x, i));
  for (int64_t i = 0; i < n; i++)
    se += exp(sgt_get(&x, i) - mx), sy += sgt_get(&y, i);
  for (int64_t i = 0; i < n; i++)
    loss -= sgt_get(&y, i) * (sgt_get(&x, i) - mx - log(se));
  CHECK_CLOSE(sgt_get(&out[0], 0), loss, 1e-5);
  CHECK_CLOSE(sgt_get(&fwd[0], 0), loss, 1e-5);
  double maxerr = 0;
  for (int64_t i = 0; i < n; i++) {
    double want = exp(sgt_get(&x, i) - mx) / se * sy - sgt_get(&y, i);
    maxerr = fmax(maxerr, fabs(sgt_get(&dx[0], i) - want));
  }
  CHECK(maxerr < 1e-5);
  printf("xentv, n = %lld: 1, 2 and 3 threads agree bit for bit, loss within 1e-5 of the reference\n",
         (long long)n);
  for (int t = 0; t < 3; t++)
    free(out[t].data), free(dx[t].data), free(fwd[t].data);
  free(x.data), free(y.data);

  /* mlp_loss_grad: n = 512, d = 256, h = 384, o = 64 */
  sg_tensor in[6] = {SGT_TENSOR(SG_F32, 256, 384), SGT_TENSOR(SG_F32, 384), SGT_TENSOR(SG_F32, 384, 64),
                     SGT_TENSOR(SG_F32, 64), SGT_TENSOR(SG_F32, 512, 256), SGT_TENSOR(SG_F32, 512, 64)};
  for (int i = 0; i < 6; i++)
    sgt_fill(&in[i], -1, 1);
  sg_tensor g[3][5];
  for (int t = 0; t < 3; t++) {
    g[t][0] = sgt_scalar(SG_F32);
    for (int i = 0; i < 4; i++)
      g[t][i + 1] = sgt_tensor(SG_F32, in[i].rank, in[i].shape);
    sg_set_num_threads(t + 1);
    CHECK_EQ_INT(mlp_loss_grad(&in[0], &in[1], &in[2], &in[3], &in[4], &in[5], &g[t][0], &g[t][1],
                               &g[t][2], &g[t][3], &g[t][4]),
                 SG_OK);
  }
  for (int t = 1; t < 3; t++)
    for (int i = 0; i < 5; i++)
      CHECK(memcmp(g[0][i].data, g[t][i].data, nbytes(&g[0][i])) == 0);
  printf("mlp_loss_grad, n = 512, d = 256, h = 384, o = 64: 1, 2 and 3 threads agree bit for bit\n");
  for (int t = 0; t < 3; t++)
    for (int i = 0; i < 5; i++)
      free(g[t][i].data);
  for (int i = 0; i < 6; i++)
    free(in[i].data);
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void speed(int64_t n) {
  sg_tensor x = SGT_TENSOR(SG_F32, n), y = SGT_TENSOR(SG_F32, n), out = sgt_scalar(SG_F32),
            dx = SGT_TENSOR(SG_F32, n);
  sgt_fill(&x, -3, 3);
  sgt_fill(&y, 0, 1);
  double best[3] = {1e9, 1e9, 1e9};
  for (int r = 0; r < 5; r++)
    for (int t = 1; t <= 2; t++) {
      sg_set_num_threads(t);
      double t0 = now();
      CHECK_EQ_INT(xentv_grad(&x, &y, &out, &dx), SG_OK);
      double d = now() - t0;
      if (d < best[t])
        best[t] = d;
    }
  printf("xentv_grad, n = %lld: 1 thread %.2f ms, 2 threads %.2f ms, speed-up %.2fx\n",
         (long long)n, best[1] * 1e3, best[2] * 1e3, best[1] / best[2]);
  free(x.data), free(y.data), free(out.data), free(dx.data);
}

int main(int argc, char **argv) {
  if (argc > 2 && !strcmp(argv[1], "speed"))
    speed(atoll(argv[2]));
  else
    invariance();
  return sgt_finish();
}
