/* Driver for i32.test: every i32 operation of spec section 5 against plain C
 * with the language's rules (wrapping + - *, floor // and % as in Python,
 * i32(x) toward zero and saturating with NaN -> 0), on values that reach
 * the edges (INT32_MIN, INT32_MAX, negative operands). */
#include <limits.h>

#include "i32.h"
#include "sgtest.h"

#define N 12
static const int32_t A[N] = {7, -7, 7, -7, INT32_MAX, INT32_MIN, INT32_MIN, 0, 1, -1, 123456, -99};
static const int32_t B[N] = {2, 2, -2, -2, 1, -1, 1, 5, INT32_MAX, INT32_MIN, 789, 3};

static int32_t wrap(int64_t v) { return (int32_t)(uint32_t)(uint64_t)v; }
static int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static sg_tensor vec(const int32_t *v) {
  sg_tensor t = SGT_TENSOR(SG_I32, N);
  memcpy(t.data, v, sizeof(int32_t) * N);
  return t;
}
static int32_t at(const sg_tensor *t, int i) { return ((int32_t *)t->data)[i]; }

typedef int (*Bin)(const sg_tensor *, const sg_tensor *, sg_tensor *);
typedef int (*Un)(const sg_tensor *, sg_tensor *);

static void bin(const char *name, Bin f, int64_t (*ref)(int64_t, int64_t)) {
  sg_tensor a = vec(A), b = vec(B), out = SGT_TENSOR(SG_I32, N);
  CHECK_EQ_INT(f(&a, &b, &out), SG_OK);
  int bad = sgt_failures;
  for (int i = 0; i < N; i++)
    if (at(&out, i) != wrap(ref(A[i], B[i]))) {
      printf("FAIL %s: element %d: %d op %d gave %d, expected %d\n", name, i, A[i], B[i],
             at(&out, i), wrap(ref(A[i], B[i])));
      sgt_failures++;
    }
  if (sgt_failures == bad)
    printf("ok: %s\n", name);
  free(a.data), free(b.data), free(out.data);
}
static void un(const char *name, Un f, int64_t (*ref)(int64_t)) {
  sg_tensor a = vec(A), out = SGT_TENSOR(SG_I32, N);
  CHECK_EQ_INT(f(&a, &out), SG_OK);
  int bad = sgt_failures;
  for (int i = 0; i < N; i++)
    if (at(&out, i) != wrap(ref(A[i]))) {
      printf("FAIL %s: element %d: op %d gave %d, expected %d\n", name, i, A[i], at(&out, i),
             wrap(ref(A[i])));
      sgt_failures++;
    }
  if (sgt_failures == bad)
    printf("ok: %s\n", name);
  free(a.data), free(out.data);
}

