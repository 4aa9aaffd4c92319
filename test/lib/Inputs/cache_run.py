"""Helpers for the tests of libsgc's compile cache: run cache_child.py in
a new process with a given environment, and check what happened."""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python", "Inputs"))
from check import done, equal  # noqa: E402,F401


def run(cache_dir, source, filename="model.sg", options=None, extra=None):
    """(results line, CPU seconds of the compile, trace lines) of one new
    process compiling `source` with SGC_CACHE_DIR=cache_dir (None: unset)
    and SGC_CACHE_TRACE=1."""
    env = dict(os.environ, SGC_CACHE_TRACE="1")
    env.pop("SGC_CACHE_DIR", None)
    if cache_dir is not None:
        env["SGC_CACHE_DIR"] = cache_dir
    env.update(extra or {})
    env = {k: v for k, v in env.items() if v is not None}
    args = [sys.executable, os.path.join(HERE, "cache_child.py"), source, filename]
    if options:
        args.append(options)
    p = subprocess.run(args, env=env, capture_output=True, text=True)
    if p.returncode:
        print("FAIL: the child failed (%d):\n%s%s" % (p.returncode, p.stdout, p.stderr))
        return None, None, []
    lines = p.stdout.splitlines()
    cpu = float(lines[0].split()[2])
    return lines[1], cpu, [t for t in p.stderr.splitlines() if t.startswith("sgc: cache:")]


def kinds(trace, directory):
    """The trace without its paths: 'miss', 'stored', 'rejected (why)'..."""
    out = []
    for t in trace:
        word, rest = t[len("sgc: cache: "):].split(" ", 1)
        if word == "not":
            word, rest = "not stored:", rest.split(" ", 1)[1]
        rest = rest.replace(directory, "DIR")
        out.append(word + " " + rest)
    return out


def entries(directory):
    return sorted(f for f in os.listdir(directory) if f.endswith(".sgc"))
