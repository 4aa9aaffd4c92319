#define _POSIX_C_SOURCE 200809L
/* Issue 29's speed figures (bench/derivs/run.sh): the cost of a derivative
 * as a ratio to the computation it differentiates, both sgc's, timed in the
 * same rounds:
 *   hvp/grad   a Hessian-vector product (f_hvp: forward over reverse) against
 *              the gradient (f_grad): newton_cg's logistic loss, and
 *              spring_sensitivity's fitting loss through its loop
 *              (target: at most 4);
 *   jac/fwd    the spring's trajectory Jacobian with respect to its three
 *              parameters (jacobian by columns: one forward sweep carrying
 *              three tangents) against one forward simulation with its
 *              loss (fit) (target: at most 3).
 * Timing: warm-up, then alternating rounds (a, b, a, b, ...), each sample a
 * batch of calls lasting a few ms of this process's CPU time; the time per
 * call is the median sample and the ratio the median of the per-round
 * ratios. One thread (sg_set_num_threads(1)). Agreement: the Hessian-vector
 * product's gradient part equals f_grad's bit for bit; otherwise the row
 * says FAIL and the program exits 1.
 * Usage: derivs_bench [--budget SECONDS] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <time.h>

#include "newton_cg.h"
#include "spring_sensitivity.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static sg_tensor tensor(int rank, const int64_t *shape, int dtype) {
  sg_tensor t;
  memset(&t, 0, sizeof t);
  t.rank = rank;
  t.dtype = dtype;
  int64_t n = 1;
  for (int i = 0; i < rank; i++)
    n *= t.shape[i] = shape[i];
  t.data = calloc((size_t)(n ? n : 1), dtype == SG_F64 ? 8 : 4);
  return t;
}
#define T(dt, ...) tensor((int)(sizeof((int64_t[]){__VA_ARGS__}) / 8), (int64_t[]){__VA_ARGS__}, dt)
#define S(dt) tensor(0, NULL, dt)
static double *D(sg_tensor *t) { return t->data; }
static double urand(void) { return (double)rand() / RAND_MAX - 0.5; }

typedef int (*Call)(void);
static double budget = 1.5;

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* seconds per call of f, batched to about 5 ms */
static double sample(Call f, int reps) {
  double t0 = now();
  for (int r = 0; r < reps; r++)
    if (f() != SG_OK) {
      fprintf(stderr, "derivs_bench: %s\n", sg_last_error());
      exit(2);
    }
  return (now() - t0) / reps;
}

static void row(const char *name, const char *what, Call a, Call b, double target, bool same) {
  int ra = 1, rb = 1;
  double ta = sample(a, 1), tb = sample(b, 1); /* warm-up, and the batch sizes */
  ra = (int)fmax(1, 0.005 / fmax(ta, 1e-9));
  rb = (int)fmax(1, 0.005 / fmax(tb, 1e-9));
  enum { MAX = 400 };
  double sa[MAX], sb[MAX], ratio[MAX];
  int n = 0;
  double start = now();
  while (n < MAX && (n < 5 || now() - start < budget)) {
    sa[n] = sample(a, ra);
    sb[n] = sample(b, rb);
    ratio[n] = sa[n] / sb[n];
    n++;
  }
  qsort(sa, (size_t)n, sizeof(double), cmp);
  qsort(sb, (size_t)n, sizeof(double), cmp);
  qsort(ratio, (size_t)n, sizeof(double), cmp);
  double r = ratio[n / 2];
  printf("%-28s %-10s %10.3f %10.3f %7.2f  %s %.1f%s\n", name, what, 1e3 * sa[n / 2],
         1e3 * sb[n / 2], r, r <= target ? "within" : "OVER", target,
         same ? "" : "  FAIL (values differ)");
}

/* newton_cg: the logistic loss, n x d */
static sg_tensor w, x, y, lam, out, dw, vw, dw2, hv;
static int lg_grad(void) { return loss_value_grad(&w, &x, &y, &lam, &out, &dw); }
static int lg_hvp(void) { return loss_value_hvp(&w, &x, &y, &lam, &vw, &out, &dw2, &hv); }

/* spring: t steps */
static sg_tensor p, obs, x0, v0, dt, sout, sd, sd2, sv, shv, J;
static int sp_grad(void) { return fit_grad(&p, &obs, &x0, &v0, &dt, &sout, &sd); }
static int sp_hvp(void) { return fit_hvp(&p, &obs, &x0, &v0, &dt, &sv, &sout, &sd2, &shv); }
static int sp_fwd(void) { return fit(&p, &obs, &x0, &v0, &dt, &sout); }
static int sp_jac(void) { return trajectory_jacobian(&p, &x0, &v0, &dt, &obs, &J); }

int main(int argc, char **argv) {
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--budget") == 0)
      budget = atof(argv[++i]);
  sg_set_num_threads(1);
  srand(1);
  int status = 0;
  printf("%-28s %-10s %10s %10s %7s  %s\n", "case", "ratio", "a ms", "b ms", "a/b", "target");

  int64_t n = 100000, d = 32;
  w = T(SG_F64, d), x = T(SG_F64, n, d), y = T(SG_F64, n), lam = S(SG_F64), out = S(SG_F64);
  dw = T(SG_F64, d), vw = T(SG_F64, d), dw2 = T(SG_F64, d), hv = T(SG_F64, d);
  for (int64_t i = 0; i < n * d; i++)
    D(&x)[i] = urand();
  for (int64_t i = 0; i < n; i++)
    D(&y)[i] = urand() > 0 ? 1 : -1;
  for (int64_t i = 0; i < d; i++)
    D(&w)[i] = urand(), D(&vw)[i] = urand();
  D(&lam)[0] = 0.01;
  lg_grad();
  lg_hvp();
  bool same = memcmp(D(&dw), D(&dw2), (size_t)d * 8) == 0;
  status |= !same;
  row("logistic n=100000 d=32", "hvp/grad", lg_hvp, lg_grad, 4, same);

  int64_t t = 2000; /* the gradient tapes the whole trajectory per step: O(t^2) (issue 28) */
  p = T(SG_F64, 3), obs = T(SG_F64, t), x0 = S(SG_F64), v0 = S(SG_F64), dt = S(SG_F64);
  sout = S(SG_F64), sd = T(SG_F64, 3), sd2 = T(SG_F64, 3), sv = T(SG_F64, 3);
  shv = T(SG_F64, 3), J = T(SG_F64, t, 3);
  D(&p)[0] = 4, D(&p)[1] = 0.3, D(&p)[2] = 1.5;
  D(&x0)[0] = 1, D(&v0)[0] = -0.5, D(&dt)[0] = 5e-3;
  for (int64_t i = 0; i < t; i++)
    D(&obs)[i] = cos(5e-3 * (double)i);
  for (int k = 0; k < 3; k++)
    D(&sv)[k] = urand();
  sp_grad();
  sp_hvp();
  same = memcmp(D(&sd), D(&sd2), 24) == 0;
  status |= !same;
  row("spring t=2000 (loop)", "hvp/grad", sp_hvp, sp_grad, 4, same);
  row("spring t=2000 (loop)", "jac/fwd", sp_jac, sp_fwd, 3, true);
  return status;
}
