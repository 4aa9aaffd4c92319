"""Write an export with N f64 parameters and a C driver for it:

    python3 gen_params.py N OUT.sg OUT.c [tensor]

f(p0, ..., pN-1) = sum over i of (i % 7 + 1) * p_i * p_i, so d_p_i is
2 (i % 7 + 1) p_i: the driver checks f and f_grad against those values,
derived by hand, for p_i = (i % 13) - 6 + 0.25. With `tensor`, each p_i is
an f64[n] (n = 3, element j of p_i being (i % 13) - 6 + 0.25 + j) and its
term (i % 7 + 1) * sum(p_i * p_i); the driver then also passes a p_i of the
wrong length and checks that f_grad fails with SG_ERR_SHAPE and writes
nothing."""
import sys

n, sg, c = int(sys.argv[1]), sys.argv[2], sys.argv[3]
tensor = len(sys.argv) > 4 and sys.argv[4] == "tensor"
ty = "f64[n]" if tensor else "f64"
term = "%d.0 * sum(p%d * p%d)" if tensor else "%d.0 * p%d * p%d"
with open(sg, "w") as out:
    out.write("export fn f(" + ", ".join("p%d: %s" % (i, ty) for i in range(n)) + ") -> f64 {\n")
    out.write("  return " + " + ".join(term % (i % 7 + 1, i, i) for i in range(n)) + ";\n}\n")
with open(c, "w") as out:
    out.write('#include "params.h"\n#include "sgtest.h"\n\n')
    out.write("enum { N = %d, LEN = %d };\nstatic sg_tensor p[N], d[N], y;\n\n" % (n, 3 if tensor else 1))
    out.write("int main(void) {\n  double want = 0;\n")
    out.write("  for (int i = 0; i < N; i++) {\n")
    if tensor:
        out.write("    p[i] = SGT_TENSOR(SG_F64, LEN);\n    d[i] = SGT_TENSOR(SG_F64, LEN);\n")
    else:
        out.write("    p[i] = sgt_scalar(SG_F64);\n    d[i] = sgt_scalar(SG_F64);\n")
    out.write("    for (int j = 0; j < LEN; j++) {\n")
    out.write("      sgt_set(&p[i], j, (i % 13) - 6 + 0.25 + j);\n")
    out.write("      want += (i % 7 + 1) * sgt_get(&p[i], j) * sgt_get(&p[i], j);\n    }\n  }\n")
    out.write("  y = sgt_scalar(SG_F64);\n")
    args = ", ".join("&p[%d]" % i for i in range(n))
    dargs = ", ".join("&d[%d]" % i for i in range(n))
    out.write("  CHECK_EQ_INT(f(%s, &y), SG_OK);\n" % args)
    out.write("  CHECK_CLOSE(sgt_get(&y, 0), want, 1e-12);\n")
    out.write("  CHECK_EQ_INT(f_grad(%s, &y, %s), SG_OK);\n" % (args, dargs))
    out.write("  CHECK_CLOSE(sgt_get(&y, 0), want, 1e-12);\n")
    out.write("  for (int i = 0; i < N; i++)\n")
    out.write("    for (int j = 0; j < LEN; j++)\n")
    out.write("      CHECK_CLOSE(sgt_get(&d[i], j), 2.0 * (i % 7 + 1) * sgt_get(&p[i], j), 1e-12);\n")
    if tensor:
        bad = n // 2
        out.write("  /* p[%d] one element short: an error, and nothing written */\n" % bad)
        out.write("  for (int i = 0; i < N; i++)\n    for (int j = 0; j < LEN; j++)\n")
        out.write("      sgt_set(&d[i], j, -1);\n")
        out.write("  p[%d].shape[0] = LEN - 1;\n" % bad)
        out.write("  CHECK_EQ_INT(f_grad(%s, &y, %s), SG_ERR_SHAPE);\n" % (args, dargs))
        out.write("  for (int i = 0; i < N; i++)\n    for (int j = 0; j < LEN; j++)\n")
        out.write("      CHECK_CLOSE(sgt_get(&d[i], j), -1.0, 0);\n")
    out.write("  return sgt_finish();\n}\n")
