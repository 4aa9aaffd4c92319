/* Driver for degenerate.test (degenerate.sg, f32 dg_* and f64 dg64_*):
 * sizes of 0 (sum of nothing is 0, mean NaN, max -inf, min +inf, with and
 * without axis=; @ with an inner, outer or result size of 0; gradient
 * outputs of size 0, and non-empty gradients of empty computations
 * overwritten with zeros), scalar (rank-0) parameters, and rank-8 tensors
 * (reductions, negative axis, transpose, broadcasting, a rank-8 result)
 * against plain C and central differences of the f64 build. */
#include "dg32.h"
#include "dg64.h"
#include "opsutil.h"

/* the export `name` in dtype dt */
#define PICK(dt, name) ((dt) == SG_F32 ? dg_##name : dg64_##name)
#define T(dt, ...) sgo_new(dt, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
                           (int64_t[]){__VA_ARGS__})

static void fill(sg_tensor *t, double v) {
  for (int64_t i = 0; i < sgt_numel(t); i++)
    sgt_set(t, i, v);
}
/* every element of t equal to v */
static void all_equal(const sg_tensor *t, double v, const char *what, int line) {
  for (int64_t i = 0; i < sgt_numel(t); i++)
    if (!(sgt_get(t, i) == v)) {
      printf("FAIL line %d: %s[%lld] = %g, expected %g\n", line, what, (long long)i,
             sgt_get(t, i), v);
      sgt_failures++;
    }
}
#define ALL_EQUAL(t, v) all_equal((t), (v), #t, __LINE__)

