/* Driver for alloc_failure.test: make the n-th allocation of temporaries
 * fail (n = 0, 1, ...) until a call needs no more than n allocations. Every
 * failing call must return SG_ERR_ALLOC with "FUNC: cannot allocate N bytes
 * for temporaries" and leave every byte of every buffer as it was; the call
 * after a failure succeeds; a successful call matches, bit for bit, the
 * result computed before any failure was injected. */
#include "abi.h"
#include "mlp.h"
#include "sgtest.h"

void sg_rt_fail_alloc_after(int n);

#define NT 11

typedef struct {
  const char *name;
  int nin, nout;
  sg_tensor t[NT]; /* inputs, then outputs */
} Case;

static size_t bytes(const sg_tensor *t) { return (size_t)sgt_numel(t) * (t->dtype == SG_F64 ? 8 : 4); }

static int call(Case *c) {
  sg_tensor *t = c->t;
  if (!strcmp(c->name, "model_grad"))
    return model_grad(&t[0], &t[1], &t[2], &t[3], &t[4], &t[5], &t[6], &t[7]);
  if (!strcmp(c->name, "dense"))
    return dense(&t[0], &t[1], &t[2]);
  if (!strcmp(c->name, "dense_vjp"))
    return dense_vjp(&t[0], &t[1], &t[2], &t[3], &t[4], &t[5]);
  if (!strcmp(c->name, "mlp_loss_grad"))
    return mlp_loss_grad(&t[0], &t[1], &t[2], &t[3], &t[4], &t[5], &t[6], &t[7], &t[8], &t[9],
                         &t[10]);
  return -1;
}

static void run(Case *c) {
  int n = c->nin + c->nout;
  for (int i = 0; i < c->nin; i++)
    sgt_fill(&c->t[i], -1, 1);
  /* The reference, with no failure injected. */
  unsigned char *ref[NT], *before[NT];
  for (int i = c->nin; i < n; i++)
    memset(c->t[i].data, 0xA5, bytes(&c->t[i]));
  CHECK_EQ_INT(call(c), SG_OK);
  for (int i = 0; i < n; i++) {
    ref[i] = malloc(bytes(&c->t[i]) + 1);
    before[i] = malloc(bytes(&c->t[i]) + 1);
    memcpy(ref[i], c->t[i].data, bytes(&c->t[i]));
  }
  int fails = 0;
  for (int k = 0; k < 1000; k++) {
    for (int i = c->nin; i < n; i++)
      memset(c->t[i].data, 0xA5, bytes(&c->t[i]));
    for (int i = 0; i < n; i++)
      memcpy(before[i], c->t[i].data, bytes(&c->t[i]));
    sg_rt_fail_alloc_after(k);
    int rc = call(c);
    sg_rt_fail_alloc_after(-1);
    if (rc == SG_OK) {
      for (int i = 0; i < n; i++)
        CHECK(memcmp(ref[i], c->t[i].data, bytes(&c->t[i])) == 0);
      break;
    }
    fails++;
    CHECK_EQ_INT(rc, SG_ERR_ALLOC);
    if (k == 0)
      printf("%s: msg=%s\n", c->name, sg_last_error());
    char want[200];
    snprintf(want, sizeof want, "%s: cannot allocate ", c->name);
    CHECK(strncmp(sg_last_error(), want, strlen(want)) == 0);
    for (int i = 0; i < n; i++)
      if (memcmp(before[i], c->t[i].data, bytes(&c->t[i])) != 0) {
        printf("FAIL: %s with allocation %d failing changed argument %d\n", c->name, k, i);
        sgt_failures++;
      }
    /* The next call, with nothing injected, succeeds. */
    for (int i = c->nin; i < n; i++)
      memset(c->t[i].data, 0xA5, bytes(&c->t[i]));
    CHECK_EQ_INT(call(c), SG_OK);
    for (int i = 0; i < n; i++)
      CHECK(memcmp(ref[i], c->t[i].data, bytes(&c->t[i])) == 0);
  }
  printf("%s: %d allocation(s); each failure returns SG_ERR_ALLOC, writes nothing, and the "
         "next call succeeds\n", c->name, fails);
  for (int i = 0; i < n; i++)
    free(ref[i]), free(before[i]), free(c->t[i].data);
}

int main(void) {
  Case cases[] = {
      /* sizes whose temporaries pass the frame's room (4096 bytes), which
       * takes nothing from the workspace and cannot fail */
      {"model_grad", 4, 4,
       {SGT_TENSOR(SG_F32, 1200, 40), SGT_TENSOR(SG_F32, 40), sgt_scalar(SG_F32),
        SGT_TENSOR(SG_F32, 2, 3), sgt_scalar(SG_F32), SGT_TENSOR(SG_F32, 1200, 40),
        sgt_scalar(SG_F32), SGT_TENSOR(SG_F32, 2, 3)}},
      {"dense", 2, 1,
       {SGT_TENSOR(SG_F32, 200, 30), SGT_TENSOR(SG_F32, 30, 10), SGT_TENSOR(SG_F32, 200, 10)}},
      {"dense_vjp", 3, 3,
       {SGT_TENSOR(SG_F32, 200, 30), SGT_TENSOR(SG_F32, 30, 10), SGT_TENSOR(SG_F32, 200, 10),
        SGT_TENSOR(SG_F32, 200, 10), SGT_TENSOR(SG_F32, 200, 30), SGT_TENSOR(SG_F32, 30, 10)}},
      /* d = 6, h = 16, o = 3, n = 25 */
      {"mlp_loss_grad", 6, 5,
       {SGT_TENSOR(SG_F32, 6, 16), SGT_TENSOR(SG_F32, 16), SGT_TENSOR(SG_F32, 16, 3),
        SGT_TENSOR(SG_F32, 3), SGT_TENSOR(SG_F32, 25, 6), SGT_TENSOR(SG_F32, 25, 3),
        sgt_scalar(SG_F32), SGT_TENSOR(SG_F32, 6, 16), SGT_TENSOR(SG_F32, 16),
        SGT_TENSOR(SG_F32, 16, 3), SGT_TENSOR(SG_F32, 3)}},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    run(&cases[i]);
  return sgt_finish();
}
