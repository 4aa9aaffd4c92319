"""Compare the final parameters two runs of train.c printed.

usage: same_params.py RUN_A.txt RUN_B.txt
Exit 1, printing both values and the index, if any two differ by more than
1e-4 relative to the largest parameter (f32 sums in another order)."""
import sys

def params(path):
    for line in open(path):
        if line.startswith("final parameters:"):
            return [float(v) for v in line.split(":", 1)[1].split()]
    sys.exit("%s: no 'final parameters:' line" % path)

a, b = params(sys.argv[1]), params(sys.argv[2])
if len(a) != len(b) or not a:
    sys.exit("%d parameters against %d" % (len(a), len(b)))
scale = max(abs(v) for v in b) or 1.0
worst = 0.0
for k, (x, y) in enumerate(zip(a, b)):
    rel = abs(x - y) / scale
    worst = max(worst, rel)
    if rel > 1e-4:
        print("%s: parameter %d: %.9g, but %s: %.9g" % (sys.argv[1], k, x, sys.argv[2], y))
        sys.exit(1)
print("same %d parameters (largest relative difference %.2g)" % (len(a), worst))
