#define _POSIX_C_SOURCE 200809L
/* Issue 29's speed figures (bench/derivs/run.sh): the cost of a derivative
 * as a ratio to the computation it differentiates, both sgc's, timed in the
 * same rounds:
 *   jvp/fwd    a tangent sweep (f_jvp: the value and its directional
 *              derivative, forward mode) against the function alone:
 *              newton_cg's logistic loss (target: at most 3);
 *   hvp/grad   a Hessian-vector product (f_hvp: forward over reverse) against
 *              the gradient (f_grad): newton_cg's logistic loss, and
 *              spring_sensitivity's fitting loss through its loop
 *              (target: at most 4);
 *   jac/fwd    the spring's trajectory Jacobian with respect to its three
 *              parameters (jacobian by columns: one forward sweep carrying
 *              three tangents) against one forward simulation with its
 *              loss (fit) (target: at most 3);
 *   sgc/hand   examples/v3/ba_jacobian.sg (each observation's 2 x 15
 *              Jacobian, by rows in vector mode) on 20,000 observations of
 *              500 cameras and 5,000 points, camera 0's rotation exactly 0,
 *              against the Jacobian derived by hand in C (ba_hand.c, gcc -O3
 *              -march=native) (target: at most 1.5); built only when the
 *              example compiles (WITH_BA: it needs concat and stack).
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
#ifdef WITH_BA
#include "ba_hand.h"
#include "ba_jacobian.h"
#endif

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

static void row(const char *name, const char *what, Call a, Call b, double target,
                const char *agree) {
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
  printf("%-28s %-10s %10.3f %10.3f %7.2f  %s %.1f  %s\n", name, what, 1e3 * sa[n / 2],
         1e3 * sb[n / 2], r, r <= target ? "within" : "OVER", target, agree);
}

/* newton_cg: the logistic loss, n x d */
static sg_tensor w, x, y, lam, out, dw, vw, dw2, hv;
static sg_tensor tout;
static int lg_fwd(void) { return loss_value(&w, &x, &y, &lam, &out); }
static int lg_jvp(void) { return loss_value_jvp(&w, &x, &y, &lam, &vw, &out, &tout); }
static int lg_grad(void) { return loss_value_grad(&w, &x, &y, &lam, &out, &dw); }
static int lg_hvp(void) { return loss_value_hvp(&w, &x, &y, &lam, &vw, &out, &dw2, &hv); }

/* spring: t steps */
static sg_tensor p, obs, x0, v0, dt, sout, sd, sd2, sv, shv, J;
static int sp_grad(void) { return fit_grad(&p, &obs, &x0, &v0, &dt, &sout, &sd); }
static int sp_hvp(void) { return fit_hvp(&p, &obs, &x0, &v0, &dt, &sv, &sout, &sd2, &shv); }
static int sp_fwd(void) { return fit(&p, &obs, &x0, &v0, &dt, &sout); }
static int sp_jac(void) { return trajectory_jacobian(&p, &x0, &v0, &dt, &obs, &J); }

#ifdef WITH_BA
/* bundle adjustment: p observations of n cameras and m points */
enum { BA_N = 500, BA_M = 5000, BA_P = 20000 };
static sg_tensor cams, pts, bw, bobs, feats, res, bJ;
static double *hres, *hJ;
static int ba_sgc(void) { return ba_jacobian(&cams, &pts, &bw, &bobs, &feats, &res, &bJ); }
static int ba_c(void) {
  ba_hand(BA_P, D(&cams), D(&pts), D(&bw), bobs.data, D(&feats), hres, hJ);
  return SG_OK;
}
#endif

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
  tout = S(SG_F64);
  row("logistic n=100000 d=32", "jvp/fwd", lg_jvp, lg_fwd, 3, "");
  lg_grad();
  lg_hvp();
  bool same = memcmp(D(&dw), D(&dw2), (size_t)d * 8) == 0;
  status |= !same;
  row("logistic n=100000 d=32", "hvp/grad", lg_hvp, lg_grad, 4,
      same ? "gradients equal" : "FAIL (gradients differ)");

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
  row("spring t=2000 (loop)", "hvp/grad", sp_hvp, sp_grad, 4,
      same ? "gradients equal" : "FAIL (gradients differ)");
  row("spring t=2000 (loop)", "jac/fwd", sp_jac, sp_fwd, 3, "");
#ifdef WITH_BA
  cams = T(SG_F64, BA_N, 11), pts = T(SG_F64, BA_M, 3), bw = T(SG_F64, BA_P);
  bobs = T(SG_I32, BA_P, 2), feats = T(SG_F64, BA_P, 2), res = T(SG_F64, BA_P, 2);
  bJ = T(SG_F64, BA_P, 2, 15);
  hres = malloc(sizeof(double) * 2 * BA_P), hJ = malloc(sizeof(double) * 30 * BA_P);
  for (int64_t i = 0; i < BA_N; i++) {
    for (int k = 0; k < 11; k++)
      D(&cams)[11 * i + k] = urand();
    D(&cams)[11 * i + 6] = 1.5, D(&cams)[11 * i + 5] = -3; /* in front of the points */
  }
  D(&cams)[0] = D(&cams)[1] = D(&cams)[2] = 0; /* camera 0: no rotation */
  for (int64_t i = 0; i < 3 * BA_M; i++)
    D(&pts)[i] = urand();
  for (int64_t i = 0; i < BA_P; i++) {
    D(&bw)[i] = 0.5 + 0.2 * urand();
    D(&feats)[2 * i] = urand(), D(&feats)[2 * i + 1] = urand();
    ((int32_t *)bobs.data)[2 * i] = rand() % BA_N;
    ((int32_t *)bobs.data)[2 * i + 1] = rand() % BA_M;
  }
  ba_sgc();
  ba_c();
  double err = 0, big = 0;
  for (int64_t i = 0; i < 30 * BA_P; i++) {
    err = fmax(err, fabs(D(&bJ)[i] - hJ[i]));
    big = fmax(big, fabs(hJ[i]));
  }
  same = err <= 1e-12 * big;
  status |= !same;
  char agree[64];
  snprintf(agree, sizeof agree, same ? "|J - hand| %.0e" : "FAIL: |J - hand| %.0e", err);
  row("ba_jacobian p=20000", "sgc/hand", ba_sgc, ba_c, 1.5, agree);
#endif
  return status;
}
