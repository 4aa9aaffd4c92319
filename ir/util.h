/* Support every stage shares: source locations, the arena, the two error
 * channels (user diagnostics with a caret; die() for internal bugs) and a
 * growable array. */
#ifndef SGC_UTIL_H
#define SGC_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* 1-based line and column of a token in the source. line == 0: unknown.
 * Code inlined from another function (passes/inline.c) keeps the call site
 * in line and col, which messages name, and records where it was written,
 * for the debug information of -g: at line src_line (0: not inlined) of the
 * function `inlined` (its name), declared at line inlined_line. */
typedef struct Loc {
  int line, col;
  int src_line, src_col;
  const char *inlined;
  int inlined_line;
} Loc;

/* ---- Arena: everything in the AST and the IR is freed at once. ---- */
typedef struct Arena Arena;
Arena *arena_new(void);
void arena_free(Arena *a);
void *arena_alloc(Arena *a, size_t size); /* zeroed, 16-byte aligned */
char *arena_strdup(Arena *a, const char *s);
char *arena_strndup(Arena *a, const char *s, size_t n);
char *arena_vprintf(Arena *a, const char *fmt, va_list ap);
char *arena_printf(Arena *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
#define ARENA_NEW(a, T) ((T *)arena_alloc((a), sizeof(T)))
#define ARENA_ARRAY(a, T, n) ((T *)arena_alloc((a), sizeof(T) * (size_t)(n)))

/* ---- User errors (and warnings): "file:line:col: error: msg", the line, a caret. ---- */
typedef struct Diag {
  const char *file; /* as named on the command line */
  const char *src;  /* the whole input, for quoting the offending line */
  size_t len;
  int errors;
  int max_errors; /* stop printing after this many (0: 50) */
  FILE *out;      /* where messages go (NULL: stderr); libsgc's is a buffer */
} Diag;
void diag_init(Diag *d, const char *file, const char *src, size_t len);
void diag_error(Diag *d, Loc loc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void diag_verror(Diag *d, Loc loc, const char *fmt, va_list ap);
/* The same format with "warning:"; not counted as an error. */
void diag_warning(Diag *d, Loc loc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ---- Internal bugs: name the compiler's own file and line, abort. ---- */
#define die(...) die_at(__FILE__, __LINE__, __VA_ARGS__)
_Noreturn void die_at(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void *xmalloc(size_t n);
void *xrealloc(void *p, size_t n);

/* ---- Growable array of pointers, backed by malloc (freed explicitly). ---- */
typedef struct PtrVec {
  void **data;
  int len, cap;
} PtrVec;
void vec_push(PtrVec *v, void *p);
void vec_free(PtrVec *v);

/* ---- Map from pointers to pointers (open addressing, malloc-backed). ---- */
typedef struct PtrMap {
  const void **keys;
  void **vals;
  size_t cap, n; /* cap is 0 or a power of two */
} PtrMap;
void **ptrmap_slot(PtrMap *m, const void *key); /* key's value, inserted as NULL if new */
void *ptrmap_get(const PtrMap *m, const void *key); /* NULL if absent */
void ptrmap_free(PtrMap *m);

/* ---- A set of strings (not copied), for lookups by name in linear time. ---- */
typedef struct NameSet {
  const char **slots;
  size_t cap, len;
} NameSet;
void nameset_add(NameSet *s, const char *name);
bool nameset_has(const NameSet *s, const char *name);
void nameset_free(NameSet *s);

/* The stack the stages run on: they recurse over expression trees, which a
 * program can nest as deeply as it is long (up to AST_MAX_DEPTH levels,
 * about 5 KB of frames each). AddressSanitizer's redzones make every frame
 * several times larger. Reserved, not touched: it costs address space. */
#if defined(__SANITIZE_ADDRESS__) /* gcc */
#define IR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) /* clang */
#define IR_ASAN 1
#endif
#endif
#if defined(IR_ASAN)
#define IR_BIG_STACK ((size_t)4 << 30)
#else
#define IR_BIG_STACK ((size_t)1 << 30)
#endif

/* Run fn(arg) on a thread with an IR_BIG_STACK stack and wait for it. Runs
 * it directly if no thread can be made. */
void run_with_big_stack(void *(*fn)(void *), void *arg);

/* Read a whole file (or stdin for "-"); NULL and errno on failure. A file
 * longer than MAX_INPUT_BYTES (or an endless one, /dev/zero) fails with
 * EFBIG after reading at most that much: every valid program is far
 * smaller, since a function may not expand to more than 200,000
 * operations (frontend/lower.c). */
enum { MAX_INPUT_BYTES = 16 << 20 };
char *read_file(const char *path, size_t *len);

#endif
