/* rtcheck.h: the check macros of the runtime's unit tests (test_runtime.c,
 * test_pool.c). A failed check prints FAIL with the file, line and a
 * message and the test goes on; at the end, the test prints nchecks and
 * nfails and exits with nfails != 0. rt_same compares a result with its
 * reference under the zero rule's specials (NaN, infinities). */
#ifndef RTCHECK_H
#define RTCHECK_H

#include <math.h>
#include <stdio.h>

static int nchecks, nfails;

#define CHECK(cond, ...)                                                       \
  do {                                                                         \
    nchecks++;                                                                 \
    if (!(cond)) {                                                             \
      nfails++;                                                                \
      printf("FAIL %s:%d: ", __FILE__, __LINE__);                              \
      printf(__VA_ARGS__);                                                     \
      printf("\n");                                                            \
    }                                                                          \
  } while (0)

#define CHECK_INT(got, want)                                                   \
  do {                                                                         \
    long long g_ = (got), w_ = (want);                                         \
    CHECK(g_ == w_, "%s = %lld, expected %lld", #got, g_, w_);                 \
  } while (0)

/* got matches want: both NaN, the same infinity, or within tol relative
 * (plus tol absolute near zero). */
static inline int rt_same(double got, double want, double tol) {
  if (isnan(want) || isnan(got))
    return isnan(want) && isnan(got);
  if (isinf(want) || isinf(got))
    return got == want;
  return fabs(got - want) <= tol * (1 + fabs(want));
}

#endif
