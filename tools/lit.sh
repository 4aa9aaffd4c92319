#!/bin/sh
# Run the lit suite (make check, make check-asan) and end with one line
# "lit: N passed, N failed", the summary CI reads.
# Usage: tools/lit.sh LIT_PY [lit flags...]
lit=$1
shift
log=$(mktemp)
python3 "$lit" "$@" test 2>&1 | tee "$log"

count() { sed -n "s/^ *$1 *: *\([0-9][0-9]*\).*/\1/p" "$log" | tail -n 1; }
total=$(count "Total Discovered Tests")
passed=$(count Passed)
failed=$(count Failed)
unresolved=$(count Unresolved)
timedout=$(count "Timed Out")
xpass=$(count "Unexpected Passes")
bad=$(( ${failed:-0} + ${unresolved:-0} + ${timedout:-0} + ${xpass:-0} ))
# lit -q prints no per-result counts when everything passed
[ -n "$passed" ] || passed=$(( ${total:-0} - bad ))
rm -f "$log"
echo "lit: ${passed:-0} passed, $bad failed"
[ "${passed:-0}" -gt 0 ] && [ "$bad" -eq 0 ]
