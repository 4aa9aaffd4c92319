/* An export is a global C symbol in the user's program. Named like a
 * function of the C or math library (memset, powf, exp, read, error...), it
 * would replace that function for the whole program when linked: the
 * runtime's own memset, the memset and powf calls LLVM generates inside
 * the exports, and every other caller in the program would call the export
 * instead, and recurse or crash. No renaming on sgc's side can prevent
 * that, so such names are rejected (frontend/lower.c).
 *
 * "A symbol of the C library" means exactly that: the libc and libm that
 * sgc itself runs on (the ones the object will be linked with) are asked
 * through dlsym, so every function they define counts, POSIX and GNU ones
 * included. Where they cannot be asked (not glibc), a fixed list of the
 * functions the runtime and generated code call, and the C standard's
 * string and math functions, stands in. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE 1 /* RTLD_NOLOAD */
#endif
#include "libc_names.h"

#include <dlfcn.h>
#include <stddef.h>
#include <string.h>

static const char *const fallback_libc[] = {
    "memset", "memcpy", "memmove", "memcmp", "memchr", "strlen", "strcmp", "strncmp",
    "strcpy", "strncpy", "strcat", "strncat", "strchr", "strrchr", "strstr", "strtok",
    "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign", "abort",
    "exit", "atexit", "printf", "fprintf", "sprintf", "snprintf", "vsnprintf", "puts",
    "abs", "labs", "div", "qsort", "bsearch", "rand", "srand", "time", "clock", NULL};

static const char *const fallback_libm[] = {
    "exp", "expf", "exp2", "exp2f", "expm1", "expm1f", "log", "logf", "log2", "log2f",
    "log10", "log10f", "log1p", "log1pf", "pow", "powf", "sqrt", "sqrtf", "cbrt", "cbrtf",
    "sin", "sinf", "cos", "cosf", "tan", "tanf", "asin", "asinf", "acos", "acosf", "atan",
    "atanf", "atan2", "atan2f", "sinh", "sinhf", "cosh", "coshf", "tanh", "tanhf", "fabs",
    "fabsf", "floor", "floorf", "ceil", "ceilf", "round", "roundf", "trunc", "truncf",
    "fmod", "fmodf", "fmin", "fminf", "fmax", "fmaxf", "fma", "fmaf", "erf", "erff",
    "erfc", "erfcf", "lgamma", "tgamma", "hypot", "hypotf", "ldexp", "frexp", "modf", NULL};

static bool in_list(const char *const *list, const char *name) {
  for (int k = 0; list[k]; k++)
    if (strcmp(list[k], name) == 0)
      return true;
  return false;
}

/* RTLD_NOLOAD: sgc is linked with both, so this only looks them up. */
static bool defined_in(const char *soname, const char *const *fallback, const char *name) {
  void *lib = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
  if (!lib)
    return in_list(fallback, name);
  bool found = dlsym(lib, name) != NULL;
  dlclose(lib);
  return found || in_list(fallback, name);
}

const char *libc_defines(const char *name) {
  if (defined_in("libc.so.6", fallback_libc, name))
    return "the C library";
  if (defined_in("libm.so.6", fallback_libm, name))
    return "the math library";
  return NULL;
}
