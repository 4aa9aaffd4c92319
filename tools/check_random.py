#!/usr/bin/python3
"""Compile random programs from tools/gen_programs.py and check them against
an independent reference (run with /usr/bin/python3: it needs NumPy).

For each of --count programs (seeds --seed, --seed+1, ...; every other one
in the smooth, finite-difference checkable mode):
  * `sgc --verify` must compile it: any error, crash or hang is a finding
    (the program is well-typed by construction), except the refusals the
    spec allows or the compiler limits with a clear error (ALLOWED below:
    second order through a loop, a body past the inlining limit);
For the first --sample of them, also, with data chosen here (symbolic sizes
bound to 0..--max-size (4), never below what the program's slices need
(at least 1 and at most --max-size above it; with larger sizes, f32 sums of
thousands of terms can differ between -O0 and -O2 by more than the 1e-5
below, which is then no finding of sgc's); floats in
[-1, 1) or all 0; i32 data in [-3, 5]):
  * the reference: tools/sg_interp.py runs each export on the data (the
    spec's meaning in NumPy, in the program's own dtypes), giving its
    values or the prediction that the call returns SG_ERR_INDEX;
  * compile at -O0, at -O2 and at -O2 --ad-memory=SIZE (--ad-memory, small
    enough to make every loop checkpoint), build a C driver generated here
    that calls every export and its _grad / _vjp on that data, and check
      - every call returns SG_OK, or SG_ERR_INDEX where the reference says
        so (and then every output is untouched and sg_last_error() names
        the function and the file), at every level;
      - the -O0 values equal the reference's (1e-7 relative in f64, 2e-3
        in f32; not where the reference took a decision within rounding
        of the other way: see sg_interp; NaN one way and a number the
        other match in a program that takes a derivative itself, where
        the reference met a non-finite value or partial: see compare);
      - the -O0 and -O2 objects agree to 1e-5 relative (NaN matching NaN;
        not where moving each sum by one rounding moves the reference's
        result: such a result depends on the order of the sums),
        and each export's value equals its gradient function's;
      - --ad-memory gives the same bits as the default (or SG_ERR_ALLOC
        with nothing written, where one iteration does not fit);
      - with --exports jvp (version 3, sgc --exports=grad,jvp,hvp): the
        whole Jacobian by forward mode (f_jvp, a column per basis tangent)
        equals the one by reverse mode (f_grad/f_vjp, a row per basis
        seed; NaN one way and a number the other match where the
        reference met a non-finite value or partial: see compare), f_jvp's
        value f's; with hvp, f_hvp's value and gradient
        equal f_grad's (ENTRY_POINTS below);
  * for smooth programs (all f64), that each gradient, <seed, f_jvp's
    tangent> and f_hvp's Hessian-vector product match a central difference
    (of f, of f_grad; Richardson-extrapolated) to 1e-6 relative,
    where the two steps agree to 1e-4 (they do not for cos of a large
    argument, which oscillates faster than the steps resolve);
  * the exactness rules (spec section 7): the program's clean variant
    (gen_programs.Program.source(clean=True): every NaN or infinite leaf in
    a branch select() does not pick replaced by its live operand, every
    zero factor with an infinite or NaN adjoint by 0) must give the same
    values and gradients (both at -O0), and exactly 0 wherever the clean
    one gives exactly 0.
Relative errors are taken against max(|a|, |b|, 1), so values near zero
are compared to an absolute tolerance.

Programs are checked in groups of --batch: their functions renamed
s<seed>_<name>, a group is one .sg file, one object per level and one
driver, which saves the per-process costs; a group that fails as a whole
is retried program by program. Findings (the program, the command and what
went wrong) are printed and the programs (and clean variants) written to
WORK/findings/; a finding that matches a known open issue (KNOWN below:
its message and the program's constructs) is counted as known, not new.
The exit status is 1 if there is a new finding. To shrink one:
`tools/minimize_program.py --seed S [--fd]`.

  check_random.py [--count 30] [--sample 10] [--seed 1] [--batch 20]
                  [--work DIR] [--depth 4] [--zero-sizes 0.2] [--max-size 4]
                  [--timeout 120]
                  [--without FEATURES] [--ad-memory 512] [--jobs 1]
                  [--sgc PATH] [--cc "CC FLAGS"] [--rtlib "LIBS"]

test/fuzz/random_programs*.test run fixed-seed sets under lit; run it from
the repository with a larger --count for a longer search, e.g.
`/usr/bin/python3 tools/check_random.py --count 500 --sample 500 --seed 1000`.
"""

import argparse
import math
import os
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time

sys.dont_write_bytecode = True  # no tools/__pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gen_programs  # noqa: E402
import numpy as np  # noqa: E402
import sg_interp  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OPT_RTOL = 1e-5
FD_RTOL = 1e-6
FD_ELEMENTS = 512  # central differences per parameter, at most (an even sample)
# seconds for the reference's three runs of one export: sg_interp's
# finite-difference Hessian of a program over [24, 24] took over 10
# minutes (seed 71221 with --max-size 24); past it, the levels are only
# compared with each other, as for a fragile export
REFERENCE_SECONDS = 60
REF_RTOL = {"f64": 1e-7, "f32": 2e-3}
LOOSE = 100  # REF_RTOL's factor where the reference took second differences
SG_OK, SG_ERR_ALLOC, SG_ERR_INDEX = 0, 6, 7
SENTINEL = 7777.0  # every output is filled with it before a call

# Failures of programs the spec allows the compiler to refuse: (what,
# constructs one of which the program must use, regular expression on the
# finding).
ALLOWED = [
    ("second order through loops or branches refused with a clear error (spec 6)",
     ("grad_of_loops_2nd",), r"error: grad\(.*second order.*not implemented"),
    ("reverse over reverse through a loop refused, naming jvp(grad(...)) (spec 6b)",
     ("transform_of_loops_2nd",),
     r"error: reverse mode cannot differentiate a gradient through a loop again"),
    ("prod's third derivative refused with a clear error (docs/language.md, prod)",
     ("prod",), r"error: the third derivative of 'prod' is not implemented"),
    # transforms of functions that call transforms, each inlined at every
    # call (seed 77036 at depth 3: jacobian twice of a helper calling
    # grad, hessian and vjp of two others, under --exports=hvp)
    ("a body past the inlining limit refused with a clear error",
     ("grad", "jvp", "vjp", "jacobian", "hessian", "jvp_grad"),
     r"error: '\w+' is too large once its calls are inlined"),
]
# Open issues: failures that are known and being fixed, counted apart
# from new findings (what, constructs one of which the program must use, or
# () for any program, regular expression). Remove an entry when its fix
# lands.
KNOWN = []


class Finding(Exception):
    pass


STATS = {"adm_alloc": 0, "cancelled": 0, "slow_reference": 0}


class ReferenceTimeout(BaseException):
    """The reference ran past REFERENCE_SECONDS (a BaseException: the
    reference's `except Exception` must not take it for a tool's bug)."""


def on_alarm(signum, frame):
    raise ReferenceTimeout()
ADM_LEVEL = ["O2"]  # --adm-level, set by main


