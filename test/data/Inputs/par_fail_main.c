/* Driver for par_fail.test: loops of 200,000 elements with a gather or an
 * integer division run on the thread pool (2 threads and 1 give the same
 * bits); an out-of-range index or a division by zero in any chunk is
 * SG_ERR_INDEX with the message of the first failing element in loop order
 * (the one a sequential run meets), and nothing is written. */
#include "pf.h"
#include "sgtest.h"

enum { N = 1000, K = 200000 };

static void set_idx(sg_tensor *idx) {
  for (int i = 0; i < K; i++)
    ((int32_t *)idx->data)[i] = (i * 7919) % N - (i % 3 == 0 ? N : 0); /* some negative */
}

static void run(int threads) {
  sg_set_num_threads(threads);
  printf("threads %d\n", threads);
  sg_tensor x = SGT_TENSOR(SG_F32, N), idx = SGT_TENSOR(SG_I32, K), out = SGT_TENSOR(SG_F32, K);
  sg_tensor s = sgt_scalar(SG_F32);
  sgt_fill(&x, -1, 1);
  set_idx(&idx);
  int32_t *iv = idx.data;
  float *xv = x.data, *ov = out.data;

  /* valid: values against plain C */
  CHECK_EQ_INT(pf_gather(&x, &idx, &out), SG_OK);
  int bad = 0;
  for (int i = 0; i < K; i++) {
    int j = iv[i] < 0 ? iv[i] + N : iv[i];
    bad += ov[i] != 2 * xv[j];
  }
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(pf_sum(&x, &idx, &s), SG_OK);
  double want = 0;
  for (int i = 0; i < K; i++)
    want += exp(xv[iv[i] < 0 ? iv[i] + N : iv[i]]);
  CHECK_CLOSE(sgt_get(&s, 0), want, 1e-4);

  /* two bad entries, in the last chunk and in an early one: the early one
   * is reported, and out keeps its contents */
  iv[K - 5] = N + 17;
  iv[40000] = -N - 3;
  for (int i = 0; i < K; i++)
    ov[i] = -42;
  sgt_set(&s, 0, -42);
  CHECK_EQ_INT(pf_gather(&x, &idx, &out), SG_ERR_INDEX);
  CHECK_STR(sg_last_error(), "pf_gather: par_fail.sg:3: index -1003 is out of range for an axis of size 1000");
  bad = 0;
  for (int i = 0; i < K; i++)
    bad += ov[i] != -42;
  CHECK_EQ_INT(bad, 0);
  CHECK_EQ_INT(pf_sum(&x, &idx, &s), SG_ERR_INDEX);
  CHECK_STR(sg_last_error(), "pf_sum: par_fail.sg:4: index -1003 is out of range for an axis of size 1000");
  CHECK_EXACT(sgt_get(&s, 0), -42);
  iv[40000] = 0;
  CHECK_EQ_INT(pf_gather(&x, &idx, &out), SG_ERR_INDEX);
  CHECK_STR(sg_last_error(), "pf_gather: par_fail.sg:3: index 1017 is out of range for an axis of size 1000");
  CHECK_EQ_INT(ov[0], -42);

  /* integer division by zero in a late chunk */
  sg_tensor a = SGT_TENSOR(SG_I32, K), b = SGT_TENSOR(SG_I32, K), q = SGT_TENSOR(SG_I32, K);
  for (int i = 0; i < K; i++) {
    ((int32_t *)a.data)[i] = i - K / 2;
    ((int32_t *)b.data)[i] = 1 + i % 5;
  }
  CHECK_EQ_INT(pf_div(&a, &b, &q), SG_OK);
  bad = 0;
  for (int i = 0; i < K; i++) {
    int32_t x0 = i - K / 2, y0 = 1 + i % 5, fl = x0 / y0 - ((x0 % y0 != 0) && (x0 < 0));
    bad += ((int32_t *)q.data)[i] != fl + 1;
  }
  CHECK_EQ_INT(bad, 0);
  ((int32_t *)b.data)[K - 100] = 0;
  for (int i = 0; i < K; i++)
    ((int32_t *)q.data)[i] = -42;
  CHECK_EQ_INT(pf_div(&a, &b, &q), SG_ERR_INDEX);
  CHECK_STR(sg_last_error(), "pf_div: par_fail.sg:5: integer division by zero");
  bad = 0;
  for (int i = 0; i < K; i++)
    bad += ((int32_t *)q.data)[i] != -42;
  CHECK_EQ_INT(bad, 0);
  free(x.data), free(idx.data), free(out.data), free(s.data);
  free(a.data), free(b.data), free(q.data);
}

int main(void) {
  run(2);
  run(1);
  return sgt_finish();
}
