"""examples/v3/newton_cg.sg from Python (newton_cg.test), compiled with
--exports=grad,hvp: Newton-CG converges on a logistic regression, whose
gradient, Hessian and Hessian-vector products are checked against NumPy's
formulas; m.loss_value_hvp returns (out, (d_w,), (hv_w,))."""
import sys

import numpy as np
import sgc

m = sgc.compile(open(sys.argv[1]).read(), "newton_cg.sg", options="--exports=grad,hvp")
rng = np.random.default_rng(3)
n, d = 400, 6
x = rng.uniform(-1, 1, size=(n, d))
y = np.where(x @ rng.uniform(-2, 2, size=d) + rng.uniform(-0.5, 0.5, size=n) > 0, 1.0, -1.0)
lam = 0.01
failures = 0


def check(what, got, want, tol):
    global failures
    err = float(np.max(np.abs(np.asarray(got) - want)) / max(1.0, float(np.max(np.abs(want)))))
    if err <= tol:
        print("ok: %s" % what)
    else:
        print("FAIL: %s: error %.3g (%s vs %s)" % (what, err, got, want))
        failures += 1


def numpy_derivatives(w):
    z = -y * (x @ w)
    s = 1 / (1 + np.exp(-z))  # sigmoid(z): softplus'(z)
    g = x.T @ (s * -y) / n + lam * w
    h = (x.T * (s * (1 - s))) @ x / n + lam * np.eye(d)
    return g, h


w = rng.uniform(-0.5, 0.5, size=d)
v = rng.uniform(-1, 1, size=d)
g, h = numpy_derivatives(w)
out, grads, hvs = m.loss_value_hvp(w, x, y, lam, v)
check("loss_value_hvp's gradient against NumPy", grads[0], g, 1e-12)
check("loss_value_hvp's H v against NumPy", hvs[0], h @ v, 1e-12)
check("loss_hessian against NumPy", m.loss_hessian(w, x, y, lam), h, 1e-12)

w = np.zeros(d)
norms = [np.linalg.norm(numpy_derivatives(w)[0])]
for step in range(8):
    w = m.newton_step(w, x, y, lam, d)
    norms.append(np.linalg.norm(numpy_derivatives(w)[0]))
    if norms[-1] < 1e-10:
        break
print("ok: Newton-CG converged in %d steps" % (step + 1) if norms[-1] < 1e-10 and step < 6
      else "FAIL: gradient norms %s" % norms)
failures += not (norms[-1] < 1e-10 and step < 6)
print("%d failures" % failures)
sys.exit(1 if failures else 0)
