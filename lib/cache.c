/* libsgc's compile cache (spec section 10, v3).
 *
 * An entry is one file, DIR/KEY.sgc, holding what sgc_compile needs to
 * skip every stage of the compiler: the relocatable object LLVM wrote
 * (which the JIT loads as it is, on a hit and on a miss alike), the header
 * text and the names of the entry points. KEY is a 128-bit hash of the key
 * material, which the entry also holds in full and which must match byte
 * for byte: sgc's version and the build identity of the code running
 * (the GNU build ID of the library or program sgc_compile is linked into,
 * else its file's device, inode, size and time, so a rebuilt compiler
 * never loads its predecessor's code), LLVM's version, the target CPU and
 * its features, the options as given, the filename (messages name it) and
 * the source.
 *
 *   "SGCACHE1", total, key_len, header_len, names_len, object_len (u64 each)
 *   key, header, names, object
 *   checksum (u64: a 64-bit hash of every byte before it)
 *
 * Entries are written to a temporary file in the directory and renamed
 * over the entry, so a reader sees a whole old entry or a whole new one,
 * and processes compiling the same source at once all succeed (the last
 * rename wins; every one wrote the same bytes). A reader accepts only a
 * regular file owned by its own user (an entry is code it will run),
 * whose size, lengths and checksum agree and whose key is its own; anything
 * else (truncated, damaged, a hash collision) is a miss, compiled again and
 * written over. A hit sets the entry's modification time, and after each
 * store the least recently used entries are deleted while the directory
 * holds more than SGC_CACHE_SIZE bytes (default 256M). Every failure to
 * read or write only costs the caching; SGC_CACHE_TRACE=1 reports each
 * decision on stderr. */
#include "cache.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <llvm-c/Core.h>
#include <llvm-c/TargetMachine.h>

#include "../driver/options.h"
#include "../ir/util.h"
#include "sgc.h"

enum { HEAD = 48, TAIL = 8 };
static const char MAGIC[8] = {'S', 'G', 'C', 'A', 'C', 'H', 'E', '1'};
static const long long DEFAULT_MAX_BYTES = 256LL << 20;
static const char SUFFIX[] = ".sgc";
static const char TEMP_PREFIX[] = ".tmp-";

struct Cache {
  char *dir, *path, *key;
  size_t key_len;
  long long max_bytes;
  bool trace;
};

/* ---- hashing: xxHash64's construction ---- */

static const uint64_t P1 = 0x9E3779B185EBCA87ULL, P2 = 0xC2B2AE3D27D4EB4FULL,
                      P3 = 0x165667B19E3779F9ULL, P4 = 0x85EBCA77C2B2AE63ULL,
                      P5 = 0x27D4EB2F165667C5ULL;

static uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static uint64_t mix(uint64_t acc, uint64_t in) { return rotl(acc + in * P2, 31) * P1; }
static uint64_t merge(uint64_t h, uint64_t v) { return (h ^ mix(0, v)) * P1 + P4; }

static uint64_t load64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static uint64_t hash64(const void *data, size_t len, uint64_t seed) {
  const unsigned char *p = data, *end = p + len;
  uint64_t h;
  if (len >= 32) {
    uint64_t v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
    for (; end - p >= 32; p += 32) {
      v1 = mix(v1, load64(p));
      v2 = mix(v2, load64(p + 8));
      v3 = mix(v3, load64(p + 16));
      v4 = mix(v4, load64(p + 24));
    }
    h = rotl(v1, 1) + rotl(v2, 7) + rotl(v3, 12) + rotl(v4, 18);
    h = merge(merge(merge(merge(h, v1), v2), v3), v4);
  } else {
    h = seed + P5;
  }
  h += len;
  for (; end - p >= 8; p += 8)
    h = rotl(h ^ mix(0, load64(p)), 27) * P1 + P4;
  if (end - p >= 4) {
    uint32_t v;
    memcpy(&v, p, 4);
    h = rotl(h ^ (uint64_t)v * P1, 23) * P2 + P3;
    p += 4;
  }
  for (; p < end; p++)
    h = rotl(h ^ *p * P5, 11) * P1;
  h ^= h >> 33;
  h *= P2;
  h ^= h >> 29;
  h *= P3;
  return h ^ (h >> 32);
}

/* ---- the build identity of the running compiler ---- */

static char build_id[160];

/* The GNU build ID of the object (program or library) holding this code,
 * else its file's identity; "" if neither can be had. */
