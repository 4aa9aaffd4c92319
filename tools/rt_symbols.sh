#!/bin/sh
# Write the C table of every function libsgrt.a defines ($1) to $2, for
# libsgc's JIT (lib/jit.c): the JIT binds the generated code's calls to
# these addresses, so linking works whether libsgrt is linked statically,
# is part of libsgc.so, or was loaded with RTLD_LOCAL (Python's ctypes).
set -eu
lib=$1
out=$2
names=$(nm -g --defined-only "$lib" | awk '$2 == "T" || $2 == "i" || $2 == "W" { print $3 }' | sort -u)
{
  echo "/* Written by tools/rt_symbols.sh from $lib; do not edit. */"
  echo '#include "jit.h"'
  echo
  for n in $names; do echo "extern JitRtFunction $n;"; done
  echo
  echo "const JitRtSymbol jit_rt_symbols[] = {"
  for n in $names; do echo "    {\"$n\", $n},"; done
  echo "    {0, 0},"
  echo "};"
} > "$out.tmp"
mv "$out.tmp" "$out"
