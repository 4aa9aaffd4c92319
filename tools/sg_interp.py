"""A NumPy interpreter of .sg programs as tools/gen_programs.py builds them
(its tree, not the text): the reference tools/check_random.py holds the
compiler to, written from the spec (../shared/spec/LANGUAGE.md) alone.

  Interp(prog, clean=False).run(fn, args) -> list of results

`args` are NumPy arrays in the parameters' dtypes (float32, float64, int32);
the results are arrays in the results' dtypes. The arithmetic is the
program's own: an f32 value is a float32 array (so a comparison or a floor
sees the rounding the compiled code sees), an i32 value an int32 array
(wrapping), a bool a bool array. A run that would make the compiled
function return SG_ERR_INDEX (an index, a slice bound or a gather entry
out of range, an integer division by zero, argmax over an empty axis)
raises IndexErr.

Decisions the compiled code could take the other way (a comparison, a
floor, an i32 cast, an argmax, whose operands lie within rounding of the
point where the result jumps) set `interp.fragile`: then only the compiled
levels are compared with each other, not with this reference.

Transforms (grad, and version 3's jvp, jacobian, hessian and
jvp(grad(...))) are computed by central differences of their function in
float64 (class Fd: Richardson-extrapolated; `fragile` where two steps
disagree; `loose` where a second derivative is involved), so they are
exact to about 1e-8 where the function is smooth.

Every op of gen_programs.show() has an entry in EVAL; the tables of
gen_programs (UNARY, BINARY, REDUCE) carry their own NumPy meaning.
"""

import math
import re

import numpy as np

import gen_programs as G

np.seterr(all="ignore")

DT = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "bool": np.bool_}
I32_MIN, I32_MAX = -2**31, 2**31 - 1
TOL = {np.float32: 1e-4, np.float64: 1e-9}  # "within rounding" for fragile decisions
APPROX_TOL = 1e-6  # the same once a transform's value (by differences) is about


class TooLong(AssertionError):
    """A run past a million loop iterations (a hessian of a helper in a
    loop, over sizes of 8, gets there): no reference, as a slow one."""


class IndexErr(Exception):
    """The compiled function returns SG_ERR_INDEX here. `dead`: raised in
    code whose value nothing uses (which a compiler that drops dead code
    before checking its indices would not report; the spec says it must,
    section 6, v3 clarified)."""

    def __init__(self, msg, dead=False):
        super().__init__(msg)
        self.dead = dead


def dead_statements(fn):
    """The statements of fn whose values its results do not depend on (by
    name, conservatively: a name used anywhere counts for all its
    declarations), as a set of ids."""
    used = set()

    def names(e):
        return {x.at["text"] for x in e.walk() if x.op == "name"} | \
            {G.dim_parts(x.at["dim"])[0] for x in e.walk() if x.op == "size"}

    def defines(s):
        return set(s.names or []) | ({s.target} if s.target else set())

    ret = [s for s in fn.body if s.kind == "return"]
    for e in ret[0].es:
        used |= names(e)

    def live(s):
        if s.kind in ("for", "while", "if"):
            return any(live(x) for b in s.blocks() for x in b)
        return s.kind == "return" or bool(defines(s) & used)

    changed = True
    while changed:
        changed = False
        for s in G.walk_stmts(fn.body):
            if live(s):
                new = set().union(*[names(e) for e in s.exprs()]) - used
                if new:
                    used |= new
                    changed = True
    return {id(s) for s in G.walk_stmts(fn.body) if not live(s)}


