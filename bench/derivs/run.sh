#!/bin/sh
# Issue 29's speed figures: derivatives as ratios to what they
# differentiate, sgc against sgc in the same rounds (derivs_bench.c says
# how). Usage: sh bench/derivs/run.sh [--budget SECONDS]
set -e
cd "$(dirname "$0")/../.."
B=build/bench_derivs
mkdir -p $B
build/bin/sgc examples/v3/newton_cg.sg --exports=grad,jvp,hvp -o $B/newton_cg.o \
  --header $B/newton_cg.h
build/bin/sgc examples/v3/spring_sensitivity.sg --exports=grad,hvp -o $B/spring.o \
  --header $B/spring_sensitivity.h
# ba_jacobian needs concat and stack: without them its row is left out
BA=""
if build/bin/sgc examples/v3/ba_jacobian.sg -o $B/ba_jacobian.o --header $B/ba_jacobian.h \
     2>$B/ba_jacobian.log; then
  gcc -std=c11 -O3 -march=native -fno-math-errno -c bench/derivs/ba_hand.c -o $B/ba_hand.o
  BA="-DWITH_BA -Ibench/derivs $B/ba_jacobian.o $B/ba_hand.o"
else
  echo "bench/derivs: examples/v3/ba_jacobian.sg does not compile yet ($B/ba_jacobian.log): no BA row"
fi
cc -std=c11 -O2 -Wall -Wextra -Ibuild/include -I$B bench/derivs/derivs_bench.c $B/newton_cg.o \
  $B/spring.o $BA -Lbuild/lib -lsgrt -lm -lpthread -o $B/derivs_bench
$B/derivs_bench "$@"
