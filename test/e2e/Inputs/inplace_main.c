/* Indexed assignment in place and by copy (Inputs/inplace.sg): each value
 * against the same program computed here in double (f32 to 1e-5), each
 * f64 gradient against central differences of the f64 build (1e-7) and
 * each f32 gradient against the f64 one (1e-4). Usage: prog N (N >= 4). */
#include "inplace32.h"
#include "inplace64.h"
#include "sgtest.h"

typedef int Fn(const sg_tensor *, const sg_tensor *, sg_tensor *);
typedef int Grad(const sg_tensor *, const sg_tensor *, sg_tensor *, sg_tensor *, sg_tensor *);

static int64_t n;
static Fn *cur;
static sg_tensor A64, B64, O64;

static double loss(void) {
  CHECK_EQ_INT(cur(&A64, &B64, &O64), SG_OK);
  return sgt_get(&O64, 0);
}

static double at(const sg_tensor *t, int64_t i) { return sgt_get(t, i); }

/* The programs of inplace.sg in double, from the f32 inputs. */
static double ref_dead(const sg_tensor *w, const sg_tensor *x, bool live) {
  double v[64], old[64];
  for (int64_t r = 0; r < n; r++) {
    v[r] = 0;
    for (int64_t c = 0; c < n; c++)
      v[r] += at(w, r * n + c) * at(x, c);
    old[r] = v[r];
  }
  v[0] = at(x, 1) * 2.0;
  v[1] += at(x, 0);
  v[2] += at(x, 1);
  if (!live)
    v[n - 1] -= 0.5 * at(x, 2);
  double s = 0;
  for (int64_t r = 0; r < n; r++)
    s += live ? v[r] * old[r] : v[r] * v[r];
  return s;
}

static double ref_rows(const sg_tensor *w, const sg_tensor *x) {
  double m[64][64] = {{0}}, s = 0; /* all set below; zeroed for gcc -O1 -fsanitize (maybe-uninitialized) */
  for (int64_t r = 0; r < n; r++)
    for (int64_t c = 0; c < n; c++) {
      m[r][c] = 0;
      for (int64_t k = 0; k < n; k++)
        m[r][c] += at(w, r * n + k) * at(w, k * n + c);
    }
  for (int64_t c = 0; c < n; c++)
    m[1][c] = at(x, c);
  for (int64_t r = 0; r < n; r++) {
    double a = m[r][2], b = m[r][3]; /* the old value's slice, read first */
    m[r][0] += a;
    m[r][1] += b;
  }
  m[2][3] *= 3.0;
  for (int64_t r = 0; r < n; r++)
    for (int64_t c = 0; c < n; c++)
      s += m[r][c] * m[r][c];
  return s;
}

static double ref_walk(const sg_tensor *x, double a, int step, bool strided) {
  double v[64], s = 0;
  for (int64_t i = 0; i < n; i++)
    v[i] = 2.0 * at(x, i);
  for (int64_t i = 0; i < n; i += step)
    v[i] = strided ? v[i] + a * (double)i : v[i] * a + 1.0;
  for (int64_t i = 0; i < n; i++)
    s += v[i] * v[i];
  return s;
}

static double ref_fresh(const sg_tensor *x, double a) {
  double v[64], s = 0;
  for (int64_t i = 0; i < n; i++)
    v[i] = at(x, i);
  for (int k = 0; k < 3; k++) {
    double t = 0;
    for (int64_t i = 0; i < n; i++)
      t += v[i] = v[i] * v[i] + a;
    v[1] = a * t / (double)n;
  }
  for (int64_t i = 0; i < n; i++)
    s += v[i];
  return s;
}

static double ref_scat(const sg_tensor *x, double a) {
  double v[64], s = 0, r = 0;
  for (int64_t i = 0; i < n; i++)
    s += v[i] = exp(at(x, i));
  for (int j = 0; j < 4; j++)
    v[j % 2] += a * at(x, j);
  for (int j = 0; j < 4; j++)
    v[j % 2] -= 0.5 * a;
  for (int64_t i = 0; i < n; i++)
    r += v[i] * v[i];
  return r + s;
}

static double ref_prev(const sg_tensor *x, double a) {
  /* p is v before the last update: a everywhere but the last position */
  return (double)(n - 1) * a * a + 2.0 * at(x, n - 1) * a;
}

static void *kept[128];
static int nkept;
static sg_tensor keep(sg_tensor t) {
  kept[nkept++] = t.data;
  return t;
}

/* value (against want), f64 gradient against finite differences, f32
 * gradient against the f64 one */
