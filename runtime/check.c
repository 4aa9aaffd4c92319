/* check.c: sg_rt_check, the argument validation every generated function
 * runs before touching any data (spec section 9).
 *
 * The signature (sg_rt_sig) is a constant table emitted by codegen; this file
 * walks it against the caller's descriptors in argument order, binds each
 * symbolic size at its first use, and only once every shape is known checks
 * that no output overlaps another argument. It never allocates: the message
 * is built in a stack buffer, the symbol values live in the caller's syms[]
 * (-1 while unbound, which no valid dimension can be), and the argument that
 * bound a symbol is recovered by rescanning the signature, which is cheap and
 * only happens on the failure path. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "rt_internal.h"
#include "sgrt.h"

/* A bounded string builder: truncates instead of overflowing. */
typedef struct msgbuf {
  char s[1024];
  size_t len;
} msgbuf;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void put(msgbuf *mb, const char *fmt, ...) {
  if (mb->len >= sizeof mb->s - 1)
    return;
  va_list ap;
  va_start(ap, fmt);
  int r = vsnprintf(mb->s + mb->len, sizeof mb->s - mb->len, fmt, ap);
  va_end(ap);
  if (r > 0)
    mb->len += (size_t)r;
  if (mb->len > sizeof mb->s - 1)
    mb->len = sizeof mb->s - 1;
}

static void put_shape(msgbuf *mb, const sg_tensor *t) {
  put(mb, "[");
  for (int32_t d = 0; d < t->rank; d++)
    put(mb, "%s%" PRId64, d ? ", " : "", t->shape[d]);
  put(mb, "]");
}

static void put_expected(msgbuf *mb, const sg_rt_sig *sig, const sg_rt_arg *a) {
  put(mb, "[");
  for (int32_t d = 0; d < a->rank; d++) {
    int64_t e = a->dims[d];
    if (e >= 0)
      put(mb, "%s%" PRId64, d ? ", " : "", e);
    else
      put(mb, "%s%s", d ? ", " : "", sig->sym_names[-1 - e]);
  }
  put(mb, "]");
}

static const char *dtype_name(int32_t dtype) {
  return dtype == SG_F32 ? "f32" : dtype == SG_F64 ? "f64" : dtype == SG_I32 ? "i32" : NULL;
}

static int64_t elem_size(int32_t dtype) { return dtype == SG_F64 ? 8 : 4; /* f32, i32 */ }

/* Does symbol s occur among the first n dimensions? */
static int uses_sym(const int64_t *dims, int32_t n, int64_t s) {
  for (int32_t d = 0; d < n; d++)
    if (dims[d] == -1 - s)
      return 1;
  return 0;
}

/* The first argument that uses symbol s is the one that bound it. */
static int32_t binder_of(const sg_rt_sig *sig, int64_t s) {
  for (int32_t i = 0; i < sig->nargs; i++)
    if (uses_sym(sig->args[i].dims, sig->args[i].rank, s))
      return i;
  return -1;
}

/* Number of elements; the shape has already been checked for negative
 * dimensions and overflow. */
static int64_t numel(const sg_tensor *t) {
  int64_t n = 1;
  for (int32_t d = 0; d < t->rank; d++)
    n *= t->shape[d];
  return n;
}

static int fail(const sg_rt_sig *sig, int code, const char *what,
                const char *name, msgbuf *mb) {
  sg_rt_set_error("%s: %s '%s' %s", sig->func, what, name, mb->s);
  return code;
}

/* Argument i (descriptor t) differs from its declared shape at dimension
 * bad. Lists the symbols that explain the expected shape: those bound by an
 * earlier argument, and the mismatching one even if this argument bound it
 * at an earlier dimension. Consecutive symbols bound by the same argument
 * share one "(bound by ...)", as in "with n = 3, d = 4 (bound by 'w')". */
static int shape_mismatch(const sg_rt_sig *sig, int32_t i, const sg_tensor *t,
                          int32_t bad, const int64_t *syms) {
  const sg_rt_arg *a = &sig->args[i];
  msgbuf mb; /* not zeroed: a 1 KiB memset per argument would be most of
               * the cost of a small call */
  mb.len = 0;
  mb.s[0] = 0;
  put(&mb, "has shape ");
  put_shape(&mb, t);
  put(&mb, ", expected ");
  put_expected(&mb, sig, a);
  int64_t bad_sym = a->dims[bad] < 0 ? -1 - a->dims[bad] : -1;
  int32_t pending = -1; /* binder of the symbols printed but not attributed */
  for (int32_t d = 0; d < a->rank; d++) {
    if (a->dims[d] >= 0)
      continue;
    int64_t s = -1 - a->dims[d];
    if (uses_sym(a->dims, d, s))
      continue; /* already listed */
    if (syms[s] < 0)
      continue;
    int32_t by = binder_of(sig, s);
    if (by == i && s != bad_sym)
      continue;
    if (pending >= 0 && pending != by)
      put(&mb, " (bound by '%s')", sig->args[pending].name);
    put(&mb, "%s%s = %" PRId64, pending < 0 ? " with " : ", ",
        sig->sym_names[s], syms[s]);
    pending = by;
  }
  if (pending >= 0)
    put(&mb, " (bound by '%s')", sig->args[pending].name);
  return fail(sig, SG_ERR_SHAPE, "argument", a->name, &mb);
}

