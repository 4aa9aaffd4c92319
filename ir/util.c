/* Arena, diagnostics, die() and small helpers shared by every stage. */
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Arena ---- */

typedef struct Chunk {
  struct Chunk *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
} Chunk;

struct Arena {
  Chunk *head;
};

Arena *arena_new(void) {
  Arena *a = xmalloc(sizeof *a);
  a->head = NULL;
  return a;
}

void arena_free(Arena *a) {
  if (!a)
    return;
  for (Chunk *c = a->head, *n; c; c = n) {
    n = c->next;
    free(c);
  }
  free(a);
}

void *arena_alloc(Arena *a, size_t size) {
  size = (size + 15) & ~(size_t)15;
  Chunk *c = a->head;
  if (!c || c->cap - c->used < size) {
    size_t cap = size > 65536 ? size : 65536;
    c = xmalloc(sizeof *c + cap);
    c->used = 0;
    c->cap = cap;
    c->next = a->head;
    a->head = c;
  }
  void *p = c->data + c->used;
  c->used += size;
  memset(p, 0, size);
  return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n) {
  char *p = arena_alloc(a, n + 1);
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

char *arena_strdup(Arena *a, const char *s) { return arena_strndup(a, s, strlen(s)); }

char *arena_vprintf(Arena *a, const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap);
  char *p = arena_alloc(a, (size_t)n + 1);
  vsnprintf(p, (size_t)n + 1, fmt, ap2);
  va_end(ap2);
  return p;
}

char *arena_printf(Arena *a, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *p = arena_vprintf(a, fmt, ap);
  va_end(ap);
  return p;
}

/* ---- Diagnostics ---- */

void diag_init(Diag *d, const char *file, const char *src, size_t len) {
  memset(d, 0, sizeof *d);
  d->file = file;
  d->src = src;
  d->len = len;
}

/* Print source line `line` and a caret under column `col`. Tabs in the line
 * are copied into the caret's indentation so the caret lines up. */
static void quote_line(const Diag *d, int line, int col) {
  FILE *out = d->out ? d->out : stderr;
  if (!d->src || line <= 0)
    return;
  const char *p = d->src, *end = d->src + d->len;
  for (int l = 1; l < line && p < end; p++)
    if (*p == '\n')
      l++;
  const char *e = p;
  while (e < end && *e != '\n')
    e++;
  if (e > p && e[-1] == '\r')
    e--;
  /* Very long lines are cut around the caret so output stays readable. */
  size_t n = (size_t)(e - p), c = col > 0 ? (size_t)col - 1 : 0;
  size_t from = 0;
  if (n > 200 && c > 100)
    from = c - 100 < n ? c - 100 : n;
  size_t to = n - from > 200 ? from + 200 : n;
  for (size_t i = from; i < to; i++) {
    unsigned char ch = (unsigned char)p[i];
    fputc(ch == '\t' || ch >= 32 ? ch : ' ', out);
  }
  fputc('\n', out);
  for (size_t i = from; i < c && i < n; i++)
    fputc(p[i] == '\t' ? '\t' : ' ', out);
  fputs("^\n", out);
}

static void report(Diag *d, const char *kind, Loc loc, const char *fmt, va_list ap) {
  FILE *out = d->out ? d->out : stderr;
  if (loc.line > 0)
    fprintf(out, "%s:%d:%d: %s: ", d->file, loc.line, loc.col, kind);
  else
    fprintf(out, "%s: %s: ", d->file, kind);
  vfprintf(out, fmt, ap);
  fputc('\n', out);
  quote_line(d, loc.line, loc.col);
}

void diag_verror(Diag *d, Loc loc, const char *fmt, va_list ap) {
  FILE *out = d->out ? d->out : stderr;
  d->errors++;
  int max = d->max_errors ? d->max_errors : 50;
  if (d->errors > max) {
    if (d->errors == max + 1)
      fprintf(out, "%s: error: too many errors, stopping\n", d->file);
    return;
  }
  report(d, "error", loc, fmt, ap);
}

void diag_warning(Diag *d, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report(d, "warning", loc, fmt, ap);
  va_end(ap);
}

void diag_error(Diag *d, Loc loc, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  diag_verror(d, loc, fmt, ap);
  va_end(ap);
}

/* ---- Internal errors ---- */

_Noreturn void die_at(const char *file, int line, const char *fmt, ...) {
  fprintf(stderr, "sgc: internal error at %s:%d: ", file, line);
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  abort();
}

void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "sgc: out of memory\n");
    exit(3);
  }
  return p;
}

void *xrealloc(void *p, size_t n) {
  p = realloc(p, n ? n : 1);
  if (!p) {
    fprintf(stderr, "sgc: out of memory\n");
    exit(3);
  }
  return p;
}

