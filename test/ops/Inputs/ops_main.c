/* Driver for ops.test, broadcasting.test and mean_axis.test: one table row
 * per export of ops.sg (and mean_axis.sg with -DWITH_MEAN_AXIS).
 *
 * argv: m n k [filter]; with filter PREFIX only the rows whose name starts
 * with PREFIX run, with -PREFIX all others.
 * For every row, on random inputs in the row's range:
 *   - the f32 and the f64 value against a reference computed here in plain
 *     C double (never by calling sgc code), to 2e-5 and 1e-12;
 *   - op_X_grad's value output equal to op_X's;
 *   - d_x (and d_y) of the f32 build to 1e-3 and of the f64 build to 1e-7
 *     (relative max-norm) against central differences of the f64 build;
 *   - for the one-argument elementwise rows, also against the derivative
 *     written out here (d1), and for the broadcasting rows against the
 *     hand-derived gradient summed over the broadcast axes.
 * Every export has the form f(x, [y,] c) with c const, so the gradient
 * outputs are d_x [and d_y]. Shapes are strings: 'm', 'n', 'k' are the
 * sizes from argv, digits are literal sizes, "" is a scalar. */
#include "ops32.h"
#include "ops64.h"
#ifdef WITH_MEAN_AXIS
#include "mean32.h"
#include "mean64.h"
#endif
#include "sgtest.h"

static int64_t M, N, K;

typedef void (*vfn)(void);
typedef int (*fn1_t)(const sg_tensor *, const sg_tensor *, sg_tensor *);
typedef int (*gr1_t)(const sg_tensor *, const sg_tensor *, sg_tensor *, sg_tensor *);
typedef int (*fn2_t)(const sg_tensor *, const sg_tensor *, const sg_tensor *, sg_tensor *);
typedef int (*gr2_t)(const sg_tensor *, const sg_tensor *, const sg_tensor *, sg_tensor *,
                     sg_tensor *, sg_tensor *);

struct op;
typedef double (*ref_t)(const struct op *, const double *x, const double *y, const double *c);

struct op {
  const char *name;
  vfn f32, g32, f64, g64;
  int nin;                /* differentiable arguments: x, or x and y */
  const char *sx, *sy, *sc;
  double lo, hi, ylo, yhi; /* uniform input ranges of x and y; c is in [-1, 1] */
  ref_t ref;
  double (*f1)(double), (*d1)(double); /* one-argument elementwise op, derivative */
  double (*f2)(double, double);        /* two-argument elementwise op */
  int a[3];                            /* reduction {kind, axis} or permutation */
};

/* ---- shapes ---- */
static int shape_of(const char *s, int64_t *d) {
  int r = 0;
  for (; *s; s++)
    d[r++] = *s == 'm' ? M : *s == 'n' ? N : *s == 'k' ? K : *s - '0';
  return r;
}
static int64_t numel_of(const char *s) {
  int64_t d[8], n = 1;
  int r = shape_of(s, d);
  for (int i = 0; i < r; i++)
    n *= d[i];
  return n;
}
static sg_tensor make(int dt, const char *s) {
  int64_t d[8];
  int r = shape_of(s, d);
  return sgt_tensor(dt, r, d);
}
/* Flat index into a tensor of shape s for the multi-index idx of a result
 * of rank rout, NumPy broadcasting (aligned on the right, size 1 -> 0). */
static int64_t bidx(const char *s, const int64_t *idx, int rout) {
  int64_t d[8], f = 0;
  int r = shape_of(s, d);
  for (int i = 0; i < r; i++)
    f = f * d[i] + (d[i] == 1 ? 0 : idx[rout - r + i]);
  return f;
}
/* Next multi-index of shape d (rank r), row-major; false after the last. */
static bool next_idx(int64_t *idx, const int64_t *d, int r) {
  for (int i = r - 1; i >= 0; i--) {
    if (++idx[i] < d[i])
      return true;
    idx[i] = 0;
  }
  return false;
}

