/* Stress sgc_compile / sgc_free.
 *   cycles threads N FILE.sg   N threads at once, each compiling FILE.sg
 *                              (xent, xent_grad) and a broken program
 *                              three times, calling xent_grad and checking
 *                              its bits and the errors text against the
 *                              main thread's
 *   cycles leak N FILE.sg [OPTIONS]
 *                              5 cycles to warm up, then N compile/call/
 *                              free cycles, good and bad, and how much the
 *                              heap grew per cycle
 * Also checks the NULL arguments sgc.h allows. */
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sgc.h>

#include "slurp.h"

#include "sgtest.h"

typedef int XentGrad(const sg_tensor *, const sg_tensor *, const sg_tensor *, sg_tensor *,
                     sg_tensor *);

static const char bad_source[] = "export fn f(x: f32[n]) -> f32 {\n  return sum(x @ q);\n}\n";
static char *source, *bad_errors;
static const char *options = "-O2";
static float want_loss, want_dw[12];

/* One cycle: compile, call, free; returns 0 if every result is as expected. */
static int cycle(float *loss, float *dw) {
  char *errors = NULL;
  sgc_module *m = sgc_compile(source, "model.sg", options, &errors);
  if (!m) {
    printf("sgc_compile failed: %s\n", errors);
    free(errors);
    return 1;
  }
  XentGrad *grad = (XentGrad *)sgc_lookup(m, "xent_grad");
  float W[12], X[4] = {1, -2, 0.5f, 3}, Y[3] = {0, 0, 1};
  for (int i = 0; i < 12; i++)
    W[i] = (float)(i % 5) * 0.25f - 0.5f;
  sg_tensor w = {W, {3, 4}, 2, SG_F32}, x = {X, {4}, 1, SG_F32}, y = {Y, {3}, 1, SG_F32};
  sg_tensor out = {loss, {0}, 0, SG_F32}, d_w = {dw, {3, 4}, 2, SG_F32};
  int rc = grad ? grad(&w, &x, &y, &out, &d_w) : -1;
  sgc_free(m);
  m = sgc_compile(bad_source, "bad.sg", NULL, &errors);
  int bad = m != NULL || !errors || (bad_errors && strcmp(errors, bad_errors) != 0);
  if (!bad_errors)
    bad_errors = errors;
  else
    free(errors);
  sgc_free(m);
  return rc != SG_OK || bad;
}

static void *worker(void *arg) {
  int *failed = arg;
  for (int k = 0; k < 3; k++) {
    float loss, dw[12];
    if (cycle(&loss, dw) || memcmp(&loss, &want_loss, sizeof loss) ||
        memcmp(dw, want_dw, sizeof dw))
      (*failed)++;
  }
  return NULL;
}

int main(int argc, char **argv) {
  if (argc < 4)
    return 2;
  int n = atoi(argv[2]);
  source = slurp(argv[3]);
  if (argc > 4)
    options = argv[4];
  char *errors = NULL;
  CHECK(sgc_compile(NULL, "x.sg", NULL, &errors) == NULL);
  CHECK_STR(errors ? errors : "(null)", "sgc: error: no source (NULL)\n");
  free(errors);
  CHECK(sgc_compile(bad_source, NULL, NULL, NULL) == NULL); /* errors may be NULL */
  CHECK(sgc_header(NULL) == NULL);
  CHECK(cycle(&want_loss, want_dw) == 0);
  printf("errors of the bad program:\n%s", bad_errors);
  if (strcmp(argv[1], "threads") == 0) {
    pthread_t tid[64];
    int failed[64] = {0};
    for (int t = 0; t < n; t++)
      pthread_create(&tid[t], NULL, worker, &failed[t]);
    int total = 0;
    for (int t = 0; t < n; t++) {
      pthread_join(tid[t], NULL);
      total += failed[t];
    }
    printf("%d threads x 3 cycles: %d failed\n", n, total);
    CHECK_EQ_INT(total, 0);
  } else {
    float loss, dw[12];
    for (int k = 0; k < 5 && n > 0; k++)
      cycle(&loss, dw); /* LLVM's and the C library's one-time allocations */
    size_t before = mallinfo2().uordblks;
    for (int k = 0; k < n; k++)
      CHECK(cycle(&loss, dw) == 0);
    size_t after = mallinfo2().uordblks;
    /* What LLVM's JIT keeps per instance after it is gone (its worker
     * threads' bookkeeping) is a few hundred bytes; forgetting to free
     * the IR, the LLVM module or the JIT would be tens of kilobytes. */
    long per_cycle = n ? ((long)after - (long)before) / n : 0;
    printf("%d cycles: heap grew by %s\n", n, per_cycle < 1024 ? "less than 1 KB a cycle" : "MORE");
    if (per_cycle >= 1024)
      printf("  %ld bytes a cycle\n", per_cycle);
  }
  free(bad_errors);
  free(source);
  return sgt_failures != 0;
}
