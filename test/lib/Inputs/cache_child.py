"""One process's compile through libsgc's cache: compiles argv[1] (named
argv[2] in messages, with options argv[3]), calls the first export and
its gradient on fixed data, and prints the CPU seconds the compile took
and the bytes of every result. SGC_CACHE_* come from the environment."""
import sys
import time

import numpy as np
import sgc

source = open(sys.argv[1]).read()
t0 = time.process_time()
m = sgc.compile(source, sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else None)
cpu = time.process_time() - t0
rng = np.random.default_rng(1)
digest = []
for name, fn in m.functions.items():
    entry = fn.entry
    args = []
    sizes = {}
    for p in entry.params:
        shape = tuple(sizes.setdefault(d, 3 + len(sizes)) if not d.isdigit() else int(d)
                      for d in p.dims)
        if p.dtype == "i32":
            args.append(np.zeros(shape, np.int32))
        else:
            args.append(rng.standard_normal(shape).astype(p.npdtype))
    out = fn(*args)
    for r in (out if isinstance(out, tuple) else (out,)):
        digest.append(np.asarray(r).tobytes().hex()[:64])
print("compile cpu %.6f" % cpu)
print("results %s" % " ".join(digest))
