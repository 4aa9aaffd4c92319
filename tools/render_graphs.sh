#!/bin/sh
# Render the graph picture (sgc --emit-dot, spec section 11) of every shipped
# example to docs/graphs/EXAMPLE.FUNCTION.svg, one SVG per function (sgc
# prints one digraph per function; an SVG file holds one picture).
#   usage: tools/render_graphs.sh [SGC] [OUTDIR]     (make graphs)
set -eu
sgc=${1:-build/bin/sgc}
outdir=${2:-docs/graphs}
command -v dot >/dev/null 2>&1 || {
  echo "render_graphs: Graphviz's dot is missing (apt-get install graphviz)" >&2
  exit 1
}
mkdir -p "$outdir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for sg in examples/*.sg examples/*/*.sg; do
  [ -f "$sg" ] || continue
  rel=${sg#examples/}
  base=$(echo "${rel%.sg}" | tr / -) # examples/mpi/model.sg: mpi-model
  "$sgc" "$sg" --emit-dot > "$tmp/all.dot"
  rm -f "$tmp"/g.*.dot
  # one file per digraph, named after the function
  awk -v dir="$tmp" '/^digraph "/ { split($0, q, "\""); f = dir "/g." q[2] ".dot" } { print > f }' "$tmp/all.dot"
  for g in "$tmp"/g.*.dot; do
    fn=$(basename "$g" .dot)
    fn=${fn#g.}
    dot -Tsvg "$g" -o "$outdir/$base.$fn.svg"
    echo "$outdir/$base.$fn.svg"
  done
done
