#!/usr/bin/env python3
"""Check printed sgc IR (sgc --emit-ir, sgc-opt) for leftovers the optimizer
should have removed. Usage: check_ir_values.py [FILE|-] [--only=REGEX]

Fails (exit 1), listing each one as @func: %N = ..., on
  - an unused value: an instruction whose result no later instruction and no
    `ret` uses;
  - a known zero in arithmetic: a `const 0` (or -0), possibly through
    broadcast/reshape, as an operand of add, sub or mul, or as the first
    operand of mulz.
--only restricts the check to the functions whose name matches REGEX
(re.search). Prints "ok: F functions, V values" when nothing is found."""
import re
import sys

ZERO_USERS = {"add", "sub", "mul"}
VALUE = re.compile(r"%[A-Za-z0-9_.]+")
HEADER = re.compile(r"^\s*(?:export\s+)?func\s+@([A-Za-z0-9_.]+)\s*\(")
DEF = re.compile(r"^\s*(%[A-Za-z0-9_.]+)\s*=\s*([a-z_0-9]+)\s*(.*)$")


def check(text, only):
    problems = []
    nfuncs = nvalues = 0
    func = None
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line.strip():
            continue
        m = HEADER.match(line)
        if m:
            func = {"name": m.group(1), "defs": [], "uses": set(), "insts": {}}
            continue
        if func is None:
            continue
        if line.strip() == "}":
            if only is None or re.search(only, func["name"]):
                nfuncs += 1
                nvalues += len(func["defs"])
                problems += finish(func)
            func = None
            continue
        d = DEF.match(line)
        if d:
            name, op, rest = d.groups()
            operands = VALUE.findall(rest.split(":", 1)[0])
            func["defs"].append(name)
            func["insts"][name] = (op, operands, rest, line.strip())
            func["uses"].update(operands)
        elif line.strip().startswith("ret"):
            func["uses"].update(VALUE.findall(line))
        else:
            problems.append("@%s: cannot parse: %s" % (func["name"], line.strip()))
    return problems, nfuncs, nvalues


def finish(func):
    insts = func["insts"]
    out = []
    for v in func["defs"]:
        if v not in func["uses"]:
            out.append("@%s: unused value: %s" % (func["name"], insts[v][3]))

    def zero_literal(v):
        while v in insts and insts[v][0] in ("broadcast", "reshape"):
            v = insts[v][1][0]
        if v not in insts or insts[v][0] != "const":
            return False
        lit = insts[v][2].split(":", 1)[0].strip()
        try:
            return float(lit) == 0.0
        except ValueError:
            return False

    for v in func["defs"]:
        op, operands = insts[v][0], insts[v][1]
        checked = operands if op in ZERO_USERS else operands[:1] if op == "mulz" else []
        for a in checked:
            if zero_literal(a):
                out.append("@%s: known zero %s in arithmetic: %s" % (func["name"], a, insts[v][3]))
    return out


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--only=")]
    only = next((a[len("--only="):] for a in sys.argv[1:] if a.startswith("--only=")), None)
    path = args[0] if args else "-"
    text = sys.stdin.read() if path == "-" else open(path).read()
    problems, nfuncs, nvalues = check(text, only)
    if nfuncs == 0:
        problems.append("no function checked")
    for p in problems:
        print(p)
    if problems:
        print("FAIL: %d problem(s)" % len(problems))
        return 1
    print("ok: %d functions, %d values" % (nfuncs, nvalues))
    return 0


if __name__ == "__main__":
    sys.exit(main())
