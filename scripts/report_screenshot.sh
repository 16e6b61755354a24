#!/bin/sh
# Regenerates the README's pictures of `gputrace report`: the report of seed
# 002's memory-equation workload (batch sizes 16..128 through the marker API,
# from tests/analyzer_traces.py), drawn by headless Chromium in a 1400 px
# window (docs/report.png) and at a phone's width, 390 px (docs/report-phone.png;
# in an iframe, since a desktop window cannot be that narrow).
# usage: scripts/report_screenshot.sh [BUILD_DIR]   (default: build)
set -eu
cd "$(dirname "$0")/.."
build=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -c "import sys; sys.path.insert(0, 'tests'); import analyzer_traces as T; T.memory_equation('$tmp')"
"$build/analyzer/gputrace" report "$tmp/memory_equation.db" -o "$tmp/report.html"
shot() {   # shot WIDTH HEIGHT PAGE PNG
  chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --hide-scrollbars --user-data-dir="$tmp/profile" \
    --window-size="$1,$2" --screenshot="$4" "file://$3" 2>/dev/null
}
shot 1400 1760 "$tmp/report.html" docs/report.png
printf '<!DOCTYPE html><body style="margin:0"><iframe src="report.html" style="width:390px;height:2300px;border:0"></iframe>' \
  > "$tmp/phone.html"
shot 390 2300 "$tmp/phone.html" docs/report-phone.png
echo "wrote docs/report.png docs/report-phone.png"
