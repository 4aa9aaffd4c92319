#!/usr/bin/env python3
"""Generate random, well-typed .sg programs (the language of
../shared/spec/LANGUAGE.md) for testing the compiler.

Generation is type-directed: every expression is built for a target type
(dtype and shape) chosen first, so each program checks by construction. A
program has a few helper functions (fn) and one or two exports, and uses the
whole language: elementwise operators and builtins, NumPy broadcasting with
symbolic and literal sizes, reductions with and without axis=, matmul,
transpose, reshape, broadcast, select over comparisons, zeros_like/ones_like,
f32/f64 casts, stop_gradient, const parameters, calls of helpers (sizes bound
per call) and grad(h, wrt=p)(...), mostly under stop_gradient (otherwise the
export's own gradient is of second order).

With `smooth=True` (the "fd" mode) a program is safe to check against
central differences: every value is f64; ops with kinks or jumps (abs, relu,
sign, floor, ceil, round, max, min, maximum, minimum, comparisons), and
everything under stop_gradient, grad or a const parameter of a helper, see
only values built from the export's const parameters (which finite
differences do not perturb); log, sqrt, division and pow get arguments away
from their poles (log(1 + square(x))...), and exp a bounded one.

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
Each poison leaf and zero factor is written as a marker; Program.source()
gives the program itself, Program.source(clean=True) the same program with
every poison leaf replaced by its live operand and every zero factor by 0,
whose values and gradients must be the same (tools/check_random.py).

Usage: gen_programs.py [--seed S] [--count N] [--fd] [--depth D] [--out DIR] [--clean]
writes DIR/prog-K.sg (or prints one program to stdout without --out).
tools/check_random.py imports this module and also uses the signatures
(Program.exports) to build a C driver for each program.
"""

import argparse
import os
import random
import sys

SYMS = ["n", "m", "k", "d"]
LITS = [1, 2, 3]

RAW_UNARY = ["exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "square", "sin", "cos",
             "tanh", "sigmoid", "softplus", "relu", "abs", "sign", "floor", "ceil", "round"]
SMOOTH_UNARY = ["square", "sin", "cos", "tanh", "sigmoid", "softplus"]
KINKY_UNARY = ["relu", "abs", "sign", "floor", "ceil", "round"]
# Smooth and defined everywhere, whatever the argument: {} is the argument.
GUARDED_UNARY = ["exp(tanh({}))", "log(1 + square({}))", "log1p(square({}))",
                 "sqrt(1 + square({}))", "rsqrt(2 + square({}))", "expm1(tanh({}))",
                 "log(sigmoid({}))", "(({}) ** 2)", "(({}) ** 3)"]
CMP = ["<", "<=", ">", ">=", "==", "!="]
# NaN or infinite whatever the (finite) argument: {} is a live operand.
POISON = ["sqrt(-1 - square({}))", "log(-1 - square({}))", "exp(1000 + square({}))",
          "(1 / (0 * {}))", "log(0 * square({}))", "rsqrt(0 * square({}))",
          "(square({}) * 1e300 * 1e300)"]
MARK = "@@%d@@"


class Ty:
    """A tensor type: dtype 'f32' or 'f64', dims a tuple of ints and names."""

    def __init__(self, dtype, dims=()):
        self.dtype = dtype
        self.dims = tuple(dims)

    @property
    def rank(self):
        return len(self.dims)

    def with_dims(self, dims):
        return Ty(self.dtype, dims)

    def with_dtype(self, dtype):
        return Ty(dtype, self.dims)

    def __eq__(self, other):
        return self.dtype == other.dtype and self.dims == other.dims

    def __hash__(self):
        return hash((self.dtype, self.dims))

    def shape_list(self):
        return "[" + ", ".join(str(x) for x in self.dims) + "]"

    def __str__(self):
        return self.dtype + (self.shape_list() if self.dims else "")


