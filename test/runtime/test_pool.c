/* test_pool.c: the runtime's thread pool (runtime/pool.c), run by pool.test.
 *
 * threads: prints sg_rt_num_threads() as the environment left it, then
 *   checks sg_set_num_threads: n threads as asked, 0 and negative mean all
 *   cores, huge values are capped at 64.
 * run: sg_rt_parallel_for covers every index exactly once in the chunks
 *   it promises, for 1, 2 and 3 threads; with 2 threads both really take
 *   part; a parallel loop inside a body and loops started by 4 user threads
 *   at once still cover everything; threads take runs of consecutive
 *   chunks, not every other one, and the caller takes the rest of a
 *   stalled worker's run; a GEMM large enough to be split gives
 *   the same bits on 1, 2 and 3 threads (and is right). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sg_runtime.h"
#include "sgrt.h"

#include "rtcheck.h"

static int cores(void) {
  long c = sysconf(_SC_NPROCESSORS_ONLN);
  return c < 1 ? 1 : c > 64 ? 64 : (int)c;
}

/* ---- coverage ---- */
typedef struct Cover {
  int64_t n, chunk;
  atomic_int *hits;
  atomic_int bad_range; /* a body got a range that is not one chunk */
  atomic_int nested;    /* run a parallel loop inside each body */
} Cover;

static void mark(void *ctx, int64_t begin, int64_t end) {
  Cover *c = ctx;
  int64_t want_end = begin + c->chunk < c->n ? begin + c->chunk : c->n;
  if (begin % c->chunk != 0 || end != want_end)
    atomic_fetch_add(&c->bad_range, 1);
  for (int64_t i = begin; i < end; i++)
    atomic_fetch_add(&c->hits[i], 1);
}

static void mark_nested(void *ctx, int64_t begin, int64_t end) {
  Cover *c = ctx;
  Cover inner = {end - begin, 7, c->hits + begin, 0, 0};
  sg_rt_parallel_for(inner.n, inner.chunk, mark, &inner);
  if (inner.bad_range)
    atomic_fetch_add(&c->bad_range, 1);
}

/* Runs one loop over n indices; returns the number of indices not hit
 * exactly once plus badly formed ranges. */
static int cover(int64_t n, int64_t chunk, int nested) {
  Cover c = {n, chunk, calloc((size_t)n + 1, sizeof(atomic_int)), 0, nested};
  sg_rt_parallel_for(n, chunk, nested ? mark_nested : mark, &c);
  int bad = c.bad_range;
  for (int64_t i = 0; i < n; i++)
    bad += c.hits[i] != 1;
  free(c.hits);
  return bad;
}

/* ---- participation: each chunk waits (up to a second) until two
 * different threads have entered some chunk ---- */
