/* Driver for opt_levels.test: every export of every example, and its
 * gradient, built at -O2 (the plain names) and at -O0 (the same source with
 * each export renamed NAME_O0), called on the same random data; every
 * output must agree to rounding: max|a - b| <= tol * max|b| over each
 * output tensor (tol 1e-5 for f32, 1e-12 for f64), with NaNs and
 * infinities in the same places. The optimizer may reassociate (a sum of a
 * broadcast becomes a product by the count) and fuse differently, so
 * bit-identical results are not expected.
 *
 * argv[1] = s: the symbolic sizes are s, s + 1, s + 2, ... (so s = 1 gives
 * mostly 1s and some 2s, and the sizes differ from each other). */
#include "adversarial.h"
#include "adversarial_O0.h"
#include "contrastive_divergence.h"
#include "contrastive_divergence_O0.h"
#include "em_gmm.h"
#include "em_gmm_O0.h"
#include "mlp.h"
#include "mlp_O0.h"
#include "stable_softmax.h"
#include "stable_softmax_O0.h"
#include "straight_through.h"
#include "straight_through_O0.h"
#include "sgtest.h"

static int ncompared;

/* An output tensor shaped like t, filled with a value no function returns. */
static sg_tensor like(const sg_tensor *t) {
  sg_tensor r = sgt_tensor(t->dtype, t->rank, t->shape);
  for (int64_t i = 0; i < sgt_numel(&r); i++)
    sgt_set(&r, i, -12345.0);
  return r;
}

static sg_tensor rnd(int dtype, int rank, const int64_t *shape, double lo, double hi) {
  sg_tensor t = sgt_tensor(dtype, rank, shape);
  sgt_fill(&t, lo, hi);
  return t;
}
#define RND(dtype, lo, hi, ...)                                                         \
  rnd(dtype, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),                 \
      (int64_t[]){__VA_ARGS__}, lo, hi)

/* a (-O2) against b (-O0), then both freed. */
static void agree(const char *fn, const char *what, sg_tensor *a, sg_tensor *b) {
  double tol = a->dtype == SG_F64 ? 1e-12 : 1e-5, err = 0, scale = 0;
  int64_t worst = 0;
  bool special = true;
  for (int64_t i = 0; i < sgt_numel(b); i++) {
    double x = sgt_get(a, i), y = sgt_get(b, i);
    if (isnan(x) || isnan(y) || isinf(x) || isinf(y)) {
      if (!((isnan(x) && isnan(y)) || x == y)) {
        special = false;
        worst = i;
      }
      continue;
    }
    if (x == -12345.0) { /* never written */
      special = false;
      worst = i;
    }
    if (!(fabs(x - y) <= err)) {
      err = fabs(x - y);
      if (special)
        worst = i;
    }
    scale = fmax(scale, fabs(y));
  }
  double rel = err / (scale > 0 ? scale : 1);
  if (!special || !(rel <= tol)) {
    printf("FAIL %s %s: -O2 and -O0 differ: relative error %.3g > %g (element %lld: %.17g vs "
           "%.17g)\n",
           fn, what, rel, tol, (long long)worst, sgt_get(a, worst), sgt_get(b, worst));
    sgt_failures++;
  } else {
    printf("ok: %s %s agrees (relative error %.2g)\n", fn, what, rel);
  }
  ncompared++;
  free(a->data);
  free(b->data);
}

/* Call `call` with outputs o2[], then `call0` with o0[], check the return
 * codes and compare each output. */
#define RUN2(fn, names, n, call, call0)                                                 \
  do {                                                                                  \
    CHECK_EQ_INT(call, SG_OK);                                                          \
    CHECK_EQ_INT(call0, SG_OK);                                                         \
    for (int k_ = 0; k_ < (n); k_++)                                                    \
      agree(fn, names[k_], &o2[k_], &o0[k_]);                                           \
  } while (0)

static void outs(sg_tensor *o2, sg_tensor *o0, int n, const sg_tensor *const *shapes) {
  for (int k = 0; k < n; k++) {
    o2[k] = like(shapes[k]);
    o0[k] = like(shapes[k]);
  }
}

