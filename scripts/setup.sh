#!/bin/sh
# README command 1: install dependencies, build, and trace a demo workload.
# With no GPU the demo runs against the CUDA stand-in from tests/ (a seed-001
# style training loop with a planted per-iteration leak), then analyzes it.
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh
[ -f build/build.ninja ] || meson setup build
ninja -C build
demo=build/demo.db
rm -f "$demo"
echo
echo "== tracing a demo loop (CUDA stand-in): build/analyzer/gputrace run -o $demo -- build/tests/progs/demo_loop"
# the CUPTI stand-in too: the toolkit's real libcupti finds no usable driver here and says so
GPUTRACE_CUPTI_PATH=build/tests/fake_cupti/libcupti.so.13 LD_LIBRARY_PATH=build/tests/fake_cuda build/analyzer/gputrace run -o "$demo" -- build/tests/progs/demo_loop
echo
echo "== sqlite3 $demo 'SELECT api, count(*), sum(size) FROM events_v GROUP BY api'"
sqlite3 "$demo" 'SELECT api, count(*), sum(size) FROM events_v GROUP BY api'
for cmd in summary growth leaks; do
  echo
  echo "== build/analyzer/gputrace $cmd $demo"
  build/analyzer/gputrace $cmd "$demo" || true
done
echo
echo "Trace your own program: LD_PRELOAD=$PWD/build/shim/libgputrace.so python train.py"
