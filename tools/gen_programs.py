#!/usr/bin/env python3
"""Generate random, well-typed .sg programs (the language of
../shared/spec/LANGUAGE.md, all of version 2) for testing the compiler.

Generation is type-directed: every expression is built for a target type
(dtype and shape) chosen first, so each program checks by construction. A
program has a few helper functions (fn) and one or two exports. The
program is a tree (Program > Fn > statements S > expressions E), printed
by Program.source() and run by tools/sg_interp.py, a NumPy interpreter of
the spec that tools/check_random.py uses as the reference; the minimizer
(tools/minimize_program.py) edits the same tree. Nothing here needs NumPy.

What a program contains:
  * expressions: elementwise operators and builtins, NumPy broadcasting
    with symbolic, literal and derived sizes (n - 1), reductions with and
    without axis=, matmul, transpose, reshape, broadcast, select over
    comparisons, && || !, zeros_like/ones_like, zeros/ones/full/arange,
    f32/f64/i32 casts (from bool too), sizes as i32 values, stop_gradient,
    literal sizes 1, 2, 3 (and 4, 8: feature "wide_lits"),
    version 3's operations (feature "v3ops"; each also by its own name):
    tan asin acos atan sinh cosh log2 log10 erf lgamma atan2 clip in their
    domains ("v3fn", V3_GUARDED), prod and logsumexp with and without
    axis=, softmax, log_softmax and cumsum along an axis, concat and stack,
    const parameters, calls of helpers (sizes bound per call, several
    results bound by `let (a, b) = h(...)`), the transforms of helpers
    (version 3: grad, jvp, vjp, jacobian, hessian and jvp(grad(h, wrt=p), wrt=q),
    anywhere an expression goes, loops and branches included) mostly under
    stop_gradient (also the PGD shape stop_gradient(sign(grad(...)))),
    helpers with custom @vjp and @jvp rules (feature "custom_rules"; exact
    by construction, Fn.rules_source), i32 arithmetic (// and %,
    argmax/argmin), uniform/normal/split;
  * indexing: positions (literal, negative, symbolic, loop indices,
    data-dependent), slices (literal, symbolic, negative, run-time start
    `x[e:e+2]`), one gather per index (`x[idx]`, `x[idx, i]`, index
    matrices and their rows), take, take_along_axis; now and then an index
    out of range on purpose (the reference then expects SG_ERR_INDEX, with
    nothing written);
  * statements: let, var (typed or not; now and then a bool mask, feature
    "bool_var", assigned only with =), whole and indexed assignment
    (= += -= *=, with positions, slices and tensor indices), `for` with
    literal, symbolic and data-dependent bounds, `while` with a counter
    that bounds it and a data-dependent condition, `if`/`else if`/`else`;
    nested: loops in loops, branches in loops, calls and grad in loops;
  * now and then an export that is only a loss of x @ w (feature "pairs",
    Gen.pair_export): in a body without loops or branches the product and
    its adjoint form codegen's fused matrix-vector pair.

With `smooth=True` (the "fd" mode) a program is safe to check against
central differences: every float is f64; ops with kinks or jumps (abs, relu,
sign, floor, ceil, round, max, min, maximum, minimum, comparisons), every
i32 and bool value (indices, loop bounds, conditions), and everything under
stop_gradient, grad or a const parameter of a helper, see only values built
from the export's const and i32 parameters and sizes (which finite
differences do not perturb: "frozen"); a var is live or frozen for its
whole life; log, sqrt, division and pow get arguments away from their
poles (log(1 + square(x))...), and exp a bounded one.

Both modes also build the cases where exactness rules fix a gradient
(spec section 7, docs/language.md 4.3-4.5):
  * guarded selects: select(COND, good, poison) with COND true for every
    input the checker passes (a parameter of the last export, which no
    function calls, whose data is finite, > -2; or zeros_like(e) < 1), and
    a poison branch made by the full generator (every op, kinks included)
    from live values, in which some leaves are NaN or infinite
    (sqrt(-1 - square(q)), exp(1000 + square(q)), 1 / (0 * q)...): that
    branch must contribute exactly 0 to every gradient;
  * zero factors: E + sqrt(P) or E + (sqrt(P) - sqrt(P)) with P exactly 0
    and its adjoint infinite (or NaN): P a matmul with a zero operand in
    every rank combination, maximum/minimum with a losing operand, relu of
    a negative value: the live operand's gradient from it must be 0;
  * sums and means of broadcasts (sum(broadcast(e, [k, ...]), axis=0)),
    which the optimizer rewrites and which must stay exact at k = 0.
Each poison leaf and zero factor is a `mark` node holding both texts;
Program.source() gives the program itself, Program.source(clean=True) the
same program with every poison leaf replaced by its live operand and every
zero factor by 0, whose values and gradients must be the same
(tools/check_random.py).

Every program records the constructs it used (Program.features: "for",
"gather", "slice_in_loop", ...); tools/check_random.py's table of known
issues matches a failure against them, and Gen(features=...) leaves
constructs out (the lit tests run the set that passes today).

How to add to it (version 3 plugs in here):
  * an elementwise or reduction operation (logsumexp, softmax, erf...): one
    entry in UNARY, BINARY or REDUCE below, with its properties (smooth?,
    float only?) and its NumPy meaning as `ev=lambda np, x: ...` (np is
    passed in by the interpreter, so this module stays NumPy-free). An
    operation of its own shape rule (concat, stack, cumsum) is one maker
    method (see `take`) registered in EXPR_MAKERS, and its meaning one
    entry of sg_interp.EVAL.
  * a transform (vjp is the one missing): one entry in TRANSFORMS: which
    functions it applies to, the type of its result, whether it takes a
    tangent, and how the reference computes it (sg_interp.fd_transform, by
    central differences of the interpreter).
  * a statement: one method in STMT_MAKERS, its printing in S.lines() and
    its meaning in sg_interp.Interp.exec.
  * a checked entry point of an export (f_grad/f_vjp, f_jvp, f_hvp are):
    one class in check_random.ENTRY_POINTS.
Each maker returns None when it cannot build its construct for the type
asked; the caller then picks another.

Usage: gen_programs.py [--seed S] [--count N] [--fd] [--depth D] [--out DIR]
                       [--without FEATURE,...]
writes DIR/prog-K.sg (or prints one program to stdout without --out).
"""

import argparse
import math
import os
import random
import re
import sys

SYMS = ["n", "m", "k", "d"]
LITS = [1, 2, 3]
# With feature "wide_lits", sizes 4 and 8 too: products of literal
# matrices with rows of 4 or more columns take codegen's vector forms
# (rows as vectors, a whole 4 x 4 f32 matrix in one vector).
WIDE_LITS = [4, 8]
MARK = "@@%d@@"
CMP = ["<", "<=", ">", ">=", "==", "!="]


# ---- operation tables: generation properties, printing, meaning ----

class Op:
    """An operation of the table: `smooth` (safe for finite differences on
    live values), `kink` (continuous but with a kink: on frozen values
    only in smooth mode), `jump` (discontinuous: likewise, and the
    reference flags results near the jump), `dtypes` it takes, and `ev`,
    its meaning over NumPy arrays (np passed in)."""

    def __init__(self, name, ev, smooth=False, kink=False, dtypes=("f32", "f64"), fmt=None,
                 weight=1.0, v3=False):
        self.name, self.ev, self.smooth, self.kink = name, ev, smooth, kink
        self.dtypes, self.fmt, self.weight, self.v3 = dtypes, fmt, weight, v3


def _ops(*ops):
    return {o.name: o for o in ops}


# f(x): the argument x is an array of the operand's dtype; the result is
# cast back to that dtype by the interpreter.
UNARY = _ops(
    Op("exp", lambda np, x: np.exp(x)),
    Op("log", lambda np, x: np.log(x)),
    Op("log1p", lambda np, x: np.log1p(x)),
    Op("expm1", lambda np, x: np.expm1(x)),
    Op("sqrt", lambda np, x: np.sqrt(x)),
    Op("rsqrt", lambda np, x: 1 / np.sqrt(x)),
    Op("square", lambda np, x: x * x, smooth=True),
    Op("sin", lambda np, x: np.sin(x), smooth=True),
    Op("cos", lambda np, x: np.cos(x), smooth=True),
    Op("tanh", lambda np, x: np.tanh(x), smooth=True),
    Op("sigmoid", lambda np, x: np.where(x >= 0, 1 / (1 + np.exp(-np.abs(x))),
                                         np.exp(-np.abs(x)) / (1 + np.exp(-np.abs(x)))),
       smooth=True),
    Op("softplus", lambda np, x: np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x))), smooth=True),
    Op("relu", lambda np, x: np.where(x < 0, np.zeros_like(x), x), kink=True),  # +0, also at -inf
    Op("abs", lambda np, x: np.abs(x), kink=True, dtypes=("f32", "f64", "i32")),
    Op("sign", lambda np, x: np.sign(x), kink=True, dtypes=("f32", "f64", "i32")),
    Op("floor", lambda np, x: np.floor(x), kink=True),
    Op("ceil", lambda np, x: np.ceil(x), kink=True),
    Op("round", lambda np, x: np.round(x), kink=True),
    # version 3 (spec section 6): made only through V3_GUARDED
    Op("tan", lambda np, x: np.tan(x), v3=True),
    Op("asin", lambda np, x: np.arcsin(x), v3=True),
    Op("acos", lambda np, x: np.arccos(x), v3=True),
    Op("atan", lambda np, x: np.arctan(x), v3=True),
    Op("sinh", lambda np, x: np.sinh(x), v3=True),
    Op("cosh", lambda np, x: np.cosh(x), v3=True),
    Op("log2", lambda np, x: np.log2(x), v3=True),
    Op("log10", lambda np, x: np.log10(x), v3=True),
    Op("erf", lambda np, x: np.vectorize(math.erf, otypes=[np.float64])(x), v3=True),
    Op("lgamma", lambda np, x: np.vectorize(math.lgamma, otypes=[np.float64])(x), v3=True),
)
# The version 3 functions of more than one operand, for templates.
FUNCS = _ops(
    Op("atan2", lambda np, y, x: np.arctan2(y, x), v3=True),
    Op("clip", lambda np, x, lo, hi: np.minimum(np.maximum(x, lo), hi), kink=True, v3=True),
)
# Version 3's functions with arguments in their domains, away from poles
# and overflow (feature "v3fn"): (pattern, has a kink).
V3_GUARDED = [("tan(tanh({}))", False), ("asin(0.9 * tanh({}))", False),
              ("acos(0.9 * tanh({}))", False), ("atan({})", False), ("sinh(tanh({}))", False),
              ("cosh(tanh({}))", False), ("log2(1 + square({}))", False),
              ("log10(1 + square({}))", False), ("erf({})", False),
              ("lgamma(1 + square({}))", False), ("lgamma(0.5 + sigmoid({}))", False),
              ("atan2(sin({0}), 1.5 + square({0}))", False), ("clip({}, -0.5, 0.75)", True)]
# Version 3's ops along an axis that keep the shape (feature of each name).
ALONG = ["softmax", "log_softmax", "cumsum"]
# Smooth and defined everywhere, whatever the argument: {} is the argument.
GUARDED_UNARY = ["exp(tanh({}))", "log(1 + square({}))", "log1p(square({}))",
                 "sqrt(1 + square({}))", "rsqrt(2 + square({}))", "expm1(tanh({}))",
                 "log(sigmoid({}))", "(({}) ** 2)", "(({}) ** 3)"]
# NaN or infinite whatever the (finite) argument: {} is a live operand.
POISON = ["sqrt(-1 - square({}))", "log(-1 - square({}))", "exp(1000 + square({}))",
          "(1 / (0 * {}))", "log(0 * square({}))", "rsqrt(0 * square({}))",
          "(square({}) * 1e300 * 1e300)"]