static void adversarial(int64_t s) {
  int64_t n = s, d = s + 1;
  sg_tensor w = RND(SG_F32, -1, 1, d), x = RND(SG_F32, -1, 1, n, d);
  sg_tensor y = RND(SG_F32, -1, 1, n), sc = sgt_scalar(SG_F32);
  for (int64_t i = 0; i < n; i++) /* labels -1 or +1 */
    sgt_set(&y, i, sgt_get(&y, i) < 0 ? -1 : 1);
  sg_tensor o2[2], o0[2];
  outs(o2, o0, 1, (const sg_tensor *[]){&sc});
  RUN2("adversarial_loss", ((const char *[]){"out"}), 1, adversarial_loss(&w, &x, &y, &o2[0]),
       adversarial_loss_O0(&w, &x, &y, &o0[0]));
  outs(o2, o0, 2, (const sg_tensor *[]){&sc, &w});
  RUN2("adversarial_loss_grad", ((const char *[]){"out", "d_w"}), 2,
       adversarial_loss_grad(&w, &x, &y, &o2[0], &o2[1]),
       adversarial_loss_O0_grad(&w, &x, &y, &o0[0], &o0[1]));
  free(w.data), free(x.data), free(y.data), free(sc.data);
}

static void contrastive_divergence(int64_t s) {
  int64_t b = s, nv = s + 1, nh = s + 2;
  sg_tensor w = RND(SG_F32, -1, 1, nv, nh), a = RND(SG_F32, -1, 1, nv);
  sg_tensor c = RND(SG_F32, -1, 1, nh), v0 = RND(SG_F32, 0, 1, b, nv), sc = sgt_scalar(SG_F32);
  sg_tensor o2[4], o0[4];
  outs(o2, o0, 1, (const sg_tensor *[]){&sc});
  RUN2("cd1_loss", ((const char *[]){"out"}), 1, cd1_loss(&w, &a, &c, &v0, &o2[0]),
       cd1_loss_O0(&w, &a, &c, &v0, &o0[0]));
  outs(o2, o0, 4, (const sg_tensor *[]){&sc, &w, &a, &c});
  RUN2("cd1_loss_grad", ((const char *[]){"out", "d_w", "d_a", "d_c"}), 4,
       cd1_loss_grad(&w, &a, &c, &v0, &o2[0], &o2[1], &o2[2], &o2[3]),
       cd1_loss_O0_grad(&w, &a, &c, &v0, &o0[0], &o0[1], &o0[2], &o0[3]));
  free(w.data), free(a.data), free(c.data), free(v0.data), free(sc.data);
}

static void em_gmm(int64_t s) {
  int64_t k = s, n = s + 2;
  sg_tensor mu = RND(SG_F64, -2, 2, k), x = RND(SG_F64, -3, 3, n), sc = sgt_scalar(SG_F64);
  sg_tensor o2[2], o0[2];
  outs(o2, o0, 1, (const sg_tensor *[]){&sc});
  RUN2("m_step_loss", ((const char *[]){"out"}), 1, m_step_loss(&mu, &x, &o2[0]),
       m_step_loss_O0(&mu, &x, &o0[0]));
  outs(o2, o0, 2, (const sg_tensor *[]){&sc, &mu});
  RUN2("m_step_loss_grad", ((const char *[]){"out", "d_mu"}), 2,
       m_step_loss_grad(&mu, &x, &o2[0], &o2[1]), m_step_loss_O0_grad(&mu, &x, &o0[0], &o0[1]));
  free(mu.data), free(x.data), free(sc.data);
}