/* ---- reference implementations, plain C double ---- */
static double sq(double v) { return v * v; }
static double rsq(double v) { return 1 / sqrt(v); }
static double sigm(double v) { return 1 / (1 + exp(-v)); }
static double softp(double v) { return v > 0 ? v + log1p(exp(-v)) : log1p(exp(v)); }
static double relu_(double v) { return v > 0 ? v : 0; }
static double sgn(double v) { return (v > 0) - (v < 0); }
static double neg(double v) { return -v; }
static double zero(double v) { return 0 * v; }
static double minus_one(double v) { return -1 + 0 * v; }
static double negexp(double v) { return exp(-v); }
static double powlit(double v) { return v * v * v + pow(2, v) - sqrt(v); }
static double d_log(double v) { return 1 / v; }
static double d_log1p(double v) { return 1 / (1 + v); }
static double d_sqrt(double v) { return 0.5 / sqrt(v); }
static double d_rsqrt(double v) { return -0.5 / (v * sqrt(v)); }
static double d_sq(double v) { return 2 * v; }
static double d_cos(double v) { return -sin(v); }
static double d_tanh(double v) { return 1 - sq(tanh(v)); }
static double d_sigm(double v) { return sigm(v) * (1 - sigm(v)); }
static double d_relu(double v) { return v > 0; }
static double d_negexp(double v) { return -exp(-v); }
static double d_powlit(double v) { return 3 * v * v + log(2) * pow(2, v) - 0.5 / sqrt(v); }

/* v3 */
static double d_tan(double v) { return 1 + sq(tan(v)); }
static double d_asin(double v) { return 1 / sqrt(1 - v * v); }
static double d_acos(double v) { return -1 / sqrt(1 - v * v); }
static double d_atan(double v) { return 1 / (1 + v * v); }
static double d_log2(double v) { return 1 / (v * log(2)); }
static double d_log10(double v) { return 1 / (v * log(10)); }
static double d_erf(double v) { return 2 / sqrt(acos(-1)) * exp(-v * v); }
/* digamma, lgamma's derivative (libm has none): the recurrence up to 20,
 * then the asymptotic series; reflection below 0 */
static double digamma(double v) {
  if (v < 0)
    return digamma(1 - v) - acos(-1) / tan(acos(-1) * v);
  double acc = 0;
  for (; v < 20; v += 1)
    acc -= 1 / v;
  double w = 1 / (v * v);
  return acc + log(v) - 0.5 / v - w * (1.0 / 12 - w * (1.0 / 120 - w * (1.0 / 252 - w / 240)));
}
static double add(double a, double b) { return a + b; }
static double sub(double a, double b) { return a - b; }
static double mul(double a, double b) { return a * b; }
static double dvd(double a, double b) { return a / b; }
static double branch(bool p, double x, double y) { return p ? sin(x) * y : x - exp(y); }
static double lt(double x, double y) { return branch(floor(x) < floor(y), x, y); }
static double le(double x, double y) { return branch(floor(x) <= floor(y), x, y); }
static double gt(double x, double y) { return branch(floor(x) > floor(y), x, y); }
static double ge(double x, double y) { return branch(floor(x) >= floor(y), x, y); }
static double eq(double x, double y) { return branch(floor(x) == floor(y), x, y); }
static double ne(double x, double y) { return branch(floor(x) != floor(y), x, y); }
static double lt_raw(double x, double y) { return branch(x < y, x, y); }
static double ge_raw(double x, double y) { return branch(x >= y, x, y); }

/* sum(f1(x) * c) */
static double r_ew1(const struct op *o, const double *x, const double *y, const double *c) {
  (void)y;
  double s = 0;
  for (int64_t i = 0; i < numel_of(o->sx); i++)
    s += o->f1(x[i]) * c[i];
  return s;
}
/* sum(f2(x, y) * c) */
static double r_ew2(const struct op *o, const double *x, const double *y, const double *c) {
  double s = 0;
  for (int64_t i = 0; i < numel_of(o->sx); i++)
    s += o->f2(x[i], y[i]) * c[i];
  return s;
}
/* sum(sin(t * c)) for the result t of a shape operation */
static double sum_sin(const double *t, const double *c, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; i++)
    s += sin(t[i] * c[i]);
  return s;
}

