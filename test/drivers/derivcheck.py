"""Checks every derivative entry point of a .sg program numerically.

    derivcheck.py FILE.sg [--options="-O2 ..."] [--seed=N] [--only=f,g]

Compiles FILE.sg with --exports=grad,jvp,hvp (plus --options) through the
Python module and, for each export f with random arguments, computes the
Jacobian of its float results with respect to its differentiable
parameters three ways:
  - by columns, f_jvp with each basis tangent (forward mode);
  - by rows, f_grad / f_vjp with each basis seed (reverse mode);
  - by central differences of f (in f64: h = 1e-6 * max(1, |x|)).
Forward and reverse must agree to 1e-12 (the same derivative up to the
order of sums: spec section 7), and both must match the differences to the
file's tolerance (default 1e-6, relative to max(1, |J|)). For a scalar
export, f_hvp's Hessian-vector product is checked against the differences
of f_grad along v, and its value and gradient against f_grad's bit for bit.

Directives in the .sg file's comments:
  # sizes: n=3 m=2        symbolic sizes (default 3 each)
  # range: LO HI          the arguments' values (default -2 2)
  # range NAME: LO HI     one parameter's (also for i32: integers in [LO, HI))
  # fd-tol: TOL           tolerance against the differences
  # fwd-rev-tol: TOL      tolerance between forward and reverse
  # value: NAME V1,V2,..  exact values for a parameter (flattened), e.g. ties
  # no-fd: F,G            exports not compared with differences (stop_gradient
                          makes the derivative differ from them on purpose)
Prints "ok: ..." per check and "FAIL: ..." with both values on a mismatch;
exits 1 if anything failed.
"""
import re
import sys

import numpy as np
import sgc

DERIVED = ("_grad", "_vjp", "_jvp", "_hvp")


def directives(text):
    d = {"sizes": {}, "range": (-2.0, 2.0), "ranges": {}, "fd": 1e-6, "fr": 1e-12, "values": {}, "nofd": set()}
    for line in text.splitlines():
        m = re.match(r"\s*#\s*sizes:\s*(.*)", line)
        if m:
            for item in m.group(1).split():
                k, v = item.split("=")
                d["sizes"][k] = int(v)
        m = re.match(r"\s*#\s*range(?:\s+(\w+))?:\s*(\S+)\s+(\S+)", line)
        if m:
            if m.group(1):
                d["ranges"][m.group(1)] = (float(m.group(2)), float(m.group(3)))
            else:
                d["range"] = (float(m.group(2)), float(m.group(3)))
        m = re.match(r"\s*#\s*fd-tol:\s*(\S+)", line)
        if m:
            d["fd"] = float(m.group(1))
        m = re.match(r"\s*#\s*fwd-rev-tol:\s*(\S+)", line)
        if m:
            d["fr"] = float(m.group(1))
        m = re.match(r"\s*#\s*no-fd:\s*(\S+)", line)
        if m:
            d["nofd"] |= set(m.group(1).split(","))
        m = re.match(r"\s*#\s*value:\s*(\w+)\s+(\S+)", line)
        if m:
            d["values"][m.group(1)] = [float(v) for v in m.group(2).split(",")]
    return d


def shape_of(slot, sizes):
    out = []
    for dim in slot.dims:
        out.append(int(eval(dim, {}, dict(sizes))))  # size expressions: n - 1, 2 * n
    return tuple(out)


def make_args(fn, d, rng):
    sizes = {}
    for p in fn.params:
        for dim in p.dims:
            for name in re.findall(r"[A-Za-z_]\w*", dim):
                sizes.setdefault(name, d["sizes"].get(name, 3))
    args = []
    for p in fn.params:
        shape = shape_of(p, sizes)
        lo, hi = d["ranges"].get(p.name, d["range"])
        if p.name in d["values"]:
            a = np.array(d["values"][p.name], dtype=np.float64).reshape(shape)
        elif p.dtype == "i32":
            a = rng.integers(int(lo), int(hi), size=shape)
        else:
            a = rng.uniform(lo, hi, size=shape)
        dt = {"f32": np.float32, "f64": np.float64, "i32": np.int32}[p.dtype]
        args.append(np.asarray(a, dtype=dt))
    return args