# f(a, b), broadcasting; printed infix when fmt has one.
BINARY = _ops(
    Op("+", lambda np, a, b: a + b, smooth=True, dtypes=("f32", "f64", "i32"), fmt="({0} + {1})"),
    Op("-", lambda np, a, b: a - b, smooth=True, dtypes=("f32", "f64", "i32"), fmt="({0} - {1})"),
    Op("*", lambda np, a, b: a * b, smooth=True, dtypes=("f32", "f64", "i32"), fmt="({0} * {1})"),
    Op("/", lambda np, a, b: a / b, fmt="({0} / {1})"),
    Op("**", lambda np, a, b: np.power(a, b), fmt="({0} ** {1})"),
    Op("pow", lambda np, a, b: np.power(a, b)),
    Op("maximum", lambda np, a, b: np.maximum(a, b), kink=True, dtypes=("f32", "f64", "i32")),
    Op("minimum", lambda np, a, b: np.minimum(a, b), kink=True, dtypes=("f32", "f64", "i32")),
)
# op(x) over all axes or op(x, axis=K); ev(np, x, axes) with axes a tuple.
REDUCE = _ops(
    Op("sum", None, smooth=True, dtypes=("f32", "f64", "i32")),
    Op("mean", None, smooth=True),
    Op("max", None, kink=True, dtypes=("f32", "f64", "i32")),
    Op("min", None, kink=True, dtypes=("f32", "f64", "i32")),
    Op("prod", None, smooth=True, v3=True),  # of (1 + 0.5 * tanh(x)): no overflow
    Op("logsumexp", None, smooth=True, v3=True),
)


# ---- sizes: an int, a name, or a name plus or minus a literal ("n - 1") ----

def dim_parts(d):
    if isinstance(d, int):
        return None, d
    name, sign, k = re.fullmatch(r"(\w+)(?: ([+-]) (\d+))?", d).groups()
    return name, (int(k) if sign == "+" else -int(k)) if sign else 0


def dim_make(name, off):
    if name is None:
        return off
    return name if off == 0 else "%s %s %d" % (name, "+" if off > 0 else "-", abs(off))


def dim_add(d, k):
    name, off = dim_parts(d)
    return dim_make(name, off + k)


def dim_subst(d, m):
    name, off = dim_parts(d)
    return d if name is None else dim_add(m[name], off)


def dim_value(d, sizes):
    name, off = dim_parts(d)
    return off + (sizes[name] if name else 0)


def dim_expr_text(d):
    """The size as an i32 value in an expression."""
    return str(d) if isinstance(d, int) or " " not in d else "(%s)" % d


class Ty:
    """A type: dtype 'f32', 'f64', 'i32' or 'bool', dims a tuple of sizes."""

    def __init__(self, dtype, dims=()):
        self.dtype = dtype
        self.dims = tuple(dims)

    @property
    def rank(self):
        return len(self.dims)

    @property
    def is_float(self):
        return self.dtype in ("f32", "f64")

    def with_dims(self, dims):
        return Ty(self.dtype, dims)

    def with_dtype(self, dtype):
        return Ty(dtype, self.dims)

    def __eq__(self, other):
        return isinstance(other, Ty) and self.dtype == other.dtype and self.dims == other.dims

    def __hash__(self):
        return hash((self.dtype, self.dims))

    def shape_list(self):
        return "[" + ", ".join(str(x) for x in self.dims) + "]"

    def __str__(self):
        return self.dtype + (self.shape_list() if self.dims else "")

    __repr__ = __str__


# ---- the program tree ----

class E:
    """An expression: op (a key of the printer and of sg_interp.EVAL), its
    operand expressions, its type, whether it depends on a non-const
    parameter (live), and op-specific attributes (a name, a literal's
    text, an axis...). `weak`: made of literals alone (spec section 3)."""
    __slots__ = ("op", "args", "ty", "live", "at")

    def __init__(self, op, args, ty, live=False, **at):
        self.op, self.args, self.ty, self.live, self.at = op, list(args), ty, live, at

    @property
    def weak(self):
        if self.op == "lit":
            return True
        args = self.args[1:] if self.op == "select" else self.args  # not its condition
        return self.op not in STRONG_OPS and bool(args) and all(
            a is not None and a.weak for a in args)

    def walk(self):
        yield self
        for a in self.args:
            if a is not None:
                yield from a.walk()

    def show(self, clean=False):
        return show(self, clean)


# ops whose result has a dtype of its own even from weak literals
STRONG_OPS = {"cast", "name", "size", "ctor", "full", "arange", "random", "split", "call",
              "transform", "index", "cmp", "logic", "not", "arg"}


def show(e, clean=False):
    """The source text of expression e."""
    if e is None:
        return ""
    a = [show(x, clean) if isinstance(x, E) else x for x in e.args]
    op, at = e.op, e.at
    if op in ("name", "lit"):
        return at["text"]
    if op == "size":
        return dim_expr_text(at["dim"])
    if op == "unary":
        return "%s(%s)" % (at["f"], a[0])
    if op == "template":  # a fixed pattern around its operand: GUARDED_UNARY
        return at["fmt"].format(*a)
    if op == "neg":
        return "(-%s)" % a[0]
    if op == "not":
        return "(!%s)" % a[0]
    if op == "binary":
        spec = BINARY[at["f"]]
        return spec.fmt.format(*a) if spec.fmt else "%s(%s, %s)" % (at["f"], a[0], a[1])
    if op in ("cmp", "logic", "idiv"):
        return "(%s %s %s)" % (a[0], at["f"], a[1])
    if op == "reduce":
        return "%s(%s%s)" % (at["f"], a[0], "" if at["axis"] is None else ", axis=%d" % at["axis"])
    if op in ("arg", "along"):
        return "%s(%s%s)" % (at["f"], a[0], "" if at["axis"] is None else ", axis=%d" % at["axis"])
    if op in ("concat", "stack"):
        return "%s(%s, axis=%d)" % (op, ", ".join(a), at["axis"])
    if op == "matmul":
        return "(%s @ %s)" % (a[0], a[1])
    if op == "transpose":
        return "transpose(%s%s)" % (a[0], "" if at["perm"] is None else ", [%s]" % ", ".join(
            map(str, at["perm"])))
    if op in ("reshape", "broadcast"):
        return "%s(%s, %s)" % (op, a[0], e.ty.shape_list())
    if op == "select":
        return "select(%s, %s, %s)" % tuple(a)
    if op == "like":
        return "%s(%s)" % (at["f"], a[0])
    if op == "cast":
        return "%s(%s)" % (e.ty.dtype, a[0])
    if op == "stop":
        return "stop_gradient(%s)" % a[0]
    if op == "ctor":
        return "%s(%s)" % (at["f"], e.ty)
    if op == "full":
        return "full(%s, %s)" % (e.ty, a[0])
    if op == "arange":
        return "arange(%s)" % e.ty.dims[0]
    if op == "random":
        return "%s(%s, %s)" % (at["f"], a[0], e.ty)
    if op == "split":
        return "split(%s, %s)" % (a[0], e.ty.dims[0])
    if op == "call":
        return "%s(%s)" % (at["fn"].name, ", ".join(a))
    if op == "transform":
        if at["t"] == "jvp_grad":  # forward over reverse: a Hessian-vector product
            return "jvp(grad(%s, wrt=%s), wrt=%s)(%s)" % (at["fn"].name, at["wrt"], at["twrt"],
                                                         ", ".join(a))
        return "%s(%s, wrt=%s)(%s)" % (at["t"], at["fn"].name, at["wrt"], ", ".join(a))
    if op == "index":
        return "%s[%s]" % (a[0], ", ".join(a[1:]))
    if op == "ix_pos":
        return a[0]
    if op == "ix_all":
        return ":"
    if op == "ix_slice":  # static bounds: texts; a run-time start: e:e + L
        if a:
            return "%s:%s + %s" % (a[0], a[0], at["len"])
        return "%s:%s" % (at["lo"], at["hi"])
    if op == "ix_gather":
        return a[0]
    if op == "take":
        return "take(%s, %s%s)" % (a[0], a[1], "" if at["axis"] is None else ", axis=%d" % at["axis"])
    if op == "take_along":
        return "take_along_axis(%s, %s, axis=%d)" % (a[0], a[1], at["axis"])
    if op == "mark":
        return a[1] if clean else a[0]
    raise ValueError("no printer for op " + op)


class S:
    """A statement: kind is let, lett (let (a, b) = call), var, assign,
    for, while, if, return. Fields by kind: names, ty (annotation or the
    var's type), e (value), target (assigned var), aop (= += -= *=), ix
    (index list of an indexed assignment), var (loop index), lo, hi,
    cond, body, orelse (list of S, or None), counter (a while's)."""

    def __init__(self, kind, **kw):
        self.kind = kind
        self.names = kw.get("names")
        self.ty = kw.get("ty")
        self.annot = kw.get("annot", False)
        self.e = kw.get("e")
        self.target = kw.get("target")
        self.aop = kw.get("aop")
        self.ix = kw.get("ix")
        self.var = kw.get("var")
        self.lo, self.hi, self.cond = kw.get("lo"), kw.get("hi"), kw.get("cond")
        self.body = kw.get("body")
        self.orelse = kw.get("orelse")
        self.es = kw.get("es")  # return's values

    def exprs(self):
        """The expressions held directly (not in nested bodies)."""
        out = [self.e, self.lo, self.hi, self.cond] + list(self.ix or []) + list(self.es or [])
        return [x for x in out if x is not None]

    def blocks(self):
        return [b for b in (self.body, self.orelse) if b is not None]

    def lines(self, clean, ind):
        sh = lambda x: show(x, clean)
        p = "  " * ind
        k = self.kind
        if k == "let":
            return [p + "let %s%s = %s;" % (self.names[0], ": %s" % self.ty if self.annot else "",
                                           sh(self.e))]
        if k == "lett":
            return [p + "let (%s) = %s;" % (", ".join(self.names), sh(self.e))]
        if k == "var":
            return [p + "var %s%s = %s;" % (self.names[0], ": %s" % self.ty if self.annot else "",
                                           sh(self.e))]
        if k == "assign":
            ix = "[%s]" % ", ".join(sh(x) for x in self.ix) if self.ix else ""
            return [p + "%s%s %s %s;" % (self.target, ix, self.aop, sh(self.e))]
        if k == "return":
            vals = [sh(x) for x in self.es]
            return [p + "return %s;" % (vals[0] if len(vals) == 1 else "(%s)" % ", ".join(vals))]
        if k == "for":
            head = p + "for %s in %s..%s {" % (self.var, sh(self.lo), sh(self.hi))
        elif k == "while":
            head = p + "while %s {" % sh(self.cond)
        elif k == "if":
            head = p + "if %s {" % sh(self.cond)
        out = [head] + [ln for s in self.body for ln in s.lines(clean, ind + 1)]
        if k == "if" and self.orelse is not None:
            if len(self.orelse) == 1 and self.orelse[0].kind == "if":  # else if
                sub = self.orelse[0].lines(clean, ind)
                return out + [p + "} else " + sub[0].lstrip()] + sub[1:]
            out += [p + "} else {"] + [ln for s in self.orelse for ln in s.lines(clean, ind + 1)]
        return out + [p + "}"]


def walk_stmts(stmts):
    for s in stmts:
        yield s
        for b in s.blocks():
            yield from walk_stmts(b)


class Param:
    def __init__(self, name, ty, const):
        self.name, self.ty, self.const = name, ty, const


