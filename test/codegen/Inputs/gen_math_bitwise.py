"""Write a program with the same seven transcendental operations in a small
body (inline32/inline64: expanded inline) and in a body with more than
MATH_INLINE_MAX of them (calls32/calls64: called as sg.<op>.<type>), for
test/codegen/math_calls_bitwise.test:

    python3 gen_math_bitwise.py OUT.sg"""
import sys

OPS = ["exp", "log", "log1p", "expm1", "tanh", "sigmoid", "softplus"]


def prog(ty):
    results = ", ".join([ty + "[n]"] * len(OPS))
    body = ", ".join("%s(x)" % op for op in OPS)
    filler = " + ".join("sum(exp(k * %.3f))" % (0.001 * (j + 1)) for j in range(300))
    return ("export fn inline{b}(x: {t}[n]) -> ({r}) {{\n  return ({body});\n}}\n\n"
            "export fn calls{b}(x: {t}[n], k: {t}[m]) -> ({r}, {t}) {{\n"
            "  let filler = {filler};\n  return ({body}, filler);\n}}\n\n"
            ).format(b=ty[1:], t=ty, r=results, body=body, filler=filler)


with open(sys.argv[1], "w") as out:
    out.write(prog("f64") + prog("f32"))
