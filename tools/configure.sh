#!/bin/sh
# Find (and on a fresh machine, install) what sgc needs to build, then write
# the make variables for it to $1 (build/config.mk).
#   flex, bison        the frontend
#   llvm-19-dev        the LLVM C API the code generator uses
#   llvm-19-tools      FileCheck, not and lit for `make check`
#   python3-numpy      the Python module sgc and its tests (Debian's
#                      /usr/bin/python3, not whichever python3 is on PATH)
#   pkg-config         the install test builds against sgc.pc
#   libzstd-dev        optional: lets sgc and sgc-opt link LLVM statically
#                      (below); installed with the rest when this runs as
#                      root, and never a reason to fail
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

if [ "$LLVM_CONFIG" = llvm-config-19 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 &&
   ! dpkg-query -W -f='${Status}' libzstd-dev 2>/dev/null | grep -q 'ok installed'; then
  missing="$missing libzstd-dev"
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

components="core analysis target passes native bitreader bitwriter linker orcjit"
shared="$("$LLVM_CONFIG" --ldflags) $("$LLVM_CONFIG" --libs $components) $("$LLVM_CONFIG" --system-libs)"

# sgc and sgc-opt link LLVM's static libraries where a test program links
# with them: loading libLLVM.so costs every run about 40 ms (sgc --version
# 0.06 s against 0.02; examples/lstm.sg compiles in 0.36 s against 0.40).
# libsgc.so, the Python module and sgc.pc keep the shared library.
tools=$shared
if libs=$("$LLVM_CONFIG" --link-static --libs $components 2>/dev/null); then
  static="$("$LLVM_CONFIG" --link-static --ldflags) $libs $("$LLVM_CONFIG" --link-static --system-libs) -lstdc++"
  printf '#include <llvm-c/Core.h>\nint main(void) { LLVMContextDispose(LLVMContextCreate()); return 0; }\n' > "$out.c"
  if ${CC:-cc} $("$LLVM_CONFIG" --cflags) "$out.c" -o "$out.exe" $static -lm -lpthread >/dev/null 2>&1; then
    tools=$static
  fi
  rm -f "$out.c" "$out.exe"
fi

bindir=$("$LLVM_CONFIG" --bindir)
cat > "$out.tmp" <<MK
# Written by tools/configure.sh; delete it to look again.
LLVM_CONFIG := $LLVM_CONFIG
LLVM_CFLAGS := $("$LLVM_CONFIG" --cflags)
LLVM_LDFLAGS := $shared
LLVM_TOOL_LDFLAGS := $tools
LLVM_BINDIR := $bindir
LIT := $("$LLVM_CONFIG" --obj-root 2>/dev/null)/build/utils/lit/lit.py
MK
mv "$out.tmp" "$out"