/* Checks argument i; on success *bytes is its size in bytes. */
static int check_one(const sg_rt_sig *sig, int32_t i, const sg_tensor *t,
                     int64_t *syms, int64_t *bytes) {
  const sg_rt_arg *a = &sig->args[i];
  msgbuf mb; /* not zeroed: a 1 KiB memset per argument would be most of
               * the cost of a small call */
  mb.len = 0;
  mb.s[0] = 0;
  if (!t) {
    put(&mb, "is NULL");
    return fail(sig, SG_ERR_NULL, "argument", a->name, &mb);
  }
  int rank_ok = t->rank >= 0 && t->rank <= SG_MAX_RANK;
  if (!t->data && rank_ok) {
    /* Data may be NULL only when there is nothing to point at; a negative
     * dimension is reported below as such. */
    int empty = 0;
    for (int32_t d = 0; d < t->rank; d++)
      if (t->shape[d] <= 0)
        empty = 1;
    if (!empty) {
      put(&mb, "has NULL data");
      return fail(sig, SG_ERR_NULL, "argument", a->name, &mb);
    }
  }
  if (t->dtype != a->dtype) {
    const char *have = dtype_name(t->dtype);
    if (have)
      put(&mb, "has dtype %s", have);
    else
      put(&mb, "has dtype %" PRId32, t->dtype);
    put(&mb, ", expected %s", dtype_name(a->dtype));
    return fail(sig, SG_ERR_DTYPE, "argument", a->name, &mb);
  }
  if (t->rank != a->rank) {
    put(&mb, "has rank %" PRId32 ", expected %" PRId32, t->rank, a->rank);
    return fail(sig, SG_ERR_RANK, "argument", a->name, &mb);
  }
  for (int32_t d = 0; d < t->rank; d++) {
    if (t->shape[d] < 0) {
      put(&mb, "has a negative dimension in shape ");
      put_shape(&mb, t);
      return fail(sig, SG_ERR_SHAPE, "argument", a->name, &mb);
    }
  }
  /* Keep byte sizes far from INT64_MAX so that generated code can add and
   * scale them without overflowing. */
  int64_t limit = INT64_MAX / 2 / elem_size(a->dtype), n = 1;
  int zero = 0, big = 0;
  for (int32_t d = 0; d < t->rank; d++) {
    int64_t v = t->shape[d];
    if (v == 0)
      zero = 1;
    else if (!big && (__builtin_mul_overflow(n, v, &n) || n > limit))
      big = 1;
  }
  if (big && !zero) {
    put(&mb, "has shape ");
    put_shape(&mb, t);
    put(&mb, ", which is too large (2^62 bytes or more)");
    return fail(sig, SG_ERR_SHAPE, "argument", a->name, &mb);
  }
  for (int32_t d = 0; d < t->rank; d++) {
    int64_t e = a->dims[d], v = t->shape[d];
    if (e >= 0) {
      if (v != e)
        return shape_mismatch(sig, i, t, d, syms);
    } else if (syms[-1 - e] < 0) {
      syms[-1 - e] = v;
    } else if (syms[-1 - e] != v) {
      return shape_mismatch(sig, i, t, d, syms);
    }
  }
  *bytes = zero ? 0 : n * elem_size(a->dtype);
  return SG_OK;
}

int sg_rt_check(const sg_rt_sig *sig, const sg_tensor *const *args,
                int64_t *syms) {
  for (int32_t s = 0; s < sig->nsyms; s++)
    syms[s] = -1;
  /* Byte sizes for the overlap test; a signature with more arguments than
   * fit here (none in practice) recomputes them per pair. */
  enum { KEEP = 32 };
  int64_t size[KEEP];
  for (int32_t i = 0; i < sig->nargs; i++) {
    int64_t bytes = 0;
    int r = check_one(sig, i, args[i], syms, &bytes);
    if (r != SG_OK)
      return r;
    if (i < KEEP)
      size[i] = bytes;
  }
  for (int32_t i = 0; i < sig->nargs; i++) {
    if (!sig->args[i].is_output)
      continue;
    uintptr_t lo = (uintptr_t)args[i]->data;
    uintptr_t hi = lo + (uintptr_t)(i < KEEP ? size[i] : numel(args[i]) * elem_size(sig->args[i].dtype));
    if (lo == hi)
      continue; /* an empty tensor overlaps nothing */
    for (int32_t j = 0; j < sig->nargs; j++) {
      if (j == i)
        continue;
      uintptr_t lo2 = (uintptr_t)args[j]->data;
      uintptr_t hi2 = lo2 + (uintptr_t)(j < KEEP ? size[j] : numel(args[j]) * elem_size(sig->args[j].dtype));
      if (lo2 != hi2 && lo < hi2 && lo2 < hi) {
        sg_rt_set_error("%s: output '%s' overlaps argument '%s'", sig->func,
                        sig->args[i].name, sig->args[j].name);
        return SG_ERR_ALIAS;
      }
    }
  }
  /* A symbol no argument uses cannot occur in valid code; give it a
   * harmless value rather than the internal "unbound" marker. */
  for (int32_t s = 0; s < sig->nsyms; s++)
    if (syms[s] < 0)
      syms[s] = 0;
  return SG_OK;
}
