#!/bin/sh
# Fuzz the compiler for SECONDS seconds (default 60): `make fuzz FUZZ_SECONDS=N`.
#
#  1. `make all`, so build/gen (the bison/flex outputs) and build/config.mk
#     (LLVM's flags) exist.
#  2. Build the two libFuzzer harnesses of tools/fuzz/fuzz_sgc.c with
#     clang-14 under -fsanitize=fuzzer,address,undefined (-O2) into
#     build/fuzz/, from the project's sources (objects in build/fuzz/obj,
#     rebuilt when a source or a header they include changes):
#     fuzz_sgc_front stops before LLVM (parse, check, lower, AD, the -O2
#     passes, the verifier after each) and runs thousands of inputs a
#     second; fuzz_sgc goes on through LLVM code generation, for both IR
#     pipelines, at a few hundred a second.
#  3. Seed build/fuzz/corpus and build/fuzz/corpus-llvm with every .sg file
#     of the repository and 40 programs from tools/gen_programs.py (inputs
#     the fuzzer finds stay there between runs), then run fuzz_sgc_front
#     on the first for (100 - FUZZ_LLVM_SHARE)% of the time with inputs of
#     at most 4 KB, and fuzz_sgc on the second for the rest, with the
#     dictionary tools/fuzz/sg.dict.
#
# Prints, per target, `fuzz: TARGET: N executions in S seconds (R/s)`, then
# `fuzz: N executions in S seconds, K findings`. Exits 1 on a finding
# (crash, hang, leak, verifier failure), leaving the input in build/fuzz/ and
# printing its path; reproduce with `build/fuzz/fuzz_sgc FILE` (full report)
# or `build/bin/sgc FILE`. Minimize with
# `build/fuzz/fuzz_sgc -minimize_crash=1 -runs=10000 FILE`.
#
# Environment: CLANG (default clang-14); FUZZ_LLVM_SHARE, the percentage of
# the time for the LLVM-backed target (default 25; 0 runs the front end
# target alone, 100 the LLVM one alone); FUZZ_FLAGS, extra libFuzzer
# flags; FUZZ_EXCLUDE, a grep -E pattern of seed files to leave out (say an
# open finding's test/fuzz/crash-N.sg, which would stop every run at its
# start; a seed already copied stays in build/fuzz/corpus: delete it there
# too).
set -eu

SECONDS_TO_RUN=${1:-60}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
B=build
OUT=$B/fuzz
CLANG=${CLANG:-clang-14}
MAKE=${MAKE:-make}

die() { echo "fuzz: $*" >&2; exit 2; }

# ---- 1. the normal build: generated parser/lexer and config.mk ----
$MAKE -s all >/dev/null || die "make all failed"
[ -f $B/config.mk ] && [ -f $B/gen/parser.c ] && [ -f $B/gen/lexer.c ] ||
  die "make all did not produce build/config.mk and build/gen"

# ---- 2. a clang that can link libFuzzer ----
command -v "$CLANG" >/dev/null 2>&1 ||
  die "$CLANG not found; install it with: apt-get install clang-14 libclang-rt-14-dev"
mkdir -p $OUT/obj $OUT/tmp
probe() {
  printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
    >$OUT/tmp/probe.c
  "$CLANG" -fsanitize=fuzzer,address,undefined $OUT/tmp/probe.c -o $OUT/tmp/probe 2>/dev/null
}
if ! probe; then
  if [ "$(id -u)" = 0 ]; then
    echo "fuzz: the libFuzzer runtime is missing; installing libclang-rt-14-dev"
    apt-get update -qq && apt-get install -y -qq libclang-rt-14-dev >/dev/null ||
      die "apt-get install libclang-rt-14-dev failed"
    probe || die "$CLANG -fsanitize=fuzzer still does not link"
  else
    die "$CLANG -fsanitize=fuzzer does not link; install the runtime with:
  sudo apt-get install libclang-rt-14-dev"
  fi
fi

# LLVM's flags, as configure.sh wrote them (`VAR := value`).
mkvar() { sed -n "s/^$1 *:= *//p" $B/config.mk; }
LLVM_CFLAGS=$(mkvar LLVM_CFLAGS)
LLVM_LDFLAGS=$(mkvar LLVM_LDFLAGS)

