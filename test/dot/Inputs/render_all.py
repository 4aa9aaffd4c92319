"""Render every shipped example's --emit-dot output with Graphviz's dot.

usage: render_all.py SGC EXAMPLES_DIR
Fails (exit 1, naming the file) if sgc or dot fails, if dot warns, or if the
number of SVG pictures differs from the number of digraphs (one per
function); prints one summary line otherwise."""
import glob
import os
import subprocess
import sys

sgc, root = sys.argv[1], sys.argv[2]
files = sorted(glob.glob(os.path.join(root, "*.sg")) + glob.glob(os.path.join(root, "*", "*.sg")))
graphs = 0
for sg in files:
    src = subprocess.run([sgc, sg, "--emit-dot"], capture_output=True, text=True)
    if src.returncode != 0 or src.stderr:
        sys.exit("%s: sgc --emit-dot failed (%d): %s" % (sg, src.returncode, src.stderr))
    svg = subprocess.run(["dot", "-Tsvg"], input=src.stdout, capture_output=True, text=True)
    if svg.returncode != 0 or svg.stderr:
        sys.exit("%s: dot -Tsvg failed (%d): %s" % (sg, svg.returncode, svg.stderr))
    n = src.stdout.count("\ndigraph ") + src.stdout.startswith("digraph ")
    # at least the export (one whose parameters are all const, as
    # examples/v3/ba_jacobian.sg's, has no gradient beside it)
    if n < 1 or svg.stdout.count("<svg ") != n:
        sys.exit("%s: %d digraphs but %d SVG pictures" % (sg, n, svg.stdout.count("<svg ")))
    graphs += n
print("rendered %d examples, %d graphs" % (len(files), graphs))
