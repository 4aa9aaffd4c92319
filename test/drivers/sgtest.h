/* Helpers for the end-to-end tests: tensors, deterministic random data,
 * checks that print both values with the file and line, and central finite
 * differences for gradient checks.
 *
 * Gradient checks compare the generated gradient with central differences of
 * an f64 build of the same program (the test compiles it with f32 -> f64):
 * the f32 gradient must agree to 1e-3, the f64 gradient to 1e-7, in relative
 * max-norm. */
#ifndef SGTEST_H
#define SGTEST_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sg_runtime.h>

static int sgt_failures;

static inline sg_tensor sgt_tensor(int dtype, int rank, const int64_t *shape) {
  sg_tensor t;
  memset(&t, 0, sizeof t);
  t.dtype = dtype;
  t.rank = rank;
  int64_t n = 1;
  for (int k = 0; k < rank; k++) {
    t.shape[k] = shape[k];
    n *= shape[k];
  }
  t.data = calloc((size_t)(n ? n : 1), dtype == SG_F64 ? 8 : 4);
  return t;
}
#define SGT_TENSOR(dtype, ...)                                                          \
  sgt_tensor(dtype, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),         \
             (int64_t[]){__VA_ARGS__})
static inline sg_tensor sgt_scalar(int dtype) { return sgt_tensor(dtype, 0, NULL); }

static inline int64_t sgt_numel(const sg_tensor *t) {
  int64_t n = 1;
  for (int k = 0; k < t->rank; k++)
    n *= t->shape[k];
  return n;
}
static inline double sgt_get(const sg_tensor *t, int64_t i) {
  if (t->dtype == SG_I32)
    return ((int32_t *)t->data)[i];
  return t->dtype == SG_F64 ? ((double *)t->data)[i] : ((float *)t->data)[i];
}
static inline void sgt_set(sg_tensor *t, int64_t i, double v) {
  if (t->dtype == SG_F64)
    ((double *)t->data)[i] = v;
  else if (t->dtype == SG_I32)
    ((int32_t *)t->data)[i] = (int32_t)v;
  else
    ((float *)t->data)[i] = (float)v;
}

/* xorshift: the same numbers on every machine */
static uint64_t sgt_rng = 88172645463325252ull;
static inline double sgt_uniform(double lo, double hi) {
  sgt_rng ^= sgt_rng << 13;
  sgt_rng ^= sgt_rng >> 7;
  sgt_rng ^= sgt_rng << 17;
  return lo + (hi - lo) * (double)(sgt_rng >> 11) / 9007199254740992.0;
}
static inline void sgt_fill(sg_tensor *t, double lo, double hi) {
  for (int64_t i = 0; i < sgt_numel(t); i++)
    sgt_set(t, i, sgt_uniform(lo, hi));
}
/* The same values into a tensor of another dtype. */
static inline void sgt_copy(sg_tensor *dst, const sg_tensor *src) {
  for (int64_t i = 0; i < sgt_numel(src); i++)
    sgt_set(dst, i, sgt_get(src, i));
}

#define CHECK(cond)                                                                     \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);                            \
      sgt_failures++;                                                                   \
    }                                                                                   \
  } while (0)

#define CHECK_EQ_INT(got, want)                                                         \
  do {                                                                                  \
    long long g_ = (got), w_ = (want);                                                  \
    if (g_ != w_) {                                                                     \
      printf("FAIL %s:%d: %s is %lld, expected %lld\n", __FILE__, __LINE__, #got, g_,   \
             w_);                                                                       \
      sgt_failures++;                                                                   \
    }                                                                                   \
  } while (0)