static void empty_shapes(int dt) {
  printf("== sizes of 0, %s\n", dt == SG_F32 ? "f32" : "f64");
  sg_tensor out = SCALAR(dt, 42), x0 = T(dt, 0), d0 = T(dt, 0);
  CHECK_EQ_INT(PICK(dt, sum)(&x0, &out), SG_OK);
  CHECK_EXACT(sgt_get(&out, 0), 0);
  sgt_set(&out, 0, 42);
  CHECK_EQ_INT(PICK(dt, sum_grad)(&x0, &out, &d0), SG_OK);
  CHECK_EXACT(sgt_get(&out, 0), 0);
  CHECK_EQ_INT(PICK(dt, mean)(&x0, &out), SG_OK);
  CHECK(isnan(sgt_get(&out, 0)));
  sgt_set(&out, 0, 42);
  CHECK_EQ_INT(PICK(dt, mean_grad)(&x0, &out, &d0), SG_OK);
  CHECK(isnan(sgt_get(&out, 0)));
  CHECK_EQ_INT(PICK(dt, max)(&x0, &out), SG_OK);
  CHECK_EXACT(sgt_get(&out, 0), -INFINITY);
  sgt_set(&out, 0, 42);
  CHECK_EQ_INT(PICK(dt, max_grad)(&x0, &out, &d0), SG_OK);
  CHECK_EXACT(sgt_get(&out, 0), -INFINITY);
  CHECK_EQ_INT(PICK(dt, min)(&x0, &out), SG_OK);
  CHECK_EXACT(sgt_get(&out, 0), INFINITY);
  sgt_set(&out, 0, 42);
  CHECK_EQ_INT(PICK(dt, min_grad)(&x0, &out, &d0), SG_OK);
  CHECK_EXACT(sgt_get(&out, 0), INFINITY);

  /* [0, 3] and [2, 0] */
  sg_tensor x03 = T(dt, 0, 3), x20 = T(dt, 2, 0), d03 = T(dt, 0, 3), d20 = T(dt, 2, 0);
  CHECK_EQ_INT(PICK(dt, sum_exp_grad)(&x03, &out, &d03), SG_OK);
  CHECK_EXACT(sgt_get(&out, 0), 0);
  sgt_set(&out, 0, 42);
  CHECK_EQ_INT(PICK(dt, sum_exp_grad)(&x20, &out, &d20), SG_OK);
  CHECK_EXACT(sgt_get(&out, 0), 0);
  sg_tensor o3 = T(dt, 3), s3 = VEC(dt, 1, -2, 3), o2 = T(dt, 2), s2 = VEC(dt, 4, 5),
            o0 = T(dt, 0);
  fill(&o3, 42);
  CHECK_EQ_INT(PICK(dt, sum_a0)(&x03, &o3), SG_OK);
  ALL_EQUAL(&o3, 0);
  fill(&o3, 42);
  CHECK_EQ_INT(PICK(dt, sum_a0_vjp)(&x03, &s3, &o3, &d03), SG_OK);
  ALL_EQUAL(&o3, 0);
  sg_tensor seed0 = T(dt, 0);
  CHECK_EQ_INT(PICK(dt, sum_a0_vjp)(&x20, &seed0, &o0, &d20), SG_OK);
  fill(&o3, 42);
  CHECK_EQ_INT(PICK(dt, max_a0)(&x03, &o3), SG_OK);
  ALL_EQUAL(&o3, -INFINITY);
  fill(&o3, 42);
  CHECK_EQ_INT(PICK(dt, max_a0_vjp)(&x03, &s3, &o3, &d03), SG_OK);
  ALL_EQUAL(&o3, -INFINITY);
  fill(&o2, 42);
  CHECK_EQ_INT(PICK(dt, max_a1)(&x20, &o2), SG_OK);
  ALL_EQUAL(&o2, -INFINITY);
  fill(&o2, 42);
  CHECK_EQ_INT(PICK(dt, max_a1_vjp)(&x20, &s2, &o2, &d20), SG_OK);
  ALL_EQUAL(&o2, -INFINITY);
  fill(&o2, 42);
  CHECK_EQ_INT(PICK(dt, min_am1)(&x20, &o2), SG_OK);
  ALL_EQUAL(&o2, INFINITY);
  fill(&o2, 42);
  CHECK_EQ_INT(PICK(dt, min_am1_vjp)(&x20, &s2, &o2, &d20), SG_OK);
  ALL_EQUAL(&o2, INFINITY);

  /* @ with k = 0: a zero product; m = 0: d_y is zeros; n = 0: d_x is zeros */
  {
    sg_tensor x = T(dt, 2, 0), y = T(dt, 0, 3), o = T(dt, 2, 3), s = T(dt, 2, 3),
              dx = T(dt, 2, 0), dy = T(dt, 0, 3);
    fill(&o, 42), fill(&s, 1.5);
    CHECK_EQ_INT(PICK(dt, mm)(&x, &y, &o), SG_OK);
    ALL_EQUAL(&o, 0);
    fill(&o, 42);
    CHECK_EQ_INT(PICK(dt, mm_vjp)(&x, &y, &s, &o, &dx, &dy), SG_OK);
    ALL_EQUAL(&o, 0);
  }
  {
    sg_tensor x = T(dt, 0, 2), y = T(dt, 2, 3), o = T(dt, 0, 3), s = T(dt, 0, 3),
              dx = T(dt, 0, 2), dy = T(dt, 2, 3);
    sgt_fill(&y, -1, 1), fill(&dy, 42);
    CHECK_EQ_INT(PICK(dt, mm_vjp)(&x, &y, &s, &o, &dx, &dy), SG_OK);
    ALL_EQUAL(&dy, 0);
  }
  {
    sg_tensor x = T(dt, 2, 3), y = T(dt, 3, 0), o = T(dt, 2, 0), s = T(dt, 2, 0),
              dx = T(dt, 2, 3), dy = T(dt, 3, 0);
    sgt_fill(&x, -1, 1), fill(&dx, 42);
    CHECK_EQ_INT(PICK(dt, mm_vjp)(&x, &y, &s, &o, &dx, &dy), SG_OK);
    ALL_EQUAL(&dx, 0);
  }
  {
    sg_tensor x = T(dt, 0), y = T(dt, 0), dx = T(dt, 0), dy = T(dt, 0);
    sgt_set(&out, 0, 42);
    CHECK_EQ_INT(PICK(dt, vv_grad)(&x, &y, &out, &dx, &dy), SG_OK);
    CHECK_EXACT(sgt_get(&out, 0), 0);
  }
  {
    /* broadcasting against an empty axis: d_y = sum over 0 rows = 0 */
    sg_tensor x = T(dt, 0, 3), y = VEC(dt, 1, 2, 3), dx = T(dt, 0, 3), dy = T(dt, 3);
    fill(&dy, 42), sgt_set(&out, 0, 42);
    CHECK_EQ_INT(PICK(dt, bc_grad)(&x, &y, &out, &dx, &dy), SG_OK);
    CHECK_EXACT(sgt_get(&out, 0), 0);
    ALL_EQUAL(&dy, 0);
  }
  {
    sg_tensor x = T(dt, 0), o = T(dt, 0), s = T(dt, 0), d = T(dt, 0);
    CHECK_EQ_INT(PICK(dt, exp)(&x, &o), SG_OK);
    CHECK_EQ_INT(PICK(dt, exp_vjp)(&x, &s, &o, &d), SG_OK);
  }
}

