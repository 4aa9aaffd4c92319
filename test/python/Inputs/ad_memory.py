"""--ad-memory through sgc.compile's options string (the library's flag
parser is the command's): the checkpointed gradient equals the full tape's
bit for bit, a budget one iteration does not fit raises sgc.Error with the
runtime's message, and a bad size raises sgc.CompileError."""
import numpy as np
import sgc
from check import done, equal

src = """export fn run(x: f64[n], w: f64, steps: i32) -> f64 {
  var h = x;
  for i in 0..steps {
    h = tanh(h * w + f64(i) * 0.01);
  }
  return sum(h * h);
}
"""
tape = sgc.compile(src, "run.sg")
ck = sgc.compile(src, "run.sg", "--ad-memory=1K")
x = np.linspace(-1, 1, 8)
w = np.float64(0.9)
for steps in (0, 1, 5, 200):
    a = tape.run_grad(x, w, np.int32(steps))
    b = ck.run_grad(x, w, np.int32(steps))
    equal(all(np.array_equal(p, q) and np.asarray(p).tobytes() == np.asarray(q).tobytes()
              for p, q in zip(a, b)), True, "%d steps: bit-identical gradients" % steps)
small = sgc.compile(src, "run.sg", "--ad-memory=100")
try:
    small.run_grad(x, w, np.int32(3))
    print("FAIL: no error")
except sgc.Error as e:
    print("Error(%s): %s" % (e.code, e))
try:
    sgc.compile(src, "run.sg", "--ad-memory=12Q")
    print("FAIL: no error")
except sgc.CompileError as e:
    print("CompileError: %s" % e)
done()