enum { SUM, MEAN, MAX, MIN, ALL = 99 };
/* a = {kind, axis}: sin(OP(x) * c) over all axes or sum(sin(OP(x, axis) * c)) */
static double r_reduce(const struct op *o, const double *x, const double *y, const double *c) {
  (void)y;
  int64_t d[8];
  int r = shape_of(o->sx, d), ax = o->a[1] == ALL ? ALL : (o->a[1] + r) % r;
  int64_t outer = 1, len = 1, inner = 1;
  for (int i = 0; i < r; i++)
    *(ax == ALL || i == ax ? &len : i < ax ? &outer : &inner) *= d[i];
  double *t = calloc((size_t)(outer * inner), sizeof(double));
  for (int64_t p = 0; p < outer; p++)
    for (int64_t q = 0; q < inner; q++) {
      double acc = o->a[0] == MAX ? -INFINITY : o->a[0] == MIN ? INFINITY : 0;
      for (int64_t j = 0; j < len; j++) {
        double v = x[(p * len + j) * inner + q];
        acc = o->a[0] == MAX ? fmax(acc, v) : o->a[0] == MIN ? fmin(acc, v) : acc + v;
      }
      t[p * inner + q] = o->a[0] == MEAN ? acc / (double)len : acc;
    }
  double s = sum_sin(t, c, outer * inner);
  free(t);
  return s;
}
/* sum(sin((x @ y) * c)), NumPy's rules for rank 1 and 2 */
static double r_matmul(const struct op *o, const double *x, const double *y, const double *c) {
  int64_t dx[8], dy[8];
  int rx = shape_of(o->sx, dx), ry = shape_of(o->sy, dy);
  int64_t rows = rx == 2 ? dx[0] : 1, inner = dx[rx - 1], cols = ry == 2 ? dy[1] : 1;
  double *t = calloc((size_t)(rows * cols), sizeof(double));
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++)
      for (int64_t l = 0; l < inner; l++)
        t[i * cols + j] += x[i * inner + l] * y[l * cols + j];
  double s = sum_sin(t, c, rows * cols);
  free(t);
  return s;
}
/* x @ transpose(y) */
static double r_mm_t(const struct op *o, const double *x, const double *y, const double *c) {
  (void)o;
  double s = 0;
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++) {
      double t = 0;
      for (int64_t l = 0; l < K; l++)
        t += x[i * K + l] * y[j * K + l];
      s += sin(t * c[i * N + j]);
    }
  return s;
}
/* sum(sin(transpose(x, a) * c)); out.shape[i] = x.shape[a[i]] */
static double r_transpose(const struct op *o, const double *x, const double *y, const double *c) {
  (void)y;
  int64_t d[8], od[8], oi[8] = {0}, xi[8];
  int r = shape_of(o->sx, d);
  for (int i = 0; i < r; i++)
    od[i] = d[o->a[i]];
  double s = 0;
  int64_t f = 0;
  do {
    for (int i = 0; i < r; i++)
      xi[o->a[i]] = oi[i];
    int64_t xf = 0;
    for (int i = 0; i < r; i++)
      xf = xf * d[i] + xi[i];
    s += sin(x[xf] * c[f++]);
  } while (next_idx(oi, od, r));
  return s;
}
/* reshape keeps the row-major order: sum(sin(x * c)) elementwise */
static double r_reshape(const struct op *o, const double *x, const double *y, const double *c) {
  (void)y;
  return sum_sin(x, c, numel_of(o->sx));
}
/* sum(sin(broadcast(x, shape of c) * c)) */
static double r_broadcast(const struct op *o, const double *x, const double *y, const double *c) {
  (void)y;
  int64_t od[8], oi[8] = {0}, f = 0;
  int r = shape_of(o->sc, od);
  double s = 0;
  do
    s += sin(x[bidx(o->sx, oi, r)] * c[f++]);
  while (next_idx(oi, od, r));
  return s;
}
/* sum(c * (sin(x * y) + x / (2 + y * y) - maximum(x, y))), all broadcast to
 * the shape of c; with dx, dy: also the gradient, summed over the axes along
 * which x or y is broadcast. */
