"""Version 2 data through the Python module: i32 arrays in (no gradient
output for them), several results out as a tuple (and a vjp with one seed
per float result), and an out-of-range index raising sgc.Error with the
runtime's message. The bag-of-words loss of examples/v2 in f64 is checked
against NumPy and its gradient against central differences."""
import sys

import numpy as np
import sgc
from check import central_differences, close, done, equal

source = open(sys.argv[1]).read().replace("f32", "f64")
m = sgc.compile(source, "bow_classifier.sg")
equal(sorted(m.functions), ["bow_loss", "bow_loss_grad"], "entry points")

rng = np.random.default_rng(5)
v, d, c, b, s = 9, 4, 3, 5, 6
emb = rng.standard_normal((v, d))
w = rng.standard_normal((d, c))
tokens = rng.integers(-v, v, (b, s)).astype(np.int32)  # negative ids count from the end
labels = rng.integers(0, c, b).astype(np.int32)


def reference(emb_, w_):
    logits = emb_[tokens].mean(axis=1) @ w_
    m_ = logits.max(axis=1, keepdims=True)
    lse = np.log(np.exp(logits - m_).sum(axis=1)) + m_[:, 0]
    return np.mean(lse - logits[np.arange(b), labels])


close(m.bow_loss(emb, w, tokens, labels), reference(emb, w), 1e-12, "bow_loss against NumPy")
out = m.bow_loss_grad(emb, w, tokens, labels)
equal(len(out), 3, "bow_loss_grad returns the value and two gradients (none for i32)")
close(out[1], central_differences(lambda e: m.bow_loss(e, w, tokens, labels), emb.copy()),
      1e-7, "d_emb against central differences")
close(out[2], central_differences(lambda w_: m.bow_loss(emb, w_, tokens, labels), w.copy()),
      1e-7, "d_w against central differences")

bad = tokens.copy()
bad[1, 2] = v + 3
try:
    m.bow_loss(emb, w, bad, labels)
    equal("no error", "sgc.Error", "out-of-range token")
except sgc.Error as e:
    print("Error(%d): %s" % (e.code, e))

try:
    m.bow_loss(emb, w, tokens.astype(np.float32), labels)
    equal("no error", "sgc.Error", "f32 tokens")
except sgc.Error as e:
    print("Error(%d): %s" % (e.code, e))

two = sgc.compile("""
export fn stats(x: f64[n], k: i32) -> (f64, i32, f64[n]) {
  return (sum(x * x), k * 2 + 1, x * f64(k));
}
""", "stats.sg")
s2, k2, y2 = two.stats(np.array([1.0, 2.0, 3.0]), np.int32(4))
close(s2, 14.0, 0, "result 0 of three")
equal(int(k2), 9, "result 1 (i32)")
close(y2, [4.0, 8.0, 12.0], 0, "result 2")
r = two.stats_vjp(np.array([1.0, 2.0, 3.0]), np.int32(4), np.float64(1.0), np.array([1.0, 0.0, 2.0]))
equal(len(r), 4, "stats_vjp returns three values and d_x")
close(r[3], [2 * 1 + 4 * 1, 2 * 2, 2 * 3 + 4 * 2], 0, "d_x = 2 x seed0 + k seed2")
done()
