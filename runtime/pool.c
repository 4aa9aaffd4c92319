/* pool.c: the runtime's thread pool (spec section 9: "a call may split its
 * work across up to sg_set_num_threads threads").
 *
 * sg_rt_parallel_for(n, chunk, body, ctx) runs body(ctx, begin, end) over
 * [0, n) in chunks of `chunk` indices (the last one shorter). The chunks
 * are the same whatever the number of threads -- only who runs which
 * chunk changes -- so code that keeps one partial result per chunk and
 * combines them in chunk order gets the same bits on 1, 2 or 64 threads.
 *
 * The calling thread runs chunks too; workers (created lazily, up to the
 * thread count minus one) take runs of consecutive chunks from one atomic
 * counter (run_chunks), and a run's last chunks go to any thread left
 * without work (take_chunk). One job runs at a time: a caller that finds the
 * pool busy (another user thread's call, or a parallel loop nested in a
 * chunk) runs its chunks itself, in order, which gives the same result.
 * The thread count comes from sg_set_num_threads, else the environment
 * variable SG_NUM_THREADS, else the number of online cores; 0 (or less)
 * means all cores.
 *
 * On a busy machine (more runnable threads than cores) the threads of a
 * job take turns on the cores with other programs: a job ends only when
 * its last thread has had its turn, and the caller waits for a worker that
 * lost its core in a chunk for up to a scheduler time slice. Bench
 * `--scaling` with two busy processes on two cores had all threads at
 * 0.66-0.97 of one. So the caller watches for that (contended, below) and
 * then runs its jobs alone for a while, SOLO_NS, doubling while the
 * machine stays busy, up to SOLO_MAX_NS, then tries the pool again; with
 * it, two threads ran at 0.94-1.30 times the speed of one there (W4:
 * 0.95-0.99, from 0.66). Only the count "all cores" (the default) is cut
 * so: a count the user set is what the user asked for.
 *
 * Workers spin briefly after a job (the next is usually close behind: a
 * gradient runs a dozen parallel loops per call), then sleep on a condition
 * variable until the next; they are stopped and
 * joined at process exit (so leak checkers see no live thread), and
 * forgotten in the child of a fork (threads do not survive it). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "rt_internal.h"
#include "sgrt.h"

enum { MAX_THREADS = 64 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;   /* job state */
static pthread_mutex_t submit = PTHREAD_MUTEX_INITIALIZER; /* one job at a time */
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;     /* a job or quit */
static pthread_cond_t idle = PTHREAD_COND_INITIALIZER;     /* busy became 0 */

static pthread_t workers[MAX_THREADS];
static int nworkers;
static int quit;

/* The current job (under `lock`, except the chunk counter). */
static sg_rt_body *job_body;
static void *job_ctx;
static int64_t job_n, job_chunk, job_nchunks;
static atomic_llong job_next;
static unsigned job_gen; /* bumped per job */
static int job_open;     /* workers may still join */
static int job_helpers;  /* workers 0..job_helpers-1 may join */
static atomic_int busy;  /* workers inside the job (changed under `lock`) */
static atomic_uint job_posted; /* job_gen as last posted, read while spinning */

/* A worker that finished a job, and the caller waiting for the workers to
 * finish one, first spin this many pauses (about 0.1-0.3 ms) before
 * sleeping on a condition variable: waking a sleeping thread took longer
 * than a chunk of a gradient's small loops, and W1's gradient runs ten
 * parallel loops per call: on two threads it took 1.80 ms, now 1.67-1.77
 * (1 thread: 2.9). */
enum { SPIN = 1 << 13 };

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* A job is contended when the caller was off its core for over a quarter
 * of the time it ran chunks (SLACK_NS / 5 aside; it never blocks there),
 * or waited for the workers over twice that time plus SLACK_NS. */
enum { SLACK_NS = 50000 };
static const int64_t SOLO_NS = 20000000, SOLO_MAX_NS = 200000000;
static _Atomic int64_t solo_until; /* CLOCK_MONOTONIC ns; 0: never */
static int64_t solo_ns;             /* the last solo period (under `submit`) */
static int strikes;                 /* contended jobs in a row (under `submit`) */
static unsigned jobs;               /* jobs on the pool (under `submit`) */
enum { CPU_EVERY = 8 };

