/* test_runtime.c: unit test of libsgrt (runtime/), run by runtime.test.
 *
 * Checks sg_rt_check's every error message and code exactly, the symbol
 * values it binds, its overlap rule, the thread-local error message, the
 * allocator and its failure hook, and sg_rt_gemm_f32/f64 against a naive
 * double-precision triple loop for every transpose combination, with and
 * without accumulation, odd and degenerate sizes and padded leading
 * dimensions -- for each kernel variant this CPU can run, not just the one
 * the dispatcher picks. Prints "FAIL file:line: ..." per failure and a
 * summary; exits non-zero on any failure. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"
#include "sg_runtime.h"
#include "sgrt.h"

#include "rtcheck.h"

#define CHECK_STR(got, want)                                                   \
  do {                                                                         \
    const char *g_ = (got), *w_ = (want);                                      \
    CHECK(strcmp(g_, w_) == 0, "%s =\n  got:      \"%s\"\n  expected: \"%s\"", \
          #got, g_, w_);                                                       \
  } while (0)

/* ------------------------------------------------------------------ check */

static sg_tensor tensor(void *data, int32_t dtype, int32_t rank,
                        const int64_t *shape) {
  sg_tensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.dtype = dtype;
  t.rank = rank;
  for (int32_t d = 0; d < rank && d < SG_MAX_RANK; d++)
    t.shape[d] = shape[d];
  return t;
}

#define SYM(s) (-1 - (s))

/* Runs sg_rt_check and compares the code and message ("" when ok). */
#define EXPECT_CHECK(sig, args, syms, code, msg)                               \
  do {                                                                         \
    int r_ = sg_rt_check(sig, args, syms);                                     \
    CHECK_INT(r_, code);                                                       \
    if (code != SG_OK)                                                         \
      CHECK_STR(sg_last_error(), msg);                                         \
  } while (0)

/* xent_grad(w: f32[k, d], x: f32[d]) -> f32, i.e. inputs w, x and outputs
 * out, d_w. */
static const char *const xent_syms[] = {"k", "d"};
static const int64_t dims_kd[] = {SYM(0), SYM(1)};
static const int64_t dims_d[] = {SYM(1)};
static const sg_rt_arg xent_args[] = {
    {"w", SG_F32, 2, 0, 0, dims_kd},
    {"x", SG_F32, 1, 0, 0, dims_d},
    {"out", SG_F32, 0, 1, 0, NULL},
    {"d_w", SG_F32, 2, 1, 0, dims_kd},
};
static const sg_rt_sig xent_sig = {"xent_grad", 4, 2, xent_syms, xent_args};

static float wbuf[64], xbuf[16], outbuf[4], dwbuf[64];

typedef struct xent_case {
  sg_tensor w, x, out, d_w;
  const sg_tensor *args[4];
} xent_case;

/* A valid call: w [3, 4], x [4], out [], d_w [3, 4]. */
static void xent_init(xent_case *c) {
  c->w = tensor(wbuf, SG_F32, 2, (int64_t[]){3, 4});
  c->x = tensor(xbuf, SG_F32, 1, (int64_t[]){4});
  c->out = tensor(outbuf, SG_F32, 0, NULL);
  c->d_w = tensor(dwbuf, SG_F32, 2, (int64_t[]){3, 4});
  c->args[0] = &c->w;
  c->args[1] = &c->x;
  c->args[2] = &c->out;
  c->args[3] = &c->d_w;
}