static void check(const char *name, Fn *f32, Grad *g32, Fn *f64, Grad *g64, sg_tensor *a,
                  sg_tensor *b, double want) {
  sg_tensor o = keep(sgt_scalar(SG_F32)), o64 = keep(sgt_scalar(SG_F64));
  CHECK_EQ_INT(f32(a, b, &o), SG_OK);
  printf("%s: %.9g (reference %.9g)\n", name, sgt_get(&o, 0), want);
  CHECK_CLOSE(sgt_get(&o, 0), want, 1e-5);
  A64 = keep(sgt_tensor(SG_F64, a->rank, a->shape));
  B64 = keep(sgt_tensor(SG_F64, b->rank, b->shape));
  O64 = o64;
  for (int64_t i = 0; i < sgt_numel(a); i++)
    sgt_set(&A64, i, sgt_get(a, i));
  for (int64_t i = 0; i < sgt_numel(b); i++)
    sgt_set(&B64, i, sgt_get(b, i));
  sg_tensor da = keep(sgt_tensor(SG_F32, a->rank, a->shape)), db = keep(sgt_tensor(SG_F32, b->rank, b->shape));
  sg_tensor da64 = keep(sgt_tensor(SG_F64, a->rank, a->shape)), db64 = keep(sgt_tensor(SG_F64, b->rank, b->shape));
  CHECK_EQ_INT(g32(a, b, &o, &da, &db), SG_OK);
  CHECK_CLOSE(sgt_get(&o, 0), want, 1e-5);
  CHECK_EQ_INT(g64(&A64, &B64, &o64, &da64, &db64), SG_OK);
  CHECK_CLOSE(sgt_get(&o64, 0), want, 1e-5);
  double fd[4096];
  cur = f64;
  sgt_fd(loss, &A64, fd);
  CHECK_GRAD(&da64, fd, 1e-7);
  sgt_fd(loss, &B64, fd);
  CHECK_GRAD(&db64, fd, 1e-7);
  for (int64_t i = 0; i < sgt_numel(&da); i++)
    CHECK_CLOSE(sgt_get(&da, i), sgt_get(&da64, i), 1e-4);
  for (int64_t i = 0; i < sgt_numel(&db); i++)
    CHECK_CLOSE(sgt_get(&db, i), sgt_get(&db64, i), 1e-4);
}

int main(int argc, char **argv) {
  n = sgt_arg(argc, argv, 1, 6);
  if (n < 4 || n > 64)
    return 2;
  sg_tensor w = keep(SGT_TENSOR(SG_F32, n, n)), x = keep(SGT_TENSOR(SG_F32, n));
  sg_tensor a = keep(sgt_scalar(SG_F32));
  sgt_fill(&w, -1, 1);
  sgt_fill(&x, -1, 1);
  sgt_set(&a, 0, 0.75);
  check("dead", dead, dead_grad, dead64, dead64_grad, &w, &x, ref_dead(&w, &x, false));
  check("live", live, live_grad, live64, live64_grad, &w, &x, ref_dead(&w, &x, true));
  check("rows", rows, rows_grad, rows64, rows64_grad, &w, &x, ref_rows(&w, &x));
  check("walk", walk, walk_grad, walk64, walk64_grad, &x, &a, ref_walk(&x, 0.75, 1, false));
  check("strided", strided, strided_grad, strided64, strided64_grad, &x, &a,
        ref_walk(&x, 0.75, 2, true));
  check("scat", scat, scat_grad, scat64, scat64_grad, &x, &a, ref_scat(&x, 0.75));
  check("fresh", fresh, fresh_grad, fresh64, fresh64_grad, &x, &a, ref_fresh(&x, 0.75));
  check("prev_state", prev_state, prev_state_grad, prev_state64, prev_state64_grad, &x, &a,
        ref_prev(&x, 0.75));
  sg_tensor ka = keep(SGT_TENSOR(SG_F32, n)), ks = keep(sgt_scalar(SG_F32));
  CHECK_EQ_INT(keep_old(&w, &x, &ka, &ks), SG_OK);
  double total = 5.0;
  for (int64_t r = 0; r < n; r++) {
    double z = 0;
    for (int64_t c = 0; c < n; c++)
      z += at(&w, r * n + c) * at(&x, c);
    CHECK_CLOSE(sgt_get(&ka, r), z, 1e-5);
    total += r ? z : 0;
  }
  CHECK_CLOSE(sgt_get(&ks, 0), total, 1e-5);
  printf("keep_old: a[0] = %.9g kept\n", sgt_get(&ka, 0));
  for (int k = 0; k < nkept; k++)
    free(kept[k]);
  return sgt_finish();
}