def as_tuple(v):
    return v if isinstance(v, tuple) else (v,)


def flatten(v):
    if not isinstance(v, tuple):
        return (v,)
    return tuple(x for part in v for x in flatten(part))


class Fn:
    """An entry point of a module: its signature (.params, .results, as the
    header gives them) and a call returning its results flat, in the C
    ABI's order (the module groups f_jvp's and f_hvp's)."""

    def __init__(self, m, name):
        entry = m.entries[name]
        self.params, self.results, self.__name__ = entry.params, entry.results, name
        self._f = m.functions[name]

    def __call__(self, *args):
        return flatten(self._f(*args))


def functions(m):
    return {name: Fn(m, name) for name in m.entries}


class Checker:
    def __init__(self, d):
        self.d = d
        self.failures = 0

    def compare(self, what, a, b, tol, scale=None):
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if scale is None:
            scale = max(1.0, float(np.max(np.abs(b[np.isfinite(b)]), initial=0.0)))
        bad = ~((np.abs(a - b) <= tol * scale) | ((a == b)) | (np.isnan(a) & np.isnan(b)))
        if bad.any():
            idx = tuple(np.argwhere(bad)[0])
            print("FAIL: %s at %s: %.17g vs %.17g (tol %g)" % (what, idx, a[idx], b[idx], tol))
            self.failures += 1
        else:
            print("ok: %s %s" % (what, "x".join(map(str, a.shape))))


class Point:
    """Export `name` of m at args: its differentiable parameters (those its
    f_jvp takes a tangent for, .diff, with .sizes elements) and the Jacobian
    of its float results with respect to them, [outputs, inputs], computed
    by columns (forward), by rows (reverse) or by central differences."""

    def __init__(self, m, name, args):
        self.f, self.args, self.name = m[name], args, name
        self.jvp = m.get(name + "_jvp")
        self.grad = m.get(name + "_grad") or m.get(name + "_vjp")
        np_ = len(self.f.params)
        self.diff = [next(k for k, p in enumerate(self.f.params) if "t_" + p.name == t.name)
                     for t in self.jvp.params[np_:]] if self.jvp else []
        self.sizes = [args[k].size for k in self.diff]
        self.n_in = sum(self.sizes)
        self.outs = self.f(*args)
        self.fres = [k for k, r in enumerate(self.f.results) if r.dtype != "i32"]
        self.n_out = sum(np.asarray(self.outs[k]).size for k in self.fres)

    def split(self, vec):
        parts, at = [], 0
        for k, s in zip(self.diff, self.sizes):
            parts.append(vec[at:at + s].reshape(self.args[k].shape).astype(self.args[k].dtype))
            at += s
        return parts

    def flat_outs(self, vals):
        return np.concatenate([np.asarray(vals[k], dtype=np.float64).ravel() for k in self.fres]) \
            if self.fres else np.zeros(0)

    def forward(self, ck):
        J = np.zeros((self.n_out, self.n_in))
        nv = len(self.f.results)
        for j in range(self.n_in):
            e = np.zeros(self.n_in)
            e[j] = 1
            r = self.jvp(*self.args, *self.split(e))
            if not all(np.array_equal(np.asarray(r[k]), np.asarray(self.outs[k]), equal_nan=True)
                       for k in range(nv)):  # the values are f's, bit for bit
                print("FAIL: %s_jvp's value differs from %s's" % (self.name, self.name))
                ck.failures += 1
            J[:, j] = np.concatenate([np.asarray(t, dtype=np.float64).ravel() for t in r[nv:]]) \
                if self.n_out else np.zeros(0)
        return J

    def reverse(self):
        J = np.zeros((self.n_out, self.n_in))
        scalar = self.grad.__name__.endswith("_grad")
        for i in range(1 if scalar else self.n_out):
            if scalar:
                r = self.grad(*self.args)
            else:
                e = np.zeros(self.n_out)
                e[i] = 1
                seeds, at = [], 0
                for k in self.fres:
                    o = np.asarray(self.outs[k])
                    seeds.append(e[at:at + o.size].reshape(o.shape).astype(o.dtype))
                    at += o.size
                r = self.grad(*self.args, *seeds)
            J[i, :] = np.concatenate([np.asarray(g, dtype=np.float64).ravel()
                                      for g in r[len(self.f.results):]])
        return J

    def differences(self):
        J = np.zeros((self.n_out, self.n_in))
        base = np.concatenate([self.args[k].ravel() for k in self.diff])
        for j in range(self.n_in):
            h = 1e-6 * max(1.0, abs(base[j]))
            vals = []
            for sgn in (1, -1):
                x = base.copy()
                x[j] += sgn * h
                a2 = list(self.args)
                for k, part in zip(self.diff, self.split(x)):
                    a2[k] = part
                vals.append(self.flat_outs(self.f(*a2)))
            J[:, j] = (vals[0] - vals[1]) / (2 * h)
        return J

    def in_f64(self):
        return all(self.args[k].dtype == np.float64 for k in self.diff)


