#!/bin/sh
# Analyzer benchmark: time and peak memory (max RSS) of gputrace summary,
# leaks, growth and peak (and oom, top) on a generated trace of EVENTS events
# (default 10 million), once with an NVTX range per iteration and once
# unmarked (iterations found automatically). Traces are cached in WORKDIR.
# Each command runs RUNS times (default 3): median and fastest wall time (the
# machine may be shared), and the largest max RSS.
# usage: tests/bench/bench_analyzer.sh [BUILD_DIR] [EVENTS] [WORKDIR] [RUNS]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
events=${2:-10000000}
work=${3:-${TMPDIR:-/tmp}/gputrace-bench-analyzer}
runs=${4:-3}
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
printf '%-8s %10s %10s %12s %s\n' command median_s min_s max_rss_MiB exit
for cmd in summary leaks growth peak oom top; do
    : > "$work/runs.txt"
    for r in $(seq "$runs"); do
        /usr/bin/time -v -o "$work/time.txt" "$gputrace" "$cmd" "$db" > "$work/$cmd-$marking.out" 2> "$work/$cmd-$marking.err" && rc=0 || rc=$?
        wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$work/time.txt")
        rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time.txt")
        echo "$wall $rss" | awk '{ n = split($1, a, ":"); s = n == 3 ? a[1]*3600 + a[2]*60 + a[3] : a[1]*60 + a[2]; print s, $2 }' >> "$work/runs.txt"
    done
    sort -n "$work/runs.txt" | awk -v cmd="$cmd" -v rc="$rc" '{ t[NR] = $1; if ($2 > m) m = $2 }
        END { printf "%-8s %10.2f %10.2f %12d %s\n", cmd, t[int((NR + 1) / 2)], t[1], m / 1024, rc }'
done
head -n 3 "$work/growth-$marking.out"
done