static int find_build(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  uintptr_t self = (uintptr_t)arg;
  bool mine = false;
  for (int k = 0; k < info->dlpi_phnum && !mine; k++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
    mine = ph->p_type == PT_LOAD && self >= lo && self - lo < ph->p_memsz;
  }
  if (!mine)
    return 0;
  for (int k = 0; k < info->dlpi_phnum; k++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[k];
    if (ph->p_type != PT_NOTE)
      continue;
    size_t align = ph->p_align == 8 ? 8 : 4;
    const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
    const unsigned char *end = p + ph->p_memsz;
    while (end - p >= (ptrdiff_t)sizeof(ElfW(Nhdr))) {
      const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
      const unsigned char *name = p + sizeof *n;
      const unsigned char *desc = name + ((n->n_namesz + align - 1) & ~(align - 1));
      if (desc > end || (size_t)(end - desc) < n->n_descsz)
        break;
      if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && memcmp(name, "GNU", 4) == 0 &&
          n->n_descsz > 0 && n->n_descsz * 2 < sizeof build_id - 6) {
        strcpy(build_id, "gnu:");
        for (size_t j = 0; j < n->n_descsz; j++)
          snprintf(build_id + 4 + 2 * j, 3, "%02x", desc[j]);
        return 1;
      }
      p = desc + ((n->n_descsz + align - 1) & ~(align - 1));
    }
  }
  struct stat st;
  const char *path = info->dlpi_name && info->dlpi_name[0] ? info->dlpi_name : "/proc/self/exe";
  if (stat(path, &st) == 0)
    snprintf(build_id, sizeof build_id, "file:%llu:%llu:%lld:%lld.%09ld",
             (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
             (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
  return 1;
}

static void init_build_id(void) {
  dl_iterate_phdr(find_build, (void *)(uintptr_t)&hash64);
}

/* ---- the key and the directory ---- */

typedef struct Buf {
  char *data;
  size_t len, cap;
} Buf;

static void put(Buf *b, const void *data, size_t len) {
  if (b->len + len > b->cap) {
    b->cap = (b->len + len) * 2 + 64;
    char *grown = xmalloc(b->cap);
    if (b->len)
      memcpy(grown, b->data, b->len);
    free(b->data);
    b->data = grown;
  }
  if (len)
    memcpy(b->data + b->len, data, len);
  b->len += len;
}

/* One field of the key: its name, its length, then its bytes, so that no
 * two different keys read the same. */
static void put_field(Buf *b, const char *name, const char *value, size_t len) {
  char head[64];
  int n = snprintf(head, sizeof head, "%s %zu:", name, len);
  put(b, head, (size_t)n);
  put(b, value, len);
  put(b, "\n", 1);
}

static void put_u64(Buf *b, uint64_t v) { put(b, &v, sizeof v); }

static char *copy(const char *p, size_t len) {
  char *s = xmalloc(len + 1);
  memcpy(s, p, len);
  s[len] = 0;
  return s;
}

static char *join(const char *a, const char *b) {
  size_t na = strlen(a), nb = strlen(b);
  char *s = xmalloc(na + nb + 2);
  memcpy(s, a, na);
  s[na] = '/';
  memcpy(s + na + 1, b, nb + 1);
  return s;
}

/* $SGC_CACHE_DIR (set and empty: no cache), else $XDG_CACHE_HOME/sgc (an
 * absolute path, as the XDG specification asks), else ~/.cache/sgc. */
static char *cache_dir(void) {
  const char *dir = getenv("SGC_CACHE_DIR");
  if (dir)
    return *dir ? copy(dir, strlen(dir)) : NULL;
  const char *xdg = getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/')
    return join(xdg, "sgc");
  const char *home = getenv("HOME");
  return home && *home ? join(home, ".cache/sgc") : NULL;
}

static void trace(const Cache *c, const char *what, const char *path, const char *why) {
  if (c->trace)
    fprintf(stderr, "sgc: cache: %s %s%s%s%s\n", what, path, why ? " (" : "", why ? why : "",
            why ? ")" : "");
}

Cache *cache_open(const char *source, const char *filename, char *const *argv, int argc,
                  const char *cpu) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, init_build_id);
  char *dir = cache_dir();
  if (!dir || !build_id[0]) {
    free(dir);
    return NULL;
  }
  Cache *c = xmalloc(sizeof *c);
  memset(c, 0, sizeof *c);
  c->dir = dir;
  const char *env = getenv("SGC_CACHE_TRACE");
  c->trace = env && *env && strcmp(env, "0") != 0;
  env = getenv("SGC_CACHE_SIZE");
  if (!env || !options_parse_size(env, &c->max_bytes))
    c->max_bytes = DEFAULT_MAX_BYTES;

  Buf key = {0};
  put_field(&key, "sgc", SGC_VERSION, strlen(SGC_VERSION));
  put_field(&key, "build", build_id, strlen(build_id));
  unsigned major, minor, patch;
  LLVMGetVersion(&major, &minor, &patch);
  char llvm[64];
  snprintf(llvm, sizeof llvm, "%u.%u.%u", major, minor, patch);
  put_field(&key, "llvm", llvm, strlen(llvm));
  bool host = !cpu || strcmp(cpu, "native") == 0;
  char *name = host ? LLVMGetHostCPUName() : NULL;
  char *features = host ? LLVMGetHostCPUFeatures() : NULL;
  put_field(&key, "cpu", host ? name : cpu, strlen(host ? name : cpu));
  put_field(&key, "features", host ? features : "", host ? strlen(features) : 0);
  if (name)
    LLVMDisposeMessage(name);
  if (features)
    LLVMDisposeMessage(features);
  for (int k = 1; k < argc; k++)
    put_field(&key, "option", argv[k], strlen(argv[k]));
  put_field(&key, "file", filename, strlen(filename));
  put_field(&key, "source", source, strlen(source));
  c->key = key.data;
  c->key_len = key.len;

  char file[2 * 16 + sizeof SUFFIX];
  snprintf(file, sizeof file, "%016llx%016llx%s",
           (unsigned long long)hash64(key.data, key.len, 1),
           (unsigned long long)hash64(key.data, key.len, 2), SUFFIX);
  c->path = join(dir, file);
  return c;
}