class Interp:
    def __init__(self, prog, clean=False, wide=False, jitter=False):
        """wide: compute f32 in float64 and f64 in long double (the second
        opinion that tells how much rounding moves a result); jitter: move
        each sum and mean by one rounding, up and down in turn (the third:
        a cancellation exact in both precisions, sum(a) - sum(b) of equal
        sums, is not exact in the compiled code, which adds in another
        order; raised to a large power it is the whole result)."""
        self.prog, self.clean = prog, clean
        self.jitter, self.jittered = jitter, 0
        self.fns = {f.name: f for f in prog.funcs}
        self.fragile = False
        # some value or partial derivative was infinite or NaN: there forward
        # and reverse mode may cancel paths on either side of it (see
        # check_random.compare, cancel)
        self.edgy = False
        self.loose = False  # a second derivative by differences: less exact
        # a transform's value came from differences (good to about 1e-8):
        # a decision on it within APPROX_TOL could go the other way
        self.approx = False
        self.record = self.replay = None  # stop_gradient values of an Fd's base point
        self.f32 = np.float64 if wide else np.float32  # float64 while differentiating
        self.f64 = np.longdouble if wide else np.float64
        self.steps = 0  # loop iterations, to stop a runaway program
        self.dead = 0  # > 0 while running code whose value is unused
        self.dead_stmts = {}  # fn name -> dead_statements(fn)

    def err(self, msg):
        return IndexErr(msg, self.dead > 0)

    def dt(self, dtype):
        return self.f32 if dtype == "f32" else self.f64 if dtype == "f64" else DT[dtype]

    # ---- functions ----
    def run(self, fn, args):
        """fn's results for args (a list of arrays)."""
        sizes = {}
        for p, a in zip(fn.params, args):
            if a.ndim != p.ty.rank:
                raise AssertionError("%s: argument %s has rank %d" % (fn.name, p.name, a.ndim))
            for d, n in zip(p.ty.dims, a.shape):
                if isinstance(d, str):
                    if sizes.setdefault(d, n) != n:
                        raise AssertionError("%s: size %s bound twice" % (fn.name, d))
        env = Env(sizes)
        if fn.name not in self.dead_stmts:
            self.dead_stmts[fn.name] = dead_statements(fn)
        env.dead = self.dead_stmts[fn.name]
        for p, a in zip(fn.params, args):
            env.declare(p.name, np.asarray(a, dtype=self.dt(p.ty.dtype)))
        out = self.block(fn.body, env)
        return [self.conform(v, ty, sizes) for v, ty in zip(out, fn.rets)]

    def conform(self, v, ty, sizes):
        """v in ty's dtype and shape (a weak value, a broadcast one)."""
        shape = tuple(G.dim_value(d, sizes) for d in ty.dims)
        v = np.asarray(v)
        if v.dtype != self.dt(ty.dtype):
            v = v.astype(self.dt(ty.dtype))
        if v.shape != shape:
            v = np.broadcast_to(v, shape)
        return np.array(v)

    def block(self, stmts, env):
        """Runs the statements; the values of a return, or None."""
        env.push()
        try:
            for s in stmts:
                dead = id(s) in env.dead
                self.dead += dead
                try:
                    out = self.exec(s, env)
                finally:
                    self.dead -= dead
                if out is not None:
                    return out
        finally:
            env.pop()
        return None

    def exec(self, s, env):
        k = s.kind
        if k == "let":
            env.declare(s.names[0], self.conform(self.eval(s.e, env), s.ty, env.sizes)
                        if s.annot else self.eval(s.e, env))
        elif k == "lett":
            for name, v in zip(s.names, self.eval(s.e, env)):
                env.declare(name, v)
        elif k == "var":
            env.declare(s.names[0], self.conform(self.eval(s.e, env), s.ty, env.sizes))
        elif k == "assign":
            self.assign(s, env)
        elif k == "for":
            lo, hi = int(self.eval(s.lo, env)), int(self.eval(s.hi, env))
            for i in range(lo, hi):
                self.tick()
                env.push()
                env.declare(s.var, np.asarray(i, np.int32))
                self.block(s.body, env)
                env.pop()
        elif k == "while":
            while bool(self.eval(s.cond, env)):
                self.tick()
                self.block(s.body, env)
        elif k == "if":
            if bool(self.eval(s.cond, env)):
                self.block(s.body, env)
            elif s.orelse is not None:
                self.block(s.orelse, env)
        elif k == "return":
            return [self.eval(e, env) for e in s.es]
        else:
            raise AssertionError("statement " + k)
        return None

    def tick(self):
        self.steps += 1
        if self.steps > 10**6:
            raise TooLong("more than a million loop iterations")

    def assign(self, s, env):
        old = env.get(s.target)
        e = self.eval(s.e, env)
        if not s.ix:
            new = np.broadcast_to(e, old.shape)
            val = new if s.aop == "=" else APPLY[s.aop](old, new)
            env.set(s.target, np.array(np.asarray(val).astype(old.dtype)))
            return
        # the selected positions, as flat positions into old (shaped like
        # the selection): one indexing machinery for reading and writing
        gathered = []
        pos = self.index(np.arange(old.size).reshape(old.shape), s.ix, env, gathered)
        e = np.broadcast_to(np.asarray(e, old.dtype), pos.shape).ravel()
        pos = pos.ravel()
        flat = old.ravel().copy()
        # a repeated entry of the index tensor is the error, even where the
        # rows it picks are empty (an axis of size 0 after it), as an
        # out-of-range entry is: the generated code checks the entries
        g = gathered[0] if gathered else None
        if s.aop in ("=", "*=") and g is not None and len(np.unique(g)) != g.size:
            raise self.err("repeated positions in an assignment with " + s.aop)
        if s.aop == "=":
            flat[pos] = e
        elif s.aop == "*=":
            flat[pos] = flat[pos] * e
        elif s.aop == "+=":
            np.add.at(flat, pos, e)
        else:
            np.subtract.at(flat, pos, e)
        env.set(s.target, flat.reshape(old.shape))

    # ---- expressions ----
    def eval(self, e, env):
        v = EVAL[e.op](self, e, env)
        if e.op in ("call",) and isinstance(v, list):
            return v
        want = self.dt(e.ty.dtype)
        v = np.asarray(v)
        if v.dtype != want:
            v = v.astype(want)
        if v.dtype.kind == "f" and not self.edgy and not np.all(np.isfinite(v)):
            self.edgy = True
        return v

    def args(self, e, env):
        return [self.eval(a, env) for a in e.args]

    def jit(self, v):
        """A float sum, moved by one rounding in a jitter run."""
        if not self.jitter or v.dtype.kind != "f":
            return v
        self.jittered += 1
        eps = np.finfo(v.dtype).eps * (1 if self.jittered % 2 else -1)
        return (v * (1 + eps)).astype(v.dtype)

    def in_fd(self):
        """Whether this run is one of a transform's central differences
        (class Fd). There an exact tie of max/min (ones(...) as an argument
        makes them) is a point where the spec's rule splits the derivative
        among the tied elements, while every one-sided difference along a
        coordinate can be 0: the result is fragile."""
        return self.record is not None or self.replay is not None

    def near(self, a, b):
        """Whether a decision between a and b could go the other way in
        the compiled code (float values within rounding, not equal)."""
        tol = self.tol(a)
        if tol is None:
            return False
        a, b = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(b, np.float64))
        d = np.abs(a - b)
        with np.errstate(invalid="ignore"):
            return bool(np.any((d > 0) & (d <= tol * np.maximum(1, np.maximum(abs(a), abs(b))))))

    def tol(self, x):
        """How near a jump a float decision on x is fragile (None: not a float)."""
        tol = TOL.get(np.asarray(x).dtype.type)
        return max(tol, APPROX_TOL) if tol is not None and self.approx else tol

    def near_int(self, x, half=False):
        tol = self.tol(x)
        if tol is None:
            return False
        x = np.asarray(x, np.float64) + (0.5 if half else 0)
        d = np.abs(x - np.round(x))
        return bool(np.any((d > 0) & (d <= tol * np.maximum(1, abs(x)))))

    def index(self, x, ix, env, gathered=None):
        """x[ix...]: positions remove their axis, slices keep it, a gather
        replaces it by the index tensor's axes, in place (and its adjusted
        entries are appended to `gathered`)."""
        ax = 0
        for node in ix:
            D = x.shape[ax]
            if node.op == "ix_all":
                ax += 1
            elif node.op == "ix_pos":
                p = int(self.eval(node.args[0], env))
                p = p + D if p < 0 else p
                if not 0 <= p < D:
                    raise self.err("index %d out of range for %d" % (p, D))
                x = np.take(x, p, axis=ax)
            elif node.op == "ix_slice":
                if node.args:  # run-time start: start adjusted once, then its length
                    lo = int(self.eval(node.args[0], env))
                    lo = lo + D if lo < 0 else lo
                    hi = lo + self.size_text(node.at["len"], env)
                else:
                    lo = self.bound(node.at["lo"], 0, D, env)
                    hi = self.bound(node.at["hi"], D, D, env)
                if not (0 <= lo <= D and 0 <= hi <= D) or hi < lo:
                    raise self.err("slice %d:%d out of range for %d" % (lo, hi, D))
                x = np.take(x, np.arange(lo, hi), axis=ax)
                ax += 1
            else:  # a gather
                idx = self.entries(self.eval(node.args[0], env).astype(np.int64), D)
                if gathered is not None:
                    gathered.append(idx)
                x = np.take(x, idx, axis=ax)
                ax += idx.ndim
        return x

    def entries(self, idx, D):
        idx = np.where(idx < 0, idx + D, idx)
        if idx.size and (idx.min() < 0 or idx.max() >= D):
            raise self.err("gather entry out of range for %d" % D)
        return idx

    def bound(self, text, default, D, env):
        if text == "":
            return default
        v = self.size_text(text, env)
        return v + D if v < 0 else v

    @staticmethod
    def size_text(text, env):
        if re.fullmatch(r"-?\d+", text):
            return int(text)
        return G.dim_value(text, env.sizes)


