"""What the key holds: the source, the filename, the options (as given)
and the target CPU (the compiler's version and build, and LLVM's version,
too, which a test cannot change). Each change below misses and stores an
entry of its own; the unchanged compile hits. Usage: cache_key.py DIR FILE.sg"""
import os
import sys

from cache_run import done, entries, equal, run

directory, source = sys.argv[1], sys.argv[2]
edited = os.path.join(directory + ".edited.sg")
open(edited, "w").write(open(source).read() + "\n# a comment\n")


def outcome(what, **kw):
    src = kw.pop("src", source)
    _, _, trace = run(directory, src, **kw)
    print("%s: %s" % (what, ", ".join(t.split()[2] for t in trace)))


outcome("first")
outcome("the same again")
outcome("-O1", options="-O1")
outcome("-O1 again", options="-O1")
outcome("--target-cpu=generic", options="--target-cpu=generic")
outcome("another filename", filename="other.sg")
outcome("a comment added", src=edited)
outcome("the first again")
equal(len(entries(directory)), 5, "five entries")
done()