def run(cmd, timeout, what):
    """Run cmd; a timeout, a signal or a non-zero status is a Finding."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout, text=True, errors="replace")
    except subprocess.TimeoutExpired:
        raise Finding("%s: no result after %d s (hang?)\n  $ %s" % (what, timeout,
                                                                  " ".join(cmd)))
    if p.returncode != 0:
        how = ("killed by signal %d" % -p.returncode if p.returncode < 0
               else "exit status %d" % p.returncode)
        raise Finding("%s: %s\n  $ %s\n%s%s" % (what, how, " ".join(cmd),
                                               p.stdout[-2000:], p.stderr[-2000:]))
    return p.stdout


# ---- data and the reference ----

CTYPE = {"f32": "float", "f64": "double", "i32": "int32_t"}
SGDT = {"f32": "SG_F32", "f64": "SG_F64", "i32": "SG_I32"}


class Call:
    """One export's arguments, its seeds (for _vjp) and what the reference
    says: values (a list per result), or `error` (SG_ERR_INDEX), or
    `broken` (the reference itself failed: a bug of the tools)."""

    def __init__(self, fn, rng, zero, max_size=4):
        self.fn = fn
        sizes = {}
        for p in fn.params:
            for x in p.ty.dims:
                if isinstance(x, str) and x not in sizes:
                    least = fn.req.get(x, 0)
                    sizes[x] = 0 if least == 0 and rng.random() < zero else \
                        rng.randint(max(least, 1), max(least, 1) + max_size - 1)
        self.sizes = sizes
        conc = lambda ty: tuple(gen_programs.dim_value(x, sizes) for x in ty.dims)
        self.shape = conc
        self.args = []
        for p in fn.params:
            n = int(np.prod(conc(p.ty)))
            if p.ty.dtype == "i32":
                a = [rng.randint(-3, 5) for _ in range(n)]
            elif rng.random() < 0.1:
                a = [0.0] * n
            else:
                a = [rng.uniform(-1, 1) for _ in range(n)]
            self.args.append(np.array(a, sg_interp.DT[p.ty.dtype]).reshape(conc(p.ty)))
        self.seeds = [np.array([rng.uniform(-1, 1) for _ in range(int(np.prod(conc(r))))],
                               sg_interp.DT[r.dtype]).reshape(conc(r)) if r.is_float else None
                      for r in fn.rets]
        # tangents (f_jvp) and Hessian vectors (f_hvp) of the differentiable
        # parameters, from an rng of their own: the data above stay as they were
        trng = random.Random("%s %s" % (fn.name, sorted(sizes.items())))
        self.tangents = [np.array([trng.uniform(-1, 1) for _ in range(int(np.prod(conc(p.ty))))],
                                  sg_interp.DT[p.ty.dtype]).reshape(conc(p.ty))
                         for p in self.diff]
        self.values = self.error = self.broken = None
        self.fragile = self.dead = self.loose = self.edgy = self.unstable = self.slow = False

    def reference(self, prog):
        """The reference run, a second one with wider floats and a third
        with each sum moved by one rounding: where rounding moves the result
        (a cancellation then a jump: pow or sqrt of what should be 0, a
        comparison of equal values computed two ways, an exact cancellation
        raised to a large power), the compiled code's own rounding may too,
        so it is fragile."""
        runs = []
        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.alarm(REFERENCE_SECONDS)
        try:
            for wide, jitter in ((False, False), (True, False), (False, True)):
                it = sg_interp.Interp(prog, wide=wide, jitter=jitter)
                try:
                    runs.append(("ok", it.run(self.fn, self.args)))
                except sg_interp.IndexErr as err:
                    runs.append(("error", err))
                except sg_interp.TooLong:
                    raise ReferenceTimeout() from None
                except Exception as err:  # noqa: BLE001 -- a bug of the generator or the interpreter
                    self.broken = "%s: %s" % (type(err).__name__, err)
                    return
                if not wide and not jitter:
                    self.fragile, self.loose, self.edgy = it.fragile, it.loose, it.edgy
        except ReferenceTimeout:
            self.fragile = self.slow = True
            STATS["slow_reference"] += 1
            return
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        (kind, out) = runs[0]
        if kind == "error":
            self.error, self.dead = str(out), out.dead
        else:
            self.values = out
        for (kind2, out2), jitter in zip(runs[1:], (False, True)):
            if kind != kind2:
                self.fragile = True
            elif kind == "ok":
                for r, a, b in zip(self.fn.rets, out, out2):
                    if a.dtype.kind == "f" and not all(close(float(x), float(y), self.rtol(r) / 4)
                                                       for x, y in zip(a.ravel(), b.ravel())):
                        self.fragile = True
                        # ill-conditioned in the order of sums: -O0 and -O2,
                        # which add in other orders, may differ as much
                        self.unstable |= jitter

    def rtol(self, r):
        """How close result r must be to the reference (wider where the
        reference took second differences)."""
        return REF_RTOL[r.dtype] * (LOOSE if self.loose else 1)

    @property
    def diff(self):
        return [p for p in self.fn.params if not p.const and p.ty.is_float]


def c_array(name, ctype, a):
    flat = np.asarray(a).ravel()
    if ctype == "int32_t":
        items = [str(int(x)) for x in flat]
    else:
        items = ["%s%s" % (float(x).hex(), "f" if ctype == "float" else "") for x in flat]
    return "static %s %s[%d] = {%s};" % (ctype, name, max(len(items), 1),
                                         ", ".join(items) or "0")


def c_shape(dims):
    return "{%s}" % ", ".join(str(x) for x in dims) if dims else "{0}"


DRIVER_HEAD = r"""/* generated by tools/check_random.py */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "sg_runtime.h"
#include "%s"

