#!/bin/sh
# Build examples/mpi with this tree's sgc and train on NP ranks (default 2)
# of this machine: NP=4 examples/mpi/run.sh [STEPS]. Skips, with a message,
# where OpenMPI is not installed (apt-get install openmpi-bin libopenmpi-dev).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$here/../..
if ! command -v mpirun >/dev/null 2>&1 || ! command -v mpicc >/dev/null 2>&1; then
  echo "examples/mpi: skipped: mpirun or mpicc not found (apt-get install openmpi-bin libopenmpi-dev)"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$root/build/bin/sgc" "$here/model.sg" -o "$tmp/model.o" --header "$tmp/model.h"
mpicc -std=c11 -O2 -I"$tmp" -I"$root/build/include" "$here/train.c" "$tmp/model.o" \
  -L"$root/build/lib" -lsgrt -lm -lpthread -o "$tmp/train"
root_flag=""
[ "$(id -u)" = 0 ] && root_flag=--allow-run-as-root # OpenMPI refuses root otherwise
mpirun $root_flag --oversubscribe -np "${NP:-2}" "$tmp/train" "$@"