class Env:
    """Nested scopes of names; the function's sizes, also values."""

    def __init__(self, sizes):
        self.sizes = sizes
        self.scopes = [{}]
        self.dead = set()

    def push(self):
        self.scopes.append({})

    def pop(self):
        self.scopes.pop()

    def declare(self, name, v):
        self.scopes[-1][name] = v

    def get(self, name):
        for s in reversed(self.scopes):
            if name in s:
                return s[name]
        if name in self.sizes:
            return np.asarray(self.sizes[name], np.int32)
        raise AssertionError("no name " + name)

    def set(self, name, v):
        for s in reversed(self.scopes):
            if name in s:
                s[name] = v
                return
        raise AssertionError("assigning undeclared " + name)


APPLY = {"+=": lambda a, b: a + b, "-=": lambda a, b: a - b, "*=": lambda a, b: a * b}


# ---- op by op ----

def ev_lit(it, e, env):
    t = e.at["text"]
    return np.asarray(float(t) if e.ty.is_float else int(t), it.dt(e.ty.dtype))


def ev_unary(it, e, env):
    (x,) = it.args(e, env)
    f = e.at["f"]
    if f in ("floor", "ceil"):
        it.fragile |= it.near_int(x)
    elif f == "round":
        it.fragile |= it.near_int(x, half=True)
    elif f == "sign":
        it.fragile |= it.near(x, 0)
    elif f == "sqrt" and np.any(x == 0) or f in ("asin", "acos") and np.any(np.abs(x) == 1):
        it.edgy = True  # a finite value, an infinite derivative
    return G.UNARY[f].ev(np, x)


