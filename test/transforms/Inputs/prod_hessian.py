"""prod's Hessian, exact with zeros: hessian(p) and p's f_hvp columns
against the products of all but two elements (numpy, by deletion), central
differences of f_grad and values worked out by hand, at points with no
zero, one zero, two zeros and three; r_grad (reverse over reverse) against
the Hessian's row sums. Prints "ok: ..." or "FAIL: ..." with both values."""
import sys

import numpy as np
import sgc

sys.path.insert(0, sys.argv[1])
import derivcheck  # noqa: E402

m = derivcheck.functions(sgc.compile(open(sys.argv[2]).read(), sys.argv[2], "--exports=grad,jvp,hvp"))
m.update(derivcheck.functions(sgc.compile(open(sys.argv[3]).read(), sys.argv[3], "--exports=grad")))
ck = derivcheck.Checker({})


def pairs(x):
    """H[i, j] = product of all x but x[i] and x[j] (0 on the diagonal)."""
    n = x.size
    h = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if i != j:
                h[i, j] = np.prod(np.delete(x, [i, j]))
    return h


def by_hvp(name, x):
    cols = []
    for j in range(x.size):
        v = np.zeros_like(x)
        v[j] = 1
        cols.append(np.asarray(m[name + "_hvp"](x, v)[2]))
    return np.array(cols).T


def by_differences(name, x):
    cols = []
    for j in range(x.size):
        e = np.zeros_like(x)
        e[j] = 1e-5
        cols.append((np.asarray(m[name + "_grad"](x + e)[1]) - np.asarray(m[name + "_grad"](x - e)[1])) / 2e-5)
    return np.array(cols).T


points = {"no zero": [0.5, 1.5, -2.0, 1.25, 3.0, -0.75], "one zero": [2.0, 0.0, 3.0, 4.0, 0.5, 1.0],
          "two zeros": [2.0, 0.0, 3.0, 0.0, 5.0, 1.0], "three zeros": [0.0, 1.0, 0.0, 2.0, 0.0, 3.0]}
for what, x in points.items():
    x = np.array(x)
    h = np.asarray(m["hess_g"](x)[0]).reshape(6, 6)
    ck.compare("hess_g = 2 * products of all but two, " + what, h, 2 * pairs(x), 1e-15)
    ck.compare("hess_g = g_hvp columns, " + what, h, by_hvp("g", x), 1e-15)
    ck.compare("hess_g = differences of g_grad, " + what, h, by_differences("g", x), 1e-8)
    ck.compare("r_grad = hess_g row sums, " + what, np.asarray(m["r_grad"](x)[1]), h.sum(axis=1), 1e-15)
    hq = np.asarray(m["hess_gq"](x)[0]).reshape(6, 6)
    ck.compare("hess_gq = gq_hvp columns, " + what, hq, by_hvp("gq", x), 1e-14)
    ck.compare("hess_gq = differences of gq_grad, " + what, hq, by_differences("gq", x), 1e-7)
    h32 = np.asarray(m["hess_p32"](x.astype(np.float32))[0], dtype=np.float64).reshape(6, 6)
    ck.compare("hess_p32 = products of all but two (f32), " + what, h32, pairs(x), 1e-6)

# by hand: with two zeros, at x[1] and x[3], only the pair (1, 3) leaves a
# nonzero product: 2 * (2 * 3 * 5 * 1) = 60; with one zero at x[1], row 1
# holds 2 * the products of the four others but one, e.g. H[1, 0] =
# 2 * (3 * 4 * 0.5 * 1) = 12, and every other entry off row and column 1 is 0
h = np.asarray(m["hess_g"](np.array(points["two zeros"]))[0]).reshape(6, 6)
want = np.zeros((6, 6))
want[1, 3] = want[3, 1] = 60
ck.compare("hess_g by hand, two zeros", h, want, 0)
h = np.asarray(m["hess_g"](np.array(points["one zero"]))[0]).reshape(6, 6)
want = np.zeros((6, 6))
want[1, :] = want[:, 1] = [12, 0, 8, 6, 48, 24]
ck.compare("hess_g by hand, one zero", h, want, 0)
print("%d failed" % ck.failures)
sys.exit(1 if ck.failures else 0)
