/* Driver for gradlang.test (gradlang.sg: f64 gl_*, f32 gl32_*); argv: n.
 * grad(f, wrt=p)(args) inside the language: its value against the analytic
 * first derivative; the gradient of the enclosing export (held fixed under
 * stop_gradient; exact second order otherwise) against the analytic
 * derivative and central differences of the f64 export (1e-6; the f32
 * copy to 1e-4 of the analytic one). */
#include "gl64.h"
#include "gl32.h"
#include "opsutil.h"

static int64_t N;
static sg_tensor X, Y, C, S, OUT;
static int which;
static double g_loss(void) {
  int rc = which == 0   ? gl_sg(&X, &C, &OUT)
           : which == 1 ? gl_second(&X, &C, &OUT)
           : which == 2 ? gl_wrt_b(&X, &Y, &C, &OUT)
                        : gl_wrt_s(&S, &X, &OUT);
  CHECK_EQ_INT(rc, SG_OK);
  return sgt_get(&OUT, 0);
}
static double h1(double x) { return exp(x) * (sin(x) + cos(x)); }
static double h2(double x) { return 2 * exp(x) * cos(x); }

#define T(dt, ...) sgo_new(dt, (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), \
                           (int64_t[]){__VA_ARGS__})
/* an f32 copy of an f64 tensor */
static sg_tensor to32(const sg_tensor *t) {
  sg_tensor r = sgo_new(SG_F32, t->rank, t->shape);
  sgt_copy(&r, t);
  return r;
}
/* the f32 copy of a gradient against the reference, relative 1e-4 */
static void check32(const sg_tensor *g, const double *want, const char *what) {
  CHECK_GRAD_VS(g, want, what, 1e-4);
}

