/* The tape of a loop being differentiated: the carried values entering
 * each iteration, appended while the loop runs and read back, last first,
 * by its adjoint (codegen/cg_region.c). A tape keeps its memory between
 * runs of the same loop within one call (an inner loop runs once per outer
 * iteration), and the generated function frees it before returning.
 * Growth doubles, so a while loop whose trip count is unknown costs
 * amortized O(1) per iteration. */
#include <stdlib.h>
#include <string.h>

#include "sgrt.h"

void *sg_rt_tape_push(sg_rt_tape *t, int64_t bytes) {
  if (t->used > INT64_MAX / 4 - bytes)
    return NULL;
  if (t->used + bytes > t->cap) {
    int64_t cap = t->cap ? t->cap : 4096;
    while (cap < t->used + bytes)
      cap *= 2;
    char *data = realloc(t->data, (size_t)cap);
    if (!data)
      return NULL;
    t->data = data;
    t->cap = cap;
  }
  void *slot = t->data + t->used;
  t->used += bytes;
  return slot;
}

void sg_rt_tape_free(sg_rt_tape *t) {
  free(t->data);
  memset(t, 0, sizeof *t);
}