SAN="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
CFLAGS="-std=c11 -O2 -g -D_POSIX_C_SOURCE=200809L $SAN -fsanitize=fuzzer-no-link"

# Objects built with other flags (an older fuzz.sh) are rebuilt.
if [ "$(cat $OUT/obj/flags 2>/dev/null)" != "$CFLAGS" ]; then
  rm -f $OUT/obj/*.o
  printf '%s\n' "$CFLAGS" >$OUT/obj/flags
fi

# Whether obj must be rebuilt: missing, or older than a file its .d lists.
stale() {
  [ -f "$1" ] && [ -f "${1%.o}.d" ] || return 0
  for dep in $(sed -e 's/^[^:]*://' -e 's/\\$//' "${1%.o}.d"); do
    [ -n "$(find "$dep" -newer "$1" 2>/dev/null)" ] && return 0
  done
  return 1
}

# Compile every source in parallel; each job records its failure in a file.
# The harness is compiled twice, with and without LLVM code generation
# (SGC_FUZZ_LLVM); the rest is shared, codegen/ linked into fuzz_sgc only.
rm -f $OUT/tmp/failed
PIDS=""
compile() {  # compile SRC OBJ EXTRA-FLAGS
  stale "$2" || return 0
  # shellcheck disable=SC2086
  ( "$CLANG" $CFLAGS $3 $LLVM_CFLAGS -I$B/gen -MMD -MP -c "$1" -o "$2" ||
      echo "$1" >>$OUT/tmp/failed ) &
  PIDS="$PIDS $!"
}
FRONT_OBJS=""
CG_OBJS=""
for src in frontend/*.c ir/*.c passes/*.c driver/pipeline.c codegen/*.c \
           $B/gen/parser.c $B/gen/lexer.c; do
  obj=$OUT/obj/$(echo "${src%.c}" | tr / _).o
  case $src in
    codegen/*) CG_OBJS="$CG_OBJS $obj" ;;
    *) FRONT_OBJS="$FRONT_OBJS $obj" ;;
  esac
  case $src in
    # generated code: its warnings are not ours, and tracing the comparisons
    # of the parser's tables for libFuzzer cost a third of its time
    $B/gen/*) compile "$src" "$obj" "-w -Ifrontend -fno-sanitize-coverage=trace-cmp" ;;
    *) compile "$src" "$obj" "-Wall -Wextra" ;;
  esac
done
compile tools/fuzz/fuzz_sgc.c $OUT/obj/fuzz_sgc.o "-Wall -Wextra -DSGC_FUZZ_LLVM=1"
compile tools/fuzz/fuzz_sgc.c $OUT/obj/fuzz_sgc_front.o "-Wall -Wextra -DSGC_FUZZ_LLVM=0"
for p in $PIDS; do wait "$p"; done
[ ! -f $OUT/tmp/failed ] || die "compiling failed: $(cat $OUT/tmp/failed | tr '\n' ' ')"
# shellcheck disable=SC2086
"$CLANG" -fsanitize=fuzzer $SAN $FRONT_OBJS $CG_OBJS $OUT/obj/fuzz_sgc.o -o $OUT/fuzz_sgc \
  $LLVM_LDFLAGS -lm -lpthread || die "linking the harness failed"
# shellcheck disable=SC2086
"$CLANG" -fsanitize=fuzzer $SAN $FRONT_OBJS $OUT/obj/fuzz_sgc_front.o -o $OUT/fuzz_sgc_front \
  -lm -lpthread || die "linking the front end harness failed"

# ---- 3. seeds and the run ----
mkdir -p $OUT/corpus $OUT/corpus-llvm
find examples test -name '*.sg' | grep -Ev "${FUZZ_EXCLUDE:-^$}" | while read -r f; do
  cp "$f" "$OUT/corpus/seed-$(echo "$f" | tr / _)"
  cp "$f" "$OUT/corpus-llvm/seed-$(echo "$f" | tr / _)"
done
# Valid programs reach deeper than mutated examples alone: add some random
# well-typed ones (tools/gen_programs.py; fixed seeds, so the set is stable).
if command -v python3 >/dev/null 2>&1; then
  python3 tools/gen_programs.py --seed 1 --count 20 --out $OUT/tmp/gen &&
    python3 tools/gen_programs.py --seed 101 --count 20 --fd --out $OUT/tmp/gen &&
    for f in "$OUT"/tmp/gen/*.sg; do
      cp "$f" "$OUT/corpus/seed-gen-${f##*/}"
      cp "$f" "$OUT/corpus-llvm/seed-gen-${f##*/}"
    done ||
    echo "fuzz: warning: tools/gen_programs.py failed; using the repository's seeds only"
