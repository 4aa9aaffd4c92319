/* Driver for online.test: argv gives n. Each function of online.sg against
 * a direct C computation in f64 with the global max (value), its gradient
 * against central differences (every element up to n = 20000, else 24
 * sampled ones; shapes, not invariant under a shift,
 * against its gradient with the max held), the f32 loss against the f64 formula, the same bits on 1
 * and 2 threads, and non-finite inputs (a block of -inf, +inf, NaN, all
 * -inf) against the plain formula. `prog rows R`: the same for R rows of
 * 8200 by rows (rrows, rxent). */
#include <string.h>

#include "online.h"
#include "sgtest.h"

static int64_t N;
static sg_tensor z, y, z32, y32, out, out32;

static double xent_ref(const double *Z, const double *Y, int64_t n) {
  double m = -INFINITY, s = 0, sy = 0, ys = 0;
  for (int64_t i = 0; i < n; i++)
    m = isnan(Z[i]) || isnan(m) ? NAN : fmax(m, Z[i]);
  for (int64_t i = 0; i < n; i++) {
    s += exp(Z[i] - m);
    sy += Y[i];
    ys += Y[i] * (Z[i] - m);
  }
  return sy * log(s) - ys;
}

static double shapes_ref(const double *Z, const double *W, int64_t n) {
  double m = -INFINITY, a = 0, b = 0, c = 0, d = 0;
  for (int64_t i = 0; i < n; i++)
    m = isnan(Z[i]) || isnan(m) ? NAN : fmax(m, Z[i]);
  for (int64_t i = 0; i < n; i++) {
    double s = Z[i] - m;
    a += W[i] * exp(s) / 2.0;
    b += (s * W[i] - s) / 3.0;
    c += -s;
    d += s * s;
  }
  return log(a) - b + c * 0.25 + d * 0.001;
}

/* shapes is not invariant under a shift of z, so finite differences would
 * move the max (under stop_gradient): its gradient with the max held. */
static void shapes_grad_ref(const double *Z, const double *W, int64_t n, double *g) {
  double m = -INFINITY, a = 0;
  for (int64_t i = 0; i < n; i++)
    m = fmax(m, Z[i]);
  for (int64_t i = 0; i < n; i++)
    a += W[i] * exp(Z[i] - m) / 2.0;
  for (int64_t i = 0; i < n; i++)
    g[i] = W[i] * exp(Z[i] - m) / 2.0 / a - (W[i] - 1) / 3.0 - 0.25 + 0.002 * (Z[i] - m);
}

static double xent_loss(void) {
  CHECK_EQ_INT(xent64(&z, &y, &out), SG_OK);
  return sgt_get(&out, 0);
}

/* Central differences at every element (small n) or at 24 of them. For
 * the 24 the step is 3e-4 whatever x: at n = 600007 the loss is about 1e7,
 * and one rounding of it (1.9e-9) moved a difference over 2h = 2e-5
 * (h = 1e-5 for x near 1) by 1e-4, above the tolerance; now by 3e-6. */
static void check_grad(double (*loss)(void), const sg_tensor *g, const char *what) {
  double *fd = calloc((size_t)(N ? N : 1), sizeof(double));
  if (N <= 20000) {
    sgt_fd(loss, &z, fd);
  } else {
    double *Z = z.data;
    for (int k = 0; k < 24; k++) {
      int64_t i = (int64_t)(sgt_uniform(0, 1) * (double)N);
      double x = Z[i], h = 3e-4;
      Z[i] = x + h;
      double up = loss();
      Z[i] = x - h;
      double down = loss();
      Z[i] = x;
      fd[i] = (up - down) / (2 * h);
    }
    /* compare only where fd was taken: copy the rest from the gradient */
    for (int64_t i = 0; i < N; i++)
      if (fd[i] == 0)
        fd[i] = sgt_get(g, i);
  }
  double err = 0, scale = 0;
  for (int64_t i = 0; i < N; i++) {
    err = fmax(err, fabs(sgt_get(g, i) - fd[i]));
    scale = fmax(scale, fabs(fd[i]));
  }
  if (!(err <= 1e-6 * (scale > 0 ? scale : 1))) {
    printf("FAIL %s:%d: %s differs from finite differences: %.3g (scale %.3g)\n", __FILE__,
           __LINE__, what, err, scale);
    sgt_failures++;
  } else {
    printf("ok: %s matches finite differences\n", what);
  }
  free(fd);
}