static double bc_eval(const struct op *o, const double *x, const double *y, const double *c,
                      double *dx, double *dy) {
  int64_t od[8], oi[8] = {0}, f = 0;
  int r = shape_of(o->sc, od);
  double s = 0;
  if (dx)
    memset(dx, 0, sizeof(double) * (size_t)numel_of(o->sx)),
        memset(dy, 0, sizeof(double) * (size_t)numel_of(o->sy));
  do {
    int64_t ix = bidx(o->sx, oi, r), iy = bidx(o->sy, oi, r);
    double a = x[ix], b = y[iy], w = c[f++];
    s += w * (sin(a * b) + a / (2 + b * b) - fmax(a, b));
    if (dx) {
      dx[ix] += w * (b * cos(a * b) + 1 / (2 + b * b) - (a > b));
      dy[iy] += w * (a * cos(a * b) - 2 * a * b / sq(2 + b * b) - (b > a));
    }
  } while (next_idx(oi, od, r));
  return s;
}
static double r_bcast(const struct op *o, const double *x, const double *y, const double *c) {
  return bc_eval(o, x, y, c, NULL, NULL);
}
/* sum(c * select(x > y, x * y, y)), x [m, 1], y [n] */
static double r_bc_select(const struct op *o, const double *x, const double *y, const double *c) {
  (void)o;
  double s = 0;
  for (int64_t i = 0; i < M; i++)
    for (int64_t j = 0; j < N; j++)
      s += c[i * N + j] * (x[i] > y[j] ? x[i] * y[j] : y[j]);
  return s;
}

/* ---- the table: adding an operation is one line here and one in ops.sg ---- */
#define FNS(nm)                                                                         \
  .name = "op_" #nm, .f32 = (vfn)op_##nm, .g32 = (vfn)op_##nm##_grad,                  \
  .f64 = (vfn)op64_##nm, .g64 = (vfn)op64_##nm##_grad
#define EW1(nm, fn, dfn, lo_, hi_)                                                       \
  {FNS(nm), .nin = 1, .sx = "mn", .sc = "mn", .lo = lo_, .hi = hi_, .ref = r_ew1,       \
   .f1 = fn, .d1 = dfn}
#define EW2(nm, fn, lo_, hi_, ylo_, yhi_)                                                \
  {FNS(nm), .nin = 2, .sx = "mn", .sy = "mn", .sc = "mn", .lo = lo_, .hi = hi_,         \
   .ylo = ylo_, .yhi = yhi_, .ref = r_ew2, .f2 = fn}
#define RED(nm, sx_, sc_, kind, axis)                                                    \
  {FNS(nm), .nin = 1, .sx = sx_, .sc = sc_, .lo = -2, .hi = 2, .ref = r_reduce,         \
   .a = {kind, axis}}
#define MATMUL(nm, sx_, sy_, sc_, r)                                                     \
  {FNS(nm), .nin = 2, .sx = sx_, .sy = sy_, .sc = sc_, .lo = -1, .hi = 1, .ylo = -1,    \
   .yhi = 1, .ref = r}
#define SHAPE(nm, sx_, sc_, r, ...)                                                      \
  {FNS(nm), .nin = 1, .sx = sx_, .sc = sc_, .lo = -2, .hi = 2, .ref = r,                \
   .a = {__VA_ARGS__}}