void cache_close(Cache *c) {
  if (!c)
    return;
  free(c->dir);
  free(c->path);
  free(c->key);
  free(c);
}

void cache_item_free(CacheItem *item) {
  free(item->object);
  free(item->header);
  free(item->names);
  memset(item, 0, sizeof *item);
}

/* ---- reading an entry ---- */

/* NULL if the bytes are a whole entry for c's key, else why not. */
static const char *check_entry(const Cache *c, const char *data, size_t size, CacheItem *item) {
  if (size < HEAD + TAIL || memcmp(data, MAGIC, sizeof MAGIC) != 0)
    return "not an entry";
  uint64_t f[5];
  memcpy(f, data + 8, sizeof f);
  if (f[0] != size)
    return f[0] > size ? "truncated" : "longer than it says";
  uint64_t sum = HEAD + TAIL;
  for (int k = 1; k < 5; k++) {
    if (f[k] > size)
      return "bad lengths";
    sum += f[k];
  }
  if (sum != size)
    return "bad lengths";
  uint64_t checksum;
  memcpy(&checksum, data + size - TAIL, TAIL);
  if (checksum != hash64(data, size - TAIL, 0))
    return "checksum mismatch";
  const char *p = data + HEAD;
  if (f[1] != c->key_len || memcmp(p, c->key, c->key_len) != 0)
    return "another key";
  p += f[1];
  const char *header = p, *names = p + f[2], *object = names + f[3];
  if (memchr(header, 0, f[2]) || (f[3] && names[f[3] - 1] != 0))
    return "bad contents";
  item->header = copy(header, f[2]);
  item->names = copy(names, f[3]);
  item->names_len = f[3];
  item->object = copy(object, f[4]);
  item->object_len = f[4];
  return NULL;
}

bool cache_load(Cache *c, CacheItem *item) {
  memset(item, 0, sizeof *item);
  int fd = open(c->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    bool none = errno == ENOENT || errno == ENOTDIR; /* (no directory yet) */
    trace(c, none ? "miss" : "rejected", c->path,
          none ? NULL : errno == ELOOP ? "a symbolic link" : strerror(errno));
    return false;
  }
  struct stat st;
  const char *why = NULL;
  char *data = NULL;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    why = "not a regular file";
  else if (st.st_uid != geteuid())
    why = "owned by another user";
  else if (st.st_size > (off_t)1 << 40)
    why = "too large";
  size_t size = why ? 0 : (size_t)st.st_size, got = 0;
  if (!why) {
    data = xmalloc(size + 1);
    while (got < size) {
      ssize_t n = read(fd, data + got, size - got);
      if (n <= 0 && !(n < 0 && errno == EINTR))
        break;
      if (n > 0)
        got += (size_t)n;
    }
    why = got != size ? "cannot read" : check_entry(c, data, size, item);
  }
  if (!why)
    futimens(fd, NULL); /* most recently used (an unwritable entry stays as old) */
  close(fd);
  free(data);
  trace(c, why ? "rejected" : "hit", c->path, why);
  return !why;
}

void cache_reject(Cache *c, const char *why) { trace(c, "rejected", c->path, why); }