static void test_check(void) {
  xent_case c;
  int64_t syms[2] = {99, 99};

  xent_init(&c);
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_OK, "");
  CHECK_INT(syms[0], 3);
  CHECK_INT(syms[1], 4);

  xent_init(&c);
  c.args[1] = NULL;
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_ERR_NULL,
               "xent_grad: argument 'x' is NULL");

  xent_init(&c);
  c.x.data = NULL;
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_ERR_NULL,
               "xent_grad: argument 'x' has NULL data");
  xent_init(&c);
  c.out.data = NULL; /* a scalar has one element */
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_ERR_NULL,
               "xent_grad: argument 'out' has NULL data");

  /* Tensors with no elements may have NULL data. */
  xent_init(&c);
  c.w = tensor(NULL, SG_F32, 2, (int64_t[]){3, 0});
  c.x = tensor(NULL, SG_F32, 1, (int64_t[]){0});
  c.d_w = tensor(NULL, SG_F32, 2, (int64_t[]){3, 0});
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_OK, "");
  CHECK_INT(syms[0], 3);
  CHECK_INT(syms[1], 0);

  xent_init(&c);
  c.x.dtype = SG_F64;
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_ERR_DTYPE,
               "xent_grad: argument 'x' has dtype f64, expected f32");
  xent_init(&c);
  c.x.dtype = 7;
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_ERR_DTYPE,
               "xent_grad: argument 'x' has dtype 7, expected f32");

  xent_init(&c);
  c.x = tensor(xbuf, SG_F32, 2, (int64_t[]){4, 1});
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_ERR_RANK,
               "xent_grad: argument 'x' has rank 2, expected 1");
  xent_init(&c);
  c.x.rank = 9;
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_ERR_RANK,
               "xent_grad: argument 'x' has rank 9, expected 1");
  xent_init(&c);
  c.x.rank = -1;
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_ERR_RANK,
               "xent_grad: argument 'x' has rank -1, expected 1");
  xent_init(&c);
  c.x.rank = -1;
  c.x.data = NULL; /* the rank is reported, not the NULL data */
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_ERR_RANK,
               "xent_grad: argument 'x' has rank -1, expected 1");

  xent_init(&c);
  c.w.shape[1] = -1;
  EXPECT_CHECK(
      &xent_sig, c.args, syms, SG_ERR_SHAPE,
      "xent_grad: argument 'w' has a negative dimension in shape [3, -1]");

  /* The spec's example. */
  xent_init(&c);
  c.x.shape[0] = 5;
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_ERR_SHAPE,
               "xent_grad: argument 'x' has shape [5], expected [d] with d = "
               "4 (bound by 'w')");
  xent_init(&c);
  c.d_w.shape[1] = 5;
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_ERR_SHAPE,
               "xent_grad: argument 'd_w' has shape [3, 5], expected [k, d] "
               "with k = 3, d = 4 (bound by 'w')");

  xent_init(&c);
  c.x.shape[0] = (int64_t)1 << 61; /* 2^63 bytes */
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_ERR_SHAPE,
               "xent_grad: argument 'x' has shape [2305843009213693952], "
               "which is too large (2^62 bytes or more)");
  xent_init(&c);
  c.w.shape[0] = (int64_t)1 << 40;
  c.w.shape[1] = (int64_t)1 << 40;
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_ERR_SHAPE,
               "xent_grad: argument 'w' has shape [1099511627776, "
               "1099511627776], which is too large (2^62 bytes or more)");
  xent_init(&c); /* one short of the limit: 2^60 f32 = 2^62 bytes */
  c.w = tensor(NULL, SG_F32, 2, (int64_t[]){(int64_t)1 << 60, 0});
  c.d_w = tensor(NULL, SG_F32, 2, (int64_t[]){(int64_t)1 << 60, 0});
  c.x = tensor(NULL, SG_F32, 1, (int64_t[]){0});
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_OK, "");
  {
    static const int64_t big_dims[] = {SYM(0)};
    static const char *const big_syms[] = {"n"};
    static const sg_rt_arg big_args[] = {{"v", SG_F32, 1, 0, 0, big_dims}};
    static const sg_rt_sig big_sig = {"big", 1, 1, big_syms, big_args};
    sg_tensor v = tensor(xbuf, SG_F32, 1, (int64_t[]){((int64_t)1 << 60) - 1});
    const sg_tensor *a[] = {&v};
    EXPECT_CHECK(&big_sig, a, syms, SG_OK, "");
    v.shape[0]++;
    EXPECT_CHECK(&big_sig, a, syms, SG_ERR_SHAPE,
                 "big: argument 'v' has shape [1152921504606846976], which is "
                 "too large (2^62 bytes or more)");
  }

  /* Literal dimensions, and symbols bound by various arguments. */
  {
    static const char *const names[] = {"n", "m"};
    static const int64_t d_4[] = {4}, d_n[] = {SYM(0)}, d_m[] = {SYM(1)},
                         d_nn[] = {SYM(0), SYM(0)}, d_nm[] = {SYM(0), SYM(1)},
                         d_n4[] = {SYM(0), 4}, d_mn[] = {SYM(1), SYM(0)};
    static const sg_rt_arg a1[] = {{"v", SG_F64, 1, 0, 0, d_4}};
    static const sg_rt_sig s1 = {"lit", 1, 0, names, a1};
    static const sg_rt_arg a2[] = {{"a", SG_F32, 2, 0, 0, d_nn}};
    static const sg_rt_sig s2 = {"sq", 1, 1, names, a2};
    static const sg_rt_arg a3[] = {{"a", SG_F32, 1, 0, 0, d_n},
                                   {"b", SG_F32, 1, 0, 0, d_m},
                                   {"c", SG_F32, 2, 0, 0, d_nm}};
    static const sg_rt_sig s3 = {"two", 3, 2, names, a3};
    static const sg_rt_arg a4[] = {{"a", SG_F32, 1, 0, 0, d_n},
                                   {"c", SG_F32, 2, 0, 0, d_n4}};
    static const sg_rt_sig s4 = {"mixed", 2, 1, names, a4};
    static const sg_rt_arg a5[] = {{"w", SG_F32, 1, 0, 0, d_m},
                                   {"x", SG_F32, 2, 0, 0, d_nm}};
    static const sg_rt_sig s5 = {"selfw", 2, 2, names, a5};
    static const sg_rt_arg a6[] = {{"w", SG_F32, 1, 0, 0, d_m},
                                   {"x", SG_F32, 2, 0, 0, d_nm},
                                   {"y", SG_F32, 2, 0, 0, d_mn}};
    static const sg_rt_sig s6 = {"order", 3, 2, names, a6};
    double dd[8];
    float ff[64];
    int64_t sy[2];

    sg_tensor v = tensor(dd, SG_F64, 1, (int64_t[]){5});
    const sg_tensor *args1[] = {&v};
    EXPECT_CHECK(&s1, args1, sy, SG_ERR_SHAPE,
                 "lit: argument 'v' has shape [5], expected [4]");
    v.shape[0] = 4;
    EXPECT_CHECK(&s1, args1, sy, SG_OK, "");
    v.dtype = SG_F32;
    EXPECT_CHECK(&s1, args1, sy, SG_ERR_DTYPE,
                 "lit: argument 'v' has dtype f32, expected f64");

    sg_tensor a = tensor(ff, SG_F32, 2, (int64_t[]){3, 4});
    const sg_tensor *args2[] = {&a};
    EXPECT_CHECK(&s2, args2, sy, SG_ERR_SHAPE,
                 "sq: argument 'a' has shape [3, 4], expected [n, n] with n "
                 "= 3 (bound by 'a')");
    a.shape[1] = 3;
    EXPECT_CHECK(&s2, args2, sy, SG_OK, "");
    CHECK_INT(sy[0], 3);

    sg_tensor x = tensor(ff, SG_F32, 1, (int64_t[]){3});
    sg_tensor y = tensor(ff + 8, SG_F32, 1, (int64_t[]){4});
    sg_tensor z = tensor(ff + 16, SG_F32, 2, (int64_t[]){3, 5});
    const sg_tensor *args3[] = {&x, &y, &z};
    EXPECT_CHECK(&s3, args3, sy, SG_ERR_SHAPE,
                 "two: argument 'c' has shape [3, 5], expected [n, m] with n "
                 "= 3 (bound by 'a'), m = 4 (bound by 'b')");
    z.shape[1] = 4;
    EXPECT_CHECK(&s3, args3, sy, SG_OK, "");
    CHECK_INT(sy[0], 3);
    CHECK_INT(sy[1], 4);

    z.shape[1] = 5;
    const sg_tensor *args4[] = {&x, &z};
    EXPECT_CHECK(&s4, args4, sy, SG_ERR_SHAPE,
                 "mixed: argument 'c' has shape [3, 5], expected [n, 4] with "
                 "n = 3 (bound by 'a')");
    z.shape[0] = 2;
    EXPECT_CHECK(&s4, args4, sy, SG_ERR_SHAPE,
                 "mixed: argument 'c' has shape [2, 5], expected [n, 4] with "
                 "n = 3 (bound by 'a')");

    /* n is bound by x itself but is not what conflicts: not listed. */
    sg_tensor w = tensor(ff, SG_F32, 1, (int64_t[]){4});
    z = tensor(ff + 8, SG_F32, 2, (int64_t[]){3, 5});
    const sg_tensor *args5[] = {&w, &z};
    EXPECT_CHECK(&s5, args5, sy, SG_ERR_SHAPE,
                 "selfw: argument 'x' has shape [3, 5], expected [n, m] with "
                 "m = 4 (bound by 'w')");

    /* Symbols are listed in the order the expected shape names them. */
    z.shape[1] = 4;
    sg_tensor u = tensor(ff + 32, SG_F32, 2, (int64_t[]){4, 2});
    const sg_tensor *args6[] = {&w, &z, &u};
    EXPECT_CHECK(&s6, args6, sy, SG_ERR_SHAPE,
                 "order: argument 'y' has shape [4, 2], expected [m, n] with "
                 "m = 4 (bound by 'w'), n = 3 (bound by 'x')");
  }

  /* Overlap: outputs may not share a byte with any other argument. */
  xent_init(&c);
  c.out.data = wbuf + 11; /* the last element of w */
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_ERR_ALIAS,
               "xent_grad: output 'out' overlaps argument 'w'");
  xent_init(&c);
  c.out.data = wbuf + 12; /* just past w: adjacent, not overlapping */
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_OK, "");
  xent_init(&c);
  c.d_w.data = wbuf + 12; /* d_w [12, 24) after w [0, 12) */
  c.out.data = wbuf + 23; /* inside d_w */
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_ERR_ALIAS,
               "xent_grad: output 'out' overlaps argument 'd_w'");
  xent_init(&c);
  c.d_w.data = wbuf + 11;
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_ERR_ALIAS,
               "xent_grad: output 'd_w' overlaps argument 'w'");
  xent_init(&c);
  c.d_w.data = (char *)wbuf + 2; /* misaligned partial overlap */
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_ERR_ALIAS,
               "xent_grad: output 'd_w' overlaps argument 'w'");
  xent_init(&c);
  c.x.data = wbuf; /* inputs may alias each other */
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_OK, "");
  xent_init(&c); /* empty tensors overlap nothing */
  c.w = tensor(wbuf, SG_F32, 2, (int64_t[]){0, 4});
  c.d_w = tensor(wbuf, SG_F32, 2, (int64_t[]){0, 4});
  c.out.data = wbuf;
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_OK, "");
  CHECK_INT(syms[0], 0);
  xent_init(&c); /* shapes are checked before overlap */
  c.out.data = wbuf;
  c.d_w.shape[0] = 2;
  EXPECT_CHECK(&xent_sig, c.args, syms, SG_ERR_SHAPE,
               "xent_grad: argument 'd_w' has shape [2, 4], expected [k, d] "
               "with k = 3, d = 4 (bound by 'w')");
  {
    static const int64_t d1[] = {2};
    static const sg_rt_arg a64[] = {{"p", SG_F64, 1, 0, 0, d1},
                                    {"q", SG_F64, 1, 1, 0, d1}};
    static const sg_rt_sig s64 = {"f64s", 2, 0, xent_syms, a64};
    double db[8];
    sg_tensor p = tensor(db, SG_F64, 1, (int64_t[]){2});
    sg_tensor q = tensor(db + 1, SG_F64, 1, (int64_t[]){2});
    const sg_tensor *a[] = {&p, &q};
    EXPECT_CHECK(&s64, a, syms, SG_ERR_ALIAS,
                 "f64s: output 'q' overlaps argument 'p'");
    q.data = db + 2; /* 8-byte elements: adjacent */
    EXPECT_CHECK(&s64, a, syms, SG_OK, "");
  }
}

