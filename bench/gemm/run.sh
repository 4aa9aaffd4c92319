#!/bin/sh
# Builds the runtime and runs the gemm micro-benchmark (one thread).
# Usage: sh bench/gemm/run.sh [seconds per measurement]
set -e
cd "$(dirname "$0")/../.."
make -s build/lib/libsgrt.a
cc -std=c11 -O3 -march=native -Iruntime bench/gemm/gemm_bench.c \
  build/lib/libsgrt.a -lm -o build/gemm_bench
./build/gemm_bench "$@"