/* The loss on these inputs (non-finite ones) against the plain formula. */
/* xent on z32, y32 (blocked partial sums added in f64) against the f64
 * formula on the same (f32) inputs. */
static void check_f32_loss(void) {
  double *Z = malloc(sizeof(double) * (size_t)(N ? N : 1));
  double *Y = malloc(sizeof(double) * (size_t)(N ? N : 1));
  for (int64_t i = 0; i < N; i++) {
    Z[i] = sgt_get(&z32, i);
    Y[i] = sgt_get(&y32, i);
  }
  CHECK_EQ_INT(xent(&z32, &y32, &out32), SG_OK);
  CHECK_CLOSE(sgt_get(&out32, 0), xent_ref(Z, Y, N), 2e-6);
  free(Z);
  free(Y);
}

static void check_special(const char *what) {
  sg_tensor d = sgt_tensor(SG_F64, 1, (int64_t[]){N});
  CHECK_EQ_INT(xent64_grad(&z, &y, &out, &d), SG_OK);
  double got = sgt_get(&out, 0), want = xent_ref(z.data, y.data, N);
  int before = sgt_failures;
  CHECK_CLOSE(got, want, 1e-10);
  CHECK_EQ_INT(shapes(&z, &y, &out), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), shapes_ref(z.data, y.data, N), 1e-10);
  if (sgt_failures == before)
    printf("ok: %s as the plain formula (%g)\n", what, got);
  free(d.data);
}

/* By rows (rrows, rxent: rows of K = 8200, two blocks and a partial one). */
enum { K = 8200 };

static double row_ref(const double *Z, const double *Y) {
  return xent_ref(Z, Y, K);
}

static double rxent_loss(void) {
  CHECK_EQ_INT(rxent(&z, &y, &out), SG_OK);
  return sgt_get(&out, 0);
}