def check_export(m, name, d, rng, ck):
    args = make_args(m[name], d, rng)
    pt = Point(m, name, args)
    if pt.jvp is None:
        print("ok: %s has no derivative entry points" % name)
        return
    Jf = pt.forward(ck)
    if pt.grad is not None and pt.n_out:
        ck.compare("%s forward = reverse" % name, Jf, pt.reverse(), d["fr"])
    if pt.in_f64() and name not in d["nofd"]:
        ck.compare("%s forward = central differences" % name, Jf, pt.differences(), d["fd"])
    f, grad, diff, n_in, split = pt.f, pt.grad, pt.diff, pt.n_in, pt.split
    hvp = m.get(name + "_hvp")
    if hvp is not None and grad is not None:
        v = rng.uniform(-1, 1, size=n_in)
        r = as_tuple(hvp(*args, *split(v)))
        g = as_tuple(grad(*args))
        nd = len(diff)
        for k in range(1 + nd):
            if not np.array_equal(np.asarray(r[k]), np.asarray(g[k]), equal_nan=True):
                print("FAIL: %s_hvp's value or gradient differs from %s_grad's" % (name, name))
                ck.failures += 1
                break
        hv = np.concatenate([np.asarray(x, dtype=np.float64).ravel() for x in r[1 + nd:]])
        if all(args[k].dtype == np.float64 for k in diff):
            base = np.concatenate([args[k].ravel() for k in diff])
            h = 1e-5
            gs = []
            for sgn in (1, -1):
                a2 = list(args)
                for k, part in zip(diff, split(base + sgn * h * v)):
                    a2[k] = part
                gs.append(np.concatenate([np.asarray(x, dtype=np.float64).ravel()
                                          for x in as_tuple(grad(*a2))[1:]]))
            ck.compare("%s hvp = differences of the gradient" % name, hv, (gs[0] - gs[1]) / (2 * h),
                       max(d["fd"], 1e-5))


def main():
    path = sys.argv[1]
    options, seed, only = "", 1, None
    for a in sys.argv[2:]:
        if a.startswith("--options="):
            options = a[len("--options="):]
        elif a.startswith("--seed="):
            seed = int(a[len("--seed="):])
        elif a.startswith("--only="):
            only = a[len("--only="):].split(",")
    text = open(path).read()
    d = directives(text)
    m = functions(sgc.compile(text, path, "--exports=grad,jvp,hvp " + options))
    rng = np.random.default_rng(seed)
    ck = Checker(d)
    names = [n for n in m if not any(n.endswith(s) and n[:-len(s)] in m for s in DERIVED)]
    for name in names:
        if only is None or name in only:
            check_export(m, name, d, rng, ck)
    print("%d failed" % ck.failures)
    sys.exit(1 if ck.failures else 0)


if __name__ == "__main__":
    main()