class Param:
    def __init__(self, name, ty, const):
        self.name, self.ty, self.const = name, ty, const


class Fn:
    """A generated function: its signature and its body's source lines."""

    def __init__(self, name, exported, params, ret):
        self.name, self.exported, self.params, self.ret = name, exported, params, ret
        self.lines = []

    def source(self):
        ps = ", ".join("%s: %s%s" % (p.name, "const " if p.const else "", p.ty)
                       for p in self.params)
        head = "%sfn %s(%s) -> %s {" % ("export " if self.exported else "", self.name, ps,
                                        self.ret)
        return "\n".join([head] + ["  " + ln for ln in self.lines] + ["}"])


class Program:
    def __init__(self, funcs, smooth, marks=()):
        self.funcs, self.smooth = funcs, smooth
        self.marks = list(marks)  # (text, clean text) of each marker

    @property
    def exports(self):
        return [f for f in self.funcs if f.exported]

    def source(self, clean=False):
        mode = "smooth (finite-difference checkable)" if self.smooth else "full"
        text = ("# generated by tools/gen_programs.py, %s mode%s\n" % (
            mode, ", clean variant" if clean else "") +
                "\n\n".join(f.source() for f in self.funcs) + "\n")
        for k in reversed(range(len(self.marks))):  # markers nest: outer ones first
            text = text.replace(MARK % k, self.marks[k][1 if clean else 0])
        return text


class Var:
    """A name in scope; `live`: depends on a non-const parameter."""

    def __init__(self, name, ty, live):
        self.name, self.ty, self.live = name, ty, live


