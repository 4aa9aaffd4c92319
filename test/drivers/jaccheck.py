"""Checks the jacobian and hessian transforms of a .sg program.

    jaccheck.py FILE.sg [--options="..."] [--seed=N]

For each export named jac_NAME (or hess_NAME) there must be an export NAME
with the same parameters whose value the transform differentiates with
respect to its first parameter. The checker compiles FILE.sg with
--exports=grad,jvp,hvp and compares jac_NAME's result with the Jacobian of
NAME computed three other ways: by columns (NAME_jvp along each basis
tangent), by rows (NAME_vjp / NAME_grad with each basis seed) and by
central differences (f64); hess_NAME's with NAME_hvp along each basis
vector and with central differences of NAME_grad. Vector mode must agree
with one-at-a-time forward and reverse to 1e-12 relative (the same
derivatives, up to the order of sums), and with the differences to 1e-6.
Directives in comments: "# sizes: n=3", "# range: LO HI", "# no-fd: jac_f",
as derivcheck.py.
Prints "ok: ..." or "FAIL: ..." with both values; exits 1 on a failure.
"""
import re
import sys

import numpy as np
import sgc

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import derivcheck  # noqa: E402  (directives, arguments, comparisons)


def flat(vals):
    vals = vals if isinstance(vals, tuple) else (vals,)
    return np.concatenate([np.asarray(v, dtype=np.float64).ravel() for v in vals])


def jacobian_refs(m, name, args, ck):
    """J by columns (f_jvp), by rows (f_vjp/f_grad) and by differences, of
    name's float results with respect to its first parameter (the first
    columns of derivcheck's Jacobians)."""
    pt = derivcheck.Point(m, name, args)
    if pt.diff[:1] != [0]:
        raise SystemExit("jaccheck: %s's first parameter is not differentiable" % name)
    cols = slice(0, pt.sizes[0])
    return pt.forward(ck)[:, cols], pt.reverse()[:, cols], pt.differences()[:, cols]


def hessian_refs(m, name, args):
    f, hvp, grad = m[name], m[name + "_hvp"], m[name + "_grad"]
    x = args[0]
    n = x.size
    nd = len(hvp.params) - len(f.params)
    by_hvp, fd = np.zeros((n, n)), np.zeros((n, n))
    for j in range(n):
        vs = [np.zeros_like(args[k]) for k in range(nd)]
        vs[0].flat[j] = 1
        r = hvp(*args, *vs)
        by_hvp[:, j] = np.asarray(r[1 + nd], dtype=np.float64).ravel()
        h = 1e-5 * max(1.0, abs(float(x.flat[j])))
        gs = []
        for sgn in (1, -1):
            x2 = x.copy()
            x2.flat[j] += sgn * h
            gs.append(np.asarray(grad(x2, *args[1:])[1], dtype=np.float64).ravel())
        fd[:, j] = (gs[0] - gs[1]) / (2 * h)
    return by_hvp, fd


def main():
    path = sys.argv[1]
    options, seed = "", 1
    for a in sys.argv[2:]:
        if a.startswith("--options="):
            options = a[len("--options="):]
        elif a.startswith("--seed="):
            seed = int(a[len("--seed="):])
    text = open(path).read()
    d = derivcheck.directives(text)
    m = derivcheck.functions(sgc.compile(text, path, "--exports=grad,jvp,hvp " + options))
    rng = np.random.default_rng(seed)
    ck = derivcheck.Checker(d)
    derived = [n for n in m if any(n.endswith(s) and n[:-len(s)] in m for s in derivcheck.DERIVED)]
    for tname in m:
        mt = re.fullmatch(r"(jac|hess)_(\w+)", tname)
        if not mt or mt.group(2) not in m or tname in derived:
            continue
        kind, name = mt.groups()
        args = derivcheck.make_args(m[name], d, rng)
        got = m[tname](*args)
        got = flat(got if isinstance(got, tuple) else (got,))
        if kind == "jac":
            cols, rows, fd = jacobian_refs(m, name, args, ck)
            got = got.reshape(cols.shape)
            ck.compare("%s = columns of %s_jvp" % (tname, name), got, cols, d["fr"])
            ck.compare("%s = rows of %s's reverse mode" % (tname, name), got, rows, d["fr"])
            if tname not in d["nofd"]:
                ck.compare("%s = central differences" % tname, got, fd, d["fd"])
        else:
            by_hvp, fd = hessian_refs(m, name, args)
            got = got.reshape(by_hvp.shape)
            ck.compare("%s = columns of %s_hvp" % (tname, name), got, by_hvp, d["fr"])
            ck.compare("%s = differences of %s_grad" % (tname, name), got, fd, max(d["fd"], 1e-5))
    print("%d failed" % ck.failures)
    sys.exit(1 if ck.failures else 0)


if __name__ == "__main__":
    main()
