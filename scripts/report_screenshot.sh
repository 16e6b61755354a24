#!/bin/sh
# Regenerates docs/report.png, the README's picture of `gputrace report`: the
# report of seed 002's memory-equation workload (batch sizes 16..128 through
# the marker API, from tests/analyzer_traces.py), drawn by headless Chromium.
# usage: scripts/report_screenshot.sh [BUILD_DIR]   (default: build)
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -c "import sys; sys.path.insert(0, 'tests'); import analyzer_traces as T; T.memory_equation('$tmp')"
"$build/analyzer/gputrace" report "$tmp/memory_equation.db" -o "$tmp/report.html"
chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars --user-data-dir="$tmp/profile" \
  --window-size=1100,1640 --screenshot="$tmp/report.png" "file://$tmp/report.html" 2>/dev/null
cp "$tmp/report.png" docs/report.png
echo "wrote docs/report.png"
