/* Whether a symbol an export would define is already a function (or
 * variable) of the C library (frontend/libc_names.c). */
#ifndef SGC_LIBC_NAMES_H
#define SGC_LIBC_NAMES_H

#include <stdbool.h>

/* Returns "the C library" or "the math library" if `name` is one of their
 * symbols, else NULL. */
const char *libc_defines(const char *name);

#endif
