#!/bin/sh
# The GMM objective written with take() against the same objective with a
# one-hot product (the v1 workaround), gradient time, one thread.
# Usage: sh bench/gmm_index/run.sh [n d k [repeats]]; without sizes, a set
# of ADBench's GMM sizes (d 10-128, k 5-25, n 1000 and 10000), one run.
# The one-hot tensor has d^4/2 entries: at d = 128 it is 1 GB of f64.
set -e
cd "$(dirname "$0")/../.."
make -s all
B=build/bench_gmm
mkdir -p $B
build/bin/sgc bench/gmm_index/gmm_take.sg -O3 -o $B/gmm_take.o --header $B/gmm_take.h
build/bin/sgc bench/gmm_index/gmm_onehot.sg -O3 -o $B/gmm_onehot.o --header $B/gmm_onehot.h
cc -std=c11 -O2 -Ibuild/include -I$B bench/gmm_index/gmm_bench.c $B/gmm_take.o $B/gmm_onehot.o \
  -Lbuild/lib -lsgrt -lm -lpthread -o $B/gmm_bench
if [ $# -gt 0 ]; then
  SG_NUM_THREADS=1 $B/gmm_bench "$@"
  exit
fi
status=0
for s in "1000 10 10 20" "1000 20 25 10" "1000 32 10 10" "1000 32 25 10" "1000 64 10 5" \
         "1000 64 25 3" "10000 32 10 3" "1000 128 5 2"; do
  SG_NUM_THREADS=1 $B/gmm_bench $s || status=1
done
exit $status