static inline int64_t count(const sg_tensor *t) {
  int64_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= t->shape[i];
  return n;
}
static inline double get(const sg_tensor *t, int64_t i) {
  switch (t->dtype) {
  case SG_F32: return ((float *)t->data)[i];
  case SG_F64: return ((double *)t->data)[i];
  default: return ((int32_t *)t->data)[i];
  }
}
static inline void set(sg_tensor *t, int64_t i, double v) {
  switch (t->dtype) {
  case SG_F32: ((float *)t->data)[i] = (float)v; break;
  case SG_F64: ((double *)t->data)[i] = v; break;
  default: ((int32_t *)t->data)[i] = (int32_t)v; break;
  }
}
/* a tensor of dtype and shape holding data (or the sentinel everywhere) */
static sg_tensor make(int dtype, int rank, const int64_t *shape, const void *data) {
  sg_tensor t;
  memset(&t, 0, sizeof t);
  int64_t n = 1;
  for (int i = 0; i < rank; i++) n *= t.shape[i] = shape[i];
  t.rank = rank;
  t.dtype = dtype;
  size_t esize = dtype == SG_F64 ? 8 : 4;
  t.data = calloc((size_t)n + 1, esize);
  if (data) memcpy(t.data, data, (size_t)n * esize);
  else for (int64_t i = 0; i < n; i++) set(&t, i, SENTINEL);
  return t;
}
static int untouched(const sg_tensor *t) {
  for (int64_t i = 0; i < count(t); i++)
    if (get(t, i) != SENTINEL) return 0;
  return 1;
}
static void print(const char *label, const sg_tensor *t) {
  for (int64_t i = 0; i < count(t); i++)
    printf("%%s %%lld %%.17g\n", label, (long long)i, get(t, i));
}
static void status(const char *label, int rc, int ok) {
  printf("%%s.rc 0 %%d\n", label, rc);
  if (rc != SG_OK) {
    printf("%%s.untouched 0 %%d\n", label, ok);
    printf("%%s.msg 0 %%s\n", label, sg_last_error());
  }
}
static inline double dot(const sg_tensor *a, const sg_tensor *b) {
  double s = 0;
  for (int64_t i = 0; i < count(a); i++) s += get(a, i) * get(b, i);
  return s;
}
"""


def driver_source(entries, header):
    out = [DRIVER_HEAD.replace("SENTINEL", repr(SENTINEL)) % header]
    mains = []
    for e in entries:
        for c in e.calls:
            mains.append(driver_call(e, c, out))
    out += ["int main(void) {"] + mains + ["  return 0;", "}", ""]
    return "\n".join(out)


class Ctx:
    """What the C code of one export's run_F can use: its outputs' names,
    `mk` (declare a tensor from data or the sentinel), the arrays of its
    data."""

    def __init__(self, c):
        f = c.fn
        self.F = f.name
        nres = len(f.rets)
        self.outs = ["out"] if nres == 1 else ["out%d" % i for i in range(nres)]
        # seeds of the float results, numbered by result position (spec 9)
        self.seeds = [("seed" if nres == 1 else "seed%d" % i, i) for i, r in enumerate(f.rets)
                      if r.is_float]
        self.mk = lambda name, ty, data: \
            "  int64_t s_%s[] = %s;\n  sg_tensor %s = make(%s, %d, s_%s, %s);" % (
                name, c_shape(c.shape(ty)), name, SGDT[ty.dtype], ty.rank, name, data)
        self.args = ["&" + p.name for p in f.params]


class EntryPoint:
    """A derivative entry point of an export (spec section 9) that the
    driver calls after the export itself and the checker checks. Version 3
    adds f_jvp and f_hvp (sgc --exports=grad,jvp,hvp): one subclass each,
    appended to ENTRY_POINTS, and the export's objects compiled with that
    flag. What is printed under the entry's name is compared between -O0,
    -O2, --ad-memory and the clean variant like everything else; `check`
    adds what only this entry point means (against finite differences, or
    against another entry point: <seed, J t> of a jvp equals <J^T seed, t>
    of the vjp)."""

    def name(self, c):
        """Its C name for call c's export, or None (none generated)."""
        raise NotImplementedError

    def data(self, entry, c, ctx, out):
        """Static arrays and functions it needs (file scope)."""

    def c_code(self, entry, c, ctx, out):
        """Lines of run_F: call it on c's data, status(NAME, rc, untouched),
        print its outputs as NAME.LABEL, free what it made."""
        raise NotImplementedError

    def check(self, entry, c, lv, ok):
        """Its own checks; lv: level -> label -> values; ok[level, name]:
        whether that call succeeded."""


class GradEntry(EntryPoint):
    """f_grad (a float scalar result) or f_vjp (seeds for the float
    results): the value again (it must equal f's) and d_ of every non-const
    float parameter; in the smooth mode, central differences of f itself
    (NAME.fd_p) to hold them to."""

    def name(self, c):
        f = c.fn
        if not any(r.is_float for r in f.rets):
            return None
        return f.name + ("_grad" if len(f.rets) == 1 and f.ret.rank == 0 else "_vjp")

    def data(self, entry, c, ctx, out):
        if self.name(c).endswith("_vjp"):
            for s, i in ctx.seeds:
                out.append(c_array("%s_%s" % (ctx.F, s), CTYPE[c.fn.rets[i].dtype], c.seeds[i]))
        if entry.prog.smooth:
            self.eval_fn(c, ctx, out)

    def eval_fn(self, c, ctx, out):
        """eval_F: the value as one number, out itself or the sum of <seed,
        out>, for the finite differences."""
        f, F, vjp = c.fn, ctx.F, self.name(c).endswith("_vjp")
        out.append("static double eval_%s(%s%s) {" % (
            F, ", ".join("const sg_tensor *%s" % p.name for p in f.params),
            "".join(", const sg_tensor *%s" % s for s, _ in ctx.seeds) if vjp else ""))
        for o, r in zip(ctx.outs, f.rets):
            out.append(ctx.mk(o, r, "NULL"))
        out.append("  int rc = %s(%s, %s);" % (F, ", ".join(p.name for p in f.params),
                                               ", ".join("&" + o for o in ctx.outs)))
        out.append("  double v = rc ? NAN : 0;")
        for s, i in ctx.seeds:
            out.append("  v += %s;" % ("dot(%s, &%s)" % (s, ctx.outs[i]) if vjp else "get(&out, 0)"))
        out.append("  " + " ".join("free(%s.data);" % o for o in ctx.outs))
        out.append("  return v;")
        out.append("}")

    def c_code(self, entry, c, ctx, out):
        f, F, G = c.fn, ctx.F, self.name(c)
        vjp = G.endswith("_vjp")
        seeds = [s for s, _ in ctx.seeds] if vjp else []
        gouts = ["g" + o for o in ctx.outs]
        for o, r in zip(gouts, f.rets):
            out.append(ctx.mk(o, r, "NULL"))
        for s, i in ctx.seeds if vjp else []:
            out.append(ctx.mk(s, f.rets[i], "%s_%s" % (F, s)))
        for p in c.diff:
            out.append(ctx.mk("d_" + p.name, p.ty, "NULL"))
        written = gouts + ["d_" + p.name for p in c.diff]
        out.append("  rc = %s(%s);" % (G, ", ".join(ctx.args + ["&" + s for s in seeds] +
                                                   ["&" + w for w in written])))
        out.append('  status("%s", rc, %s);' % (G, " && ".join("untouched(&%s)" % w
                                                               for w in written)))
        out.append("  if (rc == SG_OK) {")
        for o, go in zip(ctx.outs, gouts):
            out.append('    print("%s.%s", &%s);' % (G, o, go))
        for p in c.diff:
            out.append('    print("%s.d_%s", &d_%s);' % (G, p.name, p.name))
        out.append("  }")
        if entry.prog.smooth:
            ev = "eval_%s(%s)" % (F, ", ".join(ctx.args + ["&" + s for s in seeds]))
            out.append("  if (rc == SG_OK) {")
            for p in c.diff:
                # every element up to FD_ELEMENTS, else an even sample of
                # them (NaN, unchecked, for the rest): each costs 4 calls,
                # and a [24, 24, 24] parameter took minutes at -O0
                out.append("  for (int64_t i = 0, n_ = count(&%s), step_ = (n_ + %d) / %d; i < n_; i++) {"
                           % (p.name, FD_ELEMENTS - 1, FD_ELEMENTS))
                out.append('    if (i %% step_) { printf("%s.fd_%s %%lld nan\\n", (long long)i); continue; }'
                           % (G, p.name))
                out.append("    double x = get(&%s, i), h = 1e-3 * fmax(1.0, fabs(x)), d[2], "
                           "big = 0;" % p.name)
                out.append("    for (int k = 0; k < 2; k++, h /= 2) {")
                out.append("      set(&%s, i, x + h);" % p.name)
                out.append("      double fp = %s;" % ev)
                out.append("      set(&%s, i, x - h);" % p.name)
                out.append("      double fm = %s;" % ev)
                out.append("      d[k] = (fp - fm) / (2 * h);")
                out.append("      big = fmax(big, fmax(fabs(fp), fabs(fm)) / h);")
                out.append("    }")
                out.append("    set(&%s, i, x);" % p.name)
                # Richardson's estimate; NaN (not checked) where the two
                # steps disagree, as for cos of a large argument, whose
                # oscillation the steps cannot resolve, or where f is so
                # large that its rounding swamps the steps' effect
                out.append("    double r = (4 * d[1] - d[0]) / 3;")
                out.append("    if (!(fabs(d[1] - d[0]) <= 1e-4 * fmax(1.0, fabs(r))) ||")
                out.append("        4e-16 * big > 1e-7 * fmax(1.0, fabs(r))) r = NAN;")
                out.append('    printf("%s.fd_%s %%lld %%.17g\\n", (long long)i, r);'
                           % (G, p.name))
                out.append("  }")
            out.append("  }")
        for w in written + seeds:
            out.append("  free(%s.data);" % w)

    def check(self, entry, c, lv, ok):
        F, G = c.fn.name, self.name(c)
        for lvl in ("O0", "O2"):
            v = lv.get(lvl)
            if v is None or not ok[lvl, G]:
                continue
            for o in Ctx(c).outs:
                compare(v.get("%s.%s" % (F, o), []), v.get("%s.%s" % (G, o), []),
                        OPT_RTOL, "-%s: the results of %s and of %s" % (lvl, F, G))
            if entry.prog.smooth:
                for p in c.diff:
                    compare(v.get("%s.d_%s" % (G, p.name), []), v.get("%s.fd_%s" % (G, p.name), []),
                            FD_RTOL, "-%s: d_%s of %s and the finite difference"
                            % (lvl, p.name, F), finite_only=True)