void vec_push(PtrVec *v, void *p) {
  if (v->len == v->cap) {
    v->cap = v->cap ? 2 * v->cap : 8;
    v->data = xrealloc(v->data, sizeof(void *) * (size_t)v->cap);
  }
  v->data[v->len++] = p;
}

void vec_free(PtrVec *v) {
  free(v->data);
  v->data = NULL;
  v->len = v->cap = 0;
}

static size_t name_hash(const char *s) {
  size_t h = 14695981039346656037u; /* FNV-1a */
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * 1099511628211u;
  return h;
}

static const char **nameset_slot(const NameSet *s, const char *name) {
  size_t h = name_hash(name) & (s->cap - 1);
  while (s->slots[h] && strcmp(s->slots[h], name) != 0)
    h = (h + 1) & (s->cap - 1);
  return &s->slots[h];
}

void nameset_add(NameSet *s, const char *name) {
  if (2 * (s->len + 1) > s->cap) {
    NameSet bigger = {NULL, s->cap ? 2 * s->cap : 64, 0};
    bigger.slots = xmalloc(sizeof(char *) * bigger.cap);
    memset(bigger.slots, 0, sizeof(char *) * bigger.cap);
    for (size_t k = 0; k < s->cap; k++)
      if (s->slots[k])
        nameset_add(&bigger, s->slots[k]);
    free(s->slots);
    *s = bigger;
  }
  const char **slot = nameset_slot(s, name);
  if (!*slot) {
    *slot = name;
    s->len++;
  }
}

bool nameset_has(const NameSet *s, const char *name) {
  return s->cap && *nameset_slot(s, name) != NULL;
}

void nameset_free(NameSet *s) {
  free(s->slots);
  s->slots = NULL;
  s->cap = s->len = 0;
}

void run_with_big_stack(void *(*fn)(void *), void *arg) {
  pthread_attr_t attr;
  pthread_t tid;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, IR_BIG_STACK);
  if (pthread_create(&tid, &attr, fn, arg) == 0)
    pthread_join(tid, NULL);
  else
    fn(arg);
  pthread_attr_destroy(&attr);
}

char *read_file(const char *path, size_t *len) {
  FILE *f = strcmp(path, "-") == 0 ? stdin : fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = xmalloc(cap + 1);
  for (;;) {
    size_t got = fread(buf + n, 1, cap - n, f);
    n += got;
    if (n < cap) {
      if (ferror(f)) {
        int e = errno;
        free(buf);
        if (f != stdin)
          fclose(f);
        errno = e ? e : EIO;
        return NULL;
      }
      break;
    }
    if (cap > MAX_INPUT_BYTES) {
      free(buf);
      if (f != stdin)
        fclose(f);
      errno = EFBIG;
      return NULL;
    }
    cap = cap * 2 > (size_t)MAX_INPUT_BYTES + 1 ? (size_t)MAX_INPUT_BYTES + 1 : cap * 2;
    buf = xrealloc(buf, cap + 1);
  }
  if (f != stdin)
    fclose(f);
  buf[n] = 0;
  *len = n;
  return buf;
}

/* ---- PtrMap ---- */

static size_t ptr_hash(const void *p, size_t mask) {
  uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
  return (size_t)(h >> 17) & mask;
}

void *ptrmap_get(const PtrMap *m, const void *key) {
  if (!m->cap)
    return NULL;
  for (size_t h = ptr_hash(key, m->cap - 1);; h = (h + 1) & (m->cap - 1)) {
    if (m->keys[h] == key)
      return m->vals[h];
    if (!m->keys[h])
      return NULL;
  }
}

void **ptrmap_slot(PtrMap *m, const void *key) {
  if (2 * (m->n + 1) > m->cap) {
    PtrMap big = {NULL, NULL, m->cap ? 2 * m->cap : 64, 0};
    big.keys = xmalloc(sizeof(void *) * big.cap);
    big.vals = xmalloc(sizeof(void *) * big.cap);
    memset(big.keys, 0, sizeof(void *) * big.cap);
    for (size_t k = 0; k < m->cap; k++)
      if (m->keys[k])
        *ptrmap_slot(&big, m->keys[k]) = m->vals[k];
    ptrmap_free(m);
    *m = big;
  }
  size_t h = ptr_hash(key, m->cap - 1);
  while (m->keys[h] && m->keys[h] != key)
    h = (h + 1) & (m->cap - 1);
  if (!m->keys[h]) {
    m->keys[h] = key;
    m->vals[h] = NULL;
    m->n++;
  }
  return &m->vals[h];
}

void ptrmap_free(PtrMap *m) {
  free(m->keys);
  free(m->vals);
  m->keys = NULL;
  m->vals = NULL;
  m->cap = m->n = 0;
}
