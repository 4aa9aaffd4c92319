"""sgc.torch.function (spec section 10, v3), one behaviour at a time:
results are torch tensors; backward through f_grad scales by the
incoming gradient, through f_vjp takes it as the seed; const and i32
parameters get no gradient, i32 results are not differentiable; dtypes
are checked per parameter with the fix in the message, non-tensors
convert only exactly; contiguous tensors are passed without a copy,
others are copied; a second derivative is refused; the sgc module itself
refuses torch tensors of the wrong dtype in the same words."""
import numpy as np
import sgc
import sgc.torch
import torch
from check import close, done, equal

m = sgc.compile("""
export fn loss(w: f64[k, d], x: const f64[d], labels: i32[k]) -> f64 {
  return sum(tanh(w @ x) * f64(labels));
}
export fn layer(x: f64[n, d], w: f64[d, h]) -> f64[n, h] {
  return tanh(x @ w);
}
export fn stats(x: f64[n]) -> (f64, i32, f64[n]) {
  return (sum(x * x), 3, x * 2.0);
}
""", "t.sg")
loss = sgc.torch.function(m, "loss")
layer = sgc.torch.function(m, "layer")
stats = sgc.torch.function(m, "stats")
torch.manual_seed(1)
w = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
x = torch.randn(4, dtype=torch.float64, requires_grad=True)
labels = torch.tensor([1, -2, 3], dtype=torch.int32)
wn, xn, ln = w.detach().numpy(), x.detach().numpy(), labels.numpy()

value = loss(w, x, labels)
equal((type(value), value.dtype, tuple(value.shape)), (torch.Tensor, torch.float64, ()),
      "a scalar result is a 0-d torch tensor")
(3 * value).backward()
want_value, want_dw = m.loss_grad(wn, xn, ln)
close(value.item(), want_value, 0, "the value is loss's")
equal(np.array_equal(w.grad.numpy(), 3 * want_dw), True, "w.grad = 3 * loss_grad's d_w (backward of 3 * loss)")
equal(x.grad, None, "the const x gets no gradient, though it requires grad")
g, = torch.autograd.grad(loss(w, x, labels), [w])
equal(np.array_equal(g.numpy(), want_dw), True, "torch.autograd.grad gives loss_grad's d_w")

xs = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
ws = torch.randn(4, 2, dtype=torch.float64, requires_grad=True)
y = layer(xs, ws)
seed = torch.randn(5, 2, dtype=torch.float64)
y.backward(seed)
_, dx, dw = m.layer_vjp(xs.detach().numpy(), ws.detach().numpy(), seed.numpy())
equal(np.array_equal(xs.grad.numpy(), dx) and np.array_equal(ws.grad.numpy(), dw), True,
      "a tensor result: backward(seed) gives layer_vjp's d_x and d_w")

t = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
s, three, doubled = stats(t)
equal((three.dtype, three.requires_grad, doubled.requires_grad), (torch.int32, False, True),
      "an i32 result is not differentiable, a float one is")
(s + doubled.sum()).backward()
equal(t.grad.tolist(), [4.0, 6.0, 8.0], "backward through stats_vjp: 2 x + 2")


def message(fn, *args):
    try:
        fn(*args)
        return "no error"
    except sgc.Error as e:
        return "%s(%s): %s" % (type(e).__name__, e.code, e)
    except (TypeError, RuntimeError) as e:
        return "%s: %s" % (type(e).__name__, str(e).splitlines()[0])


print(message(loss, w.float(), x, labels))
print(message(loss, w, x, labels.long()))
print(message(loss, w, x, [1.5, 2, 3]))
print(message(loss, w, None, labels))
print(message(loss, w, x))
print(message(loss, w.to_sparse(), x, labels))
close(loss(w, x.detach().tolist(), [1, -2, 3]).item(), want_value, 0, "Python lists convert exactly")
print(message(sgc.torch.function, m, "loss_grad"))
print(message(m.loss, w.detach().float(), xn, ln))
print(message(m.loss, w, xn, ln))

# Zero-copy: the descriptors point at the tensors' own memory.
seen = []
raw = sgc._raw_call


def spy(entry, inputs, new_result):
    seen.append([address for address, _ in inputs])
    return raw(entry, inputs, new_result)


sgc._raw_call = spy
wt = torch.randn(4, 3, dtype=torch.float64).t()  # not contiguous
value2 = loss(wt, x, labels)
loss(w, x, labels)
sgc._raw_call = raw
equal(seen[1][:2], [w.data_ptr(), x.data_ptr()], "contiguous tensors are passed as they are")
equal(seen[0][0] != wt.data_ptr(), True, "a non-contiguous one is copied first")
close(value2.item(), m.loss(wt.numpy().copy(), xn, ln), 0, "  and gives the same value")

print(message(lambda: torch.autograd.grad(loss(w, x, labels), [w], create_graph=True)))
done()