class Fn:
    """A generated function: its signature (rets: a list of types, several
    for a tuple result) and its body."""

    def __init__(self, name, exported, params, rets):
        self.name, self.exported, self.params, self.rets = name, exported, params, rets
        self.body = []
        self.req = {}  # size name -> the least value the body needs (slices)
        self.has_loops = False  # itself or a function it calls (loops or branches)
        self.rules = ()  # custom derivative rules: "vjp" and "jvp" (rules_source)

    @property
    def ret(self):
        return self.rets[0]

    def ret_text(self):
        return str(self.rets[0]) if len(self.rets) == 1 else "(%s)" % ", ".join(map(str, self.rets))

    def params_text(self):
        return ", ".join("%s: %s%s" % (p.name, "const " if p.const else "", p.ty)
                         for p in self.params)

    def source(self, clean=False, name=None):
        head = "%sfn %s(%s) -> %s {" % ("export " if self.exported else "", name or self.name,
                                        self.params_text(), self.ret_text())
        body = "\n".join([head] + [ln for s in self.body for ln in s.lines(clean, 1)] + ["}"])
        return self.rules_source(clean) + body if self.rules and not name and self.can_rule() else body

    def can_rule(self):
        """Rules fit (the minimizer may have changed the signature since):
        one float result without derived sizes, a non-const float
        parameter."""
        return (len(self.rets) == 1 and self.ret.is_float and
                any(not p.const and p.ty.is_float for p in self.params) and
                all(dim_parts(x)[1] == 0 or dim_parts(x)[0] is None for x in self.ret.dims))

    def rules_source(self, clean):
        """Custom derivative rules (spec section 6b), exact by
        construction: a twin of this function without rules (its body
        printed again, so an edit of the body edits both), and rules that
        return the twin's vjp and jvp. The reference runs the body, as the
        rules change no value."""
        h, plain = self.name, self.name + "_plain"
        args = ", ".join(p.name for p in self.params)
        wrt = [p for p in self.params if not p.const and p.ty.is_float]
        cots = ["vjp(%s, wrt=%s)(%s, dy)" % (plain, p.name, args) for p in wrt]
        rets = [str(p.ty) for p in wrt]
        vjp = "fn %s_vjp(%s, y: %s, dy: %s) -> %s {\n  return %s;\n}" % (
            h, self.params_text(), self.ret, self.ret,
            rets[0] if len(rets) == 1 else "(%s)" % ", ".join(rets),
            cots[0] if len(cots) == 1 else "(%s)" % ", ".join(cots))
        tans = ", ".join("t_%s: %s" % (p.name, p.ty) for p in wrt)
        jvp = "fn %s_jvp(%s, %s) -> %s {\n  return %s;\n}" % (
            h, self.params_text(), tans, self.ret,
            " + ".join("jvp(%s, wrt=%s)(%s, t_%s)" % (plain, p.name, args, p.name) for p in wrt))
        lines = ["@%s(%s_%s)" % (r, h, r) for r in self.rules]
        return "%s\n\n%s\n\n%s\n\n%s\n" % (self.source(clean, plain), vjp, jvp, "\n".join(lines))


class Program:
    def __init__(self, funcs, smooth, features=()):
        self.funcs, self.smooth = funcs, smooth
        self.features = set(features)

    @property
    def exports(self):
        return [f for f in self.funcs if f.exported]

    @property
    def marks(self):
        return [e for f in self.funcs for s in walk_stmts(f.body) for x in s.exprs()
                for e in x.walk() if e.op == "mark"]

    def source(self, clean=False):
        mode = "smooth (finite-difference checkable)" if self.smooth else "full"
        return ("# generated by tools/gen_programs.py, %s mode%s\n" % (
            mode, ", clean variant" if clean else "") +
                "\n\n".join(f.source(clean) for f in self.funcs) + "\n")


class Var:
    """A name in scope. kind: param, let, var, index (a loop's), size.
    live: depends on a non-const parameter (for a var: may ever, decided
    at its declaration). `fixed`: a var the body must not assign (a
    while's counter). `bound`: for a loop index over 0..D, D."""

    def __init__(self, name, ty, live, kind="let", bound=None):
        self.name, self.ty, self.live, self.kind, self.bound = name, ty, live, kind, bound
        self.fixed = False


# ---- the generator ----

