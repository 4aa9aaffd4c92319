"""python_overhead.py: the cost of a call from Python (part of `make bench`).

Issue 32's bar: a call of a scalar function on two small arrays costs under
5 us from Python. Times, in one run and on one thread, the median CPU time
per call (many batches after a warm-up) of:
  - m.dot(a, b) and m.dot_grad(a, b) through the sgc module (f32[16] each);
  - the same entry point called through ctypes on descriptors built once
    beforehand: the floor (the ctypes call and the generated code's own
    argument checks and work), which the module's overhead is measured
    against;
  - sgc.torch's callable on torch tensors (forward, and forward + backward),
    when torch is installed.
Usage: PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py [--budget S]
"""
import ctypes
import statistics
import sys
import time

import numpy as np
import sgc

BAR_US = 5.0


def per_call(fn, budget):
    """Median CPU seconds per call over batches of 1000 calls."""
    for _ in range(2000):
        fn()
    times, spent = [], 0.0
    while spent < budget or len(times) < 5:
        t0 = time.thread_time()
        for _ in range(1000):
            fn()
        dt = time.thread_time() - t0
        spent += dt
        times.append(dt / 1000)
    return statistics.median(times)


def main():
    budget = float(sys.argv[sys.argv.index("--budget") + 1]) if "--budget" in sys.argv else 1.0
    sgc.set_num_threads(1)
    m = sgc.compile("export fn dot(a: f32[n], b: f32[n]) -> f32 { return sum(a * b); }", "dot.sg")
    a = np.linspace(-1, 1, 16, dtype=np.float32)
    b = np.linspace(2, 3, 16, dtype=np.float32)

    # The floor: descriptors built once, the entry point called through ctypes.
    class Tensor(ctypes.Structure):
        _fields_ = [("data", ctypes.c_void_p), ("shape", ctypes.c_int64 * 8),
                    ("rank", ctypes.c_int32), ("dtype", ctypes.c_int32)]
    out = np.zeros((), np.float32)
    ts = [Tensor(x.ctypes.data, (ctypes.c_int64 * 8)(*x.shape), x.ndim, 1) for x in (a, b, out)]
    bare = m.dot.entry.fn
    addresses = [ctypes.addressof(t) for t in ts]
    assert bare(*addresses) == 0 and out[()] == m.dot(a, b)

    rows = [("ctypes, descriptors prebuilt (floor)", per_call(lambda: bare(*addresses), budget)),
            ("m.dot(a, b)", per_call(lambda: m.dot(a, b), budget)),
            ("m.dot_grad(a, b)", per_call(lambda: m.dot_grad(a, b), budget))]
    try:
        import torch
        from sgc import torch as sgc_torch
        torch.set_num_threads(1)
        dot = sgc_torch.function(m, "dot")
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        wa = ta.clone().requires_grad_()

        def forward_backward():
            dot(wa, tb).backward()
        rows.append(("sgc.torch dot(ta, tb)", per_call(lambda: dot(ta, tb), budget)))
        rows.append(("sgc.torch dot(wa, tb).backward()", per_call(forward_backward, budget)))
        rows.append(("torch.dot(ta, tb) (for reference)", per_call(lambda: torch.dot(ta, tb), budget)))
    except ImportError:
        rows.append(("sgc.torch: skipped, torch is not installed", None))

    floor = rows[0][1]
    print("%-40s %9s %9s" % ("call (f32[16] x 2 -> f32, one thread)", "us/call", "x floor"))
    for name, t in rows:
        if t is None:
            print(name)
        else:
            print("%-40s %9.2f %9.1f" % (name, t * 1e6, t / floor))
    verdict = "within" if rows[1][1] * 1e6 < BAR_US else "ABOVE"
    print("m.dot(a, b): %.2f us per call, %s the bar of %.0f us (overhead over the floor: %.2f us)"
          % (rows[1][1] * 1e6, verdict, BAR_US, (rows[1][1] - floor) * 1e6))
    return 0 if verdict == "within" else 1


if __name__ == "__main__":
    sys.exit(main())