/* ------------------------------------------------------------ errors, alloc */

static void *other_thread(void *arg) {
  (void)arg;
  static const int64_t d1[] = {1};
  static const sg_rt_arg a[] = {{"t", SG_F32, 1, 0, 0, d1}};
  static const sg_rt_sig s = {"thr", 1, 0, NULL, a};
  const sg_tensor *args[] = {NULL};
  int64_t sy[1];
  int ok = strcmp(sg_last_error(), "") == 0;
  ok &= sg_rt_check(&s, args, sy) == SG_ERR_NULL;
  ok &= strcmp(sg_last_error(), "thr: argument 't' is NULL") == 0;
  return ok ? arg : (void *)&nfails;
}

static void test_errors_and_alloc(void) {
  CHECK_INT(sg_rt_alloc_failed("f", 100), SG_ERR_ALLOC);
  CHECK_STR(sg_last_error(), "f: cannot allocate 100 bytes for temporaries");
  pthread_t th;
  void *res = &nfails;
  CHECK_INT(pthread_create(&th, NULL, other_thread, NULL), 0);
  CHECK_INT(pthread_join(th, &res), 0);
  CHECK(res == NULL, "the other thread saw a wrong message");
  CHECK_STR(sg_last_error(), "f: cannot allocate 100 bytes for temporaries");

  int64_t sizes[] = {0, 1, 63, 64, 65, 1000, 1 << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    unsigned char *p = sg_rt_alloc(sizes[i]);
    CHECK(p != NULL, "sg_rt_alloc(%lld) = NULL", (long long)sizes[i]);
    CHECK((uintptr_t)p % 64 == 0, "sg_rt_alloc(%lld) = %p, not 64-aligned",
          (long long)sizes[i], (void *)p);
    if (p && sizes[i])
      memset(p, 0xab, (size_t)sizes[i]);
    sg_rt_free(p);
  }
  sg_rt_free(NULL);
  CHECK(sg_rt_alloc(-1) == NULL, "sg_rt_alloc(-1) != NULL");
  CHECK(sg_rt_alloc(INT64_MAX) == NULL, "sg_rt_alloc(INT64_MAX) != NULL");
  CHECK(sg_rt_alloc(INT64_MAX / 2 + 1) == NULL, "sg_rt_alloc(2^62) != NULL");

  /* The hook: after(n) lets n allocations through, fails the next one,
   * then allocation works again. */
  for (int n = 0; n < 4; n++) {
    sg_rt_fail_alloc_after(n);
    for (int i = 0; i <= n + 2; i++) {
      void *p = sg_rt_alloc(16);
      CHECK((p == NULL) == (i == n), "after(%d): call %d returned %p", n, i, p);
      sg_rt_free(p);
    }
  }
  sg_rt_fail_alloc_after(1);
  sg_rt_fail_alloc_after(-1); /* off again */
  for (int i = 0; i < 3; i++) {
    void *p = sg_rt_alloc(16);
    CHECK(p != NULL, "after(-1): call %d failed", i);
    sg_rt_free(p);
  }
  sg_rt_fail_alloc_after(0); /* invalid sizes still count as calls */
  CHECK(sg_rt_alloc(-5) == NULL, "sg_rt_alloc(-5) != NULL");
  void *p = sg_rt_alloc(8);
  CHECK(p != NULL, "the hook fired twice");
  sg_rt_free(p);
}

