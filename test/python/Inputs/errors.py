"""Every error path of the Python module: a wrong dtype, rank or shape
raises sgc.Error with the runtime's message (and no conversion happens);
dtypes sgc has no name for and ranks past 8 are refused the same way; a
wrong argument count is a TypeError; a bad program or bad flags raise
sgc.CompileError with the diagnostics; a missing file is an OSError.
Non-contiguous arrays are copied, not refused."""
import sys

import numpy as np
import sgc
from check import close, done, equal

m = sgc.load(sys.argv[1])
w = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
x = np.array([1, -1, 0.5, 2], np.float32)
y = np.array([0, 1, 0], np.float32)


def message(fn, *args):
    try:
        fn(*args)
    except sgc.Error as e:
        return "%s(%s): %s" % (type(e).__name__, e.code, e)
    except (TypeError, OSError) as e:
        return "%s: %s" % (type(e).__name__, e)
    return "no error"


print(message(m.xent_grad, w.astype(np.float64), x, y))
print(message(m.xent_grad, w, x.astype(np.float64), y))
print(message(m.xent_grad, w, x[:3], y))
print(message(m.xent_grad, w.reshape(12), x, y))
print(message(m.xent, w, x, np.float32(1.0)))
print(message(m.xent_grad, w.astype(np.int64), x, y))
print(message(m.xent_grad, w.astype(np.float16), x, y))
print(message(m.xent_grad, w, x, y.astype(">f4")))
print(message(m.xent_grad, np.zeros((1,) * 9, np.float32), x, y))
print(message(m.xent_grad, w, x))
print(message(sgc.compile, "export fn f(x: f32[n]) -> f32 {\n  return sum(x) + q;\n}\n", "bad.sg"))
print(message(sgc.compile, open(sys.argv[1]).read(), "s.sg", "-O3 --bogus"))
print(message(sgc.load, "/nonexistent/model.sg"))
equal(issubclass(sgc.CompileError, sgc.Error), True, "CompileError is an sgc.Error")

# Non-contiguous and Python values: the same results as contiguous arrays.
want = m.xent_grad(w, x, y)
wt = np.asfortranarray(w)
equal(wt.flags.c_contiguous, False, "a Fortran-order argument")
got = m.xent_grad(wt, x[::1], y)
close(got[1], want[1], 0, "d_w from a Fortran-order w")
big = np.zeros(8, np.float32)
big[::2] = x
got = m.xent_grad(w, big[::2], y)
close(got[1], want[1], 0, "d_w from a strided x")
got = m.xent_grad(w.tolist(), [1, -1, 0.5, 2], [0, 1, 0])
close(got[1], want[1], 0, "d_w from Python lists (which take the parameter's dtype)")
done()
