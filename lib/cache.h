/* libsgc's compile cache (spec section 10, v3): what sgc_compile compiled,
 * kept on disk so that compiling the same source again, in any process,
 * does no LLVM work. docs/embedding.md describes the entries. */
#ifndef SGC_CACHE_H
#define SGC_CACHE_H

#include <stdbool.h>
#include <stddef.h>

/* What a compile leaves: the object file LLVM wrote (loaded into the JIT
 * as it is), the header sgc_header returns, and the names of the entry
 * points to resolve, each NUL-terminated, one after another. */
typedef struct CacheItem {
  char *object, *header, *names;
  size_t object_len, names_len;
} CacheItem;

typedef struct Cache Cache;

/* The cache for one compile: its key is the source, the filename, the
 * options (argv[1..argc) as given), the compiler (version and build), the
 * LLVM version and the target CPU (`cpu`: NULL or "native" for the host's
 * name and features). NULL when caching is off: SGC_CACHE_DIR set and
 * empty, or no directory to use. */
Cache *cache_open(const char *source, const char *filename, char *const *argv, int argc,
                  const char *cpu);

/* The entry of this key, checked whole (size, checksum, owner, key);
 * false on a miss or a damaged entry, which is then recompiled. */
bool cache_load(Cache *c, CacheItem *item);

/* Reports (with SGC_CACHE_TRACE) that an entry cache_load returned could
 * not be used after all; the compile that follows writes over it. */
void cache_reject(Cache *c, const char *why);

/* Writes the entry atomically (a temporary file renamed over it), then
 * evicts least recently used entries beyond the size bound. Failures
 * only cost the caching. */
void cache_store(Cache *c, const CacheItem *item);

void cache_close(Cache *c);

void cache_item_free(CacheItem *item);

#endif