#define CHECK_STR(got, want)                                                            \
  do {                                                                                  \
    const char *g_ = (got), *w_ = (want);                                               \
    if (strcmp(g_, w_) != 0) {                                                          \
      printf("FAIL %s:%d: %s is\n  \"%s\"\nexpected\n  \"%s\"\n", __FILE__, __LINE__,    \
             #got, g_, w_);                                                             \
      sgt_failures++;                                                                   \
    }                                                                                   \
  } while (0)

/* |got - want| <= tol * max(1, |want|); NaNs and infinities must match. */
#define CHECK_CLOSE(got, want, tol) sgt_check_close((got), (want), (tol), #got, __FILE__, __LINE__)
static inline void sgt_check_close(double got, double want, double tol, const char *what,
                                   const char *file, int line) {
  bool ok;
  if (isnan(want) || isnan(got))
    ok = isnan(want) && isnan(got);
  else if (isinf(want) || isinf(got))
    ok = got == want;
  else
    ok = fabs(got - want) <= tol * fmax(1.0, fabs(want));
  if (!ok) {
    printf("FAIL %s:%d: %s = %.17g, expected %.17g (tol %g)\n", file, line, what, got, want,
           tol);
    sgt_failures++;
  }
}

/* Exact equality, bit for bit except that -0 == +0. */
#define CHECK_EXACT(got, want)                                                          \
  do {                                                                                  \
    double g_ = (got), w_ = (want);                                                     \
    if (!(g_ == w_)) {                                                                  \
      printf("FAIL %s:%d: %s = %.17g, expected exactly %.17g\n", __FILE__, __LINE__,     \
             #got, g_, w_);                                                             \
      sgt_failures++;                                                                   \
    }                                                                                   \
  } while (0)

/* Central differences of `loss` (which reads the f64 tensor p, among
 * others) with respect to every element of p, into fd[]. */
static inline void sgt_fd(double (*loss)(void), sg_tensor *p, double *fd) {
  for (int64_t i = 0; i < sgt_numel(p); i++) {
    double x = sgt_get(p, i), h = 1e-5 * fmax(1.0, fabs(x));
    sgt_set(p, i, x + h);
    double up = loss();
    sgt_set(p, i, x - h);
    double down = loss();
    sgt_set(p, i, x);
    fd[i] = (up - down) / (2 * h);
  }
}

/* max|g - fd| / max|fd| <= tol, with the worst element printed on failure. */
#define CHECK_GRAD(g, fd, tol) sgt_check_grad((g), (fd), (tol), #g, __FILE__, __LINE__)
static inline void sgt_check_grad(const sg_tensor *g, const double *fd, double tol,
                                  const char *what, const char *file, int line) {
  double err = 0, scale = 0;
  int64_t worst = 0;
  for (int64_t i = 0; i < sgt_numel(g); i++) {
    double e = fabs(sgt_get(g, i) - fd[i]);
    if (!(e <= err)) {
      err = e;
      worst = i;
    }
    scale = fmax(scale, fabs(fd[i]));
  }
  double rel = err / (scale > 0 ? scale : 1);
  if (!(rel <= tol)) {
    printf("FAIL %s:%d: %s differs from finite differences: relative error %.3g > %g "
           "(element %lld: %.10g vs %.10g)\n",
           file, line, what, rel, tol, (long long)worst, sgt_get(g, worst), fd[worst]);
    sgt_failures++;
  } else {
    printf("ok: %s matches finite differences (relative error %.2g)\n", what, rel);
  }
}

/* Added for the model tests (straight_through, em_gmm, mlp,
 * contrastive_divergence, adversarial). */

/* Like CHECK_GRAD, against a reference that is not plain finite differences
 * of the compiled program (a hand-derived formula, or finite differences of
 * a C re-implementation with the stop_gradient'ed part held fixed); `ref`
 * names it in the "ok:" line. */
#define CHECK_GRAD_VS(g, want, ref, tol)                                                \
  sgt_check_grad_vs((g), (want), (ref), (tol), #g, __FILE__, __LINE__)
static inline void sgt_check_grad_vs(const sg_tensor *g, const double *want, const char *ref,
                                     double tol, const char *what, const char *file,
                                     int line) {
  double err = 0, scale = 0;
  int64_t worst = 0;
  for (int64_t i = 0; i < sgt_numel(g); i++) {
    double e = fabs(sgt_get(g, i) - want[i]);
    if (!(e <= err)) {
      err = e;
      worst = i;
    }
    scale = fmax(scale, fabs(want[i]));
  }
  double rel = err / (scale > 0 ? scale : 1);
  if (!(rel <= tol)) {
    printf("FAIL %s:%d: %s differs from %s: relative error %.3g > %g "
           "(element %lld: %.10g vs %.10g)\n",
           file, line, what, ref, rel, tol, (long long)worst, sgt_get(g, worst), want[worst]);
    sgt_failures++;
  } else {
    printf("ok: %s matches %s (relative error %.2g)\n", what, ref, rel);
  }
}

/* a (computed on one thread) and b (on two) hold the same bits: results
 * must not depend on the thread count. */
#define CHECK_SAME_BITS(a, b, what) sgt_check_same_bits((a), (b), (what), __FILE__, __LINE__)
static inline void sgt_check_same_bits(const sg_tensor *a, const sg_tensor *b, const char *what,
                                       const char *file, int line) {
  size_t bytes = (size_t)sgt_numel(a) * (a->dtype == SG_F64 ? 8 : 4);
  if (a->dtype != b->dtype || sgt_numel(a) != sgt_numel(b) || memcmp(a->data, b->data, bytes)) {
    printf("FAIL %s:%d: %s differs between 1 and 2 threads\n", file, line, what);
    sgt_failures++;
  } else {
    printf("ok: %s has the same bits on 1 and 2 threads\n", what);
  }
}

/* `got` contains `want` as a substring. */
#define CHECK_CONTAINS(got, want)                                                       \
  do {                                                                                  \
    const char *g_ = (got), *w_ = (want);                                               \
    if (!strstr(g_, w_)) {                                                              \
      printf("FAIL %s:%d: %s is\n  \"%s\"\nwhich does not contain\n  \"%s\"\n",         \
             __FILE__, __LINE__, #got, g_, w_);                                         \
      sgt_failures++;                                                                   \
    }                                                                                   \
  } while (0)

/* The size argument argv[i], or `def` when absent. */
static inline int64_t sgt_arg(int argc, char **argv, int i, int64_t def) {
  return argc > i ? atoll(argv[i]) : def;
}

static inline int sgt_finish(void) {
  if (sgt_failures) {
    printf("%d check(s) failed\n", sgt_failures);
    return 1;
  }
  printf("all checks passed\n");
  return 0;
}

#endif