/* ---- writing an entry, and eviction ---- */

static int mkdir_p(const char *dir) {
  char *p = join(dir, "");
  for (char *s = p + 1; *s; s++) {
    if (*s != '/')
      continue;
    *s = 0;
    int rc = mkdir(p, 0700);
    *s = '/';
    if (rc != 0 && errno != EEXIST) {
      free(p);
      return -1;
    }
  }
  free(p);
  struct stat st;
  if (stat(dir, &st) != 0)
    return -1;
  errno = ENOTDIR;
  return S_ISDIR(st.st_mode) ? 0 : -1;
}

typedef struct Entry {
  char *name;
  long long bytes;
  struct timespec used;
} Entry;

static int older(const void *a, const void *b) {
  const struct timespec *x = &((const Entry *)a)->used, *y = &((const Entry *)b)->used;
  if (x->tv_sec != y->tv_sec)
    return x->tv_sec < y->tv_sec ? -1 : 1;
  return x->tv_nsec < y->tv_nsec ? -1 : x->tv_nsec > y->tv_nsec;
}

/* Deletes the least recently used entries while the directory holds more
 * than c->max_bytes of them (never the one just written), and temporary
 * files an interrupted writer left more than an hour ago. */
static void evict(const Cache *c) {
  DIR *d = opendir(c->dir);
  if (!d)
    return;
  Entry *entries = NULL;
  size_t n = 0, cap = 0;
  long long total = 0;
  const char *mine = strrchr(c->path, '/') + 1;
  time_t now = time(NULL);
  for (struct dirent *e; (e = readdir(d));) {
    size_t len = strlen(e->d_name);
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
      continue;
    if (strncmp(e->d_name, TEMP_PREFIX, sizeof TEMP_PREFIX - 1) == 0) {
      if (now - st.st_mtim.tv_sec > 3600)
        unlinkat(dirfd(d), e->d_name, 0);
      continue;
    }
    if (len < sizeof SUFFIX || strcmp(e->d_name + len - (sizeof SUFFIX - 1), SUFFIX) != 0)
      continue;
    total += st.st_size;
    if (strcmp(e->d_name, mine) == 0)
      continue;
    if (n == cap) {
      cap = cap ? 2 * cap : 64;
      Entry *grown = xmalloc(cap * sizeof *grown);
      if (n)
        memcpy(grown, entries, n * sizeof *grown);
      free(entries);
      entries = grown;
    }
    entries[n++] = (Entry){copy(e->d_name, len), st.st_size, st.st_mtim};
  }
  if (total > c->max_bytes && n)
    qsort(entries, n, sizeof *entries, older);
  for (size_t k = 0; k < n; k++) {
    if (total > c->max_bytes && unlinkat(dirfd(d), entries[k].name, 0) == 0) {
      total -= entries[k].bytes;
      if (c->trace) {
        char *path = join(c->dir, entries[k].name);
        trace(c, "evicted", path, NULL);
        free(path);
      }
    }
    free(entries[k].name);
  }
  free(entries);
  closedir(d);
}

static bool write_all(int fd, const char *p, size_t len) {
  while (len) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    len -= (size_t)n;
  }
  return true;
}

void cache_store(Cache *c, const CacheItem *item) {
  if (mkdir_p(c->dir) != 0) {
    trace(c, "not stored:", c->dir, strerror(errno));
    return;
  }
  size_t header_len = strlen(item->header);
  Buf b = {0};
  put(&b, MAGIC, sizeof MAGIC);
  put_u64(&b, HEAD + c->key_len + header_len + item->names_len + item->object_len + TAIL);
  put_u64(&b, c->key_len);
  put_u64(&b, header_len);
  put_u64(&b, item->names_len);
  put_u64(&b, item->object_len);
  put(&b, c->key, c->key_len);
  put(&b, item->header, header_len);
  put(&b, item->names, item->names_len);
  put(&b, item->object, item->object_len);
  put_u64(&b, hash64(b.data, b.len, 0));

  char *temp = join(c->dir, ".tmp-XXXXXX");
  int fd = mkstemp(temp);
  bool ok = fd >= 0 && write_all(fd, b.data, b.len);
  if (fd >= 0 && close(fd) != 0)
    ok = false;
  if (ok && rename(temp, c->path) != 0)
    ok = false;
  int err = errno;
  if (!ok && fd >= 0)
    unlink(temp);
  trace(c, ok ? "stored" : "not stored:", ok ? c->path : c->dir, ok ? NULL : strerror(err));
  free(temp);
  free(b.data);
  if (ok)
    evict(c);
}
