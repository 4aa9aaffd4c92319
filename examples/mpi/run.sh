#!/bin/sh
# Build examples/mpi and train on NP ranks (default 2) of this machine:
# NP=4 examples/mpi/run.sh [STEPS]. The compiler is $SGC if set, else this
# source tree's build (build/bin/sgc) if there is one, else the sgc on PATH
# (an installed one: make install PREFIX=DIR puts it in DIR/bin); the
# runtime is the one beside it (../include, ../lib). Skips, with a message,
# where OpenMPI is not installed (apt-get install openmpi-bin libopenmpi-dev).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if ! command -v mpirun >/dev/null 2>&1 || ! command -v mpicc >/dev/null 2>&1; then
  echo "examples/mpi: skipped: mpirun or mpicc not found (apt-get install openmpi-bin libopenmpi-dev)"
  exit 0
fi
sgc=${SGC:-}
if [ -z "$sgc" ] && [ -x "$here/../../build/bin/sgc" ]; then
  sgc=$here/../../build/bin/sgc
fi
if [ -z "$sgc" ]; then
  sgc=$(command -v sgc) || {
    echo "examples/mpi: no sgc: build this tree (make), put an installed sgc on PATH, or set SGC" >&2
    exit 1
  }
fi
prefix=$(cd "$(dirname "$sgc")/.." && pwd) # bin/sgc, include/sg_runtime.h, lib/libsgrt.a
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$sgc" "$here/model.sg" -o "$tmp/model.o" --header "$tmp/model.h"
mpicc -std=c11 -O2 -I"$tmp" -I"$prefix/include" "$here/train.c" "$tmp/model.o" \
  -L"$prefix/lib" -lsgrt -lm -lpthread -o "$tmp/train"
root_flag=""
[ "$(id -u)" = 0 ] && root_flag=--allow-run-as-root # OpenMPI refuses root otherwise
mpirun $root_flag --oversubscribe -np "${NP:-2}" "$tmp/train" "$@"
