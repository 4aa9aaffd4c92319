/* Driver for second_order.test (second_order.sg, f64); argv: n k.
 * For each pair (so_F, so_F_g = sum(grad(F, wrt=x)(x, a) * c)):
 *   - so_F_g's value against sum(c * central differences of so_F) (1e-6)
 *     and against sum(c * d_x of so_F_grad) (1e-12);
 *   - so_F_g_grad (second order) against central differences of so_F_g (1e-6);
 * and for so_k (third order) and so_st (stop_gradient inside the inner
 * function) the derivatives written out. */
#include "so.h"
#include "opsutil.h"

static int64_t N, K;
typedef int (*f_t)(const sg_tensor *, const sg_tensor *, sg_tensor *);
typedef int (*fg_t)(const sg_tensor *, const sg_tensor *, sg_tensor *, sg_tensor *);
typedef int (*g_t)(const sg_tensor *, const sg_tensor *, const sg_tensor *, sg_tensor *);
typedef int (*gg_t)(const sg_tensor *, const sg_tensor *, const sg_tensor *, sg_tensor *,
                    sg_tensor *);
static const struct so {
  const char *name;
  f_t f;
  fg_t fg;
  g_t g;
  gg_t gg;
  bool matrix; /* x is [k, n] rather than [n] */
  bool frozen;  /* has stop_gradient: no finite differences, see below */
  double lo, hi;
} sos[] = {
#define SO(nm, mat, fr, lo, hi)                                                          \
  {"so_" #nm, so_##nm, so_##nm##_grad, so_##nm##_g, so_##nm##_g_grad, mat, fr, lo, hi}
    SO(k, false, false, -1.5, 1.5), SO(r, false, false, -2, 2),
    SO(m, false, false, -1, 1.5),   SO(s, false, false, -2, 2),
    SO(q, true, false, -1, 1),      SO(red, true, false, -1, 1),
    SO(st, false, true, -1.5, 1.5), SO(bb, false, false, -1, 1),
};
static const struct so *cur;
static sg_tensor X, A, C, OUT;
static double f_loss(void) {
  CHECK_EQ_INT(cur->f(&X, &A, &OUT), SG_OK);
  return sgt_get(&OUT, 0);
}
static double g_loss(void) {
  CHECK_EQ_INT(cur->g(&X, &A, &C, &OUT), SG_OK);
  return sgt_get(&OUT, 0);
}

int main(int argc, char **argv) {
  N = sgt_arg(argc, argv, 1, 5), K = sgt_arg(argc, argv, 2, 3);
  OUT = SCALAR(SG_F64, 0);
  for (size_t t = 0; t < sizeof sos / sizeof *sos; t++) {
    cur = &sos[t];
    printf("== %s\n", cur->name);
    int64_t xs[2] = {K, N};
    int rank = cur->matrix ? 2 : 1;
    X = sgo_new(SG_F64, rank, xs + 2 - rank), C = sgo_new(SG_F64, rank, xs + 2 - rank);
    A = sgo_new(SG_F64, 1, &N);
    sgt_fill(&X, cur->lo, cur->hi), sgt_fill(&A, -1, 1), sgt_fill(&C, -1, 1);
    int64_t n = sgt_numel(&X);
    sg_tensor d1 = sgo_like(SG_F64, &X), d2 = sgo_like(SG_F64, &X);
    double *fd = calloc((size_t)n, sizeof(double)), v1 = 0, v2 = 0;
    sgt_fd(f_loss, &X, fd);
    CHECK_EQ_INT(cur->fg(&X, &A, &OUT, &d1), SG_OK);
    for (int64_t i = 0; i < n; i++)
      v1 += sgt_get(&C, i) * fd[i], v2 += sgt_get(&C, i) * sgt_get(&d1, i);
    CHECK_EQ_INT(cur->g(&X, &A, &C, &OUT), SG_OK);
    double g = sgt_get(&OUT, 0);
    if (!cur->frozen)
      CHECK_CLOSE(g, v1, 1e-6);
    CHECK_CLOSE(g, v2, 1e-12);
    CHECK_EQ_INT(cur->gg(&X, &A, &C, &OUT, &d2), SG_OK);
    CHECK_CLOSE(sgt_get(&OUT, 0), g, 1e-14);
    sgt_fd(g_loss, &X, fd);
    if (!cur->frozen)
      CHECK_GRAD(&d2, fd, 1e-6);
    if (cur->f == so_k) {
      /* k = sum(h'(x) x): g = sum(c (h''(x) x + h'(x))),
       * d_x = c (h'''(x) x + 2 h''(x)); h = sum(e^x sin x) */
      double want = 0, *w = calloc((size_t)n, sizeof(double));
      for (int64_t i = 0; i < n; i++) {
        double x = sgt_get(&X, i), c = sgt_get(&C, i), e = exp(x);
        double h1 = e * (sin(x) + cos(x)), h2 = 2 * e * cos(x), h3 = 2 * e * (cos(x) - sin(x));
        want += c * (h2 * x + h1), w[i] = c * (h3 * x + 2 * h2);
      }
      CHECK_CLOSE(g, want, 1e-13);
      CHECK_GRAD_VS(&d2, w, "c (h'''(x) x + 2 h''(x))", 1e-13);
      free(w);
    }
    if (cur->f == so_st) {
      /* st = sum(sg(x^2) x^2 + sg(h'(x)) x): grad(st) = 2 x sg(x^2) + sg(h'(x)),
       * g = sum(c (2 x^3 + h'(x))); differentiating again, stop_gradient
       * still holds (as in JAX): d_x = 2 c x^2. Finite differences would
       * see the frozen parts move. */
      double want = 0, *w = calloc((size_t)n, sizeof(double));
      for (int64_t i = 0; i < n; i++) {
        double x = sgt_get(&X, i), c = sgt_get(&C, i);
        want += c * (2 * x * x * x + exp(x) * (sin(x) + cos(x))), w[i] = 2 * c * x * x;
      }
      CHECK_CLOSE(g, want, 1e-13);
      CHECK_GRAD_VS(&d2, w, "2 c x^2", 1e-13);
      free(w);
    }
    free(fd);
  }
  sgo_free_all();
  return sgt_finish();
}