static atomic_int entered, meeting; /* meeting: numbers each such loop */
static _Thread_local int met;
static void meet(void *ctx, int64_t begin, int64_t end) {
  (void)ctx, (void)begin, (void)end;
  if (met != atomic_load(&meeting)) {
    met = atomic_load(&meeting);
    atomic_fetch_add(&entered, 1);
  }
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do
    clock_gettime(CLOCK_MONOTONIC, &t);
  while (atomic_load(&entered) < 2 && (t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 1000000000L);
}

/* ---- runs: which thread ran each chunk (1 or 2), each chunk busy for
 * about 2 us once both threads have entered ---- */
static atomic_int tags;
static _Thread_local int my_tag;
static int owner[1024];
static void tag(void *ctx, int64_t begin, int64_t end) {
  (void)ctx, (void)end;
  if (!my_tag)
    my_tag = atomic_fetch_add(&tags, 1) + 1;
  owner[begin] = my_tag;
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  do
    clock_gettime(CLOCK_MONOTONIC, &t);
  while ((atomic_load(&tags) < 2 && t.tv_sec - t0.tv_sec < 1) ||
         (t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 2000);
}

static void *user_thread(void *arg) {
  int *bad = arg;
  for (int k = 0; k < 50; k++)
    *bad += cover(10007, 97, 0);
  return NULL;
}

/* ---- gemm ---- */
static float *gemm_with(int threads, int64_t m, int64_t n, int64_t k, const float *a, const float *b) {
  float *c = malloc(sizeof(float) * (size_t)(m * n));
  sg_set_num_threads(threads);
  sg_rt_gemm_f32(0, 1, m, n, k, a, k, b, k, c, n, 0, 0);
  return c;
}

/* n numbers in [-1, 1] from an LCG, in steps of 1/1000. */
static void fill(float *p, int64_t n, uint64_t *x) {
  for (int64_t i = 0; i < n; i++) {
    *x = *x * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = (float)((*x >> 40) % 2001) / 1000.0f - 1;
  }
}

/* One product on 1, 2 and 3 threads: same bits, and right (every 97th
 * element against a double-precision sum). */
static void product(int ta, int tb, int64_t m, int64_t n, int64_t k) {
  float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(n * k));
  uint64_t x = 777;
  fill(a, m * k, &x);
  fill(b, n * k, &x);
  int64_t lda = ta ? m : k, ldb = tb ? k : n;
  float *c[3];
  for (int t = 0; t < 3; t++) {
    c[t] = malloc(sizeof(float) * (size_t)(m * n));
    sg_set_num_threads(t + 1);
    sg_rt_gemm_f32(ta, tb, m, n, k, a, lda, b, ldb, c[t], n, 0, 0);
  }
  int same = !memcmp(c[0], c[1], sizeof(float) * (size_t)(m * n)) &&
             !memcmp(c[0], c[2], sizeof(float) * (size_t)(m * n));
  double maxerr = 0;
  for (int64_t e = 0; e < m * n; e += 97) {
    int64_t i = e / n, j = e % n;
    double s = 0;
    for (int64_t p = 0; p < k; p++)
      s += (double)(ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
    maxerr = fmax(maxerr, fabs(s - c[0][e]) / (1 + sqrt((double)k)));
  }
  CHECK(same, "%lldx%lldx%lld (ta %d, tb %d): thread counts differ", (long long)m, (long long)n,
        (long long)k, ta, tb);
  CHECK(maxerr < 1e-4, "%lldx%lldx%lld: max error %g", (long long)m, (long long)n, (long long)k, maxerr);
  for (int t = 0; t < 3; t++)
    free(c[t]);
  free(a), free(b);
}

/* ---- a stalled thread: a worker that stops in its first chunk (as one
 * the system deschedules) holds up only that chunk; the caller runs the
 * rest of the worker's run, from its back ---- */
static pthread_t caller;
static atomic_int stalled, worker_chunks;
static void stall(void *ctx, int64_t begin, int64_t end) {
  (void)ctx, (void)begin, (void)end;
  if (pthread_equal(pthread_self(), caller)) { /* until the worker is in (1 s at most) */
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do
      clock_gettime(CLOCK_MONOTONIC, &t);
    while (!atomic_load(&stalled) && t.tv_sec - t0.tv_sec < 1);
    return;
  }
  atomic_fetch_add(&worker_chunks, 1);
  int expected = 0;
  if (atomic_compare_exchange_strong(&stalled, &expected, 1)) {
    struct timespec d = {0, 200000000}; /* 0.2 s: the caller is done long before */
    nanosleep(&d, NULL);
  }
}

/* ---- a busy machine: with the thread count "all cores", two jobs in a
 * row whose caller waits for a worker far longer than it worked (the
 * stalled worker above: 0.2 s) have the jobs after them run on the caller
 * alone for a while (pool.c, judge); a count the user chose is kept ---- */
static atomic_int off_caller;
static void where(void *ctx, int64_t begin, int64_t end) {
  (void)ctx, (void)begin, (void)end;
  if (!pthread_equal(pthread_self(), caller))
    atomic_fetch_add(&off_caller, 1);
}

static int64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void busy_machine(void) {
  if (cores() < 2) {
    printf("busy machine: one core, not run\n");
    return;
  }
  caller = pthread_self();
  sg_set_num_threads(0);
  int64_t before = sg_rt_pool_solo_until();
  atomic_store(&stalled, 0);
  sg_rt_parallel_for(256, 1, stall, NULL);
  CHECK(sg_rt_pool_solo_until() == before, "one contended job already made the pool solo");
  int64_t second = mono_ns();
  atomic_store(&stalled, 0);
  sg_rt_parallel_for(256, 1, stall, NULL);
  CHECK(sg_rt_pool_solo_until() > second, "two contended jobs in a row: the pool is not solo");
  /* (unless this thread lost its core past the solo time in between) */
  int64_t start = mono_ns();
  atomic_store(&off_caller, 0);
  sg_rt_parallel_for(64, 1, where, NULL);
  if (start < sg_rt_pool_solo_until())
    CHECK(atomic_load(&off_caller) == 0, "solo: %d chunks ran off the caller", atomic_load(&off_caller));
  sg_set_num_threads(2);
  atomic_store(&entered, 0);
  atomic_fetch_add(&meeting, 1);
  sg_rt_parallel_for(2, 1, meet, NULL);
  CHECK(atomic_load(&entered) == 2, "solo with 2 threads asked for: %d took part", atomic_load(&entered));
  printf("busy machine: solo after two contended jobs\n");
}

static void run(void) {
  int64_t sizes[][2] = {{1, 1}, {5, 1}, {100, 7}, {1000, 1000}, {10007, 97}, {64, 64}};
  for (int t = 1; t <= 3; t++) {
    sg_set_num_threads(t);
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
      int bad = cover(sizes[s][0], sizes[s][1], 0);
      CHECK(bad == 0, "%d threads, n = %lld, chunk = %lld: %d bad", t, (long long)sizes[s][0],
            (long long)sizes[s][1], bad);
    }
    CHECK(cover(5000, 100, 1) == 0, "%d threads: nested loops miss indices", t);
  }
  Cover empty = {0, 1, NULL, 0, 0};
  sg_rt_parallel_for(0, 10, mark, &empty); /* nothing to do: no call */

  sg_set_num_threads(2);
  atomic_store(&entered, 0);
  atomic_fetch_add(&meeting, 1);
  sg_rt_parallel_for(2, 1, meet, NULL);
  printf("2 threads: %d took part\n", atomic_load(&entered));

  /* Threads take runs of consecutive chunks, shorter as fewer are left:
   * on 2 threads, 1024 chunks in a few dozen runs (taking every other
   * chunk, it was hundreds), both threads running some. */
  atomic_store(&tags, 0);
  sg_rt_parallel_for(1024, 1, tag, NULL);
  int runs = 1, mine[3] = {0};
  for (int i = 0; i < 1024; i++) {
    runs += i > 0 && owner[i] != owner[i - 1];
    mine[owner[i] == 1 || owner[i] == 2 ? owner[i] : 0]++;
  }
  CHECK(runs <= 64 && mine[0] == 0 && mine[1] > 0 && mine[2] > 0,
        "1024 chunks on 2 threads: %d runs, %d and %d chunks (%d unowned)", runs, mine[1], mine[2],
        mine[0]);
  printf("2 threads, 1024 chunks: in runs\n");

  /* 256 chunks on 2 threads: the worker's first run is 64 of them, and
   * it runs only the one it stalls in (taking runs without sharing them,
   * it ran the whole run after the stall) */
  caller = pthread_self();
  atomic_store(&stalled, 0);
  atomic_store(&worker_chunks, 0);
  sg_rt_parallel_for(256, 1, stall, NULL);
  CHECK(atomic_load(&worker_chunks) == 1, "a stalled worker ran %d chunks, not 1",
        atomic_load(&worker_chunks));
  printf("2 threads, a worker stalled: the caller runs the rest of its run\n");

  busy_machine();

  pthread_t th[4];
  int bad[4] = {0};
  for (int k = 0; k < 4; k++)
    pthread_create(&th[k], NULL, user_thread, &bad[k]);
  for (int k = 0; k < 4; k++)
    pthread_join(th[k], NULL);
  CHECK(bad[0] + bad[1] + bad[2] + bad[3] == 0, "loops from 4 user threads missed indices");

  int64_t m = 301, n = 517, k = 403;
  float *a = malloc(sizeof(float) * (size_t)(m * k)), *b = malloc(sizeof(float) * (size_t)(n * k));
  uint64_t x = 12345;
  fill(a, m * k, &x);
  fill(b, n * k, &x);
  float *c1 = gemm_with(1, m, n, k, a, b), *c2 = gemm_with(2, m, n, k, a, b), *c3 = gemm_with(3, m, n, k, a, b);
  CHECK(memcmp(c1, c2, sizeof(float) * (size_t)(m * n)) == 0, "gemm: 1 and 2 threads differ");
  CHECK(memcmp(c1, c3, sizeof(float) * (size_t)(m * n)) == 0, "gemm: 1 and 3 threads differ");
  double maxerr = 0;
  for (int64_t i = 0; i < m; i += 7)
    for (int64_t j = 0; j < n; j++) {
      double s = 0;
      for (int64_t p = 0; p < k; p++)
        s += (double)a[i * k + p] * b[j * k + p];
      maxerr = fmax(maxerr, fabs(s - c1[i * n + j]));
    }
  CHECK(maxerr < 1e-3, "gemm: max error %g", maxerr);
  printf("gemm %lldx%lldx%lld: 1, 2 and 3 threads agree bit for bit\n", (long long)m,
         (long long)n, (long long)k);
  /* matrix-vector products: rows of dots, wide and narrow sums of rows */
  product(0, 0, 100003, 1, 16);
  product(1, 0, 100003, 1, 16);
  product(0, 0, 1, 20011, 50);
  product(0, 1, 1, 20011, 50);
  product(1, 0, 16, 1, 200003);
  product(0, 0, 1, 16, 200003);
  printf("matrix-vector products: 1, 2 and 3 threads agree bit for bit\n");
  /* products split into one part per thread, along m or along n, with
   * either operand transposed: the split moves, the bits do not */
  product(0, 0, 517, 301, 403);
  product(1, 1, 517, 301, 403);
  product(0, 0, 37, 2053, 300);
  product(0, 1, 13, 1000, 700);
  product(1, 0, 200, 97, 1000);
  printf("products split by thread count: 1, 2 and 3 threads agree bit for bit\n");
  free(a), free(b), free(c1), free(c2), free(c3);
}

static void threads(void) {
  printf("threads: %d (cores: %s)\n", sg_rt_num_threads(),
         sg_rt_num_threads() == cores() ? "same" : "different");
  sg_set_num_threads(3);
  CHECK(sg_rt_num_threads() == 3, "set(3): %d", sg_rt_num_threads());
  sg_set_num_threads(1);
  CHECK(sg_rt_num_threads() == 1, "set(1): %d", sg_rt_num_threads());
  sg_set_num_threads(0);
  CHECK(sg_rt_num_threads() == cores(), "set(0): %d, cores %d", sg_rt_num_threads(), cores());
  sg_set_num_threads(-4);
  CHECK(sg_rt_num_threads() == cores(), "set(-4): %d", sg_rt_num_threads());
  sg_set_num_threads(100000);
  CHECK(sg_rt_num_threads() == 64, "set(100000): %d", sg_rt_num_threads());
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "threads"))
    threads();
  else
    run();
  printf("%s: %d checks, %d failures\n", nfails ? "FAILED" : "PASSED", nchecks, nfails);
  return nfails != 0;
}