def template_ns(dtype):
    """The names a template (GUARDED_UNARY, POISON...) may use, over arrays
    of dtype; literals in it are rounded to dtype, as weak literals are."""
    ns = {name: (lambda op: lambda *a: op.ev(np, *a))(op) for name, op in G.UNARY.items()}
    ns.update({name: (lambda op: lambda *a: op.ev(np, *a))(op) for name, op in G.BINARY.items()
               if name.isalpha()})
    ns.update({name: (lambda op: lambda *a: op.ev(np, *a))(op) for name, op in G.FUNCS.items()})
    ns["L"] = lambda v: np.asarray(v, dtype)
    return ns


def ev_template(it, e, env):
    xs = it.args(e, env)
    dtype = xs[0].dtype
    text = re.sub(r"(?<![\w.{])(\d+(?:\.\d*)?(?:[eE][+-]?\d+)?)", r"L(\1)", e.at["fmt"])
    text = text.format(*["_a%d" % i for i in range(len(xs))])
    ns = template_ns(dtype)
    ns.update({"_a%d" % i: x for i, x in enumerate(xs)})
    return eval(text, ns)  # noqa: S307 -- our own fixed patterns


def ev_binary(it, e, env):
    a, b = it.args(e, env)
    if e.at["f"] in ("maximum", "minimum") and it.in_fd() and np.any(np.equal(a, b)):
        it.fragile = True  # a tie: see Interp.in_fd
    if e.at["f"] in ("**", "pow") and np.any(~(a > 0) | np.isinf(a)):
        it.edgy = True  # a finite power of 0, a negative or inf: d/da or d/db infinite or NaN
    return G.BINARY[e.at["f"]].ev(np, a, b)


def ev_idiv(it, e, env):
    a, b = it.args(e, env)
    a, b = np.broadcast_arrays(a.astype(np.int64), b.astype(np.int64))
    if np.any(b == 0):
        raise it.err("integer division by zero")
    if e.at["f"] == "//":
        return np.floor_divide(a, b).astype(np.int64).astype(np.int32)
    return np.mod(a, b).astype(np.int32)


CMPF = {"<": np.less, "<=": np.less_equal, ">": np.greater, ">=": np.greater_equal,
        "==": np.equal, "!=": np.not_equal}


def ev_cmp(it, e, env):
    a, b = it.args(e, env)
    it.fragile |= it.near(a, b)
    return CMPF[e.at["f"]](a, b)


def ev_logic(it, e, env):
    a, b = it.args(e, env)
    return (np.logical_and if e.at["f"] == "&&" else np.logical_or)(a, b)


