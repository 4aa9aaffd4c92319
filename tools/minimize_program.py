#!/usr/bin/python3
"""Shrink a failing random program (tools/gen_programs.py, checked by
tools/check_random.py) to a small one with the same finding.

  minimize_program.py --seed S [--fd] [--depth D] [--without F,...]
                      [--match REGEX] [--out DIR] [check_random's options]

Regenerates program S (the smooth mode with --fd), checks it as
check_random.py does (alone, so the data are those of seed S), and takes
the first line of the finding, with numbers and names blanked, as its
signature (or --match, a regular expression the finding must match).
Then, on the program's tree, greedily and until nothing more goes:
  * removes an export (one remains) or a helper, a statement (a loop or a
    branch whole, or replaced by its body), an else branch;
  * cuts a loop's trip count to 1;
  * replaces an expression by one of its operands of the same type, by a
    constant of its type (ones(T), 1, a literal), or a function's
    parameter of its type;
keeping each change after which the check still fails with the same
signature (a change that makes the program invalid gives another finding,
a compile error, and is undone). Compile-time findings are checked by
compiling only (at -O2), others by the whole check_random run.

Writes DIR (default build/random/min-S[-fd]): prog.sg (and clean.sg), the
check's work files (driver.c, the objects), finding.txt, and repro.sh,
which recompiles and reruns it. Prints the minimal program and the finding.
"""

import argparse
import copy
import os
import pickle
import re
import shutil
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_random as C  # noqa: E402
import gen_programs as G  # noqa: E402


def levels_for(msg):
    """The levels a finding needs (check_random --levels)."""
    first = msg.strip().splitlines()[0] if msg.strip() else ""
    adm = "%s,adm" % C.ADM_LEVEL[0]
    for key, levels in (("--ad-memory", adm), ("clean variant", "O0,clean"),
                        ("-O0 and -O2", "O0,O2"), ("adm:", adm), ("O0:", "O0"),
                        ("O2:", "O2"), ("-O0 ", "O0"), ("-O2 ", "O2")):
        if key in first:
            return set(levels.split(","))
    return {"O0", "O2", "adm", "clean"}


def signature(msg):
    """The finding's first line, and for a failing command the first line
    of its output that says what failed, with paths, positions, numbers and
    the programs' names blanked."""
    lines = msg.strip().splitlines() or [""]
    line = lines[0]
    if line.startswith("sgc"):
        said = [x for x in lines[1:] if re.search(r"error|Sanitizer|Assertion|verif", x) and
                not x.startswith("  $")]
        line += " / " + (said[0] if said else "")
    line = re.sub(r"\S*\.sg:\d+:\d+:", "", line)
    line = re.sub(r"/\S*/", "", line)
    line = re.sub(r"'\w+'", "'X'", line)
    line = re.sub(r"\bs\d+_(\w+)", r"F_\1", line)
    line = re.sub(r"(?<![\w.])-?\d+(\.\d+)?(e[-+]?\d+)?", "N", line)
    return line


