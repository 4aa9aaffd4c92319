/* error.c: the per-thread error message behind sg_last_error().
 *
 * Generated functions run concurrently on many threads, so the message lives
 * in thread-local storage: a failure on one thread never clobbers what
 * another thread is about to read. The buffer is static (no allocation), so
 * reporting an allocation failure can itself never fail; over-long messages
 * are truncated rather than overflowing. */
#include <stdarg.h>
#include <stdio.h>

#include "rt_internal.h"
#include "sg_runtime.h"

/* 1 KiB holds the longest message sg_rt_check builds for any sensible
 * function (two rank-8 shapes plus symbol bindings). */
static _Thread_local char last_error[1024];

const char *sg_last_error(void) { return last_error; }

void sg_rt_set_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(last_error, sizeof last_error, fmt, ap);
  va_end(ap);
}
