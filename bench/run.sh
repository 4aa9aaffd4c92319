#!/bin/sh
# bench/run.sh: `make bench`. Compiles the shipped models with sgc, the
# expert's hand-written C gradients (bench/hand/) with gcc -O3 -march=native,
# and the driver bench/bench_main.c; times sgc against the hand-written code
# and checks that they agree (bench_main), then times the same programs in
# PyTorch and prints one table with the ratios (bench/report.py). See
# bench/README.md. Environment: BENCH_BUDGET=seconds per case and per
# measurement (sgc and hand together; each PyTorch setting on its own;
# default 2.5; BENCH_WBUDGET for the workloads, default 2), BENCH_NO_TORCH=1
# to skip PyTorch, BENCH_SGCFLAGS: more flags for sgc (e.g.
# --target-cpu=skylake-avx512 for LLVM's 256-bit tuning on an Intel host),
# HANDCC (default gcc: the vector-math declarations in bench/hand/vmath.h
# are GCC's). Needs `make all` first (the Makefile's bench target does that).
set -e
cd "$(dirname "$0")/.."
SGC=build/bin/sgc
LIB=build/lib/libsgrt.a
OUT=build/bench
for f in "$SGC" "$LIB" build/include/sg_runtime.h; do
  [ -e "$f" ] || { echo "bench: $f is missing; run 'make all' first" >&2; exit 2; }
done
mkdir -p "$OUT/obj" "$OUT/wobj" "$OUT/data"
rm -f "$OUT"/obj/*.o "$OUT"/wobj/*.o "$OUT"/data/*.tsv # nothing stale is linked or read
CC=${CC:-cc}
HANDCC=${HANDCC:-gcc}
HANDFLAGS="-std=c11 -O3 -march=native -fno-math-errno -fopenmp-simd -Wall -Wextra -D_POSIX_C_SOURCE=200809L"

# 1. The models, compiled by sgc (default -O2, host CPU); the softmax
#    cross-entropy of bench/xent_loop.sg also as 32 straight-line copies,
#    written by bench/unroll_xent.py (its compile time is printed: about
#    0.45 s of LLVM's time per copy here).
for src in examples/mlp.sg examples/stable_softmax.sg \
           examples/contrastive_divergence.sg bench/elementwise.sg; do
  "$SGC" $BENCH_SGCFLAGS "$src" -o "$OUT/obj/sg_$(basename "$src" .sg).o"
done
for src in bench/workloads.sg bench/rnn_lm.sg bench/xent_loop.sg bench/small.sg; do
  "$SGC" $BENCH_SGCFLAGS "$src" -o "$OUT/wobj/sg_$(basename "$src" .sg).o"
done
/usr/bin/python3 bench/unroll_xent.py "$OUT/xent_unrolled.sg"
seconds() { # wall seconds the command takes
  t0=$(date +%s.%N); "$@"; echo "$(date +%s.%N) - $t0" | bc
}
echo "bench: sgc compiles bench/xent_loop.sg in $(seconds "$SGC" $BENCH_SGCFLAGS bench/xent_loop.sg -o /dev/null) s," \
  "its 32 steps unrolled in $(seconds "$SGC" $BENCH_SGCFLAGS "$OUT/xent_unrolled.sg" -o "$OUT/wobj/sg_xent_unrolled.o") s"

# 2. The hand-written gradients and the driver, linked with the runtime
#    (the hand-written code calls its GEMM, sg_rt_gemm_f32).
for src in bench/hand/*.c; do
  $HANDCC $HANDFLAGS -Iruntime -c "$src" -o "$OUT/obj/hand_$(basename "$src" .c).o"
done
$CC -std=c11 -O2 -Wall -Wextra -Ibuild/include -Ibench -c bench/bench_main.c \
  -o "$OUT/obj/bench_main.o"
$CC "$OUT"/obj/*.o "$LIB" -lm -lpthread -o "$OUT/bench_main"
# The driver of the workloads (bench/workloads_main.c), a program of its own.
$CC -std=c11 -O2 -Wall -Wextra -Ibuild/include -Ibench -c bench/workloads_main.c \
  -o "$OUT/wobj/workloads_main.o"
$CC "$OUT"/wobj/*.o "$OUT"/obj/hand_*.o "$LIB" -lm -lpthread -o "$OUT/workloads_main"

# 3. PyTorch (Debian's python3-torch, for /usr/bin/python3): installed here
#    if missing, but only as root; otherwise its columns are skipped. Debian's
#    torch does its matrix products through libblas.so.3, which is netlib's
#    reference BLAS unless an optimized one is installed; a fair comparison
#    needs OpenBLAS (the OpenMP build, like torch's own threading), so that
#    comes along. report.py names the BLAS it finds.
PY=/usr/bin/python3
TORCH_NOTE=""
apt_install() {
  echo "bench: apt-get install -y $* (once; log in $OUT/apt.log)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >>"$OUT/apt.log" 2>&1 ||
    { apt-get update >>"$OUT/apt.log" 2>&1 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y "$@" >>"$OUT/apt.log" 2>&1; }
}
if [ -n "$BENCH_NO_TORCH" ]; then
  TORCH_NOTE="PyTorch skipped (BENCH_NO_TORCH is set)"
elif [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  pkgs=""
  "$PY" -c 'import torch' 2>/dev/null || pkgs="python3-torch"
  ls /usr/lib/x86_64-linux-gnu/openblas-*/libblas.so.3 >/dev/null 2>&1 ||
    pkgs="$pkgs libopenblas0-openmp"
  if [ -n "$pkgs" ] && ! apt_install $pkgs; then
    TORCH_NOTE="PyTorch skipped: apt-get install $pkgs failed (see $OUT/apt.log)"
  fi
