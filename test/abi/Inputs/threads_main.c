/* Driver for threads.test and thread_errors.test.
 *
 * results: mlp_loss_grad (examples/mlp.sg) called from 4 threads at once,
 *   each on its own data and sizes, many times; every result must equal,
 *   bit for bit, the one computed for the same data on the main thread
 *   before any thread started.
 * errors: sg_last_error() is per thread. In each round 4 threads make
 *   their call at the same time (one argument error each, of different
 *   kinds, and one thread whose calls all succeed), then each reads its own
 *   message: it must be exactly the one for its own failure, and empty on
 *   the thread that never failed. The main thread's message survives. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "mlp.h"
#include "sgtest.h"

#define NTHREADS 4
#define ITERS 300  /* rounds of the errors mode */
#define CALLS 5000 /* calls per thread in the results mode */

typedef struct {
  int id;
  int64_t d, h, o, n;
  sg_tensor in[6], out[5], ref[5];
  int bad; /* results: number of mismatching calls */
} Work;

static size_t bytes(const sg_tensor *t) { return (size_t)sgt_numel(t) * 4; }

static int call(sg_tensor *in, sg_tensor *out) {
  return mlp_loss_grad(&in[0], &in[1], &in[2], &in[3], &in[4], &in[5], &out[0], &out[1],
                       &out[2], &out[3], &out[4]);
}

static void make(Work *w, int id) {
  w->id = id;
  w->d = 13 + id, w->h = 32 + 3 * id, w->o = 2 + id % 2, w->n = 47 + 5 * id;
  w->in[0] = SGT_TENSOR(SG_F32, w->d, w->h);
  w->in[1] = SGT_TENSOR(SG_F32, w->h);
  w->in[2] = SGT_TENSOR(SG_F32, w->h, w->o);
  w->in[3] = SGT_TENSOR(SG_F32, w->o);
  w->in[4] = SGT_TENSOR(SG_F32, w->n, w->d);
  w->in[5] = SGT_TENSOR(SG_F32, w->n, w->o);
  for (int i = 0; i < 6; i++)
    sgt_fill(&w->in[i], -1, 1);
  for (int r = 0; r < 2; r++) {
    sg_tensor *o = r ? w->ref : w->out;
    o[0] = sgt_scalar(SG_F32);
    for (int i = 0; i < 4; i++)
      o[1 + i] = sgt_tensor(SG_F32, w->in[i].rank, w->in[i].shape);
  }
}

static void unmake(Work *w) {
  for (int i = 0; i < 6; i++)
    free(w->in[i].data);
  for (int i = 0; i < 5; i++)
    free(w->out[i].data), free(w->ref[i].data);
}

static pthread_barrier_t barrier;

static void *results_thread(void *arg) {
  Work *w = arg;
  pthread_barrier_wait(&barrier); /* all start together */
  for (int it = 0; it < CALLS; it++) {
    for (int i = 0; i < 5; i++)
      memset(w->out[i].data, 0xA5, bytes(&w->out[i]));
    int rc = call(w->in, w->out);
    bool same = rc == SG_OK;
    for (int i = 0; i < 5 && same; i++)
      same = memcmp(w->out[i].data, w->ref[i].data, bytes(&w->out[i])) == 0;
    w->bad += !same;
  }
  return NULL;
}

static int results(void) {
  Work w[NTHREADS];
  for (int t = 0; t < NTHREADS; t++) {
    make(&w[t], t);
    CHECK_EQ_INT(call(w[t].in, w[t].ref), SG_OK);
    w[t].bad = 0;
  }
  pthread_barrier_init(&barrier, NULL, NTHREADS);
  pthread_t th[NTHREADS];
  for (int t = 0; t < NTHREADS; t++)
    CHECK_EQ_INT(pthread_create(&th[t], NULL, results_thread, &w[t]), 0);
  for (int t = 0; t < NTHREADS; t++)
    CHECK_EQ_INT(pthread_join(th[t], NULL), 0);
  pthread_barrier_destroy(&barrier);
  for (int t = 0; t < NTHREADS; t++) {
    printf("thread %d: %d calls, %d differ from the single-threaded result\n", t, CALLS,
           w[t].bad);
    if (w[t].bad)
      sgt_failures++;
    unmake(&w[t]);
  }
  return sgt_finish();
}

