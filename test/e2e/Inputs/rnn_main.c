/* Driver for rnn_v2.test (examples/v2/rnn.sg): the loss against plain C,
 * rnn_loss_grad of the f64 and f32 builds against central differences of
 * the f64 build, at run-time sizes h d t c given on the command line; a
 * label out of range is SG_ERR_INDEX with nothing written. */
#include "rnn32.h"
#include "rnn64.h"
#include "sgtest.h"

static int H, D, T, C;
static sg_tensor w, u, xs, labels, v, out;

static double loss(void) {
  CHECK_EQ_INT(rnn_loss64(&w, &u, &xs, &labels, &v, &out), SG_OK);
  return sgt_get(&out, 0);
}

static double reference(void) {
  double s[64] = {0}, ns[64], logit[64], total = 0;
  for (int i = 0; i < T; i++) {
    for (int k = 0; k < H; k++) {
      double a = 0;
      for (int j = 0; j < H; j++)
        a += s[j] * sgt_get(&w, j * H + k);
      for (int j = 0; j < D; j++)
        a += sgt_get(&xs, i * D + j) * sgt_get(&u, j * H + k);
      ns[k] = tanh(a);
    }
    memcpy(s, ns, sizeof ns);
    double m = -INFINITY, se = 0;
    for (int k = 0; k < C; k++) {
      logit[k] = 0;
      for (int j = 0; j < H; j++)
        logit[k] += s[j] * sgt_get(&v, j * C + k);
      m = fmax(m, logit[k]);
    }
    for (int k = 0; k < C; k++)
      se += exp(logit[k] - m);
    total += log(se) + m - logit[((int32_t *)labels.data)[i]];
  }
  return total / T;
}

int main(int argc, char **argv) {
  if (argc != 5)
    return 2;
  H = atoi(argv[1]), D = atoi(argv[2]), T = atoi(argv[3]), C = atoi(argv[4]);
  w = SGT_TENSOR(SG_F64, H, H), u = SGT_TENSOR(SG_F64, D, H), xs = SGT_TENSOR(SG_F64, T, D);
  labels = SGT_TENSOR(SG_I32, T), v = SGT_TENSOR(SG_F64, H, C), out = sgt_scalar(SG_F64);
  sgt_fill(&w, -0.6, 0.6);
  sgt_fill(&u, -1, 1);
  sgt_fill(&xs, -1, 1);
  sgt_fill(&v, -1, 1);
  for (int i = 0; i < T; i++)
    ((int32_t *)labels.data)[i] = (i * 3 + 1) % C;
  CHECK_CLOSE(loss(), reference(), 1e-12);

  sg_tensor dw = SGT_TENSOR(SG_F64, H, H), du = SGT_TENSOR(SG_F64, D, H), dv = SGT_TENSOR(SG_F64, H, C);
  CHECK_EQ_INT(rnn_loss64_grad(&w, &u, &xs, &labels, &v, &out, &dw, &du, &dv), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), reference(), 1e-12);
  double *fw = malloc(sizeof(double) * (size_t)(H * H)), *fu = malloc(sizeof(double) * (size_t)(D * H)),
         *fv = malloc(sizeof(double) * (size_t)(H * C));
  sgt_fd(loss, &w, fw);
  sgt_fd(loss, &u, fu);
  sgt_fd(loss, &v, fv);
  CHECK_GRAD(&dw, fw, 1e-7);
  CHECK_GRAD(&du, fu, 1e-7);
  CHECK_GRAD(&dv, fv, 1e-7);

  sg_tensor w32 = SGT_TENSOR(SG_F32, H, H), u32 = SGT_TENSOR(SG_F32, D, H), x32 = SGT_TENSOR(SG_F32, T, D),
            v32 = SGT_TENSOR(SG_F32, H, C), o32 = sgt_scalar(SG_F32);
  sg_tensor dw32 = SGT_TENSOR(SG_F32, H, H), du32 = SGT_TENSOR(SG_F32, D, H), dv32 = SGT_TENSOR(SG_F32, H, C);
  sgt_copy(&w32, &w), sgt_copy(&u32, &u), sgt_copy(&x32, &xs), sgt_copy(&v32, &v);
  CHECK_EQ_INT(rnn_loss_grad(&w32, &u32, &x32, &labels, &v32, &o32, &dw32, &du32, &dv32), SG_OK);
  CHECK_CLOSE(sgt_get(&o32, 0), reference(), 1e-5);
  CHECK_GRAD(&dw32, fw, 1e-3);
  CHECK_GRAD(&du32, fu, 1e-3);
  CHECK_GRAD(&dv32, fv, 1e-3);

  /* a label past the classes, at the last step: nothing written */
  ((int32_t *)labels.data)[T - 1] = C;
  sgt_set(&o32, 0, -42);
  for (int i = 0; i < H * H; i++)
    sgt_set(&dw32, i, -42);
  CHECK_EQ_INT(rnn_loss_grad(&w32, &u32, &x32, &labels, &v32, &o32, &dw32, &du32, &dv32), SG_ERR_INDEX);
  char want[200];
  snprintf(want, sizeof want, "rnn_loss_grad: rnn.sg:11: index %d is out of range for an axis of size %d", C, C);
  CHECK_STR(sg_last_error(), want);
  CHECK_EXACT(sgt_get(&o32, 0), -42);
  for (int i = 0; i < H * H; i++)
    CHECK_EXACT(sgt_get(&dw32, i), -42);
  free(fw), free(fu), free(fv);
  sg_tensor *all[] = {&w, &u, &xs, &labels, &v, &out, &dw, &du, &dv, &w32, &u32, &x32, &v32, &o32,
                      &dw32, &du32, &dv32};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    free(all[i]->data);
  return sgt_finish();
}
