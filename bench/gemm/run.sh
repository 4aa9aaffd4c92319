#!/bin/sh
# Builds the runtime and runs the gemm micro-benchmark (one thread), then
# the expert baselines' GEMM (bench/hand/gemm.c) against the runtime's.
# Usage: sh bench/gemm/run.sh [seconds per measurement]
set -e
cd "$(dirname "$0")/../.."
make -s build/lib/libsgrt.a
cc -std=c11 -O3 -march=native -Iruntime bench/gemm/gemm_bench.c \
  build/lib/libsgrt.a -lm -o build/gemm_bench
./build/gemm_bench "$@"
echo
cc -std=c11 -O3 -march=native -Iruntime bench/gemm/hand_gemm.c bench/hand/gemm.c \
  bench/hand/avx512.c build/lib/libsgrt.a -lm -lpthread -o build/hand_gemm
./build/hand_gemm
