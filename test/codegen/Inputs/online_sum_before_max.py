import sys

import numpy as np
import sgc

src = open(sys.argv[1]).read() + """
export fn written(z: f32[n], y: const f32[n]) -> f32 {
  let s = z - stop_gradient(max(z));
  return sum(y) * log(sum(exp(s))) - sum(y * s);
}
"""
m = sgc.compile(src, sys.argv[1], "")
for n in (100, 5000, 300000):
    r = np.random.default_rng(n)
    z, y = (r.normal(size=n) * 3).astype(np.float32), r.random(n).astype(np.float32)
    zd, yd = z.astype(np.float64), y.astype(np.float64)
    mx = zd.max()
    p = np.exp(zd - mx) / np.exp(zd - mx).sum()
    want, dwant = yd.sum() * (mx + np.log(np.exp(zd - mx).sum())) - (yd * zd).sum(), yd.sum() * p - yd
    v, (v2, d) = m.functions["lse"](z, y), m.functions["lse_grad"](z, y)
    d_written = np.asarray(m.functions["written_grad"](z, y)[1])
    a = yd.sum()
    rf = m.functions["read_first"](z, y)
    zz = zd * a
    rwant = a * (zz.max() + np.log(np.exp(zz - zz.max()).sum()))
    ok = (abs(v - want) <= 1e-5 * abs(want) and v2 == v and
          np.max(np.abs(np.asarray(d) - dwant)) <= 1e-5 * max(1, np.max(np.abs(dwant))) and
          np.array_equal(np.asarray(d), d_written) and abs(rf - rwant) <= 1e-5 * abs(rwant))
    print("%s: n=%d lse %.9g vs %.9g, read_first %.9g vs %.9g, gradient max diff %.3g, "
          "written-out gradient max diff %.3g" % ("ok" if ok else "FAIL", n, v, want, rf, rwant,
          np.max(np.abs(np.asarray(d) - dwant)), np.max(np.abs(np.asarray(d) - d_written))))