class Gen:
    def __init__(self, seed, smooth=False, max_depth=4, features=None):
        self.r = random.Random(seed)
        # Draws of features added after seeds were recorded in tests: a
        # program that does not take them keeps every draw of self.r.
        self.late = random.Random("late-%s" % seed)
        self.smooth = smooth
        self.max_depth = max_depth
        self.off = set(features or ())  # features left out
        self.used = set()  # features this program uses
        self.uncalled = False  # no later function calls the one being made (program())
        self.poisoning = False  # leaves may be NaN or infinite (a poison branch)
        self.loops = 0  # loops around the statement being made
        self.nest = 0  # loops and branches around it
        self.sg_depth = 0  # stop_gradients around the expression being made
        self.sg_parent = False  # the next expression's parent is a stop_gradient
        self.direct_stop = False  # the maker running was called right under one

    # ---- helpers ----
    def chance(self, p):
        return self.r.random() < p

    def on(self, feature):
        return feature not in self.off

    def use(self, *features):
        for f in features:
            self.used.add(f)
        if self.loops:
            for f in features:
                if not f.endswith("_in_loop"):
                    self.used.add(f + "_in_loop")

    def lit(self):
        return self.r.choice(["0.5", "2", "1.5", "3", "0.25", "1e-1", "2.5E+0", "1"])

    def ilit(self, lo=-3, hi=4):
        return str(self.r.randint(lo, hi))

    def fresh(self, prefix):
        self.counter[prefix] = self.counter.get(prefix, -1) + 1
        return "%s%d" % (prefix, self.counter[prefix])

    def rand_dims(self, dims, lo=0, hi=3):
        return tuple(self.r.choice(dims) for _ in range(self.r.randint(lo, hi)))

    def float_dtype(self):
        return self.fn.ret.dtype if self.fn.ret.is_float else "f64" if self.smooth else "f32"

    def some_dims(self, dtype):
        """Dims for a new value: often those of a value in scope, so that
        leaves can use it directly."""
        known = [v.ty.dims for v in self.scope if v.ty.dtype == dtype]
        if known and self.chance(0.6):
            return self.r.choice(known)
        return self.rand_dims(self.avail)

    def some_size(self):
        """A size for a contracted or reduced axis, preferring those in use."""
        known = [x for v in self.scope for x in v.ty.dims]
        return self.r.choice(known if known and self.chance(0.7) else self.avail)

    def sub_shape(self, dims):
        """A shape that broadcasts to `dims`: a suffix, some sizes made 1."""
        start = self.r.randint(0, len(dims)) if self.chance(0.4) else 0
        return tuple(1 if self.chance(0.25) else x for x in dims[start:])

    def need(self, d, k):
        """Require size d >= k at run time (recorded for d's name); False
        if d is a literal below k."""
        name, off = dim_parts(d)
        if name is None:
            return off >= k
        self.fn.req[name] = max(self.fn.req.get(name, 0), k - off)
        if off < 0:
            self.use("derived_size")
        return True

    def shrink(self, d, k):
        """The size d - k, or None where it could be negative."""
        out = dim_add(d, -k)
        return out if self.need(out, 0) else None

    def size_val(self, d):
        """Size d as an i32 value (a literal size is a weak literal)."""
        if isinstance(d, int):
            return self.ilit_e(d)
        return E("size", [], Ty("i32"), dim=d)

    def ilit_e(self, v):
        return E("lit", [], Ty("i32"), text=str(v))

    # ---- programs ----
    def program(self):
        # a program in seven has an index out of range on purpose here and
        # there (then most calls return SG_ERR_INDEX)
        self.oob = self.chance(0.15)
        funcs = []
        self.uncalled = False
        for i in range(self.r.randint(0, 3)):
            funcs.append(self.function("h%d" % i, False, funcs))
        nexp = self.r.randint(1, 2)
        for i in range(nexp):
            self.uncalled = i == nexp - 1  # functions call only earlier ones
            funcs.append(self.function("f%d" % i, True, funcs))
        # custom rules on helpers, drawn from self.late (added after seeds
        # were recorded in tests), on both directions: with one, a
        # derivative in the other is an error (spec section 6b)
        for h in funcs:
            if (self.on("custom_rules") and not h.exported and h.can_rule() and
                    self.late.random() < 0.3):
                h.rules = ("vjp", "jvp")
                self.used.add("custom_rules")
        if self.on("pairs") and self.late.random() < 0.25:
            funcs.append(self.pair_export("f%d" % nexp))
        return Program(funcs, self.smooth, self.used)

    # Losses of z = x @ w ({0}) and y ({1}), smooth, for pair_export.
    PAIR_LOSSES = ["softplus({0}) - {1} * {0}", "square({0} - {1})", "tanh({0}) * {1}",
                   "log1p(square({0})) * {1}", "sigmoid({0}) + {1} * {0}"]

    def pair_export(self, name):
        """An export that is a loss of x @ w and nothing else: a matrix-
        vector product and its adjoint (d_w = x^T g, g computed over the
        rows of z) form a fused pair (codegen/cg_gemvpair.c) only in a
        body without loops or branches, which the statements above seldom
        give. x is differentiated half the time (d_x reads g too); its
        rows are the sizes' values, so small pairs take the inline
        products, 16 f32 or 8 f64 columns the runtime's. Drawn from
        self.late, after everything else: the other functions of a seed
        stay what they were."""
        r = self.late
        dtype = "f64" if self.smooth or r.random() < 0.5 else "f32"
        n, d = r.choice(SYMS), r.choice(SYMS + LITS)
        x = Param("p0", Ty(dtype, (n, d)), r.random() < 0.5)
        w = Param("p1", Ty(dtype, (d,)), False)
        y = Param("p2", Ty(dtype, (n,)), True)
        fn = Fn(name, True, [x, w, y], [Ty(dtype)])
        z = Ty(dtype, (n,))
        xe = E("name", [], x.ty, not x.const, text="p0")
        we = E("name", [], w.ty, True, text="p1")
        loss = E("template", [E("name", [], z, True, text="t0"), E("name", [], y.ty, False, text="p2")],
                 z, True, fmt=r.choice(self.PAIR_LOSSES))
        fn.body = [S("let", names=["t0"], ty=z, e=E("matmul", [xe, we], z, True)),
                   S("return", es=[E("reduce", [loss], Ty(dtype), True, f=r.choice(["sum", "mean"]),
                                     axis=None)])]
        self.used.add("pairs")
        return fn

    def signature(self, name, exported):
        dtype = "f64" if self.smooth or self.chance(0.5) else "f32"
        syms = self.r.sample(SYMS, self.r.randint(1, 3))
        lits = LITS + (WIDE_LITS if self.on("wide_lits") else [])
        dims = syms + lits
        params = []
        for i in range(self.r.randint(1, 4)):
            pdt = dtype if self.smooth or self.chance(0.85) else ("f32" if dtype == "f64" else "f64")
            params.append(Param("p%d" % i, Ty(pdt, self.rand_dims(dims)), self.chance(0.25)))
        if self.on("i32") and self.chance(0.4):  # index data, keys, counts
            self.use("i32_param")
            params.append(Param("p%d" % len(params), Ty("i32", self.rand_dims(dims, 0, 2)),
                                self.chance(0.5)))
        if all(p.const or p.ty.dtype == "i32" for p in params):
            params[0].const = False
        bound = {x for p in params for x in p.ty.dims if isinstance(x, str)}
        avail = sorted(bound) + lits
        nres = 1
        if self.on("results") and self.chance(0.3 if not exported else 0.15):
            nres = self.r.randint(2, 3)
            self.use("results")
        rets = []
        for i in range(nres):
            if i and self.on("i32") and self.chance(0.25):
                rets.append(Ty("i32", self.rand_dims(avail, 0, 1)))
            elif exported and self.chance(0.3) or not exported and self.chance(0.4) or i:
                rets.append(Ty(dtype, self.rand_dims(avail, 1 if not i else 0, 2)))
            else:
                rets.append(Ty(dtype))
        # a derived size in the result type (f32[n - 1]), built by slicing
        if self.on("slice") and self.chance(0.1) and rets[0].rank and isinstance(rets[0].dims[0], str):
            rets[0] = rets[0].with_dims((dim_add(rets[0].dims[0], -1),) + rets[0].dims[1:])
        return Fn(name, exported, params, rets), avail

    def function(self, name, exported, helpers):
        fn, avail = self.signature(name, exported)
        self.fn, self.avail, self.helpers = fn, avail, helpers
        for r in fn.rets:
            for x in r.dims:
                self.need(x, 0)
        self.counter = {}
        self.scope = [Var(p.name, p.ty, not p.const and p.ty.is_float, "param")
                      for p in fn.params]
        if self.on("i32"):
            self.scope += [Var(x, Ty("i32"), False, "size") for x in sorted(
                {x for p in fn.params for x in p.ty.dims if isinstance(x, str)})]
        self.loops = self.nest = self._block_start = 0
        fn.body = self.block(self.r.randint(0, 5), top=True)
        fn.body.append(self.return_stmt())
        fn.has_loops = fn.has_loops or any(s.kind in ("for", "while", "if")
                                           for s in walk_stmts(fn.body))
        return fn

    def return_stmt(self):
        fn = self.fn
        es = []
        for i, ty in enumerate(fn.rets):
            e = self.expr(ty, self.max_depth, False)
            # use the last let and the vars, so that they are not dead
            extra = [v for v in self.scope if v.kind in ("let", "var") and v.ty.dtype == ty.dtype]
            if ty.is_float and extra and self.chance(0.8):
                for v in ([extra[-1]] + [v for v in extra[:-1] if v.kind == "var"])[:3]:
                    e = E("binary", [e, self.convert(v, ty)], ty, e.live or v.live, f="+")
            es.append(e)
        return S("return", es=es)

    # ---- statements ----
    def block(self, count, top=False):
        """`count` statements in a new block (scope restored after)."""
        saved = len(self.scope)
        out = []
        for _ in range(count):
            out += self.stmt()
        if not top:
            del self.scope[saved:]
        return out

    def stmt(self):
        makers = [(self.let_stmt, 3, None), (self.var_stmt, 1.5, "var"),
                  (self.assign_stmt, 2, "var"), (self.index_assign_stmt, 1.5, "index_assign"),
                  (self.for_stmt, 1.2 if self.loops < 2 else 0.2, "for"),
                  (self.while_stmt, 0.6 if self.loops < 2 else 0.1, "while"),
                  (self.if_stmt, 1 if self.nest < 3 else 0.1, "if"),
                  (self.let_tuple_stmt, 1, "results")]
        makers = [(m, w) for m, w, f in makers if f is None or self.on(f)]
        while True:
            m = self.r.choices([m for m, _ in makers], [w for _, w in makers])[0]
            out = m()
            if out is not None:
                return out

    def let_stmt(self):
        dt = self.float_dtype() if not (self.on("i32") and self.chance(0.12)) else "i32"
        ty = Ty(dt, self.some_dims(dt))
        if self.on("slice") and self.chance(0.15) and ty.rank and isinstance(ty.dims[0], str):
            d = self.shrink(ty.dims[0], 1)  # a value of a derived size, f32[n - 1]
            if d is not None:
                ty = ty.with_dims((d,) + ty.dims[1:])
        e = self.expr(ty, self.max_depth - 1, False)
        name = self.fresh("t")
        lets = [v for v in self.scope[self.block_start():] if v.kind == "let"]
        if lets and self.chance(0.15):  # shadow an earlier let of this block
            name = self.r.choice(lets).name
        annot = self.chance(0.3) or e.weak
        self.scope = [v for v in self.scope if v.name != name] + [Var(name, ty, e.live)]
        return [S("let", names=[name], ty=ty, annot=annot, e=e)]

    def block_start(self):
        return getattr(self, "_block_start", 0)

    def var_stmt(self, ty=None, live=None):
        """var v = e; (v live or frozen for good: smooth mode keeps frozen
        vars frozen)."""
        dt = self.float_dtype() if not (self.on("i32") and self.chance(0.15)) else "i32"
        if ty is None and self.on("bool_var") and self.late.random() < 0.08:  # a mask
            dt = "bool"
            self.use("bool_var")
        ty = ty or Ty(dt, self.some_dims(dt))
        frozen = not live if live is not None else (self.chance(0.3) or not ty.is_float)
        if ty.dtype == "i32" or ty.dtype == "bool":
            frozen = True
        if self.chance(0.25):  # var v: T = e (e broadcast to T)
            e, annot = self.expr(ty.with_dims(self.sub_shape(ty.dims)), self.max_depth - 1,
                                 frozen), True
        else:
            e, annot = self.expr(ty, self.max_depth - 1, frozen), False
        annot = annot or e.weak or e.ty.dims != ty.dims
        name = self.fresh("v")
        v = Var(name, ty, e.live if self.smooth else ty.is_float, "var")
        if self.smooth and not frozen and ty.is_float:
            v.live = True
        self.scope.append(v)
        self.use("var")
        return [S("var", names=[name], ty=ty, annot=annot, e=e)]

    def assignable(self, rank_min=0):
        return [v for v in self.scope if v.kind == "var" and not v.fixed and v.ty.rank >= rank_min]

    def assign_stmt(self):
        vs = self.assignable()
        if not vs:
            return self.var_stmt()
        v = self.r.choice(vs)
        aop = self.r.choice(["=", "+=", "-=", "*="] if v.ty.dtype != "bool" else ["="])
        frozen = self.smooth and not v.live
        e = self.expr(v.ty.with_dims(self.sub_shape(v.ty.dims)) if self.chance(0.3) else v.ty,
                      self.max_depth - 1, frozen)
        self.use("assign")
        return [S("assign", target=v.name, aop=aop, e=e)]

    def index_assign_stmt(self):
        vs = self.assignable(1)
        if not vs:
            return None
        v = self.r.choice(vs)
        aop = self.r.choice(["=", "+=", "-=", "*="] if v.ty.dtype != "bool" else ["="])
        plan = self.index_plan(v.ty.dims, None, v.live,
                               distinct=aop in ("=", "*=") and self.chance(0.9))
        if plan is None:
            return None
        ix, sel, gather = plan
        if gather:
            kind = "scatter_" + {"=": "set", "+=": "add", "-=": "add", "*=": "mul"}[aop]
            if not self.on(kind) or len(ix) > 1 and not self.on("scatter_multi"):
                return None
            self.use(kind)
            if len(ix) > 1:  # v[idx, 0] += e: spec section 6 allows other indices
                self.use("scatter_multi")
        else:
            self.use("index_assign")
        if any(x.op == "ix_slice" for x in ix):
            self.use("slice_assign")
        frozen = self.smooth and not v.live
        e = self.expr(v.ty.with_dims(self.sub_shape(sel)), self.max_depth - 1, frozen)
        return [S("assign", target=v.name, aop=aop, ix=ix, e=e)]

    def carried(self):
        """Statements declaring a var or two for a loop to carry (when
        none is in scope, or by chance)."""
        out = []
        if not self.assignable() or self.chance(0.5):
            out += self.var_stmt()
        return out

    def loop_body(self, count):
        self.loops += 1
        self.nest += 1
        saved = getattr(self, "_block_start", 0)
        self._block_start = len(self.scope)
        body = self.block(count)
        # the loop carries something: at least one assignment of an outer var
        if not any(s.kind == "assign" for s in body):
            body += self.assign_stmt() if self.chance(0.7) or not self.assignable(1) \
                else (self.index_assign_stmt() or self.assign_stmt())
        self._block_start = saved
        self.loops -= 1
        self.nest -= 1
        return body

    def bound_expr(self):
        """An i32 scalar for a loop bound: literal, a size, or data-dependent
        (frozen in smooth mode), small."""
        k = self.r.random()
        if k < 0.35:
            return self.ilit_e(self.r.randint(0, 3)), None
        sizes = [x for x in self.avail if isinstance(x, str)]
        if k < 0.7 and sizes:
            d = self.r.choice(sizes)
            if self.chance(0.3):
                d2 = self.shrink(d, 1)
                if d2 is not None:
                    return self.size_val(d2), d2
            return self.size_val(d), d
        self.use("data_bound")
        i = self.expr(Ty("i32"), 2, True)
        return E("idiv", [i, self.ilit_e(self.r.randint(2, 4))], Ty("i32"), False, f="%"), None

    def for_stmt(self):
        out = self.carried()
        hi, bound = self.bound_expr()
        lo = self.ilit_e(0)
        if bound is None and self.chance(0.3):
            lo = self.ilit_e(self.r.randint(-1, 2))
        name = self.fresh("i")
        saved = len(self.scope)
        self.scope.append(Var(name, Ty("i32"), False, "index", bound if lo.at["text"] == "0" else None))
        body = self.loop_body(self.r.randint(1, 3))
        del self.scope[saved:]
        self.use("for")
        if self.loops:
            self.used.add("nested_loop")
        self.fn.has_loops = True
        return out + [S("for", var=name, lo=lo, hi=hi, body=body)]

    def while_stmt(self):
        """var w = 0; while w < K && COND { ...; w += 1; }: the counter bounds
        it, COND makes the trip count depend on the data."""
        out = self.carried()
        w = self.fresh("w")
        out.append(S("var", names=[w], ty=Ty("i32"), annot=False, e=self.ilit_e(0)))
        wv = Var(w, Ty("i32"), False, "var")
        wv.fixed = True
        self.scope.append(wv)
        limit = self.ilit_e(self.r.randint(1, 4))
        cond = E("cmp", [E("name", [], Ty("i32"), text=w), limit], Ty("bool"), f="<")
        if self.chance(0.75):
            c = self.condition()
            cond = E("logic", [cond, c], Ty("bool"), f="&&")
        body = self.loop_body(self.r.randint(1, 3))
        body.append(S("assign", target=w, aop="+=", e=self.ilit_e(1)))
        self.use("while")
        self.fn.has_loops = True
        return out + [S("while", cond=cond, body=body)]

    def condition(self):
        """A bool scalar (frozen in smooth mode)."""
        return self.expr(Ty("bool"), 3, True)

    def if_stmt(self, depth=0):
        cond = self.condition()
        self.nest += 1
        saved = getattr(self, "_block_start", 0)
        self._block_start = len(self.scope)
        body = self.block(self.r.randint(1, 2))
        orelse = None
        if self.chance(0.6):
            if depth < 2 and self.chance(0.3):
                orelse = self.if_stmt(depth + 1)
                self.use("else_if")
            else:
                self._block_start = len(self.scope)
                orelse = self.block(self.r.randint(1, 2))
        self._block_start = saved
        self.nest -= 1
        self.use("if")
        if self.loops:
            self.use("if_in_loop")
        if self.nest:
            self.used.add("nested_if")
        self.fn.has_loops = True
        return [S("if", cond=cond, body=body, orelse=orelse)]

    def let_tuple_stmt(self):
        hs = [h for h in self.helpers if len(h.rets) > 1]
        if not hs:
            return None
        h = self.r.choice(hs)
        m = self.bind_call(h)
        if m is None:
            return None
        args, live = self.call_args(h, m, self.max_depth - 2, False)
        names = [self.fresh("t") for _ in h.rets]
        for name, rt in zip(names, h.rets):
            self.scope.append(Var(name, self.mapped(rt, m), live and rt.is_float))
        self.use("let_tuple")
        self.fn.has_loops = self.fn.has_loops or h.has_loops
        call = E("call", args, h.rets[0], live, fn=h)
        return [S("lett", names=names, e=call)]

    # ---- expressions: expr(ty, depth, frozen) -> E ----
    # frozen (smooth mode only): use only values that do not depend on the
    # non-const parameters, so finite differences see a constant. i32 and
    # bool values are always frozen there.
    def expr(self, ty, depth, frozen):
        if self.smooth and not ty.is_float:
            frozen = True
        if depth <= 0 or self.chance(0.15):
            return self.leaf(ty, frozen)
        makers = [(m, w) for m, w, f, dts in EXPR_MAKERS
                  if (f is None or self.on(f)) and ty.dtype in dts]
        for _ in range(100):
            maker = self.r.choices([m for m, _ in makers], [w for _, w in makers])[0]
            self.direct_stop, self.sg_parent = self.sg_parent, False
            out = maker(self, ty, depth - 1, frozen)
            if out is not None:
                assert out.ty == ty, (maker.__name__, out.ty, ty, show(out))
                if out.weak and out.op != "lit":  # exp(0.5): give it its dtype
                    out = E("cast", [out], ty, False)
                return out
        return self.leaf(ty, frozen)

    def usable(self, var, ty, frozen):
        return var.ty.dtype == ty.dtype and not (frozen and self.smooth and var.live)

    def leaf(self, ty, frozen):
        """A value in scope turned into type ty, or a literal if none fits."""
        if self.poisoning and ty.is_float and self.chance(0.3):
            bad = self.poison_leaf(ty)
            if bad:
                return bad
        vars_ = [v for v in self.scope if self.usable(v, ty, frozen)]
        exact = [v for v in vars_ if v.ty == ty]
        if exact and self.chance(0.8):
            v = self.r.choice(exact)
            return E("name", [], ty, v.live, text=v.name)
        if vars_:
            out = self.convert(self.r.choice(vars_), ty)
            if out is not None:
                return out
        if ty.dtype == "bool":
            a = self.leaf(Ty("i32", ty.dims), True)
            return E("cmp", [a, self.ilit_e(0)], ty, False, f=self.r.choice(CMP))
        if not self.smooth and ty.is_float:  # a value of the other dtype, cast
            others = [v for v in self.scope if v.ty.is_float and v.ty.dtype != ty.dtype]
            if others:
                v = self.r.choice(others)
                return E("cast", [self.convert(v, ty.with_dtype(v.ty.dtype))], ty, v.live)
        lit = self.lit() if ty.is_float else self.ilit(0, 3)
        if ty.rank:
            return E("cast", [E("broadcast", [E("lit", [], Ty(ty.dtype), text=lit)],
                                ty)], ty, False)
        return E("lit", [], ty, False, text=lit)

    def convert(self, v, ty):
        """An expression of ty's shape made from variable v (of ty's dtype)."""
        return self.reshaped(E("name", [], v.ty, v.live, text=v.name), ty)

    def reshaped(self, e, ty):
        """Expression e made into ty's shape (same dtype): itself,
        broadcast, sliced to a derived size, reduced over some axes, or
        its sum broadcast."""
        have, want, live = e.ty.dims, ty.dims, e.live
        if have == want:
            return e
        if ty.dtype == "bool":  # only compared, combined, selected on, cast
            return None
        if self.broadcasts(have, want):
            return E("broadcast", [e], ty, live)
        ix = None
        if self.on("slice") and len(have) == len(want) and all(
                a == b or dim_parts(b) == (dim_parts(a)[0], dim_parts(a)[1] - 1) for a, b in
                zip(have, want)):  # n to n - 1 by slicing
            ix = [self.slice_ix(a, b, 0) if a != b else E("ix_all", [], None) for a, b in
                  zip(have, want)]
        if ix is not None and None not in ix:  # (a literal 1 has no slice to 0: seed 43413)
            while ix and ix[-1].op == "ix_all":
                ix.pop()
            self.use("slice")
            return E("index", [e] + ix, ty, live)
        plan = self.reduce_plan(have, want)
        red = ["sum", "max", "min"] if ty.dtype == "i32" else ["sum", "mean", "max", "min"]
        if plan is not None:
            for axis in plan:
                kinky = self.smooth and live
                op = self.r.choice([o for o in red if not (kinky and REDUCE[o].kink)])
                dims = e.ty.dims[:axis] + e.ty.dims[axis + 1:]
                e = E("reduce", [e], e.ty.with_dims(dims), live, f=op, axis=axis)
            return e
        if ty.dtype == "bool":
            return None
        e = E("reduce", [e], e.ty.with_dims(()), live,
              f=self.r.choice(["sum", "mean"] if ty.is_float else ["sum"]), axis=None)
        return E("broadcast", [e], ty, live) if want else e

    @staticmethod
    def reduce_plan(have, want):
        """Axes to reduce, highest first, to turn dims `have` into `want`
        (a subsequence of it), or None."""
        if len(have) <= len(want):
            return None
        keep, j = [], 0
        for i, x in enumerate(have):
            if j < len(want) and x == want[j]:
                keep.append(i)
                j += 1
        if j < len(want):
            return None
        return [i for i in reversed(range(len(have))) if i not in keep]

    # ---- float and i32 makers ----
    def unary(self, ty, depth, frozen):
        if not ty.is_float:
            if ty.dtype != "i32":
                return None
            a = self.expr(ty, depth, frozen)
            f = self.r.choice(["abs", "sign", "neg"])
            return E("neg", [a], ty, False) if f == "neg" else E("unary", [a], ty, False, f=f)
        if self.on("v3ops") and self.on("v3fn") and self.chance(0.25):
            fmt, kink = self.r.choice(V3_GUARDED)
            a = self.expr(ty, depth, frozen or (kink and self.smooth))
            self.use("v3fn")
            return E("template", [a], ty, a.live, fmt=fmt)
        if self.smooth:
            if self.chance(0.2):
                a = self.expr(ty, depth, True)
                return E("unary", [a], ty, False,
                         f=self.r.choice([o for o in UNARY.values() if o.kink]).name)
            if self.chance(0.5):
                a = self.expr(ty, depth, frozen)
                return E("template", [a], ty, a.live, fmt=self.r.choice(GUARDED_UNARY))
        a = self.expr(ty, depth, frozen)
        if self.chance(0.15):
            return E("neg", [a], ty, a.live)
        if not self.smooth and self.chance(0.3):
            return E("template", [a], ty, a.live, fmt=self.r.choice(GUARDED_UNARY))
        ops = [o.name for o in UNARY.values() if ty.dtype in o.dtypes and
               (o.smooth or not self.smooth)]
        return E("unary", [a], ty, a.live, f=self.r.choice([o for o in ops if not UNARY[o].v3]))

    def binary(self, ty, depth, frozen):
        if ty.dtype == "i32":
            a = self.expr(ty, depth, True)
            b = self.expr(ty.with_dims(self.sub_shape(ty.dims)), depth, True)
            f = self.r.choice(["+", "-", "*", "maximum", "minimum", "//", "%"])
            if f in ("//", "%"):  # by a literal or a size, mostly nonzero
                b = self.ilit_e(self.r.choice([2, 3, -2, 4])) if self.chance(0.7) else \
                    self.size_val(self.r.choice(self.avail))
                self.use("idiv")
                return E("idiv", [a, b], ty, False, f=f)
            if self.chance(0.5):
                a, b = b, a
            return E("binary", [a, b], ty, False, f=f)
        if not ty.is_float:
            return None
        kinky = self.smooth and self.chance(0.15)  # maximum/minimum of frozen values
        a = self.expr(ty, depth, frozen or kinky)
        b = self.expr(ty.with_dims(self.sub_shape(ty.dims)), depth, frozen or kinky)
        live = a.live or b.live
        if kinky:
            return E("binary", [a, b], ty, False, f=self.r.choice(["maximum", "minimum"]))
        f = self.r.choice(["+", "-", "*", "/", "**", "pow", "maximum", "minimum"]
                          if not self.smooth else ["+", "-", "*", "/", "pow"])
        if self.smooth and f == "/":
            b = E("template", [b], b.ty, b.live, fmt="(1.5 + square({}))")
        elif self.smooth and f == "pow":
            a = E("template", [a], a.ty, a.live, fmt="(1 + square({}))")
            b = E("unary", [b], b.ty, b.live, f="tanh")
        if f in ("pow", "maximum", "minimum"):
            swap = self.chance(0.5) and not (self.smooth and f == "pow")
            x, y = (b, a) if swap else (a, b)
            return E("binary", [x, y], ty, live, f=f)
        if self.chance(0.5) and f != "**" and not (self.smooth and f == "/"):
            a, b = b, a
        return E("binary", [a, b], ty, live, f=f)

    def literal_op(self, ty, depth, frozen):
        """a op 2.5 or 2.5 op a: a weak literal takes a's dtype."""
        a = self.expr(ty, depth, frozen)
        if ty.dtype == "i32":
            c, f = self.ilit_e(self.r.randint(1, 3)), self.r.choice(["+", "-", "*"])
        else:
            c, f = E("lit", [], Ty(ty.dtype), text=self.lit()), self.r.choice(["+", "-", "*", "/"])
        if self.chance(0.5):
            return E("binary", [a, c], ty, a.live, f=f)
        if f == "/" and self.smooth:  # no division by a value
            f = "*"
        return E("binary", [c, a], ty, a.live, f=f)

    def reduction(self, ty, depth, frozen):
        if ty.dtype == "bool":
            return None
        ops = [o for o in REDUCE.values() if ty.dtype in o.dtypes and not o.v3]
        v3 = [o.name for o in REDUCE.values() if o.v3 and ty.dtype in o.dtypes and self.on(o.name)]
        if v3 and self.on("v3ops") and self.chance(0.3):
            return self.v3_reduction(ty, depth, frozen, self.r.choice(v3))
        kinky = self.chance(0.3)
        op = self.r.choice([o.name for o in ops if o.kink == kinky])
        fz = frozen or (kinky and self.smooth)
        live_out = lambda e: e.live and not (kinky and self.smooth)
        if ty.rank == 0 and self.chance(0.5):
            a = self.expr(ty.with_dims(self.some_dims(ty.dtype) or (self.some_size(),)), depth, fz)
            return E("reduce", [a], ty, live_out(a), f=op, axis=None)
        if ty.rank >= 3:
            return None
        pos = self.r.randint(0, ty.rank)
        dims = ty.dims[:pos] + (self.some_size(),) + ty.dims[pos:]
        a = self.expr(ty.with_dims(dims), depth, fz)
        axis = pos - len(dims) if self.chance(0.3) else pos
        return E("reduce", [a], ty, live_out(a), f=op, axis=axis)

    def v3_reduction(self, ty, depth, frozen, op):
        """prod (of values in (0.5, 1.5): no overflow) or logsumexp, over
        all axes or one."""
        if ty.rank == 0 and self.chance(0.5):
            dims, axis = self.some_dims(ty.dtype) or (self.some_size(),), None
        elif ty.rank >= 3:
            return None
        else:
            pos = self.r.randint(0, ty.rank)
            dims = ty.dims[:pos] + (self.some_size(),) + ty.dims[pos:]
            axis = pos - len(dims) if self.chance(0.3) else pos
        a = self.expr(ty.with_dims(dims), depth, frozen)
        if op == "prod":
            a = E("template", [a], a.ty, a.live, fmt="(1 + 0.5 * tanh({}))")
        self.use(op)
        return E("reduce", [a], ty, a.live, f=op, axis=axis)

    def along(self, ty, depth, frozen):
        """softmax, log_softmax (float) or cumsum (also i32) along one axis,
        by default the last."""
        fs = [f for f in ALONG if self.on(f) and (ty.is_float or f == "cumsum")]
        if not ty.rank or ty.dtype == "bool" or not fs:
            return None
        f = self.r.choice(fs)
        a = self.expr(ty, depth, frozen)
        k = self.r.randrange(ty.rank)
        axis = None if k == ty.rank - 1 and self.chance(0.4) else k - ty.rank if self.chance(
            0.3) else k
        self.use(f)
        return E("along", [a], ty, a.live, f=f, axis=axis)

    def concat(self, ty, depth, frozen):
        """concat of two or three pieces along one axis: a piece of 1 or 2
        (or of a third literal size), the rest of the length."""
        if not ty.rank or ty.dtype == "bool" or not self.on("concat"):
            return None
        k = self.r.randrange(ty.rank)
        sizes = [self.r.choice([1, 2])]
        if self.chance(0.3):
            sizes.append(1)
        rest = self.shrink(ty.dims[k], sum(sizes))
        if rest is None:
            return None
        sizes.append(rest)
        self.r.shuffle(sizes)
        args = [self.expr(ty.with_dims(ty.dims[:k] + (c,) + ty.dims[k + 1:]), depth, frozen)
                for c in sizes]
        self.use("concat")
        return E("concat", args, ty, any(a.live for a in args),
                 axis=k - ty.rank if self.chance(0.3) else k)

    def stack(self, ty, depth, frozen):
        """stack of L values along an axis of literal length L (1 to 3)."""
        ks = [k for k, d in enumerate(ty.dims) if isinstance(d, int) and 1 <= d <= 3]
        if not ks or ty.dtype == "bool" or not self.on("stack"):
            return None
        k = self.r.choice(ks)
        part = ty.with_dims(ty.dims[:k] + ty.dims[k + 1:])
        args = [self.expr(part, depth, frozen) for _ in range(ty.dims[k])]
        self.use("stack")
        return E("stack", args, ty, any(a.live for a in args),
                 axis=k - ty.rank if self.chance(0.3) else k)

    def matmul_shapes(self, ty):
        """Operand shapes of a product of type ty, over a new inner size:
        [k]@[k], [m,k]@[k] or [k]@[k,m], [m,k]@[k,n], and above rank 2 a
        batch [..., m, k]@[..., k, n] whose batch axes broadcast (one
        operand's a suffix of the result's, some of them 1, or none). The
        inner size is a small literal a third of the time, so that products
        of literal matrices (codegen's unrolled small products) come up."""
        k = self.r.randint(1, 4) if self.chance(0.33) else self.some_size()
        if ty.rank == 0:
            return (k,), (k,)
        if ty.rank == 1:
            return ((ty.dims[0], k), (k,)) if self.chance(0.5) else ((k,), (k, ty.dims[0]))
        batch, (m, n) = ty.dims[:-2], ty.dims[-2:]
        full, part = batch, self.sub_shape(batch) if self.chance(0.5) else batch
        ba, bb = (full, part) if self.chance(0.5) else (part, full)
        return ba + (m, k), bb + (k, n)

    def kept_operand(self, ty, frozen):
        """In a loop, half the time, a rank-2 parameter as the right
        operand of a product of type ty (read as it is or transposed), as
        an RNN reads its weights: the runtime packs such an operand once
        per call (codegen's cg_gemm_keeps). (operand, inner size) or None."""
        if not self.loops or ty.rank == 0 or not self.chance(0.5):
            return None
        n = ty.dims[-1]
        cands = [(v, tr) for v in self.scope if v.kind == "param" and v.ty.rank == 2
                 and self.usable(v, ty, frozen) for tr in (False, True)
                 if v.ty.dims[1 - tr] == n]
        if not cands:
            return None
        v, tr = self.r.choice(cands)
        e = E("name", [], v.ty, v.live, text=v.name)
        k = v.ty.dims[1 if tr else 0]
        if tr:
            e = E("transpose", [e], ty.with_dims((k, n)), v.live, perm=None)
        self.use("matmul_kept")
        return e, k

    def matmul(self, ty, depth, frozen):
        if not ty.is_float:
            return None
        kept = self.kept_operand(ty, frozen)
        if kept:
            b, k = kept
            a = self.expr(ty.with_dims(ty.dims[:-1] + (k,)), depth, frozen)
            return E("matmul", [a, b], ty, a.live or b.live)
        sa, sb = self.matmul_shapes(ty)
        a = self.expr(ty.with_dims(sa), depth, frozen)
        b = self.expr(ty.with_dims(sb), depth, frozen)
        return E("matmul", [a, b], ty, a.live or b.live)

    def transpose(self, ty, depth, frozen):
        if ty.rank < 2 and self.chance(0.7):
            return None
        if ty.rank < 2 or self.chance(0.4):  # reverse the axes
            a = self.expr(ty.with_dims(tuple(reversed(ty.dims))), depth, frozen)
            return E("transpose", [a], ty, a.live, perm=None)
        perm = list(range(ty.rank))
        self.r.shuffle(perm)
        src = [None] * ty.rank
        for i, p in enumerate(perm):
            src[p] = ty.dims[i]
        a = self.expr(ty.with_dims(src), depth, frozen)
        return E("transpose", [a], ty, a.live, perm=perm)

    def reshape(self, ty, depth, frozen):
        if ty.rank == 0 or ty.dtype == "bool":
            return None
        src = [x for x in ty.dims if x != 1 or self.chance(0.5)]
        lits = [i for i, x in enumerate(src) if isinstance(x, int) and x > 1]
        if len(lits) >= 2 and self.chance(0.5):  # merge two literal sizes
            i, j = lits[:2]
            src[i] *= src[j]
            del src[j]
        self.r.shuffle(src)
        if self.chance(0.3) or not src:
            src.insert(self.r.randint(0, len(src)), 1)
        a = self.expr(ty.with_dims(src), depth, frozen)
        return E("reshape", [a], ty, a.live)

    def broadcast(self, ty, depth, frozen):
        if ty.rank == 0:
            return None
        a = self.expr(ty.with_dims(self.sub_shape(ty.dims)), depth, frozen)
        return E("broadcast", [a], ty, a.live)

    def compare(self, ty, depth, frozen):
        """A bool value: a comparison, && || !."""
        if ty.dtype != "bool":
            return None
        if self.chance(0.25) and depth > 0:
            if self.chance(0.3):
                a = self.expr(ty, depth, True)
                return E("not", [a], ty, False)
            a = self.expr(ty, depth, True)
            b = self.expr(ty.with_dims(self.sub_shape(ty.dims)), depth, True)
            return E("logic", [a, b], ty, False, f=self.r.choice(["&&", "||"]))
        dt = self.r.choice([self.float_dtype()] * 2 + (["i32"] if self.on("i32") else []))
        a = self.expr(Ty(dt, ty.dims), depth, True)
        if self.chance(0.4):
            b = E("lit", [], Ty(dt), text=self.lit() if dt != "i32" else self.ilit())
        else:
            b = self.expr(Ty(dt, self.sub_shape(ty.dims)), depth, True)
        if self.chance(0.5):
            a, b = b, a
        return E("cmp", [a, b], ty, False, f=self.r.choice(CMP))

    def select(self, ty, depth, frozen):
        c = self.expr(Ty("bool", self.sub_shape(ty.dims)), depth - 1, True)
        a = self.expr(ty, depth, frozen)
        if self.chance(0.3):
            b = E("lit", [], Ty(ty.dtype), text=self.lit() if ty.is_float else self.ilit())
        else:
            b = self.expr(ty.with_dims(self.sub_shape(ty.dims)), depth, frozen)
        if self.chance(0.5):
            a, b = b, a
        return E("select", [c, a, b], ty, a.live or b.live)

    # ---- exactness cases: each can be left out of a program (None) ----
    def mark(self, poison, clean):
        return E("mark", [poison, clean], poison.ty, True)

    def param_leaf(self, ty):
        """A non-const parameter of ty's dtype broadcast to ty (finite: the
        checker's data is), or None."""
        ps = [p for p in self.fn.params if not p.const and p.ty.dtype == ty.dtype and
              self.broadcasts(p.ty.dims, ty.dims) and
              any(v.name == p.name for v in self.scope)]  # not shadowed by a let
        if not ps:
            return None
        p = self.r.choice(ps)
        e = E("name", [], p.ty, True, text=p.name)
        return e if p.ty.dims == ty.dims else E("broadcast", [e], ty, True)

    @staticmethod
    def broadcasts(have, want):
        lead = len(want) - len(have)
        return lead >= 0 and all(a == b or a == 1 for a, b in zip(have, want[lead:]))

    def poison_leaf(self, ty):
        """NaN or infinite, computed from a live value (so that it gets an
        adjoint); its clean variant is the live value itself."""
        q = self.param_leaf(ty)
        if q is None:
            return None
        return self.mark(E("template", [q], ty, True, fmt=self.r.choice(POISON)), q)

    def guarded(self, ty, depth, frozen):
        """select(COND, good, poison), COND true for the checker's data."""
        if not ty.is_float:
            return None
        cdims = self.sub_shape(ty.dims)
        cparams = [p for p in self.fn.params if p.ty.dtype == ty.dtype and
                   self.broadcasts(p.ty.dims, ty.dims) and
                   any(v.name == p.name for v in self.scope)]
        good = self.expr(ty, depth, frozen)
        saved = self.smooth, self.poisoning
        self.smooth, self.poisoning = False, True
        bad = self.expr(ty, depth, False)
        if not any(x.op == "mark" for x in bad.walk()):
            leaf = self.poison_leaf(ty)
            if leaf is None:
                self.smooth, self.poisoning = saved
                return None
            bad = E("binary", [bad, leaf], ty, True, f="+")
        self.smooth, self.poisoning = saved
        picks_first = self.chance(0.5)
        # A parameter is > -2 only where the checker passes it: the last
        # export's. A helper's, or an export's that the last one calls, is
        # whatever the caller computes (3 ceil(s) + 0.25, say), which could
        # choose the poison.
        if cparams and self.chance(0.7) and self.uncalled:
            p = self.r.choice(cparams)
            c = E("name", [], p.ty, False, text=p.name)
            cond = E("cmp", [c, E("lit", [], Ty(ty.dtype), text="-2")], Ty("bool", p.ty.dims),
                     f=">" if picks_first else "<")
        else:
            z = self.leaf(ty.with_dims(cdims), True)
            z = E("like", [z], z.ty, False, f="zeros_like")
            cond = E("cmp", [z, E("lit", [], Ty(ty.dtype), text="1")], Ty("bool", cdims),
                     f="<" if picks_first else ">")
        a, b = (good, bad) if picks_first else (bad, good)
        self.use("guarded")
        return E("select", [cond, a, b], ty, good.live)

    def zero_factor(self, ty, depth, frozen):
        """E + W, W exactly 0 with an infinite (sqrt(P)) or NaN
        (sqrt(P) - sqrt(P)) adjoint at P = 0, P built so that the live
        operand's gradient from it is exactly 0."""
        if not ty.is_float:
            return None

        def zero(t):
            z = E("lit", [], Ty(t.dtype), text="0")
            return E("cast", [E("broadcast", [z], t)], t) if t.rank else E("cast", [z], t)
        kind = self.r.choice(["matmul", "maximum", "minimum", "relu"])
        T = lambda fmt, *args: E("template", list(args), ty, True, fmt=fmt)
        if kind == "matmul":
            sa, sb = self.matmul_shapes(ty)
            zero_left = self.chance(0.5)
            live = self.param_leaf(ty.with_dims(sb if zero_left else sa))
            if live is None:
                return None
            z = zero(ty.with_dims(sa if zero_left else sb))
            p = E("matmul", [z, live] if zero_left else [live, z], ty, True)
        else:
            q = self.param_leaf(ty)
            if q is None:
                return None
            z = zero(ty)
            if kind == "relu":
                p = T("relu(-1 - square({}))", q)
            elif kind == "maximum":
                a = T("(-1 - square({}))", q)
                p = E("binary", [a, z] if self.chance(0.5) else [z, a], ty, True, f="maximum")
            else:
                a = T("(1 + square({}))", q)
                p = E("neg", [E("binary", [a, z] if self.chance(0.5) else [z, a], ty, True,
                                f="minimum")], ty, True)
        w = T("sqrt({})", p) if self.chance(0.5) else T("(sqrt({0}) - sqrt({0}))", p)
        e = self.expr(ty, depth, frozen)
        # a strong 0: beside a weak e (3 + sqrt(P)), a literal 0 would make
        # the clean sum an i32
        zero_clean = E("cast", [E("lit", [], Ty(ty.dtype), text="0")], Ty(ty.dtype), False)
        self.use("zero_factor")
        return E("binary", [e, self.mark(w, zero_clean)], ty, e.live, f="+")

    def sum_broadcast(self, ty, depth, frozen):
        """sum or mean of a broadcast over new leading axes (empty when a
        size is 0), which simplify rewrites to a product by the count."""
        if ty.rank >= 3 or not ty.is_float:
            return None
        extra = (self.some_size(),)
        e = self.expr(ty, depth, frozen)
        op = self.r.choice(["sum", "mean"])
        big = E("broadcast", [e], ty.with_dims(extra + ty.dims), e.live)
        return E("reduce", [big], ty, e.live, f=op, axis=None if ty.rank == 0 else 0)

    def stop(self, ty, depth, frozen):
        if ty.dtype == "bool":
            return None
        self.sg_depth += 1
        self.sg_parent = True
        a = self.expr(ty, depth, True)
        self.sg_parent = False
        self.sg_depth -= 1
        return E("stop", [a], ty, False)

    def like(self, ty, depth, frozen):
        if ty.dtype == "bool":
            return None
        a = self.expr(ty, depth, frozen)
        return E("like", [a], ty, False, f=self.r.choice(["zeros_like", "ones_like"]))

    def cast(self, ty, depth, frozen):
        """f32/f64 of another float (full mode), of an i32 or a bool; i32 of
        a float or a bool."""
        srcs = []
        if ty.is_float:
            if not self.smooth:
                srcs += ["f32", "f64"]
            if self.on("i32"):
                srcs += ["i32", "bool"]
        elif ty.dtype == "i32":
            srcs += [self.float_dtype(), "bool"]
        if not srcs:
            return None
        src = self.r.choice(srcs)
        a = self.expr(ty.with_dtype(src), depth, frozen or not ty.is_float or src in ("i32", "bool"))
        if src in ("i32", "bool") or ty.dtype == "i32":
            self.use("cast_int")
        return E("cast", [a], ty, a.live and ty.is_float and a.ty.is_float)

    def ctor(self, ty, depth, frozen):
        """zeros(T), ones(T), full(T, v), arange(n), a size as a value."""
        if ty.dtype == "bool":
            return None
        if ty.dtype == "i32" and ty.rank == 1 and self.chance(0.4):
            return E("arange", [], ty, False)
        if ty.dtype == "i32" and ty.rank == 0 and self.chance(0.5):
            return self.size_val(self.r.choice(self.avail))
        if self.chance(0.5):
            v = self.expr(ty.with_dims(self.sub_shape(ty.dims)), depth, frozen)
            self.use("full")
            return E("full", [v], ty, v.live)
        return E("ctor", [], ty, False, f=self.r.choice(["zeros", "ones"]))

    def random(self, ty, depth, frozen):
        """uniform(key, T) / normal(key, T), the key an i32 scalar or
        tensor, or one of split(key, n)."""
        if not ty.is_float:
            if ty.dtype == "i32" and ty.rank == 1 and self.chance(0.3):
                k = self.expr(Ty("i32"), depth, True)
                self.use("random")
                return E("split", [k], ty, False)
            return None
        k = self.r.random()
        if k < 0.6:
            key = self.expr(Ty("i32"), min(depth, 2), True)
        elif k < 0.8:
            key = self.expr(Ty("i32", (self.r.choice([1, 2, 3]),)), min(depth, 2), True)
        else:
            sp = E("split", [self.expr(Ty("i32"), min(depth, 1), True)], Ty("i32", (3,)), False)
            key = E("index", [sp, E("ix_pos", [self.ilit_e(self.r.randint(-3, 2))], None)],
                    Ty("i32"), False)
        self.use("random")
        return E("random", [key], ty, False, f=self.r.choice(["uniform", "normal"]))

    def argminmax(self, ty, depth, frozen):
        if ty.dtype != "i32" or ty.rank > 1:
            return None
        if ty.rank == 0 and self.chance(0.5):
            a = self.expr(Ty(self.float_dtype(), self.some_dims(self.float_dtype()) or (2,)),
                          depth, True)
            return E("arg", [a], ty, False, f=self.r.choice(["argmax", "argmin"]), axis=None)
        pos = self.r.randint(0, ty.rank)
        dims = ty.dims[:pos] + (self.some_size(),) + ty.dims[pos:]
        a = self.expr(Ty(self.r.choice([self.float_dtype(), "i32"]), dims), depth, True)
        return E("arg", [a], ty, False, f=self.r.choice(["argmax", "argmin"]), axis=pos)

    # ---- indexing ----
    def pos_index(self, d, oob_ok=True, depth=2):
        """An i32 scalar index into an axis of size d: mostly in range
        (literal, negative, the last, a loop index over d, data-dependent
        taken modulo d), out of range on purpose now and then."""
        name, off = dim_parts(d)
        lo = off if name is None else 2  # a symbolic size is mostly >= 2
        k = self.r.random()
        loopv = [v for v in self.scope if v.kind == "index" and v.bound == d]
        if loopv and k < 0.5:
            self.use("loop_index")
            return E("name", [], Ty("i32"), text=self.r.choice(loopv).name)
        if oob_ok and self.oob and self.on("oob") and k < 0.04:  # d, -d - 1, d + 1
            self.use("oob")
            kind = self.r.randint(0, 2)
            if kind == 0:
                return self.size_val(d)
            return E("binary", [self.size_val(d), self.ilit_e(1)], Ty("i32"),
                     f="+" if kind == 1 else "-") if kind == 1 else \
                E("binary", [E("neg", [self.size_val(d)], Ty("i32")), self.ilit_e(1)], Ty("i32"),
                  f="-")
        if k < 0.45:
            v = self.r.randint(-lo, lo - 1) if lo > 0 else 0
            if v < 0:
                self.use("negative_index")
            return self.ilit_e(v)
        if k < 0.6 and name is not None:
            self.use("symbolic_index")
            return self.size_val(dim_add(d, -1))
        i = self.expr(Ty("i32"), min(depth, 2), True)
        self.use("data_index")
        return E("idiv", [i, self.size_val(d)], Ty("i32"), False, f="%")

    def slice_ix(self, d, want, depth=2):
        """A slice of an axis of size d whose length is `want`, or None."""
        wn, wo = dim_parts(want)
        dn, do = dim_parts(d)
        opts = []
        if want == d:
            opts += [(None, None)]
            if dn is not None:
                opts += [("0", str(d))]
        if wn == dn and wn is not None and wo == do - 1:
            opts += [("1", None), (None, "-1"), ("1", str(d)), (None, str(dim_add(d, -1)))]
            opts += [("rt", str(want))]
        if wn == dn and wo == do - 2 and (wn is not None or wo >= 0):
            opts += [("1", "-1"), ("2", None), (None, "-2")]
        if wn is None and wo >= 1:  # a literal length from any axis
            c = wo
            if dn is None and do >= c or dn is not None:
                opts += [(None, str(c)), (str(-c), None), ("rt", str(c))]
            if dn is None and do >= c + 1 or dn is not None:
                opts += [("1", str(c + 1))]
        if not opts:
            return None
        lo, hi = self.r.choice(opts)
        if lo == "rt":  # x[e:e + L], e a run-time value: mostly in range
            self.use("slice_runtime")
            k = self.r.random()
            room = dim_add(d, 1 - dim_parts(want)[1]) if wn is None else 2  # d - L + 1 starts
            if k < 0.7:
                start = E("idiv", [self.expr(Ty("i32"), min(depth, 1), True), self.size_val(room)],
                          Ty("i32"), f="%")
            elif k < 0.85:
                start = self.ilit_e(0)
            else:  # anywhere on the axis: the window may not fit (SG_ERR_INDEX)
                start = E("idiv", [self.expr(Ty("i32"), min(depth, 1), True), self.size_val(d)],
                          Ty("i32"), f="%")
            return E("ix_slice", [start], None, len=hi)
        if lo and lo.startswith("-") or hi and hi.startswith("-"):
            self.use("slice_negative")
        if lo and not lo.lstrip("-").isdigit() or hi and not hi.lstrip("-").isdigit():
            self.use("slice_symbolic")
        return E("ix_slice", [], None, lo=lo or "", hi=hi or "")

    def index_tensor(self, dims, d, distinct=False, depth=2):
        """An i32 tensor of `dims` with entries in range for an axis of
        size d (distinct ones when asked, mostly): arange, its reverse, a
        rotation (arange(n) + s) % n, data-dependent entries modulo d, rows
        of an index matrix. (Built of literals and arange, at a literal
        size, the first three are known before the program runs: codegen
        reads a table of positions, and a permutation's adjoint is a
        gather, cg_data.c.)"""
        dt = Ty("i32", dims)
        k = self.r.random()
        if dims == (d,) and (k < 0.5 or distinct):
            a = E("arange", [], dt)
            if self.chance(0.5):  # reversed: -1 - arange(n), negative entries
                self.use("gather_reverse")
                return E("binary", [self.ilit_e(-1), a], dt, f="-")
            if self.chance(0.4):  # rotated by a literal
                self.use("gather_rotate")
                shifted = E("binary", [a, self.ilit_e(self.r.randint(1, 3))], dt, f="+")
                return E("idiv", [shifted, self.size_val(d)], dt, f="%")
            return a
        if distinct and self.chance(0.7):
            return None
        mats = [v for v in self.scope if v.ty.dtype == "i32" and v.ty.rank == 2 and
                v.ty.dims[1:] == dims]
        if mats and k < 0.7:  # a row of an index matrix
            m = self.r.choice(mats)
            row = E("index", [E("name", [], m.ty, text=m.name),
                              E("ix_pos", [self.pos_index(m.ty.dims[0], False, depth - 1)],
                                None)], dt)
            self.use("gather_row")
            base = row
        else:
            base = self.expr(dt, min(depth, 2), True)
        if self.oob and self.on("oob") and self.chance(0.03):
            self.use("oob")
            return E("binary", [E("idiv", [base, self.size_val(d)], dt, f="%"), self.size_val(d)],
                     dt, f="+")
        e = E("idiv", [base, self.size_val(d)], dt, f="%")
        if self.chance(0.2):  # negative entries: count from the end
            self.use("gather_negative")
            e = E("binary", [e, self.size_val(d)], dt, f="-")
        return e

    def index_plan(self, base, want, live, distinct=False, depth=2):
        """Indices into dims `base` giving dims `want` (None: any), as
        (index list, selected dims, gathers?), or None. At most two
        indices, at most one gather."""
        for _ in range(8):
            k = self.r.randint(1, min(2, len(base)))
            ix, out, gather = [], [], False
            for i in range(k):
                d = base[i]
                kinds = ["pos", "slice", "all"] + (["gather"] if self.on("gather") and not gather
                                                   else [])
                kind = self.r.choice(kinds)
                if kind == "pos":
                    ix.append(E("ix_pos", [self.pos_index(d, True, depth - 1)], None))
                elif kind == "all":
                    ix.append(E("ix_all", [], None))
                    out.append(d)
                elif kind == "slice":
                    if not self.on("slice"):
                        break
                    opts = [d, 1, 2] + ([dim_add(d, -1)] if not isinstance(d, int) else [])
                    L = self.r.choice(opts)
                    s = self.slice_ix(d, L, depth - 1)
                    if s is None or not self.need(L, 0):
                        break
                    ix.append(s)
                    out.append(L)
                else:
                    idims = self.r.choice([(self.some_size(),), (d,), (self.some_size(),
                                                                     self.some_size())])
                    t = self.index_tensor(idims, d, distinct, depth - 1)
                    if t is None:
                        break
                    ix.append(E("ix_gather", [t], None))
                    out += list(idims)
                    gather = True
                    if len(idims) == 2:
                        self.use("gather_matrix")
            else:
                out += list(base[k:])
                if want is not None and tuple(out) != tuple(want):
                    continue
                if len(out) > 4:
                    continue
                if all(x.op == "ix_all" for x in ix):
                    continue
                return ix, tuple(out), gather
        return None

    def indexing(self, ty, depth, frozen):
        """base[indices] of type ty: an index into a value in scope that
        fits, or into a new expression of a type chosen for it."""
        if not self.on("index"):
            return None
        cands = [v for v in self.scope if self.usable(v, ty, frozen) and v.ty.rank >= 1]
        self.r.shuffle(cands)
        for v in cands[:4]:
            plan = self.index_plan(v.ty.dims, ty.dims, v.live, False, depth)
            if plan:
                ix, _, gather = plan
                return self.index_node(E("name", [], v.ty, v.live, text=v.name), ix, ty, gather)
        # a new base: ty's dims behind one index
        k = self.r.random()
        if k < 0.4:  # a position: [X] + dims
            base = ty.with_dims((self.some_size(),) + ty.dims)
            b = self.expr(base, depth, frozen)
            return self.index_node(b, [E("ix_pos", [self.pos_index(base.dims[0], True, depth)],
                                         None)], ty, False)
        if k < 0.7 and ty.rank >= 1 and self.on("slice"):  # a slice of the first axis
            L = ty.dims[0]
            name, off = dim_parts(L)
            d = dim_add(L, 1) if name is not None and off < 0 else self.some_size() if name is None \
                else L
            s = self.slice_ix(d, L, depth)
            if s is None:
                return None
            b = self.expr(ty.with_dims((d,) + ty.dims[1:]), depth, frozen)
            return self.index_node(b, [s], ty, False)
        if ty.rank >= 1 and self.on("gather"):  # a gather of the first axis (or two)
            r = 2 if ty.rank >= 2 and self.chance(0.3) else 1
            X = self.some_size()
            t = self.index_tensor(ty.dims[:r], X, False, depth)
            if t is None:
                return None
            b = self.expr(ty.with_dims((X,) + ty.dims[r:]), depth, frozen)
            return self.index_node(b, [E("ix_gather", [t], None)], ty, True)
        return None

    def index_node(self, base, ix, ty, gather):
        self.use("index")
        if gather:
            self.use("gather")
            if base.live:
                self.use("gather_live")
        if any(x.op == "ix_slice" for x in ix):
            self.use("slice")
        return E("index", [base] + ix, ty, base.live)

    def take(self, ty, depth, frozen):
        """take(x, idx, axis=K) and take_along_axis(x, idx, axis=K)."""
        if not self.on("gather") or ty.dtype == "bool" or ty.rank == 0:
            return None
        if self.chance(0.5):  # take along axis K: ty = base[:K] + idx + base[K+1:]
            K = self.r.randint(0, ty.rank - 1)
            X = self.some_size()
            t = self.index_tensor((ty.dims[K],), X, False, depth)
            if t is None:
                return None
            b = self.expr(ty.with_dims(ty.dims[:K] + (X,) + ty.dims[K + 1:]), depth, frozen)
            axis = K - ty.rank if self.chance(0.3) else K
            self.use("take")
            return E("take", [b, t], ty, b.live, axis=axis)
        K = self.r.randint(0, ty.rank - 1)
        X = self.some_size()
        idims = tuple(x if i == K or self.chance(0.6) else 1 for i, x in enumerate(ty.dims))
        bdims = tuple(X if i == K else (1 if idims[i] != 1 and self.chance(0.3) else x)
                      for i, x in enumerate(ty.dims))
        t = self.index_tensor(idims, X, False, depth)
        if t is None:
            return None
        b = self.expr(ty.with_dims(bdims), depth, frozen)
        self.use("take_along")
        return E("take_along", [b, t], ty, b.live, axis=K)

    # ---- calls ----
    def bind_call(self, h, want_dims=(), pattern=None):
        """Map h's size names so that `pattern` (a type of h, if given)
        becomes want_dims; fill the others from this function's sizes;
        honour h's least sizes (h.req)."""
        pdims = pattern.dims if pattern else ()
        if len(pdims) != len(want_dims):
            return None
        m = {}
        for x, y in zip(pdims, want_dims):
            name, off = dim_parts(x)
            if name is None:
                if x != y:
                    return None
            else:  # x = name + off must be y: name = y - off
                val = dim_add(y, -off)
                if dim_parts(val)[1] > 0 and dim_parts(val)[0] is not None or \
                        m.setdefault(name, val) != val:
                    return None
        for p in h.params:
            for x in p.ty.dims:
                if isinstance(x, str) and x not in m:
                    m[x] = self.r.choice(self.avail)
        for x, least in h.req.items():
            if x in m and not self.need(m[x], least):
                return None
        for p in h.params:  # a parameter's size must be a plain name or a literal here too
            for x in p.ty.dims:
                if isinstance(x, str) and not self.need(m[x], 0):
                    return None
        return m

    def call_args(self, h, m, depth, frozen):
        args, live = [], False
        for p in h.params:
            pty = self.mapped(p.ty, m)
            a = self.expr(pty, depth, frozen or (p.const and self.smooth))
            args.append(a)
            live = live or (a.live and not p.const)
        return args, live

    def mapped(self, ty, m):
        return ty.with_dims([dim_subst(x, m) for x in ty.dims])

    def call(self, ty, depth, frozen):
        cands = [h for h in self.helpers if len(h.rets) == 1 and h.ret.dtype == ty.dtype]
        self.r.shuffle(cands)
        for h in cands:
            m = self.bind_call(h, ty.dims, h.ret)
            if m is not None:
                args, live = self.call_args(h, m, depth, frozen)
                self.note_call(h)
                return E("call", args, ty, live and ty.is_float, fn=h)
        if cands and self.chance(0.5):  # a call of another shape, made to fit
            h = cands[0]
            m = self.bind_call(h)
            if m is None:
                return None
            args, live = self.call_args(h, m, depth, frozen)
            self.note_call(h)
            e = E("call", args, self.mapped(h.ret, m), live and ty.is_float, fn=h)
            return self.reshaped(e, ty)
        return None

    def note_call(self, h):
        self.use("call")
        if h.has_loops:
            self.fn.has_loops = True
            if self.loops:
                self.use("call_loop_in_loop")

    def transform(self, ty, depth, frozen):
        """A transform of a helper (TRANSFORMS and VJP: grad; jvp, vjp,
        jacobian, hessian and jvp of grad in version 3) applied to
        arguments."""
        names = [t for t in TRANSFORMS if self.on(t)]
        if not ty.is_float:
            return None
        # vjp came after seeds were recorded in tests: drawn from self.late
        if self.on("vjp") and self.late.random() < 0.2:
            return VJP.make(self, ty, depth, frozen)
        if not names:
            return None
        return TRANSFORMS[self.r.choice(names)].make(self, ty, depth, frozen)