#define BC(nm, sx_, sy_, sc_, r)                                                         \
  {FNS(nm), .nin = 2, .sx = sx_, .sy = sy_, .sc = sc_, .lo = -2, .hi = 2, .ylo = -2,    \
   .yhi = 2, .ref = r}

static const struct op ops[] = {
    EW1(exp, exp, exp, -2, 2),
    EW1(log, log, d_log, 0.2, 3),
    EW1(log1p, log1p, d_log1p, -0.5, 2),
    EW1(expm1, expm1, exp, -2, 2),
    EW1(sqrt, sqrt, d_sqrt, 0.2, 3),
    EW1(rsqrt, rsq, d_rsqrt, 0.3, 3),
    EW1(square, sq, d_sq, -2, 2),
    EW1(sin, sin, cos, -3, 3),
    EW1(cos, cos, d_cos, -3, 3),
    EW1(tanh, tanh, d_tanh, -2, 2),
    EW1(sigmoid, sigm, d_sigm, -4, 4),
    EW1(softplus, softp, sigm, -4, 4),
    EW1(relu, relu_, d_relu, -2, 2),
    EW1(abs, fabs, sgn, -2, 2),
    EW1(sign, sgn, zero, -2, 2),
    EW1(floor, floor, zero, -3, 3),
    EW1(ceil, ceil, zero, -3, 3),
    EW1(round, round, zero, -3, 3), /* C round (half away) = half-even off .5 */
    EW1(neg, neg, minus_one, -2, 2),
    EW1(negexp, negexp, d_negexp, -2, 2),
    EW1(cast, sin, cos, -2, 2),
    EW1(zeros_like, sin, cos, -2, 2),
    EW1(ones_like, exp, exp, -2, 2),
    EW1(pow_lit, powlit, d_powlit, 0.3, 2),
    EW1(tan, tan, d_tan, -1.3, 1.3),
    EW1(asin, asin, d_asin, -0.9, 0.9),
    EW1(acos, acos, d_acos, -0.9, 0.9),
    EW1(atan, atan, d_atan, -3, 3),
    EW1(sinh, sinh, cosh, -3, 3),
    EW1(cosh, cosh, sinh, -3, 3),
    EW1(log2, log2, d_log2, 0.2, 3),
    EW1(log10, log10, d_log10, 0.2, 3),
    EW1(erf, erf, d_erf, -2.5, 2.5),
    EW1(lgamma, lgamma, digamma, 0.05, 6),
    EW1(lgamma_neg, lgamma, digamma, -3.9, -3.1),
    EW2(add, add, -2, 2, -2, 2),
    EW2(sub, sub, -2, 2, -2, 2),
    EW2(mul, mul, -2, 2, -2, 2),
    EW2(div, dvd, -2, 2, 0.5, 2),
    EW2(powop, pow, 0.3, 2, -2, 2),
    EW2(pow, pow, 0.3, 2, -2, 2),
    EW2(maximum, fmax, -2, 2, -2, 2),
    EW2(minimum, fmin, -2, 2, -2, 2),
    EW2(atan2, atan2, -2, 2, -2, 2),
    EW2(lt, lt, 0, 3, 0, 3),
    EW2(le, le, 0, 3, 0, 3),
    EW2(gt, gt, 0, 3, 0, 3),
    EW2(ge, ge, 0, 3, 0, 3),
    EW2(eq, eq, 0, 3, 0, 3),
    EW2(ne, ne, 0, 3, 0, 3),
    EW2(lt_raw, lt_raw, -1, 1, -1, 1),
    EW2(ge_raw, ge_raw, -1, 1, -1, 1),

    RED(sum_1, "n", "", SUM, ALL),
    RED(sum_1_a0, "n", "", SUM, 0),
    RED(sum_2, "mn", "", SUM, ALL),
    RED(sum_2_a0, "mn", "n", SUM, 0),
    RED(sum_2_a1, "mn", "m", SUM, 1),
    RED(sum_2_am1, "mn", "m", SUM, -1),
    RED(sum_2_am2, "mn", "n", SUM, -2),
    RED(sum_3, "kmn", "", SUM, ALL),
    RED(sum_3_a0, "kmn", "mn", SUM, 0),
    RED(sum_3_a1, "kmn", "kn", SUM, 1),
    RED(sum_3_a2, "kmn", "km", SUM, 2),
    RED(sum_3_am3, "kmn", "mn", SUM, -3),
    RED(mean_1, "n", "", MEAN, ALL),
    RED(mean_2, "mn", "", MEAN, ALL),
    RED(mean_3, "kmn", "", MEAN, ALL),
#ifdef WITH_MEAN_AXIS
    RED(mean_2_a0, "mn", "n", MEAN, 0),
    RED(mean_2_am1, "mn", "m", MEAN, -1),
    RED(mean_3_a1, "kmn", "kn", MEAN, 1),
    RED(mean_3_am1, "kmn", "km", MEAN, -1),
#endif
    RED(max_1, "n", "", MAX, ALL),
    RED(max_1_am1, "n", "", MAX, -1),
    RED(max_2, "mn", "", MAX, ALL),
    RED(max_2_a0, "mn", "n", MAX, 0),
    RED(max_2_a1, "mn", "m", MAX, 1),
    RED(max_2_am1, "mn", "m", MAX, -1),
    RED(max_3, "kmn", "", MAX, ALL),
    RED(max_3_a1, "kmn", "kn", MAX, 1),
    RED(max_3_am1, "kmn", "km", MAX, -1),
    RED(min_1, "n", "", MIN, ALL),
    RED(min_2, "mn", "", MIN, ALL),
    RED(min_2_a1, "mn", "m", MIN, 1),
    RED(min_2_am2, "mn", "n", MIN, -2),
    RED(min_3, "kmn", "", MIN, ALL),
    RED(min_3_a0, "kmn", "mn", MIN, 0),
    RED(min_3_am2, "kmn", "kn", MIN, -2),

    MATMUL(mm, "mk", "kn", "mn", r_matmul),
    MATMUL(mv, "mk", "k", "m", r_matmul),
    MATMUL(vm, "k", "kn", "n", r_matmul),
    MATMUL(vv, "k", "k", "", r_matmul),
    MATMUL(mm_t, "mk", "nk", "mn", r_mm_t),

    SHAPE(transpose_2, "mn", "nm", r_transpose, 1, 0),
    SHAPE(transpose_2_10, "mn", "nm", r_transpose, 1, 0),
    SHAPE(transpose_2_01, "mn", "mn", r_transpose, 0, 1),
    SHAPE(transpose_3, "kmn", "nmk", r_transpose, 2, 1, 0),
    SHAPE(transpose_3_102, "kmn", "mkn", r_transpose, 1, 0, 2),
    SHAPE(transpose_3_201, "kmn", "nkm", r_transpose, 2, 0, 1),
    SHAPE(transpose_3_021, "kmn", "knm", r_transpose, 0, 2, 1),
    SHAPE(transpose_3_120, "kmn", "mnk", r_transpose, 1, 2, 0),
    SHAPE(reshape_nm, "mn", "nm", r_reshape, 0),
    SHAPE(reshape_m1n, "mn", "m1n", r_reshape, 0),
    SHAPE(reshape_3, "kmn", "nkm", r_reshape, 0),
    SHAPE(reshape_2n, "2n", "n2", r_reshape, 0),
    SHAPE(reshape_2n_1, "n2", "21n", r_reshape, 0),
    SHAPE(broadcast_n, "n", "mn", r_broadcast, 0),
    SHAPE(broadcast_s, "", "mn", r_broadcast, 0),
    SHAPE(broadcast_m1, "m1", "kmn", r_broadcast, 0),
    SHAPE(broadcast_1n, "1n", "2n", r_broadcast, 0),
    SHAPE(broadcast_same, "mn", "mn", r_broadcast, 0),

    BC(bc_s_mn, "", "mn", "mn", r_bcast),
    BC(bc_mn_s, "mn", "", "mn", r_bcast),
    BC(bc_n_mn, "n", "mn", "mn", r_bcast),
    BC(bc_mn_n, "mn", "n", "mn", r_bcast),
    BC(bc_m1_1n, "m1", "1n", "mn", r_bcast),
    BC(bc_m1_mn, "m1", "mn", "mn", r_bcast),
    BC(bc_kmn_n, "kmn", "n", "kmn", r_bcast),
    BC(bc_m_kmm, "m", "knm", "knm", r_bcast),
    BC(bc_1_n, "1", "n", "n", r_bcast),
    BC(bc_1n_mn, "1n", "mn", "mn", r_bcast),
    BC(bc_k1n_m1, "k1n", "m1", "kmn", r_bcast),
    BC(bc_k11_kmn, "k11", "kmn", "kmn", r_bcast),
    BC(bc_select, "m1", "n", "mn", r_bc_select),
};

