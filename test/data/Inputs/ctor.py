"""zeros(T), ones(T), full(T, v), arange(n), argmax/argmin: values against
NumPy (first position on ties, the first NaN wins as in NumPy, flat
row-major position without an axis), gradients against central
differences in f64, and an empty axis at run time."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python", "Inputs"))
import sgc  # noqa: E402
from check import central_differences, close, done, equal  # noqa: E402

m = sgc.compile(open(sys.argv[1]).read(), "ctor.sg")
rng = np.random.default_rng(5)
x = rng.standard_normal((3, 4))
z, o, a, f = m.make(x, 1.5)
close(z, x * 1.5, 0, "zeros(T) + x, times full(T, s)")
close(o, np.full(4, 2.5), 0, "ones(T) * 2 + full(T, 0.5)")
equal(a.tolist(), [0, 1, 2, 3], "arange(n + 1)")
equal(f.tolist(), [[7, 8]] * 3, "full(i32[n, 2], 7) + arange(2)")
equal((a.dtype, f.dtype), (np.dtype(np.int32), np.dtype(np.int32)), "i32 results")

s, v = 0.7, rng.standard_normal(4)
val, d_x, d_s, d_v = m.full_loss_grad(x, s, v)
close(val, np.sum(v * x * s), 1e-12, "full_loss value")
close(d_x, central_differences(lambda x_: m.full_loss(x_, s, v), x.copy()), 1e-7,
      "d_x against central differences")
close(d_s, central_differences(lambda s_: m.full_loss(x, float(s_), v), np.array(s)), 1e-7,
      "d_s against central differences (full's broadcast sums)")
close(d_v, central_differences(lambda v_: m.full_loss(x, s, v_), v.copy()), 1e-7,
      "d_v against central differences")

nan = float("nan")
y = np.array([[1, 5, 5, 0], [nan, 2, nan, 9], [0, -1, -1, 3]])
r = m.positions(y)
equal(r[0].tolist(), [1, 0, 3], "argmax(x, axis=1): first of a tie, first NaN")
equal(r[1].tolist(), [1, 2, 1, 0], "argmin(x, axis=0)")
equal(int(r[2]), 4, "argmax(x): flat position of the first NaN")
equal(r[3].tolist(), [3, 0, 1], "argmin(x, axis=-1)")
equal(int(r[4]), 0, "argmax of a scalar")
for t in range(5):
    q = rng.integers(-3, 3, (4, 5)).astype(np.float64)
    r = m.positions(q)
    equal((r[0].tolist(), r[1].tolist(), int(r[2])),
          (np.argmax(q, 1).tolist(), np.argmin(q, 0).tolist(), int(np.argmax(q))),
          "random ties %d as NumPy" % t)
equal(tuple(int(v) for v in m.ipos(np.array([2, 7, -1, 7, -1], np.int32))), (1, 2),
      "argmax/argmin on i32")

p = np.array([0.5, 3.0, -2.0, 1.0])
val, d_p = m.pick_grad(p)
close(val, 3.0, 0, "max(x) * argmax(x)")
close(d_p, central_differences(lambda p_: m.pick(p_), p.copy()), 1e-7,
      "argmax has zero derivative")
try:
    m.positions(np.zeros((2, 0)))
    equal("no error", "sgc.Error", "argmax along an empty axis")
except sgc.Error as e:
    equal(str(e), "positions: ctor.sg:15: argmax/argmin along an axis of size 0 has no position",
          "argmax along an empty axis fails")
done()
