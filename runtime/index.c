/* index.c: the messages of failures found while a generated function runs
 * (spec section 9): an integer division by zero, an index out of range.
 * The generated code calls these on its cold path and then returns
 * SG_ERR_INDEX without having written any output. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "rt_internal.h"
#include "sgrt.h"

int sg_rt_div_zero(const char *func, const char *where) {
  sg_rt_set_error("%s: %s: integer division by zero", func, where);
  return SG_ERR_INDEX;
}

int sg_rt_bad_index(const char *func, const char *where, int64_t index, int64_t size) {
  sg_rt_set_error("%s: %s: index %" PRId64 " is out of range for an axis of size %" PRId64, func,
                  where, index, size);
  return SG_ERR_INDEX;
}

int sg_rt_repeated_index(const char *func, const char *where, int64_t index, int64_t size) {
  sg_rt_set_error("%s: %s: index %" PRId64 " (of an axis of size %" PRId64 ") is assigned twice; "
                  "with a tensor index only += and -= may repeat positions",
                  func, where, index, size);
  return SG_ERR_INDEX;
}

/* Positions are >= 0, so -1 marks an empty entry; the capacity, a power of
 * two of at least 2m entries, keeps the probes short. */
int64_t sg_rt_first_repeat(const int64_t *pos, int64_t m, int64_t *table) {
  if (m < 2)
    return -1;
  int64_t cap = 1;
  while (cap < 2 * m)
    cap *= 2;
  memset(table, 0xff, (size_t)cap * sizeof *table);
  for (int64_t k = 0; k < m; k++) {
    uint64_t h = (uint64_t)pos[k] * 0x9E3779B97F4A7C15ull;
    for (int64_t j = (int64_t)(h >> 32) & (cap - 1);; j = (j + 1) & (cap - 1)) {
      if (table[j] == pos[k])
        return pos[k];
      if (table[j] < 0) {
        table[j] = pos[k];
        break;
      }
    }
  }
  return -1;
}

int sg_rt_empty_axis(const char *func, const char *where) {
  sg_rt_set_error("%s: %s: argmax/argmin along an axis of size 0 has no position", func, where);
  return SG_ERR_INDEX;
}

int sg_rt_negative_size(const char *func, const char *size, int64_t value) {
  sg_rt_set_error("%s: size %s is %" PRId64 " for these arguments; sizes cannot be negative",
                  func, size, value);
  return SG_ERR_SHAPE;
}

int sg_rt_size_mismatch(const char *func, const char *arg, const sg_tensor *t,
                        const char *expected, const char *size, int64_t value) {
  char shape[256];
  size_t n = 0;
  n += (size_t)snprintf(shape + n, sizeof shape - n, "[");
  for (int32_t d = 0; d < t->rank && n < sizeof shape; d++)
    n += (size_t)snprintf(shape + n, sizeof shape - n, "%s%" PRId64, d ? ", " : "", t->shape[d]);
  if (n < sizeof shape)
    snprintf(shape + n, sizeof shape - n, "]");
  sg_rt_set_error("%s: argument '%s' has shape %s, expected %s with %s = %" PRId64, func, arg,
                  shape, expected, size, value);
  return SG_ERR_SHAPE;
}