/* ---- the loop ---- */
static const struct op *cur;
static sg_tensor x64, y64, c64, out64;

static int call(const struct op *o, bool f64, const sg_tensor *x, const sg_tensor *y,
                const sg_tensor *c, sg_tensor *out) {
  vfn f = f64 ? o->f64 : o->f32;
  return o->nin == 1 ? ((fn1_t)f)(x, c, out) : ((fn2_t)f)(x, y, c, out);
}
static int call_grad(const struct op *o, bool f64, const sg_tensor *x, const sg_tensor *y,
                     const sg_tensor *c, sg_tensor *out, sg_tensor *dx, sg_tensor *dy) {
  vfn f = f64 ? o->g64 : o->g32;
  return o->nin == 1 ? ((gr1_t)f)(x, c, out, dx) : ((gr2_t)f)(x, y, c, out, dx, dy);
}
static double loss64(void) {
  CHECK_EQ_INT(call(cur, true, &x64, &y64, &c64, &out64), SG_OK);
  return sgt_get(&out64, 0);
}

/* max |g - want| / max |want| <= tol (absolute when want is all zero) */
static void grad_close(const char *what, const sg_tensor *g, const double *want, double tol) {
  double err = 0, scale = 0;
  int64_t worst = 0;
  for (int64_t i = 0; i < sgt_numel(g); i++) {
    double e = fabs(sgt_get(g, i) - want[i]);
    if (!(e <= err))
      err = e, worst = i;
    scale = fmax(scale, fabs(want[i]));
  }
  double rel = err / (scale > 0 ? scale : 1);
  if (!(rel <= tol)) {
    printf("FAIL %s: %s: relative error %.3g > %g (element %lld: %.10g, expected %.10g)\n",
           cur->name, what, rel, tol, (long long)worst, sgt_get(g, worst), want[worst]);
    sgt_failures++;
  }
}
static void value_close(const char *what, double got, double want, double tol) {
  bool ok = isnan(got) || isnan(want) ? false : fabs(got - want) <= tol * fmax(1, fabs(want));
  if (!ok) {
    printf("FAIL %s: %s = %.17g, expected %.17g (tol %g)\n", cur->name, what, got, want, tol);
    sgt_failures++;
  }
}

