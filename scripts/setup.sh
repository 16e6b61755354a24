#!/bin/sh
# README command 1: install dependencies, build, and trace a demo workload;
# with --prefix DIR, also install gputrace (DIR/bin), libgputrace.so (DIR/lib...),
# gputrace.h and gputrace.pc there (meson install), so the README's examples run
# as written. With no GPU the demo runs against the CUDA stand-in from tests/
# (a seed-001 style training loop with a planted per-iteration leak), then
# analyzes it.
set -eu
cd "$(dirname "$0")/.."
prefix=""
case "${1:-}" in
  --prefix) [ $# -ge 2 ] || { echo "usage: scripts/setup.sh [--prefix DIR]" >&2; exit 2; }; prefix=$2 ;;
  --prefix=*) prefix=${1#--prefix=} ;;
  "") ;;
  *) echo "usage: scripts/setup.sh [--prefix DIR]" >&2; exit 2 ;;
esac
sh scripts/deps.sh
[ -f build/build.ninja ] || meson setup build
if [ -n "$prefix" ]; then
  mkdir -p "$prefix"
  prefix=$(cd "$prefix" && pwd)
  meson configure build --prefix "$prefix" >/dev/null
fi
ninja -C build
demo=build/demo.db
rm -f "$demo"
echo
echo "== tracing a demo loop (CUDA stand-in): build/analyzer/gputrace run -o $demo -- build/tests/progs/demo_loop"
# the CUPTI stand-in too: the toolkit's real libcupti finds no driver and would say so
LD_LIBRARY_PATH=build/tests/fake_cuda GPUTRACE_CUPTI_PATH=$PWD/build/tests/fake_cupti/libcupti.so.13 \
  build/analyzer/gputrace run -o "$demo" -- build/tests/progs/demo_loop
echo
echo "== sqlite3 $demo 'SELECT api, count(*), sum(size) FROM events_v GROUP BY api'"
sqlite3 "$demo" 'SELECT api, count(*), sum(size) FROM events_v GROUP BY api'
for cmd in summary growth leaks; do
  echo
  echo "== build/analyzer/gputrace $cmd $demo"
  build/analyzer/gputrace $cmd "$demo" || true
done
echo
if [ -z "$prefix" ]; then
  echo "gputrace is built in build/ (build/analyzer/gputrace, build/shim/libgputrace.so)."
  echo "To put it on your PATH as the README's examples expect: scripts/setup.sh --prefix ~/.local"
  echo "Trace your own program: build/analyzer/gputrace run -- python train.py"
  exit 0
fi
echo "== meson install -C build (prefix $prefix)"
meson install -C build --no-rebuild --quiet
case ":$PATH:" in
  *":$prefix/bin:"*) echo "Installed: gputrace is on your PATH." ;;
  *) echo "Installed. Put gputrace on your PATH: export PATH=\"$prefix/bin:\$PATH\" (add it to ~/.profile)" ;;
esac
echo "Trace your own program: gputrace run -- python train.py"