def ev_reduce(it, e, env):
    (x,) = it.args(e, env)
    f, axis = e.at["f"], e.at["axis"]
    axes = tuple(range(x.ndim)) if axis is None else (axis % max(x.ndim, 1),)
    if x.ndim == 0:
        return x
    if f == "prod":
        return np.prod(x, axis=axes).astype(x.dtype)
    if f == "logsumexp":  # the spec's formula: m + log(sum(exp(x - m))), m = max(x)
        m = ev_max(x, axes, keepdims=True)
        return (np.squeeze(m, axes) + np.log(np.sum(np.exp(x - m), axis=axes))).astype(x.dtype)
    if f == "sum":
        return it.jit(np.sum(x, axis=axes).astype(x.dtype))
    if f == "mean":
        n = int(np.prod([x.shape[a] for a in axes]))
        return it.jit((np.sum(x, axis=axes) / x.dtype.type(n) if n else
                       np.full([s for i, s in enumerate(x.shape) if i not in axes],
                               np.nan)).astype(x.dtype))
    if any(x.shape[a] == 0 for a in axes):
        shape = [s for i, s in enumerate(x.shape) if i not in axes]
        if x.dtype == np.int32:
            return np.full(shape, I32_MIN if f == "max" else I32_MAX, np.int32)
        return np.full(shape, -np.inf if f == "max" else np.inf, x.dtype)
    top = (np.max if f == "max" else np.min)(x, axis=axes)
    if x.dtype != np.int32 and it.in_fd():
        ties = np.sum(x == np.expand_dims(top, axes), axis=axes)
        it.fragile |= bool(np.any(ties > 1))  # see Interp.in_fd
    return top


def ev_max(x, axes, keepdims=False):
    """max over axes, -inf over nothing (floats)."""
    if any(x.shape[a] == 0 for a in axes):
        shape = [1 if i in axes else s for i, s in enumerate(x.shape)]
        m = np.full(shape, -np.inf, x.dtype)
        return m if keepdims else np.squeeze(m, axes)
    return np.max(x, axis=axes, keepdims=keepdims)


def ev_along(it, e, env):
    """softmax, log_softmax (stable: the max subtracted) and cumsum along
    one axis, by default the last."""
    (x,) = it.args(e, env)
    axis = (-1 if e.at["axis"] is None else e.at["axis"]) % x.ndim
    if e.at["f"] == "cumsum":
        return np.cumsum(x, axis=axis, dtype=x.dtype)
    z = x - ev_max(x, (axis,), keepdims=True)
    s = np.sum(np.exp(z), axis=axis, keepdims=True)
    return (np.exp(z) / s if e.at["f"] == "softmax" else z - np.log(s)).astype(x.dtype)


def ev_arg(it, e, env):
    (x,) = it.args(e, env)
    f, axis = e.at["f"], e.at["axis"]
    if x.ndim == 0:
        return np.asarray(0, np.int32)
    if axis is None:
        x, axis = x.ravel(), 0
    if x.shape[axis] == 0:
        raise it.err("argmax/argmin along an axis of size 0")
    if x.dtype != np.int32 and x.shape[axis] > 1:
        s = np.sort(np.moveaxis(x, axis, -1), axis=-1)
        top = (s[..., -1], s[..., -2]) if f == "argmax" else (s[..., 0], s[..., 1])
        it.fragile |= it.near(*top)
    return (np.argmax if f == "argmax" else np.argmin)(x, axis=axis).astype(np.int32)


def ev_cast(it, e, env):
    (x,) = it.args(e, env)
    if e.ty.dtype == "i32" and x.dtype.kind == "f":  # toward zero, saturating, NaN 0
        it.fragile |= it.near_int(x)
        y = np.trunc(np.clip(np.nan_to_num(x.astype(np.float64), nan=0.0), I32_MIN, I32_MAX))
        return y.astype(np.int64).astype(np.int32)
    return x


def ev_transpose(it, e, env):
    (x,) = it.args(e, env)
    return np.transpose(x, e.at["perm"]) if e.at["perm"] is not None else np.transpose(x)


def shape_of(e, env):
    return tuple(G.dim_value(d, env.sizes) for d in e.ty.dims)


def ev_select(it, e, env):
    c, a, b = it.args(e, env)
    return np.where(c, a, b)


def ev_like(it, e, env):
    it.dead += 1  # only its type is used
    try:
        (x,) = it.args(e, env)
    finally:
        it.dead -= 1
    return (np.zeros_like if e.at["f"] == "zeros_like" else np.ones_like)(x)


