#!/bin/sh
# make demo: the main job on a shipped example, end to end.
set -eu
B=${B:-build}
mkdir -p $B/demo
echo "$ sgc examples/stable_softmax.sg -o $B/demo/stable_softmax.o --header $B/demo/stable_softmax.h"
$B/bin/sgc examples/stable_softmax.sg -o $B/demo/stable_softmax.o --header $B/demo/stable_softmax.h
echo "$ cc examples/demo_main.c $B/demo/stable_softmax.o -lsgrt -lm -lpthread"
${CC:-cc} -std=c11 -O2 -I$B/include -I$B/demo examples/demo_main.c $B/demo/stable_softmax.o \
  -L$B/lib -lsgrt -lm -lpthread -o $B/demo/demo
echo "$ ./demo"
$B/demo/demo
