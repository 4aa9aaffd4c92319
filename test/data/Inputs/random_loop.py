"""normal(key + i, T) inside a differentiated for loop: the gradient
(the noise is a constant) against central differences in f64, and the
same bits when the loop is checkpointed (--ad-memory recomputes the
iterations, so it draws the numbers again: they must be the same)."""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python", "Inputs"))
import sgc  # noqa: E402
from check import central_differences, close, done, equal  # noqa: E402

src = """
export fn noisy_rnn(w: f64[h, h], x0: f64[h], key: i32, t: i32) -> f64 {
  var s = x0;
  for i in 0..t {
    s = tanh(s @ w + 0.1 * normal(key + i, f64[h]));
  }
  return sum(s * s);
}
"""
plain = sgc.compile(src, "noisy_rnn.sg")
ckpt = sgc.compile(src, "noisy_rnn.sg", options="--ad-memory=200")
rng = np.random.default_rng(1)
w, x0 = rng.standard_normal((4, 4)) * 0.5, rng.standard_normal(4)
k, t = np.int32(3), np.int32(9)
g = plain.noisy_rnn_grad(w, x0, k, t)
close(g[1], central_differences(lambda w_: plain.noisy_rnn(w_, x0, k, t), w.copy()), 1e-7,
      "d_w against central differences")
close(g[2], central_differences(lambda x_: plain.noisy_rnn(w, x_, k, t), x0.copy()), 1e-7,
      "d_x0 against central differences")
gc = ckpt.noisy_rnn_grad(w, x0, k, t)
equal(all(np.array_equal(p, q) for p, q in zip(g, gc)), True,
      "--ad-memory=200 gives the same bits")
done()