def shift_code(c, ctx, vec, step, out):
    """C lines setting every differentiable parameter to its data plus
    `step` times its vector `vec`_p (the direction of a finite difference)."""
    for p in c.diff:
        out.append("    for (int64_t i = 0; i < count(&%s); i++) set(&%s, i, %s_%s[i] + (%s) * "
                   "get(&%s_%s, i));" % (p.name, p.name, ctx.F, p.name, step, vec, p.name))


def tangent_data(c, ctx, vec, out):
    """Static arrays of c's tangents (one per differentiable parameter)."""
    for p, t in zip(c.diff, c.tangents):
        out.append(c_array("%s_%s_%s" % (ctx.F, vec, p.name), CTYPE[p.ty.dtype], t))


class JvpEntry(EntryPoint):
    """f_jvp (sgc --exports=...,jvp): the value again and the tangent of
    every float result along the call's tangents (NAME.t_out); the whole
    Jacobian by columns (f_jvp with each basis tangent, NAME.Jf) and by rows
    (f_grad / f_vjp with each basis seed, NAME.Jr), which must be equal
    (spec section 7, v3: up to the order of sums); in the smooth mode,
    <seed, J t> against central differences of f along t."""

    def name(self, c):
        if not c.diff or not any(r.is_float for r in c.fn.rets):
            return None
        return c.fn.name + "_jvp"

    def data(self, entry, c, ctx, out):
        tangent_data(c, ctx, "t", out)

    def c_code(self, entry, c, ctx, out):
        f, F, J = c.fn, ctx.F, self.name(c)
        G = GradEntry().name(c)
        rets = [(o, r) for o, r in zip(ctx.outs, f.rets) if r.is_float]
        for p in c.diff:
            out.append(ctx.mk("t_" + p.name, p.ty, "%s_t_%s" % (F, p.name)))
        jouts = ["j" + o for o in ctx.outs]
        touts = ["t_" + o for o, _ in rets]
        for o, r in zip(jouts, f.rets):
            out.append(ctx.mk(o, r, "NULL"))
        for (o, r), t in zip(rets, touts):
            out.append(ctx.mk(t, r, "NULL"))
        call = "%s(%s)" % (J, ", ".join(ctx.args + ["&t_" + p.name for p in c.diff] +
                                         ["&" + x for x in jouts + touts]))
        out.append("  rc = %s;" % call)
        out.append('  status("%s", rc, %s);' % (J, " && ".join("untouched(&%s)" % x
                                                               for x in jouts + touts)))
        out.append("  if (rc == SG_OK) {")
        for o, jo in zip(ctx.outs, jouts):
            out.append('    print("%s.%s", &%s);' % (J, o, jo))
        for t in touts:
            out.append('    print("%s.%s", &%s);' % (J, t, t))
        if entry.prog.smooth:  # <seed, J t> and the central difference of <seed, f> along t
            vjp = G.endswith("_vjp")
            out.append("    double dt = 0, d[2];")
            for (o, r), t in zip(rets, touts):
                seed = [s for s, i in ctx.seeds if ctx.outs[i] == o][0]
                out.append("    for (int64_t k = 0; k < count(&%s); k++) dt += %s;" % (
                    t, "%s_%s[k] * get(&%s, k)" % (F, seed, t) if vjp else "get(&%s, k)" % t))
                if vjp:
                    out.append("  " + ctx.mk("e" + seed, r, "%s_%s" % (F, seed)).replace(
                        "\\n", "\\n  "))
            out.append('    printf("%s.dot 0 %%.17g\\n", dt);' % J)
            ev = "eval_%s(%s)" % (F, ", ".join(ctx.args + ["&e" + s for s, _ in ctx.seeds
                                                           if vjp]))
            out.append("    double big = 0;")
            out.append("    for (int s = 0; s < 2; s++) {")
            out.append("      double h = 1e-4 / (1 << s);")
            shift_code(c, ctx, "t", "h", out)
            out.append("      double fp = %s;" % ev)
            shift_code(c, ctx, "t", "-h", out)
            out.append("      double fm = %s;" % ev)
            out.append("      d[s] = (fp - fm) / (2 * h);")
            out.append("      big = fmax(big, fmax(fabs(fp), fabs(fm)) / h);")
            shift_code(c, ctx, "t", "0", out)
            out.append("    }")
            out.append("    double r = (4 * d[1] - d[0]) / 3;")
            out.append("    if (!(fabs(d[1] - d[0]) <= 1e-4 * fmax(1.0, fabs(r))) ||")
            out.append("        4e-16 * big > 1e-7 * fmax(1.0, fabs(r))) r = NAN;")
            out.append('    printf("%s.fd_dot 0 %%.17g\\n", r);' % J)
            if vjp:
                out.append("    " + " ".join("free(e%s.data);" % s for s, _ in ctx.seeds))
        # the Jacobian, R rows (the float results' elements) by C columns
        out.append("    int64_t R = %s, C = %s, col = 0, jfail = 0;" % (
            " + ".join("count(&%s)" % t for t in touts),
            " + ".join("count(&%s)" % p.name for p in c.diff)))
        out.append("    double *Jf = calloc((size_t)(R * C + 1), sizeof(double));")
        out.append("    double *Jr = calloc((size_t)(R * C + 1), sizeof(double));")
        for p in c.diff:  # columns: a basis tangent each
            out.append("    for (int64_t i = 0; i < count(&%s); i++, col++) {" % p.name)
            for q in c.diff:
                out.append("      for (int64_t k = 0; k < count(&t_%s); k++) set(&t_%s, k, "
                           "k == i && %d);" % (q.name, q.name, q is p))
            out.append("      int rc2 = %s;" % call)
            out.append("      if (rc2) jfail = rc2;")
            out.append("      int64_t row = 0;")
            for t in touts:
                out.append("      for (int64_t k = 0; k < count(&%s); k++) Jf[col * R + row++] = "
                           "get(&%s, k);" % (t, t))
            out.append("    }")
        # rows: a basis seed each (f_grad: the one row)
        gouts = ["jg" + o for o in ctx.outs]
        for o, r in zip(gouts, f.rets):
            out.append("  " + ctx.mk("" + o, r, "NULL").replace("\n", "\n  "))
        for p in c.diff:
            out.append("  " + ctx.mk("jd_" + p.name, p.ty, "NULL").replace("\n", "\n  "))
        seeds = []
        if G.endswith("_vjp"):
            for s, i in ctx.seeds:
                out.append("  " + ctx.mk("j" + s, f.rets[i], "NULL").replace("\n", "\n  "))
                seeds.append("j" + s)
        gcall = "%s(%s)" % (G, ", ".join(ctx.args + ["&" + x for x in seeds + gouts] +
                                         ["&jd_" + p.name for p in c.diff]))
        out.append("    for (int64_t row = 0; row < R; row++) {")
        if seeds:
            out.append("      int64_t k0 = 0;")
            for x in seeds:
                out.append("      for (int64_t k = 0; k < count(&%s); k++, k0++) set(&%s, k, "
                           "k0 == row);" % (x, x))
        out.append("      int rc2 = %s;" % gcall)
        out.append("      if (rc2) jfail = rc2;")
        out.append("      col = 0;")
        for p in c.diff:
            out.append("      for (int64_t k = 0; k < count(&jd_%s); k++) Jr[col++ * R + row] = "
                       "get(&jd_%s, k);" % (p.name, p.name))
        out.append("    }")
        out.append("    if (jfail) {")
        out.append('      printf("%s.jfail 0 %%d\\n", (int)jfail);' % J)
        out.append("    } else {")
        out.append("      for (int64_t k = 0; k < R * C; k++) {")
        out.append('        printf("%s.Jf %%lld %%.17g\\n", (long long)k, Jf[k]);' % J)
        out.append('        printf("%s.Jr %%lld %%.17g\\n", (long long)k, Jr[k]);' % J)
        out.append("      }")
        out.append("    }")
        out.append("    free(Jf); free(Jr);")
        out.append("    " + " ".join("free(%s.data);" % x for x in
                                     gouts + seeds + ["jd_" + p.name for p in c.diff]))
        out.append("  }")
        out.append("  " + " ".join("free(%s.data);" % x for x in
                                   jouts + touts + ["t_" + p.name for p in c.diff]))

    def check(self, entry, c, lv, ok):
        F, J = c.fn.name, self.name(c)
        for lvl, v in lv.items():
            if not ok.get((lvl, J)):
                continue
            fail = v.get(J + ".jfail")
            if fail and not (lvl == "adm" and int(fail[0]) == SG_ERR_ALLOC):
                raise Finding("%s: a call of %s with a basis vector returned %d where the call "
                              "with the random tangent succeeded" % (lvl, J, int(fail[0])))
            for o in Ctx(c).outs:
                compare(v.get("%s.%s" % (F, o), []), v.get("%s.%s" % (J, o), []),
                        OPT_RTOL, "-%s: the results of %s and of %s" % (lvl, F, J))
            if not fail:
                compare(v.get(J + ".Jf", []), v.get(J + ".Jr", []), OPT_RTOL,
                        "%s: the Jacobians of %s by forward mode (columns, %s) and by reverse "
                        "mode (rows, %s)" % (lvl, F, J, GradEntry().name(c)), cancel=c.edgy)
            if entry.prog.smooth and lvl in ("O0", "O2"):
                compare(v.get(J + ".dot", []), v.get(J + ".fd_dot", []), FD_RTOL,
                        "-%s: <seed, tangent> of %s and its finite difference along the "
                        "tangent" % (lvl, J), finite_only=True)


