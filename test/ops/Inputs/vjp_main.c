/* Driver for vjp.test (vjp.sg, f32 vj_* and f64 vj64_*); argv: m n k.
 * For each export with a tensor result: the output of f and of f_vjp
 * against plain C, and d_p of f_vjp for a random seed against central
 * differences of <seed, f64 f(p)> (f32 to 1e-3, f64 to 1e-7). */
#include "vj32.h"
#include "vj64.h"
#include "opsutil.h"

static int64_t M, N, K;
#define T(dt, ...) sgo_new(dt, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
                           (int64_t[]){__VA_ARGS__})

/* The current case: its f64 inputs, seed and output, and how to call f64 f. */
static sg_tensor *in64[3], seed64, out64;
static int (*call64)(void);
static double dot_loss(void) {
  CHECK_EQ_INT(call64(), SG_OK);
  double s = 0;
  for (int64_t i = 0; i < sgt_numel(&out64); i++)
    s += sgt_get(&seed64, i) * sgt_get(&out64, i);
  return s;
}
static int c_layer(void) { return vj64_layer(in64[0], in64[1], in64[2], &out64); }
static int c_softmax(void) { return vj64_softmax(in64[0], &out64); }
static int c_vec(void) { return vj64_vec(in64[0], in64[1], &out64); }
static int c_t3(void) { return vj64_t3(in64[0], &out64); }
static int c_outer(void) { return vj64_outer(in64[0], in64[1], &out64); }

/* out (f32 or f64) against want[] to tol * max(1, |want|) */
static void out_close(const char *name, const sg_tensor *out, const double *want, double tol) {
  for (int64_t i = 0; i < sgt_numel(out); i++)
    if (!(fabs(sgt_get(out, i) - want[i]) <= tol * fmax(1, fabs(want[i])))) {
      printf("FAIL %s: out[%lld] = %.17g, expected %.17g\n", name, (long long)i,
             sgt_get(out, i), want[i]);
      sgt_failures++;
      return;
    }
}
/* d (of dtype f32 or f64) against finite differences w.r.t. in64[p] */
static void vjp_close(const char *name, const sg_tensor *d32, const sg_tensor *d64, int p) {
  double *fd = calloc((size_t)sgt_numel(in64[p]), sizeof(double));
  sgt_fd(dot_loss, in64[p], fd);
  printf("%s, d_%d:\n", name, p);
  CHECK_GRAD(d32, fd, 1e-3);
  CHECK_GRAD(d64, fd, 1e-7);
  free(fd);
}

