#!/bin/sh
# Analyzer benchmark: time and peak memory (max RSS) of gputrace summary,
# leaks, growth and peak (and oom, top) on a generated trace of EVENTS events
# (default 10 million), once with an NVTX range per iteration and once
# unmarked (iterations found automatically). Traces are cached in WORKDIR.
# usage: tests/bench/bench_analyzer.sh [BUILD_DIR] [EVENTS] [WORKDIR]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
events=${2:-10000000}
work=${3:-${TMPDIR:-/tmp}/gputrace-bench-analyzer}
gputrace=$build/analyzer/gputrace
mkdir -p "$work"
gen=$work/bench_analyzer_gen
cc -O2 -o "$gen" "$here/bench_analyzer_gen.c" -lsqlite3
for marking in nvtx none; do
db=$work/trace-$events-$marking.db
if [ ! -f "$db" ]; then
    start=$(date +%s.%N)
    "$gen" "$db.tmp" "$root/schema/gputrace.sql" "$events" 1000 "$marking"
    mv "$db.tmp" "$db"
    echo "generated $db in $(echo "$(date +%s.%N) - $start" | bc) s ($(du -m "$db" | cut -f1) MiB)"
fi
echo "== $events events, iterations: $marking"
printf '%-8s %10s %12s %s\n' command seconds max_rss_MiB exit
for cmd in summary leaks growth peak oom top; do
    /usr/bin/time -v -o "$work/time.txt" "$gputrace" "$cmd" "$db" > "$work/$cmd-$marking.out" 2> "$work/$cmd-$marking.err" && rc=0 || rc=$?
    wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time.txt")
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time.txt")
    secs=$(echo "$wall" | awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
    printf '%-8s %10s %12s %s\n' "$cmd" "$secs" "$((rss / 1024))" "$rc"
done
head -n 3 "$work/growth-$marking.out"
done