class Gen:
    def __init__(self, seed, smooth=False, max_depth=4):
        self.r = random.Random(seed)
        self.smooth = smooth
        self.max_depth = max_depth
        self.marks = []
        self.uncalled = False  # no later function calls the one being made (program())
        self.poisoning = False  # leaves may be NaN or infinite (a poison branch)

    # ---- helpers ----
    def chance(self, p):
        return self.r.random() < p

    def lit(self):
        return self.r.choice(["0.5", "2", "1.5", "3", "0.25", "1e-1", "2.5E+0", "1"])

    def rand_dims(self, dims, lo=0, hi=3):
        return tuple(self.r.choice(dims) for _ in range(self.r.randint(lo, hi)))

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

    # ---- programs ----
    def program(self):
        funcs = []
        self.uncalled = False
        for i in range(self.r.randint(0, 3)):
            funcs.append(self.function("h%d" % i, False, funcs))
        nexp = self.r.randint(1, 2)
        for i in range(nexp):
            self.uncalled = i == nexp - 1  # functions call only earlier ones
            funcs.append(self.function("f%d" % i, True, funcs))
        return Program(funcs, self.smooth, self.marks)

    def signature(self, name, exported):
        dtype = "f64" if self.smooth or self.chance(0.5) else "f32"
        syms = self.r.sample(SYMS, self.r.randint(1, 3))
        dims = syms + LITS
        params = []
        for i in range(self.r.randint(1, 4)):
            pdt = dtype if self.smooth or self.chance(0.85) else ("f32" if dtype == "f64" else "f64")
            params.append(Param("p%d" % i, Ty(pdt, self.rand_dims(dims)), self.chance(0.25)))
        if all(p.const for p in params):
            params[0].const = False
        bound = {x for p in params for x in p.ty.dims if isinstance(x, str)}
        avail = sorted(bound) + LITS
        if exported and self.chance(0.3) or not exported and self.chance(0.4):
            ret = Ty(dtype, self.rand_dims(avail, 1, 2))
        else:
            ret = Ty(dtype)
        return Fn(name, exported, params, ret), avail

    def function(self, name, exported, helpers):
        fn, avail = self.signature(name, exported)
        self.fn, self.avail, self.helpers = fn, avail, helpers
        self.scope = [Var(p.name, p.ty, not p.const) for p in fn.params]
        for i in range(self.r.randint(0, 4)):
            ty = Ty(fn.ret.dtype, self.some_dims(fn.ret.dtype))
            text, live = self.expr(ty, self.max_depth - 1, False)
            vname = "t%d" % i
            if i and self.chance(0.15):  # shadow an earlier let
                vname = "t%d" % self.r.randrange(i)
            annot = (": %s" % ty) if self.chance(0.3) else ""
            fn.lines.append("let %s%s = %s;" % (vname, annot, text))
            self.scope = [v for v in self.scope if v.name != vname] + [Var(vname, ty, live)]
        text, _ = self.expr(fn.ret, self.max_depth, False)
        lets = [v for v in self.scope if v.name.startswith("t") and v.ty.dtype == fn.ret.dtype]
        if lets and self.chance(0.8):  # use the last let, so that it is not dead
            text = "(%s + %s)" % (text, self.convert(lets[-1], fn.ret))
        fn.lines.append("return %s;" % text)
        return fn

    # ---- expressions: expr(ty, depth, frozen) -> (text, live) ----
    # frozen (smooth mode only): use only values that do not depend on the
    # non-const parameters, so finite differences see a constant.
    def expr(self, ty, depth, frozen):
        if depth <= 0 or self.chance(0.15):
            return self.leaf(ty, frozen)
        makers = [(self.unary, 4), (self.binary, 5), (self.reduction, 2), (self.literal_op, 1),
                  (self.stop, 1), (self.select, 1), (self.like, 0.3), (self.call, 1.5),
                  (self.grad, 1.5), (self.broadcast, 0.7), (self.reshape, 0.7),
                  (self.transpose, 0.7), (self.matmul, 1.5), (self.cast, 0.5),
                  (self.guarded, 1.2), (self.zero_factor, 0.8), (self.sum_broadcast, 0.5)]
        while True:
            maker = self.r.choices([m for m, _ in makers], [w for _, w in makers])[0]
            out = maker(ty, depth - 1, frozen)
            if out is not None:
                return out

    def usable(self, var, ty, frozen):
        return var.ty.dtype == ty.dtype and not (frozen and self.smooth and var.live)

    def leaf(self, ty, frozen):
        """A value in scope turned into type ty, or a literal if none fits."""
        if self.poisoning and self.chance(0.3):
            bad = self.poison_leaf(ty)
            if bad:
                return bad, True
        vars_ = [v for v in self.scope if self.usable(v, ty, frozen)]
        exact = [v for v in vars_ if v.ty == ty]
        if exact and self.chance(0.8):
            v = self.r.choice(exact)
            return v.name, v.live
        if vars_:
            v = self.r.choice(vars_)
            return self.convert(v, ty), v.live
        if not self.smooth:  # a value of the other dtype, cast
            others = [v for v in self.scope if v.ty.dtype != ty.dtype]
            if others:
                v = self.r.choice(others)
                return "%s(%s)" % (ty.dtype, self.convert(v, ty.with_dtype(v.ty.dtype))), v.live
        if ty.rank:
            return "%s(broadcast(%s, %s))" % (ty.dtype, self.lit(), ty.shape_list()), False
        return self.lit(), False

    def convert(self, v, ty):
        """An expression of ty's shape made from variable v (of ty's dtype)."""
        return self.reshaped(v.name, v.ty.dims, ty, v.live)

    def reshaped(self, text, have, ty, live):
        """Expression `text` of dims `have` made into ty's shape: itself,
        broadcast, reduced over some axes, or its sum broadcast."""
        want = ty.dims
        if have == want:
            return text
        lead = len(want) - len(have)
        if lead >= 0 and all(a == b or a == 1 for a, b in zip(have, want[lead:])):
            return "broadcast(%s, %s)" % (text, ty.shape_list())
        plan = self.reduce_plan(have, want)
        if plan is not None:
            for axis in plan:
                kinky = self.smooth and live
                op = self.r.choice(["sum", "mean"] + ([] if kinky else ["max", "min"]))
                text = "%s(%s, axis=%d)" % (op, text, axis)
            return text
        text = "%s(%s)" % (self.r.choice(["sum", "mean"]), text)
        return "broadcast(%s, %s)" % (text, ty.shape_list()) if want else text

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

    def unary(self, ty, depth, frozen):
        if self.smooth:
            kinky = self.chance(0.2)
            if kinky:
                a, _ = self.expr(ty, depth, True)
                return "%s(%s)" % (self.r.choice(KINKY_UNARY), a), False
            if self.chance(0.5):
                a, live = self.expr(ty, depth, frozen)
                return self.r.choice(GUARDED_UNARY).format(a), live
        a, live = self.expr(ty, depth, frozen)
        if self.chance(0.15):
            return "(-%s)" % a, live
        if not self.smooth and self.chance(0.3):
            return self.r.choice(GUARDED_UNARY).format(a), live
        return "%s(%s)" % (self.r.choice(SMOOTH_UNARY if self.smooth else RAW_UNARY), a), live

    def binary(self, ty, depth, frozen):
        kinky = self.smooth and self.chance(0.15)  # maximum/minimum of frozen values
        a, la = self.expr(ty, depth, frozen or kinky)
        b, lb = self.expr(ty.with_dims(self.sub_shape(ty.dims)), depth, frozen or kinky)
        live = la or lb
        if kinky:
            return "%s(%s, %s)" % (self.r.choice(["maximum", "minimum"]), a, b), False
        op = self.r.choice(["+", "-", "*", "/", "**", "pow", "maximum", "minimum"]
                           if not self.smooth else ["+", "-", "*", "/", "pow"])
        if self.smooth and op == "/":
            b = "(1.5 + square(%s))" % b
        elif self.smooth and op == "pow":
            a, b = "(1 + square(%s))" % a, "tanh(%s)" % b
        if op in ("pow", "maximum", "minimum"):
            swap = self.chance(0.5) and not (self.smooth and op == "pow")
            x, y = (b, a) if swap else (a, b)
            return "%s(%s, %s)" % (op, x, y), live
        if self.chance(0.5) and op != "**" and not (self.smooth and op == "/"):
            a, b = b, a
        return "(%s %s %s)" % (a, op, b), live

    def literal_op(self, ty, depth, frozen):
        """a op 2.5 or 2.5 op a: a weak literal takes a's dtype."""
        a, live = self.expr(ty, depth, frozen)
        op, c = self.r.choice(["+", "-", "*", "/"]), self.lit()
        if self.chance(0.5):
            return "(%s %s %s)" % (a, op, c), live
        if op == "/" and self.smooth:  # no division by a value
            op = "*"
        return "(%s %s %s)" % (c, op, a), live

    def reduction(self, ty, depth, frozen):
        kinky = self.chance(0.3)
        op = self.r.choice(["max", "min"] if kinky else ["sum", "mean"])
        fz = frozen or (kinky and self.smooth)
        if ty.rank == 0 and self.chance(0.5):
            a, live = self.expr(ty.with_dims(self.some_dims(ty.dtype) or (self.some_size(),)),
                                depth, fz)
            return "%s(%s)" % (op, a), live and not (kinky and self.smooth)
        if ty.rank >= 3:
            return None
        pos = self.r.randint(0, ty.rank)
        dims = ty.dims[:pos] + (self.some_size(),) + ty.dims[pos:]
        a, live = self.expr(ty.with_dims(dims), depth, fz)
        axis = pos - len(dims) if self.chance(0.3) else pos
        return "%s(%s, axis=%d)" % (op, a, axis), live

    def matmul_shapes(self, ty):
        """Operand shapes of a product of type ty (rank 2 at most), over a
        new inner size: [k]@[k], [m,k]@[k] or [k]@[k,m], [m,k]@[k,n]."""
        k = self.some_size()
        if ty.rank == 0:
            return (k,), (k,)
        if ty.rank == 1:
            return ((ty.dims[0], k), (k,)) if self.chance(0.5) else ((k,), (k, ty.dims[0]))
        return (ty.dims[0], k), (k, ty.dims[1])

    def matmul(self, ty, depth, frozen):
        if ty.rank > 2:
            return None
        sa, sb = self.matmul_shapes(ty)
        a, la = self.expr(ty.with_dims(sa), depth, frozen)
        b, lb = self.expr(ty.with_dims(sb), depth, frozen)
        return "(%s @ %s)" % (a, b), la or lb

    def transpose(self, ty, depth, frozen):
        if ty.rank < 2 and self.chance(0.7):
            return None
        if ty.rank < 2 or self.chance(0.4):  # reverse the axes
            a, live = self.expr(ty.with_dims(tuple(reversed(ty.dims))), depth, frozen)
            return "transpose(%s)" % a, live
        perm = list(range(ty.rank))
        self.r.shuffle(perm)
        src = [None] * ty.rank
        for i, p in enumerate(perm):
            src[p] = ty.dims[i]
        a, live = self.expr(ty.with_dims(src), depth, frozen)
        return "transpose(%s, [%s])" % (a, ", ".join(map(str, perm))), live

    def reshape(self, ty, depth, frozen):
        if ty.rank == 0:
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
        a, live = self.expr(ty.with_dims(src), depth, frozen)
        return "reshape(%s, %s)" % (a, ty.shape_list()), live

    def broadcast(self, ty, depth, frozen):
        if ty.rank == 0:
            return None
        a, live = self.expr(ty.with_dims(self.sub_shape(ty.dims)), depth, frozen)
        return "broadcast(%s, %s)" % (a, ty.shape_list()), live

    def select(self, ty, depth, frozen):
        cdims = self.sub_shape(ty.dims)
        ca, _ = self.expr(ty.with_dims(cdims), depth - 1, frozen or self.smooth)
        cb = self.lit() if self.chance(0.4) else self.expr(
            ty.with_dims(self.sub_shape(cdims)), depth - 1, frozen or self.smooth)[0]
        a, la = self.expr(ty, depth, frozen)
        b, lb = (self.lit(), False) if self.chance(0.3) else self.expr(
            ty.with_dims(self.sub_shape(ty.dims)), depth, frozen)
        if self.chance(0.5):
            a, b = b, a
        return "select(%s %s %s, %s, %s)" % (ca, self.r.choice(CMP), cb, a, b), la or lb

    # ---- exactness cases: each can be left out of a program (None) ----
    def mark(self, text, clean):
        self.marks.append((text, clean))
        return MARK % (len(self.marks) - 1)

    def param_leaf(self, ty):
        """A non-const parameter of ty's dtype broadcast to ty (finite: the
        checker's data is), or None."""
        ps = [p for p in self.fn.params if not p.const and p.ty.dtype == ty.dtype and
              self.broadcasts(p.ty.dims, ty.dims) and
              any(v.name == p.name for v in self.scope)]  # not shadowed by a let
        if not ps:
            return None
        p = self.r.choice(ps)
        return p.name if p.ty.dims == ty.dims else "broadcast(%s, %s)" % (p.name, ty.shape_list())

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
        return self.mark(self.r.choice(POISON).format(q), q)

    def guarded(self, ty, depth, frozen):
        """select(COND, good, poison), COND true for the checker's data."""
        cdims = self.sub_shape(ty.dims)
        cparams = [p for p in self.fn.params if p.ty.dtype == ty.dtype and
                   self.broadcasts(p.ty.dims, ty.dims) and
                   any(v.name == p.name for v in self.scope)]
        good, live = self.expr(ty, depth, frozen)
        saved = self.smooth, self.poisoning
        self.smooth, self.poisoning = False, True
        marks = len(self.marks)
        bad, _ = self.expr(ty, depth, False)
        if len(self.marks) == marks:
            leaf = self.poison_leaf(ty)
            if leaf is None:
                self.smooth, self.poisoning = saved
                return None
            bad = "(%s + %s)" % (bad, leaf)
        self.smooth, self.poisoning = saved
        picks_first = self.chance(0.5)
        # A parameter is > -2 only where the checker passes it: the last
        # export's. A helper's, or an export's that the last one calls, is
        # whatever the caller computes (3 ceil(s) + 0.25, say), which could
        # choose the poison.
        if cparams and self.chance(0.7) and self.uncalled:
            c = self.r.choice(cparams).name
            cond = "%s %s -2" % (c, ">" if picks_first else "<")
        else:
            z, _ = self.leaf(ty.with_dims(cdims), True)
            cond = "zeros_like(%s) %s 1" % (z, "<" if picks_first else ">")
        a, b = (good, bad) if picks_first else (bad, good)
        return "select(%s, %s, %s)" % (cond, a, b), live

    def zero_factor(self, ty, depth, frozen):
        """E + W, W exactly 0 with an infinite (sqrt(P)) or NaN
        (sqrt(P) - sqrt(P)) adjoint at P = 0, P built so that the live
        operand's gradient from it is exactly 0."""
        zero = lambda t: "%s(broadcast(0, %s))" % (t.dtype, t.shape_list()) if t.rank \
            else "%s(0)" % t.dtype
        kind = self.r.choice(["matmul", "maximum", "minimum", "relu"])
        if kind == "matmul":
            if ty.rank > 2:
                return None
            sa, sb = self.matmul_shapes(ty)
            zero_left = self.chance(0.5)
            live = self.param_leaf(ty.with_dims(sb if zero_left else sa))
            if live is None:
                return None
            z = zero(ty.with_dims(sa if zero_left else sb))
            p = "(%s @ %s)" % ((z, live) if zero_left else (live, z))
        else:
            q = self.param_leaf(ty)
            if q is None:
                return None
            z = zero(ty)
            if kind == "relu":
                p = "relu(-1 - square(%s))" % q
            elif kind == "maximum":
                a, b = "(-1 - square(%s))" % q, z
                p = "maximum(%s, %s)" % ((a, b) if self.chance(0.5) else (b, a))
            else:
                a, b = "(1 + square(%s))" % q, z
                p = "(-minimum(%s, %s))" % ((a, b) if self.chance(0.5) else (b, a))
        w = "sqrt(%s)" % p if self.chance(0.5) else "(sqrt(%s) - sqrt(%s))" % (p, p)
        e, live_e = self.expr(ty, depth, frozen)
        return "(%s + %s)" % (e, self.mark(w, "0")), live_e

    def sum_broadcast(self, ty, depth, frozen):
        """sum or mean of a broadcast over new leading axes (empty when a
        size is 0), which simplify rewrites to a product by the count."""
        if ty.rank >= 3:
            return None
        extra = (self.some_size(),)
        e, live = self.expr(ty, depth, frozen)
        op = self.r.choice(["sum", "mean"])
        big = ty.with_dims(extra + ty.dims)
        text = "broadcast(%s, %s)" % (e, big.shape_list())
        if ty.rank == 0:
            return "%s(%s)" % (op, text), live
        return "%s(%s, axis=0)" % (op, text), live

    def stop(self, ty, depth, frozen):
        a, _ = self.expr(ty, depth, True)
        return "stop_gradient(%s)" % a, False

    def like(self, ty, depth, frozen):
        a, _ = self.expr(ty, depth, frozen)
        return "%s(%s)" % (self.r.choice(["zeros_like", "ones_like"]), a), False

    def cast(self, ty, depth, frozen):
        if self.smooth:
            return None
        a, live = self.expr(ty.with_dtype(self.r.choice(["f32", "f64"])), depth, frozen)
        return "%s(%s)" % (ty.dtype, a), live

    # ---- calls ----
    def bind_call(self, h, want_dims=(), pattern=None):
        """Map h's size names so that `pattern` (a type of h, if given)
        becomes want_dims; fill the others from this function's sizes."""
        pdims = pattern.dims if pattern else ()
        if len(pdims) != len(want_dims):
            return None
        m = {}
        for x, y in zip(pdims, want_dims):
            if isinstance(x, int):
                if x != y:
                    return None
            elif m.setdefault(x, y) != y:
                return None
        for p in h.params:
            for x in p.ty.dims:
                if isinstance(x, str) and x not in m:
                    m[x] = self.r.choice(self.avail)
        return m

    def call_args(self, h, m, depth, frozen):
        args, live = [], False
        for p in h.params:
            pty = self.mapped(p.ty, m)
            a, la = self.expr(pty, depth, frozen or (p.const and self.smooth))
            args.append(a)
            live = live or (la and not p.const)
        return args, live

    def mapped(self, ty, m):
        return ty.with_dims([m[x] if isinstance(x, str) else x for x in ty.dims])

    def call(self, ty, depth, frozen):
        cands = [h for h in self.helpers if h.ret.dtype == ty.dtype]
        self.r.shuffle(cands)
        for h in cands:
            m = self.bind_call(h, ty.dims, h.ret)
            if m is not None:
                args, live = self.call_args(h, m, depth, frozen)
                return "%s(%s)" % (h.name, ", ".join(args)), live
        if cands and self.chance(0.5):  # a call of another shape, made to fit
            h = cands[0]
            m = self.bind_call(h)
            args, live = self.call_args(h, m, depth, frozen)
            text = "%s(%s)" % (h.name, ", ".join(args))
            return self.reshaped(text, self.mapped(h.ret, m).dims, ty, live), live
        return None

    def grad(self, ty, depth, frozen):
        cands = [(h, p) for h in self.helpers if h.ret.rank == 0
                 for p in h.params if not p.const and p.ty.dtype == ty.dtype]
        self.r.shuffle(cands)
        fits = [(h, p, m) for h, p in cands
                for m in [self.bind_call(h, ty.dims, p.ty)] if m is not None]
        if fits:
            h, p, m = fits[0]
        elif cands:  # a gradient of another shape, made to fit
            (h, p), m = cands[0], self.bind_call(cands[0][0])
        else:
            return None
        # Mostly under stop_gradient; otherwise the export's gradient is a
        # second-order one, which must be exact too.
        second = self.chance(0.3)
        args, live = self.call_args(h, m, depth, frozen or not second)
        text = "grad(%s, wrt=%s)(%s)" % (h.name, p.name, ", ".join(args))
        if not second:
            text, live = "stop_gradient(%s)" % text, False
        return self.reshaped(text, self.mapped(p.ty, m).dims, ty, live), live


def generate(seed, smooth=False, depth=4):
    """One program, a function of the arguments only."""
    return Gen(seed, smooth, depth).program()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1, help="seed of the first program")
    ap.add_argument("--count", type=int, default=1)
    ap.add_argument("--fd", action="store_true",
                    help="smooth programs, checkable against finite differences")
    ap.add_argument("--depth", type=int, default=4, help="expression depth (default 4)")
    ap.add_argument("--out", help="directory for prog-K.sg (default: stdout)")
    args = ap.parse_args()
    for k in range(args.count):
        text = generate(args.seed + k, args.fd, args.depth).source()
        if args.out:
            os.makedirs(args.out, exist_ok=True)
            with open(os.path.join(args.out, "prog-%d.sg" % (args.seed + k)), "w") as f:
                f.write(text)
        else:
            sys.stdout.write(text + "\n")


if __name__ == "__main__":
    main()
