/* Driver for v3ops.test: one table row per export of v3ops.sg.
 * argv: m n. For every row, on random x (and the const weight c):
 *   - the f32 and the f64 value against a reference computed here in plain
 *     C double, to 2e-5 and 1e-12 (relative to the terms' scale);
 *   - the value output of the _grad export that of the plain export (to
 *     rounding: the two may fuse their sums differently);
 *   - d_x of the f32 build to 2e-3 and of the f64 build to 1e-7 (relative
 *     max-norm) against central differences of the f64 build. */
#include "v3ops32.h"
#include "v3ops64.h"
#include "sgtest.h"

static int64_t M, N;
typedef int (*fn_t)(const sg_tensor *, const sg_tensor *, sg_tensor *);
typedef int (*gr_t)(const sg_tensor *, const sg_tensor *, sg_tensor *, sg_tensor *);

static double X(const double *x, int64_t i, int64_t j) { return x[i * N + j]; }

/* log-sum-exp of n values at stride s, in long double from the max */
static double lse(const double *v, int64_t n, int64_t s) {
  double m = -INFINITY;
  for (int64_t k = 0; k < n; k++)
    m = fmax(m, v[k * s]);
  long double t = 0;
  for (int64_t k = 0; k < n; k++)
    t += expl((long double)v[k * s] - m);
  return m + (double)logl(t);
}

static double r_lse_a1(const double *x, const double *c) {
  double s = 0;
  for (int64_t i = 0; i < M; i++)
    s += lse(x + i * N, N, 1) * c[i];
  return s;
}
static double r_lse_a0(const double *x, const double *c) {
  double s = 0;
  for (int64_t j = 0; j < N; j++)
    s += lse(x + j, M, N) * c[j];
  return s;
}
static double r_lse_all(const double *x, const double *c) {
  double *t = malloc(sizeof(double) * (size_t)(M * N));
  for (int64_t i = 0; i < M * N; i++)
    t[i] = x[i] * c[i];
  double r = lse(t, M * N, 1);
  free(t);
  return r;
}
/* sum over (i, j) of c * f(softmax or log_softmax along one axis) */
static double softmax_ref(const double *x, const double *c, int axis, int logs) {
  double s = 0;
  int64_t outer = axis ? M : N, len = axis ? N : M, st = axis ? 1 : N, os = axis ? N : 1;
  for (int64_t o = 0; o < outer; o++) {
    double l = lse(x + o * os, len, st);
    for (int64_t k = 0; k < len; k++) {
      int64_t at = o * os + k * st;
      s += c[at] * (logs ? x[at] - l : exp(x[at] - l));
    }
  }
  return s;
}
static double r_softmax(const double *x, const double *c) { return softmax_ref(x, c, 1, 0); }
static double r_softmax_a0(const double *x, const double *c) { return softmax_ref(x, c, 0, 0); }
static double r_log_softmax(const double *x, const double *c) { return softmax_ref(x, c, 1, 1); }
static double r_log_softmax_a0(const double *x, const double *c) { return softmax_ref(x, c, 0, 1); }
static double r_clip(const double *x, const double *c) {
  double s = 0;
  for (int64_t i = 0; i < M * N; i++)
    s += fmin(fmax(x[i], -0.5), 0.25) * c[i];
  return s;
}
static double r_prod_a1(const double *x, const double *c) {
  double s = 0;
  for (int64_t i = 0; i < M; i++) {
    double p = 1;
    for (int64_t j = 0; j < N; j++)
      p *= X(x, i, j);
    s += p * c[i];
  }
  return s;
}
static double r_prod_a0(const double *x, const double *c) {
  double s = 0;
  for (int64_t j = 0; j < N; j++) {
    double p = 1;
    for (int64_t i = 0; i < M; i++)
      p *= X(x, i, j);
    s += p * c[j];
  }
  return s;
}
static double r_prod_all(const double *x, const double *c) {
  double p = 1;
  for (int64_t i = 0; i < M * N; i++)
    p *= x[i] + c[i];
  return p;
}
static double r_cumsum(const double *x, const double *c) {
  double s = 0;
  for (int64_t i = 0; i < M; i++) {
    double run = 0;
    for (int64_t j = 0; j < N; j++)
      s += (run += X(x, i, j)) * c[i * N + j];
  }
  return s;
}
static double r_cumsum_a0(const double *x, const double *c) {
  double s = 0;
  for (int64_t j = 0; j < N; j++) {
    double run = 0;
    for (int64_t i = 0; i < M; i++)
      s += (run += X(x, i, j)) * c[i * N + j];
  }
  return s;
}
static double r_concat(const double *x, const double *c) {
  double s = 0;
  for (int64_t i = 0; i < M * N; i++)
    s += (x[i] + exp(x[i]) + sin(x[i])) * c[i] + x[i] * c[i] * x[i] * c[i] + x[i] * x[i];
  return s;
}
static double r_stack(const double *x, const double *c) {
  double s = 0, a = 0, b = 0;
  for (int64_t i = 0; i < M * N; i++) {
    s += x[i] * x[i] * c[i] + c[i] * x[i] * c[i] * x[i] * c[i];
    a += x[i];
    b += x[i] * x[i];
  }
  return s + a * b;
}

