#!/bin/sh
# README command 2: build (if needed) and run the whole test suite. No GPU
# needed: tests run against the CUDA stand-in in tests/fake_cuda. Ends with
# the line "N passed, N failed".
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
exec python3 tests/run_tests.py build "$@"
