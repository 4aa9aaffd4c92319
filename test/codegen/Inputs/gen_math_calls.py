"""Write a program with more transcendental calls than cg_func.c expands
inline (MATH_INLINE_MAX), and a C driver checking it:

    python3 gen_math_calls.py TERMS OUT.sg OUT.c

many64/many32(x) = sum over j < TERMS of sum(tanh(t)) + sum(sigmoid(t)) +
sum(softplus(t)) + sum(log1p(t*t)) + sum(expm1(t)) + sum(log(t*t + 1)) +
sum(exp(-t*t)), t = x * (0.5 + 0.01 j): seven calls per term, every
emitter of cg_math.c. The driver compares the values with the same sum in
C with libm, and many64's gradient with central finite differences."""
import sys

terms, sg, c = int(sys.argv[1]), sys.argv[2], sys.argv[3]


def body(ty):
    lines = []
    for j in range(terms):
        t = "t%d" % j
        lines.append("  let %s = x * %s;" % (t, repr(0.5 + 0.01 * j)))
        lines.append(("  let s%d = sum(tanh({t})) + sum(sigmoid({t})) + sum(softplus({t})) + "
                      "sum(log1p({t} * {t})) + sum(expm1({t})) + sum(log({t} * {t} + 1.0)) + "
                      "sum(exp(-{t} * {t}));").format(t=t) % j)
    lines.append("  return " + " + ".join("s%d" % j for j in range(terms)) + ";")
    return "\n".join(lines)


with open(sg, "w") as out:
    for ty in ("f64", "f32"):
        out.write("export fn many%s(x: %s[n]) -> %s {\n%s\n}\n\n" % (ty[1:], ty, ty, body(ty)))
with open(c, "w") as out:
    out.write("""#include <math.h>

#include "many.h"
#include "sgtest.h"

enum { TERMS = %d, N = 37 };
static sg_tensor x64, x32;

static double reference(const sg_tensor *x) {
  double total = 0;
  for (int j = 0; j < TERMS; j++)
    for (int64_t i = 0; i < N; i++) {
      double t = sgt_get(x, i) * (0.5 + 0.01 * j);
      total += tanh(t) + 1 / (1 + exp(-t)) + log1p(exp(t)) + log1p(t * t) + expm1(t) +
               log(t * t + 1) + exp(-t * t);
    }
  return total;
}

static double loss64(void) {
  sg_tensor y = sgt_scalar(SG_F64);
  CHECK_EQ_INT(many64(&x64, &y), SG_OK);
  double v = sgt_get(&y, 0);
  free(y.data);
  return v;
}

int main(void) {
  x64 = SGT_TENSOR(SG_F64, N);
  x32 = SGT_TENSOR(SG_F32, N);
  sgt_fill(&x64, -3, 3);
  for (int64_t i = 0; i < N; i++)
    sgt_set(&x32, i, sgt_get(&x64, i));
  CHECK_CLOSE(loss64(), reference(&x64), 1e-12);
  sg_tensor y32 = sgt_scalar(SG_F32);
  CHECK_EQ_INT(many32(&x32, &y32), SG_OK);
  CHECK_CLOSE(sgt_get(&y32, 0), reference(&x32), 1e-5);
  sg_tensor y = sgt_scalar(SG_F64), d = SGT_TENSOR(SG_F64, N);
  CHECK_EQ_INT(many64_grad(&x64, &y, &d), SG_OK);
  double fd[N];
  sgt_fd(loss64, &x64, fd);
  CHECK_GRAD(&d, fd, 1e-7);
  free(x64.data), free(x32.data), free(y32.data), free(y.data), free(d.data);
  return sgt_finish();
}
""" % terms)
