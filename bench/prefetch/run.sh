#!/bin/sh
# Builds and runs the prefetch micro-benchmark on one thread (CPU 0 where
# taskset exists). Usage: sh bench/prefetch/run.sh [work ...] (default 0 12)
set -e
cd "$(dirname "$0")/../.."
mkdir -p build
cc -std=c11 -O3 -march=native -Wall -Wextra -Werror bench/prefetch/prefetch_bench.c \
  -o build/prefetch_bench
[ $# -gt 0 ] || set -- 0 12
if command -v taskset >/dev/null 2>&1; then
  exec taskset -c 0 ./build/prefetch_bench "$@"
fi
exec ./build/prefetch_bench "$@"
