/* prefetch_bench.c: how fast one thread reads 64 MB from cold memory, by
 * how it asks for it (not part of the test suite; see bench/README.md,
 * "W2 and the prefetch ceiling"). The loop reads the array a kilobyte (16
 * cache lines) at a time, adding the lines into four vector sums, with
 * `work` dependent multiply-adds per kilobyte after (W2's loop computes
 * about as much as work = 12), and asks for later lines one of three ways:
 *   none     no software prefetch: the core's reads and the hardware
 *            prefetchers alone
 *   lines    a prefetch of every line 8 KB ahead (what sgc's fused
 *            matrix-vector pair does, runtime/pair_tmpl.h)
 *   pages    one prefetch per 4 KB page, 8 KB ahead
 * Before every read, 128 MB of another array are read twice, so that
 * nothing of the 64 MB is left in any cache. Prints the median of 25
 * reads of each, alternated, in ns per cache line and GB/s.
 * Build and run: sh bench/prefetch/run.sh [work...] */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef float v16 __attribute__((vector_size(64)));

enum { NONE, LINES, PAGES, NWAYS, ROUNDS = 25, AHEAD = 8192 };
static const char *way_name[NWAYS] = {"none", "lines", "pages"};

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static v16 load(const float *p) {
  v16 v;
  memcpy(&v, p, sizeof v);
  return v;
}

static __attribute__((noinline)) float read_all(const float *x, int64_t n, int way, int work) {
  v16 s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
  const v16 c = {1.0001f, 1.0001f, 1.0001f, 1.0001f, 1.0001f, 1.0001f, 1.0001f, 1.0001f,
                 1.0001f, 1.0001f, 1.0001f, 1.0001f, 1.0001f, 1.0001f, 1.0001f, 1.0001f};
  for (int64_t i = 0; i < n; i += 256) { /* a kilobyte */
    const char *ahead = (const char *)(x + i) + AHEAD;
    if (way == LINES)
      for (int l = 0; l < 16; l++)
        __builtin_prefetch(ahead + 64 * l);
    else if (way == PAGES && (i & 1023) == 0)
      __builtin_prefetch(ahead);
    for (int q = 0; q < 256; q += 64) {
      s0 += load(x + i + q), s1 += load(x + i + q + 16);
      s2 += load(x + i + q + 32), s3 += load(x + i + q + 48);
    }
    v16 t = s0;
    for (int w = 0; w < work; w++)
      t = t * c + c;
    s1 += t * 0.0f;
  }
  v16 t = (s0 + s1) + (s2 + s3);
  float r = 0;
  for (int k = 0; k < 16; k++)
    r += t[k];
  return r;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  const int64_t n = 16 << 20, nflush = 32 << 20; /* 64 MB, 128 MB */
  float *x = aligned_alloc(64, (size_t)n * 4), *f = aligned_alloc(64, (size_t)nflush * 4);
  if (!x || !f) {
    fprintf(stderr, "prefetch_bench: out of memory\n");
    return 2;
  }
  for (int64_t i = 0; i < n; i++)
    x[i] = 1;
  memset(f, 0, (size_t)nflush * 4);
  volatile float sink = 0;
  for (int a = 1; a < argc || a == 1; a++) {
    int work = argc > 1 ? atoi(argv[a]) : 0;
    static double t[NWAYS][ROUNDS];
    for (int r = 0; r < ROUNDS; r++)
      for (int way = 0; way < NWAYS; way++) {
        for (int rep = 0; rep < 2; rep++) {
          float s = 0;
          for (int64_t i = 0; i < nflush; i += 16)
            s += f[i];
          sink += s;
        }
        double t0 = now();
        sink += read_all(x, n, way, work);
        t[way][r] = now() - t0;
      }
    for (int way = 0; way < NWAYS; way++) {
      qsort(t[way], ROUNDS, sizeof(double), cmp_double);
      double med = t[way][ROUNDS / 2];
      printf("work %2d  %-6s %.3f ns a line  %5.1f GB/s\n", work, way_name[way],
             med / (double)(n / 16) * 1e9, 4.0 * (double)n / med / 1e9);
    }
  }
  free(x), free(f);
  return 0;
}