class HvpEntry(EntryPoint):
    """f_hvp (sgc --exports=...,hvp; scalar exports): the value and the
    gradient again (they must equal f_grad's) and the Hessian times the
    call's vectors (NAME.hv_p); in the smooth mode, central differences of
    f_grad along those vectors (NAME.fd_hv_p)."""

    def name(self, c):
        f = c.fn
        if not c.diff or len(f.rets) != 1 or f.ret.rank or not f.ret.is_float:
            return None
        return f.name + "_hvp"

    def data(self, entry, c, ctx, out):
        tangent_data(c, ctx, "v", out)

    def c_code(self, entry, c, ctx, out):
        f, F, H, G = c.fn, ctx.F, self.name(c), c.fn.name + "_grad"
        for p in c.diff:
            out.append(ctx.mk("v_" + p.name, p.ty, "%s_v_%s" % (F, p.name)))
            out.append(ctx.mk("hd_" + p.name, p.ty, "NULL"))
            out.append(ctx.mk("hv_" + p.name, p.ty, "NULL"))
        out.append(ctx.mk("hout", f.ret, "NULL"))
        written = ["hout"] + ["hd_" + p.name for p in c.diff] + ["hv_" + p.name for p in c.diff]
        out.append("  rc = %s(%s);" % (H, ", ".join(ctx.args + ["&v_" + p.name for p in c.diff] +
                                                  ["&" + x for x in written])))
        out.append('  status("%s", rc, %s);' % (H, " && ".join("untouched(&%s)" % x
                                                               for x in written)))
        out.append("  if (rc == SG_OK) {")
        out.append('    print("%s.out", &hout);' % H)
        for p in c.diff:
            out.append('    print("%s.d_%s", &hd_%s);' % (H, p.name, p.name))
            out.append('    print("%s.hv_%s", &hv_%s);' % (H, p.name, p.name))
        if entry.prog.smooth:  # the gradient's central difference along v
            out.append("  " + ctx.mk("fo", f.ret, "NULL").replace("\n", "\n  "))
            for p in c.diff:
                for k in ("p", "m"):
                    out.append("  " + ctx.mk("f%s_%s" % (k, p.name), p.ty, "NULL").replace("\n", "\n  "))
                out.append("    double *d_%s = calloc((size_t)(2 * count(&%s) + 1), "
                           "sizeof(double));" % (p.name, p.name))
            gargs = lambda k: ", ".join(ctx.args + ["&fo"] + ["&f%s_%s" % (k, p.name)
                                                              for p in c.diff])
            out.append("    int bad = 0;")
            out.append("    for (int s = 0; s < 2; s++) {")
            out.append("      double h = 1e-4 / (1 << s);")
            shift_code(c, ctx, "v", "h", out)
            out.append("      bad |= %s(%s);" % (G, gargs("p")))
            shift_code(c, ctx, "v", "-h", out)
            out.append("      bad |= %s(%s);" % (G, gargs("m")))
            shift_code(c, ctx, "v", "0", out)
            for p in c.diff:
                out.append("      for (int64_t i = 0; i < count(&%s); i++) d_%s[2 * i + s] = "
                           "(get(&fp_%s, i) - get(&fm_%s, i)) / (2 * h);" % ((p.name,) * 4))
            out.append("    }")
            for p in c.diff:
                out.append("    for (int64_t i = 0; i < count(&%s); i++) {" % p.name)
                out.append("      double *d = d_%s + 2 * i, r = (4 * d[1] - d[0]) / 3;" % p.name)
                out.append("      if (bad || !(fabs(d[1] - d[0]) <= 1e-4 * fmax(1.0, fabs(r)))) "
                           "r = NAN;")
                out.append('      printf("%s.fd_hv_%s %%lld %%.17g\\n", (long long)i, r);'
                           % (H, p.name))
                out.append("    }")
                out.append("    free(d_%s); free(fp_%s.data); free(fm_%s.data);" % ((p.name,) * 3))
            out.append("    free(fo.data);")
        out.append("  }")
        out.append("  " + " ".join("free(%s.data);" % x for x in
                                   written + ["v_" + p.name for p in c.diff]))

    def check(self, entry, c, lv, ok):
        F, H, G = c.fn.name, self.name(c), c.fn.name + "_grad"
        for lvl, v in lv.items():
            if not ok.get((lvl, H)) or not ok.get((lvl, G)):
                continue
            compare(v.get(F + ".out", []), v.get(H + ".out", []), OPT_RTOL,
                    "-%s: the results of %s and of %s" % (lvl, F, H))
            for p in c.diff:
                compare(v.get("%s.d_%s" % (G, p.name), []), v.get("%s.d_%s" % (H, p.name), []),
                        OPT_RTOL, "-%s: d_%s of %s and of %s" % (lvl, p.name, G, H))
                if entry.prog.smooth and lvl in ("O0", "O2"):
                    compare(v.get("%s.hv_%s" % (H, p.name), []),
                            v.get("%s.fd_hv_%s" % (H, p.name), []), FD_RTOL,
                            "-%s: hv_%s of %s and the finite difference of %s"
                            % (lvl, p.name, H, G), finite_only=True)


