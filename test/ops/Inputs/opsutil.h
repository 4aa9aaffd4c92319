/* Small helpers for the drivers of test/ops on top of sgtest.h: tensors from
 * literal values, element-by-element exact checks, and checks in units in
 * the last place of the tensor's dtype. Tensors made by these helpers are
 * freed together by sgo_free_all(). */
#ifndef OPSUTIL_H
#define OPSUTIL_H

#include "sgtest.h"

/* Every tensor made here is remembered and freed by sgo_free_all(). */
static void *sgo_arena[4096];
static int sgo_narena;
static inline sg_tensor sgo_new(int dt, int rank, const int64_t *shape) {
  sg_tensor t = sgt_tensor(dt, rank, shape);
  if (sgo_narena < 4096)
    sgo_arena[sgo_narena++] = t.data;
  else
    abort();
  return t;
}
static inline void sgo_free_all(void) {
  while (sgo_narena)
    free(sgo_arena[--sgo_narena]);
}

/* A tensor of dtype dt and the given shape, filled from v (row-major). */
static inline sg_tensor sgo_from(int dt, int rank, const int64_t *shape, const double *v) {
  sg_tensor t = sgo_new(dt, rank, shape);
  for (int64_t i = 0; i < sgt_numel(&t); i++)
    sgt_set(&t, i, v[i]);
  return t;
}
#define SGO_COUNT(...) ((int64_t)(sizeof((double[]){__VA_ARGS__}) / sizeof(double)))
/* VEC(SG_F32, 1, 2, 3): rank 1; MAT(SG_F64, 2, 3, ...): rank 2; SCALAR(dt, v) */
#define VEC(dt, ...) sgo_from(dt, 1, (int64_t[]){SGO_COUNT(__VA_ARGS__)}, (double[]){__VA_ARGS__})
#define MAT(dt, m, n, ...) sgo_from(dt, 2, (int64_t[]){m, n}, (double[]){__VA_ARGS__})
#define SCALAR(dt, v) sgo_from(dt, 0, NULL, (double[]){v})
/* A tensor shaped like t, of dtype dt, all zero. */
static inline sg_tensor sgo_like(int dt, const sg_tensor *t) {
  return sgo_new(dt, t->rank, t->shape);
}

/* Every element of t exactly equal to the listed values (-0 == +0). */
#define CHECK_ALL_EXACT(t, ...)                                                         \
  sgo_all_exact((t), (double[]){__VA_ARGS__}, SGO_COUNT(__VA_ARGS__), #t, __FILE__, __LINE__)
static inline void sgo_all_exact(const sg_tensor *t, const double *want, int64_t n,
                                 const char *what, const char *file, int line) {
  if (sgt_numel(t) != n) {
    printf("FAIL %s:%d: %s has %lld elements, the check lists %lld\n", file, line, what,
           (long long)sgt_numel(t), (long long)n);
    sgt_failures++;
    return;
  }
  for (int64_t i = 0; i < n; i++)
    if (!(sgt_get(t, i) == want[i])) {
      printf("FAIL %s:%d: %s[%lld] = %.17g, expected exactly %.17g\n", file, line, what,
             (long long)i, sgt_get(t, i), want[i]);
      sgt_failures++;
    }
}

/* The distance from |v| to the next representable number of dtype dt. */
static inline double sgo_ulp(int dt, double v) {
  if (dt == SG_F32) {
    float a = fabsf((float)v);
    return (double)nextafterf(a, INFINITY) - (double)a;
  }
  return nextafter(fabs(v), INFINITY) - fabs(v);
}
/* |got - want| <= k ulps of want in the dtype of t (want computed in
 * double from the same inputs). */
#define CHECK_ULPS(t, i, want, k) sgo_check_ulps((t), (i), (want), (k), #t, __FILE__, __LINE__)
static inline void sgo_check_ulps(const sg_tensor *t, int64_t i, double want, double k,
                                  const char *what, const char *file, int line) {
  double got = sgt_get(t, i), u = sgo_ulp(t->dtype, want);
  if (!(fabs(got - want) <= k * u)) {
    printf("FAIL %s:%d: %s[%lld] = %.17g, expected %.17g within %g ulp (off by %.3g ulp)\n",
           file, line, what, (long long)i, got, want, k, fabs(got - want) / u);
    sgt_failures++;
  }
}
/* |got - want| <= tol * |want| (relative, also for tiny want). */
#define CHECK_REL(got, want, tol) sgo_check_rel((got), (want), (tol), #got, __FILE__, __LINE__)
static inline void sgo_check_rel(double got, double want, double tol, const char *what,
                                 const char *file, int line) {
  if (!(fabs(got - want) <= tol * fabs(want))) {
    printf("FAIL %s:%d: %s = %.17g, expected %.17g (relative tol %g)\n", file, line, what,
           got, want, tol);
    sgt_failures++;
  }
}
/* lo <= got <= hi (so not NaN) */
#define CHECK_IN(got, lo, hi)                                                           \
  do {                                                                                  \
    double g_ = (got);                                                                  \
    if (!(g_ >= (lo) && g_ <= (hi))) {                                                  \
      printf("FAIL %s:%d: %s = %.17g, expected in [%g, %g]\n", __FILE__, __LINE__, #got, \
             g_, (double)(lo), (double)(hi));                                           \
      sgt_failures++;                                                                   \
    }                                                                                   \
  } while (0)
/* No NaN or infinity anywhere in t. */
#define CHECK_FINITE(t)                                                                 \
  do {                                                                                  \
    for (int64_t i_ = 0; i_ < sgt_numel(t); i_++)                                       \
      if (!isfinite(sgt_get((t), i_))) {                                                \
        printf("FAIL %s:%d: %s[%lld] = %g, expected finite\n", __FILE__, __LINE__, #t,  \
               (long long)i_, sgt_get((t), i_));                                        \
        sgt_failures++;                                                                 \
      }                                                                                 \
  } while (0)

#endif
