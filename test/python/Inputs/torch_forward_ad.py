"""Forward-mode AD (torch.autograd.forward_ad) through sgc.torch, by the
module's f_jvp: the tangent of y = sin(x) * w * c (c const) and of its
sum, against the derivative by hand, central differences, and the
reverse sweep (u . (J t) from f_jvp equals (J^T u) . t from f_vjp);
partial tangents (x only) leave w's term out. Without f_jvp in the
module, a clear error naming the option to compile with."""
import numpy as np
import sgc
import sgc.torch
import torch
import torch.autograd.forward_ad as fwAD
from check import close, done, equal

src = ("export fn f(x: f64[n], w: f64[n], c: const f64) -> f64[n] { return sin(x) * w * c; }\n"
       "export fn s(x: f64[n], w: f64[n]) -> f64 { return sum(exp(x) * w); }\n")
m = sgc.compile(src, "f.sg", options="--exports=grad,jvp")
f, s = sgc.torch.function(m, "f"), sgc.torch.function(m, "s")
rng = np.random.default_rng(3)
x, w, tx, tw, u = (torch.tensor(rng.standard_normal(4)) for _ in range(5))
c = 1.5

with fwAD.dual_level():
    y = f(fwAD.make_dual(x, tx), fwAD.make_dual(w, tw), c)
    primal, tangent = fwAD.unpack_dual(y)
    _, only_x = fwAD.unpack_dual(f(fwAD.make_dual(x, tx), w, c))
    _, ts = fwAD.unpack_dual(s(fwAD.make_dual(x, tx), fwAD.make_dual(w, tw)))
close(primal.numpy(), torch.sin(x) * w * c, 1e-15, "f's value")
close(tangent.numpy(), (torch.cos(x) * w * tx + torch.sin(x) * tw) * c, 1e-14,
      "f's tangent against the derivative by hand")
close(only_x.numpy(), torch.cos(x) * w * tx * c, 1e-14, "f's tangent along x only")
close(ts.numpy(), float(torch.sum(torch.exp(x) * (w * tx + tw))), 1e-13, "s's tangent (a scalar)")

h = 1e-6
fd = (f(x + h * tx, w + h * tw, c) - f(x - h * tx, w - h * tw, c)) / (2 * h)
close(tangent.numpy(), fd.numpy(), 1e-8, "f's tangent against central differences")

xr, wr = x.clone().requires_grad_(), w.clone().requires_grad_()
gx, gw = torch.autograd.grad(f(xr, wr, c), (xr, wr), u)
close(float(u @ tangent), float(gx @ tx + gw @ tw), 1e-13,
      "forward and reverse agree: u . f_jvp(t) = f_vjp(u) . t")

plain = sgc.torch.function(sgc.compile(src, "f.sg"), "f")
with fwAD.dual_level():
    try:
        plain(fwAD.make_dual(x, tx), w, c)
        equal("no error", "an error", "forward AD without f_jvp")
    except sgc.Error as e:
        print("Error: %s" % e)
done()
