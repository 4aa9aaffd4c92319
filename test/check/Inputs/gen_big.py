"""Generate a large .sg input for the big-input tests:

    python3 gen_big.py KIND OUT.sg

KIND:
  functions  ~1 MB: 20,000 small functions, and an export calling two of them
  lets       ~1 MB: one function of ~38,000 lets, each using the one before
  lets_error the same, with an unknown name in the very last let
  expression ~1 MB: one return of 200,000 terms x + x + ... + x
  parens     10,000 nested parentheses, each around one operation
  parens_error  the same, with an unknown name at the innermost level
  calls      999 nested calls exp(exp(...(x * 1e-30)...)): 1,000 levels, the nesting limit
  calls_deep 16,000 nested calls, past the nesting limit
  chain      6 MB: one return of 1,500,000 terms x + x + ... + x
  negs       300,000 unary minuses - - ... - x
  pows       300,000 right-nested powers x ** x ** ... ** x
  fchain     50,000 functions, each calling the next, and an export calling the first
  exports    10,000 small exports
  name       a 1,000-character name for the export, a parameter and a let
  name_error the same, with the name misspelled (last character) in the body
"""
import sys

kind, out = sys.argv[1], sys.argv[2]
MB = 1000000
lines = []

if kind == "functions":
    i = 0
    size = 0
    while size < MB:
        line = "fn g%d(x: f32[n]) -> f32[n] { return x * %d; }" % (i, i)
        lines.append(line)
        size += len(line) + 1
        i += 1
    lines.append("export fn f(x: f32[n]) -> f32 {")
    lines.append("  return sum(g1(x) + g%d(x));" % (i - 1))
    lines.append("}")
elif kind in ("lets", "lets_error"):
    lines = ["export fn f(x: f32[n]) -> f32 {", "  let v0 = x;"]
    size, i = 0, 0
    while size < MB:
        i += 1
        line = "  let v%d = v%d * 0.5 + x;" % (i, i - 1)
        lines.append(line)
        size += len(line) + 1
    if kind == "lets_error":
        lines.append("  let last = v%d * oops;" % i)
        lines.append("  return sum(last);")
    else:
        lines.append("  return sum(v%d);" % i)
    lines.append("}")
elif kind == "expression":
    lines = ["export fn f(x: f32) -> f32 {",
             "  return " + " + ".join(["x"] * 200000) + ";", "}"]
elif kind in ("parens", "parens_error"):
    n = 10000
    inner = "oops" if kind == "parens_error" else "x"
    lines = ["export fn f(x: f32) -> f32 {",
             "  return " + "(" * n + inner + " * 0.5" + ") + 1" * (n - 1) + ");", "}"]
elif kind in ("calls", "calls_deep"):
    n = 999 if kind == "calls" else 16000
    lines = ["export fn f(x: f32) -> f32 {",
             "  return " + "exp(" * n + "x * 1e-30" + ")" * n + ";", "}"]
elif kind == "chain":
    lines = ["export fn f(x: f32) -> f32 {",
             "  return " + " + ".join(["x"] * 1500000) + ";", "}"]
elif kind == "negs":
    lines = ["export fn f(x: f32) -> f32 {", "  return " + "- " * 300000 + "x;", "}"]
elif kind == "pows":
    lines = ["export fn f(x: f32) -> f32 {",
             "  return " + " ** ".join(["x"] * 300000) + ";", "}"]
elif kind == "fchain":
    n = 50000
    lines = ["fn g%d(x: f32) -> f32 { return g%d(x); }" % (i, i + 1) for i in range(n)]
    lines.append("fn g%d(x: f32) -> f32 { return x * 2; }" % n)
    lines.append("export fn f(x: f32) -> f32 { return g0(x); }")
elif kind == "exports":
    lines = ["export fn e%d(x: f32) -> f32 { return x * %d; }" % (i, i) for i in range(10000)]
elif kind in ("name", "name_error"):
    name = "a" + "b" * 998 + "c"
    arg = "x" + "y" * 998 + "z"
    use = arg[:-1] + "q" if kind == "name_error" else arg
    lines = ["export fn %s(%s: f32[n]) -> f32 {" % (name, arg),
             "  let %s = %s * 2;" % (name, use),
             "  return sum(%s);" % name, "}"]
else:
    sys.exit("unknown kind " + kind)

with open(out, "w") as f:
    f.write("\n".join(lines) + "\n")