/* ------------------------------------------------------------------ gemm */

static uint64_t rng = 12345;
static double rnd(void) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (double)(rng >> 11) / (double)(1ull << 53) * 2.0 - 1.0;
}

static const char *isa_name(int isa) {
  return isa == SG_RT_ISA_AVX512 ? "avx512"
         : isa == SG_RT_ISA_AVX2 ? "avx2"
         : isa == SG_RT_ISA_GENERIC ? "generic"
                                    : "dispatch";
}

/* One size, both dtypes, every transpose, acc, padding and kernel variant.
 * The reference is exact-ish (double sums); the bound scales with sum|a||b|
 * so that cancellation does not make the test flaky. */
static void gemm_case(int64_t m, int64_t n, int64_t k, int pads) {
  for (int tt = 0; tt < 4; tt++) {
    int ta = tt & 1, tb = tt >> 1;
    for (int pad = 0; pad < pads; pad++) {
      int64_t lda = (ta ? m : k) + pad * 3, ldb = (tb ? k : n) + pad * 5,
              ldc = n + pad * 2;
      int64_t arows = ta ? k : m, brows = tb ? n : k;
      size_t asz = (size_t)(arows * lda) + 1, bsz = (size_t)(brows * ldb) + 1,
             csz = (size_t)(m * ldc) + 1;
      double *A = malloc(asz * sizeof *A), *B = malloc(bsz * sizeof *B);
      double *C0 = malloc(csz * sizeof *C0), *ref = malloc(csz * sizeof *ref),
             *mag = malloc(csz * sizeof *mag);
      float *Af = malloc(asz * sizeof *Af), *Bf = malloc(bsz * sizeof *Bf),
            *Cf = malloc(csz * sizeof *Cf);
      double *Cd = malloc(csz * sizeof *Cd);
      for (size_t i = 0; i < asz; i++)
        Af[i] = (float)(A[i] = rnd());
      for (size_t i = 0; i < bsz; i++)
        Bf[i] = (float)(B[i] = rnd());
      for (size_t i = 0; i < csz; i++)
        C0[i] = (float)rnd();
      for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
          double s = 0, g = 0;
          for (int64_t p = 0; p < k; p++) {
            double x = ta ? A[p * lda + i] : A[i * lda + p];
            double y = tb ? B[j * ldb + p] : B[p * ldb + j];
            s += x * y;
            g += fabs(x * y);
          }
          ref[i * ldc + j] = s;
          mag[i * ldc + j] = g;
        }
      float *Cf0 = malloc(csz * sizeof *Cf0);
      double *Cd0 = malloc(csz * sizeof *Cd0);
      int64_t id = 0;
      for (int isa = -1; isa <= SG_RT_ISA_AVX512; isa++) {
        for (int acc = 0; acc < 2; acc++) {
          /* kp 0: B not kept; 1: kept for a new call (packed whole); 2:
           * kept for that call again (read as packed before). All three
           * give the same bits. */
          for (int dt = 0, kp = 0; dt < 2; kp = (kp + 1) % 3, dt += kp == 0) {
            int64_t kept = kp == 0 ? 0 : kp == 1 ? (id = sg_rt_call_id()) : id;
            /* Without acc, C starts as NaN: it must not be read. Cells
             * outside the m x n view (padding) must keep their value. */
            for (size_t i = 0; i < csz; i++) {
              int inside = i < (size_t)(m * ldc) && (int64_t)(i % ldc) < n;
              double v = acc || !inside ? C0[i] : NAN;
              Cf[i] = (float)v;
              Cd[i] = v;
            }
            int r = 0;
            if (dt == 0 && isa < 0)
              sg_rt_gemm_f32(ta, tb, m, n, k, Af, lda, Bf, ldb, Cf, ldc, acc, kept);
            else if (dt == 0)
              r = sg_rt_gemm_f32_isa(isa, ta, tb, m, n, k, Af, lda, Bf, ldb,
                                     Cf, ldc, acc, kept);
            else if (isa < 0)
              sg_rt_gemm_f64(ta, tb, m, n, k, A, lda, B, ldb, Cd, ldc, acc, kept);
            else
              r = sg_rt_gemm_f64_isa(isa, ta, tb, m, n, k, A, lda, B, ldb, Cd,
                                     ldc, acc, kept);
            if (r < 0)
              continue; /* this CPU lacks the variant */
            if (kp == 0)
              memcpy(dt ? (void *)Cd0 : (void *)Cf0, dt ? (void *)Cd : (void *)Cf,
                     csz * (dt ? sizeof *Cd : sizeof *Cf));
            else if (memcmp(dt ? (void *)Cd0 : (void *)Cf0, dt ? (void *)Cd : (void *)Cf,
                            csz * (dt ? sizeof *Cd : sizeof *Cf))) {
              nfails++;
              printf("FAIL %s:%d: gemm_%s[%s] ta=%d tb=%d m=%lld n=%lld k=%lld acc=%d: "
                     "B kept (%s) changes the bits\n",
                     __FILE__, __LINE__, dt ? "f64" : "f32", isa_name(isa), ta, tb,
                     (long long)m, (long long)n, (long long)k, acc,
                     kp == 1 ? "packed" : "read again");
            }
            int bad = 0;
            for (size_t i = 0; i < csz && bad < 3; i++) {
              double got = dt ? Cd[i] : (double)Cf[i];
              int inside = i < (size_t)(m * ldc) && (int64_t)(i % ldc) < n;
              double want, tol;
              if (inside) {
                want = ref[i] + (acc ? (dt ? C0[i] : (double)(float)C0[i]) : 0);
                tol = (dt ? 1e-12 : 1e-4) * (mag[i] + 1.0);
              } else {
                want = dt ? C0[i] : (double)(float)C0[i];
                tol = 0;
              }
              nchecks++;
              if (!(fabs(got - want) <= tol)) {
                bad++;
                nfails++;
                printf("FAIL %s:%d: gemm_%s[%s] ta=%d tb=%d m=%lld n=%lld "
                       "k=%lld lda=%lld ldb=%lld ldc=%lld acc=%d: C[%lld][%lld]"
                       " = %.17g, expected %.17g\n",
                       __FILE__, __LINE__, dt ? "f64" : "f32", isa_name(isa),
                       ta, tb, (long long)m, (long long)n, (long long)k,
                       (long long)lda, (long long)ldb, (long long)ldc, acc,
                       (long long)(i / ldc), (long long)(i % ldc), got, want);
              }
            }
          }
        }
      }
      free(A);
      free(B);
      free(C0);
      free(ref);
      free(mag);
      free(Af);
      free(Bf);
      free(Cf);
      free(Cd);
      free(Cf0);
      free(Cd0);
    }
  }
}