static void mlp(int64_t s) {
  int64_t n = s, d = s + 1, h = s + 2, o = s + 3;
  sg_tensor w1 = RND(SG_F32, -1, 1, d, h), b1 = RND(SG_F32, -0.5, 0.5, h);
  sg_tensor w2 = RND(SG_F32, -1, 1, h, o), b2 = RND(SG_F32, -0.5, 0.5, o);
  sg_tensor x = RND(SG_F32, -1, 1, n, d), y = RND(SG_F32, -1, 1, n, o), sc = sgt_scalar(SG_F32);
  sg_tensor o2[5], o0[5];
  outs(o2, o0, 1, (const sg_tensor *[]){&sc});
  RUN2("mlp_loss", ((const char *[]){"out"}), 1, mlp_loss(&w1, &b1, &w2, &b2, &x, &y, &o2[0]),
       mlp_loss_O0(&w1, &b1, &w2, &b2, &x, &y, &o0[0]));
  outs(o2, o0, 5, (const sg_tensor *[]){&sc, &w1, &b1, &w2, &b2});
  RUN2("mlp_loss_grad", ((const char *[]){"out", "d_w1", "d_b1", "d_w2", "d_b2"}), 5,
       mlp_loss_grad(&w1, &b1, &w2, &b2, &x, &y, &o2[0], &o2[1], &o2[2], &o2[3], &o2[4]),
       mlp_loss_O0_grad(&w1, &b1, &w2, &b2, &x, &y, &o0[0], &o0[1], &o0[2], &o0[3], &o0[4]));

  /* layer(x: [n, d], w: [d, h]) -> [n, h], and its VJP with a random seed */
  sg_tensor seed = RND(SG_F32, -1, 1, n, h), lout = sgt_tensor(SG_F32, 2, (int64_t[]){n, h});
  outs(o2, o0, 1, (const sg_tensor *[]){&lout});
  RUN2("layer", ((const char *[]){"out"}), 1, layer(&x, &w1, &o2[0]), layer_O0(&x, &w1, &o0[0]));
  outs(o2, o0, 3, (const sg_tensor *[]){&lout, &x, &w1});
  RUN2("layer_vjp", ((const char *[]){"out", "d_x", "d_w"}), 3,
       layer_vjp(&x, &w1, &seed, &o2[0], &o2[1], &o2[2]),
       layer_O0_vjp(&x, &w1, &seed, &o0[0], &o0[1], &o0[2]));
  free(w1.data), free(b1.data), free(w2.data), free(b2.data), free(x.data), free(y.data);
  free(sc.data), free(seed.data), free(lout.data);
}

static void stable_softmax(int64_t s) {
  int64_t k = s + 1, d = s;
  sg_tensor w = RND(SG_F32, -2, 2, k, d), x = RND(SG_F32, -1, 1, d);
  sg_tensor y = RND(SG_F32, 0, 1, k), sc = sgt_scalar(SG_F32);
  sg_tensor o2[2], o0[2];
  outs(o2, o0, 1, (const sg_tensor *[]){&sc});
  RUN2("xent", ((const char *[]){"out"}), 1, xent(&w, &x, &y, &o2[0]), xent_O0(&w, &x, &y, &o0[0]));
  outs(o2, o0, 2, (const sg_tensor *[]){&sc, &w});
  RUN2("xent_grad", ((const char *[]){"out", "d_w"}), 2, xent_grad(&w, &x, &y, &o2[0], &o2[1]),
       xent_O0_grad(&w, &x, &y, &o0[0], &o0[1]));
  free(w.data), free(x.data), free(y.data), free(sc.data);
}

static void straight_through(int64_t s) {
  int64_t n = s + 3;
  sg_tensor w = RND(SG_F32, -1, 1, n), t = RND(SG_F32, -1, 1, n), sc = sgt_scalar(SG_F32);
  sg_tensor o2[2], o0[2];
  outs(o2, o0, 1, (const sg_tensor *[]){&sc});
  RUN2("qloss", ((const char *[]){"out"}), 1, qloss(&w, &t, &o2[0]), qloss_O0(&w, &t, &o0[0]));
  outs(o2, o0, 2, (const sg_tensor *[]){&sc, &w});
  RUN2("qloss_grad", ((const char *[]){"out", "d_w"}), 2, qloss_grad(&w, &t, &o2[0], &o2[1]),
       qloss_O0_grad(&w, &t, &o0[0], &o0[1]));
  free(w.data), free(t.data), free(sc.data);
}

int main(int argc, char **argv) {
  int64_t s = sgt_arg(argc, argv, 1, 4);
  adversarial(s);
  contrastive_divergence(s);
  em_gmm(s);
  mlp(s);
  stable_softmax(s);
  straight_through(s);
  printf("compared %d outputs\n", ncompared);
  return sgt_finish();
}