def ev_ctor(it, e, env):
    return (np.zeros if e.at["f"] == "zeros" else np.ones)(shape_of(e, env),
                                                          it.dt(e.ty.dtype))


def ev_call(it, e, env):
    h = e.at["fn"]
    out = it.run(h, it.args(e, env))
    return out if len(h.rets) > 1 else out[0]


def ev_index(it, e, env):
    return it.index(it.eval(e.args[0], env), e.args[1:], env)


def ev_take(it, e, env):
    x, idx = it.args(e, env)
    axis = e.at["axis"]
    if axis is None:
        x, axis = x.ravel(), 0
    idx = idx.astype(np.int64)
    return np.take(x, it.entries(idx, x.shape[axis]), axis=axis)


def ev_take_along(it, e, env):
    x, idx = it.args(e, env)
    axis = e.at["axis"]
    idx = it.entries(idx.astype(np.int64), x.shape[axis])
    shape = list(np.broadcast_shapes(tuple(1 if i == axis else s for i, s in enumerate(x.shape)),
                                     tuple(1 if i == axis else s for i, s in enumerate(idx.shape))))
    xs = list(shape)
    xs[axis] = x.shape[axis]
    ishape = list(shape)
    ishape[axis] = idx.shape[axis]
    return np.take_along_axis(np.broadcast_to(x, xs), np.broadcast_to(idx, ishape), axis=axis)


# ---- random numbers: Philox4x32-10 as docs/language.md 2.11 states ----

M32 = np.uint64(0xFFFFFFFF)  # numpy: uint64 with a Python int is float64
W0, W1 = np.uint64(0x9E3779B9), np.uint64(0xBB67AE85)


def philox(c, k):
    """c: 4 arrays of uint64 (32-bit words), k: 2 arrays; 4 words out."""
    x0, x1, x2, x3 = c
    k0, k1 = k
    for r in range(10):
        if r:
            k0, k1 = (k0 + W0) & M32, (k1 + W1) & M32
        p0, p1 = np.uint64(0xD2511F53) * x0, np.uint64(0xCD9E8D57) * x2
        x0, x1, x2, x3 = ((p1 >> np.uint64(32)) ^ x1 ^ k0, p1 & np.uint64(M32),
                          (p0 >> np.uint64(32)) ^ x3 ^ k1, p0 & np.uint64(M32))
    return x0, x1, x2, x3


def u64(v):
    return np.asarray(v, np.uint64)


def philox_key(key):
    key = np.asarray(key).ravel().astype(np.int64).astype(np.uint64) & M32
    k = (u64(key[0]) if key.size else u64(0), u64(0))
    for i in range(1, key.size):
        y = philox((u64(key[i]), u64(i), u64(0), u64(2)), k)
        k = (y[0], y[1])
    return k


def blocks(k, b, tag):
    b = u64(b)
    return philox((b & np.uint64(M32), b >> np.uint64(32), u64(np.zeros_like(b)),
                   u64(np.full_like(b, tag))), k)


