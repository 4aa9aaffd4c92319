"""Write the C driver for long_name.test: it calls the export with the
1,000-character name of gen_big.py's "name" input, checks the value and the
gradient, then passes a wrongly shaped argument and checks that the message
starts with the function's name and fits the runtime's buffer."""
import sys

name = "a" + "b" * 998 + "c"
out = sys.argv[1]
src = r'''#include "long.h"
#include "sgtest.h"

int main(void) {
  sg_tensor x = SGT_TENSOR(SG_F32, 5), out = sgt_scalar(SG_F32), d = SGT_TENSOR(SG_F32, 5);
  sgt_fill(&x, -1, 1);
  double want = 0;
  for (int i = 0; i < 5; i++)
    want += 2 * sgt_get(&x, i);
  CHECK_EQ_INT(NAME_grad(&x, &out, &d), SG_OK);
  CHECK_CLOSE(sgt_get(&out, 0), want, 1e-6);
  for (int i = 0; i < 5; i++)
    CHECK_EXACT(sgt_get(&d, i), 2);
  x.rank = 2;
  CHECK_EQ_INT(NAME(&x, &out), SG_ERR_RANK);
  const char *msg = sg_last_error();
  CHECK(strncmp(msg, "NAME: argument 'x", strlen("NAME: argument 'x")) == 0);
  CHECK(strlen(msg) < 1024);
  printf("message of %zu characters\n", strlen(msg));
  free(x.data), free(out.data), free(d.data);
  return sgt_finish();
}
'''
open(out, "w").write(src.replace("NAME", name))
