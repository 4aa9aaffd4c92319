/* The done-when: compile the stable-softmax source at run time
 * with sgc_compile and check that xent and xent_grad give the same bits
 * as the object sgc compiled from the same file (linked in, declared by
 * its header), on random data; also the C ABI's checks and messages, and
 * sgc_lookup of names that are not entry points.
 * Usage: jit_vs_aot FILE.sg [OPTIONS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sgc.h>

#include "slurp.h"

#include "sgtest.h"
#include "stable_softmax.h"

typedef int Xent(const sg_tensor *, const sg_tensor *, const sg_tensor *, sg_tensor *);
typedef int XentGrad(const sg_tensor *, const sg_tensor *, const sg_tensor *, sg_tensor *,
                     sg_tensor *);

enum { K = 7, D = 5 };

int main(int argc, char **argv) {
  char *src = slurp(argv[1]);
  char *errors = NULL;
  sgc_module *m = sgc_compile(src, argv[1], argc > 2 ? argv[2] : NULL, &errors);
  free(src);
  if (!m) {
    printf("sgc_compile failed:\n%s", errors);
    return 1;
  }
  Xent *jit_xent = (Xent *)sgc_lookup(m, "xent");
  XentGrad *jit_grad = (XentGrad *)sgc_lookup(m, "xent_grad");
  printf("lookup xent: %s, xent_grad: %s\n", jit_xent ? "found" : "NULL",
         jit_grad ? "found" : "NULL");
  /* Not entry points: an internal function, a missing one, NULLs. */
  printf("lookup stable_softmax: %s, xent_vjp: %s, NULL name: %s, NULL module: %s\n",
         sgc_lookup(m, "stable_softmax") ? "found" : "NULL",
         sgc_lookup(m, "xent_vjp") ? "found" : "NULL", sgc_lookup(m, NULL) ? "found" : "NULL",
         sgc_lookup(NULL, "xent") ? "found" : "NULL");
  if (!jit_xent || !jit_grad)
    return 1;

  sg_tensor w = SGT_TENSOR(SG_F32, K, D), x = SGT_TENSOR(SG_F32, D), y = SGT_TENSOR(SG_F32, K);
  for (int64_t i = 0; i < K * D; i++)
    sgt_set(&w, i, sgt_uniform(-2, 2));
  for (int64_t i = 0; i < D; i++)
    sgt_set(&x, i, sgt_uniform(-1, 1));
  sgt_set(&y, 3, 1.0);
  sg_tensor loss_a = sgt_scalar(SG_F32), loss_j = sgt_scalar(SG_F32);
  sg_tensor dw_a = SGT_TENSOR(SG_F32, K, D), dw_j = SGT_TENSOR(SG_F32, K, D);
  CHECK(xent_grad(&w, &x, &y, &loss_a, &dw_a) == SG_OK);
  CHECK(jit_grad(&w, &x, &y, &loss_j, &dw_j) == SG_OK);
  printf("xent_grad: loss %.9g (sgc object) %.9g (sgc_compile)\n", sgt_get(&loss_a, 0),
         sgt_get(&loss_j, 0));
  CHECK_EXACT(sgt_get(&loss_j, 0), sgt_get(&loss_a, 0));
  for (int64_t i = 0; i < K * D; i++)
    CHECK_EXACT(sgt_get(&dw_j, i), sgt_get(&dw_a, i));
  printf("value bits %s, gradient bits %s\n",
         memcmp(loss_a.data, loss_j.data, 4) ? "DIFFER" : "equal",
         memcmp(dw_a.data, dw_j.data, sizeof(float) * K * D) ? "DIFFER" : "equal");
  CHECK(jit_xent(&w, &x, &y, &loss_j) == SG_OK);
  printf("xent: value bits %s\n", memcmp(loss_a.data, loss_j.data, 4) ? "DIFFER" : "equal");

  /* The JIT's entry points check their arguments like the object's. */
  sg_tensor bad_x = SGT_TENSOR(SG_F32, D + 1);
  int rc = jit_grad(&w, &bad_x, &y, &loss_j, &dw_j);
  printf("error %d: %s\n", rc, sg_last_error());
  sgc_free(m);
  sgc_free(NULL);
  free(w.data), free(x.data), free(y.data), free(bad_x.data);
  free(loss_a.data), free(loss_j.data), free(dw_a.data), free(dw_j.data);
  return sgt_failures != 0;
}