def random_numbers(kind, dtype, key, shape):
    n = int(np.prod(shape))
    j = np.arange(n, dtype=np.uint64)
    k = philox_key(key)
    f32 = dtype == np.float32
    y = blocks(k, j // np.uint64(4 if f32 else 2), 0)
    Y = np.stack(y)  # [4, n]
    col = lambda w: Y[w, np.arange(n)]
    u53 = lambda hi, lo: ((hi << np.uint64(32) | lo) >> np.uint64(11)).astype(np.float64) * 2.0**-53
    if kind == "uniform":
        if f32:
            v = (col((j % np.uint64(4)).astype(np.int64)) >> np.uint64(8)).astype(np.float64) * 2.0**-24
        else:
            w = (2 * (j % np.uint64(2))).astype(np.int64)
            v = u53(col(w), col(w + 1))
    else:
        if f32:
            p = ((j % np.uint64(4)) // np.uint64(2)).astype(np.int64)
            u1 = (col(2 * p).astype(np.float64) + 0.5) * 2.0**-32
            u2 = col(2 * p + 1).astype(np.float64) * 2.0**-32
        else:
            u1 = u53(Y[0], Y[1]) + 2.0**-54
            u2 = u53(Y[2], Y[3])
        r = np.sqrt(-2 * np.log(u1))
        v = r * np.where(j % np.uint64(2) == 1, np.sin(2 * math.pi * u2), np.cos(2 * math.pi * u2))
    return v.astype(dtype).reshape(shape)


def ev_random(it, e, env):
    (key,) = it.args(e, env)
    return random_numbers(e.at["f"], DT[e.ty.dtype], key, shape_of(e, env))


def ev_split(it, e, env):
    (key,) = it.args(e, env)
    n = G.dim_value(e.ty.dims[0], env.sizes)
    y = blocks(philox_key(key), np.arange(n, dtype=np.uint64), 1)
    return y[0].astype(np.int64).astype(np.uint32).view(np.int32)


# ---- transforms ----

class Fd:
    """Central differences of helper h in float64 at args, Richardson-
    extrapolated (steps s and s/2): exact to about 1e-8 where h is smooth
    (the smooth mode's discipline makes it so; in the full mode a kink
    within a step of the point is a fragile result). `fragile` is set where
    the two steps disagree, or where h has a kink at the point (a tie of max
    or min, relu at 0): there the one-sided slopes differ by as much at
    either step, where for a smooth h their difference halves with the
    step. Second derivatives (mixed second differences) are good to about
    1e-9 of h's value: they set `loose`, and the checker compares what
    they feed with a wider tolerance."""

    def __init__(self, it, h, args):
        self.it, self.h = it, h
        self.xs = [np.array(a, np.float64) if a.dtype.kind == "f" else a for a in args]
        self.stops = []
        self.f0 = self.value(record=self.stops)

    def value(self, record=None, replay=None):
        """h's results at xs. stop_gradient(e) is a constant of the
        derivative: the base point's run records the value of each
        stop_gradient it evaluates, in order, and the others replay them."""
        saved = self.it.record, self.it.replay
        self.it.record, self.it.replay = record, replay
        try:
            return [np.asarray(r, np.float64) for r in self.it.run(self.h, self.xs)]
        finally:
            self.it.record, self.it.replay = saved

    def at(self, moves):
        """h's results with xs[k] += d for each (k, d) of moves."""
        saved = [(k, self.xs[k]) for k, _ in moves]
        for k, d in moves:
            self.xs[k] = self.xs[k] + d
        try:
            return self.value(replay=list(reversed(self.stops)))[0]
        finally:
            for k, x in reversed(saved):
                self.xs[k] = x

    def step(self, k, t):
        top = float(np.max(np.abs(t))) if t.size else 0.0
        return 1e-3 * max(1.0, float(np.max(np.abs(self.xs[k]))) if self.xs[k].size else 1.0) / top

    def settle(self, d, r):
        scale = np.maximum(1.0, np.abs(r))
        if not np.all(np.abs(d[1] - d[0]) <= 1e-4 * scale):
            self.it.fragile = True

    def tangent(self, k, t, step=None):
        """The derivative of h's (first) result along t in parameter k."""
        if not t.size or not np.any(t):
            return np.zeros(self.f0[0].shape)
        step = step or self.step(k, t)
        d, c = [], []
        for hh in (step, step / 2):
            fp, fm = self.at([(k, hh * t)]), self.at([(k, -hh * t)])
            d.append((fp - fm) / (2 * hh))
            c.append((fp - 2 * self.f0[0] + fm) / hh)  # the forward slope less the backward
        r = (4 * d[1] - d[0]) / 3
        self.settle(d, r)
        scale = np.maximum(1.0, np.abs(r))
        if np.any((np.abs(c[0]) > 1e-6 * scale) & ~(np.abs(c[1]) <= 0.75 * np.abs(c[0]))):
            self.it.fragile = True
        return r

    def basis(self, k):
        x = self.xs[k]
        for i in np.ndindex(*x.shape):
            e = np.zeros(x.shape)
            e[i] = 1
            yield i, e, 1e-3 * max(1.0, abs(float(x[i])))

    def jacobian(self, k):
        """h's result's shape followed by parameter k's."""
        J = np.zeros(self.f0[0].shape + self.xs[k].shape)
        for i, e, step in self.basis(k):
            J[(Ellipsis,) + i] = self.tangent(k, e, step)
        return J

    def second(self, k, u, su, q, w):
        """u' H w for a scalar h: u in parameter k, w in parameter q."""
        if not w.size or not np.any(w):
            return 0.0
        sw = self.step(q, w)
        if not (np.all(np.isfinite(w)) and 0 < su * sw < np.inf):
            self.it.fragile = True  # an infinite direction: no difference to take
            return float("nan")
        self.it.loose = True
        d = []
        for a, b in ((su, sw), (su / 2, sw / 2)):
            f = lambda x, y: float(self.at([(k, x * u), (q, y * w)]))
            d.append((f(a, b) - f(a, -b) - f(-a, b) + f(-a, -b)) / (4 * a * b))
        r = (4 * d[1] - d[0]) / 3
        self.settle(d, r)
        return r

    def hessian(self, k):
        x = self.xs[k]
        H = np.zeros(x.shape + x.shape)
        es = list(self.basis(k))
        for a, (i, u, su) in enumerate(es):
            for j, w, _ in es[a:]:
                H[i + j] = H[j + i] = self.second(k, u, su, k, w)
        return H

    def hvp(self, k, q, t):
        """The tangent along t (in parameter q) of the gradient in k."""
        g = np.zeros(self.xs[k].shape)
        for i, u, su in self.basis(k):
            g[i] = self.second(k, u, su, q, np.asarray(t, np.float64))
        return g


def ev_stop(it, e, env):
    """Recorded with the number of stop_gradients inside it, which its
    replay skips."""
    if it.replay is not None:
        if it.replay:
            v, inner = it.replay.pop()
            del it.replay[len(it.replay) - inner:]
            return v
        it.fragile = True  # the perturbed run took another path
    if it.record is None:
        return it.eval(e.args[0], env)
    k = len(it.record)
    it.record.append(None)
    v = it.eval(e.args[0], env)
    it.record[k] = (v, len(it.record) - k - 1)
    return v


def fd_transform(it, e, args):
    """A transform's value (spec section 6b) from central differences of
    its function in float64."""
    h, t = e.at["fn"], e.at["t"]
    n = len(h.params)
    names = [p.name for p in h.params]
    k = names.index(e.at["wrt"])
    saved = it.f32
    it.f32 = np.float64
    it.approx = True
    try:
        fd = Fd(it, h, args[:n])
        if t == "grad" or t == "jacobian":
            return fd.jacobian(k)
        if t == "jvp":
            return fd.tangent(k, np.asarray(args[n], np.float64))
        if t == "hessian":
            return fd.hessian(k)
        if t == "jvp_grad":
            return fd.hvp(k, names.index(e.at["twrt"]), args[n])
        if t == "vjp":  # s contracted with the Jacobian (R's axes, then p's)
            s = np.asarray(args[n], np.float64)
            return np.tensordot(s, fd.jacobian(k), axes=s.ndim)
        raise AssertionError("no reference for transform %s" % t)
    finally:
        it.f32 = saved


def ev_transform(it, e, env):
    args = it.args(e, env)
    it.run(e.at["fn"], args[:len(e.at["fn"].params)])  # an index error in the function is the program's
    return fd_transform(it, e, args)


EVAL = {
    "name": lambda it, e, env: env.get(e.at["text"]),
    "size": lambda it, e, env: np.asarray(G.dim_value(e.at["dim"], env.sizes), np.int32),
    "lit": ev_lit,
    "unary": ev_unary,
    "template": ev_template,
    "neg": lambda it, e, env: -it.eval(e.args[0], env),
    "not": lambda it, e, env: np.logical_not(it.eval(e.args[0], env)),
    "binary": ev_binary,
    "idiv": ev_idiv,
    "cmp": ev_cmp,
    "logic": ev_logic,
    "reduce": ev_reduce,
    "arg": ev_arg,
    "along": ev_along,
    "concat": lambda it, e, env: np.concatenate(it.args(e, env), axis=e.at["axis"]),
    "stack": lambda it, e, env: np.stack(it.args(e, env), axis=e.at["axis"]),
    "matmul": lambda it, e, env: np.matmul(*it.args(e, env)),
    "transpose": ev_transpose,
    "reshape": lambda it, e, env: np.reshape(it.eval(e.args[0], env), shape_of(e, env)),
    "broadcast": lambda it, e, env: np.broadcast_to(it.eval(e.args[0], env), shape_of(e, env)),
    "select": ev_select,
    "like": ev_like,
    "cast": ev_cast,
    "stop": ev_stop,
    "ctor": ev_ctor,
    "full": lambda it, e, env: np.broadcast_to(it.eval(e.args[0], env), shape_of(e, env)),
    "arange": lambda it, e, env: np.arange(shape_of(e, env)[0], dtype=np.int32),
    "random": ev_random,
    "split": ev_split,
    "call": ev_call,
    "transform": ev_transform,
    "index": ev_index,
    "take": ev_take,
    "take_along": ev_take_along,
    "mark": lambda it, e, env: it.eval(e.args[1] if it.clean else e.args[0], env),
}
