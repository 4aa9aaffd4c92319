/* Driver for index.test: every indexing form's value against plain C and
 * its vjp (f64) against central differences, with repeated gather indices
 * and negative positions; out-of-range positions, slice starts and gather
 * entries are SG_ERR_INDEX with nothing written. */
#include "ix.h"
#include "sgtest.h"

enum { N = 5, M = 4 };
static sg_tensor x, seed, out;
static int (*fwd)(void);

/* sum(seed * f(x, arg2)) for the current forward function */
static sg_tensor *cur_out;
static double seeded(void) {
  CHECK_EQ_INT(fwd(), SG_OK);
  double l = 0;
  for (int64_t i = 0; i < sgt_numel(cur_out); i++)
    l += sgt_get(&seed, i) * sgt_get(cur_out, i);
  return l;
}

static sg_tensor i0, idx, idx2, col;
#define FWD(name, ...) static int call_##name(void) { return name(__VA_ARGS__); }
FWD(ix_pos, &x, &i0, &out)
FWD(ix_slice, &x, &out)
FWD(ix_cols, &x, &i0, &out)
FWD(ix_gather, &x, &idx, &out)
FWD(ix_gather2, &x, &i0, &idx2, &out)
FWD(ix_take, &x, &idx, &out)
FWD(ix_along, &x, &col, &out)

static void grad_check(const char *what, int (*f)(void), int vjp_rc, sg_tensor *dx) {
  fwd = f;
  cur_out = &out;
  double fd[N * M];
  sgt_fd(seeded, &x, fd);
  CHECK_EQ_INT(vjp_rc, SG_OK);
  printf("%s: ", what);
  CHECK_GRAD(dx, fd, 1e-7);
}

static sg_tensor shaped(int r, int64_t a, int64_t b) {
  return r == 1 ? SGT_TENSOR(SG_F64, a) : SGT_TENSOR(SG_F64, a, b);
}