fi

touch $OUT/tmp/start
START=$(date +%s)
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1}"
export TMPDIR="$ROOT/$OUT/tmp"
SHARE=${FUZZ_LLVM_SHARE:-25}
LLVM_SECONDS=$(( SECONDS_TO_RUN * SHARE / 100 ))
FRONT_SECONDS=$(( SECONDS_TO_RUN - LLVM_SECONDS ))
EXECS=0
RC=0
# run TARGET SECONDS CORPUS TIMEOUT [flags]: one libFuzzer run, an input
# taking over TIMEOUT seconds a finding; its log is $OUT/TARGET.log.
# -close_fd_mask=2: the compiler's own diagnostics (most inputs are
# rejected) would drown libFuzzer's output; sanitizer reports still get
# through.
run() {
  target=$1 secs=$2 corpus=$3 limit=$4
  shift 4
  [ "$secs" -gt 0 ] || return 0
  t0=$(date +%s)
  # shellcheck disable=SC2086
  { $OUT/$target -max_total_time="$secs" -timeout="$limit" -rss_limit_mb=2048 \
      -dict=tools/fuzz/sg.dict -artifact_prefix=$OUT/ -print_final_stats=1 \
      -close_fd_mask=2 "$@" ${FUZZ_FLAGS:-} "$corpus"; echo $? >$OUT/tmp/rc; } 2>&1 |
    tee $OUT/$target.log
  rc=$(cat $OUT/tmp/rc)
  n=$(sed -n 's/^stat::number_of_executed_units: *//p' $OUT/$target.log | tail -n 1)
  dt=$(( $(date +%s) - t0 ))
  echo "fuzz: $target: ${n:-0} executions in $dt seconds ($(( ${n:-0} / (dt > 0 ? dt : 1) ))/s)" \
    >>$OUT/summary.log
  EXECS=$(( EXECS + ${n:-0} ))
  [ "$rc" = 0 ] || RC=$rc
}
: >$OUT/summary.log
# Inputs past 4 KB only slow the front end down (the deep-nesting seeds,
# which the LLVM target keeps whole, are for the stack). The LLVM target
# keeps a corpus of its own: it runs every input of its corpus before it
# starts mutating, and the front end's grows by hundreds a minute.
# An input through LLVM may take seconds, not hang: the largest seed (40 KB,
# every op through jacobian) compiles for both pipelines in 4.4 s under the
# sanitizers on an idle 2-core AMD EPYC, and took over 10 s beside another
# job (CI, 2026-11-28). A hang still shows at 30.
run fuzz_sgc_front "$FRONT_SECONDS" $OUT/corpus 10 -max_len=4096
[ "$RC" != 0 ] || run fuzz_sgc "$LLVM_SECONDS" $OUT/corpus-llvm 30
ELAPSED=$(( $(date +%s) - START ))

FINDINGS=$(find $OUT -maxdepth 1 -type f \( -name 'crash-*' -o -name 'timeout-*' \
  -o -name 'leak-*' -o -name 'oom-*' \) -newer $OUT/tmp/start)
N=$(printf '%s' "$FINDINGS" | grep -c . || true)
if [ "$RC" != 0 ] && [ "$N" = 0 ]; then
  N=1  # libFuzzer failed without leaving an input (e.g. a crash in a seed)
fi
cat $OUT/summary.log
echo "fuzz: $EXECS executions in $ELAPSED seconds, $N findings"
if [ "$N" != 0 ]; then
  for f in $FINDINGS; do
    echo "fuzz: finding: $f (reproduce: $OUT/fuzz_sgc $f; or $B/bin/sgc $f -o /dev/null)"
  done
  [ -n "$FINDINGS" ] || echo "fuzz: see $OUT/*.log"
  exit 1
fi
