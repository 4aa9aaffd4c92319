"""The issue's done-when: import sgc in Debian's python3 and compute
xent_grad of the stable softmax, checked against NumPy: the loss and a
hand-derived gradient (d loss / d w = outer(p * sum(y) - y, x) with p the
softmax of w @ x), and central differences of an f64 build."""
import sys

import numpy as np
import sgc
from check import central_differences, close, done, equal

path = sys.argv[1]
m = sgc.load(path)
source = open(path).read()
m64 = sgc.compile(source.replace("f32", "f64"), "xent64.sg")

rng = np.random.default_rng(12)
k, d = 5, 7
w = rng.standard_normal((k, d)).astype(np.float32)
x = rng.standard_normal(d).astype(np.float32)
y = rng.random(k).astype(np.float32)  # soft labels: sum(y) != 1 tests the formula

def numpy_loss(w, x, y):
    z = w @ x
    p = np.exp(z - z.max())
    p /= p.sum()
    return -np.sum(y * np.log(p))

loss = m.xent(w, x, y)
equal(type(loss), np.float32, "xent returns a NumPy f32 scalar")
close(loss, numpy_loss(w.astype(np.float64), x, y), 1e-5, "xent against NumPy")

value, d_w = m.xent_grad(w, x, y)
equal((d_w.dtype, d_w.shape), (np.dtype(np.float32), (k, d)), "d_w is f32[k, d]")
close(value, loss, 0, "xent_grad's value is xent's")
w64, x64, y64 = (a.astype(np.float64) for a in (w, x, y))
z = w64 @ x64
p = np.exp(z - z.max())
p /= p.sum()
close(d_w, np.outer(p * y64.sum() - y64, x64), 1e-5, "d_w against the hand-derived gradient")

value64, d_w64 = m64.xent_grad(w64, x64, y64)
fd = central_differences(lambda w_: m64.xent(w_, x64, y64), w64.copy())
close(d_w64, fd, 1e-7, "f64 d_w against central differences")
close(d_w, d_w64, 1e-5, "f32 d_w against the f64 gradient")
done()