/* ---- rank 0 ---- */
static sg_tensor A64, X64, B64, OUT64;
static double scalar_loss(void) {
  CHECK_EQ_INT(dg64_scalar(&A64, &X64, &B64, &OUT64), SG_OK);
  return sgt_get(&OUT64, 0);
}
static void scalars(int dt) {
  printf("== rank 0, %s\n", dt == SG_F32 ? "f32" : "f64");
  double tol = dt == SG_F32 ? 1e-6 : 1e-14, gtol = dt == SG_F32 ? 1e-3 : 1e-7;
  sg_tensor a = SCALAR(dt, 0.7), b = SCALAR(dt, -1.3), x = T(dt, 5), out = SCALAR(dt, 0);
  sgt_fill(&x, -1, 1);
  double av = sgt_get(&a, 0), bv = sgt_get(&b, 0), sx = 0;
  for (int i = 0; i < 5; i++)
    sx += sgt_get(&x, i);
  sg_tensor da = SCALAR(dt, 0), dx = T(dt, 5);
  CHECK_EQ_INT(PICK(dt, scalar)(&a, &x, &b, &out), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), av * sx + av * av * bv + sin(av), tol);
  CHECK_EQ_INT(PICK(dt, scalar_grad)(&a, &x, &b, &out, &da, &dx), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), av * sx + av * av * bv + sin(av), tol);
  CHECK_CLOSE(sgt_get(&da, 0), sx + 2 * av * bv + cos(av), tol);
  ALL_EQUAL(&dx, sgt_get(&a, 0));
  A64 = SCALAR(SG_F64, av), B64 = SCALAR(SG_F64, bv), X64 = T(SG_F64, 5);
  OUT64 = SCALAR(SG_F64, 0);
  sgt_copy(&X64, &x);
  double fa[1], fx[5];
  sgt_fd(scalar_loss, &A64, fa);
  sgt_fd(scalar_loss, &X64, fx);
  CHECK_GRAD(&da, fa, gtol);
  CHECK_GRAD(&dx, fx, gtol);

  CHECK_EQ_INT(PICK(dt, scalar_only_grad)(&a, &out, &da), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), exp(av) * av, tol);
  CHECK_CLOSE(sgt_get(&da, 0), exp(av) * (1 + av), tol);
  CHECK_EQ_INT(PICK(dt, scalar_out_grad)(&a, &out, &da), SG_OK);
  CHECK_EXACT(sgt_get(&out, 0), av);
  CHECK_EXACT(sgt_get(&da, 0), 1);

  /* a tensor result of a scalar: d_a = sum(seed * (x + 1)), d_x = a * seed */
  sg_tensor seed = T(dt, 5), o5 = T(dt, 5);
  sgt_fill(&seed, -1, 1);
  CHECK_EQ_INT(PICK(dt, scalar_t_vjp)(&a, &x, &seed, &o5, &da, &dx), SG_OK);
  double want = 0;
  for (int i = 0; i < 5; i++) {
    CHECK_CLOSE(sgt_get(&o5, i), av * sgt_get(&x, i) + av, tol);
    CHECK_CLOSE(sgt_get(&dx, i), av * sgt_get(&seed, i), tol);
    want += sgt_get(&seed, i) * (sgt_get(&x, i) + 1);
  }
  CHECK_CLOSE(sgt_get(&da, 0), want, tol);
}

