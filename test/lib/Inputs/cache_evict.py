"""A bounded size, least recently used first: with SGC_CACHE_SIZE just
under three entries, storing a third evicts the entry used longest ago,
not the one just hit. Usage: cache_evict.py DIR A.sg B.sg C.sg"""
import os
import sys
import time

from cache_run import done, entries, equal, run

directory, a, b, c = sys.argv[1:5]
scratch = directory + ".sizes"
size = {}
for src in (a, b, c):
    before = set(entries(scratch)) if os.path.isdir(scratch) else set()
    run(scratch, src)
    (new,) = set(entries(scratch)) - before
    size[src] = (new, os.path.getsize(os.path.join(scratch, new)))
limit = {"SGC_CACHE_SIZE": str(sum(n for _, n in size.values()) - 1)}
name = {size[s][0]: s for s in size}


def step(what, src):
    time.sleep(0.05)  # apart in the file system's clock
    _, _, trace = run(directory, src, extra=limit)
    said = []
    for t in trace:
        word, path = t.split()[2:4]
        said.append(word + (" " + os.path.basename(name[os.path.basename(path)])
                            if word == "evicted" else ""))
    left = sorted(os.path.basename(name[e]) for e in entries(directory))
    print("%s: %s; left: %s" % (what, ", ".join(said), " ".join(left)))


step("A", a)
step("B", b)
step("A again", a)
step("C", c)
step("B again", b)
equal(sum(os.path.getsize(os.path.join(directory, e)) for e in entries(directory))
      <= int(limit["SGC_CACHE_SIZE"]), True, "within SGC_CACHE_SIZE")
done()