int main(void) {
  x = SGT_TENSOR(SG_F64, N, M);
  sgt_fill(&x, -1, 1);
  i0 = sgt_scalar(SG_I32);
  idx = SGT_TENSOR(SG_I32, 6);
  idx2 = SGT_TENSOR(SG_I32, 2, 3);
  col = SGT_TENSOR(SG_I32, N, 1);
  int32_t iv[6] = {3, 0, 3, -1, 3, 2}; /* repeats and a negative entry */
  memcpy(idx.data, iv, sizeof iv);
  memcpy(idx2.data, iv, sizeof iv);
  for (int i = 0; i < N; i++)
    ((int32_t *)col.data)[i] = (i * 3) % M - (i == 2 ? M : 0);
  sg_tensor dx = SGT_TENSOR(SG_F64, N, M), dummy = sgt_scalar(SG_F64);
  (void)dummy;
#define X(i, j) sgt_get(&x, (i) * M + (j))

  /* ix_pos: x[i] * x[-1] + x[i, 0] at i = -2 */
  ((int32_t *)i0.data)[0] = -2;
  out = shaped(1, M, 0), seed = shaped(1, M, 0);
  sgt_fill(&seed, -1, 1);
  CHECK_EQ_INT(ix_pos(&x, &i0, &out), SG_OK);
  for (int j = 0; j < M; j++)
    CHECK_CLOSE(sgt_get(&out, j), X(3, j) * X(4, j) + X(3, 0), 1e-15);
  grad_check("ix_pos", call_ix_pos, ix_pos_vjp(&x, &i0, &seed, &out, &dx), &dx);

  /* ix_slice: x[1:n] - x[:-1] */
  out = shaped(2, N - 1, M), seed = shaped(2, N - 1, M);
  sgt_fill(&seed, -1, 1);
  CHECK_EQ_INT(ix_slice(&x, &out), SG_OK);
  for (int i = 0; i < N - 1; i++)
    for (int j = 0; j < M; j++)
      CHECK_CLOSE(sgt_get(&out, i * M + j), X(i + 1, j) - X(i, j), 1e-15);
  grad_check("ix_slice", call_ix_slice, ix_slice_vjp(&x, &seed, &out, &dx), &dx);

  /* ix_cols: square(x[:, j:j+2]) at j = 1 */
  ((int32_t *)i0.data)[0] = 1;
  out = shaped(2, N, 2), seed = shaped(2, N, 2);
  sgt_fill(&seed, -1, 1);
  CHECK_EQ_INT(ix_cols(&x, &i0, &out), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 2 * 2 + 1), X(2, 2) * X(2, 2), 1e-15);
  grad_check("ix_cols", call_ix_cols, ix_cols_vjp(&x, &i0, &seed, &out, &dx), &dx);

  /* ix_gather: x[idx] * 2, repeated rows accumulate in the gradient */
  out = shaped(2, 6, M), seed = shaped(2, 6, M);
  sgt_fill(&seed, -1, 1);
  CHECK_EQ_INT(ix_gather(&x, &idx, &out), SG_OK);
  for (int r = 0; r < 6; r++)
    for (int j = 0; j < M; j++)
      CHECK_CLOSE(sgt_get(&out, r * M + j), 2 * X(iv[r] < 0 ? iv[r] + N : iv[r], j), 1e-15);
  grad_check("ix_gather", call_ix_gather, ix_gather_vjp(&x, &idx, &seed, &out, &dx), &dx);
  /* row 3 was picked three times: its gradient is 2 * (sum of three seeds) */
  double want = 2 * (sgt_get(&seed, 0 * M + 1) + sgt_get(&seed, 2 * M + 1) + sgt_get(&seed, 4 * M + 1));
  CHECK_CLOSE(sgt_get(&dx, 3 * M + 1), want, 1e-15);

  /* ix_gather2: sin(x[idx, i]) with a 2-D index */
  ((int32_t *)i0.data)[0] = -1;
  out = shaped(2, 2, 3), seed = shaped(2, 2, 3);
  sgt_fill(&seed, -1, 1);
  CHECK_EQ_INT(ix_gather2(&x, &i0, &idx2, &out), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 3), sin(X(N - 1, M - 1)), 1e-15);
  grad_check("ix_gather2", call_ix_gather2, ix_gather2_vjp(&x, &i0, &idx2, &seed, &out, &dx), &dx);

  /* ix_take along the columns */
  int32_t cv[6] = {3, 0, 3, -1, 3, 2};
  memcpy(idx.data, cv, sizeof cv);
  sg_tensor idx6 = idx;
  out = shaped(2, N, 6), seed = shaped(2, N, 6);
  sgt_fill(&seed, -1, 1);
  CHECK_EQ_INT(ix_take(&x, &idx6, &out), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 1 * 6 + 3), X(1, 3) * X(1, 3), 1e-15);
  grad_check("ix_take", call_ix_take, ix_take_vjp(&x, &idx6, &seed, &out, &dx), &dx);

  /* ix_along: exp(take_along_axis(x, col, axis=1)) */
  out = shaped(2, N, 1), seed = shaped(2, N, 1);
  sgt_fill(&seed, -1, 1);
  CHECK_EQ_INT(ix_along(&x, &col, &out), SG_OK);
  for (int i = 0; i < N; i++) {
    int j = ((int32_t *)col.data)[i];
    CHECK_CLOSE(sgt_get(&out, i), exp(X(i, j < 0 ? j + M : j)), 1e-15);
  }
  grad_check("ix_along", call_ix_along, ix_along_vjp(&x, &col, &seed, &out, &dx), &dx);

  /* out of range: nothing written */
  out = shaped(1, M, 0);
  for (int j = 0; j < M; j++)
    sgt_set(&out, j, -42);
  ((int32_t *)i0.data)[0] = N;
  CHECK_EQ_INT(ix_pos(&x, &i0, &out), SG_ERR_INDEX);
  CHECK_STR(sg_last_error(), "ix_pos: index.sg:3: index 5 is out of range for an axis of size 5");
  ((int32_t *)i0.data)[0] = -N - 1;
  CHECK_EQ_INT(ix_pos(&x, &i0, &out), SG_ERR_INDEX);
  CHECK_STR(sg_last_error(), "ix_pos: index.sg:3: index -6 is out of range for an axis of size 5");
  for (int j = 0; j < M; j++)
    CHECK_EXACT(sgt_get(&out, j), -42);
  sg_tensor x5 = SGT_TENSOR(SG_F32, 5), o3 = SGT_TENSOR(SG_F32, 3);
  ((int32_t *)i0.data)[0] = 2; /* x[2:5] fits, x[3:6] does not */
  CHECK_EQ_INT(ix_window(&x5, &i0, &o3), SG_ERR_INDEX);
  CHECK_STR(sg_last_error(), "ix_window: index.sg:5: index 6 is out of range for an axis of size 5");
  ((int32_t *)i0.data)[0] = 1;
  CHECK_EQ_INT(ix_window(&x5, &i0, &o3), SG_OK);
  ((int32_t *)idx.data)[4] = 7;
  out = shaped(2, 6, M);
  CHECK_EQ_INT(ix_gather(&x, &idx, &out), SG_ERR_INDEX);
  CHECK_STR(sg_last_error(), "ix_gather: index.sg:7: index 7 is out of range for an axis of size 5");
  if (sgt_failures)
    return 1;
  printf("all checks passed\n");
  return 0;
}
