/* Driver for the workspace tests (spec section 9: temporaries are kept per
 * thread between calls).
 *
 * reuse: mlp_loss_grad at a size whose temporaries and GEMM packing take
 *   megabytes (glibc maps such blocks fresh on every malloc). After one
 *   call, 20 more calls with the same shapes make no malloc at all (this
 *   program interposes malloc and friends to count them) and take no minor
 *   page fault (getrusage), and give the same bits (on one thread).
 * release: sg_release_workspace() frees the thread's cached block (its size
 *   drops to 0), the next call works and gives the same bits; a smaller
 *   call after a larger one reuses the larger block.
 * liveness: chain (Inputs/chain.sg) needs 4 temporaries of n*n floats but
 *   never more than 2 at once: its block is exactly 2 of them, for several n,
 *   and its result matches a double-precision reference. A block of at most
 *   4096 bytes is in the function's frame and takes no workspace.
 * threads: 4 threads each call, never release, and exit (under valgrind:
 *   their blocks must be freed at thread exit); the main thread does not
 *   release either (freed at exit). */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/resource.h>

#include "chain.h"
#include "mlp.h"
#include "sgrt.h"
#include "sgtest.h"

/* ---- counting allocations (glibc's internal entry points do the work;
 * only with -DCOUNT_ALLOCS: sanitizers and valgrind replace malloc too) ---- */
static long nallocs;
#ifdef COUNT_ALLOCS
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

void *malloc(size_t n) { nallocs++; return __libc_malloc(n); }
void *calloc(size_t a, size_t b) { nallocs++; return __libc_calloc(a, b); }
void *realloc(void *p, size_t n) { nallocs++; return __libc_realloc(p, n); }
void *aligned_alloc(size_t al, size_t n) { nallocs++; return __libc_memalign(al, n); }
void *memalign(size_t al, size_t n) { nallocs++; return __libc_memalign(al, n); }
int posix_memalign(void **p, size_t al, size_t n) {
  nallocs++;
  *p = __libc_memalign(al, n);
  return *p ? 0 : 12; /* ENOMEM */
}
void free(void *p) { __libc_free(p); }
#endif