/* A kept operand is the call's: a later call whose B is the same memory
 * with other elements (the next training step's weights) must not read
 * the first call's packed B. Nine kept operands in one call (more than
 * the thread keeps) still give the right products. Both the plain and the
 * swapped (C^T, B packed as the left operand) forms. */
static void test_gemm_kept(void) {
  static const int64_t shapes[][3] = {{100, 64, 70}, {32, 1000, 40}};
  for (int sh = 0; sh < 2; sh++) {
    int64_t m = shapes[sh][0], n = shapes[sh][1], k = shapes[sh][2];
    float *a = malloc((size_t)(m * k) * sizeof *a), *b = malloc((size_t)(9 * k * n) * sizeof *b);
    float *c = malloc((size_t)(m * n) * sizeof *c), *want = malloc((size_t)(m * n) * sizeof *want);
    for (int64_t i = 0; i < m * k; i++)
      a[i] = (float)rnd();
    for (int round = 0; round < 2; round++) {
      for (int64_t i = 0; i < 9 * k * n; i++)
        b[i] = (float)rnd();
      int64_t id = sg_rt_call_id();
      for (int rep = 0; rep < 2; rep++)
        for (int op = 0; op < 9; op++) {
          const float *bo = b + op * k * n;
          sg_rt_gemm_f32(0, 0, m, n, k, a, k, bo, n, want, n, 0, 0);
          sg_rt_gemm_f32(0, 0, m, n, k, a, k, bo, n, c, n, 0, id);
          nchecks++;
          if (memcmp(c, want, (size_t)(m * n) * sizeof *c)) {
            nfails++;
            printf("FAIL %s:%d: gemm_f32 m=%lld n=%lld k=%lld, B kept, round %d, "
                   "repeat %d, operand %d: not the product of B's elements\n",
                   __FILE__, __LINE__, (long long)m, (long long)n, (long long)k, round, rep, op);
          }
        }
    }
    free(a);
    free(b);
    free(c);
    free(want);
  }
}

