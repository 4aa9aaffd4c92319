"""Write an export with N scalar f64 parameters and a C driver for it:

    python3 gen_params.py N OUT.sg OUT.c

f(p0, ..., pN-1) = sum over i of (i % 7 + 1) * p_i * p_i, so d_p_i is
2 (i % 7 + 1) p_i: the driver checks f and f_grad against those values,
derived by hand, for p_i = (i % 13) - 6 + 0.25."""
import sys

n, sg, c = int(sys.argv[1]), sys.argv[2], sys.argv[3]
with open(sg, "w") as out:
    out.write("export fn f(" + ", ".join("p%d: f64" % i for i in range(n)) + ") -> f64 {\n")
    out.write("  return " + " + ".join("%d.0 * p%d * p%d" % (i % 7 + 1, i, i) for i in range(n)) + ";\n}\n")
with open(c, "w") as out:
    out.write('#include "params.h"\n#include "sgtest.h"\n\n')
    out.write("enum { N = %d };\nstatic sg_tensor p[N], d[N], y;\n\n" % n)
    out.write("int main(void) {\n  double want = 0;\n")
    out.write("  for (int i = 0; i < N; i++) {\n")
    out.write("    p[i] = sgt_scalar(SG_F64);\n    d[i] = sgt_scalar(SG_F64);\n")
    out.write("    sgt_set(&p[i], 0, (i % 13) - 6 + 0.25);\n")
    out.write("    want += (i % 7 + 1) * sgt_get(&p[i], 0) * sgt_get(&p[i], 0);\n  }\n")
    out.write("  y = sgt_scalar(SG_F64);\n")
    args = ", ".join("&p[%d]" % i for i in range(n))
    dargs = ", ".join("&d[%d]" % i for i in range(n))
    out.write("  CHECK_EQ_INT(f(%s, &y), SG_OK);\n" % args)
    out.write("  CHECK_CLOSE(sgt_get(&y, 0), want, 1e-12);\n")
    out.write("  CHECK_EQ_INT(f_grad(%s, &y, %s), SG_OK);\n" % (args, dargs))
    out.write("  CHECK_CLOSE(sgt_get(&y, 0), want, 1e-12);\n")
    out.write("  for (int i = 0; i < N; i++)\n")
    out.write("    CHECK_CLOSE(sgt_get(&d[i], 0), 2.0 * (i % 7 + 1) * sgt_get(&p[i], 0), 1e-12);\n")
    out.write("  return sgt_finish();\n}\n")
