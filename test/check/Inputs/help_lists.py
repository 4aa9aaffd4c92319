"""Checks sgc --help against the sources: every flag options.c compares
an argument with must be in the usage line and described; every getenv of
the compiler, libsgc, the runtime and the Python module must be described.
Usage: help_lists.py HELP_FILE ROOT"""
import glob
import os
import re
import sys

text = open(sys.argv[1]).read()
root = sys.argv[2]
usage, _, rest = text.partition("\n\n")
missing = []

options = open(os.path.join(root, "driver", "options.c")).read()
flags = set(re.findall(r'"(-[-A-Za-z0-9]+)', options.split("int options_parse(")[1]))
flags -= {"-h", "-O", "--emit-", "--emit-ir=", "--emit-dot="}  # spellings of listed ones
for flag in sorted(flags):
    bare = flag.rstrip("=")
    in_usage = bare in usage or (bare.startswith("-O") and "-O0|-O1|-O2|-O3" in usage)
    described = re.search(r"^  .*%s" % re.escape(bare), rest, re.M)
    if not (in_usage and described):
        missing.append("flag %s (usage: %s, described: %s)" % (flag, in_usage, bool(described)))
print("flags: every flag in the usage line and described" if not missing else "flags: missing")

names = set()
for pattern in ("driver/*.c", "lib/*.c", "runtime/*.c", "codegen/*.c", "frontend/*.c",
                "passes/*.c", "ir/*.c"):
    for path in glob.glob(os.path.join(root, pattern)):
        names |= set(re.findall(r'getenv\("([A-Z_]+)"\)', open(path).read()))
names |= set(re.findall(r'environ(?:\.get)?\(?\[?"(SG[A-Z_]*)"', open(
    os.path.join(root, "python", "sgc", "__init__.py")).read()))
names -= {"HOME", "XDG_CACHE_HOME"}  # named in SGC_CACHE_DIR's line
before = len(missing)
for name in sorted(names):
    if not re.search(r"^  %s\b" % name, rest, re.M):
        missing.append("environment variable %s" % name)
print("environment: every variable described" if len(missing) == before else "environment: missing")
for m in missing:
    print("missing: " + m)
print("%d missing" % len(missing))
