"""Helpers for the Python tests: checks that print both values and the
line on failure, and central differences in f64."""
import inspect
import sys

import numpy as np

failures = 0


def close(got, want, tol, what):
    """max |got - want| <= tol * max(1, max |want|)."""
    global failures
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    err = float(np.max(np.abs(got - want))) if want.size else 0.0
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    line = inspect.stack()[1].lineno
    if not (got.shape == want.shape and err <= tol * scale):
        failures += 1
        print("FAIL line %d: %s: got\n%s\nexpected\n%s\n(shapes %s, %s; error %g, tol %g)"
              % (line, what, got, want, got.shape, want.shape, err, tol))
    else:
        print("ok: %s (error %.2g)" % (what, err))


def equal(got, want, what):
    global failures
    line = inspect.stack()[1].lineno
    if got != want:
        failures += 1
        print("FAIL line %d: %s: got %r, expected %r" % (line, what, got, want))
    else:
        print("ok: %s" % what)


def central_differences(f, x, h=1e-6):
    """d f / d x of a scalar function of an f64 array, element by element."""
    g = np.zeros_like(x)
    for i in np.ndindex(x.shape):
        keep = x[i]
        x[i] = keep + h
        up = float(f(x))
        x[i] = keep - h
        down = float(f(x))
        x[i] = keep
        g[i] = (up - down) / (2 * h)
    return g


def done():
    print("%d failures" % failures)
    sys.exit(1 if failures else 0)
