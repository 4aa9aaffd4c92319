/* alloc.c: aligned allocation for the runtime, plus the failure-injection
 * hook.
 *
 * Every buffer is 64-byte aligned (one cache line, one AVX-512 vector).
 * Generated functions take their temporaries from the per-thread workspace
 * (workspace.c), which allocates here; the hook lets tests make the n-th
 * request for temporaries fail and check that the function reports
 * SG_ERR_ALLOC, writes nothing and leaks nothing. The hook's counter
 * is the only mutable global in the runtime; it is atomic because generated
 * functions allocate from several threads at once. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "rt_internal.h"
#include "sgrt.h"

/* Allocations left before the one that fails; -1: never fail. */
static atomic_int fail_countdown = -1;

void sg_rt_fail_alloc_after(int n) {
  atomic_store(&fail_countdown, n < 0 ? -1 : n);
}

/* Counts this call against the hook; true if it is the one that fails. The
 * compare-exchange makes exactly one of several racing callers see 0. */
int sg_rt_injected_failure(void) {
  int v = atomic_load(&fail_countdown);
  while (v >= 0) {
    if (atomic_compare_exchange_weak(&fail_countdown, &v, v - 1))
      return v == 0;
  }
  return 0;
}

void *sg_rt_alloc(int64_t bytes) {
  if (sg_rt_injected_failure())
    return NULL;
  return sg_rt_alloc_raw(bytes);
}

void *sg_rt_alloc_raw(int64_t bytes) {
  /* Sizes come from shape arithmetic; anything this large is a bug or an
   * overflow upstream, and must not wrap when rounded up below. */
  if (bytes < 0 || (uint64_t)bytes > (uint64_t)INT64_MAX / 2 ||
      (uint64_t)bytes > SIZE_MAX - 64)
    return NULL;
  /* Round up to whole cache lines (and at least one) so that size 0 still
   * yields a distinct pointer the caller can free, and vector loops may
   * touch the rest of the last line. */
  size_t size = ((size_t)bytes + 63) & ~(size_t)63;
  if (size == 0)
    size = 64;
  void *p = NULL;
  if (posix_memalign(&p, 64, size) != 0)
    return NULL;
  return p;
}

void sg_rt_free(void *p) { free(p); }

int sg_rt_alloc_failed(const char *func, int64_t bytes) {
  sg_rt_set_error("%s: cannot allocate %lld bytes for temporaries", func,
                  (long long)bytes);
  return SG_ERR_ALLOC;
}

int sg_rt_too_large(const char *func) {
  sg_rt_set_error("%s: with these argument sizes an intermediate tensor would "
                  "have 2^62 bytes or more",
                  func);
  return SG_ERR_ALLOC;
}