ENTRY_POINTS = {"grad": GradEntry(), "jvp": JvpEntry(), "hvp": HvpEntry()}
EXPORTS = ["grad"]  # --exports, set by main: the entry points compiled and checked


def entry_points(c):
    return [ENTRY_POINTS[x] for x in EXPORTS if ENTRY_POINTS[x].name(c)]


def driver_call(entry, c, out):
    """Appends run_F for call c to `out` (F's own call, then each entry
    point's); returns the line of main calling it."""
    f, ctx = c.fn, Ctx(c)
    F = ctx.F
    for p, a in zip(f.params, c.args):
        out.append(c_array("%s_%s" % (F, p.name), CTYPE[p.ty.dtype], a))
    eps = entry_points(c)
    for ep in eps:
        ep.data(entry, c, ctx, out)
    out.append("static void run_%s(void) {" % F)
    for p in f.params:
        out.append(ctx.mk(p.name, p.ty, "%s_%s" % (F, p.name)))
    for o, r in zip(ctx.outs, f.rets):
        out.append(ctx.mk(o, r, "NULL"))
    out.append('  int rc = %s(%s, %s);' % (F, ", ".join(ctx.args),
                                           ", ".join("&" + o for o in ctx.outs)))
    out.append('  status("%s", rc, %s);' % (F, " && ".join("untouched(&%s)" % o
                                                           for o in ctx.outs)))
    out.append("  if (rc == SG_OK) {")
    for o in ctx.outs:
        out.append('    print("%s.%s", &%s);' % (F, o, o))
    out.append("  }")
    for ep in eps:
        ep.c_code(entry, c, ctx, out)
    out.append("  " + " ".join("free(%s.data);" % n for n in [p.name for p in f.params] +
                               ctx.outs))
    out.append("}")
    out.append("")
    return "  run_%s();" % F


# ---- comparing results ----

def parse(text):
    vals = {}
    for line in text.splitlines():
        label, _, value = line.split(" ", 2)
        if label.endswith(".msg"):
            vals[label] = [value]
        else:
            vals.setdefault(label, []).append(float(value))
    return vals


def close(a, b, rtol):
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if a == b:
        return True
    return abs(a - b) <= rtol * max(abs(a), abs(b), 1.0)


def compare(xs, ys, rtol, what, finite_only=False, exact_zero=False, exact=False,
            cancel=False):
    """Element by element; with finite_only, skip where ys is NaN or
    infinite (a finite difference of a function that is NaN there, say the
    mean of an empty tensor, checks nothing); with exact_zero, where ys is
    exactly 0, xs must be too; with exact, the same bits (NaN matching NaN);
    with cancel, NaN on one side and a number on the other match (counted).

    The last is for Jacobians by rows and by columns, and for the values
    of a program that takes a derivative itself, of a call whose
    reference met an infinite or NaN value or partial derivative (sqrt at
    0, pow of a negative base in its exponent; sg_interp's `edgy`). Where
    two paths through such a partial cancel exactly (p - p), forward mode
    cancels the tangents before they meet it, and its exact-zero product
    (spec 7) gives 0, while reverse mode cancels after, where NaN - NaN is
    NaN (or the other way round). IEEE sums do not distribute over a
    non-finite factor: neither side is wrong."""
    if len(xs) != len(ys):
        raise Finding("%s have different sizes: %d vs %d" % (what, len(xs), len(ys)))
    for k, (a, b) in enumerate(zip(xs, ys)):
        if finite_only and not math.isfinite(b):
            continue
        if cancel and math.isnan(a) != math.isnan(b):
            STATS["cancelled"] += 1
            continue
        if exact:
            if not (a == b and math.copysign(1, a) == math.copysign(1, b) or
                    math.isnan(a) and math.isnan(b)):
                raise Finding("%s differ at element %d: %.17g vs %.17g" % (what, k, a, b))
        elif not close(a, b, rtol) or (exact_zero and b == 0 and a != 0):
            raise Finding("%s differ at element %d: %.17g vs %.17g" % (what, k, a, b))


def check_status(v, label, want_error, lvl, fname, dead=False):
    """The return code of call `label` at level lvl: SG_OK, or
    SG_ERR_INDEX with nothing written where the reference says so. Returns
    whether it succeeded."""
    rc = int(v.get(label + ".rc", [-1])[0])
    want = SG_ERR_INDEX if want_error else SG_OK
    if dead and rc == SG_OK:
        raise Finding("%s: %s returned 0 where the reference reports SG_ERR_INDEX (%s) in code "
                      "whose value is unused (spec 6, v3: reported whether or not the value is "
                      "used)" % (lvl, label, want_error))
    # One iteration of a loop may not fit in --ad-memory: allowed, in a
    # gradient and in any function that calls grad inside (its reverse sweep
    # checkpoints too), also where the call would fail with SG_ERR_INDEX
    # later on.
    adm_alloc = rc == SG_ERR_ALLOC and lvl == "adm"
    if adm_alloc:
        STATS["adm_alloc"] += 1
    if adm_alloc or rc == want:
        if rc != SG_OK:
            if v.get(label + ".untouched") != [1.0]:
                raise Finding("%s: %s returned %d but wrote an output" % (lvl, label, rc))
            msg = v.get(label + ".msg", [""])[0]
            if not re.match(r"%s(_grad|_vjp|_jvp|_hvp)?: prog\.sg:\d+: " % re.escape(fname), msg):
                raise Finding("%s: %s's error message does not name the function and the "
                              "file: %r" % (lvl, label, msg))
        return rc == SG_OK
    raise Finding("%s: %s returned %d, expected %d (%s)%s" % (
        lvl, label, rc, want, "SG_ERR_INDEX: " + want_error if want_error else "SG_OK",
        "; message: " + v[label + ".msg"][0] if label + ".msg" in v else ""))


