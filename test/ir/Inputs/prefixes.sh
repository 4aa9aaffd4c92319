# Usage: sh prefixes.sh SGC_OPT FILE [STEP]
# Feeds sgc-opt every STEP-th prefix of FILE (and the prefix with the last
# byte replaced by junk); each run must exit 0 (a prefix that happens to be
# a complete module) or 1 (an error reported), never crash or hang.
opt=$1 file=$2 step=${3:-11}
size=$(wc -c < "$file")
n=0
while [ "$n" -le "$size" ]; do
  for junk in "" "{-"; do
    { head -c "$n" "$file"; printf '%s' "$junk"; } > "$file.prefix"
    timeout 20 "$opt" "$file.prefix" --passes= > /dev/null 2> "$file.err"
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 1 ]; then
      echo "sgc-opt exited $rc on the first $n bytes of $file + '$junk':"
      cat "$file.err"
      exit 1
    fi
  done
  n=$((n + step))
done
echo "prefixes ok"
