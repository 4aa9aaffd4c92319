#!/bin/sh
# A compiler that fails on every program using take_along_axis, and is
# $REAL_SGC otherwise: minimize.test shrinks a program down to that.
for arg; do
  case $arg in
    *.sg) if grep -q take_along_axis "$arg"; then
            echo "fake_sgc: internal error: take_along_axis" >&2
            exit 134
          fi ;;
  esac
done
exec "$REAL_SGC" "$@"
