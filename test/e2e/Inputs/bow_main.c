/* Driver for bow_classifier.test (examples/v2/bow_classifier.sg): the loss
 * against plain C, bow_loss_grad of the f32 and f64 builds against central
 * differences of the f64 build at run-time sizes, tokens with repeats (the
 * embedding gradient accumulates them) and negative ids (counting from the
 * end); an out-of-range token id is SG_ERR_INDEX with nothing written. */
#include "bow32.h"
#include "bow64.h"
#include "sgtest.h"

static int V, D, C, Bn, S;
static sg_tensor emb, w, tokens, labels, out;

static double loss(void) {
  CHECK_EQ_INT(bow_loss64(&emb, &w, &tokens, &labels, &out), SG_OK);
  return sgt_get(&out, 0);
}

static double reference(void) {
  double total = 0;
  for (int i = 0; i < Bn; i++) {
    double h[16] = {0}, logit[16], m = -INFINITY, se = 0;
    for (int t = 0; t < S; t++) {
      int id = ((int32_t *)tokens.data)[i * S + t];
      if (id < 0)
        id += V;
      for (int j = 0; j < D; j++)
        h[j] += sgt_get(&emb, id * D + j) / S;
    }
    for (int k = 0; k < C; k++) {
      logit[k] = 0;
      for (int j = 0; j < D; j++)
        logit[k] += h[j] * sgt_get(&w, j * C + k);
      m = fmax(m, logit[k]);
    }
    for (int k = 0; k < C; k++)
      se += exp(logit[k] - m);
    total += log(se) + m - logit[((int32_t *)labels.data)[i]];
  }
  return total / Bn;
}

int main(int argc, char **argv) {
  if (argc != 6)
    return 2;
  V = atoi(argv[1]), D = atoi(argv[2]), C = atoi(argv[3]), Bn = atoi(argv[4]), S = atoi(argv[5]);
  emb = SGT_TENSOR(SG_F64, V, D), w = SGT_TENSOR(SG_F64, D, C);
  tokens = SGT_TENSOR(SG_I32, Bn, S), labels = SGT_TENSOR(SG_I32, Bn), out = sgt_scalar(SG_F64);
  sgt_fill(&emb, -1, 1);
  sgt_fill(&w, -1, 1);
  for (int i = 0; i < Bn * S; i++) /* repeats, and one id from the end */
    ((int32_t *)tokens.data)[i] = i == 1 ? -1 : (i * 5 + 3) % (V > 3 ? V - 2 : V);
  for (int i = 0; i < Bn; i++)
    ((int32_t *)labels.data)[i] = (i * 2 + 1) % C;
  CHECK_CLOSE(loss(), reference(), 1e-12);

  sg_tensor demb = SGT_TENSOR(SG_F64, V, D), dw = SGT_TENSOR(SG_F64, D, C);
  CHECK_EQ_INT(bow_loss64_grad(&emb, &w, &tokens, &labels, &out, &demb, &dw), SG_OK);
  double *fde = malloc(sizeof(double) * (size_t)(V * D)), *fdw = malloc(sizeof(double) * (size_t)(D * C));
  sgt_fd(loss, &emb, fde);
  sgt_fd(loss, &w, fdw);
  CHECK_GRAD(&demb, fde, 1e-7);
  CHECK_GRAD(&dw, fdw, 1e-7);

  sg_tensor e32 = SGT_TENSOR(SG_F32, V, D), w32 = SGT_TENSOR(SG_F32, D, C), o32 = sgt_scalar(SG_F32);
  sg_tensor de32 = SGT_TENSOR(SG_F32, V, D), dw32 = SGT_TENSOR(SG_F32, D, C);
  sgt_copy(&e32, &emb), sgt_copy(&w32, &w);
  CHECK_EQ_INT(bow_loss_grad(&e32, &w32, &tokens, &labels, &o32, &de32, &dw32), SG_OK);
  CHECK_GRAD(&de32, fde, 1e-3);
  CHECK_GRAD(&dw32, fdw, 1e-3);

  /* an id past the table: SG_ERR_INDEX, nothing written */
  int32_t keep = ((int32_t *)tokens.data)[S + 2];
  ((int32_t *)tokens.data)[S + 2] = V + 3;
  sgt_set(&o32, 0, -42);
  for (int i = 0; i < V * D; i++)
    sgt_set(&de32, i, -42);
  for (int i = 0; i < D * C; i++)
    sgt_set(&dw32, i, -42);
  CHECK_EQ_INT(bow_loss_grad(&e32, &w32, &tokens, &labels, &o32, &de32, &dw32), SG_ERR_INDEX);
  char want[200];
  snprintf(want, sizeof want, "bow_loss_grad: bow_classifier.sg:6: index %d is out of range for an axis of size %d", V + 3, V);
  CHECK_STR(sg_last_error(), want);
  CHECK_EXACT(sgt_get(&o32, 0), -42);
  for (int i = 0; i < V * D; i++)
    CHECK_EXACT(sgt_get(&de32, i), -42);
  for (int i = 0; i < D * C; i++)
    CHECK_EXACT(sgt_get(&dw32, i), -42);
  ((int32_t *)tokens.data)[S + 2] = -V - 1;
  CHECK_EQ_INT(bow_loss(&e32, &w32, &tokens, &labels, &o32), SG_ERR_INDEX);
  snprintf(want, sizeof want, "bow_loss: bow_classifier.sg:6: index %d is out of range for an axis of size %d", -V - 1, V);
  CHECK_STR(sg_last_error(), want);
  ((int32_t *)tokens.data)[S + 2] = keep;
  /* a label past the classes */
  ((int32_t *)labels.data)[0] = C;
  CHECK_EQ_INT(bow_loss(&e32, &w32, &tokens, &labels, &o32), SG_ERR_INDEX);
  snprintf(want, sizeof want, "bow_loss: bow_classifier.sg:10: index %d is out of range for an axis of size %d", C, C);
  CHECK_STR(sg_last_error(), want);
  CHECK_EXACT(sgt_get(&o32, 0), -42);
  free(fde), free(fdw);
  if (sgt_failures)
    return 1;
  printf("all checks passed\n");
  return 0;
}
