/* The tape of a loop being differentiated: the carried values entering
 * each iteration (or what the iteration overwrote), appended while the
 * loop runs and read back, last first, by its adjoint
 * (codegen/cg_region.c). A tape keeps its memory between runs of the same
 * loop within one call (an inner loop runs once per outer iteration), and
 * the generated function hands it back before returning: to the thread's
 * workspace, so that a repeated call takes no fresh page (glibc unmaps a
 * large block on free).
 * Growth doubles, so a while loop whose trip count is unknown costs
 * amortized O(1) per iteration. Growth counts against the allocation
 * failure hook (sg_rt_fail_alloc_after), so tests can make a tape run out of
 * memory. */
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"
#include "sgrt.h"

/* Bytes this thread holds in tapes and checkpoints, and the most it held
 * since the last reset: what the --ad-memory tests measure. */
static _Thread_local int64_t saved_now, saved_peak;

void sg_rt_saved_bytes_add(int64_t delta) {
  saved_now += delta;
  if (saved_now > saved_peak)
    saved_peak = saved_now;
}

int64_t sg_rt_saved_bytes_peak(int reset) {
  int64_t p = saved_peak;
  if (reset)
    saved_peak = saved_now;
  return p;
}

void *sg_rt_tape_push(sg_rt_tape *t, int64_t bytes) {
  if (t->used > INT64_MAX / 4 - bytes)
    return NULL;
  if (!t->data) { /* the first push of a call: a request, served from the cache if it can */
    if (sg_rt_injected_failure())
      return NULL;
    t->data = sg_rt_ws_take_tape(&t->cap);
    sg_rt_saved_bytes_add(t->cap);
  }
  if (t->used + bytes > t->cap) {
    int64_t cap = t->cap ? t->cap : 4096;
    while (cap < t->used + bytes)
      cap *= 2;
    char *data = sg_rt_injected_failure() ? NULL : realloc(t->data, (size_t)cap);
    if (!data)
      return NULL;
    sg_rt_saved_bytes_add(cap - t->cap);
    t->data = data;
    t->cap = cap;
  }
  void *slot = t->data + t->used;
  t->used += bytes;
  return slot;
}

void sg_rt_tape_free(sg_rt_tape *t) {
  sg_rt_saved_bytes_add(-t->cap);
  sg_rt_ws_keep_tape(t->data, t->cap);
  memset(t, 0, sizeof *t);
}

int sg_rt_tape_failed(const char *func, const char *where, const sg_rt_tape *t) {
  sg_rt_set_error("%s: %s: cannot allocate memory for the loop's tape (it holds %lld bytes)",
                  func, where, (long long)t->used);
  return SG_ERR_ALLOC;
}
