#!/bin/sh
# An llvm-config for an LLVM that has only the shared library (libLLVM.so):
# anything asked with --link-static fails, as llvm-config does then; every
# other question gets llvm-config-19's answer.
for a in "$@"; do
  if [ "$a" = --link-static ]; then
    echo "llvm-config: error: missing: static libraries" >&2
    exit 1
  fi
done
exec llvm-config-19 "$@"
