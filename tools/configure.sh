#!/bin/sh
# Find (and on a fresh machine, install) what sgc needs to build, then write
# the make variables for it to $1 (build/config.mk).
#   flex, bison        the frontend
#   llvm-19-dev        the LLVM C API the code generator uses
#   llvm-19-tools      FileCheck, not and lit for `make check`
#   python3-numpy      the Python module sgc and its tests (Debian's
#                      /usr/bin/python3, not whichever python3 is on PATH)
#   pkg-config         the install test builds against sgc.pc
# As root, missing Debian packages are installed with apt-get; otherwise the
# script prints the one command that would install them and fails.
set -eu
out=$1
LLVM_CONFIG=${LLVM_CONFIG:-llvm-config-19}

missing=""
command -v flex >/dev/null 2>&1 || missing="$missing flex"
command -v bison >/dev/null 2>&1 || missing="$missing bison"
command -v "$LLVM_CONFIG" >/dev/null 2>&1 || missing="$missing llvm-19-dev"
/usr/bin/python3 -c 'import numpy' >/dev/null 2>&1 || missing="$missing python3-numpy"
command -v pkg-config >/dev/null 2>&1 || missing="$missing pkg-config"
if [ "$LLVM_CONFIG" = llvm-config-19 ]; then
  [ -x /usr/lib/llvm-19/bin/FileCheck ] || missing="$missing llvm-19-tools"
fi

if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "sgc: installing missing packages:$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
  else
    echo "sgc: missing build dependencies:$missing" >&2
    echo "sgc: install them with:  sudo apt-get install -y$missing" >&2
    exit 1
  fi
fi

bindir=$("$LLVM_CONFIG" --bindir)
cat > "$out.tmp" <<MK
# Written by tools/configure.sh; delete it to look again.
LLVM_CONFIG := $LLVM_CONFIG
LLVM_CFLAGS := $("$LLVM_CONFIG" --cflags)
LLVM_LDFLAGS := $("$LLVM_CONFIG" --ldflags) $("$LLVM_CONFIG" --libs core analysis target passes native bitreader bitwriter linker orcjit) $("$LLVM_CONFIG" --system-libs)
LLVM_BINDIR := $bindir
LIT := $("$LLVM_CONFIG" --obj-root 2>/dev/null)/build/utils/lit/lit.py
MK
mv "$out.tmp" "$out"