static int64_t clock_ns(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}
static int64_t now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

static atomic_int requested = -1; /* sg_set_num_threads; -1: not called */
static int default_threads;
static atomic_bool asked_all;  /* sg_set_num_threads's count was "all cores" */
static bool default_all;       /* so was SG_NUM_THREADS's (or it is unset) */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int cores(void) {
  long c = sysconf(_SC_NPROCESSORS_ONLN);
  return c < 1 ? 1 : c > MAX_THREADS ? MAX_THREADS : (int)c;
}

/* A thread count: n <= 0 means all cores. */
static int clamp_threads(long n) {
  return n <= 0 ? cores() : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

static void stop_workers(void);
static void after_fork_child(void);
static void judge(int64_t t0, int64_t t1, int64_t t2, int64_t cpu);

static void init(void) {
  const char *env = getenv("SG_NUM_THREADS");
  char *end = NULL;
  long n = env ? strtol(env, &end, 10) : 0;
  /* anything but a whole number counts as unset */
  n = env && *env && end && !*end ? n : 0;
  default_threads = clamp_threads(n);
  default_all = n <= 0;
  atexit(stop_workers);
  pthread_atfork(NULL, NULL, after_fork_child);
}

void sg_set_num_threads(int n) {
  pthread_once(&once, init);
  atomic_store(&asked_all, n <= 0);
  atomic_store(&requested, clamp_threads(n));
}

/* Is the thread count "all cores" (which a busy machine may cut to one:
 * solo_until), not a number the user chose? */
static bool all_cores(void) { return atomic_load(&requested) > 0 ? atomic_load(&asked_all) : default_all; }

int64_t sg_rt_pool_solo_until(void) { return atomic_load(&solo_until); }

int sg_rt_num_threads(void) {
  pthread_once(&once, init);
  int r = atomic_load(&requested);
  return r > 0 ? r : default_threads;
}

/* Chunks are taken in runs of consecutive ones, each run a share of what
 * is left (half of it over the threads; "guided" scheduling), down to one
 * chunk at the end: a thread streams through memory in long runs instead
 * of every other chunk, which the hardware's prefetchers follow far
 * better, and the last runs are short enough to balance. The online pass
 * of W3 (two 64 MB streams read, exp computed) took 4.2-4.8 ms on two
 * threads taking every other chunk, 2.9-3.8 ms taking runs (one thread:
 * 5.7-6.2 ms). */
/*
 * A run is not a thread's until it is done: each thread's run is one word,
 * its next chunk and its end (runs[], slot 0 the caller's, worker k's
 * k + 1), from which the thread takes chunks at the front and, once no
 * chunk is left to claim, any other thread takes them at the back. So a
 * thread the system deschedules (another process on its core) holds up the
 * call by the chunk it is in, not by the rest of its run: on a busy
 * machine two threads were slower than one (bench `--scaling`, W1 and W4
 * at 0.74-0.96 of one thread with the other core taken). Jobs of 2^31
 * chunks or more take runs without sharing them. */
static _Atomic uint64_t runs[MAX_THREADS + 1];

static uint64_t run_word(int64_t next, int64_t end) { return (uint64_t)end << 32 | (uint64_t)next; }

/* A chunk of slot's run: the front one for its own thread, else the back
 * one; -1 if none is left. */
static int64_t take_chunk(int slot, bool front) {
  uint64_t w = atomic_load(&runs[slot]);
  for (;;) {
    int64_t next = (int64_t)(w & 0xffffffffu), end = (int64_t)(w >> 32);
    if (next >= end)
      return -1;
    uint64_t to = front ? run_word(next + 1, end) : run_word(next, end - 1);
    if (atomic_compare_exchange_weak(&runs[slot], &w, to))
      return front ? next : end - 1;
  }
}

static void run_one(sg_rt_body *body, void *ctx, int64_t n, int64_t chunk, int64_t k) {
  int64_t begin = k * chunk, end = n - begin < chunk ? n : begin + chunk;
  body(ctx, begin, end);
}

static void run_chunks(sg_rt_body *body, void *ctx, int64_t n, int64_t chunk,
                       int64_t nchunks, int threads, int slot) {
  bool share = nchunks < ((int64_t)1 << 31);
  for (;;) {
    int64_t c = atomic_load_explicit(&job_next, memory_order_relaxed), take;
    do {
      if (c >= nchunks)
        goto steal;
      take = (nchunks - c) / (2 * threads);
      if (take < 1)
        take = 1;
    } while (!atomic_compare_exchange_weak(&job_next, &c, c + take));
    if (!share) {
      for (int64_t k = c; k < c + take; k++)
        run_one(body, ctx, n, chunk, k);
      continue;
    }
    atomic_store(&runs[slot], run_word(c, c + take));
    for (int64_t k; (k = take_chunk(slot, true)) >= 0;)
      run_one(body, ctx, n, chunk, k);
  }
steal: /* the back chunks of the others' runs */
  for (bool found = share; found;) {
    found = false;
    for (int s = 0; s < threads; s++) {
      int64_t k = s == slot ? -1 : take_chunk(s, false);
      if (k >= 0) {
        run_one(body, ctx, n, chunk, k);
        found = true;
      }
    }
  }
}

static void *worker_main(void *arg) {
  int me = (int)(intptr_t)arg;
  unsigned seen = 0;
  bool spin = false;
  pthread_mutex_lock(&lock);
  for (;;) {
    while (!quit && !(job_open && job_gen != seen && me < job_helpers)) {
      if (spin) { /* the next job is likely close behind */
        spin = false;
        pthread_mutex_unlock(&lock);
        for (int i = 0; i < SPIN && atomic_load_explicit(&job_posted, memory_order_acquire) == seen; i++)
          cpu_relax();
        pthread_mutex_lock(&lock);
        continue;
      }
      pthread_cond_wait(&wake, &lock);
    }
    if (quit)
      break;
    seen = job_gen;
    atomic_fetch_add(&busy, 1);
    sg_rt_body *body = job_body;
    void *ctx = job_ctx;
    int64_t n = job_n, chunk = job_chunk, nchunks = job_nchunks;
    int threads = job_helpers + 1;
    pthread_mutex_unlock(&lock);
    run_chunks(body, ctx, n, chunk, nchunks, threads, me + 1);
    pthread_mutex_lock(&lock);
    if (atomic_fetch_sub(&busy, 1) == 1)
      pthread_cond_signal(&idle);
    spin = true;
  }
  pthread_mutex_unlock(&lock);
  return NULL;
}

/* Workers 0..want-1 exist (as many as could be created); returns how many. */
static int ensure_workers(int want) {
  pthread_mutex_lock(&lock);
  while (nworkers < want && !quit) {
    if (pthread_create(&workers[nworkers], NULL, worker_main, (void *)(intptr_t)nworkers) != 0)
      break;
    nworkers++;
  }
  int have = nworkers < want ? nworkers : want;
  pthread_mutex_unlock(&lock);
  return have;
}

void sg_rt_parallel_for(int64_t n, int64_t chunk, sg_rt_body *body, void *ctx) {
  if (n <= 0)
    return;
  if (chunk < 1)
    chunk = 1;
  int64_t nchunks = (n - 1) / chunk + 1;
  int threads = nchunks > 1 ? sg_rt_num_threads() : 1;
  if (threads > nchunks)
    threads = (int)nchunks;
  bool adapt = threads > 1 && all_cores();
  int64_t t0 = adapt ? now_ns() : 0;
  if (threads <= 1 || (adapt && t0 < atomic_load_explicit(&solo_until, memory_order_relaxed)) ||
      pthread_mutex_trylock(&submit) != 0) {
    for (int64_t begin = 0; begin < n; begin += chunk)
      body(ctx, begin, n - begin < chunk ? n : begin + chunk);
    return;
  }
  int helpers = ensure_workers(threads - 1);
  pthread_mutex_lock(&lock);
  job_body = body;
  job_ctx = ctx;
  job_n = n;
  job_chunk = chunk;
  job_nchunks = nchunks;
  atomic_store(&job_next, 0);
  for (int s = 0; s <= helpers; s++)
    atomic_store(&runs[s], 0);
  job_gen++;
  atomic_store_explicit(&job_posted, job_gen, memory_order_release);
  job_open = 1;
  job_helpers = helpers;
  pthread_cond_broadcast(&wake);
  pthread_mutex_unlock(&lock);
  /* the caller's CPU time, on every CPU_EVERY-th job: a system call
   * (0.65 us on a virtual machine, where a small job's share is 4 us) */
  bool sample = adapt && ++jobs % CPU_EVERY == 0;
  int64_t c0 = sample ? clock_ns(CLOCK_THREAD_CPUTIME_ID) : 0;
  run_chunks(body, ctx, n, chunk, nchunks, helpers + 1, 0);
  int64_t t1 = adapt ? now_ns() : 0, c1 = sample ? clock_ns(CLOCK_THREAD_CPUTIME_ID) : 0;
  /* Every chunk is taken; wait for the workers still running one (no
   * worker joins once job_open is 0). */
  pthread_mutex_lock(&lock);
  job_open = 0;
  pthread_mutex_unlock(&lock);
  for (int i = 0; i < SPIN && atomic_load_explicit(&busy, memory_order_acquire) > 0; i++)
    cpu_relax();
  pthread_mutex_lock(&lock);
  while (atomic_load(&busy) > 0)
    pthread_cond_wait(&idle, &lock);
  pthread_mutex_unlock(&lock);
  if (adapt)
    judge(t0, t1, now_ns(), sample ? c1 - c0 : -1);
  pthread_mutex_unlock(&submit);
}

/* After a job on the pool that began at t0, whose caller ran chunks until
 * t1 (for `cpu` ns of its own time; -1: not measured) and waited for its
 * workers until t2: contended or not, and solo_until. Under `submit`. */
static void judge(int64_t t0, int64_t t1, int64_t t2, int64_t cpu) {
  int64_t own = t1 - t0, off = cpu >= 0 ? own - cpu : 0;
  if (off > own / 4 + SLACK_NS / 5 || t2 - t1 > 2 * own + SLACK_NS) {
    /* contended: twice in a row at first (a lone one is noise: the
     * hypervisor, a timer), then once after each solo run */
    if (++strikes >= 2 || solo_ns) {
      solo_ns = solo_ns ? (solo_ns < SOLO_MAX_NS / 2 ? 2 * solo_ns : SOLO_MAX_NS) : SOLO_NS;
      atomic_store_explicit(&solo_until, t2 + solo_ns, memory_order_relaxed);
      strikes = 0;
    }
  } else if (cpu >= 0) { /* (a job not measured was not fully judged) */
    solo_ns = 0;
    strikes = 0;
  }
}

static void stop_workers(void) {
  /* A job still running on another thread at exit: leave the pool alone. */
  if (pthread_mutex_trylock(&submit) != 0)
    return;
  pthread_mutex_lock(&lock);
  quit = 1;
  pthread_cond_broadcast(&wake);
  int n = nworkers;
  pthread_mutex_unlock(&lock);
  for (int k = 0; k < n; k++)
    pthread_join(workers[k], NULL);
  pthread_mutex_lock(&lock);
  nworkers = 0;
  pthread_mutex_unlock(&lock);
  pthread_mutex_unlock(&submit);
}

/* The child of a fork has only the forking thread: no workers, and the
 * locks are reset (another thread may have held them at the fork). */
static void after_fork_child(void) {
  pthread_mutex_init(&lock, NULL);
  pthread_mutex_init(&submit, NULL);
  pthread_cond_init(&wake, NULL);
  pthread_cond_init(&idle, NULL);
  nworkers = 0;
  busy = 0;
  job_open = 0;
}
