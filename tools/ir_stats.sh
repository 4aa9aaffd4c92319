#!/bin/sh
# Instruction counts of the gradient functions (names ending _grad or _vjp)
# of every examples/*.sg, after AD (sgc --emit-ir=ad) and after the -O2
# pipeline (sgc --emit-ir=opt), as a Markdown table on standard output.
# The "copies by remat" column is how many of the -O2 instructions are
# rematerialized copies: the -O2 count minus that of the same pipeline
# without its last pass, remat (run by sgc-opt on the AD stage).
# docs/optimizer.md shows its output.
#
# Usage: tools/ir_stats.sh [SGC [SGC_OPT]]   (default build/bin/sgc and
# build/bin/sgc-opt; run from anywhere, the examples are found next to this
# script.) The pass list below must match pipeline_optimize's -O2 list in
# driver/pipeline.c.
# An instruction is one `%v = op ...` line of a function body; `ret` is not
# counted, nor are parameters.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
sgc=${1:-$root/build/bin/sgc}
sgc_opt=${2:-$root/build/bin/sgc-opt}
for tool in "$sgc" "$sgc_opt"; do
  [ -x "$tool" ] || { echo "ir_stats.sh: no $tool (run make first)" >&2; exit 1; }
done
no_remat=strip-stop,fold,simplify,cse,dce,fold,simplify,cse,dce

# "name count" for every gradient function in the IR on stdin
counts() {
  awk '
    /^(export )?func @/ {
      name = $0; sub(/^(export )?func @/, "", name); sub(/\(.*/, "", name)
      n = 0; infunc = 1; next
    }
    infunc && /^}/ { if (name ~ /_(grad|vjp)$/) print name, n; infunc = 0; next }
    infunc && /^[ \t]*%[^ ]+[ \t]*=/ { n++ }
  '
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "| example | function | after AD | after -O2 | change | copies by remat |"
echo "|---|---|---:|---:|---:|---:|"
total_ad=0
total_opt=0
total_copies=0
for src in "$root"/examples/*.sg; do
  ex=$(basename "$src" .sg)
  "$sgc" "$src" --emit-ir=ad | counts > "$tmp/ad"
  "$sgc" "$src" -O2 --emit-ir=opt | counts > "$tmp/opt"
  "$sgc" "$src" --emit-ir=ad | "$sgc_opt" - --passes=$no_remat | counts > "$tmp/noremat"
  while read -r fn n_ad; do
    n_opt=$(awk -v f="$fn" '$1 == f { print $2 }' "$tmp/opt")
    [ -n "$n_opt" ] || { echo "ir_stats.sh: $fn missing after -O2" >&2; exit 1; }
    n_nr=$(awk -v f="$fn" '$1 == f { print $2 }' "$tmp/noremat")
    pct=$(awk -v a="$n_ad" -v o="$n_opt" 'BEGIN { printf "%+.0f%%", a ? 100 * (o - a) / a : 0 }')
    echo "| $ex | $fn | $n_ad | $n_opt | $pct | $((n_opt - n_nr)) |"
    total_ad=$((total_ad + n_ad))
    total_opt=$((total_opt + n_opt))
    total_copies=$((total_copies + n_opt - n_nr))
  done < "$tmp/ad"
done
pct=$(awk -v a="$total_ad" -v o="$total_opt" 'BEGIN { printf "%+.0f%%", a ? 100 * (o - a) / a : 0 }')
echo "| **total** | | **$total_ad** | **$total_opt** | **$pct** | **$total_copies** |"