# A call of a derivative transform in a program's text.
DERIVES = re.compile(r"\b(%s)\(" % "|".join(sorted(set(gen_programs.TRANSFORMS) | {"vjp"})))


def check_call(entry, c, outs):
    """All the checks of one export's results, over every level's output."""
    f, F = c.fn, c.fn.name
    if c.broken:
        raise Finding("the reference failed (a bug of tools/gen_programs.py or "
                      "tools/sg_interp.py): %s" % c.broken)
    eps = entry_points(c)
    names = [F] + [ep.name(c) for ep in eps]
    lv = {lvl: parse(text) for lvl, text in outs.items()}
    lv = {lvl: {k: x for k, x in v.items() if k.split(".")[0] in names} for lvl, v in lv.items()}
    want_error = None if c.fragile else c.error
    ok = {}
    levels = [lvl for lvl in ("O0", "O2", "adm") if lvl in lv]
    base = levels[0]
    for lvl in levels:
        v = lv[lvl]
        if c.fragile:  # the reference's decision could go the other way: levels agree
            want_error = None if int(lv[base][F + ".rc"][0]) == SG_OK else "as at " + base
        dead = c.dead and not c.fragile
        for name in names:
            ok[lvl, name] = check_status(v, name, want_error, lvl, F, dead)
    if not ok[base, F]:
        return
    v0, va = lv.get("O0"), lv.get("adm")
    values = lambda label: not (label.endswith((".msg", ".rc", ".untouched")) or ".fd_" in label)
    # the reference; a derivative the program takes itself (hessian(h,
    # wrt=p)(...)) of a reference that met a non-finite partial may cancel
    # its paths on either side of it, as Jacobians by rows and by columns
    # do (compare, cancel; seed 98145: a Hessian through x ** ((t - t) ** 2)
    # at a negative x, NaN in sgc, 1 in the reference)
    cancel = c.edgy and DERIVES.search(entry.prog.source()) is not None
    if c.values is not None and not c.fragile:
        for o, r, want in zip(Ctx(c).outs, f.rets, c.values):
            compare(lv[base].get("%s.%s" % (F, o), []), [float(x) for x in np.ravel(want)],
                    c.rtol(r) if r.is_float else 0, "-%s %s.%s and the reference (tools/sg_interp.py)"
                    % (base, F, o), cancel=cancel)
    # -O0 against -O2, everything printed
    if v0 is not None and "O2" in lv and not c.unstable:
        for label in sorted(set(v0) | set(lv["O2"])):
            if values(label):
                # a Hessian-vector product sums products of sums: in f32 its
                # rounding, another at each level, reaches 1e-5 (seed 1023)
                compare(v0.get(label, []), lv["O2"].get(label, []),
                        OPT_RTOL * (10 if ".hv_" in label else 1),
                        "-O0 and -O2 results for %s" % label)
    # --ad-memory: the same bits as without it, at its -O level
    vd = lv.get(ADM_LEVEL[0])
    if va is not None and vd is not None:
        for label in sorted(vd):
            name = label.split(".")[0]
            if values(label) and ok["adm", name] and name + ".jfail" not in va:
                compare(va.get(label, []), vd[label], 0, "--ad-memory and default results for %s"
                        % label, exact=True)
    for ep in eps:
        ep.check(entry, c, lv, ok)
    # the clean variant
    if "clean" in lv and v0 is not None:
        vc = lv["clean"]
        for label in sorted(vc):
            if values(label) or label.endswith(".rc"):
                compare(v0.get(label, []), vc[label], OPT_RTOL,
                        "%s of the program and of its clean variant (poison and zero factors "
                        "replaced)" % label, exact_zero=True)


# ---- groups of programs ----

class Entry:
    """One generated program, its functions renamed s<seed>_<name> so that
    several can share one .sg file, one object and one driver; its calls
    (data and reference) once built."""

    def __init__(self, seed, smooth, depth, without=(), prog=None, zero=0.2, max_size=4):
        self.seed, self.smooth = seed, smooth
        self.prog = prog or gen_programs.generate(seed, smooth, depth, without)
        self.name = "prog-%d%s" % (seed, "-fd" if smooth else "")
        self.zero, self.max_size = zero, max_size
        for f in self.prog.funcs:
            if not f.name.startswith("s%d_" % seed):
                f.name = "s%d_%s" % (seed, f.name)
        self.calls = None
        self.ref_seconds = 0.0

    def source(self, clean=False):
        return self.prog.source(clean)

    def build_calls(self):
        """The data (a function of the seed only) and the reference."""
        if self.calls is None:
            t = time.time()
            rng = random.Random(self.seed)
            self.calls = [Call(f, rng, self.zero, self.max_size) for f in self.prog.exports]
            for c in self.calls:
                c.reference(self.prog)
            self.ref_seconds = time.time() - t
        return self.calls


def build_and_run(group, numeric, a, d):
    """Compile the group's programs as one file at -O2 (and, if numeric, at
    -O0, at -O2 with --ad-memory and the clean variant at -O0), run one
    driver against each object; returns the outputs by level, or {} if not
    numeric."""
    os.makedirs(d, exist_ok=True)
    src, clean = os.path.join(d, "prog.sg"), os.path.join(d, "clean.sg")
    with open(src, "w") as f:
        f.write("\n".join(e.source() for e in group))
    sgc = [a.sgc, "--verify", "--exports=" + ",".join(EXPORTS)]
    run(sgc + [src, "-o", os.path.join(d, "O2.o"), "--header", os.path.join(d, "prog.h")],
        a.timeout, "sgc")
    if not numeric:
        return {}
    levels = [x for x in ("O0", "O2", "adm") if x in a.levels]
    if "O0" in levels:
        run(sgc + [src, "-O0", "-o", os.path.join(d, "O0.o")], a.timeout, "sgc -O0")
    if "adm" in levels:
        run(sgc + [src, "-" + a.adm_level, "--ad-memory=%s" % a.ad_memory, "-o",
                   os.path.join(d, "adm.o")], a.timeout, "sgc --ad-memory=%s" % a.ad_memory)
    if "clean" in a.levels and any(e.prog.marks for e in group):
        with open(clean, "w") as f:
            f.write("\n".join(e.source(clean=True) for e in group))
        run(sgc + [clean, "-O0", "-o", os.path.join(d, "clean.o")], a.timeout,
            "sgc -O0 (clean variant)")
        levels.append("clean")
    for e in group:
        e.build_calls()
    with open(os.path.join(d, "driver.c"), "w") as f:
        f.write(driver_source(group, "prog.h"))
    cc = shlex.split(a.cc)
    run(cc + ["-I" + d, "-c", os.path.join(d, "driver.c"), "-o", os.path.join(d, "driver.o")],
        a.timeout, "compiling the driver")
    outs = {}
    for lvl in levels:
        exe = os.path.join(d, "run-" + lvl)
        run(cc + [os.path.join(d, "driver.o"), os.path.join(d, lvl + ".o"), "-o", exe] +
            shlex.split(a.rtlib), a.timeout, "linking the %s driver" % lvl)
        outs[lvl] = run([exe], a.timeout, "the %s driver" % lvl)
        with open(os.path.join(d, lvl + ".txt"), "w") as f:
            f.write(outs[lvl])
    return outs


