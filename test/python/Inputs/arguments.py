"""Spec section 10, v3: what an argument may be. Arrays of another float
dtype are refused with the fix in the message, from NumPy, torch and any
object with __array__; integer arrays of any width are accepted for an
i32 parameter when every value fits, else the first that does not is
named; Python numbers and lists convert only exactly; None is named;
sgc.set_num_threads reaches the runtime; help(m.f) shows the .sg
signature."""
import pydoc
import sys

import numpy as np
import sgc
from check import close, done, equal

m = sgc.compile("""
export fn scale(x: f32[n], k: i32[n], s: const f64) -> f32 {
  return sum(x * f32(k)) * f32(s);
}
""", "scale.sg")
x = np.array([1.0, 2.0, 3.0], np.float32)
k32 = np.array([1, -2, 3], np.int32)
want = float(np.sum(x * k32) * 0.5)


def message(*args, fn=m.scale):
    try:
        return "value %r" % float(fn(*args))
    except sgc.Error as e:
        return "%s(%s): %s" % (type(e).__name__, e.code, e)


class Wrapped:
    """Anything with __array__ (here an f64 array in disguise)."""

    def __init__(self, a):
        self.a = a

    def __array__(self, dtype=None):
        return self.a if dtype is None else self.a.astype(dtype)


# Floats: never converted, whatever they come in.
print(message(x.astype(np.float64), k32, 0.5))
print(message(Wrapped(x.astype(np.float64)), k32, 0.5))
print(message(np.float16(1.5) * np.ones(3, np.float16), k32, 0.5))
print(message(x, k32, np.float32(0.5)))
print(message(x.astype(np.int64), k32, 0.5))
print(message(x, k32.astype(np.float64), 0.5))
print(message(x, k32.astype(bool), 0.5))
close(m.scale(Wrapped(x), k32, 0.5), want, 0, "an f32 array through __array__")

# Integer arrays of any width for i32, when every value fits.
for dt in (np.int8, np.uint8, np.int16, np.uint16, np.uint32, np.int64, np.uint64, ">i4", ">i8"):
    close(m.scale(x, np.abs(k32).astype(dt), 0.5), m.scale(x, np.abs(k32), 0.5), 0,
          "i32 from %s" % np.dtype(dt))
big = np.array([1, 2, 2**31], np.int64)
print(message(x, big, 0.5))
print(message(x, np.array([1, -2**31 - 1, 2**40]), 0.5))
print(message(x, np.array([7, 8, 2**64 - 1], np.uint64), 0.5))
close(m.scale(x, np.array([2**31 - 1, -2**31, 0], np.int64), 0.0), 0.0, 0,
      "i32's extremes from int64 fit")

# Python numbers and lists: only exact conversions.
close(m.scale([1, 2, 3], [1, -2, 3], 0.5), want, 0, "lists of ints")
print(message(x, [1, 2, 2**70], 0.5))
close(m.scale([1, 2, 2**70], k32, 1), 1 - 4 + 3 * 2.0**70, 0, "2**70 is exact in f32")
print(message([1, 2, 2**70 + 1], k32, 0.5))
close(m.scale([1.0, 2.0, 3.0], [1.0, -2.0, 3.0], 1), want * 2, 0,
      "lists of whole floats for i32, an int for f64")
print(message(x, [0.5, 2, 3], 0.5))
print(message(x, [1, 2, 2**31], 0.5))
print(message([1, 2, 2**24 + 1], k32, 0.5))
print(message([1.0, 1e39, 2.0], k32, 0.5))
print(message(x, k32, 2**53 + 1))
print(message(x, [True, False, True], 0.5))
print(message(x, k32, "0.5"))
print(message(x, [[1, 2], [3]], 0.5))
equal(m.scale([0.1, 0.2, 0.3], k32, 0.5),
      m.scale(np.array([0.1, 0.2, 0.3], np.float32), k32, 0.5),
      "floats for f32 round as f32 literals do")

# None.
print(message(None, k32, 0.5))
print(message(x, k32, None))

# Threads: sgc.set_num_threads reaches the runtime's thread count.
sgc.set_num_threads(1)
equal(sgc._lib.sg_rt_num_threads(), 1, "set_num_threads(1)")
sgc.set_num_threads(3)
equal(sgc._lib.sg_rt_num_threads(), 3, "set_num_threads(3)")
close(m.scale(x, k32, 0.5), want, 0, "a call on 3 threads")
try:
    sgc.set_num_threads(-1)
except ValueError as e:
    print("ValueError: %s" % e)

# help(m.f): the .sg signature.
text = pydoc.render_doc(m.scale_grad, renderer=pydoc.plaintext)
print("\n".join(line.rstrip() for line in text.splitlines()[:4]))
equal(m.scale.__name__, "scale", "the function's name")
print(sgc.__version__)
done()