class Shrinker:
    def __init__(self, a, seed, smooth, without):
        self.a, self.seed, self.smooth, self.without = a, seed, smooth, without
        self.tries = 0

    def check(self, prog):
        """The finding of prog (a message) or None."""
        self.tries += 1
        e = C.Entry(self.seed, self.smooth, self.a.depth, self.without,
                    prog=prog, zero=self.a.zero_sizes, max_size=self.a.max_size)
        found = C.check_group([e], self.numeric, self.a)
        return found[0][1] if found else None

    def fails(self, prog):
        try:
            msg = self.check(prog)
        except Exception:  # noqa: BLE001 -- a tree the tools cannot handle: not kept
            return False
        return msg is not None and (re.search(self.match, msg) if self.match else
                                    signature(msg) == self.sig)

    # ---- the edits: each yields (description, apply) on a deep copy ----
    def candidates(self, prog):
        funcs = prog.funcs
        exports = [i for i, f in enumerate(funcs) if f.exported]
        for i, f in enumerate(funcs):
            if f.exported and len(exports) < 2:
                continue
            yield "remove function %s" % f.name, lambda p, i=i: p.funcs.pop(i)
        for fi, f in enumerate(funcs):
            for k, p in enumerate(f.params):
                if len(f.params) > 1:
                    yield "remove parameter %s of %s" % (p.name, f.name), \
                        lambda prog, fi=fi, k=k: self.drop_param(prog, fi, k)
        for fi, f in enumerate(funcs):
            yield from self.stmt_candidates(fi, f)
        for fi, f in enumerate(funcs):
            yield from self.expr_candidates(prog, fi, f)

    @staticmethod
    def drop_param(prog, fi, k):
        """Remove parameter k of function fi and its argument at every
        call (not where a transform differentiates with respect to it)."""
        f = prog.funcs[fi]
        p = f.params.pop(k)
        for g in prog.funcs:
            for s in G.walk_stmts(g.body):
                for x in s.exprs():
                    for e in x.walk():
                        if e.op in ("call", "transform") and e.at["fn"] is f:
                            if e.op == "transform" and p.name in (e.at["wrt"], e.at.get("twrt")):
                                raise IndexError("differentiated")
                            del e.args[k]

    @staticmethod
    def stmt_lists(body):
        """Every statement list in body, with a path to find it again."""
        out = [((), body)]
        for i, s in enumerate(body):
            for k, b in enumerate(s.blocks()):
                out += [((i, k) + path, lst) for path, lst in Shrinker.stmt_lists(b)]
        return out

    @staticmethod
    def find_list(body, path):
        lst = body
        for i in range(0, len(path), 2):
            lst = lst[path[i]].blocks()[path[i + 1]]
        return lst

    def stmt_candidates(self, fi, f):
        for path, lst in self.stmt_lists(f.body):
            for i in reversed(range(len(lst))):
                s = lst[i]
                if s.kind == "return":
                    continue

                def remove(p, path=path, i=i):
                    del self.find_list(p.funcs[fi].body, path)[i]
                yield "remove a %s" % s.kind, remove
                if s.kind in ("for", "while", "if"):
                    def inline(p, path=path, i=i):
                        lst = self.find_list(p.funcs[fi].body, path)
                        s = lst[i]
                        if s.kind == "for":  # the body once, at i = lo
                            body = [G.S("let", names=[s.var], ty=G.Ty("i32"), annot=False, e=s.lo)]
                            body += s.body
                        else:
                            body = s.body
                        lst[i:i + 1] = body
                    yield "replace a %s by its body" % s.kind, inline
                if s.kind == "if" and s.orelse is not None:
                    def drop_else(p, path=path, i=i):
                        self.find_list(p.funcs[fi].body, path)[i].orelse = None
                    yield "remove an else", drop_else
                if s.kind == "for" and not (s.hi.op == "lit" and s.lo.op == "lit" and
                                            int(s.hi.at["text"]) - int(s.lo.at["text"]) <= 1):
                    def once(p, path=path, i=i):
                        s = self.find_list(p.funcs[fi].body, path)[i]
                        s.lo, s.hi = G.E("lit", [], G.Ty("i32"), text="0"), \
                            G.E("lit", [], G.Ty("i32"), text="1")
                    yield "run a for once", once

    @staticmethod
    def slots(f):
        """(holder path, node) of every expression in f: a holder is (the
        statement's path, attribute, index) then argument positions."""
        out = []

        def walk(e, where):
            out.append((where, e))
            for k, a in enumerate(e.args):
                if isinstance(a, G.E):
                    walk(a, where + (k,))
        for si, s in enumerate(G.walk_stmts(f.body)):
            for attr in ("e", "lo", "hi", "cond"):
                if getattr(s, attr) is not None:
                    walk(getattr(s, attr), (si, attr, None))
            for attr in ("es", "ix"):
                for k, x in enumerate(getattr(s, attr) or []):
                    walk(x, (si, attr, k))
        return out

    @staticmethod
    def put(f, where, new):
        s = list(G.walk_stmts(f.body))[where[0]]
        attr, k, rest = where[1], where[2], where[3:]
        if not rest:
            if k is None:
                setattr(s, attr, new)
            else:
                getattr(s, attr)[k] = new
            return
        node = getattr(s, attr) if k is None else getattr(s, attr)[k]
        for j in rest[:-1]:
            node = node.args[j]
        node.args[rest[-1]] = new

    def replacements(self, f, e):
        """Smaller expressions of e's type."""
        if e.ty is None or e.op in ("lit", "name", "size"):
            return
        for a in e.args:
            if isinstance(a, G.E) and a.ty == e.ty:
                yield a
        ty = e.ty
        if ty.dtype == "bool":
            return
        if ty.rank == 0:
            yield G.E("lit", [], ty, text="1")
            yield G.E("cast", [G.E("lit", [], G.Ty(ty.dtype), text="1")], ty)
        elif e.op != "ctor":
            yield G.E("ctor", [], ty, f="ones")
        for p in f.params:
            if p.ty == ty:
                yield G.E("name", [], ty, text=p.name)

    def expr_candidates(self, prog, fi, f):
        size = lambda e: sum(1 for _ in e.walk())
        for where, e in self.slots(f):
            for new in self.replacements(f, e):
                if size(new) >= size(e):
                    continue

                def apply(p, where=where, new=new):
                    # the copy's calls name the trial's functions, not copies of them
                    memo = {id(old): f2 for old, f2 in zip(prog.funcs, p.funcs)}
                    self.put(p.funcs[fi], where, copy.deepcopy(new, memo))
                yield "replace %s by %s" % (e.op, G.show(new)[:40]), apply

    def shrink(self, prog):
        """Greedy: after a change that sticks, the candidates are listed
        again (their paths are stale) and tried from about where it was;
        done after a whole pass without one."""
        start = 0
        while True:
            cands = list(self.candidates(prog))
            for j in range(start, len(cands)):
                what, apply = cands[j]
                trial = copy.deepcopy(prog)
                try:
                    apply(trial)
                except (IndexError, AttributeError):
                    continue  # the tree changed under this candidate
                if self.fails(trial):
                    prog, start = trial, j
                    sys.stderr.write("minimize: %s (%d tries, %d lines)\n" % (
                        what, self.tries, prog.source().count("\n")))
                    break
            else:
                if start == 0:
                    return prog
                start = 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fd", action="store_true", help="the program is a smooth one")
    ap.add_argument("--match", help="a regular expression the finding must keep matching")
    ap.add_argument("--out", help="where to write the result (default build/random/min-S)")
    C.add_args(ap)
    a = ap.parse_args()
    without = [x for x in a.without.split(",") if x]
    C.configure(a)
    name = "min-%d%s" % (a.seed, "-fd" if a.fd else "")
    out = a.out or os.path.join(C.ROOT, "build", "random", name)
    a.work = out + ".work"
    s = Shrinker(a, a.seed, a.fd, without)
    prog = G.generate(a.seed, a.fd, a.depth, without)
    s.numeric, s.match, s.sig = True, a.match, None
    msg = s.check(copy.deepcopy(prog))
    if msg is None:
        print("minimize: seed %d%s passes every check" % (a.seed, " --fd" if a.fd else ""))
        return 1
    s.sig = signature(msg)
    s.numeric = not msg.startswith("sgc: ")  # found compiling at -O2: compiling is enough
    a.levels = levels_for(msg)
    print("minimize: the finding: %s" % s.sig, flush=True)
    prog = s.shrink(prog)
    # the result, with its work files
    s.numeric = True
    a.levels = {"O0", "O2", "adm", "clean"}
    shutil.rmtree(a.work, ignore_errors=True)
    e = C.Entry(a.seed, a.fd, a.depth, without, prog=prog, zero=a.zero_sizes, max_size=a.max_size)
    found = C.check_group([e], True, a)
    msg = found[0][1] if found else "(no finding when checked whole: %s)" % s.sig
    shutil.rmtree(out, ignore_errors=True)
    work = os.path.join(a.work, e.name)
    if os.path.isdir(work):
        shutil.copytree(work, out)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "prog.sg"), "w") as f:
        f.write(prog.source())
    if prog.marks:
        with open(os.path.join(out, "clean.sg"), "w") as f:
            f.write(prog.source(clean=True))
    with open(os.path.join(out, "prog.pickle"), "wb") as f:  # the tree, for a closer look
        pickle.dump(prog, f)
    with open(os.path.join(out, "finding.txt"), "w") as f:
        f.write(msg + "\n")
    with open(os.path.join(out, "repro.sh"), "w") as f:
        f.write("#!/bin/sh\n# seed %d%s, minimized; rerun the check of this program\n"
                "cd \"$(dirname \"$0\")\"\n%s prog.sg -o O2.o --header prog.h && "
                "%s prog.sg -O0 -o O0.o && %s prog.sg -%s --ad-memory=%s -o adm.o || exit\n"
                "[ -f driver.c ] || exit 0\n%s -I. driver.c O0.o -o run-O0 %s && ./run-O0 > O0.txt\n"
                "%s -I. driver.c O2.o -o run-O2 %s && ./run-O2 > O2.txt\n"
                "%s -I. driver.c adm.o -o run-adm %s && ./run-adm > adm.txt\n" % (
                    a.seed, " --fd" if a.fd else "", *[a.sgc + " --exports=" + ",".join(C.EXPORTS)] * 3,
                    a.adm_level, a.ad_memory,
                    a.cc, a.rtlib, a.cc, a.rtlib, a.cc, a.rtlib))
    shutil.rmtree(a.work, ignore_errors=True)
    print(prog.source())
    print("minimize: %d tries; %s\nminimize: written to %s" % (s.tries, msg, out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
