/* rtcheck.h: the check macros of the runtime's unit tests (test_runtime.c,
 * test_pool.c). A failed check prints FAIL with the file, line and a
 * message and the test goes on; at the end, the test prints nchecks and
 * nfails and exits with nfails != 0. */
#ifndef RTCHECK_H
#define RTCHECK_H

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

#endif