static void run(const struct op *o) {
  cur = o;
  int before = sgt_failures;
  const char *sy = o->nin == 2 ? o->sy : "";
  sg_tensor x = make(SG_F32, o->sx), y = make(SG_F32, sy), c = make(SG_F32, o->sc);
  sgt_fill(&x, o->lo, o->hi);
  if (o->nin == 2)
    sgt_fill(&y, o->ylo, o->yhi);
  sgt_fill(&c, -1, 1);
  x64 = make(SG_F64, o->sx), y64 = make(SG_F64, sy), c64 = make(SG_F64, o->sc);
  out64 = sgt_scalar(SG_F64);
  sgt_copy(&x64, &x), sgt_copy(&y64, &y), sgt_copy(&c64, &c);
  double want = o->ref(o, x64.data, y64.data, c64.data);

  sg_tensor out = sgt_scalar(SG_F32), dx = make(SG_F32, o->sx), dy = make(SG_F32, sy);
  sg_tensor dx64 = make(SG_F64, o->sx), dy64 = make(SG_F64, sy);
  CHECK_EQ_INT(call(o, false, &x, &y, &c, &out), SG_OK);
  value_close("f32 value", sgt_get(&out, 0), want, 2e-5);
  double v32 = sgt_get(&out, 0);
  sgt_set(&out, 0, -7);
  CHECK_EQ_INT(call_grad(o, false, &x, &y, &c, &out, &dx, &dy), SG_OK);
  value_close("f32 value of _grad", sgt_get(&out, 0), v32, 1e-6);
  CHECK_EQ_INT(call(o, true, &x64, &y64, &c64, &out64), SG_OK);
  value_close("f64 value", sgt_get(&out64, 0), want, 1e-12);
  sgt_set(&out64, 0, -7);
  CHECK_EQ_INT(call_grad(o, true, &x64, &y64, &c64, &out64, &dx64, &dy64), SG_OK);
  value_close("f64 value of _grad", sgt_get(&out64, 0), want, 1e-12);

  double *fdx = calloc((size_t)sgt_numel(&x64), sizeof(double));
  double *fdy = calloc((size_t)sgt_numel(&y64), sizeof(double));
  sgt_fd(loss64, &x64, fdx);
  grad_close("f32 d_x vs finite differences", &dx, fdx, 1e-3);
  grad_close("f64 d_x vs finite differences", &dx64, fdx, 1e-7);
  if (o->nin == 2) {
    sgt_fd(loss64, &y64, fdy);
    grad_close("f32 d_y vs finite differences", &dy, fdy, 1e-3);
    grad_close("f64 d_y vs finite differences", &dy64, fdy, 1e-7);
  }
  if (o->d1) { /* the derivative written out: d1(x) * c */
    for (int64_t i = 0; i < sgt_numel(&x64); i++)
      fdx[i] = o->d1(sgt_get(&x64, i)) * sgt_get(&c64, i);
    grad_close("f32 d_x vs derivative", &dx, fdx, 1e-5);
    grad_close("f64 d_x vs derivative", &dx64, fdx, 1e-12);
  }
  if (o->ref == r_bcast) { /* the gradient summed over the broadcast axes */
    bc_eval(o, x64.data, y64.data, c64.data, fdx, fdy);
    grad_close("f32 d_x vs hand-derived sum over broadcast axes", &dx, fdx, 1e-5);
    grad_close("f32 d_y vs hand-derived sum over broadcast axes", &dy, fdy, 1e-5);
    grad_close("f64 d_x vs hand-derived sum over broadcast axes", &dx64, fdx, 1e-12);
    grad_close("f64 d_y vs hand-derived sum over broadcast axes", &dy64, fdy, 1e-12);
  }
  printf("%s %s\n", sgt_failures == before ? "ok:" : "FAILED:", o->name);
  free(fdx), free(fdy);
  sg_tensor *all[] = {&x, &y, &c, &x64, &y64, &c64, &out, &out64, &dx, &dy, &dx64, &dy64};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    free(all[i]->data);
}

int main(int argc, char **argv) {
  M = sgt_arg(argc, argv, 1, 3), N = sgt_arg(argc, argv, 2, 4), K = sgt_arg(argc, argv, 3, 5);
  const char *filter = argc > 4 ? argv[4] : "";
  bool exclude = filter[0] == '-';
  const char *prefix = filter + exclude;
  int ran = 0;
  for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
    if ((strncmp(ops[i].name, prefix, strlen(prefix)) == 0) != exclude)
      run(&ops[i]), ran++;
  printf("%d operations checked at m=%lld n=%lld k=%lld\n", ran, (long long)M, (long long)N,
         (long long)K);
  return sgt_finish();
}