typedef struct gemm_job {
  int64_t n;
  float *a, *b, *c;
} gemm_job;

static void *gemm_thread(void *arg) {
  gemm_job *j = arg;
  for (int rep = 0; rep < 3; rep++)
    sg_rt_gemm_f32(0, 1, j->n, j->n, j->n, j->a, j->n, j->b, j->n, j->c, j->n,
                   0, 0);
  return NULL;
}

static void test_gemm(void) {
  static const int64_t sizes[][3] = {
      {0, 0, 0},   {0, 3, 4},    {3, 0, 4},     {3, 4, 0},    {1, 1, 1},
      {1, 1, 9},   {1, 7, 5},    {7, 1, 5},     {1, 100, 37}, {100, 1, 37},
      {2, 3, 1},   {2, 2, 2},    {7, 13, 5},    {13, 7, 5},   {5, 5, 300},
      {17, 33, 65}, {25, 40, 30}, {64, 64, 64},  {13, 31, 17}, {37, 70, 11},
      {50, 70, 900}, {30, 1000, 20}, {1600, 20, 10}, {300, 200, 250},
      /* narrow C: computed as C^T, stored transposed */
      {40, 3, 40},  {64, 8, 8},   {200, 10, 50}, {1000, 3, 64}, {333, 17, 400},
  };
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    int64_t m = sizes[i][0], n = sizes[i][1], k = sizes[i][2];
    gemm_case(m, n, k, m * n * k > 5000000 ? 1 : 2);
  }

  /* Several threads at once must not interfere (no shared scratch). */
  enum { NT = 4, N = 96 };
  gemm_job jobs[NT];
  pthread_t th[NT];
  float *a = malloc(N * N * sizeof *a), *b = malloc(N * N * sizeof *b),
        *want = malloc(N * N * sizeof *want);
  for (int i = 0; i < N * N; i++) {
    a[i] = (float)rnd();
    b[i] = (float)rnd();
  }
  sg_rt_gemm_f32(0, 1, N, N, N, a, N, b, N, want, N, 0, 0);
  for (int t = 0; t < NT; t++) {
    jobs[t] = (gemm_job){N, a, b, malloc(N * N * sizeof(float))};
    pthread_create(&th[t], NULL, gemm_thread, &jobs[t]);
  }
  for (int t = 0; t < NT; t++) {
    pthread_join(th[t], NULL);
    CHECK(memcmp(jobs[t].c, want, N * N * sizeof(float)) == 0,
          "thread %d got a different product", t);
    free(jobs[t].c);
  }
  free(a);
  free(b);
  free(want);
}