struct row {
  const char *name;
  fn_t f32, f64;
  gr_t g32, g64;
  char c; /* the weight's shape: 'm', 'n' or 'x' (x's) */
  double lo, hi;
  double (*ref)(const double *, const double *);
};
#define ROW(n, c, lo, hi) \
  {#n, (fn_t)v3_##n, (fn_t)v364_##n, (gr_t)v3_##n##_grad, (gr_t)v364_##n##_grad, c, lo, hi, r_##n}
static const struct row rows[] = {
    ROW(lse_a1, 'm', -3, 3),      ROW(lse_a0, 'n', -3, 3),         ROW(lse_all, 'x', -3, 3),
    ROW(softmax, 'x', -3, 3),     ROW(softmax_a0, 'x', -3, 3),     ROW(log_softmax, 'x', -3, 3),
    ROW(log_softmax_a0, 'x', -3, 3), ROW(clip, 'x', -1, 1),        ROW(prod_a1, 'm', -1.5, 1.5),
    ROW(prod_a0, 'n', -1.5, 1.5), ROW(prod_all, 'x', 0.5, 1.2),    ROW(cumsum, 'x', -2, 2),
    ROW(cumsum_a0, 'x', -2, 2),   ROW(concat, 'x', -1, 1),         ROW(stack, 'x', -1, 1),
};

static sg_tensor gx, gc; /* f64 inputs for the finite differences */
static fn_t gf;
static double loss64(void) {
  sg_tensor out = sgt_scalar(SG_F64);
  gf(&gx, &gc, &out);
  double v = sgt_get(&out, 0);
  free(out.data);
  return v;
}

static void run(const struct row *r) {
  int64_t xs[2] = {M, N}, cs[2] = {r->c == 'n' ? N : M, N};
  int cr = r->c == 'x' ? 2 : 1;
  sg_tensor x64 = sgt_tensor(SG_F64, 2, xs), c64 = sgt_tensor(SG_F64, cr, r->c == 'n' ? cs : xs);
  sgt_fill(&x64, r->lo, r->hi);
  sgt_fill(&c64, -1, 1);
  if (r->c == 'x' && strstr(r->name, "prod_all")) /* keep the product near 1 */
    sgt_fill(&c64, 0, 0.2);
  sg_tensor x32 = sgt_tensor(SG_F32, 2, xs), c32 = sgt_tensor(SG_F32, cr, c64.shape);
  /* the f64 build gets the f32 inputs' values, so that both compute the same function */
  for (int64_t i = 0; i < sgt_numel(&x64); i++)
    sgt_set(&x32, i, sgt_get(&x64, i)), sgt_set(&x64, i, sgt_get(&x32, i));
  for (int64_t i = 0; i < sgt_numel(&c64); i++)
    sgt_set(&c32, i, sgt_get(&c64, i)), sgt_set(&c64, i, sgt_get(&c32, i));
  double want = r->ref(x64.data, c64.data);
  sg_tensor o32 = sgt_scalar(SG_F32), o64 = sgt_scalar(SG_F64), v32 = sgt_scalar(SG_F32),
            v64 = sgt_scalar(SG_F64);
  sg_tensor d32 = sgt_tensor(SG_F32, 2, xs), d64 = sgt_tensor(SG_F64, 2, xs);
  CHECK_EQ_INT(r->f32(&x32, &c32, &o32), SG_OK);
  CHECK_EQ_INT(r->f64(&x64, &c64, &o64), SG_OK);
  CHECK_EQ_INT(r->g32(&x32, &c32, &v32, &d32), SG_OK);
  CHECK_EQ_INT(r->g64(&x64, &c64, &v64, &d64), SG_OK);
  double scale = fmax(1, fabs(want));
  printf("%s: f32 %.9g f64 %.17g want %.17g\n", r->name, sgt_get(&o32, 0), sgt_get(&o64, 0), want);
  CHECK_CLOSE(sgt_get(&o32, 0) / scale, want / scale, 2e-5);
  CHECK_CLOSE(sgt_get(&o64, 0) / scale, want / scale, 1e-12);
  CHECK_CLOSE(sgt_get(&v32, 0) / scale, sgt_get(&o32, 0) / scale, 1e-6);
  CHECK_CLOSE(sgt_get(&v64, 0) / scale, sgt_get(&o64, 0) / scale, 1e-14);
  double *fd = malloc(sizeof(double) * (size_t)(M * N));
  gx = x64, gc = c64, gf = r->f64;
  sgt_fd(loss64, &gx, fd);
  CHECK_GRAD(&d32, fd, 2e-3);
  CHECK_GRAD(&d64, fd, 1e-7);
  printf("ok: v3_%s\n", r->name);
  free(fd);
  free(x64.data), free(c64.data), free(x32.data), free(c32.data);
  free(o32.data), free(o64.data), free(v32.data), free(v64.data), free(d32.data), free(d64.data);
}

int main(int argc, char **argv) {
  M = sgt_arg(argc, argv, 1, 3);
  N = sgt_arg(argc, argv, 2, 4);
  for (size_t k = 0; k < sizeof rows / sizeof rows[0]; k++)
    run(&rows[k]);
  return sgt_finish();
}