static int rows_main(int64_t R) {
  z = sgt_tensor(SG_F64, 2, (int64_t[]){R, K});
  y = sgt_tensor(SG_F64, 2, (int64_t[]){R, K});
  out = sgt_scalar(SG_F64);
  sg_tensor per = sgt_tensor(SG_F64, 1, (int64_t[]){R}), dz = sgt_tensor(SG_F64, 2, (int64_t[]){R, K});
  sg_tensor dz2 = sgt_tensor(SG_F64, 2, (int64_t[]){R, K}), o2 = sgt_scalar(SG_F64);
  sgt_fill(&z, -8, 30);
  sgt_fill(&y, 0.1, 1);
  double *Z = z.data, *Y = y.data, want = 0;
  for (int64_t r = 0; r < R; r++)
    want += row_ref(Z + r * K, Y + r * K);
  CHECK_CLOSE(rxent_loss(), want, 1e-11);
  printf("ok: rows: value\n");
  /* gradient: -y + sum(y) softmax(z) per row; and central differences at 24
   * elements (the loss is invariant under a shift of a row). The step is
   * 3e-4 whatever x: the loss is about 1e6 (rows of 8200 terms), so one
   * rounding of it (1.2e-10) moved a difference over 2h = 2e-5 (h = 1e-5
   * for x near 1) by 6e-6, above the tolerance; now by 2e-7, and the
   * step's own error is h^2 |f'''| / 6 < 1e-7 (|f'''| < 4 here). */
  sg_set_num_threads(1);
  CHECK_EQ_INT(rxent_grad(&z, &y, &out, &dz), SG_OK);
  double *g = calloc((size_t)(R * K + 1), sizeof(double));
  for (int64_t r = 0; r < R; r++) {
    double m = -INFINITY, s = 0, sy = 0;
    for (int64_t j = 0; j < K; j++)
      m = fmax(m, Z[r * K + j]);
    for (int64_t j = 0; j < K; j++) {
      s += exp(Z[r * K + j] - m);
      sy += Y[r * K + j];
    }
    for (int64_t j = 0; j < K; j++)
      g[r * K + j] = sy * exp(Z[r * K + j] - m) / s - Y[r * K + j];
  }
  CHECK_GRAD_VS(&dz, g, "-y + sum(y) softmax(z)", 1e-10);
  double err = 0, scale = 1;
  for (int k = 0; k < 24 && R > 0; k++) {
    int64_t i = (int64_t)(sgt_uniform(0, 1) * (double)(R * K));
    double x = Z[i], h = 3e-4;
    Z[i] = x + h;
    double up = rxent_loss();
    Z[i] = x - h;
    double down = rxent_loss();
    Z[i] = x;
    err = fmax(err, fabs((up - down) / (2 * h) - g[i]));
    scale = fmax(scale, fabs(g[i]));
  }
  if (!(err <= 1e-6 * scale))
    printf("FAIL: central differences differ by %g (scale %g)\n", err, scale);
  CHECK(err <= 1e-6 * scale);
  printf("ok: rows: d_z matches finite differences at 24 elements\n");
  CHECK_EQ_INT(rxent_grad(&z, &y, &out, &dz), SG_OK);
  sg_set_num_threads(2);
  CHECK_EQ_INT(rxent_grad(&z, &y, &o2, &dz2), SG_OK);
  CHECK(memcmp(out.data, o2.data, 8) == 0);
  CHECK(memcmp(dz.data, dz2.data, (size_t)(R * K) * 8) == 0);
  printf("ok: rows: the same bits on 1 and 2 threads\n");
  /* non-finite rows, each against the plain formula */
  if (R >= 5) {
    for (int64_t j = 0; j < K; j++)
      Z[0 * K + j] = -INFINITY;
    Z[1 * K + 5000] = INFINITY;
    Z[2 * K + 17] = NAN;
    for (int64_t j = 0; j < 4096; j++)
      Z[3 * K + j] = -INFINITY;
    CHECK_EQ_INT(rrows(&z, &y, &per), SG_OK);
    for (int64_t r = 0; r < R; r++)
      CHECK_CLOSE(sgt_get(&per, r), row_ref(Z + r * K, Y + r * K), 1e-10);
    printf("ok: rows: -inf, +inf, NaN rows as the plain formula\n");
  }
  free(g);
  free(z.data);
  free(y.data);
  free(per.data);
  free(dz.data);
  free(dz2.data);
  free(o2.data);
  free(out.data);
  printf(sgt_failures ? "%d checks failed\n" : "all checks passed\n", sgt_failures);
  return sgt_failures != 0;
}