class Transform:
    """A transform of the language (spec section 6b): which helpers h and
    parameters p it applies to (`scalar`: h must return one float scalar),
    the type of its result in h's sizes, and `tangent`: whether it takes a
    tangent after h's arguments, shaped like parameter q (jvp: q = p;
    jvp(grad(h, wrt=p), wrt=q): any non-const float q). make_transform
    builds E("transform", args, ty, t=name, fn=h, wrt=p[, twrt=q]) from it;
    sg_interp.fd_transform computes the reference value."""

    def __init__(self, name, scalar, result, tangent=False, max_rank=4, cotangent=False):
        self.name, self.scalar, self.result = name, scalar, result
        self.tangent, self.max_rank = tangent, max_rank
        self.cotangent = cotangent  # takes one shaped like h's result (vjp)

    def make(self, g, ty, depth, frozen):
        return make_transform(g, self, ty, depth, frozen)


def make_transform(g, T, ty, depth, frozen):  # noqa: C901
    direct_stop = g.direct_stop
    cands = [(h, p) for h in g.helpers if len(h.rets) == 1 and h.ret.is_float and
             (h.ret.rank == 0 or not T.scalar) for p in h.params
             if not p.const and T.result(h, p).dtype == p.ty.dtype == ty.dtype and
             T.result(h, p).rank <= T.max_rank]
    g.r.shuffle(cands)
    fits = [(h, p, m) for h, p in cands
            for m in [g.bind_call(h, ty.dims, T.result(h, p))] if m is not None]
    if fits:
        h, p, m = fits[0]
    elif cands:  # a result of another shape, made to fit
        (h, p), m = cands[0], g.bind_call(cands[0][0])
        if m is None:
            return None
    else:
        return None
    # Mostly under stop_gradient (the PGD step: stop_gradient(sign(grad))
    # too); otherwise the export's gradient differentiates the transform
    # again, which must be exact too, or refused with a clear error (spec
    # section 6b).
    k = g.r.random()
    second = k < 0.25 and not g.sg_depth
    args, live = g.call_args(h, m, depth, frozen or not second)
    at = dict(t=T.name, fn=h, wrt=p.name)
    if T.tangent:
        q = p if T.name == "jvp" else g.r.choice([x for x in h.params
                                                  if not x.const and x.ty.is_float])
        t = g.expr(g.mapped(q.ty, m), depth, frozen or not second)
        args.append(t)
        live = live or t.live
        if T.name != "jvp":
            at["twrt"] = q.name
    if T.cotangent:
        s = g.expr(g.mapped(h.ret, m), depth, frozen or not second)
        args.append(s)
        live = live or s.live
    e = E("transform", args, g.mapped(T.result(h, p), m), live and second, **at)
    g.note_call(h)
    g.use(T.name)
    fitted = g.reshaped(e, ty)
    if h.has_loops:
        g.use(T.name + "_of_loops")
        if second:
            g.use("transform_of_loops_2nd")
            if T.name == "grad":
                g.use("grad_of_loops_2nd")
        elif g.sg_depth and (not direct_stop or fitted is not e):
            g.use("grad_sg_indirect")
    if not second and not g.sg_depth:
        if T.name == "grad" and k < 0.45 and e.ty.is_float:  # stop_gradient(sign(grad(...)))
            e = E("unary", [e], e.ty, False, f="sign")
            g.use("grad_sign")
            if h.has_loops:
                g.use("grad_sg_indirect")
        e = g.reshaped(E("stop", [e], e.ty, False), ty)
    else:
        e = fitted
    return e