int main(int argc, char **argv) {
  N = sgt_arg(argc, argv, 1, 6);
  X = T(SG_F64, N), Y = T(SG_F64, N), C = T(SG_F64, N), S = SCALAR(SG_F64, 0.3);
  OUT = SCALAR(SG_F64, 0);
  sgt_fill(&X, -1.5, 1.5), sgt_fill(&Y, -1.5, 1.5), sgt_fill(&C, -1, 1);
  /* f32 inputs first, and the f64 ones exactly the same values */
  sg_tensor x32 = to32(&X), y32 = to32(&Y), c32 = to32(&C), s32 = to32(&S);
  sgt_copy(&X, &x32), sgt_copy(&Y, &y32), sgt_copy(&C, &c32), sgt_copy(&S, &s32);
  sg_tensor out32 = SCALAR(SG_F32, 0);
  double *want = calloc((size_t)N, sizeof(double)), *want2 = calloc((size_t)N, sizeof(double));
  double *fd = calloc((size_t)N, sizeof(double)), v;
  sg_tensor d = T(SG_F64, N), d2 = T(SG_F64, N), ds = SCALAR(SG_F64, 0), d32 = T(SG_F32, N),
            d232 = T(SG_F32, N), ds32 = SCALAR(SG_F32, 0);
#define XI sgt_get(&X, i)
#define YI sgt_get(&Y, i)
#define CI sgt_get(&C, i)

  printf("== (a) grad under stop_gradient\n");
  which = 0, v = 0;
  for (int64_t i = 0; i < N; i++)
    v += h1(XI) * XI * CI, want[i] = h1(XI) * CI;
  CHECK_EQ_INT(gl_sg_grad(&X, &C, &OUT, &d), SG_OK);
  CHECK_CLOSE(sgt_get(&OUT, 0), v, 1e-13);
  CHECK_GRAD_VS(&d, want, "h'(x) c", 1e-13);
  sgt_fd(g_loss, &X, fd);
  /* FD sees h'(x) move, the gradient must not: differs by h''(x) x c */
  for (int64_t i = 0; i < N; i++)
    fd[i] -= h2(XI) * XI * CI;
  CHECK_GRAD_VS(&d, fd, "finite differences minus h''(x) x c", 1e-6);
  CHECK_EQ_INT(gl32_sg_grad(&x32, &c32, &out32, &d32), SG_OK);
  CHECK_CLOSE(sgt_get(&out32, 0), v, 1e-5);
  check32(&d32, want, "h'(x) c");

  printf("== (b) second order\n");
  which = 1, v = 0;
  for (int64_t i = 0; i < N; i++)
    v += h1(XI) * CI, want[i] = h2(XI) * CI;
  CHECK_EQ_INT(gl_second(&X, &C, &OUT), SG_OK);
  CHECK_CLOSE(sgt_get(&OUT, 0), v, 1e-13);
  CHECK_EQ_INT(gl_second_grad(&X, &C, &OUT, &d), SG_OK);
  CHECK_CLOSE(sgt_get(&OUT, 0), v, 1e-13);
  CHECK_GRAD_VS(&d, want, "2 e^x cos(x) c", 1e-13);
  sgt_fd(g_loss, &X, fd);
  CHECK_GRAD(&d, fd, 1e-6);
  CHECK_EQ_INT(gl32_second_grad(&x32, &c32, &out32, &d32), SG_OK);
  CHECK_CLOSE(sgt_get(&out32, 0), v, 1e-5);
  check32(&d32, want, "2 e^x cos(x) c");

  /* the gradient as a tensor result, and its vjp (second order) */
  sg_tensor o = T(SG_F64, N), o32 = T(SG_F32, N);
  for (int64_t i = 0; i < N; i++)
    want[i] = h1(XI), want2[i] = h2(XI) * CI;
  CHECK_EQ_INT(gl_first_vjp(&X, &C, &o, &d), SG_OK);
  CHECK_GRAD_VS(&o, want, "h'(x)", 1e-13);
  CHECK_GRAD_VS(&d, want2, "seed * h''(x)", 1e-13);
  CHECK_EQ_INT(gl32_first_vjp(&x32, &c32, &o32, &d32), SG_OK);
  check32(&o32, want, "h'(x)");
  check32(&d32, want2, "seed * h''(x)");

  printf("== grad with respect to the second parameter\n");
  which = 2, v = 0;
  for (int64_t i = 0; i < N; i++) {
    double p = XI * YI;
    v += CI * (XI * cos(p) + 2 * p);
    want[i] = CI * (cos(p) - p * sin(p) + 2 * YI);
    want2[i] = CI * (-XI * XI * sin(p) + 2 * XI);
  }
  CHECK_EQ_INT(gl_wrt_b_grad(&X, &Y, &C, &OUT, &d, &d2), SG_OK);
  CHECK_CLOSE(sgt_get(&OUT, 0), v, 1e-13);
  CHECK_GRAD_VS(&d, want, "c (cos(xy) - xy sin(xy) + 2y)", 1e-13);
  CHECK_GRAD_VS(&d2, want2, "c (2x - x^2 sin(xy))", 1e-13);
  sgt_fd(g_loss, &X, fd);
  CHECK_GRAD(&d, fd, 1e-6);
  sgt_fd(g_loss, &Y, fd);
  CHECK_GRAD(&d2, fd, 1e-6);
  CHECK_EQ_INT(gl32_wrt_b_grad(&x32, &y32, &c32, &out32, &d32, &d232), SG_OK);
  CHECK_CLOSE(sgt_get(&out32, 0), v, 1e-5);
  check32(&d32, want, "c (cos(xy) - xy sin(xy) + 2y)");
  check32(&d232, want2, "c (2x - x^2 sin(xy))");

  printf("== grad with respect to a scalar, at expressions\n");
  which = 3, v = 0;
  double s = sgt_get(&S, 0), wds = 0;
  for (int64_t i = 0; i < N; i++) {
    double u = XI + 1, e = exp(2 * s * u);
    v += u * e, wds += 2 * u * u * e, want[i] = e * (1 + 2 * s * u);
  }
  CHECK_EQ_INT(gl_wrt_s_grad(&S, &X, &OUT, &ds, &d), SG_OK);
  CHECK_CLOSE(sgt_get(&OUT, 0), v, 1e-13);
  CHECK_CLOSE(sgt_get(&ds, 0), wds, 1e-13);
  CHECK_GRAD_VS(&d, want, "e^(2s(x+1)) (1 + 2s(x+1))", 1e-13);
  double fs;
  sgt_fd(g_loss, &S, &fs);
  CHECK_GRAD(&ds, &fs, 1e-6);
  sgt_fd(g_loss, &X, fd);
  CHECK_GRAD(&d, fd, 1e-6);
  CHECK_EQ_INT(gl32_wrt_s_grad(&s32, &x32, &out32, &ds32, &d32), SG_OK);
  CHECK_CLOSE(sgt_get(&out32, 0), v, 1e-5);
  CHECK_CLOSE(sgt_get(&ds32, 0), wds, 1e-5);
  check32(&d32, want, "e^(2s(x+1)) (1 + 2s(x+1))");

  free(want), free(want2), free(fd);
  sgo_free_all();
  return sgt_finish();
}