def check_entry(e, outs):
    if not outs:
        return
    for c in e.calls:
        check_call(e, c, outs)


def check_group(group, numeric, a):
    """Findings as (entry, message); a failure of the whole group (a crash,
    an error, a hang) is retried program by program to find its cause."""
    d = os.path.join(a.work, group[0].name)
    try:
        outs = build_and_run(group, numeric, a, d)
    except Finding as err:
        if len(group) == 1:
            return [(group[0], str(err))]
        # the programs that sgc -O2 refuses alone (cheap to find) are
        # findings; the rest is a group again
        found, rest = [], []
        for e in group:
            alone = os.path.join(a.work, e.name)
            try:
                build_and_run([e], False, a, alone)
                shutil.rmtree(alone)
                rest.append(e)
            except Finding as err1:
                found.append((e, str(err1)))
        if found:
            return found + (check_group(rest, numeric, a) if rest else [])
        for e in group:  # each fails only with others, or later than -O2: one by one
            found += check_group([e], numeric, a)
        return found or [(group[0], "the group of %d programs starting here failed, but "
                          "none alone does:\n%s" % (len(group), err))]
    found = []
    for e in group:
        try:
            check_entry(e, outs)
        except Finding as err:
            found.append((e, str(err)))
    if not found and not a.keep:
        shutil.rmtree(d)
    return found


def classify(prog, msg):
    """'allowed', 'known' or 'new', and what it is."""
    for kind, table in (("allowed", ALLOWED), ("known", KNOWN)):
        for what, feats, pattern in table:
            if (not feats or any(f in prog.features for f in feats)) and re.search(pattern, msg):
                return kind, what
    return "new", None


def configure(a):
    """The settings of add_args that the checking code reads as globals."""
    ADM_LEVEL[0] = a.adm_level
    EXPORTS[:] = ["grad"] + [x for x in a.exports.split(",") if x in ("jvp", "hvp")]


def add_args(ap):
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "random"))
    ap.add_argument("--sgc", default=os.path.join(ROOT, "build", "bin", "sgc"))
    ap.add_argument("--cc", default="cc -std=c11 -O1 -I" + os.path.join(ROOT, "build", "include"))
    ap.add_argument("--rtlib", default="-L%s -lsgrt -lm -lpthread"
                    % os.path.join(ROOT, "build", "lib"))
    ap.add_argument("--timeout", type=int, default=120, help="seconds per command")
    ap.add_argument("--depth", type=int, default=4, help="expression depth of the programs")
    ap.add_argument("--zero-sizes", type=float, default=0.2, metavar="P",
                    help="probability of binding a symbolic size to 0 (empty tensors)")
    ap.add_argument("--max-size", type=int, default=4, metavar="N",
                    help="symbolic sizes up to N (above what slices need): larger ones "
                         "cross vector widths and kernels' blocks (e.g. 20); f32 sums over "
                         "thousands of elements may then differ between -O0 and -O2 by more "
                         "than the 1e-5 compared (summation order), and ties decided by a "
                         "rounding (the mean of equal values) go either way")
    ap.add_argument("--ad-memory", default="512",
                    help="the --ad-memory=SIZE checked against the default (default 512)")
    ap.add_argument("--adm-level", default="O2", choices=["O0", "O2"],
                    help="the -O level of the --ad-memory object, compared with the same level "
                    "without it (default O2; O0 costs a tenth: LLVM's -O2 is most of the time)")
    ap.add_argument("--exports", default="grad,jvp,hvp",
                    help="the entry points compiled (sgc --exports) and checked: grad (always), "
                    "jvp (f_jvp: its Jacobian by columns against f_grad/f_vjp's by rows), hvp "
                    "(f_hvp); default grad,jvp,hvp")
    ap.add_argument("--keep", action="store_true",
                    help="keep the work files (sources, objects, drivers, outputs) of every group")
    ap.add_argument("--without", default="",
                    help="constructs to leave out (gen_programs features, comma-separated)")
    ap.add_argument("--levels", default="O0,O2,adm,clean", type=lambda x: set(x.split(",")),
                    help="what to compile and compare (default O0,O2,adm,clean)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--count", type=int, default=30, help="programs to compile")
    ap.add_argument("--sample", type=int, default=10, help="of which to run and compare")
    ap.add_argument("--batch", type=int, default=20, metavar="N",
                    help="programs compiled and run together (default 20)")
    add_args(ap)
    a = ap.parse_args()
    without = [x for x in a.without.split(",") if x]
    configure(a)

    findings_dir = os.path.join(a.work, "findings")
    counts = {"new": 0, "known": 0, "allowed": 0}
    kinds = {}
    start = time.time()
    ref_time = 0.0
    fragile = calls = errors = 0
    for first in range(0, a.count, a.batch):
        ks = range(first, min(first + a.batch, a.count))
        numeric = [k for k in ks if k < a.sample]
        for ks_part, num in ((numeric, True), ([k for k in ks if k >= a.sample], False)):
            if not ks_part:
                continue
            group = [Entry(a.seed + k, k % 2 == 1, a.depth, without, zero=a.zero_sizes,
                           max_size=a.max_size)
                     for k in ks_part]
            for e, msg in check_group(group, num, a):
                kind, what = classify(e.prog, msg)
                counts[kind] += 1
                if kind != "new":
                    kinds[what] = kinds.get(what, 0) + 1
                    print("%s (%s) in seed %d%s: %s" % (kind, what, e.seed, ", --fd" if e.smooth
                                                        else "", msg.splitlines()[0]))
                    continue
                os.makedirs(findings_dir, exist_ok=True)
                path = os.path.join(findings_dir, e.name + ".sg")
                with open(path, "w") as f:
                    f.write(e.source())
                if e.prog.marks:
                    with open(path[:-3] + "-clean.sg", "w") as f:
                        f.write(e.source(clean=True))
                print("FINDING in %s (seed %d%s):\n%s\n" % (path, e.seed,
                                                           ", --fd" if e.smooth else "", msg))
            for e in group:
                if e.calls:
                    ref_time += e.ref_seconds
                    calls += len(e.calls)
                    fragile += sum(c.fragile for c in e.calls)
                    errors += sum(c.error is not None for c in e.calls)
            sys.stdout.flush()
    numeric = min(a.sample, a.count)
    for what, n in sorted(kinds.items()):
        print("check_random: %d x %s" % (n, what))
    print("check_random: %d programs compiled, %d run at -O0, -O2 and --ad-memory (%d against "
          "finite differences), %d findings, %d known, %d refusals allowed" % (
              a.count, numeric, numeric // 2, counts["new"], counts["known"], counts["allowed"]))
    sys.stderr.write("check_random: %.0f s (reference %.0f s); %d calls, %d expected to fail "
                     "with SG_ERR_INDEX, %d fragile, %d with no reference (slower than %d s "
                     "or a million loop steps), %d gradients too big for --ad-memory, %d "
                     "derivatives NaN one way only (a non-finite partial)\n" % (
                         time.time() - start, ref_time, calls, errors, fragile,
                         STATS["slow_reference"], REFERENCE_SECONDS, STATS["adm_alloc"],
                         STATS["cancelled"]))
    return 1 if counts["new"] else 0


if __name__ == "__main__":
    sys.exit(main())