int main(int argc, char **argv) {
  if (argc > 2 && !strcmp(argv[1], "rows"))
    return rows_main(atoll(argv[2]));
  N = argc > 1 ? atoll(argv[1]) : 1000;
  z = sgt_tensor(SG_F64, 1, (int64_t[]){N});
  y = sgt_tensor(SG_F64, 1, (int64_t[]){N});
  z32 = sgt_tensor(SG_F32, 1, (int64_t[]){N});
  y32 = sgt_tensor(SG_F32, 1, (int64_t[]){N});
  out = sgt_scalar(SG_F64);
  out32 = sgt_scalar(SG_F32);
  sgt_fill(&z, -8, 30); /* the max moves from block to block */
  sgt_fill(&y, 0.1, 1);
  sgt_copy(&z32, &z);
  sgt_copy(&y32, &y);
  sg_tensor dz = sgt_tensor(SG_F64, 1, (int64_t[]){N});

  /* values */
  CHECK_CLOSE(xent_loss(), xent_ref(z.data, y.data, N), 1e-11);
  CHECK_EQ_INT(shapes(&z, &y, &out), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), shapes_ref(z.data, y.data, N), 1e-11);
  check_f32_loss();
  printf("ok: values\n");

  /* gradients */
  CHECK_EQ_INT(xent64_grad(&z, &y, &out, &dz), SG_OK);
  check_grad(xent_loss, &dz, "xent64 d_z");
  CHECK_EQ_INT(shapes_grad(&z, &y, &out, &dz), SG_OK);
  {
    double *want = malloc(sizeof(double) * (size_t)(N ? N : 1));
    shapes_grad_ref(z.data, y.data, N, want);
    CHECK_GRAD_VS(&dz, want, "the gradient with the max held", 1e-10);
    free(want);
  }
  {
    sg_tensor d32 = sgt_tensor(SG_F32, 1, (int64_t[]){N});
    CHECK_EQ_INT(xent64_grad(&z, &y, &out, &dz), SG_OK);
    sgt_copy(&z, &z32);
    CHECK_EQ_INT(xent64_grad(&z, &y, &out, &dz), SG_OK);
    CHECK_EQ_INT(xent_grad(&z32, &y32, &out32, &d32), SG_OK);
    double err = 0, scale = 0;
    for (int64_t i = 0; i < N; i++) {
      err = fmax(err, fabs(sgt_get(&d32, i) - sgt_get(&dz, i)));
      scale = fmax(scale, fabs(sgt_get(&dz, i)));
    }
    CHECK(err <= 1e-5 * (scale > 0 ? scale : 1));
    printf("ok: xent d_z (f32) against the f64 gradient\n");

    /* the same bits on 1 and 2 threads */
    sg_tensor d2 = sgt_tensor(SG_F32, 1, (int64_t[]){N});
    sg_tensor o2 = sgt_scalar(SG_F32);
    sg_set_num_threads(1);
    CHECK_EQ_INT(xent_grad(&z32, &y32, &out32, &d32), SG_OK);
    sg_set_num_threads(2);
    CHECK_EQ_INT(xent_grad(&z32, &y32, &o2, &d2), SG_OK);
    CHECK(memcmp(out32.data, o2.data, 4) == 0);
    CHECK(memcmp(d32.data, d2.data, (size_t)N * 4) == 0);
    CHECK_EQ_INT(xent(&z32, &y32, &o2), SG_OK);
    CHECK(memcmp(out32.data, o2.data, 4) == 0);
    printf("ok: xent has the same bits on 1 and 2 threads\n");
    free(d32.data);
    free(d2.data);
    free(o2.data);
  }

  /* growing data: each block's max above the shift its sums take (the
   * max of the blocks before it; for a chunk's first block, the max of its
   * first 256 elements) by far more than the slack of 2 (summed
   * again, shifted by its own max: else e^100 overflows the f32 sums),
   * then by less (kept): the values as the plain formula, the f32 loss as
   * the f64 formula */
  for (int pass = 0; pass < 2 && N > 4096; pass++) {
    double per_block = pass ? 1.5 : 100;
    for (int64_t i = 0; i < N; i++)
      ((double *)z.data)[i] = -20 + per_block * (double)i / 4096;
    CHECK_CLOSE(xent_loss(), xent_ref(z.data, y.data, N), 1e-11);
    CHECK_EQ_INT(shapes(&z, &y, &out), SG_OK);
    CHECK_CLOSE(sgt_get(&out, 0), shapes_ref(z.data, y.data, N), 1e-11);
    sgt_copy(&z32, &z);
    check_f32_loss();
    printf("ok: growing by %g a block as the plain formula\n", per_block);
  }
  if (N > 4096)
    sgt_fill(&z, -8, 30);

  /* non-finite inputs */
  double *Z = z.data;
  if (N > 4096) {
    for (int64_t i = 0; i < 4096; i++) /* the first block all -inf */
      Z[i] = -INFINITY;
    check_special("a first block of -inf");
    for (int64_t i = 0; i < 4096; i++)
      Z[i] = sgt_uniform(-8, 30);
    for (int64_t i = N - 1; i >= N - 4096 + 7 && i >= 0; i--) /* most of the last block */
      Z[i] = -INFINITY;
    check_special("a last block mostly -inf");
  }
  if (N > 0) {
    Z[N / 2] = INFINITY;
    check_special("an +inf");
    Z[N / 2] = NAN;
    check_special("a NaN");
    for (int64_t i = 0; i < N; i++)
      Z[i] = -INFINITY;
    check_special("all -inf");
  } else {
    check_special("no element");
  }
  free(dz.data);
  free(z.data);
  free(y.data);
  free(z32.data);
  free(y32.data);
  free(out.data);
  free(out32.data);
  if (sgt_failures)
    printf("%d checks failed\n", sgt_failures);
  else
    printf("all checks passed\n");
  return sgt_failures != 0;
}