int main(int argc, char **argv) {
  M = sgt_arg(argc, argv, 1, 3), N = sgt_arg(argc, argv, 2, 4), K = sgt_arg(argc, argv, 3, 5);
  double *want = calloc((size_t)(M * N * K + 1), sizeof(double));

  { /* tanh(x @ w + b) */
    sg_tensor x = T(SG_F32, M, N), w = T(SG_F32, N, K), b = T(SG_F32, K), s = T(SG_F32, M, K);
    sgt_fill(&x, -1, 1), sgt_fill(&w, -1, 1), sgt_fill(&b, -1, 1), sgt_fill(&s, -1, 1);
    sg_tensor x6 = T(SG_F64, M, N), w6 = T(SG_F64, N, K), b6 = T(SG_F64, K);
    sgt_copy(&x6, &x), sgt_copy(&w6, &w), sgt_copy(&b6, &b);
    seed64 = T(SG_F64, M, K), out64 = T(SG_F64, M, K), sgt_copy(&seed64, &s);
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < K; j++) {
        double z = sgt_get(&b, j);
        for (int64_t l = 0; l < N; l++)
          z += sgt_get(&x, i * N + l) * sgt_get(&w, l * K + j);
        want[i * K + j] = tanh(z);
      }
    sg_tensor o = T(SG_F32, M, K), dx = T(SG_F32, M, N), dw = T(SG_F32, N, K);
    sg_tensor dx6 = T(SG_F64, M, N), dw6 = T(SG_F64, N, K);
    CHECK_EQ_INT(vj_layer(&x, &w, &b, &o), SG_OK);
    out_close("vj_layer", &o, want, 1e-5);
    CHECK_EQ_INT(vj_layer_vjp(&x, &w, &b, &s, &o, &dx, &dw), SG_OK);
    out_close("vj_layer_vjp", &o, want, 1e-5);
    CHECK_EQ_INT(vj64_layer_vjp(&x6, &w6, &b6, &seed64, &out64, &dx6, &dw6), SG_OK);
    out_close("vj64_layer_vjp", &out64, want, 1e-13);
    in64[0] = &x6, in64[1] = &w6, in64[2] = &b6, call64 = c_layer;
    vjp_close("vj_layer", &dx, &dx6, 0);
    vjp_close("vj_layer", &dw, &dw6, 1);
  }
  { /* softmax over each row */
    sg_tensor z = T(SG_F32, M, K), s = T(SG_F32, M, K), z6 = T(SG_F64, M, K);
    sgt_fill(&z, -3, 3), sgt_fill(&s, -1, 1), sgt_copy(&z6, &z);
    seed64 = T(SG_F64, M, K), out64 = T(SG_F64, M, K), sgt_copy(&seed64, &s);
    for (int64_t i = 0; i < M; i++) {
      double se = 0;
      for (int64_t j = 0; j < K; j++)
        se += exp(sgt_get(&z, i * K + j));
      for (int64_t j = 0; j < K; j++)
        want[i * K + j] = exp(sgt_get(&z, i * K + j)) / se;
    }
    sg_tensor o = T(SG_F32, M, K), dz = T(SG_F32, M, K), dz6 = T(SG_F64, M, K);
    CHECK_EQ_INT(vj_softmax_vjp(&z, &s, &o, &dz), SG_OK);
    out_close("vj_softmax_vjp", &o, want, 1e-6);
    CHECK_EQ_INT(vj64_softmax_vjp(&z6, &seed64, &out64, &dz6), SG_OK);
    out_close("vj64_softmax_vjp", &out64, want, 1e-14);
    in64[0] = &z6, call64 = c_softmax;
    vjp_close("vj_softmax", &dz, &dz6, 0);
    /* the hand-derived VJP: p * (s - <s, p>) per row */
    double *h = calloc((size_t)(M * K), sizeof(double));
    for (int64_t i = 0; i < M; i++) {
      double sp = 0;
      for (int64_t j = 0; j < K; j++)
        sp += sgt_get(&s, i * K + j) * want[i * K + j];
      for (int64_t j = 0; j < K; j++)
        h[i * K + j] = want[i * K + j] * (sgt_get(&s, i * K + j) - sp);
    }
    CHECK_GRAD_VS(&dz, h, "p * (s - <s, p>)", 1e-5);
    CHECK_GRAD_VS(&dz6, h, "p * (s - <s, p>)", 1e-12);
    free(h);
  }
  { /* x * sin(y) + maximum(x, y) ** 2 */
    sg_tensor x = T(SG_F32, N), y = T(SG_F32, N), s = T(SG_F32, N);
    sgt_fill(&x, -2, 2), sgt_fill(&y, -2, 2), sgt_fill(&s, -1, 1);
    sg_tensor x6 = T(SG_F64, N), y6 = T(SG_F64, N);
    sgt_copy(&x6, &x), sgt_copy(&y6, &y);
    seed64 = T(SG_F64, N), out64 = T(SG_F64, N), sgt_copy(&seed64, &s);
    for (int64_t i = 0; i < N; i++) {
      double a = sgt_get(&x, i), c = sgt_get(&y, i);
      want[i] = a * sin(c) + fmax(a, c) * fmax(a, c);
    }
    sg_tensor o = T(SG_F32, N), dx = T(SG_F32, N), dy = T(SG_F32, N);
    sg_tensor dx6 = T(SG_F64, N), dy6 = T(SG_F64, N);
    CHECK_EQ_INT(vj_vec_vjp(&x, &y, &s, &o, &dx, &dy), SG_OK);
    out_close("vj_vec_vjp", &o, want, 1e-5);
    CHECK_EQ_INT(vj64_vec_vjp(&x6, &y6, &seed64, &out64, &dx6, &dy6), SG_OK);
    out_close("vj64_vec_vjp", &out64, want, 1e-13);
    in64[0] = &x6, in64[1] = &y6, call64 = c_vec;
    vjp_close("vj_vec", &dx, &dx6, 0);
    vjp_close("vj_vec", &dy, &dy6, 1);
  }
  { /* transpose(exp(x) * 0.5, [2, 0, 1]): out[c][a][b] = x[a][b][c] */
    sg_tensor x = T(SG_F32, K, M, N), s = T(SG_F32, N, K, M), x6 = T(SG_F64, K, M, N);
    sgt_fill(&x, -1, 1), sgt_fill(&s, -1, 1), sgt_copy(&x6, &x);
    seed64 = T(SG_F64, N, K, M), out64 = T(SG_F64, N, K, M), sgt_copy(&seed64, &s);
    for (int64_t a = 0; a < K; a++)
      for (int64_t b = 0; b < M; b++)
        for (int64_t c = 0; c < N; c++)
          want[(c * K + a) * M + b] = 0.5 * exp(sgt_get(&x, (a * M + b) * N + c));
    sg_tensor o = T(SG_F32, N, K, M), dx = T(SG_F32, K, M, N), dx6 = T(SG_F64, K, M, N);
    CHECK_EQ_INT(vj_t3_vjp(&x, &s, &o, &dx), SG_OK);
    out_close("vj_t3_vjp", &o, want, 1e-6);
    CHECK_EQ_INT(vj64_t3_vjp(&x6, &seed64, &out64, &dx6), SG_OK);
    out_close("vj64_t3_vjp", &out64, want, 1e-14);
    in64[0] = &x6, call64 = c_t3;
    vjp_close("vj_t3", &dx, &dx6, 0);
  }
  { /* x[:, None] * y[None, :] + y */
    sg_tensor x = T(SG_F32, M), y = T(SG_F32, N), s = T(SG_F32, M, N);
    sgt_fill(&x, -2, 2), sgt_fill(&y, -2, 2), sgt_fill(&s, -1, 1);
    sg_tensor x6 = T(SG_F64, M), y6 = T(SG_F64, N);
    sgt_copy(&x6, &x), sgt_copy(&y6, &y);
    seed64 = T(SG_F64, M, N), out64 = T(SG_F64, M, N), sgt_copy(&seed64, &s);
    for (int64_t i = 0; i < M; i++)
      for (int64_t j = 0; j < N; j++)
        want[i * N + j] = sgt_get(&x, i) * sgt_get(&y, j) + sgt_get(&y, j);
    sg_tensor o = T(SG_F32, M, N), dx = T(SG_F32, M), dy = T(SG_F32, N);
    sg_tensor dx6 = T(SG_F64, M), dy6 = T(SG_F64, N);
    CHECK_EQ_INT(vj_outer_vjp(&x, &y, &s, &o, &dx, &dy), SG_OK);
    out_close("vj_outer_vjp", &o, want, 1e-6);
    CHECK_EQ_INT(vj64_outer_vjp(&x6, &y6, &seed64, &out64, &dx6, &dy6), SG_OK);
    out_close("vj64_outer_vjp", &out64, want, 1e-14);
    in64[0] = &x6, in64[1] = &y6, call64 = c_outer;
    vjp_close("vj_outer", &dx, &dx6, 0);
    vjp_close("vj_outer", &dy, &dy6, 1);
  }
  free(want);
  sgo_free_all();
  return sgt_finish();
}
