"""Several Python threads calling one entry point at once: the GIL is
released during a call, so each call must fill descriptors of its own
(a scalar result is read from them) and get its own result."""
import threading

import numpy as np
import sgc
from check import done, equal

m = sgc.compile("export fn dot(a: f64[n], b: f64[n]) -> f64 { return sum(a * b); }\n"
                "export fn axpy(s: f64, a: f64[n], b: f64[n]) -> f64[n] { return s * a + b; }\n")
bad = []


def work(seed):
    rng = np.random.default_rng(seed)
    for _ in range(3000):
        n = int(rng.integers(1, 50))
        a, b = rng.standard_normal(n), rng.standard_normal(n)
        s = float(rng.standard_normal())
        if abs(m.dot(a, b) - np.sum(a * b)) > 1e-12 * n:
            bad.append(("dot", seed))
        if not np.array_equal(m.axpy(s, a, b), s * a + b):
            bad.append(("axpy", seed))
        value, d_a, d_b = m.dot_grad(a, b)
        if not (np.array_equal(d_a, b) and np.array_equal(d_b, a)):
            bad.append(("dot_grad", seed))


threads = [threading.Thread(target=work, args=(seed,)) for seed in range(4)]
for t in threads:
    t.start()
for t in threads:
    t.join()
equal(bad[:3], [], "4 threads x 3000 calls of dot, axpy and dot_grad, each its own result")
done()
