#!/bin/sh
# README command 2: build (if needed) and run the whole test suite. No GPU
# needed: tests run against the CUDA stand-in in tests/fake_cuda. Runs the
# stages of tests/run_stages.py (the suite on the plain build, again under
# AddressSanitizer + UndefinedBehaviorSanitizer, the threaded tests under
# ThreadSanitizer; each in a build directory of its own) and ends with the
# line "N passed, N failed" summing them all.
# The address stage instruments the shim as well as the analyzer and the
# test programs: the shim's hot path and writer are what a sanitizer must
# see, and they only run preloaded into a traced program (tests/run_tests.py
# says how the runtime gets loaded first).
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh
exec python3 tests/run_stages.py "$@"
