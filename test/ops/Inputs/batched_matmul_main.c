/* Driver for batched_matmul.test: every batched '@' of batched_matmul.sg
 * (compiled in f64) against a plain C NumPy matmul, and its vjp against
 * central differences, at several sizes including empty batch axes (the
 * adjoint of an operand whose batch axis was broadcast over an empty axis is
 * exactly zero). */
#include "bm.h"
#include "sgtest.h"

typedef int Fwd(const sg_tensor *, const sg_tensor *, sg_tensor *);
typedef int Vjp(const sg_tensor *, const sg_tensor *, const sg_tensor *, sg_tensor *,
                sg_tensor *, sg_tensor *);

/* NumPy's matmul in plain C: shapes as in the spec, batch axes broadcast. */
static sg_tensor reference(const sg_tensor *a, const sg_tensor *c) {
  int ra = a->rank, rc = c->rank;
  int64_t m = ra >= 2 ? a->shape[ra - 2] : 1, k = a->shape[ra - 1];
  int64_t n = rc >= 2 ? c->shape[rc - 1] : 1;
  int ba = ra > 2 ? ra - 2 : 0, bc = rc > 2 ? rc - 2 : 0, br = ba > bc ? ba : bc;
  int64_t shape[8], bs[8];
  int r = 0;
  for (int d = 0; d < br; d++) {
    int64_t sa = d - (br - ba) >= 0 ? a->shape[d - (br - ba)] : 1;
    int64_t sc = d - (br - bc) >= 0 ? c->shape[d - (br - bc)] : 1;
    bs[d] = shape[r++] = sa == 1 ? sc : sa;
  }
  if (ra >= 2)
    shape[r++] = m;
  if (rc >= 2)
    shape[r++] = n;
  sg_tensor out = sgt_tensor(SG_F64, r, shape);
  int64_t nb = 1;
  for (int d = 0; d < br; d++)
    nb *= bs[d];
  for (int64_t j = 0; j < nb; j++) {
    int64_t oa = 0, oc = 0, rem = j, idx[8];
    for (int d = br - 1; d >= 0; d--) {
      idx[d] = rem % bs[d];
      rem /= bs[d];
    }
    for (int d = 0; d < br; d++) {
      int ea = d - (br - ba), ec = d - (br - bc);
      if (ea >= 0)
        oa = oa * a->shape[ea] + (a->shape[ea] == 1 ? 0 : idx[d]);
      if (ec >= 0)
        oc = oc * c->shape[ec] + (c->shape[ec] == 1 ? 0 : idx[d]);
    }
    for (int64_t i = 0; i < m; i++)
      for (int64_t q = 0; q < n; q++) {
        double s = 0;
        for (int64_t p = 0; p < k; p++)
          s += sgt_get(a, oa * m * k + i * k + p) * sgt_get(c, oc * k * n + p * n + q);
        sgt_set(&out, (j * m + i) * n + q, s);
      }
  }
  return out;
}

static sg_tensor A, C, seed, out;
static Fwd *cur;
static double seeded(void) {
  CHECK_EQ_INT(cur(&A, &C, &out), SG_OK);
  double l = 0;
  for (int64_t i = 0; i < sgt_numel(&out); i++)
    l += sgt_get(&seed, i) * sgt_get(&out, i);
  return l;
}

/* The case `name` at operand shapes sa (rank ra) and sc (rank rc); trans:
 * the function transposes a's last two axes before the product. */
static void run(const char *name, Fwd *f, Vjp *v, int ra, const int64_t *sa, int rc,
                const int64_t *sc, int trans) {
  A = sgt_tensor(SG_F64, ra, sa);
  C = sgt_tensor(SG_F64, rc, sc);
  sgt_fill(&A, -1, 1);
  sgt_fill(&C, -1, 1);
  sg_tensor at = A;
  if (trans) { /* the reference multiplies the transposed a */
    at = sgt_tensor(SG_F64, ra, sa);
    int64_t rows = sa[ra - 2], cols = sa[ra - 1], mat = rows * cols;
    at.shape[ra - 2] = cols;
    at.shape[ra - 1] = rows;
    for (int64_t b = 0; b < sgt_numel(&A) / (mat ? mat : 1); b++)
      for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < cols; j++)
          sgt_set(&at, b * mat + j * rows + i, sgt_get(&A, b * mat + i * cols + j));
  }
  sg_tensor want = reference(&at, &C);
  out = sgt_tensor(SG_F64, want.rank, want.shape);
  seed = sgt_tensor(SG_F64, want.rank, want.shape);
  sgt_fill(&seed, -1, 1);
  printf("%s:", name);
  for (int d = 0; d < want.rank; d++)
    printf(" %lld", (long long)want.shape[d]);
  printf("\n");
  CHECK_EQ_INT(f(&A, &C, &out), SG_OK);
  for (int64_t i = 0; i < sgt_numel(&want); i++)
    CHECK_CLOSE(sgt_get(&out, i), sgt_get(&want, i), 1e-14);
  sg_tensor da = sgt_tensor(SG_F64, ra, sa), dc = sgt_tensor(SG_F64, rc, sc);
  sgt_fill(&da, 5, 6); /* garbage the vjp must overwrite */
  sgt_fill(&dc, 5, 6);
  CHECK_EQ_INT(v(&A, &C, &seed, &out, &da, &dc), SG_OK);
  double *fa = malloc(sizeof(double) * (size_t)(sgt_numel(&A) + 1));
  double *fc = malloc(sizeof(double) * (size_t)(sgt_numel(&C) + 1));
  cur = f;
  sgt_fd(seeded, &A, fa);
  sgt_fd(seeded, &C, fc);
  CHECK_GRAD(&da, fa, 1e-7);
  CHECK_GRAD(&dc, fc, 1e-7);
  free(fa), free(fc);
  free(A.data), free(C.data), free(seed.data), free(out.data), free(want.data);
  free(da.data), free(dc.data);
  if (trans)
    free(at.data);
}

