#!/bin/sh
# Issue 29's speed figures: derivatives as ratios to what they
# differentiate, sgc against sgc in the same rounds (derivs_bench.c says
# how). Usage: sh bench/derivs/run.sh [--budget SECONDS]
set -e
cd "$(dirname "$0")/../.."
B=build/bench_derivs
mkdir -p $B
build/bin/sgc examples/v3/newton_cg.sg --exports=grad,hvp -o $B/newton_cg.o --header $B/newton_cg.h
build/bin/sgc examples/v3/spring_sensitivity.sg --exports=grad,hvp -o $B/spring.o \
  --header $B/spring_sensitivity.h
cc -std=c11 -O2 -Wall -Wextra -Ibuild/include -I$B bench/derivs/derivs_bench.c $B/newton_cg.o \
  $B/spring.o -Lbuild/lib -lsgrt -lm -lpthread -o $B/derivs_bench
$B/derivs_bench "$@"
