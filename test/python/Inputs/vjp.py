"""A tensor result gets f_vjp(params..., seed) -> (value, gradients...):
the layer of examples/mlp.sg, tanh(x @ w), checked against NumPy's
hand-derived vector-Jacobian product and central differences in f64; and
the two-layer loss's four gradients in declaration order."""
import sys

import numpy as np
import sgc
from check import central_differences, close, done, equal

source = open(sys.argv[1]).read()
m = sgc.compile(source, "mlp.sg")
m64 = sgc.compile(source.replace("f32", "f64"), "mlp64.sg")
equal(sorted(m.functions), ["layer", "layer_vjp", "mlp_loss", "mlp_loss_grad"], "entry points")

rng = np.random.default_rng(3)
n, d, h, o = 4, 3, 5, 2
x = rng.standard_normal((n, d))
w = rng.standard_normal((d, h))
seed = rng.standard_normal((n, h))

y, d_x, d_w = m64.layer_vjp(x, w, seed)
close(y, np.tanh(x @ w), 1e-12, "layer_vjp's value")
dz = seed * (1 - np.tanh(x @ w) ** 2)
close(d_x, dz @ w.T, 1e-12, "d_x = (seed * (1 - y^2)) @ w.T")
close(d_w, x.T @ dz, 1e-12, "d_w = x.T @ (seed * (1 - y^2))")
fd = central_differences(lambda w_: np.sum(seed * m64.layer(x, w_)), w.copy())
close(d_w, fd, 1e-7, "d_w against central differences")

y32, d_x32, d_w32 = m.layer_vjp(*(a.astype(np.float32) for a in (x, w, seed)))
equal((y32.dtype, d_x32.shape, d_w32.shape), (np.dtype(np.float32), (n, d), (d, h)),
      "f32 results and shapes")
close(d_w32, d_w, 1e-5, "f32 d_w against f64")

w1, b1 = rng.standard_normal((d, h)), rng.standard_normal(h)
w2, b2 = rng.standard_normal((h, o)), rng.standard_normal(o)
xs, ys = rng.standard_normal((n, d)), rng.standard_normal((n, o))
out = m64.mlp_loss_grad(w1, b1, w2, b2, xs, ys)
equal(len(out), 5, "mlp_loss_grad returns the value and 4 gradients (x, y are const)")
params = [w1, b1, w2, b2]
for k, name in enumerate(["w1", "b1", "w2", "b2"]):
    def loss(p, k=k):
        args = list(params)
        args[k] = p
        return m64.mlp_loss(*args, xs, ys)
    close(out[1 + k], central_differences(loss, params[k].copy()), 1e-7, "d_" + name)
done()