/* ---- rank 8 ---- */
static int64_t S[8];
static sg_tensor R64, W64, V64, U64, Y64, O64;
static int which;
static double r8_loss(void) {
  int rc = which == 0   ? dg64_r8(&R64, &W64, &O64)
           : which == 1 ? dg64_r8_neg(&R64, &V64, &O64)
           : which == 2 ? dg64_r8_t(&R64, &U64, &O64)
                        : dg64_r8_bc(&R64, &Y64, &O64);
  CHECK_EQ_INT(rc, SG_OK);
  return sgt_get(&O64, 0);
}
/* the references, in double, on R64 etc. */
static double r8_ref(int w) {
  const double *x = R64.data;
  int64_t n = sgt_numel(&R64), outer, len, inner;
  double s = 0;
  if (w == 0 || w == 1) {
    int ax = w == 0 ? 3 : 0;
    outer = 1, len = S[ax], inner = 1;
    for (int i = 0; i < 8; i++)
      *(i < ax ? &outer : &inner) *= i == ax ? 1 : S[i];
    const double *c = w == 0 ? W64.data : V64.data;
    for (int64_t p = 0; p < outer; p++)
      for (int64_t q = 0; q < inner; q++) {
        double t = w == 0 ? 0 : -INFINITY;
        for (int64_t j = 0; j < len; j++)
          t = w == 0 ? t + x[(p * len + j) * inner + q] : fmax(t, x[(p * len + j) * inner + q]);
        s += sin(t * c[p * inner + q]);
      }
    if (w == 0) {
      double mx = -INFINITY, mn = INFINITY, sum = 0;
      for (int64_t i = 0; i < n; i++)
        mx = fmax(mx, x[i]), mn = fmin(mn, x[i]), sum += x[i];
      s += mx + sum / (double)n + mn;
    }
  } else if (w == 2) {
    /* transpose reverses the axes: element (i0..i7) goes to (i7..i0) */
    int64_t idx[8] = {0}, rs[8];
    for (int i = 0; i < 8; i++)
      rs[i] = S[7 - i];
    for (int64_t f = 0; f < n; f++) {
      int64_t r = 0;
      for (int i = 0; i < 8; i++)
        r = r * rs[i] + idx[7 - i];
      s += sin(x[f] * ((double *)U64.data)[r]);
      for (int i = 7; i >= 0 && ++idx[i] == S[i]; i--)
        idx[i] = 0;
    }
  } else {
    for (int64_t f = 0; f < n; f++)
      s += sin(x[f] * ((double *)Y64.data)[f % S[7]]);
  }
  return s;
}
static void rank8(const int64_t *shape) {
  memcpy(S, shape, sizeof S);
  printf("== rank 8: [%lld, %lld, %lld, %lld, %lld, %lld, %lld, %lld]\n", (long long)S[0],
         (long long)S[1], (long long)S[2], (long long)S[3], (long long)S[4], (long long)S[5],
         (long long)S[6], (long long)S[7]);
  int64_t ws[7] = {S[0], S[1], S[2], S[4], S[5], S[6], S[7]}, us[8];
  for (int i = 0; i < 8; i++)
    us[i] = S[7 - i];
  sg_tensor x = sgo_new(SG_F32, 8, S), w = sgo_new(SG_F32, 7, ws), v = sgo_new(SG_F32, 7, S + 1),
            u = sgo_new(SG_F32, 8, us), y = sgo_new(SG_F32, 1, S + 7);
  sgt_fill(&x, -2, 2), sgt_fill(&w, -1, 1), sgt_fill(&v, -1, 1), sgt_fill(&u, -1, 1);
  sgt_fill(&y, -1, 1);
  R64 = sgo_new(SG_F64, 8, S), W64 = sgo_new(SG_F64, 7, ws), V64 = sgo_new(SG_F64, 7, S + 1);
  U64 = sgo_new(SG_F64, 8, us), Y64 = sgo_new(SG_F64, 1, S + 7), O64 = SCALAR(SG_F64, 0);
  sgt_copy(&R64, &x), sgt_copy(&W64, &w), sgt_copy(&V64, &v), sgt_copy(&U64, &u);
  sgt_copy(&Y64, &y);
  int64_t n = sgt_numel(&x);
  double *fd = calloc((size_t)n, sizeof(double)), fy[8];
  const char *names[] = {"sum axis=3, max, mean, min", "max axis=-8", "transpose",
                         "broadcast with rank 1"};
  for (which = 0; which < 4; which++) {
    printf("-- %s\n", names[which]);
    double want = r8_ref(which);
    sg_tensor out = SCALAR(SG_F32, 0), dx = sgo_new(SG_F32, 8, S), dy = sgo_new(SG_F32, 1, S + 7);
    sg_tensor dx64 = sgo_new(SG_F64, 8, S), dy64 = sgo_new(SG_F64, 1, S + 7);
    int rc = which == 0   ? dg_r8_grad(&x, &w, &out, &dx)
             : which == 1 ? dg_r8_neg_grad(&x, &v, &out, &dx)
             : which == 2 ? dg_r8_t_grad(&x, &u, &out, &dx)
                          : dg_r8_bc_grad(&x, &y, &out, &dx, &dy);
    CHECK_EQ_INT(rc, SG_OK);
    CHECK_CLOSE(sgt_get(&out, 0), want, 1e-4);
    rc = which == 0   ? dg64_r8_grad(&R64, &W64, &O64, &dx64)
         : which == 1 ? dg64_r8_neg_grad(&R64, &V64, &O64, &dx64)
         : which == 2 ? dg64_r8_t_grad(&R64, &U64, &O64, &dx64)
                      : dg64_r8_bc_grad(&R64, &Y64, &O64, &dx64, &dy64);
    CHECK_EQ_INT(rc, SG_OK);
    CHECK_CLOSE(sgt_get(&O64, 0), want, 1e-12);
    sgt_fd(r8_loss, &R64, fd);
    CHECK_GRAD(&dx, fd, 1e-3);
    CHECK_GRAD(&dx64, fd, 1e-7);
    if (which == 3) {
      sgt_fd(r8_loss, &Y64, fy);
      CHECK_GRAD(&dy, fy, 1e-3);
      CHECK_GRAD(&dy64, fy, 1e-7);
    }
  }
  /* a rank-8 result: out = x * x, d_x = 2 x seed */
  sg_tensor o = sgo_new(SG_F64, 8, S), s = sgo_new(SG_F64, 8, S), d = sgo_new(SG_F64, 8, S);
  sgt_fill(&s, -1, 1);
  CHECK_EQ_INT(dg64_r8_out_vjp(&R64, &s, &o, &d), SG_OK);
  for (int64_t i = 0; i < n; i++) {
    double xi = sgt_get(&R64, i);
    CHECK_EXACT(sgt_get(&o, i), xi * xi);
    CHECK_EXACT(sgt_get(&d, i), 2 * xi * sgt_get(&s, i));
  }
  free(fd);
}

int main(void) {
  empty_shapes(SG_F32);
  empty_shapes(SG_F64);
  scalars(SG_F32);
  scalars(SG_F64);
  rank8((int64_t[]){2, 1, 3, 2, 1, 2, 3, 2});
  rank8((int64_t[]){1, 2, 2, 1, 3, 1, 2, 3});
  sgo_free_all();
  return sgt_finish();
}
