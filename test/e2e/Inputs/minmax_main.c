/* Driver for minmax.test: argv[1] is n. Float max and min reductions
 * (kept as integer keys, codegen/cg_minmax.c) against a C reference with
 * llvm.maximum's rules (NaN if any element is NaN, -0 < +0), bit for bit
 * (a NaN result only as NaN), on random data and on patterns placed at
 * the first, a middle and the last position: +-0, +-inf, NaN of either
 * sign; the trailing-axis forms (rows; a transposed matrix) and max - min
 * (a loop group, on the pool for large n) on the same data; the gradient of sum(x*x) - max(x) + min(x) against central
 * differences. */
#include <string.h>

#include "minmax.h"
#include "sgtest.h"

static int64_t N;

/* The reference: max (want_max) or min of v[0..n) in double. */
static double ref(const double *v, int64_t n, int want_max) {
  double r = want_max ? -INFINITY : INFINITY;
  for (int64_t i = 0; i < n; i++) {
    if (isnan(v[i]))
      return NAN;
    if (v[i] == r ? (want_max ? signbit(r) && !signbit(v[i]) : !signbit(r) && signbit(v[i]))
                  : (want_max ? v[i] > r : v[i] < r))
      r = v[i];
  }
  return r;
}

/* Bits equal, or both NaN. */
static void same(double got, double want, const char *what, int pattern, int64_t at) {
  bool ok = isnan(want) ? isnan(got) : (got == want && signbit(got) == signbit(want));
  if (!ok) {
    printf("FAIL %s (pattern %d at %lld): got %.17g, expected %.17g\n", what, pattern,
           (long long)at, got, want);
    sgt_failures++;
  }
}

static int checks;

static void check_all(const double *v, int pattern, int64_t at) {
  sg_tensor xf = SGT_TENSOR(SG_F32, N), xd = SGT_TENSOR(SG_F64, N);
  sg_tensor of = sgt_scalar(SG_F32), od = sgt_scalar(SG_F64);
  for (int64_t i = 0; i < N; i++) {
    sgt_set(&xf, i, v[i]);
    sgt_set(&xd, i, v[i]);
  }
  double mx = ref(v, N, 1), mn = ref(v, N, 0);
  CHECK_EQ_INT(vmax(&xf, &of), SG_OK);
  same(sgt_get(&of, 0), mx, "vmax", pattern, at);
  CHECK_EQ_INT(vmin(&xf, &of), SG_OK);
  same(sgt_get(&of, 0), mn, "vmin", pattern, at);
  CHECK_EQ_INT(dmax(&xd, &od), SG_OK);
  same(sgt_get(&od, 0), mx, "dmax", pattern, at);
  CHECK_EQ_INT(dmin(&xd, &od), SG_OK);
  same(sgt_get(&od, 0), mn, "dmin", pattern, at);
  CHECK_EQ_INT(spanx(&xf, &of), SG_OK);
  same(sgt_get(&of, 0), (float)mx - (float)mn, "spanx", pattern, at);
  /* rows of 1 x N, and N x 1 transposed: the same reductions */
  sg_tensor rf = SGT_TENSOR(SG_F32, 1, N), ro = SGT_TENSOR(SG_F32, 1);
  sg_tensor td = SGT_TENSOR(SG_F64, N, 1), to = SGT_TENSOR(SG_F64, 1);
  for (int64_t i = 0; i < N; i++) {
    sgt_set(&rf, i, v[i]);
    sgt_set(&td, i, v[i]);
  }
  CHECK_EQ_INT(rmax(&rf, &ro), SG_OK);
  same(sgt_get(&ro, 0), mx, "rmax", pattern, at);
  CHECK_EQ_INT(tmin(&td, &to), SG_OK);
  same(sgt_get(&to, 0), mn, "tmin", pattern, at);
  checks++;
  free(xf.data), free(xd.data), free(of.data), free(od.data);
  free(rf.data), free(ro.data), free(td.data), free(to.data);
}

static sg_tensor gx;
static double spread_loss(void) {
  sg_tensor o = sgt_scalar(SG_F64);
  CHECK_EQ_INT(spread(&gx, &o), SG_OK);
  double l = sgt_get(&o, 0);
  free(o.data);
  return l;
}

int main(int argc, char **argv) {
  N = sgt_arg(argc, argv, 1, 10);
  double *v = calloc((size_t)(N ? N : 1), sizeof(double));
  for (int64_t i = 0; i < N; i++) /* exact in f32 */
    v[i] = (float)sgt_uniform(-100, 100);
  check_all(v, 0, 0);
  const double special[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, -NAN};
  int64_t where[3] = {0, N / 2, N - 1};
  for (int s = 0; s < 6; s++)
    for (int w = 0; w < 3 && N > 0; w++) {
      double keep = v[where[w]];
      v[where[w]] = special[s];
      check_all(v, 1 + s, where[w]);
      v[where[w]] = keep;
    }
  /* all zeros of one sign, then one zero of the other sign */
  for (int s = 0; s < 2; s++)
    for (int w = 0; w < 3 && N > 0; w++) {
      double *z = calloc((size_t)N, sizeof(double));
      for (int64_t i = 0; i < N; i++)
        z[i] = s ? -0.0 : 0.0;
      z[where[w]] = s ? 0.0 : -0.0;
      check_all(z, 7 + s, where[w]);
      free(z);
    }
  /* all -inf, all +inf */
  for (int s = 0; s < 2 && N > 0; s++) {
    double *z = calloc((size_t)N, sizeof(double));
    for (int64_t i = 0; i < N; i++)
      z[i] = s ? INFINITY : -INFINITY;
    check_all(z, 9 + s, 0);
    free(z);
  }
  printf("%s: %d data sets\n", sgt_failures ? "FAIL" : "ok", checks);
  if (N > 0) { /* the max and the min 0.1 away from the rest: the finite
                  * differences' steps move neither */
    gx = SGT_TENSOR(SG_F64, N);
    sg_tensor o = sgt_scalar(SG_F64), d = SGT_TENSOR(SG_F64, N);
    int64_t hi = 0, lo = 0;
    for (int64_t i = 0; i < N; i++) {
      sgt_set(&gx, i, v[i] / 100);
      hi = v[i] > v[hi] ? i : hi;
      lo = v[i] < v[lo] ? i : lo;
    }
    if (N > 1) {
      sgt_set(&gx, hi, sgt_get(&gx, hi) + 0.1);
      sgt_set(&gx, lo, sgt_get(&gx, lo) - 0.1);
    }
    CHECK_EQ_INT(spread_grad(&gx, &o, &d), SG_OK);
    double *fd = malloc((size_t)N * sizeof(double));
    sgt_fd(spread_loss, &gx, fd);
    CHECK_GRAD(&d, fd, 1e-7);
    free(fd), free(o.data), free(d.data), free(gx.data);
  }
  free(v);
  return sgt_finish();
}