static long minflt(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

/* ---- mlp_loss_grad on its own data ---- */
typedef struct {
  sg_tensor in[6], out[5];
} Mlp;

static void mlp_make(Mlp *m, int64_t n, int64_t d, int64_t h, int64_t o) {
  m->in[0] = SGT_TENSOR(SG_F32, d, h);
  m->in[1] = SGT_TENSOR(SG_F32, h);
  m->in[2] = SGT_TENSOR(SG_F32, h, o);
  m->in[3] = SGT_TENSOR(SG_F32, o);
  m->in[4] = SGT_TENSOR(SG_F32, n, d);
  m->in[5] = SGT_TENSOR(SG_F32, n, o);
  for (int i = 0; i < 6; i++)
    sgt_fill(&m->in[i], -1, 1);
  m->out[0] = sgt_scalar(SG_F32);
  for (int i = 0; i < 4; i++)
    m->out[i + 1] = sgt_tensor(SG_F32, m->in[i].rank, m->in[i].shape);
}

static int mlp_call(Mlp *m) {
  sg_tensor *in = m->in, *out = m->out;
  return mlp_loss_grad(&in[0], &in[1], &in[2], &in[3], &in[4], &in[5], &out[0], &out[1],
                       &out[2], &out[3], &out[4]);
}

static size_t nbytes(const sg_tensor *t) { return (size_t)sgt_numel(t) * 4; }

/* Copies of the outputs, to compare bit for bit. */
static void snapshot(const Mlp *m, void **copy) {
  for (int i = 0; i < 5; i++) {
    copy[i] = malloc(nbytes(&m->out[i]) + 1);
    memcpy(copy[i], m->out[i].data, nbytes(&m->out[i]));
  }
}

static int same(const Mlp *m, void **copy) {
  for (int i = 0; i < 5; i++)
    if (memcmp(copy[i], m->out[i].data, nbytes(&m->out[i])) != 0)
      return 0;
  return 1;
}

static void mlp_free(Mlp *m, void **copy) {
  for (int i = 0; i < 6; i++)
    free(m->in[i].data);
  for (int i = 0; i < 5; i++)
    free(m->out[i].data), free(copy ? copy[i] : NULL);
}

static void reuse(void) {
  /* One thread: RUSAGE_SELF counts the pool's workers too, and a worker
   * that happens to take its first chunk in a later call faults its own
   * workspace in then (seen on a loaded CI machine). */
  sg_set_num_threads(1);
  Mlp m;
  mlp_make(&m, 1024, 512, 512, 128);
  void *ref[5];
  long f0 = minflt(), a0 = nallocs;
  CHECK_EQ_INT(mlp_call(&m), SG_OK);
  long first_faults = minflt() - f0, first_allocs = nallocs - a0;
  snapshot(&m, ref);
  enum { N = 20 };
  int differ = 0;
  long f1 = minflt(), a1 = nallocs;
  for (int k = 0; k < N; k++) {
    CHECK_EQ_INT(mlp_call(&m), SG_OK);
    differ += !same(&m, ref);
  }
  long faults = minflt() - f1, allocs = nallocs - a1;
  printf("first call: %ld minor faults, %ld allocations, workspace %lld bytes\n", first_faults,
         first_allocs, (long long)sg_rt_ws_bytes());
  printf("next %d calls: %ld minor faults, %ld allocations, %d results differ\n", N, faults,
         allocs, differ);
  CHECK(first_faults > 0);
#ifdef COUNT_ALLOCS
  CHECK(first_allocs > 0);
#endif
  mlp_free(&m, ref);
}

static void release(void) {
  Mlp big, small;
  mlp_make(&big, 300, 40, 64, 8);
  mlp_make(&small, 30, 40, 64, 8);
  void *ref[5], *sref[5];
  CHECK_EQ_INT(mlp_call(&big), SG_OK);
  snapshot(&big, ref);
  int64_t cap = sg_rt_ws_bytes();
  CHECK(cap > 0);
  CHECK_EQ_INT(mlp_call(&small), SG_OK);
  snapshot(&small, sref);
  CHECK_EQ_INT(sg_rt_ws_bytes(), cap); /* the larger block serves the smaller call */
  sg_release_workspace();
  CHECK_EQ_INT(sg_rt_ws_bytes(), 0);
  sg_release_workspace(); /* twice is harmless */
  CHECK_EQ_INT(mlp_call(&small), SG_OK);
  CHECK(same(&small, sref));
  CHECK(sg_rt_ws_bytes() > 0 && sg_rt_ws_bytes() < cap);
  memset(big.out[1].data, 0, nbytes(&big.out[1]));
  CHECK_EQ_INT(mlp_call(&big), SG_OK);
  CHECK(same(&big, ref));
  CHECK_EQ_INT(sg_rt_ws_bytes(), cap);
  printf("release: workspace %lld bytes, freed, calls after it agree bit for bit\n",
         (long long)cap);
  mlp_free(&big, ref);
  mlp_free(&small, sref);
}

static void liveness(void) {
  int64_t sizes[] = {3, 16, 33, 64};
  for (int s = 0; s < 4; s++) {
    int64_t n = sizes[s];
    sg_tensor x = SGT_TENSOR(SG_F32, n, n), w = SGT_TENSOR(SG_F32, n, n), out = sgt_scalar(SG_F32);
    sgt_fill(&x, -1, 1);
    sgt_fill(&w, -0.5, 0.5);
    sg_release_workspace();
    CHECK_EQ_INT(chain(&x, &w, &out), SG_OK);
    int64_t one = (n * n * 4 + 63) / 64 * 64;
    if (2 * one <= 4096) { /* in the function's frame: nothing taken */
      printf("n = %lld: in the frame (2 temporaries of %lld), workspace %lld bytes\n", (long long)n,
             (long long)one, (long long)sg_rt_ws_bytes());
      CHECK_EQ_INT(sg_rt_ws_bytes(), 0);
    } else {
      printf("n = %lld: workspace %lld bytes = %lld temporaries of %lld\n", (long long)n,
             (long long)sg_rt_ws_bytes(), (long long)(sg_rt_ws_bytes() / one), (long long)one);
      CHECK_EQ_INT(sg_rt_ws_bytes(), 2 * one);
    }
    /* reference: x @ w four times, in double */
    double *a = malloc(sizeof(double) * (size_t)(n * n)), *b = malloc(sizeof(double) * (size_t)(n * n));
    for (int64_t i = 0; i < n * n; i++)
      a[i] = sgt_get(&x, i);
    for (int r = 0; r < 4; r++) {
      for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j < n; j++) {
          double acc = 0;
          for (int64_t k = 0; k < n; k++)
            acc += a[i * n + k] * sgt_get(&w, k * n + j);
          b[i * n + j] = acc;
        }
      double *t = a;
      a = b, b = t;
    }
    double sum = 0;
    for (int64_t i = 0; i < n * n; i++)
      sum += a[i];
    CHECK_CLOSE(sgt_get(&out, 0), sum, 1e-4);
    free(a), free(b), free(x.data), free(w.data), free(out.data);
  }
}

static void *thread_main(void *arg) {
  Mlp *m = arg;
  CHECK_EQ_INT(mlp_call(m), SG_OK);
  CHECK(sg_rt_ws_bytes() > 0);
  return NULL;
}

static void threads(void) {
  Mlp m[4];
  pthread_t t[4];
  for (int i = 0; i < 4; i++)
    mlp_make(&m[i], 20 + i, 6, 16, 3);
  for (int i = 0; i < 4; i++)
    pthread_create(&t[i], NULL, thread_main, &m[i]);
  for (int i = 0; i < 4; i++)
    pthread_join(t[i], NULL);
  CHECK_EQ_INT(mlp_call(&m[0]), SG_OK);
  for (int i = 0; i < 4; i++)
    mlp_free(&m[i], NULL);
  printf("threads: 4 threads called and exited without releasing\n");
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  if (!strcmp(mode, "reuse"))
    reuse();
  else if (!strcmp(mode, "release"))
    release();
  else if (!strcmp(mode, "liveness"))
    liveness();
  else if (!strcmp(mode, "threads"))
    threads();
  else
    return 2;
  return sgt_finish();
}