elif ! "$PY" -c 'import torch' 2>/dev/null; then
  TORCH_NOTE="PyTorch skipped: python3-torch is not installed and this is not root (apt-get install python3-torch libopenblas0-openmp)"
fi

# 4. Measure. sgc and hand-written C first (alternating, same process), then
#    PyTorch on the same data, then the combined table.
rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[ -z "$(git status --porcelain --untracked-files=no -- . ':!bench' 2>/dev/null)" ] || rev="$rev + uncommitted changes"
echo "sgc from $rev${BENCH_SGCFLAGS:+ (sgc $BENCH_SGCFLAGS)}; $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== sgc vs hand-written C (one thread each; median ms per call, thread CPU time; spread = IQR/median) =="
status=0
"$OUT/bench_main" --budget "${BENCH_BUDGET:-2.5}" --data "$OUT/data" || status=$?
[ "$status" -le 1 ] || exit "$status"
echo
echo "== the workloads (issues 9 and 30): sgc vs expert C (one thread each; median ms per call; flt: minor page faults per call) =="
wstatus=0
"$OUT/workloads_main" --budget "${BENCH_WBUDGET:-2}" --data "$OUT/data" || wstatus=$?
[ "$wstatus" -le 1 ] || exit "$wstatus"
[ "$wstatus" -eq 0 ] || status=1
echo
echo "== W1-W6: the portable C (the baselines before issue 30) against the expert's =="
"$OUT/workloads_main" --portable --budget 1 --data "$OUT/data" || status=1
echo
echo "== W1-W6: sgc's gradient on 1 thread and on all, then with two busy processes beside it (wall clock, median) =="
SG_NUM_THREADS= "$OUT/workloads_main" --scaling --budget "${BENCH_WBUDGET:-2}" --data "$OUT/data" ||
  status=1
echo
echo "== GMM, factors unpacked with take() vs a one-hot product (issue 10; gradient CPU ms, one thread) =="
sh bench/gmm_index/run.sh || status=1
echo
# Which transcendental functions vectorized, for the notes: libmvec entry
# points (_ZGV...) and plain libm calls in the hand-written objects, and any
# libm calls in sgc's objects.
HAND_VECTOR_MATH=$(nm "$OUT"/obj/hand_*.o | sed -n 's/.* U _ZGV[a-z]N\([0-9]*\)v_\(.*\)/\2:x\1/p' | sort -u | tr '\n' ' ')
HAND_SCALAR_MATH=$(nm "$OUT"/obj/hand_*.o | sed -n 's/.* U \(expf\|logf\|log1pf\|tanhf\)$/\1/p' | sort -u | tr '\n' ' ')
SGC_MATH_CALLS=$(nm "$OUT"/obj/sg_*.o | sed -n 's/.* U \(_ZGV.*\|exp.*\|log.*\|tanh.*\|pow.*\)$/\1/p' | sort -u | tr '\n' ' ')
export HAND_VECTOR_MATH HAND_SCALAR_MATH SGC_MATH_CALLS
echo "== Derivatives (issue 29; bench/derivs): a derivative's time over what it differentiates, sgc both =="
sh bench/derivs/run.sh --budget "${BENCH_WBUDGET:-2}" || status=1
echo
echo "== LSTM (examples/lstm.sg, ADBench's sizes; bench/lstm): sgc vs hand-written C =="
sh bench/lstm/run.sh || status=1
echo
TORCH_NOTE="$TORCH_NOTE" "$PY" bench/report.py "$OUT/data" --budget "${BENCH_BUDGET:-2.5}" \
  ${TORCH_NOTE:+--no-torch}
exit "$status"