/* The workspace: one cached block per thread, handed out while not busy,
 * grown on demand, the hook counting every request (cached or not). */
static void test_workspace(void) {
  sg_release_workspace();
  CHECK_INT(sg_rt_ws_bytes(), 0);
  unsigned char *p = sg_rt_ws_acquire(1000);
  CHECK(p && (uintptr_t)p % 64 == 0, "acquire(1000) = %p", (void *)p);
  memset(p, 1, 1000);
  /* a nested request while busy gets memory of its own */
  unsigned char *q = sg_rt_ws_acquire(100);
  CHECK(q && q != p && (uintptr_t)q % 64 == 0, "nested acquire = %p", (void *)q);
  sg_rt_ws_release(q);
  sg_rt_ws_release(p);
  CHECK(sg_rt_ws_acquire(500) == p, "a smaller request got another block");
  sg_rt_ws_release(p);
  CHECK_INT(sg_rt_ws_bytes(), 1000);
  unsigned char *r = sg_rt_ws_acquire(1 << 20);
  CHECK(r != NULL, "acquire(1 MiB) = NULL");
  memset(r, 2, 1 << 20);
  sg_rt_ws_release(r);
  CHECK_INT(sg_rt_ws_bytes(), 1 << 20);
  sg_rt_fail_alloc_after(1);
  p = sg_rt_ws_acquire(64);
  CHECK(p == r, "the first request after after(1) was not served from the cache");
  sg_rt_ws_release(p);
  CHECK(sg_rt_ws_acquire(64) == NULL, "after(1): the cached request did not fail");
  sg_rt_fail_alloc_after(-1);
  CHECK(sg_rt_ws_acquire(-1) == NULL, "acquire(-1) != NULL");
  p = sg_rt_ws_acquire(0);
  CHECK(p != NULL, "acquire(0) = NULL");
  sg_rt_ws_release(p);
  sg_release_workspace();
  CHECK_INT(sg_rt_ws_bytes(), 0);
}

int main(void) {
  test_check();
  test_errors_and_alloc();
  test_workspace();
  test_gemm();
  test_gemm_kept();
  printf("%s: %d checks, %d failures (gemm kernels: %s)\n",
         nfails ? "FAILED" : "PASSED", nchecks, nfails,
         isa_name(sg_rt_gemm_isa()));
  return nfails != 0;
}