TRANSFORMS = {t.name: t for t in [
    Transform("grad", True, lambda h, p: p.ty),
    Transform("jvp", False, lambda h, p: h.ret, tangent=True),
    Transform("jacobian", False, lambda h, p: Ty(h.ret.dtype, h.ret.dims + p.ty.dims)),
    Transform("hessian", True, lambda h, p: Ty(p.ty.dtype, p.ty.dims + p.ty.dims)),
    Transform("jvp_grad", True, lambda h, p: p.ty, tangent=True),
]}
# vjp(h, wrt=p)(args, s): the cotangent of p, s shaped like h's result
# (Gen.transform draws it apart, from Gen.late).
VJP = Transform("vjp", False, lambda h, p: p.ty, cotangent=True)

# (maker, weight, feature that turns it off (None: always on), the dtypes
# of the values it can make)
F, I, B = ("f32", "f64"), ("i32",), ("bool",)
EXPR_MAKERS = [
    (Gen.unary, 4, None, F + I), (Gen.binary, 5, None, F + I), (Gen.reduction, 2, None, F + I),
    (Gen.literal_op, 1, None, F + I), (Gen.stop, 1, None, F + I), (Gen.select, 1, None, F + I),
    (Gen.like, 0.3, None, F + I), (Gen.call, 1.5, None, F + I), (Gen.transform, 1.5, None, F),
    (Gen.broadcast, 0.7, None, F + I), (Gen.reshape, 0.7, None, F + I),
    (Gen.transpose, 0.7, None, F + I), (Gen.matmul, 1.5, None, F), (Gen.cast, 0.6, None, F + I),
    (Gen.guarded, 1.2, "guarded", F), (Gen.zero_factor, 0.8, "guarded", F),
    (Gen.sum_broadcast, 0.5, None, F), (Gen.compare, 6, None, B),
    (Gen.indexing, 2.5, "index", F + I), (Gen.take, 0.6, "gather", F + I),
    (Gen.ctor, 0.5, None, F + I), (Gen.random, 0.4, "random", F + I),
    (Gen.argminmax, 1, "i32", I),
    (Gen.along, 0.6, "v3ops", F + I), (Gen.concat, 0.5, "v3ops", F + I),
    (Gen.stack, 0.4, "v3ops", F + I),
]


def generate(seed, smooth=False, depth=4, without=()):
    """One program, a function of the arguments only."""
    return Gen(seed, smooth, depth, without).program()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1, help="seed of the first program")
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--fd", action="store_true",
                    help="smooth programs, checkable against finite differences")
    ap.add_argument("--depth", type=int, default=4, help="expression depth (default 4)")
    ap.add_argument("--out", help="directory for prog-K.sg (default: stdout)")
    ap.add_argument("--without", default="", help="features to leave out, comma-separated")
    args = ap.parse_args()
    without = [x for x in args.without.split(",") if x]
    for k in range(args.count):
        text = generate(args.seed + k, args.fd, args.depth, without).source()
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, "prog-%d.sg" % (args.seed + k)), "w") as f:
                f.write(text)
        else:
            sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
