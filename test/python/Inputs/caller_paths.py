"""Every path of the Python function written for an entry point (spec
section 10; python/sgc/__init__.py's _caller), against NumPy: an ndarray
taken as it is; one that is not contiguous, read-only or empty (copied or
passed through the conversion rules); a list; an argument of the wrong
rank refused by the generated code, after which the same function, on the
same descriptor block, takes a right one again; results shaped by a
literal, like a parameter, and by a size expression; one result alone or
several in a tuple, f_jvp's (out, t_out) and f_hvp's
(out, (d_pa, ...), (hv_pa, ...)); no argument at all."""
import numpy as np
import sgc
from check import close, done, equal

m = sgc.compile("""
export fn mv(a: f64[n, k], b: f64[k]) -> f64[n] { return a @ b; }
export fn sq(x: f64[n]) -> f64 { return sum(x * x); }
export fn tail(x: f32[n]) -> f32[n - 1] { return x[1:n] * 2.0; }
export fn fixed(x: f64[3]) -> (f64[2, 3], f64) { return ((zeros(f64[2, 1]) + 1.0) @ reshape(x, [1, 3]), sum(x)); }
export fn nothing() -> f32 { return 1.5; }
""", "paths.sg", options="--exports=grad,jvp,hvp")
rng = np.random.default_rng(4)
a, b = rng.standard_normal((3, 4)), rng.standard_normal(4)

close(m.mv(a, b), a @ b, 1e-15, "mv: contiguous arrays, as they are")
close(m.mv(np.asfortranarray(a), b[::1]), a @ b, 1e-15, "mv: a Fortran-order array (copied)")
close(m.mv(a.T.copy().T, np.repeat(b, 2)[::2]), a @ b, 1e-15, "mv: strided views (copied)")
ro = a.copy()
ro.flags.writeable = False
close(m.mv(ro, b), a @ b, 1e-15, "mv: a read-only array")
close(m.mv(a.tolist(), list(b)), a @ b, 1e-15, "mv: lists")
equal(m.mv(np.zeros((0, 4)), b).shape, (0,), "mv: an empty argument gives an empty result")
for bad in (b, a[None]):
    try:
        m.mv(bad, b)
        equal("no error", "an error", "mv: rank %d for a" % bad.ndim)
    except sgc.Error as e:
        print("Error: %s" % e)
    close(m.mv(a, b), a @ b, 1e-15, "mv: right again after the refusal")
try:
    m.mv(a, a)
except sgc.Error as e:
    print("Error: %s" % e)
close(m.mv(a, b), a @ b, 1e-15, "mv: right again after the refusal")

value, d_x = m.sq_grad(b)
close(value, b @ b, 1e-15, "sq_grad: the value (a NumPy scalar)")
equal(type(value), np.float64, "sq_grad: the value's type")
close(d_x, 2 * b, 1e-15, "sq_grad: the gradient, shaped like x")
close(m.sq_jvp(b, np.ones(4)), (b @ b, 2 * b.sum()), 1e-14, "sq_jvp: (out, t_out)")
out, grads, hv = m.sq_hvp(b, np.ones(4))
close(out, b @ b, 1e-15, "sq_hvp: out")
equal((type(grads), len(grads), type(hv), len(hv)), (tuple, 1, tuple, 1),
      "sq_hvp: (out, (d_x,), (hv_x,))")
close(grads[0], 2 * b, 1e-15, "sq_hvp: d_x")
close(hv[0], 2 * np.ones(4), 1e-15, "sq_hvp: hv_x")

x = np.arange(5, dtype=np.float32)
close(m.tail(x), 2 * x[1:], 0, "tail: a result of shape [n - 1]")
close(m.tail(x[:2]), 2 * x[1:2], 0, "tail: the same function, another n")
y, t = m.tail_jvp(x, np.ones(5, np.float32))
close(t, 2 * np.ones(4), 0, "tail_jvp: t_out of shape [n - 1]")

mat, s = m.fixed(b[:3])
close(mat, np.stack([b[:3], b[:3]]), 0, "fixed: a result of literal shape [2, 3]")
close(s, b[:3].sum(), 1e-15, "fixed: and a scalar, in a tuple")
close(m.nothing(), 1.5, 0, "nothing: no argument")
try:
    m.nothing(1.0)
except TypeError as e:
    print("TypeError: %s" % e)
try:
    m.tail()
except TypeError as e:
    print("TypeError: %s" % e)
done()
