"""Write one exported function of N statements, for the compile-time tests:

    python3 gen_statements.py N OUT.sg [--elementwise] [--f64]

Each statement uses the one before (and one three back, so values stay
live across pieces): one in four is a matrix product `tanh(a @ w)`, the
rest elementwise arithmetic. With --elementwise there is no product, so
every loop is a plain elementwise loop the vectorizer handles; --f64
makes every value f64 (for gradient checks against finite differences)."""
import sys

n, out = int(sys.argv[1]), sys.argv[2]
elementwise = "--elementwise" in sys.argv[3:]
dt = "f64" if "--f64" in sys.argv[3:] else "f32"
lines = ["export fn big(w: %s[k, k], x: %s[m, k]) -> %s {" % (dt, dt, dt),
         "  let a0 = %s;" % ("x * 0.5" if elementwise else "tanh(x @ w)")]
for i in range(1, n):
    p, q = "a%d" % (i - 1), "a%d" % max(0, i - 3)
    kind = i % 4
    if kind == 0 and not elementwise:
        e = "tanh(%s @ w)" % p
    elif kind in (0, 1):
        e = "%s * 0.5 + %s" % (p, q)
    elif kind == 2:
        e = "maximum(%s, %s) * 0.9" % (p, q)
    else:
        e = "%s - 0.1 * %s" % (p, q)
    lines.append("  let a%d = %s;" % (i, e))
lines.append("  return sum(a%d);" % (n - 1))
lines.append("}")
with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")