/* ---- errors ---- */

static Work ew[NTHREADS];
static char expected[NTHREADS][256];
static int wrong[NTHREADS];

static void *errors_thread(void *arg) {
  Work *w = arg;
  int id = w->id;
  sg_tensor in[6], out[5];
  memcpy(in, w->in, sizeof in);
  memcpy(out, w->out, sizeof out);
  int want = SG_OK;
  switch (id) {
  case 0: /* x has one column too many */
    in[4].shape[1] = w->d + 1;
    want = SG_ERR_SHAPE;
    break;
  case 1: /* b2 is f64 */
    in[3].dtype = SG_F64;
    want = SG_ERR_DTYPE;
    break;
  case 2: /* d_b1 is NULL */
    want = SG_ERR_NULL;
    break;
  default: /* succeeds */
    break;
  }
  for (int round = 0; round < ITERS; round++) {
    pthread_barrier_wait(&barrier);
    int rc = id == 2 ? mlp_loss_grad(&in[0], &in[1], &in[2], &in[3], &in[4], &in[5], &out[0],
                                     &out[1], NULL, &out[3], &out[4])
                     : call(in, out);
    pthread_barrier_wait(&barrier);
    if (rc != want || strcmp(sg_last_error(), expected[id]) != 0) {
      if (!wrong[id])
        printf("FAIL thread %d round %d: rc %d, message \"%s\"\n", id, round, rc,
               sg_last_error());
      wrong[id]++;
    }
  }
  return NULL;
}

static int errors(void) {
  /* The main thread fails first; its message must outlive every thread's. */
  Work mw;
  make(&mw, 0);
  mw.in[0].shape[0] = 2;
  CHECK_EQ_INT(call(mw.in, mw.out), SG_ERR_SHAPE);
  char mine[256];
  snprintf(mine, sizeof mine, "%s", sg_last_error());
  printf("main: %s\n", mine);

  for (int t = 0; t < NTHREADS; t++)
    make(&ew[t], t);
  snprintf(expected[0], 256,
           "mlp_loss_grad: argument 'x' has shape [%lld, %lld], expected [n, d] with d = %lld "
           "(bound by 'w1')",
           (long long)ew[0].n, (long long)ew[0].d + 1, (long long)ew[0].d);
  snprintf(expected[1], 256, "mlp_loss_grad: argument 'b2' has dtype f64, expected f32");
  snprintf(expected[2], 256, "mlp_loss_grad: argument 'd_b1' is NULL");
  expected[3][0] = 0;
  pthread_barrier_init(&barrier, NULL, NTHREADS);
  pthread_t th[NTHREADS];
  for (int t = 0; t < NTHREADS; t++)
    CHECK_EQ_INT(pthread_create(&th[t], NULL, errors_thread, &ew[t]), 0);
  for (int t = 0; t < NTHREADS; t++)
    CHECK_EQ_INT(pthread_join(th[t], NULL), 0);
  pthread_barrier_destroy(&barrier);
  for (int t = 0; t < NTHREADS; t++) {
    printf("thread %d: \"%s\" in %d of %d rounds\n", t, expected[t], ITERS - wrong[t], ITERS);
    sgt_failures += wrong[t] != 0;
    unmake(&ew[t]);
  }
  CHECK_STR(sg_last_error(), mine);
  unmake(&mw);
  return sgt_finish();
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "results"))
    return results();
  if (argc > 1 && !strcmp(argv[1], "errors"))
    return errors();
  printf("usage: prog results|errors\n");
  return 2;
}
