/* make bench: examples/lstm.sg's gradient (sgc, f32) against the same
 * gradient written by hand in C (lstm_hand.c, gcc -O3 -march=native), on
 * ADBench's sizes: alphabet b = 14, a sequence of c = 1,024 characters
 * (1,023 steps), one thread. Checks that the two agree, prints the median
 * time per call of each (thread CPU time) and their ratio.
 * Usage: lstm_bench [b c [repeats]] */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lstm.h"
#include "lstm_hand.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  int64_t b = argc > 2 ? atoll(argv[1]) : 14, c = argc > 2 ? atoll(argv[2]) : 1024;
  int reps = argc > 3 ? atoi(argv[3]) : 31;
  float *m = malloc((size_t)(16 * b) * 4), *e = malloc((size_t)(3 * b) * 4);
  float *s = malloc((size_t)(4 * b) * 4), *q = calloc((size_t)(c * b), 4);
  float *dm[2], *de[2], loss[2];
  for (int v = 0; v < 2; v++)
    dm[v] = malloc((size_t)(16 * b) * 4), de[v] = malloc((size_t)(3 * b) * 4);
  unsigned r = 12345;
#define RND() ((float)((r = r * 1103515245u + 12345u) >> 8 & 0xffff) / 65536.0f - 0.5f)
  for (int64_t i = 0; i < 16 * b; i++)
    m[i] = 1.4f * RND();
  for (int64_t i = 0; i < 3 * b; i++)
    e[i] = 2 * RND();
  for (int64_t i = 0; i < 4 * b; i++)
    s[i] = RND();
  for (int64_t t = 0; t < c; t++)
    q[t * b + (t * 7 + 3) % b] = 1;
  sg_tensor tm = {m, {4, 4, b}, 3, SG_F32}, te = {e, {3, b}, 2, SG_F32};
  sg_tensor ts = {s, {4, b}, 2, SG_F32}, tq = {q, {c, b}, 2, SG_F32};
  sg_tensor to = {&loss[0], {0}, 0, SG_F32}, tdm = {dm[0], {4, 4, b}, 3, SG_F32};
  sg_tensor tde = {de[0], {3, b}, 2, SG_F32};
  sg_set_num_threads(1);
  double *ts_sgc = malloc(sizeof(double) * (size_t)reps), *ts_hand = malloc(sizeof(double) * (size_t)reps);
  for (int k = 0; k < reps; k++) { /* alternating, so that load hits both alike */
    double t0 = now();
    if (lstm_loss_grad(&tm, &te, &ts, &tq, &to, &tdm, &tde) != SG_OK) {
      fprintf(stderr, "lstm_loss_grad: %s\n", sg_last_error());
      return 2;
    }
    double t1 = now();
    if (lstm_hand_f32(b, c, m, e, s, q, &loss[1], dm[1], de[1]) != 0)
      return 2;
    double t2 = now();
    ts_sgc[k] = t1 - t0, ts_hand[k] = t2 - t1;
  }
  double err = fabs(loss[0] - loss[1]), scale = fabs(loss[1]);
  for (int64_t i = 0; i < 16 * b; i++)
    err = fmax(err, fabs(dm[0][i] - dm[1][i])), scale = fmax(scale, fabs(dm[1][i]));
  for (int64_t i = 0; i < 3 * b; i++)
    err = fmax(err, fabs(de[0][i] - de[1][i])), scale = fmax(scale, fabs(de[1][i]));
  qsort(ts_sgc, (size_t)reps, sizeof(double), cmp);
  qsort(ts_hand, (size_t)reps, sizeof(double), cmp);
  double a = ts_sgc[reps / 2] * 1e3, h = ts_hand[reps / 2] * 1e3;
  printf("lstm b=%lld c=%lld (%lld steps), gradient: sgc %.3f ms, hand-written C %.3f ms, "
         "sgc/C %.2f; agree to %.1e (relative)\n",
         (long long)b, (long long)c, (long long)(c - 1), a, h, a / h, err / scale);
  int bad = !(err <= 1e-3 * scale);
  if (bad)
    printf("FAIL: the gradients disagree\n");
  free(m), free(e), free(s), free(q), free(ts_sgc), free(ts_hand);
  for (int v = 0; v < 2; v++)
    free(dm[v]), free(de[v]);
  return bad;
}