static sg_tensor loss;
static double second(void) {
  CHECK_EQ_INT(bm_second(&A, &C, &loss), SG_OK);
  return sgt_get(&loss, 0);
}

/* bm_second_grad against central differences of bm_second. */
static void run_second(void) {
  int64_t sa[4] = {2, 1, 3, 4}, sc[3] = {3, 4, 2};
  A = sgt_tensor(SG_F64, 4, sa);
  C = sgt_tensor(SG_F64, 3, sc);
  loss = sgt_scalar(SG_F64);
  sgt_fill(&A, -1, 1);
  sgt_fill(&C, -1, 1);
  sg_tensor da = sgt_tensor(SG_F64, 4, sa), dc = sgt_tensor(SG_F64, 3, sc);
  CHECK_EQ_INT(bm_second_grad(&A, &C, &loss, &da, &dc), SG_OK);
  double fa[24], fc[24];
  sgt_fd(second, &A, fa);
  sgt_fd(second, &C, fc);
  printf("bm_second:\n");
  CHECK_GRAD(&da, fa, 1e-7);
  CHECK_GRAD(&dc, fc, 1e-7);
  free(A.data), free(C.data), free(loss.data), free(da.data), free(dc.data);
}

#define S(...) (int)(sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)), (int64_t[]){__VA_ARGS__}
#define CASE(f, a, c) run(#f, f, f##_vjp, a, c, 0)

int main(void) {
  CASE(bm_same, S(2, 3, 4), S(2, 4, 5));
  CASE(bm_bcast, S(2, 1, 3, 4), S(3, 4, 2));
  CASE(bm_left2, S(3, 4), S(2, 4, 5));
  CASE(bm_right2, S(3, 2, 4), S(4, 5));
  CASE(bm_one, S(1, 3, 4), S(2, 4, 5));
  CASE(bm_rank4, S(2, 3, 2, 4), S(3, 4, 3));
  CASE(bm_vecl, S(4), S(3, 4, 2));
  CASE(bm_vecr, S(3, 2, 4), S(4));
  run("bm_trans", bm_trans, bm_trans_vjp, S(2, 4, 3), S(2, 4, 5), 1);
#ifdef LITERAL_MATRICES /* batched_matmul_small.sg: matrix sizes fixed as above */
  CASE(bm_plain, S(3, 4), S(4, 5));
  CASE(bm_matvec, S(3, 4), S(4));
  CASE(bm_bcast, S(0, 1, 3, 4), S(3, 4, 2));
  CASE(bm_bcast, S(2, 1, 3, 4), S(0, 4, 2));
  CASE(bm_right2, S(0, 2, 4), S(4, 5));
  CASE(bm_left2, S(3, 4), S(0, 4, 5));
#else
  /* Larger than the GEMM kernel's unpacked threshold. */
  CASE(bm_bcast, S(3, 1, 17, 33), S(2, 33, 19));
  CASE(bm_right2, S(4, 20, 30), S(30, 40));
  /* Empty axes: a batch of none, and empty matrices. */
  CASE(bm_bcast, S(0, 1, 3, 4), S(3, 4, 2));
  CASE(bm_bcast, S(2, 1, 3, 4), S(0, 4, 2));
  CASE(bm_right2, S(0, 3, 4), S(4, 5));
  CASE(bm_same, S(2, 3, 0), S(2, 0, 5));
  CASE(bm_left2, S(3, 4), S(0, 4, 5));
#endif
  run_second();
  return sgt_finish();
}
