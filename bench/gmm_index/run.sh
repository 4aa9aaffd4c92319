#!/bin/sh
# The GMM objective written with take() against the same objective with a
# one-hot product (the v1 workaround), gradient time, one thread.
# Usage: sh bench/gmm_index/run.sh [n d k [repeats]]   (default 1000 32 10)
set -e
cd "$(dirname "$0")/../.."
make -s all
B=build/bench_gmm
mkdir -p $B
build/bin/sgc bench/gmm_index/gmm_take.sg -O3 -o $B/gmm_take.o --header $B/gmm_take.h
build/bin/sgc bench/gmm_index/gmm_onehot.sg -O3 -o $B/gmm_onehot.o --header $B/gmm_onehot.h
cc -std=c11 -O2 -Ibuild/include -I$B bench/gmm_index/gmm_bench.c $B/gmm_take.o $B/gmm_onehot.o \
  -Lbuild/lib -lsgrt -lm -lpthread -o $B/gmm_bench
SG_NUM_THREADS=1 $B/gmm_bench "$@"