static int64_t r_add(int64_t a, int64_t b) { return a + b; }
static int64_t r_sub(int64_t a, int64_t b) { return a - b; }
static int64_t r_mul(int64_t a, int64_t b) { return a * b; }
static int64_t r_fdiv(int64_t a, int64_t b) { return floordiv(a, b); }
static int64_t r_mod(int64_t a, int64_t b) { return a - b * floordiv(a, b); }
static int64_t r_max(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t r_min(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t r_sel(int64_t a, int64_t b) { return a < b ? a : b * 10; }
static int64_t r_cmp(int64_t a, int64_t b) {
  return (a < b) + 2 * (a <= b) + 4 * (a > b) + 8 * (a >= b) + 16 * (a == b) + 32 * (a != b);
}
static int64_t r_logic(int64_t a, int64_t b) {
  return (a > 0 && b > 0) + 2 * (a > 0 || b > 0) + 4 * !(a > 0);
}
static int64_t r_neg(int64_t a) { return -a; }
static int64_t r_abs(int64_t a) { return a < 0 ? -a : a; }
static int64_t r_sign(int64_t a) { return (a > 0) - (a < 0); }
/* 2 * a - 7 // 2 + -7 % 3 = 2a - 3 + 2 (Python: 7 // 2 = 3, -7 % 3 = 2) */
static int64_t r_lit(int64_t a) { return 2 * a - 3 + 2; }

int main(void) {
  CHECK_EQ_INT(r_fdiv(-7, 2), -4);
  CHECK_EQ_INT(r_mod(-7, 2), 1);
  bin("i_add", i_add, r_add);
  bin("i_sub", i_sub, r_sub);
  bin("i_mul", i_mul, r_mul);
  bin("i_floordiv", i_floordiv, r_fdiv);
  bin("i_mod", i_mod, r_mod);
  bin("i_max", i_max, r_max);
  bin("i_min", i_min, r_min);
  bin("i_select", i_select, r_sel);
  bin("i_cmp", i_cmp, r_cmp);
  bin("i_logic", i_logic, r_logic);
  un("i_neg", i_neg, r_neg);
  un("i_abs", i_abs, r_abs);
  un("i_sign", i_sign, r_sign);
  un("i_lit", i_lit, r_lit);

  /* reductions (sum wraps) */
  sg_tensor a = vec(A), s = sgt_scalar(SG_I32);
  int64_t sum = 0, mx = INT32_MIN, mn = INT32_MAX;
  for (int i = 0; i < N; i++) {
    sum += A[i];
    mx = A[i] > mx ? A[i] : mx;
    mn = A[i] < mn ? A[i] : mn;
  }
  CHECK_EQ_INT(i_sum(&a, &s), SG_OK);
  CHECK_EQ_INT(at(&s, 0), wrap(sum));
  CHECK_EQ_INT(i_rmax(&a, &s), SG_OK);
  CHECK_EQ_INT(at(&s, 0), mx);
  CHECK_EQ_INT(i_rmin(&a, &s), SG_OK);
  CHECK_EQ_INT(at(&s, 0), mn);
  /* [3, 4] matrix: axis sums and maxima; transpose plus reshape */
  sg_tensor m = SGT_TENSOR(SG_I32, 3, 4), c4 = SGT_TENSOR(SG_I32, 4), r3 = SGT_TENSOR(SG_I32, 3);
  sg_tensor t43 = SGT_TENSOR(SG_I32, 4, 3);
  for (int i = 0; i < 12; i++)
    ((int32_t *)m.data)[i] = (i * 7) % 5 - 2;
  CHECK_EQ_INT(i_sum_axis(&m, &c4), SG_OK);
  CHECK_EQ_INT(i_max_axis(&m, &r3), SG_OK);
  CHECK_EQ_INT(i_shape(&m, &t43), SG_OK);
  for (int j = 0; j < 4; j++) {
    int32_t want = 0;
    for (int i = 0; i < 3; i++)
      want += at(&m, 4 * i + j);
    CHECK_EQ_INT(at(&c4, j), want);
  }
  for (int i = 0; i < 3; i++) {
    int32_t want = INT32_MIN;
    for (int j = 0; j < 4; j++)
      want = at(&m, 4 * i + j) > want ? at(&m, 4 * i + j) : want;
    CHECK_EQ_INT(at(&r3, i), want);
  }
  for (int j = 0; j < 4; j++)
    for (int i = 0; i < 3; i++)
      CHECK_EQ_INT(at(&t43, 3 * j + i), at(&m, 4 * i + j) + at(&m, 3 * j + i));
  printf("ok: reductions and shapes\n");

  /* casts: toward zero, saturating, NaN -> 0; exact back */
  float xf[8] = {2.9f, -2.9f, 0.5f, -0.5f, 3e9f, -3e9f, NAN, 2147483520.0f};
  int32_t want[8] = {2, -2, 0, 0, INT32_MAX, INT32_MIN, 0, 2147483520};
  sg_tensor x = SGT_TENSOR(SG_F32, 8), xi = SGT_TENSOR(SG_I32, 8);
  memcpy(x.data, xf, sizeof xf);
  CHECK_EQ_INT(to_i32(&x, &xi), SG_OK);
  for (int i = 0; i < 8; i++)
    CHECK_EQ_INT(at(&xi, i), want[i]);
  sg_tensor x64 = SGT_TENSOR(SG_F64, 8);
  double xd[8] = {2.9, -2.9, 2147483647.9, -2147483648.9, INFINITY, -INFINITY, NAN, -1e300};
  int32_t want64[8] = {2, -2, INT32_MAX, INT32_MIN, INT32_MAX, INT32_MIN, 0, INT32_MIN};
  memcpy(x64.data, xd, sizeof xd);
  CHECK_EQ_INT(to_i32_64(&x64, &xi), SG_OK);
  for (int i = 0; i < 8; i++)
    CHECK_EQ_INT(at(&xi, i), want64[i]);
  sg_tensor af = SGT_TENSOR(SG_F32, N), ad = SGT_TENSOR(SG_F64, N);
  CHECK_EQ_INT(to_f32(&a, &af), SG_OK);
  CHECK_EQ_INT(to_f64(&a, &ad), SG_OK);
  for (int i = 0; i < N; i++) {
    CHECK_EXACT(sgt_get(&af, i), (double)(float)A[i]);
    CHECK_EXACT(sgt_get(&ad, i), (double)A[i]);
  }
  float bx[3] = {-1, 0, 2};
  sg_tensor b3 = SGT_TENSOR(SG_F32, 3), bo = SGT_TENSOR(SG_F32, 3);
  memcpy(b3.data, bx, sizeof bx);
  CHECK_EQ_INT(bool_casts(&b3, &bo), SG_OK);
  CHECK_EXACT(sgt_get(&bo, 0), 2);
  CHECK_EXACT(sgt_get(&bo, 1), 4);
  CHECK_EXACT(sgt_get(&bo, 2), 1);
  printf("ok: casts\n");

  /* an i32 argument of the wrong dtype is rejected */
  CHECK_EQ_INT(i_neg(&af, &a), SG_ERR_DTYPE);
  CHECK_STR(sg_last_error(), "i_neg: argument 'a' has dtype f32, expected i32");
  if (sgt_failures)
    return 1;
  printf("all checks passed\n");
  return 0;
}
