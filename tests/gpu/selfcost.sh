#!/bin/sh
# The shim's own hot-path cost as it measures it (the `cost` note), on the
# transformer step under both allocators, CUPTI off and on; the step time of
# an untraced run beside it. BUILDS="build-a build-b" compares shims side by
# side, ROUNDS times in turn (the note is exact per run; the host's speed
# differs between machines, so compare builds only within one call).
# usage (GPU machine): [ALLOCS=..] [CUPTIS=..] [BUILDS=..] [ROUNDS=N] sh tests/gpu/selfcost.sh
set -u
OUT=${OUT:-/tmp/gpu-out}
for alloc in ${ALLOCS:-async default}; do
  conf=""; [ $alloc = async ] && conf=backend:cudaMallocAsync
  echo "== $alloc untraced: $(PYTORCH_CUDA_ALLOC_CONF=$conf python3 tests/gpu/transformer_step.py --steps 300 2>/dev/null | grep step_ms)"
  for cupti in ${CUPTIS:-0 1}; do
    for round in $(seq ${ROUNDS:-1}); do
      for build in ${BUILDS:-build-gpu}; do
        S=$(pwd)/$build/shim/libgputrace.so
        db=$OUT/selfcost-$alloc-$cupti-$build-$round.db
        r=$(PYTORCH_CUDA_ALLOC_CONF=$conf GPUTRACE_CUPTI=$cupti GPUTRACE_QUIET=1 LD_PRELOAD=$S GPUTRACE_OUTPUT=$db \
            python3 tests/gpu/transformer_step.py --steps 300 2>/dev/null | grep step_ms)
        echo "== $alloc CUPTI=$cupti $build round $round: $r"
        python3 -c "
import sqlite3; c = sqlite3.connect('$db')
print('  ', [m for (m,) in c.execute(\"SELECT message FROM notes WHERE component = 'cost'\")])
print('   events', c.execute('SELECT count(*) FROM events').fetchone()[0])"
        rm -f $db
      done
    done
  done
done
