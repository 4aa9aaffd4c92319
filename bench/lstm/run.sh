#!/bin/sh
# The LSTM of examples/lstm.sg (ADBench's sizes: 14 characters, 1,024 of
# them): the time sgc takes to compile it, and its gradient against the
# hand-written C of lstm_hand.c, one thread (lstm_bench.c).
# Usage: sh bench/lstm/run.sh [b c [repeats]]   (needs `make all` first)
set -e
cd "$(dirname "$0")/../.."
B=build/bench_lstm
mkdir -p $B
start=$(date +%s.%N)
build/bin/sgc examples/lstm.sg -o $B/lstm.o --header $B/lstm.h
end=$(date +%s.%N)
echo "lstm: sgc compiles examples/lstm.sg (-O2) in $(echo "$end - $start" | bc) s"
${HANDCC:-gcc} -std=c11 -O3 -march=native -fno-math-errno -c bench/lstm/lstm_hand.c -o $B/lstm_hand.o
${CC:-cc} -std=c11 -O2 -Ibuild/include -I$B -Ibench/lstm bench/lstm/lstm_bench.c $B/lstm.o \
  $B/lstm_hand.o -Lbuild/lib -lsgrt -lm -lpthread -o $B/lstm_bench
$B/lstm_bench "$@"
